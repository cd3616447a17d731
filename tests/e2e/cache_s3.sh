#!/usr/bin/env bash
# End-to-end: a shared compiler cache in an S3-compatible bucket (moto_server from PyPI
# `moto[server]`, started here on a loopback port over plain http) with the real sccache,
# over two checkouts of the test fixture extension (tests/e2e/data/tiny_ext: one .cu and
# one .cpp that build in seconds; every step kind a cache counts still runs).
#  - `tailor cache status` says ready for the bucket, and not ready with exit 1 and one line
#    that says why for a port nothing listens on, a bucket that does not exist and keys the
#    server refuses (a second moto that checks credentials);
#  - checkout 1 builds cold into s3://BUCKET/PREFIX (the endpoint from a [cache] table):
#    every step kind misses; objects appear under the prefix and nowhere else;
#  - its work folder is removed, checkout 2 builds with TAILOR_CACHE_URL (the endpoint in
#    the URL): every step kind hits, none misses, the wheel has the same bytes;
#  - the reports name the storage as s3 with its endpoint; the secret key, which sccache
#    reads from the environment, is in no report, log, output or printed plan;
#  - a build against an endpoint nothing listens on stops with one line and no wheel;
#  - no sccache server of these builds is left; moto stops when the test ends.
set -u
: "${TAILOR:?TAILOR must point at the built binary}"
[ -x "$TAILOR" ] || { echo "skip: $TAILOR not built"; exit 77; }
command -v sccache >/dev/null || { echo "skip: sccache not installed (pip install sccache)"; exit 77; }
command -v moto_server >/dev/null || { echo "skip: moto_server not installed (pip install 'moto[server]')"; exit 77; }
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || { echo "skip: no nvcc"; exit 77; }
python3 -c 'import torch' 2>/dev/null || { echo "skip: python3 with torch needed"; exit 77; }
# src, fail, expect_eq, json_get, free_port, wait_port, tiny_ext, copy_package.
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"

# s3 METHOD URL: an unsigned request (moto without auth takes it); prints the status, then the body.
s3() {
  python3 - "$1" "$2" <<'PY'
import sys, urllib.request, urllib.error
req = urllib.request.Request(sys.argv[2], method=sys.argv[1])
try:
    with urllib.request.urlopen(req, timeout=20) as r:
        print(r.status); print(r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code); print(e.read().decode())
PY
}
# keys URL PREFIX: the object keys under PREFIX (ListObjectsV2, up to 1000), one a line.
keys() {
  python3 - "$1" "$2" <<'PY'
import sys, urllib.parse, urllib.request, xml.etree.ElementTree as ET
url = sys.argv[1] + "?list-type=2&max-keys=1000&prefix=" + urllib.parse.quote(sys.argv[2])
root = ET.fromstring(urllib.request.urlopen(url, timeout=20).read())
ns = {"s3": "http://s3.amazonaws.com/doc/2006-03-01/"}
for k in root.findall("s3:Contents/s3:Key", ns):
    print(k.text)
PY
}

tmp=$(mktemp -d)
port=$(free_port)
auth_port=$(free_port)
dead=$(free_port)
# moto_server: every request allowed (any key), state in memory. The second one checks
# credentials after its first request (the bucket's creation) and knows no keys.
moto_server -H 127.0.0.1 -p "$port" >"$tmp/moto.log" 2>&1 &
moto_pid=$!
INITIAL_NO_AUTH_ACTION_COUNT=1 moto_server -H 127.0.0.1 -p "$auth_port" >"$tmp/moto_auth.log" 2>&1 &
auth_pid=$!
cleanup() {
  kill "$moto_pid" "$auth_pid" 2>/dev/null
  wait "$moto_pid" "$auth_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
wait_port "$port" || { echo "FAIL moto_server did not listen on $port"; tail -5 "$tmp/moto.log"; exit 1; }
wait_port "$auth_port" || { echo "FAIL moto_server did not listen on $auth_port"; tail -5 "$tmp/moto_auth.log"; exit 1; }

endpoint="http://127.0.0.1:$port"
bucket="tailor-cache"
prefix="ci/tiny"
created=$(s3 PUT "$endpoint/$bucket")
expect_eq "create the bucket" "${created%%$'\n'*}" 200
created=$(s3 PUT "http://127.0.0.1:$auth_port/$bucket")
expect_eq "create the bucket that checks keys" "${created%%$'\n'*}" 200
# sccache reads the credentials from the environment; tailor never holds them.
secret="tailorE2eSecret$RANDOM$RANDOM"
export AWS_ACCESS_KEY_ID="tailor-e2e-key" AWS_SECRET_ACCESS_KEY="$secret"
# A caller's own sccache S3 variables must not move the objects elsewhere.
export SCCACHE_S3_KEY_PREFIX="somewhere-else" SCCACHE_ENDPOINT="http://127.0.0.1:$dead"
export XDG_CACHE_HOME="$tmp/xdg"   # tailor's statistics file for this test alone
url="s3://$bucket/$prefix?endpoint=$endpoint"
storage="s3://$bucket/$prefix (endpoint $endpoint)"

# The storage.
"$TAILOR" cache status --cache-url "$url" --json >"$tmp/status.json" 2>"$tmp/status.err"
expect_eq "status exit" "$?" 0
expect_eq "status tool" "$(json_get "$tmp/status.json" 'j["tool"]')" "sccache"
expect_eq "status ok" "$(json_get "$tmp/status.json" 'j["ok"]')" "True"
expect_eq "status storage" "$(json_get "$tmp/status.json" 'j["storage"]')" "$storage"
expect_eq "status storage kind" "$(json_get "$tmp/status.json" 'j["storage_kind"]')" "s3"
expect_eq "status: sccache checked under the prefix" "$(keys "$endpoint/$bucket" "$prefix/")" "$prefix/.sccache_check"
not_ready() {  # not_ready NAME URL WANT: exit 1, "not ready", one check line containing WANT
  "$TAILOR" cache status --cache-url "$2" >"$tmp/nr.out" 2>&1
  expect_eq "$1: exit 1" "$?" 1
  expect_eq "$1: not ready" "$(tail -1 "$tmp/nr.out")" "not ready"
  expect_eq "$1: one line says why" "$(grep -c "^check .*$3" "$tmp/nr.out")" 1
  cat "$tmp/nr.out" >>"$tmp/all_status.out"
}
not_ready "closed port" "s3://$bucket/$prefix?endpoint=http://127.0.0.1:$dead" "Connection refused"
not_ready "no such bucket" "s3://no-such-bucket/x?endpoint=$endpoint" "NoSuchBucket.*create the bucket"
not_ready "keys refused" "s3://$bucket/x?endpoint=http://127.0.0.1:$auth_port" "InvalidAccessKeyId.*refused the credentials"
"$TAILOR" cache status --cache-url "s3://$bucket?endpoint=127.0.0.1:$port" >"$tmp/noscheme.out" 2>&1
expect_eq "endpoint without a scheme: exit 2" "$?" 2
expect_eq "endpoint without a scheme: one line" "$(wc -l <"$tmp/noscheme.out")" 1

# Two checkouts of the same package (file times kept: the wheels must be the same bytes);
# the [cache] table gives the bucket, the endpoint and the stable work folder in $tmp.
copy_package "$tiny_ext" "$tmp/co1" "$tmp/co2"
cat >"$tmp/tailor.toml" <<EOF
[cache]
url = "s3://$bucket/$prefix"
endpoint = "$endpoint"
work_root = "$tmp/shared"
EOF
"$TAILOR" build "$tmp/co1/tiny_ext" --arch 7.5 --config "$tmp/tailor.toml" --print-env >"$tmp/plan.sh" 2>&1
expect_eq "print-env exit" "$?" 0
expect_eq "print-env: the bucket" "$(grep -c "^export SCCACHE_BUCKET=$bucket$" "$tmp/plan.sh")" 1
expect_eq "print-env: plain http" "$(grep -c "^export SCCACHE_S3_USE_SSL=false$" "$tmp/plan.sh")" 1
expect_eq "print-env: no AWS variable" "$(grep -c 'AWS_' "$tmp/plan.sh")" 0

"$TAILOR" cache zero >/dev/null
"$TAILOR" build "$tmp/co1/tiny_ext" --arch 7.5 --config "$tmp/tailor.toml" --out "$tmp/out1" --no-tests \
  --progress quiet --json >"$tmp/r1.json" 2>"$tmp/e1"
rc=$?
expect_eq "cold build exit" "$rc" 0
[ "$rc" = 0 ] || { tail -20 "$tmp/e1"; exit 1; }
expect_eq "cold: built in the stable work folder" "$(ls "$tmp/shared")" "tiny_ext"
expect_eq "cold: tool" "$(json_get "$tmp/r1.json" 'j["run"]["cache"]["tool"]')" "sccache"
expect_eq "cold: storage" "$(json_get "$tmp/r1.json" 'j["run"]["cache"]["storage"]')" "$storage"
expect_eq "cold: no hits" "$(json_get "$tmp/r1.json" 'j["run"]["cache"]["hits"]')" 0
expect_eq "cold: no storage errors" "$(json_get "$tmp/r1.json" 'j["run"]["cache"]["errors"]')" 0
expect_eq "cold: step kinds missed" \
  "$(json_get "$tmp/r1.json" '" ".join(k for k,v in sorted(j["run"]["cache"]["categories"].items()) if v["misses"]>0 and v["hits"]==0)')" \
  "C/C++ CUDA (nvcc) PTX (cicc) cubin (ptxas)"
misses=$(json_get "$tmp/r1.json" 'j["run"]["cache"]["misses"]')
# One object per miss, plus sccache's own check, all under the prefix; none elsewhere.
keys "$endpoint/$bucket" "" >"$tmp/keys1"
expect_eq "cold: objects under the prefix" "$(grep -c "^$prefix/" "$tmp/keys1")" "$((misses + 1))"
expect_eq "cold: no object outside the prefix" "$(grep -vc "^$prefix/" "$tmp/keys1")" 0

# Another machine: nothing local is left; the environment names the storage this time,
# the endpoint in the URL.
rm -rf "$tmp/shared"
TAILOR_CACHE_URL="$url" "$TAILOR" build "$tmp/co2/tiny_ext" --arch 7.5 --config "$tmp/tailor.toml" \
  --out "$tmp/out2" --no-tests --progress quiet >"$tmp/o2" 2>"$tmp/e2"
rc=$?
expect_eq "warm build exit" "$rc" 0
[ "$rc" = 0 ] || { tail -20 "$tmp/e2"; exit 1; }
r2=$(ls "$tmp"/out2/*.report.json)
expect_eq "warm: storage" "$(json_get "$r2" 'j["run"]["cache"]["storage"]')" "$storage"
expect_eq "warm: no misses" "$(json_get "$r2" 'j["run"]["cache"]["misses"]')" 0
expect_eq "warm: every step kind hit" \
  "$(json_get "$r2" '" ".join(k for k,v in sorted(j["run"]["cache"]["categories"].items()) if v["hits"]>0 and v["misses"]==0)')" \
  "C/C++ CUDA (nvcc) PTX (cicc) cubin (ptxas)"
expect_eq "warm: same hits as the cold build's misses" "$(json_get "$r2" 'j["run"]["cache"]["hits"]')" "$misses"
expect_eq "same wheel bytes" "$(json_get "$r2" 'j["wheel"]["sha256"]')" "$(json_get "$tmp/r1.json" 'j["wheel"]["sha256"]')"
grep -q "^cache     sccache (s3://$bucket/$prefix (endpoint $endpoint)): [0-9]* hits, 0 misses (100%)" "$tmp/o2"
expect_eq "summary line names the bucket and endpoint at 100%" "$?" 0
keys "$endpoint/$bucket" "" >"$tmp/keys2"
expect_eq "warm: nothing new written" "$(wc -l <"$tmp/keys2")" "$(wc -l <"$tmp/keys1")"

# The secret is nowhere tailor wrote (reports, logs, outputs, the wheels, the plan).
leaks=$(grep -rl --exclude='moto*.log' -- "$secret" "$tmp" 2>/dev/null | wc -l)
expect_eq "the secret key is in no file" "$leaks" 0

# An endpoint where nothing listens is an outage: the build goes on without a cache and
# says so, as for a Redis that does not answer (cache_shared.sh).
"$TAILOR" build "$tmp/co2/tiny_ext" --arch 7.5 --cache-url "s3://$bucket?endpoint=http://127.0.0.1:$dead" \
  --work-dir "$tmp/w3" --print-env >"$tmp/o3" 2>"$tmp/e3"
expect_eq "dead endpoint: exit" "$?" 0
expect_eq "dead endpoint: warned" "$(grep -c "^tailor: warning: compiler cache s3://$bucket (endpoint http://127.0.0.1:$dead): .*cannot connect.*building without a compiler cache" "$tmp/e3")" 1
expect_eq "dead endpoint: no cache in the plan" "$(grep -c '^# compiler cache: none$' "$tmp/o3")" 1

# A server that answers and refuses (no such bucket) is a setting to fix: the build stops
# with one line that says why, and writes no wheel.
"$TAILOR" build "$tmp/co2/tiny_ext" --arch 7.5 --cache-url "s3://no-such-bucket-$bucket?endpoint=$endpoint" \
  --work-dir "$tmp/w3" --out "$tmp/out3" --no-tests --progress quiet >"$tmp/o3b" 2>"$tmp/e3b"
expect_eq "missing bucket: build exit 1" "$?" 1
expect_eq "missing bucket: one line" "$(wc -l <"$tmp/e3b")" 1
expect_eq "missing bucket: says why" "$(grep -c "^tailor: error: .*NoSuchBucket" "$tmp/e3b")" 1
expect_eq "missing bucket: no wheel" "$(ls "$tmp/out3"/*.whl 2>/dev/null | wc -l)" 0

# No server of these builds is left behind.
# (By this test's own endpoint port: another run of this test may be using the same bucket name.)
left=$(grep -lz "^SCCACHE_ENDPOINT=$endpoint$" /proc/[0-9]*/environ 2>/dev/null | wc -l)
expect_eq "no sccache server left" "$left" 0

exit $fail
