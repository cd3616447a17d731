#!/usr/bin/env bash
# Wheels that are cheap to store but expensive to read: a thousand 16 MiB members of zeros
# in a 16 MB archive, a million empty members, a 16 MiB WHEEL of newlines, a METADATA of
# three million lines, a RECORD of four million rows. Each must be refused with exactly
# one error line, exit 2, nothing on stdout, and a peak RSS under 128 MB (measured by
# /usr/bin/time). Wall times are printed, not asserted.
set -uo pipefail
command -v python3 >/dev/null || { echo "skip: python3 not found"; exit 77; }
[ -x /usr/bin/time ] || { echo "skip: /usr/bin/time not found (apt-get install time)"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"  # fail
cd "$work" || exit 1

python3 - <<'PY' || fail "could not write the test wheels"
import struct, zlib, zipfile
di = 'demo-1.0.dist-info'
WHEEL = b'Wheel-Version: 1.0\nTag: py3-none-any\n'

def raw_zip(path, members):
    """members: (name, method, crc, raw bytes, uncompressed size); one shared raw stream
    is written once per member (it is the same bytes each time, not overlapping)."""
    with open(path, 'wb') as f:
        cd = bytearray()
        off = 0
        for name, method, crc, raw, size in members:
            h = struct.pack('<IHHHHHIIIHH', 0x04034b50, 20, 0, method, 0, 0, crc, len(raw), size, len(name), 0) + name
            f.write(h); f.write(raw)
            cd += struct.pack('<IHHHHHHIIIHHHHHII', 0x02014b50, 20, 20, 0, method, 0, 0, crc, len(raw), size,
                              len(name), 0, 0, 0, 0, 0, off) + name
            off += len(h) + len(raw)
        n = len(members)
        f.write(cd)
        z64 = struct.pack('<IQHHIIQQQQ', 0x06064b50, 44, 45, 45, 0, 0, n, n, len(cd), off)
        loc = struct.pack('<IIQI', 0x07064b50, 0, off + len(cd), 1)
        f.write(z64 + loc + struct.pack('<IHHHHIIH', 0x06054b50, 0, 0, 0xffff, 0xffff, 0xffffffff, 0xffffffff, 0))

def text(name, data):
    return (name.encode(), 0, zlib.crc32(data), data, len(data))

zeros = bytes(16 << 20)
c = zlib.compressobj(9, zlib.DEFLATED, -15)
raw = c.compress(zeros) + c.flush()
raw_zip('zeros-1.0-py3-none-any.whl',
        [text(di + '/WHEEL', WHEEL)] + [(b'z/%04d.bin' % i, 8, zlib.crc32(zeros), raw, len(zeros)) for i in range(1000)])
empty = (0, zlib.crc32(b''), b'', 0)
raw_zip('members-1.0-py3-none-any.whl', [text(di + '/WHEEL', WHEEL)] + [(b'm/%07d' % i,) + empty for i in range(1000000)])

def wheel(path, wheel=WHEEL, meta=b'Name: demo\nVersion: 1.0\n', record=b''):
    with zipfile.ZipFile(path, 'w', zipfile.ZIP_DEFLATED) as z:
        z.writestr(di + '/WHEEL', wheel)
        z.writestr(di + '/METADATA', meta)
        z.writestr(di + '/RECORD', record)
wheel('newlines-1.0-py3-none-any.whl', wheel=b'\n' * (16 << 20))
# Three million lines stay under the per-member ratio floor, so the METADATA cap itself
# answers; four million would be refused as a zip bomb first.
wheel('metadata-1.0-py3-none-any.whl', meta=b'Name: demo\n' + b'X: y\n' * 3000000)
wheel('record-1.0-py3-none-any.whl', record=b'a,,\n' * 4000000)
PY

check() {  # name, expected text in the error
  local f="$work/$1-1.0-py3-none-any.whl" want=$2 rc rss wall
  /usr/bin/time -f '%e %M' -o time.txt "$TAILOR" inspect "$f" >out.txt 2>err.txt; rc=$?
  read -r wall rss < <(tail -1 time.txt)
  [ "$rc" -eq 2 ] || fail "$1: exit $rc, expected 2 ($(cat err.txt))"
  [ ! -s out.txt ] || fail "$1: printed on stdout: $(head -c 300 out.txt)"
  [ "$(wc -l <err.txt)" -eq 1 ] || fail "$1: expected one error line, got: $(head -c 600 err.txt)"
  grep -q "^tailor: error: .*$1-1.0-py3-none-any.whl" err.txt || fail "$1: error does not name the wheel: $(cat err.txt)"
  grep -qF "$want" err.txt || fail "$1: error lacks '$want': $(cat err.txt)"
  # (ASan's shadow memory and quarantine count in RSS: the bound is for the real build.)
  grep -q __asan_init "$TAILOR" || [ "$rss" -lt 131072 ] || fail "$1: peak RSS ${rss} KiB, over 128 MiB"
  echo "ok: $1 ($(du -h "$f" | cut -f1)): ${wall} s, ${rss} KiB peak RSS: $(cut -c1-160 err.txt)"
}
check zeros "refused as a zip bomb before inflating anything"
check members "1000001 entries exceed the limit of 200000"
check newlines "WHEEL: 16777216 bytes, over the limit of 1048576"
check metadata "METADATA: 15000011 bytes, over the limit of 8388608"
check record "RECORD: 16000000 bytes, over the limit of"
echo "PASS"
