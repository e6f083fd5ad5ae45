#include "nsys/nsys_loader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "kernels/kernel_calls.h"
#include "nsys/nsys_rep.h"
#include "nsys/sqlite_file.h"
#include "trace/parallel_for.h"

namespace ncclwatch::nsys {
namespace {

namespace fs = std::filesystem;

bool sqlite_content(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return false;
  unsigned char head[16];
  struct stat st {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  const ssize_t n = regular ? ::pread(fd, head, sizeof head, 0) : -1;
  ::close(fd);
  return n == static_cast<ssize_t>(sizeof head) && has_sqlite_magic(head, sizeof head);
}

// A private directory for exported reports, removed with everything in it at the end.
class ScratchDir {
 public:
  ~ScratchDir() {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  const std::string& get(std::string& error) {
    if (dir_.empty()) {
      std::string tmpl = (fs::temp_directory_path() / "ncclwatch-nsys-XXXXXX").string();
      if (::mkdtemp(tmpl.data()) != nullptr)
        dir_ = tmpl;
      else
        error = "cannot create a temporary directory for the export";
    }
    return dir_;
  }

 private:
  std::string dir_;
};

// The SQLite files to read: given files, SQLite files and reports in given directories, and
// reports exported to SQLite (or one problem each that cannot be).
std::vector<std::string> input_files(const std::vector<std::string>& paths, ScratchDir& scratch,
                                     std::vector<model::InputProblem>& problems) {
  std::vector<std::string> listed;
  for (const auto& p : paths) {
    std::error_code ec;
    if (!fs::is_directory(p, ec)) {
      listed.push_back(p);
      continue;
    }
    std::vector<std::string> found;
    for (fs::directory_iterator it(p, ec), end; !ec && it != end; it.increment(ec)) {
      std::error_code type_ec;
      if (it->symlink_status(type_ec).type() != fs::file_type::regular) continue;
      if (sqlite_content(it->path()) || is_report_name(it->path().string()))
        found.push_back(it->path().string());
    }
    if (ec) problems.push_back({p, "cannot list directory: " + ec.message()});
    if (found.empty() && !ec)
      problems.push_back({p, "no Nsight Systems SQLite exports (or .nsys-rep reports) in it"});
    std::sort(found.begin(), found.end());
    listed.insert(listed.end(), found.begin(), found.end());
  }
  std::vector<std::string> files;
  std::string nsys;
  bool looked = false;
  for (const auto& f : listed) {
    if (!is_report_name(f) || sqlite_content(f)) {
      files.push_back(f);
      continue;
    }
    if (!looked) nsys = find_nsys();
    looked = true;
    if (nsys.empty()) {
      problems.push_back({f, export_hint(f)});
      continue;
    }
    std::string error;
    const std::string& dir = scratch.get(error);
    const std::string out =
        dir.empty() ? std::string() : fmt::format("{}/{}.sqlite", dir, files.size());
    if (!dir.empty() && export_report(nsys, f, out, error)) {
      files.push_back(out);
    } else {
      problems.push_back(
          {f, fmt::format("an Nsight Systems report, and `{} export --type sqlite` failed ({}): "
                          "export it by hand and give ncclwatch the .sqlite",
                          nsys, error)});
    }
  }
  return files;
}

// Ranks: from the environment when every file is one process that recorded a distinct rank,
// else by device order file by file. One note says which.
void number_ranks(std::vector<NsysFile>& files, model::JobTrace& job) {
  std::size_t total = 0;
  std::set<int32_t> env_ranks;
  bool from_env = !files.empty();
  for (const auto& f : files) {
    total += f.ranks.size();
    from_env =
        from_env && f.ranks.size() == 1 && f.env_rank >= 0 && env_ranks.insert(f.env_rank).second;
  }
  int32_t world = static_cast<int32_t>(total);
  if (from_env) {
    for (auto& f : files) {
      f.ranks[0].info.rank = f.env_rank;
      world = std::max({world, f.env_world_size, f.env_rank + 1});
    }
    job.notes.push_back(
        {"Nsight Systems", fmt::format("ranks from {} recorded in each file's environment",
                                       files.front().env_rank_variable)});
  } else {
    const bool by_node =
        files.size() > 1 &&
        std::all_of(files.begin(), files.end(), [](const NsysFile& f) { return f.env_node >= 0; });
    if (by_node)
      std::stable_sort(files.begin(), files.end(), [](const NsysFile& a, const NsysFile& b) {
        return a.env_node < b.env_node;
      });
    int32_t next = 0;
    std::string list;
    for (auto& f : files) {
      for (auto& r : f.ranks) {
        r.info.rank = next++;
        if (next <= 8)
          list += fmt::format("{}rank {} = pid {} on cuda:{}", list.empty() ? "" : ", ",
                              r.info.rank, r.info.pid, r.info.device);
      }
    }
    if (total > 8) list += fmt::format(" and {} more", total - 8);
    job.notes.push_back(
        {"Nsight Systems",
         fmt::format("ranks numbered by device order{} (no launcher rank variable recorded for "
                     "each process): {}",
                     files.size() > 1 ? by_node ? ", file by file in node order"
                                                : ", file by file in the order given"
                                      : "",
                     list)});
  }
  for (auto& f : files)
    for (auto& r : f.ranks) r.info.world_size = world;
}

}  // namespace

model::JobTrace load_job(const std::vector<std::string>& paths_or_dirs, const NsysLimits& limits) {
  model::JobTrace job;
  ScratchDir scratch;
  const std::vector<std::string> files = input_files(paths_or_dirs, scratch, job.problems);
  std::vector<std::optional<NsysFile>> read(files.size());
  std::vector<std::vector<model::InputProblem>> file_problems(files.size());
  trace::parallel_for(files.size(), trace::worker_count(), [&](std::size_t i) {
    read[i] = read_nsys_file(files[i], file_problems[i], limits);
  });
  std::vector<NsysFile> good;
  bool steps = false;
  for (std::size_t i = 0; i < files.size(); ++i) {
    for (auto& p : file_problems[i]) job.problems.push_back(std::move(p));
    if (!read[i]) continue;
    steps = steps || read[i]->step_ranges;
    good.push_back(std::move(*read[i]));
  }
  if (good.empty()) return job;
  number_ranks(good, job);
  for (auto& f : good)
    for (auto& r : f.ranks) job.ranks.push_back(std::move(r));
  std::stable_sort(job.ranks.begin(), job.ranks.end(),
                   [](const auto& a, const auto& b) { return a.info.rank < b.info.rank; });
  if (!steps) {
    job.notes.push_back(
        {"Nsight Systems",
         "no step-like NVTX range (a name containing \"step\"): steps are found from the "
         "collectives' period, or the capture is one window (section Overlap says which)"});
  }
  kernels::align_kernel_comms(job, job.notes);
  return job;
}

}  // namespace ncclwatch::nsys
