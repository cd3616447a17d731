#!/usr/bin/env bash
# End-to-end: `tailor arch` on the examples of the foundation issue, through the real binary.
set -u
: "${TAILOR:?TAILOR must point at the built binary}"
[ -x "$TAILOR" ] || { echo "skip: $TAILOR not built"; exit 77; }
command -v python3 >/dev/null || { echo "skip: python3 needed to read JSON"; exit 77; }

# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"  # fail, ok, bad, expect_eq
# json_text JSON PYTHON-EXPR: a field of the JSON text itself (j is the parsed document).
json_text() { python3 -c 'import json,sys; j=json.load(sys.stdin); print(eval(sys.argv[1]))' "$2" <<<"$1"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# T4G is 7.5 and names sm_75; g5g.xlarge is the same.
for spec in T4G g5g.xlarge t4g G5G.2XLARGE; do
  out=$("$TAILOR" arch "$spec" --json); rc=$?
  expect_eq "$spec exit" "$rc" 0
  expect_eq "$spec targets" "$(json_text "$out" '" ".join(j["targets"])')" sm_75
  expect_eq "$spec native on" "$(json_text "$out" '[r["cc"] for r in j["runs_on"] if r["mode"]=="native"]')" "['7.5']"
done

# A name that exists on one platform only says which, and what CPU it implies.
"$TAILOR" arch g5g.xlarge >"$tmp/g5g.txt"
grep -q "^platform aarch64 (only there: g5g.xlarge: instance g5g; CPU neoverse-n1 (Neoverse-N1, as in AWS Graviton2" "$tmp/g5g.txt" \
  && ok "g5g.xlarge names aarch64 and Graviton2" || { bad "g5g.xlarge platform line"; cat "$tmp/g5g.txt"; }
if "$TAILOR" arch 8.6 | grep -q "^platform"; then bad "8.6 implies no platform"; else ok "8.6 implies no platform"; fi

out=$("$TAILOR" arch "8.0;8.6+PTX" --json); rc=$?
expect_eq "8.0;8.6+PTX exit" "$rc" 0
expect_eq "8.0;8.6+PTX torch" "$(json_text "$out" 'j["torch_cuda_arch_list"]')" "8.0;8.6+PTX"
expect_eq "8.0;8.6+PTX cmake" "$(json_text "$out" 'j["cmake_cuda_architectures"]')" "80-real;86"
expect_eq "8.0;8.6+PTX gencode" "$(json_text "$out" '" ".join(j["gencode"])')" \
  "-gencode=arch=compute_80,code=sm_80 -gencode=arch=compute_86,code=sm_86 -gencode=arch=compute_86,code=compute_86"
# Each spelling read back by the binary is the same set.
t0=$(json_text "$out" '" ".join(j["targets"])')
t1=$("$TAILOR" arch "$(json_text "$out" 'j["cmake_cuda_architectures"]')" --json | json_text "$(cat)" '" ".join(j["targets"])')
expect_eq "CMake spelling reads back" "$t1" "$t0"
read -r -a flags <<<"$(json_text "$out" '" ".join(j["gencode"])')"
t2=$("$TAILOR" arch --json -- "${flags[@]}" | json_text "$(cat)" '" ".join(j["targets"])')
expect_eq "gencode spelling reads back" "$t2" "$t0"

# Hopper follows torch: 9.0+PTX.
out=$("$TAILOR" arch Hopper --json)
expect_eq "Hopper" "$(json_text "$out" '" ".join(j["targets"]) + " " + j["torch_cuda_arch_list"]')" "sm_90 compute_90 9.0+PTX"

# CUDA 13.0 cannot target sm_60: one line naming the target and the lowest, exit 1, no stdout.
err=$("$TAILOR" arch 6.0 --nvcc 13.0 2>&1 >"$tmp/stdout"); rc=$?
expect_eq "6.0 --nvcc 13.0 exit" "$rc" 1
expect_eq "6.0 --nvcc 13.0 message" "$err" "tailor: error: CUDA 13.0 cannot target sm_60; its lowest is 7.5 (sm_75)"
grep -q "CUDA 13.0 cannot target sm_60" "$tmp/stdout" && ok "6.0 --nvcc 13.0 report still printed" || bad "6.0 --nvcc 13.0: no report"
# Without --nvcc the nvcc on PATH is checked: the same fact, the same exit.
if command -v nvcc >/dev/null && nvcc --version | grep -q "release 13\."; then
  "$TAILOR" arch sm_70 >/dev/null 2>"$tmp/auto.err"; rc=$?
  expect_eq "sm_70 with nvcc 13 on PATH exit" "$rc" 1
  expect_eq "sm_70 with nvcc 13 on PATH message" "$(cat "$tmp/auto.err")" "tailor: error: CUDA 13.0 cannot target sm_70; its lowest is 7.5 (sm_75)"
fi
"$TAILOR" arch 6.0 --nvcc 12.6 --json >/dev/null; rc=$?
expect_eq "6.0 --nvcc 12.6 exit" "$rc" 0

# sm_90a runs only on 9.0.
out=$("$TAILOR" arch sm_90a --json)
expect_eq "sm_90a runs on" "$(json_text "$out" '" ".join(r["cc"] + ":" + r["mode"] for r in j["runs_on"])')" "9.0:native"

# Unknown input: one error line naming the token and the nearest spellings, exit 2.
err=$("$TAILOR" arch hoper 2>&1 >"$tmp/stdout"); rc=$?
expect_eq "hoper exit" "$rc" 2
expect_eq "hoper message" "$err" "tailor: error: unknown CUDA target 'hoper' (did you mean: Hopper, H100?)"
expect_eq "hoper stdout" "$(cat "$tmp/stdout")" ""
"$TAILOR" arch 8.0 --nvcc 12.7 >/dev/null 2>&1; rc=$?
expect_eq "--nvcc 12.7 exit" "$rc" 2
"$TAILOR" arch >/dev/null 2>&1; rc=$?
expect_eq "no spec exit" "$rc" 2

# Human output: the canonical list, each consumer, the runs-on table, the CUDA versions.
out=$("$TAILOR" arch "8.0;8.6+PTX" --nvcc 12.8)
for want in "targets  sm_80 sm_86 compute_86" "CMAKE_CUDA_ARCHITECTURES   80-real;86" "FLASH_ATTN_CUDA_ARCHS" \
            "8.9   compatible SASS  sm_86" "9.0   PTX JIT" "8.7   PTX JIT" "built by CUDA 11.8-13.2"; do
  if grep -qF -- "$want" <<<"$out"; then expect_eq "text has '$want'" y y; else expect_eq "text has '$want'" n y; fi
done

# GPU names of several words, several arguments, all-major through the table.
out=$("$TAILOR" arch "RTX 4090" "Jetson Orin" A100 --json)
expect_eq "several GPUs" "$(json_text "$out" '" ".join(j["targets"])')" "sm_80 sm_87 sm_89"
out=$("$TAILOR" arch all-major --nvcc 13.0 --json)
expect_eq "all-major 13.0" "$(json_text "$out" 'j["cmake_cuda_architectures"]')" "75-real;80-real;90-real;100-real;110-real;120"

exit $fail
