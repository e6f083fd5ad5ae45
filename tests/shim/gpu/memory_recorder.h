// Test double of the shim's recording API (memory_recorder.cpp) plus helpers to inspect it.
#pragma once

#include <atomic>
#include <functional>
#include <vector>

#include "record/recorder.h"

namespace ncclwatch::shim {
extern std::atomic<uint64_t> test_cupti_dropped;
extern format::LossCounts test_losses;  // what add_loss counted (read after the threads joined)
extern std::atomic<uint32_t> test_timing_mode;
extern std::atomic<uint32_t> test_kernel_filter;  // set_kernel_filter's last code
extern std::atomic<bool> test_recording;
std::vector<format::Record> test_records();
void test_clear_records();
CallObserver* test_observer();
// Runs `real` as a wrapped NCCL call would: in_flight_call set, observer around it.
void test_call(const InFlightCall& call, const std::function<int()>& real);
}  // namespace ncclwatch::shim
