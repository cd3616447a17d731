#!/usr/bin/env bash
# Device code shipped as files of its own (issue 42): a wheel of cubins (sm_75, sm_90), PTX
# and a fatbin file made here by nvcc from one tiny kernel. inspect counts each target with
# its entries, the verdicts judge the folder like library code (--gpu T4 runs from the
# sm_75 cubin, --exact sees every target), a per-file manylinux says "not a host library",
# and a truncated cubin is one error line, exit 2.
set -uo pipefail
command -v nvcc >/dev/null || { echo "skip: nvcc not found"; exit 77; }
command -v python3 >/dev/null || { echo "skip: python3 not found"; exit 77; }
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

cat >k.cu <<'CU'
extern "C" __global__ void add(float* x, float y) { x[threadIdx.x] += y; }
CU
# Four small compiles, one arch each (the fatbin: SASS and PTX of sm_80).
nvcc -cubin -arch=sm_75 -o k75.cubin k.cu || fail "nvcc -cubin sm_75"
nvcc -cubin -arch=sm_90 -o k90.cubin k.cu || fail "nvcc -cubin sm_90"
nvcc -ptx -arch=compute_86 -o k.ptx k.cu || fail "nvcc -ptx"
nvcc -fatbin -gencode arch=compute_80,code='[sm_80,compute_80]' -o k.fatbin k.cu ||
  fail "nvcc -fatbin"
# The kinds are told by content: the PTX file has no .ptx suffix in the wheel.
make_wheel kernels-1.0-py3-none-any.whl k75.cubin:kernels/bin/add_75.cubin \
  k90.cubin:kernels/bin/add_90.cubin k.ptx:kernels/bin/add.txt \
  k.fatbin:kernels/bin/add.fatbin k.cu:kernels/add.cu

"$TAILOR" inspect kernels-1.0-py3-none-any.whl >out.txt 2>err.txt
expect_eq "inspect of a wheel of device files exits 0" "$?" 0
expect_grep "text counts 4 device code files by kind" \
  "device code files  4 (2 cubin, 1 PTX, 1 fatbin" out.txt
for row in "sm_75 .* 1 file  .* 1 entries" "sm_80 .* 1 file  .* 1 entries" \
  "sm_90 .* 1 file  .* 1 entries" "compute_80 .* 1 file  .* 1 entries" \
  "compute_86 .* 1 file  .* 1 entries"; do
  expect_grep "text: kernels/bin/ $row" "kernels/bin/ *$row" out.txt
done
expect_eq "one line per folder and target (5)" "$(grep -c '^    kernels/bin/' out.txt)" 5

"$TAILOR" inspect --json kernels-1.0-py3-none-any.whl >out.json 2>err.txt
expect_eq "--json exits 0" "$?" 0
expect_eq "json: device files by kind" \
  "$(json_get out.json "sorted(f['kind'] for f in j['wheels'][0]['device_files'])")" \
  "['cubin', 'cubin', 'fatbin', 'ptx']"
expect_eq "json: no device file invents a manylinux tag" \
  "$(json_get out.json "sorted(set(f['manylinux'] for f in j['wheels'][0]['device_files']))")" \
  "['not a host library']"
expect_eq "json: wheel targets" "$(json_get out.json "j['wheels'][0]['targets']")" \
  "['sm_75', 'sm_80', 'compute_80', 'compute_86', 'sm_90']"
expect_eq "json: no library" "$(json_get out.json "len(j['wheels'][0]['libraries'])")" 0

"$TAILOR" inspect --gpu T4 kernels-1.0-py3-none-any.whl >out.txt 2>err.txt
expect_eq "--gpu T4 passes" "$?" 0
expect_grep "--gpu T4 runs the sm_75 cubin natively" "PASS.*kernels/bin/.*sm_75" out.txt

"$TAILOR" inspect --exact sm_75,sm_80,sm_90,compute_80,compute_86 \
  kernels-1.0-py3-none-any.whl >out.txt 2>err.txt
expect_eq "--exact with every target passes" "$?" 0
"$TAILOR" inspect --exact sm_75,sm_90 kernels-1.0-py3-none-any.whl >out.txt 2>err.txt
expect_eq "--exact without the fatbin and PTX targets fails" "$?" 1
expect_grep "--exact names the extra targets" "compute_86" out.txt

"$TAILOR" inspect --html page.html kernels-1.0-py3-none-any.whl >/dev/null 2>err.txt
expect_eq "--html exits 0" "$?" 0
expect_grep "the page has the device code files" "Device code files per folder" page.html

# Loose files and a folder of them, as in an environment.
mkdir -p env/pkg && cp k75.cubin k.fatbin env/pkg/ && cp k.ptx env/pkg/kernel.ptx
"$TAILOR" inspect --json env >env.json 2>err.txt
expect_eq "a folder of device files exits 0" "$?" 0
expect_eq "folder: targets" "$(json_get env.json "j['targets']")" \
  "['sm_75', 'sm_80', 'compute_80', 'compute_86']"
"$TAILOR" inspect --gpu T4 k75.cubin >out.txt 2>err.txt
expect_eq "a cubin given directly passes --gpu T4" "$?" 0

# Scale: 16,000 cubins (8 KiB each, stored: a 128 MiB wheel) in 16 folders. The summary is a
# line per folder and target, and the pass stays within inspect's memory bound (128 MiB;
# reading every local header used to map the whole archive through fault-around).
python3 - <<'PY'
import base64, hashlib, os, zipfile
src = open("k75.cubin", "rb").read()
rows = []
b64 = lambda d: base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b"=").decode()
with zipfile.ZipFile("many-1.0-py3-none-any.whl", "w", zipfile.ZIP_STORED) as z:
    for i in range(16000):
        data = src + os.urandom(max(0, 8192 - len(src)))  # padding after the cubin's own bytes
        name = f"many/cubins/d{i % 16:02d}/k{i:05d}.cubin"
        z.writestr(name, data)
        rows.append(f"{name},sha256={b64(data)},{len(data)}")
    wheel = b"Wheel-Version: 1.0\nTag: py3-none-any\n"
    z.writestr("many-1.0.dist-info/WHEEL", wheel)
    rows += [f"many-1.0.dist-info/WHEEL,sha256={b64(wheel)},{len(wheel)}", "many-1.0.dist-info/RECORD,,"]
    z.writestr("many-1.0.dist-info/RECORD", "\n".join(rows) + "\n")
PY
/usr/bin/time -f '%M' -o rss.txt "$TAILOR" inspect --gpu T4 many-1.0-py3-none-any.whl >out.txt 2>err.txt
expect_eq "16,000 cubins: --gpu T4 passes" "$?" 0
expect_grep "16,000 cubins are counted" "device code files  16000 (16000 cubin" out.txt
expect_eq "16,000 cubins: one line per folder (16)" "$(grep -c '^    many/cubins/d[0-9]*/ *sm_75 *1000 files' out.txt)" 16
rss=$(tail -1 rss.txt)
if grep -q __asan_init "$TAILOR" || [ "$rss" -lt 131072 ]; then
  ok "16,000 cubins: peak RSS ${rss} KiB, under 128 MiB"
else
  bad "16,000 cubins: peak RSS ${rss} KiB, over 128 MiB"
fi

# Hostile: a cubin cut in half (its section headers lie past the end).
python3 -c "import sys; d=open('k75.cubin','rb').read(); open('cut.cubin','wb').write(d[:len(d)//2])"
make_wheel cut-1.0-py3-none-any.whl cut.cubin:cut/add.cubin
# And one that lies about a section's size (the toolkit note's sh_size: 1 TiB).
python3 - <<'PY'
import struct
d = bytearray(open("k75.cubin", "rb").read())
shoff, shnum, shstrndx = struct.unpack_from("<Q", d, 0x28)[0], d[0x3c], d[0x3e]
names_at = struct.unpack_from("<Q", d, shoff + shstrndx * 64 + 24)[0]
for i in range(shnum):
    name = struct.unpack_from("<I", d, shoff + i * 64)[0]
    if d[names_at + name:].startswith(b".note.nv.tkinfo\0"):
        struct.pack_into("<Q", d, shoff + i * 64 + 32, 1 << 40)
open("lie.cubin", "wb").write(d)
PY
for input in cut.cubin cut-1.0-py3-none-any.whl lie.cubin; do
  "$TAILOR" inspect "$input" >out.txt 2>err.txt
  rc=$?
  expect_eq "$input: exit 2" "$rc" 2
  expect_eq "$input: one error line" "$(wc -l <err.txt)" 1
  expect_grep "$input: the error names the file" "^tailor: error: .*\(cut\|lie\).*0x" err.txt
  expect_eq "$input: nothing on stdout" "$(wc -c <out.txt)" 0
done
exit $fail
