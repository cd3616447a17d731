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
# The system-libraries variant: a tree shaped like PyTorch's (cmake/Dependencies.cmake) whose
# third_party/cpuinfo is an empty submodule and whose other vendored folders are gone
# (Debian's +dfsg tarball). The plan takes those libraries from the system with their
# switches; doctor says which are not installed here, with one install command, or that all
# are; the build stops before building when one is missing, publishing nothing.
cp -r "$TAILOR_SOURCE_DIR/tests/torch_fixture" "$tmp/sys"
mkdir -p "$tmp/sys/cmake" "$tmp/sys/third_party/cpuinfo"
echo "# a PyTorch tree" > "$tmp/sys/cmake/Dependencies.cmake"
sargs=(--source "$tmp/sys" --arch 7.5 --cuda "$cuda" --python "$py" --without cudnn --work-dir "$tmp/work5")
"$TAILOR" plan torch "${sargs[@]}" --format json > "$tmp/sys-plan.json" || fail "plan of the system-libraries tree"
python3 - "$tmp/sys-plan.json" <<'PY' || fail "the plan's system libraries"
import json, sys
p = json.load(open(sys.argv[1]))
p = p.get("plan", p)
env = p["env"]
assert env["USE_SYSTEM_CPUINFO"] == "ON" and env["USE_SYSTEM_PYBIND11"] == "ON", env
assert env["BUILD_CUSTOM_PROTOBUF"] == "OFF" and env["ONNX_NAMESPACE"] == "onnx", env
assert env["USE_ITT"] == "OFF" and env["USE_FBGEMM"] == "0", env
libs = {l["name"]: l for l in p["system_libraries"]}
assert libs["cpuinfo"]["reason"] == "third_party/cpuinfo is missing", libs["cpuinfo"]
assert libs["cpuinfo"]["packages"] == ["libcpuinfo-dev"], libs["cpuinfo"]
PY
set +e
"$TAILOR" doctor "${sargs[@]}" > "$tmp/sys-doctor.txt" 2>&1
set -e
cat "$tmp/sys-doctor.txt"
if [ -e /usr/include/cpuinfo.h ]; then
  grep -q '^\[ok  \] system-libs .*cpuinfo' "$tmp/sys-doctor.txt" || fail "doctor: installed system libraries not ok"
else
  grep -q '^\[FAIL\] system-libs .*cpuinfo (libcpuinfo-dev)' "$tmp/sys-doctor.txt" || fail "doctor does not name the missing cpuinfo"
  grep -q 'fix: sudo apt-get install -y .*libcpuinfo-dev' "$tmp/sys-doctor.txt" || fail "doctor gives no install command"
  grep -q '^\[ok  \] submodules' "$tmp/sys-doctor.txt" || fail "the empty cpuinfo folder counted as a missing submodule"
  set +e
  "$TAILOR" build torch "${sargs[@]}" --no-venv --out "$tmp/out5" > "$tmp/sys-build.txt" 2>&1
  rc=$?
  set -e
  [ "$rc" != 0 ] || fail "a build without its system libraries went ahead"
  grep -q "tailor: error: the build takes libraries from the system, which lacks .*cpuinfo.*sudo apt-get install -y" "$tmp/sys-build.txt" \
    || { cat "$tmp/sys-build.txt"; fail "the build does not say what to install"; }
  [ ! -e "$tmp/out5" ] || fail "a stopped build published"
fi
echo "doctor e2e: ok"
