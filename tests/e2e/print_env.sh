#!/usr/bin/env bash
# `tailor build SOURCE --print-env` through the real binary: each package's own arch
# variable in its own spelling, the anti-download switch, the job count with its
# reason, and output a shell accepts. Nothing is built.
set -u
: "${TAILOR:?TAILOR must point at the built binary}"
"$TAILOR" build --help 2>/dev/null | grep -q -- "--print-env" ||
  { echo "skipped: this tailor has no 'build --print-env'"; exit 77; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME="$work/cache"  # the work folder print-env names, never created
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"  # fail, failures, bad

# A source folder that declares its name the way real packages do.
make_source() {
  mkdir -p "$work/$1"
  printf '[project]\nname = "%s"\nversion = "0.0.1"\n' "$1" >"$work/$1/pyproject.toml"
  printf 'from setuptools import setup\nsetup()\n' >"$work/$1/setup.py"
}

# print_env NAME ARCH [extra args...] -> $work/NAME.env
print_env() {
  local name=$1 arch=$2
  shift 2
  make_source "$name"
  if ! "$TAILOR" build "$work/$name" --arch "$arch" --print-env "$@" >"$work/$name.env" 2>"$work/$name.err"; then
    bad "$name: tailor build --print-env failed: $(cat "$work/$name.err")"
    return 1
  fi
  bash -n "$work/$name.env" || bad "$name: output is not valid shell"
}

has() {  # has NAME LITERAL-LINE-FRAGMENT
  grep -qF -- "$2" "$work/$1.env" || { bad "$1: missing [$2] in:"; cat "$work/$1.env"; }
}

if print_env xformers "8.0;9.0"; then
  has xformers "export TORCH_CUDA_ARCH_LIST='8.0;9.0'"
  has xformers "export FORCE_CUDA=1"
  has xformers "pip wheel --no-build-isolation --no-deps"
fi

if print_env flash-attn "sm_80,sm_90"; then
  has flash-attn "export FLASH_ATTN_CUDA_ARCHS='80;90'"
  has flash-attn "export FLASH_ATTENTION_FORCE_BUILD=TRUE"
  has flash-attn "export NVCC_THREADS="
  has flash-attn "GiB per job (5 GiB x"
fi

if print_env bitsandbytes "7.5;8.0;9.0"; then
  has bitsandbytes "'-DCOMPUTE_CAPABILITY=75;80;90'"
  has bitsandbytes "-DCOMPUTE_BACKEND=cuda"
  has bitsandbytes "export CMAKE_BUILD_PARALLEL_LEVEL="
fi

if print_env causal-conv1d "8.0"; then
  has causal-conv1d "# patch setup.py: replace the hard-coded cc_flag -gencode list"
  has causal-conv1d "cc_flag += ['-gencode=arch=compute_80,code=sm_80']"
  has causal-conv1d "export CAUSAL_CONV1D_FORCE_BUILD=TRUE"
fi

# --jobs wins over the memory formula; --package picks the recipe over the declared name.
if print_env my-kernels "8.6" --jobs 3 --package xformers; then
  has my-kernels "export MAX_JOBS=3"
  has my-kernels "# jobs: 3 (--jobs 3)"
  has my-kernels "export TORCH_CUDA_ARCH_LIST=8.6"
fi

# An unknown package gets the generic recipe; the job count is explained by memory.
if print_env unknown-ext "7.5"; then
  has unknown-ext "(recipe: generic)"
  has unknown-ext "export TORCH_CUDA_ARCH_LIST=7.5"
  grep -qE "^# jobs: [0-9]+ \([0-9.]+ GiB usable \(.*\) / 3 GiB per job = [0-9]+" "$work/unknown-ext.env" ||
    bad "unknown-ext: no memory-based jobs reason: $(grep '^# jobs' "$work/unknown-ext.env")"
fi

[[ ! -e "$work/cache" ]] || bad "--print-env created $work/cache"

if [[ $failures -eq 0 ]]; then echo "all print-env checks passed"; else echo "$failures print-env check(s) failed"; fi
exit $fail
