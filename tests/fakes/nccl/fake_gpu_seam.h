// The seam between the fake NCCL (tests/fakes/nccl) and the fake CUDA runtime/CUPTI
// (tests/fakes/cuda). Plain C ABI, looked up at run time by the fake NCCL with
// dlsym(RTLD_DEFAULT, ...): when no fake CUDA is loaded in the process, fake collectives are
// host-only (no kernel), exactly like a build without GPU timing.
//
// Protocol for one NCCL kernel (one collective, or one comm's share of a group at GroupEnd):
//  1. launch: on the thread that launches (the app thread, or the fake NCCL's own thread for a
//     non-blocking comm), the fake NCCL calls ncclwatch_fake_gpu_launch(stream, name, &token).
//     The fake CUDA runs the CUPTI driver-API launch callback (so correlation ids work), and
//     returns the kernel's virtual start time: max(now, time the stream becomes free).
//  2. the fake NCCL exchanges start times through its cross-process barrier; every rank computes
//     end = max(all starts) + transfer_ns(bytes) -- the same end on every rank.
//  3. complete: ncclwatch_fake_gpu_complete(token, end_ns). The stream is busy until end_ns; the
//     kernel's activity record (start, end, correlation, stream) is delivered through CUPTI.
#pragma once

#include <cstdint>

extern "C" {
typedef int64_t (*ncclwatch_fake_gpu_launch_fn)(void* stream, const char* kernel_name,
                                                uint64_t* token);
typedef void (*ncclwatch_fake_gpu_complete_fn)(uint64_t token, int64_t end_ns);
}

#define NCCLWATCH_FAKE_GPU_LAUNCH_SYMBOL "ncclwatch_fake_gpu_launch"
#define NCCLWATCH_FAKE_GPU_COMPLETE_SYMBOL "ncclwatch_fake_gpu_complete"
