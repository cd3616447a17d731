#!/usr/bin/env bash
# End-to-end: `tailor build --platform aarch64` on an x86_64 host. The bundled example is
# cross-built for T4G (sm_75, a GPU that exists only on aarch64): the wheel is
# linux_aarch64, inspect finds exactly sm_75 in an aarch64 ELF, and the import test ran
# under qemu-user with Debian's arm64 Python and the index's aarch64 torch (or says why it
# was skipped). Then the bad inputs: an unknown platform, a cross build without --gpu or
# --arch, and no cross compiler on PATH each give one line, exit 2 (bad input) or 1
# (preflight), and no wheel.
# The build needs Debian's cross compiler (scripts/setup.sh --aarch64 installs it with
# qemu-user); CI's machine has none, so there only the bad inputs run, and the whole test
# runs before a note on a machine that has it. The target (3.3 GB of the index's aarch64
# torch and its CUDA wheels, 25 MB of Debian packages) is kept in tailor's cache
# (~/.cache/tailor/cross) between runs.
set -u
: "${TAILOR:?TAILOR must point at the built binary}"
[ -x "$TAILOR" ] || { echo "skip: $TAILOR not built"; exit 77; }
[ "$(uname -m)" = x86_64 ] || { echo "skip: the cross build is tested on an x86_64 host"; exit 77; }
python3 -c 'import torch, setuptools' 2>/dev/null || { echo "skip: python3 with torch and setuptools needed"; exit 77; }
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || { echo "skip: no nvcc"; exit 77; }
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Bad input first: one line each, no wheel.
"$TAILOR" build --gpu T4G --platform riscv64 --out "$tmp/bad1" >"$tmp/bad1.out" 2>&1
expect_eq "unknown platform: exit 2" "$?" 2
expect_grep "unknown platform: the platforms it knows" "tailor cross-builds for aarch64" "$tmp/bad1.out"
"$TAILOR" build --gpu T4G --out "$tmp/bad2" >"$tmp/bad2.out" 2>&1
expect_eq "T4G without --platform: exit 2" "$?" 2
expect_grep "T4G without --platform: names the flag" "add --platform aarch64 to cross-build" "$tmp/bad2.out"
"$TAILOR" build --platform aarch64 --out "$tmp/bad3" >"$tmp/bad3.out" 2>&1
expect_eq "no targets named: exit 2" "$?" 2
expect_grep "no targets named: asks for --gpu or --arch" "\-\-gpu" "$tmp/bad3.out"
# No cross compiler: a PATH of a few tools without it (the interpreter given by its path).
py=$(python3 -c 'import sys; print(sys.executable)')
mkdir -p "$tmp/nocross"
for t in ccache ninja git gcc g++ cc c++ ld as; do
  p=$(command -v "$t") && ln -s "$p" "$tmp/nocross/$t"
done
PATH="$tmp/nocross" CXX= CC= "$TAILOR" build --gpu T4G --platform aarch64 --python "$py" \
  --out "$tmp/bad4" --work-dir "$tmp/work4" >"$tmp/bad4.out" 2>&1
expect_eq "no cross compiler: exit 1" "$?" 1
expect_grep "no cross compiler: the command that installs it" "apt-get install g++-aarch64-linux-gnu" "$tmp/bad4.out"
[ "$(grep -c "tailor: error" "$tmp/bad4.out")" = 1 ] && ok "no cross compiler: one error line" || bad "no cross compiler: $(cat "$tmp/bad4.out")"
for d in bad1 bad2 bad3 bad4; do
  [ -z "$(ls "$tmp/$d" 2>/dev/null)" ] && ok "$d: nothing published" || bad "$d: published $(ls "$tmp/$d")"
done

# The build itself needs Debian's cross compiler: without it (CI's machine) the bad inputs
# above are all this test checks, and it says so.
if ! command -v aarch64-linux-gnu-g++ >/dev/null; then
  echo "skip (part): no aarch64-linux-gnu-g++: the cross build itself is not run here" \
    "(scripts/setup.sh --aarch64 installs the cross toolchain)"
  exit $fail
fi

# The example for T4G, cross-built.
start=$(date +%s)
"$TAILOR" build --gpu T4G --platform aarch64 --out "$tmp/out" --work-dir "$tmp/work" >"$tmp/build.out" 2>&1
rc=$?
echo "cross build: rc $rc in $(( $(date +%s) - start )) s"
expect_eq "cross build exit" "$rc" 0
[ "$rc" = 0 ] || sed 's/^/    /' "$tmp/build.out" | tail -40
wheel=$(ls "$tmp"/out/*.whl 2>/dev/null | head -1)
case "$wheel" in
  *-cp3*-linux_aarch64.whl | *manylinux*_aarch64.whl) ok "wheel for aarch64: $(basename "$wheel")" ;;
  *) bad "no aarch64 wheel: '$wheel'" ;;
esac
if [ -n "$wheel" ]; then
  "$TAILOR" inspect "$wheel" --json >"$tmp/inspect.json" 2>"$tmp/inspect.err"
  expect_eq "inspect: the library is aarch64" \
    "$(json_get "$tmp/inspect.json" '",".join(sorted({l["machine"] for w in j["wheels"] for l in w["libraries"]}))')" aarch64
  expect_eq "inspect: exactly sm_75" \
    "$(json_get "$tmp/inspect.json" '",".join(sorted({t for w in j["wheels"] for l in w["libraries"] for t in l["targets"]}))')" sm_75
  "$TAILOR" inspect "$wheel" --gpu T4G --exact 7.5 >"$tmp/exact.out" 2>&1
  expect_eq "inspect --gpu T4G --exact 7.5 passes" "$?" 0
  report=$(ls "$tmp"/out/*.json | head -1)
  expect_eq "report: platform" "$(json_get "$report" 'j["inputs"].get("platform")')" aarch64
  import=$(json_get "$report" '[c["status"] for c in j["checks"] if c["name"]=="import"][0]')
  if command -v qemu-aarch64-static >/dev/null || command -v qemu-aarch64 >/dev/null; then
    expect_eq "import test under qemu" "$import" passed
  else
    expect_eq "import test skipped without qemu" "$import" skipped
  fi
  expect_grep "the build says where the target came from" "preparing the aarch64 target" "$tmp/build.out"
fi

# An sdist that calls the host's compiler itself: its helper library is x86_64 code in an
# aarch64 wheel. One line naming the file, exit 1, nothing published.
pkg=$tmp/hostcc
mkdir -p "$pkg/hostcc"
: >"$pkg/hostcc/__init__.py"
printf 'int helper(void) { return 42; }\n' >"$pkg/helper.c"
cat >"$pkg/c.c" <<'C'
#include <Python.h>
static struct PyModuleDef m = {PyModuleDef_HEAD_INIT, "_c", 0, -1, 0};
PyMODINIT_FUNC PyInit__c(void) { return PyModule_Create(&m); }
C
cat >"$pkg/setup.py" <<'PY'
import subprocess
from setuptools import Extension, setup
# The package's own compile, with the compiler it names: the host's.
subprocess.check_call(["gcc", "-shared", "-fPIC", "helper.c", "-o", "hostcc/libhelper.so"])
setup(name="hostcc", version="0.1", packages=["hostcc"],
      package_data={"hostcc": ["libhelper.so"]}, ext_modules=[Extension("hostcc._c", ["c.c"])])
PY
"$TAILOR" build "$pkg" --arch 7.5 --platform aarch64 --out "$tmp/hostcc-out" --work-dir "$tmp/work" \
  >"$tmp/hostcc.out" 2>&1
expect_eq "host compiler in the sdist: exit 1" "$?" 1
expect_grep "host compiler in the sdist: names the library and its machine" \
  "hostcc/libhelper.so (x86_64) was built for another machine" "$tmp/hostcc.out"
[ -z "$(ls "$tmp/hostcc-out" 2>/dev/null)" ] && ok "host compiler in the sdist: nothing published" \
  || bad "host compiler in the sdist: published $(ls "$tmp/hostcc-out")"
exit $fail
