#!/usr/bin/env bash
# The README's first command: set up, build tailor, show this machine, and build the
# bundled example extension for this machine's GPU (or, with no GPU, for the target in
# TAILOR_ARCH, default 8.0), ending with the verification report.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build_tailor.sh tailor   # the binary only: tests and fixtures are for scripts/test.sh
T=./build/bin/tailor
$T detect
if $T detect --json | python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["gpus"] else 1)'; then
  $T build
else
  arch=${TAILOR_ARCH:-8.0}
  echo "quickstart: no GPU here; building the example for --arch $arch (set TAILOR_ARCH to change)"
  $T arch "$arch"
  $T build --arch "$arch"
fi
