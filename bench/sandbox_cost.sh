#!/usr/bin/env bash
# What --sandbox costs (issue 51): the same package built cold with and without --sandbox,
# alternating, ROUNDS times each (--cache none, a fresh work folder and XDG cache per build,
# so every build compiles everything), and the wall times side by side with their medians.
# SOURCE: the bundled example (default), a source folder, an sdist or NAME==VERSION.
#
# usage: bench/sandbox_cost.sh [--tailor PATH] [--arch 8.0] [--rounds 3] [SOURCE]
# Prints the launcher's own cost (20 launches each way), one line per build and a summary
# line; exit 1 when a build fails.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
tailor="$here/build/bin/tailor"
arch=8.0
rounds=3
source=""
while [ $# -gt 0 ]; do
  case $1 in
    --tailor) tailor=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) source=$1; shift ;;
  esac
done
[ -x "$tailor" ] || { echo "no tailor at $tailor (--tailor PATH)"; exit 2; }
out=$(mktemp -d /tmp/sandbox-cost-XXXXXX)
trap 'rm -rf "$out"' EXIT
echo "== $(uname -r), uid $(id -u), $(nproc) CPUs, source: ${source:-the bundled example}, arch $arch"
# The launcher alone, 20 times each way: the fixed path's namespace, and the sandbox (its
# namespaces, mounts, init and seccomp filter) around `true`.
mkdir -p "$out/launch"
for mode in namespace sandbox; do
  flags=()
  [ "$mode" = sandbox ] && flags=(--sandbox)
  start=$(date +%s.%N)
  for _ in $(seq 20); do
    "$tailor" __fixed-path --tmpfs /tmp/.tailor-build --bind "$out/launch" /tmp/.tailor-build/sandbox-cost \
      "${flags[@]}" -- true || { echo "the $mode launcher failed"; exit 1; }
  done
  printf 'launch (%s): %.1f ms\n' "$mode" "$(echo "($(date +%s.%N) - $start) * 50" | bc -l)"
done
declare -A times
status=0
for round in $(seq 1 "$rounds"); do
  for mode in plain sandbox; do
    flags=()
    [ "$mode" = sandbox ] && flags=(--sandbox)
    w="$out/$mode-$round"
    start=$(date +%s.%N)
    XDG_CACHE_HOME="$w/xdg" "$tailor" build ${source:+"$source"} --arch "$arch" --cache none --no-tests \
      --work-dir "$w/work" --out "$w/out" --progress plain "${flags[@]}" >"$w.log" 2>&1
    rc=$?
    took=$(echo "$(date +%s.%N) - $start" | bc)
    times[$mode]="${times[$mode]:-} $took"
    printf '%-8s round %d: %7.1f s (exit %d)\n' "$mode" "$round" "$took" "$rc"
    [ "$rc" = 0 ] || { status=1; tail -n 15 "$w.log"; }
  done
done
[ "$rounds" -gt 0 ] || exit $status
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
plain=$(echo "${times[plain]}" | median)
sandbox=$(echo "${times[sandbox]}" | median)
printf 'median: without --sandbox %.1f s, with --sandbox %.1f s (%+.1f%%)\n' "$plain" "$sandbox" \
  "$(echo "($sandbox - $plain) * 100 / $plain" | bc -l)"
exit $status
