// `ncclwatch demo SCENARIO` as a user runs it from the build tree: each scenario's report names
// what the scenario injected (its verdict in the JSON and the text), and every output says
// SIMULATED (the first line, a finding, the JSON's "simulated" and job, the page, the hosts of the
// exported timeline, and a later `ncclwatch report` of the traces it kept). Without a scenario, or
// with an unknown one, the list and exit status 2.
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "demo/scenarios.h"
#include "process.h"

namespace {

using ncclwatch::test_support::slurp;
using nlohmann::json;

struct Demo {
  int rc = -1;
  std::string out, err;
  json report;
  std::string page;
};

class DemoTest : public ::testing::Test {
 protected:
  Demo demo(const std::string& scenario, const std::string& more = "") {
    Demo d;
    // The findings are read as one line each: no wrapping to a width (COLUMNS).
    const auto r = ncclwatch::test_support::run_shell(
        "export COLUMNS=100000; cd '" + root_.string() + "' && " + NCCLWATCH_CLI + " demo " +
            scenario + " --json report.json " + more,
        root_);
    d.rc = r.rc;
    d.out = r.out;
    d.err = r.err;
    std::ifstream in(root_ / "report.json");
    if (in) d.report = json::parse(in, nullptr, false);
    d.page = slurp(root_ / ("ncclwatch-demo-" + scenario + ".html"));
    return d;
  }

  // What every scenario's outputs carry: SIMULATED, the scenario and what it injects.
  void expect_simulated(const Demo& d, const std::string& scenario) {
    const ncclwatch::demo::Scenario* s = ncclwatch::demo::find_scenario(scenario);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(d.rc, 0) << d.err << d.out;
    const std::string first = "SIMULATED job (ncclwatch demo " + scenario + "): ";
    EXPECT_EQ(d.out.rfind(first, 0), 0u) << d.out;
    EXPECT_NE(d.out.find(std::string(s->injected)), std::string::npos) << d.out;
    EXPECT_NE(d.out.find("\nSIMULATED: this report is of a stand-in job"), std::string::npos);
    EXPECT_NE(d.out.find("info     [demo] " + first), std::string::npos) << d.out;
    ASSERT_TRUE(d.report.is_object()) << d.err;
    EXPECT_EQ(d.report["simulated"].get<std::string>().rfind(first, 0), 0u);
    EXPECT_EQ(d.report["job"], "SIMULATED-demo-" + scenario);
    // The demo's line leads the findings, after a critical verdict only (model::ordered_findings).
    std::size_t lead = 0;
    while (lead < d.report["findings"].size() &&
           d.report["findings"][lead]["severity"] == "critical")
      ++lead;
    ASSERT_LT(lead, d.report["findings"].size());
    EXPECT_EQ(d.report["findings"][lead]["source"], "demo");
    EXPECT_NE(d.page.find("SIMULATED job (ncclwatch demo " + scenario), std::string::npos);
    EXPECT_NE(d.page.find("SIMULATED-demo-" + scenario), std::string::npos);  // the page's title
  }

  std::string pattern_line(const Demo& d) {
    const auto at = d.out.find("[pattern]");
    return at == std::string::npos ? "" : d.out.substr(at, d.out.find('\n', at) - at);
  }

  ncclwatch::test_support::TempDir tmp_{"ncclwatch_demo"};
  std::filesystem::path root_ = tmp_.path();
};

TEST(DemoScenarios, TheIssuesListInItsOrder) {
  std::vector<std::string> names;
  for (const auto& s : ncclwatch::demo::scenarios()) names.emplace_back(s.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"healthy", "sawtooth", "checkpoint", "straggler", "slow-node",
                                      "fabric", "flat-low", "tp-across-nodes", "hang"}));
  EXPECT_EQ(ncclwatch::demo::find_scenario("nope"), nullptr);
  EXPECT_EQ(ncclwatch::demo::scenario_lines().size(), names.size());
}

// A demo's job id says SIMULATED and names its scenario; only such an id reads as simulated.
TEST(DemoScenarios, TheJobIdTellsADemoRun) {
  for (const auto& s : ncclwatch::demo::scenarios()) {
    const std::string id = ncclwatch::demo::demo_job_id(s);
    EXPECT_EQ(id, "SIMULATED-demo-" + std::string(s.name));
    EXPECT_EQ(ncclwatch::demo::simulated_line_of_job(id), ncclwatch::demo::simulated_line(s));
  }
  EXPECT_EQ(ncclwatch::demo::simulated_line_of_job("SIMULATED-demo-later-scenario")
                .rfind("SIMULATED job (ncclwatch demo, job SIMULATED-demo-later-scenario)", 0),
            0u);
  for (const char* real : {"", "train-1234", "SIMULATED", "simulated-demo-sawtooth",
                           "x-SIMULATED-demo-sawtooth", "SIMULATED-dem"})
    EXPECT_EQ(ncclwatch::demo::simulated_line_of_job(real), "") << real;
}

TEST_F(DemoTest, WithoutAScenarioListsThemAndExits2) {
  for (const std::string& arg : {std::string(), std::string("no-such-scenario")}) {
    const auto r = ncclwatch::test_support::run_shell(
        "cd '" + root_.string() + "' && " + NCCLWATCH_CLI + " demo " + arg, root_);
    EXPECT_EQ(r.rc, 2) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    for (const auto& s : ncclwatch::demo::scenarios()) {
      EXPECT_NE(r.err.find("ncclwatch:   " + std::string(s.name) + " "), std::string::npos)
          << r.err;
    }
    EXPECT_NE(r.err.find(arg.empty() ? "name a scenario" : "no scenario 'no-such-scenario'"),
              std::string::npos)
        << r.err;
  }
}

TEST_F(DemoTest, ANonEmptyTraceDirectoryIsRefused) {
  std::filesystem::create_directories(root_ / "used");
  std::ofstream(root_ / "used" / "old.trace") << "x";
  const Demo d = demo("healthy", "--dir used");
  EXPECT_EQ(d.rc, 1);
  EXPECT_NE(d.err.find("is not an empty directory"), std::string::npos) << d.err;
}

TEST_F(DemoTest, Healthy) {
  const Demo d = demo("healthy");
  expect_simulated(d, "healthy");
  EXPECT_EQ(d.report["pattern"]["row"], "healthy") << d.report["pattern"].dump();
  // Only the pattern is asked: a busy machine may add a warning of its own (timing noise).
  EXPECT_EQ(d.out.find("WARNING  [pattern]"), std::string::npos) << d.out;
  EXPECT_EQ(pattern_line(d).rfind("[pattern] no low-utilization pattern", 0), 0u) << d.out;
}

TEST_F(DemoTest, SawtoothWithTheTimelineExported) {
  const Demo d = demo("sawtooth", "--trace trace.json --dir traces");
  expect_simulated(d, "sawtooth");
  EXPECT_EQ(d.report["pattern"]["row"], "dataloader") << d.report["pattern"].dump();
  EXPECT_NE(pattern_line(d).find("sawtooth: GPU idle"), std::string::npos) << d.out;
  EXPECT_NE(pattern_line(d).find("at the step boundary on every rank"), std::string::npos);
  // The exported timeline names the simulated hosts in its process names; --dir kept the traces.
  const json t = json::parse(slurp(root_ / "trace.json"), nullptr, false);
  std::set<std::string> processes;
  for (const json& ev : t["traceEvents"]) {
    if (ev["ph"] == "M" && ev["name"] == "process_name") processes.insert(ev["args"]["name"]);
  }
  EXPECT_EQ(processes, (std::set<std::string>{"rank 0 (simulated-a)", "rank 1 (simulated-a)",
                                              "rank 2 (simulated-b)", "rank 3 (simulated-b)"}));
  std::size_t traces = 0;
  for (const auto& e : std::filesystem::directory_iterator(root_ / "traces"))
    traces += e.path().extension() == ".trace";
  EXPECT_EQ(traces, 4u);
  // The timeline says SIMULATED at its top, with the JSON report's key and line.
  EXPECT_EQ(t.value("simulated", ""), d.report["simulated"].get<std::string>());
}

// The traces a demo kept, reported later by `ncclwatch report`, still say SIMULATED (the job id
// in their headers), in the text, the JSON and the exported timeline, with the scenario's words;
// moved to another directory (the traces alone) they still do.
TEST_F(DemoTest, KeptTracesReportedLaterStillSaySimulated) {
  const Demo d = demo("straggler", "--dir kept");
  ASSERT_EQ(d.rc, 0) << d.err;
  std::filesystem::create_directories(root_ / "moved");
  for (const auto& e : std::filesystem::directory_iterator(root_ / "kept")) {
    if (e.path().extension() == ".trace")
      std::filesystem::copy_file(e.path(), root_ / "moved" / e.path().filename());
  }
  const std::string line = d.report["simulated"].get<std::string>();
  for (const char* dir : {"kept", "moved"}) {
    const auto r = ncclwatch::test_support::run_shell(
        std::string("export COLUMNS=100000; cd '") + root_.string() + "' && " + NCCLWATCH_CLI +
            " report " + dir + " --json later.json --trace later-trace.json",
        root_);
    EXPECT_TRUE(r.rc == 0 || r.rc == 3) << r.rc << r.err << r.out;  // a report was printed
    EXPECT_NE(r.out.find("info     [demo] " + line), std::string::npos) << dir << "\n" << r.out;
    const json later = json::parse(slurp(root_ / "later.json"), nullptr, false);
    ASSERT_TRUE(later.is_object()) << dir;
    EXPECT_EQ(later.value("simulated", ""), line) << dir;
    const json t = json::parse(slurp(root_ / "later-trace.json"), nullptr, false);
    ASSERT_TRUE(t.is_object()) << dir;
    EXPECT_EQ(t.value("simulated", ""), line) << dir;
  }
}

TEST_F(DemoTest, Checkpoint) {
  const Demo d = demo("checkpoint");
  expect_simulated(d, "checkpoint");
  EXPECT_EQ(d.report["pattern"]["row"], "checkpoint") << d.report["pattern"].dump();
  EXPECT_EQ(d.report["pattern"]["period_steps"], 4);
  EXPECT_EQ(d.report["pattern"]["spike_steps"], json({3, 7, 11}));
}

TEST_F(DemoTest, Straggler) {
  const Demo d = demo("straggler");
  expect_simulated(d, "straggler");
  ASSERT_EQ(d.report["stragglers"].size(), 1u) << d.report["stragglers"].dump();
  EXPECT_EQ(d.report["stragglers"][0]["rank"], 2);
  EXPECT_EQ(d.report["stragglers"][0]["cause"], "gpu-slow");
  EXPECT_EQ(d.report["pattern"]["row"], "lagging") << d.report["pattern"].dump();
  EXPECT_NE(pattern_line(d).find("one GPU lagging the rest — rank 2 (simulated-b)"),
            std::string::npos)
      << d.out;
}

TEST_F(DemoTest, SlowNode) {
  const Demo d = demo("slow-node");
  expect_simulated(d, "slow-node");
  EXPECT_EQ(d.report["pattern"]["row"], "lagging") << d.report["pattern"].dump();
  EXPECT_NE(pattern_line(d).find("one node lagging the rest — node simulated-b (2 ranks)"),
            std::string::npos)
      << d.out;
}

TEST_F(DemoTest, Fabric) {
  const Demo d = demo("fabric");
  expect_simulated(d, "fabric");
  EXPECT_EQ(d.report["pattern"]["row"], "collective-drops") << d.report["pattern"].dump();
  EXPECT_NE(pattern_line(d).find("drops correlated with collectives"), std::string::npos) << d.out;
}

TEST_F(DemoTest, FlatLow) {
  const Demo d = demo("flat-low");
  expect_simulated(d, "flat-low");
  EXPECT_EQ(d.report["pattern"]["row"], "flat-low") << d.report["pattern"].dump();
  EXPECT_NE(pattern_line(d).find("flat, steady low utilization"), std::string::npos) << d.out;
}

TEST_F(DemoTest, TensorParallelAcrossNodes) {
  const Demo d = demo("tp-across-nodes");
  expect_simulated(d, "tp-across-nodes");
  std::size_t flagged = 0;
  for (const json& c : d.report["cross_node_comms"])
    flagged += c["tensor_parallel_like"].get<bool>();
  EXPECT_EQ(flagged, 2u) << d.report["cross_node_comms"].dump();
  EXPECT_NE(d.out.find("keep tensor parallelism inside a node"), std::string::npos) << d.out;
}

TEST_F(DemoTest, Hang) {
  const Demo d = demo("hang");
  expect_simulated(d, "hang");
  // The verdict opens the report, right under the SIMULATED line.
  EXPECT_NE(d.out.find("\n\nCRITICAL [hang] job hung in all_reduce #4 on comm 0x"),
            std::string::npos)
      << d.out;
  EXPECT_EQ(d.report["hang"]["seq"], 4) << d.report["hang"].dump();
  EXPECT_EQ(d.report["hang"]["missing_ranks"], json::array({1}));
  EXPECT_EQ(d.report["hang"]["waiting_ranks"], json::array({0, 2, 3}));
}

}  // namespace
