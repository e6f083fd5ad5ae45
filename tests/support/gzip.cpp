#include "gzip.h"

#include <zlib.h>

#include <stdexcept>

namespace ncclwatch::test_support {

std::string gzip(const std::string& bytes, int level, int mem_level) {
  z_stream z{};
  // 15 + 16: gzip wrapper.
  if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, mem_level, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflateInit2");
  std::string out(deflateBound(&z, bytes.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) {
    deflateEnd(&z);
    throw std::runtime_error("deflate");
  }
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace ncclwatch::test_support
