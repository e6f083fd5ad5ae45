// The first line of `ncclwatch diff`: how much the step changed and which parts of it changed
// beyond the noise, largest first, each with the evidence that names its cause (a straggler
// that appeared, a bus bandwidth that dropped, the kernels that grew, what changed underneath),
// then what did not change but now weighs more (the bf16 case: compute shrank, the data-loader
// stall did not), and the one-sided findings not yet named.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "analysis/units.h"
#include "diff/comparisons.h"

namespace ncclwatch::diff {
namespace {

constexpr std::size_t kMaxCauses = 3;

std::string t(double us) {
  return analysis::human_time(us * 1e3);
}
std::string dt(double us) {
  return analysis::signed_time(us * 1e3);
}
std::string arrow(const Compared& c) {
  return fmt::format("{} → {}", t(c.base->value), t(c.now->value));
}

std::string cause_words(const std::string& cause) {
  if (cause == "gpu-slow") return "slow GPU";
  if (cause == "host-stall") return "host-side stall";
  if (cause == "network") return "network";
  return "cause unknown";
}

std::string prose(std::string op) {
  std::replace(op.begin(), op.end(), '_', '-');
  return op;
}

// One-sided findings in the direction of `growing` (NEW only when the part grew).
std::vector<const FindingChange*> sided(const DiffResult& r, bool growing) {
  std::vector<const FindingChange*> out;
  for (const auto* list : {&r.stragglers, &r.slow_links}) {
    for (const FindingChange& f : *list) {
      if (f.flagged && f.where == (growing ? "NEW only" : "BASE only")) out.push_back(&f);
    }
  }
  return out;
}

std::string finding_text(const FindingChange& f) {
  const std::string what = f.kind == "slow link" ? "slow link at " + f.who : f.who + " late";
  return fmt::format("{} in {}{}", what, f.where,
                     f.kind == "slow link" ? "" : ": " + cause_words(f.cause));
}

class Verdict {
 public:
  explicit Verdict(const DiffResult& r) : r_(r) {}

  std::string line() {
    if (!r_.comparable_steps) return no_step_time();
    const Compared& s = r_.step;
    std::string out;
    if (s.significant) {
      out = fmt::format("step time {:+.0f} % ({} → {})", s.delta_pct(), t(s.base->value),
                        t(s.now->value));
      if (r_.comm_differs && r_.compute_differs) {
        out +=
            " between different jobs (their communication and compute kernels differ): "
            "the parts are side by side, not a cause";
      }
      out += causes(s.delta() > 0);
    } else {
      out = fmt::format(
          "no significant change: step time {} → {} ({:+.1f} %, within the runs' noise of ±{})",
          t(s.base->value), t(s.now->value), s.delta_pct(), t(s.threshold));
    }
    append(weighs_more());
    append(unnamed_findings(s.significant));
    if (r_.pattern_flagged) append(fmt::format("pattern {} → {}", r_.pattern_base, r_.pattern_new));
    return out + tail_;
  }

 private:
  void append(const std::string& phrase) {
    if (!phrase.empty()) tail_ += "; " + phrase;
  }

  std::string no_step_time() {
    std::string out = "step times not compared: ";
    out += !r_.step.base ? "BASE" : "NEW";
    out += " has no step breakdown";
    append(unnamed_findings(false));
    return out + tail_;
  }

  std::string causes(bool growing) {
    std::vector<const Compared*> parts;
    for (const Compared& p : r_.parts) {
      if (p.significant && (p.delta() > 0) == growing) parts.push_back(&p);
    }
    std::stable_sort(parts.begin(), parts.end(), [](const Compared* a, const Compared* b) {
      return std::fabs(a->delta()) > std::fabs(b->delta());
    });
    if (parts.empty()) return ": no single part of the step changed beyond the noise";
    std::string out;
    for (std::size_t i = 0; i < parts.size() && i < kMaxCauses; ++i) {
      out += (i == 0 ? ": " : "; ") + phrase(*parts[i]);
    }
    const Compared* compute = part("compute");
    if (growing && compute && !compute->significant && !r_.compute_differs) {
      out += ", compute unchanged";
    }
    return out;
  }

  const Compared* part(const std::string& key) const {
    for (const Compared& p : r_.parts) {
      if (p.key == key) return &p;
    }
    return nullptr;
  }

  std::string phrase(const Compared& p) {
    const bool up = p.delta() > 0;
    const std::string d = dt(p.delta()) + "/step";
    if (p.key == "compute") return "compute " + d + compute_evidence(up);
    if (p.key == "exposed_wait") return "waiting for a late peer " + d + wait_evidence(up);
    if (p.key == "exposed_transfer") return "exposed communication " + d + transfer_evidence(up);
    if (p.key == "memcpy") return "memcpy/memset " + d;
    if (p.key == "idle_step_boundary")
      return "GPU idle at the step boundary " + d +
             " (host-side: data loading, syncs, checkpoints)";
    if (p.key == "idle_before_comm")
      return "GPU idle before collectives " + d + " (the host launches them late)";
    if (p.key == "idle_other")
      return "GPU idle between kernels " + d + " (launch-bound: small kernels, host overhead)";
    if (p.key == "host_in_nccl")
      return "time inside NCCL calls " + d + " (host-side: blocking calls waiting or transferring)";
    if (p.key == "host_between")
      return "time between NCCL calls " + d +
             " (host-side: compute, syncs, data loading; without GPU timing not told apart)";
    return p.label + " " + d;
  }

  std::string compute_evidence(bool up) {
    if (r_.compute_differs)
      return " (the runs' compute kernels differ: a different model or build)";
    std::vector<const Compared*> ranks;
    for (const Compared& c : r_.rank_compute) {
      if ((c.delta() > 0) == up) ranks.push_back(&c);
    }
    const std::size_t nranks = std::max<std::size_t>(1, r_.now.rank_rows.size());
    if (!ranks.empty() && ranks.size() <= std::max<std::size_t>(1, nranks / 4)) {
      std::string who;
      for (std::size_t i = 0; i < ranks.size() && i < 2; ++i) {
        const std::string& label = ranks[i]->label;  // "compute, rank 2 (node-b)"
        who += fmt::format("{}{}: {}/step", i ? ", " : "", label.substr(label.find("rank ")),
                           arrow(*ranks[i]));
      }
      return fmt::format(" (only on {})", who);
    }
    if (r_.base.ranks != r_.now.ranks && r_.rank_classes.size() == 2) {
      const Compared& median = r_.rank_classes[0];
      const Compared& slowest = r_.rank_classes[1];
      if (slowest.significant && !median.significant)
        return fmt::format(" (slowest rank only: {}, median rank unchanged)", arrow(slowest));
    }
    std::string kernels;
    for (const Compared& k : r_.kernels) {
      if (!k.significant || (k.delta() > 0) != up) continue;
      kernels += fmt::format("{}{} {}", kernels.empty() ? "" : ", ", k.label, arrow(k));
      if (kernels.size() > 80) break;
    }
    return kernels.empty() ? "" : " (" + kernels + ")";
  }

  std::string wait_evidence(bool up) {
    std::string out;
    for (const FindingChange* f : sided(r_, up)) {
      out += (out.empty() ? "" : ", ") + finding_text(*f);
      named_.push_back(f);
    }
    if (!out.empty()) return " (" + out + ")";
    // A straggler or slow link of both runs whose cost moved most in the waiting's direction.
    const FindingChange* most = nullptr;
    double most_delta = 0;
    for (const auto* list : {&r_.stragglers, &r_.slow_links}) {
      for (const FindingChange& f : *list) {
        if (f.where != "both" || !f.base_cost || !f.new_cost) continue;
        const double d = f.new_cost->us_per_step - f.base_cost->us_per_step;
        if ((up ? d : -d) > most_delta) most = &f, most_delta = up ? d : -d;
      }
    }
    if (most) {
      return fmt::format(" ({} costs {}/step → {}/step in exposed waiting)",
                         most->kind == "slow link" ? "the slow link at " + most->who : most->who,
                         t(most->base_cost->us_per_step), t(most->new_cost->us_per_step));
    }
    return up ? " (no rank named: delays spread over every rank)" : "";
  }

  std::string transfer_evidence(bool up) {
    std::vector<std::string> items;
    if (r_.comm_differs) {
      items.push_back("the runs' communication differs");
    } else {
      // The class whose change costs (or saves) the most time: calls x bytes x |1/bw' - 1/bw|.
      const Compared* worst = nullptr;
      double worst_ns = 0;
      for (const Compared& b : r_.busbw) {
        if (!b.significant || (b.delta() < 0) != up) continue;
        const double ns = volume(b) * std::fabs(1 / b.now->value - 1 / b.base->value);
        if (!worst || ns > worst_ns) worst = &b, worst_ns = ns;
      }
      if (worst) {
        // "all_reduce 16 MiB-32 MiB cross-node busbw" -> "all-reduce busbw ... on cross-node comms"
        const std::string& key = worst->key;  // busbw:op:size:scope
        const std::string scope = key.substr(key.rfind(':') + 1);
        const std::string op = key.substr(6, key.find(':', 6) - 6);
        items.push_back(fmt::format("{} busbw {:.3g} → {:.3g} GB/s on {} comms", prose(op),
                                    worst->base->value, worst->now->value, scope));
      }
    }
    for (const FindingChange* f : sided(r_, up)) {
      if (f->kind != "slow link") continue;
      items.push_back(finding_text(*f));
      named_.push_back(f);
    }
    for (const EnvChange& e : r_.environment) {
      if (!e.changed || e.label == "ranks" || e.label == "GPU") continue;
      items.push_back(fmt::format("{} {} → {}", e.label, e.base, e.now));
      if (items.size() >= 4) break;
    }
    std::string out;
    for (const auto& i : items) out += ", " + i;
    return " (transfer" + (out.empty() ? "" : ":" + out.substr(1)) + ")";
  }

  // Bytes the class moved in NEW (calls x mean size), from its row of the NEW report.
  double volume(const Compared& c) const {
    for (const BusbwFigures& b : r_.now.busbw) {
      if (c.key == busbw_key(b))
        return b.calls * (b.mean_bytes > 0 ? b.mean_bytes : 1.5 * b.size_min);
    }
    return 0;
  }

  // Parts whose time stayed within the noise but whose share of the step grew by 5+ points to
  // 10 %+: what the step now waits on once the rest got faster.
  std::string weighs_more() {
    if (!r_.step.both() || r_.step.base->value <= 0 || r_.step.now->value <= 0) return "";
    std::string out;
    for (const Compared& p : r_.parts) {
      if (!p.both() || p.significant || p.key == "compute") continue;
      const double was = 100 * p.base->value / r_.step.base->value;
      const double is = 100 * p.now->value / r_.step.now->value;
      if (is - was < 5 || is < 10) continue;
      out += fmt::format(
          "{}{} did not change ({}/step) but is now {:.0f} % of the step (was {:.0f} %)",
          out.empty() ? "" : "; ", p.label, t(p.now->value), is, was);
    }
    return out;
  }

  std::string unnamed_findings(bool step_significant) {
    std::string out;
    for (const auto* list : {&r_.stragglers, &r_.slow_links}) {
      for (const FindingChange& f : *list) {
        if (!f.flagged || std::find(named_.begin(), named_.end(), &f) != named_.end()) continue;
        out += (out.empty() ? "" : "; ") + finding_text(f);
      }
    }
    if (!step_significant) {
      for (const Compared& b : r_.busbw) {
        if (b.significant) {
          out += fmt::format("{}{} {:.3g} → {:.3g} GB/s (not on the step's critical path)",
                             out.empty() ? "" : "; ", b.label, b.base->value, b.now->value);
          break;
        }
      }
    }
    return out;
  }

  const DiffResult& r_;
  std::vector<const FindingChange*> named_;
  std::string tail_;
};

}  // namespace

std::string verdict_line(const DiffResult& r) {
  return Verdict(r).line();
}

}  // namespace ncclwatch::diff
