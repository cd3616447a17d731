#!/usr/bin/env bash
# The CUDA-extension corpus (bench/corpus.txt): `tailor build` of real packages that have no
# recipe, from the sources carried in .carry/sdists, on the lent GPU machine (no network).
#
# First installs the carried build dependencies (.carry/wheels, offline) into --python, then
# spreads the corpus over --lanes lanes: lane i is pinned with taskset to CPUs
# [i*W, (i+1)*W) and given GPU i mod the GPU count (CUDA_VISIBLE_DEVICES). Packages are handed out longest
# expected first (the est= of corpus.txt) to the lane with the least expected work so far;
# each lane builds its packages one after another, each bounded by --timeout and by what is
# left of --budget seconds from the start. Index sdists are passed to tailor as files; git
# heads (NAME-git.tar.gz) are unpacked to a folder first.
#
# Per package: one row in OUT/results.tsv (name, exit code, wall seconds, wheel, the targets
# and import checks of the report, a one-line reason on failure: the report's error and
# diagnosis and the tail of stderr), and OUT/NAME.tgz (report json, tailor's --json output,
# stderr, the last 200 lines of the build log, the row) packed as soon as it ends, so a
# command cut at its time limit still returns every package that finished.
#
# usage: bash bench/corpus.sh --tailor PATH --python /opt/torch/.venv/bin/python --lanes N
#          --width 16 --budget SECONDS --out DIR [--timeout SECONDS] [--only name,name]
#          [--first-lane N] [--sources DIR] [--wheels DIR] [--corpus FILE] [--arch SPEC]
#          [--extra "ARGS for every tailor build"] [--own] [--tests DIR [--retest]]
# --tests DIR runs DIR/NAME.py (a GPU test of the package's kernels, bench/corpus_tests) right
# after each package that built: its wheel installed with `pip install --no-deps --target
# OUT/NAME/site`, the test run there on the lane's CPUs and GPU; its last line is the gpu column.
# --retest builds nothing: it reruns the tests of the wheels already in OUT/NAME/dist.
# --own runs each package's own build instead of tailor's, as its users would run it:
# `pip wheel --no-build-isolation --no-deps` of the same source with TORCH_CUDA_ARCH_LIST
# set to the target and the same switches, pinned to the same lane (for own / tailor ratios).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
tailor="$here/build/bin/tailor"
python=python3
lanes=1
width=16
budget=580
timeout_s=560
out=$PWD/corpus-out
only=""
first=0
sources="$here/.carry/sdists"
wheels="$here/.carry/wheels"
corpus="$here/bench/corpus.txt"
arch=9.0
extra=""
own=0
tests=""
retest=0
while [ $# -gt 0 ]; do
  case $1 in
    --tailor) tailor=$2; shift 2 ;;
    --python) python=$2; shift 2 ;;
    --lanes) lanes=$2; shift 2 ;;
    --width) width=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --first-lane) first=$2; shift 2 ;;
    --sources) sources=$2; shift 2 ;;
    --wheels) wheels=$2; shift 2 ;;
    --corpus) corpus=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --extra) extra=$2; shift 2 ;;
    --own) own=1; shift ;;
    --tests) tests=$(cd "$2" && pwd); shift 2 ;;
    --retest) retest=1; shift ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
start=$(date +%s)
deadline=$(( start + budget ))
[ -x "$tailor" ] || { echo "no tailor at $tailor (build it, or pass --tailor)" >&2; exit 2; }
[ -f "$corpus" ] || { echo "no corpus at $corpus" >&2; exit 2; }
"$python" -c 'import sys' 2>/dev/null || { echo "$python does not run" >&2; exit 2; }
command -v taskset >/dev/null || { echo "taskset (util-linux) is needed" >&2; exit 2; }
# More lanes than GPUs: lanes share them, lane i on GPU i mod the count.
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "$gpus" -ge 1 ] || gpus=1
cpus=$(nproc --all)
[ $(( (first + lanes) * width )) -le "$cpus" ] ||
  { echo "lanes $first..$(( first + lanes - 1 )) of $width CPUs need $(( (first + lanes) * width )) CPUs, this machine has $cpus" >&2; exit 2; }
# A Python for reading the reports: the system's, else the target's.
py=python3
command -v python3 >/dev/null || py=$python
tailor=$(cd "$(dirname "$tailor")" && pwd)/$(basename "$tailor")
mkdir -p "$out"
out=$(cd "$out" && pwd)
S=$out/summary.txt
R=$out/results.tsv
{
  date
  echo "$cpus CPUs; $lanes lanes of $width from lane $first; budget ${budget}s, ${timeout_s}s a package; arch $arch"
  lscpu 2>/dev/null | grep -E 'Model name|^CPU\(s\)|NUMA node\(s\)'
  free -g 2>/dev/null | head -2
  nvidia-smi -L 2>/dev/null
  "$tailor" --version 2>&1 | head -1
} >>"$S" 2>&1

# The carried build dependencies (setuptools_scm, ...), offline, into the target Python.
shopt -s nullglob
whls=("$wheels"/*.whl)
shopt -u nullglob
if [ ${#whls[@]} -gt 0 ]; then
  echo "installing ${#whls[@]} carried wheels into $python" | tee -a "$S"
  "$python" -m pip install -q --no-deps --no-index "${whls[@]}" >>"$S" 2>&1 ||
    echo "pip install of the carried wheels failed (see above); going on" | tee -a "$S"
fi

wanted() { [ -z "$only" ] && return 0; case ",$only," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
clean() { tr '\t\r\n' '   ' | sed 's/  */ /g; s/^ //; s/ $//' | cut -c1-"${1:-300}"; }

# The corpus: name|source|env|kind|notes; est=SECONDS in the notes orders it.
names=() srcs=() envs=() kinds=() ests=()
while IFS='|' read -r name src env kind notes; do
  case $name in ''|'#'*) continue ;; esac
  wanted "$name" || continue
  est=60
  [[ $notes =~ est=([0-9]+) ]] && est=${BASH_REMATCH[1]}
  names+=("$name") srcs+=("$src") envs+=("$env") kinds+=("$kind") ests+=("$est")
done <"$corpus"
[ ${#names[@]} -gt 0 ] || { echo "no packages selected" >&2; exit 2; }

# Longest expected first, each to the lane with the least expected work so far.
mapfile -t order < <(for k in "${!names[@]}"; do echo "${ests[$k]} $k"; done | sort -k1,1nr -k2,2n | cut -d' ' -f2)
declare -a load plan
for (( l = 0; l < lanes; l++ )); do load[l]=0; plan[l]=""; done
for k in "${order[@]}"; do
  best=0
  for (( l = 1; l < lanes; l++ )); do [ "${load[l]}" -lt "${load[best]}" ] && best=$l; done
  plan[best]="${plan[best]} $k"
  load[best]=$(( load[best] + ests[k] ))
done
for (( l = 0; l < lanes; l++ )); do
  lane_names=""
  for k in ${plan[l]}; do lane_names="$lane_names ${names[$k]}"; done
  echo "lane $(( first + l )) (~${load[l]}s expected):$lane_names" | tee -a "$S"
done

[ -s "$R" ] || printf 'name\trc\twall_s\twheel\ttargets\timport\tgpu\treason\n' >"$R"

# report_fields JSON REPORT: prints wheel, targets, import, reason (tab-separated) from
# tailor's --json output (has error and diagnoses) or else the wheel's report json.
report_fields() {
  "$py" - "$1" "$2" <<'PY'
import json, sys
def load(path):
    try:
        text = open(path, encoding="utf-8", errors="replace").read()
        return json.loads(text[text.index("{"):]) if "{" in text else None
    except (OSError, ValueError):
        return None
r = load(sys.argv[1]) or load(sys.argv[2]) or {}
def one(s):
    return " ".join(str(s).split())
checks = {c.get("name"): c for c in r.get("checks", []) if isinstance(c, dict)}
def check(name):
    c = checks.get(name)
    return "%s: %s" % (c.get("status"), one(c.get("detail", ""))[:160]) if c else "-"
wheel = (r.get("wheel") or {}).get("name") or "-"
reason = []
if r.get("error"):
    reason.append(one(r["error"])[:200])
for d in r.get("diagnoses", [])[:2]:
    reason.append("diagnosis: " + one(d.get("cause", ""))[:200])
for c in r.get("preflight", []):
    if not c.get("ok", True):
        reason.append("preflight %s: %s" % (c.get("check"), one(c.get("problem", ""))[:120]))
for c in checks.values():
    if c.get("status") == "failed" and c.get("name") not in ("targets", "import"):
        reason.append("%s failed: %s" % (c.get("name"), one(c.get("detail", ""))[:120]))
print("\t".join([wheel, check("targets"), check("import"), " | ".join(reason) or "-"]))
print(r.get("log") or "")
PY
}

# build_one K LANE: builds package K in LANE (taskset, GPU), records its row and tarball.
build_one() {
  local k=$1 lane=$2
  local name=${names[$k]} src=${srcs[$k]} env=${envs[$k]}
  local dir=$out/$name
  local left=$(( deadline - $(date +%s) - 15 ))
  if [ "$left" -lt 60 ]; then
    echo "lane $lane: $name skipped, ${left}s left" >>"$S"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" skipped 0 - - - - "budget: ${left}s left" >>"$R"
    return
  fi
  local t=$(( left < timeout_s ? left : timeout_s ))
  if [ "$retest" = 1 ]; then
    local lo=$(( width * lane )) hi=$(( width * lane + width - 1 ))
    printf '%s\tretest\t0\t-\t-\t-\t%s\t-\n' "$name" "$(gpu_test "$name" "$dir" "$lo-$hi" $(( lane % gpus )) | clean 200)" >>"$R"
    return
  fi
  rm -rf "$dir"
  mkdir -p "$dir/dist" "$dir/work"
  local path=$sources/$src
  if [ ! -f "$path" ]; then
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" missing 0 - - - - "no $src in $sources" >>"$R"
    return
  fi
  if [[ $src == *-git.tar.gz ]]; then
    mkdir -p "$dir/src"
    tar -xzf "$path" -C "$dir/src"
    local top
    top=$(find "$dir/src" -mindepth 1 -maxdepth 1 -type d | head -1)
    path=${top:-$dir/src}
  fi
  local -a kv=() more=()
  read -r -a kv <<<"$env"
  read -r -a more <<<"$extra"
  local lo=$(( width * lane )) hi=$(( width * lane + width - 1 ))
  echo "lane $lane: $name start (timeout ${t}s, CPUs $lo-$hi, GPU $(( lane % gpus ))) $(date +%T)" >>"$S"
  local t0 t1 rc
  t0=$(date +%s.%N)
  if [ "$own" = 1 ]; then
    CUDA_VISIBLE_DEVICES=$(( lane % gpus )) taskset -c "$lo-$hi" env "${kv[@]}" TORCH_CUDA_ARCH_LIST="$arch" \
      timeout -s INT -k 20 "$t" "$python" -m pip wheel --no-build-isolation --no-deps --no-index -w "$dir/dist" "$path" \
      >"$dir/build.stderr" 2>&1 </dev/null
    rc=$?
    echo '{}' >"$dir/build.json"
  else
    CUDA_VISIBLE_DEVICES=$(( lane % gpus )) taskset -c "$lo-$hi" env "${kv[@]}" \
      timeout -s INT -k 20 "$t" "$tailor" build "$path" --arch "$arch" --python "$python" \
      --out "$dir/dist" --work-dir "$dir/work" --progress plain --cache none --json "${more[@]}" \
      >"$dir/build.json" 2>"$dir/build.stderr" </dev/null
    rc=$?
  fi
  t1=$(date +%s.%N)
  local wall
  wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
  local report
  report=$(find "$dir/dist" -maxdepth 1 -name '*.report.json' 2>/dev/null | head -1)
  local fields log
  fields=$(report_fields "$dir/build.json" "${report:-/nonexistent}" 2>/dev/null)
  log=$(printf '%s\n' "$fields" | sed -n 2p)
  fields=$(printf '%s\n' "$fields" | sed -n 1p)
  [ -n "$fields" ] || fields=$(printf '%s\t%s\t%s\t%s' - - - "no report")
  local wheel targets imp reason
  IFS=$'\t' read -r wheel targets imp reason <<<"$fields"
  if [ "$wheel" = - ]; then
    local w
    w=$(find "$dir/dist" -maxdepth 1 -name '*.whl' -printf '%f\n' 2>/dev/null | head -1)
    [ -n "$w" ] && wheel=$w
  fi
  if [ "$rc" -ne 0 ]; then
    local tailtxt
    tailtxt=$(grep -v '^[[:space:]]*$' "$dir/build.stderr" | tail -3 | clean 240)
    [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && reason="timeout after ${t}s | $reason"
    reason="$reason | stderr: $tailtxt"
  else
    reason=-
  fi
  [ -n "$log" ] && [ -f "$log" ] || log=$(find "$dir" -name '*.log' -printf '%T@ %p\n' 2>/dev/null | sort -nr | head -1 | cut -d' ' -f2-)
  [ -n "$log" ] && [ -f "$log" ] && tail -n 200 "$log" >"$dir/build-log-tail.txt"
  tail -n 200 "$dir/build.stderr" >"$dir/stderr-tail.txt"
  local gpu=-
  # A wheel that built but was not published (its import check failed: mmdet3d imports mmcv,
  # which it does not declare) still gets its kernels tested; the gpu column says so.
  if [ -n "$tests" ] && { [ "$rc" -eq 0 ] || compgen -G "$dir/work/*/wheelhouse/*.whl" >/dev/null; }; then
    gpu=$(gpu_test "$name" "$dir" "$lo-$hi" $(( lane % gpus )))
  fi
  local row
  row=$(printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s' "$name" "$rc" "$wall" "$wheel" \
    "$(clean 200 <<<"$targets")" "$(clean 200 <<<"$imp")" "$(clean 200 <<<"$gpu")" "$(clean 600 <<<"$reason")")
  printf '%s\n' "$row" >"$dir/row.tsv"
  if command -v flock >/dev/null; then
    # shellcheck disable=SC2016 # expanded by the inner sh
    flock "$R.lock" sh -c 'printf "%s\n" "$1" >>"$2"' _ "$row" "$R"
  else
    printf '%s\n' "$row" >>"$R"
  fi
  echo "lane $lane: $name rc=$rc ${wall}s $wheel" >>"$S"
  local -a pack=(build.json stderr-tail.txt row.tsv)
  [ -f "$dir/build-log-tail.txt" ] && pack+=(build-log-tail.txt)
  [ -f "$dir/gpu-test.txt" ] && pack+=(gpu-test.txt)
  [ -n "$report" ] && pack+=("dist/$(basename "$report")")
  tar -czf "$out/$name.tgz" -C "$dir" "${pack[@]}" 2>/dev/null
}

# gpu_test NAME DIR CPUS GPU: installs DIR/dist's wheel into DIR/site and runs the package's
# test there; prints the test's last line (or why there is none).
# (-P: the tests folder stays off sys.path, so a test named after its package does not shadow it.)
gpu_test() {
  local name=$1 dir=$2 cpus=$3 gpu=$4 t=$tests/$1.py wheel
  [ -f "$t" ] || { echo "no test"; return; }
  local note=""
  wheel=$(find "$dir/dist" -maxdepth 1 -name '*.whl' | head -1)
  if [ -z "$wheel" ]; then
    wheel=$(find "$dir/work" -path '*/wheelhouse/*.whl' 2>/dev/null | head -1)
    note=" (wheel not published: tailor's import check failed)"
  fi
  [ -n "$wheel" ] || { echo "no wheel"; return; }
  rm -rf "$dir/site"
  "$python" -m pip install -q --no-deps --no-index --target "$dir/site" "$wheel" >"$dir/gpu-test.txt" 2>&1 ||
    { echo "install failed"; return; }
  (cd "$dir/site" && CUDA_VISIBLE_DEVICES=$gpu PYTHONPATH="$dir/site" PYTHONUNBUFFERED=1 \
    taskset -c "$cpus" timeout -k 10 180 "$python" -P "$t") >>"$dir/gpu-test.txt" 2>&1 </dev/null
  local line
  line=$(grep -E '^(PASS|FAIL)' "$dir/gpu-test.txt" | tail -1)
  [ -n "$line" ] || line="no verdict: $(grep -v '^[[:space:]]*$' "$dir/gpu-test.txt" | tail -1)"
  printf '%s%s\n' "$line" "$note"
}

lane() {
  local l=$1 lane=$(( first + $1 )) k
  for k in ${plan[l]}; do build_one "$k" "$lane"; done
}

for (( l = 0; l < lanes; l++ )); do lane "$l" & done
wait

echo
echo "=== $(( $(date +%s) - start ))s; $(awk -F'\t' 'NR>1 && $2=="0"' "$R" | wc -l) of $(( $(wc -l <"$R") - 1 )) built"
rm -f "$R.lock"
table() { if command -v column >/dev/null; then column -t -s $'\t'; else cat; fi; }
awk -F'\t' 'BEGIN { OFS = "\t" } { print $1, $2, $3, $4, substr($5, 1, 40), substr($6, 1, 40), substr($7, 1, 60), substr($8, 1, 160) }' "$R" |
  table | tee -a "$S"
