// The exported NCCL entry points, generated from nccl_hooks.def. Each forwards to the real
// function unchanged when the calling thread is already inside a hooked call (NCCL calling its
// own API, e.g. ncclBcast -> ncclBroadcast: only the outermost call is recorded), and otherwise
// to its hook, which records around the real call.
#include "nccl/call_scope.h"
#include "nccl/hooks.h"

#define NCCLWATCH_EXPORT __attribute__((visibility("default")))

#define NCCLWATCH_HOOK(name, params, args)                                             \
  extern "C" NCCLWATCH_EXPORT ncclResult_t nccl##name params {                         \
    using namespace ncclwatch::shim;                                                   \
    Fn##name real = real##name();                                                      \
    if (real == nullptr) return missing_real(ncclwatch::format::Func::k##name, #name); \
    if (CallScope::nested()) return real args;                                         \
    CallScope scope;                                                                   \
    return hook##name args;                                                            \
  }
#include "nccl/nccl_hooks.def"
#undef NCCLWATCH_HOOK
