#!/usr/bin/env bash
# `tailor build torch` end to end on tests/torch_fixture (a TEST FIXTURE honouring
# PyTorch's build interface, compiling one real .cu with the real nvcc): the wheel is
# named in the official style, its targets verified, and report, release notes and a
# runtime Dockerfile are published beside it. One target (sm_75), tiny kernel.
set -euo pipefail
: "${TAILOR:?}" "${TAILOR_SOURCE_DIR:?}"
command -v nvcc > /dev/null || { echo "skipped: no nvcc on PATH"; exit 77; }
py=$(python3 -c 'import sys; print(sys.executable)')
"$py" -c 'import setuptools, wheel' 2> /dev/null || { echo "skipped: python3 lacks setuptools/wheel"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"  # fail
cp -r "$TAILOR_SOURCE_DIR/tests/torch_fixture" "$tmp/src"
cuda=$(nvcc --version | sed -n 's/.*release \([0-9]*\.[0-9]*\).*/\1/p')
pyver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
cu=cu${cuda/./}
cp=cp${pyver/./}

# cuDNN is off: the fixture needs none, and CI machines have none (with it on, the
# pre-flight reports "cuDNN ... not found" and stops: checked below).
args=(--source "$tmp/src" --arch 7.5 --cuda "$cuda" --python "$py" --without cudnn --no-venv
      --work-dir "$tmp/work" --out "$tmp/out")
"$TAILOR" build torch "${args[@]}" > "$tmp/build.out" 2>&1 || { cat "$tmp/build.out"; fail "build torch"; }
cat "$tmp/build.out"
wheel=$(cd "$tmp/out" && ls torch-*.whl)
[[ "$wheel" =~ ^torch-2\.9\.1\+${cu}-${cp}-${cp}-manylinux_2_[0-9]+_$(uname -m)\.whl$ ]] || fail "wheel name $wheel"
for f in "$wheel.report.json" "$wheel.RELEASE_NOTES.md" Dockerfile.runtime "$wheel.build.log"; do
  [ -s "$tmp/out/$f" ] || fail "missing $f"
done
"$TAILOR" inspect "$tmp/out/$wheel" --json > "$tmp/inspect.json" || fail "inspect of the published wheel"
python3 - "$tmp/out/$wheel.report.json" "$tmp/out/$wheel" <<'PY' || fail "report / wheel content"
import json, sys, zipfile
r = json.load(open(sys.argv[1]))
t = r["torch"]  # the one build report, with torch's own section
assert r["ok"] is True, r["ok"]
assert t["targets_verified"] == ["sm_75"], t["targets_verified"]
assert t["import"]["arch_list"] == ["sm_75"], t["import"]
assert t["import"]["version"].startswith("2.9.1+cu"), t["import"]
assert t["plan"]["env"]["TORCH_CUDA_ARCH_LIST"] == "7.5"
assert "cuda-cudart-" in " ".join(t["runtime_packages"]), t["runtime_packages"]
assert r["wheel"]["sha256"] and r["wheel"]["bytes_per_target"], r["wheel"]
# The one builder's run: how parallelism was decided, the fixed work path, the
# reproducibility settings the steps had.
run = r["run"]
assert run["memory"]["mode"] in ("governor", "static") and run["memory"]["reason"], run.get("memory")
assert run["work_path"], run
if run["work_path_route"] != "none":
    assert run["work_path"] == "/tmp/.tailor-build/torch", run["work_path"]
env = r["environment"]["set"]
assert env["SOURCE_DATE_EPOCH"].isdigit(), env.get("SOURCE_DATE_EPOCH")
assert "-ffile-prefix-map=" in env["CXXFLAGS"], env.get("CXXFLAGS")
assert any(c["name"] == "targets" and c["status"] == "passed" for c in r["checks"]), r["checks"]
z = zipfile.ZipFile(sys.argv[2])
wheel_file = [n for n in z.namelist() if n.endswith(".dist-info/WHEEL")][0]
tag = sys.argv[2].rsplit("/", 1)[1][:-4].split("-", 2)[2]
assert ("Tag: " + tag) in z.read(wheel_file).decode(), z.read(wheel_file)
PY
grep -q "cuda-cudart-" "$tmp/out/Dockerfile.runtime" || fail "runtime Dockerfile lacks the CUDA runtime package"
grep -q "sm_75" "$tmp/out/$wheel.RELEASE_NOTES.md" || fail "release notes lack the target"

# The same source built from another work folder and another source folder gives the same
# wheel, byte for byte: the steps see the source at the fixed work path, with the
# reproducible nvcc seed and SOURCE_DATE_EPOCH, which comes from the source, never from its
# files' times: two plain copies (cp -r), one with its times moved 20 years back.
cp -r "$TAILOR_SOURCE_DIR/tests/torch_fixture" "$tmp/srcA"
cp -r "$TAILOR_SOURCE_DIR/tests/torch_fixture" "$tmp/srcB"
find "$tmp/srcB" -exec touch -h -d @1000000000 {} +
for side in A B; do
  "$TAILOR" build torch --source "$tmp/src$side" --arch 7.5 --cuda "$cuda" --python "$py" --without cudnn --no-venv \
    --work-dir "$tmp/work$side" --out "$tmp/out$side" > "$tmp/build$side.out" 2>&1 \
    || { cat "$tmp/build$side.out"; fail "build torch from folder $side"; }
done
shaA=$(sha256sum "$tmp/outA/$wheel" | cut -d' ' -f1)
shaB=$(sha256sum "$tmp/outB/$wheel" | cut -d' ' -f1)
[ "$shaA" = "$shaB" ] || { cat "$tmp/buildB.out"; fail "two work folders gave two wheels ($shaA, $shaB)"; }

# --configure-only stops after configure (setup.py --cmake-only, as PyTorch's setup.py takes
# it): exit 0, nothing published.
cp -r "$TAILOR_SOURCE_DIR/tests/torch_fixture" "$tmp/src3"
"$TAILOR" build torch --source "$tmp/src3" --arch 7.5 --cuda "$cuda" --python "$py" --without cudnn --no-venv \
  --configure-only --work-dir "$tmp/work3" --out "$tmp/out3" > "$tmp/cfg.out" 2>&1 || { cat "$tmp/cfg.out"; fail "configure-only"; }
grep -q "stopped after CMake configure" "$tmp/cfg.out" || fail "configure-only message"
grep -q "^TORCH_CUDA_ARCH_LIST=7.5$" "$tmp/src3/build/CMakeCache.txt" || fail "configure did not see the plan's env"
if [ -e "$tmp/out3" ] || [ -e "$tmp/src3/torch/lib/libtorch_cuda.so" ]; then fail "configure-only built or published"; fi

# Pre-flight stops a build that cannot work, before building, with nothing published.
set +e
"$TAILOR" build torch --source "$tmp/src" --arch 6.0 --cuda 13.0 --python "$py" --no-venv --without cudnn \
  --work-dir "$tmp/work2" --out "$tmp/out2" > "$tmp/bad.out" 2>&1
rc=$?
set -e
[ "$rc" = 2 ] || { cat "$tmp/bad.out"; fail "sm_60 with CUDA 13 must exit 2 (got $rc)"; }
grep -q "sm_60" "$tmp/bad.out" || fail "no sm_60 problem"
[ ! -e "$tmp/out2" ] || fail "output folder created for a failed build"
# The default work folder (relative "tailor-work") and a relative --source, from another
# folder: every step gets absolute paths, so the venv's interpreter is found by the steps
# that run inside the source tree. Offline (PIP_NO_INDEX) the requirements step then
# fails in pip itself, which shows it ran; before, the interpreter path did not resolve.
mkdir -p "$tmp/cwd4"
cp -r "$TAILOR_SOURCE_DIR/tests/torch_fixture" "$tmp/src4"
set +e
(cd "$tmp/cwd4" && PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 "$TAILOR" build torch --source ../src4 --arch 7.5 \
  --cuda "$cuda" --python "$py" --without cudnn --out "$tmp/out4") > "$tmp/default.out" 2>&1
rc=$?
set -e
log4="$tmp/cwd4/tailor-work/build.log"
[ -x "$tmp/cwd4/tailor-work/venv/bin/python" ] || { cat "$tmp/default.out"; fail "no venv under the default work folder"; }
[ -s "$log4" ] || { cat "$tmp/default.out"; fail "no build log in the default work folder"; }
if grep -q "venv/bin/python.*No such file" "$log4" "$tmp/default.out"; then
  cat "$tmp/default.out"; fail "a step did not find the venv's interpreter"
fi
if [ "$rc" = 0 ]; then
  ls "$tmp/out4"/torch-*.whl > /dev/null || fail "default work folder: exit 0 without a wheel"
else
  [ "$rc" = 1 ] || { cat "$tmp/default.out"; fail "default work folder: exit $rc"; }
  grep -qE "No matching distribution|Could not find a version" "$log4" \
    || { cat "$tmp/default.out" "$log4"; fail "the requirements step did not reach pip"; }
  [ ! -e "$tmp/out4" ] || fail "a failed build published"
fi

echo "build torch e2e: ok"
