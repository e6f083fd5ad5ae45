#include "kineto/collective_names.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "kernels/comm_kernel_table.h"
#include "ncclwatch/fnv1a.h"

namespace ncclwatch::kineto {
namespace {

using format::Func;

// Lower case without '_': "all_reduce", "allreduce" and "AllReduce" compare equal.
std::string squash(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '_' || c == ' ') continue;
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

Func func_from_squashed(const std::string& s) {
  if (s == "allreduce" || s == "allreducecoalesced" || s == "barrier") return Func::kAllReduce;
  if (s == "broadcast" || s == "broadcastcoalesced") return Func::kBroadcast;
  if (s == "reduce") return Func::kReduce;
  if (s == "allgather" || s == "allgatherbase" || s == "allgatherintotensor" ||
      s == "allgatherintotensorcoalesced" || s == "allgathercoalesced")
    return Func::kAllGather;
  if (s == "reducescatter" || s == "reducescatterbase" || s == "reducescattertensor" ||
      s == "reducescattertensorcoalesced")
    return Func::kReduceScatter;
  if (s == "alltoall" || s == "alltoallbase" || s == "alltoallv" || s == "alltoallsingle")
    return Func::kAlltoAll;
  if (s == "gather") return Func::kGather;
  if (s == "scatter") return Func::kScatter;
  if (s == "send" || s == "sendrecv") return Func::kSend;
  if (s == "recv" || s == "recvanysource") return Func::kRecv;
  return Func::kUnknown;
}

}  // namespace

Func func_from_collective_name(std::string_view name) {
  if (name.substr(0, 5) == "nccl:") name.remove_prefix(5);
  return func_from_squashed(squash(name));
}

Func func_from_kernel_name(std::string_view name) {
  return kernels::nccl_func_from_kernel_name(name);
}

uint8_t datatype_from_dtype(std::string_view dtype) {
  const std::string s = squash(dtype);
  if (s == "char" || s == "int8") return 0;
  if (s == "byte" || s == "uint8" || s == "bool") return 1;
  if (s == "int" || s == "int32") return 2;
  if (s == "uint32") return 3;
  if (s == "long" || s == "int64") return 4;
  if (s == "uint64") return 5;
  if (s == "half" || s == "float16") return 6;
  if (s == "float" || s == "float32") return 7;
  if (s == "double" || s == "float64") return 8;
  if (s == "bfloat16") return 9;
  if (s == "float8e4m3fn" || s == "float8e4m3fnuz") return 10;
  if (s == "float8e5m2" || s == "float8e5m2fnuz") return 11;
  return 255;
}

bool is_nccl_kernel_name(std::string_view name) {
  return kernels::is_nccl_kernel_name(name);
}

std::vector<int32_t> parse_rank_list(std::string_view text) {
  std::vector<int32_t> out;
  int64_t cur = 0;
  bool in_num = false;
  for (char c : text) {
    if (c >= '0' && c <= '9') {
      cur = cur * 10 + (c - '0');
      if (cur > INT32_MAX) cur = INT32_MAX;
      in_num = true;
    } else {
      if (in_num) out.push_back(static_cast<int32_t>(cur));
      cur = 0;
      in_num = false;
    }
  }
  if (in_num) out.push_back(static_cast<int32_t>(cur));
  return out;
}

uint64_t comm_id_for_group(std::string_view pg_name, const std::vector<int32_t>& ranks) {
  uint64_t h = format::kFnv1aOffset;
  auto mix = [&h](unsigned char b) { h = format::fnv1a64_byte(h, b); };
  for (char c : std::string_view("kineto-pg:")) mix(static_cast<unsigned char>(c));
  for (char c : pg_name) mix(static_cast<unsigned char>(c));
  mix('|');
  for (int32_t r : ranks) {
    for (int k = 0; k < 4; ++k)
      mix(static_cast<unsigned char>((static_cast<uint32_t>(r) >> (8 * k)) & 0xff));
  }
  return h == 0 ? 1 : h;  // 0 means "no comm" elsewhere
}

}  // namespace ncclwatch::kineto
