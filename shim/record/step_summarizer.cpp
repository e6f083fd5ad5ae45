#include "record/step_summarizer.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "ncclwatch/fnv1a.h"

namespace ncclwatch::shim {
namespace {

using format::Record;
using format::RecordKind;

constexpr int64_t kSecondNs = 1'000'000'000;
// Collectives seen before the reference comm is chosen (enough for the world comm to show).
constexpr uint32_t kChooseAfter = 16;
// A learned pattern whose step starts stop matching this many times in a row is learned again.
constexpr uint32_t kRelearnAfter = 8;
constexpr std::size_t kMaxSyncEntries = 4096;

enum Which { kCompute = 0, kNccl = 1, kOther = 2 };

uint32_t saturating_us(int64_t ns) {
  if (ns <= 0) return 0;
  const int64_t us = ns / 1000;
  return us >= static_cast<int64_t>(format::kStepUnknownUs) ? format::kStepUnknownUs - 1
                                                            : static_cast<uint32_t>(us);
}

// An event's time, for placing it in a step (the start for intervals).
bool event_time(const Record& r, int64_t& t) {
  switch (r.prefix.kind) {
    case RecordKind::kCall:
      t = r.call.t_enter_ns;
      return true;
    case RecordKind::kKernel:
      t = r.kernel.start_ns;
      return true;
    case RecordKind::kCollGpu:
      t = r.coll_gpu.start_ns;
      return true;
    default:
      return false;
  }
}

}  // namespace

bool looks_like_step_name(const std::string& name, int64_t* number) {
  std::string l;
  for (char c : name) l.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  *number = -1;
  // "optimizer.step", "Optimizer.step#SGD.step", "lr_scheduler.step": methods, not the loop.
  if (l.find('.') != std::string::npos || l.find("optim") != std::string::npos ||
      l.find("sched") != std::string::npos)
    return false;
  const auto at = l.find("step");
  if (at == std::string::npos) return false;
  // The number after the word: "ProfilerStep#12", "step 3", "train_step_7".
  std::size_t i = at + 4;
  while (i < l.size() && (l[i] == '#' || l[i] == ' ' || l[i] == '_' || l[i] == ':')) ++i;
  if (i < l.size() && std::isdigit(static_cast<unsigned char>(l[i]))) {
    int64_t n = 0;
    while (i < l.size() && std::isdigit(static_cast<unsigned char>(l[i])) && n < (1LL << 40))
      n = n * 10 + (l[i++] - '0');
    *number = n;
  }
  return i == l.size();  // nothing but the number after it ("steps_per_epoch" is no step)
}

uint64_t StepSummarizer::ref_token(const format::CallRecord& c) const {
  uint64_t h = format::kFnv1aOffset;
  h = format::fnv1a64_byte(h, c.prefix.u8a);
  h = format::fnv1a64(h, reinterpret_cast<const unsigned char*>(&c.count), sizeof c.count);
  h = format::fnv1a64_byte(h, c.datatype);
  return format::fnv1a64_byte(h, c.redop);
}

int64_t StepSummarizer::median_step_ns() const {
  if (recent_durations_.empty()) return 0;
  std::vector<int64_t> v(recent_durations_.begin(), recent_durations_.end());
  auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

void StepSummarizer::note_comm(const format::CommRecord& c) {
  if (c.prefix.u8b == 0 && c.comm_id != 0 && c.nranks > 0) comm_ranks_[c.comm_id] = c.nranks;
}

void StepSummarizer::note_string(const format::StringRecord& s) {
  if (s.prefix.u8a != 0) return;  // step names are short: the first chunk says it
  const std::string text(s.text, strnlen(s.text, sizeof s.text));
  int64_t number = -1;
  if (looks_like_step_name(text, &number)) step_names_[s.prefix.tid] = number;
}

void StepSummarizer::choose_reference() {
  // The comm with the most ranks (the world, usually); ties: the one with more collectives.
  int32_t best_ranks = -1;
  uint32_t best_count = 0;
  for (const auto& [comm, count] : coll_counts_) {
    const auto it = comm_ranks_.find(comm);
    const int32_t ranks = it == comm_ranks_.end() ? 0 : it->second;
    if (ranks > best_ranks || (ranks == best_ranks && count > best_count) ||
        (ranks == best_ranks && count == best_count && comm < ref_comm_)) {
      best_ranks = ranks;
      best_count = count;
      ref_comm_ = comm;
    }
  }
  ref_chosen_ = true;
  for (const Record& r : backlog_) {
    if (r.prefix.kind != RecordKind::kCall || r.call.comm_id != ref_comm_) continue;
    if (!format::is_collective(static_cast<format::Func>(r.prefix.u8a))) continue;
    if (first_ref_ns_ == 0) first_ref_ns_ = r.call.t_enter_ns;
    if (options_.learn_alone) learner_.add({r.call.seq, r.call.t_enter_ns, ref_token(r.call)});
  }
}

void StepSummarizer::note_call_for_learning(const format::CallRecord& c, int64_t now) {
  (void)now;
  if (!format::is_collective(static_cast<format::Func>(c.prefix.u8a))) return;
  if (!ref_chosen_) {
    uint32_t total = 0;
    for (auto& [comm, n] : coll_counts_) total += n;
    ++coll_counts_[c.comm_id];
    if (total + 1 >= kChooseAfter) choose_reference();  // the backlog holds this call already
    return;
  }
  if (c.comm_id != ref_comm_ || learner_.state() != StepLearner::State::kLearning) return;
  if (first_ref_ns_ == 0) first_ref_ns_ = c.t_enter_ns;
  if (options_.learn_alone) learner_.add({c.seq, c.t_enter_ns, ref_token(c)});
}

void StepSummarizer::observe(const Record& r, int64_t now) {
  switch (r.prefix.kind) {
    case RecordKind::kComm:
      note_comm(r.comm);
      return;
    case RecordKind::kString:
      note_string(r.string);
      return;
    case RecordKind::kClock:
      realtime_offset_ns_ = r.clock.realtime_ns - r.clock.monotonic_ns;
      have_clock_ = true;
      return;
    case RecordKind::kNvtx:
      if (step_names_.contains(r.nvtx.name_id) && (nvtx_tid_ == 0 || r.prefix.tid == nvtx_tid_)) {
        nvtx_seen_ = true;
        nvtx_tid_ = r.prefix.tid;
        break;
      }
      return;
    case RecordKind::kCall:
    case RecordKind::kKernel:
    case RecordKind::kKernelLink:
    case RecordKind::kCollGpu:
      break;
    default:
      return;
  }
  if (first_event_ns_ == 0) first_event_ns_ = now;
  if (decided_) {
    // The reference comm is still to be chosen (NVTX ranges decided early), or the pattern is
    // learned again after it broke, or learned on while steps are seconds of the clock.
    if (r.prefix.kind == RecordKind::kCall &&
        (!ref_chosen_ || (learner_.state() == StepLearner::State::kLearning &&
                          (source_ == format::StepSource::kCollectives || clock_fallback_))))
      note_call_for_learning(r.call, now);
    if (clock_fallback_ && learner_.state() == StepLearner::State::kLearned) switch_to_learned();
    if (clock_fallback_ && learner_.state() == StepLearner::State::kFailed)
      clock_fallback_ = false;  // no step in the gaps: the clock for good
    place(r);
    return;
  }
  if (backlog_.size() >= kMaxBacklog) {
    // The first steps (warm-up) go first: the history keeps what follows.
    const auto half = static_cast<std::ptrdiff_t>(backlog_.size() / 2);
    late_ += static_cast<uint64_t>(half);
    backlog_.erase(backlog_.begin(), backlog_.begin() + half);
  }
  backlog_.push_back(r);
  if (r.prefix.kind == RecordKind::kCall) note_call_for_learning(r.call, now);
  try_decide(now);
}

void StepSummarizer::try_decide(int64_t now) {
  if (decided_) return;
  if (nvtx_seen_) {
    decide(format::StepSource::kNvtx);
  } else if (learner_.state() == StepLearner::State::kLearned) {
    if (options_.nvtx_wait_ns == 0 || now - first_ref_ns_ >= options_.nvtx_wait_ns ||
        backlog_.size() >= kMaxBacklog / 2)
      decide(format::StepSource::kCollectives);
  } else if (learner_.state() == StepLearner::State::kFailed ||
             (!ref_chosen_ && first_event_ns_ != 0 &&
              now - first_event_ns_ >= options_.interval_after_ns)) {
    decide(format::StepSource::kInterval);
  } else if (ref_chosen_ && first_ref_ns_ != 0 &&
             (learner_.seen() >= StepLearner::kMaxCalls ||
              now - first_ref_ns_ >= options_.clock_fallback_ns)) {
    // The gaps are still unclear (a busy machine): summaries and step numbers from the clock
    // rather than none until the learner decides (up to StepLearner::kMaxUnclearCalls calls).
    clock_fallback_ = true;
    decide(format::StepSource::kInterval);
  }
}

bool StepSummarizer::learned_alone() const {
  return ref_chosen_ && learner_.state() == StepLearner::State::kLearned && !learner_.adopted();
}

bool StepSummarizer::wants_job_steps() const {
  if (!ref_chosen_ || nvtx_seen_ || (decided_ && source_ == format::StepSource::kNvtx))
    return false;
  return learner_.state() == StepLearner::State::kLearning ||
         (learner_.state() == StepLearner::State::kFailed && decided_ &&
          source_ == format::StepSource::kInterval);
}

bool StepSummarizer::adopt(uint64_t comm, const StepPattern& pattern) {
  if (!wants_job_steps() || comm != ref_comm_ || !learner_.adopt(pattern)) return false;
  mismatched_starts_ = 0;
  // On the clock (while learning, or for good): the learned steps from the next step start on,
  // numbered as the job numbers them. Not decided yet: try_decide takes them.
  if (decided_ && source_ == format::StepSource::kInterval) switch_to_learned();
  return true;
}

void StepSummarizer::switch_to_learned() {
  clock_fallback_ = false;
  source_ = format::StepSource::kCollectives;
  // The open clock second runs on until the first learned step starts (place_call), its calls
  // not lost: flush() capped it at its second's end only while more seconds could follow.
  if (!open_.empty() && !open_.back().provisional &&
      open_.back().source == format::StepSource::kInterval)
    open_.back().end_ns = INT64_MAX;
  // Step times for capture planning: the learned steps' from now on, not seconds.
  recent_durations_.clear();
}

void StepSummarizer::decide(format::StepSource source) {
  decided_ = true;
  source_ = source;
  std::vector<Record> backlog;
  backlog.swap(backlog_);
  for (const Record& r : backlog) place(r);
}

void StepSummarizer::place(const Record& r) {
  if (source_ == format::StepSource::kInterval) {
    int64_t t = 0;
    if (event_time(r, t)) place_time(t);
  }
  switch (r.prefix.kind) {
    case RecordKind::kCall:
      place_call(r.call);
      break;
    case RecordKind::kKernel: {
      timing_cupti_ = true;
      const auto kind = static_cast<format::ActivityKind>(r.prefix.u8a);
      const int which = kind != format::ActivityKind::kKernel           ? kOther
                        : (r.prefix.flags & format::kKernelIsNccl) != 0 ? kNccl
                                                                        : kCompute;
      place_gpu(r.kernel.start_ns, r.kernel.end_ns, which, true);
      if (which != kOther) {
        if (Step* st = step_at(r.kernel.start_ns)) ++st->kernels;
      }
      const auto it = ref_correlation_.find(r.kernel.correlation);
      if (it != ref_correlation_.end() && which == kNccl) {
        ref_gpu_end_[it->second] = r.kernel.end_ns;
        ref_correlation_.erase(it);
      }
      break;
    }
    case RecordKind::kKernelLink:
      if (ref_chosen_ && r.link.comm_id == ref_comm_ &&
          format::is_collective(static_cast<format::Func>(r.prefix.u8a))) {
        if (ref_correlation_.size() >= kMaxSyncEntries) ref_correlation_.clear();
        ref_correlation_[r.link.correlation] = r.link.seq;
      }
      break;
    case RecordKind::kCollGpu:
      place_gpu(r.coll_gpu.start_ns, r.coll_gpu.end_ns, kNccl, false);
      if (ref_chosen_ && r.coll_gpu.comm_id == ref_comm_) {
        if (ref_gpu_end_.size() >= kMaxSyncEntries) ref_gpu_end_.clear();
        ref_gpu_end_[r.coll_gpu.seq] = r.coll_gpu.end_ns;
      }
      break;
    case RecordKind::kNvtx:
      if (source_ == format::StepSource::kNvtx && r.prefix.tid == nvtx_tid_) {
        const auto it = step_names_.find(r.nvtx.name_id);
        if (it == step_names_.end()) break;
        uint32_t number = it->second >= 0 ? static_cast<uint32_t>(it->second) : nvtx_counter_;
        ++nvtx_counter_;
        add_boundary(number, r.nvtx.start_ns);
      }
      break;
    default:
      break;
  }
}

void StepSummarizer::place_call(const format::CallRecord& c) {
  const auto func = static_cast<format::Func>(c.prefix.u8a);
  const bool ref = ref_chosen_ && c.comm_id == ref_comm_ && format::is_collective(func);
  if (ref && source_ == format::StepSource::kCollectives &&
      learner_.state() == StepLearner::State::kLearned) {
    const StepPattern& p = learner_.pattern();
    if (c.seq >= p.phase && (c.seq - p.phase) % p.period == 0) {
      if (ref_token(c) == p.start_token) {
        mismatched_starts_ = 0;
      } else if (++mismatched_starts_ >= kRelearnAfter) {
        learner_.reset();  // the job changed its step (an eval phase, a new bucket layout)
        mismatched_starts_ = 0;
      }
      if (learner_.state() == StepLearner::State::kLearned)
        add_boundary((c.seq - p.phase) / p.period, c.t_enter_ns);
    }
  }
  Step* s = step_at(c.t_enter_ns);
  if (s == nullptr) return;
  s->calls.push_back({c.t_enter_ns, format::call_bytes(c), c.seq, ref});
  s->last_event_ns = std::max(s->last_event_ns, c.t_exit_ns);
}

void StepSummarizer::place_gpu(int64_t start, int64_t end, int which, bool cupti) {
  gpu_watermark_ns_ = std::max(gpu_watermark_ns_, end);
  if (step_at(start) == nullptr && start < open_.front().start_ns) ++late_;
  for (auto it = open_.rbegin(); it != open_.rend() && it->end_ns > start; ++it) {
    if (it->start_ns >= end) continue;
    const int64_t s = std::max(start, it->start_ns), e = std::min(end, it->end_ns);
    IntervalList& list = which == kCompute ? it->compute : which == kNccl ? it->nccl : it->other;
    list.add(s, e);
    (cupti ? it->cupti : it->events) = true;
    it->last_event_ns = std::max(it->last_event_ns, e);
  }
}

void StepSummarizer::place_time(int64_t t) {
  if (!have_clock_) return;
  const int64_t wall = t + realtime_offset_ns_;
  if (wall <= 0) return;
  const int64_t second = wall / kSecondNs;
  if (!open_.empty() && static_cast<int64_t>(open_.back().number) >= second) return;
  add_boundary(static_cast<uint32_t>(second), second * kSecondNs - realtime_offset_ns_);
}

StepSummarizer::Step* StepSummarizer::step_at(int64_t t) {
  if (open_.empty()) {
    open_.emplace_back();
    open_.back().start_ns = INT64_MIN;
    open_.back().provisional = true;
  }
  for (auto it = open_.rbegin(); it != open_.rend(); ++it) {
    if (it->start_ns <= t) return t < it->end_ns ? &*it : nullptr;
  }
  return nullptr;
}

void StepSummarizer::add_boundary(uint32_t number, int64_t start_ns) {
  Step next;
  next.start_ns = start_ns;
  bool restarted = false;
  if (!open_.empty()) {
    Step& back = open_.back();
    if (start_ns <= back.start_ns) return;  // out of order: the earlier boundary stands
    // Numbers only increase within a source; from clock seconds to learned steps they restart
    // at the job's numbering (below any Unix second).
    restarted = !back.provisional && back.source != source_;
    if (number <= back.number && !back.provisional && !restarted) number = back.number + 1;
    back.end_ns = std::min(back.end_ns, start_ns);
    if (source_ == format::StepSource::kInterval && !back.provisional)
      back.end_ns = std::min(back.end_ns, back.start_ns + kSecondNs);
    // What was placed in `back` at or after the new start belongs to the new step.
    auto moved = std::stable_partition(back.calls.begin(), back.calls.end(),
                                       [&](const CallItem& c) { return c.enter_ns < start_ns; });
    next.calls.assign(moved, back.calls.end());
    back.calls.erase(moved, back.calls.end());
    next.compute = back.compute.split_at(start_ns);
    next.nccl = back.nccl.split_at(start_ns);
    next.other = back.other.split_at(start_ns);
    next.cupti = back.cupti;
    next.events = back.events;
    next.last_event_ns = std::max(back.last_event_ns, start_ns);
  }
  next.number = number;
  next.source = source_;
  if (!open_.empty() && open_.back().provisional) open_.pop_back();  // before the first step
  open_.push_back(std::move(next));
  last_step_ = number;
  if (restarted && numbering_restarted_) numbering_restarted_(start_ns);
  if (step_started_) step_started_(number, start_ns);
  if (open_.size() > kMaxOpenSteps) {
    summarize(open_.front(), false, true);
    open_.pop_front();
  }
}

void StepSummarizer::flush(int64_t now, bool final) {
  if (!decided_) {
    try_decide(now);
    if (!decided_ && final) {
      learner_.conclude();
      decide(learner_.state() == StepLearner::State::kLearned ? format::StepSource::kCollectives
                                                              : format::StepSource::kInterval);
    }
  }
  if (source_ == format::StepSource::kInterval && !open_.empty() &&
      open_.back().end_ns == INT64_MAX && now - open_.back().start_ns >= kSecondNs)
    open_.back().end_ns = open_.back().start_ns + kSecondNs;
  while (!open_.empty()) {
    Step& s = open_.front();
    if (s.provisional) {
      if (!final) break;
      open_.pop_front();
      continue;
    }
    if (s.end_ns == INT64_MAX) {
      if (!final) break;
      s.end_ns = std::max(s.last_event_ns, s.start_ns);
      summarize(s, true, false);
      open_.pop_front();
      continue;
    }
    const bool gpu_done = !gpu_expected_ || gpu_watermark_ns_ >= s.end_ns ||
                          (gpu_covered_ && !gpu_covered_(s.start_ns, s.end_ns));
    const bool due = now >= s.end_ns + options_.host_grace_ns &&
                     (gpu_done || now >= s.end_ns + options_.gpu_grace_ns);
    if (!final && !due) break;
    summarize(s, false, !gpu_done);
    open_.pop_front();
  }
}

void StepSummarizer::summarize(Step& s, bool last, bool partial) {
  Record rec{};
  format::StepRecord& out = rec.step;
  out.prefix.kind = RecordKind::kStep;
  out.prefix.u8a = static_cast<uint8_t>(s.source);
  const int64_t end = s.end_ns;
  out.step = s.number;
  out.start_ns = s.start_ns;
  out.duration_us = saturating_us(end - s.start_ns);
  const CallItem* first_ref = nullptr;
  for (const CallItem& c : s.calls) {
    ++out.calls;
    out.bytes += c.bytes;
    if (c.ref && (first_ref == nullptr || c.seq < first_ref->seq)) first_ref = &c;
  }
  if (first_ref != nullptr) {
    out.prefix.tid = first_ref->seq;
    out.arrive_ns = first_ref->enter_ns;
    const auto it = ref_gpu_end_.find(first_ref->seq);
    if (it != ref_gpu_end_.end()) {
      out.sync_ns = it->second;
      ref_gpu_end_.erase(it);
    }
  }
  out.compute_us = out.exposed_us = out.idle_us = format::kStepUnknownUs;
  if (gpu_covered_ && !gpu_covered_(s.start_ns, end)) {
    // GPU timing was off for some of it: no figures rather than a part of them.
    out.prefix.flags |= format::kStepGpuOff;
  } else if (s.cupti) {
    out.prefix.u8b = static_cast<uint8_t>(format::StepTiming::kCupti);
    out.compute_us = saturating_us(s.compute.length(s.start_ns, end));
    out.exposed_us = saturating_us(IntervalList::length_minus(s.nccl, s.compute, s.start_ns, end));
    const int64_t busy =
        IntervalList::union_length({&s.compute, &s.nccl, &s.other}, s.start_ns, end);
    out.idle_us = saturating_us(end - s.start_ns - busy);
  } else if (s.events) {
    out.prefix.u8b = static_cast<uint8_t>(format::StepTiming::kEvents);
  } else if (gpu_expected_ && timing_cupti_) {
    // GPU timing ran and nothing ran on the GPU: idle throughout.
    out.prefix.u8b = static_cast<uint8_t>(format::StepTiming::kCupti);
    out.compute_us = out.exposed_us = 0;
    out.idle_us = out.duration_us;
  }
  if (last) out.prefix.flags |= format::kStepLast;
  if (partial) out.prefix.flags |= format::kStepGpuPartial;
  if (in_window_ && in_window_(s.start_ns, end)) out.prefix.flags |= format::kStepDetail;
  if (!last && s.source == source_) {
    recent_durations_.push_back(end - s.start_ns);
    if (recent_durations_.size() > 16) recent_durations_.pop_front();
  }
  if (emit_) emit_(rec);
  if (summarized_) summarized_(out, s.kernels);
}

}  // namespace ncclwatch::shim
