#!/usr/bin/env bash
# Real packages tailor has not been shown, built as a new user would: `tailor build FILE
# --arch 9.0` for every sdist in a folder (on the lent GPU machine: carry them, no network
# there), one after another, each bounded; per package its exit code, time, the summary's
# diagnosis and check lines and the tail of its output. Used for bench/RESULTS.md's "six
# packages tailor had not seen".
# usage: bash bench/try_packages.sh TAILOR OUT_DIR [SDIST_DIR (default .carry/new)]
export PATH=/opt/torch/.venv/bin:$PATH
T=$1; out=$2; dir=${3:-$(cd "$(dirname "$0")/.." && pwd)/.carry/new}
[ -x "$T" ] && [ -n "$out" ] || { echo "usage: $0 TAILOR OUT_DIR [SDIST_DIR]"; exit 2; }
mkdir -p "$out"
for f in "$dir"/*.tar.gz; do
  n=$(basename "$f" .tar.gz)
  start=$SECONDS
  timeout -s INT 240 "$T" build "$f" --arch 9.0 --work-dir "/tmp/try-packages/$n" --out "$out/$n" \
    --progress plain > "$out/$n.log" 2>&1
  rc=$?
  echo "== $n: exit $rc, $((SECONDS - start)) s"
  grep -E "^(tailor: (error|package)|diagnosis|  (import|verify|targets|package|check))" "$out/$n.log" | head -12
  tail -n 6 "$out/$n.log" | sed 's/^/   | /'
done
