#!/usr/bin/env bash
# One GPU-machine round of the corpus (bench/corpus.txt): several bench/corpus.sh groups side by
# side on one host, each with its own CPUs, then everything packed for the trip back.
#
# usage: bash bench/corpus_round.sh OUT GROUP...
#   GROUP is FIRST_LANE:LANES:WIDTH:name,name,...[:CORPUS[:TESTS]] (corpus.sh --first-lane/--lanes/
#   --width/--only, and --corpus/--tests for that group; lane i of width W owns CPUs
#   [i*W, (i+1)*W), so groups must not overlap).
# Environment: TAILOR (tailor to run), PY (target Python, default /opt/torch/.venv/bin/python),
# BUDGET (seconds, default 560), TESTS (a folder of GPU tests: corpus.sh --tests), RETEST=1 (rerun
# the tests on wheels already in OUT: corpus.sh --retest), WHEELS_BACK=1 (pack the built wheels too).
# Before the groups start: the carried wheels (.carry/wheels: build and runtime dependencies the
# machine lacks) go into PY once, without their dependencies, and the carried system packages
# (.carry/debs, e.g. libsparsehash-dev, as `apt-get install` would put them) are unpacked into /
# with dpkg (root). OUT gets results.tsv (all groups), summary-*.txt, logs.tgz (every package's
# tarball) and, with WHEELS_BACK=1, wheels.tar.NN (15 MiB pieces: cat them back together).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
out=$1; shift
py=${PY:-/opt/torch/.venv/bin/python}
tailor=${TAILOR:-$here/build/bin/tailor}
budget=${BUDGET:-560}
mkdir -p "$out"
out=$(cd "$out" && pwd)
shopt -s nullglob
whls=("$here"/.carry/wheels/*.whl)
debs=("$here"/.carry/debs/*.deb)
shopt -u nullglob
[ ${#whls[@]} -gt 0 ] && { "$py" -m pip install -q --no-deps --no-index "${whls[@]}" >"$out/carried-wheels.txt" 2>&1 ||
  echo "carried wheels: pip failed (see carried-wheels.txt)"; }
[ ${#debs[@]} -gt 0 ] && { dpkg -i "${debs[@]}" >"$out/carried-debs.txt" 2>&1 || echo "carried debs: dpkg failed"; }
extra=()
[ "${RETEST:-0}" = 1 ] && extra+=(--retest)
work=${WORK:-/tmp/corpus-round}
n=0
for g in "$@"; do
  IFS=: read -r first lanes width only corpus tests <<<"$g"
  n=$((n + 1))
  gx=(--corpus "${corpus:-$here/bench/corpus.txt}")
  tests=${tests:-${TESTS:-}}
  [ -n "$tests" ] && gx+=(--tests "$tests")
  bash "$here/bench/corpus.sh" --tailor "$tailor" --python "$py" --lanes "$lanes" --width "$width" \
    --first-lane "$first" --only "$only" --budget "$budget" --timeout "$budget" --out "$work/g$n" \
    --sources "$here/.carry/sdists" --wheels /nonexistent "${gx[@]}" "${extra[@]}" >"$out/group-$n.txt" 2>&1 &
done
wait
: >"$out/results.tsv"
for d in "$work"/g*; do
  [ -f "$d/results.tsv" ] && { [ -s "$out/results.tsv" ] && tail -n +2 "$d/results.tsv" || cat "$d/results.tsv"; } >>"$out/results.tsv"
  cp "$d/summary.txt" "$out/summary-$(basename "$d").txt" 2>/dev/null
done
(cd "$work" && tar -czf "$out/logs.tgz" g*/*.tgz g*/*/gpu-test.txt 2>/dev/null)
if [ "${WHEELS_BACK:-0}" = 1 ]; then
  (cd "$work" && tar -cf - g*/*/dist/*.whl 2>/dev/null) | split -b 15M -d - "$out/wheels.tar."
fi
column -t -s $'\t' "$out/results.tsv" 2>/dev/null | cut -c1-250 || cat "$out/results.tsv"
