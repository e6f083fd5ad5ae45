#!/usr/bin/env bash
# A long job under the production defaults (label bench): issue 22's "done when".
# Two ranks of fake_train under a plain LD_PRELOAD (NCCLWATCH_DETAIL=windows, detail for the
# first 50 steps, NCCLWATCH_MAX_MB's default budget), STEPS steps (default 1,000,000) in
# compressed time (tiny steps: ~0.1 ms each), `ncclwatch capture --steps 20` once mid-run.
# Checks: each rank's trace files stay within the budget; every step has its summary; the
# report opens with the run's history and has both windows. Prints: the job's wall time, bytes
# per rank (and per step outside windows, and per simulated day at one step a second), the
# report's wall time and peak RSS.
# Usage: long_run.sh <fake_launcher> <fake_train> <libncclwatch.so> <ncclwatch> <fake libcupti> [STEPS]
set -euo pipefail
launcher=$1 train=$2 shim=$3 cli=$4 cupti=$5 steps=${6:-1000000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dir=$work/traces
mkdir -p "$dir"
budget_mb=256  # NCCLWATCH_MAX_MB's default (docs/always-on.md)
fail=0
t0=$(date +%s.%N)
"$launcher" --nproc 2 --env LD_PRELOAD="$shim" --env NCCLWATCH_DIR="$dir" --env NCCLWATCH_JOB=longrun \
  --env NCCLWATCH_CUPTI="$cupti" --env NCCLWATCH_EXIT_LINE=off -- "$train" --steps "$steps" \
  --buckets 1 --layers 1 --fwd-us 1 --bwd-us 1 --opt-us 1 --bucket-mb 0.001 >"$work/job.out" 2>"$work/job.err" &
job=$!
# Mid-run (the trace files exist and the first 50 steps are long past): a window on demand.
for _ in $(seq 1 200); do
  compgen -G "$dir/*.trace" >/dev/null && break
  sleep 0.1
done
sleep 3
"$cli" capture --job longrun --dir "$dir" --steps 20 >"$work/capture.out" 2>&1 || { echo "FAIL: capture"; cat "$work/capture.out"; fail=1; }
wait $job || { echo "FAIL: the job exited $?"; tail "$work/job.err"; exit 1; }
t1=$(date +%s.%N)
printf 'job: 2 ranks x %d steps in %.0f s\n' "$steps" "$(echo "$t1 - $t0" | bc)"
for pid in $(ls "$dir" | sed -n 's/^ncclwatch\.[^.]*\.\([0-9]*\)\..*trace$/\1/p' | sort -u); do
  bytes=$(cat "$dir"/ncclwatch.*."$pid".*trace "$dir"/ncclwatch.*."$pid".trace 2>/dev/null | wc -c)
  parts=$(ls "$dir" | grep -c "\.$pid\.\(.*\.\)\?trace$" || true)
  # Per step only: in compressed time the per-second records (clock anchors, scheduling samples)
  # spread over thousands of steps; gpu_tiers_disk measures a day in real time.
  printf 'rank pid %s: %d bytes in %d part(s) (budget %d MiB), %.1f bytes/step (a day of steps at 1 step/s: %.1f MB, plus the per-second records)\n' \
    "$pid" "$bytes" "$parts" "$budget_mb" "$(echo "$bytes / $steps" | bc -l)" "$(echo "$bytes / $steps * 86400 / 1000000" | bc -l)"
  [ "$bytes" -le $((budget_mb * 1024 * 1024)) ] || { echo "FAIL: pid $pid over its budget"; fail=1; }
done
/usr/bin/time -f '%e %M' -o "$work/time" "$cli" report "$dir" --json "$work/report.json" >"$work/report.txt" 2>"$work/report.err" || true
read -r wall rss < <(tail -1 "$work/time")
printf 'report: %s s wall, peak RSS %d MiB\n' "$wall" $((rss / 1024))
grep -q '^== History' "$work/report.txt" || { echo "FAIL: no history in the report"; fail=1; }
python3 - "$work/report.json" "$steps" <<'PY' || fail=1
import json, sys
r = json.load(open(sys.argv[1]))
steps = int(sys.argv[2])
h = r.get("history") or {}
w = r.get("windows") or []
print(f"history: {h.get('steps')} steps, {len(h.get('periods', []))} periods; windows: "
      + ", ".join(str(x.get("trigger")) for x in w))
ok = (h.get("steps") or 0) >= steps and len(w) >= 2
if not ok:
    print("FAIL: history or windows missing")
sys.exit(0 if ok else 1)
PY
sed -n '/^== History/,/^$/p' "$work/report.txt" | head -12
exit $fail
