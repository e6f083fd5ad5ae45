#!/usr/bin/env bash
# Runs one command and checks both its exit status and its output (CTest's
# PASS_REGULAR_EXPRESSION alone ignores the exit status).
#
#   expect_cli.sh [checks...] -- COMMAND [ARGS...]
#     --rc N             exit status must be N
#     --rc-error         exit status must be non-zero and not a signal or a timeout (an error
#                        exit, not 134 SIGABRT / 139 SIGSEGV / 124 timeout)
#     --stdout RE        stdout must match the extended regex RE (grep -E)
#     --no-stdout RE     stdout must not match RE
#     --stderr RE        stderr must match RE
#     --stderr-lines N   stderr must be exactly N lines
#     --file PATH RE     after the run, PATH must exist and match RE
#     --vmem KIB         run the command under `ulimit -v KIB` (address space)
#     --stdin PATH       feed PATH on stdin (default /dev/null)
#     --timeout S        kill the command after S seconds (default 300): a hang fails the test
#     --as-nobody        when run as root, run the command as user nobody (permission tests):
#                        the program and every file argument nobody cannot reach (the clone
#                        may sit in a private 0700 directory) run from copies in a
#                        world-readable directory under /tmp, modes kept; exit 77 (skipped)
#                        when that cannot be arranged
#     --as-other-user    the same, but exit 77 (skipped) unless run as root: the test is about
#                        what another user meets
set -u
as_nobody=0 other_only=0 rc_want="" rc_error=0 vmem="" stdin=/dev/null timeout_s=300 stderr_lines=""
declare -a out_re=() no_out_re=() err_re=() files=() file_re=()
while [ $# -gt 0 ]; do
  case "$1" in
    --rc) rc_want=$2; shift 2 ;;
    --rc-error) rc_error=1; shift ;;
    --stdout) out_re+=("$2"); shift 2 ;;
    --no-stdout) no_out_re+=("$2"); shift 2 ;;
    --stderr) err_re+=("$2"); shift 2 ;;
    --stderr-lines) stderr_lines=$2; shift 2 ;;
    --file) files+=("$2"); file_re+=("$3"); shift 3 ;;
    --vmem) vmem=$2; shift 2 ;;
    --stdin) stdin=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --as-nobody) as_nobody=1; shift ;;
    --as-other-user) as_nobody=1 other_only=1; shift ;;
    --) shift; break ;;
    *) echo "expect_cli.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "expect_cli.sh: no command" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/expect_cli.XXXXXX")
trap 'rm -rf "$work"' EXIT
for f in "${files[@]+"${files[@]}"}"; do rm -f "$f"; done
declare -a prefix=()
skip() { echo "SKIPPED: $*"; exit 77; }
if [ "$other_only" = 1 ] && [ "$(id -u)" != 0 ]; then
  skip "acting as another user (nobody) needs root"
fi
if [ "$as_nobody" = 1 ] && [ "$(id -u)" = 0 ]; then
  prefix=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  command -v setpriv >/dev/null || skip "setpriv is not installed"
  shared=$(mktemp -d /tmp/expect_cli_nobody.XXXXXX) || skip "cannot make a directory in /tmp"
  trap 'rm -rf "$work" "$shared"' EXIT
  chmod 755 "$shared"
  "${prefix[@]}" test -x "$shared" || skip "user nobody cannot enter $shared"
  declare -a args=()
  for a in "$@"; do
    # Copied when it exists and nobody cannot see it where it is (a path inside a private dir).
    # Its directory is copied with its mode (not its contents): a path the test made private
    # stays private.
    if [ -e "$a" ] && ! "${prefix[@]}" test -e "$a"; then
      copy="$shared/${#args[@]}"
      mkdir "$copy" && cp -pR "$a" "$copy/" && chmod --reference="$(dirname "$a")" "$copy" ||
        skip "cannot copy $a for user nobody"
      args+=("$copy/$(basename "$a")")
    else
      args+=("$a")
    fi
  done
  set -- "${args[@]}"
fi
(
  if [ -n "$vmem" ]; then ulimit -v "$vmem" || exit 125; fi
  ulimit -c 0
  exec timeout -k 5 "$timeout_s" "${prefix[@]+"${prefix[@]}"}" "$@"
) <"$stdin" >"$work/out" 2>"$work/err"
rc=$?

fail=0
complain() { echo "FAIL: $*"; fail=1; }
echo "command: $*"
echo "exit status: $rc"
echo "--- stdout (first 40 lines)"; head -n 40 "$work/out"
echo "--- stderr (first 40 lines)"; head -n 40 "$work/err"
echo "---"
if [ -n "$rc_want" ] && [ "$rc" != "$rc_want" ]; then complain "exit status $rc, want $rc_want"; fi
if [ "$rc_error" = 1 ]; then
  if [ "$rc" = 0 ] || [ "$rc" -ge 124 ]; then
    complain "exit status $rc, want an error exit (1..123: not success, signal or timeout)"
  fi
fi
for re in "${out_re[@]+"${out_re[@]}"}"; do
  grep -Eq -- "$re" "$work/out" || complain "stdout does not match: $re"
done
for re in "${no_out_re[@]+"${no_out_re[@]}"}"; do
  if grep -Eq -- "$re" "$work/out"; then complain "stdout matches: $re"; fi
done
for re in "${err_re[@]+"${err_re[@]}"}"; do
  grep -Eq -- "$re" "$work/err" || complain "stderr does not match: $re"
done
if [ -n "$stderr_lines" ]; then
  n=$(wc -l <"$work/err")
  [ "$n" = "$stderr_lines" ] || complain "stderr has $n lines, want $stderr_lines"
fi
for i in "${!files[@]}"; do
  if [ ! -f "${files[$i]}" ]; then
    complain "no file ${files[$i]}"
  elif ! grep -Eq -- "${file_re[$i]}" "${files[$i]}"; then
    complain "${files[$i]} does not match: ${file_re[$i]}"
  fi
done
[ "$fail" = 0 ] && echo "PASS"
exit "$fail"
