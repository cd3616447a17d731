#!/usr/bin/env bash
# The real-package suite: `tailor build` of packages people really build, each from a
# fresh work folder, for the GPU present (or --arch). Run on the lent GPU machine; split
# the list with --only to fit a time limit per command.
#
# Per package it records: result, wall time, the longest single unit of its job timeline
# (the critical path's lower bound), wall / that unit and whether wall <= 1.3 x it + 20 s,
# core use (the units' time over wall x cores), jobs used, peak memory (the machine's used
# memory above its level before the build, sampled every second, and the largest single
# process from GNU time when installed), wheel size, targets verified, and the import and
# GPU smoke checks, as rows of a TSV and a Markdown table (for bench/RESULTS.md).
#
# With --own PACKAGE the package's own build runs too (pip wheel of the same source, same
# target, no tailor), so the two can be compared as a ratio. --alongside runs it at the
# same time as tailor's build instead of after it (for a package whose two builds together
# do not fit one command's time limit, on a machine with cores to spare: each build's wall
# time stays its own, the machine's peak memory is then the two together).
#
# usage: bench/real_packages.sh [--tailor PATH] [--python PY] [--arch SPEC]
#          [--sources DIR] [--only name,name] [--own name,name] [--timeout SECONDS]
#          [--results FILE] [--keep DIR] [--extra "ARGS for every tailor build"] [--alongside]
#          [--own-only]
# --own-only runs the --own builds alone (no tailor build), for a second command or
# machine when the two do not fit one command's limit. Under taskset (several lanes of
# one large machine side by side) core use counts the CPUs the suite may use.
# Sources are looked up in --sources (default .carry/sdists): sdists from the index
# (NAME-VERSION.tar.gz) and `git archive` tarballs of git heads (NAME-git.tar.gz, unpacked
# to a folder first, as a git checkout would be). The device machine has no network.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
tailor="$here/build/bin/tailor"
python=python3
arch=""
sources="$here/.carry/sdists"
only=""
own=""
timeout_s=560
results=""
keep=""
extra_all=""
alongside=0
own_only=0
while [ $# -gt 0 ]; do
  case $1 in
    --tailor) tailor=$2; shift 2 ;;
    --python) python=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --sources) sources=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --own) own=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --results) results=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    --extra) extra_all=$2; shift 2 ;;
    --alongside) alongside=1; shift ;;
    --own-only) own_only=1; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -x "$tailor" ] || { echo "no tailor at $tailor (build it, or pass --tailor)" >&2; exit 2; }

# name | source glob | extra tailor build arguments | extra environment (space-separated K=V)
# The restrictions for flash-attn and xformers are the switches each package offers to
# build less than everything (the recipe's 'minimal' profile).
packages=(
  "torch-scatter|torch_scatter-*.tar.gz||"
  "torch-sparse|torch_sparse-*.tar.gz||"
  "torch-cluster|torch_cluster-*.tar.gz||"
  "torch-spline-conv|torch_spline_conv-*.tar.gz||"
  "bitsandbytes|bitsandbytes-git.tar.gz||"
  "causal-conv1d|causal_conv1d-*.tar.gz||"
  "mamba-ssm|mamba_ssm-*.tar.gz||"
  "apex|apex-git.tar.gz||"
  "deepspeed|deepspeed-*.tar.gz||"
  "flash-attn|flash_attn-*.tar.gz|--profile minimal|"
  "xformers|xformers-*.tar.gz|--profile minimal|"
)

# own_switches NAME EXTRA: the switches a user sets so the package's own build builds what
# tailor's does, one K=V a line, from the package's recipe (data/recipes/NAME.toml): its
# [env.*] tables (apex's extensions, deepspeed's ops, a build from source instead of a
# download), the profile named by --profile in EXTRA, and its target variable when it is
# not TORCH_CUDA_ARCH_LIST (flash-attn's FLASH_ATTN_CUDA_ARCHS, in the spelling `tailor
# arch --json` gives). A recipe that patches setup.py for its targets (causal-conv1d,
# mamba-ssm) gets nothing for them: the own build compiles the list setup.py hard-codes.
own_switches() {
  local arch_json
  arch_json=$("$tailor" arch "${arch:-native}" --json 2>/dev/null)
  python3 - "$here/data/recipes/$1.toml" "$2" "$arch_json" <<'PY'
import json, sys, tomllib
path, extra, arch_json = sys.argv[1:]
try:
    recipe = tomllib.load(open(path, "rb"))
except OSError:
    sys.exit(0)
env = {}
for table in recipe.get("env", {}).values():
    env.update(table)
words = extra.split()
if "--profile" in words and words.index("--profile") + 1 < len(words):
    env.update(recipe.get("profile", {}).get(words[words.index("--profile") + 1], {}).get("env", {}))
a = recipe.get("arch", {})
spelled = {"flash_attn": "flash_attn_cuda_archs", "cmake": "cmake_cuda_architectures", "bnb": "bnb_compute_capability"}
if a.get("via") == "env" and a.get("variable") not in (None, "TORCH_CUDA_ARCH_LIST") and a.get("spelling") in spelled:
    try:
        env[a["variable"]] = json.loads(arch_json)[spelled[a["spelling"]]]
    except (ValueError, KeyError):
        pass
for k, v in env.items():
    print("%s=%s" % (k, v))
PY
}

tmp=$(mktemp -d /tmp/tailor-suite.XXXXXX)
[ -n "$keep" ] && mkdir -p "$keep"
# --keep copies the per-package records, build logs and wheels (not the work folders) before the cleanup.
trap '[ -n "$keep" ] && find "$tmp" -maxdepth 1 -type f -exec cp {} "$keep"/ \; ; rm -rf "$tmp"' EXIT
rows="$tmp/rows.tsv"
: >"$rows"
wanted() { [ -z "$1" ] && return 0; case ",$1," in *",$2,"*) return 0 ;; *) return 1 ;; esac; }
used_kib() { awk '/MemTotal/{t=$2} /MemAvailable/{a=$2} END{print t-a}' /proc/meminfo; }
have_gnu_time=0
/usr/bin/time -f %M true >/dev/null 2>&1 && have_gnu_time=1

# measure LABEL CMD...: runs CMD under the timeout, sampling memory; sets m_rc m_wall m_peak_gib m_rss_gib
measure() {
  local label=$1; shift
  local base; base=$(used_kib)
  local peakf="$tmp/$label.peak"
  echo "$base" >"$peakf"
  ( while :; do u=$(used_kib); p=$(cat "$peakf"); [ "$u" -gt "$p" ] && echo "$u" >"$peakf"; sleep 1; done ) &
  local sampler=$!
  local t0 t1
  t0=$(date +%s.%N)
  if [ $have_gnu_time = 1 ]; then
    timeout -s INT -k 20 "$timeout_s" /usr/bin/time -o "$tmp/$label.time" -f %M "$@"
  else
    timeout -s INT -k 20 "$timeout_s" "$@"
  fi
  m_rc=$?
  t1=$(date +%s.%N)
  kill $sampler 2>/dev/null; wait $sampler 2>/dev/null
  m_wall=$(python3 -c "print(f'{$t1-$t0:.1f}')")
  m_peak_gib=$(python3 -c "print(f'{($(cat "$peakf")-$base)/1048576:.1f}')")
  m_rss_gib="-"
  if [ -s "$tmp/$label.time" ]; then
    local kib; kib=$(tail -1 "$tmp/$label.time")
    [[ $kib =~ ^[0-9]+$ ]] && m_rss_gib=$(python3 -c "print(f'{$kib/1048576:.1f}')")
  fi
}

# source_for GLOB: the sdist, or the folder a git tarball unpacks to
source_for() {
  local f
  f=$(ls "$sources"/$1 2>/dev/null | head -1)
  [ -n "$f" ] || return 1
  case $f in
    *-git.tar.gz)
      mkdir -p "$tmp/git"
      tar -xzf "$f" -C "$tmp/git" || return 1
      echo "$tmp/git/$(tar -tzf "$f" | head -1 | cut -d/ -f1)" ;;
    *) echo "$f" ;;
  esac
}

# run_own: the package's own build of $src (pip wheel, same target, no tailor); appends its row.
run_own() {
  local note="pip wheel --no-build-isolation"
  [ "$alongside" = 1 ] && note="$note; ran alongside tailor's build"
    echo "=== $name: the package's own build (pip wheel, same target)" >&2
    ownsrc=$src
    case $src in *.tar.gz) mkdir -p "$tmp/own-$name"; tar -xzf "$src" -C "$tmp/own-$name"; ownsrc=$(ls -d "$tmp/own-$name"/*/ | head -1) ;; esac
    torch_list=$("$tailor" arch "${arch:-native}" --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["torch_cuda_arch_list"])' 2>/dev/null || echo "")
    local ownenv=()
    mapfile -t ownenv < <(own_switches "$name" "$extra")
    note="$note${ownenv[*]:+; ${ownenv[*]}}"
    measure "$name-own" env FORCE_CUDA=1 TORCH_CUDA_ARCH_LIST="$torch_list" CCACHE_DISABLE=1 "${ownenv[@]}" \
      "$python" -m pip wheel --no-deps --no-build-isolation --no-index -w "$tmp/own-out-$name" "$ownsrc" \
      >"$tmp/$name-own.log" 2>&1
    size=$(stat -c %s "$tmp"/own-out-"$name"/*.whl 2>/dev/null | head -1)
    result=ok; [ "$m_rc" -ne 0 ] && result="failed ($m_rc)"; [ "$m_rc" = 124 ] && result=timeout
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t-\t-\t-\t-\t-\t-\t%s\n' "$name (own build)" "$result" "$m_wall" "package default" \
      "$m_peak_gib" "$m_rss_gib" "${size:--}" "$torch_list" "$note" >>"$rows"
}

arch_args=()
own_pid=""
[ -n "$arch" ] && arch_args=(--arch "$arch")
for entry in "${packages[@]}"; do
  IFS='|' read -r name glob extra envs <<<"$entry"
  wanted "$only" "$name" || continue
  src=$(source_for "$glob") || { printf '%s\tno source\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t%s\n' "$name" "no $glob in $sources" >>"$rows"; continue; }
  work="$tmp/work-$name" out="$tmp/out-$name"
  if [ "$own_only" = 1 ]; then wanted "$own" "$name" && run_own; continue; fi
  if [ "$alongside" = 1 ] && [ -n "$own" ] && wanted "$own" "$name"; then run_own & own_pid=$!; fi
  echo "=== $name: tailor build $src ${arch_args[*]} $extra" >&2
  # shellcheck disable=SC2086
  measure "$name" env $envs CCACHE_DISABLE=1 "$tailor" build "$src" "${arch_args[@]}" $extra $extra_all --python "$python" \
    --work-dir "$work" --out "$out" --progress plain --json >"$tmp/$name.json" 2>"$tmp/$name.err"
  rc=$m_rc
  tail -5 "$tmp/$name.err" >&2
  # The build's own log (the last 4 MB), for --keep: the work folder goes with the run.
  [ -n "$keep" ] && cp "$out"/*.whl "$keep"/ 2>/dev/null
  blog=$(ls -t "$work"/*/build-*.log 2>/dev/null | head -1)
  [ -n "$blog" ] && tail -c 4000000 "$blog" >"$tmp/$name.build.log"
  python3 - "$tmp/$name.json" "$name" "$rc" "$m_wall" "$m_peak_gib" "$m_rss_gib" "$tmp/$name.err" >>"$rows" <<'PY'
import json, sys
path, name, rc, wall, peak, rss, errf = sys.argv[1:]
try:
    j = json.load(open(path))
except Exception:
    j = {}
err = open(errf, errors="replace").read().strip().splitlines()
rc = int(rc)
result = "ok" if rc == 0 else ("timeout" if rc in (124, 130, 137) else f"failed ({rc})")
run = j.get("run", {})
wheel = j.get("wheel", {}) or {}
checks = {c.get("name"): c.get("status") for c in j.get("checks", [])}
why = "" if rc == 0 else (j.get("message") or (err[-1] if err else ""))
# The critical path's lower bound: the longest single unit of the job timeline (the
# build folder's .ninja_log files); core use: the units' time over wall x cores.
import os
jobs = run.get("job_timeline") or []
units = [(x["end_ms"] - x["start_ms"]) / 1000 for x in jobs if x.get("kind") in ("cu", "cpp", "c")]
longest = max(units) if units else 0
cores = len(os.sched_getaffinity(0)) or 1
crit = f"{longest:.1f}" if units else "-"
ratio = f"{float(wall) / longest:.2f}" if units and longest > 0 else "-"
goal = f"{'met' if float(wall) <= 1.3 * longest + 20 else 'missed'}" if units else "-"
use = f"{sum(units) / (float(wall) * cores):.0%}" if units and float(wall) > 0 else "-"
print("\t".join(str(x) for x in [
    name, result, wall, run.get("jobs", "-"), peak, rss,
    wheel.get("size", "-"), " ".join(j.get("inputs", {}).get("targets", [])) or "-",
    checks.get("import", "-"), checks.get("gpu-smoke", "-"), crit, ratio, goal, use,
    why.replace("\t", " ")[:200]]))
PY
  [ "$own_pid" != "" ] && { wait "$own_pid"; own_pid=""; }
  if [ "$alongside" = 0 ] && [ -n "$own" ] && wanted "$own" "$name"; then run_own; fi
done

echo
echo "machine: $(nproc) cores usable of $(nproc --all), $(free -g | awk '/Mem:/{print $2}') GiB, $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
echo "nvcc $(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p'), torch $("$python" -c 'import torch; print(torch.__version__)' 2>/dev/null), tailor $tailor"
echo
echo "| package | result | wall s | jobs | peak mem GiB (machine) | largest process GiB | wheel bytes | targets verified | import | GPU smoke | longest unit s | wall / longest | wall <= 1.3 x longest + 20 s | core use | note |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
while IFS=$'\t' read -r -a f; do
  printf '| %s |\n' "$(IFS='|'; echo "${f[*]}" | sed 's/|/ | /g')"
done <"$rows"
[ -n "$results" ] && cp "$rows" "$results"
exit 0
