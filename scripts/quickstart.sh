#!/usr/bin/env bash
# The README's first command: set up, build tailor (with its man page and completions, so
# the README's Install step works next), show this machine, and build the bundled example
# extension for this machine's GPU (or, with no GPU, for the target in TAILOR_ARCH, default
# 8.0), ending with the verification report, the wheel, its report page and what to try next.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The binary, its man page and completions (what `cmake --install` copies); tests and
# fixtures are for scripts/test.sh.
bash scripts/build_tailor.sh tailor tailor_docs
T=./build/bin/tailor
$T detect
gpu_flag=()
if $T detect --json | python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["gpus"] else 1)'; then
  $T build
else
  arch=${TAILOR_ARCH:-8.0}
  gpu_flag=(--gpu "$arch")
  echo "quickstart: no GPU here; building the example for --arch $arch (set TAILOR_ARCH to change)"
  $T arch "$arch"
  $T build --arch "$arch"
fi
wheel=$(ls -t dist/*.whl 2>/dev/null | head -n 1 || true)
echo
echo "quickstart: done."
if [[ -n $wheel ]]; then
  echo "  wheel:   $wheel"
  echo "  report:  $wheel.report.html (open it in a browser: the compile timeline, memory, cache, checks)"
fi
echo "next, try:"
[[ -n $wheel ]] && echo "  $T inspect $wheel ${gpu_flag[*]}   # the CUDA targets in the wheel and a verdict for the GPU"
echo "  $T arch H100 T4G              # any GPU target spelling, explained"
echo "  $T plan --gpu H100            # how tailor would build PyTorch itself for a GPU"
echo "  cmake --install build --prefix ~/.local --strip   # put tailor, its man page and completions on PATH"
