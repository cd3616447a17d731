#!/usr/bin/env bash
# The round's proofs on a GPU machine, the way its user has it: root, no bubblewrap, torch in
# a venv, no network, no unzip. Not part of CI. Run from the repository root with a portable
# tailor (scripts/portable_bundle.sh) at $TAILOR and the torch venv's python at $PY:
#
#   TAILOR=.carry/tailor/bin/tailor PY=/opt/torch/.venv/bin/python bash bench/gpu_round.sh [OUT]
#
#  1. the bundled example built for this GPU under --sandbox (as root, without bwrap): the
#     wheel pins the torch it was built against, `pip install` takes it beside that torch with
#     no network and `pip check` agrees, and its kernels match torch's on the GPU;
#  2. the same example built without --sandbox: the same wheel bytes (the sandbox changes
#     nothing in the result), each build's time side by side;
#  3. the hostile packages of tests/e2e/build_hostile.sh (escapes as root under --sandbox,
#     a symlink to /etc/passwd, daemons, pipe holders, long lines, unpack bombs).
# Each part prints one "gpu_round:" line with what it found.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
tailor=$(cd "$(dirname "${TAILOR:?TAILOR: a portable tailor}")" && pwd)/$(basename "$TAILOR")
py=${PY:?PY: the python of the torch venv}
out=${1:-/tmp/gpu_round}
mkdir -p "$out"
export PATH="$(dirname "$py"):$PATH"
say() { echo "gpu_round: $*"; }

say "machine: $(nvidia-smi --query-gpu=name,compute_cap --format=csv,noheader | head -1); $(id -un); bwrap: $(command -v bwrap || echo none); torch $("$py" -c 'import torch; print(torch.__version__)')"
"$tailor" detect | head -20

# 1. --sandbox, as root.
t0=$(date +%s.%N)
"$tailor" build "$here/examples/fused_ops" --sandbox --out "$out/sandbox" --progress plain \
  >"$out/sandbox.log" 2>&1
rc=$?
t1=$(date +%s.%N)
tail -25 "$out/sandbox.log"
whl=$(ls "$out"/sandbox/*.whl 2>/dev/null | head -1)
say "sandbox build: exit $rc in $(python3 -c "print(round($t1-$t0,1))") s: ${whl:-no wheel}"
if [ -n "$whl" ]; then
  "$py" - "$whl" <<'PY'
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
text = z.read(meta).decode()
print("gpu_round: METADATA:", [l for l in text.splitlines() if l.startswith(("Version:", "Requires-Dist: torch"))])
PY
  "$tailor" inspect "$whl" --gpu "$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1)" | tail -8
  "$py" -m pip install --no-index --no-deps --force-reinstall -q "$whl" && say "pip install: ok"
  "$py" -m pip check && say "pip check: ok (the pinned torch is the installed one)"
  "$py" -m pip install --no-index --dry-run --report "$out/report.json" -q "$whl" >/dev/null 2>&1 &&
    say "pip resolution with no network and no other index: satisfied by the installed torch"
  (cd "$here/examples/fused_ops/tests" && "$py" test_ops.py 2>&1 | tail -5)
  say "kernels vs torch on the GPU: exit $?"
fi

# 2. Without --sandbox: the same wheel.
t2=$(date +%s.%N)
"$tailor" build "$here/examples/fused_ops" --out "$out/plain" --progress plain >"$out/plain.log" 2>&1
rc2=$?
t3=$(date +%s.%N)
whl2=$(ls "$out"/plain/*.whl 2>/dev/null | head -1)
say "plain build: exit $rc2 in $(python3 -c "print(round($t3-$t2,1))") s"
if [ -n "$whl" ] && [ -n "$whl2" ]; then
  say "sha256 sandbox $(sha256sum "$whl" | cut -c1-16) plain $(sha256sum "$whl2" | cut -c1-16)"
fi

# 3. The hostile packages, as root on this machine.
TAILOR="$tailor" TAILOR_SOURCE_DIR="$here" timeout 400 bash "$here/tests/e2e/build_hostile.sh" \
  >"$out/hostile.log" 2>&1
rc3=$?
grep -E '^(ok|FAIL|skip)' "$out/hostile.log" | head -60
say "build_hostile.sh: exit $rc3"
