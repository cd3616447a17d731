#!/usr/bin/env bash
# tailor's reading of standalone device code files (cubins) against NVIDIA's cuobjdump.
#
#   bench/inspect_device_files.sh [--build DIR] [--files N] [--repeat R]
#       Builds a synthetic wheel of N cubins (default 2000: copies of nvcc -cubin outputs of
#       one small kernel for sm_75, sm_90 and sm_100a, in 4 folders), then times
#         - `tailor inspect --json WHEEL` (the whole wheel: unzip, RECORD hashes, every cubin),
#         - `tailor inspect --json DIR` (the same cubins as files in a folder),
#         - `cuobjdump -lelf FILE` once per file (it takes one file per run),
#       each R times (default 3), best wall time and peak RSS, and checks that the targets
#       and counts tailor reports equal cuobjdump's (cuobjdump drops the 'f' of sm_100f).
#
#   bench/inspect_device_files.sh [--build DIR] --wheel WHEEL
#       A real wheel (flashinfer-cubin): the same three timings over its .cubin members
#       (extracted to a temporary folder), once each, and the target of every cubin compared
#       with cuobjdump's, file by file. Exit 1 on a mismatch.
#
# DIR defaults to build/ (needs bin/tailor). cuobjdump: $CUOBJDUMP, else PATH, else the
# nvidia-cuda-cuobjdump pip package (pip install --target DIR nvidia-cuda-cuobjdump, then
# CUOBJDUMP=DIR/nvidia/cu13/bin/cuobjdump). Without cuobjdump or nvcc it prints why and
# exits 0 (a skip, not a failure).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
files=2000
repeat=3
wheel=""
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --files) files=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --wheel) wheel=$(realpath "$2"); repeat=1; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) sed -n '2,22p' "$0"; exit 2 ;;
  esac
done
tailor=$build/bin/tailor
[ -x "$tailor" ] || { echo "$tailor not built (ninja -C $build tailor)" >&2; exit 2; }
cuobjdump=${CUOBJDUMP:-$(command -v cuobjdump || true)}
if [ -z "$cuobjdump" ]; then
  cuobjdump=$(python3 -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "cu13", "bin", "cuobjdump"))' 2>/dev/null || true)
fi
if [ ! -x "$cuobjdump" ]; then
  echo "skip: cuobjdump not found (set CUOBJDUMP, or pip install nvidia-cuda-cuobjdump)"
  exit 0
fi
if [ -z "$wheel" ] && ! command -v nvcc >/dev/null; then
  echo "skip: nvcc not found (the cubins are made by nvcc -cubin)"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
if [ -n "$wheel" ]; then
  mkdir tree && (cd tree && python3 -c 'import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
z.extractall(members=[n for n in z.namelist() if n.endswith(".cubin")])' "$wheel") || exit 2
  ln -s "$wheel" "$(basename "$wheel")"
  files=$(find tree -name '*.cubin' | wc -l)
else
cat >k.cu <<'CU'
extern "C" __global__ void axpy(float* y, const float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}
CU
for arch in sm_75 sm_90 sm_100a; do
  nvcc -cubin -arch=$arch -o "k_$arch.cubin" k.cu || { echo "nvcc -cubin -arch=$arch failed" >&2; exit 2; }
done
# N files over 4 folders, cycling through the three cubins; then a wheel of them with RECORD.
python3 - "$files" <<'PY'
import base64, hashlib, os, sys, zipfile
n = int(sys.argv[1])
srcs = [open(f"k_{a}.cubin", "rb").read() for a in ("sm_75", "sm_90", "sm_100a")]
rows = []
with zipfile.ZipFile("kernels-1.0-py3-none-any.whl", "w", zipfile.ZIP_DEFLATED) as z:
    for i in range(n):
        arc = f"kernels/cubins/part{i % 4}/k{i:05d}.cubin"
        data = srcs[i % 3]
        os.makedirs(os.path.dirname("tree/" + arc), exist_ok=True)
        open("tree/" + arc, "wb").write(data)
        z.writestr(arc, data)
        h = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        rows.append(f"{arc},sha256={h},{len(data)}")
    di = "kernels-1.0.dist-info"
    for name, text in ((f"{di}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
                       (f"{di}/METADATA", "Metadata-Version: 2.1\nName: kernels\nVersion: 1.0\n")):
        z.writestr(name, text)
        h = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        rows.append(f"{name},sha256={h},{len(text)}")
    rows.append(f"{di}/RECORD,,")
    z.writestr(f"{di}/RECORD", "\n".join(rows) + "\n")
PY
fi
whl=$(basename "${wheel:-kernels-1.0-py3-none-any.whl}")
find tree -name '*.cubin' | sort >list.txt

# best_of CMD...: runs CMD `repeat` times; prints "<best wall s> <peak RSS KiB of that run>".
best_of() {
  local best="" rss="" t0 t1 s
  for _ in $(seq "$repeat"); do
    t0=$(date +%s%N)
    /usr/bin/time -f '%M' -o rss.txt "$@" >out.txt 2>/dev/null
    t1=$(date +%s%N)
    s=$(( (t1 - t0) / 1000000 ))
    if [ -z "$best" ] || [ "$s" -lt "$best" ]; then best=$s; rss=$(tail -1 rss.txt); fi
  done
  echo "$best $rss"
}
cuobjdump_all() { while IFS= read -r f; do "$cuobjdump" -lelf "$f"; done <list.txt; }
export -f cuobjdump_all
export cuobjdump

read -r t_wheel m_wheel < <(best_of "$tailor" inspect --json "$whl")
cp out.txt wheel.json
read -r t_dir m_dir < <(best_of "$tailor" inspect --json tree)
read -r t_cuobj m_cuobj < <(best_of bash -c cuobjdump_all)
cp out.txt cuobjdump.txt

# Per file and per target: tailor's (the wheel's JSON, 'f' dropped as cuobjdump does) vs
# cuobjdump's "ELF file 1: NAME.sm_XX[a].cubin" line for the same file.
read -r ours theirs mismatches < <(python3 - <<'PY'
import collections, json, re
j = json.load(open("wheel.json"))
tailor = {}
for f in j["wheels"][0]["device_files"]:
    names = [t["name"][:-1] if t["name"].endswith("f") else t["name"] for t in f["target_stats"]]
    tailor[f["path"]] = ",".join(names)
files = [l.rstrip("\n")[len("tree/"):] for l in open("list.txt")]
lines = [l.strip() for l in open("cuobjdump.txt") if l.startswith("ELF file")]
theirs = [m.group(1) if (m := re.search(r"\.(sm_\d+a?)\.cubin$", l)) else "?" for l in lines]
count = lambda names: ",".join(f"{k}={v}" for k, v in sorted(collections.Counter(names).items()))
bad = sum(tailor.get(f) != t for f, t in zip(files, theirs)) + abs(len(files) - len(theirs))
print(count(tailor[f] for f in files if f in tailor), count(theirs), bad)
PY
)
printf '%-34s %9s %12s\n' "command ($files cubins of $whl)" "wall" "peak RSS"
printf '%-34s %7.2f s %8.1f MiB\n' "tailor inspect --json WHEEL" "$(echo "$t_wheel/1000" | bc -l)" "$(echo "$m_wheel/1024" | bc -l)"
printf '%-34s %7.2f s %8.1f MiB\n' "tailor inspect --json DIR" "$(echo "$t_dir/1000" | bc -l)" "$(echo "$m_dir/1024" | bc -l)"
printf '%-34s %7.2f s %8.1f MiB\n' "cuobjdump -lelf, once per file" "$(echo "$t_cuobj/1000" | bc -l)" "$(echo "$m_cuobj/1024" | bc -l)"
printf 'cuobjdump / tailor: %.1fx (wheel), %.1fx (folder)\n' \
  "$(echo "$t_cuobj/$t_wheel" | bc -l)" "$(echo "$t_cuobj/$t_dir" | bc -l)"
echo "targets, tailor:    $ours"
echo "targets, cuobjdump: $theirs"
echo "files whose target differs: $mismatches"
echo "machine: $(nproc) cores, $(uname -m); cuobjdump $("$cuobjdump" --version | grep -oE 'V[0-9.]+' | head -1)"
if [ "$ours" != "$theirs" ] || [ "$mismatches" != 0 ]; then
  echo "MISMATCH between tailor and cuobjdump"
  exit 1
fi
echo "counts agree"
