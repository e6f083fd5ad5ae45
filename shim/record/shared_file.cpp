#include "record/shared_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ncclwatch/capture_control.h"

namespace ncclwatch::shim {

SharedFile::~SharedFile() {
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

void SharedFile::open(const std::string& dir, const std::string& name) {
  dir_ = dir;
  name_ = name;
  dir_fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

std::optional<std::string> SharedFile::changed_text(int64_t now, std::string* line) {
  if (dir_fd_ < 0 || now < next_look_ns_) return std::nullopt;
  next_look_ns_ = now + kLookPeriodNs;
  struct stat st {};
  Seen now_seen;
  if (::fstatat(dir_fd_, name_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    now_seen = {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
                static_cast<int64_t>(st.st_size)};
  }
  if (now_seen == seen_) return std::nullopt;  // unchanged (or still missing)
  seen_ = now_seen;
  if (now_seen.size < 0) return std::nullopt;  // gone
  std::string error;
  auto text = format::read_control_file(dir_fd_, name_, &error);
  if (!text && !error.empty()) refuse(error, line);  // else removed between the two looks
  return text;
}

void SharedFile::refuse(const std::string& why, std::string* line) {
  if (said_ || line == nullptr) return;
  said_ = true;
  *line = "ncclwatch: ignoring " + dir_ + "/" + name_ + ": " + why + "\n";
}

bool SharedFile::write(const std::string& unique, const std::string& text, std::string* error) {
  if (dir_fd_ < 0) {
    *error = "no trace directory";
    return false;
  }
  return format::write_small_file(dir_fd_, name_, unique, text, error);
}

}  // namespace ncclwatch::shim
