#!/usr/bin/env bash
# tailor inspect resolves needed libraries as the loader does: a wheel whose libraries
# reach (RUNPATH $ORIGIN/../lib) or cannot reach (RUNPATH $ORIGIN) a sibling, a
# build-machine RUNPATH, the same libraries installed in a folder, and a library with a
# hostile RUNPATH (4,000 entries) and 2,000 needs, which must finish with one note.
set -uo pipefail
fixtures="$TAILOR_BINARY_DIR/fixtures"
for f in libsibling.so reach_sibling.so lost_sibling.so build_machine.so; do
  [ -f "$fixtures/$f" ] || { echo "skip: fixture $f not built (target tailor_fixtures)"; exit 77; }
done
command -v python3 >/dev/null || { echo "skip: python3 not found"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"  # fail, make_wheel

make_wheel --stored "$work/demo-1.0-cp311-cp311-manylinux_2_17_x86_64.whl" \
  "$fixtures/libsibling.so:demo/lib/libsibling.so" "$fixtures/reach_sibling.so:demo/bin/reach.so" \
  "$fixtures/lost_sibling.so:demo/bin/lost.so" "$fixtures/build_machine.so:demo/bin/b.so" || fail "could not make the wheel"
whl="$work/demo-1.0-cp311-cp311-manylinux_2_17_x86_64.whl"

"$TAILOR" inspect --all "$whl" > "$work/t.txt" 2>&1
grep -q "libsibling.so (bundled: demo/lib/libsibling.so through RUNPATH \$ORIGIN/../lib)" "$work/t.txt" \
  || fail "reach: $(cat "$work/t.txt")"
grep -q "libsibling.so (not found: a file of that name is in the wheel at demo/lib/libsibling.so, but no RUNPATH reaches it)" "$work/t.txt" \
  || fail "lost: $(cat "$work/t.txt")"
grep -q "WARNING    RUNPATH entry '/project/build/lib' is a folder of the build machine" "$work/t.txt" \
  || fail "build machine: $(cat "$work/t.txt")"
grep -q "WARNING    RUNPATH entry '\$LIB/extra' uses \$LIB" "$work/t.txt" || fail "\$LIB: $(cat "$work/t.txt")"
grep -q "claims manylinux_2_17_x86_64 but the libraries fit no manylinux policy (demo/bin/lost.so: needs libsibling.so, not found" "$work/t.txt" \
  || fail "claim: $(cat "$work/t.txt")"

"$TAILOR" inspect --json "$whl" > "$work/j.json" || true
python3 - "$work/j.json" <<'PY' || fail "json"
import json, sys
w = json.load(open(sys.argv[1]))["wheels"][0]
libs = {l["path"]: l for l in w["libraries"]}
lost = libs["demo/bin/lost.so"]["needed"][0]
assert lost["kind"] == "not-found" and "demo/lib/libsibling.so" in lost["note"], lost
reach = libs["demo/bin/reach.so"]["needed"][0]
assert reach["kind"] == "bundled" and reach["resolved"] == "demo/lib/libsibling.so", reach
assert any("/project/build/lib" in x for x in libs["demo/bin/b.so"]["loader_warnings"])
PY

# Installed: only bin/ given, the sibling resolves on disk and is called by where it is.
mkdir -p "$work/site/demo/bin" "$work/site/demo/lib"
cp "$fixtures/libsibling.so" "$work/site/demo/lib/"
cp "$fixtures/reach_sibling.so" "$work/site/demo/bin/reach.so"
"$TAILOR" inspect "$work/site/demo/bin" > "$work/d.txt" 2>&1
grep -q "libsibling.so (found at $work/site/demo/bin/../lib/libsibling.so through RUNPATH \$ORIGIN/../lib)\|libsibling.so (found at $work/site/demo/lib/libsibling.so through RUNPATH \$ORIGIN/../lib)" "$work/d.txt" \
  || fail "installed: $(cat "$work/d.txt")"

# A hostile RUNPATH: 4,000 distinct entries (under the ELF reader's 64 KiB cap on one path
# list; a longer one is refused there), 2,000 needs. Bounded: one note, and it ends.
python3 - "$work/hostile.so" <<'PY'
import struct, sys
dynstr = bytearray(b'\0')
def add(s):
    off = len(dynstr); dynstr.extend(s.encode() + b'\0'); return off
dyn = [(1, add('libneed%d.so' % i)) for i in range(2000)]
dyn += [(29, add(':'.join('$ORIGIN/%x' % i for i in range(4000)))), (0, 0)]
dynamic = b''.join(struct.pack('<qQ', t, v) for t, v in dyn)
shstr = b'\0.dynstr\0.dynamic\0.shstrtab\0'
o1 = 64; o2 = (o1 + len(dynstr) + 7) // 8 * 8; o3 = o2 + len(dynamic); o4 = (o3 + len(shstr) + 7) // 8 * 8
eh = b'\x7fELF' + bytes([2, 1, 1, 0]) + bytes(8) + struct.pack('<HHIQQQIHHHHHH', 3, 62, 1, 0, 0, o4, 0, 64, 0, 0, 64, 4, 3)
sh = lambda n, t, o, s, l=0, e=0: struct.pack('<IIQQQQIIQQ', n, t, 2, 0, o, s, l, 0, 1, e)
shdrs = bytes(64) + sh(1, 3, o1, len(dynstr)) + sh(9, 6, o2, len(dynamic), 1, 16) + sh(18, 3, o3, len(shstr))
img = bytearray(o4 + len(shdrs)); img[0:64] = eh; img[o1:o1+len(dynstr)] = dynstr
img[o2:o2+len(dynamic)] = dynamic; img[o3:o3+len(shstr)] = shstr; img[o4:] = shdrs
open(sys.argv[1], 'wb').write(img)
PY
timeout 60 "$TAILOR" inspect "$work/hostile.so" > "$work/h.txt" 2>&1
rc=$?
[ $rc -eq 124 ] && fail "hostile RUNPATH did not finish in 60 s"
[ "$(grep -c "RUNPATH has 4000 entries (4000 distinct); only the first 256 distinct entries are searched" "$work/h.txt")" = 1 ] \
  || fail "hostile note: $(head -c 2000 "$work/h.txt")"
[ "$(wc -c < "$work/h.txt")" -lt 400000 ] || fail "hostile output is not bounded: $(wc -c < "$work/h.txt") bytes"
echo "ok"
