// Any bytes as NCCL_DEBUG log text (split into up to 4 "files" at 0xff bytes), through the
// parser, the grouping, every check, the report and NCCL's WARN lines: must never crash, hang or
// trip a sanitizer.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "topology/checks.h"
#include "topology/log_parser.h"
#include "topology/nccl_warning_report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  std::string_view all(reinterpret_cast<const char*>(data), size);
  ncclwatch::topology::LogParser parser;
  int file = 0;
  while (!all.empty() && file < 4) {
    std::size_t cut = all.find('\xff');
    parser.add_text("f" + std::to_string(file++), all.substr(0, cut));
    all = cut == std::string_view::npos ? std::string_view{} : all.substr(cut + 1);
  }
  ncclwatch::topology::LogSet set = parser.take();
  auto groups = ncclwatch::topology::group_comms(set);
  ncclwatch::model::JobTrace job;
  ncclwatch::model::MatchResult match;
  auto comms = ncclwatch::topology::build_contexts(set, groups, job, match);
  std::vector<ncclwatch::topology::TopoFinding> out;
  ncclwatch::topology::check_node_count(set, comms, out);
  ncclwatch::topology::check_transports(set, comms, out);
  ncclwatch::topology::check_rings(set, comms, out);
  ncclwatch::topology::check_agreement(set, comms, out);
  ncclwatch::topology::check_bus_bandwidth(set, comms, job, match, out);
  ncclwatch::model::Report report;
  ncclwatch::topology::add_nccl_warnings(set.warnings, job, report);
  return 0;
}
