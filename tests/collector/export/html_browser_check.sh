#!/usr/bin/env bash
# The --html page in a real headless browser (Debian's chromium):
#   - of four fake 4-rank jobs (2 hosts) run by `ncclwatch run --html`, one per shape the
#     pattern verdict names: sawtooth (every rank stalls 30 ms before each step: a data loader),
#     checkpoint (every rank stalls 60 ms after steps 3, 7, 11), flat-low (many tiny launch-bound
#     kernels), straggler (rank 1 stalls 30 ms before each step);
#   - of a simulated job whose every name the page can show (job, hosts, step and kernel names,
#     comm names, hence the finding texts) holds `<!--<script>`, `</script>`, U+2028, ...
#     (html_page_fixture hostile): the strings must stay data, shown as text.
# Each page must load with no console message and no script error (<body data-status="ok">),
# every plot must have data (data-plots = 10: the run's history from the shim's step summaries
# and 9 more; the hostile fixture, a report without history, 9), and what each plot drew must be right
# (html_page_check.py: axes with units, no partial last step, numbers for people, and the shape
# the scenario's verdict names in the curve, the per-rank rows and the swimlane). A screenshot
# of each page is taken: docs/html-<scenario>.png are these (copied by hand). The checkpoint
# page is opened once more as PAGE#steps=5-6 (a zoom's link): its fine window holds those steps.
# Skips (exit 77) when chromium is not installed (scripts/setup.sh installs it).
#   html_browser_check.sh NCCLWATCH SHIM_LIB FAKE_LAUNCHER FAKE_TRAIN PAGE_FIXTURE WORKDIR
set -euo pipefail
ncclwatch=$1 shim=$2 launcher=$3 train=$4 fixture=$5 work=$6
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "SKIP: no chromium (apt-get install chromium; scripts/setup.sh does)"
  exit 77
fi
checker="$(dirname "$0")/html_page_check.py"
rm -rf "$work" && mkdir -p "$work"
failed=0

# check_page NAME SHAPE [PLOTS]: $work/NAME.html loads, draws PLOTS plots (10) as
# html_page_check.py SHAPE expects, logs nothing; leaves NAME.dom.html and NAME.png.
check_page() {
  local name=$1 shape=$2 page="$work/$1.html" want=${3:-10}
  if grep -qE 'src="http|href="http|@import' "$page"; then
    echo "FAIL [$name]: the page refers to the network"; return 1
  fi
  local flags=(--headless --no-sandbox --disable-gpu --disable-extensions --no-first-run
               --user-data-dir="$work/profile-$name" --enable-logging=stderr --v=0)
  timeout 120 "$browser" "${flags[@]}" --dump-dom "file://$page" >"$work/$name.dom.html" \
    2>"$work/$name.browser.log" ||
    { echo "FAIL [$name]: chromium failed"; tail -20 "$work/$name.browser.log"; return 1; }
  timeout 120 "$browser" "${flags[@]}" --window-size=1160,1750 --hide-scrollbars \
    --screenshot="$work/$name.png" "file://$page" >/dev/null 2>>"$work/$name.browser.log" ||
    { echo "FAIL [$name]: chromium screenshot failed"; tail -20 "$work/$name.browser.log"; return 1; }
  local status plots
  status=$(grep -o 'data-status="[^"]*"' "$work/$name.dom.html" | head -1 || true)
  plots=$(grep -o 'data-plots="[0-9]*"' "$work/$name.dom.html" | head -1 || true)
  echo "[$name] page: $status $plots"
  if [ "$status" != 'data-status="ok"' ]; then
    echo "FAIL [$name]: the page did not finish: ${status:-no data-status}"; return 1
  fi
  if [ "$plots" != "data-plots=\"$want\"" ]; then
    echo "FAIL [$name]: not every plot has data: $plots"; return 1
  fi
  if grep -q 'CONSOLE' "$work/$name.browser.log"; then
    echo "FAIL [$name]: console messages:"; grep 'CONSOLE' "$work/$name.browser.log"; return 1
  fi
  if [ ! -s "$work/$name.png" ]; then echo "FAIL [$name]: no screenshot"; return 1; fi
  python3 "$checker" "$shape" "$work/$name.dom.html" || return 1
  echo "[$name] screenshot $work/$name.png ($(stat -c %s "$work/$name.png") bytes)"
}

hosts=(--env-rank 0 NCCLWATCH_HOST=node-a --env-rank 1 NCCLWATCH_HOST=node-a
       --env-rank 2 NCCLWATCH_HOST=node-b --env-rank 3 NCCLWATCH_HOST=node-b)
# pattern_scenarios_test.cpp's workload: a ~103 ms step of 100 ms compute, 4 buckets of 25 MiB.
workload=(--fwd-us 30000 --bwd-us 60000 --opt-us 10000 --bucket-mb 25 --nvtx)
# The fake GPU dates launches from the host's virtual position, so a busy machine cannot reshape
# the GPU timeline the page draws (as in scenario_run.h).
export NCCLWATCH_FAKE_VIRTUAL_HOST=1
# job NAME STEPS FAKE_TRAIN_ARGS...: `ncclwatch run --html $work/NAME.html` of a fake 4-rank job.
job() {
  local name=$1 steps=$2; shift 2
  NCCLWATCH_LIB="$shim" "$ncclwatch" run --dir "$work/traces-$name" --html "$work/$name.html" -- \
    "$launcher" --nproc 4 "${hosts[@]}" -- "$train" --steps "$steps" "$@" >"$work/$name.log" 2>&1 ||
    { echo "FAIL [$name]: the job or its report failed"; cat "$work/$name.log"; return 1; }
}
checkpoints=()
for r in 0 1 2 3; do for s in 3 7 11; do checkpoints+=(--stall-step "$r:$s:60"); done; done
job sawtooth 12 "${workload[@]}" --stall 0:30 --stall 1:30 --stall 2:30 --stall 3:30 &&
  check_page sawtooth sawtooth || failed=1
job checkpoint 13 "${workload[@]}" "${checkpoints[@]}" && check_page checkpoint checkpoint || failed=1
# The same page opened on a step range (PAGE#steps=5-6, what zooming writes in the address): the
# fine window draws those steps only.
if [ -f "$work/checkpoint.html" ]; then
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-extensions --no-first-run \
    --user-data-dir="$work/profile-zoom" --dump-dom "file://$work/checkpoint.html#steps=5-6" \
    >"$work/zoom.dom.html" 2>"$work/zoom.browser.log" &&
    python3 "$checker" zoom:5-6 "$work/zoom.dom.html" || { echo "FAIL [zoom]: see above"; failed=1; }
fi
job flat-low 60 --layers 50 --fwd-us 1000 --bwd-us 1000 --opt-us 20 --bucket-mb 1 --launch-us 40 \
  --nvtx && check_page flat-low flat-low || failed=1
job straggler 12 "${workload[@]}" --stall 1:30 && check_page straggler straggler || failed=1

if "$fixture" hostile "$work/hostile.html" "$work/hostile.json"; then
  if check_page hostile any 9; then
    # The names are on the page as text: the title and a finding show the hostile strings.
    dom="$work/hostile.dom.html"
    if ! grep -qF 'job&lt;!--&lt;script&gt;x&lt;/script&gt;' "$dom"; then
      echo "FAIL [hostile]: the job name is not shown as text in the title"; failed=1
    fi
    if ! grep -qF 'node-a&lt;!--&lt;script&gt;' "$dom"; then
      echo "FAIL [hostile]: the straggler's host name is not shown as text"; failed=1
    fi
  else
    failed=1
  fi
else
  echo "FAIL [hostile]: html_page_fixture failed"; failed=1
fi
[ "$failed" = 0 ] && echo "OK: every page loaded and drew its plots"
exit "$failed"
