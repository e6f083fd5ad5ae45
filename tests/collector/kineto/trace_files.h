// Test helpers: a temporary directory, files written plain or gzipped, and small hand-written
// Kineto events.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace ncclwatch::kineto::testing {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
};

void write_file(const std::string& path, const std::string& bytes);
std::string gzip(const std::string& bytes, int level = 6);
std::string read_file(const std::string& path);

// A whole trace document from events (JSON objects) and an optional distributedInfo object.
std::string trace_doc(const std::vector<std::string>& events,
                      const std::string& distributed_info = "");

}  // namespace ncclwatch::kineto::testing
