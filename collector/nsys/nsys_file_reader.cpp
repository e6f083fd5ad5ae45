#include "nsys/nsys_file_reader.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "analysis/step_plan.h"
#include "kernels/comm_kernel_table.h"
#include "kernels/kernel_calls.h"
#include "nsys/nsys_meta.h"
#include "nsys/nsys_schema.h"
#include "nsys/sqlite_file.h"

namespace ncclwatch::nsys {
namespace {

using format::ActivityKind;

// Plausible times, as for Kineto traces: so every sum and difference of two fits in int64.
constexpr int64_t kMaxTsNs = int64_t{1} << 62;
constexpr int64_t kMaxDurNs = int64_t{1} << 61;

// nsys' serialized global ids: hardware and VM ids above bit 48, the process id in bits 24-47,
// the thread id in bits 0-23.
int64_t pid_of(int64_t global_id) {
  return (global_id >> 24) & 0xFFFFFF;
}
uint32_t tid_of(int64_t global_id) {
  return static_cast<uint32_t>(global_id & 0xFFFFFF);
}

// One (process, device) being read.
struct Unit {
  model::RankTrace trace;
  std::unordered_map<std::string, uint32_t> name_ids;
  std::vector<model::CommFamily> family_of_name;
  std::vector<uint32_t> correlations;  // of its GPU activities, sorted before the launches
};

struct ApiRange {  // an NCCL API call as NCCL's NVTX range shows it
  int64_t start_ns, end_ns;
  uint32_t tid;
  format::Func func;
};

class FileReader {
 public:
  FileReader(const std::string& path, std::vector<model::InputProblem>& problems,
             const NsysLimits& limits)
      : path_(path), problems_(problems), limits_(limits), db_(path) {}

  std::optional<NsysFile> read();

 private:
  void problem(std::string message) { problems_.push_back({path_, std::move(message)}); }
  bool usable(int64_t start, int64_t end);
  bool integers(const Query& q, int n);
  void unusable(const char* why);
  Unit* unit_for(int64_t pid, int64_t device);
  uint32_t intern(Unit& u, std::string_view name);
  bool read_activities(const std::string& table, ActivityKind kind, bool correlation, bool bytes);
  void read_runtime();
  void read_nvtx();
  void finish(Unit& u, const FileMeta& meta);
  std::vector<kernels::KernelCallHint> call_hints(const Unit& u) const;
  void query_failed(const Query& q, const std::string& what);

  std::string path_;
  std::vector<model::InputProblem>& problems_;
  NsysLimits limits_;
  SqliteFile db_;
  ExportSchema schema_;
  NsysFile out_;
  std::vector<Unit> units_;
  std::map<std::pair<int64_t, int64_t>, std::size_t> unit_index_;  // (pid, device) -> unit
  std::unordered_map<int64_t, std::vector<std::size_t>> units_of_pid_;
  std::unordered_map<int64_t, std::vector<ApiRange>> api_ranges_;  // by pid
  uint64_t bad_times_ = 0;
  std::string first_bad_;
  uint64_t units_dropped_ = 0;
  uint64_t kernel_rows_ = 0;
};

// A row's first `n` columns hold integers (text in an INTEGER column is damage, not a zero).
bool FileReader::integers(const Query& q, int n) {
  for (int i = 0; i < n; ++i) {
    if (!q.is_integer(i)) {
      unusable("a number column holds no integer");
      return false;
    }
  }
  return true;
}

void FileReader::unusable(const char* why) {
  if (bad_times_++ == 0) first_bad_ = why;
}

bool FileReader::usable(int64_t start, int64_t end) {
  const char* why = nullptr;
  if (start < 0 || start > kMaxTsNs || end > kMaxTsNs)
    why = "implausible timestamp (negative or beyond 2^62 ns)";
  else if (end < start)
    why = "ends before it starts";
  else if (end - start > kMaxDurNs)
    why = "implausible duration (over 73 years)";
  if (why == nullptr) return true;
  if (bad_times_++ == 0) first_bad_ = fmt::format("start {} end {}: {}", start, end, why);
  return false;
}

Unit* FileReader::unit_for(int64_t pid, int64_t device) {
  const auto key = std::make_pair(pid, device);
  auto it = unit_index_.find(key);
  if (it != unit_index_.end()) return &units_[it->second];
  if (units_.size() >= limits_.max_ranks_per_file) {
    ++units_dropped_;
    return nullptr;
  }
  unit_index_.emplace(key, units_.size());
  units_of_pid_[pid].push_back(units_.size());
  Unit& u = units_.emplace_back();
  u.trace.info.pid = pid;
  u.trace.info.device = static_cast<int32_t>(device);
  return &u;
}

uint32_t FileReader::intern(Unit& u, std::string_view name) {
  if (name.size() > limits_.max_name_bytes) name = name.substr(0, limits_.max_name_bytes);
  if (name.empty()) return 0;
  auto it = u.name_ids.find(std::string(name));
  if (it != u.name_ids.end()) return it->second;
  const auto id = static_cast<uint32_t>(u.trace.names.size());
  u.trace.names.emplace_back(name);
  u.name_ids.emplace(std::string(name), id);
  return id;
}

void FileReader::query_failed(const Query& q, const std::string& what) {
  problem(fmt::format("reading {} stopped: {}; kept what was read before", what, q.error()));
}

// Kernels (with names), memcpy or memset rows, streamed into their (process, device) units.
bool FileReader::read_activities(const std::string& table, ActivityKind kind, bool correlation,
                                 bool bytes) {
  const bool kernel = kind == ActivityKind::kKernel;
  const std::string sql = fmt::format(
      "SELECT a.start, a.end, a.deviceId, a.streamId, a.globalPid, {}, {}, {} FROM {} AS a{}",
      correlation ? "a.correlationId" : "NULL", bytes ? "a.bytes" : "0",
      kernel ? "s.value" : "NULL", table,
      kernel ? " LEFT JOIN StringIds AS s ON s.id = a." + schema_.kernel_name : "");
  Query q = db_.query(sql);
  const char* fallback = kind == ActivityKind::kMemcpy ? "Memcpy" : "Memset";
  while (q.step()) {
    ++out_.rows;
    const int64_t start = q.integer(0), end = q.integer(1), device = q.integer(2);
    if (!integers(q, 4)) continue;  // globalPid may be NULL (then process 0)
    if (!q.is_null(4) && !q.is_integer(4)) {
      unusable("a number column holds no integer");
      continue;
    }
    if (device < 0 || device >= 32768) {
      unusable("device id out of range");
      continue;
    }
    if (!usable(start, end)) continue;
    Unit* u = unit_for(pid_of(q.integer(4)), device);
    if (u == nullptr) continue;
    model::KernelEvent k;
    k.start_ns = start;
    k.end_ns = end;
    k.stream = static_cast<uint32_t>(q.integer(3));
    k.correlation = static_cast<uint32_t>(q.integer(5));
    const int64_t b = q.integer(6);
    k.bytes = b > 0 ? static_cast<uint64_t>(b) : 0;
    k.device = static_cast<int16_t>(u->trace.info.device);
    k.kind = kind;
    k.name = intern(*u, kernel ? q.text(7) : std::string_view(fallback));
    if (kernel) {
      if (k.name >= u->family_of_name.size())
        u->family_of_name.resize(k.name + 1, model::CommFamily::kCount);
      model::CommFamily& f = u->family_of_name[k.name];
      if (f == model::CommFamily::kCount)
        f = kernels::classify_kernel(u->trace.name_of(k.name)).family;
      k.family = f;
      k.nccl = f != model::CommFamily::kNone;
    }
    if (k.correlation != 0) u->correlations.push_back(k.correlation);
    u->trace.kernels.push_back(k);
    kernel_rows_ += kernel;
  }
  if (!q.ok()) {
    query_failed(q, table);
    return false;
  }
  return true;
}

// Runtime API calls that launched a kept GPU activity (same process, same correlation id).
void FileReader::read_runtime() {
  for (Unit& u : units_) {
    std::sort(u.correlations.begin(), u.correlations.end());
    u.correlations.erase(std::unique(u.correlations.begin(), u.correlations.end()),
                         u.correlations.end());
  }
  Query q = db_.query(
      "SELECT r.start, r.end, r.globalTid, r.correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r "
      "WHERE r.correlationId IS NOT NULL AND r.correlationId != 0");
  while (q.step()) {
    ++out_.rows;
    if (!integers(q, 4)) continue;
    auto it = units_of_pid_.find(pid_of(q.integer(2)));
    if (it == units_of_pid_.end()) continue;
    const auto corr = static_cast<uint32_t>(q.integer(3));
    for (std::size_t i : it->second) {
      Unit& u = units_[i];
      if (!std::binary_search(u.correlations.begin(), u.correlations.end(), corr)) continue;
      const int64_t start = q.integer(0), end = q.integer(1);
      if (!usable(start, end)) break;
      u.trace.launches.push_back({start, end, 0, corr, tid_of(q.integer(2))});
      break;
    }
  }
  if (!q.ok()) query_failed(q, "CUPTI_ACTIVITY_KIND_RUNTIME");
}

// NVTX ranges: step-like ones become the ranks' step ranges (PyTorch's emit_nvtx operator
// ranges, "<op>, op_id = N", are operators, never steps); NCCL's own API ranges name the
// collective of the kernel launched inside them.
void FileReader::read_nvtx() {
  std::string types = "59, 60";  // NvtxPushPopRange, NvtxStartEndRange in every schema seen
  if (schema_.event_types) {
    Query t = db_.query(
        "SELECT id FROM ENUM_NSYS_EVENT_TYPE WHERE name IN ('NvtxPushPopRange', "
        "'NvtxStartEndRange')");
    std::string ids;
    while (t.step()) ids += fmt::format("{}{}", ids.empty() ? "" : ", ", t.integer(0));
    if (!ids.empty()) types = ids;
  }
  const std::string sql = fmt::format(
      "SELECT n.start, n.end, n.globalTid, {}, {} FROM NVTX_EVENTS AS n{} WHERE n.end IS NOT "
      "NULL AND n.eventType IN ({})",
      schema_.nvtx_text ? "n.text" : "NULL", schema_.nvtx_text_id ? "s.value" : "NULL",
      schema_.nvtx_text_id ? " LEFT JOIN StringIds AS s ON s.id = n.textId" : "", types);
  Query q = db_.query(sql);
  while (q.step()) {
    ++out_.rows;
    if (q.is_null(2) || !integers(q, 3)) continue;  // a range of no thread belongs to no rank
    const int64_t pid = pid_of(q.integer(2));
    auto it = units_of_pid_.find(pid);
    if (it == units_of_pid_.end()) continue;
    std::string_view name = q.is_null(3) || q.text(3).empty() ? q.text(4) : q.text(3);
    const int64_t start = q.integer(0), end = q.integer(1);
    if (name.substr(0, 4) == "nccl") {
      const format::Func f = kernels::nccl_func_from_api_name(name);
      if (f != format::Func::kUnknown && usable(start, end))
        api_ranges_[pid].push_back({start, end, tid_of(q.integer(2)), f});
      continue;
    }
    if (name.size() > limits_.max_name_bytes || name.find(", op_id = ") != std::string_view::npos)
      continue;
    const std::string text(name);
    if (!analysis::StepDetector::looks_like_step(text) || !usable(start, end)) continue;
    out_.step_ranges = true;
    for (std::size_t i : it->second) {
      Unit& u = units_[i];
      u.trace.ranges.push_back({start, end, intern(u, text), tid_of(q.integer(2))});
    }
  }
  if (!q.ok()) query_failed(q, "NVTX_EVENTS");
}

// Per kernel: the NCCL API range around its launch (same thread, innermost), if any.
std::vector<kernels::KernelCallHint> FileReader::call_hints(const Unit& u) const {
  std::vector<kernels::KernelCallHint> hints(u.trace.kernels.size());
  auto it = api_ranges_.find(u.trace.info.pid);
  if (it == api_ranges_.end()) return hints;
  std::vector<ApiRange> ranges = it->second;
  std::sort(ranges.begin(), ranges.end(),
            [](const ApiRange& a, const ApiRange& b) { return a.start_ns < b.start_ns; });
  std::unordered_map<uint32_t, const model::LaunchEvent*> launch_of;
  for (const auto& l : u.trace.launches) launch_of.emplace(l.correlation, &l);
  for (std::size_t k = 0; k < u.trace.kernels.size(); ++k) {
    const model::KernelEvent& kern = u.trace.kernels[k];
    if (kern.family != model::CommFamily::kNccl) continue;
    auto l = launch_of.find(kern.correlation);
    if (l == launch_of.end()) continue;
    const int64_t t = l->second->enter_ns;
    auto pos = std::upper_bound(ranges.begin(), ranges.end(), t,
                                [](int64_t v, const ApiRange& r) { return v < r.start_ns; });
    for (int back = 0; pos != ranges.begin() && back < 16; ++back) {
      --pos;
      if (pos->tid != l->second->tid || pos->end_ns < t) continue;
      hints[k] = {pos->func, true, pos->start_ns, pos->end_ns};
      break;
    }
  }
  return hints;
}

void FileReader::finish(Unit& u, const FileMeta& meta) {
  model::RankTrace& t = u.trace;
  std::vector<uint32_t> order(t.kernels.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&t](uint32_t a, uint32_t b) {
    return t.kernels[a].start_ns < t.kernels[b].start_ns;
  });
  std::vector<model::KernelEvent> sorted;
  sorted.reserve(order.size());
  for (uint32_t i : order) sorted.push_back(t.kernels[i]);
  t.kernels = std::move(sorted);
  std::stable_sort(t.launches.begin(), t.launches.end(),
                   [](const auto& a, const auto& b) { return a.enter_ns < b.enter_ns; });
  std::stable_sort(t.ranges.begin(), t.ranges.end(),
                   [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
  t.info.source = path_;
  t.info.host = meta.host;
  t.info.timing = model::TimingSource::kNsys;
  t.info.wall_offset_ns = meta.wall_offset_ns;
  if (auto bus = meta.bus_ids.find(t.info.device); bus != meta.bus_ids.end())
    t.info.pci_bus_id = bus->second;
  const std::vector<kernels::KernelCallHint> hints = call_hints(u);
  kernels::add_kernel_calls(t, &hints);
  u.name_ids.clear();
  u.correlations = {};
}

std::optional<NsysFile> FileReader::read() {
  if (!db_.ok()) {
    problem(fmt::format("cannot read as SQLite: {}", db_.error()));
    return std::nullopt;
  }
  std::string why;
  if (!read_schema(db_, schema_, why)) {
    problem(why);
    return std::nullopt;
  }
  out_.path = path_;
  const FileMeta meta = read_meta(db_, schema_);
  out_.env_rank = meta.env_rank;
  out_.env_rank_variable = meta.env_rank_variable;
  out_.env_world_size = meta.env_world_size;
  out_.env_node = meta.env_node;
  if (read_activities("CUPTI_ACTIVITY_KIND_KERNEL", ActivityKind::kKernel,
                      schema_.kernel_correlation, false)) {
    if (schema_.memcpy)
      read_activities("CUPTI_ACTIVITY_KIND_MEMCPY", ActivityKind::kMemcpy,
                      schema_.memcpy_correlation, schema_.memcpy_bytes);
    if (schema_.memset)
      read_activities("CUPTI_ACTIVITY_KIND_MEMSET", ActivityKind::kMemset,
                      schema_.memset_correlation, schema_.memset_bytes);
    if (schema_.runtime) read_runtime();
    if (schema_.nvtx) read_nvtx();
  }
  if (kernel_rows_ == 0) {
    problem("no CUDA kernels in this export (no usable row in CUPTI_ACTIVITY_KIND_KERNEL)");
    return std::nullopt;
  }
  if (bad_times_ > 0)
    problem(
        fmt::format("{} rows with unusable values skipped (first: {})", bad_times_, first_bad_));
  if (units_dropped_ > 0)
    problem(fmt::format("more than {} (process, device) pairs: rows of the others skipped ({})",
                        limits_.max_ranks_per_file, units_dropped_));
  // Ranks of a file in device order (then process): the order CUDA devices get local ranks.
  std::vector<std::size_t> order(units_.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [this](std::size_t a, std::size_t b) {
    const auto& x = units_[a].trace.info;
    const auto& y = units_[b].trace.info;
    return std::tie(x.device, x.pid) < std::tie(y.device, y.pid);
  });
  for (std::size_t i : order) {
    // A process that only copied memory on a device (no kernel) is no rank of the job.
    const auto& ks = units_[i].trace.kernels;
    if (std::none_of(ks.begin(), ks.end(),
                     [](const auto& k) { return k.kind == ActivityKind::kKernel; }))
      continue;
    finish(units_[i], meta);
    units_[i].trace.info.records = out_.rows;
    out_.ranks.push_back(std::move(units_[i].trace));
  }
  units_.clear();
  return std::move(out_);
}

}  // namespace

std::optional<NsysFile> read_nsys_file(const std::string& path,
                                       std::vector<model::InputProblem>& problems,
                                       const NsysLimits& limits) {
  return FileReader(path, problems, limits).read();
}

}  // namespace ncclwatch::nsys
