#include "live/metrics_collectable.h"

#include <deque>
#include <iterator>
#include <map>
#include <tuple>

namespace ncclwatch::live {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

std::vector<ClientMetric::Label> rank_labels(const RankMetrics& m) {
  return {{"job", m.job},
          {"host", m.host},
          {"rank", m.rank >= 0 ? std::to_string(m.rank) : "unknown"},
          {"local_rank", m.local_rank >= 0 ? std::to_string(m.local_rank) : "unknown"}};
}

const char* mode_name(uint32_t mode) {
  switch (mode) {
    case 0:
      return "host";
    case 1:
      return "full";
    case 2:
      return "lite";
    default:
      return "unknown";
  }
}

// The families in the order they are added. A deque: a reference add() returned stays valid
// while more families are added (a vector's would dangle once it grows).
class Families {
 public:
  MetricFamily& add(const char* name, const char* help, MetricType type) {
    families_.push_back({name, help, type, {}});
    return families_.back();
  }
  std::vector<MetricFamily> take() {
    return {std::make_move_iterator(families_.begin()), std::make_move_iterator(families_.end())};
  }

 private:
  std::deque<MetricFamily> families_;
};

ClientMetric sample(std::vector<ClientMetric::Label> labels, MetricType type, double value) {
  ClientMetric c;
  c.label = std::move(labels);
  if (type == MetricType::Counter)
    c.counter.value = value;
  else
    c.gauge.value = value;
  return c;
}

ClientMetric histogram(std::vector<ClientMetric::Label> labels, const GpuTimeHistogram& h) {
  ClientMetric c;
  c.label = std::move(labels);
  c.histogram.sample_count = h.count;
  c.histogram.sample_sum = h.sum_s;
  uint64_t cumulative = 0;
  for (std::size_t i = 0; i < kGpuTimeBuckets.size(); ++i) {
    cumulative += h.buckets[i];
    c.histogram.bucket.push_back({cumulative, kGpuTimeBuckets[i]});
  }
  c.histogram.bucket.push_back({h.count, std::numeric_limits<double>::infinity()});
  return c;
}

constexpr auto kCounter = MetricType::Counter;
constexpr auto kGauge = MetricType::Gauge;

// Per rank, one series each.
struct PerRank {
  const char* name;
  const char* help;
  MetricType type;
  double (*value)(const RankMetrics&);
  bool (*present)(const RankMetrics&);
};
bool always(const RankMetrics&) {
  return true;
}
bool gpu_timeline(const RankMetrics& m) {
  return m.gpu_busy_s > 0 || m.gpu_idle_s > 0;
}
bool has_steps(const RankMetrics& m) {
  return m.steps > 0;
}
const PerRank kPerRank[] = {
    {"ncclwatch_rank_live", "1 while the rank's process runs on this node, 0 once it ended", kGauge,
     [](const RankMetrics& m) { return m.live ? 1.0 : 0.0; }, always},
    {"ncclwatch_node_matched_collectives_total",
     "Collectives matched with this node's other ranks (the basis of peer wait and transfer)",
     kCounter, [](const RankMetrics& m) { return double(m.matched_collectives); }, always},
    {"ncclwatch_peer_wait_seconds_total",
     "NCCL kernel time beyond the fastest of this node's ranks in the same collective: waiting "
     "for a late peer",
     kCounter, [](const RankMetrics& m) { return m.peer_wait_s; }, always},
    {"ncclwatch_transfer_seconds_total",
     "NCCL kernel time of the fastest of this node's ranks in the same collective: transfer",
     kCounter, [](const RankMetrics& m) { return m.transfer_s; }, always},
    {"ncclwatch_lateness_seconds_total",
     "How much later this rank's NCCL kernel started than the earliest of this node's ranks in "
     "the same collective (a straggler's grows fastest)",
     kCounter, [](const RankMetrics& m) { return m.lateness_s; }, always},
    {"ncclwatch_gpu_busy_seconds_total", "GPU time with any kernel, memcpy or memset running",
     kCounter, [](const RankMetrics& m) { return m.gpu_busy_s; }, gpu_timeline},
    {"ncclwatch_gpu_compute_seconds_total", "GPU time with a non-NCCL kernel running", kCounter,
     [](const RankMetrics& m) { return m.gpu_compute_s; }, gpu_timeline},
    {"ncclwatch_gpu_exposed_comm_seconds_total",
     "GPU time with an NCCL kernel running and no compute kernel hiding it", kCounter,
     [](const RankMetrics& m) { return m.gpu_exposed_comm_s; }, gpu_timeline},
    {"ncclwatch_gpu_idle_seconds_total", "GPU time with nothing running", kCounter,
     [](const RankMetrics& m) { return m.gpu_idle_s; }, gpu_timeline},
    {"ncclwatch_steps_total", "Training steps completed (NVTX step ranges)", kCounter,
     [](const RankMetrics& m) { return double(m.steps); }, has_steps},
    {"ncclwatch_step_seconds_total", "Time in training steps (NVTX step ranges)", kCounter,
     [](const RankMetrics& m) { return m.step_s; }, has_steps},
    {"ncclwatch_last_step_seconds", "Duration of the last completed training step", kGauge,
     [](const RankMetrics& m) { return m.last_step_s; }, has_steps},
    {"ncclwatch_seconds_since_last_collective",
     "Seconds since the rank's last collective completed (on the GPU when GPU-timed)", kGauge,
     [](const RankMetrics& m) { return m.seconds_since_last_collective; },
     [](const RankMetrics& m) { return m.seconds_since_last_collective >= 0; }},
    {"ncclwatch_calls_in_flight", "NCCL calls the rank's threads are inside now", kGauge,
     [](const RankMetrics& m) { return double(m.calls_in_flight); }, always},
    {"ncclwatch_oldest_call_in_flight_seconds",
     "Age of the oldest NCCL call the rank is inside now (0 when none)", kGauge,
     [](const RankMetrics& m) { return m.oldest_call_in_flight_s; }, always},
    {"ncclwatch_oldest_nccl_kernel_pending_seconds",
     "Age of the oldest NCCL kernel launched and not reported complete (full mode; normally "
     "about a CUPTI flush period): a collective stuck on the GPU while the host moved on",
     kGauge, [](const RankMetrics& m) { return m.oldest_nccl_kernel_pending_s; },
     [](const RankMetrics& m) { return m.has_kernel_timeline; }},
    {"ncclwatch_records_total", "Trace records the exporter read", kCounter,
     [](const RankMetrics& m) { return double(m.records); }, always},
    {"ncclwatch_invalid_records_total", "Trace records the exporter refused as invalid", kCounter,
     [](const RankMetrics& m) { return double(m.invalid_records); }, always},
    {"ncclwatch_in_flight_overflow_total",
     "Threads of the rank that found no in-flight slot (their calls have no entry evidence)",
     kCounter, [](const RankMetrics& m) { return double(m.in_flight_overflow); }, always},
};

void add_per_rank(Families& f, const NodeSnapshot& snap) {
  for (const PerRank& p : kPerRank) {
    MetricFamily& fam = f.add(p.name, p.help, p.type);
    for (const RankMetrics& m : snap.ranks)
      if (p.present(m)) fam.metric.push_back(sample(rank_labels(m), p.type, p.value(m)));
  }
}

// Per rank, a series per value of one more label (mode, source, kind, op).
void add_labelled(Families& f, const NodeSnapshot& snap) {
  MetricFamily& mode = f.add("ncclwatch_shim_mode",
                             "The shim's mode on this rank (label mode: full, lite, host)", kGauge);
  MetricFamily& dropped =
      f.add("ncclwatch_dropped_records_total",
            "Records lost before reaching the trace: source ring (the shim's ring was full) or "
            "cupti (CUPTI's own buffers)",
            kCounter);
  MetricFamily& lost =
      f.add("ncclwatch_lost_total",
            "What the shim counted instead of recording, by kind (lite_untimed calls, names_lost, "
            "kernels_filtered, cupti_unknown records, ring_holes, in_flight_overflow threads, "
            "ring_overwritten records); a kind gets a series once it is non-zero",
            kCounter);
  MetricFamily& calls = f.add("ncclwatch_nccl_calls_total", "NCCL calls returned, by op", kCounter);
  MetricFamily& bytes =
      f.add("ncclwatch_nccl_bytes_total", "Bytes passed to NCCL calls, by op", kCounter);
  for (const RankMetrics& m : snap.ranks) {
    auto labels = rank_labels(m);
    auto with = [&](const char* k, std::string v) {
      auto l = labels;
      l.push_back({k, std::move(v)});
      return l;
    };
    mode.metric.push_back(sample(with("mode", mode_name(m.mode)), kGauge, 1));
    dropped.metric.push_back(sample(with("source", "ring"), kCounter, double(m.dropped)));
    dropped.metric.push_back(sample(with("source", "cupti"), kCounter, double(m.cupti_dropped)));
    std::size_t kind = 0;
    for (const auto& field : format::kLossFields) {
      const uint64_t n = m.lost[kind++];
      if (n != 0) lost.metric.push_back(sample(with("kind", field.key), kCounter, double(n)));
    }
    for (std::size_t op = 0; op < kMetricOps; ++op) {
      if (m.calls[op] == 0) continue;  // ops this rank never called get no series
      const char* name = metric_op_name(static_cast<MetricOp>(op));
      calls.metric.push_back(sample(with("op", name), kCounter, double(m.calls[op])));
      bytes.metric.push_back(sample(with("op", name), kCounter, double(m.bytes[op])));
    }
  }
}

using HistogramSet = std::array<std::array<GpuTimeHistogram, kSizeClasses>, kHistogramOps>;
using HistogramKey = std::tuple<std::string, std::string, int32_t, int32_t>;

// The ranks' histograms by (job, host, rank, local rank), or summed per (job, host) at node scope.
std::map<HistogramKey, HistogramSet> histogram_sets(const NodeSnapshot& snap,
                                                    HistogramScope histograms) {
  std::map<HistogramKey, HistogramSet> sets;
  for (const RankMetrics& m : snap.ranks) {
    auto key = histograms == HistogramScope::kNode
                   ? std::tuple(m.job, m.host, 0, 0)
                   : std::tuple(m.job, m.host, m.rank, m.local_rank);
    auto& set = sets[key];
    for (std::size_t op = 0; op < kHistogramOps; ++op)
      for (std::size_t s = 0; s < kSizeClasses; ++s) {
        const GpuTimeHistogram& from = m.gpu_time[op][s];
        GpuTimeHistogram& to = set[op][s];
        for (std::size_t b = 0; b < kBucketSlots; ++b) to.buckets[b] += from.buckets[b];
        to.count += from.count;
        to.sum_s += from.sum_s;
      }
  }
  return sets;
}

void add_histograms(Families& f, const NodeSnapshot& snap, HistogramScope histograms) {
  MetricFamily& hist = f.add("ncclwatch_collective_gpu_seconds",
                             "GPU time of each collective (NCCL kernel or CUDA-event interval), by "
                             "op and size class (bytes this rank passed)",
                             MetricType::Histogram);
  if (histograms == HistogramScope::kOff) return;
  for (const auto& [key, set] : histogram_sets(snap, histograms)) {
    const auto& [job, host, rank, local_rank] = key;
    std::vector<ClientMetric::Label> labels = {{"job", job}, {"host", host}};
    if (histograms == HistogramScope::kRank) {
      labels.push_back({"rank", rank >= 0 ? std::to_string(rank) : "unknown"});
      labels.push_back({"local_rank", local_rank >= 0 ? std::to_string(local_rank) : "unknown"});
    }
    for (std::size_t op = 0; op < kHistogramOps; ++op)
      for (std::size_t s = 0; s < kSizeClasses; ++s) {
        if (set[op][s].count == 0) continue;
        auto l = labels;
        l.push_back({"op", metric_op_name(static_cast<MetricOp>(op))});
        l.push_back({"size", size_class_name(s)});
        hist.metric.push_back(histogram(std::move(l), set[op][s]));
      }
  }
}

// The exporter itself.
void add_exporter(Families& f, const NodeSnapshot& snap) {
  auto self = [&](const char* name, const char* help, MetricType type, double v) {
    f.add(name, help, type).metric.push_back(sample({}, type, v));
  };
  self("ncclwatch_exporter_ranks", "Ranks this exporter tracks", kGauge, double(snap.ranks.size()));
  self("ncclwatch_exporter_polls_total", "Polls of this node's segments and traces", kCounter,
       double(snap.polls));
  self("ncclwatch_exporter_skipped_inputs", "Segments or trace files skipped on the last poll",
       kGauge, double(snap.notes.size()));
  self("ncclwatch_exporter_late_gpu_records_total",
       "GPU intervals that arrived after their window was swept (counted only in part)", kCounter,
       double(snap.late_gpu_intervals));
  self("ncclwatch_exporter_unlinked_records_total",
       "Launch links, calls or GPU intervals forgotten before their partner arrived", kCounter,
       double(snap.unlinked_records));
  MetricFamily& node = f.add("ncclwatch_exporter_node_collectives_total",
                             "Collectives decided by the node matcher (result: matched, partial: "
                             "without every local member, unmatched: one member only)",
                             kCounter);
  node.metric.push_back(sample({{"result", "matched"}}, kCounter, double(snap.node_matched)));
  node.metric.push_back(sample({{"result", "partial"}}, kCounter, double(snap.node_partial)));
  node.metric.push_back(sample({{"result", "unmatched"}}, kCounter, double(snap.node_unmatched)));
}

}  // namespace

MetricsCollectable::MetricsCollectable(HistogramScope histograms) : histograms_(histograms) {}

void MetricsCollectable::publish(NodeSnapshot snapshot) {
  std::lock_guard lock(mutex_);
  snapshot_ = std::move(snapshot);
}

std::vector<MetricFamily> MetricsCollectable::Collect() const {
  std::lock_guard lock(mutex_);
  return families(snapshot_, histograms_);
}

std::vector<MetricFamily> MetricsCollectable::families(const NodeSnapshot& snap,
                                                       HistogramScope histograms) {
  Families f;
  add_per_rank(f, snap);
  add_labelled(f, snap);
  add_histograms(f, snap, histograms);
  add_exporter(f, snap);
  return f.take();
}

}  // namespace ncclwatch::live
