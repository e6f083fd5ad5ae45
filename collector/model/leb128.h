// LEB128: an unsigned number in 7-bit groups, low first, the high bit set on all but the last
// byte. The encoding of the node file (reduce/byte_codec.h) and of a digest's packed interval
// sets (analysis/packed_interval_set.h); each reads it back its own way (a node file as untrusted
// bytes, a packed set as this process's own).
#pragma once

#include <cstdint>

namespace ncclwatch::model {

// Appends `v` to `out`, any container of bytes with push_back (std::string, std::vector).
template <class Bytes>
void put_leb128(Bytes& out, uint64_t v) {
  using Byte = typename Bytes::value_type;
  while (v >= 0x80) {
    out.push_back(static_cast<Byte>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<Byte>(v));
}

}  // namespace ncclwatch::model
