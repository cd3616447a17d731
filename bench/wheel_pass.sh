#!/usr/bin/env bash
# The wheel pass of `tailor inspect` against the zip testers, in the same run:
#   bench/wheel_pass.sh [--tailor BIN] [--baseline BIN] [--repeat N] WHEEL...
# For each wheel, runs `tailor inspect --json WHEEL` (and the --baseline binary, e.g. an
# older build, when given), `unzip -tq WHEEL` and `python3 -m zipfile -t WHEEL` (both
# inflate and CRC-check every member; neither hashes nor parses anything), N times each
# in turns, and prints the best wall time, the CPU time (user+sys) of that run, the
# highest peak RSS (/usr/bin/time) and ratios against `unzip -tq` and the baseline.
# One warm-up read puts the wheel in the page cache: disk speed is not measured.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tailor=$root/build/bin/tailor
baseline=""
repeat=3
while [ $# -gt 0 ]; do
  case $1 in
    --tailor) tailor=$2; shift 2 ;;
    --baseline) baseline=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    -h|--help) sed -n 2,9p "$0"; exit 0 ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || { echo "usage: bench/wheel_pass.sh [--tailor BIN] [--baseline BIN] [--repeat N] WHEEL..." >&2; exit 2; }
[ -x "$tailor" ] || { echo "no tailor binary at $tailor (build it, or pass --tailor)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
command -v unzip >/dev/null || { echo "needs unzip (apt-get install unzip)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run LABEL CMD... : one timed run; appends "label wall cpu rss exit" to $tmp/runs
run() {
  local label=$1; shift
  local rc=0
  /usr/bin/time -f '%e %U %S %M' -o "$tmp/time" "$@" >/dev/null 2>"$tmp/err" || rc=$?
  read -r wall user sys rss < <(tail -1 "$tmp/time")
  echo "$label $wall $(echo "$user + $sys" | bc) $rss $rc" >>"$tmp/runs"
}

for wheel in "$@"; do
  [ -f "$wheel" ] || { echo "no such wheel: $wheel" >&2; exit 2; }
  cat "$wheel" >/dev/null
  : >"$tmp/runs"
  for _ in $(seq "$repeat"); do
    [ -n "$baseline" ] && run baseline_inspect "$baseline" inspect --json "$wheel"
    run tailor_inspect "$tailor" inspect --json "$wheel"
    run unzip_tq unzip -tq "$wheel"
    run python_zipfile_t python3 -m zipfile -t "$wheel"
  done
  echo "wheel: $wheel ($(du -h "$wheel" | cut -f1)), $(unzip -Z1 "$wheel" | wc -l) members; cores: $(nproc); load: $(cut -d' ' -f1-3 /proc/loadavg); best of $repeat"
  awk '
    { if (!($1 in wall) || $2 < wall[$1]) { wall[$1] = $2; cpu[$1] = $3 }
      if ($4 > rss[$1]) rss[$1] = $4
      if ($5 != 0) bad[$1] = $5
      if (!($1 in seen)) { seen[$1] = 1; order[n++] = $1 } }
    END {
      printf "%-18s %8s %8s %10s %9s %11s\n", "command", "wall s", "cpu s", "peak RSS", "vs unzip", "vs baseline"
      for (i = 0; i < n; i++) {
        k = order[i]
        vb = ("baseline_inspect" in wall && k ~ /inspect/) ? sprintf("%10.2fx", wall[k] / wall["baseline_inspect"]) : "          -"
        printf "%-18s %8.2f %8.2f %7.1f MiB %8.2fx %s%s\n", k, wall[k], cpu[k], rss[k] / 1024, wall[k] / wall["unzip_tq"], vb, (k in bad) ? "  (exit " bad[k] ")" : ""
      }
    }' "$tmp/runs"
done
