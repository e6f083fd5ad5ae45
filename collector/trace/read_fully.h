// pread until `size` bytes or the end of the file: the readers of untrusted files (trace files,
// node files) read whole records or know they were cut.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

namespace ncclwatch::trace {

// Bytes read (fewer than `size` at the end of the file), or -1 with errno set.
inline ssize_t read_fully(int fd, void* out, std::size_t size, uint64_t offset) {
  std::size_t done = 0;
  auto* bytes = static_cast<char*>(out);
  while (done < size) {
    const ssize_t n = ::pread(fd, bytes + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  return static_cast<ssize_t>(done);
}

}  // namespace ncclwatch::trace
