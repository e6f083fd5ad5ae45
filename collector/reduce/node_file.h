// A node file: what `ncclwatch reduce` keeps of one node's rank traces, for `ncclwatch report` to
// merge instead of reading the traces (issue 24; docs/multi-node.md). Per rank: the RankTrace of
// the report's lean load (collector/reduce/rank_codec.h), ~0.5-4 % of the trace's bytes (most
// where kernels run apart: tests/bench/reduce/README.md).
//
// Layout (little-endian):
//   NodeFileHeader (256 bytes, versioned)
//   per rank: SectionHeader {kRankSection, bytes, CRC-32 of the bytes} + the rank's bytes as one
//     zstd frame (level 2: ~2x smaller at ~330 MB/s a core, 10 % smaller than level 1 for 8 %
//     more time; the frame says its size)
//   SectionHeader {kEndSection, 0, ranks}: the file is whole
// A file is written under a temporary name and renamed when whole, so a reader never sees one
// being written; a cut or damaged file still gives every rank before the damage (each section
// is checked on its own) and says what is wrong.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ncclwatch/format.h"
#include "reduce/rank_codec.h"

namespace ncclwatch::reduce {

inline constexpr uint64_t kNodeFileMagic = 0x444F4E574C43434EULL;  // "NCCLWNOD" little-endian
// Raised with any change of the layout or of what a rank holds (rank_codec.cpp, call_codec.cpp,
// digest_codec.cpp); a report reads only its own version (a node file is rebuilt from the traces
// in seconds).
// 2: a digest holds busy as what it adds to comm ∪ compute (analysis/packed_activity.h).
// 3: calls as shapes and times (reduce/call_codec.h), compute spans on a grid if asked
//    (ReduceOptions), a rank section's bytes compressed with zstd.
// 4: interval sets' and calls' time columns as byte planes (ByteWriter::planes).
inline constexpr uint32_t kNodeFileVersion = 4;
inline constexpr uint32_t kRankSection = 0x4B4E4152;  // "RANK"
inline constexpr uint32_t kEndSection = 0x2E444E45;   // "END."
// One rank's bytes at most (a rank of 10^8 calls is ~3 GB): a larger count is damage.
inline constexpr uint64_t kMaxRankBytes = uint64_t{1} << 33;

struct NodeFileHeader {
  uint64_t magic;
  uint32_t version;
  uint32_t header_bytes;  // sizeof(NodeFileHeader)
  int64_t created_realtime_ns;
  char job[format::kJobIdSize];      // NUL-terminated
  char host[format::kHostNameSize];  // NUL-terminated: the host whose ranks these are
  uint8_t reserved[104];
};
static_assert(sizeof(NodeFileHeader) == 256);

struct SectionHeader {
  uint32_t kind;  // kRankSection or kEndSection
  uint32_t reserved;
  uint64_t bytes;     // payload that follows (0 for the end)
  uint64_t checksum;  // CRC-32 of the payload (zlib's); for the end: the number of rank sections
};
static_assert(sizeof(SectionHeader) == 24);

// The checksum of a section's bytes: zlib's CRC-32, which reads several bytes a step (FNV-1a,
// a byte at a time, was 5 % of the reduce and of the merge).
uint64_t section_checksum(const std::string& bytes);

// A rank's encoded bytes as its section holds them (a zstd frame), and back. expand_section
// reads untrusted bytes: a frame that does not say its size, says more than kMaxRankBytes or
// more than kMaxExpansion times its own, or does not expand to exactly that, is refused (false,
// `error` says why) before anything that large is allocated.
inline constexpr uint64_t kMaxExpansion = 4096;
std::string compress_section(const std::string& raw);
bool expand_section(const std::string& packed, std::string& raw, std::string& error);

// "ncclwatch.<host>.<job>.node": the characters a trace file name may not hold become '_'.
std::string node_file_name(const std::string& host, const std::string& job);
// Whether a directory entry's name is a node file's (the report looks at those only).
bool is_node_file_name(const std::string& name);

struct NodeFile {
  std::string path;
  std::string job;
  std::string host;
  int64_t created_realtime_ns = 0;
  std::vector<NodeRank> ranks;
  // What is wrong with the file ("" when nothing): every rank in `ranks` is still whole.
  std::string problem;
};

// Reads the node file at `path`, which `report` found in `dir` (ranks' paths are put under
// `dir`). nullopt-like: an empty `job` and `problem` set when the file is not a usable node file
// at all (foreign, another version, unreadable).
NodeFile read_node_file(const std::string& path, const std::string& dir);

}  // namespace ncclwatch::reduce
