#include "kernels/comm_kernel_table.h"

#include <cxxabi.h>

#include <array>
#include <cctype>
#include <cstdlib>
#include <memory>

namespace ncclwatch::kernels {
namespace {

using format::Func;
using model::CommFamily;

bool starts_with_nocase(std::string_view s, std::string_view p) {
  if (s.size() < p.size()) return false;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) !=
        std::tolower(static_cast<unsigned char>(p[i])))
      return false;
  }
  return true;
}

bool contains_nocase(std::string_view s, std::string_view p) {
  for (std::size_t i = 0; i + p.size() <= s.size(); ++i)
    if (starts_with_nocase(s.substr(i), p)) return true;
  return false;
}

// NCCL's operation names as they appear in kernel names (longest first where one is a prefix of
// another: ReduceScatter before Reduce, SendRecv before Send).
struct OpName {
  std::string_view name;
  Func func;
};
constexpr std::array kNcclOps = {
    OpName{"AllReduce", Func::kAllReduce},
    OpName{"AllGather", Func::kAllGather},
    OpName{"ReduceScatter", Func::kReduceScatter},
    OpName{"Reduce", Func::kReduce},
    OpName{"Broadcast", Func::kBroadcast},
    OpName{"AllToAll", Func::kAlltoAll},
    OpName{"SendRecv", Func::kSend},
    OpName{"Send", Func::kSend},
    OpName{"Recv", Func::kRecv},
};

Func op_at_start(std::string_view s, bool whole_word) {
  for (const OpName& op : kNcclOps) {
    if (!starts_with_nocase(s, op.name)) continue;
    const std::string_view rest = s.substr(op.name.size());
    if (whole_word && !rest.empty() && rest[0] != '_' && rest[0] != '(') continue;
    return op.func;
  }
  return Func::kUnknown;
}

// How a row matches: the qualified function name starts with the pattern (a namespace), or its
// last component (the function itself) does, ignoring case.
enum class Where { kNamespace, kFunction };

using FuncOf = Func (*)(std::string_view function);

struct Row {
  CommFamily family;
  Where where;
  std::string_view pattern;
  FuncOf func;  // nullptr: the row's fixed `fixed`
  Func fixed;
};

Func deep_ep_func(std::string_view function) {
  // dispatch / combine (and their _ll low-latency forms) move tokens all-to-all; notify_*,
  // cached_notify and the buffer cleaners exchange counts and barriers: communication, but no
  // collective a peer could be matched on by name.
  if (contains_nocase(function, "dispatch") && !contains_nocase(function, "notify"))
    return Func::kAlltoAll;
  if (contains_nocase(function, "combine") && !contains_nocase(function, "notify"))
    return Func::kAlltoAll;
  return Func::kUnknown;
}

// The table. NCCL's own names are tested first, by is_nccl_kernel_name (HTA's rule).
constexpr std::array kRows = {
    // MSCCL: mscclKernel_<redop>_<type>_<proto>[_<fullOps>] (RCCL, msccl); any collective.
    Row{CommFamily::kMsccl, Where::kFunction, "mscclKernel_", nullptr, Func::kUnknown},
    // MSCCL++: everything in namespace mscclpp (executionKernel, ...).
    Row{CommFamily::kMscclpp, Where::kNamespace, "mscclpp::", nullptr, Func::kUnknown},
    // NVSHMEM's host-initiated collectives on a stream (nvshmemx_*_on_stream).
    Row{CommFamily::kNvshmem, Where::kFunction, "alltoall_on_stream_kernel", nullptr,
        Func::kAlltoAll},
    Row{CommFamily::kNvshmem, Where::kFunction, "fcollect_on_stream_kernel", nullptr,
        Func::kAllGather},
    Row{CommFamily::kNvshmem, Where::kFunction, "rdxn_on_stream_kernel", nullptr, Func::kAllReduce},
    Row{CommFamily::kNvshmem, Where::kFunction, "reducescatter_on_stream_kernel", nullptr,
        Func::kReduceScatter},
    Row{CommFamily::kNvshmem, Where::kFunction, "broadcast_on_stream_kernel", nullptr,
        Func::kBroadcast},
    Row{CommFamily::kNvshmem, Where::kFunction, "barrier_on_stream_kernel", nullptr,
        Func::kUnknown},
    Row{CommFamily::kNvshmem, Where::kFunction, "sync_on_stream_kernel", nullptr, Func::kUnknown},
    Row{CommFamily::kNvshmem, Where::kFunction, "sync_all_on_stream_kernel", nullptr,
        Func::kUnknown},
    // DeepEP (MoE expert-parallel all-to-all): the communication namespaces only, not
    // deep_ep::layout (a local computation) nor cdpsk::ep:: (CUB scans in DeepSeek's builds).
    Row{CommFamily::kDeepEp, Where::kNamespace, "deep_ep::intranode::", deep_ep_func,
        Func::kUnknown},
    Row{CommFamily::kDeepEp, Where::kNamespace, "deep_ep::internode::", deep_ep_func,
        Func::kUnknown},
    Row{CommFamily::kDeepEp, Where::kNamespace, "deep_ep::internode_ll::", deep_ep_func,
        Func::kUnknown},
    Row{CommFamily::kDeepEp, Where::kNamespace, "dpsk::ep::intranode::", deep_ep_func,
        Func::kUnknown},
    Row{CommFamily::kDeepEp, Where::kNamespace, "dpsk::ep::internode::", deep_ep_func,
        Func::kUnknown},
    Row{CommFamily::kDeepEp, Where::kNamespace, "dpsk::ep::internode_ll::", deep_ep_func,
        Func::kUnknown},
    // Custom all-reduce kernels over NVLink/IPC buffers.
    // vLLM, SGLang, AITER (ROCm): cross_device_reduce_1stage / _2stage.
    Row{CommFamily::kCustomAllReduce, Where::kFunction, "cross_device_reduce_", nullptr,
        Func::kAllReduce},
    // TensorRT-LLM, FlashInfer (trtllm_allreduce, mnnvl), PyTorch IntraNodeComm:
    // oneShotAllReduceKernel, twoShotAllReduceKernel, oneshotAllreduceFusionKernel, ...
    Row{CommFamily::kCustomAllReduce, Where::kFunction, "oneShotAllReduce", nullptr,
        Func::kAllReduce},
    Row{CommFamily::kCustomAllReduce, Where::kFunction, "twoShotAllReduce", nullptr,
        Func::kAllReduce},
    Row{CommFamily::kCustomAllReduce, Where::kFunction, "lowPrecisionTwoShotAllReduce", nullptr,
        Func::kAllReduce},
    Row{CommFamily::kCustomAllReduce, Where::kFunction, "hybridCubeMeshAllReduce", nullptr,
        Func::kAllReduce},
    Row{CommFamily::kCustomAllReduce, Where::kFunction, "allreduce_fusion_kernel_", nullptr,
        Func::kAllReduce},
    // PyTorch symmetric memory (torch.ops.symm_mem): one_shot_all_reduce_kernel,
    // two_shot_all_reduce_kernel(_inplace), multimem_(one_shot_)all_reduce_kernel, ...
    Row{CommFamily::kCustomAllReduce, Where::kFunction, "one_shot_all_reduce", nullptr,
        Func::kAllReduce},
    Row{CommFamily::kCustomAllReduce, Where::kFunction, "two_shot_all_reduce", nullptr,
        Func::kAllReduce},
    Row{CommFamily::kCustomAllReduce, Where::kFunction, "multimem_all_reduce", nullptr,
        Func::kAllReduce},
    Row{CommFamily::kCustomAllReduce, Where::kFunction, "multimem_one_shot_all_reduce", nullptr,
        Func::kAllReduce},
    Row{CommFamily::kCustomAllReduce, Where::kFunction, "multimem_all_gather", nullptr,
        Func::kAllGather},
};

std::string demangle(std::string_view mangled) {
  const std::string s(mangled);
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(
      abi::__cxa_demangle(s.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : s;
}

std::string_view last_component(std::string_view qualified) {
  const std::size_t p = qualified.rfind("::");
  return p == std::string_view::npos ? qualified : qualified.substr(p + 2);
}

}  // namespace

std::string qualified_function_name(std::string_view demangled) {
  constexpr std::string_view kAnon = "(anonymous namespace)::";
  std::string s;
  s.reserve(demangled.size());
  int angle = 0;
  for (std::size_t i = 0; i < demangled.size(); ++i) {
    if (demangled.compare(i, kAnon.size(), kAnon) == 0) {
      i += kAnon.size() - 1;
      continue;
    }
    const char c = demangled[i];
    if (c == '<') {
      ++angle;
    } else if (c == '>') {
      if (angle > 0) --angle;
    } else if (angle == 0) {
      if (c == '(') break;  // the parameter list
      s.push_back(c);
    }
  }
  const std::size_t space = s.find_last_of(" \t");
  if (space != std::string::npos) s.erase(0, space + 1);  // return type ("void ")
  return s;
}

bool is_nccl_kernel_name(std::string_view name) {
  if (name.substr(0, 4) != "nccl") return false;
  if (name.substr(0, 8) == "ncclSymk") return true;
  // HTA: re.match(r"^nccl.*Kernel") -- "Kernel" anywhere after the "nccl" prefix.
  return name.find("Kernel", 4) != std::string_view::npos;
}

Func nccl_func_from_kernel_name(std::string_view name) {
  if (name.substr(0, 4) != "nccl") return Func::kUnknown;
  const std::size_t underscore = name.find('_');
  const std::string_view head = name.substr(0, std::min(underscore, name.find('(')));
  if (head == "ncclKernel" || head == "ncclDevKernel" || head.substr(0, 8) == "ncclSymk") {
    // ncclKernel_<Op>_..., ncclDevKernel_<Op>_..., ncclSymkDevKernel_<Op>_...
    if (underscore == std::string_view::npos) return Func::kUnknown;
    return op_at_start(name.substr(underscore + 1), true);
  }
  // NCCL <= 2.7: nccl<Op><Algo><Proto>Kernel_<redop>_<type> (ncclAllReduceRingLLKernel_sum_f32).
  if (head.size() > 10 && head.substr(head.size() - 6) == "Kernel")
    return op_at_start(head.substr(4), false);
  return Func::kUnknown;
}

Func nccl_func_from_api_name(std::string_view name) {
  if (name.substr(0, 4) != "nccl") return Func::kUnknown;
  const std::string_view op = name.substr(4);
  for (const OpName& o : kNcclOps)
    if (op == o.name && o.name != "SendRecv") return o.func;
  return op == "AlltoAll" ? Func::kAlltoAll : Func::kUnknown;
}

CommKernel classify_kernel(std::string_view name) {
  std::string demangled;
  if (name.substr(0, 2) == "_Z") {
    demangled = demangle(name);
    name = demangled;
  }
  const std::string qualified = qualified_function_name(name);
  const std::string_view function = last_component(qualified);
  // NCCL by HTA's rule on the whole name, so both tools count the same kernels as NCCL's.
  if (is_nccl_kernel_name(name)) return {CommFamily::kNccl, nccl_func_from_kernel_name(function)};
  for (const Row& row : kRows) {
    const bool hit = row.where == Where::kNamespace ? qualified.rfind(row.pattern, 0) == 0
                                                    : starts_with_nocase(function, row.pattern);
    if (hit) return {row.family, row.func != nullptr ? row.func(function) : row.fixed};
  }
  return {};
}

}  // namespace ncclwatch::kernels
