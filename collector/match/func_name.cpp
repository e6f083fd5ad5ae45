#include "match/func_name.h"

#include <array>

namespace ncclwatch::match {

const char* func_name(format::Func f) {
  static constexpr std::array<const char*, static_cast<std::size_t>(format::Func::kCount)> kNames =
      {"unknown",
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
       "comm_revoke"};
  auto i = static_cast<std::size_t>(f);
  return i < kNames.size() ? kNames[i] : "unknown";
}

}  // namespace ncclwatch::match

namespace ncclwatch::match {

std::string datatype_name(uint8_t datatype) {
  static constexpr std::array<const char*, 12> kNames = {
      "int8",    "uint8",   "int32",   "uint32",   "int64",   "uint64",
      "float16", "float32", "float64", "bfloat16", "fp8e4m3", "fp8e5m2"};
  return datatype < kNames.size() ? kNames[datatype] : "datatype " + std::to_string(datatype);
}

std::string redop_name(uint8_t redop) {
  static constexpr std::array<const char*, 5> kNames = {"sum", "prod", "max", "min", "avg"};
  if (redop == 255) return "user";
  return redop < kNames.size() ? kNames[redop] : "redop " + std::to_string(redop);
}

}  // namespace ncclwatch::match
