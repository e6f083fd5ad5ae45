// A tiny trace-file reader for the shim's tests (the real reader is collector/trace): header
// plus records, straight from format.h, and a few queries the tests share.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ncclwatch/format.h"

namespace ncclwatch::testing {

struct TraceFile {
  bool ok = false;
  format::TraceHeader header{};
  std::vector<format::Record> records;

  static TraceFile read(const std::string& path) {
    TraceFile t;
    std::ifstream in(path, std::ios::binary);
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (data.size() < sizeof(format::TraceHeader)) return t;
    std::memcpy(&t.header, data.data(), sizeof t.header);
    if (t.header.magic != format::kTraceMagic) return t;
    std::size_t n = (data.size() - sizeof t.header) / sizeof(format::Record);
    t.records.resize(n);
    if (n > 0)
      std::memcpy(t.records.data(), data.data() + sizeof t.header, n * sizeof(format::Record));
    t.ok = true;
    return t;
  }

  std::vector<format::CallRecord> calls(format::Func f) const {
    std::vector<format::CallRecord> out;
    for (const auto& r : records) {
      if (r.prefix.kind == format::RecordKind::kCall && r.prefix.u8a == static_cast<uint8_t>(f)) {
        out.push_back(r.call);
      }
    }
    return out;
  }

  std::size_t count(format::RecordKind kind, int func = -1) const {
    std::size_t n = 0;
    for (const auto& r : records) {
      if (r.prefix.kind == kind && (func < 0 || r.prefix.u8a == func)) ++n;
    }
    return n;
  }

  std::vector<format::CommRecord> comms() const {
    std::vector<format::CommRecord> out;
    for (const auto& r : records) {
      if (r.prefix.kind == format::RecordKind::kComm) out.push_back(r.comm);
    }
    return out;
  }
};

}  // namespace ncclwatch::testing
