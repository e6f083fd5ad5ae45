// The one table of printable NCCL function names, as PyTorch users know them ("all_reduce"),
// indexed by format::Func. JSON, dumps and report tables use these; prose may say "all-reduce".
#pragma once

#include <array>
#include <cstddef>

#include "model/enum_table.h"
#include "ncclwatch/format.h"

namespace ncclwatch::model {

// "all_reduce", "send", "comm_split", ...; "unknown" for values outside the enum.
constexpr const char* func_name(format::Func f) {
  // Indexed by the enum value; the format appends only, so this table only grows.
  constexpr auto kNames = enum_names<format::Func>({"unknown",
                                                    "all_reduce",
                                                    "broadcast",
                                                    "bcast",
                                                    "reduce",
                                                    "all_gather",
                                                    "reduce_scatter",
                                                    "all_to_all",
                                                    "gather",
                                                    "scatter",
                                                    "send",
                                                    "recv",
                                                    "group_start",
                                                    "group_end",
                                                    "get_unique_id",
                                                    "comm_init_rank",
                                                    "comm_init_rank_config",
                                                    "comm_init_rank_scalable",
                                                    "comm_init_all",
                                                    "comm_split",
                                                    "comm_shrink",
                                                    "comm_finalize",
                                                    "comm_destroy",
                                                    "comm_abort",
                                                    "comm_revoke"});
  const auto i = static_cast<std::size_t>(f);
  return i < kNames.size() ? kNames[i] : "unknown";
}

}  // namespace ncclwatch::model
