#!/usr/bin/env bash
# End-to-end: interrupting `tailor build` stops the whole process tree (pip, the build
# backend, Ninja and the edges Ninja runs in process groups of their own, orphans that
# ignore SIGINT), prints one line, exits 128+signal, publishes nothing and keeps the work
# folder; the next run reuses what finished (reported from Ninja's counts). Then the same
# with kill -9 of tailor: its supervisor kills the tree. Real processes, no GPU, no
# compiler during the builds (a tiny package whose build is a Ninja run of sleeps).
set -u
set -m  # background jobs get their own process group, as at a terminal
: "${TAILOR:?TAILOR must point at the built binary}"
[ -x "$TAILOR" ] || { echo "skip: $TAILOR not built"; exit 77; }
python3 -c 'import torch, setuptools, wheel' 2>/dev/null || { echo "skip: python3 with torch, setuptools, wheel needed"; exit 77; }
command -v ninja >/dev/null || { echo "skip: no ninja"; exit 77; }
# tailor's pre-flight probe gives `import torch` 30 s; a machine too loaded for that
# would fail every build here for a reason unrelated to this test.
t0=$SECONDS
python3 -c 'import torch' 2>/dev/null
[ $((SECONDS - t0)) -lt 20 ] || { echo "skip: python3 took $((SECONDS - t0)) s to import torch (machine too loaded)"; exit 77; }
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/sleepy_package.sh"

# shellcheck source=lib/common.sh
. "$here/lib/common.sh"  # fail, ok, bad, expect_eq, expect_grep

tmp=$(mktemp -d)
cleanup() {
  # Never leave a tree behind, whatever happened above.
  for t in "${tokens[@]:-}"; do
    tagged_processes "$t" | while read -r p _; do kill -9 "$p" 2>/dev/null; done
  done
  rm -rf "$tmp"
}
tokens=()
trap cleanup EXIT

so=$(sleepy_kernel_so "${TAILOR_BINARY_DIR:-$tmp}/e2e-sleepy-kernel")
[ -n "$so" ] || { echo "skip: no nvcc to make the package's CUDA library"; exit 77; }
make_sleepy_package "$tmp/pkg" "$so"
mkdir -p "$tmp/out"
echo "an older build" >"$tmp/out/keep.txt"

# start_build NAME WORK: starts tailor in the background (own process group); sets $pid.
start_build() {
  local name=$1 work=$2
  tok="$name-$$-$RANDOM"
  tokens+=("$tok")
  ctl="$tmp/ctl-$name"
  touch "$ctl.slow"
  TAILOR_E2E_TOKEN=$tok TAILOR_E2E_CTL=$ctl TAILOR_E2E_RUN=$name \
    "$TAILOR" build "$tmp/pkg" --arch 7.5 --out "$tmp/out" --work-dir "$work" --progress plain --cache none \
    >"$tmp/$name.stdout" 2>"$tmp/$name.stderr" &
  pid=$!
  if wait_until 120 test -e "$ctl.started"; then ok "$name: the build's tree is running"; else
    bad "$name: the build never reached its slow step"; sed 's/^/    /' "$tmp/$name.stderr" | tail -20; fi
  [ -n "$(tagged_processes "$tok")" ] && ok "$name: processes tagged for the check" || bad "$name: no tagged processes"
}

# check_gone NAME: no process of the tree is left once tailor has exited. Polled with a
# deadline (a loaded machine can be slow to deliver and reap), the time taken is shown.
none_tagged() { [ -z "$(tagged_processes "$tok")" ]; }
check_gone() {
  local name=$1 start=$SECONDS
  if wait_until 10 none_tagged; then ok "$name: no process left ($((SECONDS - start)) s after exit)"; else
    bad "$name: processes left:"; tagged_processes "$tok" | sed 's/^/    /'; fi
}
check_out_untouched() {
  expect_eq "$1: output folder as it was" "$(ls -A "$tmp/out" | tr '\n' ' ')" "keep.txt "
  expect_eq "$1: no staging folder" "$(ls -A "$tmp" | grep -c tailor-staging)" 0
}

# 1. SIGINT to tailor's process group, as a terminal's Ctrl-C sends it.
start_build group "$tmp/work"
kill -INT -- "-$pid"
wait "$pid"
expect_eq "group: exit 130" "$?" 130
check_gone group
expect_grep "group: one line says so" "^tailor: interrupted; nothing published$" "$tmp/group.stderr"
expect_eq "group: no error line besides" "$(grep -c '^tailor: error' "$tmp/group.stderr")" 0
check_out_untouched group
wd=$(ls -d "$tmp/work"/pkg-*/ 2>/dev/null | head -1)
[ -n "$wd" ] && [ -L "$wd/build.log" ] && ok "work folder kept with its build.log link" || bad "work folder or build.log link missing"
[ -n "$wd" ] && expect_grep "the run's log says it was interrupted" "interrupted by signal 2" "$wd/build.log"
[ -e "$wd/src/build/ninja/a.o" ] && ok "finished Ninja outputs kept" || bad "no src/build/ninja/a.o in the work folder"

# 2. Resume: the same build again, now without the slow edge, reuses the three edges
#    that finished and publishes.
rm -f "$tmp/ctl-resume.slow"
TAILOR_E2E_CTL="$tmp/ctl-resume" "$TAILOR" build "$tmp/pkg" --arch 7.5 --out "$tmp/out" --work-dir "$tmp/work" \
  --progress plain --cache none --json >"$tmp/resume.json" 2>"$tmp/resume.stderr"
rc=$?
expect_eq "resume: exit 0" "$rc" 0
[ "$rc" = 0 ] || sed 's/^/    /' "$tmp/resume.stderr" | tail -30
python3 - "$tmp/resume.json" <<'PY' && ok "resume: report says 3 of 4 Ninja steps reused" || bad "resume: reused units in the report"
import json, sys
u = json.load(open(sys.argv[1]))["run"]["reused_units"]
assert u and u["reused"] == 3 and u["total"] == 4 and "Ninja" in u["source"], u
PY
expect_eq "resume: two per-run logs" "$(ls "$wd" | grep -c '^build-.*\.log$')" 2

# 3. SIGINT to tailor alone (not its group): it forwards the signal itself.
rm -rf "$tmp/out"/tailor_sleepy*
start_build alone "$tmp/work-alone"
kill -INT "$pid"
wait "$pid"
expect_eq "alone: exit 130" "$?" 130
check_gone alone
expect_grep "alone: one line says so" "^tailor: interrupted; nothing published$" "$tmp/alone.stderr"
check_out_untouched alone

# 4. SIGTERM: 128+15.
start_build term "$tmp/work-term"
kill -TERM "$pid"
wait "$pid"
expect_eq "term: exit 143" "$?" 143
check_gone term

# 5. kill -9 of tailor: no handler runs; the supervisor must clean up.
start_build kill9 "$tmp/work-kill9"
kill -9 "$pid"
wait "$pid"
expect_eq "kill9: exit 137" "$?" 137
check_gone kill9
check_out_untouched kill9
exit $fail
