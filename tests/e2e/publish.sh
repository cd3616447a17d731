#!/usr/bin/env bash
# End-to-end: `tailor publish` of the bundled example's wheel (built once here, with the real
# nvcc and torch, for one target) to a folder wheelhouse, then pip and uv install it from the
# target set's index into fresh venvs. Both must resolve through the <wheel>.metadata file
# (PEP 658/714), never the whole wheel: pip's -v log names the .metadata URL it took the
# dependency information from ("Obtaining dependency information for fused-ops from
# file://.../<wheel>.metadata"), and a `uv pip install --dry-run` over http (the wheelhouse
# served by python's http.server) requests the .metadata file and never the wheel (the
# server's request log). Then six publishers at once (all listed, every page parses) and
# hostile input: other bytes under the published name (refused naming both sha256s, nothing
# changed), a truncated wheel, not a zip, no provenance, a target or project name with ../,
# --to a file. And `tailor build --wheelhouse` of the same inputs: the wheel fetched and
# verified (the import test still runs), nothing compiled; a tampered wheel, an index link out
# of the wheelhouse and an ftp:// location refused (publish_s3.sh reads s3:// and http://). uv: `uv` on PATH or $UV; its checks are skipped with a note when there is none.
set -u
: "${TAILOR:?TAILOR must point at the built binary}"
[ -x "$TAILOR" ] || { echo "skip: $TAILOR not built"; exit 77; }
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || { echo "skip: no nvcc"; exit 77; }
python3 -c 'import torch' 2>/dev/null || { echo "skip: python3 with torch needed"; exit 77; }
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"  # src, ok, bad, expect_eq, expect_grep, json_get, make_wheel

tmp=$(mktemp -d)
server=
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
# pip and uv see only the wheelhouse: no configuration, no --find-links of this machine.
export PIP_CONFIG_FILE=/dev/null PIP_NO_CACHE_DIR=1 UV_NO_CACHE=1 UV_NO_CONFIG=1
unset PIP_FIND_LINKS PIP_INDEX_URL PIP_EXTRA_INDEX_URL UV_INDEX_URL UV_EXTRA_INDEX_URL UV_FIND_LINKS

(cd "$src" && "$TAILOR" build --arch 7.5 --out "$tmp/dist" --work-dir "$tmp/work" --progress plain \
  --no-tests) >"$tmp/build.out" 2>&1 || { tail -30 "$tmp/build.out"; fail "the example did not build"; }
whl=$(cd "$tmp/dist" && ls ./*.whl | head -1)
whl=${whl#./}
# The version carries the build's torch: 0.1.0+cu<CUDA>torch<X.Y> (install_pin.sh checks it all).
version=$(python3 -c 'import torch; c = torch.version.cuda; r = ".".join(torch.__version__.split("+")[0].split(".")[:2]); print("0.1.0+" + ("cu" + c.replace(".", "") if c else "cpu") + "torch" + r)')
url_whl=${whl//+/%2B}  # as the index links it (and pip and uv ask for it)
case "$whl" in
  "fused_ops-$version-"*) ok "the wheel's version carries its torch ($version)" ;;
  *) bad "the wheel's name $whl lacks the version $version" ;;
esac
wh=$tmp/house

# Publish, then the same bytes again.
start=$(date +%s.%N)
"$TAILOR" publish "$tmp/dist/$whl" --to "$wh" --json >"$tmp/publish.json" 2>"$tmp/publish.err"
expect_eq "publish exit" "$?" 0
echo "note: one publish took $(python3 -c "import time; print(round(time.time() - $start, 3))") s"
expect_eq "target set from the provenance" "$(json_get "$tmp/publish.json" 'j["wheels"][0]["target_set"]')" sm75
expect_eq "outcome" "$(json_get "$tmp/publish.json" 'j["wheels"][0]["outcome"]')" added
expect_eq "stored once, sha256 kept" "$(sha256sum "$wh/files/sm75/$whl" | cut -d' ' -f1)" \
  "$(sha256sum "$tmp/dist/$whl" | cut -d' ' -f1)"
unzip -p "$tmp/dist/$whl" "fused_ops-$version.dist-info/METADATA" | cmp -s - "$wh/files/sm75/$whl.metadata" \
  && ok "METADATA beside the wheel" || bad "the .metadata file is not the wheel's METADATA"
expect_grep "link with #sha256 and relative" "href=\"../../../files/sm75/$whl#sha256=$(sha256sum "$tmp/dist/$whl" | cut -d' ' -f1)\"" \
  "$wh/sm75/simple/fused-ops/index.html"
expect_grep "PEP 714 attribute" "data-core-metadata=\"sha256=$(sha256sum "$wh/files/sm75/$whl.metadata" | cut -d' ' -f1)\"" \
  "$wh/sm75/simple/fused-ops/index.html"
expect_eq "PEP 691 JSON" "$(json_get "$wh/sm75/simple/fused-ops/index.json" 'j["meta"]["api-version"] + " " + j["files"][0]["core-metadata"]["sha256"][:8]')" \
  "1.1 $(sha256sum "$wh/files/sm75/$whl.metadata" | cut -c1-8)"
# The PEP 825 (draft) variant file beside the index: valid under the draft's schema rules,
# and read by variantlib (PEP 817's form, which adds the providers table the draft leaves out).
variants="$wh/sm75/simple/fused-ops/fused_ops-$version-variants.json"
python3 - "$variants" <<'PY' && ok "variant file: the draft's schema" || bad "variant file: not the draft's schema"
import json, sys, jsonschema
name = "^[a-z0-9_]+$"
values = {"type": "array", "items": {"type": "string", "pattern": "^[a-z0-9_.]+$"}, "minItems": 1, "uniqueItems": True}
features = {"type": "object", "patternProperties": {name: values}, "additionalProperties": False}
schema = {  # the draft's variant-schema-0.1.1.json, restated
    "type": "object", "required": ["$schema", "default-priorities", "variants"], "additionalProperties": False,
    "properties": {
        "$schema": {"type": "string"},
        "default-priorities": {"type": "object", "required": ["namespace"], "additionalProperties": False,
            "properties": {"namespace": {"type": "array", "items": {"type": "string", "pattern": name}, "minItems": 1, "uniqueItems": True}}},
        "variants": {"type": "object", "additionalProperties": False, "patternProperties": {
            "^[a-z0-9_.]+$": {"type": "object", "patternProperties": {name: features}, "additionalProperties": False}}}}}
j = json.load(open(sys.argv[1]))
jsonschema.validate(j, schema)
assert j["$schema"].endswith("/peps/825/v0.1.1.json"), j["$schema"]
PY
expect_eq "variant file: the properties" "$(python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))["variants"]; print(" ".join(f"{l}:{ns}::{f}::{x}" for l in v for ns in v[l] for f in sorted(v[l][ns]) for x in v[l][ns][f]))' "$variants")" \
  "sm75_cu$(python3 -c 'import torch; print(torch.version.cuda.replace(".", ""))'):nvidia::cuda_version_lower_bound::$(python3 -c 'import torch; print(torch.version.cuda)') sm75_cu$(python3 -c 'import torch; print(torch.version.cuda.replace(".", ""))'):nvidia::cuda_version_upper_bound::$(python3 -c 'import torch; print(int(torch.version.cuda.split(".")[0]) + 1)') sm75_cu$(python3 -c 'import torch; print(torch.version.cuda.replace(".", ""))'):nvidia::sm_arch::75_real"
if python3 -c 'import variantlib' 2>/dev/null; then
  python3 - "$variants" <<'PY' >"$tmp/variantlib.out" 2>&1 && ok "variantlib reads it ($(cat "$tmp/variantlib.out"))" || { bad "variantlib does not read it"; cat "$tmp/variantlib.out"; }
import json, sys
from variantlib.variants_json import VariantsJson
d = json.load(open(sys.argv[1]))
d["$schema"] = "https://variants-schema.wheelnext.dev/v0.2.0.json"  # variantlib 0.2's format
d["providers"] = {"nvidia": {"requires": ["nvidia-variant-provider"],
                             "plugin-api": "nvidia_variant_provider.plugin:NvidiaVariantPlugin"}}
for label, desc in VariantsJson(d).variants.items():
    print(label, "; ".join(p.to_str() for p in desc.properties))
PY
else
  echo "note: variantlib is not installed (scripts/setup.sh installs it): its check did not run"
fi
"$TAILOR" publish "$tmp/dist/$whl" --to "$wh" --html "$wh/index.html" >"$tmp/again.out" 2>&1
expect_eq "same bytes again: exit" "$?" 0
expect_grep "same bytes again: says so" "already published $whl: sm75/simple/fused-ops/ (the same sha256: nothing changed)" "$tmp/again.out"
expect_grep "page: the target set" ">sm75</a></th>" "$wh/index.html"
expect_grep "page: the torch it was built against" "torch $(python3 -c 'import torch; print(torch.__version__)')" "$wh/index.html"

# Another build of the same inputs with the wheelhouse: fetched and verified, not compiled.
(cd "$src" && "$TAILOR" build --arch 7.5 --out "$tmp/dist2" --work-dir "$tmp/work2" --progress plain \
  --no-tests --wheelhouse "file://$wh" --json) >"$tmp/fetch.json" 2>"$tmp/fetch.err"
expect_eq "build --wheelhouse exit" "$?" 0
expect_eq "the report says where the wheel came from" \
  "$(json_get "$tmp/fetch.json" 'j["wheel"]["from_wheelhouse"]')" "$wh/files/sm75/$whl"
expect_eq "the same bytes" "$(json_get "$tmp/fetch.json" 'j["wheel"]["sha256"]')" "$(sha256sum "$tmp/dist/$whl" | cut -d' ' -f1)"
expect_eq "the import test still ran" "$(json_get "$tmp/fetch.json" '[c["status"] for c in j["checks"] if c["name"]=="import"][0]')" passed
if grep -q "==> building" "$tmp/fetch.err"; then bad "build --wheelhouse compiled"; else ok "nothing compiled"; fi
# A tampered wheel in a copy of the wheelhouse, and an index whose link leaves it: refused.
cp -r "$wh" "$tmp/bad-house"
printf 'x' >>"$tmp/bad-house/files/sm75/$whl"
# This one through tailor.toml's [wheelhouse].
printf '[wheelhouse]\nurl = "file://%s"\n' "$tmp/bad-house" >"$tmp/tailor.toml"
(cd "$src" && "$TAILOR" build --arch 7.5 --out "$tmp/dist3" --work-dir "$tmp/work2" --progress plain \
  --no-tests --config "$tmp/tailor.toml") >/dev/null 2>"$tmp/fetch-bad.err"
expect_eq "a tampered wheelhouse wheel ([wheelhouse] of --config): exit 2" "$?" 2
expect_grep "names the index's sha256" "the index says $(sha256sum "$tmp/dist/$whl" | cut -d' ' -f1): refused" "$tmp/fetch-bad.err"
cp "$tmp/dist/$whl" "$tmp/bad-house/files/sm75/$whl"
sed -i 's|"url": "../../../files/|"url": "../../../../../files/|' "$tmp/bad-house/sm75/simple/fused-ops/index.json"
(cd "$src" && "$TAILOR" build --arch 7.5 --out "$tmp/dist3" --work-dir "$tmp/work2" --progress plain \
  --no-tests --wheelhouse "$tmp/bad-house") >/dev/null 2>"$tmp/fetch-bad.err"
expect_eq "an index link out of the wheelhouse: exit 2" "$?" 2
expect_grep "says so" "not to its place in the wheelhouse" "$tmp/fetch-bad.err"
(cd "$src" && "$TAILOR" build --arch 7.5 --out "$tmp/dist3" --work-dir "$tmp/work2" --no-tests \
  --wheelhouse "ftp://example.com/wh") >/dev/null 2>"$tmp/fetch-bad.err"
expect_eq "a scheme no wheelhouse has: exit 2" "$?" 2
rm -rf "$tmp/bad-house" "$tmp/dist3" "$tmp/fetch-bad.err" "$tmp/tailor.toml"

# pip from the file:// index into a fresh venv, reading the .metadata file.
python3 -m venv "$tmp/pip-venv"
"$tmp/pip-venv/bin/pip" install -v --no-deps --index-url "file://$wh/sm75/simple" fused-ops >"$tmp/pip.log" 2>&1
expect_eq "pip install exit" "$?" 0
expect_eq "pip installed it" "$("$tmp/pip-venv/bin/python" -c 'import importlib.metadata as m; print(m.version("fused_ops"))')" "$version"
expect_grep "pip took the dependency information from the .metadata file" \
  "Obtaining dependency information for fused-ops from file://$wh/files/sm75/$url_whl.metadata" "$tmp/pip.log"

# The same over http: which files each installer asks for, from the server's request log.
port=$(free_port)
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$wh" >"$tmp/http.log" 2>&1 &
server=$!
wait_port "$port" 2>/dev/null || sleep 1
python3 -m venv "$tmp/pip-http"
"$tmp/pip-http/bin/pip" install -v --no-deps --index-url "http://127.0.0.1:$port/sm75/simple" fused-ops \
  >"$tmp/pip-http.log" 2>&1
expect_eq "pip over http: exit" "$?" 0
expect_grep "pip over http read the .metadata file" "GET /files/sm75/$url_whl.metadata" "$tmp/http.log"

uv=${UV:-$(command -v uv || true)}
if [ -n "$uv" ]; then
  "$uv" venv -q --python "$(command -v python3)" "$tmp/uv-venv"
  VIRTUAL_ENV=$tmp/uv-venv "$uv" pip install -v --no-deps --index-url "file://$wh/sm75/simple" fused-ops \
    >"$tmp/uv.log" 2>&1
  expect_eq "uv pip install exit" "$?" 0
  expect_eq "uv installed it" "$("$tmp/uv-venv/bin/python" -c 'import importlib.metadata as m; print(m.version("fused_ops"))')" "$version"
  : >"$tmp/http.log"
  # The wheel pins torch (torch==<this machine's>), which the wheelhouse does not hold: a stand-in
  # torch of that version beside it, so uv resolves the dependency from the .metadata file.
  mkdir -p "$tmp/torch-links" && echo 'x = 1' >"$tmp/torch-links/init.py"
  make_wheel "$tmp/torch-links/torch-$(python3 -c 'import torch; print(torch.__version__.split("+")[0])')-py3-none-any.whl" \
    "$tmp/torch-links/init.py:torch/__init__.py" >/dev/null
  VIRTUAL_ENV=$tmp/uv-venv "$uv" pip install --dry-run --reinstall --index-url "http://127.0.0.1:$port/sm75/simple" \
    --find-links "$tmp/torch-links" fused-ops >"$tmp/uv-http.log" 2>&1
  expect_eq "uv resolution over http: exit" "$?" 0
  # The '+' of the version's label as uv sends it: itself or %2B.
  any_plus=${whl//+/\\(+\\|%2[Bb]\\)}
  expect_grep "uv read the .metadata file" "GET /files/sm75/$any_plus.metadata" "$tmp/http.log"
  if grep -q "GET /files/sm75/$any_plus " "$tmp/http.log"; then bad "uv downloaded the whole wheel to resolve"
  else ok "uv resolved without downloading the wheel"; fi
else
  echo "note: no uv on PATH and no \$UV: the uv checks did not run"
fi
kill "$server" 2>/dev/null; server=

# Six publishers at once into one wheelhouse: every wheel listed, every page parses.
echo 'x = 1' >"$tmp/x.py"
for i in 1 2 3 4 5 6; do
  echo "{\"package\": \"pkg$i\", \"targets\": [\"sm_75\"], \"source\": {\"kind\": \"directory\", \"tree-sha256\": \"$i\"}}" \
    >"$tmp/prov$i.json"
  mkdir -p "$tmp/c$i"
  make_wheel "$tmp/c$i/pkg$i-1.0-py3-none-any.whl" "$tmp/x.py:pkg$i/__init__.py" \
    "$tmp/prov$i.json:pkg$i-1.0.dist-info/tailor-provenance.json" >/dev/null
done
pids=()
for i in 1 2 3 4 5 6; do "$TAILOR" publish "$tmp/c$i/pkg$i-1.0-py3-none-any.whl" --to "$wh" >"$tmp/c$i.out" 2>&1 & pids+=($!); done
rcs=
for p in "${pids[@]}"; do wait "$p"; rcs="$rcs$?"; done
expect_eq "six publishers at once: all exit 0" "$rcs" 000000
expect_eq "all listed in the index" "$(json_get "$wh/sm75/simple/index.json" '" ".join(sorted(p["name"] for p in j["projects"]))')" \
  "fused-ops pkg1 pkg2 pkg3 pkg4 pkg5 pkg6"
python3 - "$wh" <<'PY' && ok "every page parses, every link resolves" || bad "a page does not parse or a link points nowhere"
import html.parser, json, os, sys, urllib.parse
root = sys.argv[1]
for d, _, files in os.walk(root):
    for f in files:
        p = os.path.join(d, f)
        if f == "index.json":
            json.load(open(p))
        if f == "index.html" and "/simple" in p:
            class Links(html.parser.HTMLParser):
                def handle_starttag(self, tag, attrs):
                    href = dict(attrs).get("href")
                    if tag == "a" and href:
                        target = os.path.normpath(os.path.join(d, urllib.parse.urldefrag(href)[0]))
                        assert target.startswith(root) and os.path.exists(target), (p, href)
            Links().feed(open(p).read())
PY

# Hostile input: each refused with one line, the wheelhouse unchanged.
snapshot() { (cd "$wh" && find . -type f -print0 | sort -z | xargs -0 sha256sum); }
expect_eq "no lock file left in the wheelhouse" "$(find "$wh" -name '*.lock' | wc -l)" 0
snapshot >"$tmp/before"
mkdir -p "$tmp/tampered"
python3 - "$tmp/dist/$whl" "$tmp/tampered/$whl" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as a, zipfile.ZipFile(sys.argv[2], "w", zipfile.ZIP_DEFLATED) as b:
    for i in a.infolist():
        b.writestr(i, a.read(i.filename))
    b.comment = b"tampered"
PY
mkdir -p "$tmp/bad"
head -c 5000 "$tmp/dist/$whl" >"$tmp/bad/$whl"
echo "not a zip" >"$tmp/bad/junk-1.0-py3-none-any.whl"
make_wheel "$tmp/bad/plain-1.0-py3-none-any.whl" "$tmp/x.py:plain/__init__.py" >/dev/null
echo '{"package": "evil", "targets": ["../../etc"], "source": {"kind": "directory", "tree-sha256": "1"}}' >"$tmp/evil.json"
make_wheel "$tmp/bad/evil-1.0-py3-none-any.whl" "$tmp/x.py:evil/__init__.py" \
  "$tmp/evil.json:evil-1.0.dist-info/tailor-provenance.json" >/dev/null
cp "$tmp/c1/pkg1-1.0-py3-none-any.whl" "$tmp/bad/..-1.0-py3-none-any.whl"
cp "$tmp/c1/pkg1-1.0-py3-none-any.whl" "$tmp/bad/pkg1-1.0-py3-none-any.zip"
listing() { find "$tmp" -mindepth 1 -maxdepth 1 ! -name top ! -name after -printf '%f\n' | sort | tr '\n' ' '; }
listing >"$tmp/top"
"$TAILOR" publish "$tmp/tampered/$whl" --to "$wh" >"$tmp/t.out" 2>"$tmp/t.err"
expect_eq "other bytes under a published name: exit 1" "$?" 1
expect_eq "one line" "$(wc -l <"$tmp/t.err")" 1
expect_grep "names the published sha256" "$(sha256sum "$tmp/dist/$whl" | cut -d' ' -f1)" "$tmp/t.err"
expect_grep "names the new sha256" "$(sha256sum "$tmp/tampered/$whl" | cut -d' ' -f1)" "$tmp/t.err"
for case in "$whl:truncated" "junk-1.0-py3-none-any.whl:not a zip" "plain-1.0-py3-none-any.whl:no provenance" \
            "evil-1.0-py3-none-any.whl:a target ../../etc" "..-1.0-py3-none-any.whl:project name .." \
            "pkg1-1.0-py3-none-any.zip:not a wheel name"; do
  f=${case%%:*} what=${case#*:}
  "$TAILOR" publish "$tmp/bad/$f" --to "$wh" >/dev/null 2>"$tmp/h.err"
  rc=$?
  [ "$rc" = 2 ] && [ "$(wc -l <"$tmp/h.err")" = 1 ] && ok "$what: exit 2, one line ($(cut -c1-100 "$tmp/h.err"))" \
    || { bad "$what: exit $rc"; cat "$tmp/h.err"; }
done
expect_grep "no provenance names --allow-foreign" "allow-foreign" <("$TAILOR" publish "$tmp/bad/plain-1.0-py3-none-any.whl" --to "$wh" 2>&1)
"$TAILOR" publish "$tmp/c1/pkg1-1.0-py3-none-any.whl" --to "$tmp/x.py" >/dev/null 2>"$tmp/h.err"
expect_eq "--to a file: exit 2" "$?" 2
"$TAILOR" publish --to "$wh" >"$tmp/h.out" 2>"$tmp/h.err"
expect_eq "no wheel given: exit 2" "$?" 2
expect_grep "no wheel given: says so" "^tailor: error: publish: no wheel given" "$tmp/h.err"
"$TAILOR" publish "$tmp/nope.whl" --to "$wh" >/dev/null 2>"$tmp/h.err"
expect_eq "a wheel that is not there: exit 2" "$?" 2
expect_grep "says no such file" "^tailor: error: $tmp/nope.whl: no such file$" "$tmp/h.err"
rm -f "$tmp/h.out"
# Slimmed for a GPU it has no code for (sm_75 only, A10 is sm_86): inspect finds no device code,
# and publish refuses it instead of filing it under sm75 as its provenance says.
"$TAILOR" slim "$tmp/dist/$whl" --gpu A10 --out "$tmp/slimmed" >"$tmp/slim.out" 2>"$tmp/slim.err"
expect_eq "slim for A10: exit 0" "$?" 0
expect_grep "slim warns that nothing is left" "tailor slim: warning: .*nothing is left for" "$tmp/slim.err"
"$TAILOR" publish "$tmp/slimmed/$whl" --to "$wh" >/dev/null 2>"$tmp/h.err"
expect_eq "a slimmed wheel with no device code: exit 2" "$?" 2
expect_eq "one line" "$(wc -l <"$tmp/h.err")" 1
expect_grep "says why" "no CUDA device code left (built for sm_75, slimmed since: tailor-slim.json)" "$tmp/h.err"
rm -rf "$tmp/slimmed" "$tmp/slim.out" "$tmp/slim.err"
rm "$tmp/h.err" "$tmp/t.err" "$tmp/t.out"
snapshot >"$tmp/after"
cmp -s "$tmp/before" "$tmp/after" && ok "the refusals changed nothing" || { bad "the wheelhouse changed"; diff "$tmp/before" "$tmp/after"; }
expect_eq "nothing written outside the wheelhouse" "$(listing)" "$(cat "$tmp/top")"
exit "$fail"
