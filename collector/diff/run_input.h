// One side of `ncclwatch diff`: a report JSON written earlier (`report --json FILE`), read as
// untrusted input, or any input `ncclwatch report` reads (a trace directory, Kineto traces,
// Nsight Systems exports: pipeline/job_input.h) turned into the report JSON `report --json` writes
// for it (pipeline/report_job.h, report_document: a run with capture windows is compared by the
// window `report` shows first).
#pragma once

#include <cstdio>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace ncclwatch::diff {

struct RunInput {
  std::string path;
  std::string kind;  // "report JSON", "trace directory", "Kineto traces", "Nsight Systems exports"
  nlohmann::json report;
};

// A report JSON is a JSON object whose top-level keys are ours ("schema_version", "breakdown",
// "clock", ...) rather than a Chrome trace's ("traceEvents", "schemaVersion"); told apart by a
// streaming scan of the top-level keys that stops at the first that decides, so a 500 MB Kineto
// trace is not parsed here.
bool looks_like_report_json(const std::string& path);

// Largest report JSON read (a 4096-rank, 10 000-step job writes a few hundred MB at most).
inline constexpr uint64_t kMaxReportBytes = uint64_t{2} << 30;

// nullopt after one line on `err` ("ncclwatch: BASE ...: why").
std::optional<RunInput> load_run(const std::string& path, const char* side, std::FILE* err,
                                 const std::function<void(const std::string&)>& progress);

}  // namespace ncclwatch::diff
