// Every NCCLWATCH_* environment variable, in one table: the single place a variable's name,
// type, default, accepted values and meaning are written. Who uses it:
//  - the shim's settings module (shim/record/settings.cpp) reads each variable of this table
//    once, at load, and is the only code in shim/ that reads any of them;
//  - `ncclwatch run` (tools/commands/run.cpp) reads and sets its variables by these names;
//  - README.md's "Settings" tables list exactly these variables with these defaults (checked by
//    tests/shim/record/settings_table_test.cpp, which also checks that no other code spells a
//    name out).
// Adding a variable: docs/hacking.md, "How to add a setting".
// Standard library only, like format.h.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ncclwatch::settings {

// One per variable, in table order.
enum class Id : uint8_t {
  kEnabled,
  kDir,
  kJob,
  kRingMb,
  kMode,
  kKernels,
  kCupti,
  kHost,
  kDrainMs,
  kCudart,
  kCuptiClock,
  kCuptiBuffers,
  kCuptiBufferKb,
  kNvtx,
  kLib,
  kTestClockOffsetNs,
  kTestDrainHold,
  kTestStepsFromPeers,
  kHangS,
  kExitLine,
  kDetail,
  kCapture,
  kMaxMb,
  kSummaryGpu,
  kAutoCapture,
  kSetNcclEnv,
  kReportLoad,
  kCount
};

enum class Type : uint8_t {
  kSwitch,   // on|off (also 1|0, true|false, yes|no)
  kInteger,  // decimal integer within `expected`
  kDecimal,  // decimal number within `expected`
  kChoice,   // one of the words in `expected`
  kName,     // free text, reduced to [A-Za-z0-9._-] (job and host names)
  kPath,     // a file or directory path
  kList,     // NAME=VALUE lines (the shim's own marker)
  kSpec,     // a small grammar of its own, checked (`expected` says it)
};

// Who reads the variable. kSetByShim: not a setting; the shim sets it for its child processes.
// kReport: the report (`ncclwatch report`, and `run` when it reports), never the shim.
enum class Reader : uint8_t { kShim, kCli, kShimAndCli, kSetByShim, kReport };

struct Variable {
  Id id;
  std::string_view name;
  Type type;
  Reader reader;
  std::string_view default_text;  // as README shows it
  std::string_view expected;      // accepted values, for warnings ("" for free text)
  std::string_view doc;           // one line
};

// README's "read by" column.
constexpr std::string_view reader_text(Reader r) {
  switch (r) {
    case Reader::kShim:
      return "shim";
    case Reader::kCli:
      return "ncclwatch run";
    case Reader::kShimAndCli:
      return "shim, ncclwatch run";
    case Reader::kSetByShim:
      return "set by the shim";
    case Reader::kReport:
      return "ncclwatch report, run";
  }
  return "";
}

inline constexpr std::array<Variable, static_cast<std::size_t>(Id::kCount)> kVariables = {{
    {Id::kEnabled, "NCCLWATCH", Type::kSwitch, Reader::kShimAndCli, "on", "on|off",
     "off: record nothing, create nothing"},
    {Id::kDir, "NCCLWATCH_DIR", Type::kPath, Reader::kShimAndCli, "./ncclwatch-<job>", "",
     "trace directory; a relative one is taken from the directory the process started in"},
    {Id::kJob, "NCCLWATCH_JOB", Type::kName, Reader::kShimAndCli,
     "TORCHELASTIC_RUN_ID, SLURM_JOB_ID, PBS_JOBID, LSB_JOBID, ...", "",
     "job id (ncclwatch run: default run-<time>-<pid>)"},
    {Id::kRingMb, "NCCLWATCH_RING_MB", Type::kDecimal, Reader::kShim, "16", "0.004..1048576",
     "shared-memory ring per process in MiB (drained continuously to disk)"},
    {Id::kMode, "NCCLWATCH_MODE", Type::kChoice, Reader::kShim, "full", "full|lite|host",
     "GPU timing: full (CUPTI), lite (CUDA events around collectives), host (none)"},
    {Id::kKernels, "NCCLWATCH_KERNELS", Type::kChoice, Reader::kShim, "all",
     "all|nccl|sampled:N (N 1..1000000)",
     "which kernels full mode records; every NCCL kernel is always kept"},
    {Id::kCupti, "NCCLWATCH_CUPTI", Type::kPath, Reader::kShim, "found", "",
     "path of the libcupti to use"},
    {Id::kHost, "NCCLWATCH_HOST", Type::kName, Reader::kShim, "hostname", "",
     "host name to record (containers with meaningless host names, tests)"},
    {Id::kDrainMs, "NCCLWATCH_DRAIN_MS", Type::kInteger, Reader::kShim, "2", "1..10000",
     "drain period in ms"},
    {Id::kCudart, "NCCLWATCH_CUDART", Type::kPath, Reader::kShim, "the loaded one", "",
     "path of the libcudart to use when none is loaded yet (lite mode, capture checks)"},
    {Id::kCuptiClock, "NCCLWATCH_CUPTI_CLOCK", Type::kChoice, Reader::kShim, "auto",
     "auto|callback|measured", "how CUPTI timestamps become host time"},
    {Id::kCuptiBuffers, "NCCLWATCH_CUPTI_BUFFERS", Type::kInteger, Reader::kShim, "16", "2..64",
     "number of CUPTI activity buffers"},
    {Id::kCuptiBufferKb, "NCCLWATCH_CUPTI_BUFFER_KB", Type::kInteger, Reader::kShim, "4096",
     "64..1048576", "size of each CUPTI activity buffer in KiB"},
    {Id::kNvtx, "NCCLWATCH_NVTX", Type::kSwitch, Reader::kShim, "on", "on|off",
     "off: do not point NVTX_INJECTION64_PATH at NCCLWATCH_CUPTI"},
    {Id::kLib, "NCCLWATCH_LIB", Type::kPath, Reader::kCli, "next to the binary", "",
     "the libncclwatch.so that ncclwatch run preloads"},
    {Id::kTestClockOffsetNs, "NCCLWATCH_TEST_CLOCK_OFFSET_NS", Type::kInteger, Reader::kShim, "0",
     "a signed 64-bit integer", "testing only: shifts every host timestamp by this many ns"},
    {Id::kTestDrainHold, "NCCLWATCH_TEST_DRAIN_HOLD", Type::kSwitch, Reader::kShim, "off", "on|off",
     "testing only: the drain writes nothing until exit (a tiny ring overflows)"},
    {Id::kTestStepsFromPeers, "NCCLWATCH_TEST_STEPS_FROM_PEERS", Type::kSwitch, Reader::kShim,
     "off", "on|off",
     "testing only: this rank never learns its steps alone; it takes the job's (another rank's)"},
    {Id::kHangS, "NCCLWATCH_HANG_S", Type::kInteger, Reader::kShimAndCli, "0 (off)", "0..1000000",
     "watchdog: flush and say so when a call has waited this many seconds; ncclwatch run then "
     "takes the Python stacks (py-spy) of this node's ranks that hold the job up"},
    {Id::kExitLine, "NCCLWATCH_EXIT_LINE", Type::kSwitch, Reader::kShim, "on", "on|off",
     "at exit, one line on stderr saying where the traces went (one process per node: local rank "
     "0); ncclwatch run sets it off and says so itself"},
    {Id::kDetail, "NCCLWATCH_DETAIL", Type::kChoice, Reader::kShimAndCli,
     "windows (ncclwatch run: all)", "all|windows",
     "all: full detail for the whole run; windows: step summaries always, full detail inside "
     "capture windows (docs/always-on.md)"},
    {Id::kCapture, "NCCLWATCH_CAPTURE", Type::kSpec, Reader::kShim, "first:50",
     "off, or a comma list of first:N, steps:A-B, every:DURATION:N (DURATION like 90s, 30m, 2h)",
     "scheduled capture windows (with NCCLWATCH_DETAIL=windows)"},
    {Id::kMaxMb, "NCCLWATCH_MAX_MB", Type::kInteger, Reader::kShim, "256", "1..1048576",
     "disk budget per rank in MiB: at the budget the oldest detail goes first, summaries stay"},
    {Id::kSummaryGpu, "NCCLWATCH_SUMMARY_GPU", Type::kChoice, Reader::kShim, "auto", "auto|on|off",
     "GPU timing outside capture windows (with NCCLWATCH_DETAIL=windows): on, off (only inside "
     "windows), or auto (off where the first steps say it would cost over 0.5 % of the step)"},
    {Id::kAutoCapture, "NCCLWATCH_AUTO_CAPTURE", Type::kSpec, Reader::kShim, "20:30m:10",
     "off, or N:COOLDOWN:PER_DAY (N 1..100000 steps, COOLDOWN like 90s, 30m, 2h, at least 10s; "
     "PER_DAY 1..1000)",
     "capture by itself: N steps on every rank when the step time regresses or the wait jumps (or "
     "the hang watchdog fires), at most once per COOLDOWN and PER_DAY times a day"},
    {Id::kSetNcclEnv, "NCCLWATCH_SET_NCCL_ENV", Type::kList, Reader::kSetByShim, "unset", "",
     "the NCCL variables the shim set, so a child process's shim can tell them from the user's"},
    {Id::kReportLoad, "NCCLWATCH_REPORT_LOAD", Type::kChoice, Reader::kReport, "lean", "lean|whole",
     "lean: each rank's GPU records are dropped once digested; whole: kept (the same report, "
     "more memory: for checking)"},
}};

// The words of a kSwitch value, for the shim and `ncclwatch run` alike (anything else is a bad
// value: the shim says so and keeps the default).
constexpr bool switch_is_off(std::string_view v) {
  return v == "off" || v == "0" || v == "false" || v == "no" || v == "OFF";
}
constexpr bool switch_is_on(std::string_view v) {
  return v == "on" || v == "1" || v == "true" || v == "yes" || v == "ON";
}

constexpr const Variable& variable(Id id) {
  return kVariables[static_cast<std::size_t>(id)];
}
// The variable's name, NUL-terminated (every name above is a string literal).
constexpr const char* name(Id id) {
  return variable(id).name.data();
}

// The table is indexed by Id: entry i must be Id i.
constexpr bool table_is_in_id_order() {
  for (std::size_t i = 0; i < kVariables.size(); ++i)
    if (static_cast<std::size_t>(kVariables[i].id) != i) return false;
  return true;
}
static_assert(table_is_in_id_order(), "kVariables must list the variables in Id order");

}  // namespace ncclwatch::settings
