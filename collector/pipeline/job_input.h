// What `ncclwatch report` reads, and the one way it loads it: an ncclwatch trace directory,
// PyTorch-profiler (Kineto) traces or Nsight Systems exports, told apart by what the files hold
// (the trace magic of format.h; a gzip stream or a JSON object; SQLite's magic), never by their
// names alone — except .nsys-rep reports, nsys' own format, known by their name. Every loader
// gives the same model::JobTrace, with its input problems in JobTrace::problems.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/job_trace.h"

namespace ncclwatch::pipeline {

enum class InputKind {
  kNcclwatch,  // a directory of ncclwatch trace files (trace::load_job)
  kKineto,     // Kineto trace files, or directories of them (kineto::load_job)
  kNsys,       // Nsight Systems SQLite exports or .nsys-rep reports (nsys::load_job)
};

struct JobInput {
  InputKind kind = InputKind::kNcclwatch;
  std::vector<std::string> paths;  // kNcclwatch: exactly one directory
};

// The kind of `paths`, from their content. A directory is ncclwatch's when a file in it has the
// trace magic, Kineto's when a .json / .json.gz in it is a gzip stream or a JSON object (the
// files the Kineto loader reads), Nsight Systems' when a file in it is a SQLite database or an
// .nsys-rep report, and ncclwatch's when it only has *.trace names with none of these (that
// loader then says what is wrong with each). nullopt with `error` set when a path is
// missing, holds neither kind, is a single ncclwatch trace file, or the paths mix the kinds.
std::optional<JobInput> detect_job_input(const std::vector<std::string>& paths, std::string& error);

struct JobLoadSettings {
  std::string job;                   // ncclwatch: the job in the directory ("" = most ranks)
  uint64_t max_inflate_ratio = 100;  // Kineto: a .gz may inflate at most this x its size
  std::function<void(const std::string&)> progress;  // a progress line, now and then
  // ncclwatch: drop each rank's GPU records once digested (lean_load.h).
  bool lean = false;
};

model::JobTrace load_job_input(const JobInput& input, const JobLoadSettings& settings);

}  // namespace ncclwatch::pipeline
