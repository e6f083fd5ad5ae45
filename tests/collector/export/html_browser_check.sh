#!/usr/bin/env bash
# The --html page of a fake 4-rank job (2 hosts, every rank stalls 30 ms before each step) in a
# real headless browser (Debian's chromium): the page must load with no console message and no
# script error (<body data-status="ok">), every plot must have data (data-plots = 5), and a
# screenshot is taken. Skips (exit 77) when chromium is not installed (scripts/setup.sh installs it).
#   html_browser_check.sh NCCLWATCH SHIM_LIB FAKE_LAUNCHER FAKE_TRAIN WORKDIR
set -euo pipefail
ncclwatch=$1 shim=$2 launcher=$3 train=$4 work=$5
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "SKIP: no chromium (apt-get install chromium; scripts/setup.sh does)"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work"
hosts=(--env-rank 0 NCCLWATCH_HOST=node-a --env-rank 1 NCCLWATCH_HOST=node-a
       --env-rank 2 NCCLWATCH_HOST=node-b --env-rank 3 NCCLWATCH_HOST=node-b)
NCCLWATCH_LIB="$shim" "$ncclwatch" run --dir "$work/traces" --html "$work/report.html" -- \
  "$launcher" --nproc 4 "${hosts[@]}" -- "$train" --steps 12 --fwd-us 30000 --bwd-us 60000 \
  --opt-us 10000 --bucket-mb 25 --nvtx --stall 0:30 --stall 1:30 --stall 2:30 --stall 3:30 \
  >"$work/log.txt" 2>&1 || { cat "$work/log.txt"; exit 1; }
if grep -qE 'src="http|href="http|@import' "$work/report.html"; then
  echo "FAIL: the page refers to the network"; exit 1
fi
flags=(--headless --no-sandbox --disable-gpu --disable-extensions --no-first-run
       --user-data-dir="$work/profile" --enable-logging=stderr --v=0)
timeout 120 "$browser" "${flags[@]}" --dump-dom "file://$work/report.html" >"$work/dom.html" \
  2>"$work/browser.log" || { echo "FAIL: chromium failed"; tail -20 "$work/browser.log"; exit 1; }
timeout 120 "$browser" "${flags[@]}" --window-size=1200,2200 --hide-scrollbars \
  --screenshot="$work/screenshot.png" "file://$work/report.html" >/dev/null 2>>"$work/browser.log" ||
  { echo "FAIL: chromium screenshot failed"; tail -20 "$work/browser.log"; exit 1; }
status=$(grep -o 'data-status="[^"]*"' "$work/dom.html" | head -1)
plots=$(grep -o 'data-plots="[0-9]*"' "$work/dom.html" | head -1)
echo "page: $status $plots"
if [ "$status" != 'data-status="ok"' ]; then echo "FAIL: the page did not finish: $status"; exit 1; fi
if [ "$plots" != 'data-plots="5"' ]; then echo "FAIL: not every plot has data: $plots"; exit 1; fi
if grep -q 'CONSOLE' "$work/browser.log"; then
  echo "FAIL: console messages:"; grep 'CONSOLE' "$work/browser.log"; exit 1
fi
if [ ! -s "$work/screenshot.png" ]; then echo "FAIL: no screenshot"; exit 1; fi
echo "OK: screenshot $work/screenshot.png ($(stat -c %s "$work/screenshot.png") bytes)"
