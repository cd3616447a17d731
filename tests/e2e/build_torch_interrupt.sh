#!/usr/bin/env bash
# End-to-end: Ctrl-C (SIGINT to tailor's process group, as a terminal sends it) and then
# SIGTERM during `tailor build torch` stop the whole tree, including a child in a session
# of its own that ignores SIGINT; tailor says "interrupted", exits 128+signal, and publishes
# nothing; after kill -9 of tailor, its supervisor stops the tree. Runs tests/torch_fixture (a TEST FIXTURE) with a hook that holds its build step.
set -u
set -m  # background jobs get their own process group, as at a terminal
: "${TAILOR:?}" "${TAILOR_SOURCE_DIR:?}"
command -v nvcc >/dev/null || { echo "skip: no nvcc on PATH"; exit 77; }
py=$(python3 -c 'import sys; print(sys.executable)')
"$py" -c 'import setuptools, wheel' 2>/dev/null || { echo "skip: python3 lacks setuptools/wheel"; exit 77; }
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/sleepy_package.sh"  # tagged_processes, wait_until

# shellcheck source=lib/common.sh
. "$here/lib/common.sh"  # fail, ok, bad
tmp=$(mktemp -d)
tokens=()
cleanup() {
  for t in "${tokens[@]:-}"; do
    tagged_processes "$t" | while read -r p _; do kill -9 "$p" 2>/dev/null; done
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
cuda=$(nvcc --version | sed -n 's/.*release \([0-9]*\.[0-9]*\).*/\1/p')

# run_and_stop NAME SIGNAL TARGET: TARGET "group" signals tailor's process group (Ctrl-C),
# "pid" tailor alone (kill).
run_and_stop() {
  local name=$1 sig=$2 target=$3
  local tok="$name-$$-$RANDOM" ctl="$tmp/ctl-$name"
  tokens+=("$tok")
  cp -r "$TAILOR_SOURCE_DIR/tests/torch_fixture" "$tmp/src-$name"
  TAILOR_E2E_TOKEN=$tok TAILOR_E2E_CTL=$ctl \
    "$TAILOR" build torch --source "$tmp/src-$name" --arch 7.5 --cuda "$cuda" --python "$py" --without cudnn \
    --no-venv --work-dir "$tmp/work-$name" --out "$tmp/out-$name" >"$tmp/$name.out" 2>&1 &
  local pid=$!
  if ! wait_until 180 test -e "$ctl.started"; then
    bad "$name: the build never reached its held step"; sed 's/^/    /' "$tmp/$name.out" | tail -20
    kill -9 "$pid" 2>/dev/null; return
  fi
  [ -n "$(tagged_processes "$tok")" ] && ok "$name: the build's tree is running" || bad "$name: no tagged processes"
  if [ "$target" = group ]; then kill -s "$sig" -- "-$pid"; else kill -s "$sig" "$pid"; fi
  local t0=$SECONDS
  wait "$pid"
  local rc=$?
  local want=$((128 + $(kill -l "$sig")))
  [ "$rc" = "$want" ] && ok "$name: exit $rc" || { bad "$name: exit $rc, want $want"; tail -20 "$tmp/$name.out"; }
  [ $((SECONDS - t0)) -le 10 ] && ok "$name: stopped in $((SECONDS - t0)) s" || bad "$name: took $((SECONDS - t0)) s to stop"
  sleep 2
  local left; left=$(tagged_processes "$tok")
  [ -z "$left" ] && ok "$name: no process left 2 s later" || bad "$name: processes left: $left"
  if [ "$sig" != KILL ]; then
    grep -q "interrupted" "$tmp/$name.out" && ok "$name: says interrupted" || { bad "$name: no 'interrupted' line"; tail -5 "$tmp/$name.out"; }
  fi
  if [ -z "$(ls -A "$tmp/out-$name" 2>/dev/null)" ]; then ok "$name: nothing published"; else bad "$name: published $(ls "$tmp/out-$name")"; fi
}

run_and_stop ctrl-c INT group
run_and_stop term TERM pid
run_and_stop kill-9 KILL pid  # tailor cannot react: its supervisor stops the tree
exit $fail
