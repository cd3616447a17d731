#!/usr/bin/env bash
# Benchmark: `tailor build --dist` on a local sccache-dist cluster of 1 build server against
# 2 build servers, for the bundled example and any package given as an argument (a folder,
# an sdist or NAME==VERSION, as `tailor build` takes it). Each run gets a fresh cluster
# (`tailor dist up`, so the servers' toolchain caches start empty alike), a fresh work
# folder and an empty sccache cache (no hits). Prints the wall times and the ratio.
# Timing belongs here, never in tests.
#
# usage: bench/dist.sh [--tailor PATH] [--arch 7.5] [--cores N] [--jobs N] [--no-warmup] [SOURCE...]
#   --cores N   CPUs per build server (taskset; sccache-dist offers that many job slots):
#               on a 16-core machine, --cores 8 splits it into two servers.
#   --jobs N    parallel compile jobs of the build (default: tailor's choice; raise it so the
#               build can keep two servers busy).
#   a warm-up build (not timed) first packages the compilers' toolchains on the client side,
#   which sccache caches across runs, so neither timed run pays for it (--no-warmup skips it).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
tailor="$here/build/bin/tailor"
arch=7.5
cores_args=()
jobs_args=()
warmup=1
sources=()
while [ $# -gt 0 ]; do
  case $1 in
    --tailor) tailor=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --cores) cores_args=(--cores "$2"); shift 2 ;;
    --jobs) jobs_args=(--jobs "$2"); shift 2 ;;
    --no-warmup) warmup=0; shift ;;
    -*) echo "unknown argument $1" >&2; exit 2 ;;
    *) sources+=("$1"); shift ;;
  esac
done
[ -x "$tailor" ] || { echo "no tailor at $tailor (build it first, or pass --tailor)" >&2; exit 2; }
for tool in sccache sccache-dist bwrap; do
  command -v "$tool" >/dev/null || { echo "$tool is not installed (scripts/setup.sh)" >&2; exit 2; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/tailor-dist-bench.XXXXXX")
state="$work/state"
trap '"$tailor" dist down --state-dir "$state" >/dev/null 2>&1; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
port=$(python3 -c 'import socket,random
for _ in range(200):
    p=random.randint(20000,60000)
    try:
        for q in (p,p+1,p+2):
            s=socket.socket(); s.bind(("127.0.0.1",q)); s.close()
        print(p); break
    except OSError: pass')
echo "cores: $(nproc); target: $arch; per server: ${cores_args[1]:-all} CPUs; jobs: ${jobs_args[1]:-default}"

# build_on N LABEL SOURCE...: wall seconds of one build on a fresh N-server cluster ("" on failure).
build_on() {
  local n=$1 label=$2; shift 2
  "$tailor" dist up --state-dir "$state" --servers "$n" --port "$port" "${cores_args[@]}" >"$work/up.out" 2>&1 ||
    { cat "$work/up.out" >&2; return 1; }
  local run="$work/run-$label-$n"
  local t0 t1 rc
  t0=$(date +%s.%N)
  (cd "$here" && SCCACHE_DIR="$run/sccache" "$tailor" build "$@" --arch "$arch" --dist "$state" "${jobs_args[@]}" \
     --out "$run/dist" --work-dir "$run/work" --progress quiet --no-tests --json) >"$run.json" 2>"$run.err"
  rc=$?
  t1=$(date +%s.%N)
  "$tailor" dist down --state-dir "$state" >/dev/null 2>&1
  if [ $rc != 0 ]; then tail -5 "$run.err" >&2; return 1; fi
  python3 - "$run.json" "$n" "$label" "$t0" "$t1" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
d = j["run"]["dist"]
print(f"{sys.argv[3]}: {sys.argv[2]} server(s): {float(sys.argv[5]) - float(sys.argv[4]):.1f} s wall, "
      f"{d['dist_compiles']} of {d['compilations']} compiler runs distributed {d['per_server']}, {d['dist_errors']} errors",
      file=sys.stderr)
print(f"{float(sys.argv[5]) - float(sys.argv[4]):.1f}")
PY
}

status=0
run_package() {  # run_package LABEL [SOURCE]
  local label=$1; shift
  if [ $warmup = 1 ]; then build_on 1 "$label-warmup" "$@" >/dev/null || { status=1; return; }; fi
  local one two
  one=$(build_on 1 "$label" "$@") || { status=1; return; }
  two=$(build_on 2 "$label" "$@") || { status=1; return; }
  python3 -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); print(f'{sys.argv[3]}: 1 server {a:.1f} s, 2 servers {b:.1f} s, ratio {a/b:.2f}x')" \
    "$one" "$two" "$label"
}
run_package example
for s in "${sources[@]}"; do run_package "$(basename "$s")" "$s"; done
exit $status
