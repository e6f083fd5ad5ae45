// Thread-local reentrancy guard: only the outermost hooked call of a thread is recorded.
#pragma once

namespace ncclwatch::shim {

class CallScope {
 public:
  CallScope() noexcept { ++depth_; }
  ~CallScope() { --depth_; }
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;
  static bool nested() noexcept { return depth_ > 0; }

 private:
  static inline thread_local int depth_ = 0;
};

}  // namespace ncclwatch::shim
