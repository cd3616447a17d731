#!/usr/bin/env bash
# End-to-end: on a machine without a GPU, a package whose setup.py asks torch.cuda whether
# it may build (warp-rnnt 0.7.0 raises "CPU version is not implemented" when
# torch.cuda.is_available() is false) builds for the requested targets: while the package
# builds, torch.cuda answers as one GPU of the highest target (driver/tailor_driver/
# stand_in.py). The fixture records what it was told in its extension module, so the
# check reads the wheel, not a log line. Without the stand-in the build fails (the
# fixture's own exception), which the second check shows with the driver's variable unset.
set -u
: "${TAILOR:?TAILOR must point at the built binary}"
[ -x "$TAILOR" ] || { echo "skip: $TAILOR not built"; exit 77; }
python3 -c 'import torch, setuptools' 2>/dev/null || { echo "skip: python3 with torch and setuptools needed"; exit 77; }
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || { echo "skip: no nvcc"; exit 77; }
if python3 -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "skip: this machine has a GPU (the stand-in is for machines without one)"; exit 77
fi
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export XDG_CACHE_HOME=$tmp/cache
pkg=$tmp/needs_gpu
mkdir -p "$pkg/needs_gpu"
: >"$pkg/needs_gpu/__init__.py"
cat >"$pkg/setup.py" <<'PY'
import torch
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

if not torch.cuda.is_available():
    raise Exception("CPU version is not implemented")
major, minor = torch.cuda.get_device_capability()
seen = "%d.%d %d %s" % (major, minor, torch.cuda.device_count(), torch.cuda.get_device_name(0))
setup(name="needs_gpu", version="1.0", packages=["needs_gpu"],
      ext_modules=[CUDAExtension("needs_gpu._seen", ["seen.cpp", "kernel.cu"],
                                 define_macros=[("SEEN", '"%s"' % seen)])],
      cmdclass={"build_ext": BuildExtension})
PY
# Neither source includes torch's headers: the compiles take seconds.
cat >"$pkg/seen.cpp" <<'C'
#include <Python.h>
static PyObject *seen(PyObject *, PyObject *) { return PyUnicode_FromString(SEEN); }
static PyMethodDef methods[] = {{"seen", seen, METH_NOARGS, ""}, {nullptr, nullptr, 0, nullptr}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_seen", "", -1, methods};
PyMODINIT_FUNC PyInit__seen(void) { return PyModule_Create(&module); }
C
cat >"$pkg/kernel.cu" <<'CU'
__global__ void twice(float *x) { x[threadIdx.x] *= 2.0f; }
CU

"$TAILOR" build "$pkg" --arch 7.5,8.6 --out "$tmp/dist" --work-dir "$tmp/work" --progress plain --cache none \
  >"$tmp/out" 2>"$tmp/err"
rc=$?
expect_eq "a setup.py that needs a GPU builds without one (exit 0)" "$rc" 0
[ "$rc" = 0 ] || tail -20 "$tmp/err"
log=$(ls "$tmp"/work/needs_gpu-*/build-*.log 2>/dev/null | head -1)
expect_grep "the driver says what torch.cuda answered" "torch.cuda answers as one GPU of sm_86 (the highest target)" "${log:-/dev/null}"
wheel=$(ls "$tmp"/dist/*.whl 2>/dev/null | head -1)
mkdir -p "$tmp/site"
[ -n "$wheel" ] && python3 -m zipfile -e "$wheel" "$tmp/site"
got=$(cd "$tmp" && PYTHONPATH="$tmp/site" python3 -c 'import torch, needs_gpu._seen as s; print(s.seen())' 2>&1)
expect_eq "setup.py saw one GPU of the highest target" "$got" "8.6 1 no GPU: tailor's stand-in for sm_86"

# The same driver without the variable: the package's own exception, as before.
mkdir -p "$tmp/plain"
cp -r "$pkg/." "$tmp/plain/"
out=$(cd "$tmp/plain" && env -u TAILOR_STAND_IN_GPU python3 "$src/driver/tailor-build-wheel.py" "$tmp/plain-dist" 2>&1)
case $out in
  *"CPU version is not implemented"*) ok "without the stand-in the package refuses (its own exception)" ;;
  *) bad "without the stand-in: $(echo "$out" | tail -3)" ;;
esac
exit $fail
