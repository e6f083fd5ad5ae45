// The one input rule of the live readers (`status`, `exporter`): a regular file, never a symlink,
// owned by the invoking user (docs/threat-model.md: trace dirs and /dev/shm may hold names
// planted by others).
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include <fmt/format.h>

namespace ncclwatch::live {

inline bool own_regular_file(const std::string& path, std::string* why) {
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

}  // namespace ncclwatch::live
