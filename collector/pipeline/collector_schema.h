// The report JSON's schema version (docs/report-schema.md): what `report` writes and the
// newest `diff` reads.
#pragma once

namespace ncclwatch::pipeline {

inline constexpr int kSchemaVersion = 1;

}  // namespace ncclwatch::pipeline
