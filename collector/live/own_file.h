// The one input rule of the live readers (`status`, `exporter`): a regular file, never a symlink,
// owned by the invoking user (docs/threat-model.md: trace dirs and /dev/shm may hold names
// planted by others). Both readers find their inputs the same way, here: this node's segments
// and the trace files of a directory, each checked before it is opened (and opened without
// following a symlink by SegmentView / TraceFileReader), a skipped one noted with why.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "ncclwatch/format.h"

namespace ncclwatch::trace {
class SegmentView;
}

namespace ncclwatch::live {

// false with `why` set when `path` is not a regular file of this user (lstat: a symlink is not).
bool own_regular_file(const std::string& path, std::string* why);

// own_regular_file; when not, adds "<path>: skipped: <why>" to `notes`.
bool own_input(const std::string& path, std::vector<std::string>& notes);

// Opens segment `name` of `shm_dir` into `view` if it is this user's, opens cleanly and is of
// `job` (any job when empty). A refused or broken one gets a note; another job's is passed over.
bool open_own_segment(trace::SegmentView& view, const std::string& shm_dir, const std::string& name,
                      const std::string& job, std::vector<std::string>& notes);

// Adds the trace files of `dir` ("ncclwatch.*.trace", by name: each is still checked with
// own_input before use) to `paths`; a directory that cannot be read gets a note.
void add_trace_files(const std::string& dir, std::set<std::string>& paths,
                     std::vector<std::string>& notes);

// True if the process `p` belongs to `job` (any job when empty).
bool of_job(const format::ProcessInfo& p, const std::string& job);

}  // namespace ncclwatch::live
