#!/usr/bin/env bash
# Hostile archives: each must give exactly one error line naming the file and an offset,
# exit 2, print nothing on stdout, write nothing, and stay within a small memory limit
# (a 1 GiB zip bomb must be refused, not inflated).
set -uo pipefail
# An ASan build reserves terabytes of address space: no ulimit -v for it.
sanitized=0; grep -q __asan_init "$TAILOR" && sanitized=1
command -v python3 >/dev/null || { echo "skip: python3 not found"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"  # fail
cd "$work" || exit 1

python3 - <<'PY'
import zipfile, struct
def wheel(path, members):
    with zipfile.ZipFile(path, 'w', zipfile.ZIP_DEFLATED) as z:
        z.writestr('demo-1.0.dist-info/WHEEL', 'Wheel-Version: 1.0\nTag: py3-none-any\n')
        for name, data in members:
            z.writestr(zipfile.ZipInfo(name), data)
wheel('dotdot-1.0-py3-none-any.whl', [('../evil.py', b'x')])
wheel('absolute-1.0-py3-none-any.whl', [('/etc/evil.py', b'x')])
wheel('good-1.0-py3-none-any.whl', [('good/a.py', b'print(1)\n' * 100)])
data = open('good-1.0-py3-none-any.whl', 'rb').read()
open('truncated-1.0-py3-none-any.whl', 'wb').write(data[: len(data) // 2])
# Central directory entry 0's local header offset points past the end of the file.
b = bytearray(data)
cd = b.find(b'PK\x01\x02')
struct.pack_into('<I', b, cd + 42, len(b) + 1000)
open('pastend-1.0-py3-none-any.whl', 'wb').write(b)
# 1 GiB of zeros, about 1 MiB deflated.
with zipfile.ZipFile('bomb-1.0-py3-none-any.whl', 'w', zipfile.ZIP_DEFLATED) as z:
    z.writestr('bomb-1.0.dist-info/WHEEL', 'Wheel-Version: 1.0\nTag: py3-none-any\n')
    with z.open('bomb/zeros.bin', 'w', force_zip64=True) as f:
        chunk = bytes(1 << 24)
        for _ in range(64):
            f.write(chunk)
PY
before=$(find . | sort)
for w in dotdot absolute truncated pastend bomb; do
  f="$work/$w-1.0-py3-none-any.whl"
  ( [ "$sanitized" = 1 ] || ulimit -v 1000000; "$TAILOR" inspect "$f" >out.txt 2>err.txt ); rc=$?
  [ $rc -eq 2 ] || fail "$w: exit $rc, expected 2; stderr: $(cat err.txt)"
  [ ! -s out.txt ] || fail "$w: printed to stdout: $(head -3 out.txt)"
  [ "$(wc -l <err.txt)" -eq 1 ] || fail "$w: expected one error line, got: $(cat err.txt)"
  grep -q "^tailor: error: $f: .*offset 0x" err.txt || fail "$w: error does not name file and offset: $(cat err.txt)"
  echo "$w: $(cat err.txt)"
  rm -f out.txt err.txt
done
[ "$(find . | sort)" = "$before" ] || fail "files were written: $(find .)"
"$TAILOR" inspect "$work/good-1.0-py3-none-any.whl" >/dev/null; rc=$?
[ $rc -ne 2 ] || fail "a sound archive (without RECORD) was refused as bad input"
echo "ok"
