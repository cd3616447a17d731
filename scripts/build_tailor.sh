#!/usr/bin/env bash
# Configures and builds into ./build: the given targets (e.g. `tailor`), or everything
# (tailor, its tests, fixtures and benchmarks) when none is given. Ninja's progress lines
# are quiet; what a compiler says is still shown.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
quiet=()
help=$(ninja --help 2>&1 || true)  # ninja --help exits 1
[[ $help == *--quiet* ]] && quiet=(--quiet)
ninja -C build -j "$(nproc)" "${quiet[@]}" "$@"
