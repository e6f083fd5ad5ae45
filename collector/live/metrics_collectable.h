// The exporter's /metrics: a prometheus-cpp Collectable that turns the latest NodeSnapshot into
// metric families when Prometheus scrapes. The snapshot is published by the polling thread; a
// scrape never reads files or segments itself, so a slow file system cannot stall a scrape and
// a burst of scrapes cannot load the node. Names, labels and their bounds: docs/metrics.md.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "live/node_metrics_reader.h"

namespace ncclwatch::live {

// Where the collective-time histograms are kept: per rank (default), per node (summed over the
// node's ranks: 8x fewer series for fleets of thousands of ranks), or not at all.
enum class HistogramScope { kRank, kNode, kOff };

class MetricsCollectable : public prometheus::Collectable {
 public:
  explicit MetricsCollectable(HistogramScope histograms = HistogramScope::kRank);

  void publish(NodeSnapshot snapshot);
  std::vector<prometheus::MetricFamily> Collect() const override;

  // The families of `snapshot` (what Collect() returns for it): every family is present, with no
  // series when nothing feeds it yet, so the names are visible from the first scrape.
  static std::vector<prometheus::MetricFamily> families(const NodeSnapshot& snapshot,
                                                        HistogramScope histograms);

 private:
  HistogramScope histograms_;
  mutable std::mutex mutex_;
  NodeSnapshot snapshot_;
};

}  // namespace ncclwatch::live
