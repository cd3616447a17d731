#!/usr/bin/env bash
# tailor detect on this machine: exit 0, JSON with the documented keys, the GPU (or a
# clean "no GPU"), nvcc and torch as installed.
set -euo pipefail
: "${TAILOR:?TAILOR must point at the built binary}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"  # fail

# A generous torch import timeout: CI machines are often loaded.
"$TAILOR" detect --json --python-timeout 120 >"$tmp/out.json" 2>"$tmp/err"
"$TAILOR" detect --no-python >"$tmp/out.txt"

python3 - "$tmp/out.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for key in ("os", "cpu", "memory", "disk", "gpus", "driver", "cuda_toolkits", "compilers", "pythons", "tools", "notes"):
    assert key in r, f"missing key {key}"
assert r["cpu"]["logical_cores"] > 0, r["cpu"]
assert r["cpu"]["isa_level"], r["cpu"]
assert r["memory"]["total"] > 0 and 0 < r["memory"]["usable"] <= r["memory"]["total"], r["memory"]
for g in r["gpus"]:
    assert g["name"] and "." in g["compute_capability"], g
PY

# Jobs count the CPUs this process may use: pinned to one CPU (taskset, as a batch
# scheduler's cpuset does), detect says 1 usable and why.
if command -v taskset >/dev/null; then
  taskset -c 0 "$TAILOR" detect --json --no-python >"$tmp/pinned.json"
  python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["cpu"]; assert c["usable_cores"] == 1, c; assert c["logical_cores"] == 1 or c["cores_limited_by"] == "affinity", c' "$tmp/pinned.json"
  python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["cpu"]; assert 0 < c["usable_cores"] <= c["logical_cores"], c' "$tmp/out.json"
else
  echo "SKIP pinned-CPU check: no taskset"
fi

if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["gpus"] and r["driver"]["version"], r["gpus"]' "$tmp/out.json"
else
  grep -q "no GPU" "$tmp/out.txt" || { cat "$tmp/out.txt"; fail "expected 'no GPU' in human output"; }
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["gpus"] == [] and any(n.startswith("no GPU") for n in r["notes"]), r["notes"]' "$tmp/out.json"
fi

if command -v nvcc >/dev/null; then
  want=$(nvcc --version | sed -n 's/.*release \([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p')
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert any(t["version"].startswith(sys.argv[2] + ".") for t in r["cuda_toolkits"]), (sys.argv[2], r["cuda_toolkits"])' "$tmp/out.json" "$want"
fi

if python3 -c 'import torch' 2>/dev/null; then
  py=$(command -v python3)
  python3 - "$tmp/out.json" "$py" <<'PY'
import json, os, sys, torch
r = json.load(open(sys.argv[1]))
found = [p for p in r["pythons"] if p["torch"] and p["torch"]["version"] == torch.__version__]
assert found, ("torch", torch.__version__, "not reported", r["pythons"])
t = found[0]["torch"]
assert t["cuda_version"] == torch.version.cuda, t
if torch.version.cuda:
    assert t["arch_list"], t  # from get_arch_list() or the compiled-in arch flags
PY
fi

# Bad input: a build dir that does not exist is a usage error, with nothing on stdout.
set +e
"$TAILOR" detect --build-dir /nonexistent/dir >"$tmp/bad.out" 2>"$tmp/bad.err"
rc=$?
set -e
[ "$rc" -eq 2 ] || { echo "expected exit 2 for a missing --build-dir, got $rc"; exit 1; }
[ ! -s "$tmp/bad.out" ] || { echo "partial output on bad input"; exit 1; }
grep -q "^tailor: error:" "$tmp/bad.err"

# --no-python skips interpreters; --python adds one (missing ones become a note).
"$TAILOR" detect --json --no-python >"$tmp/nopy.json"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["pythons"] == []' "$tmp/nopy.json"
"$TAILOR" detect --json --python /nonexistent/python9 >"$tmp/extra.json"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert any("/nonexistent/python9" in n for n in r["notes"]), r["notes"]' "$tmp/extra.json"
echo "detect e2e ok"
