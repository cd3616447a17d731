#!/usr/bin/env bash
# `tailor matrix build` over a one-variant matrix on the torch fixture (TEST FIXTURE, one
# target, tiny kernel): the variant is built, verified and published under its name, and
# the summary says so.
set -euo pipefail
: "${TAILOR:?}" "${TAILOR_SOURCE_DIR:?}"
command -v nvcc > /dev/null || { echo "skipped: no nvcc on PATH"; exit 77; }
python3 -c 'import setuptools, wheel' 2> /dev/null || { echo "skipped: python3 lacks setuptools/wheel"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"  # fail
cuda=$(nvcc --version | sed -n 's/.*release \([0-9]*\.[0-9]*\).*/\1/p')
pyver=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
cp -r "$TAILOR_SOURCE_DIR/tests/torch_fixture" "$tmp/src"
cat > "$tmp/tailor.toml" <<TOML
[defaults]
source = "src"
cuda = "$cuda"
python = "$pyver"
without = ["cudnn"]

[matrix]
gpu = ["7.5"]
TOML
"$TAILOR" matrix --config "$tmp/tailor.toml" > "$tmp/list.txt" || fail "list"
grep -q '^pytorch-sm75 ' "$tmp/list.txt" || { cat "$tmp/list.txt"; fail "variant name"; }
(cd "$tmp" && "$TAILOR" matrix --config tailor.toml build --no-venv --out "$tmp/dist" --work-dir "$tmp/work") > "$tmp/build.txt" 2>&1 \
  || { cat "$tmp/build.txt"; fail "matrix build"; }
grep -Eq 'pytorch-sm75 +ok +[^ ]+\.whl' "$tmp/build.txt" || { cat "$tmp/build.txt"; fail "summary"; }
ls "$tmp/dist/pytorch-sm75/"torch-2.9.1+cu*-manylinux_*.whl > /dev/null || fail "wheel not published under the variant name"
[ -s "$tmp/dist/pytorch-sm75/Dockerfile.runtime" ] || fail "no runtime Dockerfile"
echo "matrix build e2e: ok"
