#include "kineto/byte_source.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

namespace ncclwatch::kineto {

ByteSource::ByteSource(const std::string& path, std::size_t chunk_bytes) : in_(chunk_bytes) {
  // Opened without blocking: a FIFO no one writes to would otherwise hang the reader in open();
  // reading it then ends at once (an empty file). A pipe with a writer (`<(zcat t.json.gz)`) still
  // reads normally, once the descriptor is back in blocking mode.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    error_ = std::string("cannot open: ") + std::strerror(errno);
    return;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode) || S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
    error_ = "not a regular file or pipe (a directory or device is not read)";
    ::close(fd);
    return;
  }
  if (S_ISREG(st.st_mode)) file_bytes_ = static_cast<uint64_t>(st.st_size);
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  file_ = ::fdopen(fd, "rb");
  if (file_ == nullptr) {
    error_ = std::string("cannot open: ") + std::strerror(errno);
    ::close(fd);
    return;
  }
  // Sniff the first bytes: gzip or plain.
  pending_ = std::fread(in_.data(), 1, in_.size(), file_);
  raw_read_ = pending_;
  sniffed_ = pending_;
  if (std::ferror(file_)) {
    error_ = std::string("read error: ") + std::strerror(errno);
    return;
  }
  if (pending_ >= 2 && in_[0] == 0x1f && in_[1] == 0x8b) {
    gzip_ = true;
    // 15 + 32: zlib window of 32 KiB, accept gzip (and zlib) headers.
    if (inflateInit2(&z_, 15 + 32) != Z_OK) {
      error_ = "zlib init failed";
      return;
    }
    z_init_ = true;
    z_.next_in = in_.data();
    z_.avail_in = static_cast<uInt>(pending_);
    pending_ = 0;
  }
}

ByteSource::~ByteSource() {
  if (z_init_) inflateEnd(&z_);
  if (file_ != nullptr) std::fclose(file_);
}

std::size_t ByteSource::read(char* out, std::size_t capacity) {
  if (!ok() || capacity == 0) return 0;
  return gzip_ ? inflate_some(out, capacity) : read_raw(out, capacity);
}

std::size_t ByteSource::read_raw(char* out, std::size_t capacity) {
  std::size_t n = 0;
  if (pending_ > 0) {
    // The sniffed bytes sit at the start of in_; hand them out first.
    n = std::min(capacity, pending_);
    std::memcpy(out, in_.data() + (sniffed_ - pending_), n);
    pending_ -= n;
    return n;
  }
  if (eof_) return 0;
  n = std::fread(out, 1, capacity, file_);
  raw_read_ += n;
  if (n < capacity) {
    if (std::ferror(file_)) error_ = std::string("read error: ") + std::strerror(errno);
    eof_ = true;
  }
  return n;
}

std::size_t ByteSource::inflate_some(char* out, std::size_t capacity) {
  z_.next_out = reinterpret_cast<Bytef*>(out);
  if (max_inflated_ != 0) {
    if (inflated_ >= max_inflated_) {
      if (z_stream_end_ && z_.avail_in == 0 && eof_) return 0;  // ended right at the limit
      error_ = fmt::format(
          "inflates to more than {} MiB from {} MiB compressed: refused as a likely gzip bomb "
          "(the limit is a ratio of the compressed size; --max-inflate-ratio raises it)",
          max_inflated_ >> 20, (file_bytes_ + (1 << 20) - 1) >> 20);
      return 0;
    }
    capacity = static_cast<std::size_t>(std::min<uint64_t>(capacity, max_inflated_ - inflated_));
  }
  z_.avail_out = static_cast<uInt>(std::min<std::size_t>(capacity, 1u << 30));
  const uInt want = z_.avail_out;
  while (z_.avail_out > 0) {
    if (z_.avail_in == 0) {
      if (eof_) break;
      const std::size_t got = std::fread(in_.data(), 1, in_.size(), file_);
      raw_read_ += got;
      if (got < in_.size()) {
        if (std::ferror(file_)) {
          error_ = std::string("read error: ") + std::strerror(errno);
          break;
        }
        eof_ = true;
      }
      if (got == 0) break;
      z_.next_in = in_.data();
      z_.avail_in = static_cast<uInt>(got);
    }
    if (z_stream_end_) {
      // Concatenated gzip members (as `cat a.gz b.gz` makes) are one stream to gunzip; start the
      // next member. Trailing zero padding after the last member is tolerated.
      if (z_.next_in[0] == 0) {
        z_.avail_in = 0;
        continue;
      }
      if (inflateReset(&z_) != Z_OK) {
        error_ = "zlib reset failed";
        break;
      }
      z_stream_end_ = false;
    }
    const int rc = inflate(&z_, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) {
      z_stream_end_ = true;
    } else if (rc == Z_BUF_ERROR) {
      // No progress possible: needs more input, which the loop fetches (or it is the end).
      if (z_.avail_in != 0) break;
    } else if (rc != Z_OK) {
      error_ =
          std::string("corrupt gzip data (") + (z_.msg != nullptr ? z_.msg : "zlib error") + ")";
      break;
    }
  }
  const std::size_t produced = want - z_.avail_out;
  inflated_ += produced;
  if (produced == 0 && ok() && eof_ && z_.avail_in == 0 && !z_stream_end_) {
    error_ = "truncated gzip (the compressed stream ends early)";
  }
  return produced;
}

}  // namespace ncclwatch::kineto
