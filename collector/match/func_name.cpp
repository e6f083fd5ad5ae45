#include "match/func_name.h"

#include <array>

namespace ncclwatch::match {}  // namespace ncclwatch::match

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
