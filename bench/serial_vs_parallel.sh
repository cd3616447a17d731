#!/usr/bin/env bash
# Benchmark: a package that compiles serially on its own (torch-scatter: use_ninja=False)
# built with its defaults by `pip wheel`, against `tailor build` of the same sdist, whose
# recipe switches ninja back on and sets MAX_JOBS. One target, no compiler cache on either
# side (tailor gets --cache none; pip's build has none), fresh work folders. Prints each
# wall time and the ratio. Timing belongs here, never in tests.
#
# usage: bench/serial_vs_parallel.sh [--tailor PATH] [--sdist FILE | --package NAME==VER]
#                                    [--arch 7.5] [--python python3] [--jobs N]
# Default package: torch-scatter==2.1.2 (downloaded with pip when no --sdist is given).
# Needs torch with CUDA in --python and nvcc; no GPU needed (FORCE_CUDA=1).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
tailor="$here/build/bin/tailor"
sdist=""
package="torch-scatter==2.1.2"
arch=7.5
python=python3
jobs_args=()
while [ $# -gt 0 ]; do
  case $1 in
    --tailor) tailor=$2; shift 2 ;;
    --sdist) sdist=$2; shift 2 ;;
    --package) package=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --python) python=$2; shift 2 ;;
    --jobs) jobs_args=(--jobs "$2"); shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -x "$tailor" ] || { echo "no tailor at $tailor (build it first, or pass --tailor)" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/tailor-serial-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
if [ -z "$sdist" ]; then
  "$python" -m pip download "$package" --no-deps --no-binary :all: -d "$work/sdist" -q ||
    { echo "cannot download $package" >&2; exit 2; }
  sdist=$(ls "$work"/sdist/*.tar.gz | head -1)
fi
[ -f "$sdist" ] || { echo "no sdist at $sdist" >&2; exit 2; }
echo "sdist: $sdist; target: $arch; cores: $(nproc)"

now() { date +%s.%N; }

# 1. The package's own way: pip wheel of the sdist, the arch list and FORCE_CUDA only.
mkdir -p "$work/pip-out"
t0=$(now)
TORCH_CUDA_ARCH_LIST="$arch" FORCE_CUDA=1 MAX_JOBS=$(nproc) \
  "$python" -m pip wheel --no-build-isolation --no-deps -v -w "$work/pip-out" "$sdist" >"$work/pip.log" 2>&1
pip_rc=$?
t1=$(now)
pip_s=$(echo "$t1 - $t0" | bc)
echo "pip wheel (package defaults): exit $pip_rc, ${pip_s} s, compiles run in parallel: at most 1 (ninja off)"
[ $pip_rc -eq 0 ] || { tail -20 "$work/pip.log"; exit 1; }

# 2. tailor: the recipe's patch switches ninja on, MAX_JOBS from memory and cores.
t0=$(now)
"$tailor" build "$sdist" --arch "$arch" --python "$python" --cache none --no-tests --progress plain \
  --work-dir "$work/tailor-work" --out "$work/tailor-out" "${jobs_args[@]}" >"$work/tailor.log" 2>&1
tailor_rc=$?
t1=$(now)
tailor_s=$(echo "$t1 - $t0" | bc)
echo "tailor build: exit $tailor_rc, ${tailor_s} s"
grep -m1 '==> building with' "$work/tailor.log" | sed 's/^/  /'
[ $tailor_rc -eq 0 ] || { tail -30 "$work/tailor.log"; exit 1; }

echo "ratio (pip defaults / tailor): $(echo "scale=2; $pip_s / $tailor_s" | bc)"
echo "note: tailor's time includes its checks (inspect verification, clean-venv import)."
