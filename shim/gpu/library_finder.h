// Finding CUDA libraries at run time without linking them: which ones the process already
// loaded (dl_iterate_phdr) and where a CUPTI matching the application's CUDA runtime lives.
#pragma once

#include <string>
#include <vector>

namespace ncclwatch::shim::gpu {

// Path of the first loaded object whose file name starts with `prefix` (e.g. "libcudart.so"),
// or "" when none is loaded. Off the hot path (walks the link map).
std::string loaded_library(const char* prefix);

// True when the process has any CUDA runtime or driver library loaded: the shim never starts
// GPU timing in a process that does not use CUDA.
bool process_uses_cuda();

// Candidate CUPTI paths, best first: NCCLWATCH_CUPTI; a libcupti already loaded (PyTorch's);
// one next to the application's libcudart (same folder, pip's nvidia/cuda_cupti, the toolkit's
// extras/CUPTI); the CUDA install; finally the plain soname for the dynamic loader's search.
std::vector<std::string> cupti_candidates();

}  // namespace ncclwatch::shim::gpu
