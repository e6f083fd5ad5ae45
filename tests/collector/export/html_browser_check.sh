#!/usr/bin/env bash
# The --html page in a real headless browser (Debian's chromium):
#   - of a fake 4-rank job (2 hosts, every rank stalls 30 ms before each step), run by
#     `ncclwatch run --html`;
#   - of a simulated job whose every name the page can show (job, hosts, step and kernel names,
#     comm names, hence the finding texts) holds `<!--<script>`, `</script>`, U+2028, ...
#     (html_page_fixture hostile): the strings must stay data, shown as text.
# Each page must load with no console message and no script error (<body data-status="ok">),
# every plot must have data (data-plots = 5), and a screenshot is taken. Skips (exit 77) when
# chromium is not installed (scripts/setup.sh installs it).
#   html_browser_check.sh NCCLWATCH SHIM_LIB FAKE_LAUNCHER FAKE_TRAIN PAGE_FIXTURE WORKDIR
set -euo pipefail
ncclwatch=$1 shim=$2 launcher=$3 train=$4 fixture=$5 work=$6
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "SKIP: no chromium (apt-get install chromium; scripts/setup.sh does)"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work"
failed=0

# check_page NAME: $work/NAME.html loads, draws every plot, logs nothing; leaves NAME.dom.html.
check_page() {
  local name=$1 page="$work/$1.html"
  if grep -qE 'src="http|href="http|@import' "$page"; then
    echo "FAIL [$name]: the page refers to the network"; return 1
  fi
  local flags=(--headless --no-sandbox --disable-gpu --disable-extensions --no-first-run
               --user-data-dir="$work/profile-$name" --enable-logging=stderr --v=0)
  timeout 120 "$browser" "${flags[@]}" --dump-dom "file://$page" >"$work/$name.dom.html" \
    2>"$work/$name.browser.log" ||
    { echo "FAIL [$name]: chromium failed"; tail -20 "$work/$name.browser.log"; return 1; }
  timeout 120 "$browser" "${flags[@]}" --window-size=1200,2200 --hide-scrollbars \
    --screenshot="$work/$name.png" "file://$page" >/dev/null 2>>"$work/$name.browser.log" ||
    { echo "FAIL [$name]: chromium screenshot failed"; tail -20 "$work/$name.browser.log"; return 1; }
  local status plots
  status=$(grep -o 'data-status="[^"]*"' "$work/$name.dom.html" | head -1 || true)
  plots=$(grep -o 'data-plots="[0-9]*"' "$work/$name.dom.html" | head -1 || true)
  echo "[$name] page: $status $plots"
  if [ "$status" != 'data-status="ok"' ]; then
    echo "FAIL [$name]: the page did not finish: ${status:-no data-status}"; return 1
  fi
  if [ "$plots" != 'data-plots="5"' ]; then
    echo "FAIL [$name]: not every plot has data: $plots"; return 1
  fi
  if grep -q 'CONSOLE' "$work/$name.browser.log"; then
    echo "FAIL [$name]: console messages:"; grep 'CONSOLE' "$work/$name.browser.log"; return 1
  fi
  if [ ! -s "$work/$name.png" ]; then echo "FAIL [$name]: no screenshot"; return 1; fi
  echo "[$name] screenshot $work/$name.png ($(stat -c %s "$work/$name.png") bytes)"
}

hosts=(--env-rank 0 NCCLWATCH_HOST=node-a --env-rank 1 NCCLWATCH_HOST=node-a
       --env-rank 2 NCCLWATCH_HOST=node-b --env-rank 3 NCCLWATCH_HOST=node-b)
if NCCLWATCH_LIB="$shim" "$ncclwatch" run --dir "$work/traces" --html "$work/fake-job.html" -- \
  "$launcher" --nproc 4 "${hosts[@]}" -- "$train" --steps 12 --fwd-us 30000 --bwd-us 60000 \
  --opt-us 10000 --bucket-mb 25 --nvtx --stall 0:30 --stall 1:30 --stall 2:30 --stall 3:30 \
  >"$work/fake-job.log" 2>&1; then
  check_page fake-job || failed=1
else
  cat "$work/fake-job.log"; failed=1
fi

if "$fixture" hostile "$work/hostile.html" "$work/hostile.json"; then
  if check_page hostile; then
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
