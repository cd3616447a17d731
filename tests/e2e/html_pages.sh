#!/usr/bin/env bash
# The HTML pages, rendered by a real browser: `tailor inspect --html` of a wheel made here
# from the fixture libraries (one member named like a script element), and the report page
# of a sample build report with its Ninja log (`tailor report --html`; no build runs).
# Headless Chromium takes a screenshot of each (the PNG must exist and not be one colour)
# and logs the console (no errors, no Content-Security-Policy refusals); --dump-dom shows
# the charts were parsed. Bad inputs leave no file behind.
set -uo pipefail
fixtures="$TAILOR_BINARY_DIR/fixtures"
data="$TAILOR_SOURCE_DIR/tests/e2e/data"
for f in sass_75_80.so sass_ptx_80.so sm_90a.so plain_c.so; do
  [ -f "$fixtures/$f" ] || { echo "skip: fixture $f not built (needs nvcc; target tailor_fixtures)"; exit 77; }
done
command -v python3 >/dev/null || { echo "skip: python3 not found"; exit 77; }
chromium=$(command -v chromium || command -v chromium-browser || true)
[ -n "$chromium" ] || { echo "skip: chromium not installed (apt-get install chromium; scripts/setup.sh)"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"  # fail, make_wheel

# A wheel whose members come from the fixtures; one library name carries markup.
wheel="$work/demo-1.0+cu130-cp311-cp311-manylinux_2_34_x86_64.whl"
make_wheel "$wheel" \
  "$fixtures/sass_75_80.so:demo/lib/kernels.so" "$fixtures/sass_ptx_80.so:demo/lib/jit.so" \
  "$fixtures/sm_90a.so:demo/lib/<script>alert(1)<!--.so" "$fixtures/plain_c.so:demo/lib/plain.so" \
  || fail "could not make the wheel"

# ---- inspect --html: the page, and the text output as before --------------------------
text=$("$TAILOR" inspect --gpu T4,A100,H100 --html "$work/inspect.html" "$wheel"); rc=$?
[ "$rc" -le 1 ] || fail "inspect --html exited $rc"
grep -q "RECORD     ok" <<<"$text" || fail "the text output is gone: $text"
[ -s "$work/inspect.html" ] || fail "no inspect page"
grep -q "<script" "$work/inspect.html" && fail "a member name became a script element"
grep -q "&lt;script&gt;alert(1)&lt;!--.so" "$work/inspect.html" || fail "the hostile name is not shown escaped"
for want in "Bytes per GPU target" "Device code per library" "T4 (7.5)" "H100 (9.0)" "JIT-only" "Compression" "zstd"; do
  grep -q "$want" "$work/inspect.html" || fail "inspect page lacks '$want'"
done
json=$("$TAILOR" inspect --json --html "$work/inspect2.html" "$wheel") || true
python3 -c 'import json,sys; json.loads(sys.argv[1])' "$json" || fail "--json with --html is not JSON"
[ -s "$work/inspect2.html" ] || fail "no page with --json"

# Errors: nothing written, nothing half-written.
"$TAILOR" inspect --html "$work/no/such/dir/x.html" "$wheel" >/dev/null 2>"$work/err"; rc=$?
[ "$rc" -eq 2 ] || fail "an unwritable --html exited $rc"
grep -q "tailor: error: --html:" "$work/err" || fail "error line: $(cat "$work/err")"
echo "not a wheel" >"$work/bad.whl"
"$TAILOR" inspect --html "$work/bad.html" "$work/bad.whl" >/dev/null 2>&1 && fail "a bad wheel passed"
[ -e "$work/bad.html" ] && fail "a page was written for bad input"
ls "$work" | grep -q "tailor-tmp" && fail "a temporary file was left behind"

# ---- the report page ------------------------------------------------------------------
cp "$data/sample.ninja_log" "$work/.ninja_log"
cp "$data/build.ninja" "$work/build.ninja"
"$TAILOR" report "$data/sample.report.json" --ninja-log "$work/.ninja_log" --html "$work/report.html" >/dev/null \
  || fail "tailor report exited $?"
for want in "33 jobs over" "up to 4 at once" "The slowest translation units" "CUDA (.cu)" "C++ (.cpp)" \
            "PTX (cicc)" "peak build RSS" "gpu-smoke" "compute_90"; do
  grep -q "$want" "$work/report.html" || fail "report page lacks '$want'"
done
"$TAILOR" report "$data/sample.report.json" --html "$work/report_plain.html" >/dev/null || fail "report without a log"
grep -q "No job timeline in this report" "$work/report_plain.html" || fail "no note for a missing timeline"
printf '{"run": [1, 2' >"$work/broken.json"
"$TAILOR" report "$work/broken.json" --html "$work/broken.html" 2>"$work/err"; rc=$?
[ "$rc" -eq 2 ] || fail "broken JSON exited $rc"
grep -q "not JSON" "$work/err" || fail "error line: $(cat "$work/err")"
[ -e "$work/broken.html" ] && fail "a page was written for broken JSON"
python3 -c 'print("[" * 100000)' >"$work/deep.json"
"$TAILOR" report "$work/deep.json" --html "$work/deep.html" 2>"$work/err"; rc=$?
[ "$rc" -eq 2 ] || fail "deeply nested JSON exited $rc: $(cat "$work/err")"
printf 'start\tend\n1\t2\n' >"$work/bad_log"
"$TAILOR" report "$data/sample.report.json" --ninja-log "$work/bad_log" --html "$work/x.html" 2>"$work/err"; rc=$?
[ "$rc" -eq 2 ] || fail "a file that is no Ninja log exited $rc"
grep -q "not a Ninja log" "$work/err" || fail "error line: $(cat "$work/err")"

# ---- a real browser -------------------------------------------------------------------
render() {  # render PAGE NAME
  local page=$1 name=$2
  timeout 60 "$chromium" --headless=new --no-sandbox --disable-gpu --no-first-run --user-data-dir="$work/profile-$name" \
    --screenshot="$work/$name.png" --window-size=1280,2000 --enable-logging=stderr --v=0 \
    "file://$page" >"$work/$name.log" 2>&1 || fail "chromium on $name exited $?: $(tail -5 "$work/$name.log")"
  if grep -E "CONSOLE|Uncaught|Content Security Policy|Refused to" "$work/$name.log"; then
    fail "console errors on the $name page"
  fi
  timeout 60 "$chromium" --headless=new --no-sandbox --disable-gpu --no-first-run --user-data-dir="$work/profile-$name" \
    --dump-dom "file://$page" >"$work/$name.dom" 2>/dev/null || fail "chromium --dump-dom on $name exited $?"
  python3 "$TAILOR_SOURCE_DIR/tests/e2e/lib/png_colours.py" "$work/$name.png" \
    || fail "the $name screenshot is not a picture of a page"
}
render "$work/inspect.html" inspect
grep -q "<svg class=\"bars\"" "$work/inspect.dom" || fail "no bar chart in the inspect DOM"
render "$work/report.html" report
[ "$(grep -o '<rect x=' "$work/report.dom" | wc -l)" -ge 33 ] || fail "the report DOM lacks the job bars"
grep -q "<polyline" "$work/report.dom" || fail "no memory curve in the report DOM"
if [ -n "${TAILOR_HTML_SHOTS:-}" ]; then
  mkdir -p "$TAILOR_HTML_SHOTS" && cp "$work/inspect.png" "$work/report.png" "$TAILOR_HTML_SHOTS/"
fi
echo "ok: inspect and report pages render without console errors"
