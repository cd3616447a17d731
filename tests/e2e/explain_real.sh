#!/usr/bin/env bash
# `tailor explain` on logs made here by the real tools, not typed by hand: nvcc asked
# for architectures it dropped, and torch's cpp_extension without a GPU and without an
# arch list, or with an entry it does not know.
set -u
: "${TAILOR:?TAILOR must point at the built binary}"
command -v nvcc >/dev/null || { echo "skipped: nvcc is not on PATH"; exit 77; }
command -v python3 >/dev/null || { echo "skipped: python3 is not installed"; exit 77; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"  # fail, failures, ok, bad

check() {  # check NAME WANT_ID WANT_IN_FIX
  "$TAILOR" explain --json "$work/$1.log" >"$work/$1.json" 2>&1
  local code=$?
  if ! python3 - "$work/$1.json" "$2" "$3" <<'PY'; then
import json, sys
doc = json.load(open(sys.argv[1]))
d = doc["diagnoses"]
assert d and d[0]["id"] == sys.argv[2], [x["id"] for x in d]
assert sys.argv[3] in d[0]["fix"], d[0]["fix"]
PY
    bad "$1 (exit $code):"; cat "$work/$1.log"; cat "$work/$1.json"
  elif [[ $code -ne 0 ]]; then
    bad "$1: exit $code"
  else
    ok "$1 -> $2"
  fi
}

printf '__global__ void k() {}\n' >"$work/k.cu"
nvcc -arch=compute_35 -c "$work/k.cu" -o "$work/k.o" >"$work/nvcc-compute35.log" 2>&1 &&
  { echo "skipped: this nvcc still builds compute_35"; exit 77; }
check nvcc-compute35 nvcc-unsupported-arch "compute_35"
nvcc -arch=sm_30 -c "$work/k.cu" -o "$work/k.o" >"$work/nvcc-sm30.log" 2>&1
check nvcc-sm30 nvcc-unsupported-arch "sm_30"

if ! python3 -c "import torch.utils.cpp_extension" 2>/dev/null; then
  echo "note: torch is not installed; the cpp_extension logs are not made"
elif python3 -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  echo "note: a GPU is visible, so torch picks the arch list itself; cpp_extension logs not made"
else
  probe='from torch.utils.cpp_extension import _get_cuda_arch_flags; print(_get_cuda_arch_flags())'
  env -u TORCH_CUDA_ARCH_LIST CUDA_VISIBLE_DEVICES= python3 -c "$probe" >"$work/torch-no-arch.log" 2>&1
  check torch-no-arch arch-list-unset-no-gpu "TORCH_CUDA_ARCH_LIST"
  TORCH_CUDA_ARCH_LIST="9.5" python3 -c "$probe" >"$work/torch-unknown.log" 2>&1
  check torch-unknown torch-unknown-arch "9.5"
fi

if [[ $failures -eq 0 ]]; then echo "all real-log explain checks passed"; else echo "$failures failed"; fi
exit $fail
