# Sourced by build_interrupt.sh and build_concurrent.sh: writes a tiny extension package
# whose build is a Ninja run of four edges. Three finish at once; the fourth touches
# "$TAILOR_E2E_CTL.started", then, while "$TAILOR_E2E_CTL.slow" exists, runs a tree of
# sleeps in its own process group (Ninja gives each edge one) that ignore SIGINT, and
# waits while "$TAILOR_E2E_CTL.hold" exists. The wheel carries a prebuilt CUDA library
# so tailor's target check passes. No compiler runs during the build: it takes seconds.
#
# make_sleepy_package DIR SO_FILE
make_sleepy_package() {
  local dir=$1 so=$2
  mkdir -p "$dir/tailor_sleepy"
  cp "$so" "$dir/tailor_sleepy/kernels.so"
  echo '"""A test package for tailor build (tests/e2e)."""' >"$dir/tailor_sleepy/__init__.py"
  cat >"$dir/build.ninja" <<'NINJA'
rule quick
  command = touch $out
rule slow
  command = sh -c 'touch "$$TAILOR_E2E_CTL.started"; if [ -e "$$TAILOR_E2E_CTL.slow" ]; then sleep 300 & sleep 300 & wait; fi; while [ -e "$$TAILOR_E2E_CTL.hold" ]; do sleep 0.1; done; touch $out'
build a.o: quick
build b.o: quick
build c.o: quick
build d.o: slow
build all: phony a.o b.o c.o d.o
default all
NINJA
  cat >"$dir/setup.py" <<'PY'
import os, subprocess, sys
from setuptools import setup

if "bdist_wheel" in sys.argv:
    here = os.path.dirname(os.path.abspath(__file__))
    tree = os.path.join(here, "build", "ninja")
    os.makedirs(tree, exist_ok=True)
    print("tailor-e2e run", os.environ.get("TAILOR_E2E_RUN", "?"), flush=True)
    subprocess.run(["ninja", "-C", tree, "-f", os.path.join(here, "build.ninja")], check=True)

setup(name="tailor_sleepy", version="0.1", packages=["tailor_sleepy"],
      package_data={"tailor_sleepy": ["*.so"]})
PY
}

# A CUDA library with sm_75 code only: prints its path, or nothing when no nvcc.
sleepy_kernel_so() {
  local cache=$1
  [ -s "$cache/kernels_sm75.so" ] && { echo "$cache/kernels_sm75.so"; return; }
  local nvcc
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  [ -x "$nvcc" ] || return 0
  mkdir -p "$cache"
  printf '__global__ void tailor_e2e_kernel(float* x) { x[threadIdx.x] *= 2.0f; }\n' >"$cache/k.cu"
  "$nvcc" -shared -Xcompiler -fPIC -gencode arch=compute_75,code=sm_75 -o "$cache/kernels_sm75.so" "$cache/k.cu" \
    >/dev/null 2>&1 && echo "$cache/kernels_sm75.so"
}

# Live processes (not zombies) whose environment holds TAILOR_E2E_TOKEN=$1: "PID CMDLINE".
tagged_processes() {
  local tok=$1 f p state
  for f in $(grep -lsa -- "TAILOR_E2E_TOKEN=$tok" /proc/[0-9]*/environ); do
    p=${f%/environ}
    state=$(sed 's/.*) \(.\).*/\1/' "$p/stat" 2>/dev/null)
    [ -n "$state" ] && [ "$state" != Z ] && echo "${p#/proc/} $(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)"
  done
}

# wait_until SECONDS COMMAND...: polls COMMAND every 0.1 s; false when time runs out.
wait_until() {
  local limit=$1
  shift
  local end=$((SECONDS + limit))
  while ! "$@"; do
    [ $SECONDS -ge $end ] && return 1
    sleep 0.1
  done
}
