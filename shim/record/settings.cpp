// See settings.h. The only code in the shim that reads an NCCLWATCH_* variable (checked by
// tests/shim/record/settings_table_test.cpp).
#include "record/settings.h"

#include <limits.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>

#include "record/launcher_variables.h"

namespace ncclwatch::shim {
namespace {

using settings::Id;

// A value as it may be quoted in a message: at most 128 characters.
std::string clipped(const char* value) {
  std::string text(value, strnlen(value, 129));
  if (text.size() > 128) text = text.substr(0, 125) + "...";
  return text;
}

// Reads the table's variables from one lookup and records what was wrong.
class VariableReader {
 public:
  VariableReader(EnvLookup env, Settings& s) : env_(env), s_(s) {}

  // The value when set and not empty, else nullptr. Remembers it (Settings::raw).
  const char* get(Id id) {
    const char* v = env_(settings::name(id));
    if (v != nullptr) s_.raw[static_cast<std::size_t>(id)] = std::string(v);
    return v != nullptr && *v != '\0' ? v : nullptr;
  }
  void bad(Id id, const char* value) {
    const settings::Variable& var = settings::variable(id);
    std::string line = "ncclwatch: bad " + std::string(var.name) + "=" + clipped(value);
    if (!var.expected.empty()) line += " (expected " + std::string(var.expected) + ")";
    line += ", using " + std::string(var.default_text);
    s_.problems.push_back(std::move(line));
  }

  void flag(Id id, bool& out) {
    const char* v = get(id);
    if (v == nullptr) return;
    if (settings::switch_is_off(v)) {
      out = false;
    } else if (settings::switch_is_on(v)) {
      out = true;
    } else {
      bad(id, v);
    }
  }
  template <typename Int>
  void integer(Id id, long long lo, long long hi, Int& out) {
    const char* v = get(id);
    if (v == nullptr) return;
    char* end = nullptr;
    errno = 0;
    long long n = std::strtoll(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || n < lo || n > hi) {
      bad(id, v);
    } else {
      out = static_cast<Int>(n);
    }
  }
  // One of `words` into `out`. Returns the value when it is none of them (for the caller to
  // parse further or call bad()), nullptr when unset or matched.
  template <typename Enum, std::size_t N>
  const char* choice(Id id, const std::pair<const char*, Enum> (&words)[N], Enum& out) {
    const char* v = get(id);
    if (v == nullptr) return nullptr;
    for (const auto& [word, value] : words) {
      if (std::strcmp(v, word) == 0) {
        out = value;
        return nullptr;
      }
    }
    return v;
  }
  void text(Id id, std::string& out) {
    if (const char* v = get(id)) out = v;
  }

 private:
  EnvLookup env_;
  Settings& s_;
};

std::string default_job(EnvLookup env) {
  const char* run_id = env("TORCHELASTIC_RUN_ID");
  if (run_id != nullptr && *run_id != '\0' && std::strcmp(run_id, "none") != 0) return run_id;
  for (const char* name :
       {"SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", "PMIX_NAMESPACE", "OMPI_MCA_orte_ess_jobid"}) {
    const char* v = env(name);
    if (v != nullptr && *v != '\0') return v;
  }
  return "local-" + std::to_string(static_cast<long>(getppid()));
}

std::string host_name() {
  char buf[HOST_NAME_MAX + 1] = {};
  if (gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "unknown-host";
  return buf;
}

char g_start_dir[PATH_MAX] = {};  // written once at load, before any thread exists

std::string absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[PATH_MAX] = {};
  if (g_start_dir[0] != '\0') {
    std::memcpy(cwd, g_start_dir, sizeof cwd);
  } else if (getcwd(cwd, sizeof cwd) == nullptr) {
    return path;
  }
  std::string p = path;
  if (p.rfind("./", 0) == 0) p = p.substr(2);
  return std::string(cwd) + "/" + p;
}

constexpr std::pair<const char*, DetailLevel> kDetailWords[] = {{"all", DetailLevel::kAll},
                                                                {"windows", DetailLevel::kWindows}};

constexpr std::pair<const char*, SummaryGpu> kSummaryGpuWords[] = {
    {"auto", SummaryGpu::kAuto}, {"on", SummaryGpu::kOn}, {"off", SummaryGpu::kOff}};

// Tiers and capture windows (docs/always-on.md).
void read_capture_settings(VariableReader& in, Settings& s) {
  if (const char* v = in.choice(Id::kDetail, kDetailWords, s.detail)) in.bad(Id::kDetail, v);
  if (const char* v = in.get(Id::kCapture)) {
    std::vector<CaptureItem> items;
    if (parse_capture_schedule(v, items)) {
      s.capture = std::move(items);
    } else {
      in.bad(Id::kCapture, v);
    }
  }
  in.integer(Id::kMaxMb, 1, 1 << 20, s.max_mb);
  if (const char* v = in.choice(Id::kSummaryGpu, kSummaryGpuWords, s.summary_gpu))
    in.bad(Id::kSummaryGpu, v);
  if (const char* v = in.get(Id::kAutoCapture)) {
    AutoCapture a;
    if (parse_auto_capture(v, a)) {
      s.auto_capture = a;
    } else {
      in.bad(Id::kAutoCapture, v);
    }
  }
}

void read_recorder_settings(EnvLookup env, VariableReader& in, Settings& s) {
  in.flag(Id::kEnabled, s.enabled);
  const char* job = in.get(Id::kJob);
  s.job = sanitize_name(job != nullptr ? std::string(job) : default_job(env));
  const char* host = in.get(Id::kHost);
  s.host = sanitize_name(host != nullptr ? std::string(host) : host_name());
  const char* dir = in.get(Id::kDir);
  s.dir = absolute(dir != nullptr ? std::string(dir) : "ncclwatch-" + s.job);
  while (s.dir.size() > 1 && s.dir.back() == '/') s.dir.pop_back();

  if (const char* v = in.get(Id::kRingMb)) {
    char* end = nullptr;
    errno = 0;
    double mb = std::strtod(v, &end);
    // At least 4 KiB (a few dozen records); at most 1 TiB.
    if (errno != 0 || end == v || *end != '\0' || !(mb >= 4.0 / 1024) || mb > 1024.0 * 1024) {
      in.bad(Id::kRingMb, v);
    } else {
      s.ring_mb = mb;
    }
  }
  in.integer(Id::kDrainMs, 1, 10000, s.drain_ms);
  in.integer(Id::kHangS, 0, 1'000'000, s.hang_s);
  in.flag(Id::kExitLine, s.exit_line);
  s.local_rank = launcher::first_int(env, launcher::kLocalRank);
  in.flag(Id::kTestDrainHold, s.test_drain_hold);
  in.flag(Id::kTestStepsFromPeers, s.test_steps_from_peers);
  in.integer(Id::kTestClockOffsetNs, INT64_MIN, INT64_MAX, s.test_clock_offset_ns);
  read_capture_settings(in, s);
}

constexpr std::pair<const char*, GpuMode> kModeWords[] = {
    {"full", GpuMode::kFull}, {"lite", GpuMode::kLite}, {"host", GpuMode::kHost}};
constexpr std::pair<const char*, KernelPolicy> kKernelWords[] = {{"all", KernelPolicy::kAll},
                                                                 {"nccl", KernelPolicy::kNccl}};
constexpr std::pair<const char*, CuptiClockChoice> kCuptiClockWords[] = {
    {"auto", CuptiClockChoice::kAuto},
    {"callback", CuptiClockChoice::kCallback},
    {"measured", CuptiClockChoice::kMeasured}};

void read_gpu_settings(VariableReader& in, Settings& s) {
  if (const char* v = in.choice(Id::kMode, kModeWords, s.mode)) in.bad(Id::kMode, v);
  if (const char* v = in.choice(Id::kKernels, kKernelWords, s.kernels)) {
    char* end = nullptr;
    long n = std::strncmp(v, "sampled:", 8) == 0 ? std::strtol(v + 8, &end, 10) : 0;
    if (end != nullptr && end != v + 8 && *end == '\0' && n >= 1 && n <= 1000000) {
      s.kernels = n == 1 ? KernelPolicy::kAll : KernelPolicy::kSampled;
      s.kernels_every = static_cast<uint32_t>(n);
    } else {
      in.bad(Id::kKernels, v);
    }
  }
  if (const char* v = in.choice(Id::kCuptiClock, kCuptiClockWords, s.cupti_clock))
    in.bad(Id::kCuptiClock, v);
  in.integer(Id::kCuptiBuffers, 2, kMaxCuptiBuffers, s.cupti_buffers);
  in.integer(Id::kCuptiBufferKb, 64, 1 << 20, s.cupti_buffer_kb);
  in.text(Id::kCupti, s.cupti);
  in.text(Id::kCudart, s.cudart);
  in.flag(Id::kNvtx, s.nvtx);
}

struct Snapshot {
  Settings settings;
  EnvLookup env;  // where it was read from
};

std::atomic<const Snapshot*> g_snapshot{nullptr};
std::atomic<const Snapshot*> g_reported{nullptr};
std::mutex g_load_mutex;
// Every snapshot taken, never freed: a replaced one may still be referenced (and stays reachable
// for leak checkers).
std::vector<const Snapshot*>* g_all_snapshots = nullptr;

void store_locked(EnvLookup env) {
  auto* s = new Snapshot{read_settings(env), env};
  if (g_all_snapshots == nullptr) g_all_snapshots = new std::vector<const Snapshot*>();
  g_all_snapshots->push_back(s);
  g_snapshot.store(s, std::memory_order_release);
}

const Snapshot& snapshot() {
  if (const Snapshot* s = g_snapshot.load(std::memory_order_acquire)) return *s;
  std::lock_guard<std::mutex> lock(g_load_mutex);
  if (g_snapshot.load(std::memory_order_acquire) == nullptr) store_locked(&process_env);
  return *g_snapshot.load(std::memory_order_acquire);
}

bool parse_uint(const std::string& text, uint64_t lo, uint64_t hi, uint64_t& out) {
  if (text.empty() || text.size() > 19) return false;
  uint64_t n = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  if (n < lo || n > hi) return false;
  out = n;
  return true;
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  for (;;) {
    const std::size_t end = text.find(sep, begin);
    out.push_back(text.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    if (end == std::string::npos) return out;
    begin = end + 1;
  }
}

bool parse_capture_item(const std::string& item, CaptureItem& out) {
  const std::vector<std::string> f = split(item, ':');
  constexpr uint64_t kMaxSteps = 1'000'000'000;
  if (f.size() == 2 && f[0] == "first") {
    out.kind = CaptureItem::Kind::kFirst;
    return parse_uint(f[1], 1, kMaxSteps, out.a);
  }
  if (f.size() == 2 && f[0] == "steps") {
    const std::vector<std::string> ab = split(f[1], '-');
    out.kind = CaptureItem::Kind::kSteps;
    // Step numbers are 32-bit (StepRecord::step).
    return ab.size() == 2 && parse_uint(ab[0], 0, UINT32_MAX, out.a) &&
           parse_uint(ab[1], out.a, UINT32_MAX, out.b);
  }
  if (f.size() == 3 && f[0] == "every") {
    out.kind = CaptureItem::Kind::kEvery;
    return parse_duration_ns(f[1], out.period_ns) && out.period_ns >= 10'000'000'000 &&
           parse_uint(f[2], 1, kMaxSteps, out.a);
  }
  return false;
}

}  // namespace

bool parse_auto_capture(const std::string& text, AutoCapture& out) {
  if (text == "off") {
    out = AutoCapture{};
    out.on = false;
    return true;
  }
  const std::vector<std::string> f = split(text, ':');
  AutoCapture a;
  uint64_t per_day = 0;
  if (f.size() != 3 || !parse_uint(f[0], 1, 100'000, a.steps) ||
      !parse_duration_ns(f[1], a.cooldown_ns) || a.cooldown_ns < 10'000'000'000 ||
      !parse_uint(f[2], 1, 1000, per_day))
    return false;
  a.per_day = static_cast<uint32_t>(per_day);
  out = a;
  return true;
}

bool parse_duration_ns(const std::string& text, int64_t& out) {
  if (text.empty()) return false;
  std::string digits = text;
  int64_t unit = 1'000'000'000;
  switch (text.back()) {
    case 's':
      digits.pop_back();
      break;
    case 'm':
      unit *= 60;
      digits.pop_back();
      break;
    case 'h':
      unit *= 3600;
      digits.pop_back();
      break;
    case 'd':
      unit *= 86'400;
      digits.pop_back();
      break;
    default:
      break;
  }
  uint64_t n = 0;
  // At most a year.
  if (!parse_uint(digits, 0, 366ULL * 86'400 * 1'000'000'000 / static_cast<uint64_t>(unit), n))
    return false;
  out = static_cast<int64_t>(n) * unit;
  return true;
}

bool parse_capture_schedule(const std::string& text, std::vector<CaptureItem>& out) {
  out.clear();
  if (text == "off") return true;
  for (const std::string& item : split(text, ',')) {
    CaptureItem c;
    if (!parse_capture_item(item, c)) {
      out.clear();
      return false;
    }
    out.push_back(c);
  }
  if (out.size() > 16) out.clear();
  return !out.empty();
}

void remember_start_dir() noexcept {
  if (getcwd(g_start_dir, sizeof g_start_dir) == nullptr) g_start_dir[0] = '\0';
}

const char* process_env(const char* name) {
  return std::getenv(name);
}

Settings read_settings(EnvLookup env) {
  Settings s;
  VariableReader in(env, s);
  read_recorder_settings(env, in, s);
  read_gpu_settings(in, s);
  if (const char* v = env(settings::name(Id::kSetNcclEnv))) {
    s.raw[static_cast<std::size_t>(Id::kSetNcclEnv)] = std::string(v);
    s.inherited_nccl_env = std::string(v);
  }
  return s;
}

void load_settings(EnvLookup env) {
  std::lock_guard<std::mutex> lock(g_load_mutex);
  store_locked(env);
}

const Settings& settings() {
  return snapshot().settings;
}

void report_settings_problems() noexcept {
  try {
    const Snapshot& snap = snapshot();
    if (g_reported.exchange(&snap) == &snap) return;
    const Settings& s = snap.settings;
    for (const std::string& line : s.problems) std::fprintf(stderr, "%s\n", line.c_str());
    // Read again only to say that a change made after start-up is not used.
    for (const settings::Variable& var : settings::kVariables) {
      if (var.reader == settings::Reader::kSetByShim || var.reader == settings::Reader::kCli ||
          var.reader == settings::Reader::kReport)
        continue;
      const char* now = snap.env(var.name.data());
      const auto& then = s.raw[static_cast<std::size_t>(var.id)];
      if (now == nullptr ? !then.has_value() : then.has_value() && *then == now) continue;
      const auto shown = [](const char* v) { return v ? "'" + clipped(v) + "'" : "unset"; };
      std::fprintf(stderr,
                   "ncclwatch: %s changed after start-up (now %s, was %s); the shim keeps the "
                   "value it read when it was loaded\n",
                   var.name.data(), shown(now).c_str(),
                   shown(then ? then->c_str() : nullptr).c_str());
    }
  } catch (...) {
    // Out of memory: the settings themselves are in place.
  }
}

}  // namespace ncclwatch::shim
