#!/usr/bin/env bash
# The real-package suite (bench/real_packages.sh) in lanes side by side on one large
# machine: lane i is pinned to CPUs [i*W, i*W+W) with taskset and given GPU i through
# CUDA_VISIBLE_DEVICES, so four lanes of a 64-CPU, 4-GPU machine measure four 16-core
# builds at once. tailor counts the pinned CPUs (its jobs follow the affinity mask).
#
# Each lane runs its packages one at a time; each is bounded by --timeout and by what is
# left before --budget seconds from the start, and its records are packed into
# OUT/<tag>-lane<i>.tgz as soon as it ends, so a command cut at its time limit still
# returns every package that finished. OUT/summary.txt collects the machine and each
# package's table row, longest unit and last lines.
#
# usage: bench/suite_lanes.sh [--tailor PATH] [--python PY] [--sources DIR] [--out DIR]
#          [--width CPUS] [--timeout S] [--budget S] [--tag NAME] [--learned FILE]
#          [--first-lane N] "lane0-packages" "lane1-packages" ...
# A lane's packages are comma-separated names of bench/real_packages.sh; "own:NAME" runs
# the package's own build (pip wheel) instead of tailor's. --learned FILE copies a
# governor profile (peaks.json of an earlier command) in first, so that builds start from
# what earlier builds measured; the profile after the run is copied to OUT/peaks.json.
# --first-lane N numbers the lanes from N (CPUs and GPU of lane N on), so two commands
# with different tailors can share one machine side by side.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
tailor="$here/build/bin/tailor"
python=python3
sources="$here/.carry/sdists"
out=${OUT:-$PWD/lanes-out}
width=16
timeout_s=540
budget=550
tag=first
learned=""
first=0
while [ $# -gt 0 ]; do
  case $1 in
    --tailor) tailor=$2; shift 2 ;;
    --python) python=$2; shift 2 ;;
    --sources) sources=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --width) width=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --tag) tag=$2; shift 2 ;;
    --learned) learned=$2; shift 2 ;;
    --first-lane) first=$2; shift 2 ;;
    --*) echo "unknown argument $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "usage: $0 [options] \"lane0-packages\" [\"lane1-packages\" ...]" >&2; exit 2; }
cpus=$(nproc --all)
[ $(( ($# + first) * width )) -le "$cpus" ] || { echo "lanes $first to $(( first + $# - 1 )) of $width CPUs need $(( ($# + first) * width )), this machine has $cpus" >&2; exit 2; }
command -v taskset >/dev/null || { echo "taskset (util-linux) is needed" >&2; exit 2; }
mkdir -p "$out"
S=$out/summary.txt
{
  date
  echo "$cpus CPUs; $# lanes of $width"
  lscpu | grep -E 'Model name|Thread|Core|Socket|NUMA node'
  free -g | head -2
  nvidia-smi -L 2>/dev/null
} >>"$S" 2>&1
pdir=${XDG_CACHE_HOME:-$HOME/.cache}/tailor/governor
if [ -n "$learned" ]; then
  mkdir -p "$pdir" && cp "$learned" "$pdir/peaks.json" && echo "governor profile from $learned" >>"$S"
fi
deadline=$(( $(date +%s) + budget ))

lane() {
  local i=$1 pkgs=$2
  local keep=/tmp/suite-lanes-$tag-$i
  mkdir -p "$keep"
  local p
  for p in ${pkgs//,/ }; do
    local left=$(( deadline - $(date +%s) - 15 ))
    [ "$left" -lt 60 ] && { echo "lane $i ($tag): $p skipped, ${left}s left" >>"$S"; continue; }
    local t=$(( left < timeout_s ? left : timeout_s ))
    local name=${p#own:}
    local args=(--only "$name")
    [ "$p" != "$name" ] && args+=(--own "$name" --own-only)
    mkdir -p "$keep/$name"
    CUDA_VISIBLE_DEVICES=$i taskset -c $(( width * i ))-$(( width * i + width - 1 )) \
      bash "$here/bench/real_packages.sh" --tailor "$tailor" --python "$python" --sources "$sources" \
      "${args[@]}" --timeout "$t" --keep "$keep/$name" >"$keep/$name/table.md" 2>"$keep/$name/progress.txt"
    local j
    for j in "$keep/$name"/*.json; do
      [ -f "$j" ] || continue
      python3 - "$j" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); run = r.get("run", {})
jobs = [j for j in run.get("job_timeline", []) if j.get("kind") in ("cu", "cpp", "c")]
lj = max(jobs, key=lambda j: j["end_ms"] - j["start_ms"]) if jobs else None
print(sys.argv[1].split("/")[-1], "jobs", run.get("jobs"), "split", run.get("split_compile"),
      "units_known", run.get("units_known"),
      "longest", (lj["output"].split("/")[-1], (lj["end_ms"] - lj["start_ms"]) / 1000) if lj else None,
      "span", run.get("compile_span_s"))
PY
    done >"$keep/$name/units.txt" 2>&1
    {
      echo "=== lane $i ($tag): $p (timeout ${t}s)"
      grep "^| $name" "$keep/$name/table.md"
      cat "$keep/$name/units.txt"
      tail -2 "$keep/$name/progress.txt"
    } >>"$S"
    tar -czf "$out/$tag-lane$i.tgz" -C "$keep" --exclude='*.whl' . 2>/dev/null
  done
}

i=$first
for pkgs in "$@"; do
  lane "$i" "$pkgs" &
  i=$(( i + 1 ))
done
wait
cp "$pdir/peaks.json" "$out/peaks.json" 2>/dev/null
cat "$S"
