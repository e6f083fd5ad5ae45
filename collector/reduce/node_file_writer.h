// Writes one node file (node_file.h) into a trace directory: begin() creates it under a
// temporary name, add() appends a rank, finish() writes the end mark, syncs it and renames it
// to its name, replacing an older node file in one step. A writer destroyed unfinished removes
// its temporary file: a reader sees a whole node file or none.
#pragma once

#include <cstdint>
#include <string>

#include "trace/trace_dir.h"

namespace ncclwatch::reduce {

class NodeFileWriter {
 public:
  NodeFileWriter() = default;
  ~NodeFileWriter();
  NodeFileWriter(const NodeFileWriter&) = delete;
  NodeFileWriter& operator=(const NodeFileWriter&) = delete;

  // `dir` stays open until finish(). false: `error` says why.
  bool begin(const trace::TraceDir& dir, const std::string& name, const std::string& job,
             const std::string& host, std::string& error);
  // A rank's encoded bytes (encode_rank), compressed here.
  bool add(const std::string& rank_bytes, std::string& error);
  // A rank already compressed (compress_section: the reduce compresses ranks in parallel).
  bool add_section(const std::string& section, std::string& error);
  bool finish(std::string& error);

  uint64_t bytes() const { return bytes_; }
  uint64_t ranks() const { return ranks_; }

 private:
  bool write_all(const void* data, std::size_t size, std::string& error);
  void abandon();

  const trace::TraceDir* dir_ = nullptr;
  std::string name_;
  std::string temp_;
  int fd_ = -1;
  uint64_t bytes_ = 0;
  uint64_t ranks_ = 0;
};

}  // namespace ncclwatch::reduce
