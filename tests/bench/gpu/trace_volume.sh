#!/usr/bin/env bash
# Trace volume per training step, and how NCCLWATCH_KERNELS bounds it (label bench).
# A "realistic" step for a mid-size model: 600 forward + 600 backward kernels, 25 all-reduce
# buckets, one optimizer kernel (ResNet-50 launches ~1 k kernels per step, a GPT-2 layer stack
# a few thousand). Two ranks of fake_train under the shim; bytes per step per rank from the
# trace files. Usage: trace_volume.sh <fake_launcher> <fake_train> <libncclwatch.so>
set -euo pipefail
launcher=$1 train=$2 shim=$3
steps=24  # > 4 s of run: sampled:4 sees whole 1-second windows
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '%-14s %14s %14s %12s\n' "NCCLWATCH_KERNELS" "bytes/step" "records/step" "kernels/step"
for policy in all sampled:4 nccl; do
  dir=$work/$policy
  mkdir -p "$dir"
  "$launcher" --nproc 2 --env LD_PRELOAD="$shim" --env NCCLWATCH_DIR="$dir" --env NCCLWATCH_JOB=vol \
    --env NCCLWATCH_KERNELS="$policy" -- "$train" --steps "$steps" --layers 600 --buckets 25 \
    --fwd-us 60000 --bwd-us 120000 --bucket-mb 4 --nvtx >/dev/null 2>&1
  f=$(ls "$dir"/*.trace | head -1)
  bytes=$(stat -c %s "$f")
  # 320-byte header, 64-byte records; kind is the first byte of each record (7 = kernel).
  kernels=$(tail -c +321 "$f" | od -An -v -tu1 -w64 | awk '$1 == 7 {n++} END {print n+0}')
  records=$(( (bytes - 320) / 64 ))
  printf '%-14s %14d %14d %12d\n' "$policy" $(( (bytes - 320) / steps )) $(( records / steps )) $(( kernels / steps ))
done
