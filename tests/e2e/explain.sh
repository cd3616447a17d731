#!/usr/bin/env bash
# `tailor explain` on a hand-written log for each row of shared/reference/failures.md:
# the right pattern comes first, its fix carries the values from the log, and the exit
# code says diagnosed (0), undiagnosed error (1) or unreadable log (2).
set -u
: "${TAILOR:?TAILOR must point at the built binary}"
command -v python3 >/dev/null || { echo "skipped: python3 is needed to read --json"; exit 77; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"  # fail, failures, ok, bad

# expect NAME WANT_ID WANT_TEXT_IN_FIX WANT_EXIT  (log on stdin)
expect() {
  local name=$1 want_id=$2 want_fix=$3 want_exit=$4
  cat >"$work/$name.log"
  "$TAILOR" explain --json "$work/$name.log" >"$work/$name.json" 2>"$work/$name.err"
  local code=$?
  local got
  got=$(python3 - "$work/$name.json" "$want_id" "$want_fix" <<'PY'
import json, sys
path, want_id, want_fix = sys.argv[1:4]
try:
    doc = json.load(open(path))
except Exception as e:
    print(f"bad json: {e}"); sys.exit()
d = doc.get("diagnoses") or []
if not d:
    print("no diagnosis"); sys.exit()
if d[0]["id"] != want_id:
    print(f"first diagnosis is {d[0]['id']}, want {want_id}"); sys.exit()
if want_fix and want_fix not in d[0]["fix"] + " " + d[0]["cause"]:
    print(f"'{want_fix}' not in: {d[0]['cause']} / {d[0]['fix']}"); sys.exit()
print("ok")
PY
)
  if [[ "$got" != ok || $code -ne $want_exit ]]; then
    bad "$name: $got (exit $code, want $want_exit)"; cat "$work/$name.err"
  else
    ok "$name -> $want_id"
  fi
}

expect oom-cc1plus oom-compiler-killed "jobs" 0 <<'LOG'
[12/48] c++ -MMD -MF /tmp/b/ops.o.d -O3 -c /src/csrc/ops.cpp -o /tmp/b/ops.o
FAILED: /tmp/b/attention.o
c++ -MMD -MF /tmp/b/attention.o.d -O3 -c /src/csrc/attention.cpp -o /tmp/b/attention.o
c++: fatal error: Killed signal terminated program cc1plus
compilation terminated.
ninja: build stopped: subcommand failed.
LOG

expect oom-cicc oom-nvcc-killed "cicc" 0 <<'LOG'
[3/90] /usr/local/cuda/bin/nvcc -c flash_fwd_hdim128_bf16_sm80.cu -o flash_fwd_hdim128_bf16_sm80.o --threads 4
FAILED: /tmp/b/flash_fwd_hdim256_fp16_sm80.o
nvcc error   : 'cicc' died due to signal 9 (Kill signal)
ninja: build stopped: subcommand failed.
LOG

expect unsupported-arch nvcc-unsupported-arch "compute_100a" 0 <<'LOG'
[1/4] /usr/local/cuda-12.4/bin/nvcc -c kernel.cu -o kernel.o -gencode=arch=compute_100a,code=sm_100a
FAILED: kernel.o
nvcc fatal   : Unsupported gpu architecture 'compute_100a'
ninja: build stopped: subcommand failed.
LOG

expect glibc glibc-too-new "2.38" 0 <<'LOG'
>>> import torch
Traceback (most recent call last):
  File "<stdin>", line 1, in <module>
  File "/usr/local/lib/python3.10/dist-packages/torch/__init__.py", line 290, in <module>
    from torch._C import *  # noqa: F403
ImportError: /lib/aarch64-linux-gnu/libc.so.6: version `GLIBC_2.38' not found (required by /usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cpu.so)
LOG

expect libcublas cuda-runtime-library-missing "libcublas.so.12" 0 <<'LOG'
Traceback (most recent call last):
  File "/app/serve.py", line 3, in <module>
    import torch
OSError: libcublas.so.12: cannot open shared object file: No such file or directory
LOG

expect sm75 sm-not-compatible "sm_75" 0 <<'LOG'
/usr/local/lib/python3.10/dist-packages/torch/cuda/__init__.py:235: UserWarning:
NVIDIA T4G with CUDA capability sm_75 is not compatible with the current PyTorch installation.
The current PyTorch install supports CUDA capabilities sm_80 sm_90.
LOG

expect no-kernel no-kernel-image "inspect" 0 <<'LOG'
  File "/app/model.py", line 41, in forward
    return self.proj(x)
RuntimeError: CUDA error: no kernel image is available for execution on the device
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
LOG

expect no-nvcc cuda-compiler-not-found "CUDACXX" 0 <<'LOG'
-- The CXX compiler identification is GNU 12.2.0
CMake Error at CMakeLists.txt:3 (project):
  No CMAKE_CUDA_COMPILER could be found.

  Tell CMake where to find the compiler by setting either the environment
  variable "CUDACXX" or the CMake cache entry CMAKE_CUDA_COMPILER to the full
  path to the compiler, or to the compiler name if it is in the PATH.
-- Configuring incomplete, errors occurred!
LOG

expect canonicalize setuptools-packaging-mismatch "packaging" 0 <<'LOG'
running bdist_wheel
Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/setuptools/command/bdist_wheel.py", line 380, in run
    self.run_command("build")
TypeError: canonicalize_version() got an unexpected keyword argument 'strip_trailing_zero'
LOG

expect abi abi-undefined-symbol "_ZN3c104cuda9SetDeviceEi" 0 <<'LOG'
>>> import flash_attn_2_cuda
ImportError: /venv/lib/python3.11/site-packages/flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi
LOG

expect cuda-mismatch cuda-version-mismatch "CUDA 13.0 toolkit" 0 <<'LOG'
  Traceback (most recent call last):
    File "/venv/lib/python3.11/site-packages/torch/utils/cpp_extension.py", line 499, in _check_cuda_version
      raise RuntimeError(CUDA_MISMATCH_MESSAGE.format(cuda_str_version, torch.version.cuda))
  RuntimeError:
  The detected CUDA version (12.8) mismatches the version that was used to compile
  PyTorch (13.0). Please make sure to use the same CUDA versions.
LOG

expect arch-list arch-list-unset-no-gpu "TORCH_CUDA_ARCH_LIST" 0 <<'LOG'
No CUDA runtime is found, using CUDA_HOME='/usr/local/cuda'
Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/torch/utils/cpp_extension.py", line 2411, in _get_cuda_arch_flags
    arch_list[-1] += '+PTX'
    ~~~~~~~~~^^^^
IndexError: list index out of range
LOG

expect gcc host-compiler-too-new "g++-13" 0 <<'LOG'
FAILED: /tmp/b/kernel.o
/usr/local/cuda/bin/nvcc -c /src/kernel.cu -o /tmp/b/kernel.o
/usr/local/cuda/include/crt/host_config.h:143:2: error: #error -- unsupported GNU version! gcc versions later than 13 are not supported! The nvcc flag '-allow-unsupported-compiler' can be used to override this version check; however, using an unsupported host compiler may cause compilation failure or incorrect run time execution. Use at your own risk.
  143 | #error -- unsupported GNU version! gcc versions later than 13 are not supported! The nvcc flag '-allow-unsupported-compiler' can be used to override this version check; however, using an unsupported host compiler may cause compilation failure or incorrect run time execution. Use at your own risk.
      |  ^~~~~
ninja: build stopped: subcommand failed.
LOG

expect cudnn cudnn-runtime-mismatch "8, 9, 2" 0 <<'LOG'
RuntimeError: cuDNN version incompatibility: PyTorch was compiled  against (8, 9, 2) but found runtime version (8, 5, 0). PyTorch already comes bundled with cuDNN. One option to resolving this error is to ensure PyTorch can find the bundled cuDNN.
LOG

expect no-space no-space-left "TMPDIR" 0 <<'LOG'
[812/6211] Building CUDA object caffe2/CMakeFiles/torch_cuda.dir/__/aten/src/ATen/native/cuda/SortStable.cu.o
FAILED: caffe2/CMakeFiles/torch_cuda.dir/__/aten/src/ATen/native/cuda/Sort.cu.o
fatal error: error writing to /tmp/ccQ2xR7a.s: No space left on device
compilation terminated.
LOG

expect ptxas-target ptx-needs-newer-arch "sm_80" 0 <<'LOG'
FAILED: /tmp/b/selective_scan_fwd_bf16.o
ptxas /tmp/tmpxft_0000a1b2_00000000-6_selective_scan_fwd_bf16.ptx, line 649; error   : Feature '.bf16' requires .target sm_80 or higher
ninja: build stopped: subcommand failed.
LOG

expect cuda-header cuda-headers-missing "cuda_runtime.h" 0 <<'LOG'
building 'torch_scatter._scatter_cuda' extension
csrc/cuda/scatter_cuda.cpp:3:10: fatal error: cuda_runtime.h: No such file or directory
    3 | #include <cuda_runtime.h>
      |          ^~~~~~~~~~~~~~~~
compilation terminated.
error: command '/usr/bin/g++' failed with exit code 1
LOG

# The generic rows: ninja's summary is not the error; a compiler error tailor has no
# pattern for is shown as the first error block, named by its file and line with the
# compiler's own words, and exits 1.
expect ninja-stopped cxx-compile-error "/src/b.cpp, where the compiler says: 'frobnicate' was not declared" 1 <<'LOG'
[1/3] c++ -c /src/a.cpp -o a.o
FAILED: b.o
/src/b.cpp:7:3: error: 'frobnicate' was not declared in this scope
ninja: build stopped: subcommand failed.
LOG
expect ninja-only ninja-build-stopped "line 2 of the log" 1 <<'LOG'
[1/3] c++ -c /src/a.cpp -o a.o
FAILED: b.o
ninja: build stopped: subcommand failed.
LOG
python3 - "$work/ninja-stopped.json" <<'PY' || bad "ninja-stopped: block"
import json, sys
doc = json.load(open(sys.argv[1]))
b = doc["error_block"]
assert b["first_line"] == 2 and b["last_line"] == 3, b
assert doc["diagnosed"] is False
PY

# Human output quotes the line and says cause and fix.
"$TAILOR" explain "$work/oom-cc1plus.log" >"$work/human.txt"
if ! grep -q "First error in .*oom-cc1plus.log (lines 2-4)" "$work/human.txt" ||
  ! grep -q "> c++: fatal error: Killed signal terminated program cc1plus" "$work/human.txt" ||
  ! grep -q "cause: Out of memory" "$work/human.txt"; then
  bad "human output:"; cat "$work/human.txt"
fi

# Every `tailor ...` command an out-of-memory fix names is accepted by tailor: the
# PyTorch form `tailor build torch --jobs N` reaches the plan as MAX_JOBS, and N < 1 is
# refused (exit 2). The fix of a torch OOM log must name it.
if ! grep -qF 'tailor build torch --jobs N' "$work/human.txt"; then
  bad "the OOM fix does not name tailor build torch --jobs N"
fi
"$TAILOR" plan --torch 2.9.1 --cpu-only --jobs 2 --format json >"$work/jobs.json" 2>/dev/null
if ! python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["env"]["MAX_JOBS"] == "2"' "$work/jobs.json"; then
  bad "--jobs 2 did not become MAX_JOBS=2"
fi
"$TAILOR" build torch --torch 2.9.1 --cpu-only --jobs 0 --work-dir "$work/w" >/dev/null 2>"$work/jobs0.err"
code=$?
if [[ $code -ne 2 ]] || ! grep -qF -- "--jobs 0: must be at least 1" "$work/jobs0.err"; then
  bad "build torch --jobs 0: exit $code"; cat "$work/jobs0.err"
fi

# Standard input, a clean log, an unreadable log.
printf 'nvcc fatal   : Unsupported gpu architecture %s\n' "'compute_35'" | "$TAILOR" explain - >/dev/null ||
  bad "stdin"
printf '[1/1] c++ -c a.cpp\n' >"$work/clean.log"
"$TAILOR" explain "$work/clean.log" >/dev/null || bad "clean log should exit 0"
"$TAILOR" explain "$work/does-not-exist.log" 2>"$work/missing.err" >/dev/null
code=$?
if [[ $code -ne 2 ]] || ! grep -q "^tailor: error: .*does-not-exist.log: no such file or directory" "$work/missing.err"; then
  bad "missing log: exit $code"; cat "$work/missing.err"
fi

if [[ $failures -eq 0 ]]; then echo "all explain checks passed"; else echo "$failures explain check(s) failed"; fi
exit $fail
