// Writes the --html page (and the report JSON) of a simulated job, for the browser check
// (html_browser_check.sh) and the screenshots in docs/:
//   html_page_fixture SCENARIO PAGE.html [REPORT.json]
// Scenarios:
//   hostile  a 4-rank job whose every name the page can show — job, host names, step (NVTX /
//            ProfilerStep) names, kernel names, comm names, and so the finding texts — holds
//            strings that would end or confuse the page's <script> element if they reached it
//            unescaped (`<!--<script>`, `</script>`, U+2028, ...); rank 1 is a straggler, so
//            its host name is also in the findings.
// Exit status 0 when the page was written, 1 when not, 2 on a usage error.
#include <cstdio>
#include <fstream>
#include <string>
#include <string_view>

#include "ddp_sim.h"
#include "export/html_report.h"
#include "pipeline/pipeline.h"

namespace {

using ncclwatch::analysis::testing::sim_params;
using ncclwatch::analysis::testing::SimJob;
using ncclwatch::analysis::testing::SimParams;
using ncclwatch::analysis::testing::simulate;

// What could leave a <script> element or put the HTML parser into another state, plus a
// JavaScript line terminator (U+2028) and text that looks like an entity.
constexpr std::string_view kHostile =
    "<!--<script>x</script><script>document.body.dataset.status='pwned'</script>"
    "\xe2\x80\xa8&lt;]]></style>";

std::string hostile(std::string_view base) {
  return std::string(base) + std::string(kHostile);
}

SimJob hostile_job() {
  SimParams p = sim_params(4, 2);
  p.ranks[1].host_stall_ns = 3'000'000;  // a straggler: its host is named in the findings
  p.step_ranges = true;
  SimJob s = simulate(p);
  s.job.job = hostile("job");
  for (auto& rank : s.job.ranks) {
    rank.info.host = hostile(rank.info.host);
    // Every name of the trace: kernel names, the step ranges' names (ProfilerStep#N...).
    for (std::string& name : rank.names) {
      if (!name.empty()) name = hostile(name);
    }
    for (auto& comm : rank.comms) comm.name = hostile("pg");
  }
  return s;
}

bool write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  return static_cast<bool>(out.flush());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr, "usage: html_page_fixture hostile PAGE.html [REPORT.json]\n");
    return 2;
  }
  const std::string scenario = argv[1];
  SimJob sim;
  if (scenario == "hostile") {
    sim = hostile_job();
  } else {
    std::fprintf(stderr, "html_page_fixture: unknown scenario '%s'\n", scenario.c_str());
    return 2;
  }
  ncclwatch::pipeline::PipelineOptions options;
  options.link_gpu = false;  // the simulator links calls to their kernels itself
  options.threads = 1;
  const ncclwatch::model::Report report = ncclwatch::pipeline::build_report(sim.job, options);
  std::string error;
  if (!ncclwatch::exporter::HtmlReport::write_file(argv[2], report, error)) {
    std::fprintf(stderr, "html_page_fixture: %s\n", error.c_str());
    return 1;
  }
  if (argc == 4 &&
      !write_text(argv[3],
                  report.json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace))) {
    std::fprintf(stderr, "html_page_fixture: cannot write %s\n", argv[3]);
    return 1;
  }
  return 0;
}
