// `ncclwatch exporter` cost per node (label bench): R ranks each writing M records a minute
// (default 8 x 1 M, a full-mode job with ~15 records per collective: call, launch link, NCCL
// kernel, 6 compute kernels with their launch records), appended in 60 one-second slices to trace
// files while a NodeMetricsReader polls after each slice, as the exporter does every second. It
// prints the reader's CPU time per minute of job (= the share of one core), its peak memory
// growth, and the cost of one scrape; then the series count of the label scheme at 4096 ranks
// (512 nodes x 8) for a DDP-like and an FSDP-like job, per rank and per node histograms.
//
//   ncclwatch_exporter_bench [--ranks R] [--records-per-min M] [--minutes N]
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <prometheus/text_serializer.h>

#include "live/metrics_collectable.h"
#include "live/node_metrics_reader.h"
#include "ncclwatch/format.h"

namespace {

namespace fs = std::filesystem;
using namespace ncclwatch;

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

long vm_kib(const char* field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(field, 0) == 0) return std::stol(line.substr(std::strlen(field)));
  return 0;
}

format::Record rec(format::RecordKind kind) {
  format::Record r{};
  r.prefix.kind = kind;
  return r;
}

// One rank's records for `n` records' worth of iterations starting at collective `seq`.
void iteration_records(std::vector<format::Record>& out, std::size_t n, uint32_t& seq, int64_t& t,
                       uint32_t& corr, int rank) {
  constexpr uint64_t kComm = 0xC0FFEE;
  while (out.size() < n) {
    for (int k = 0; k < 6; ++k) {
      auto l = rec(format::RecordKind::kLaunch);
      l.launch.t_enter_ns = t;
      l.launch.t_exit_ns = t + 2000;
      l.launch.correlation = ++corr;
      out.push_back(l);
      auto kr = rec(format::RecordKind::kKernel);
      kr.kernel.start_ns = t + 5000;
      kr.kernel.end_ns = t + 5000 + 400'000;
      kr.kernel.correlation = corr;
      out.push_back(kr);
      t += 400'000;
    }
    auto link = rec(format::RecordKind::kKernelLink);
    link.link.t_ns = t;
    link.link.comm_id = kComm;
    link.link.correlation = ++corr;
    link.link.seq = seq;
    out.push_back(link);
    auto call = rec(format::RecordKind::kCall);
    call.call.prefix.u8a = static_cast<uint8_t>(format::Func::kAllReduce);
    call.call.t_enter_ns = t;
    call.call.t_exit_ns = t + 10'000;
    call.call.comm_id = kComm;
    call.call.count = 25 << 18;
    call.call.datatype = 7;
    call.call.seq = seq++;
    call.call.peer = -1;
    out.push_back(call);
    auto k = rec(format::RecordKind::kKernel);
    k.prefix.flags = format::kKernelIsNccl;
    k.kernel.start_ns = t + 20'000 + rank * 1000;
    k.kernel.end_ns = t + 1'500'000;
    k.kernel.correlation = corr;
    out.push_back(k);
    t += 1'500'000;
  }
}

std::size_t series_of(const std::vector<prometheus::MetricFamily>& families) {
  std::size_t n = 0;
  for (const auto& f : families)
    n += f.type == prometheus::MetricType::Histogram ? f.metric.size() * (live::kBucketSlots + 2)
                                                     : f.metric.size();
  return n;
}

// Series at `ranks` ranks, 8 per node, each rank calling `ops` in the given size classes.
std::size_t series_at(int ranks, const std::vector<std::pair<live::MetricOp, int>>& op_sizes,
                      live::HistogramScope scope) {
  live::NodeSnapshot all;
  for (int r = 0; r < ranks; ++r) {
    live::RankMetrics m;
    m.job = "job";
    m.host = "node" + std::to_string(r / 8);
    m.rank = r;
    m.local_rank = r % 8;
    m.gpu_busy_s = 1;
    m.has_kernel_timeline = true;
    m.steps = 1;
    m.seconds_since_last_collective = 1;
    for (const auto& [op, size] : op_sizes) {
      m.calls[static_cast<std::size_t>(op)] = 1;
      m.gpu_time[static_cast<std::size_t>(op)][size].count = 1;
    }
    all.ranks.push_back(std::move(m));
  }
  // The exporter's own 7 series once per node.
  live::NodeSnapshot none;
  const std::size_t self = series_of(live::MetricsCollectable::families(none, scope));
  return series_of(live::MetricsCollectable::families(all, scope)) + (ranks / 8 - 1) * self;
}

}  // namespace

int main(int argc, char** argv) {
  int ranks = 8, minutes = 1;
  long per_min = 1'000'000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--ranks")
      ranks = std::atoi(argv[i + 1]);
    else if (a == "--records-per-min")
      per_min = std::atol(argv[i + 1]);
    else if (a == "--minutes")
      minutes = std::atoi(argv[i + 1]);
  }
  const fs::path dir =
      fs::temp_directory_path() / ("ncclwatch_exporter_bench." + std::to_string(getpid()));
  fs::create_directories(dir);
  std::vector<std::string> paths;
  std::vector<std::FILE*> files;
  for (int r = 0; r < ranks; ++r) {
    paths.push_back(
        (dir / ("ncclwatch.benchhost." + std::to_string(1000 + r) + ".trace")).string());
    std::FILE* f = std::fopen(paths.back().c_str(), "wb");
    format::TraceHeader h = format::trace_header(format::kTraceStateOpen, {});
    std::snprintf(h.process.job, sizeof h.process.job, "bench");
    std::snprintf(h.process.host, sizeof h.process.host, "benchhost");
    h.process.pid = 1000 + r;
    h.process.rank = r;
    h.process.local_rank = r;
    h.mode = 1;
    std::fwrite(&h, sizeof h, 1, f);
    auto comm = rec(format::RecordKind::kComm);
    comm.comm.prefix.u8a = static_cast<uint8_t>(format::Func::kCommInitRank);
    comm.comm.t_enter_ns = 1;
    comm.comm.t_exit_ns = 2;
    comm.comm.comm_id = 0xC0FFEE;
    comm.comm.rank = r;
    comm.comm.nranks = ranks;
    std::fwrite(&comm, sizeof comm, 1, f);
    std::fflush(f);
    files.push_back(f);
  }
  live::ExporterOptions o;
  o.job = "bench";
  o.dir = dir.string();
  o.host = "benchhost";
  o.shm_dir = (dir / "no-shm").string();
  live::NodeMetricsReader reader(o);
  reader.poll();
  const long rss0 = vm_kib("VmRSS:");
  std::vector<uint32_t> seq(ranks, 0), corr(ranks, 0);
  std::vector<int64_t> t(ranks, 1'000'000'000);
  std::vector<format::Record> slice;
  double cpu = 0;
  uint64_t records = 0;
  const int slices = 60 * minutes;
  for (int s = 0; s < slices; ++s) {
    for (int r = 0; r < ranks; ++r) {  // the ranks' drain threads (not timed)
      slice.clear();
      iteration_records(slice, static_cast<std::size_t>(per_min / 60), seq[r], t[r], corr[r], r);
      std::fwrite(slice.data(), sizeof(format::Record), slice.size(), files[r]);
      std::fflush(files[r]);
      records += slice.size();
    }
    const double c0 = cpu_seconds();
    reader.poll();
    cpu += cpu_seconds() - c0;
  }
  const live::NodeSnapshot snap = reader.poll();
  const long hwm = vm_kib("VmHWM:");
  // One scrape: families + text, for the node's ranks.
  const auto s0 = std::chrono::steady_clock::now();
  std::ostringstream text;
  constexpr int kScrapes = 100;
  for (int i = 0; i < kScrapes; ++i) {
    text.str("");
    prometheus::TextSerializer().Serialize(
        text, live::MetricsCollectable::families(snap, live::HistogramScope::kRank));
  }
  const double scrape_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s0).count() /
      kScrapes;
  for (auto* f : files) std::fclose(f);
  fs::remove_all(dir);

  uint64_t calls = 0;
  for (const auto& m : snap.ranks) calls += m.calls[0];
  std::printf(
      "exporter, %d ranks x %ld records/min, %d min (%llu records, %llu all-reduces seen):\n",
      ranks, per_min, minutes, static_cast<unsigned long long>(records),
      static_cast<unsigned long long>(calls));
  std::printf("  reader CPU %.2f s per minute of job = %.1f%% of one core\n", cpu / minutes,
              100 * cpu / (60.0 * minutes));
  std::printf("  memory: RSS after the first poll %ld KiB, peak %ld KiB (+%ld KiB while reading)\n",
              rss0, hwm, hwm - rss0);
  std::printf("  one scrape of %zu ranks: %.2f ms, %zu bytes of text\n", snap.ranks.size(),
              scrape_ms, text.str().size());
  using live::MetricOp;
  const std::vector<std::pair<MetricOp, int>> ddp = {
      {MetricOp::kAllReduce, 2}, {MetricOp::kAllReduce, 3}, {MetricOp::kBroadcast, 3}};
  const std::vector<std::pair<MetricOp, int>> fsdp = {
      {MetricOp::kAllGather, 2},     {MetricOp::kAllGather, 3}, {MetricOp::kReduceScatter, 2},
      {MetricOp::kReduceScatter, 3}, {MetricOp::kAllReduce, 0}, {MetricOp::kAllReduce, 1},
      {MetricOp::kBroadcast, 2},     {MetricOp::kBroadcast, 3}};
  std::vector<std::pair<MetricOp, int>> every;
  for (std::size_t op = 0; op < live::kHistogramOps; ++op)
    for (int sz = 0; sz < 4; ++sz) every.push_back({static_cast<MetricOp>(op), sz});
  every.push_back({MetricOp::kSend, 0});
  every.push_back({MetricOp::kRecv, 0});
  std::printf("series at 4096 ranks (512 nodes x 8), per rank / node histograms:\n");
  for (const auto& [name, shape] :
       {std::pair{"DDP", ddp}, std::pair{"FSDP", fsdp}, std::pair{"every op x size", every}}) {
    std::printf("  %-16s %9zu / %9zu\n", name, series_at(4096, shape, live::HistogramScope::kRank),
                series_at(4096, shape, live::HistogramScope::kNode));
  }
  return calls > 0 ? 0 : 1;
}
