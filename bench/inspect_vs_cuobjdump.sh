#!/usr/bin/env bash
# tailor's library analysis against NVIDIA's cuobjdump on the same files.
#
#   bench/inspect_vs_cuobjdump.sh [--build DIR] [--repeat N] LIB...
#       Times `tailor inspect --json LIB` and the bench program (analyze_library_file)
#       against `cuobjdump --list-elf LIB` and `cuobjdump --list-ptx LIB`: wall time and
#       peak RSS (/usr/bin/time), and the ratio cuobjdump/tailor.
#   bench/inspect_vs_cuobjdump.sh [--build DIR] --compare DIR...
#       For every ELF shared library under DIR: the targets and entry counts tailor finds
#       must equal what `cuobjdump -all --list-elf/--list-ptx` lists. Exit 1 on a mismatch.
#
# DIR defaults to build/ (needs bin/tailor and bench/inspect_library_bench built there).
# cuobjdump: $CUOBJDUMP, else PATH, else the nvidia-cuda-cuobjdump pip package.
# cuobjdump prints family targets without their 'f' (sm_120f -> sm_120) and names PTX by
# its sm_ name, so tailor's names are mapped the same way before comparing.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
repeat=3
compare=0
args=()
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --compare) compare=1; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) args+=("$1"); shift ;;
  esac
done
[ ${#args[@]} -gt 0 ] || { sed -n '2,17p' "$0"; exit 2; }

cuobjdump=${CUOBJDUMP:-$(command -v cuobjdump || true)}
if [ -z "$cuobjdump" ]; then
  cuobjdump=$(python3 -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "cu13", "bin", "cuobjdump"))' 2>/dev/null || true)
fi
[ -x "$cuobjdump" ] || { echo "cuobjdump not found (set CUOBJDUMP or pip install nvidia-cuda-cuobjdump)" >&2; exit 2; }
tailor=$build/bin/tailor
benchprog=$build/bench/inspect_library_bench
[ -x "$benchprog" ] || { echo "$benchprog not built (ninja -C $build inspect_library_bench)" >&2; exit 2; }

# run_timed OUTFILE CMD...: prints "<wall ms> <peak RSS KiB>"; the command's stdout goes to OUTFILE.
run_timed() {
  local out=$1; shift
  local tf; tf=$(mktemp)
  local t0 t1
  t0=$(date +%s%N)
  /usr/bin/time -f '%M' -o "$tf" "$@" > "$out" 2>/dev/null
  t1=$(date +%s%N)
  echo "$(( (t1 - t0) / 1000000 )) $(tail -1 "$tf")"
  rm -f "$tf"
}

# Counts as "<name>.<cubin|ptx> <n>" lines, sorted, from each tool.
counts_cuobjdump() {
  { "$cuobjdump" -all --list-elf "$1" 2>/dev/null; "$cuobjdump" -all --list-ptx "$1" 2>/dev/null; } |
    grep -oE '\.sm_[0-9]+a?\.(cubin|ptx)$' | sed 's/^\.//' | sort | uniq -c | awk '{print $2, $1}'
}
counts_tailor() {
  "$benchprog" "$1" | awk '
    /^ERROR/ { print "ERROR"; exit }
    /^TARGET/ { n=$2; ext=".cubin"
      if (n ~ /^compute_/) { sub(/^compute_/, "sm_", n); ext=".ptx" }
      sub(/f$/, "", n); c[n ext] += $3 }
    END { for (k in c) print k, c[k] }' | sort
}

if [ $compare = 1 ]; then
  bad=0 ok=0 libs=0
  while IFS= read -r -d '' f; do
    head -c 4 "$f" | grep -q 'ELF' || continue
    libs=$((libs + 1))
    ours=$(counts_tailor "$f"); theirs=$(counts_cuobjdump "$f")
    if [ "$ours" = "$theirs" ]; then
      ok=$((ok + 1))
      printf 'OK        %s  %s\n' "$f" "$(echo "$ours" | awk 'NF{n+=$2} END{print n+0}') entries"
    else
      bad=$((bad + 1))
      printf 'MISMATCH  %s\n' "$f"
      diff <(echo "$ours") <(echo "$theirs") | sed 's/^</  tailor   /; s/^>/  cuobjdump/' | grep -v '^---' | grep -vE '^[0-9]'
    fi
  done < <(find "${args[@]}" -type f \( -name '*.so' -o -name '*.so.*' \) -print0 | sort -z)
  echo "compared $libs libraries: $ok agree, $bad differ"
  [ $bad = 0 ]
  exit
fi

printf '%-28s %12s %10s %10s\n' "tool" "wall ms" "peak MiB" "ratio"
for lib in "${args[@]}"; do
  echo "== $lib ($(stat -c %s "$lib") bytes)"
  out=$(mktemp)
  best_t=""; best_r=""
  have_cli=0
  if [ -x "$tailor" ] && "$tailor" inspect --json "$lib" > /dev/null 2>&1; then
    have_cli=1
    for _ in $(seq "$repeat"); do
      read -r t r < <(run_timed "$out" "$tailor" inspect --json "$lib")
      if [ -z "$best_t" ] || [ "$t" -lt "$best_t" ]; then best_t=$t; best_r=$r; fi
    done
    cli_t=$best_t
    printf '%-28s %12s %10s\n' "tailor inspect --json" "$best_t" "$((best_r / 1024))"
  fi
  best_t=""
  for _ in $(seq "$repeat"); do
    read -r t r < <(run_timed "$out" "$benchprog" "$lib")
    if [ -z "$best_t" ] || [ "$t" -lt "$best_t" ]; then best_t=$t; best_r=$r; fi
  done
  bench_t=$best_t
  printf '%-28s %12s %10s\n' "analyze_library_file" "$best_t" "$((best_r / 1024))"
  ours_t=${cli_t:-$bench_t}
  [ $have_cli = 1 ] || echo "(tailor inspect not usable here: ratio uses the bench program)"
  for mode in --list-elf --list-ptx; do
    read -r t r < <(run_timed "$out" "$cuobjdump" "$mode" "$lib")
    ratio=$(awk -v a="$t" -v b="$ours_t" 'BEGIN { if (b < 1) b = 1; printf "%.0fx", a / b }')
    printf '%-28s %12s %10s %10s\n' "cuobjdump $mode" "$t" "$((r / 1024))" "$ratio"
  done
  rm -f "$out"
done
