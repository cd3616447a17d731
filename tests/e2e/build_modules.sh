#!/usr/bin/env bash
# End-to-end: a package of several extension modules (tests/e2e/data/multi_ext: _a and _b
# with CUDA, sharing their sources; _c host only) is built with every module at once
# (driver/tailor_driver inside torch's BuildExtension, data/build/parallel.toml):
# - the build driver says so, each module has its own build folder and build.ninja, one
#   Ninja runs the package's units from one build.ninja that starts the CUDA units of
#   every module before any host unit, and the modules' compiles overlap in the report's
#   job timeline (2 cores or more);
# - progress counts the package's units ([5/5] at the end), and neither it nor the report's
#   job timeline shows the modules' stamp edges;
# - --jobs 1 runs the package's Ninja one unit at a time and gives the same wheel bytes,
#   with its units started longest first from the first build's measured times (the report says which unit
#   was longest and whether it was split);
# - every module imports and works from the wheel;
# - one module's compile error fails the build with that error, nothing published;
# - Ctrl-C (SIGINT) while the modules compile leaves no compiler or Ninja behind.
set -u
: "${TAILOR:?TAILOR must point at the built binary}"
[ -x "$TAILOR" ] || { echo "skip: $TAILOR not built"; exit 77; }
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || { echo "skip: no nvcc"; exit 77; }
python3 -c 'import torch' 2>/dev/null || { echo "skip: python3 with torch needed"; exit 77; }
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Learned unit times and job peaks of this test's own (the user cache's folder).
export XDG_CACHE_HOME=$tmp/cache
multi=$src/tests/e2e/data/multi_ext
cores=$(nproc)

# 1. Every module at once.
"$TAILOR" build "$multi" --arch 7.5 --out "$tmp/dist" --work-dir "$tmp/work" --progress plain --cache none \
  >"$tmp/out" 2>"$tmp/err"
expect_eq "build exit 0" "$?" 0
log=$(ls "$tmp"/work/multi_ext-*/build-*.log 2>/dev/null | head -1)
[ -n "$log" ] || { echo "FAIL no build log"; fail=1; log=/dev/null; }
expect_grep "the driver builds the modules at once" \
  "tailor: modules at once: 3 modules, 5 units (2 CUDA), one Ninja under the jobserver" "$log"
expect_grep "a package's own MAX_JOBS gives way to the jobserver" "package choice: setup.py:[0-9]*: MAX_JOBS=1 set by the package; tailor's job count stands" "$log"
expect_grep "-split-compile from the package's units (16 / 2 CUDA units = 8)" "nvcc -split-compile=8$" "$log"
expect_grep "the module's nvcc is given it" "cuda_post_cflags = .*-split-compile=8" "$(ls "$tmp"/work/multi_ext-*/src/build/temp.*/multi_ext._a/build.ninja)"
for m in _a _b _c; do
  n=$(ls "$tmp"/work/multi_ext-*/src/build/temp.*/multi_ext.$m/build.ninja 2>/dev/null | wc -l)
  expect_eq "module $m has its own build.ninja" "$n" 1
done
package_ninja=$(ls "$tmp"/work/multi_ext-*/src/build/temp.*/build.ninja 2>/dev/null | head -1)
order=$(grep -o '^build [^ ]*\.o: [a-z_]*_m[0-9]' "${package_ninja:-/dev/null}" | sed 's/.*: //; s/_m[0-9]$//' | tr '\n' ' ')
expect_eq "one build.ninja for the package, every module's CUDA units first" "$order" "cuda_compile cuda_compile compile compile compile "
# The merge changes no command: the package Ninja runs exactly the modules' own.
base=$(dirname "${package_ninja:-/nonexistent/x}")
merged=$(cd "$base" 2>/dev/null && ninja -t commands | grep -v '^touch \.tailor-done/' | sort)
own=$(for m in "$base"/multi_ext.*/; do (cd "$m" && ninja -t commands); done | sort)
[ -n "$merged" ] && [ "$merged" = "$own" ] && ok "the package Ninja runs the modules' own commands, no other" \
  || bad "the package Ninja's commands differ from the modules' own: $(diff <(echo "$merged") <(echo "$own") | head -5)"
expect_eq "no stamp edge in the progress" "$(grep -c 'tailor-done' "$tmp/err")" 0
expect_eq "no stamp edge in the report's job timeline" \
  "$(python3 -c 'import json,sys; print(sum(".tailor-done" in j["output"] for j in json.load(open(sys.argv[1]))["run"]["job_timeline"]))' "$(ls "$tmp"/dist/*.report.json | head -1)" 2>&1)" 0
expect_grep "progress counts the package's units" "\[5/5\] 100%" "$tmp/err"
expect_grep "a first build orders units by kind" "units ordered by kind (CUDA first): no earlier build" "$log"
expect_grep "the report names the longest unit and its split" "longest   .*csrc/.*\.cu [0-9.]* s, split 8 ways" "$tmp/out"
report=$(ls "$tmp"/dist/*.report.json)
overlap=$(python3 - "$report" <<'PY'
import json, re, sys
jobs = json.load(open(sys.argv[1]))["run"]["job_timeline"]
mod = lambda j: re.search(r"multi_ext\.(_[abc])/", j["output"]).group(1)
print(int(any(mod(a) != mod(b) and a["start_ms"] < b["end_ms"] and b["start_ms"] < a["end_ms"]
              for a in jobs for b in jobs)), len(jobs))
PY
)
if [ "$cores" -ge 2 ]; then
  expect_eq "two modules' compiles overlap in the timeline (jobs, overlap)" "$overlap" "1 5"
else
  echo "skip overlap check: 1 core"
fi
wheel=$(ls "$tmp"/dist/*.whl)
expect_eq "three modules in the wheel" "$(python3 -c 'import sys,zipfile; print(sum(n.endswith(".so") for n in zipfile.ZipFile(sys.argv[1]).namelist()))' "$wheel")" 3
mkdir -p "$tmp/site" && python3 -m zipfile -e "$wheel" "$tmp/site"
got=$(cd "$tmp" && PYTHONPATH="$tmp/site" LD_LIBRARY_PATH="$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")/../lib64:${LD_LIBRARY_PATH:-}" \
  python3 -c 'import multi_ext._a as a, multi_ext._b as b, multi_ext._c as c; print(a.twice(2.0), b.twice(3.0), c.twice(4.0), a.has_cuda(), c.has_cuda())' 2>&1)
expect_eq "every module imports and runs" "$got" "4.0 6.0 8.0 True False"

# 2. --jobs 1: one module at a time, the same bytes.
"$TAILOR" build "$multi" --arch 7.5 --out "$tmp/dist1" --work-dir "$tmp/work1" --progress plain --cache none --jobs 1 \
  >"$tmp/out1" 2>"$tmp/err1"
expect_eq "--jobs 1 exit 0" "$?" 0
expect_grep "--jobs 1 builds one unit at a time" "3 modules, 5 units (2 CUDA), one Ninja, 1 at a time" "$(ls "$tmp"/work1/multi_ext-*/build-*.log | head -1)"
expect_grep "the second build starts units by the first one's times" "units ordered by [0-9]* units' times from earlier builds" "$(ls "$tmp"/work1/multi_ext-*/build-*.log | head -1)"
expect_eq "--jobs 1 gives the same wheel bytes" "$(sha256sum "$tmp"/dist1/*.whl | cut -c1-64)" "$(sha256sum "$wheel" | cut -c1-64)"

# 3. One module's compile error: the build fails with it, nothing is published.
mkdir -p "$tmp/broken" "$tmp/dist-broken"
cp -r "$multi/." "$tmp/broken/"
printf '#ifdef HOST_ONLY\n#error planted in the host-only module\n#endif\n' >>"$tmp/broken/csrc/module.cpp"
"$TAILOR" build "$tmp/broken" --arch 7.5 --out "$tmp/dist-broken" --work-dir "$tmp/work-broken" --progress plain --cache none \
  >"$tmp/out2" 2>"$tmp/err2"
expect_eq "a broken module fails the build" "$?" 1
expect_grep "the module's own error is shown" "planted in the host-only module" "$tmp/err2"
expect_eq "nothing published" "$(ls -A "$tmp/dist-broken" | wc -l)" 0

# 4. Ctrl-C while the modules compile: nothing left running, nothing published. As at a
# terminal: the build in its own process group, SIGINT to the group.
mkdir -p "$tmp/dist-int"
set -m
"$TAILOR" build "$multi" --arch 7.5 --out "$tmp/dist-int" --work-dir "$tmp/work-int" --progress plain --cache none \
  >"$tmp/out3" 2>"$tmp/err3" &
pid=$!
# While the package's Ninja compiles: a compiler of this build is running.
compiling=0
for _ in $(seq 1200); do
  pgrep -f "tailor-build/multi_ext/src/csrc/(scale.cu|module.cpp)" >/dev/null && { compiling=1; break; }
  sleep 0.05
done
expect_eq "the interrupt comes while a unit compiles" "$compiling" 1
kill -INT -- "-$pid"
wait "$pid"
rc=$?
set +m
[ "$rc" -ne 0 ] && echo "ok   interrupted build exits non-zero ($rc)" || { echo "FAIL interrupted build exit 0"; fail=1; }
expect_grep "says interrupted" "interrupted" "$tmp/err3"
expect_eq "never says failed" "$(grep -ci "failed" "$tmp/err3")" 0
sleep 1
left=$(pgrep -af "work-int|tailor-build/multi_ext" | grep -v pgrep | grep -c "ninja\|nvcc\|cicc\|ptxas\|cc1plus\|python" || true)
expect_eq "no compiler or ninja left after Ctrl-C" "$left" 0
expect_eq "nothing published after Ctrl-C" "$(ls -A "$tmp/dist-int" | wc -l)" 0

exit $fail
