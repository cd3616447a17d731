#!/usr/bin/env bash
# GPU proof of `tailor slim --device-files` (issue 42), to run on a machine with an NVIDIA
# GPU and the CUDA driver (no network needed):
#
#   TAILOR=/path/to/tailor scripts/gpu_slim_device_files.sh
#
# It compiles one tiny kernel with nvcc into standalone device files (cubins for sm_75,
# sm_90 and sm_100, PTX for compute_90 and compute_100, a fatbin file of sm_80 SASS and
# compute_80 PTX, one of sm_100 SASS only), puts them in a wheel, and slims the wheel for
# this machine's GPU (nvidia-smi's compute capability; 9.0 when there is none). Then it
# loads every file of the original wheel with the CUDA driver API (ctypes on libcuda.so.1:
# cuInit, cuDeviceGet, the primary context, cuModuleLoad, cuModuleGetFunction,
# cuLaunchKernel, the kernel's result read back): each file tailor KEPT must load and
# compute the right result, each file it REMOVED must fail to load with
# CUDA_ERROR_NO_BINARY_FOR_GPU (209) or CUDA_ERROR_INVALID_IMAGE (200), or for PTX with
# CUDA_ERROR_INVALID_PTX (218: the JIT refuses a .target above the GPU). One PASS/FAIL
# line per file and a summary; exit 1 on any mismatch. Without a GPU the load step is
# skipped with a line that says so, and only the slim's choice is checked against the
# driver's rule for the assumed CC.
#
# Variables: TAILOR (required), NVCC (default: nvcc on PATH, else /usr/local/cuda/bin/nvcc),
# PYTHON (default: /opt/torch/.venv/bin/python when present, else python3; stdlib only),
# GPU (a --gpu spelling, default: this machine's CC, else 9.0), KEEP_WORK=1 keeps the folder.
set -uo pipefail
: "${TAILOR:?set TAILOR to the tailor binary}"
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
if [ -z "${PYTHON:-}" ]; then
  if [ -x /opt/torch/.venv/bin/python ]; then PYTHON=/opt/torch/.venv/bin/python; else PYTHON=python3; fi
fi
[ -x "$NVCC" ] || { echo "FAIL: nvcc not found (set NVCC)"; exit 2; }
work=$(mktemp -d)
[ "${KEEP_WORK:-0}" = 1 ] && echo "work folder: $work" || trap 'rm -rf "$work"' EXIT
cd "$work" || exit 2

if [ -z "${GPU:-}" ]; then
  GPU=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' ')
  [ -n "$GPU" ] || { GPU=9.0; echo "no GPU found by nvidia-smi: slimming for --gpu $GPU"; }
fi
echo "GPU: --gpu $GPU; nvcc: $("$NVCC" --version | tail -1); python: $PYTHON"

cat >k.cu <<'CU'
extern "C" __global__ void add(float* x, float y) { x[threadIdx.x] += y; }
CU
build() { "$NVCC" "$@" k.cu || { echo "FAIL: nvcc $*"; exit 2; }; }
build -cubin -arch=sm_75 -o add_sm75.cubin
build -cubin -arch=sm_90 -o add_sm90.cubin
build -cubin -arch=sm_100 -o add_sm100.cubin
build -ptx -arch=compute_90 -o add_compute90.ptx
build -ptx -arch=compute_100 -o add_compute100.ptx
build -fatbin -gencode arch=compute_80,code='[sm_80,compute_80]' -o add_sm80_compute80.fatbin
build -fatbin -gencode arch=compute_100,code=sm_100 -o add_sm100.fatbin
files="add_sm75.cubin add_sm90.cubin add_sm100.cubin add_compute90.ptx add_compute100.ptx
  add_sm80_compute80.fatbin add_sm100.fatbin"

"$PYTHON" - $files <<'PY' || { echo "FAIL: could not write the wheel"; exit 2; }
import base64, hashlib, sys, zipfile
rows, di = [], "gpukernels-1.0.dist-info"
members = {f"gpukernels/bin/{f}": open(f, "rb").read() for f in sys.argv[1:]}
members["gpukernels/__init__.py"] = b""
members[f"{di}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: gpu_slim_device_files\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
members[f"{di}/METADATA"] = b"Metadata-Version: 2.1\nName: gpukernels\nVersion: 1.0\n"
with zipfile.ZipFile("gpukernels-1.0-py3-none-any.whl", "w", zipfile.ZIP_DEFLATED) as z:
    for name, data in members.items():
        z.writestr(name, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        rows.append(f"{name},sha256={digest},{len(data)}")
    z.writestr(f"{di}/RECORD", "\n".join(rows + [f"{di}/RECORD,,"]) + "\n")
PY

"$TAILOR" slim gpukernels-1.0-py3-none-any.whl --gpu "$GPU" --device-files --out slim --json \
  >slim.json 2>slim.err || { echo "FAIL: tailor slim exited $?: $(cat slim.err)"; exit 1; }
"$TAILOR" slim gpukernels-1.0-py3-none-any.whl --gpu "$GPU" --device-files --dry-run | sed 's/^/  | /'

"$PYTHON" - "$GPU" $files <<'PY'
import ctypes, json, struct, sys, zipfile

gpu, files = sys.argv[1], sys.argv[2:]
report = json.load(open("slim.json"))
removed = {p.rsplit("/", 1)[1] for pk in report["inputs"][0]["device_files"] for p in pk["removed"]}
slimmed = zipfile.ZipFile("slim/gpukernels-1.0-py3-none-any.whl")
left = {n.rsplit("/", 1)[1] for n in slimmed.namelist() if n.startswith("gpukernels/bin/")}
failures = 0

def line(ok, name, what):
    global failures
    failures += 0 if ok else 1
    print(f"{'PASS' if ok else 'FAIL'} {name}: {what}")

for f in files:  # the wheel and the report agree
    if (f in removed) == (f in left):
        line(False, f, f"report says {'removed' if f in removed else 'kept'}, the wheel "
                       f"{'has' if f in left else 'lacks'} it")
for f in sorted(left):  # a kept file is byte for byte the original
    if slimmed.read(f"gpukernels/bin/{f}") != open(f, "rb").read():
        line(False, f, "the kept file's bytes changed")

NO_BINARY, INVALID_IMAGE, INVALID_PTX = 209, 200, 218
try:
    cuda = ctypes.CDLL("libcuda.so.1")
    rc = cuda.cuInit(0)
    count = ctypes.c_int(0)
    if rc == 0:
        rc = cuda.cuDeviceGetCount(ctypes.byref(count))
    if rc != 0 or count.value == 0:
        raise OSError(f"cuInit/cuDeviceGetCount returned {rc}, {count.value} devices")
except OSError as e:
    # The driver's rule for the assumed CC, from the file names (major.minor of --gpu).
    if not all(p.isdigit() for p in gpu.split(".")) or gpu.count(".") != 1:
        print(f"SKIP load step: no usable CUDA driver here ({e}); GPU '{gpu}' is not "
              f"major.minor, so tailor's choice cannot be checked either: nothing proven")
        sys.exit(2)
    major, minor = (int(x) for x in gpu.split("."))
    cc = major * 10 + minor
    def loads(f):
        arch = int("".join(c for c in f.split("_")[1].split(".")[0] if c.isdigit()))
        if "compute" in f:
            return arch <= cc
        return arch // 10 == major and arch % 10 <= minor
    print(f"SKIP load step: no usable CUDA driver here ({e}); checking tailor's choice against "
          f"the driver's rule for {gpu} instead")
    for f in files:
        want_kept = loads(f) if not f.endswith(".fatbin") else any(
            loads(p) for p in {"add_sm80_compute80.fatbin": ["add_sm80", "add_compute80"],
                               "add_sm100.fatbin": ["add_sm100"]}[f])
        line((f in left) == want_kept, f, f"{'kept' if f in left else 'removed'} (rule: "
                                          f"{'loadable' if want_kept else 'not loadable'} on {gpu})")
    print(f"summary: {len(files)} files, {len(left)} kept, {len(removed)} removed, "
          f"{failures} mismatches (load step skipped)")
    sys.exit(1 if failures else 0)

def check(rc, what):
    if rc != 0:
        raise RuntimeError(f"{what} returned {rc}")

dev, ctx = ctypes.c_int(0), ctypes.c_void_p()
check(cuda.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
cmaj, cmin = ctypes.c_int(), ctypes.c_int()
cuda.cuDeviceGetAttribute(ctypes.byref(cmaj), 75, dev)  # COMPUTE_CAPABILITY_MAJOR
cuda.cuDeviceGetAttribute(ctypes.byref(cmin), 76, dev)  # COMPUTE_CAPABILITY_MINOR
print(f"device 0: CC {cmaj.value}.{cmin.value}")
check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
check(cuda.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
n = 32
buf = ctypes.c_uint64()
check(cuda.cuMemAlloc_v2(ctypes.byref(buf), ctypes.c_size_t(4 * n)), "cuMemAlloc")

for f in files:
    kept = f in left
    mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
    rc = cuda.cuModuleLoad(ctypes.byref(mod), f.encode())
    if not kept:
        refusals = (NO_BINARY, INVALID_IMAGE) + ((INVALID_PTX,) if f.endswith(".ptx") else ())
        line(rc in refusals, f, f"removed; cuModuleLoad returned {rc} (want one of {refusals})")
        if rc == 0:
            cuda.cuModuleUnload(mod)
        continue
    if rc != 0:
        line(False, f, f"kept but cuModuleLoad returned {rc}")
        continue
    host = (ctypes.c_float * n)(*range(n))
    ok = cuda.cuMemcpyHtoD_v2(buf, host, ctypes.c_size_t(4 * n)) == 0
    ok = ok and cuda.cuModuleGetFunction(ctypes.byref(fn), mod, b"add") == 0
    x, y = ctypes.c_uint64(buf.value), ctypes.c_float(2.5)
    params = (ctypes.c_void_p * 2)(ctypes.cast(ctypes.byref(x), ctypes.c_void_p),
                                    ctypes.cast(ctypes.byref(y), ctypes.c_void_p))
    rc = cuda.cuLaunchKernel(fn, 1, 1, 1, n, 1, 1, 0, None, params, None) if ok else -1
    rc = cuda.cuCtxSynchronize() if rc == 0 else rc
    out = (ctypes.c_float * n)()
    ok = ok and rc == 0 and cuda.cuMemcpyDtoH_v2(out, buf, ctypes.c_size_t(4 * n)) == 0
    ok = ok and all(out[i] == i + 2.5 for i in range(n))
    line(ok, f, f"kept; loaded, launched (rc {rc}), result {'right' if ok else 'wrong'}")
    cuda.cuModuleUnload(mod)

print(f"summary: {len(files)} files on CC {cmaj.value}.{cmin.value}: {len(left)} kept, "
      f"{len(removed)} removed, {failures} mismatches")
sys.exit(1 if failures else 0)
PY
