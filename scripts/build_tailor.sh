#!/usr/bin/env bash
# Configures and builds into ./build: the given targets (e.g. `tailor`), or everything
# (tailor, its tests, fixtures and benchmarks) when none is given. Ninja's progress is
# shown ([N/M] and the file, one line a job on a log, overwritten on a terminal), so a long
# compile on a small machine is never silent; TAILOR_BUILD_QUIET=1 hides it.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
quiet=()
if [[ ${TAILOR_BUILD_QUIET:-0} == 1 ]]; then
  help=$(ninja --help 2>&1 || true)  # ninja --help exits 1
  [[ $help == *--quiet* ]] && quiet=(--quiet)
fi
echo "build_tailor.sh: building ${*:-everything} in build/ with $(nproc) jobs (a first build takes a while on few cores)"
ninja -C build -j "$(nproc)" "${quiet[@]}" "$@"
