#include "trace_files.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include <zlib.h>

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
  z_stream z{};
  // 15 + 16: gzip wrapper.
  if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflateInit2");
  std::string out(deflateBound(&z, bytes.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) throw std::runtime_error("deflate");
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
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
