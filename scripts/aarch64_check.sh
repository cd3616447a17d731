#!/usr/bin/env bash
# Cross-builds tailor for aarch64 and runs its tests under qemu-user, on an x86_64 Debian 12
# machine: the unit tests (ctest, through CMAKE_CROSSCOMPILING_EMULATOR), then the e2e
# tests that need neither nvcc builds nor a GPU, with TAILOR a wrapper that runs the aarch64
# binary under qemu, then `tailor detect` as each emulated CPU sees itself. Prints a summary.
#
# Installs nothing. Once, as root (not part of the CI install: the cross build alone is a
# full tailor build):
#   scripts/setup.sh --aarch64
# which installs g++-aarch64-linux-gnu, qemu-user-static and the :arm64 -dev packages, and
# unpacks libisal-dev:arm64 into /opt/tailor-aarch64-deps (TAILOR_AARCH64_DEPS), because
# its arm64 and amd64 packages cannot be installed side by side.
#
#   scripts/aarch64_check.sh [--unit-only] [--no-build]
# Environment: JOBS (default 2), TAILOR_AARCH64_BUILD (default build-aarch64),
# QEMU_CPU (default neoverse-n1) for the e2e tests, TARGETS (ninja targets; default
# tailor and every unit test binary), TAILOR_AARCH64_NVCC_WHEELS (optional: a folder with
# NVIDIA's aarch64 wheels of nvcc, for one real CUDA compile under qemu; fetch them once with
#   pip download --platform manylinux2014_aarch64 --only-binary=:all: --no-deps -d DIR \
#     nvidia-cuda-nvcc nvidia-nvvm nvidia-cuda-crt nvidia-cuda-runtime
# of one CUDA version; without it that step is skipped, and says so).
# Exit 0 when nothing failed, 1 when a test failed, 2 when something is missing.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TAILOR_AARCH64_BUILD:-$root/build-aarch64}
deps=${TAILOR_AARCH64_DEPS:-/opt/tailor-aarch64-deps}
jobs=${JOBS:-2}
cpu=${QEMU_CPU:-neoverse-n1}
unit_only=0 no_build=0
for a in "$@"; do
  case $a in
    --unit-only) unit_only=1 ;;
    --no-build) no_build=1 ;;
    *) echo "aarch64_check: unknown argument $a (use --unit-only, --no-build)" >&2; exit 2 ;;
  esac
done
start=$(date +%s)
say() { printf '== %s\n' "$*"; }

# ---- 1. what is missing -------------------------------------------------------------
missing=()
command -v aarch64-linux-gnu-g++ >/dev/null || missing+=(g++-aarch64-linux-gnu)
qemu=$(command -v qemu-aarch64-static || command -v qemu-aarch64 || true)
[ -n "$qemu" ] || missing+=(qemu-user-static)
for p in libfmt-dev libtomlplusplus-dev libzstd-dev liblz4-dev libdeflate-dev zlib1g-dev libssl-dev libgtest-dev; do
  dpkg-query -W -f='${Status}' "$p:arm64" 2>/dev/null | grep -q "install ok installed" || missing+=("$p:arm64")
done
[ -f "$deps/usr/lib/aarch64-linux-gnu/pkgconfig/libisal.pc" ] || missing+=("libisal-dev:arm64 unpacked in $deps")
for t in cmake ninja python3 ccache; do command -v $t >/dev/null || missing+=("$t"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "aarch64_check: missing: ${missing[*]}" >&2
  echo "aarch64_check: install them with: sudo scripts/setup.sh --aarch64" >&2
  exit 2
fi

# ---- 2. cross build ------------------------------------------------------------------
build_s=0
if [ "$no_build" = 0 ]; then
  say "configure $build"
  mkdir -p "$build"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$root/cmake/aarch64-linux-gnu.cmake" \
    -DTAILOR_AARCH64_DEPS="$deps" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTAILOR_BENCH=OFF -DTAILOR_FUZZ=OFF \
    -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >"$build/configure.log" 2>&1 ||
    { echo "aarch64_check: configure failed, see $build/configure.log" >&2; tail -20 "$build/configure.log" >&2; exit 1; }
  targets=${TARGETS:-$(ninja -C "$build" -t targets all | sed -n 's/^\(tailor\|test_[a-z]*\|tailor_fixtures\): phony$/\1/p' | tr '\n' ' ')}
  say "build ($jobs jobs): $targets"
  b0=$(date +%s)
  # shellcheck disable=SC2086
  ninja -C "$build" -j"$jobs" $targets || { echo "aarch64_check: cross build failed" >&2; exit 1; }
  build_s=$(( $(date +%s) - b0 ))
fi
file -b "$build/bin/tailor" | grep -q "ARM aarch64" || { echo "aarch64_check: $build/bin/tailor is not an aarch64 binary" >&2; exit 1; }

# ---- 3. unit tests under qemu (ctest runs them through the toolchain's emulator) ---------
say "unit tests under $(basename "$qemu")"
u0=$(date +%s)
junit="$build/aarch64-unit.xml"
# A test binary left out of TARGETS shows up as <name>_NOT_BUILT: listed, not counted.
not_built=$(ctest --test-dir "$build" -N -L unit 2>/dev/null | sed -n 's/.*Test *#[0-9]*: \(test_[a-z]*\)_NOT_BUILT$/\1/p' | tr '\n' ' ')
ctest --test-dir "$build" -L unit -E '_NOT_BUILT$' -j"$jobs" --output-on-failure --output-junit "$junit" >"$build/aarch64-unit.log" 2>&1
unit_rc=$?
unit_s=$(( $(date +%s) - u0 ))
read -r u_total u_fail u_skip < <(python3 - "$junit" <<'PY'
import sys, xml.etree.ElementTree as ET
try:
    r = ET.parse(sys.argv[1]).getroot()
except Exception:
    print(0, 0, 0); sys.exit()
suites = [r] if r.tag == "testsuite" else r.findall("testsuite")
t = sum(int(s.get("tests", 0)) for s in suites)
f = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
k = sum(int(s.get("skipped", 0)) + int(s.get("disabled", 0)) for s in suites)
print(t, f, k)
PY
)
grep -E "^[[:space:]]*[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess|Exception|Not Run)" "$build/aarch64-unit.log" | head -40
grep -E "\*\*\*Skipped|Not Run" "$build/aarch64-unit.log" | head -20

# ---- 4. e2e tests under qemu ------------------------------------------------------------
# The subset that needs no nvcc build and no GPU; each gets TAILOR = this wrapper.
wrapper="$build/bin/tailor-qemu"
cat >"$wrapper" <<EOF
#!/bin/sh
exec "$qemu" -L / -cpu "\${QEMU_CPU:-$cpu}" "$build/bin/tailor" "\$@"
EOF
chmod +x "$wrapper"
e2e=(arm_host detect plan arch explain matrix print_env plan_cli_checks inspect_hostile cli_habits)
# Scripts that cannot hold under an aarch64 tailor, and why (counted as skipped): none now.
declare -A not_here=()
# How an e2e script runs a cross-built binary other than $TAILOR (cli_habits' installed one):
# an installed tailor has no build RUNPATH, so libisal comes from $deps as from a system folder.
export TAILOR_EMULATOR="$qemu -L / -E LD_LIBRARY_PATH=$deps/usr/lib/aarch64-linux-gnu"
e_pass=0 e_fail=0 e_skip=0 e_failed=() e_skipped=()
e2e_s=0
if [ "$unit_only" = 0 ]; then
  e0=$(date +%s)
  for t in "${e2e[@]}"; do
    s="$root/tests/e2e/$t.sh"
    [ -f "$s" ] || { e_skip=$((e_skip + 1)); e_skipped+=("$t (no such script)"); continue; }
    if [ -n "${not_here[$t]:-}" ]; then
      e_skip=$((e_skip + 1)); e_skipped+=("$t: ${not_here[$t]}"); echo "SKIP e2e $t: ${not_here[$t]}"; continue
    fi
    log="$build/e2e-$t.log"
    TAILOR="$wrapper" TAILOR_SOURCE_DIR="$root" TAILOR_BINARY_DIR="$build" timeout 600 bash "$s" >"$log" 2>&1
    rc=$?
    case $rc in
      0) e_pass=$((e_pass + 1)); echo "PASS e2e $t" ;;
      77) e_skip=$((e_skip + 1)); why=$(grep -m1 -i "skip" "$log" || tail -1 "$log"); e_skipped+=("$t: $why"); echo "SKIP e2e $t: $why" ;;
      *) e_fail=$((e_fail + 1)); e_failed+=("$t"); echo "FAIL e2e $t (exit $rc), last lines of $log:"; tail -5 "$log" | sed 's/^/    /' ;;
    esac
  done
  e2e_s=$(( $(date +%s) - e0 ))

  # ---- 5. what detect says as each emulated CPU -------------------------------------------
  say "tailor detect under qemu -cpu X"
  offered=$("$qemu" -cpu help 2>&1 || true)
  for c in neoverse-n1 neoverse-v1 neoverse-n2 cortex-a76 a64fx cortex-a72 max; do
    grep -qw -- "$c" <<<"$offered" || { echo "  $c: not offered by this qemu"; continue; }
    QEMU_CPU=$c "$wrapper" detect --json --no-python 2>/dev/null | python3 -c '
import json, sys
c = json.load(sys.stdin)["cpu"]
a = c.get("arm", {})
cores = " + ".join(a.get("cores", [])) or "-"
cls = a.get("neoverse_class") or "none"
print("  %-12s core %s [%s], class %s, %s, %d features from %s"
      % (sys.argv[1], cores, a.get("midr", ""), cls, c["isa_level"], len(c["features"]), c["features_source"]))
' "$c" || echo "  $c: detect failed"
  done
fi

# ---- 6. one real CUDA compile with the aarch64 nvcc (optional) --------------------------
# nvcc and its tools (cicc, ptxas, fatbinary, ...) from NVIDIA's aarch64 wheels run under
# qemu-user, each tool behind a small wrapper because the kernel cannot exec an aarch64 binary
# here; the host compiler is the cross g++ (an x86_64 program). The result must be an aarch64
# library that the aarch64 tailor, under qemu, inspects as holding sm_80.
nvcc_line="skipped: TAILOR_AARCH64_NVCC_WHEELS is not set (see the header of this script)"
nvcc_fail=0
if [ "$unit_only" = 0 ] && [ -n "${TAILOR_AARCH64_NVCC_WHEELS:-}" ]; then
  say "CUDA compile with the aarch64 nvcc under $(basename "$qemu")"
  wheels=() missing_wheels=()
  for w in nvidia_cuda_nvcc nvidia_nvvm nvidia_cuda_crt nvidia_cuda_runtime; do
    f=$(find "$TAILOR_AARCH64_NVCC_WHEELS" -maxdepth 1 -name "$w-[0-9]*aarch64*.whl" | sort -V | tail -1)
    if [ -n "$f" ]; then wheels+=("$f"); else missing_wheels+=("$w"); fi
  done
  if [ ${#missing_wheels[@]} -gt 0 ]; then
    nvcc_line="skipped: no aarch64 wheel of ${missing_wheels[*]} in $TAILOR_AARCH64_NVCC_WHEELS"
  else
    tk="$build/nvcc-aarch64"
    rm -rf "$tk" && mkdir -p "$tk"
    for w in "${wheels[@]}"; do python3 -m zipfile -e "$w" "$tk" || nvcc_fail=1; done
    nvcc=$(find "$tk"/nvidia -path '*/bin/nvcc' -type f | head -1)
    if [ "$nvcc_fail" = 1 ] || [ -z "$nvcc" ]; then
      nvcc_fail=1 nvcc_line="FAILED: the wheels in $TAILOR_AARCH64_NVCC_WHEELS hold no nvidia/cu*/bin/nvcc"
    else
      cu=$(dirname "$(dirname "$nvcc")")
      chmod +x "$cu"/bin/* "$cu"/nvvm/bin/*  # zip members lose their mode
      for t in "$cu"/bin/cudafe++ "$cu"/bin/fatbinary "$cu"/bin/nvlink "$cu"/bin/ptxas "$cu"/bin/bin2c "$cu"/nvvm/bin/cicc; do
        [ -f "$t" ] || continue
        mv "$t" "$t.aarch64"
        printf '#!/bin/sh\nexec "%s" -L / "%s" "$@"\n' "$qemu" "$t.aarch64" > "$t"
        chmod +x "$t"
      done
      so="$tk/kernels_sm80.so"
      n0=$(date +%s)
      if "$qemu" -L / "$nvcc" -ccbin aarch64-linux-gnu-g++ -shared -Xcompiler -fPIC \
           -gencode arch=compute_80,code=sm_80 -o "$so" "$root/tests/fixtures/kernels.cu" >"$tk/nvcc.log" 2>&1 &&
         "$wrapper" inspect --json "$so" >"$tk/inspect.json" 2>>"$tk/nvcc.log" &&
         python3 - "$tk/inspect.json" >>"$tk/nvcc.log" 2>&1 <<'PY'
import json, sys
lib = json.load(open(sys.argv[1]))["libraries"][0]
assert lib["machine"] == "aarch64", lib["machine"]
assert lib["targets"] == ["sm_80"], lib["targets"]
PY
      then
        nvcc_line="passed: $("$qemu" -L / "$nvcc" --version | sed -n 's/.*\(release [0-9.]*\).*/nvcc \1/p') compiled kernels.cu for sm_80 into an aarch64 library; tailor inspect (aarch64, qemu) reads sm_80 ($(( $(date +%s) - n0 ))s)"
      else
        nvcc_fail=1 nvcc_line="FAILED: see $tk/nvcc.log"
        tail -5 "$tk/nvcc.log" | sed 's/^/    /'
      fi
    fi
  fi
  echo "  $nvcc_line"
fi

# ---- 7. summary ------------------------------------------------------------------------
total_s=$(( $(date +%s) - start ))
say "summary"
echo "  build:      ${build_s}s ($jobs jobs)"
echo "  unit tests: $((u_total - u_fail - u_skip)) passed, $u_fail failed, $u_skip skipped of $u_total (${unit_s}s, ctest exit $unit_rc; $build/aarch64-unit.log)"
[ -z "$not_built" ] || echo "    not built (not run): $not_built"
if [ "$unit_only" = 0 ]; then
  echo "  e2e tests:  $e_pass passed, $e_fail failed, $e_skip skipped of ${#e2e[@]} (${e2e_s}s, qemu -cpu $cpu)"
  for f in "${e_failed[@]}"; do echo "    failed:  $f ($build/e2e-$f.log)"; done
  for s in "${e_skipped[@]}"; do echo "    skipped: $s"; done
fi
[ "$unit_only" = 1 ] || echo "  aarch64 nvcc: $nvcc_line"
echo "  total:      ${total_s}s"
[ "$u_fail" -eq 0 ] && [ "$unit_rc" -eq 0 ] && [ "$e_fail" -eq 0 ] && [ "$nvcc_fail" -eq 0 ] && [ "$u_total" -gt 0 ]
