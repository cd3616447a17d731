#!/usr/bin/env bash
# tailor inspect on wheels built here from the fixture libraries: text and JSON output,
# verdict exit codes (0 pass, 1 fail, 2 bad input), a tampered RECORD, a false claim.
set -uo pipefail
fixtures="$TAILOR_BINARY_DIR/fixtures"
for f in sass_75_80.so plain_c.so glibc_234.so; do
  [ -f "$fixtures/$f" ] || { echo "skip: fixture $f not built (needs nvcc; target tailor_fixtures)"; exit 77; }
done
command -v python3 >/dev/null || { echo "skip: python3 not found"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"  # fail, make_wheel

good="$work/demo-1.0+cu130-cp311-cp311-manylinux_2_34_x86_64.whl"
make_wheel "$good" \
  "$fixtures/sass_75_80.so:demo/lib/kernels.so" "$fixtures/plain_c.so:demo/lib/plain.so" \
  "$fixtures/glibc_234.so:demo/lib/fast.so"

out=$("$TAILOR" inspect "$good") || fail "inspect of a good wheel exited $?"
grep -q "demo 1.0+cu130" <<<"$out" || fail "no name/version line: $out"
grep -q "RECORD     ok" <<<"$out" || fail "RECORD not ok: $out"
grep -q "manylinux  needs manylinux_2_34_x86_64, claims manylinux_2_34_x86_64: ok" <<<"$out" || fail "manylinux line: $out"
grep -qE "sm_75 +█" <<<"$out" || fail "no bar for sm_75: $out"

json=$("$TAILOR" inspect --json "$good") || fail "--json exited $?"
python3 - "$json" <<'PY' || fail "JSON fields"
import json, sys
j = json.loads(sys.argv[1])
w = j["wheels"][0]
assert w["targets"] == ["sm_75", "sm_80"], w["targets"]
assert w["manylinux"] == "manylinux_2_34_x86_64", w["manylinux"]
assert w["local_label"] == "cu130"
paths = [l["path"] for l in w["libraries"]]
assert "demo/lib/kernels.so" in paths, paths
assert j["targets"] == ["sm_75", "sm_80"]
PY

"$TAILOR" inspect --gpu T4 "$good" >"$work/v.txt"; rc=$?
[ $rc -eq 0 ] || fail "--gpu T4 exited $rc"
grep -q "verdict PASS: gpu T4 (7.5): .*kernels.so runs through native SASS sm_75 (2 entries)" "$work/v.txt" || fail "T4 verdict: $(cat "$work/v.txt")"
# T4G and g5g exist only on aarch64: this x86_64 wheel can never load there, whatever its SASS.
for gpu in T4G g5g.xlarge; do
  "$TAILOR" inspect --gpu "$gpu" "$good" >"$work/v.txt"; rc=$?
  [ $rc -eq 1 ] || fail "--gpu $gpu on an x86_64 wheel should fail with 1, got $rc"
  grep -q "verdict FAIL: gpu $gpu (7.5): .*kernels.so: $gpu (.*) exists only on aarch64; this library is x86_64" "$work/v.txt" \
    || fail "$gpu verdict: $(cat "$work/v.txt")"
done
"$TAILOR" inspect --json --gpu T4G "$good" >"$work/v.json" 2>/dev/null
python3 -c '
import json, sys
v = json.load(open(sys.argv[1]))["verdicts"]
assert not v["pass"] and "exists only on aarch64" in v["items"][0]["reason"], v' "$work/v.json" || fail "T4G JSON verdict has no reason"
"$TAILOR" inspect --gpu 9.0 "$good" >"$work/v.txt"; rc=$?
[ $rc -eq 1 ] || fail "--gpu 9.0 should fail with 1, got $rc"
grep -q "verdict FAIL: gpu 9.0" "$work/v.txt" || fail "no FAIL line for 9.0"
"$TAILOR" inspect --require "7.5;8.0" --exact "7.5;8.0" "$good" >/dev/null || fail "--require/--exact 7.5;8.0 should pass"
"$TAILOR" inspect --exact "8.0" "$good" >/dev/null; rc=$?
[ $rc -eq 1 ] || fail "--exact 8.0 should fail with 1, got $rc"
"$TAILOR" inspect --gpu no-such-gpu-zz "$good" >"$work/o.txt" 2>"$work/e.txt"; rc=$?
[ $rc -eq 2 ] || fail "bad --gpu spec should exit 2, got $rc"
[ ! -s "$work/o.txt" ] || fail "bad spec printed to stdout"

tampered="$work/demo-1.0-py3-none-linux_x86_64.whl"
make_wheel --bad-hash "$tampered" "$fixtures/plain_c.so:demo/p.so"
"$TAILOR" inspect "$tampered" >"$work/t.txt"; rc=$?
[ $rc -eq 1 ] || fail "tampered RECORD should exit 1, got $rc"
grep -q "mismatch  demo/p.so: sha256 differs" "$work/t.txt" || fail "no mismatch line: $(cat "$work/t.txt")"

liar="$work/demo-2.0-cp311-cp311-manylinux_2_17_x86_64.whl"
make_wheel "$liar" "$fixtures/glibc_234.so:demo/fast.so"
"$TAILOR" inspect "$liar" >"$work/l.txt"; rc=$?
[ $rc -eq 1 ] || fail "false manylinux claim should exit 1, got $rc"
grep -q "WRONG: claims manylinux_2_17_x86_64 but the libraries need manylinux_2_34_x86_64" "$work/l.txt" ||
  fail "no claim line: $(cat "$work/l.txt")"

# A library as input.
"$TAILOR" inspect --json "$fixtures/plain_c.so" >"$work/m.json" || true
python3 -c "import json,sys; j=json.load(open('$work/m.json')); assert len(j['wheels'])==0 and len(j['libraries'])==1" ||
  fail "library input"
# A folder without ELF libraries (only wheels) is an error, not an empty report.
"$TAILOR" inspect --json "$fixtures/plain_c.so" "$work" >"$work/d.json" 2>"$work/d.err"; rc=$?
[ $rc -eq 2 ] && [ ! -s "$work/d.json" ] && grep -q "no ELF libraries under this folder" "$work/d.err" ||
  fail "folder without libraries: exit $rc, $(cat "$work/d.err")"
echo "ok"
