#!/usr/bin/env bash
# `tailor doctor` through the real binary on the torch fixture: a source tree with an
# empty submodule fails with the git fix; the complete tree passes the submodule check;
# an impossible variant exits 2.
set -euo pipefail
: "${TAILOR:?}" "${TAILOR_SOURCE_DIR:?}"
command -v nvcc > /dev/null || { echo "skipped: no nvcc on PATH"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"  # fail
py=$(python3 -c 'import sys; print(sys.executable)')
cuda=$(nvcc --version | sed -n 's/.*release \([0-9]*\.[0-9]*\).*/\1/p')
cp -r "$TAILOR_SOURCE_DIR/tests/torch_fixture" "$tmp/src"
mkdir -p "$tmp/src/third_party/cutlass"
args=(--source "$tmp/src" --arch 7.5 --cuda "$cuda" --python "$py" --without cudnn --work-dir "$tmp/work")

set +e
"$TAILOR" doctor "${args[@]}" > "$tmp/out.txt" 2>&1
rc=$?
set -e
cat "$tmp/out.txt"
[ "$rc" = 1 ] || fail "doctor with an empty submodule must exit 1 (got $rc)"
grep -q '^\[FAIL\] submodules .*third_party/cutlass' "$tmp/out.txt" || fail "no submodule failure"
grep -q 'git submodule update --init --recursive' "$tmp/out.txt" || fail "no submodule fix"
grep -q '^\[ok  \] nvcc' "$tmp/out.txt" || fail "nvcc not found"
grep -q 'python-deps' "$tmp/out.txt" || fail "no python deps check"
grep -q '^\[.*\] disk ' "$tmp/out.txt" || fail "no disk check"

rmdir "$tmp/src/third_party/cutlass"
set +e
"$TAILOR" doctor "${args[@]}" > "$tmp/out2.txt" 2>&1
set -e
grep -q '^\[ok  \] submodules' "$tmp/out2.txt" || { cat "$tmp/out2.txt"; fail "complete tree not ok"; }

set +e
"$TAILOR" doctor --torch 2.9.1 --cuda "$cuda" --arch 5.0 --python 3.8 > "$tmp/bad.txt" 2>&1
rc=$?
set -e
[ "$rc" = 2 ] || { cat "$tmp/bad.txt"; fail "bad variant must exit 2 (got $rc)"; }
echo "doctor e2e: ok"
