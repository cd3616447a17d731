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
# DIR defaults to build/ (needs bin/tailor). cuobjdump: $CUOBJDUMP, else PATH, else the
# nvidia-cuda-cuobjdump pip package (pip install --target DIR nvidia-cuda-cuobjdump, then
# CUOBJDUMP=DIR/nvidia/cu13/bin/cuobjdump). Without cuobjdump or nvcc it prints why and
# exits 0 (a skip, not a failure).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
files=2000
repeat=3
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --files) files=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) sed -n '2,17p' "$0"; exit 2 ;;
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
command -v nvcc >/dev/null || { echo "skip: nvcc not found (the cubins are made by nvcc -cubin)"; exit 0; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
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

read -r t_wheel m_wheel < <(best_of "$tailor" inspect --json kernels-1.0-py3-none-any.whl)
cp out.txt wheel.json
read -r t_dir m_dir < <(best_of "$tailor" inspect --json tree)
read -r t_cuobj m_cuobj < <(best_of bash -c cuobjdump_all)
cp out.txt cuobjdump.txt

# Counts per target: tailor's (the wheel's JSON, 'f' dropped as cuobjdump does) vs cuobjdump's.
ours=$(python3 -c '
import json, collections
j = json.load(open("wheel.json"))
c = collections.Counter()
for f in j["wheels"][0]["device_files"]:
    for t in f["target_stats"]:
        n = t["name"][:-1] if t["name"].endswith("f") else t["name"]
        c[n] += t["entries"]
print(" ".join(f"{k}={v}" for k, v in sorted(c.items())))')
theirs=$(grep -oE '\.sm_[0-9]+a?\.cubin$' cuobjdump.txt | sed 's/^\.//; s/\.cubin$//' | sort | uniq -c |
  awk '{printf "%s%s=%s", (NR>1?" ":""), $2, $1}')

printf '%-34s %9s %12s\n' "command ($files cubins)" "wall" "peak RSS"
printf '%-34s %7.2f s %8.1f MiB\n' "tailor inspect --json WHEEL" "$(echo "$t_wheel/1000" | bc -l)" "$(echo "$m_wheel/1024" | bc -l)"
printf '%-34s %7.2f s %8.1f MiB\n' "tailor inspect --json DIR" "$(echo "$t_dir/1000" | bc -l)" "$(echo "$m_dir/1024" | bc -l)"
printf '%-34s %7.2f s %8.1f MiB\n' "cuobjdump -lelf, once per file" "$(echo "$t_cuobj/1000" | bc -l)" "$(echo "$m_cuobj/1024" | bc -l)"
printf 'cuobjdump / tailor: %.1fx (wheel), %.1fx (folder)\n' \
  "$(echo "$t_cuobj/$t_wheel" | bc -l)" "$(echo "$t_cuobj/$t_dir" | bc -l)"
echo "targets, tailor:    $ours"
echo "targets, cuobjdump: $theirs"
echo "machine: $(nproc) cores, $(uname -m); cuobjdump $("$cuobjdump" --version | grep -oE 'V[0-9.]+' | head -1)"
[ "$ours" = "$theirs" ] || { echo "MISMATCH between tailor and cuobjdump"; exit 1; }
echo "counts agree"
