// A trace file's header and records as JSON objects with every field, names resolved (for
// `ncclwatch dump`): the one place that names each record kind's fields. 64-bit
// identifiers (comm ids, streams, handles, hashes) are "0x..." strings: JSON readers that use
// doubles would silently round them.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "ncclwatch/format.h"
#include "trace/string_table.h"

namespace ncclwatch::trace {

// `index` is the record's position in the file; `names` resolves name ids (finished table).
nlohmann::ordered_json record_to_json(const format::Record& record, uint64_t index,
                                      const StringTable& names);

// The file header: identity, state, record and loss counts ("kind": "header").
nlohmann::ordered_json header_to_json(const format::TraceHeader& header);

}  // namespace ncclwatch::trace
