#!/usr/bin/env python3
"""A rank of a fake job that gets stuck in a known Python function (docs/always-on.md, "Where a
stuck rank is"; tests/e2e/stacks_test.cpp). Every rank runs this script under fake_launcher; all
but rank STUCK_RANK (default 3) exec fake_rank (FAKE_RANK) with the same arguments. Rank
STUCK_RANK stays this Python process: it calls the fake NCCL through ctypes (through the
preloaded shim, as PyTorch's libtorch would), and at step STUCK_STEP (default 2) it enters
load_batch(), a data loader waiting on a queue its worker never fills (the standard library's
queue.get and threading frames inside it), while the other ranks wait in the next all-reduce.
Arguments are fake_rank's: --steps N --colls K (K all-reduces of 1024 float32 a step).
"""
import ctypes
import os
import queue
import sys
import time

RANK = int(os.environ["RANK"])
if RANK != int(os.environ.get("STUCK_RANK", "3")):
    fake_rank = os.environ["FAKE_RANK"]
    os.execv(fake_rank, [fake_rank] + sys.argv[1:])

# The fake libnccl in the global scope, then every NCCL function looked up there: the preloaded
# shim's wrappers come first, as they do for an application linked against NCCL.
ctypes.CDLL(os.environ["FAKE_NCCL_LIB"], mode=ctypes.RTLD_GLOBAL)
nccl = ctypes.CDLL(None)


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


def unique_id():
    """The id rank 0 (fake_rank) writes to $FAKE_RDZV_DIR/world.uid."""
    path = os.path.join(os.environ["FAKE_RDZV_DIR"], "world.uid")
    for _ in range(120000):
        try:
            with open(path, "rb") as f:
                data = f.read()
            if len(data) == 128:
                return UniqueId.from_buffer_copy(data)
        except FileNotFoundError:
            pass
        time.sleep(0.001)
    sys.exit(5)


def load_batch(batches):
    """A data loader whose worker died: waits for a batch that never comes."""
    return batches.get()


def train(comm, steps, colls, stuck_step):
    buf = ctypes.c_float(0.0)
    nccl.ncclAllReduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                   ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    batches = queue.Queue()
    for step in range(steps):
        if step == stuck_step:
            load_batch(batches)
        for _ in range(colls):
            # 1024 float32 (7), sum (0), the default stream: what fake_rank calls.
            rc = nccl.ncclAllReduce(ctypes.byref(buf), ctypes.byref(buf), 1024, 7, 0, comm, None)
            if rc != 0:
                sys.exit(4)


def main():
    steps, colls = 5, 2
    args = sys.argv[1:]
    for i in range(0, len(args) - 1, 2):
        if args[i] == "--steps":
            steps = int(args[i + 1])
        elif args[i] == "--colls":
            colls = int(args[i + 1])
    world = int(os.environ["WORLD_SIZE"])
    comm = ctypes.c_void_p()
    nccl.ncclCommInitRank.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, UniqueId,
                                      ctypes.c_int]
    if nccl.ncclCommInitRank(ctypes.byref(comm), world, unique_id(), RANK) != 0:
        sys.exit(4)
    train(comm, steps, colls, int(os.environ.get("STUCK_STEP", "2")))


main()
