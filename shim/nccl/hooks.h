// Declarations generated from nccl_hooks.def: the real function's type (Fn<Name>), its lazy
// resolver (real<Name>()) and the recording hook (hook<Name>) the exported wrapper calls.
#pragma once

#include <nccl.h>

#include "ncclwatch/format.h"

namespace ncclwatch::shim {

// Cached lookup of the real function (see real_nccl.cpp). nullptr if no libnccl provides it.
void* resolve_real(format::Func func, const char* name) noexcept;
// Resolves a function the shim calls but does not hook (e.g. "CommCount"); cached by the caller.
void* resolve_real_extra(const char* name) noexcept;
// The impossible case: our wrapper was called but no NCCL defines the function. One line.
ncclResult_t missing_real(format::Func func, const char* name) noexcept;

#define NCCLWATCH_HOOK(name, params, args)                                         \
  using Fn##name = ncclResult_t(*) params;                                         \
  inline Fn##name real##name() noexcept {                                          \
    return reinterpret_cast<Fn##name>(resolve_real(format::Func::k##name, #name)); \
  }                                                                                \
  ncclResult_t hook##name params;
#include "nccl/nccl_hooks.def"
#undef NCCLWATCH_HOOK

}  // namespace ncclwatch::shim
