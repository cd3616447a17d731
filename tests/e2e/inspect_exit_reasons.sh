#!/usr/bin/env bash
# Every non-zero exit of `tailor inspect` names its reason on stderr in one line, and what
# only warns says so without failing (README.md, "What fails an inspect run"). Issue 27:
# bitsandbytes 0.50.2 passed every `--gpu H100` verdict and exited 1 without a word, because
# its manylinux tag is wrong for its ROCm backends; here a wheel with a stand-in ROCm
# backend (fixture rocm_backend.so needs libhipblas.so.2) plays it.
set -uo pipefail
fixtures="$TAILOR_BINARY_DIR/fixtures"
for f in sass_75_80.so plain_c.so glibc_234.so rocm_backend.so; do
  [ -f "$fixtures/$f" ] || { echo "skip: fixture $f not built (needs nvcc; target tailor_fixtures)"; exit 77; }
done
command -v python3 >/dev/null || { echo "skip: python3 not found"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"  # fail, make_wheel
m=$(python3 -c "import json,sys; print(json.load(sys.stdin)['libraries'][0]['machine'])" \
  < <("$TAILOR" inspect --json "$fixtures/sass_75_80.so"))
[ -n "$m" ] || fail "inspect could not read the fixtures' machine"

# run WANT_EXIT ARGS...: inspect's exit must be WANT_EXIT; stdout to out.txt, stderr to err.txt.
run() {
  local want=$1; shift
  "$TAILOR" inspect "$@" >"$work/out.txt" 2>"$work/err.txt"; local rc=$?
  [ "$rc" = "$want" ] || fail "inspect $*: exit $rc, want $want; stderr: $(cat "$work/err.txt")"
  if [ "$want" = 1 ]; then
    [ "$(grep -c '^tailor inspect: exit 1: ' "$work/err.txt")" = 1 ] ||
      fail "inspect $*: exit 1 without exactly one reason line on stderr: $(cat "$work/err.txt")"
  elif [ "$want" = 0 ]; then
    ! grep -q 'exit 1' "$work/err.txt" || fail "inspect $*: exit 0 but stderr says: $(cat "$work/err.txt")"
  fi
}
err_has() { grep -qE "$1" "$work/err.txt" || fail "stderr lacks '$1': $(cat "$work/err.txt")"; }

# 1. The tag is wrong only for the ROCm backend: the CUDA and CPU libraries fit it. Every
# verdict passes, so the run passes, with one warning naming the ROCm library.
bnb="$work/bnb-1.0-py3-none-manylinux_2_34_$m.whl"
make_wheel "$bnb" "$fixtures/sass_75_80.so:bnb/libbnb_cuda130.so" "$fixtures/plain_c.so:bnb/libbnb_cpu.so" \
  "$fixtures/rocm_backend.so:bnb/libbnb_rocm64.so" || fail "could not make the wheel"
for args in "" "--gpu T4" "--gpu 8.0 --require 7.5"; do
  # shellcheck disable=SC2086
  run 0 $args "$bnb"
  err_has "^tailor inspect: warning: bnb-1.0-py3-none-manylinux_2_34_$m.whl: its manylinux tag manylinux_2_34_$m holds for the CUDA and CPU libraries but not for the ROCm library \(bnb/libbnb_rocm64.so\)"
  grep -q "manylinux  needs linux_$m, claims manylinux_2_34_$m: WRONG for the ROCm libraries only (a warning" "$work/out.txt" ||
    fail "manylinux line: $(grep manylinux "$work/out.txt")"
done
"$TAILOR" inspect --json "$bnb" 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
w, o = d["wheels"][0], d["outcome"]
assert not w["claim_ok"] and w["claim_ok_without_other_gpu"], w
assert w["other_gpu_libraries"] == [{"path": "bnb/libbnb_rocm64.so", "platform": "ROCm"}], w["other_gpu_libraries"]
assert o["exit"] == 0 and o["failures"] == [] and len(o["warnings"]) == 1, o' || fail "--json outcome of the ROCm wheel"
echo "ok: a manylinux tag wrong only for a ROCm backend warns, exit 0"

# 2. A GPU verdict fails: the reason names the device and the library.
run 1 --gpu 9.0 "$bnb"
err_has "^tailor inspect: exit 1: --gpu 9.0: 1 of 1 library does not run on it \(bnb/libbnb_cuda130.so\) \(see the verdict FAIL lines\)$"
run 1 --exact 8.0 "$bnb"
err_has "^tailor inspect: exit 1: --exact: 1 of 1 library differs from the spec \(bnb/libbnb_cuda130.so has extra sm_75\)"
run 1 --require "8.0;9.0" "$bnb"
err_has "^tailor inspect: exit 1: --require: 1 of 1 library lacks required targets \(bnb/libbnb_cuda130.so lacks sm_90\)"
echo "ok: failed verdicts name the check, the device and the library on stderr"

# 3. The tag is wrong for a CPU library too (GLIBC_2.34 under manylinux_2_17): a failure,
# whatever --gpu says, naming the tag and the symbol version.
liar="$work/bnb-2.0-py3-none-manylinux_2_17_$m.whl"
make_wheel "$liar" "$fixtures/sass_75_80.so:bnb/libbnb_cuda130.so" "$fixtures/glibc_234.so:bnb/libbnb_cpu.so" \
  "$fixtures/rocm_backend.so:bnb/libbnb_rocm64.so" || fail "could not make the wheel"
for args in "" "--gpu T4"; do
  # shellcheck disable=SC2086
  run 1 $args "$liar"
  err_has "^tailor inspect: exit 1: bnb-2.0-py3-none-manylinux_2_17_$m.whl: its manylinux tag is wrong: claims manylinux_2_17_$m but the libraries need manylinux_2_34_$m \(needs GLIBC_2.34 .*\) \(see the manylinux line\)$"
done
echo "ok: a manylinux tag the CPU library does not fit fails, and says why"

# 4. A tampered RECORD: the reason names the wheel and the RECORD line.
tampered="$work/demo-1.0-py3-none-linux_$m.whl"
make_wheel --bad-hash "$tampered" "$fixtures/plain_c.so:demo/p.so" || fail "could not make the wheel"
run 1 "$tampered"
err_has "^tailor inspect: exit 1: demo-1.0-py3-none-linux_$m.whl: RECORD check failed: 1 mismatched, 0 unlisted, 0 missing \(see the RECORD line\)$"
# Several failures stay on one line.
run 1 --gpu 9.0 "$tampered" "$liar"
echo "ok: a tampered RECORD fails and says why; several failures share one line"

# 5. Bad input: exit 2, one error line, nothing on stdout.
head -c 1000 "$bnb" > "$work/cut-1.0-py3-none-linux_$m.whl"
run 2 "$work/cut-1.0-py3-none-linux_$m.whl"
if [ "$(wc -l < "$work/err.txt")" != 1 ] || ! grep -q '^tailor: error: ' "$work/err.txt"; then
  fail "bad input stderr: $(cat "$work/err.txt")"
fi
[ ! -s "$work/out.txt" ] || fail "bad input printed to stdout"
echo "ok: bad input exits 2 with one error line"
echo "PASS"
