#!/usr/bin/env bash
# The team wheelhouse against compiling (issue 41's measure): one package built three ways
# on "second machines" (each a HOME and work folder of its own, nothing shared but what the
# line says), in one script, on one machine:
#   cold       tailor build --cache none, empty caches
#   warm cache tailor build --cache ccache with a compiler cache another build filled
#              (the shared-cache case; the filling build is not timed)
#   wheelhouse tailor build --wheelhouse DIR, where DIR holds the cold build's wheel
#              published by `tailor publish` (cold caches otherwise)
#   s3         the same from an S3 wheelhouse: the wheel published to moto_server on
#              loopback (the S3-compatible server the tests use), when moto is installed
# Every build runs its import test. Prints each wall time, the ratios to the wheelhouse
# build, and whether the wheelhouse build's wheel has the published wheel's sha256.
#
# usage: bash bench/wheelhouse.sh --tailor PATH [--source SDIST|DIR] [--arch SPEC]
#          [--python PATH] [--out DIR]
# (no --source: the bundled example, run from the repository root). Exit 1 when a build
# fails or the fetched wheel differs from the published one.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tailor="" source="" arch=9.0 python=python3 out=${TMPDIR:-/tmp}/tailor-wheelhouse-bench
while [ $# -gt 0 ]; do
  case $1 in
    --tailor) tailor=$2; shift 2 ;;
    --source) source=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --python) python=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "wheelhouse.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -x "$tailor" ] || { echo "wheelhouse.sh: --tailor PATH is required" >&2; exit 2; }
rm -rf "$out" && mkdir -p "$out"
name=${source:+$(basename "$source")}
name=${name:-bundled example}

# One build as a machine of its own: HOME, XDG cache and work folder under $out/$1.
build() {
  local tag=$1; shift
  local m="$out/$tag"
  mkdir -p "$m/home"
  local t0 t1
  t0=$(date +%s.%N)
  (cd "$root" && HOME="$m/home" XDG_CACHE_HOME="$m/home/.cache" CCACHE_DIR="${CCACHE_SHARED:-$m/ccache}" \
    "$tailor" build ${source:+"$source"} --arch "$arch" --python "$python" --work-dir "$m/work" \
    --out "$m/dist" --progress plain "$@" >"$m/build.log" 2>&1)
  local rc=$?
  t1=$(date +%s.%N)
  echo "$rc $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')"
}
sha() { sha256sum "$1" | cut -d' ' -f1; }
wheel_of() { ls "$out/$1/dist/"*.whl 2>/dev/null | head -1; }

echo "== $name, --arch $arch, $(nproc) CPUs"
read -r rc cold < <(build cold --cache none)
[ "$rc" = 0 ] || { echo "cold build failed (exit $rc): $(tail -3 "$out/cold/build.log")"; exit 1; }
published=$(wheel_of cold)
"$tailor" publish "$published" --to "$out/wh" >"$out/publish.log" 2>&1 ||
  { echo "publish failed: $(cat "$out/publish.log")"; exit 1; }
echo "published $(basename "$published") ($(sha "$published" | cut -c1-16)...) in $(grep -o 'sm[0-9a-z-]*/simple' "$out/publish.log" | head -1 || echo "the wheelhouse")"

# The warm cache: ccache's folder shared by the two builds, else sccache's local storage.
warm=""
if command -v ccache >/dev/null || command -v sccache >/dev/null; then
  tool=ccache; command -v ccache >/dev/null || tool=sccache
  export CCACHE_SHARED="$out/shared-ccache" SCCACHE_DIR="$out/shared-sccache"
  read -r rc _ < <(build fill --cache $tool)
  [ "$rc" = 0 ] || { echo "cache-filling build failed (exit $rc): $(tail -2 "$out/fill/build.log")"; exit 1; }
  read -r rc warm < <(build warm --cache $tool)
  [ "$rc" = 0 ] || { echo "warm-cache build failed (exit $rc)"; exit 1; }
  unset CCACHE_SHARED SCCACHE_DIR
else
  echo "warm cache: skipped (neither ccache nor sccache on PATH)"
fi

read -r rc wh < <(build fetch --cache none --wheelhouse "file://$out/wh")
[ "$rc" = 0 ] || { echo "wheelhouse build failed (exit $rc): $(tail -3 "$out/fetch/build.log")"; exit 1; }
fetched=$(wheel_of fetch)

# The S3 wheelhouse: moto_server on a loopback port, keys it does not check.
s3=""
if command -v moto_server >/dev/null; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  moto_server -H 127.0.0.1 -p "$port" >"$out/moto.log" 2>&1 &
  moto=$!
  trap 'kill "$moto" 2>/dev/null' EXIT
  python3 - "$port" <<'PY' || { echo "moto_server did not start: $(tail -2 "$out/moto.log")"; exit 1; }
import socket, sys, time, urllib.request
for _ in range(600):
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.2).close(); break
    except OSError:
        time.sleep(0.1)
urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{sys.argv[1]}/tailor-bench", method="PUT"))
PY
  export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench
  url="s3://tailor-bench/wh?endpoint=http://127.0.0.1:$port"
  t0=$(date +%s.%N)
  "$tailor" publish "$published" --to "$url" >"$out/publish-s3.log" 2>&1 ||
    { echo "publish to S3 failed: $(cat "$out/publish-s3.log")"; exit 1; }
  echo "published to $url in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') s"
  read -r rc s3 < <(build fetch-s3 --cache none --wheelhouse "$url")
  [ "$rc" = 0 ] || { echo "S3 wheelhouse build failed (exit $rc): $(tail -3 "$out/fetch-s3/build.log")"; exit 1; }
  [ "$(sha "$(wheel_of fetch-s3)")" = "$(sha "$published")" ] || { echo "the S3 build's wheel differs"; exit 1; }
else
  echo "s3: skipped (moto_server not on PATH)"
fi
grep -iq "wheelhouse" "$out/fetch/build.log" || { echo "the wheelhouse build does not say where its wheel came from"; exit 1; }
same=no
[ "$(sha "$fetched")" = "$(sha "$published")" ] && same=yes

printf '%-12s %8s %12s\n' build "wall s" "x wheelhouse"
for row in "cold $cold" ${warm:+"warm-cache $warm"} "wheelhouse $wh" ${s3:+"s3 $s3"}; do
  set -- $row
  printf '%-12s %8.1f %11.1fx\n' "$1" "$2" "$(awk -v a="$2" -v b="$wh" 'BEGIN { print a / b }')"
done
echo "wheelhouse wheel = published wheel (sha256): $same"
grep -E "import|fetched|wheelhouse" "$out/fetch/build.log" | head -5 | sed 's/^/  fetch | /'
[ "$same" = yes ]
