#include "history/period_folder.h"

#include <algorithm>
#include <cmath>
#include <span>

#include "model/median.h"

namespace ncclwatch::history {
namespace {

// A host's clock offset follows each step's common GPU end with this weight (about the last 50
// steps): the end is shared within microseconds, the host's entry into it is not.
constexpr double kOffsetWeight = 0.02;

double ms_of_us(uint32_t us) {
  return us == format::kStepUnknownUs ? -1.0 : static_cast<double>(us) / 1e3;
}

double median_of(std::vector<double>& v) {
  return model::median_in_place(std::span<double>(v));
}

}  // namespace

void PeriodFolder::Sums::merge(const Sums& o) {
  if (o.steps == 0) return;
  if (steps == 0) first_step = o.first_step;
  last_step = o.last_step;
  steps += o.steps;
  detail_steps += o.detail_steps;
  start = std::min(start, o.start);
  end = std::max(end, o.end);
  step += o.step;
  calls += o.calls;
  bytes += o.bytes;
  for (int i = 0; i < 4; ++i) {
    part[i] += o.part[i];
    n_part[i] += o.n_part[i];
  }
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    RankSums& a = ranks[r];
    const RankSums& b = o.ranks[r];
    a.late += b.late;
    a.compute += b.compute;
    a.idle += b.idle;
    a.steps += b.steps;
    a.n_late += b.n_late;
    a.n_compute += b.n_compute;
    a.n_idle += b.n_idle;
  }
}

PeriodFolder::PeriodFolder(std::vector<std::size_t> host_of, std::vector<int64_t> wall_offset_ns,
                           std::size_t max_periods)
    : host_of_(std::move(host_of)),
      wall_offset_(std::move(wall_offset_ns)),
      max_(std::max<std::size_t>(max_periods, 2) & ~std::size_t{1}) {
  std::size_t hosts = 0;
  for (std::size_t h : host_of_) hosts = std::max(hosts, h + 1);
  host_offset_.assign(hosts, 0.0);
  host_offset_known_.assign(hosts, false);
  per_host_.resize(hosts);
  arrive_.resize(host_of_.size());
  exposed_.resize(host_of_.size());
}

PeriodFolder::Sums& PeriodFolder::bucket_for(uint64_t number) {
  std::size_t index = static_cast<std::size_t>(joined_ / width_);
  if (index >= max_) {
    // Neighbours merge: the periods double in length and their number halves.
    for (std::size_t i = 0; i < max_ / 2; ++i) {
      Sums merged = std::move(buckets_[2 * i]);
      merged.merge(buckets_[2 * i + 1]);
      buckets_[i] = std::move(merged);
    }
    buckets_.resize(max_ / 2);
    width_ *= 2;
    index = static_cast<std::size_t>(joined_ / width_);
  }
  if (buckets_.size() <= index) {
    buckets_.emplace_back();
    buckets_.back().ranks.resize(host_of_.size());
  }
  Sums& s = buckets_[index];
  if (s.steps == 0) s.first_step = number;
  s.last_step = number;
  return s;
}

// Each host's offset: its ranks' median GPU end of the step's first collective against every
// host's median (one moment on every rank), smoothed over steps.
void PeriodFolder::align(const std::vector<const format::StepRecord*>& steps) {
  if (host_offset_.size() < 2) return;
  for (auto& v : per_host_) v.clear();
  for (std::size_t r = 0; r < steps.size(); ++r) {
    if (steps[r] == nullptr || steps[r]->sync_ns == 0) continue;
    per_host_[host_of_[r]].push_back(static_cast<double>(steps[r]->sync_ns) +
                                     static_cast<double>(wall_offset_[r]));
  }
  scratch_.clear();
  for (auto& v : per_host_) {
    if (!v.empty()) scratch_.push_back(median_of(v));  // v is reordered, its median kept below
  }
  if (scratch_.size() < 2) return;
  scratch2_ = scratch_;
  const double mid = median_of(scratch2_);
  std::size_t k = 0;
  for (std::size_t h = 0; h < per_host_.size(); ++h) {
    if (per_host_[h].empty()) continue;
    const double d = scratch_[k++] - mid;
    host_offset_[h] =
        host_offset_known_[h] ? host_offset_[h] + kOffsetWeight * (d - host_offset_[h]) : d;
    host_offset_known_[h] = true;
  }
  clocks_from_sync_ = true;
}

void PeriodFolder::add(uint64_t number, const std::vector<const format::StepRecord*>& steps) {
  align(steps);
  Sums& s = bucket_for(number);
  ++joined_;
  ++s.steps;
  scratch_.clear();
  std::vector<double>* parts = parts_;  // compute, exposed, idle of each rank
  for (int f = 0; f < 3; ++f) parts[f].clear();
  double calls = 0, bytes = 0;
  std::size_t present = 0;
  bool detail = false;
  for (std::size_t r = 0; r < steps.size(); ++r) {
    const format::StepRecord* st = steps[r];
    if (st == nullptr) continue;
    ++present;
    detail = detail || (st->prefix.flags & format::kStepDetail) != 0;
    const int64_t wall =
        st->start_ns + wall_offset_[r] - static_cast<int64_t>(host_offset_[host_of_[r]]);
    s.start = std::min(s.start, wall);
    s.end = std::max(s.end, wall + int64_t{st->duration_us} * 1000);
    scratch_.push_back(static_cast<double>(st->duration_us) / 1e3);
    calls += st->calls;
    bytes += static_cast<double>(st->bytes);
    RankSums& rs = s.ranks[r];
    ++rs.steps;
    const double c = ms_of_us(st->compute_us), e = ms_of_us(st->exposed_us),
                 i = ms_of_us(st->idle_us);
    if (c >= 0) {
      parts[0].push_back(c);
      rs.compute += c;
      ++rs.n_compute;
    }
    if (e >= 0) parts[1].push_back(e);
    if (i >= 0) {
      parts[2].push_back(i);
      rs.idle += i;
      ++rs.n_idle;
    }
  }
  if (present == 0) return;
  if (detail) ++s.detail_steps;
  s.step += median_of(scratch_);
  s.calls += calls / static_cast<double>(present);
  s.bytes += bytes / static_cast<double>(present);
  const bool exposed_split = add_lateness(steps, s);
  const int slot[3] = {0, 1, 3};
  for (int f = 0; f < 3; ++f) {
    if (parts[f].empty() || (f == 1 && exposed_split)) continue;
    s.part[slot[f]] += median_of(parts[f]);
    ++s.n_part[slot[f]];
  }
}

// Lateness at the step's first collective, in ms against the median rank: the host's arrival
// (its entry into the collective) and, with GPU figures, what its peers waited for it on the GPU
// -- the median rank's exposed communication minus its own, since a rank the others wait for
// waits least (a host that runs ahead of its GPU enters early and is late on the GPU only). The
// later of the two counts. Then the waiting each rank did (the latest rank's lateness minus its
// own, at most its exposed communication, which then counts as waiting, not as communication).
// true: the step's exposed communication is added here (with the waiting taken out).
bool PeriodFolder::add_lateness(const std::vector<const format::StepRecord*>& steps, Sums& s) {
  scratch_.clear();
  scratch2_.clear();
  for (std::size_t r = 0; r < steps.size(); ++r) {
    arrive_[r] = NAN;
    exposed_[r] = -1;
    if (steps[r] == nullptr) continue;
    exposed_[r] = ms_of_us(steps[r]->exposed_us);
    if (exposed_[r] >= 0) scratch2_.push_back(exposed_[r]);
    if (steps[r]->arrive_ns == 0) continue;
    arrive_[r] = static_cast<double>(steps[r]->arrive_ns) + static_cast<double>(wall_offset_[r]) -
                 host_offset_[host_of_[r]];
    scratch_.push_back(arrive_[r]);
  }
  const bool by_host = scratch_.size() >= 2, by_gpu = scratch2_.size() >= 2;
  if (!by_host && !by_gpu) return false;
  const double mid_arrive = by_host ? median_of(scratch_) : 0.0;
  const double mid_exposed = by_gpu ? median_of(scratch2_) : 0.0;
  double latest = -INFINITY;
  for (std::size_t r = 0; r < steps.size(); ++r) {
    double late = NAN;
    if (by_host && !std::isnan(arrive_[r])) late = (arrive_[r] - mid_arrive) / 1e6;
    if (by_gpu && exposed_[r] >= 0)
      late =
          std::isnan(late) ? mid_exposed - exposed_[r] : std::max(late, mid_exposed - exposed_[r]);
    arrive_[r] = late;  // from here on: the lateness
    if (std::isnan(late)) continue;
    latest = std::max(latest, late);
    RankSums& rs = s.ranks[r];
    rs.late += late;
    ++rs.n_late;
  }
  scratch_.clear();   // waits
  scratch2_.clear();  // exposed communication with the waiting taken out
  for (std::size_t r = 0; r < steps.size(); ++r) {
    if (std::isnan(arrive_[r])) continue;
    double wait = latest - arrive_[r];
    if (exposed_[r] >= 0) {
      wait = std::min(wait, exposed_[r]);
      scratch2_.push_back(exposed_[r] - wait);
    }
    scratch_.push_back(wait);
  }
  s.part[2] += median_of(scratch_);
  ++s.n_part[2];
  if (scratch2_.empty()) return false;
  s.part[1] += median_of(scratch2_);
  ++s.n_part[1];
  return true;
}

std::vector<Period> PeriodFolder::finish() const {
  std::vector<Period> out;
  out.reserve(buckets_.size());
  for (const Sums& s : buckets_) {
    if (s.steps == 0) continue;
    Period p;
    p.first_step = s.first_step;
    p.last_step = s.last_step;
    p.steps = s.steps;
    p.detail_steps = s.detail_steps;
    p.start_wall_ns = s.start;
    p.end_wall_ns = s.end;
    const double n = static_cast<double>(s.steps);
    p.step_ms = s.step / n;
    p.calls = s.calls / n;
    p.bytes = s.bytes / n;
    double* parts[4] = {&p.compute_ms, &p.exposed_ms, &p.wait_ms, &p.idle_ms};
    for (int i = 0; i < 4; ++i)
      *parts[i] = s.n_part[i] > 0 ? s.part[i] / static_cast<double>(s.n_part[i]) : -1.0;
    p.ranks.resize(s.ranks.size());
    for (std::size_t r = 0; r < s.ranks.size(); ++r) {
      const RankSums& a = s.ranks[r];
      RankPeriod& b = p.ranks[r];
      b.steps = a.steps;
      b.late_steps = a.n_late;
      b.late_ms = a.n_late > 0 ? static_cast<float>(a.late / a.n_late) : 0.0f;
      b.compute_ms = a.n_compute > 0 ? static_cast<float>(a.compute / a.n_compute) : -1.0f;
      b.idle_ms = a.n_idle > 0 ? static_cast<float>(a.idle / a.n_idle) : -1.0f;
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace ncclwatch::history
