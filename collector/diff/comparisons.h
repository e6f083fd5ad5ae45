// The parts of a comparison, each filling its fields of DiffResult from result.base and
// result.now (run_comparison.cpp calls them in this order; the verdict comes last).
#pragma once

#include "diff/diff_result.h"

namespace ncclwatch::diff {

// "busbw:all_reduce:16777216:cross-node": the key of a bus bandwidth class's row.
std::string busbw_key(const BusbwFigures& b);

// The smallest change of a time per step worth a line: 1 % of the base step (1 µs at least).
double time_floor_us(const DiffResult& r);

// Step time and its parts; compute per rank class (median, slowest) and per rank.
void compare_steps(DiffResult& r);
// Overlap and exposed time per gradient bucket; bus bandwidth per op, size class and scope.
void compare_communication(DiffResult& r);
// Stragglers and slow links appearing or disappearing; the pattern verdict.
void compare_findings(DiffResult& r);
// Compute kernels whose time per step changed most (normalized names).
void compare_kernels(DiffResult& r);
// NCCL version, NCCL_* settings, algorithms, transports, ranks/hosts, GPU, CUDA.
void compare_environment(DiffResult& r);
// Whether the runs are the same job: size and steps (notes), communication and compute
// kernels (comm_differs, compute_differs, not_compared). Runs first: the others read it.
void match_jobs(DiffResult& r);
// The first line.
std::string verdict_line(const DiffResult& r);

}  // namespace ncclwatch::diff
