// Per-thread ncclGroupStart/End nesting (NCCL's group state is per thread as well) and the
// process-wide counter that numbers outermost groups (group id 0 = not in a group).
#pragma once

#include <atomic>
#include <cstdint>

namespace ncclwatch::shim {

struct GroupState {
  uint32_t depth = 0;
  uint32_t group_id = 0;
};

GroupState& thread_group_state() noexcept;
uint32_t next_group_id() noexcept;

}  // namespace ncclwatch::shim
