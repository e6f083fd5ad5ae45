// Reads a file as a stream of chunks, inflating it on the fly when it is gzip (detected by the
// magic bytes 1f 8b, so a misnamed file still works). Only one input and one output buffer are
// held, whatever the file size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <zlib.h>

namespace ncclwatch::kineto {

class ByteSource {
 public:
  explicit ByteSource(const std::string& path, std::size_t chunk_bytes = 1 << 20);
  ~ByteSource();
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;

  // Fills up to `capacity` bytes of `out`; returns how many. 0 means end of input or error;
  // error() tells which.
  std::size_t read(char* out, std::size_t capacity);

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }  // one line, empty when fine
  bool gzip() const { return gzip_; }
  // Bounds what a gzip file may inflate to: once more than `max_bytes` came out, read() stops
  // with an error (a gzip bomb: 1 MB can inflate to 1 GB). 0 = no bound.
  void limit_inflated(uint64_t max_bytes) { max_inflated_ = max_bytes; }
  uint64_t inflated_bytes() const { return inflated_; }
  // Size of the file on disk when opened (0 when unknown: a pipe).
  uint64_t file_bytes() const { return file_bytes_; }
  uint64_t compressed_bytes_read() const { return raw_read_; }

 private:
  std::size_t read_raw(char* out, std::size_t capacity);
  std::size_t inflate_some(char* out, std::size_t capacity);

  std::FILE* file_ = nullptr;
  bool gzip_ = false;
  bool z_init_ = false;
  bool z_stream_end_ = false;  // the current gzip member ended
  bool eof_ = false;
  z_stream z_{};
  std::vector<unsigned char> in_;
  std::size_t sniffed_ = 0;  // bytes read to sniff the format (plain files hand them out first)
  std::size_t pending_ = 0;  // sniffed bytes in in_ not yet handed out
  uint64_t raw_read_ = 0;
  uint64_t file_bytes_ = 0;
  uint64_t inflated_ = 0;
  uint64_t max_inflated_ = 0;
  std::string error_;
};

}  // namespace ncclwatch::kineto
