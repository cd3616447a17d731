#!/usr/bin/env bash
# End-to-end: an S3 wheelhouse (moto_server from PyPI `moto[server]`, on a loopback port over
# plain http, the S3-compatible server cache_s3.sh uses too; keys in the environment, which
# moto takes without checking them):
#  - `tailor publish` of the bundled example's wheel (built once here for one target) to
#    s3://BUCKET/PREFIX?endpoint=... with --public-read; the objects sit under the prefix, the
#    secret key is in no output;
#  - pip installs it by plain GETs from http://<moto>/BUCKET/PREFIX/sm75/simple, reading the
#    .metadata file (PEP 658) and not the wheel to resolve; uv too when on PATH;
#  - eight publishers at once (small wheels made here): all exit 0, all listed in the state
#    file and the index (S3's conditional writes: the losers of the race retried, moto's log
#    shows the 412s);
#  - the same name with other bytes: exit 1, one line naming both sha256s, nothing changed;
#  - `tailor build --wheelhouse s3://...` (and http://) of the same inputs fetches the wheel,
#    checks it and runs the import test, compiling nothing;
#  - a tampered wheel object (other bytes under the published key), an index whose link
#    leaves the wheelhouse, and an index larger than the bound are refused by build's fetch
#    (a link to another host: the unit test ProjectIndex.LinksMustStayRelative);
#  - a missing bucket, a closed port and half a key pair are one line each.
set -u
: "${TAILOR:?TAILOR must point at the built binary}"
[ -x "$TAILOR" ] || { echo "skip: $TAILOR not built"; exit 77; }
command -v moto_server >/dev/null || { echo "skip: moto_server not installed (pip install 'moto[server]')"; exit 77; }
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || { echo "skip: no nvcc"; exit 77; }
python3 -c 'import torch' 2>/dev/null || { echo "skip: python3 with torch needed"; exit 77; }
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"  # src, ok, bad, expect_eq, expect_grep, json_get, make_wheel

tmp=$(mktemp -d)
port=$(free_port)
dead=$(free_port)
moto_server -H 127.0.0.1 -p "$port" >"$tmp/moto.log" 2>&1 &
moto_pid=$!
cleanup() { kill "$moto_pid" 2>/dev/null; wait "$moto_pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
export PIP_CONFIG_FILE=/dev/null PIP_NO_CACHE_DIR=1 UV_NO_CACHE=1 UV_NO_CONFIG=1
unset PIP_FIND_LINKS PIP_INDEX_URL PIP_EXTRA_INDEX_URL UV_INDEX_URL UV_EXTRA_INDEX_URL UV_FIND_LINKS
secret="tailorE2eSecret$RANDOM$RANDOM"
export AWS_ACCESS_KEY_ID="tailor-e2e-key" AWS_SECRET_ACCESS_KEY="$secret"
unset AWS_SESSION_TOKEN

# s3 METHOD KEY [FILE]: a signed-looking request (moto checks no signature): status, then body.
s3() {
  python3 - "$1" "http://127.0.0.1:$port/$2" "${3:-}" <<'PY'
import sys, urllib.request, urllib.error
data = open(sys.argv[3], "rb").read() if sys.argv[3] else None
req = urllib.request.Request(sys.argv[2], method=sys.argv[1], data=data, headers={
    "Authorization": "AWS4-HMAC-SHA256 Credential=e2e/20260101/us-east-1/s3/aws4_request, "
                     "SignedHeaders=host, Signature=00", "Content-Type": "application/octet-stream"})
try:
    with urllib.request.urlopen(req, timeout=20) as r:
        sys.stdout.buffer.write(b"%d\n" % r.status + r.read())
except urllib.error.HTTPError as e:
    sys.stdout.buffer.write(b"%d\n" % e.code + e.read())
PY
}
body() { tail -n +2; }

(cd "$src" && "$TAILOR" build --arch 7.5 --out "$tmp/dist" --work-dir "$tmp/work" --progress plain \
  --no-tests) >"$tmp/build.out" 2>&1 || { tail -30 "$tmp/build.out"; fail "the example did not build"; }
whl=$(cd "$tmp/dist" && ls ./*.whl | head -1)
whl=${whl#./}
sha=$(sha256sum "$tmp/dist/$whl" | cut -d' ' -f1)
wait_port "$port" || { echo "FAIL moto_server did not listen on $port"; tail -5 "$tmp/moto.log"; exit 1; }
endpoint="http://127.0.0.1:$port"
bucket="tailor-wheels"
expect_eq "create the bucket" "$(s3 PUT "$bucket" | head -1)" 200
url="s3://$bucket/team/house?endpoint=$endpoint"

start=$(date +%s.%N)
"$TAILOR" publish "$tmp/dist/$whl" --to "$url" --public-read --json >"$tmp/publish.json" 2>"$tmp/publish.err"
expect_eq "publish to S3: exit" "$?" 0
echo "note: one publish to moto took $(python3 -c "import time; print(round(time.time() - $start, 3))") s"
expect_eq "target set" "$(json_get "$tmp/publish.json" 'j["wheels"][0]["target_set"]')" sm75
expect_eq "the stored wheel has its bytes" "$(s3 GET "$bucket/team/house/files/sm75/$whl" | body | sha256sum | cut -d' ' -f1)" "$sha"
expect_eq "the state lists it" "$(s3 GET "$bucket/team/house/wheelhouse.json" | body | python3 -c 'import json,sys; print(json.load(sys.stdin)["wheels"][0]["sha256"])')" "$sha"

# pip and uv by plain unsigned GETs (--public-read), through the .metadata file.
python3 -m pip install -v --no-deps --target "$tmp/pip-target" --index-url "$endpoint/$bucket/team/house/sm75/simple" \
  fused-ops >"$tmp/pip.log" 2>&1
expect_eq "pip install from the bucket: exit" "$?" 0
expect_eq "pip installed it" "$(cat "$tmp"/pip-target/fused_ops-*.dist-info/METADATA | grep '^Version:' | cut -d+ -f1)" "Version: 0.1.0"
expect_grep "pip read the .metadata file" "Obtaining dependency information for fused-ops from $endpoint/$bucket/team/house/files/sm75/${whl//+/%2B}.metadata" "$tmp/pip.log"
uv=${UV:-$(command -v uv || true)}
if [ -n "$uv" ]; then
  "$uv" venv -q --python "$(command -v python3)" "$tmp/uv-venv"
  mark=$(wc -l <"$tmp/moto.log")
  # The wheel pins torch, which the bucket does not hold: a stand-in torch of that version
  # beside it, so uv resolves the dependency from the .metadata file.
  mkdir -p "$tmp/torch-links" && echo 'x = 1' >"$tmp/torch-links/init.py"
  make_wheel "$tmp/torch-links/torch-$(python3 -c 'import torch; print(torch.__version__.split("+")[0])')-py3-none-any.whl" \
    "$tmp/torch-links/init.py:torch/__init__.py" >/dev/null
  VIRTUAL_ENV=$tmp/uv-venv "$uv" pip install --dry-run --index-url "$endpoint/$bucket/team/house/sm75/simple" \
    --find-links "$tmp/torch-links" fused-ops >"$tmp/uv.log" 2>&1
  expect_eq "uv resolution from the bucket: exit" "$?" 0
  tail -n +"$((mark + 1))" "$tmp/moto.log" >"$tmp/uv-requests.log"
  # The '+' of the version's label as the client sends it: itself or %2B.
  any_plus=${whl//+/\\(+\\|%2[Bb]\\)}
  expect_grep "uv read the .metadata file" "GET /$bucket/team/house/files/sm75/$any_plus.metadata" "$tmp/uv-requests.log"
  if grep -q "GET /$bucket/team/house/files/sm75/$any_plus " "$tmp/uv-requests.log"; then bad "uv downloaded the wheel to resolve"
  else ok "uv resolved without downloading the wheel"; fi
else
  echo "note: no uv on PATH and no \$UV: the uv check did not run"
fi

# Eight publishers at once: every wheel listed.
echo 'x = 1' >"$tmp/x.py"
for i in 1 2 3 4 5 6 7 8; do
  echo "{\"package\": \"pkg$i\", \"targets\": [\"sm_75\"], \"source\": {\"kind\": \"directory\", \"tree-sha256\": \"$i\"}}" \
    >"$tmp/prov$i.json"
  mkdir -p "$tmp/c$i"
  make_wheel "$tmp/c$i/pkg$i-1.0-py3-none-any.whl" "$tmp/x.py:pkg$i/__init__.py" \
    "$tmp/prov$i.json:pkg$i-1.0.dist-info/tailor-provenance.json" >/dev/null
done
mark=$(wc -l <"$tmp/moto.log")
pids=()
for i in 1 2 3 4 5 6 7 8; do
  "$TAILOR" publish "$tmp/c$i/pkg$i-1.0-py3-none-any.whl" --to "$url" --public-read >"$tmp/c$i.out" 2>&1 & pids+=($!)
done
rcs=
for p in "${pids[@]}"; do wait "$p"; rcs="$rcs$?"; done
expect_eq "eight publishers at once: all exit 0" "$rcs" 00000000
expect_eq "all in the state file" "$(s3 GET "$bucket/team/house/wheelhouse.json" | body | python3 -c 'import json,sys; print(" ".join(sorted(w["project"] for w in json.load(sys.stdin)["wheels"])))')" \
  "fused-ops pkg1 pkg2 pkg3 pkg4 pkg5 pkg6 pkg7 pkg8"
expect_eq "all in the index" "$(s3 GET "$bucket/team/house/sm75/simple/index.json" | body | python3 -c 'import json,sys; print(" ".join(sorted(p["name"] for p in json.load(sys.stdin)["projects"])))')" \
  "fused-ops pkg1 pkg2 pkg3 pkg4 pkg5 pkg6 pkg7 pkg8"
echo "note: state writes that lost the race and were retried: $(tail -n +"$((mark + 1))" "$tmp/moto.log" | grep -c 'PUT /'"$bucket"'/team/house/wheelhouse.json HTTP/1.1" 412')"
python3 - "$endpoint/$bucket/team/house/sm75/simple" <<'PY' && ok "every project page links its wheel" || bad "a project page does not link its wheel"
import json, sys, urllib.request
for i in range(1, 9):
    page = json.load(urllib.request.urlopen(f"{sys.argv[1]}/pkg{i}/index.json", timeout=20))
    assert page["files"][0]["filename"] == f"pkg{i}-1.0-py3-none-any.whl", page
PY

# The same name with other bytes: refused, one line with both sha256s, nothing changed.
s3 GET "$bucket/team/house/wheelhouse.json" >"$tmp/state-before"
mkdir -p "$tmp/other"
make_wheel "$tmp/other/pkg1-1.0-py3-none-any.whl" "$tmp/x.py:pkg1/__init__.py" "$tmp/x.py:pkg1/more.py" \
  "$tmp/prov1.json:pkg1-1.0.dist-info/tailor-provenance.json" >/dev/null
"$TAILOR" publish "$tmp/other/pkg1-1.0-py3-none-any.whl" --to "$url" >/dev/null 2>"$tmp/conflict.err"
expect_eq "other bytes under a published name: exit 1" "$?" 1
expect_eq "one line" "$(wc -l <"$tmp/conflict.err")" 1
expect_grep "names the published sha256" "$(sha256sum "$tmp/c1/pkg1-1.0-py3-none-any.whl" | cut -d' ' -f1)" "$tmp/conflict.err"
expect_grep "names the new sha256" "$(sha256sum "$tmp/other/pkg1-1.0-py3-none-any.whl" | cut -d' ' -f1)" "$tmp/conflict.err"
cmp -s "$tmp/state-before" <(s3 GET "$bucket/team/house/wheelhouse.json") && ok "the state is unchanged" || bad "the state changed"

# A second machine builds the same inputs with the S3 wheelhouse: fetched, not compiled.
start=$(date +%s.%N)
(cd "$src" && "$TAILOR" build --arch 7.5 --out "$tmp/dist2" --work-dir "$tmp/work2" --progress plain \
  --no-tests --wheelhouse "$url" --json) >"$tmp/fetch.json" 2>"$tmp/fetch.err"
expect_eq "build --wheelhouse s3://: exit" "$?" 0
echo "note: build --wheelhouse s3:// took $(python3 -c "import time; print(round(time.time() - $start, 1))") s (the import test included)"
expect_eq "the report names the object" "$(json_get "$tmp/fetch.json" 'j["wheel"]["from_wheelhouse"]')" \
  "$endpoint/$bucket/team/house/files/sm75/${whl//+/%2B}"
expect_eq "the same bytes" "$(json_get "$tmp/fetch.json" 'j["wheel"]["sha256"]')" "$sha"
expect_eq "the import test ran" "$(json_get "$tmp/fetch.json" '[c["status"] for c in j["checks"] if c["name"]=="import"][0]')" passed
if grep -q "==> building" "$tmp/fetch.err"; then bad "build --wheelhouse s3:// compiled"; else ok "nothing compiled"; fi
(cd "$src" && "$TAILOR" build --arch 7.5 --out "$tmp/dist3" --work-dir "$tmp/work2" --progress plain \
  --no-tests --wheelhouse "$endpoint/$bucket/team/house/") >/dev/null 2>"$tmp/fetch-http.err"
expect_eq "build --wheelhouse http:// (plain GETs): exit" "$?" 0
expect_grep "fetched over http" "fetched $whl from the wheelhouse" "$tmp/fetch-http.err"

# Hostile: a tampered object, an index link out of the wheelhouse, a huge index.
hostile() {  # hostile NAME WANT: build's fetch from $url exits 2 with WANT in its one error line
  (cd "$src" && "$TAILOR" build --arch 7.5 --out "$tmp/dist4" --work-dir "$tmp/work2" --progress plain \
    --no-tests --wheelhouse "$url") >/dev/null 2>"$tmp/h.err"
  local rc=$?
  [ "$rc" = 2 ] && grep -q -- "$2" "$tmp/h.err" && ok "$1: exit 2 ($(grep -m1 -- "$2" "$tmp/h.err" | cut -c1-110))" \
    || { bad "$1: exit $rc"; tail -3 "$tmp/h.err"; }
}
page="$bucket/team/house/sm75/simple/fused-ops/index.json"
s3 GET "$page" | body >"$tmp/page.json"
python3 - "$tmp/dist/$whl" "$tmp/tampered.whl" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[-30] ^= 0xff  # the same size, other bytes
open(sys.argv[2], "wb").write(b)
PY
s3 PUT "$bucket/team/house/files/sm75/$whl" "$tmp/tampered.whl" >/dev/null
hostile "a tampered wheel object" "the index says $sha: refused"
s3 PUT "$bucket/team/house/files/sm75/$whl" "$tmp/dist/$whl" >/dev/null
sed 's|"url": "../../../files/|"url": "../../../../../files/|' "$tmp/page.json" >"$tmp/escape.json"
s3 PUT "$page" "$tmp/escape.json" >/dev/null
hostile "an index link out of the wheelhouse" "not to its place in the wheelhouse"
python3 -c 'import sys; sys.stdout.write("{\"files\": [" + " " * (17 << 20) + "]}")' >"$tmp/huge.json"
s3 PUT "$page" "$tmp/huge.json" >/dev/null
hostile "an index over 16 MiB" "over the bound of 16777216 bytes"
s3 PUT "$page" "$tmp/page.json" >/dev/null

# Bad locations: one line each.
one_line() {  # one_line NAME RC WANT ARGS...: exit RC, one line containing WANT
  local name=$1 rc_want=$2 want=$3
  shift 3
  "$TAILOR" "$@" >/dev/null 2>"$tmp/b.err"
  local rc=$?
  [ "$rc" = "$rc_want" ] && [ "$(wc -l <"$tmp/b.err")" = 1 ] && grep -q -- "$want" "$tmp/b.err" \
    && ok "$name: exit $rc, one line" || { bad "$name: exit $rc"; cat "$tmp/b.err"; }
}
one_line "no such bucket" 1 "NoSuchBucket" publish "$tmp/c1/pkg1-1.0-py3-none-any.whl" --to "s3://no-such-bucket/x?endpoint=$endpoint"
one_line "a closed port" 1 "Connection refused" publish "$tmp/c1/pkg1-1.0-py3-none-any.whl" --to "s3://$bucket/x?endpoint=http://127.0.0.1:$dead"
AWS_ACCESS_KEY_ID='' one_line "half a key pair" 2 "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" publish "$tmp/c1/pkg1-1.0-py3-none-any.whl" --to "$url"
one_line "--public-read on a folder" 2 "public-read" publish "$tmp/c1/pkg1-1.0-py3-none-any.whl" --to "$tmp/folder" --public-read
one_line "an https --to" 2 "folder or s3://" publish "$tmp/c1/pkg1-1.0-py3-none-any.whl" --to "https://example.com/wh"
if grep -rq -- "$secret" "$tmp"/*.out "$tmp"/*.err "$tmp"/*.json "$tmp"/*.log 2>/dev/null; then bad "the secret key was printed"
else ok "the secret key is in no output"; fi
exit "$fail"
