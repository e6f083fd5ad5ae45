// The jobs `ncclwatch demo` can run: each one a small multi-rank training job of the stand-in
// programs bundled with ncclwatch (tests/fakes: fake_launcher starts the ranks like torchrun,
// fake_train is a DDP rank on the fake GPU, fake_rank an NCCL-only rank), with one problem
// injected that the report must name. The table is data: the runner (demo_job.h) starts it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ncclwatch::demo {

enum class Program { kTrain, kRank };  // fake_train (GPU-timed DDP), fake_rank (NCCL only)

struct Scenario {
  std::string_view name;
  std::string_view injected;  // what this simulated job does, one line for people
  Program program = Program::kTrain;
  std::vector<std::string> program_args;   // after `--steps N`
  std::vector<std::string> launcher_args;  // fake_launcher's --env / --env-rank options
  int steps = 12;
  bool job_fails = false;  // the job is meant to end in an error (the hang scenario)
};

inline constexpr int kRanks = 4;

// Every scenario, in the order the listing shows them.
const std::vector<Scenario>& scenarios();

// The scenario of that name, or nullptr.
const Scenario* find_scenario(std::string_view name);

// The job id of a scenario's run, "SIMULATED-demo-NAME": the shim records it in every trace
// file's header (format.h, ProcessInfo::job), so the run stays marked as simulated in the traces
// it leaves (`ncclwatch demo --dir D`, reported later with `ncclwatch report D`).
std::string demo_job_id(const Scenario& scenario);

// The line every output of a demo run carries: "SIMULATED job (ncclwatch demo NAME): ...".
std::string simulated_line(const Scenario& scenario);

// The simulated line of a job recorded by `ncclwatch demo`, told by its job id (demo_job_id; a
// scenario this version does not know still reads as simulated); "" for any other job.
std::string simulated_line_of_job(std::string_view job);

// The listing `ncclwatch demo` prints without (or with an unknown) scenario: one line each,
// "  NAME  what it injects".
std::vector<std::string> scenario_lines();

}  // namespace ncclwatch::demo
