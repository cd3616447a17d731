#!/usr/bin/env bash
# End-to-end: one source, one wheel, from any work folder, user home or checkout.
#  - the test fixture extension (tests/e2e/data/tiny_ext, whose kernel sits in an anonymous
#    namespace: nvcc names it after a hash of the source's absolute path) built twice, from
#    two checkouts, with --work-dir folders of different depth and length and a different
#    HOME: the same sha256; the reports say where the build saw its work folder
#    (run.work_path, the fixed path of its private mount namespace);
#    the two checkouts are plain copies, cp -r, one with its files' times 20 years back:
#    the epoch is 1980-01-01, never a file's time; two git clones of one commit, checked out
#    at other times, give one wheel too (the commit's time is the epoch);
#  - the same pair against one Redis through sccache: the second build, in another work
#    folder, hits every step kind (C/C++, CUDA (nvcc), PTX (cicc), cubin (ptxas)) and misses
#    none, and its wheel has the same bytes as the first's;
#  - `tailor build --verify-reproducible WHEEL SOURCE` rebuilds wheel a from its provenance
#    in another work folder and finds the same bytes (exit 0); with a changed source it
#    says the source is not the wheel's (exit 1); a wheel with one member changed is "not
#    reproduced" with that member named (exit 1); a wheel without provenance, or an sdist
#    wheel without its sdist, is an error (exit 2);
#  - without a fixed path (TAILOR_FIXED_PATH_ROUTE=none) the build still succeeds, warns on
#    stderr and in the report why its bytes depend on the folder and what would fix it, and
#    (the point of the fixed path) its wheel differs.
# The fixed path is whichever route the machine allows (tailor's own namespace first; no
# program needed): build_fixed_path_nobwrap.sh covers each route without bubblewrap.
set -u
: "${TAILOR:?TAILOR must point at the built binary}"
[ -x "$TAILOR" ] || { echo "skip: $TAILOR not built"; exit 77; }
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || { echo "skip: no nvcc"; exit 77; }
python3 -c 'import torch' 2>/dev/null || { echo "skip: python3 with torch needed"; exit 77; }
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"

tmp=$(mktemp -d)
trap 'stop_redis; rm -rf "$tmp"' EXIT
export XDG_CACHE_HOME="$tmp/xdg"
copy_package "$tiny_ext" "$tmp/checkout-one" "$tmp/second/checkout"
# The second copy's files as if copied 20 years earlier: the wheel must not care.
find "$tmp/second/checkout" -exec touch -h -d @1000000000 {} +
mkdir -p "$tmp/home2"

build() {  # build NAME SOURCE WORK_DIR [extra args]: the wheel into $tmp/out-NAME
  local name=$1 source=$2 work=$3
  shift 3
  "$TAILOR" build "$source" --arch 7.5 --work-dir "$work" --out "$tmp/out-$name" --no-tests --progress plain \
    "$@" >"$tmp/$name.log" 2>&1
  local rc=$?
  [ "$rc" = 0 ] || { echo "--- $name.log"; tail -n 25 "$tmp/$name.log"; }
  return $rc
}
sha() { sha256sum "$tmp"/out-"$1"/*.whl | cut -d' ' -f1; }

build a "$tmp/checkout-one/tiny_ext" "$tmp/w" --cache none
expect_eq "build a" "$?" 0
HOME="$tmp/home2" build b "$tmp/second/checkout/tiny_ext" "$tmp/a/much/longer/work/folder" --cache none
expect_eq "build b (other copy with other file times, work folder and HOME)" "$?" 0
expect_eq "same wheel bytes from two copies (cp -r) and two work folders" "$(sha b)" "$(sha a)"
expect_eq "work path a" "$(json_get "$(ls "$tmp"/out-a/*.report.json)" 'j["run"]["work_path"]')" "/tmp/.tailor-build/tiny_ext"
expect_eq "work path b" "$(json_get "$(ls "$tmp"/out-b/*.report.json)" 'j["run"]["work_path"]')" "/tmp/.tailor-build/tiny_ext"
expect_eq "a fixed path's route (the machine's best)" \
  "$(json_get "$(ls "$tmp"/out-a/*.report.json)" 'j["run"]["work_path_route"] in ("namespace", "bwrap", "folder")')" True
# Nothing is left at the fixed path outside the namespace.
[ ! -e /tmp/.tailor-build/tiny_ext/src ] && echo "ok   nothing written at the fixed path itself" \
  || { echo "FAIL /tmp/.tailor-build/tiny_ext/src exists outside a build"; fail=1; }

# A stranger's check: rebuild from the provenance in the wheel, compare the bytes.
wa=$(ls "$tmp"/out-a/*.whl)
"$TAILOR" build --verify-reproducible "$wa" "$tmp/second/checkout/tiny_ext" --work-dir "$tmp/verify" --progress quiet \
  >"$tmp/v.out" 2>"$tmp/v.err"
expect_eq "verify-reproducible: exit 0" "$?" 0
grep -q "^reproduced " "$tmp/v.out" && grep -q "$(sha a)" "$tmp/v.out" && echo "ok   verify-reproducible: same sha256" \
  || { echo "FAIL verify-reproducible output:"; cat "$tmp/v.out" "$tmp/v.err"; fail=1; }
# The same check after the source changed: the digest in the provenance catches it.
copy_package "$tiny_ext" "$tmp/changed"
echo "// changed" >>"$tmp/changed/tiny_ext/csrc/module.cpp"
"$TAILOR" build --verify-reproducible "$wa" "$tmp/changed/tiny_ext" --work-dir "$tmp/verify" --progress quiet \
  >"$tmp/v2.out" 2>"$tmp/v2.err"
expect_eq "verify-reproducible, other source: exit 1" "$?" 1
grep -q "tailor: error: the source is not the one the wheel was built from: tree-sha256" "$tmp/v2.err" \
  && echo "ok   verify-reproducible names the source difference" || { echo "FAIL:"; cat "$tmp/v2.err"; fail=1; }
# A wheel whose library was changed after the build: not reproduced, the member named.
mkdir -p "$tmp/tampered" && python3 - "$wa" "$tmp/tampered/$(basename "$wa")" <<'PY'
import sys, zipfile
src, dst = sys.argv[1:]
with zipfile.ZipFile(src) as a, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as b:
    for i in a.infolist():
        data = a.read(i)
        if i.filename.endswith(".so"):
            data = data + b"\0"
        b.writestr(i, data)
PY
"$TAILOR" build --verify-reproducible "$tmp/tampered/$(basename "$wa")" "$tmp/second/checkout/tiny_ext" \
  --work-dir "$tmp/verify" --progress quiet >"$tmp/v3.out" 2>"$tmp/v3.err"
expect_eq "verify-reproducible, tampered wheel: exit 1" "$?" 1
grep -q "tailor: error: not reproduced: 1 member of" "$tmp/v3.err" && grep -q "_C.*: .* vs .* bytes" "$tmp/v3.err" \
  && echo "ok   verify-reproducible names the member that differs" || { echo "FAIL:"; cat "$tmp/v3.err"; fail=1; }
# The same source from two git clones of one commit (one checked out as if 20 years later): one
# wheel, its epoch the commit's time (the copies above: 1980-01-01); never a file's time.
git_env=(env GIT_CONFIG_NOSYSTEM=1 GIT_COMMITTER_DATE="@1700000000 +0000" GIT_AUTHOR_DATE="@1700000000 +0000"
  GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.com)
cp -r "$tiny_ext" "$tmp/origin" && (cd "$tmp/origin" && "${git_env[@]}" git init -q && "${git_env[@]}" git add -A \
  && "${git_env[@]}" git commit -q -m fixture) || fail "git repository of the fixture"
git clone -q "$tmp/origin" "$tmp/clone1" && git clone -q "$tmp/origin" "$tmp/clone2" || fail "git clone"
find "$tmp/clone2" -path "$tmp/clone2/.git" -prune -o -exec touch -h -d @1000000000 {} +
for n in clone1 clone2; do
  build "$n" "$tmp/$n" "$tmp/w-$n" --cache none
  expect_eq "build from $n" "$?" 0
done
expect_eq "two git clones of one commit: the same wheel" "$(sha clone2)" "$(sha clone1)"
prov() { unzip -p "$(ls "$tmp"/out-"$1"/*.whl)" '*.dist-info/tailor-provenance.json' | python3 -c "import json,sys; print(json.load(sys.stdin)[sys.argv[1]])" "$2"; }
expect_eq "a clean clone's epoch: the commit time" "$(prov clone1 source_date_epoch)" 1700000000
expect_eq "a copy's epoch: 1980-01-01" "$(prov a source_date_epoch)" 315532800
# A rebuild with another epoch: the causes are named (the time fields, the provenance's key).
SOURCE_DATE_EPOCH=1000000000 "$TAILOR" build --verify-reproducible "$(ls "$tmp"/out-a/*.whl)" "$tmp/second/checkout/tiny_ext" \
  --work-dir "$tmp/verify" --progress quiet >"$tmp/v5.out" 2>"$tmp/v5.err"
expect_eq "verify-reproducible, another epoch: exit 1" "$?" 1
# (RECORD's content follows the provenance's hash: content 1.)
expect_grep "names the causes" "^tailor: error: not reproduced: .* differ (content: 1, time fields: [0-9]*, provenance keys: 1)" "$tmp/v5.err"
expect_grep "names RECORD's content" "RECORD: content: " "$tmp/v5.err"
expect_grep "names the provenance key" "tailor-provenance.json: provenance keys: .*source_date_epoch (315532800 vs 1000000000)" "$tmp/v5.err"

# No provenance, or an sdist's without the sdist: one error line, exit 2.
mkdir -p "$tmp/plain" && echo "x = 1" >"$tmp/plain/x.py"
python3 "$src/tests/e2e/lib/make_wheel.py" "$tmp/plain/plain-1.0-py3-none-any.whl" "$tmp/plain/x.py:plain/__init__.py" >/dev/null
"$TAILOR" build --verify-reproducible "$(ls "$tmp"/plain/*.whl | head -1)" >"$tmp/v4.out" 2>"$tmp/v4.err"
expect_eq "verify-reproducible, no provenance: exit 2" "$?" 2
expect_eq "verify-reproducible, no provenance: one line" "$(wc -l <"$tmp/v4.err")" 1
grep -q "not a wheel tailor built" "$tmp/v4.err" && echo "ok   no provenance: says so" || { cat "$tmp/v4.err"; fail=1; }

# Without a fixed path: a warning, a good build, and (what the fixed path prevents) other bytes.
TAILOR_FIXED_PATH_ROUTE=none build c "$tmp/checkout-one/tiny_ext" "$tmp/w-c" --cache none
expect_eq "build without a fixed path" "$?" 0
grep -q "^tailor: warning: no fixed work path (TAILOR_FIXED_PATH_ROUTE=none).*fix: unset TAILOR_FIXED_PATH_ROUTE" "$tmp/c.log" \
  && echo "ok   the warning says why and the fix" || { echo "FAIL no warning without a fixed path"; grep -i "fixed" "$tmp/c.log"; fail=1; }
rc_=$(ls "$tmp"/out-c/*.report.json)
expect_eq "report: route none" "$(json_get "$rc_" 'j["run"]["work_path_route"]')" none
json_get "$rc_" 'j["run"]["work_path_note"]' | grep -q "^no fixed work path (TAILOR_FIXED_PATH_ROUTE=none)" \
  && echo "ok   the report carries the warning" || { echo "FAIL no warning in the report"; fail=1; }
[ "$(sha c)" != "$(sha a)" ] && echo "ok   without the fixed path the work folder changes the wheel" \
  || { echo "FAIL the wheel did not depend on the folder: this test proves nothing"; fail=1; }

# One Redis, two work folders: every step kind hits the second time.
if command -v sccache >/dev/null && command -v redis-server >/dev/null; then
  start_redis "$tmp" || { echo "FAIL redis did not start"; exit 1; }
  url="redis://127.0.0.1:$redis_port"
  build r1 "$tmp/checkout-one/tiny_ext" "$tmp/r/one" --cache sccache --cache-url "$url"
  expect_eq "redis build 1" "$?" 0
  HOME="$tmp/home2" build r2 "$tmp/second/checkout/tiny_ext" "$tmp/r/two/deeper" --cache sccache --cache-url "$url"
  expect_eq "redis build 2" "$?" 0
  r2=$(ls "$tmp"/out-r2/*.report.json)
  for kind in "C/C++" "CUDA (nvcc)" "PTX (cicc)" "cubin (ptxas)"; do
    hits=$(json_get "$r2" "j['run']['cache']['categories'].get('$kind',{}).get('hits',0)")
    misses=$(json_get "$r2" "j['run']['cache']['categories'].get('$kind',{}).get('misses',0)")
    [ "$hits" -ge 1 ] 2>/dev/null && [ "$misses" = 0 ] && echo "ok   $kind: $hits hit(s), no miss from another work folder" \
      || { echo "FAIL $kind: $hits hits, $misses misses"; fail=1; }
  done
  # (Under sccache the nvcc command line differs from a build without a cache: -ccbin and
  # -objtemp are left out, see README; so the pair is compared with itself.)
  expect_eq "same bytes through the shared cache, cold and warm" "$(sha r2)" "$(sha r1)"
else
  echo "skip (part): sccache or redis-server missing: the shared-cache pair did not run"
fi
exit $fail
