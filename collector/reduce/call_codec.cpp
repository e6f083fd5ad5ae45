#include "reduce/call_codec.h"

#include <algorithm>
#include <cstdint>
#include <unordered_map>

namespace ncclwatch::reduce {
namespace {

// Every field of a call is written by name below: a field added to CallEvent must be added here
// too (and kNodeFileVersion raised), which its size reminds of.
static_assert(sizeof(model::CallEvent) == 80);

// What a call shares with the same call of other steps: every field but its times, with the
// communicator and stream as their index among the rank's distinct ones, and the counters
// (sequence, group, kernel index) as steps from their previous values, which repeat.
struct CallShape {
  uint32_t comm = 0;
  uint32_t stream = 0;
  uint64_t seq_step = 0;  // from this communicator's previous call (mod 2^64)
  uint64_t count = 0;
  uint64_t group = 0;   // 0: none; else 1 + zig-zag of the step from the last group id
  uint64_t kernel = 0;  // 0: none; else 1 + zig-zag of the step from the last kernel index
  int32_t peer = -1;
  format::Func func = format::Func::kUnknown;
  uint8_t datatype = 0;
  uint8_t redop = 0;
  int8_t result = 0;
  uint8_t flags = 0;
  bool gpu = false;

  bool operator==(const CallShape&) const = default;
};

struct ShapeHash {
  std::size_t operator()(const CallShape& s) const {
    uint64_t h = 0x9e3779b97f4a7c15ULL;
    auto mix = [&h](uint64_t v) { h = (h ^ v) * 0xff51afd7ed558ccdULL; };
    mix(s.comm | uint64_t{s.stream} << 32);
    mix(s.seq_step);
    mix(s.count);
    mix(s.group);
    mix(s.kernel);
    mix(static_cast<uint32_t>(s.peer) | uint64_t{static_cast<uint8_t>(s.func)} << 32 |
        uint64_t{s.datatype} << 40 | uint64_t{s.redop} << 48 |
        uint64_t{static_cast<uint8_t>(s.result)} << 56);
    mix(s.flags | uint64_t{s.gpu} << 8);
    return static_cast<std::size_t>(h ^ (h >> 32));
  }
};

// The counters a shape's steps are taken from, as the writer and the reader both keep them.
struct Counters {
  std::vector<uint64_t> comm_ids;
  std::vector<uint64_t> last_seq;  // per communicator
  std::vector<uint32_t> streams;
  int64_t last_group = 0;
  int64_t last_kernel = -1;
};

void write_shape(ByteWriter& w, const CallShape& s, const model::CallEvent& c, bool new_comm,
                 bool new_stream) {
  if (new_comm) {
    w.varint(0);
    w.fixed64(c.comm_id);
  } else {
    w.varint(uint64_t{s.comm} + 1);
  }
  if (new_stream) {
    w.varint(0);
    w.varint(c.stream);
  } else {
    w.varint(uint64_t{s.stream} + 1);
  }
  w.varint(s.seq_step);
  w.varint(s.count);
  w.varint(s.group);
  w.varint(s.kernel);
  w.svarint(s.peer);
  w.u8(static_cast<uint8_t>(s.func));
  w.u8(s.datatype);
  w.u8(s.redop);
  w.u8(static_cast<uint8_t>(s.result));
  w.u8(s.flags);
  w.u8(s.gpu ? 1 : 0);
}

bool read_shape(ByteReader& r, Counters& k, CallShape& s) {
  const uint64_t comm = r.varint();
  if (comm == 0) {
    k.comm_ids.push_back(r.fixed64());
    k.last_seq.push_back(0);
    s.comm = static_cast<uint32_t>(k.comm_ids.size() - 1);
  } else if (comm <= k.comm_ids.size()) {
    s.comm = static_cast<uint32_t>(comm - 1);
  } else {
    r.fail("a call of a communicator not seen before");
    return false;
  }
  const uint64_t stream = r.varint();
  if (stream == 0) {
    const uint64_t value = r.varint();
    if (value > UINT32_MAX) r.fail("a stream past 32 bits");
    k.streams.push_back(static_cast<uint32_t>(value));
    s.stream = static_cast<uint32_t>(k.streams.size() - 1);
  } else if (stream <= k.streams.size()) {
    s.stream = static_cast<uint32_t>(stream - 1);
  } else {
    r.fail("a call on a stream not seen before");
    return false;
  }
  s.seq_step = r.varint();
  s.count = r.varint();
  s.group = r.varint();
  s.kernel = r.varint();
  // Steps bounded before any sum: a group id is 32 bits, a kernel index 31.
  constexpr uint64_t kFar = uint64_t{1} << 34;
  if (s.group > kFar || s.kernel > kFar) {
    r.fail("a group or kernel step beyond any index");
    return false;
  }
  const int64_t peer = r.svarint();
  if (peer < INT32_MIN || peer > INT32_MAX) r.fail("a peer past 32 bits");
  s.peer = static_cast<int32_t>(peer);
  s.func = read_enum(r, format::Func::kCount, "NCCL function");
  s.datatype = r.u8();
  s.redop = r.u8();
  s.result = static_cast<int8_t>(r.u8());
  s.flags = r.u8();
  const uint8_t gpu = r.u8();
  if (gpu > 1) r.fail("a call's GPU flag that is neither 0 nor 1");
  s.gpu = gpu != 0;
  return r.ok();
}

// The call's fields from its shape, the counters moved on.
bool apply_shape(ByteReader& r, const CallShape& s, Counters& k, model::CallEvent& c) {
  c.comm_id = k.comm_ids[s.comm];
  c.seq = k.last_seq[s.comm] + s.seq_step;
  k.last_seq[s.comm] = c.seq;
  c.stream = k.streams[s.stream];
  c.count = s.count;
  if (s.group == 0) {
    c.group_id = 0;
  } else {
    const int64_t group = k.last_group + unzigzag(s.group - 1);
    if (group <= 0 || group > UINT32_MAX) {
      r.fail("a call's group id out of range");
      return false;
    }
    c.group_id = static_cast<uint32_t>(group);
    k.last_group = group;
  }
  if (s.kernel == 0) {
    c.kernel = -1;
  } else {
    const int64_t kernel = k.last_kernel + unzigzag(s.kernel - 1);
    if (kernel < 0 || kernel > INT32_MAX) {
      r.fail("a call's kernel index out of range");
      return false;
    }
    c.kernel = static_cast<int32_t>(kernel);
    k.last_kernel = kernel;
  }
  c.peer = s.peer;
  c.func = s.func;
  c.datatype = s.datatype;
  c.redop = s.redop;
  c.result = s.result;
  c.flags = s.flags;
  return true;
}

}  // namespace

void write_calls(ByteWriter& w, const std::vector<model::CallEvent>& calls) {
  Counters k;
  std::unordered_map<CallShape, uint32_t, ShapeHash> shapes;
  w.varint(calls.size());
  for (const model::CallEvent& c : calls) {
    CallShape s;
    const auto comm = std::find(k.comm_ids.begin(), k.comm_ids.end(), c.comm_id);
    const bool new_comm = comm == k.comm_ids.end();
    if (new_comm) {
      k.comm_ids.push_back(c.comm_id);
      k.last_seq.push_back(0);
    }
    s.comm = static_cast<uint32_t>(new_comm ? k.comm_ids.size() - 1 : comm - k.comm_ids.begin());
    const auto stream = std::find(k.streams.begin(), k.streams.end(), c.stream);
    const bool new_stream = stream == k.streams.end();
    if (new_stream) k.streams.push_back(c.stream);
    s.stream =
        static_cast<uint32_t>(new_stream ? k.streams.size() - 1 : stream - k.streams.begin());
    s.seq_step = c.seq - k.last_seq[s.comm];
    k.last_seq[s.comm] = c.seq;
    s.count = c.count;
    if (c.group_id != 0) {
      s.group = 1 + zigzag(int64_t{c.group_id} - k.last_group);
      k.last_group = c.group_id;
    }
    if (c.kernel >= 0) {
      s.kernel = 1 + zigzag(int64_t{c.kernel} - k.last_kernel);
      k.last_kernel = c.kernel;
    }
    s.peer = c.peer;
    s.func = c.func;
    s.datatype = c.datatype;
    s.redop = c.redop;
    s.result = c.result;
    s.flags = c.flags;
    s.gpu = c.gpu_start_ns != 0 || c.gpu_end_ns != 0;

    // A new communicator or stream is always a new shape (no shape names its index yet).
    const auto known = shapes.find(s);
    if (known != shapes.end()) {
      w.varint(uint64_t{known->second} + 1);
    } else {
      w.varint(0);
      write_shape(w, s, c, new_comm, new_stream);
      if (shapes.size() < kMaxCallShapes) shapes.emplace(s, static_cast<uint32_t>(shapes.size()));
    }
  }
  // The times as columns (see the header), each as byte planes (ByteWriter::planes): the first
  // entry, then the steps between entries, durations, GPU starts (from the entry) and GPU
  // durations, signed ones zig-zagged. Entries and durations take a plane at least: with the
  // shape's index, 3 bytes a call, which bounds the count before anything is allocated.
  if (calls.empty()) return;
  w.svarint(calls.front().enter_ns);
  std::vector<uint64_t> column;
  column.reserve(calls.size());
  for (std::size_t i = 1; i < calls.size(); ++i)
    column.push_back(static_cast<uint64_t>(calls[i].enter_ns) -
                     static_cast<uint64_t>(calls[i - 1].enter_ns));
  w.planes(column, 1);
  column.clear();
  for (const model::CallEvent& c : calls) column.push_back(zigzag(c.exit_ns - c.enter_ns));
  w.planes(column, 1);
  column.clear();
  for (const model::CallEvent& c : calls) {
    if (c.gpu_start_ns != 0 || c.gpu_end_ns != 0)
      column.push_back(zigzag(c.gpu_start_ns - c.enter_ns));
  }
  w.planes(column);
  column.clear();
  for (const model::CallEvent& c : calls) {
    if (c.gpu_start_ns != 0 || c.gpu_end_ns != 0)
      column.push_back(zigzag(c.gpu_end_ns - c.gpu_start_ns));
  }
  w.planes(column);
}

void read_calls(ByteReader& r, std::vector<model::CallEvent>& calls) {
  Counters k;
  std::vector<CallShape> shapes;
  calls.resize(r.count(3));  // a shape's index, an entry step and a duration at the least
  std::vector<uint8_t> gpu(calls.size());
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const uint64_t index = r.varint();
    CallShape fresh;
    const CallShape* s = nullptr;
    if (index == 0) {
      if (!read_shape(r, k, fresh)) return;
      if (shapes.size() < kMaxCallShapes) shapes.push_back(fresh);
      s = &fresh;
    } else if (index <= shapes.size()) {
      s = &shapes[static_cast<std::size_t>(index - 1)];
    } else {
      r.fail("a call of a shape not seen before");
      return;
    }
    if (!apply_shape(r, *s, k, calls[i])) return;
    gpu[i] = s->gpu ? 1 : 0;
  }
  if (calls.empty() || !r.ok()) return;
  calls.front().enter_ns = r.svarint();
  std::vector<uint64_t> steps, durations, starts, lengths;
  const std::size_t with_gpu = static_cast<std::size_t>(std::count(gpu.begin(), gpu.end(), 1));
  if (!r.planes(calls.size() - 1, steps, 1) || !r.planes(calls.size(), durations, 1) ||
      !r.planes(with_gpu, starts) || !r.planes(with_gpu, lengths))
    return;
  for (std::size_t i = 1; i < calls.size(); ++i) {
    if (steps[i - 1] > static_cast<uint64_t>(INT64_MAX)) {
      // A step below 0 written as unsigned (the analyses take calls by entry time).
      r.fail("calls out of order");
      return;
    }
    if (__builtin_add_overflow(calls[i - 1].enter_ns, static_cast<int64_t>(steps[i - 1]),
                               &calls[i].enter_ns)) {
      r.fail("a time past the range of 64 bits");
      return;
    }
  }
  // Every sum below is checked: a forged column must not wrap a time.
  const auto after = [&r](int64_t base, uint64_t zz, int64_t& out) {
    if (__builtin_add_overflow(base, unzigzag(zz), &out)) {
      r.fail("a time past the range of 64 bits");
      return false;
    }
    return true;
  };
  std::size_t g = 0;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    model::CallEvent& c = calls[i];
    if (!after(c.enter_ns, durations[i], c.exit_ns)) return;
    if (gpu[i] == 0) continue;
    if (!after(c.enter_ns, starts[g], c.gpu_start_ns) ||
        !after(c.gpu_start_ns, lengths[g], c.gpu_end_ns))
      return;
    ++g;
  }
}

}  // namespace ncclwatch::reduce
