// One figure of a run as `ncclwatch diff` weighs it: its value, how much it varies from one
// steady step to the next in that run (spread: the run-to-run noise a single run shows), and
// the standard error of the value itself. A change between two runs counts (is "beyond the
// noise") only when it exceeds all three of
//   - the larger spread of the two runs: a change a single step of either run could show is
//     not a change of the run;
//   - 3 standard errors of the difference: the values themselves are estimates (few steps,
//     heavy-tailed pauses);
//   - a floor that makes it matter (1 % of the base step for times, ...), so that two runs of
//     a deterministic simulation (spread 0) do not flag a rounding difference.
#pragma once

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

namespace ncclwatch::diff {

struct Figure {
  double value = 0;
  double spread = 0;  // step-to-step spread (1.4826 x MAD, or a std-dev where that is all there is)
  double sem = 0;     // standard error of `value`
};

// A figure of both runs side by side. Either side may be missing (an older report, a part the
// run does not have).
struct Compared {
  std::string key;    // stable identifier in the JSON output ("step", "busbw:all_reduce:...")
  std::string label;  // what the text calls it
  std::string unit;   // "us" (per step), "pct", "gbs", "us/call"
  std::optional<Figure> base, now;
  double floor = 0;      // the smallest change that matters, in `unit`
  double noise = 0;      // max(spread of base, spread of new)
  double threshold = 0;  // what |delta| had to exceed
  bool significant = false;

  bool both() const { return base.has_value() && now.has_value(); }
  double delta() const { return both() ? now->value - base->value : 0.0; }
  // delta / base in percent; 0 when the base is 0.
  double delta_pct() const {
    return both() && base->value != 0 ? 100.0 * delta() / std::fabs(base->value) : 0.0;
  }

  // Fills noise, threshold and significant (see the rule above).
  void judge() {
    if (!both()) return;
    noise = std::max(base->spread, now->spread);
    const double se = std::sqrt(base->sem * base->sem + now->sem * now->sem);
    threshold = std::max({noise, 3.0 * se, floor});
    significant = std::fabs(delta()) > threshold;
  }
};

}  // namespace ncclwatch::diff
