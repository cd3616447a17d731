#!/usr/bin/env bash
# End-to-end: yesterday's code on today's stack (issue 53).
# tests/e2e/data/old_apis: a torch 1.x style extension (x.type() in AT_DISPATCH, AT_CHECK, CHECK_GE,
# THC/THC.h with THCudaCheck, THCState and THCCeilDiv, cub::Sum, a header missing <memory>,
# <cstdint> and <stdexcept>; nvcc's -std=c++14). tests/e2e/data/cmake_jobs: a setup.py that configures CMake
# (in csrc/) with no generator and runs `cmake --build -j 3` itself.
# - old_apis builds for --arch 7.5 with exactly sm_75, each bridged use listed in the summary
#   and the report with file, line and the release that removed the API; its CPU paths
#   (the .type() dispatch, THCCeilDiv, cub::Sum) give the plain answers;
# - --keep-package-source builds it as it is: it fails the way the package fails, and the
#   diagnosis names the known removal;
# - cmake_jobs' configure really runs Ninja (build.ninja, no Makefile), its -j 3 is dropped,
#   and its four CUDA units compile side by side (overlapping times in its .ninja_log).
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

# 1. The old package, bridged.
cp -a "$data/old_apis" "$tmp/orig"
"$TAILOR" build "$data/old_apis" --arch 7.5 --out "$tmp/dist" --work-dir "$tmp/work" --progress plain --cache none \
  >"$tmp/out" 2>"$tmp/err"
rc=$?
expect_eq "old_apis: exit 0" "$rc" 0
[ "$rc" = 0 ] || tail -30 "$tmp/err" | sed 's/^/    /'
report=$(ls "$tmp"/dist/*.report.json 2>/dev/null | head -1)
[ -n "$report" ] || { bad "no report"; report=/dev/null; }
line_of() { grep -n -- "$1" "$data/old_apis/$2" | head -1 | cut -d: -f1; }
changes=$(python3 -c '
import json, sys
for c in json.load(open(sys.argv[1]))["run"]["compat_changes"]:
    print("%s:%s %s %s" % (c["file"], c["line"], c["removal"], c["removed_in"]))' "$report" 2>&1)
echo "$changes" | sed 's/^/    change: /'
for want in "csrc/ops.cpp:$(line_of 'y.type()' csrc/ops.cpp) torch-dispatch-type torch 2.6" \
            "csrc/ops.cpp:$(line_of 'AT_CHECK(' csrc/ops.cpp) torch-at-check torch 1.5" \
            "csrc/ops.cpp:$(line_of 'CHECK_GE(' csrc/ops.cpp) torch-check-ge torch 1.13" \
            "csrc/ops_cuda.cu:$(line_of 'THC/THC.h' csrc/ops_cuda.cu) torch-thc torch 1.11" \
            "csrc/ops_cuda.cu:$(line_of 'v\[i\] \* s' csrc/ops_cuda.cu) cccl-cub-sum CUDA 13.0" \
            "csrc/old_util.h:$(line_of 'unique_ptr' csrc/old_util.h) std-header-memory GCC 11" \
            "csrc/old_util.h:$(line_of 'uint32_t' csrc/old_util.h) std-header-cstdint GCC 13" \
            "csrc/old_util.h:$(line_of 'runtime_error' csrc/old_util.h) std-header-stdexcept newer libstdc++"; do
  case "$changes" in *"$want"*) ok "report: $want" ;; *) bad "report lacks '$want'" ;; esac
done
expect_grep "the summary lists the dispatch change with its line" \
  "^package   csrc/ops.cpp:$(line_of 'y.type()' csrc/ops.cpp): AT_DISPATCH_FLOATING_TYPES(y.type(), ...) -> y.scalar_type() (removed in torch 2.6)" "$tmp/out"
expect_grep "the summary lists its -std=c++14 raised to C++17" \
  "^package   setup.py:$(line_of 'std=c++14' setup.py): -std=c++14 -> -std=c++17 (extension old_apis._C, nvcc; torch-cxx17, removed in torch 2.1)" "$tmp/out"
expect_grep "the summary lists the THC shim" "^package   csrc/ops_cuda.cu:[0-9]*: #include <THC/THC.h> -> #include \"../tailor_compat/THC/THC.h\"" "$tmp/out"
if diff -r -q "$tmp/orig" "$data/old_apis" >/dev/null; then
  ok "the user's tree is untouched"
else
  bad "the user's tree changed"
fi
wheel=$(ls "$tmp"/dist/*.whl 2>/dev/null | head -1)
"$TAILOR" inspect "${wheel:-/nonexistent}" --exact 7.5 >"$tmp/inspect" 2>&1
expect_eq "the wheel holds exactly sm_75 (inspect --exact 7.5)" "$?" 0
expect_eq "its import check passed" \
  "$(json_get "$report" '[c["status"] for c in j["checks"] if c["name"]=="import"][0]' 2>&1)" "passed"
# The CPU paths against plain answers: the wheel unpacked beside torch.
mkdir -p "$tmp/site" && python3 -m zipfile -e "${wheel:-/nonexistent}" "$tmp/site" 2>/dev/null
cpu=$(cd "$tmp" && PYTHONPATH="$tmp/site" python3 -c '
import torch, old_apis
x = torch.arange(5, dtype=torch.float64)
print(torch.equal(old_apis.scale(x, 2.5), x * 2.5), torch.equal(old_apis.scale(x.float(), 3), x.float() * 3),
      old_apis.ceil_div(7, 2), old_apis.ceil_div(8, 2), old_apis.sum_of(1.5, 2.25))' 2>&1)
expect_eq "CPU paths: x.scalar_type() dispatch (double, float), THCCeilDiv, cub::Sum" "$cpu" "True True 4 4 3.75"

# 2. --keep-package-source: the package as it is fails, and the diagnosis names the removal.
"$TAILOR" build "$data/old_apis" --arch 7.5 --keep-package-source --out "$tmp/dist-keep" --work-dir "$tmp/work-keep" \
  --progress plain --cache none >"$tmp/out-keep" 2>"$tmp/err-keep"
expect_eq "--keep-package-source: the build fails (exit 1)" "$?" 1
expect_eq "nothing published" "$(ls -A "$tmp/dist-keep" 2>/dev/null | grep -c '\.whl$')" 0
log=$(ls "$tmp"/work-keep/*/build-*.log 2>/dev/null | head -1)
if grep -q "scalar_type\|TORCH_CHECK\|tailor_compat" "$tmp/work-keep"/*/src/csrc/* 2>/dev/null; then
  bad "--keep-package-source changed the copy"
else
  ok "--keep-package-source leaves the copy as the package is"
fi
expect_grep "the compiler fails where the package uses a removed API" \
  "C++17 or later\|DeprecatedTypeProperties\|AT_CHECK\|THC/THC.h\|unique_ptr\|uint32_t\|runtime_error\|cub::Sum\|\"Sum\"" "${log:-/dev/null}"
expect_grep "the diagnosis names the known removal and the flag" \
  "removed in \(torch\|CUDA\|GCC\)\|libstdc++ no longer\|torch 1.11 removed" "$tmp/err-keep"
expect_grep "and that tailor bridges it without --keep-package-source" "without --keep-package-source" "$tmp/err-keep"
"$TAILOR" explain "${log:-/dev/null}" >"$tmp/explain" 2>&1
expect_grep "tailor explain of that log names the removal first" "compat-torch-cxx17\|compat-torch-thc\|compat-std-header\|compat-torch-at-check\|compat-torch-check-\|compat-torch-dispatch-type\|compat-cccl" "$tmp/explain"

# 3. A package's own CMake build: no generator, its own -j 3.
"$TAILOR" build "$data/cmake_jobs" --arch 7.5 --out "$tmp/dist-cj" --work-dir "$tmp/work-cj" --progress plain --cache none \
  >"$tmp/out-cj" 2>"$tmp/err-cj"
rc=$?
expect_eq "cmake_jobs: exit 0" "$rc" 0
[ "$rc" = 0 ] || tail -30 "$tmp/err-cj" | sed 's/^/    /'
cj_line() { grep -n -- "$1" "$data/cmake_jobs/setup.py" | head -1 | cut -d: -f1; }
expect_grep "the summary says its configure runs Ninja" \
  "^package   setup.py:$(cj_line 'os.path.abspath("csrc")'): cmake configure without a generator of its own: Ninja" "$tmp/out-cj"
expect_grep "the summary says its -j 3 was dropped" \
  "^package   setup.py:$(cj_line '"-j", "3"'): cmake --build -j 3 dropped: tailor's" "$tmp/out-cj"
bdir=$(dirname "$(ls "$tmp"/work-cj/*/src/build/temp.*/CMakeCache.txt 2>/dev/null | head -1)")
[ -f "$bdir/build.ninja" ] && [ ! -f "$bdir/Makefile" ] && ok "the configure that ran made build.ninja, no Makefile" \
  || bad "no build.ninja in '$bdir' ($(ls "$bdir" 2>/dev/null | tr '\n' ' '))"
overlap=$(python3 - "$bdir/.ninja_log" <<'PY'
import sys
jobs = []
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t")
    if len(f) == 5 and f[3].endswith(".cu.o"):
        jobs.append((int(f[0]), int(f[1]), f[3]))
for s, e, name in sorted(jobs):
    print("    unit %-40s %6d-%6d ms" % (name, s, e), file=sys.stderr)
print(len(jobs), int(any(a[0] < b[1] and b[0] < a[1] for i, a in enumerate(jobs) for b in jobs[i + 1:])))
PY
)
if [ "$(nproc)" -ge 2 ]; then
  expect_eq "its four CUDA units compile side by side (units, overlap)" "$overlap" "4 1"
else
  echo "skip overlap check: 1 core"
fi
wheel=$(ls "$tmp"/dist-cj/*.whl 2>/dev/null | head -1)
"$TAILOR" inspect "${wheel:-/nonexistent}" --exact 7.5 >"$tmp/inspect-cj" 2>&1
expect_eq "the CMake wheel holds exactly sm_75 (CUDAARCHS, the package set none)" "$?" 0
exit $fail
