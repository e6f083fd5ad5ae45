// One complete gzip member holding `bytes` (concatenated members are one stream to gunzip), for
// tests that write .gz inputs: Kineto traces, gzip bombs.
#pragma once

#include <string>

namespace ncclwatch::test_support {

// zlib's deflate with a gzip wrapper; `level` 0-9, `mem_level` 1-9 (zlib's defaults: 6 and 8).
// Throws std::runtime_error when zlib fails.
std::string gzip(const std::string& bytes, int level = 6, int mem_level = 8);

}  // namespace ncclwatch::test_support
