#!/usr/bin/env bash
# The README's test command: set up, build, run every test with CTest.
#  - The optimised build (./build) runs the end-to-end tests (the real binary, real pip,
#    nvcc and Ninja).
#  - The AddressSanitizer + UndefinedBehaviorSanitizer build (./build-asan) runs the unit
#    tests and the inspect/explain/arch/hostile end-to-end tests (the hostile-input ones),
#    with LeakSanitizer on.
#    Unit tests are built and run only there: once, under the sanitizers, is enough, and
#    it keeps CI inside its time on 2 cores.
# TAILOR_SKIP_SANITIZE=1 skips the sanitizer build and runs every test in ./build instead
# (for a quick local run).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The layer order of ARCHITECTURE.md, read from the includes (cheap: before any compile).
python3 scripts/check_layers.py
# No src file over 700 lines, no function over 120; what is still over is allowlisted, and
# that list only shrinks (scripts/size_allowlist.txt).
python3 scripts/check_sizes.py
# The C++ as clang-format writes it (.clang-format; fix with `bash scripts/check_format.sh --fix`).
bash scripts/check_format.sh
# Redis for the shared-cache tests; harmless when already running.
if command -v redis-server >/dev/null 2>&1 && ! redis-cli ping >/dev/null 2>&1; then
  redis-server --port 6379 --daemonize yes --save '' >/dev/null
fi
if [ "${TAILOR_SKIP_SANITIZE:-0}" = 1 ]; then
  bash scripts/build_tailor.sh
  ctest --test-dir build --output-on-failure -j 2 --timeout 1500
  exit 0
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
# -O0 and line tables only: the instrumented compile is the longest step of CI on 2 cores,
# and -O0 takes 30% less of it than -O1. clang compiles it in 40% less CPU than g++ at -O0
# (3.3 s against 5.5 s for workflow/extension_build.cpp); g++ stays the compiler of the
# optimised build, whose -Werror keeps the warnings in check, so clang's own warnings do
# not fail this one. The nvcc fixtures are the optimised build's (TAILOR_FIXTURES_FROM):
# they do not depend on how tailor is compiled.
asan_cc=() asan_flags="-O0 -g1 -DNDEBUG -Wno-maybe-uninitialized"
if command -v clang++ >/dev/null 2>&1; then
  asan_cc=(-DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang -DTAILOR_WERROR=OFF)
  asan_flags="-O0 -g1 -DNDEBUG"
fi
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTAILOR_SANITIZE=ON \
  "${asan_cc[@]}" -DTAILOR_FIXTURES_FROM="$PWD/build/fixtures" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$asan_flags" -DTAILOR_BENCH=OFF >/dev/null
# The sanitizer build starts now, in the background at the lowest priority: it takes only
# the CPU the optimised build and its e2e tests leave idle (pip, downloads, a test waiting
# on another), which on 2 cores is minutes of it. What it has not finished when the e2e
# tests end is built after them, in the foreground, where a compile error shows.
nice -n 19 ninja -C build-asan -j "$(nproc)" >build-asan/background-build.log 2>&1 &
asan_build=$!
trap 'kill "$asan_build" 2>/dev/null || true' EXIT
ninja -C build -j "$(nproc)" tailor tailor_fixtures
ctest --test-dir build --output-on-failure -j 2 --timeout 1500 -L e2e

echo "test: ASan+UBSan build (build-asan)"
# Not silent while it finishes: Ninja's latest [N/M] line once a minute.
while kill -0 "$asan_build" 2>/dev/null; do
  for _ in $(seq 60); do kill -0 "$asan_build" 2>/dev/null && sleep 1; done
  progress=$(tail -c 2000 build-asan/background-build.log | tr '\r' '\n' | grep '^\[' | tail -1 || true)
  kill -0 "$asan_build" 2>/dev/null && echo "test: sanitizer build still compiling: ${progress:-starting}"
done
wait "$asan_build" || echo "test: the background sanitizer build stopped: building the rest in the foreground"
trap - EXIT
# Ninja's own lines, one per step: minutes of compiling show as progress, not silence.
ninja -C build-asan -j "$(nproc)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j 2 --timeout 1500 -L unit
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j 2 --timeout 1500 -R 'e2e_(inspect|explain|arch|hostile|slim)'
