// Validation of an untrusted TraceHeader, and safe conversion of its fixed-size text fields.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "ncclwatch/format.h"

namespace ncclwatch::trace {

struct HeaderVerdict {
  bool usable = false;                // records after it can be read
  bool foreign = false;               // not an ncclwatch trace at all (wrong magic)
  std::string error;                  // why not usable (one line)
  std::vector<std::string> warnings;  // usable, but something is off (one line each)
};

// Checks magic, layout version, header and record size, state and identity fields.
HeaderVerdict check_trace_header(const format::TraceHeader& header);

// A fixed-size char field as a string: stops at the first NUL or at `size`, and replaces bytes
// outside printable ASCII with '?' (the field may hold anything; it ends up in terminals).
std::string bounded_string(const char* field, std::size_t size);

// "0x1234abcd..." for problem lines.
std::string hex(uint64_t value);

}  // namespace ncclwatch::trace
