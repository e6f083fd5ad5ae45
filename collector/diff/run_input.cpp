#include "diff/run_input.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "model/message.h"
#include "pipeline/collector_schema.h"
#include "pipeline/job_input.h"
#include "pipeline/report_job.h"

namespace ncclwatch::diff {
namespace {

using nlohmann::json;

// Reads top-level keys only and stops at the first that decides.
class KeyScan : public json::json_sax_t {
 public:
  enum class Verdict { kUndecided, kReport, kNotReport };
  Verdict verdict = Verdict::kUndecided;

  bool key(string_t& k) override {
    if (depth_ != 1) return true;
    // Our own top-level keys (a report writes them sorted: "breakdown" comes first, so a report
    // cut short is still told apart and its parse error said as such).
    static const char* const kOurs[] = {
        "schema_version", "breakdown", "breakdown_analysis", "buckets", "bus_bandwidth", "clock",
        "comms",          "desync",    "findings",           "hang",    "incomplete",    "losses"};
    for (const char* ours : kOurs) {
      if (k == ours) verdict = Verdict::kReport;
    }
    if (k == "traceEvents" || k == "schemaVersion") verdict = Verdict::kNotReport;
    return verdict == Verdict::kUndecided;
  }
  bool start_object(std::size_t) override { return ++depth_, true; }
  bool end_object() override { return --depth_, true; }
  bool start_array(std::size_t) override {
    if (depth_ == 0) verdict = Verdict::kNotReport;  // a bare Chrome-trace event array
    return ++depth_, verdict == Verdict::kUndecided;
  }
  bool end_array() override { return --depth_, true; }
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  int depth_ = 0;
};

bool regular_file(const std::string& path, uint64_t& size) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  size = static_cast<uint64_t>(st.st_size);
  return true;
}

void say(std::FILE* err, const char* side, const std::string& path, const std::string& what) {
  model::say(err, std::string(side) + " " + path + ": " + what);
}

std::optional<RunInput> read_report(const std::string& path, const char* side, std::FILE* err) {
  uint64_t size = 0;
  if (!regular_file(path, size) || size > kMaxReportBytes) {
    say(err, side, path, "report JSON larger than 2 GiB");
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    say(err, side, path, std::string("cannot read: ") + std::strerror(errno));
    return std::nullopt;
  }
  RunInput run{path, "report JSON", json()};
  try {
    run.report = json::parse(in);
  } catch (const json::parse_error& e) {
    say(err, side, path, std::string("not a valid report JSON (") + e.what() + ")");
    return std::nullopt;
  }
  const json& version = run.report["schema_version"];
  if (!version.is_number_integer() || version.get<int64_t>() < 1) {
    say(err, side, path, "not an ncclwatch report (schema_version is not a positive integer)");
    return std::nullopt;
  }
  if (version.get<int64_t>() > pipeline::kSchemaVersion) {
    say(err, side, path,
        "report written by a newer ncclwatch (schema_version " +
            std::to_string(version.get<int64_t>()) + ", this one reads up to " +
            std::to_string(pipeline::kSchemaVersion) + "): its figures may mean other things");
    return std::nullopt;
  }
  return run;
}

// How the output names an input `report` reads.
const char* input_kind_name(pipeline::InputKind kind) {
  switch (kind) {
    case pipeline::InputKind::kNcclwatch:
      return "trace directory";
    case pipeline::InputKind::kKineto:
      return "Kineto traces";
    case pipeline::InputKind::kNsys:
      return "Nsight Systems exports";
  }
  return "imported traces";
}

}  // namespace

bool looks_like_report_json(const std::string& path) {
  uint64_t size = 0;
  if (!regular_file(path, size)) return false;
  std::ifstream in(path, std::ios::binary);
  char first = 0;
  while (in.get(first) && std::isspace(static_cast<unsigned char>(first))) {
  }
  if (!in || first != '{') return false;
  in.seekg(0);
  KeyScan scan;
  json::sax_parse(in, &scan);
  return scan.verdict == KeyScan::Verdict::kReport;
}

std::optional<RunInput> load_run(const std::string& path, const char* side, std::FILE* err,
                                 const std::function<void(const std::string&)>& progress) {
  if (looks_like_report_json(path)) return read_report(path, side, err);
  pipeline::ReportRequest req;
  req.inputs = {path};
  std::optional<pipeline::ReportDocument> doc = pipeline::report_document(req, err, progress);
  if (!doc) return std::nullopt;
  RunInput run;
  run.path = path;
  run.kind = input_kind_name(doc->kind);
  run.report = std::move(doc->json);
  return run;
}

}  // namespace ncclwatch::diff
