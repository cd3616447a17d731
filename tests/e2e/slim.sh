#!/usr/bin/env bash
# tailor slim on nvcc-built libraries, on a wheel made of them and on a venv it is
# installed in: the kept targets are exactly what inspect finds afterwards, the file
# shrinks by the removed entries (within a page at each end of the cut), eu-elflint and
# readelf find nothing wrong, the library still loads (ctypes) and its symbols resolve,
# the slimmed wheel installs with pip and its RECORD verifies, a slimmed venv still passes
# `pip check` and uninstalls cleanly, and hostile inputs leave nothing behind.
set -uo pipefail
fixtures="$TAILOR_BINARY_DIR/fixtures"
for f in slim_multi.so sass_75_80.so plain_c.so; do
  [ -f "$fixtures/$f" ] || { echo "skip: fixture $f not built (needs nvcc; target tailor_fixtures)"; exit 77; }
done
command -v python3 >/dev/null || { echo "skip: python3 not found"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"  # fail, json_get
T="$TAILOR"
page=4096

targets_of() {  # the targets inspect finds in a library, space-separated
  "$T" inspect --json "$1" | python3 -c "import json,sys; d=json.load(sys.stdin); print(' '.join(d['libraries'][0]['targets']))"
}
elf_clean() {  # eu-elflint (Debian's elfutils) when installed, readelf always
  if command -v eu-elflint >/dev/null; then
    local lint
    lint=$(eu-elflint --gnu-ld "$1" 2>&1)
    [ "$lint" = "No errors" ] || fail "eu-elflint on $1: $lint"
  fi
  local err
  err=$(readelf -a -W "$1" 2>&1 >/dev/null)
  [ -z "$err" ] || fail "readelf on $1: $err"
}
loads() {  # dlopen through ctypes and resolve an exported symbol
  python3 -c "import ctypes,sys; l=ctypes.CDLL(sys.argv[1]); getattr(l, sys.argv[2])" "$1" "$2" || fail "$1 does not load or lacks $2"
}
no_temps() { ! ls -A "$1" 2>/dev/null | grep -qE 'tailor-slim|tailor-tmp' || fail "temporary files left in $1: $(ls -A "$1")"; }

# 1. One library, keep sm_80: exactly sm_80 remains, the file shrinks by what was removed.
in="$fixtures/slim_multi.so"
"$T" slim "$in" --keep sm_80 --out "$work/o80" --json > "$work/s80.json" || fail "slim --keep sm_80 exit $?"
out="$work/o80/slim_multi.so"
[ "$(targets_of "$out")" = "sm_80" ] || fail "kept targets: $(targets_of "$out")"
"$T" inspect "$out" --exact sm_80 >/dev/null || fail "inspect --exact sm_80 on the slimmed library"
before=$(stat -c %s "$in"); after=$(stat -c %s "$out")
removed=$(json_get "$work/s80.json" "j['inputs'][0]['files'][0]['device_bytes_before'] - j['inputs'][0]['files'][0]['device_bytes_after']")
[ "$(json_get "$work/s80.json" "j['inputs'][0]['files'][0]['bytes_after']")" = "$after" ] || fail "reported size differs from the file"
shrunk=$((before - after))
[ "$shrunk" -le "$removed" ] && [ "$shrunk" -ge $((removed - 2 * page)) ] ||
  fail "file shrank by $shrunk bytes; removed entries hold $removed (want within 2 pages)"
[ "$(json_get "$work/s80.json" "j['inputs'][0]['files'][0]['packed']")" = True ] || fail "containers were not packed"
[ "$(stat -c %a "$out")" = "$(stat -c %a "$in")" ] || fail "permissions changed"
elf_clean "$out"
loads "$out" tailor_fixture_check
echo "ok: library kept sm_80 only, $before -> $after bytes (removed entries $removed), elflint clean, loads"

# 2. Policies: PTX kept on request, PTX kept where it is the only code, compatible SASS.
"$T" slim "$in" --keep 9.0 --keep-ptx --out "$work/o90" >/dev/null || fail "slim --keep-ptx"
[ "$(targets_of "$work/o90/slim_multi.so")" = "sm_90 compute_90" ] || fail "--keep-ptx kept: $(targets_of "$work/o90/slim_multi.so")"
"$T" slim "$in" --keep 10.0 --out "$work/o100" > "$work/o100.txt" || fail "slim --keep 10.0"
# Two containers have compute_90 (JIT on 10.0); the third has only SASS, none for 10.0, so
# it is emptied to its header (the CUDA runtime answers "no kernel image" for it, as
# before) and the summary says so.
[ "$(targets_of "$work/o100/slim_multi.so")" = "compute_90" ] || fail "10.0 kept $(targets_of "$work/o100/slim_multi.so")"
grep -q "2 containers run on a kept GPU only through PTX JIT" "$work/o100.txt" || fail "no PTX JIT note: $(cat "$work/o100.txt")"
grep -Eq '^  emptied: +1 container had no code for 10.0: emptied to its header; the CUDA runtime answers "no kernel image"' "$work/o100.txt" ||
  fail "no emptied line: $(cat "$work/o100.txt")"
"$T" slim "$in" --gpu 8.6 --out "$work/o86" >/dev/null || fail "slim --gpu 8.6"
[ "$(targets_of "$work/o86/slim_multi.so")" = "sm_80" ] || fail "8.6 should keep sm_80 (compatible SASS)"
"$T" slim "$in" --keep 7.0 --out "$work/o70" > "$work/o70.txt" || fail "slim --keep 7.0"
grep -Eq '^  emptied: +3 containers had no code for 7.0: emptied to their header' "$work/o70.txt" ||
  fail "no emptied line for containers without code: $(cat "$work/o70.txt")"
for d in o90 o100 o86 o70; do elf_clean "$work/$d/slim_multi.so"; loads "$work/$d/slim_multi.so" tailor_fixture_check; done
# 7.0: nothing runs there: every container is its 16-byte header alone; inspect finds no
# device code, and --json counts the emptied containers, every entry's bytes removed.
o70="$work/o70/slim_multi.so"
"$T" inspect "$o70" | grep -q "no CUDA device code" || fail "inspect on the emptied library: $("$T" inspect "$o70")"
[ "$(targets_of "$o70")" = "" ] || fail "7.0 left $(targets_of "$o70")"
"$T" slim "$in" --keep 7.0 --dry-run --json > "$work/o70.json" || fail "slim --keep 7.0 --json"
json_get "$work/o70.json" "j['inputs'][0]['files'][0]" | python3 -c "
import ast, sys
f = ast.literal_eval(sys.stdin.read())
assert f['containers_emptied'] == f['containers'] == 3, f
assert f['device_bytes_after'] == 0 and f['device_bytes_before'] > 0, f
assert all(t['kept_entries'] == 0 and 'placeholder_entries' not in t for t in f['targets']), f['targets']
assert f['left'] == [], f['left']
" || fail "--json for 7.0: $(cat "$work/o70.json")"
[ "$(json_get "$work/o70.json" "j['inputs'][0]['containers_emptied']")" = 3 ] || fail "input containers_emptied"
readelf -x .nv_fatbin "$o70" | python3 -c "
import sys
words = ''.join(''.join(l.split()[1:5]) for l in sys.stdin if l.strip().startswith('0x'))
b = bytes.fromhex(''.join(words))
assert len(b) == 48, len(b)
for at in range(0, 48, 16):
    assert b[at:at+16] == bytes.fromhex('50ed55ba010010000000000000000000'), b[at:at+16].hex()
" || fail ".nv_fatbin of the 7.0 library is not three 16-byte headers: $(readelf -x .nv_fatbin "$o70")"
# Slimmed again for 7.0: nothing left to remove.
"$T" slim "$o70" --keep 7.0 --dry-run --json > "$work/o70again.json" || fail "slim of the emptied library"
[ "$(json_get "$work/o70again.json" "j['inputs'][0]['files'][0]['outcome']")" = unchanged ] || fail "re-slim: $(cat "$work/o70again.json")"
echo "ok: --keep-ptx, PTX-only device, compatible SASS and containers without code emptied to their header"
# The other nvcc outputs: compressed entries (zstd, lz4), -rdc, arch-specific and family targets.
for f in compress_all mode_speed mode_size rdc sm_90a family_120f sass_ptx_80; do
  [ -f "$fixtures/$f.so" ] || continue
  "$T" slim "$fixtures/$f.so" --keep 9.0 --out "$work/variants" --json > "$work/$f.json" || fail "slim $f exit $?"
  elf_clean "$work/variants/$f.so"
  loads "$work/variants/$f.so" tailor_fixture_launch
done
[ "$(json_get "$work/rdc.json" "j['inputs'][0]['files'][0]['relocatable_device_bytes'] > 0")" = True ] || fail "rdc: relocatable code not reported"
# kernels.cu's container runs on 9.0 only through compute_80; the library's second, SASS-only
# container (1.4 KiB) has nothing for 9.0 and is emptied to its header.
[ "$(json_get "$work/sass_ptx_80.json" "j['inputs'][0]['files'][0]['containers_ptx_only']")" = 1 ] || fail "sass_ptx_80: PTX JIT not reported"
[ "$(json_get "$work/sass_ptx_80.json" "j['inputs'][0]['files'][0]['containers_emptied']")" = 1 ] || fail "sass_ptx_80: emptied container not counted"
[ "$(targets_of "$work/variants/sass_ptx_80.so")" = "compute_80" ] || fail "sass_ptx_80 for 9.0 kept $(targets_of "$work/variants/sass_ptx_80.so")"
echo "ok: compressed, -rdc, sm_90a, sm_120f and SASS+PTX fixtures slimmed, valid and loadable"
# Every target left in the result is accounted for, and why (issue 27: `--keep 8.6` said
# "kept: sm_86" while relocatable sm_60..sm_120 and PTX kept for another GPU stayed, named nowhere):
# the targets inspect finds afterwards are exactly those of the summary's `left` rows.
for spec in "rdc 7.5" "rdc 8.0" "sm_90a 8.6" "slim_multi 8.6" "slim_multi 10.0" "sass_ptx_80 9.0" "embedded_fatbin 9.0"; do
  read -r fx kp <<<"$spec"
  [ -f "$fixtures/$fx.so" ] || continue
  "$T" slim "$fixtures/$fx.so" --keep "$kp" --out "$work/acc_${fx}_${kp}" --json > "$work/acc.json" || fail "slim $fx --keep $kp exit $?"
  found=$("$T" inspect --json "$work/acc_${fx}_${kp}/$fx.so" | python3 -c "import json,sys; print(sorted(json.load(sys.stdin)['libraries'][0]['targets']))")
  for scope in "j['inputs'][0]['files'][0]['left']" "j['inputs'][0]['left']"; do
    told=$(json_get "$work/acc.json" "sorted({t['target'] for t in $scope})")
    [ "$found" = "$told" ] || fail "$fx --keep $kp: inspect finds $found, the summary ($scope) accounts for $told"
  done
  "$T" slim "$fixtures/$fx.so" --keep "$kp" --dry-run > "$work/acc_${fx}_${kp}.txt" || fail "slim $fx --keep $kp --dry-run exit $?"
done
acc_has() {  # acc_has FIXTURE KEEP REGEX: a summary line of that run matches
  grep -Eq "$3" "$work/acc_$1_$2.txt" || fail "$1 --keep $2: no line matching '$3' in: $(cat "$work/acc_$1_$2.txt")"
}
if [ -f "$fixtures/rdc.so" ]; then
  acc_has rdc 7.5 '^  left: +sm_80 [0-9.]+ [KMG]?i?B in __nv_relfatbin \(relocatable device code, not slimmed\)$'
  acc_has rdc 7.5 '^  emptied: +1 container had no code for 7.5: emptied to its header'
  acc_has rdc 8.0 '^  kept: +sm_80 [0-9.]+ [KMG]?i?B \(runs on 8.0\)$'
fi
if [ -f "$fixtures/sm_90a.so" ]; then
  acc_has sm_90a 8.6 '^  emptied: +[0-9]+ containers? had no code for 8.6: emptied to (its|their) header'
  ! grep -Eq 'sm_90a|compute_90a' <(grep -E '^  (kept|left|LTO IR):' "$work/acc_sm_90a_8.6.txt") || fail "sm_90a for 8.6 left a target: $(cat "$work/acc_sm_90a_8.6.txt")"
fi
acc_has slim_multi 8.6 '^  kept: +sm_80 [0-9.]+ [KMG]?i?B \(runs on 8.6 as compatible SASS\)$'
acc_has slim_multi 10.0 '^  kept: +compute_90 [0-9.]+ [KMG]?i?B \(runs on 10.0 through PTX JIT\)$'
echo "ok: every target left after slimming is named with its reason (kept, relocatable), emptied containers counted, text and --json"

# 2b. Containers a library keeps in its own sections (.rodata, .data, .cask_resource, as
# cuSPARSE, cuFFT and cuBLASLt do): compacted where they are, the file keeps its size, the
# freed bytes are zeros, inspect finds only the kept targets, the library still loads.
emb="$fixtures/embedded_fatbin.so"
if [ -f "$emb" ]; then
  "$T" slim "$emb" --keep 9.0 --out "$work/emb" --json > "$work/emb.json" || fail "slim embedded_fatbin exit $?"
  eout="$work/emb/embedded_fatbin.so"
  [ "$(stat -c %s "$eout")" = "$(stat -c %s "$emb")" ] || fail "embedded: the file size changed"
  [ "$(targets_of "$eout")" = "compute_80" ] || fail "embedded: inspect finds $(targets_of "$eout")"
  "$T" inspect --json "$eout" | python3 -c "
import json, sys
lib = json.load(sys.stdin)['libraries'][0]
emb = {e['section']: e for e in lib['embedded_fatbins']}
assert sorted(emb) == ['.cask_resource', '.data', '.rodata'], emb
for e in emb.values():
    assert e['containers'] == 1 and [t['name'] for t in e['target_stats']] == ['compute_80'], e
" || fail "embedded: inspect of the slimmed containers"
  python3 - "$emb" "$eout" "$work/emb.json" <<'PY' || fail "embedded: bytes outside the freed ranges changed, or the freed ranges are not zeros"
import json, sys
a, b = open(sys.argv[1], 'rb').read(), open(sys.argv[2], 'rb').read()
f = json.load(open(sys.argv[3]))['inputs'][0]['files'][0]
assert f['zeroed_bytes'] > 0 and f['device_bytes_after'] < f['device_bytes_before'], f
assert [e['containers_changed'] for e in f['embedded']] == [1, 1, 1], f['embedded']
assert f['disk_bytes_before'] and f['disk_bytes_after'], f
diff = [i for i in range(len(a)) if a[i] != b[i]]
changed = [i for i in diff if b[i] != 0]
# Only the three headers' sizes (8 bytes each) and the kept entries moved up may differ
# with non-zero bytes; every other difference is a freed byte, now zero (and the freed
# entries were mostly non-zero: the zeros grow).
assert b.count(0) - a.count(0) >= f['zeroed_bytes'] // 4, (b.count(0) - a.count(0), f['zeroed_bytes'])
assert len(changed) <= 3 * (8 + 2048), len(changed)
PY
  elf_clean "$eout"
  loads "$eout" tailor_fatbin
  grep -q "LTO IR\|link_time_ir" "$work/emb.json" && fail "embedded: LTO IR named though the fixture has none"
  "$T" slim "$emb" --keep 9.0 --dry-run > "$work/emb.txt" || fail "embedded dry run exit $?"
  grep -Eq "^  note: .*3 fatbin containers in .*: 3 compacted in place" "$work/emb.txt" || fail "embedded: no note: $(cat "$work/emb.txt")"
  grep -Eq "^  zeroed: +[0-9.]+ [KMG]?i?B freed inside sections" "$work/emb.txt" || fail "embedded: no zeroed line: $(cat "$work/emb.txt")"
  # 7.5: nothing in them runs there: each becomes its header where it lies, the rest zeros;
  # inspect finds no device code, the re-read before the rename agrees, the library loads.
  "$T" slim "$emb" --keep 7.5 --out "$work/emb75" --json > "$work/emb75.json" || fail "slim embedded_fatbin --keep 7.5 exit $?"
  e75="$work/emb75/embedded_fatbin.so"
  [ "$(stat -c %s "$e75")" = "$(stat -c %s "$emb")" ] || fail "embedded 7.5: the file size changed"
  "$T" inspect "$e75" | grep -q "no CUDA device code" || fail "embedded 7.5: inspect finds $("$T" inspect "$e75")"
  [ "$(json_get "$work/emb75.json" "[e['containers_emptied'] for e in j['inputs'][0]['files'][0]['embedded']]")" = "[1, 1, 1]" ] ||
    fail "embedded 7.5: emptied containers per section: $(cat "$work/emb75.json")"
  elf_clean "$e75"
  loads "$e75" tailor_fatbin
  echo "ok: embedded containers compacted in place in .rodata, .data and .cask_resource; size kept, freed bytes zero, loads; emptied to their header where nothing runs"
fi

# 3. In place, and a dry run that writes nothing.
cp -p "$in" "$work/inplace.so"
sum=$(sha256sum < "$work/inplace.so")
"$T" slim "$work/inplace.so" --keep sm_75 --dry-run > "$work/dry.txt" || fail "dry run exit $?"
[ "$(sha256sum < "$work/inplace.so")" = "$sum" ] || fail "--dry-run changed the file"
grep -q "dry run" "$work/dry.txt" || fail "dry run output: $(cat "$work/dry.txt")"
"$T" slim "$work/inplace.so" --keep sm_75 --in-place >/dev/null || fail "--in-place exit $?"
[ "$(targets_of "$work/inplace.so")" = "sm_75" ] || fail "in place kept $(targets_of "$work/inplace.so")"
[ "$(stat -c %a "$work/inplace.so")" = "$(stat -c %a "$in")" ] || fail "in place changed permissions"
no_temps "$work"
echo "ok: dry run writes nothing; in place replaces the file"

# 4. A wheel: slimmed, RECORD verified by inspect, installed by pip, loaded, uninstalled.
printf '%s\n' "import ctypes, os" "lib = ctypes.CDLL(os.path.join(os.path.dirname(__file__), '_multi.so'))" \
  >"$work/__init__.py"
python3 "$(dirname "$0")/lib/make_wheel.py" "$work/fused-1.0-cp311-cp311-linux_x86_64.whl" \
  "$work/__init__.py:fused/__init__.py" "$in:fused/_multi.so" "$fixtures/sass_75_80.so:fused/lib/libtwo.so.1" \
  "$fixtures/plain_c.so:fused/_plain.so" || fail "could not make the wheel"
whl="$work/fused-1.0-cp311-cp311-linux_x86_64.whl"
# A wheel whose RECORD no longer matches a member: refused, not slimmed with the stale row kept.
mkdir -p "$work/bad"
python3 "$(dirname "$0")/lib/make_wheel.py" --bad-hash "$work/bad/fused-1.0-cp311-cp311-linux_x86_64.whl" \
  "$work/__init__.py:fused/__init__.py" "$in:fused/_multi.so" >/dev/null || fail "could not make the bad wheel"
"$T" slim "$work/bad/fused-1.0-cp311-cp311-linux_x86_64.whl" --keep sm_80 --out "$work/bad/out" 2>"$work/bad.err" \
  && fail "a wheel with a stale RECORD row was slimmed"
grep -q "member 'fused/__init__.py' does not match its RECORD row (line 1): refusing to slim a damaged wheel" "$work/bad.err" \
  || fail "the stale RECORD row is not named: $(cat "$work/bad.err")"
[ ! -e "$work/bad/out/fused-1.0-cp311-cp311-linux_x86_64.whl" ] || fail "a damaged wheel left an output"
"$T" slim "$whl" --keep sm_80 --out "$work/dist" --json > "$work/w.json" || fail "slim wheel exit $?"
sw="$work/dist/fused-1.0-cp311-cp311-linux_x86_64.whl"
[ -f "$sw" ] || fail "no slimmed wheel"
"$T" inspect "$sw" --exact sm_80 > "$work/wi.txt" || fail "inspect of the slimmed wheel (RECORD, --exact sm_80): $(cat "$work/wi.txt")"
python3 - "$sw" "$whl" <<'PY' || fail "slimmed wheel contents"
import sys, zipfile, json, hashlib, base64
new, old = (zipfile.ZipFile(p) for p in sys.argv[1:3])
assert sorted(n for n in new.namelist() if not n.endswith('tailor-slim.json')) == sorted(old.namelist()), new.namelist()
marker = json.loads(new.read("fused-1.0.dist-info/tailor-slim.json"))
assert marker["original"]["sha256"] == hashlib.sha256(open(sys.argv[2], 'rb').read()).hexdigest(), marker
assert {l["path"] for l in marker["libraries"]} == {"fused/_multi.so", "fused/lib/libtwo.so.1"}, marker
for l in marker["libraries"]:
    assert l["targets_kept"] == ["sm_80"], l
    assert [(t["target"], t["reason"]) for t in l["targets_left"]] == [("sm_80", "runs_on_kept_gpu")], l
assert new.read("fused/_plain.so") == old.read("fused/_plain.so")
assert new.read("fused-1.0.dist-info/WHEEL") == old.read("fused-1.0.dist-info/WHEEL")
assert new.getinfo("fused/_multi.so").external_attr >> 16 & 0o777 == 0o755
assert new.getinfo("fused/_multi.so").file_size < old.getinfo("fused/_multi.so").file_size
PY
python3 -m venv "$work/venv" >/dev/null || fail "python3 -m venv"
"$work/venv/bin/pip" install -q --no-deps --no-index "$sw" || fail "pip install of the slimmed wheel"
"$work/venv/bin/python" -c "import fused; fused.lib.tailor_fixture_check" || fail "the installed slimmed module does not load"
"$work/venv/bin/pip" uninstall -y -q fused || fail "pip uninstall"
[ -z "$(find "$work/venv/lib" -path '*fused*' 2>/dev/null)" ] || fail "pip uninstall left: $(find "$work/venv/lib" -path '*fused*')"
echo "ok: wheel slimmed ($(stat -c %s "$whl") -> $(stat -c %s "$sw") bytes), RECORD verifies, installs, loads, uninstalls"

# 5. An environment, in place: RECORD rows match the files, pip check passes, uninstall is clean.
"$work/venv/bin/pip" install -q --no-deps --no-index "$whl" || fail "pip install of the original wheel"
"$T" slim "$work/venv" --keep sm_80 > "$work/env_refused.txt" 2>&1 && fail "an environment without --in-place should be refused"
# Another slim holds the environment (its folder's flock): this one waits, then runs.
if command -v flock >/dev/null; then
  flock "$work/venv" sleep 2 & holder=$!
  sleep 0.3
fi
"$T" slim "$work/venv" --keep sm_80 --in-place > "$work/env.txt" 2> "$work/env.err" || fail "slim venv exit $?: $(cat "$work/env.txt" "$work/env.err")"
if command -v flock >/dev/null; then
  wait $holder
  grep -q "waiting for another tailor slim of" "$work/env.err" || fail "no waiting message: $(cat "$work/env.err")"
fi
site=$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
[ "$(targets_of "$site/fused/_multi.so")" = "sm_80" ] || fail "venv library kept $(targets_of "$site/fused/_multi.so")"
python3 - "$site" <<'PY' || fail "RECORD after slimming the venv"
import sys, os, csv, hashlib, base64
site = sys.argv[1]
di = os.path.join(site, "fused-1.0.dist-info")
rows = list(csv.reader(open(os.path.join(di, "RECORD"))))
paths = [r[0] for r in rows]
assert "fused-1.0.dist-info/tailor-slim.json" in paths, paths
for path, h, size in rows:
    if not h:
        continue
    data = open(os.path.join(site, path), 'rb').read()
    want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode().rstrip('=')
    assert h == want and int(size) == len(data), (path, h, want, size, len(data))
PY
"$work/venv/bin/pip" check >/dev/null || fail "pip check after slimming"
"$work/venv/bin/python" -c "import fused; fused.lib.tailor_fixture_check" || fail "the slimmed venv's module does not load"
# A second run finds nothing left to remove and rewrites nothing.
sum=$(sha256sum < "$site/fused/_multi.so")
"$T" slim "$work/venv" --keep sm_80 --in-place --json > "$work/env2.json" || fail "second slim of the venv"
[ "$(json_get "$work/env2.json" "sorted({f['outcome'] for f in j['inputs'][0]['files']})")" = "['unchanged']" ] ||
  fail "second slim: $(cat "$work/env2.json")"
[ "$(sha256sum < "$site/fused/_multi.so")" = "$sum" ] || fail "second slim rewrote an already slimmed library"
# For a GPU it has nothing for, the slimmed venv: the emptied line says an earlier slim took
# the code out (not "as it did for the originals"), and a warning says nothing is left.
"$T" slim "$work/venv" --keep 7.0 --dry-run > "$work/env3.txt" 2> "$work/env3.err" || fail "dry run on the slimmed venv"
grep -q "as it did before this slim (an earlier tailor slim, which tailor-slim.json records, took that code out of the original files)" "$work/env3.txt" \
  || fail "the emptied line of a slimmed venv: $(grep emptied "$work/env3.txt")"
grep -q "^tailor slim: warning: .*: nothing is left for .*it runs no CUDA code on 7.0" "$work/env3.err" \
  || fail "no warning that nothing is left: $(cat "$work/env3.err")"
"$work/venv/bin/pip" uninstall -y -q fused || fail "pip uninstall after slimming"
[ -z "$(find "$work/venv/lib" -path '*fused*' 2>/dev/null)" ] || fail "uninstall left: $(find "$work/venv/lib" -path '*fused*')"
no_temps "$site/fused" 2>/dev/null
echo "ok: venv slimmed in place; RECORD matches, pip check passes, uninstall is clean"

# 6. Hostile inputs: one error line, exit 2, nothing written, the input unchanged.
refuse() {  # refuse NAME ARGS...: exit 2, one stderr line, no output files
  local name=$1; shift
  rm -rf "$work/hout"; mkdir -p "$work/hout"
  timeout 20 "$T" slim "$@" --keep sm_80 --out "$work/hout" > "$work/h.out" 2> "$work/h.err"
  local rc=$?
  [ "$rc" = 2 ] || fail "$name: exit $rc, want 2 ($(cat "$work/h.err"))"
  [ "$(wc -l < "$work/h.err")" = 1 ] || fail "$name: stderr is not one line: $(cat "$work/h.err")"
  [ -z "$(ls -A "$work/hout")" ] || fail "$name: left $(ls -A "$work/hout")"
  echo "ok: $name refused: $(cat "$work/h.err")"
}
head -c 700000 "$in" > "$work/truncated.so"
refuse "a truncated library" "$work/truncated.so"
python3 - "$in" "$work/badfat.so" <<'PY'
import sys, struct
data = bytearray(open(sys.argv[1], 'rb').read())
# The first entry header of the first container: give it a payload size past the container.
off = data.find(struct.pack('<I', 0xBA55ED50))
struct.pack_into('<Q', data, off + 16 + 8, 1 << 40)
open(sys.argv[2], 'wb').write(data)
PY
refuse "a fatbin entry running past its container" "$work/badfat.so"
mkfifo "$work/fifo.so"
refuse "a FIFO" "$work/fifo.so"
python3 - "$whl" "$work/cut-1.0-cp311-cp311-linux_x86_64.whl" <<'PY'
import sys
data = open(sys.argv[1], 'rb').read()
open(sys.argv[2], 'wb').write(data[: len(data) // 2])
PY
refuse "a truncated wheel" "$work/cut-1.0-cp311-cp311-linux_x86_64.whl"
python3 - "$whl" "$work/badfat.so" "$work/bad-1.0-cp311-cp311-linux_x86_64.whl" <<'PY'
import sys, zipfile
src, bad, out = sys.argv[1:4]
with zipfile.ZipFile(src) as zi, zipfile.ZipFile(out, 'w', zipfile.ZIP_DEFLATED) as zo:
    for info in zi.infolist():
        data = open(bad, 'rb').read() if info.filename == 'fused/_multi.so' else zi.read(info)
        zo.writestr(info.filename.replace('fused-1.0', 'bad-1.0'), data)
PY
refuse "a wheel holding a damaged library" "$work/bad-1.0-cp311-cp311-linux_x86_64.whl"
refuse "a missing file" "$work/nope.so"
cp -p "$work/badfat.so" "$work/badfat2.so"; sum=$(sha256sum < "$work/badfat2.so")
"$T" slim "$work/badfat2.so" --keep sm_80 --in-place 2>/dev/null && fail "in place on a damaged file should fail"
[ "$(sha256sum < "$work/badfat2.so")" = "$sum" ] || fail "a failed in-place run changed its input"
no_temps "$work"
"$T" slim "$in" --keep sm_99x --out "$work/hout" 2> "$work/h.err" && fail "a bad --keep should fail"
[ "$(wc -l < "$work/h.err")" = 1 ] || fail "bad --keep: $(cat "$work/h.err")"
"$T" slim "$in" --keep sm_80 2> "$work/h.err" && fail "no --out/--in-place/--dry-run should fail"
grep -q "say where the result goes" "$work/h.err" || fail "missing destination message: $(cat "$work/h.err")"
echo "ok: hostile inputs refused, inputs unchanged, nothing left behind"
echo "PASS"
