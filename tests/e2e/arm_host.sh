#!/usr/bin/env bash
# tailor on an Arm host: `detect` names the core and its Neoverse class, and `plan torch`
# on an AWS g5g (Graviton2 + T4G, the GPU as nvidia-smi reports it) needs no --arch and no
# --platform. Needs an aarch64 tailor: scripts/aarch64_check.sh runs this under qemu-user
# with `-cpu neoverse-n1` (TAILOR is then a wrapper); elsewhere it skips.
set -euo pipefail
: "${TAILOR:?TAILOR must point at the tailor binary}"
command -v python3 >/dev/null || { echo "skip: python3 needed to read JSON"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"  # fail

"$TAILOR" detect --json --no-python > "$tmp/detect.json" || fail "detect"
arch=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["cpu"]["arch"])' "$tmp/detect.json")
[ "$arch" = aarch64 ] || { echo "skip: this tailor runs on $arch; the check needs aarch64 (scripts/aarch64_check.sh)"; exit 77; }

python3 - "$tmp/detect.json" <<'PY' || fail "detect json"
import json, sys
c = json.load(open(sys.argv[1]))["cpu"]
arm = c["arm"]
assert c["features_source"] in ("hwcap", "/proc/cpuinfo"), c
assert "fp" in c["features"] and "asimd" in c["features"], c["features"]
# Never the x86 flags of an emulator's host.
assert not any(f.startswith(("avx", "sse")) for f in c["features"]), c["features"]
assert arm["cores"] and arm["midr"].startswith("0x"), arm
assert c["isa_level"].startswith("armv"), c
PY
"$TAILOR" detect --no-python > "$tmp/detect.txt" || fail "detect text"
grep -q "^  arm core" "$tmp/detect.txt" || fail "no arm core line: $(cat "$tmp/detect.txt")"

# The g5g: its one GPU, as the driver names it, through nvidia-smi (no NVML here).
mkdir "$tmp/bin"
cat > "$tmp/bin/nvidia-smi" <<'SH'
#!/bin/sh
echo "0, NVIDIA T4G, 7.5, 15360, GPU-00000000-0000-0000-0000-000000000000, 550.54.15"
SH
chmod +x "$tmp/bin/nvidia-smi"
PATH="$tmp/bin:$PATH" "$TAILOR" detect --json --no-python > "$tmp/g5g.json" || fail "detect with a T4G"
python3 -c 'import json,sys; g=json.load(open(sys.argv[1]))["gpus"]; assert [(x["name"], x["compute_capability"]) for x in g] == [("NVIDIA T4G", "7.5")], g' "$tmp/g5g.json" \
  || fail "T4G not detected"

class=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["cpu"]["arm"]["neoverse_class"])' "$tmp/g5g.json")
set +e
PATH="$tmp/bin:$PATH" "$TAILOR" plan torch --torch 2.9.1 --cuda 12.6 --python 3.10 --format json \
  > "$tmp/plan.json" 2> "$tmp/plan.err"
rc=$?
set -e
# A missing CUDA 12.6 or Python 3.10 here is a host problem (exit 1), never bad input (2).
[ "$rc" -le 1 ] || fail "plan exit $rc: $(cat "$tmp/plan.err")"
python3 - "$tmp/plan.json" "$class" <<'PY' || fail "plan for this g5g"
import json, sys
p = json.load(open(sys.argv[1]))
e = p["env"]
assert p["platform"] == "aarch64", p["platform"]
assert e["TORCH_CUDA_ARCH_LIST"] == "7.5", e["TORCH_CUDA_ARCH_LIST"]
assert p["cpu_target"] == "neoverse-n1", p["cpu_target"]
assert "-mcpu=neoverse-n1" in e["CFLAGS"], e["CFLAGS"]
assert e["USE_FBGEMM"] == "0" and e["USE_MKLDNN"] == "0", e
assert p["wheel_name"].endswith("_aarch64.whl"), p["wheel_name"]
PY
echo "arm host e2e ok (core class ${class:-none})"
