#include "record/sched_sampler.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

#include "ncclwatch/in_flight_slot.h"
#include "record/ring.h"

namespace ncclwatch::shim {
namespace {

// One decimal number at text[*pos], then one separator (space or newline) or the end.
bool parse_number(const char* text, std::size_t size, std::size_t* pos, uint64_t& out) {
  std::size_t i = *pos;
  if (i >= size || text[i] < '0' || text[i] > '9') return false;
  uint64_t v = 0;
  for (; i < size && text[i] >= '0' && text[i] <= '9'; ++i) {
    const auto digit = static_cast<uint64_t>(text[i] - '0');
    if (v > (UINT64_MAX - digit) / 10) return false;
    v = v * 10 + digit;
  }
  if (i < size && text[i] != ' ' && text[i] != '\n') return false;
  *pos = i < size ? i + 1 : i;
  out = v;
  return true;
}

}  // namespace

bool parse_schedstat(const char* text, std::size_t size, SchedReading& out) noexcept {
  std::size_t pos = 0;
  SchedReading r;
  if (!parse_number(text, size, &pos, r.on_cpu_ns) || !parse_number(text, size, &pos, r.wait_ns) ||
      !parse_number(text, size, &pos, r.timeslices))
    return false;
  out = r;
  return true;
}

SchedSampler& SchedSampler::operator=(SchedSampler&& other) noexcept {
  if (this == &other) return *this;
  close_all();
  header_ = other.header_;
  ring_ = other.ring_;
  task_dir_ = other.task_dir_;
  next_sample_ns_ = other.next_sample_ns_;
  written_ = other.written_;
  for (std::size_t i = 0; i < format::kInFlightSlots; ++i) {
    threads_[i] = other.threads_[i];
    other.threads_[i].fd = -1;
  }
  return *this;
}

void SchedSampler::reset(Thread& t) noexcept {
  if (t.fd >= 0) ::close(t.fd);
  t = Thread{};
}

void SchedSampler::close_all() noexcept {
  for (Thread& t : threads_) reset(t);
}

bool SchedSampler::read(Thread& t, SchedReading& out) noexcept {
  if (t.failed) return false;
  if (t.fd < 0) {
    char path[256];
    const int n = std::snprintf(path, sizeof path, "%s/%u/schedstat", task_dir_, t.tid);
    if (n <= 0 || static_cast<std::size_t>(n) >= sizeof path) {
      t.failed = true;
      return false;
    }
    t.fd = ::open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (t.fd < 0) {
      t.failed = true;
      return false;
    }
  }
  // proc regenerates the line on every read at offset 0: one syscall per sample.
  char buf[96];
  const ssize_t got = ::pread(t.fd, buf, sizeof buf, 0);
  if (got <= 0 || !parse_schedstat(buf, static_cast<std::size_t>(got), out)) {
    // The thread is gone (ESRCH) or the file is not what the kernel writes: stop reading it.
    ::close(t.fd);
    t.fd = -1;
    t.failed = true;
    return false;
  }
  return true;
}

void SchedSampler::write(const Thread& t, int64_t at, const SchedReading& r) noexcept {
  format::Record rec{};
  rec.sched.prefix.kind = format::RecordKind::kSched;
  rec.sched.prefix.tid = t.tid;
  rec.sched.t_ns = at;
  rec.sched.on_cpu_ns = r.on_cpu_ns;
  rec.sched.wait_ns = r.wait_ns;
  rec.sched.timeslices = r.timeslices;
  if (ring_->push(rec)) ++written_;
}

void SchedSampler::sample_thread(Thread& t, uint32_t owner, int64_t now, bool final) noexcept {
  if (t.tid != owner) {  // the slot changed hands (its thread exited): a new thread
    reset(t);
    t.tid = owner;
  }
  SchedReading r;
  if (!read(t, r)) return;
  const bool jump = t.emitted && r.wait_ns >= t.emitted_wait + kEmitWaitNs;
  const bool due = !t.emitted || final || jump || now - t.emitted_t >= kMaxSilenceNs;
  if (!due) {
    t.pending = true;
    t.last_t = now;
    t.last = r;
    return;
  }
  // The sample before a jump: without it a reader would spread the jump over the whole silence
  // (at most 1 s); with it, over one sample period.
  if (jump && t.pending) write(t, t.last_t, t.last);
  write(t, now, r);
  t.emitted = true;
  t.pending = false;
  t.emitted_t = now;
  t.emitted_wait = r.wait_ns;
}

void SchedSampler::sample(int64_t now, bool final) noexcept {
  if (header_ == nullptr || ring_ == nullptr) return;
  if (!final && now < next_sample_ns_) return;
  next_sample_ns_ = now + kPeriodNs;
  for (std::size_t i = 0; i < format::kInFlightSlots; ++i) {
    const uint32_t owner = __atomic_load_n(&header_->in_flight[i].owner_tid, __ATOMIC_RELAXED);
    Thread& t = threads_[i];
    if (owner == 0) {
      if (t.tid != 0) reset(t);
      continue;
    }
    sample_thread(t, owner, now, final);
  }
}

}  // namespace ncclwatch::shim
