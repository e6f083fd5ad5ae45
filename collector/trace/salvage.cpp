#include "trace/salvage.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "ncclwatch/in_flight_slot.h"
#include "ncclwatch/names.h"
#include "trace/host_clock.h"
#include "trace/segment_view.h"
#include "trace/trace_dir.h"
#include "trace/trace_file_reader.h"
#include "trace/trace_header_check.h"

namespace ncclwatch::trace {
namespace {

constexpr uint64_t kHeaderBytes = sizeof(format::TraceHeader);
constexpr std::size_t kCopyChunk = 4096;  // records per write

bool write_all(int fd, const void* data, std::size_t size, uint64_t offset) {
  const auto* bytes = static_cast<const char*>(data);
  while (size != 0) {
    const ssize_t n = ::pwrite(fd, bytes, size, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes += n;
    offset += static_cast<uint64_t>(n);
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// The trace file being completed.
struct Target {
  std::string path;
  int fd = -1;
  bool has_header = false;  // a valid header is on disk (else one is written fresh)
  format::TraceHeader header{};
  uint64_t records = 0;  // whole records on disk
  bool created = false;  // this salvage created the file
  // Where the ring joins the file (join_points): the file keeps `keep` records and the ring is
  // appended from position `from`. Both are `records` for a trace written without a filter.
  uint64_t keep = 0;
  uint64_t from = 0;
  uint32_t part = 0;  // which part of the process's trace (format.h, ProcessInfo::part)
  Target() = default;
  Target(const Target&) = delete;
  Target& operator=(const Target&) = delete;
  ~Target() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
    path.clear();
    has_header = false;
    header = {};
    records = 0;
    created = false;
    keep = from = 0;
  }
};

// K of the file and of the ring. Without a drain checkpoint (format.h, DrainCheckpoint: a drain
// that never wrote one) the file's records are ring positions, as always. With one (the drain
// leaves detail out of the file outside capture windows, so records and positions differ): the
// ring from read_pos on, and the file cut to the checkpoint's count when read_pos is still the
// checkpoint's (a batch appended after it but not committed would be in the file twice), else
// whole (the batch after the checkpoint was committed, so it is on disk). The drain writes the
// file, then commits, then the checkpoint.
void join_points(const SegmentView& seg, Target& t) {
  t.keep = t.from = t.records;
  const format::DrainCheckpoint cp = seg.drain_checkpoint();
  if (cp.version == 0 || cp.part != t.part) return;
  const uint64_t read_pos = seg.read_pos();
  if (read_pos < cp.pos) return;  // not this segment's drain (never: positions only grow)
  t.from = read_pos;
  t.keep = read_pos == cp.pos ? std::min(t.records, cp.file_records) : t.records;
}

// The part the drain thread was writing (its checkpoint's; 0 when it never wrote one).
uint32_t current_part(const SegmentView& seg) {
  const format::DrainCheckpoint cp = seg.drain_checkpoint();
  return cp.version == 0 ? 0 : cp.part;
}

enum class OpenResult { kOk, kUnwritable, kRefuse };

bool same_process(const format::ProcessInfo& p, const SegmentView& seg) {
  return p.pid == seg.header().process.pid && bounded_string(p.job, sizeof p.job) == seg.job() &&
         bounded_string(p.host, sizeof p.host) == seg.host();
}

// The open file is a trace of the same process, or too short to hold a header (then it is
// started over); anything else is refused and left as it is.
OpenResult check_existing(const SegmentView& seg, Target& t, std::string& why) {
  TraceFileReader reader(1);
  const int copy = ::fcntl(t.fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0 || !reader.adopt(copy, t.path)) {
    struct stat st {};
    if (copy >= 0 && !reader.foreign() && ::fstat(t.fd, &st) == 0 &&
        static_cast<uint64_t>(st.st_size) < kHeaderBytes)
      return OpenResult::kOk;  // the header never made it to disk: start the file over
    why = fmt::format("{} exists but is unusable ({}); not touched", t.path,
                      copy < 0 ? std::strerror(errno) : reader.error());
    return OpenResult::kRefuse;
  }
  const auto& p = reader.header().process;
  if (!same_process(p, seg)) {
    why = fmt::format("{} belongs to another process (job '{}', host '{}', pid {}); not touched",
                      t.path, bounded_string(p.job, sizeof p.job),
                      bounded_string(p.host, sizeof p.host), p.pid);
    return OpenResult::kRefuse;
  }
  t.has_header = true;
  t.header = reader.header();
  t.records = t.keep = t.from = reader.record_count();
  return OpenResult::kOk;
}

// Opens (or creates) `name` in `dir` for completion: never through a symlink, never a file of
// another user or one with other hard links.
OpenResult open_target(const TraceDir& dir, const std::string& name, const SegmentView& seg,
                       Target& t, std::string& why) {
  t.reset();
  t.part = current_part(seg);
  t.path = dir.file(name);
  switch (dir.open_existing(name, O_RDWR, t.fd, why)) {
    case TraceDir::Opened::kMissing:
      t.fd = dir.create(name, 0644, why);
      t.created = t.fd >= 0;
      return t.fd >= 0 ? OpenResult::kOk : OpenResult::kUnwritable;
    case TraceDir::Opened::kRefused:
      return OpenResult::kUnwritable;
    case TraceDir::Opened::kOk:
      break;
  }
  return check_existing(seg, t, why);
}

// Copies the records of `name` in `from` (the same process's trace, unwritable where it is)
// into `to`. Nothing to copy when it cannot be read safely or belongs to another process.
bool copy_records(const TraceDir& from, const std::string& name, const SegmentView& seg, Target& to,
                  std::string& why) {
  int fd = -1;
  std::string ignored;
  if (from.open_existing(name, O_RDONLY, fd, ignored) != TraceDir::Opened::kOk) return true;
  TraceFileReader reader;
  if (!reader.adopt(fd, from.file(name)) || !same_process(reader.header().process, seg))
    return true;  // nothing readable to keep
  uint64_t at = 0;
  for (auto chunk = reader.next(); !chunk.empty(); chunk = reader.next()) {
    if (!write_all(to.fd, chunk.data(), chunk.size_bytes(),
                   kHeaderBytes + at * format::kRecordSize)) {
      why = fmt::format("write to {} failed: {}", to.path, std::strerror(errno));
      return false;
    }
    at += chunk.size();
  }
  to.records = to.keep = to.from = at;
  // Its header carries what the segment may not know (the rank learned at the first comm).
  to.header = reader.header();
  to.has_header = to.header.state != format::kTraceStateSalvaged;
  return true;
}

format::TraceHeader final_header(const Target& t, const SegmentView& seg, uint64_t records,
                                 bool appended, const SalvageResult& res) {
  const auto& s = seg.header();
  // The segment's identity is the latest; fields it never learned keep the file's values.
  format::ProcessInfo p = s.process;
  if (t.has_header) {
    const auto& old = t.header.process;
    if (p.rank < 0) p.rank = old.rank;
    if (p.world_size < 0) p.world_size = old.world_size;
    if (p.local_rank < 0) p.local_rank = old.local_rank;
    if (p.device < 0) p.device = old.device;
  }
  // A file the owner closed stays closed when the ring held nothing new.
  const bool stays_closed =
      t.has_header && t.header.state == format::kTraceStateClosed && !appended;
  p.part = t.part;
  format::TraceHeader h = format::trace_header(
      stays_closed ? format::kTraceStateClosed : format::kTraceStateSalvaged, p);
  h.records = records;
  h.dropped = s.dropped;
  h.cupti_dropped = s.cupti_dropped;
  h.mode = s.mode;
  h.kernel_filter = s.kernel_filter;
  // The segment's counters are the process's whole run; what this salvage could not recover
  // (holes, positions already overwritten) is lost too and said so in the same place.
  h.losses = s.losses;
  h.losses.ring_holes += res.holes;
  h.losses.ring_overwritten += res.overwritten;
  return h;
}

// The name of part `part` of the trace, derived from the segment's identity exactly as the shim
// derives it.
std::string trace_file_name(const SegmentView& seg, uint32_t part) {
  return format::trace_file_name(seg.host(), seg.header().process.pid, part);
}

// The segment's name must be the one the shim gives it for the identity in its header (so the
// header's job, host and pid are plain name parts, and the file name made of them is one).
bool identity_matches_name(const SegmentView& seg, std::string& why) {
  const int64_t pid = seg.header().process.pid;
  if (!is_name_part(seg.job()) || !is_name_part(seg.host()) || pid <= 0) {
    why = fmt::format("header identity (job '{}', host '{}', pid {}) is not a valid one", seg.job(),
                      seg.host(), pid);
    return false;
  }
  const std::string expected =
      fmt::format("{}{}.{}.{}", kSegmentPrefix, seg.job(), seg.host(), pid);
  if (seg.name() != expected) {
    why = fmt::format("header says job '{}', host '{}', pid {}, which is segment {}", seg.job(),
                      seg.host(), pid, expected);
    return false;
  }
  return true;
}

// The directory of the trace path the segment names, if that path is <absolute dir>/<name>;
// the header only ever chooses a directory (which TraceDir then checks), never a file name.
std::string named_directory(const SegmentView& seg, const std::string& name, std::string& why) {
  const std::string path = seg.trace_path();
  if (path.empty()) {
    why = "segment names no trace file";
    return "";
  }
  const auto slash = path.rfind('/');
  if (path[0] != '/' || path.compare(slash + 1, std::string::npos, name) != 0) {
    why = fmt::format("segment names trace file '{}', not <dir>/{}; not used", path, name);
    return "";
  }
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Appends to `t` (after its whole records) what the ring holds from position K to `write_pos`, then
// a record for each call the process was inside when it died (never returned, so no record says
// so). Counts holes, overwritten positions and in-flight calls in `res`; `written` is the file's
// record count after. false: a write failed (errno says why).
bool append_ring(const Target& t, const SegmentView& seg, uint64_t write_pos, SalvageResult& res,
                 uint64_t& written) {
  // Positions below write_pos - capacity were overwritten in the ring and are gone.
  const uint64_t first =
      std::max(t.from, write_pos > seg.capacity() ? write_pos - seg.capacity() : 0);
  res.overwritten = first - t.from;
  std::vector<format::Record> chunk;
  chunk.reserve(kCopyChunk);
  written = t.keep;
  const auto flush = [&] {
    if (chunk.empty()) return true;
    if (!write_all(t.fd, chunk.data(), chunk.size() * sizeof(format::Record),
                   kHeaderBytes + written * format::kRecordSize))
      return false;
    written += chunk.size();
    chunk.clear();
    return true;
  };
  format::Record record;
  for (uint64_t pos = first; pos < write_pos; ++pos) {
    if (!seg.read(pos, record)) {
      ++res.holes;
      continue;
    }
    chunk.push_back(record);
    if (chunk.size() == kCopyChunk && !flush()) return false;
  }
  for (const auto& slot : seg.in_flight(/*active_only=*/true)) {
    chunk.push_back(
        format::in_flight_record(slot, monotonic_ns(), format::InFlightSource::kSalvage));
    ++res.in_flight;
  }
  return flush();
}

// Completes `t` with the ring's records from position K on and the final header, then removes
// the segment. false: `why` says what failed to be written (the caller may try elsewhere), or
// is empty and res.message says why the file was left as it is.
bool finish(Target& t, const SegmentView& seg, SalvageResult& res, std::string& why) {
  why.clear();
  res.trace_path = t.path;
  res.in_file = t.records;
  res.appended = res.holes = res.overwritten = res.in_flight = 0;
  if (t.has_header && t.header.state == format::kTraceStateSalvaged) {
    // A previous salvage finished writing but did not remove the segment. Appending again
    // would misplace positions after its holes, so only the removal is left to do.
    std::string not_removed;
    if (!seg.remove(not_removed)) res.warnings.push_back(not_removed);
    res.status = SalvageStatus::kAlreadySalvaged;
    return true;
  }
  const uint64_t write_pos = seg.write_pos();
  join_points(seg, t);
  res.in_file = t.keep;
  if (t.from > write_pos) {
    res.message = fmt::format("{} holds {} records but the segment only ever wrote {}; not touched",
                              t.path, t.records, write_pos);
    return false;
  }
  // Drop a torn last record (or a batch the checkpoint does not count) before appending.
  if (::ftruncate(t.fd, static_cast<off_t>(kHeaderBytes + t.keep * format::kRecordSize)) != 0) {
    why = fmt::format("cannot truncate {}: {}", t.path, std::strerror(errno));
    return false;
  }

  uint64_t written = 0;
  if (!append_ring(t, seg, write_pos, res, written)) {
    why = fmt::format("write to {} failed: {}", t.path, std::strerror(errno));
    return false;
  }
  res.appended = written - t.keep - res.in_flight;

  const format::TraceHeader header = final_header(t, seg, written, written != t.records, res);
  res.rank = header.process.rank;
  if (!write_all(t.fd, &header, sizeof header, 0) || ::fsync(t.fd) != 0) {
    why = fmt::format("cannot finish {}: {}", t.path, std::strerror(errno));
    return false;
  }
  // Only now that the file is complete on disk may the segment go.
  std::string not_removed;
  if (!seg.remove(not_removed)) res.warnings.push_back("segment not removed: " + not_removed);
  res.status = SalvageStatus::kSalvaged;
  return true;
}

// After a failed finish(): a file we created goes away, one that existed gets back the length
// it had (its header was not rewritten yet), so a retry elsewhere starts from the same state.
void undo(const TraceDir& dir, const std::string& name, Target& t) {
  if (t.fd < 0) return;
  if (t.created) {
    ::unlinkat(dir.fd(), name.c_str(), 0);
  } else if (::ftruncate(t.fd, static_cast<off_t>(kHeaderBytes + t.keep * format::kRecordSize)) !=
             0) {
    // Nothing more to do: the file keeps whole records after K, and its header says open. (Records
    // beyond `keep` were cut: the ring, from `from` on, still holds them.)
  }
  t.reset();
}

// Step 1: opens segment `name` and says whether it may be salvaged: this user's, a header that
// names it, and an owner that is gone (or --force). false: `res` says why not.
bool open_salvageable(const std::string& name, const SalvageOptions& options, SegmentView& seg,
                      SalvageResult& res) {
  if (!seg.open(name, options.shm_dir)) {
    res.status = seg.foreign() ? SalvageStatus::kSkippedForeign : SalvageStatus::kSkippedUnusable;
    res.message = seg.error();
    return false;
  }
  res.warnings = seg.warnings();
  const auto& sh = seg.header();
  res.pid = sh.process.pid;
  res.rank = sh.process.rank;
  res.dropped = sh.dropped;
  std::string why;
  if (!identity_matches_name(seg, why)) {
    res.status = SalvageStatus::kSkippedUnusable;
    res.message = why;
    return false;
  }
  if (sh.state == format::kSegmentStateLive && process_alive(sh.process.pid) && !options.force) {
    res.status = SalvageStatus::kSkippedLive;
    res.message = fmt::format("owner pid {} is alive and recording (--force salvages anyway)",
                              sh.process.pid);
    return false;
  }
  return true;
}

// Step 2: completes the trace file in the directory the segment names. true: `res` is final
// (salvaged, or refused with res.message). false: the file could not be written there, `why`
// says why and the file holds what it held before (`primary` stays open if the directory did,
// for step 3 to copy from).
bool complete_in_named_dir(const SegmentView& seg, const std::string& file_name, TraceDir& primary,
                           SalvageResult& res, std::string& why) {
  // The segment names part 0; later parts lie next to it.
  const std::string named_dir = named_directory(seg, trace_file_name(seg, 0), why);
  Target target;
  OpenResult opened = OpenResult::kUnwritable;
  if (!named_dir.empty()) {
    if (primary.open(named_dir)) {
      opened = open_target(primary, file_name, seg, target, why);
    } else {
      why = primary.error();
    }
  }
  res.trace_path = named_dir.empty() ? seg.trace_path()
                                     : (std::filesystem::path(named_dir) / file_name).string();
  if (opened == OpenResult::kRefuse) {
    res.message = why;
    return true;
  }
  if (opened != OpenResult::kOk) return false;
  if (finish(target, seg, res, why)) return true;
  if (why.empty()) return true;  // refused, not a write failure (res.message says why)
  // Not writable after all (a full file system, a quota, an I/O error): the file goes back to
  // what it held, and --dir gets the whole trace.
  undo(primary, file_name, target);
  return false;
}

// Step 3: writes the whole trace into `dir` (--dir, the user's own choice, created if missing):
// what the named file held (when `primary` could be read) then the ring. `why` is why step 2
// could not write it; `res` gets the outcome.
void write_to_fallback_dir(const SegmentView& seg, const std::string& file_name,
                           const TraceDir& primary, const std::string& dir_option,
                           const std::string& why, SalvageResult& res) {
  std::error_code ec;
  const std::string dir = std::filesystem::absolute(dir_option, ec).lexically_normal().string();
  std::filesystem::create_directories(dir, ec);
  TraceDir fallback;
  if (!fallback.open(dir)) {
    res.trace_path = (std::filesystem::path(dir) / file_name).string();
    res.message = why + "; " + fallback.error();
    return;
  }
  res.trace_path = fallback.file(file_name);
  Target target;
  std::string why2;
  if (open_target(fallback, file_name, seg, target, why2) != OpenResult::kOk) {
    res.message = why + "; " + why2;
    return;
  }
  res.warnings.push_back(why + "; wrote " + target.path + " instead");
  if (primary.fd() >= 0 && target.records == 0 &&
      !copy_records(primary, file_name, seg, target, why2)) {
    undo(fallback, file_name, target);
    res.message = why2;
    return;
  }
  if (!finish(target, seg, res, why2) && !why2.empty()) {
    undo(fallback, file_name, target);
    res.message = why + "; " + why2;
  }
}

}  // namespace

bool process_alive(int64_t pid) {
  if (pid <= 0 || pid > INT32_MAX) return false;
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM) return false;
  // A killed process nobody has reaped yet is a zombie: dead for our purpose.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (std::getline(stat, line)) {
    const auto paren = line.rfind(')');
    if (paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z')
      return false;
  }
  return true;
}

SalvageResult salvage_segment(const std::string& name, const SalvageOptions& options) {
  SalvageResult res;
  res.segment = name;
  SegmentView seg;
  if (!open_salvageable(name, options, seg, res)) return res;
  // The trace file: the one in the segment's own directory, else one in --dir (with what the
  // one that could not be written held).
  const std::string file_name = trace_file_name(seg, current_part(seg));
  TraceDir primary;
  std::string why;
  if (complete_in_named_dir(seg, file_name, primary, res, why)) return res;
  if (options.dir.empty()) {
    res.message = why + "; give --dir DIR to write it elsewhere";
    return res;
  }
  write_to_fallback_dir(seg, file_name, primary, options.dir, why, res);
  return res;
}

std::vector<SalvageResult> salvage_job(const std::string& job, const SalvageOptions& options) {
  std::vector<SalvageResult> results;
  for (const auto& name : list_segments(job, options.shm_dir)) {
    if (!job.empty()) {
      // "ncclwatch.a." also prefixes job "a.b"'s segments: the header decides.
      SegmentView view;
      if (view.open(name, options.shm_dir) && view.job() != job) continue;
    }
    results.push_back(salvage_segment(name, options));
  }
  return results;
}

std::string describe(const SalvageResult& r) {
  std::string line;
  switch (r.status) {
    case SalvageStatus::kSalvaged:
      line = fmt::format(
          "{} -> {}: salvaged (rank {}, pid {}): {} in file + {} recovered, {} hole(s), "
          "{} overwritten, {} dropped{}",
          r.segment, r.trace_path, r.rank, r.pid, r.in_file, r.appended, r.holes, r.overwritten,
          r.dropped,
          r.in_flight != 0 ? fmt::format(", {} call(s) in flight", r.in_flight) : std::string());
      break;
    case SalvageStatus::kAlreadySalvaged:
      line = fmt::format("{} -> {}: already salvaged ({} records); segment removed", r.segment,
                         r.trace_path, r.in_file);
      break;
    case SalvageStatus::kSkippedLive:
      line = fmt::format("{}: skipped: {}", r.segment, r.message);
      break;
    case SalvageStatus::kSkippedForeign:
      line = fmt::format("{}: skipped (not yours): {}", r.segment, r.message);
      break;
    case SalvageStatus::kSkippedUnusable:
      line = fmt::format("{}: skipped (not a usable segment): {}", r.segment, r.message);
      break;
    case SalvageStatus::kFailed:
      line = fmt::format("{}: failed: {}", r.segment, r.message);
      break;
  }
  for (const auto& w : r.warnings) line += " [" + w + "]";
  return line;
}

}  // namespace ncclwatch::trace
