#include "trace/dump.h"

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "model/losses.h"
#include "model/message.h"
#include "trace/record_check.h"
#include "trace/record_json.h"
#include "trace/record_names.h"
#include "trace/trace_file_reader.h"
#include "trace/trace_header_check.h"

namespace ncclwatch::trace {

std::optional<std::set<format::RecordKind>> parse_kinds(const std::string& csv,
                                                        std::string& error) {
  std::set<format::RecordKind> kinds;
  std::size_t begin = 0;
  while (begin <= csv.size()) {
    std::size_t end = csv.find(',', begin);
    if (end == std::string::npos) end = csv.size();
    const std::string name = csv.substr(begin, end - begin);
    if (!name.empty()) {
      const auto kind = kind_from_name(name);
      if (!kind) {
        std::string known;
        for (uint8_t k = 1; k < static_cast<uint8_t>(format::RecordKind::kCount); ++k)
          known += (known.empty() ? "" : ",") + kind_name(k);
        error = fmt::format("unknown record kind '{}' (kinds: {})", name, known);
        return std::nullopt;
      }
      kinds.insert(*kind);
    }
    begin = end + 1;
  }
  return kinds;
}

int dump_trace(const std::string& path, const DumpOptions& options, std::FILE* out,
               std::FILE* err) {
  TraceFileReader reader;
  if (!reader.open(path)) {
    model::say(err, fmt::format("{}: {}", path, reader.error()));
    return 1;
  }
  // Pass 1: names (string chunks may come after the records that use them).
  StringTable names;
  for (auto chunk = reader.next(); !chunk.empty(); chunk = reader.next()) {
    for (const auto& r : chunk) {
      if (r.prefix.kind == format::RecordKind::kString && record_problem(r) == nullptr)
        names.add(r.string);
    }
  }
  names.finish();
  reader.rewind();

  if (options.header) {
    const std::string line =
        header_to_json(reader.header())
            .dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) +
        "\n";
    std::fwrite(line.data(), 1, line.size(), out);
  }
  uint64_t index = 0, printed = 0, invalid = 0;
  // A write error (a full disk under `> file`, /dev/full, a closed pipe) ends the dump: what the
  // user asked for cannot be written, and saying so is the only useful thing left to do.
  for (auto chunk = reader.next(); !chunk.empty() && !std::ferror(out); chunk = reader.next()) {
    for (const auto& r : chunk) {
      if (record_problem(r) != nullptr) ++invalid;
      if (options.kinds.empty() || options.kinds.contains(r.prefix.kind)) {
        const std::string line =
            record_to_json(r, index, names)
                .dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
        std::fwrite(line.data(), 1, line.size(), out);
        std::fputc('\n', out);
        ++printed;
      }
      ++index;
    }
  }
  if (std::fflush(out) != 0 || std::ferror(out)) {
    const int error = errno;
    model::say(err, fmt::format("cannot write the output: {}",
                                error != 0 ? std::strerror(error) : "write error"));
    return 1;
  }
  for (const auto& w : reader.warnings()) model::say(err, fmt::format("{}: {}", path, w));
  const auto& p = reader.header().process;
  model::say(err, fmt::format("{}: {} records, {} printed, {} invalid; job '{}' host '{}' pid {} "
                              "rank {}",
                              path, index, printed, invalid, bounded_string(p.job, sizeof p.job),
                              bounded_string(p.host, sizeof p.host), p.pid, p.rank));
  // The file holds fewer records than the process made: say so next to the count.
  std::string lost;
  for (const auto& e : model::Losses::of(reader.header()).entries()) {
    if (e.count > 0)
      lost += fmt::format("{}{} {} {}", lost.empty() ? "" : "; ", e.label, e.count, e.unit);
  }
  if (!lost.empty()) model::say(err, fmt::format("{}: lost: {}", path, lost));
  return 0;
}

}  // namespace ncclwatch::trace
