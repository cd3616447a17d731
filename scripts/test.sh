#!/usr/bin/env bash
# The README's test command: set up, build, run every test (unit, end-to-end) with CTest,
# then build again with AddressSanitizer + UndefinedBehaviorSanitizer and run the unit tests
# and the inspect/explain end-to-end tests (the hostile-input ones) under them.
# TAILOR_SKIP_SANITIZE=1 skips the second pass (for a quick local run).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build_tailor.sh
# Redis for the shared-cache tests; harmless when already running.
if command -v redis-server >/dev/null 2>&1 && ! redis-cli ping >/dev/null 2>&1; then
  redis-server --port 6379 --daemonize yes --save '' >/dev/null
fi
ctest --test-dir build --output-on-failure -j 2 --timeout 1500
if [ "${TAILOR_SKIP_SANITIZE:-0}" != 1 ]; then
  echo "test: ASan+UBSan build (build-asan)"
  # -O1 and line tables only: the sanitizers' usual setting, and about 40% less compile
  # time than -O2 -g on 2 cores.
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTAILOR_SANITIZE=ON \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DTAILOR_BENCH=OFF >/dev/null
  ninja -C build-asan -j "$(nproc)" --quiet
  ASAN_OPTIONS=detect_leaks=0:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j 2 --timeout 1500 \
      -L unit
  ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j 2 --timeout 1500 -R 'e2e_(inspect|explain|arch|hostile)'
fi
