#!/bin/sh
# plain_launch.sh CMD ARGS: 4 ranks of CMD, like mpirun without its teardown: a rank that dies
# leaves the others running, so they reach the next collective and wait there (the hang the
# fake NCCL ends with FAKE_NCCL_TIMEOUT_S).
rdzv=$(mktemp -d)
for r in 0 1 2 3; do
  RANK=$r LOCAL_RANK=$r WORLD_SIZE=4 LOCAL_WORLD_SIZE=4 FAKE_RDZV_DIR=$rdzv "$@" &
done
wait
rm -rf "$rdzv"
