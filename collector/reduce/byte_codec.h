// The node file's encoding of numbers and strings (collector/reduce/node_file.h): LEB128 varints,
// zig-zag for signed values (timestamps are written as differences: small numbers, a byte or
// three), doubles as their bits. ByteReader reads untrusted bytes: every read is checked against
// what is left, a count is checked against the bytes its items need at the least before anything
// is allocated for it, and the first failure stops the reader (ok() false, error() says where).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "model/leb128.h"

namespace ncclwatch::reduce {

// Signed numbers as unsigned ones with small magnitudes small: 0, -1, 1, -2, ... -> 0, 1, 2, 3.
constexpr uint64_t zigzag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
constexpr int64_t unzigzag(uint64_t z) {
  return static_cast<int64_t>((z >> 1) ^ (~(z & 1) + 1));
}

class ByteWriter {
 public:
  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void varint(uint64_t v) { model::put_leb128(out_, v); }
  void svarint(int64_t v) { varint(zigzag(v)); }
  void f64(double v) {
    uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof bits);
    fixed64(bits);
  }
  void fixed64(uint64_t v) {
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>(v >> (8 * i)));
  }
  void str(std::string_view s) {
    varint(s.size());
    out_.append(s);
  }
  // A trivially copyable struct as its bytes (format.h records: their layout is the trace
  // format's, versioned with it).
  template <class T>
  void pod(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }

  // Numbers of one column as byte planes: a width byte (the bytes the largest needs, 0-8), then
  // every number's lowest byte, then every number's next byte, ... (the count is the caller's).
  // Alike numbers share their high bytes, which zstd then takes as long runs; varints interleave
  // those with the low bytes and their continuation bits: ~16 % smaller compressed where kernels
  // run apart (tests/bench/reduce/README.md).
  // `min_width`: at least that many planes, so that each number takes a byte or more and a
  // reader can bound a count by the bytes left (ByteReader::count).
  void planes(const std::vector<uint64_t>& v, int min_width = 0) {
    uint64_t all = 0;
    for (uint64_t x : v) all |= x;
    int width = v.empty() ? 0 : min_width;
    while (width < 8 && (all >> (8 * width)) != 0) ++width;
    u8(static_cast<uint8_t>(width));
    const std::size_t at = out_.size();
    out_.resize(at + v.size() * static_cast<std::size_t>(width));
    char* p = out_.data() + at;
    for (int b = 0; b < width; ++b)
      for (uint64_t x : v) *p++ = static_cast<char>(x >> (8 * b));
  }

  const std::string& bytes() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::string_view bytes) : data_(bytes) {}

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  std::size_t left() const { return data_.size() - at_; }
  bool done() const { return at_ == data_.size(); }
  // Stops the reader: what was read so far is all there is.
  void fail(const std::string& why) {
    if (error_.empty()) error_ = why + " at byte " + std::to_string(at_);
    at_ = data_.size();
  }

  uint8_t u8() {
    if (left() < 1) return truncated(), 0;
    return static_cast<uint8_t>(data_[at_++]);
  }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (left() < 1) return truncated(), 0;
      const auto b = static_cast<uint8_t>(data_[at_++]);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    fail("a number longer than 64 bits");
    return 0;
  }
  int64_t svarint() { return unzigzag(varint()); }
  // `base` plus a signed difference (times are written as differences): a sum past int64 is
  // damage, not a wrap (0, and the reader stops).
  int64_t svarint_after(int64_t base) {
    int64_t sum = 0;
    if (__builtin_add_overflow(base, svarint(), &sum)) {
      fail("a time past the range of 64 bits");
      return 0;
    }
    return sum;
  }
  uint64_t fixed64() {
    if (left() < 8) return truncated(), 0;
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
      v |= static_cast<uint64_t>(static_cast<uint8_t>(data_[at_ + i])) << (8 * i);
    at_ += 8;
    return v;
  }
  double f64() {
    const uint64_t bits = fixed64();
    double v = 0;
    std::memcpy(&v, &bits, sizeof v);
    return v;
  }
  std::string str() {
    const uint64_t n = varint();
    if (n > left()) return truncated(), std::string();
    std::string s(data_.substr(at_, n));
    at_ += n;
    return s;
  }
  template <class T>
  T pod() {
    static_assert(std::is_trivially_copyable_v<T>);
    T v{};
    if (left() < sizeof v) return truncated(), v;
    std::memcpy(&v, data_.data() + at_, sizeof v);
    at_ += sizeof v;
    return v;
  }
  // `n` numbers written by ByteWriter::planes: false (and the reader stops) when the width is
  // past 8 or below `min_width` (n > 0), or the bytes left cannot hold them.
  bool planes(std::size_t n, std::vector<uint64_t>& out, int min_width = 0) {
    const uint8_t width = u8();
    if (!ok()) return false;
    if (width > 8) {
      fail("a column wider than 8 bytes");
      return false;
    }
    if (n > 0 && width < min_width) {
      fail("a column narrower than its numbers take");
      return false;
    }
    if (width != 0 && n > left() / width) {
      fail("a column of " + std::to_string(n) + " numbers that the bytes left cannot hold");
      return false;
    }
    out.assign(n, 0);
    const auto* p = reinterpret_cast<const uint8_t*>(data_.data() + at_);
    for (int b = 0; b < width; ++b)
      for (uint64_t& x : out) x |= static_cast<uint64_t>(*p++) << (8 * b);
    at_ += n * width;
    return true;
  }
  // A count of items that take at least `min_bytes` each: refused (0, and the reader stops) when
  // the bytes left cannot hold them, so a forged count never allocates.
  std::size_t count(std::size_t min_bytes) {
    const uint64_t n = varint();
    if (min_bytes == 0) min_bytes = 1;
    if (n > left() / min_bytes) {
      fail("a count of " + std::to_string(n) + " items that the bytes left cannot hold");
      return 0;
    }
    return static_cast<std::size_t>(n);
  }

 private:
  void truncated() { fail("cut short"); }

  std::string_view data_;
  std::size_t at_ = 0;
  std::string error_;
};

// An enum written as its byte: a value at or past `count` is damage.
template <class E>
E read_enum(ByteReader& r, E count, const char* what) {
  const uint8_t v = r.u8();
  if (v >= static_cast<uint8_t>(count)) {
    r.fail(std::string("an unknown ") + what);
    return E{};
  }
  return static_cast<E>(v);
}

}  // namespace ncclwatch::reduce
