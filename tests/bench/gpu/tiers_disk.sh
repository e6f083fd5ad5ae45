#!/usr/bin/env bash
# Disk per rank per day under the defaults of a plain LD_PRELOAD (NCCLWATCH_DETAIL=windows,
# NCCLWATCH_CAPTURE=first:50; docs/always-on.md), label bench. Two ranks of fake_train (a 10 ms
# step: 8 layers forward and backward, 4 all-reduce buckets) run 600 steps; the trace files are
# split by record kind: the first window's detail (written once), the always tier per step
# (StepRecord) and per second (clock anchors, scheduling samples, entry evidence), and the rest
# (identity, comms, names, window marks: once). A simulated day is 86400 s at 1 and 10 steps/s.
# Usage: tiers_disk.sh <fake_launcher> <fake_train> <libncclwatch.so>
set -euo pipefail
launcher=$1 train=$2 shim=$3
steps=600
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
start=$(date +%s.%N)
"$launcher" --nproc 2 --env LD_PRELOAD="$shim" --env NCCLWATCH_DIR="$work" --env NCCLWATCH_JOB=disk \
  --env NCCLWATCH_EXIT_LINE=off -- "$train" --steps "$steps" --bucket-mb 1 >/dev/null 2>&1
seconds=$(echo "$(date +%s.%N) - $start" | bc)
f=$(ls "$work"/*.trace | head -1)
# 320-byte header, 64-byte records; the kind is the first byte of each record.
tail -c +321 "$f" | od -An -v -tu1 -w64 | awk -v steps="$steps" -v secs="$seconds" '
  { n[$1]++ }
  END {
    detail = n[1] + n[2] + n[7] + n[9] + n[10] + n[11] + n[12]
    per_second = (n[6] + n[14] + n[15]) * 64 / secs
    per_step = n[16] * 64 / steps
    once = (n[3] + n[4] + n[5] + n[8] + n[13] + n[17]) * 64
    window = detail * 64
    printf "run: %d steps in %.1f s, %d records (%d detail, %d step summaries)\n", steps, secs, \
      detail + n[3] + n[4] + n[5] + n[6] + n[8] + n[13] + n[14] + n[15] + n[16] + n[17], detail, n[16]
    printf "first window (first:50, detail): %.1f KB; written once: %.1f KB\n", window / 1e3, once / 1e3
    printf "always tier: %.0f B per step + %.0f B per second (clock %.1f, scheduling samples %.1f, entry evidence %.1f records/s)\n", per_step, per_second, n[6] / secs, n[15] / secs, n[14] / secs
    for (rate = 1; rate <= 10; rate *= 10)
      printf "per rank per simulated day at %2d steps/s: %.1f MB\n", rate, \
        (86400 * (rate * per_step + per_second) + window + once) / 1e6
  }'
