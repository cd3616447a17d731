#!/usr/bin/env bash
# End-to-end: tailor takes back the build choices a package makes for itself (issue 37).
# tests/e2e/data/own_choices: a BuildExtension subclass with use_ninja=False and three CUDA
# units, -arch=compute_50 and a -gencode pair in extra_compile_args, TORCH_CUDA_ARCH_LIST
# set in setup.py, and an import name (OwnChoices) that is not its distribution's name
# (own-choices). tests/e2e/data/cmake_archs: a setup.py that runs CMake itself with its own
# -DCMAKE_CUDA_ARCHITECTURES and `cmake --build -j1`, over a CMakeLists.txt that sets
# CMAKE_CUDA_ARCHITECTURES and a target's CUDA_ARCHITECTURES. nvcc 13 refuses every target
# the packages chose, so each build passes only if the requested one replaced them all.
# - each builds for --arch 8.0, with exactly sm_80 in the wheel, and its import passes;
# - the report lists every replacement with the package's file and line;
# - the three CUDA units of the Ninja-off package compile at the same time (2 cores);
# - --keep-package-archs keeps the package's choice: nvcc refuses it, and the diagnosis
#   names the package's file and line, not an arch list the user never gave.
set -u
: "${TAILOR:?TAILOR must point at the built binary}"
[ -x "$TAILOR" ] || { echo "skip: $TAILOR not built"; exit 77; }
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || { echo "skip: no nvcc"; exit 77; }
python3 -c 'import torch' 2>/dev/null || { echo "skip: python3 with torch needed"; exit 77; }
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export XDG_CACHE_HOME=$tmp/cache
data=$src/tests/e2e/data

# 1. The Ninja-off package with hard-coded targets and its own import name.
"$TAILOR" build "$data/own_choices" --arch 8.0 --out "$tmp/dist" --work-dir "$tmp/work" --progress plain --cache none \
  >"$tmp/out" 2>"$tmp/err"
expect_eq "build exit 0" "$?" 0
report=$(ls "$tmp"/dist/*.report.json 2>/dev/null | head -1)
[ -n "$report" ] || { bad "no report"; report=/dev/null; }
choices=$(python3 -c 'import json,sys; print("\n".join(json.load(open(sys.argv[1]))["run"]["package_choices"]))' "$report" 2>&1)
echo "$choices" | sed 's/^/    choice: /'
line_of() { grep -n -- "$1" "$data/own_choices/setup.py" | grep -v "^[0-9]*: *#" | head -1 | cut -d: -f1; }
for want in "setup.py:$(line_of 'use_ninja'): the package turned Ninja off" \
            "setup.py:$(line_of 'compute_50'): nvcc -arch=compute_50 (extension OwnChoices._kernels) replaced by the requested targets (8.0)" \
            "setup.py:$(line_of 'compute_52'): nvcc -gencode arch=compute_52,code=sm_52 (extension OwnChoices._kernels) replaced" \
            "setup.py:$(line_of 'TORCH_CUDA_ARCH_LIST'): TORCH_CUDA_ARCH_LIST=5.0 set by the package, replaced by the requested 8.0"; do
  case "$choices" in *"$want"*) ok "report: $want" ;; *) bad "report lacks '$want'" ;; esac
done
expect_grep "the summary lists the choices" "^package   setup.py:[0-9]*: nvcc -arch=compute_50" "$tmp/out"
wheel=$(ls "$tmp"/dist/*.whl 2>/dev/null | head -1)
"$TAILOR" inspect "${wheel:-/nonexistent}" --exact 8.0 >"$tmp/inspect" 2>&1
expect_eq "the wheel holds exactly sm_80 (inspect --exact 8.0)" "$?" 0
expect_eq "the import check imported the wheel's own module" \
  "$(json_get "$report" '[c["detail"] for c in j["checks"] if c["name"]=="import"][0]' 2>&1)" "import OwnChoices in a fresh venv"
overlap=$(python3 - "$report" <<'PY'
import json, sys
jobs = [j for j in json.load(open(sys.argv[1]))["run"]["job_timeline"] if j["kind"] == "cu"]
print(len(jobs), int(any(a is not b and a["start_ms"] < b["end_ms"] and b["start_ms"] < a["end_ms"] for a in jobs for b in jobs)))
PY
)
if [ "$(nproc)" -ge 2 ]; then
  expect_eq "the three CUDA units compile at the same time (units, overlap)" "$overlap" "3 1"
else
  echo "skip overlap check: 1 core"
fi

# 2. --keep-package-archs: the package's own target stands, nvcc refuses it, and the
# diagnosis names the package's line.
"$TAILOR" build "$data/own_choices" --arch 8.0 --keep-package-archs --out "$tmp/dist-keep" --work-dir "$tmp/work-keep" \
  --progress plain --cache none >"$tmp/out-keep" 2>"$tmp/err-keep"
expect_eq "--keep-package-archs: nvcc refuses the package's target (exit 1)" "$?" 1
expect_grep "the diagnosis names the package's file and line" \
  "setup.py:$(line_of 'compute_50') asks for compute_50 itself (the request was sm_80)" "$tmp/err-keep"
if grep -q "Drop compute_50 from the arch list" "$tmp/err-keep"; then bad "the diagnosis speaks of an arch list the user never gave"; else ok "no arch list the user never gave"; fi
expect_eq "nothing published" "$(ls -A "$tmp/dist-keep" 2>/dev/null | grep -c '\.whl$')" 0

# 3. A CMake project with hard-coded architectures, run by its own setup.py.
"$TAILOR" build "$data/cmake_archs" --arch 8.0 --out "$tmp/dist-cm" --work-dir "$tmp/work-cm" --progress plain --cache none \
  >"$tmp/out-cm" 2>"$tmp/err-cm"
expect_eq "CMake package: exit 0" "$?" 0
report=$(ls "$tmp"/dist-cm/*.report.json 2>/dev/null | head -1)
choices=$(python3 -c 'import json,sys; print("\n".join(json.load(open(sys.argv[1]))["run"]["package_choices"]))' "${report:-/dev/null}" 2>&1)
echo "$choices" | sed 's/^/    choice: /'
cm_line() { grep -n -- "$1" "$data/cmake_archs/$2" | grep -v "^[0-9]*: *#" | head -1 | cut -d: -f1; }
for want in "CMakeLists.txt:$(cm_line 'set(CMAKE_CUDA_ARCHITECTURES' CMakeLists.txt): CMAKE_CUDA_ARCHITECTURES 52 replaced" \
            "CMakeLists.txt:$(cm_line 'PROPERTIES CUDA_ARCHITECTURES' CMakeLists.txt): CUDA_ARCHITECTURES \"50;52\" replaced" \
            "setup.py:$(cm_line 'CMAKE_CUDA_ARCHITECTURES' setup.py): cmake -DCMAKE_CUDA_ARCHITECTURES=50 replaced" \
            "setup.py:$(cm_line '"-j1"' setup.py): cmake --build -j1 dropped"; do
  case "$choices" in *"$want"*) ok "report: $want" ;; *) bad "report lacks '$want'" ;; esac
done
wheel=$(ls "$tmp"/dist-cm/*.whl 2>/dev/null | head -1)
"$TAILOR" inspect "${wheel:-/nonexistent}" --exact 8.0 >"$tmp/inspect-cm" 2>&1
expect_eq "the CMake wheel holds exactly sm_80" "$?" 0
expect_eq "its import check passed" \
  "$(json_get "${report:-/dev/null}" '[c["status"] for c in j["checks"] if c["name"]=="import"][0]' 2>&1)" "passed"

# 4. A unit split on its own (the learned rule needs a package of more than 16 CUDA units
# and a unit of 20 s or more; TAILOR_SPLIT_UNITS gives the split as a rebuild does):
# only that unit's edge gets -split-compile, the wheel's provenance names it, and
# --verify-reproducible, given no variable, splits it the same and gets the same bytes.
many=$tmp/many
mkdir -p "$many/csrc" "$many/many"
for i in $(seq 1 17); do
  printf '#include <cuda_runtime.h>\nnamespace { __global__ void k(float* v) { v[threadIdx.x] *= %d; } }\nextern "C" void* many_k%d() { return reinterpret_cast<void*>(&k); }\n' "$i" "$i" >"$many/csrc/k$i.cu"
done
printf '#define PY_SSIZE_T_CLEAN\n#include <Python.h>\nstatic PyModuleDef m = {PyModuleDef_HEAD_INIT, "_k", "", -1, nullptr, nullptr, nullptr, nullptr, nullptr};\nPyMODINIT_FUNC PyInit__k() { return PyModule_Create(&m); }\n' >"$many/csrc/module.cpp"
: >"$many/many/__init__.py"
cat >"$many/setup.py" <<'PY'
import glob
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension
setup(name="many-units", version="0.1", packages=["many"],
      ext_modules=[CUDAExtension("many._k", ["csrc/module.cpp"] + sorted(glob.glob("csrc/*.cu")))],
      cmdclass={"build_ext": BuildExtension})
PY
TAILOR_SPLIT_UNITS='{"csrc/k3.cu": 2}' "$TAILOR" build "$many" --arch 8.0 --out "$tmp/dist-many" --work-dir "$tmp/work-many" \
  --progress plain --cache none >"$tmp/out-many" 2>"$tmp/err-many"
expect_eq "17 CUDA units: exit 0" "$?" 0
pn=$(ls "$tmp"/work-many/*/src/build/temp.*/build.ninja 2>/dev/null | head -1)
expect_eq "only k3.cu's edge takes the split rule" \
  "$(grep -c '^build .*: cuda_compile_m0_s2 ' "${pn:-/dev/null}") $(grep -c '^build .*k3.o: cuda_compile_m0_s2 ' "${pn:-/dev/null}")" "1 1"
expect_grep "the split rule's command ends in -split-compile=2" "^  command = .*nvcc.* -split-compile=2$" "${pn:-/dev/null}"
wheel=$(ls "$tmp"/dist-many/*.whl 2>/dev/null | head -1)
expect_eq "the provenance names the split unit" \
  "$(python3 -c 'import json,sys,zipfile; z=zipfile.ZipFile(sys.argv[1]); n=[x for x in z.namelist() if x.endswith("tailor-provenance.json")][0]; print(json.loads(z.read(n)).get("split_units"))' "${wheel:-/dev/null}" 2>&1)" \
  "{'csrc/k3.cu': 2}"
"$TAILOR" build "$many" --verify-reproducible "${wheel:-/nonexistent}" --work-dir "$tmp/work-many2" --progress plain --cache none \
  >"$tmp/out-many2" 2>"$tmp/err-many2"
expect_eq "--verify-reproducible splits the same unit and gets the same bytes (exit 0)" "$?" 0
expect_grep "the rebuild says it split as the wheel was built" "split unit: csrc/k3.cu 2 (as the wheel being reproduced was built)" \
  "$(ls "$tmp"/work-many2/*/build-*.log 2>/dev/null | head -1)"

# 5. A CPU extension (no .cu or .cuh anywhere): nothing to build for the targets, so the
# build passes and says so. The same package with a CUDA file its setup.py never compiles
# fails, naming that file (a CUDA part its build skipped).
cpu="$tmp/cpu_ext"
mkdir -p "$cpu/cpuext" "$cpu/csrc"
echo "from . import _c" > "$cpu/cpuext/__init__.py"
printf '#include <Python.h>\nstatic struct PyModuleDef m = {PyModuleDef_HEAD_INIT, "_c", NULL, -1, NULL};\nPyMODINIT_FUNC PyInit__c(void) { return PyModule_Create(&m); }\n' > "$cpu/csrc/c.c"
cat > "$cpu/setup.py" << 'PY'
from setuptools import Extension, setup
setup(name="cpu-ext", version="0.1", packages=["cpuext"], ext_modules=[Extension("cpuext._c", ["csrc/c.c"])])
PY
"$TAILOR" build "$cpu" --arch 8.0 --out "$tmp/dist-cpu" --work-dir "$tmp/work-cpu" --progress plain --cache none \
  >"$tmp/out-cpu" 2>"$tmp/err-cpu"
expect_eq "a CPU extension builds (exit 0)" "$?" 0
expect_grep "its targets check says there was nothing to build for them" \
  "no device code: cpu-ext has no CUDA source (.cu, .cuh), a CPU extension; the requested sm_80 had nothing to apply to" \
  "$tmp/out-cpu"
echo "__global__ void k() {}" > "$cpu/csrc/unused.cu"
"$TAILOR" build "$cpu" --arch 8.0 --out "$tmp/dist-cpu2" --work-dir "$tmp/work-cpu2" --progress plain --cache none \
  >"$tmp/out-cpu2" 2>"$tmp/err-cpu2"
rc=$?
[ "$rc" != 0 ] && ok "a package with CUDA source but no device code fails (exit $rc)" || bad "it passed"
expect_grep "the failure names the CUDA file the build skipped" "the source has CUDA code, e.g. csrc/unused.cu" "$tmp/err-cpu2"
[ -z "$(ls "$tmp/dist-cpu2" 2>/dev/null)" ] && ok "nothing published for it" || bad "published: $(ls "$tmp/dist-cpu2")"

exit $fail
