#!/usr/bin/env bash
# `tailor plan` through the real binary: a T4G Graviton configuration planned for aarch64
# from this host (text, json, sh, dockerfile), the script's environment equal to the
# JSON's env, shellcheck clean, and bad input rejected with nothing on stdout.
set -euo pipefail
: "${TAILOR:?TAILOR must point at the tailor binary}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"  # fail

# T4G implies aarch64 and its CPU (Graviton2, Neoverse N1); the --platform agrees.
g5g=(--torch 2.9.1 --cuda 12.6 --python 3.10 --arch T4G --platform aarch64 --manylinux 2_35)
"$TAILOR" plan torch "${g5g[@]}" --format json > "$tmp/plan.json" 2> "$tmp/plan.err" || fail "plan json: $(cat "$tmp/plan.err")"
python3 - "$tmp/plan.json" <<'PY' || fail "plan json content"
import json, sys
p = json.load(open(sys.argv[1]))
e = p["env"]
want = {"TORCH_CUDA_ARCH_LIST": "7.5", "USE_MKLDNN": "0", "USE_FBGEMM": "0", "USE_QNNPACK": "1",
        "USE_PRIORITIZED_TEXT_FOR_LD": "1", "BUILD_TEST": "0", "CFLAGS": "-g0 -mcpu=neoverse-n1",
        "PYTORCH_BUILD_VERSION": "2.9.1+cu126", "CMAKE_GENERATOR": "Ninja"}
for k, v in want.items():
    assert e.get(k) == v, (k, e.get(k), v)
assert p["wheel_name"] == "torch-2.9.1+cu126-cp310-cp310-manylinux_2_35_aarch64.whl", p["wheel_name"]
assert "setuptools<75" in p["requirements"] and "numpy<2" in p["requirements"]
assert int(e["MAX_JOBS"]) >= 1
PY
# The cross-platform plan is a warning on stderr, not an error. The host is the one tailor
# sees (under qemu-user an aarch64 tailor runs on an x86_64 uname).
host_arch=$("$TAILOR" detect --json --no-python 2>/dev/null | python3 -c 'import json, sys; print(json.load(sys.stdin)["cpu"]["arch"])') \
  || fail "detect --json"
if [ "$host_arch" = aarch64 ]; then
  # Planned here: a host glibc newer than 2.35 is a warning whose fix is the dockerfile.
  if grep -q "is newer than manylinux_2_35" "$tmp/plan.err"; then
    grep -q "^tailor: warning: manylinux: " "$tmp/plan.err" || fail "the glibc problem of a plan is not a warning: $(cat "$tmp/plan.err")"
  fi
else
  grep -q "cannot cross-compile" "$tmp/plan.err" || fail "no cross-compile warning"
fi

"$TAILOR" plan torch "${g5g[@]}" --format sh > "$tmp/plan.sh" 2>/dev/null || fail "plan sh"
bash -n "$tmp/plan.sh" || fail "bash -n"
if command -v shellcheck > /dev/null; then shellcheck -s bash "$tmp/plan.sh" || fail "shellcheck"; fi
# shellcheck disable=SC2016  # $1 is expanded by the inner bash
env -i bash -c '. "$1" && env -0' x "$tmp/plan.sh" > "$tmp/env.bin"
python3 - "$tmp/plan.json" "$tmp/env.bin" <<'PY' || fail "sourced env differs from the plan's env"
import json, sys
plan = json.load(open(sys.argv[1]))
want = plan["env"]
got = dict(kv.split("=", 1) for kv in open(sys.argv[2]).read().split("\0") if kv)
for k in ("PWD", "SHLVL", "_", "OLDPWD"):
    got.pop(k, None)
# A plan for another machine: the CUDA folder, compilers and MAX_JOBS are found or counted
# where the script runs (here, the sourcing shell), so they are set, not this host's values.
for k in plan["build_host_env"]:
    assert got.get(k), (k, "not set by the script")
    got[k] = want[k]
assert plan["for_this_host"] == (plan["platform"] == plan["host_platform"])
assert got == want, (set(got.items()) ^ set(want.items()))
PY

"$TAILOR" plan torch "${g5g[@]}" --format dockerfile > "$tmp/Dockerfile" 2>/dev/null || fail "dockerfile"
grep -q '^FROM nvidia/cuda:12.6.3-devel-ubuntu22.04' "$tmp/Dockerfile" || fail "dockerfile base for glibc 2.35"
"$TAILOR" plan torch "${g5g[@]}" > "$tmp/plan.txt" 2>&1 || fail "text"
grep -q "Estimates:" "$tmp/plan.txt" || fail "text has no estimates"

# Bad input: all problems listed, exit 2, nothing on stdout.
set +e
"$TAILOR" plan torch --torch 2.9.1 --cuda 13.0 --arch 6.0 --python 3.8 --cpu-target avx512 --platform aarch64 \
  --format sh > "$tmp/bad.out" 2> "$tmp/bad.err"
rc=$?
set -e
[ "$rc" = 2 ] || fail "bad variant exit $rc"
[ ! -s "$tmp/bad.out" ] || fail "bad variant wrote to stdout"
for what in sm_60 "Python 3.8" "x86-64-v4 is for x86_64"; do
  grep -q "$what" "$tmp/bad.err" || fail "missing problem: $what"
done
grep -q "^tailor: error:" "$tmp/bad.err" || fail "no tailor: error line"
echo "plan e2e: ok"
