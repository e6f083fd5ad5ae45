// `ncclwatch exporter [--job ID] [--dir DIR] [--listen ADDR:PORT] ...`: one per node, serves this
// node's ranks as Prometheus metrics at /metrics (docs/metrics.md). A thread polls the segments
// and traces every --interval seconds; scrapes only read the last poll's snapshot.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include <prometheus/exposer.h>
#include <prometheus/text_serializer.h>

#include "command.h"
#include "live/listen_address.h"
#include "live/metrics_collectable.h"
#include "live/node_metrics_reader.h"

namespace {

using ncclwatch::live::HistogramScope;
using ncclwatch::tools::say;

struct ExporterArgs {
  ncclwatch::live::ExporterOptions options;
  // Loopback by default: the metrics name hosts, jobs and ranks; exposing them to the whole
  // network is the operator's decision (--listen 0.0.0.0:9717), not ours.
  std::string listen = "127.0.0.1:9717";
  double interval_s = 1;
  std::string histograms = "rank";
  bool once = false;
};

std::atomic<bool> g_stop{false};
void on_signal(int) {
  g_stop.store(true);
}

ncclwatch::tools::Command exporter_command{
    "exporter", [](CLI::App& app, int& exit_code) {
      auto args = std::make_shared<ExporterArgs>();
      CLI::App* sub = app.add_subcommand(
          "exporter",
          "Serve this node's ranks as Prometheus metrics (/metrics): why the GPUs wait, live");
      sub->add_option("--job", args->options.job, "Only this job (default: every job found)");
      sub->add_option("--dir", args->options.dir,
                      "Also read this host's trace files in DIR (ranks that already finished)");
      sub->add_option("--host", args->options.host,
                      "This node's host name as the shim records it (default: hostname; "
                      "NCCLWATCH_HOST overrides it in the shim)");
      sub->add_option("--listen", args->listen,
                      "ADDR:PORT to serve on (default 127.0.0.1:9717, loopback only; IPv6 as "
                      "[::1]:9717; port 0 picks a free one, printed on stdout)")
          ->check(CLI::Validator(
              [](std::string& text) {
                std::string error;
                return ncclwatch::live::parse_listen_address(text, error) ? std::string() : error;
              },
              "ADDR:PORT"));
      sub->add_option("--interval", args->interval_s, "Seconds between polls (default 1)")
          ->check(CLI::Range(0.05, 3600.0));
      sub->add_option("--histograms", args->histograms,
                      "Collective-time histograms per rank, per node (8x fewer series), or off")
          ->check(CLI::IsMember({"rank", "node", "off"}));
      sub->add_option("--forget-after", args->options.forget_after_s,
                      "Seconds after which a finished rank's series disappear (default 600)")
          ->check(CLI::Range(0.0, 1e9));
      sub->add_flag("--once", args->once,
                    "Poll once (twice, 1 s apart, for the GPU timeline), print the exposition "
                    "text on stdout and exit");
      sub->callback([args, &exit_code] {
        const HistogramScope scope = args->histograms == "node"  ? HistogramScope::kNode
                                     : args->histograms == "off" ? HistogramScope::kOff
                                                                 : HistogramScope::kRank;
        ncclwatch::live::NodeMetricsReader reader(args->options);
        auto collectable = std::make_shared<ncclwatch::live::MetricsCollectable>(scope);
        if (args->once) {
          reader.poll();
          std::this_thread::sleep_for(std::chrono::seconds(1));
          auto snap = reader.poll();
          for (const auto& n : snap.notes) say("{}", n);
          prometheus::TextSerializer().Serialize(
              std::cout, ncclwatch::live::MetricsCollectable::families(snap, scope));
          std::cout.flush();
          if (!std::cout) say("cannot write the metrics to standard output");
          exit_code = std::cout ? ncclwatch::tools::kExitOk : ncclwatch::tools::kExitError;
          return;
        }
        // Said in our words first: the server's own error for a busy port is "null context
        // when constructing CivetServer".
        std::string error;
        const auto address = ncclwatch::live::parse_listen_address(args->listen, error);
        if (address) error = ncclwatch::live::try_bind(*address);
        if (!error.empty()) {
          say("{}", error);
          exit_code = ncclwatch::tools::kExitError;
          return;
        }
        std::unique_ptr<prometheus::Exposer> exposer;
        try {
          exposer = std::make_unique<prometheus::Exposer>(args->listen, 2);
        } catch (const std::exception& e) {
          say("cannot listen on {}: {}", args->listen, e.what());
          exit_code = ncclwatch::tools::kExitError;
          return;
        }
        exposer->RegisterCollectable(collectable);
        const auto ports = exposer->GetListeningPorts();
        const std::string addr = args->listen.substr(0, args->listen.rfind(':'));
        // On stdout (scripts read the port from it), in the words of every other message.
        std::printf("ncclwatch: serving http://%s:%d/metrics\n", addr.c_str(),
                    ports.empty() ? 0 : ports.front());
        std::fflush(stdout);
        struct sigaction sa {};
        sa.sa_handler = on_signal;
        sigaction(SIGINT, &sa, nullptr);
        sigaction(SIGTERM, &sa, nullptr);
        std::set<std::string> said;  // skipped inputs are said once, not every second
        while (!g_stop.load()) {
          auto snap = reader.poll();
          for (const auto& n : snap.notes) {
            if (said.size() < 10000 && said.insert(n).second) say("{}", n);
          }
          collectable->publish(std::move(snap));
          const auto until =
              std::chrono::steady_clock::now() + std::chrono::duration<double>(args->interval_s);
          while (!g_stop.load() && std::chrono::steady_clock::now() < until)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        exit_code = 0;
      });
    }};

}  // namespace
