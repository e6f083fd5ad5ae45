#include "pipeline/job_input.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "kineto/kineto_loader.h"
#include "ncclwatch/format.h"
#include "nsys/nsys_loader.h"
#include "nsys/nsys_rep.h"
#include "nsys/sqlite_file.h"
#include "pipeline/lean_load.h"
#include "pipeline/node_merge.h"
#include "reduce/node_file.h"
#include "trace/job_loader.h"

namespace ncclwatch::pipeline {
namespace {

namespace fs = std::filesystem;

enum class Content { kNcclwatchTrace, kNodeFile, kKinetoLike, kSqlite, kOther, kUnreadable };

// What the first bytes of `path` say. Only a regular file is read (a FIFO or a device never is).
// kUnreadable (and `error`, the errno) when it cannot be opened.
Content sniff(const std::string& path, int* error = nullptr) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    if (error != nullptr) *error = errno;
    return Content::kUnreadable;
  }
  struct stat st {};
  unsigned char head[512];
  ssize_t n = -1;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) n = ::pread(fd, head, sizeof head, 0);
  ::close(fd);
  if (n <= 0) return Content::kOther;
  const auto size = static_cast<std::size_t>(n);
  uint64_t magic = 0;
  if (size >= sizeof magic) std::memcpy(&magic, head, sizeof magic);
  if (magic == format::kTraceMagic) return Content::kNcclwatchTrace;
  if (magic == reduce::kNodeFileMagic) return Content::kNodeFile;   // `ncclwatch reduce`
  if (nsys::has_sqlite_magic(head, size)) return Content::kSqlite;  // an nsys export
  // gzip: a Kineto .json.gz (ncclwatch never compresses its traces; the Kineto loader checks
  // what is inside).
  if (size >= 2 && head[0] == 0x1f && head[1] == 0x8b) return Content::kKinetoLike;
  std::size_t i = 0;
  if (size >= 3 && head[0] == 0xef && head[1] == 0xbb && head[2] == 0xbf) i = 3;  // UTF-8 BOM
  while (i < size && (head[i] == ' ' || head[i] == '\t' || head[i] == '\n' || head[i] == '\r')) ++i;
  return i < size && head[i] == '{' ? Content::kKinetoLike : Content::kOther;
}

bool kineto_name(const fs::path& p) {
  const std::string name = p.filename().string();
  return name.ends_with(".json") || name.ends_with(".json.gz");
}

// A directory's kind; nullopt when it holds neither (or, with `error` set, cannot be read).
// Entries are looked at without following symlinks (the loaders skip those too).
std::optional<InputKind> directory_kind(const std::string& dir, std::string& error) {
  std::error_code ec;
  bool kineto = false, trace_names = false, nsys_files = false;
  fs::directory_iterator it(dir, ec);
  if (ec) {
    error = fmt::format("{}: cannot read the directory: {}", dir, ec.message());
    return std::nullopt;
  }
  for (fs::directory_iterator end; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (it->symlink_status(type_ec).type() != fs::file_type::regular) continue;
    const Content c = sniff(it->path().string());
    if (c == Content::kNcclwatchTrace || c == Content::kNodeFile) return InputKind::kNcclwatch;
    kineto = kineto || (c == Content::kKinetoLike && kineto_name(it->path()));
    nsys_files = nsys_files || c == Content::kSqlite || nsys::is_report_name(it->path().string());
    trace_names = trace_names || it->path().extension() == ".trace";
  }
  if (kineto) return InputKind::kKineto;
  if (nsys_files) return InputKind::kNsys;
  if (trace_names) return InputKind::kNcclwatch;
  return std::nullopt;
}

const char* kind_name(InputKind kind) {
  switch (kind) {
    case InputKind::kNcclwatch:
      return "an ncclwatch trace directory";
    case InputKind::kKineto:
      return "Kineto traces";
    case InputKind::kNsys:
      break;
  }
  return "Nsight Systems exports";
}

}  // namespace

std::optional<JobInput> detect_job_input(const std::vector<std::string>& paths,
                                         std::string& error) {
  if (paths.empty()) {
    error = "no input given";
    return std::nullopt;
  }
  JobInput input;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    const std::string& path = paths[i];
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    std::optional<InputKind> kind;
    if (ec || !fs::exists(st)) {
      // The errno as it is: a directory on the way we may not enter is not a missing file.
      error =
          fmt::format("{}: {}", path, ec ? ec.message() : std::string("No such file or directory"));
      return std::nullopt;
    }
    if (fs::is_directory(st)) {
      kind = directory_kind(path, error);
      if (!kind && !error.empty()) return std::nullopt;
      if (!kind) {
        error = fmt::format(
            "no rank traces in {}: neither ncclwatch trace files nor Kineto traces (.json, "
            ".json.gz) nor Nsight Systems exports (.sqlite, .nsys-rep) in it",
            path);
        return std::nullopt;
      }
    } else {
      int open_error = 0;
      const Content c = sniff(path, &open_error);
      if (c == Content::kUnreadable) {
        error = fmt::format("{}: cannot be read: {}", path, std::strerror(open_error));
        return std::nullopt;
      }
      if (c == Content::kNcclwatchTrace || c == Content::kNodeFile) {
        error = fmt::format("{} is {}: give its directory", path,
                            c == Content::kNodeFile ? "one node's ncclwatch node file"
                                                    : "one rank's ncclwatch trace");
        return std::nullopt;
      }
      if (c == Content::kSqlite || (c == Content::kOther && nsys::is_report_name(path))) {
        kind = InputKind::kNsys;
      } else if (c == Content::kKinetoLike) {
        kind = InputKind::kKineto;
      } else {
        error = fmt::format(
            "{}: not an ncclwatch trace directory nor a Kineto trace (a JSON object, or gzip), "
            "nor an Nsight Systems export (SQLite) or report (.nsys-rep)",
            path);
        return std::nullopt;
      }
    }
    if (i == 0) {
      input.kind = *kind;
    } else if (*kind != input.kind || input.kind == InputKind::kNcclwatch) {
      error = fmt::format(
          "{} is {}, {} is {}: give one trace directory, or Kineto traces only, or Nsight "
          "Systems exports only",
          paths[0], kind_name(input.kind), path, kind_name(*kind));
      return std::nullopt;
    }
    input.paths.push_back(path);
  }
  return input;
}

model::JobTrace load_job_input(const JobInput& input, const JobLoadSettings& settings) {
  if (input.kind == InputKind::kNsys) return nsys::load_job(input.paths);
  if (input.kind == InputKind::kKineto) {
    kineto::LoadLimits limits;
    limits.max_inflate_ratio = settings.max_inflate_ratio;
    return kineto::load_job(input.paths, limits);
  }
  trace::JobLoadOptions options;
  options.job = settings.job;
  if (settings.progress) {
    options.progress = [&settings](const trace::JobLoadProgress& p) {
      settings.progress(fmt::format("reading traces: {}/{} files, {} records", p.files_done,
                                    p.files_total, p.records_total));
    };
  }
  if (settings.lean) {
    options.on_rank = [keep = options.keep_steps](const trace::TraceFileEntry& file,
                                                  model::RankTrace& rank) {
      digest_rank(file, rank, keep);
    };
  }
  return load_traces_and_node_files(input.paths.at(0), options, settings.lean);
}

}  // namespace ncclwatch::pipeline
