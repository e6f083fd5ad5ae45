#include "reduce/rank_codec.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <filesystem>
#include <memory>

#include "analysis/rank_digest.h"
#include "reduce/byte_codec.h"
#include "reduce/call_codec.h"
#include "reduce/digest_codec.h"

namespace ncclwatch::reduce {
namespace fs = std::filesystem;
namespace {

// The codec writes every field of these by name: a field added to one of them must be added
// here too (and kNodeFileVersion raised), which these sizes remind of.
static_assert(sizeof(model::RangeEvent) == 24);
static_assert(sizeof(model::SchedSample) == 32);
static_assert(sizeof(model::HookedCall) == 56);
static_assert(sizeof(format::StepRecord) == 64);
static_assert(sizeof(format::GpuTimingRecord) == 64);

// A file's name alone: no directory part, not "." or "..", no NUL (a name read from a node file
// is joined to the report's directory, never used as a path).
bool plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find_first_of(std::string("/\0", 2)) == std::string::npos;
}

// A path inside `dir` as its name there (1, name); any other path as it is (0, path).
void write_path(ByteWriter& w, const std::string& path, const std::string& dir) {
  const fs::path p(path);
  if (!dir.empty() && p.has_parent_path() && p.parent_path() == fs::path(dir) &&
      plain_file_name(p.filename().string())) {
    w.u8(1);
    w.str(p.filename().string());
  } else {
    w.u8(0);
    w.str(path);
  }
}

std::string read_path(ByteReader& r, const std::string& dir) {
  const bool in_dir = r.u8() != 0;
  std::string s = r.str();
  if (!in_dir) return s;  // only ever printed
  if (!plain_file_name(s)) {
    r.fail("a file name that is not a plain name");
    return {};
  }
  return (fs::path(dir) / s).string();
}

void write_info(ByteWriter& w, const model::RankInfo& i, const std::string& dir) {
  w.svarint(i.rank);
  w.svarint(i.world_size);
  w.svarint(i.local_rank);
  w.svarint(i.device);
  w.str(i.host);
  w.str(i.job);
  w.str(i.pci_bus_id);
  w.svarint(i.pid);
  write_path(w, i.source, dir);
  w.varint(i.records);
  w.varint(i.losses.ring_full);
  w.varint(i.losses.cupti_dropped);
  w.pod(i.losses.counts);
  w.varint(i.skipped);
  w.u8(static_cast<uint8_t>((i.salvaged ? 1 : 0) | (i.complete ? 2 : 0) |
                            (i.entry_evidence ? 4 : 0)));
  w.u8(static_cast<uint8_t>(i.timing));
  w.u8(static_cast<uint8_t>(i.kernels));
  w.varint(i.kernel_sample_every);
  w.svarint(i.wall_offset_ns);
  w.svarint(i.alive_until_ns);
  w.str(i.nccl_version);
  w.str(i.gpu_name);
}

void read_info(ByteReader& r, model::RankInfo& i, const std::string& dir) {
  i.rank = static_cast<int32_t>(r.svarint());
  i.world_size = static_cast<int32_t>(r.svarint());
  i.local_rank = static_cast<int32_t>(r.svarint());
  i.device = static_cast<int32_t>(r.svarint());
  i.host = r.str();
  i.job = r.str();
  i.pci_bus_id = r.str();
  i.pid = r.svarint();
  i.source = read_path(r, dir);
  i.records = r.varint();
  i.losses.ring_full = r.varint();
  i.losses.cupti_dropped = r.varint();
  i.losses.counts = r.pod<format::LossCounts>();
  i.skipped = r.varint();
  const uint8_t flags = r.u8();
  i.salvaged = (flags & 1) != 0;
  i.complete = (flags & 2) != 0;
  i.entry_evidence = (flags & 4) != 0;
  i.timing = read_enum(r, static_cast<model::TimingSource>(5), "timing source");
  i.kernels = read_enum(r, static_cast<model::KernelScope>(3), "kernel scope");
  i.kernel_sample_every = static_cast<uint32_t>(r.varint());
  i.wall_offset_ns = r.svarint();
  i.alive_until_ns = r.svarint();
  i.nccl_version = r.str();
  i.gpu_name = r.str();
}

void write_comms(ByteWriter& w, const std::vector<model::CommInfo>& comms) {
  w.varint(comms.size());
  for (const model::CommInfo& c : comms) {
    w.fixed64(c.id);
    w.fixed64(c.parent);
    w.fixed64(c.handle);
    w.svarint(c.nranks);
    w.svarint(c.rank);
    w.svarint(c.device);
    w.u8(static_cast<uint8_t>(c.created_by));
    w.svarint(c.created_ns);
    w.str(c.name);
    w.u8(c.from_kernels ? 1 : 0);
  }
}

void read_comms(ByteReader& r, std::vector<model::CommInfo>& comms) {
  comms.resize(r.count(24));
  for (model::CommInfo& c : comms) {
    c.id = r.fixed64();
    c.parent = r.fixed64();
    c.handle = r.fixed64();
    c.nranks = static_cast<int32_t>(r.svarint());
    c.rank = static_cast<int32_t>(r.svarint());
    c.device = static_cast<int32_t>(r.svarint());
    c.created_by = read_enum(r, format::Func::kCount, "NCCL function");
    c.created_ns = r.svarint();
    c.name = r.str();
    c.from_kernels = r.u8() != 0;
  }
}

void write_hooked(ByteWriter& w, const model::HookedCall& h) {
  w.svarint(h.enter_ns);
  w.svarint(h.exit_ns - h.enter_ns);
  w.fixed64(h.comm_id);
  w.varint(h.seq);
  w.varint(h.count);
  w.varint(h.tid);
  w.svarint(h.peer);
  w.varint(h.group_id);
  w.u8(static_cast<uint8_t>(h.func));
  w.u8(h.datatype);
  w.u8(h.returned ? 1 : 0);
  w.u8(h.redop);
}

model::HookedCall read_hooked(ByteReader& r) {
  model::HookedCall h;
  h.enter_ns = r.svarint();
  h.exit_ns = r.svarint_after(h.enter_ns);
  h.comm_id = r.fixed64();
  h.seq = r.varint();
  h.count = r.varint();
  h.tid = static_cast<uint32_t>(r.varint());
  h.peer = static_cast<int32_t>(r.svarint());
  h.group_id = static_cast<uint32_t>(r.varint());
  h.func = read_enum(r, format::Func::kCount, "NCCL function");
  h.datatype = r.u8();
  h.returned = r.u8() != 0;
  h.redop = r.u8();
  return h;
}

// The drain thread's step summaries in time order: the step number and start as differences from
// the previous summary's, the first collective's entry and GPU end from the start (each present
// or not: 0 is "none"), the rest as varints (~30 bytes a step instead of the record's 64).
void write_steps(ByteWriter& w, const std::vector<format::StepRecord>& steps) {
  w.varint(steps.size());
  int64_t prev_start = 0, prev_step = 0;
  for (const format::StepRecord& s : steps) {
    w.u8(static_cast<uint8_t>(s.prefix.kind));
    w.u8(s.prefix.flags);
    w.u8(s.prefix.u8a);
    w.u8(s.prefix.u8b);
    w.varint(s.prefix.tid);
    w.svarint(static_cast<int64_t>(s.step) - prev_step);
    prev_step = s.step;
    w.varint(s.calls);
    w.svarint(s.start_ns - prev_start);
    prev_start = s.start_ns;
    w.u8((s.arrive_ns != 0 ? 1 : 0) | (s.sync_ns != 0 ? 2 : 0));
    if (s.arrive_ns != 0) w.svarint(s.arrive_ns - s.start_ns);
    if (s.sync_ns != 0) w.svarint(s.sync_ns - s.start_ns);
    w.varint(s.duration_us);
    w.varint(s.compute_us);
    w.varint(s.exposed_us);
    w.varint(s.idle_us);
    w.varint(s.bytes);
  }
}

uint32_t read_u32(ByteReader& r) {
  const uint64_t v = r.varint();
  if (v > UINT32_MAX) r.fail("a 32-bit field past 32 bits");
  return static_cast<uint32_t>(v);
}

void read_steps(ByteReader& r, std::vector<format::StepRecord>& steps) {
  steps.resize(r.count(14));  // 4 bytes and 10 varints at the least
  int64_t prev_start = 0, prev_step = 0;
  for (format::StepRecord& s : steps) {
    s.prefix.kind = static_cast<format::RecordKind>(r.u8());
    s.prefix.flags = r.u8();
    s.prefix.u8a = r.u8();
    s.prefix.u8b = r.u8();
    s.prefix.tid = read_u32(r);
    const int64_t step = r.svarint_after(prev_step);
    if (step < 0 || step > UINT32_MAX) r.fail("a step number past 32 bits");
    s.step = static_cast<uint32_t>(step);
    prev_step = step;
    s.calls = read_u32(r);
    s.start_ns = r.svarint_after(prev_start);
    prev_start = s.start_ns;
    const uint8_t present = r.u8();
    s.arrive_ns = (present & 1) != 0 ? r.svarint_after(s.start_ns) : 0;
    s.sync_ns = (present & 2) != 0 ? r.svarint_after(s.start_ns) : 0;
    s.duration_us = read_u32(r);
    s.compute_us = read_u32(r);
    s.exposed_us = read_u32(r);
    s.idle_us = read_u32(r);
    s.bytes = r.varint();
    if (!r.ok()) return;
  }
}

void write_small_records(ByteWriter& w, const model::RankTrace& t) {
  w.varint(t.ranges.size());
  int64_t prev = 0;
  for (const model::RangeEvent& e : t.ranges) {
    w.svarint(e.start_ns - prev);
    w.svarint(e.end_ns - e.start_ns);
    w.varint(e.name);
    w.varint(e.tid);
    prev = e.start_ns;
  }
  w.varint(t.names.size());
  for (const std::string& n : t.names) w.str(n);
  w.varint(t.sched.size());
  for (const model::SchedSample& s : t.sched) {
    w.svarint(s.t_ns);
    w.varint(s.tid);
    w.varint(s.on_cpu_ns);
    w.varint(s.wait_ns);
  }
  w.varint(t.never_returned.size());
  for (const model::HookedCall& h : t.never_returned) write_hooked(w, h);
  write_hooked(w, t.last_returned);
  write_steps(w, t.steps);
  w.varint(t.steps_not_kept);
  w.varint(t.windows.size());
  for (const model::WindowMark& m : t.windows) {
    w.varint(m.id);
    w.u8(static_cast<uint8_t>(m.trigger));
    w.svarint(m.start_ns);
    w.svarint(m.end_ns);
    w.varint(m.first_step);
    w.varint(m.end_step);
    w.svarint(m.requested_realtime_ns);
    w.varint(m.detail_records);
    w.str(m.text);
    w.u8(m.closed ? 1 : 0);
  }
  w.varint(t.gpu_timing.size());
  for (const format::GpuTimingRecord& g : t.gpu_timing) w.pod(g);
}

void read_small_records(ByteReader& r, model::RankTrace& t) {
  t.ranges.resize(r.count(4));
  int64_t prev = 0;
  for (model::RangeEvent& e : t.ranges) {
    e.start_ns = r.svarint_after(prev);
    e.end_ns = r.svarint_after(e.start_ns);
    e.name = static_cast<uint32_t>(r.varint());
    e.tid = static_cast<uint32_t>(r.varint());
    prev = e.start_ns;
  }
  t.names.resize(r.count(1));
  for (std::string& n : t.names) n = r.str();
  if (t.names.empty()) r.fail("no name table (it starts with \"\")");
  for (const model::RangeEvent& e : t.ranges) {
    if (e.name >= t.names.size()) r.fail("a range named outside the name table");
  }
  t.sched.resize(r.count(4));
  for (model::SchedSample& s : t.sched) {
    s.t_ns = r.svarint();
    s.tid = static_cast<uint32_t>(r.varint());
    s.on_cpu_ns = r.varint();
    s.wait_ns = r.varint();
  }
  t.never_returned.resize(r.count(19));
  for (model::HookedCall& h : t.never_returned) h = read_hooked(r);
  t.last_returned = read_hooked(r);
  read_steps(r, t.steps);
  t.steps_not_kept = r.varint();
  t.windows.resize(r.count(10));  // 10 fields of a byte at the least
  for (model::WindowMark& m : t.windows) {
    m.id = r.varint();
    m.trigger = read_enum(r, format::WindowTrigger::kCount, "window trigger");
    m.start_ns = r.svarint();
    m.end_ns = r.svarint();
    m.first_step = r.varint();
    m.end_step = r.varint();
    m.requested_realtime_ns = r.svarint();
    m.detail_records = r.varint();
    m.text = r.str();
    m.closed = r.u8() != 0;
  }
  t.gpu_timing.resize(r.count(sizeof(format::GpuTimingRecord)));
  for (format::GpuTimingRecord& g : t.gpu_timing) g = r.pod<format::GpuTimingRecord>();
}

}  // namespace

std::string encode_rank(const NodeRank& node, const std::string& dir) {
  ByteWriter w;
  w.varint(node.trace.parts.size());
  for (const std::string& p : node.trace.parts) w.str(p);
  w.svarint(node.trace.pid);
  w.svarint(node.trace.start_monotonic_ns);
  w.svarint(node.trace.start_realtime_ns);
  w.varint(node.trace.records);

  const model::RankTrace& t = node.rank;
  write_info(w, t.info, dir);
  write_comms(w, t.comms);
  write_calls(w, t.calls);
  write_small_records(w, t);
  w.u8(t.dropped ? 1 : 0);
  if (t.dropped) write_dropped(w, *t.dropped);
  w.u8(t.digest ? 1 : 0);
  if (t.digest) write_digest(w, *t.digest, node.compute_resolution_ns);

  w.varint(node.problems.size());
  for (const model::InputProblem& p : node.problems) {
    write_path(w, p.source, dir);
    w.str(p.message);
  }
  return w.take();
}

bool decode_rank(std::string_view bytes, const std::string& dir, NodeRank& out,
                 std::string& error) {
  ByteReader r(bytes);
  NodeRank node;
  node.trace.parts.resize(r.count(1));
  for (std::string& p : node.trace.parts) {
    p = r.str();
    if (r.ok() && !plain_file_name(p)) r.fail("a trace file name that is not a plain name");
  }
  node.trace.pid = r.svarint();
  node.trace.start_monotonic_ns = r.svarint();
  node.trace.start_realtime_ns = r.svarint();
  node.trace.records = r.varint();

  model::RankTrace& t = node.rank;
  read_info(r, t.info, dir);
  read_comms(r, t.comms);
  read_calls(r, t.calls);
  read_small_records(r, t);
  if (r.ok() && r.u8() != 0) {
    auto dropped = std::make_shared<model::DroppedGpuRecords>();
    if (read_dropped(r, *dropped)) t.dropped = std::move(dropped);
  }
  if (r.ok() && r.u8() != 0) {
    auto digest = std::make_shared<analysis::RankDigest>();
    if (read_digest(r, *digest, node.compute_resolution_ns)) t.digest = std::move(digest);
  }
  node.problems.resize(r.count(2));
  for (model::InputProblem& p : node.problems) {
    p.source = read_path(r, dir);
    p.message = r.str();
  }
  if (r.ok() && !r.done()) r.fail("bytes after the rank's end");
  if (!r.ok()) {
    error = r.error();
    return false;
  }
  out = std::move(node);
  return true;
}

}  // namespace ncclwatch::reduce
