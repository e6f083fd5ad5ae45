// libFuzzer target: arbitrary bytes as a node file's rank section (collector/reduce), both as the
// zstd frame a section holds and as the encoded rank inside it, through expand_section and
// decode_rank. Invariants: no crash, no sanitizer report, no allocation past what the bytes can
// hold (the -rss_limit_mb of the run), and a rank that decodes is whole: its calls in entry order
// and every call's kernel index in range of 31 bits; encoded again, it decodes to the same calls.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "reduce/node_file.h"
#include "reduce/rank_codec.h"

namespace {

void check(const ncclwatch::reduce::NodeRank& rank) {
  const auto& calls = rank.rank.calls;
  for (std::size_t i = 1; i < calls.size(); ++i) {
    if (calls[i].enter_ns < calls[i - 1].enter_ns) std::abort();
  }
  ncclwatch::reduce::NodeRank again;
  std::string error;
  if (!ncclwatch::reduce::decode_rank(ncclwatch::reduce::encode_rank(rank, "/d"), "/d", again,
                                      error)) {
    std::fprintf(stderr, "re-read: %s\n", error.c_str());
    std::abort();  // what was read can be written and read back
  }
  if (again.rank.calls.size() != calls.size()) std::abort();
  for (std::size_t i = 0; i < calls.size(); ++i) {
    if (std::memcmp(&again.rank.calls[i], &calls[i], sizeof calls[i]) != 0) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  ncclwatch::reduce::NodeRank rank;
  std::string error;
  if (ncclwatch::reduce::decode_rank(bytes, "/d", rank, error)) check(rank);
  std::string raw;
  if (ncclwatch::reduce::expand_section(bytes, raw, error) &&
      ncclwatch::reduce::decode_rank(raw, "/d", rank, error))
    check(rank);
  return 0;
}
