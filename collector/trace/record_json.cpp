#include "trace/record_json.h"

#include "model/losses.h"
#include "model/vocabulary.h"
#include "trace/record_check.h"
#include "trace/record_names.h"
#include "trace/trace_header_check.h"

namespace ncclwatch::trace {
namespace {

using format::Record;
using format::RecordKind;
using json = nlohmann::ordered_json;

json name_of(const StringTable& names, uint32_t id) {
  if (id == 0) return nullptr;
  const std::string* text = names.text(id);
  return text ? json(*text) : json(nullptr);
}

bool has_flag(const Record& r, uint8_t bit) {
  return (r.prefix.flags & bit) != 0;
}

// What every record of a hooked NCCL call has first: the calling thread, the function, NCCL's
// result and the host span of the call.
void add_api_span(json& j, const Record& r, int64_t t_enter_ns, int64_t t_exit_ns) {
  j["tid"] = r.prefix.tid;
  j["func"] = func_name(r.prefix.u8a);
  j["result"] = static_cast<int8_t>(r.prefix.u8b);
  j["t_enter_ns"] = t_enter_ns;
  j["t_exit_ns"] = t_exit_ns;
}

// One writer per record kind, each field named once (the names are `ncclwatch dump`'s output).

void add_call(json& j, const Record& r, const StringTable&) {
  const format::CallRecord& c = r.call;
  add_api_span(j, r, c.t_enter_ns, c.t_exit_ns);
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
  j["in_group"] = has_flag(r, format::kCallInGroup);
  j["graph_captured"] = has_flag(r, format::kCallGraphCaptured);
  j["non_blocking"] = has_flag(r, format::kCallNonBlocking);
  j["no_kernel"] = has_flag(r, format::kCallNoKernel);
}

void add_group(json& j, const Record& r, const StringTable&) {
  add_api_span(j, r, r.group.t_enter_ns, r.group.t_exit_ns);
  j["group_id"] = r.group.group_id;
  j["depth"] = r.group.depth;
}

void add_comm(json& j, const Record& r, const StringTable&) {
  const format::CommRecord& c = r.comm;
  add_api_span(j, r, c.t_enter_ns, c.t_exit_ns);
  j["comm_id"] = model::comm_hex(c.comm_id);
  j["parent_id"] = model::comm_hex(c.parent_id);
  j["handle"] = hex(c.handle);
  j["nranks"] = c.nranks;
  j["rank"] = c.rank;
  j["device"] = c.device;
  j["color"] = c.color;
}

void add_comm_end(json& j, const Record& r, const StringTable&) {
  add_api_span(j, r, r.comm_end.t_enter_ns, r.comm_end.t_exit_ns);
  j["comm_id"] = model::comm_hex(r.comm_end.comm_id);
}

void add_identity(json& j, const Record& r, const StringTable&) {
  const format::IdentityRecord& id = r.identity;
  j["tid"] = r.prefix.tid;
  j["rank_source"] = rank_source_name(r.prefix.u8a);
  j["rank"] = id.rank;
  j["world_size"] = id.world_size;
  j["local_rank"] = id.local_rank;
  j["device"] = id.device;
  j["pci_bus_id"] = bounded_string(id.pci_bus_id, sizeof id.pci_bus_id);
}

void add_clock(json& j, const Record& r, const StringTable&) {
  j["window_ns"] = r.prefix.tid;
  j["monotonic_ns"] = r.clock.monotonic_ns;
  j["realtime_ns"] = r.clock.realtime_ns;
}

void add_kernel(json& j, const Record& r, const StringTable& names) {
  const format::KernelRecord& k = r.kernel;
  j["activity"] = activity_name(r.prefix.u8a);
  j["device"] = r.prefix.u8b;
  j["stream_id"] = r.prefix.tid;
  j["start_ns"] = k.start_ns;
  j["end_ns"] = k.end_ns;
  j["correlation"] = k.correlation;
  j["name_id"] = k.name_id;
  j["name"] = name_of(names, k.name_id);
  j["nccl"] = has_flag(r, format::kKernelIsNccl);
  j["from_graph"] = has_flag(r, format::kKernelFromGraph);
  j["graph_id"] = k.graph_id;
  j["graph_node_id"] = k.graph_node_id;
  j["context_id"] = k.context_id;
  j["bytes"] = k.bytes;
}

void add_string(json& j, const Record& r, const StringTable&) {
  j["string_id"] = r.prefix.tid;
  j["chunk"] = r.prefix.u8a;
  j["last"] = has_flag(r, format::kStringLastChunk);
  j["text"] = bounded_string(r.string.text, sizeof r.string.text);
}

void add_kernel_link(json& j, const Record& r, const StringTable&) {
  const format::KernelLinkRecord& l = r.link;
  j["tid"] = r.prefix.tid;
  j["func"] = func_name(r.prefix.u8a);
  j["t_ns"] = l.t_ns;
  j["comm_id"] = model::comm_hex(l.comm_id);
  j["stream"] = hex(l.stream);
  j["correlation"] = l.correlation;
  j["seq"] = l.seq;
  j["group_id"] = l.group_id;
}

void add_coll_gpu(json& j, const Record& r, const StringTable&) {
  const format::CollGpuRecord& g = r.coll_gpu;
  j["tid"] = r.prefix.tid;
  j["func"] = func_name(r.prefix.u8a);
  j["device"] = r.prefix.u8b;
  j["start_ns"] = g.start_ns;
  j["end_ns"] = g.end_ns;
  j["comm_id"] = model::comm_hex(g.comm_id);
  j["stream"] = hex(g.stream);
  j["seq"] = g.seq;
  j["group_id"] = g.group_id;
}

void add_launch(json& j, const Record& r, const StringTable&) {
  j["tid"] = r.prefix.tid;
  j["api"] = launch_api_name(r.prefix.u8a);
  j["t_enter_ns"] = r.launch.t_enter_ns;
  j["t_exit_ns"] = r.launch.t_exit_ns;
  j["stream"] = hex(r.launch.stream);
  j["correlation"] = r.launch.correlation;
}

void add_nvtx(json& j, const Record& r, const StringTable& names) {
  j["tid"] = r.prefix.tid;
  j["device"] = r.prefix.u8a;
  j["start_ns"] = r.nvtx.start_ns;
  j["end_ns"] = r.nvtx.end_ns;
  j["name_id"] = r.nvtx.name_id;
  j["name"] = name_of(names, r.nvtx.name_id);
  j["domain_id"] = r.nvtx.domain_id;
}

void add_unique_id(json& j, const Record& r, const StringTable&) {
  j["tid"] = r.prefix.tid;
  j["t_enter_ns"] = r.unique_id.t_enter_ns;
  j["t_exit_ns"] = r.unique_id.t_exit_ns;
  j["id_hash"] = hex(r.unique_id.id_hash);
}

void add_in_flight(json& j, const Record& r, const StringTable&) {
  const auto& e = r.in_flight.entry;
  j["tid"] = r.prefix.tid;
  j["func"] = func_name(e.func);
  j["source"] = in_flight_source_name(r.prefix.u8b);
  j["t_enter_ns"] = e.t_enter_ns;
  j["t_seen_ns"] = r.in_flight.t_seen_ns;
  j["comm_id"] = model::comm_hex(e.comm_id);
  j["seq"] = e.seq;
  j["count"] = e.count;
  j["datatype"] = e.datatype;
  j["peer"] = e.peer;
  j["group_id"] = e.group_id;
  j["flags"] = e.flags;
}

void add_sched(json& j, const Record& r, const StringTable&) {
  j["tid"] = r.prefix.tid;
  j["t_ns"] = r.sched.t_ns;
  j["on_cpu_ns"] = r.sched.on_cpu_ns;
  j["wait_ns"] = r.sched.wait_ns;
  j["timeslices"] = r.sched.timeslices;
}

json us_or_null(uint32_t us) {
  return us == format::kStepUnknownUs ? json(nullptr) : json(us);
}

void add_step(json& j, const Record& r, const StringTable&) {
  const format::StepRecord& s = r.step;
  j["source"] = step_source_name(r.prefix.u8a);
  j["timing"] = step_timing_name(r.prefix.u8b);
  j["step"] = s.step;
  j["ref_seq"] = r.prefix.tid;
  j["start_ns"] = s.start_ns;
  j["duration_us"] = s.duration_us;
  j["arrive_ns"] = s.arrive_ns;
  j["sync_ns"] = s.sync_ns;
  j["compute_us"] = us_or_null(s.compute_us);
  j["exposed_us"] = us_or_null(s.exposed_us);
  j["idle_us"] = us_or_null(s.idle_us);
  j["calls"] = s.calls;
  j["bytes"] = s.bytes;
  j["detail"] = has_flag(r, format::kStepDetail);
  j["gpu_partial"] = has_flag(r, format::kStepGpuPartial);
  j["last"] = has_flag(r, format::kStepLast);
  j["gpu_off"] = has_flag(r, format::kStepGpuOff);
}

json step_or_null(uint64_t step) {
  return step == format::kNoStep ? json(nullptr) : json(step);
}

void add_window(json& j, const Record& r, const StringTable& names) {
  const format::WindowRecord& w = r.window;
  j["event"] = r.prefix.u8b == static_cast<uint8_t>(format::WindowEvent::kOpen)    ? "open"
               : r.prefix.u8b == static_cast<uint8_t>(format::WindowEvent::kClose) ? "close"
                                                                                   : "unknown";
  j["trigger"] = window_trigger_name(r.prefix.u8a);
  j["id"] = w.id;
  j["start_ns"] = w.start_ns;
  j["end_ns"] = w.end_ns;
  j["first_step"] = step_or_null(w.first_step);
  j["end_step"] = step_or_null(w.end_step);
  j["requested_realtime_ns"] = w.requested_realtime_ns;
  j["detail_records"] = w.detail_records;
  j["text_id"] = r.prefix.tid;
  j["text"] = name_of(names, r.prefix.tid);
}

void add_gpu_timing(json& j, const Record& r, const StringTable&) {
  const format::GpuTimingRecord& g = r.gpu_timing;
  j["on"] = r.prefix.u8a != 0;
  j["reason"] = gpu_timing_reason_name(r.prefix.u8b);
  j["mode"] = r.prefix.tid;
  j["t_ns"] = g.t_ns;
  j["step_ns"] = g.step_ns;
  j["units_per_step"] = g.units_per_step_x100 / 100.0;
  j["unit_cost_ns"] = g.unit_cost_ns;
  j["limit_ppm"] = g.limit_ppm;
  j["measured_steps"] = g.measured_steps;
}

// A kind this reader does not know: the raw prefix, so nothing is hidden.
void add_raw(json& j, const Record& r, const StringTable&) {
  j["u8a"] = r.prefix.u8a;
  j["u8b"] = r.prefix.u8b;
  j["tid"] = r.prefix.tid;
}

using FieldWriter = void (*)(json&, const Record&, const StringTable&);

// Indexed by RecordKind: the one list of how each kind's fields are named.
constexpr FieldWriter kFieldWriters[] = {add_raw,      add_call,        add_group,     add_comm,
                                         add_comm_end, add_identity,    add_clock,     add_kernel,
                                         add_string,   add_kernel_link, add_coll_gpu,  add_launch,
                                         add_nvtx,     add_unique_id,   add_in_flight, add_sched,
                                         add_step,     add_window,      add_gpu_timing};
static_assert(std::size(kFieldWriters) == static_cast<std::size_t>(RecordKind::kCount));

}  // namespace

nlohmann::ordered_json record_to_json(const Record& r, uint64_t index, const StringTable& names) {
  json j = json::object();
  j["index"] = index;
  j["kind"] = kind_name(static_cast<uint8_t>(r.prefix.kind));
  j["flags"] = r.prefix.flags;
  if (const char* problem = record_problem(r)) j["invalid"] = problem;
  const auto kind = static_cast<std::size_t>(r.prefix.kind);
  (kind < std::size(kFieldWriters) ? kFieldWriters[kind] : add_raw)(j, r, names);
  return j;
}

nlohmann::ordered_json header_to_json(const format::TraceHeader& h) {
  const auto& p = h.process;
  json j;
  j["kind"] = "header";
  j["layout_version"] = h.layout_version;
  j["state"] = trace_state_name(h.state);
  j["job"] = bounded_string(p.job, sizeof p.job);
  j["host"] = bounded_string(p.host, sizeof p.host);
  j["pid"] = p.pid;
  j["rank"] = p.rank;
  j["world_size"] = p.world_size;
  j["local_rank"] = p.local_rank;
  j["device"] = p.device;
  j["start_monotonic_ns"] = p.start_monotonic_ns;
  j["start_realtime_ns"] = p.start_realtime_ns;
  j["records"] = h.records;
  j["dropped"] = h.dropped;
  j["cupti_dropped"] = h.cupti_dropped;
  j["mode"] = h.mode;
  j["kernel_filter"] = h.kernel_filter;
  j["part"] = h.layout_version >= 5 ? h.process.part : 0;
  // Every other loss the shim counted (zero for files older than layout version 3).
  json losses = json::object();
  const auto all = model::Losses::of(h);
  for (const auto& f : format::kLossFields) losses[f.key] = all.counts.*f.counter;
  j["losses"] = losses;
  return j;
}

}  // namespace ncclwatch::trace
