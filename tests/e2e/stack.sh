#!/usr/bin/env bash
# End-to-end: `tailor stack` against a PEP 503 index served on loopback by this test
# (python -m http.server over a folder laid out by stack_index.py): wheels made from the
# CUDA fixtures (sm_75 only and sm_90 only, cut by `tailor slim`; SASS+PTX; a wheel that
# carries a CUDA 11 build next to its CUDA 13 one), a pure-Python wheel, and the sdist of
# the test fixture extension (tests/e2e/data/tiny_ext: a real CUDAExtension that builds in
# seconds). pip resolves (the real pip), tailor inspects and decides; the lock round-trips,
# the script passes bash -n, and --install builds the fixture from its sdist into a fresh
# venv that reuses this machine's torch and ends with the verification passing; the wheel
# --build makes, published to a wheelhouse, is prebuilt with --wheelhouse for its GPU only.
# Online part (skipped visibly without PyPI): the aarch64 torch 2.9.1 case and
# bitsandbytes + einops on x86_64.
set -u
: "${TAILOR:?TAILOR must point at the built binary}"
[ -x "$TAILOR" ] || { echo "skip: $TAILOR not built"; exit 77; }
fixtures="$TAILOR_BINARY_DIR/fixtures"
for f in slim_multi.so sass_ptx_80.so; do
  [ -f "$fixtures/$f" ] || { echo "skip: fixture $f not built (needs nvcc; target tailor_fixtures)"; exit 77; }
done
python3 -c 'import torch' 2>/dev/null || { echo "skip: python3 with torch needed"; exit 77; }
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"  # src, fail, ok, bad, expect_eq, json_get
# row FILE KEY FIELD: FIELD of the package KEY in the stack document FILE.
row() { json_get "$1" "[p for p in j['packages'] if p['key']=='$2'][0]['$3']"; }

tmp=$(mktemp -d)
server=
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

# ---- the index -------------------------------------------------------------------------
lib="$tmp/lib"
mkdir -p "$lib"
"$TAILOR" slim "$fixtures/slim_multi.so" --keep sm_75 --out "$lib/75" >/dev/null && cp "$lib/75/slim_multi.so" "$lib/only_75.so"
"$TAILOR" slim "$fixtures/slim_multi.so" --keep sm_90 --out "$lib/90" >/dev/null && cp "$lib/90/slim_multi.so" "$lib/only_90.so"
cp "$fixtures/sass_ptx_80.so" "$lib/"
# A library built for CUDA 11: it links libcudart.so.11.0 (a stub with that soname).
echo 'int cudart_stub(void) { return 11; }' >"$lib/stub.c"
echo 'int cudart_stub(void); int kern_cuda11(void) { return cudart_stub(); }' >"$lib/k11.c"
gcc -shared -fPIC -Wl,-soname,libcudart.so.11.0 -o "$lib/libcudart.so.11.0" "$lib/stub.c"
gcc -shared -fPIC -o "$lib/cuda11.so" "$lib/k11.c" -Wl,--no-as-needed "$lib/libcudart.so.11.0"
"$TAILOR" inspect "$lib/only_75.so" --exact sm_75 >/dev/null && "$TAILOR" inspect "$lib/only_90.so" --exact sm_90 >/dev/null \
  && ok "slimmed fixtures: sm_75 only, sm_90 only" || bad "slimmed fixtures"
python3 "$src/tests/e2e/stack_index.py" "$tmp/index" "$lib" "$src/tests/e2e/data/tiny_ext" >"$tmp/files" || { cat "$tmp/files"; bad "index"; exit 1; }
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
(cd "$tmp/index" && exec python3 -m http.server "$port" --bind 127.0.0.1) >/dev/null 2>&1 &
server=$!
for _ in $(seq 50); do python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/simple/')" 2>/dev/null && break; sleep 0.1; done
index="http://127.0.0.1:$port/simple"
export XDG_CACHE_HOME="$tmp/cache"

# ---- T4 (7.5; T4G would imply aarch64): the sm_75 wheel is picked, the sm_90 one refused ---
"$TAILOR" stack --gpu T4 --torch python3 --index-url "$index" kern75 kern90 kernptx kernmulti purepkg \
  --json --lock "$tmp/t4g.lock" >"$tmp/t4g.json" 2>"$tmp/t4g.err"
expect_eq "exit 1 (one package unsupported)" "$?" 1
expect_eq "schema" "$(json_get "$tmp/t4g.json" 'j["schema"]')" "tailor.stack/1"
expect_eq "kern75 prebuilt" "$(row "$tmp/t4g.json" kern75 outcome)" prebuilt
expect_eq "kern75 covers" "$(row "$tmp/t4g.json" kern75 covers)" yes
expect_eq "kern75 targets" "$(json_get "$tmp/t4g.json" "' '.join([p for p in j['packages'] if p['key']=='kern75'][0]['targets'])")" "sm_75"
expect_eq "kern90 unsupported" "$(row "$tmp/t4g.json" kern90 outcome)" unsupported
reason=$(row "$tmp/t4g.json" kern90 reason)
case "$reason" in *"has sm_90; 7.5 needs sm_75"*"no sdist"*) ok "kern90 reason: $reason" ;; *) bad "kern90 reason: $reason" ;; esac
expect_eq "kernptx (PTX 8.0) refused on 7.5" "$(row "$tmp/t4g.json" kernptx covers)" no
expect_eq "kernmulti prebuilt (its CUDA 11 build set aside)" "$(row "$tmp/t4g.json" kernmulti outcome)" prebuilt
case "$(row "$tmp/t4g.json" kernmulti reason)" in *"also carries builds for CUDA 11"*) ok "kernmulti reason" ;; *) bad "kernmulti reason: $(row "$tmp/t4g.json" kernmulti reason)" ;; esac
expect_eq "purepkg pure" "$(row "$tmp/t4g.json" purepkg kind)" pure
expect_eq "torch installed" "$(row "$tmp/t4g.json" torch outcome)" installed
expect_eq "dependency order: kern75 before purepkg" \
  "$(json_get "$tmp/t4g.json" "[p['key'] for p in j['packages']].index('kern75') < [p['key'] for p in j['packages']].index('purepkg')")" True
sha=$(json_get "$tmp/t4g.lock" "[p for p in j['packages'] if p['key']=='kern75'][0]['wheel']['sha256']")
expect_eq "lock pins kern75 by sha256" "$sha" "$(sha256sum "$tmp/index/files/kern75-1.0-py3-none-linux_x86_64.whl" | cut -d' ' -f1)"
[ -n "$(find "$tmp/cache/tailor/stack/files" -name 'kern75-*.whl' -path "*$sha*")" ] && ok "wheel cached by sha256" || bad "no cache entry"
# The same on 8.6: the PTX wheel JITs, kern75's sm_75 SASS runs (same major? no: 7.5 -> 8.6 is not), kern90 still not.
"$TAILOR" stack --arch 8.6 --torch python3 --index-url "$index" kernptx --json >"$tmp/a86.json" 2>/dev/null
expect_eq "kernptx on 8.6" "$(row "$tmp/a86.json" kernptx covers)" yes
expect_eq "cache hit on the second run" "$(json_get "$tmp/a86.json" 'j["cache_hits"] >= 1')" True
# stderr says what happens while pip resolves (issue 27). On a terminal: the phases as
# lines, pip's own "Collecting" lines and each wheel inspected on a status line redrawn in
# place; piped: plain lines (no escapes); --progress quiet: none.
if command -v script >/dev/null; then
  TAILOR="$TAILOR" index="$index" cache="$tmp/tty-cache" script -qec \
    '"$TAILOR" stack --arch 8.6 --torch python3 --index-url "$index" --cache-dir "$cache" kernptx --json 2>&1 >/dev/null' \
    /dev/null >"$tmp/tty.txt" 2>&1
  for want in "tailor stack: resolving kernptx for x86_64 Python" "pip: Collecting kernptx" \
              "tailor stack: resolved 1 package in" "inspecting kernptx-"; do
    grep -q "$want" "$tmp/tty.txt" && ok "progress on a terminal: $want" || bad "no '$want' on a terminal: $(cat "$tmp/tty.txt")"
  done
  grep -q $'\r\e\[K' "$tmp/tty.txt" && ok "a status line redrawn in place on a terminal" || bad "no status line on a terminal"
fi
grep -q "^tailor stack: resolving kern75 kern90 kernptx kernmulti purepkg for x86_64 Python" "$tmp/t4g.err" \
  && grep -q "^tailor stack: pip: Collecting kern75" "$tmp/t4g.err" && ok "plain progress lines when piped" \
  || bad "no plain progress lines when piped: $(cat "$tmp/t4g.err")"
grep -q $'[\r\e]' "$tmp/t4g.err" && bad "escapes in piped progress" || ok "no escapes in piped progress"
"$TAILOR" stack --arch 8.6 --torch python3 --index-url "$index" kernptx --progress quiet --json >/dev/null 2>"$tmp/quiet.err"
expect_eq "--progress quiet: nothing on stderr" "$(wc -c <"$tmp/quiet.err")" 0

# ---- what is kept between runs (issue 27): the same request checks the index pages pip
# read and reuses pip's resolution and the wheels' inspections; a changed page or
# --refresh resolves again; a stored file that does not read is a warning, never an error.
rows_of() { json_get "$1" '[(p["key"], p["version"], p["outcome"], p["covers"], p["reason"]) for p in j["packages"]]'; }
"$TAILOR" stack --arch 8.6 --torch python3 --index-url "$index" kernptx --json >"$tmp/again.json" 2>"$tmp/again.err"
expect_eq "the same request: pip's resolution reused" "$(json_get "$tmp/again.json" 'j["resolution_reused"]')" True
expect_eq "the same request: the inspection reused" "$(json_get "$tmp/again.json" 'j["inspections_reused"]')" 1
expect_eq "the same request: the same rows" "$(rows_of "$tmp/again.json")" "$(rows_of "$tmp/a86.json")"
grep -q "^tailor stack: unchanged: the stored resolution holds" "$tmp/again.err" && ok "says the stored resolution holds" \
  || bad "no 'holds' line: $(cat "$tmp/again.err")"
"$TAILOR" stack --arch 8.6 --torch python3 --index-url "$index" kernptx --refresh --json >"$tmp/refresh.json" 2>/dev/null
expect_eq "--refresh: pip resolves again" "$(json_get "$tmp/refresh.json" 'j["resolution_reused"]')" False
expect_eq "--refresh: the same rows" "$(rows_of "$tmp/refresh.json")" "$(rows_of "$tmp/a86.json")"
cp "$tmp/index/simple/kernptx/index.html" "$tmp/kernptx-page.html"
echo '<!-- a new upload -->' >>"$tmp/index/simple/kernptx/index.html"
"$TAILOR" stack --arch 8.6 --torch python3 --index-url "$index" kernptx --json >"$tmp/changed.json" 2>"$tmp/changed.err"
expect_eq "a changed index page: pip resolves again" "$(json_get "$tmp/changed.json" 'j["resolution_reused"]')" False
grep -q "the index or pip's settings changed since: pip resolves again" "$tmp/changed.err" && ok "says the index changed" \
  || bad "no 'changed' line: $(cat "$tmp/changed.err")"
"$TAILOR" stack --arch 8.6 --torch python3 --index-url "$index" kernptx --json >"$tmp/changed2.json" 2>/dev/null
expect_eq "then reused again" "$(json_get "$tmp/changed2.json" 'j["resolution_reused"]')" True
cp "$tmp/kernptx-page.html" "$tmp/index/simple/kernptx/index.html"
for f in "$tmp/cache/tailor/stack/resolutions/"*.json "$tmp/cache/tailor/stack/inspections/"*/*.json; do echo '{"schema": 1' >"$f"; done
"$TAILOR" stack --arch 8.6 --torch python3 --index-url "$index" kernptx --json >"$tmp/corrupt.json" 2>"$tmp/corrupt.err"
expect_eq "corrupt stored files: the same exit as before" "$?" 0
expect_eq "corrupt stored files: the same rows" "$(rows_of "$tmp/corrupt.json")" "$(rows_of "$tmp/a86.json")"
expect_eq "corrupt stored files: one warning each (resolution, inspection)" "$(grep -c '^tailor stack: warning: .*; ignored' "$tmp/corrupt.err")" 2

# ---- torch for T4G on aarch64: the official CUDA 13.0 list has no 7.5 (the seed 000 case) ---
"$TAILOR" stack --platform aarch64 --python 3.11 --gpu T4G --index-url "$index" torch --json >"$tmp/arm.json" 2>"$tmp/arm.err"
expect_eq "aarch64 T4G torch: exit 0 (buildable)" "$?" 0
expect_eq "aarch64 T4G torch: build" "$(row "$tmp/arm.json" torch outcome)" build
case "$(row "$tmp/arm.json" torch reason)" in
  *"official CUDA 13.0 wheels for aarch64 carry 8.0;9.0;10.0;11.0;12.0+PTX; 7.5 is not among them: \`tailor build torch --torch "*" --python 3.11 --platform aarch64 --cuda 13.0 --gpu T4G\` builds one"*) ok "aarch64 T4G torch reason" ;;
  *) bad "aarch64 T4G torch reason: $(row "$tmp/arm.json" torch reason)"; cat "$tmp/arm.err" ;; esac
# The suggested command runs as printed; `plan` with its flags (a build is hours) plans it.
fix=$(row "$tmp/arm.json" torch reason | sed -n 's/.*`tailor build torch \([^`]*\)`.*/\1/p')
eval "\"\$TAILOR\" plan $fix" >"$tmp/arm-fix.txt" 2>&1
expect_eq "stack's torch fix line plans (exit 0): tailor plan $fix" "$?" 0
"$TAILOR" stack --platform aarch64 --python 3.11 --gpu GH200 --index-url "$index" torch --json >"$tmp/gh.json" 2>/dev/null
expect_eq "aarch64 GH200 torch: prebuilt" "$(row "$tmp/gh.json" torch outcome)" prebuilt
"$TAILOR" stack --platform aarch64 --python 3.11 --gpu GH200 --cuda 12.8 --no-index --find-links "$tmp/index/files" torch --json >"$tmp/gh2.json" 2>/dev/null
expect_eq "--cuda 12.8 with a cu130 torch: unsupported" "$(row "$tmp/gh2.json" torch outcome)" unsupported

# ---- a torch whose CUDA build tailor's data does not know: "unknown", never "prebuilt" ------
"$TAILOR" stack --platform x86_64 --gpu 8.6 --index-url "$index" torch --json --lock "$tmp/unk.lock" \
  --script "$tmp/unk.sh" >"$tmp/unk.json" 2>"$tmp/unk.err"
expect_eq "unknown torch: exit 1" "$?" 1
expect_eq "unknown torch: outcome" "$(row "$tmp/unk.json" torch outcome)" unknown
expect_eq "unknown torch: covers" "$(row "$tmp/unk.json" torch covers)" "?"
expect_eq "unknown torch: not ok" "$(json_get "$tmp/unk.json" 'j["ok"]')" False
case "$(row "$tmp/unk.json" torch reason)" in
  *"CUDA 19.9"*"tailor inspect torch-2.99.0+cu199-py3-none-manylinux_2_28_x86_64.whl --gpu 8.6"*) ok "unknown torch: reason names the deciding command" ;;
  *) bad "unknown torch reason: $(row "$tmp/unk.json" torch reason)" ;; esac
expect_eq "unknown torch: one stderr line besides progress" "$(grep -vc '^tailor stack: ' "$tmp/unk.err")" 1
grep -q "torch 2.99.0+cu199: coverage of 8.6 unknown" "$tmp/unk.err" && ok "unknown torch: stderr names it" || bad "unknown stderr: $(cat "$tmp/unk.err")"
bash "$tmp/unk.sh" "$tmp/unk-venv" >/dev/null 2>"$tmp/unk-sh.err"
expect_eq "unknown torch: the script refuses" "$?" 1
grep -q "^stack: torch's coverage is unknown: CUDA 19.9 build" "$tmp/unk-sh.err" && [ ! -e "$tmp/unk-venv" ] \
  && ok "unknown torch: the script says why, before making a venv" || bad "unknown torch script: $(cat "$tmp/unk-sh.err")"
"$TAILOR" stack --from-lock "$tmp/unk.lock" >"$tmp/unk.txt" 2>/dev/null
expect_eq "unknown torch from the lock: exit 1" "$?" 1
grep -q "^torch .* unknown " "$tmp/unk.txt" && grep -q "^0 prebuilt or installed, 0 to build, 1 unknown, 0 unsupported" "$tmp/unk.txt" \
  && ok "unknown torch: text table and total" || { bad "unknown torch text"; cat "$tmp/unk.txt"; }

# ---- the fixture extension from its sdist; lock and script; --install ---------------------
"$TAILOR" stack --gpu T4 --torch python3 --index-url "$index" kern75 purepkg tiny_ext \
  --lock "$tmp/ok.lock" --script "$tmp/install.sh" >"$tmp/ok.txt" 2>"$tmp/ok.err"
expect_eq "stack exit 0" "$?" 0
grep -q "tiny.ext .* build .*no wheel for the target; build from tiny_ext-0.1.0.tar.gz (generic recipe)" "$tmp/ok.txt" \
  && ok "tiny_ext: build from the sdist" || { bad "tiny_ext row"; cat "$tmp/ok.txt" "$tmp/ok.err"; }
grep -q "^kern75 .* prebuilt" "$tmp/ok.txt" && ok "text table" || bad "text table"
bash -n "$tmp/install.sh" && ok "script passes bash -n" || bad "script syntax"
grep -q -- "--require-hashes" "$tmp/install.sh" && grep -q "kern75 @ http://127.0.0.1:$port/.*--hash=sha256:$sha" "$tmp/install.sh" \
  && ok "script installs hashed wheels" || bad "script hashes"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/ok.lock" && ok "lock is JSON" || bad "lock JSON"
"$TAILOR" stack --from-lock "$tmp/ok.lock" --lock "$tmp/again.lock" --script "$tmp/again.sh" >/dev/null
cmp -s "$tmp/ok.lock" "$tmp/again.lock" && ok "lock round-trips" || bad "lock differs after a round trip"
cmp -s "$tmp/install.sh" "$tmp/again.sh" && ok "script from the lock is the same" || bad "script differs"
echo '{"schema": "tailor.stack-lock/1", "target": 5}' >"$tmp/bad.lock"
out=$("$TAILOR" stack --from-lock "$tmp/bad.lock" 2>&1); rc=$?
expect_eq "broken lock: exit 2" "$rc" 2
expect_eq "broken lock: one line" "$(echo "$out" | wc -l)" 1
out=$("$TAILOR" stack --gpu T4 --index-url "$index" "kern75===" 2>&1); rc=$?
expect_eq "bad requirement: exit 2" "$rc" 2

out=$("$TAILOR" stack --gpu T4 --torch python3 --index-url "$index" broken --progress quiet 2>&1); rc=$?
expect_eq "truncated wheel on the index: exit 2" "$rc" 2
expect_eq "truncated wheel: one line" "$(echo "$out" | wc -l)" 1
case "$out" in "tailor: error: stack: "*) ok "truncated wheel: $out" ;; *) bad "truncated wheel: $out" ;; esac

if [ "${TAILOR_STACK_SKIP_INSTALL:-0}" = 1 ]; then
  echo "skip: --install (TAILOR_STACK_SKIP_INSTALL=1)"
else
  "$TAILOR" stack --from-lock "$tmp/ok.lock" --install "$tmp/venv" >"$tmp/install.out" 2>"$tmp/install.err"
  rc=$?
  expect_eq "--install exit" "$rc" 0
  [ "$rc" = 0 ] || tail -n 30 "$tmp/install.err" "$tmp/install.out"
  grep -q "^verified $tmp/venv: [0-9]* imports; torch .* arch list .*sm_75" "$tmp/install.out" && ok "verification line" \
    || { bad "verification line"; cat "$tmp/install.out"; }
  if nvidia-smi -L >/dev/null 2>&1; then
    grep -q "GPU smoke test on .*passed" "$tmp/install.out" && ok "GPU smoke" || bad "GPU smoke"
  else
    grep -q "GPU smoke test: skipped (no GPU)" "$tmp/install.out" && ok "GPU smoke skipped (no GPU)" || bad "no skip line"
  fi
  "$tmp/venv/bin/python" -c 'import tiny_ext, purepkg, kern75; assert purepkg.VALUE == 42' && ok "venv imports" || bad "venv imports"
  expect_eq "tiny_ext built for sm_75 only" \
    "$("$TAILOR" inspect "$("$tmp/venv/bin/python" -c 'import tiny_ext._C as m; print(m.__file__)')" --exact sm_75 >/dev/null; echo $?)" 0
fi

# --build: the packages to build, built now into --out (against the lock's torch interpreter).
if [ "${TAILOR_STACK_SKIP_INSTALL:-0}" != 1 ]; then
  "$TAILOR" stack --from-lock "$tmp/ok.lock" --build --out "$tmp/built" >"$tmp/build.out" 2>"$tmp/build.err"
  expect_eq "--build exit" "$?" 0
  built=$(ls "$tmp/built"/tiny_ext-*.whl 2>/dev/null | head -1)
  [ -n "$built" ] && "$TAILOR" inspect "$built" --exact sm_75 >/dev/null && ok "--build: tiny_ext wheel for sm_75" \
    || { bad "--build wheel"; tail -n 20 "$tmp/build.err"; }
fi

# --wheelhouse: the wheel --build made, published, is prebuilt for the same GPU and inputs;
# for another GPU the package stays a build and says what the published wheel differed in.
if [ -n "${built:-}" ]; then
  "$TAILOR" publish "$built" --to "$tmp/house" >/dev/null 2>&1
  "$TAILOR" stack --gpu T4 --torch python3 --index-url "$index" kern75 purepkg tiny_ext \
    --wheelhouse "$tmp/house" --json >"$tmp/wh.json" 2>"$tmp/wh.err"
  expect_eq "--wheelhouse: exit 0" "$?" 0
  expect_eq "--wheelhouse: tiny_ext prebuilt" "$(row "$tmp/wh.json" tiny-ext outcome)" prebuilt
  expect_eq "--wheelhouse: from the wheelhouse" "$(json_get "$tmp/wh.json" "[p for p in j['packages'] if p['key']=='tiny-ext'][0]['wheel']['url']")" \
    "file://$tmp/house/files/sm75/$(basename "$built")"
  case "$(row "$tmp/wh.json" tiny-ext reason)" in *"in the wheelhouse $tmp/house"*) ok "--wheelhouse: the reason says so" ;;
    *) bad "--wheelhouse reason: $(row "$tmp/wh.json" tiny-ext reason)" ;; esac
  "$TAILOR" stack --gpu A10 --torch python3 --index-url "$index" tiny_ext --wheelhouse "$tmp/house" \
    --json >"$tmp/wh86.json" 2>"$tmp/wh86.err"
  expect_eq "--wheelhouse, another GPU: a build" "$(row "$tmp/wh86.json" tiny-ext outcome)" build
  case "$(row "$tmp/wh86.json" tiny-ext reason)" in *"other targets"*) ok "--wheelhouse, another GPU: names the difference" ;;
    *) bad "--wheelhouse, another GPU: $(row "$tmp/wh86.json" tiny-ext reason)" ;; esac
  # The stack's torch from the index, 2.11.0 without a label (CUDA 13.0 by its METADATA): the
  # wheel built with 2.11.0+cu130 pins torch==2.11.0, which it satisfies.
  "$TAILOR" stack --gpu T4 --index-url "$index" torch==2.11.0 tiny_ext --wheelhouse "$tmp/house" \
    --json >"$tmp/whl.json" 2>"$tmp/whl.err"
  expect_eq "--wheelhouse, torch 2.11.0 from the index: its CUDA read" "$(row "$tmp/whl.json" torch reason | cut -c1-14)" "CUDA 13.0 buil"
  case "$(row "$tmp/whl.json" tiny-ext outcome) $(row "$tmp/whl.json" tiny-ext reason)" in
    "prebuilt $(basename "$built") in the wheelhouse"*) ok "--wheelhouse, torch 2.11.0 against the wheel's 2.11.0+cu130: prebuilt" ;;
    *) bad "--wheelhouse, torch 2.11.0: $(row "$tmp/whl.json" tiny-ext outcome) $(row "$tmp/whl.json" tiny-ext reason)" ;;
  esac
fi

# The issue's torch 2.12.1: no label, CUDA 13 stated only by nvidia-cudnn-cu13 in its
# METADATA: a CUDA build of a release it does not state (unknown), never "CPU-only".
"$TAILOR" stack --gpu T4 --index-url "$index" needstorch --json >"$tmp/nl.json" 2>"$tmp/nl.err"
expect_eq "torch without a label: unknown, not CPU-only" "$(row "$tmp/nl.json" torch outcome)" unknown
case "$(row "$tmp/nl.json" torch reason)" in *"a CUDA 13 build (its METADATA requires nvidia-cudnn-cu13 9.13.0.50)"*) ok "torch without a label: its CUDA read from its METADATA" ;;
  *) bad "torch without a label: $(row "$tmp/nl.json" torch reason)" ;; esac
# --torch PYTHON: that interpreter's torch is the stack's; requirements that need another torch
# are named on its row (exit 1), and the other torch is not judged in its place.
"$TAILOR" stack --gpu T4 --torch python3 --index-url "$index" needstorch --json >"$tmp/nt.json" 2>"$tmp/nt.err"
expect_eq "--torch PYTHON, requirements need another torch: exit 1" "$?" 1
expect_eq "--torch PYTHON: the torch row is that interpreter's" "$(row "$tmp/nt.json" torch version)" "$(python3 -c 'import torch; print(torch.__version__)')"
case "$(row "$tmp/nt.json" torch reason)" in *"installed in python3"*"the requirements need torch 2.12.1 instead"*) ok "--torch PYTHON: says the requirements would replace it" ;;
  *) bad "--torch PYTHON: $(row "$tmp/nt.json" torch reason)" ;; esac
expect_eq "--torch PYTHON: one torch row" "$(json_get "$tmp/nt.json" "len([p for p in j['packages'] if p['key']=='torch'])")" 1

# ---- online (PyPI) -------------------------------------------------------------------------
if python3 -c "import urllib.request; urllib.request.urlopen('https://pypi.org/simple/einops/', timeout=10)" 2>/dev/null; then
  "$TAILOR" stack --platform aarch64 --python 3.10 --gpu T4G torch==2.9.1 --json >"$tmp/arm.json" 2>"$tmp/arm.err"
  expect_eq "aarch64 torch 2.9.1: exit 0 (buildable)" "$?" 0
  expect_eq "aarch64 torch: build" "$(row "$tmp/arm.json" torch outcome)" build
  case "$(row "$tmp/arm.json" torch reason)" in *"CPU-only build"*"tailor build torch --torch 2.9.1 --python 3.10 --platform aarch64 --gpu T4G"*) ok "aarch64 torch: no CUDA, offers its own build torch" ;;
    *) bad "aarch64 torch reason: $(row "$tmp/arm.json" torch reason)" ;; esac
  expect_eq "aarch64: no x86_64-only nvidia wheels" "$(json_get "$tmp/arm.json" "len([p for p in j['packages'] if p['key'].startswith('nvidia-')])")" 0
  "$TAILOR" stack --platform x86_64 --gpu 8.6 bitsandbytes einops --json >"$tmp/bnb.json" 2>"$tmp/bnb.err"
  expect_eq "bitsandbytes: prebuilt" "$(row "$tmp/bnb.json" bitsandbytes outcome)" prebuilt
  expect_eq "bitsandbytes: covers 8.6" "$(row "$tmp/bnb.json" bitsandbytes covers)" yes
  expect_eq "einops: prebuilt" "$(row "$tmp/bnb.json" einops outcome)" prebuilt
else
  echo "skip: online checks (pypi.org unreachable)"
fi
exit $fail
