#include "trace_files.h"

#include "gzip.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ncclwatch::kineto::testing {

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "ncclwatch_kineto_XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string gzip(const std::string& bytes, int level) {
  return test_support::gzip(bytes, level);
}

std::string trace_doc(const std::vector<std::string>& events, const std::string& distributed_info) {
  std::string s = "{\n  \"schemaVersion\": 1,\n";
  if (!distributed_info.empty()) s += "  \"distributedInfo\": " + distributed_info + ",\n";
  s += "  \"traceEvents\": [\n";
  for (std::size_t i = 0; i < events.size(); ++i) s += (i ? ",\n    " : "    ") + events[i];
  s += "\n  ],\n  \"displayTimeUnit\": \"ms\"\n}\n";
  return s;
}

}  // namespace ncclwatch::kineto::testing
