#!/usr/bin/env bash
# `tailor inspect --json WHEEL` against plain decompression of the same wheel:
#   bench/inspect_wheel.sh WHEEL [BUILD_DIR]
# References: inspect_wheel_bench (libdeflate, every member into memory, one thread),
# `python -m zipfile -t` and `unzip -tq` (both inflate and CRC-check every member).
# Prints wall seconds, peak RSS and the ratio to the libdeflate reference. Each command
# runs once after one warm-up read of the file (page cache), so disk speed is not measured.
set -euo pipefail
wheel=${1:?usage: bench/inspect_wheel.sh WHEEL [BUILD_DIR]}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${2:-$root/build}
tailor=$build/bin/tailor
ref=$build/bench/inspect_wheel_bench
[ -x "$ref" ] || ref=$(find "$build" -name inspect_wheel_bench -type f -perm -u+x | head -1)
[ -x "$tailor" ] && [ -x "$ref" ] || { echo "build tailor and inspect_wheel_bench in $build first"; exit 2; }
cat "$wheel" >/dev/null
rss_file=$(mktemp)
trap 'rm -f "$rss_file"' EXIT

measure() {  # label command... -> prints "label  seconds  peakRSS"
  local label=$1; shift
  local t0 t1 rss
  t0=$(date +%s.%N)
  /usr/bin/time -f '%M' -o "$rss_file" "$@" >/dev/null 2>&1 || true
  rss=$(tail -1 "$rss_file")
  t1=$(date +%s.%N)
  printf '%s %s %s\n' "$label" "$(echo "$t1 - $t0" | bc)" "$rss"
}
{
  measure libdeflate_1thread "$ref" "$wheel"
  measure tailor_inspect_json "$tailor" inspect --json "$wheel"
  measure tailor_inspect_1thread "$tailor" inspect --json --threads 1 "$wheel"
  measure python_zipfile_t python3 -m zipfile -t "$wheel"
  if command -v unzip >/dev/null; then measure unzip_tq unzip -tq "$wheel"; fi
} | awk 'NR==1 { base=$2 } { printf "%-24s %8.2f s  %8.1f MiB RSS  %5.2fx libdeflate\n", $1, $2, $3/1024, $2/base }'
echo "wheel: $wheel ($(du -h "$wheel" | cut -f1)), cores: $(nproc)"
