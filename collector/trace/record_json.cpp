#include "trace/record_json.h"

#include "model/vocabulary.h"
#include "trace/record_check.h"
#include "trace/record_names.h"
#include "trace/trace_header_check.h"

namespace ncclwatch::trace {
namespace {

using format::RecordKind;
using json = nlohmann::ordered_json;

json name_of(const StringTable& names, uint32_t id) {
  if (id == 0) return nullptr;
  const std::string* text = names.text(id);
  return text ? json(*text) : json(nullptr);
}

void add_call(json& j, const format::CallRecord& c) {
  j["func"] = func_name(c.prefix.u8a);
  j["result"] = static_cast<int8_t>(c.prefix.u8b);
  j["t_enter_ns"] = c.t_enter_ns;
  j["t_exit_ns"] = c.t_exit_ns;
  j["comm_id"] = model::comm_hex(c.comm_id);
  j["seq"] = c.seq;
  j["count"] = c.count;
  j["datatype"] = c.datatype;
  j["bytes"] = format::call_bytes(c);
  j["redop"] = c.redop;
  j["peer"] = c.peer;
  j["stream"] = hex(c.stream);
  j["group_id"] = c.group_id;
  j["group_depth"] = c.group_depth;
  j["in_group"] = (c.prefix.flags & format::kCallInGroup) != 0;
  j["graph_captured"] = (c.prefix.flags & format::kCallGraphCaptured) != 0;
  j["non_blocking"] = (c.prefix.flags & format::kCallNonBlocking) != 0;
  j["no_kernel"] = (c.prefix.flags & format::kCallNoKernel) != 0;
}

void add_kernel(json& j, const format::KernelRecord& k, const StringTable& names) {
  j["activity"] = activity_name(k.prefix.u8a);
  j["device"] = k.prefix.u8b;
  j["stream_id"] = k.prefix.tid;
  j["start_ns"] = k.start_ns;
  j["end_ns"] = k.end_ns;
  j["correlation"] = k.correlation;
  j["name_id"] = k.name_id;
  j["name"] = name_of(names, k.name_id);
  j["nccl"] = (k.prefix.flags & format::kKernelIsNccl) != 0;
  j["from_graph"] = (k.prefix.flags & format::kKernelFromGraph) != 0;
  j["graph_id"] = k.graph_id;
  j["graph_node_id"] = k.graph_node_id;
  j["context_id"] = k.context_id;
  j["bytes"] = k.bytes;
}

}  // namespace

nlohmann::ordered_json record_to_json(const format::Record& r, uint64_t index,
                                      const StringTable& names) {
  json j = json::object();
  j["index"] = index;
  j["kind"] = kind_name(static_cast<uint8_t>(r.prefix.kind));
  j["flags"] = r.prefix.flags;
  if (const char* problem = record_problem(r)) j["invalid"] = problem;
  switch (r.prefix.kind) {
    case RecordKind::kCall:
      j["tid"] = r.prefix.tid;
      add_call(j, r.call);
      break;
    case RecordKind::kGroup:
      j["tid"] = r.prefix.tid;
      j["func"] = func_name(r.prefix.u8a);
      j["result"] = static_cast<int8_t>(r.prefix.u8b);
      j["t_enter_ns"] = r.group.t_enter_ns;
      j["t_exit_ns"] = r.group.t_exit_ns;
      j["group_id"] = r.group.group_id;
      j["depth"] = r.group.depth;
      break;
    case RecordKind::kComm:
      j["tid"] = r.prefix.tid;
      j["func"] = func_name(r.prefix.u8a);
      j["result"] = static_cast<int8_t>(r.prefix.u8b);
      j["t_enter_ns"] = r.comm.t_enter_ns;
      j["t_exit_ns"] = r.comm.t_exit_ns;
      j["comm_id"] = model::comm_hex(r.comm.comm_id);
      j["parent_id"] = model::comm_hex(r.comm.parent_id);
      j["handle"] = hex(r.comm.handle);
      j["nranks"] = r.comm.nranks;
      j["rank"] = r.comm.rank;
      j["device"] = r.comm.device;
      j["color"] = r.comm.color;
      break;
    case RecordKind::kCommEnd:
      j["tid"] = r.prefix.tid;
      j["func"] = func_name(r.prefix.u8a);
      j["result"] = static_cast<int8_t>(r.prefix.u8b);
      j["t_enter_ns"] = r.comm_end.t_enter_ns;
      j["t_exit_ns"] = r.comm_end.t_exit_ns;
      j["comm_id"] = model::comm_hex(r.comm_end.comm_id);
      break;
    case RecordKind::kIdentity:
      j["tid"] = r.prefix.tid;
      j["rank_source"] = rank_source_name(r.prefix.u8a);
      j["rank"] = r.identity.rank;
      j["world_size"] = r.identity.world_size;
      j["local_rank"] = r.identity.local_rank;
      j["device"] = r.identity.device;
      j["pci_bus_id"] = bounded_string(r.identity.pci_bus_id, sizeof r.identity.pci_bus_id);
      break;
    case RecordKind::kClock:
      j["window_ns"] = r.prefix.tid;
      j["monotonic_ns"] = r.clock.monotonic_ns;
      j["realtime_ns"] = r.clock.realtime_ns;
      break;
    case RecordKind::kKernel:
      add_kernel(j, r.kernel, names);
      break;
    case RecordKind::kString:
      j["string_id"] = r.prefix.tid;
      j["chunk"] = r.prefix.u8a;
      j["last"] = (r.prefix.flags & format::kStringLastChunk) != 0;
      j["text"] = bounded_string(r.string.text, sizeof r.string.text);
      break;
    case RecordKind::kKernelLink:
      j["tid"] = r.prefix.tid;
      j["func"] = func_name(r.prefix.u8a);
      j["t_ns"] = r.link.t_ns;
      j["comm_id"] = model::comm_hex(r.link.comm_id);
      j["stream"] = hex(r.link.stream);
      j["correlation"] = r.link.correlation;
      j["seq"] = r.link.seq;
      j["group_id"] = r.link.group_id;
      break;
    case RecordKind::kCollGpu:
      j["tid"] = r.prefix.tid;
      j["func"] = func_name(r.prefix.u8a);
      j["device"] = r.prefix.u8b;
      j["start_ns"] = r.coll_gpu.start_ns;
      j["end_ns"] = r.coll_gpu.end_ns;
      j["comm_id"] = model::comm_hex(r.coll_gpu.comm_id);
      j["stream"] = hex(r.coll_gpu.stream);
      j["seq"] = r.coll_gpu.seq;
      j["group_id"] = r.coll_gpu.group_id;
      break;
    case RecordKind::kLaunch:
      j["tid"] = r.prefix.tid;
      j["api"] = launch_api_name(r.prefix.u8a);
      j["t_enter_ns"] = r.launch.t_enter_ns;
      j["t_exit_ns"] = r.launch.t_exit_ns;
      j["stream"] = hex(r.launch.stream);
      j["correlation"] = r.launch.correlation;
      break;
    case RecordKind::kNvtx:
      j["tid"] = r.prefix.tid;
      j["device"] = r.prefix.u8a;
      j["start_ns"] = r.nvtx.start_ns;
      j["end_ns"] = r.nvtx.end_ns;
      j["name_id"] = r.nvtx.name_id;
      j["name"] = name_of(names, r.nvtx.name_id);
      j["domain_id"] = r.nvtx.domain_id;
      break;
    case RecordKind::kUniqueId:
      j["tid"] = r.prefix.tid;
      j["t_enter_ns"] = r.unique_id.t_enter_ns;
      j["t_exit_ns"] = r.unique_id.t_exit_ns;
      j["id_hash"] = hex(r.unique_id.id_hash);
      break;
    case RecordKind::kInFlight: {
      const auto& e = r.in_flight.entry;
      constexpr const char* kSources[] = {"drain", "exit", "salvage", "watchdog"};
      j["tid"] = r.prefix.tid;
      j["func"] = func_name(e.func);
      j["source"] = r.prefix.u8b < 4 ? kSources[r.prefix.u8b] : "unknown";
      j["t_enter_ns"] = e.t_enter_ns;
      j["t_seen_ns"] = r.in_flight.t_seen_ns;
      j["comm_id"] = model::comm_hex(e.comm_id);
      j["seq"] = e.seq;
      j["count"] = e.count;
      j["datatype"] = e.datatype;
      j["peer"] = e.peer;
      j["group_id"] = e.group_id;
      j["flags"] = e.flags;
      break;
    }
    case RecordKind::kInvalid:
    case RecordKind::kCount:
    default:
      j["u8a"] = r.prefix.u8a;
      j["u8b"] = r.prefix.u8b;
      j["tid"] = r.prefix.tid;
      break;
  }
  return j;
}

}  // namespace ncclwatch::trace
