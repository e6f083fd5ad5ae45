// Per-record validation of untrusted records. A record that fails is skipped and counted by the
// reader (never converted into the model), so analyses only see values that make sense.
#pragma once

#include "ncclwatch/format.h"

namespace ncclwatch::trace {

// nullptr if the record is usable, else a static one-line reason ("unknown record kind",
// "call exits before it enters", ...). Cheap: called once per record on the load path.
const char* record_problem(const format::Record& record) noexcept;

}  // namespace ncclwatch::trace
