#!/usr/bin/env bash
# The README's test command: set up, build, run every test (unit, end-to-end) with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build_tailor.sh
# Redis for the shared-cache tests; harmless when already running.
if command -v redis-server >/dev/null 2>&1 && ! redis-cli ping >/dev/null 2>&1; then
  redis-server --port 6379 --daemonize yes --save '' >/dev/null
fi
ctest --test-dir build --output-on-failure -j 2 --timeout 1500
