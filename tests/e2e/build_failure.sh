#!/usr/bin/env bash
# End-to-end: a copy of the test fixture extension (tests/e2e/data/tiny_ext, a real
# CUDAExtension that builds in seconds) with a planted compile error (a bfloat16
# conversion that ptxas only takes for sm_80+, compiled for sm_75: a failure real
# packages hit).
# `tailor build` must exit 1, show the first real error and the diagnosis with its fix,
# keep the full log, and leave the output folder exactly as it was.
set -u
: "${TAILOR:?TAILOR must point at the built binary}"
[ -x "$TAILOR" ] || { echo "skip: $TAILOR not built"; exit 77; }
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || { echo "skip: no nvcc"; exit 77; }
python3 -c 'import torch' 2>/dev/null || { echo "skip: python3 with torch needed"; exit 77; }
# src, tiny_ext.
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mkdir -p "$tmp/broken" "$tmp/dist"
cp -r "$tiny_ext/." "$tmp/broken/"
cat >>"$tmp/broken/csrc/scale.cu" <<'CU'

// Planted by tests/e2e/build_failure.sh: needs sm_80 (bf16 conversion in PTX).
__global__ void planted_bf16(float* out) {
  unsigned short h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(out[0]));
  out[0] = h;
}
CU
echo "an older build" >"$tmp/dist/keep.txt"

"$TAILOR" build "$tmp/broken" --arch 7.5 --out "$tmp/dist" --work-dir "$tmp/work" --progress plain \
  >"$tmp/stdout" 2>"$tmp/stderr"
expect_eq "exit 1" "$?" 1
expect_grep "error line" "tailor: error: step 'build the generic wheel (pip)' failed\|tailor: error: step .* failed" "$tmp/stderr"
expect_grep "first error block" "first error (log lines" "$tmp/stderr"
expect_grep "quotes ptxas" "requires .target sm_80 or higher" "$tmp/stderr"
expect_grep "diagnosis" "diagnosis \[ptx-needs-newer-arch\]" "$tmp/stderr"
expect_grep "fix names sm_80" "fix: .*sm_80" "$tmp/stderr"
log=$(sed -n 's/^full log: //p' "$tmp/stderr")
[ -n "$log" ] && [ -f "$log" ] && echo "ok   full log kept: $log" || { echo "FAIL no full log"; fail=1; }
[ -n "$log" ] && expect_grep "log has the ninja output" "ninja: build stopped" "$log"
expect_eq "output folder as it was" "$(ls -A "$tmp/dist" | tr '\n' ' ')" "keep.txt "
expect_eq "no staging left" "$(ls -A "$tmp" | grep -c tailor-staging)" 0
expect_eq "nothing on stdout" "$(wc -c <"$tmp/stdout")" 0
# The same diagnosis from the log alone.
if [ -n "$log" ] && "$TAILOR" explain --help >/dev/null 2>&1; then
  "$TAILOR" explain "$log" >"$tmp/explain" 2>&1
  expect_grep "tailor explain agrees" "ptx-needs-newer-arch" "$tmp/explain"
fi
# A C++ compiler that links the C++ runtime statically (the GPU machine's relocated gcc, its
# default CXX): preflight finds the system's g++, which links libstdc++.so.6 as torch does,
# and the build uses it instead, saying so; the wheel's library needs libstdc++.so.6. (With
# no such compiler on the machine preflight refuses with the fix: tests/builder/preflight_test.)
printf '#!/bin/sh\nexec g++ -static-libstdc++ -static-libgcc "$@"\n' >"$tmp/static-gxx"
chmod +x "$tmp/static-gxx"
if [ -x /usr/bin/g++ ] && [ -x /usr/bin/gcc ]; then
  CXX="$tmp/static-gxx" "$TAILOR" build "$tiny_ext" --arch 7.5 --out "$tmp/dist-cxx" --work-dir "$tmp/work-cxx" --progress plain \
    --cache none >"$tmp/cxx.out" 2>"$tmp/cxx.err"
  expect_eq "static C++ runtime: the build goes on with the system's g++ (exit 0)" "$?" 0
  expect_grep "static C++ runtime: it says so" "links the C++ runtime statically; building with /usr/bin/g++" "$tmp/cxx.err"
  # detect says the same: what build will use, not a problem the user must fix.
  CXX="$tmp/static-gxx" "$TAILOR" detect --no-python > "$tmp/cxx.detect" 2>&1
  expect_grep "static C++ runtime: detect says build uses the system's g++" \
    "C++ runtime .*tailor build uses /usr/bin/g++ and /usr/bin/gcc instead" "$tmp/cxx.detect"
  if grep -q "C++ runtime *PROBLEM" "$tmp/cxx.detect"; then bad "detect calls it a PROBLEM"; else ok "detect does not call it a PROBLEM"; fi
  so=$(cd "$tmp" && mkdir -p cxx-site && python3 -m zipfile -e "$(ls "$tmp"/dist-cxx/*.whl | head -1)" cxx-site 2>/dev/null && find cxx-site -name '*.so' | head -1)
  expect_eq "static C++ runtime: the wheel's library needs libstdc++.so.6" \
    "$(readelf -d "$tmp/${so:-none}" 2>/dev/null | grep -c 'NEEDED.*libstdc++.so.6')" 1
else
  echo "skip static C++ runtime: no /usr/bin/g++ and /usr/bin/gcc here"
fi
exit $fail
