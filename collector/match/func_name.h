// Printable names of the NCCL functions, as users know them from PyTorch ("all_reduce").
#pragma once

#include <string>

#include "model/func_names.h"
#include "ncclwatch/format.h"

namespace ncclwatch::match {

using model::func_name;  // "all_reduce", "send", ... (collector/model/func_names.h)

// Collectives with a root, whose root must agree across ranks.
constexpr bool is_rooted(format::Func f) {
  using format::Func;
  return f == Func::kBroadcast || f == Func::kBcast || f == Func::kReduce || f == Func::kGather ||
         f == Func::kScatter;
}

// Collectives that take a reduction operator.
constexpr bool has_redop(format::Func f) {
  using format::Func;
  return f == Func::kAllReduce || f == Func::kReduce || f == Func::kReduceScatter;
}

}  // namespace ncclwatch::match

namespace ncclwatch::match {

// "float32", "bfloat16", ... (ncclDataType_t); the number for unknown values.
std::string datatype_name(uint8_t datatype);
// "sum", "prod", "max", "min", "avg", "user" (ncclRedOp_t); the number for unknown values.
std::string redop_name(uint8_t redop);

}  // namespace ncclwatch::match
