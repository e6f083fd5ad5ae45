// What the shims counted instead of recording, shown where nobody can miss it: the first finding
// of the report (every figure below undercounts), the section "Losses" (per rank and kind), and
// the JSON (`losses` at the top, `ranks[].losses`). Kinds and their names: model/losses.h.
#include <algorithm>
#include <string_view>

#include <fmt/format.h>

#include "match/rank_list.h"
#include "pipeline/collector_parts.h"

namespace ncclwatch::pipeline {

namespace {

// 1234567 -> "1,234,567": loss counts are read by people deciding whether to trust a figure.
std::string grouped(uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// What each kind means for the figures and what to do about it (keys: model/losses.h).
std::string_view why(std::string_view key) {
  if (key == "ring_full") return "the shared-memory ring was full; raise NCCLWATCH_RING_MB";
  if (key == "cupti_dropped")
    return "CUPTI ran out of buffers or gave zero GPU timestamps; raise NCCLWATCH_CUPTI_BUFFERS";
  if (key == "lite_untimed")
    return "lite mode: more calls in flight than CUDA-event slots (or an event failed): no GPU "
           "time for them";
  if (key == "names_lost") return "more distinct kernel/NVTX names than the string table holds";
  if (key == "kernels_filtered") return "left out on request by NCCLWATCH_KERNELS";
  if (key == "cupti_unknown") return "CUPTI activity kinds this ncclwatch does not convert";
  if (key == "ring_holes") return "a thread stalled or died while writing a record";
  if (key == "ring_overwritten")
    return "salvage found the ring already overwritten past the trace file's end";
  if (key == "in_flight_overflow")
    return "threads beyond the in-flight slots: a call they never return from is not visible";
  return "";
}

struct JobLosses {
  model::Losses total;
  std::vector<int32_t> ranks;  // global ranks (-1 unknown) with any loss
};

JobLosses job_losses(const model::JobTrace& job) {
  JobLosses out;
  for (const auto& r : job.ranks) {
    if (!r.info.losses.any()) continue;
    out.total += r.info.losses;
    out.ranks.push_back(r.info.rank);
  }
  return out;
}

// "1,200 records dropped and 34 lost": the words and figures of the rank table's `dropped`
// (records that never reached the ring) and `lost` (everything else, mixed units) columns.
std::string dropped_and_lost(const model::Losses& l) {
  const uint64_t dropped = l.dropped(), lost = l.lost();
  if (lost == 0) return fmt::format("{} records dropped", grouped(dropped));
  if (dropped == 0) return fmt::format("{} lost", grouped(lost));
  return fmt::format("{} records dropped and {} lost", grouped(dropped), grouped(lost));
}

// What to change for the kinds that a setting bounds: "; raise NCCLWATCH_RING_MB".
std::string actions(const model::Losses& l) {
  std::string out;
  if (l.ring_full > 0) out += "; raise NCCLWATCH_RING_MB";
  if (l.cupti_dropped > 0) out += "; raise NCCLWATCH_CUPTI_BUFFERS";
  return out;
}

}  // namespace

nlohmann::json losses_json(const model::Losses& losses) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& e : losses.entries()) j[e.key] = e.count;
  return j;
}

std::string describe_losses(const model::Losses& losses) {
  std::string parts;
  for (const auto& e : losses.entries()) {
    if (e.count == 0) continue;
    if (!parts.empty()) parts += "; ";
    parts += fmt::format("{} {} {}", e.label, grouped(e.count), e.unit);
  }
  return parts;
}

namespace {

// Whether a rank's losses can move a figure: one in a thousand of its records or more, or a rank
// whose record count is unknown. A real one-rank run lost one NVTX range of 23,836 records; a
// warning above the job's real finding for that would teach people to skip the first line.
bool material(const model::RankTrace& r) {
  const uint64_t gone = r.info.losses.dropped() + r.info.losses.lost();
  return r.info.records == 0 || gone * 1000 >= r.info.records;
}

}  // namespace

void add_loss_finding(const model::JobTrace& job, model::Report& report) {
  const JobLosses l = job_losses(job);
  if (l.ranks.empty()) return;
  const bool any_material = std::any_of(job.ranks.begin(), job.ranks.end(), [](const auto& r) {
    return r.info.losses.any() && material(r);
  });
  // The one finding about losses (ring full included): its figures are the table's.
  std::string text = fmt::format(
      "{} on {} of {} ranks ({}) — {}{}; see section \"Losses\"", dropped_and_lost(l.total),
      l.ranks.size(), job.ranks.size(), describe_losses(l.total),
      any_material ? "figures below undercount"
                   : "under 0.1% of each rank's records, no figure below moves noticeably",
      actions(l.total));
  // First in the list: the renderers keep the order within one severity, so only critical
  // findings (a hang) come before a material one.
  report.findings.insert(
      report.findings.begin(),
      model::Finding{any_material ? model::Severity::kWarning : model::Severity::kInfo, "collector",
                     std::move(text)});
}

void add_loss_json(const model::JobTrace& job, model::Report& report) {
  const JobLosses l = job_losses(job);
  report.json["losses"] = {
      {"total", losses_json(l.total)}, {"ranks", l.ranks}, {"undercount", !l.ranks.empty()}};
}

std::string losses_table(const model::JobTrace& job) {
  const JobLosses l = job_losses(job);
  if (l.ranks.empty()) return {};
  // Only the kinds that happened get a column: the table stays one screen wide.
  std::vector<std::size_t> kinds;
  const auto totals = l.total.entries();
  for (std::size_t k = 0; k < totals.size(); ++k)
    if (totals[k].count > 0) kinds.push_back(k);
  std::string body = fmt::format("{:>5}  {:<16}", "rank", "host");
  for (std::size_t k : kinds) body += fmt::format(" {:>18}", totals[k].key);
  body += '\n';
  for (const auto& r : job.ranks) {
    if (!r.info.losses.any()) continue;
    body += fmt::format("{:>5}  {:<16}",
                        r.info.rank < 0 ? std::string("?") : std::to_string(r.info.rank),
                        r.info.host.substr(0, 16));
    const auto entries = r.info.losses.entries();
    for (std::size_t k : kinds) body += fmt::format(" {:>18}", grouped(entries[k].count));
    body += '\n';
  }
  for (std::size_t k : kinds) body += fmt::format("{}: {}\n", totals[k].key, why(totals[k].key));
  return body;
}

}  // namespace ncclwatch::pipeline
