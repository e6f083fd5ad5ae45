#include "live/own_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include <fmt/format.h>

#include "trace/segment_view.h"
#include "trace/trace_header_check.h"

namespace ncclwatch::live {

bool own_regular_file(const std::string& path, std::string* why) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    *why = "vanished";
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    *why = "not a regular file (a symlink?)";
    return false;
  }
  if (st.st_uid != ::geteuid()) {
    *why = fmt::format("owned by uid {}, not by you", st.st_uid);
    return false;
  }
  return true;
}

bool own_input(const std::string& path, std::vector<std::string>& notes) {
  std::string why;
  if (own_regular_file(path, &why)) return true;
  notes.push_back(fmt::format("{}: skipped: {}", path, why));
  return false;
}

bool open_own_segment(trace::SegmentView& view, const std::string& shm_dir, const std::string& name,
                      const std::string& job, std::vector<std::string>& notes) {
  const std::string path = shm_dir + "/" + name;
  if (!own_input(path, notes)) return false;
  if (!view.open(name, shm_dir)) {
    notes.push_back(fmt::format("{}: skipped: {}", path, view.error()));
    return false;
  }
  return job.empty() || view.job() == job;
}

void add_trace_files(const std::string& dir, std::set<std::string>& paths,
                     std::vector<std::string>& notes) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string file = e.path().filename().string();
    if (file.starts_with("ncclwatch.") && e.path().extension() == ".trace")
      paths.insert(e.path().string());
  }
  if (ec) notes.push_back(fmt::format("{}: {}", dir, ec.message()));
}

bool of_job(const format::ProcessInfo& p, const std::string& job) {
  return job.empty() || trace::bounded_string(p.job, sizeof p.job) == job;
}

}  // namespace ncclwatch::live
