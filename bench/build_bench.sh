#!/usr/bin/env bash
# Benchmark of `tailor build` (run on the lent GPU machine; timing never belongs in tests):
#   1. the bundled example for ONE target vs the package's default target list
#      (for a torch cpp_extension package: torch's own arch list), wall time and wheel size;
#   2. a warm ccache rebuild of the one-target build vs its cold build;
#   3. the same one-vs-default comparison for a real package from the index (an sdist
#      file or NAME==VERSION), when given.
# Every build is a full `tailor build` (checks, build, inspect verification, import test).
# Cold builds get an empty private CCACHE_DIR; the warm rebuild reuses it.
#
# usage: bench/build_bench.sh [--tailor PATH] [--arch 9.0] [--package SDIST|NAME==VER]
#                             [--package-default "7.5;8.0;..."] [--jobs N] [--only LABELS]
# --only: a comma list of example-one, example-default, package-one, package-default
# (each "-one" runs cold then warm), to fit runs into a time limit per command.
# Reference (measured by hand): a 3-.cu extension took 60.7 s for 9.0 alone and
# 168.9 s for seven targets with 16 jobs.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
tailor="$here/build/bin/tailor"
arch=9.0
package=""
# causal-conv1d's hard-coded list for CUDA 13.0 (its setup.py):
# 75;80;87;90 + 100;120 (12.8+) + 103;110;121 (13.0).
package_default="7.5;8.0;8.7;9.0;10.0;10.3;11.0;12.0;12.1"
jobs_args=()
only="example-one,example-default,package-one,package-default"
while [ $# -gt 0 ]; do
  case $1 in
    --tailor) tailor=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --package) package=$2; shift 2 ;;
    --package-default) package_default=$2; shift 2 ;;
    --jobs) jobs_args=(--jobs "$2"); shift 2 ;;
    --only) only=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -x "$tailor" ] || { echo "no tailor at $tailor (build it first, or pass --tailor)" >&2; exit 2; }
command -v ccache >/dev/null || echo "note: ccache not installed: the warm rebuild will not be faster" >&2

tmp=$(mktemp -d /tmp/tailor-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
results="$tmp/results.tsv"
: >"$results"

# torch's own target list, in the form `tailor arch` reads (sm_75;...;compute_120).
torch_default=$(python3 -c 'import torch; print(";".join(torch.cuda.get_arch_list()))')

# run_build LABEL CCACHE_DIR SOURCE ARCH: one tailor build, a row in $results.
run_build() {
  local label=$1 cache=$2 source=$3 archs=$4
  local out="$tmp/out-$label" work="$tmp/work-${label%%-*}"
  mkdir -p "$cache"
  local t0 t1 rc
  t0=$(date +%s.%N)
  if [ -z "$source" ]; then
    (cd "$here" && CCACHE_DIR=$cache "$tailor" build --arch "$archs" --out "$out" --work-dir "$work" \
       --progress plain --no-tests "${jobs_args[@]}" --json) >"$tmp/$label.json" 2>"$tmp/$label.err"
  else
    CCACHE_DIR=$cache "$tailor" build "$source" --arch "$archs" --out "$out" --work-dir "$work" \
      --progress plain --no-tests "${jobs_args[@]}" --json >"$tmp/$label.json" 2>"$tmp/$label.err"
  fi
  rc=$?
  t1=$(date +%s.%N)
  if [ $rc -ne 0 ]; then
    echo "$label: tailor build failed (exit $rc):" >&2
    tail -30 "$tmp/$label.err" >&2
    return 1
  fi
  python3 - "$tmp/$label.json" "$label" "$t0" "$t1" >>"$results" <<'PY'
import json, sys
wall = float(sys.argv[4]) - float(sys.argv[3])
j = json.load(open(sys.argv[1]))
w = j["wheel"]
c = j["run"]["cache"]
print("\t".join(str(x) for x in [sys.argv[2], len(j["inputs"]["targets"]), f'{wall:.1f}',
      w["size"], j["run"]["jobs"], c.get("hits"), c.get("misses"), " ".join(j["inputs"]["targets"])]))
PY
  echo "done: $label" >&2
}

wanted() { case ",$only," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
if wanted example-one; then
  run_build example-one-cold "$tmp/ccache-one" "" "$arch" || exit 1
  run_build example-one-warm "$tmp/ccache-one" "" "$arch" || exit 1
fi
if wanted example-default; then
  run_build example-default-cold "$tmp/ccache-default" "" "$torch_default" || exit 1
fi
if [ -n "$package" ]; then
  if wanted package-one; then
    run_build package-one-cold "$tmp/ccache-pkg-one" "$package" "$arch" || exit 1
    run_build package-one-warm "$tmp/ccache-pkg-one" "$package" "$arch" || exit 1
  fi
  if wanted package-default; then
    run_build package-default-cold "$tmp/ccache-pkg-default" "$package" "$package_default" || exit 1
  fi
fi

echo
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
echo "tailor build, nvcc $(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'), torch $(python3 -c 'import torch; print(torch.__version__)')"
printf "%-22s %7s %9s %12s %5s %6s %7s  %s\n" build targets "wall s" "wheel bytes" jobs hits misses "targets"
while IFS=$'\t' read -r label n secs size jobs hits misses targets; do
  printf "%-22s %7s %9s %12s %5s %6s %7s  %s\n" "$label" "$n" "$secs" "$size" "$jobs" "$hits" "$misses" "$targets"
done <"$results"
python3 - "$results" <<'PY'
import sys
rows = {r.split("\t")[0]: r.rstrip("\n").split("\t") for r in open(sys.argv[1])}
def ratio(a, b, col):
    if a in rows and b in rows and float(rows[b][col]) > 0:
        return float(rows[a][col]) / float(rows[b][col])
print()
for name in ("example", "package"):
    t = ratio(f"{name}-default-cold", f"{name}-one-cold", 2)
    s = ratio(f"{name}-default-cold", f"{name}-one-cold", 3)
    w = ratio(f"{name}-one-cold", f"{name}-one-warm", 2)
    if t is not None:
        print(f"{name}: default list / one target: time x{t:.2f}, wheel size x{s:.2f}")
    if w is not None:
        print(f"{name}: cold / warm ccache rebuild (one target): time x{w:.2f}")
PY
