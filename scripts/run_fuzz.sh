#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan) in build-fuzz, seeds them from the
# test fixtures and runs each for SECONDS (default 600) on one core:
#   scripts/run_fuzz.sh [SECONDS] [elf_fuzz fatbin_fuzz zip_fuzz wheel_metadata_fuzz record_fuzz
#                                  tailor_toml_fuzz diagnose_log_fuzz arch_spec_fuzz ...]
# Needs the fixtures (cmake --build build-<name> --target tailor_fixtures) for seeds; set
# FIXTURES=<dir> if they are not in build/fixtures. Crashes land in build-fuzz/findings/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-600}
shift || true
build=${BUILD_FUZZ:-$root/build-fuzz}
fixtures=${FIXTURES:-$root/build/fixtures}
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DTAILOR_FUZZ=ON \
  -DTAILOR_TESTS=OFF -DTAILOR_BENCH=OFF >/dev/null
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in "$root"/fuzz/*_fuzz.cpp; do targets+=("$(basename "$f" .cpp)"); done
fi
ninja -C "$build" -j "${JOBS:-2}" "${targets[@]}"

# Seeds: whole libraries for elf_fuzz (and, without the CUDA runtime, for slim_elf_fuzz), their .nv_fatbin/__nv_relfatbin sections for
# fatbin_fuzz, the bundled tailor.toml and recipes for tailor_toml_fuzz; every target also
# reads the small hand-written seeds in fuzz/corpus/<target> (if any).
seed() {
  local t=$1
  local dir=$build/corpus/$t
  mkdir -p "$dir"
  case $t in
    tailor_toml_fuzz) cp "$root"/examples/*.toml "$root"/data/recipes/*.toml "$dir"/ ; return ;;
    elf_fuzz|fatbin_fuzz|slim_elf_fuzz) ;;
    *) return ;;
  esac
  [ -d "$fixtures" ] || { echo "no fixtures at $fixtures: $t starts without seeds"; return; }
  case $t in
    elf_fuzz) cp "$fixtures"/*.so "$dir"/ ;;
    slim_elf_fuzz)
      # Small libraries without the static CUDA runtime, so that a run is not all copying.
      nvcc -shared -Xcompiler -fPIC -cudart none --compress-mode=none -gencode arch=compute_75,code=sm_75 \
        -gencode arch=compute_80,code=[sm_80,compute_80] -o "$dir/two_units.so" \
        "$root/tests/fixtures/kernels.cu" "$root/tests/fixtures/kernels_more.cu" 2>/dev/null || cp "$fixtures"/*.so "$dir"/ ;;
    fatbin_fuzz)
      for so in "$fixtures"/*.so; do
        for sec in .nv_fatbin __nv_relfatbin; do
          objcopy -O binary --only-section="$sec" "$so" "$dir/$(basename "$so" .so)$sec" 2>/dev/null || true
        done
      done
      find "$dir" -size 0 -delete ;;
  esac
}
mkdir -p "$build/findings"
for t in "${targets[@]}"; do
  seed "$t"
  echo "== $t: ${secs}s"
  seeds=()
  [ -d "$root/fuzz/corpus/$t" ] && seeds+=("$root/fuzz/corpus/$t")
  "$build/fuzz/$t" "$build/corpus/$t" "${seeds[@]}" -max_total_time="$secs" -rss_limit_mb=512 \
    -max_len=1048576 -artifact_prefix="$build/findings/$t-" -print_final_stats=1 \
    2>&1 | tee "$build/findings/$t.log" | grep -E "^#[0-9]+ +(DONE|INITED)|stat::|ERROR|SUMMARY" || true
done
