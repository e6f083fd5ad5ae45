// The Chrome-trace export of a simulated 4-rank job: parsed back, it has one process per rank,
// kernels on stream tracks with HTA's categories and args, NCCL calls on the host thread,
// ProfilerStep ranges, one flow chain per matched collective, times aligned across ranks, and
// --steps keeps only the window asked for.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>

#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "analysis/rank_activity.h"
#include "ddp_sim.h"
#include "export/chrome_trace.h"

namespace ncclwatch::exporter {
namespace {

using nlohmann::json;

struct Exported {
  json doc;
  ChromeTraceStats stats;
};

Exported export_job(const analysis::testing::SimJob& s, StepWindow w = {},
                    std::string_view simulated = {}) {
  std::vector<analysis::StepPlan> plans;
  for (const auto& r : s.job.ranks) {
    const auto a = analysis::RankActivity::of(r);
    plans.push_back(analysis::StepDetector::detect(r, a.first_ns, a.last_ns));
  }
  char* buf = nullptr;
  std::size_t size = 0;
  std::FILE* f = open_memstream(&buf, &size);
  Exported e;
  std::string error;
  EXPECT_TRUE(
      ChromeTraceWriter::write(f, s.job, s.match, s.clocks, plans, w, e.stats, error, simulated))
      << error;
  std::fclose(f);
  e.doc = json::parse(std::string(buf, size));
  std::free(buf);
  return e;
}

TEST(ChromeTrace, StructureOfASimulatedJob) {
  auto p = analysis::testing::sim_params(4, 2);
  p.ranks[3].clock_skew_ns = 5'000'000;  // node-b's clock runs 5 ms ahead: undone in the export
  p.ranks[2].clock_skew_ns = 5'000'000;
  const auto s = analysis::testing::simulate(p);
  const Exported e = export_job(s);
  const json& d = e.doc;
  EXPECT_EQ(d["distributedInfo"]["world_size"], 4);
  EXPECT_EQ(d["distributedInfo"]["rank"], 0);
  std::set<int> pids;
  std::map<int, int> kernels, calls, steps;
  std::map<int, double> first_nccl_ts;  // per rank: the first all-reduce kernel's start
  std::map<long, std::vector<std::string>> flows;
  for (const json& ev : d["traceEvents"]) {
    const std::string ph = ev["ph"];
    const int pid = ev["pid"];
    if (ph == "M" && ev["name"] == "process_name") pids.insert(pid);
    if (ph == "X" && ev["cat"] == "kernel") {
      ++kernels[pid];
      EXPECT_TRUE(ev["args"].contains("stream"));
      EXPECT_TRUE(ev["args"].contains("correlation"));
      const std::string name = ev["name"];
      if (name.rfind("nccl", 0) == 0 && !first_nccl_ts.count(pid)) first_nccl_ts[pid] = ev["ts"];
    }
    if (ph == "X" && ev["cat"] == "cpu_op") {
      ++calls[pid];
      EXPECT_EQ(ev["name"], "nccl:all_reduce");
      EXPECT_EQ(ev["tid"], 0);
    }
    if (ph == "X" && ev["cat"] == "user_annotation") {
      ++steps[pid];
      EXPECT_EQ(ev["name"].get<std::string>().rfind("ProfilerStep#", 0), 0u);
    }
    if (ph == "s" || ph == "t" || ph == "f") flows[ev["id"].get<long>()].push_back(ph);
  }
  EXPECT_EQ(pids, (std::set<int>{0, 1, 2, 3}));
  for (int r = 0; r < 4; ++r) {
    // Per step: forward, 4 backward segments, optimizer, 4 all-reduces; plus one memcpy
    // (gpu_memcpy, not counted here). 12 steps.
    EXPECT_EQ(kernels[r], 12 * 10) << r;
    EXPECT_EQ(calls[r], 12 * 4) << r;
    EXPECT_EQ(steps[r], 12) << r;
    // Aligned: every rank's first all-reduce starts at the same moment (last arrival is common
    // only for the end; the simulator's ranks are identical here, so starts agree too).
    EXPECT_NEAR(first_nccl_ts[r], first_nccl_ts[0], 0.002) << r;
  }
  EXPECT_EQ(e.stats.flows, s.match.instances.size());
  ASSERT_EQ(flows.size(), s.match.instances.size());
  for (const auto& [id, chain] : flows) {
    EXPECT_EQ(chain, (std::vector<std::string>{"s", "t", "t", "f"})) << id;
  }
}

// What Perfetto's JSON importer needs (perfetto.dev/docs: FAQ "overlapping events in JSON
// traces", getting-started/other-formats; the Trace Event Format it follows): every event an
// object with ph; pid and tid integers; ts a number except on metadata; X with dur >= 0; on one
// (pid, tid) track X slices nest perfectly — partial overlaps are not supported — judged as the
// importer computes them (ts + dur in doubles); metadata only of the kinds it reads; flow events
// (s/t/f) chained by id, each inside an X slice of its own track (v1 flows bind to the enclosing
// slice). Returns the violations, empty when there are none.
std::vector<std::string> perfetto_violations(const json& doc) {
  std::vector<std::string> bad;
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array()) {
    return {"no traceEvents array"};
  }
  if (doc.value("displayTimeUnit", "ms") != "ms" && doc.value("displayTimeUnit", "ms") != "ns") {
    bad.push_back("displayTimeUnit must be ms or ns");
  }
  const std::set<std::string> metadata = {"process_name", "process_sort_index", "process_labels",
                                          "thread_name", "thread_sort_index"};
  std::map<std::pair<long, long>, std::vector<std::pair<double, double>>> tracks;
  std::vector<const json*> flow_points;
  std::map<long, std::string> chains;
  for (const json& ev : doc["traceEvents"]) {
    if (!ev.is_object() || !ev.contains("ph") || !ev["ph"].is_string()) {
      bad.push_back("event without ph: " + ev.dump());
      continue;
    }
    const std::string ph = ev["ph"];
    if (!ev.contains("pid") || !ev["pid"].is_number_integer() || !ev.contains("tid") ||
        !ev["tid"].is_number_integer()) {
      bad.push_back("pid/tid not integers: " + ev.dump());
      continue;
    }
    if (ph == "M") {
      if (!metadata.count(ev.value("name", ""))) bad.push_back("metadata kind: " + ev.dump());
      continue;
    }
    if (!ev.contains("ts") || !ev["ts"].is_number()) {
      bad.push_back("ts not a number: " + ev.dump());
      continue;
    }
    const std::pair<long, long> track{ev["pid"].get<long>(), ev["tid"].get<long>()};
    if (ph == "X") {
      if (!ev.contains("dur") || !ev["dur"].is_number() || ev["dur"].get<double>() < 0) {
        bad.push_back("X without dur >= 0: " + ev.dump());
        continue;
      }
      const double ts = ev["ts"].get<double>();
      tracks[track].push_back({ts, ts + ev["dur"].get<double>()});
    } else if (ph == "s" || ph == "t" || ph == "f") {
      if (!ev.contains("id")) bad.push_back("flow without id: " + ev.dump());
      chains[ev.value("id", -1L)] += ph;
      flow_points.push_back(&ev);
    } else {
      bad.push_back("phase Perfetto is not given here: " + ph);
    }
  }
  for (auto& [track, slices] : tracks) {
    // Sorted by start, longer first: each slice must end within every open slice it starts in.
    std::sort(slices.begin(), slices.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second > b.second;
    });
    std::vector<double> open_ends;
    for (const auto& [b, e] : slices) {
      while (!open_ends.empty() && open_ends.back() <= b) open_ends.pop_back();
      if (!open_ends.empty() && e > open_ends.back()) {
        bad.push_back(fmt::format("pid {} tid {}: slice [{}, {}] overlaps its parent ending {}",
                                  track.first, track.second, b, e, open_ends.back()));
        break;
      }
      open_ends.push_back(e);
    }
  }
  for (const auto& [id, chain] : chains) {
    if (chain.size() < 2 || chain.front() != 's' || chain.back() != 'f' ||
        chain.find_first_not_of('t', 1) != chain.size() - 1) {
      bad.push_back(fmt::format("flow {}: chain {}", id, chain));
    }
  }
  for (const json* p : flow_points) {
    const auto& slices = tracks[{(*p)["pid"].get<long>(), (*p)["tid"].get<long>()}];
    const double ts = (*p)["ts"].get<double>();
    const bool inside = std::any_of(slices.begin(), slices.end(), [ts](const auto& s) {
      return s.first <= ts && ts <= s.second;
    });
    if (!inside) bad.push_back("flow point outside any slice of its track: " + p->dump());
  }
  return bad;
}

TEST(ChromeTrace, MeetsPerfettosJsonRequirements) {
  auto p = analysis::testing::sim_params(4, 2);
  p.ranks[2].clock_skew_ns = 5'000'000;
  p.ranks[3].clock_skew_ns = 5'000'000;
  p.step_ranges = true;  // ProfilerStep ranges: the steps track is contiguous
  const auto s = analysis::testing::simulate(p);
  const Exported e = export_job(s);
  const std::vector<std::string> bad = perfetto_violations(e.doc);
  EXPECT_TRUE(bad.empty()) << bad.size() << " violations, first: " << bad.front();
  // The checker can fail: two slices that overlap without nesting on one track.
  json broken = e.doc;
  broken["traceEvents"].push_back(
      {{"ph", "X"}, {"pid", 0}, {"tid", 99}, {"ts", 10.0}, {"dur", 5.0}, {"name", "a"}});
  broken["traceEvents"].push_back(
      {{"ph", "X"}, {"pid", 0}, {"tid", 99}, {"ts", 12.0}, {"dur", 5.0}, {"name", "b"}});
  EXPECT_EQ(perfetto_violations(broken).size(), 1u);
}

TEST(ChromeTrace, StepWindowKeepsOnlyThoseSteps) {
  const auto s = analysis::testing::simulate(analysis::testing::sim_params(2, 1));
  StepWindow w;
  ASSERT_TRUE(StepWindow::parse("3:4", w));
  const Exported e = export_job(s, w);
  std::set<std::string> step_names;
  for (const json& ev : e.doc["traceEvents"]) {
    if (ev["ph"] == "X" && ev["cat"] == "user_annotation") step_names.insert(ev["name"]);
  }
  EXPECT_EQ(step_names, (std::set<std::string>{"ProfilerStep#3", "ProfilerStep#4"}));
  EXPECT_EQ(e.stats.calls, 2u * 2 * 4);  // 2 ranks x 2 steps x 4 all-reduces
  EXPECT_EQ(e.stats.flows, 2u * 4);
}

// write_file numbers steps as the report does (StepDetector::agree): with a rank stalling
// every 8th step, host-only, by 3 times a slow GPU's lateness, the staller's own call gaps
// repeat every 8 steps and alone it read "32 calls per step". Step 10 of every rank is then the
// same 4 all-reduces: 4 calls on every rank, and their 4 flow chains.
TEST(ChromeTrace, StepWindowUsesTheStepsTheRanksAgreeOn) {
  auto p = analysis::testing::sim_params(8, 2);
  p.steps = 41;
  p.host_only = true;
  p.jitter_ns = 20'000;
  p.ranks[2].compute_scale = 1.5;
  p.ranks[6].spike_every = 8;
  p.ranks[6].spike_ns = 19'500'000;  // 3 x (forward + backward) x 0.5
  const auto s = analysis::testing::simulate(p);
  StepWindow w;
  ASSERT_TRUE(StepWindow::parse("10", w));
  const std::string path =
      ::testing::TempDir() + "/agreed_steps_" + std::to_string(::getpid()) + ".json";
  ChromeTraceStats stats;
  std::string error;
  ASSERT_TRUE(ChromeTraceWriter::write_file(path, s.job, s.match, s.clocks, w, stats, error))
      << error;
  std::FILE* f = std::fopen(path.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string text;
  char buf[65536];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
  std::fclose(f);
  std::remove(path.c_str());
  const json doc = json::parse(text);
  std::map<int, int> calls;  // per rank: NCCL calls exported
  for (const json& ev : doc["traceEvents"]) {
    if (ev["ph"] == "X" && ev.value("cat", "") == "cpu_op") ++calls[ev["pid"].get<int>()];
  }
  for (int r = 0; r < 8; ++r) EXPECT_EQ(calls[r], 4) << "rank " << r;
  EXPECT_EQ(stats.calls, 8u * 4);
  EXPECT_EQ(stats.flows, 4u);
  EXPECT_EQ(stats.steps_in_job, 41u);
}

TEST(ChromeTrace, StepWindowParsing) {
  StepWindow w;
  EXPECT_TRUE(StepWindow::parse("2:5", w));
  EXPECT_EQ(w.first, 2u);
  EXPECT_EQ(w.last, 5u);
  EXPECT_TRUE(StepWindow::parse("7:", w));
  EXPECT_EQ(w.first, 7u);
  EXPECT_EQ(w.last, 0u);
  EXPECT_TRUE(StepWindow::parse("4", w));
  EXPECT_EQ(w.last, 4u);
  for (const char* bad : {"", ":", "0:3", "5:2", "a:b", "-1:2", "3:x", "99999999999:"}) {
    EXPECT_FALSE(StepWindow::parse(bad, w)) << bad;
  }
}

// A demo's timeline says it is simulated at its top, in the JSON report's key and words; a real
// job's has no such key.
TEST(ChromeTrace, ADemoRunSaysSimulatedAtTheTop) {
  const auto s = analysis::testing::simulate(analysis::testing::sim_params(2, 1));
  const std::string line = "SIMULATED job (ncclwatch demo sawtooth): \"quoted\" and \\ kept";
  const Exported demo = export_job(s, {}, line);
  EXPECT_EQ(demo.doc.value("simulated", ""), line);
  EXPECT_EQ(demo.doc["traceEvents"].size(), export_job(s).doc["traceEvents"].size());
  EXPECT_FALSE(export_job(s).doc.contains("simulated"));
}

TEST(ChromeTrace, HostileNamesStayValidJson) {
  auto s = analysis::testing::simulate(analysis::testing::sim_params(2, 1));
  s.job.ranks[0].names[1] = std::string("bad\"name\\\xff\x01");
  s.job.ranks[0].info.host = "host\"\n";
  const Exported e = export_job(s);
  EXPECT_TRUE(e.doc.is_object());
}

}  // namespace
}  // namespace ncclwatch::exporter
