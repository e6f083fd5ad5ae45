// Compares the calls of one instance across ranks: op, count, datatype, reduction op and root
// must agree. The majority is the reference (a tie goes to the lowest comm rank's value).
#pragma once

#include <optional>
#include <vector>

#include "match/func_name.h"
#include "model/job_trace.h"
#include "model/match_result.h"

namespace ncclwatch::match {

class DesyncCheck {
 public:
  // `calls[i]` is the call of the i-th present member, `ranks[i]` its global rank. Returns the
  // index of a call that agrees with the majority (0 when all agree), and fills `desync`
  // (ranks, what) when some disagree.
  std::size_t check(const std::vector<const model::CallEvent*>& calls,
                    const std::vector<int32_t>& ranks, std::optional<model::Desync>& desync);

  // The fields that must agree do agree (the fast path of matching; inline: it runs per call).
  static bool agree(const model::CallEvent& a, const model::CallEvent& b) {
    if (a.func != b.func || a.count != b.count || a.datatype != b.datatype) return false;
    if (has_redop(a.func) && a.redop != b.redop) return false;
    if (is_rooted(a.func) && a.peer != b.peer) return false;
    return true;
  }

 private:
  std::vector<uint64_t> values_;  // scratch, reused across instances
};

}  // namespace ncclwatch::match
