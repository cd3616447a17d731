#!/usr/bin/env bash
# End-to-end: two `tailor build`s into the same work folder. The second says once that it
# waits for the first (by pid), then runs; both succeed, each with its own log (the
# published copy is that run's log). With --no-wait the second fails at once with one
# line. Two builds into the same output folder from different work folders wait too.
# A tiny package whose build is a Ninja run the test holds open (tests/e2e/lib).
set -u
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
pids=()
cleanup() {
  for p in "${pids[@]:-}"; do [ -n "$p" ] && kill -TERM "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

so=$(sleepy_kernel_so "${TAILOR_BINARY_DIR:-$tmp}/e2e-sleepy-kernel")
[ -n "$so" ] || { echo "skip: no nvcc to make the package's CUDA library"; exit 77; }
make_sleepy_package "$tmp/pkg" "$so"

# build NAME WORK OUT [ARGS...] in the background; $last_pid is its pid. The build holds
# its slow edge while $tmp/ctl-NAME.hold exists.
build() {
  local name=$1 work=$2 out=$3
  shift 3
  TAILOR_E2E_CTL="$tmp/ctl-$name" TAILOR_E2E_RUN="$name" \
    "$TAILOR" build "$tmp/pkg" --arch 7.5 --work-dir "$work" --out "$out" --progress plain --cache none "$@" \
    >"$tmp/$name.stdout" 2>"$tmp/$name.stderr" &
  last_pid=$!
  pids+=("$last_pid")
}

# 1. Same work folder, different output folders: B waits for A, then both succeed.
touch "$tmp/ctl-A.hold"
build A "$tmp/work" "$tmp/outA"
a=$last_pid
wait_until 120 test -e "$tmp/ctl-A.started" || bad "A never reached its build step"
build B "$tmp/work" "$tmp/outB"
b=$last_pid
if wait_until 60 grep -q "^waiting for tailor build pid $a using " "$tmp/B.stderr"; then ok "B says it waits for A's pid"; else
  bad "B did not say it waits for pid $a"; sed 's/^/    /' "$tmp/B.stderr"; fi
[ -e "$tmp/ctl-B.started" ] && bad "B started building while A held the work folder" || ok "B did not build meanwhile"
rm -f "$tmp/ctl-A.hold"
wait "$a"; expect_eq "A: exit 0" "$?" 0
wait "$b"; expect_eq "B: exit 0" "$?" 0
expect_eq "B said it once" "$(grep -c '^waiting for' "$tmp/B.stderr")" 1
la=$(ls "$tmp/outA"/*.build.log 2>/dev/null)
lb=$(ls "$tmp/outB"/*.build.log 2>/dev/null)
if [ -n "$la" ] && [ -n "$lb" ]; then
  expect_grep "A's published log is A's run" "tailor-e2e run A" "$la"
  expect_grep "B's published log is B's run" "tailor-e2e run B" "$lb"
  grep -q "tailor-e2e run B" "$la" && bad "A's log holds B's run" || ok "A's log holds only A's run"
  grep -q "tailor-e2e run A" "$lb" && bad "B's log holds A's run" || ok "B's log holds only B's run"
else
  bad "published logs missing: '$la' '$lb'"
fi
wd=$(ls -d "$tmp/work"/pkg-*/ | head -1)
expect_eq "two per-run logs in the work folder" "$(ls "$wd" | grep -c '^build-.*\.log$')" 2
expect_eq "build.log points at the latest run (B)" "$(grep -c 'tailor-e2e run B' "$wd/build.log")" 1

# 2. --no-wait: fails at once with one line naming the holder. A fresh work folder: in
#    "$tmp/work" the kept build tree is complete, so Ninja would have nothing to run.
touch "$tmp/ctl-C.hold"
build C "$tmp/work-c" "$tmp/outC"
c=$last_pid
wait_until 120 test -e "$tmp/ctl-C.started" || bad "C never reached its build step"
build D "$tmp/work-c" "$tmp/outD" --no-wait
wait "$last_pid"; expect_eq "D (--no-wait): exit 1" "$?" 1
expect_grep "D names the holder" "^tailor: error: .* is in use by tailor build pid $c (--no-wait" "$tmp/D.stderr"
[ -e "$tmp/outD" ] && bad "D created its output folder" || ok "D wrote nothing"

# 3. Same output folder from another work folder: waits for the output folder.
build E "$tmp/work-e" "$tmp/outC"
e=$last_pid
if wait_until 60 grep -q "^waiting for tailor build pid $c using $tmp/outC" "$tmp/E.stderr"; then ok "E waits for the output folder"; else
  bad "E did not wait for the output folder"; sed 's/^/    /' "$tmp/E.stderr"; fi
rm -f "$tmp/ctl-C.hold"
wait "$c"; expect_eq "C: exit 0" "$?" 0
wait "$e"; expect_eq "E: exit 0" "$?" 0
exit $fail
