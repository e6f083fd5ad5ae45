// Control of the process's recorder beyond the hot-path API of recorder.h: used by the NCCL
// wrappers (identity from the first communicator) and by tests (finish and start again).
#pragma once

#include <cstdint>
#include <string>

#include "ncclwatch/format.h"

namespace ncclwatch::shim {

// Called by the wrappers for each communicator created: the first one supplies the global rank
// and world size if the environment did not (recorded as RankSource::kFirstComm), and the CUDA
// device if unknown.
void note_communicator(int rank, int nranks, int device) noexcept;

// Registers the exit flush (drain, close the trace, remove the segment) with atexit, once. Called
// by the load-time constructor so that it runs after the application's own atexit handlers and
// static destructors, which may still call NCCL; ensure_recorder() calls it too.
void install_exit_flush() noexcept;

// Finishes the recorder now as at normal exit (drain, close the trace file, remove the segment).
// A later ensure_recorder() creates a new one (tests use this).
void finish_recorder() noexcept;

// The trace file / segment name of the live recorder ("" when none): for tests.
std::string current_trace_path();
std::string current_segment_name();

// Records emitted but not yet drained to the trace file (0 when no recorder): for benchmarks.
uint64_t pending_records() noexcept;

}  // namespace ncclwatch::shim

namespace ncclwatch::shim {

// The wrappers' write access to the calling thread's in-flight call (recorder.h exposes it
// read-only) and the installed CallObserver (nullptr if none).
struct InFlightCall;
struct CallObserver;
InFlightCall& mutable_in_flight_call() noexcept;
CallObserver* call_observer() noexcept;

}  // namespace ncclwatch::shim
