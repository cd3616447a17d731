#!/usr/bin/env bash
# tailor slim --device-files (issue 42): a wheel of device code files made here by nvcc from
# one tiny kernel (cubins for sm_75 and sm_90, PTX for compute_75, a fatbin file with sm_80
# SASS and compute_75 PTX, one with sm_90 SASS only), slimmed for a T4 (7.5): the sm_90
# cubin and the sm_90 fatbin go, the sm_75 cubin, the PTX and the fatbin whose PTX JITs on
# 7.5 stay; RECORD lists exactly the members with their hashes, pip installs the wheel and
# pip check passes; an environment is slimmed in place the same way; without the flag
# nothing device-file related is read or removed; a package's checksum manifest stays
# byte for byte; a truncated cubin, or a cubin named as a library, is one error line, exit 2.
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
nvcc -cubin -arch=sm_75 -o k75.cubin k.cu || fail "nvcc -cubin sm_75"
nvcc -cubin -arch=sm_90 -o k90.cubin k.cu || fail "nvcc -cubin sm_90"
nvcc -ptx -arch=compute_75 -o k.ptx k.cu || fail "nvcc -ptx"
nvcc -fatbin -gencode arch=compute_75,code='[sm_80,compute_75]' -o k.fatbin k.cu ||
  fail "nvcc -fatbin sm_80+compute_75"
nvcc -fatbin -gencode arch=compute_90,code=sm_90 -o k90.fatbin k.cu || fail "nvcc -fatbin sm_90"
echo 'KERNELS = "bin"' >init.py
whl=kernels-1.0-py3-none-any.whl
make_wheel "$whl" init.py:kernels/__init__.py k75.cubin:kernels/bin/add_75.cubin \
  k90.cubin:kernels/bin/add_90.cubin k.ptx:kernels/bin/add.txt k.fatbin:kernels/bin/add.fatbin \
  k90.fatbin:kernels/bin/add_90.fatbin

# RECORD lists every member but itself, once, with its sha256 and size.
record_matches() {
  python3 - "$1" <<'PY'
import base64, hashlib, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
record = [n for n in z.namelist() if n.endswith(".dist-info/RECORD")][0]
rows = {}
for line in z.read(record).decode().splitlines():
    path, digest, size = line.rsplit(",", 2)
    rows[path] = (digest, size)
assert rows.pop(record) == ("", ""), "RECORD's own row"
assert sorted(rows) == sorted(n for n in z.namelist() if n != record), (sorted(rows), z.namelist())
for n, (digest, size) in rows.items():
    data = z.read(n)
    want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    assert digest == want and size == str(len(data)), n
PY
}
members() { python3 -c 'import sys,zipfile; print(" ".join(sorted(n for n in zipfile.ZipFile(sys.argv[1]).namelist() if "dist-info" not in n)))' "$1"; }

# --no-device-files: no device file is read or removed, and the output says nothing of them.
"$TAILOR" slim "$whl" --gpu T4 --no-device-files --out off >off.txt 2>err.txt
expect_eq "--no-device-files: exit 0" "$?" 0
expect_eq "--no-device-files: every member stays" "$(members off/$whl)" "$(members $whl)"
expect_eq "--no-device-files: no device files line" "$(grep -c 'device files' off.txt)" 0
"$TAILOR" slim "$whl" --gpu T4 --no-device-files --out off2 --json >off.json 2>err.txt
expect_eq "--no-device-files: json says so" "$(json_get off.json "j['device_files']")" False

# With it, for a T4.
"$TAILOR" slim "$whl" --gpu T4 --out on >on.txt 2>err.txt
expect_eq "--device-files --gpu T4: exit 0" "$?" 0
expect_eq "--device-files: what stays" "$(members on/$whl)" \
  "kernels/__init__.py kernels/bin/add.fatbin kernels/bin/add.txt kernels/bin/add_75.cubin"
if record_matches "on/$whl"; then ok "RECORD lists exactly the members, hashes right"; else bad "RECORD"; fi
"$TAILOR" inspect "on/$whl" >/dev/null 2>err.txt
expect_eq "inspect verifies the slimmed wheel's RECORD" "$?" 0
expect_grep "text: the package's totals" "^    kernels  *3 (.*)  *2 (.*)$" on.txt
expect_grep "text: sm_90 removed from two files" "^      sm_90  *-  *2 (" on.txt
expect_grep "text: sm_75 kept" "^      sm_75  *1 (.*)  *-$" on.txt
expect_grep "text: why files stayed" "note: kernels: kept: runs on 7.5" on.txt
"$TAILOR" slim "$whl" --gpu T4 --device-files --out on2 --json >on.json 2>err.txt
expect_eq "json: files kept / removed" \
  "$(json_get on.json "[(p['package'], p['files_kept'], p['files_removed']) for p in j['inputs'][0]['device_files']]")" \
  "[('kernels', 3, 2)]"
expect_eq "json: the removed files" "$(json_get on.json "j['inputs'][0]['device_files'][0]['removed']")" \
  "['kernels/bin/add_90.cubin', 'kernels/bin/add_90.fatbin']"
expect_eq "json: per target" \
  "$(json_get on.json "[(t['target'], t['files_kept'], t['files_removed']) for t in j['inputs'][0]['device_files'][0]['targets']]")" \
  "[('sm_75', 1, 0), ('compute_75', 2, 0), ('sm_80', 1, 0), ('sm_90', 0, 2)]"
expect_eq "the marker counts what went" \
  "$(python3 -c 'import json,sys,zipfile; m=json.loads(zipfile.ZipFile(sys.argv[1]).read("kernels-1.0.dist-info/tailor-slim.json")); print(m["device_files"][0]["files_removed"])' "on/$whl")" 2
"$TAILOR" slim "$whl" --gpu T4 --device-files --dry-run >dry.txt 2>err.txt
expect_eq "--dry-run exits 0" "$?" 0
expect_grep "--dry-run says what would go" "would remove" dry.txt
# Its size estimate counts the device files that would go: close to what the real slim
# wrote (the issue's flashinfer-cubin dry run said "436.8 MiB -> 436.8 MiB").
"$TAILOR" slim "$whl" --gpu T4 --device-files --dry-run --json >dry.json 2>err.txt
python3 - dry.json "on2/$whl" "$whl" <<'PY' && ok "--dry-run estimates the wheel's size with the device files gone" || bad "--dry-run estimate"
import json, os, sys
d = json.load(open(sys.argv[1]))["inputs"][0]
real, before = os.path.getsize(sys.argv[2]), os.path.getsize(sys.argv[3])
est = d["bytes_after"]
print(f"    before {before}, estimate {est}, written {real}")
# (within 1 KiB here: the written wheel also gains its tailor-slim.json, a few hundred bytes,
# which matters only in a wheel this small)
assert est < before and abs(est - real) <= max(0.02 * before, 1024), (before, est, real)
PY

python3 -m venv venv >/dev/null || fail "python3 -m venv"
venv/bin/pip install -q --no-deps --no-index "on/$whl" >/dev/null 2>&1
expect_eq "pip installs the slimmed wheel" "$?" 0
venv/bin/pip check >/dev/null 2>&1
expect_eq "pip check passes" "$?" 0
venv/bin/pip uninstall -y -q kernels >/dev/null 2>&1
expect_eq "pip uninstalls it" "$?" 0

# An environment, in place.
venv/bin/pip install -q --no-deps --no-index "$whl" >/dev/null 2>&1 || fail "pip install of the original"
site=$(echo venv/lib/python3*/site-packages)
"$TAILOR" slim venv --gpu T4 --device-files --in-place >env.txt 2>err.txt
expect_eq "environment: exit 0" "$?" 0
expect_eq "environment: what stays" "$(cd "$site/kernels/bin" && ls | tr '\n' ' ')" \
  "add.fatbin add.txt add_75.cubin "
if grep -q 'add_90' "$site"/kernels-1.0.dist-info/RECORD; then bad "environment: RECORD still lists add_90"; else
  ok "environment: RECORD lost the removed files' rows"; fi
expect_eq "environment: the marker counts kept and removed" \
  "$(json_get "$site/kernels-1.0.dist-info/tailor-slim.json" "[(p['files_kept'], p['files_removed']) for p in j['device_files']]")" \
  "[(3, 2)]"
venv/bin/pip check >/dev/null 2>&1
expect_eq "environment: pip check passes" "$?" 0
venv/bin/pip uninstall -y -q kernels >/dev/null 2>&1
expect_eq "environment: pip uninstall" "$?" 0
expect_eq "environment: uninstall leaves nothing" "$(find "$site" -path '*kernels*' | wc -l)" 0

# A package whose loader checks each file against a checksum manifest (flashinfer-cubin's
# checksums.txt, data/slim/device_file_packages.toml): the manifest stays byte for byte.
sha() { sha256sum "$1" | cut -d' ' -f1; }
printf '%s  add_75.cubin\n%s  add_90.cubin\n' "$(sha k75.cubin)" "$(sha k90.cubin)" >checksums.txt
fi_whl=flashinfer_cubin-0.0.1-py3-none-any.whl
make_wheel "$fi_whl" k75.cubin:flashinfer_cubin/cubins/a/add_75.cubin \
  k90.cubin:flashinfer_cubin/cubins/a/add_90.cubin checksums.txt:flashinfer_cubin/cubins/a/checksums.txt
"$TAILOR" slim "$fi_whl" --gpu T4 --device-files --out fi >fi.txt 2>err.txt
expect_eq "flashinfer-like wheel: exit 0" "$?" 0
expect_eq "flashinfer-like wheel: what stays" "$(members fi/$fi_whl)" \
  "flashinfer_cubin/cubins/a/add_75.cubin flashinfer_cubin/cubins/a/checksums.txt"
expect_eq "checksums.txt stays byte for byte" \
  "$(unzip -p fi/$fi_whl flashinfer_cubin/cubins/a/checksums.txt | sha256sum | cut -d' ' -f1)" \
  "$(sha checksums.txt)"
expect_grep "the note says how flashinfer picks a file" "flashinfer_cubin picks a file: .*isSMCompatible" fi.txt
expect_grep "the note says why checksums.txt stays" "checksums.txt is left as it is" fi.txt

# Hostile: a cubin cut in half is one error line, exit 2, with the flag; unread without it.
python3 -c "d=open('k75.cubin','rb').read(); open('cut.cubin','wb').write(d[:len(d)//2])"
make_wheel cut-1.0-py3-none-any.whl cut.cubin:cut/add.cubin
"$TAILOR" slim cut-1.0-py3-none-any.whl --gpu T4 --device-files --out cut >out.txt 2>err.txt
expect_eq "cut cubin: exit 2" "$?" 2
expect_eq "cut cubin: one error line" "$(wc -l <err.txt)" 1
expect_grep "cut cubin: the error names the member and an offset" "^tailor: error: .*cut/add.cubin: .*0x" err.txt
expect_eq "cut cubin: nothing written" "$(ls cut 2>/dev/null | wc -l)" 0
"$TAILOR" slim cut-1.0-py3-none-any.whl --gpu T4 --no-device-files --out cut2 >out.txt 2>err.txt
expect_eq "cut cubin with --no-device-files: not read, exit 0" "$?" 0
make_wheel cutenv-1.0-py3-none-any.whl cut.cubin:cutenv/add.cubin k90.cubin:cutenv/add_90.cubin
venv/bin/pip install -q --no-deps --no-index cutenv-1.0-py3-none-any.whl >/dev/null 2>&1 ||
  fail "pip install cutenv"
"$TAILOR" slim venv --gpu T4 --device-files --in-place >out.txt 2>err.txt
expect_eq "cut cubin in an environment: exit 2" "$?" 2
expect_grep "cut cubin in an environment: one line naming the file" \
  "^tailor: error: venv/lib/python3.*/site-packages/cutenv/add.cubin: .*0x" err.txt
expect_eq "cut cubin in an environment: nothing removed" "$(ls "$site/cutenv" | tr '\n' ' ')" \
  "add.cubin add_90.cubin "
# A device file named directly is no library: one line that says where slim takes such files.
"$TAILOR" slim k90.cubin --gpu T4 --device-files --out direct >out.txt 2>err.txt
expect_eq "a cubin named directly: exit 2" "$?" 2
expect_grep "a cubin named directly: the line says what it is" \
  "^tailor: error: k90.cubin: a cubin file, device code of its own" err.txt
expect_eq "a cubin named directly: no output folder" "$(ls -d direct 2>/dev/null | wc -l)" 0
exit $fail
