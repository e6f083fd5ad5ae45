#include "reduce/node_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <zlib.h>
#include <zstd.h>

#include "ncclwatch/names.h"
#include "trace/read_fully.h"
#include "trace/trace_header_check.h"

namespace ncclwatch::reduce {
namespace {

// trace::read_fully, its count in `got`; false on a read error (errno set).
bool read_into(int fd, void* out, std::size_t size, uint64_t offset, std::size_t& got) {
  const ssize_t n = trace::read_fully(fd, out, size, offset);
  got = n < 0 ? 0 : static_cast<std::size_t>(n);
  return n >= 0;
}

}  // namespace

uint64_t section_checksum(const std::string& bytes) {
  return crc32_z(crc32_z(0, nullptr, 0), reinterpret_cast<const Bytef*>(bytes.data()),
                 bytes.size());
}

std::string compress_section(const std::string& raw) {
  std::string out(ZSTD_compressBound(raw.size()), '\0');
  const std::size_t n = ZSTD_compress(out.data(), out.size(), raw.data(), raw.size(), 2);
  // Cannot fail with a buffer of the bound's size; should it, the section is refused on reading.
  out.resize(ZSTD_isError(n) ? 0 : n);
  return out;
}

bool expand_section(const std::string& packed, std::string& raw, std::string& error) {
  const unsigned long long size = ZSTD_getFrameContentSize(packed.data(), packed.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN) {
    error = "not a zstd frame that says its size";
    return false;
  }
  if (size > kMaxRankBytes || size / kMaxExpansion > packed.size()) {
    error = fmt::format("a frame that would expand to {} bytes from {}", size, packed.size());
    return false;
  }
  raw.resize(static_cast<std::size_t>(size));
  const std::size_t n = ZSTD_decompress(raw.data(), raw.size(), packed.data(), packed.size());
  if (ZSTD_isError(n) || n != size) {
    error = ZSTD_isError(n) ? fmt::format("zstd: {}", ZSTD_getErrorName(n))
                            : fmt::format("a frame of {} bytes that says {}", n, size);
    return false;
  }
  return true;
}

std::string node_file_name(const std::string& host, const std::string& job) {
  return fmt::format("ncclwatch.{}.{}.node", format::sanitize_name(host),
                     format::sanitize_name(job));
}

bool is_node_file_name(const std::string& name) {
  return name.starts_with("ncclwatch.") && name.ends_with(".node") && name.size() > 15;
}

NodeFile read_node_file(const std::string& path, const std::string& dir) {
  NodeFile file;
  file.path = path;
  // Never through a symlink, never a FIFO or device (a neighbour may plant either).
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    file.problem = errno == ELOOP ? "skipped: a symbolic link (not followed)"
                                  : fmt::format("cannot open: {}", std::strerror(errno));
    return file;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    file.problem = "skipped: not a regular file";
    return file;
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  NodeFileHeader h{};
  std::size_t got = 0;
  if (!read_into(fd, &h, sizeof h, 0, got)) {
    file.problem = fmt::format("cannot read: {}", std::strerror(errno));
  } else if (got < sizeof h) {
    file.problem = fmt::format("not a node file: {} bytes, shorter than a header", got);
  } else if (h.magic != kNodeFileMagic) {
    file.problem = "not a node file (bad magic)";
  } else if (h.version != kNodeFileVersion || h.header_bytes != sizeof h) {
    file.problem = fmt::format(
        "node file version {} (this ncclwatch reads version {}): run `ncclwatch reduce` again",
        h.version, kNodeFileVersion);
  }
  if (!file.problem.empty()) {
    ::close(fd);
    return file;
  }
  file.job = trace::bounded_string(h.job, sizeof h.job);
  file.host = trace::bounded_string(h.host, sizeof h.host);
  if (file.job.empty())
    file.job = "-";  // a job id is never empty: keep the file apart from a failed one
  file.created_realtime_ns = h.created_realtime_ns;

  uint64_t at = sizeof h;
  std::string payload, raw;
  bool ended = false;
  while (file.problem.empty()) {
    SectionHeader s{};
    if (!read_into(fd, &s, sizeof s, at, got)) {
      file.problem = fmt::format("cannot read: {}", std::strerror(errno));
      break;
    }
    if (got < sizeof s) {
      file.problem = fmt::format("cut short after {} rank(s): no end mark", file.ranks.size());
      break;
    }
    at += sizeof s;
    if (s.kind == kEndSection) {
      if (s.checksum != file.ranks.size()) {
        file.problem = fmt::format("its end mark counts {} rank(s), {} were read", s.checksum,
                                   file.ranks.size());
      }
      ended = true;
      break;
    }
    if (s.kind != kRankSection || s.bytes > kMaxRankBytes || s.bytes > size - std::min(at, size)) {
      file.problem =
          s.kind != kRankSection
              ? fmt::format("damaged after {} rank(s): an unknown section", file.ranks.size())
              : fmt::format("cut short inside rank section {}", file.ranks.size() + 1);
      break;
    }
    payload.resize(static_cast<std::size_t>(s.bytes));
    if (!read_into(fd, payload.data(), payload.size(), at, got) || got < payload.size()) {
      file.problem = fmt::format("cut short inside rank section {}", file.ranks.size() + 1);
      break;
    }
    at += s.bytes;
    if (section_checksum(payload) != s.checksum) {
      file.problem = fmt::format("rank section {} is damaged (checksum); the rest is skipped",
                                 file.ranks.size() + 1);
      break;
    }
    NodeRank rank;
    std::string why;
    if (!expand_section(payload, raw, why) || !decode_rank(raw, dir, rank, why)) {
      file.problem = fmt::format("rank section {} cannot be read: {}", file.ranks.size() + 1, why);
      break;
    }
    file.ranks.push_back(std::move(rank));
  }
  if (ended && file.problem.empty() && at != size)
    file.problem = fmt::format("{} bytes after its end mark", size - at);
  ::close(fd);
  return file;
}

}  // namespace ncclwatch::reduce
