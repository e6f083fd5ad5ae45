// A rank's Python stack saved next to its trace (docs/always-on.md, "Where a stuck rank is"):
// `ncclwatch status --stacks` and `ncclwatch run`'s watchdog write it, the report's hang verdict
// reads it. The name comes from the rank's host and pid, never from data; the file is untrusted
// (a shared trace directory may hold anything anyone planted): read only when it is a regular
// file of this user, not through a symlink, at most kMaxStackFileBytes, written for this very
// process and job. Anything else is a note saying why it was not used, never a crash.
#pragma once

#include <cstdint>
#include <string>

namespace ncclwatch::trace {

inline constexpr std::size_t kMaxStackFileBytes = 1 << 20;

// Who the stack is of, and why it was taken: the file's header.
struct StackFileHeader {
  std::string job;
  int32_t rank = -1;
  std::string host;
  int64_t pid = 0;
  std::string taken;  // "2026-12-04T15:00:00Z"
  std::string why;    // "never entered all_reduce #4 on comm 0x...; ranks 0-2 waiting in it"
};

// "ncclwatch.<host>.<pid>.stack.txt" (the host as the trace file names it: format::sanitize_name).
std::string stack_file_name(const std::string& host, int64_t pid);

// The header lines, then py-spy's dump as it printed it.
std::string render_stack_file(const StackFileHeader& header, const std::string& dump);

// Writes `text` as `dir`/`name` through a temporary file and a rename (a name planted there,
// symlink or not, is replaced, never written through). false with `error` set on failure.
bool write_stack_file(const std::string& dir, const std::string& name, const std::string& text,
                      std::string* error);

struct SavedStack {
  bool present = false;  // a file of that name exists
  bool usable = false;   // and it passed every check: header and dump are set
  std::string note;      // why not, when present and not usable ("owned by uid 1001, not by you")
  StackFileHeader header;
  std::string dump;
};

// The saved stack of process (`host`, `pid`) of job `job` ("" = any job) in `dir`.
SavedStack read_stack_file(const std::string& dir, const std::string& host, int64_t pid,
                           const std::string& job);

// Parses a saved file's text (exposed for the tests and the fuzzers): header and dump, or a note.
SavedStack parse_stack_file(const std::string& text);

}  // namespace ncclwatch::trace
