#include "reduce/node_file_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include <fmt/format.h>

#include "reduce/node_file.h"

namespace ncclwatch::reduce {

NodeFileWriter::~NodeFileWriter() {
  abandon();
}

void NodeFileWriter::abandon() {
  if (fd_ < 0) return;
  ::close(fd_);
  fd_ = -1;
  ::unlinkat(dir_->fd(), temp_.c_str(), 0);
}

bool NodeFileWriter::begin(const trace::TraceDir& dir, const std::string& name,
                           const std::string& job, const std::string& host, std::string& error) {
  abandon();
  dir_ = &dir;
  name_ = name;
  // A name no other writer uses (pid), hidden from listings; created exclusively, so a planted
  // file or symlink of that name makes this fail instead of being written through.
  temp_ = fmt::format(".{}.{}.tmp", name, ::getpid());
  ::unlinkat(dir.fd(), temp_.c_str(), 0);  // ours from a run that died (same pid: same owner)
  fd_ = dir.create(temp_, 0644, error);
  if (fd_ < 0) return false;
  bytes_ = 0;
  ranks_ = 0;
  NodeFileHeader h{};
  h.magic = kNodeFileMagic;
  h.version = kNodeFileVersion;
  h.header_bytes = sizeof h;
  struct timespec ts {};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  h.created_realtime_ns = static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  std::strncpy(h.job, job.c_str(), sizeof h.job - 1);
  std::strncpy(h.host, host.c_str(), sizeof h.host - 1);
  return write_all(&h, sizeof h, error);
}

bool NodeFileWriter::write_all(const void* data, std::size_t size, std::string& error) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd_, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = fmt::format("cannot write {}: {}", dir_->file(temp_),
                          n < 0 ? std::strerror(errno) : "no progress");
      abandon();
      return false;
    }
    p += n;
    size -= static_cast<std::size_t>(n);
    bytes_ += static_cast<uint64_t>(n);
  }
  return true;
}

bool NodeFileWriter::add(const std::string& rank_bytes, std::string& error) {
  return add_section(compress_section(rank_bytes), error);
}

bool NodeFileWriter::add_section(const std::string& rank_bytes, std::string& error) {
  if (fd_ < 0) {
    error = "no node file begun";
    return false;
  }
  SectionHeader s{};
  s.kind = kRankSection;
  s.bytes = rank_bytes.size();
  s.checksum = section_checksum(rank_bytes);
  if (!write_all(&s, sizeof s, error) || !write_all(rank_bytes.data(), rank_bytes.size(), error))
    return false;
  ++ranks_;
  return true;
}

bool NodeFileWriter::finish(std::string& error) {
  if (fd_ < 0) {
    error = "no node file begun";
    return false;
  }
  SectionHeader end{};
  end.kind = kEndSection;
  end.checksum = ranks_;
  if (!write_all(&end, sizeof end, error)) return false;
  if (::fsync(fd_) != 0) {
    error = fmt::format("cannot sync {}: {}", dir_->file(temp_), std::strerror(errno));
    abandon();
    return false;
  }
  // renameat replaces whatever has the name (a symlink included) without following it.
  if (::renameat(dir_->fd(), temp_.c_str(), dir_->fd(), name_.c_str()) != 0) {
    error =
        fmt::format("cannot rename {} to {}: {}", dir_->file(temp_), name_, std::strerror(errno));
    abandon();
    return false;
  }
  ::close(fd_);
  fd_ = -1;
  return true;
}

}  // namespace ncclwatch::reduce
