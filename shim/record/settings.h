// The shim's settings: every NCCLWATCH_* variable of ncclwatch/settings_table.h (names, defaults,
// accepted values, meaning; README's "Settings" table lists the same), parsed ONCE, when the
// library loads (shim/nccl/load_time_setup.cpp, before main: no application thread exists yet),
// into one Settings snapshot that the recorder, the GPU timeline, the library finders and the clock
// read. Nothing else in the shim reads an NCCLWATCH_* variable, and nothing reads one after load:
//  - a value the program sets in its own environment after start-up is not used; the first NCCL
//    call says so in one line per variable (report_settings_problems);
//  - a bad value gets the default and one `ncclwatch:` line, printed at the first NCCL call (a
//    process that never calls NCCL, such as the launcher, prints nothing).
// Job and host are reduced to [A-Za-z0-9._-] (others become '_') because they go into file and
// shared-memory names. Defaults that depend on the process: job from the launchers'
// TORCHELASTIC_RUN_ID (unless "none"), SLURM_JOB_ID, PBS_JOBID, LSB_JOBID, PMIX_NAMESPACE,
// OMPI_MCA_orte_ess_jobid, else "local-<parent pid>" (the ranks of one torchrun/mpirun share a
// parent); dir ./ncclwatch-<job> from the directory the process started in; host gethostname.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ncclwatch/names.h"
#include "ncclwatch/settings_table.h"

namespace ncclwatch::shim {

enum class GpuMode : uint8_t { kFull, kLite, kHost };                   // NCCLWATCH_MODE
enum class KernelPolicy : uint8_t { kAll, kNccl, kSampled };            // NCCLWATCH_KERNELS
enum class CuptiClockChoice : uint8_t { kAuto, kCallback, kMeasured };  // NCCLWATCH_CUPTI_CLOCK
enum class DetailLevel : uint8_t { kWindows, kAll };                    // NCCLWATCH_DETAIL
enum class SummaryGpu : uint8_t { kAuto, kOn, kOff };                   // NCCLWATCH_SUMMARY_GPU

// One item of NCCLWATCH_CAPTURE (docs/always-on.md, "Capture windows").
struct CaptureItem {
  enum class Kind : uint8_t { kFirst, kSteps, kEvery } kind = Kind::kFirst;
  uint64_t a = 0;         // first:N -> N; steps:A-B -> A; every:D:N -> N
  uint64_t b = 0;         // steps:A-B -> B
  int64_t period_ns = 0;  // every:D:N -> D
  bool operator==(const CaptureItem&) const = default;
};

// NCCLWATCH_AUTO_CAPTURE (docs/always-on.md, "Capture by itself").
struct AutoCapture {
  bool on = true;
  uint64_t steps = 20;                              // N
  int64_t cooldown_ns = 30LL * 60 * 1'000'000'000;  // COOLDOWN
  uint32_t per_day = 10;                            // PER_DAY
  bool operator==(const AutoCapture&) const = default;
};

// Parse NCCLWATCH_AUTO_CAPTURE ("off": on = false); false when the text is not one. For tests.
bool parse_auto_capture(const std::string& text, AutoCapture& out);

// Parse NCCLWATCH_CAPTURE ("off" is an empty list) and a duration ("90s", "30m", "2h", "1d", or
// bare seconds); false when the text is not one. Exposed for tests.
bool parse_capture_schedule(const std::string& text, std::vector<CaptureItem>& out);
bool parse_duration_ns(const std::string& text, int64_t& out);

inline constexpr double kDefaultRingMb = 16.0;
inline constexpr std::size_t kMaxCuptiBuffers = 64;  // gpu/buffer_pool.h's kMaxBuffers

struct Settings {
  // The recorder.
  bool enabled = true;
  std::string dir;   // absolute
  std::string job;   // sanitized, < 64 chars
  std::string host;  // sanitized, < 64 chars
  double ring_mb = kDefaultRingMb;
  int drain_ms = 2;
  int hang_s = 0;         // 0 = watchdog off
  bool exit_line = true;  // NCCLWATCH_EXIT_LINE: say where the traces went at exit
  int local_rank = -1;    // the launchers' local rank at load (launcher_variables.h), -1 unknown
  // Tiers (docs/always-on.md).
  DetailLevel detail = DetailLevel::kWindows;
  std::vector<CaptureItem> capture{CaptureItem{CaptureItem::Kind::kFirst, 50, 0, 0}};
  uint64_t max_mb = 256;  // NCCLWATCH_MAX_MB: the trace parts of this process together
  SummaryGpu summary_gpu = SummaryGpu::kAuto;  // GPU timing outside windows (gpu_switch.h)
  AutoCapture auto_capture;
  bool test_drain_hold = false;
  bool test_steps_from_peers = false;
  int64_t test_clock_offset_ns = 0;
  // The GPU timeline.
  GpuMode mode = GpuMode::kFull;
  KernelPolicy kernels = KernelPolicy::kAll;
  uint32_t kernels_every = 1;  // sampled:N
  CuptiClockChoice cupti_clock = CuptiClockChoice::kAuto;
  std::size_t cupti_buffers = 16;
  std::size_t cupti_buffer_kb = 4096;
  std::string cupti;   // "" = search (library_finder.h)
  std::string cudart;  // "" = the loaded one
  bool nvtx = true;
  // NCCLWATCH_SET_NCCL_ENV as inherited (nccl_log_capture.h); nullopt when unset.
  std::optional<std::string> inherited_nccl_env;

  // One line per bad value ("ncclwatch: bad NAME=VALUE (expected ...), using DEFAULT").
  std::vector<std::string> problems;
  // Every variable's text as read (nullopt: unset), to notice changes made after load.
  std::array<std::optional<std::string>, static_cast<std::size_t>(settings::Id::kCount)> raw;
};

// getenv-like lookup, injectable for tests.
using EnvLookup = const char* (*)(const char* name);
// The process environment (std::getenv) as an EnvLookup.
const char* process_env(const char* name);

// Parses every variable of the table from `env`. Pure but for the defaults (gethostname, the
// parent pid, the start directory): prints nothing, keeps the lines in Settings::problems.
Settings read_settings(EnvLookup env);

// Remembers the current directory as the one relative NCCLWATCH_DIR values are taken from
// (called at load, so a chdir before the first NCCL call moves neither the trace nor NCCL's logs).
// Without it, read_settings uses the current directory.
void remember_start_dir() noexcept;

// Takes the process's snapshot: read_settings(env). Called by the load-time constructor; a test
// that links the recorder without the shim calls it again after changing its environment (only
// while no recorder runs: the previous snapshot stays valid, it is never freed).
void load_settings(EnvLookup env);
// The snapshot. Where load_settings never ran (a program linking the recorder without the shim's
// load-time constructor: tests, benchmarks), the first call takes it from the process environment.
const Settings& settings();
// Prints, once per snapshot, its problems and one line per variable whose value in the
// environment changed since it was taken. Called at the first NCCL call; never throws.
void report_settings_problems() noexcept;

using format::sanitize_name;  // ncclwatch/names.h

}  // namespace ncclwatch::shim
