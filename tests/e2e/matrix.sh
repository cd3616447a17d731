#!/usr/bin/env bash
# `tailor matrix` on examples/tailor.toml: the three variant names, plans for each, and a
# GitHub Actions workflow with one job per variant, linted against GitHub's workflow schema
# (check-jsonschema's vendored copy, offline), its run: scripts by shellcheck, and its rules
# checked: hosted jobs within 360 minutes, GPU variants only on self-hosted runners,
# secrets only from `secrets.`, every job with steps.
set -euo pipefail
: "${TAILOR:?}" "${TAILOR_SOURCE_DIR:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"  # fail
cfg="$TAILOR_SOURCE_DIR/examples/tailor.toml"
command -v check-jsonschema > /dev/null || fail "check-jsonschema is missing (scripts/setup.sh installs it)"
command -v shellcheck > /dev/null || fail "shellcheck is missing (scripts/setup.sh installs it)"
python3 -c 'import yaml' 2> /dev/null || fail "PyYAML is missing (scripts/setup.sh installs it)"

"$TAILOR" matrix --config "$cfg" > "$tmp/list.txt" || fail "matrix list"
for n in pytorch-sm90-avx512 pytorch-sm86-avx2 pytorch-cpu-avx2; do
  grep -q "^$n " "$tmp/list.txt" || fail "variant $n not listed"
done
[ "$(grep -c '^pytorch-' "$tmp/list.txt")" = 3 ] || fail "expected exactly 3 variants"
"$TAILOR" matrix --config "$cfg" --json > "$tmp/list.json" || fail "matrix list --json"

# lint WORKFLOW LIST_JSON: the schema, shellcheck over every run: script, and tailor's rules.
lint() {
  check-jsonschema --builtin-schema vendor.github-workflows "$1" > "$tmp/schema.txt" 2>&1 \
    || { cat "$tmp/schema.txt"; fail "$1 is not a valid GitHub Actions workflow"; }
  rm -rf "$tmp/runs" && mkdir "$tmp/runs"
  python3 - "$1" "$2" "$tmp/runs" <<'PY' || fail "workflow rules: $1"
import json, re, sys, yaml
wf = yaml.safe_load(open(sys.argv[1]))
variants = {v["name"]: v for v in json.load(open(sys.argv[2]))["variants"]}
on = wf.get("on", wf.get(True))  # YAML 1.1 reads the key `on` as true
assert "workflow_dispatch" in on, on
assert wf["permissions"] == {"contents": "read"}, wf["permissions"]
assert "group" in wf["concurrency"], wf["concurrency"]
jobs = wf["jobs"]
assert sorted(j["name"] for j in jobs.values()) == sorted(variants), (list(jobs), list(variants))
hosted = 0
for jid, job in jobs.items():
    labels = job["runs-on"] if isinstance(job["runs-on"], list) else [job["runs-on"]]
    self_hosted = "self-hosted" in labels
    timeout = job["timeout-minutes"]
    assert isinstance(timeout, int) and timeout >= 1, (jid, timeout)
    if not self_hosted:
        hosted += 1
        assert timeout <= 360, f"{jid}: {timeout} minutes on GitHub-hosted {labels}"
    else:
        assert timeout <= 7200, (jid, timeout)
    if variants[job["name"]]["cuda"] != "cpu":
        assert self_hosted, f"{jid}: a GPU variant on GitHub-hosted {labels}"
    steps = job["steps"]
    assert steps and all(("run" in s) != ("uses" in s) for s in steps), (jid, steps)
    runs = [s["run"] for s in steps if "run" in s]
    assert any(r.splitlines()[-1].startswith("tailor build torch ") for r in runs), (jid, runs)
    for i, s in enumerate(steps):
        for k, v in (s.get("env") or {}).items():
            assert re.fullmatch(r"\$\{\{ secrets\.[A-Z0-9_]+ \}\}", v), (jid, k, v)
        if "run" in s:
            # shellcheck reads the script with each expression as a plain word.
            body = re.sub(r"\$\{\{[^}]*\}\}", "/github/expr", s["run"])
            open(f"{sys.argv[3]}/{jid}.{i}.sh", "w").write("#!/usr/bin/env bash\n" + body + "\n")
            # The tailor commands, for the check of their options against this tailor.
            with open(f"{sys.argv[3]}/commands.txt", "a") as out:
                for line in s["run"].splitlines():
                    if line.startswith("tailor "):
                        out.write(line + "\n")
    upload = [s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert upload and upload[0]["if"] == "always()", (jid, upload)
# Every expression in the file is tailor's own: the workspace, the concurrency group, a secret.
text = open(sys.argv[1]).read()
for e in re.findall(r"\$\{\{(.*?)\}\}", text):
    assert re.fullmatch(r" (github\.(workspace|workflow|ref)|secrets\.[A-Z0-9_]+) ", e), e
print(f"{len(jobs)} jobs, {hosted} on GitHub-hosted runners")
PY
  shellcheck -s bash "$tmp"/runs/*.sh || fail "shellcheck of the run: scripts of $1"
  # Every option of an emitted tailor command is one this tailor's command takes.
  local sub opt
  while read -r cmd; do
    read -ra words <<< "$cmd"
    sub=${words[1]}
    [ "$sub" = build ] && sub="build ${words[2]}"
    # shellcheck disable=SC2086 # sub is one or two words
    "$TAILOR" $sub --help > "$tmp/help.txt" 2>&1 || true
    for opt in "${words[@]}"; do
      [[ $opt == --* ]] || continue
      grep -qE -- "^ +$opt( |,|$)" "$tmp/help.txt" || echo "tailor $sub $opt" >> "$tmp/missing_options.txt"
    done
  done < "$tmp/runs/commands.txt"
}

"$TAILOR" matrix --config "$cfg" --emit github-actions > "$tmp/wf.yml" 2> "$tmp/wf.err" || fail "emit: $(cat "$tmp/wf.err")"
lint "$tmp/wf.yml" "$tmp/list.json"
[ "$(grep -c '^          tailor build torch --config' "$tmp/wf.yml")" = 3 ] || fail "one build job per variant"
# The CPU-only variant's estimate (6 h on a hosted runner's 4 cores) does not fit the hosted
# limit: a note on stderr and a comment in the job; the workflow is still written.
grep -q "^tailor: note: pytorch-cpu-avx2: the plan estimates .* over the 360-minute limit of a GitHub-hosted job; run it on a self-hosted runner" "$tmp/wf.err" \
  || { cat "$tmp/wf.err"; fail "no note about the hosted limit"; }
grep -q "# WARNING: .* over the 360-minute limit" "$tmp/wf.yml" || fail "no comment about the hosted limit"
"$TAILOR" matrix --config "$cfg" --emit github-actions 2> /dev/null | cmp -s - "$tmp/wf.yml" || fail "output not deterministic"

# [ci.github]: tag pushes, the redis backend, tailor from another repository, sized runners.
cp "$cfg" "$tmp/ci.toml"
cat >> "$tmp/ci.toml" <<'TOML'
[ci.github]
sccache = "redis"
tags = "v*"
tailor_repository = "example-org/tailor"
tailor_ref = "v0.1.0"
[ci.github.runner.gpu-x86_64]
labels = ["self-hosted", "linux", "x64", "h100"]
cores = 64
memory_gib = 512
[ci.github.runner.cpu-x86_64]
labels = ["self-hosted", "linux", "x64", "cpu-64"]
cores = 64
memory_gib = 256
TOML
"$TAILOR" matrix --config "$tmp/ci.toml" --json > "$tmp/ci.json"
"$TAILOR" matrix --config "$tmp/ci.toml" --emit github-actions > "$tmp/ci.yml" 2> "$tmp/ci.err" || fail "emit with [ci.github]: $(cat "$tmp/ci.err")"
lint "$tmp/ci.yml" "$tmp/ci.json"
[ ! -s "$tmp/ci.err" ] || { cat "$tmp/ci.err"; fail "sized self-hosted runners should fit without notes"; }
python3 - "$tmp/ci.yml" <<'PY' || fail "[ci.github] in the workflow"
import sys, yaml
wf = yaml.safe_load(open(sys.argv[1]))
assert wf[True]["push"]["tags"] == ["v*"], wf[True]
job = wf["jobs"]["pytorch-sm90-avx512"]
assert job["runs-on"] == ["self-hosted", "linux", "x64", "h100"], job["runs-on"]
assert job["timeout-minutes"] < 360, job["timeout-minutes"]  # 64 cores: under 1.5 h
build = [s for s in job["steps"] if s.get("name") == "Build"][0]
# The storage reaches tailor as TAILOR_CACHE_URL (Redis has no credentials of its own);
# sccache's own storage variables are tailor's to set.
assert build["env"] == {"TAILOR_CACHE_URL": "${{ secrets.TAILOR_CACHE_URL }}"}, build["env"]
assert "SCCACHE_" not in open(sys.argv[1]).read()
src = [s for s in job["steps"] if s.get("with", {}).get("repository")][0]
assert src["with"] == {"repository": "example-org/tailor", "ref": "v0.1.0", "path": ".tailor-src"}, src
PY

# tailor from a release tarball: the emitted install step really runs, against a tarball laid
# out as scripts/release_tarball.sh lays it out (served as a file: URL in place of https), and
# refuses one that does not match its .sha256.
cp "$cfg" "$tmp/rel.toml"
printf '[ci.github]\ntailor_release = "https://example.invalid/rel/tailor-0.0.0-linux-{arch}.tar.gz"\n' >> "$tmp/rel.toml"
"$TAILOR" matrix --config "$tmp/rel.toml" --json > "$tmp/rel.json"
"$TAILOR" matrix --config "$tmp/rel.toml" --emit github-actions > "$tmp/rel.yml" 2> /dev/null || fail "emit with tailor_release"
lint "$tmp/rel.yml" "$tmp/rel.json"
python3 - "$tmp/rel.yml" > "$tmp/install.sh" <<'PY' || fail "no install step"
import sys, yaml
job = yaml.safe_load(open(sys.argv[1]))["jobs"]["pytorch-cpu-avx2"]
print([s for s in job["steps"] if s.get("name") == "Install tailor"][0]["run"])
PY
name=tailor-0.0.0-linux-$(uname -m)
mkdir -p "$tmp/rel/$name/bin" "$tmp/runner"
cp "$TAILOR" "$tmp/rel/$name/bin/tailor"
tar -C "$tmp/rel" -czf "$tmp/rel/$name.tar.gz" "$name"
(cd "$tmp/rel" && sha256sum "$name.tar.gz" > "$name.tar.gz.sha256")
sed -i "s#https://example.invalid/rel#file://$tmp/rel#" "$tmp/install.sh"
: > "$tmp/github_path"
RUNNER_TEMP="$tmp/runner" GITHUB_PATH="$tmp/github_path" bash -eo pipefail "$tmp/install.sh" > "$tmp/install.out" 2>&1 \
  || { cat "$tmp/install.out"; fail "the emitted install step failed"; }
[ "$(cat "$tmp/github_path")" = "$tmp/runner/tailor/bin" ] || fail "install step: GITHUB_PATH is '$(cat "$tmp/github_path")'"
"$tmp/runner/tailor/bin/tailor" arch 9.0 > /dev/null || fail "the installed tailor does not run"
echo "tampered" >> "$tmp/rel/$name.tar.gz"
rm -rf "$tmp/runner" && mkdir "$tmp/runner"
if RUNNER_TEMP="$tmp/runner" GITHUB_PATH="$tmp/github_path" bash -eo pipefail "$tmp/install.sh" > "$tmp/install.out" 2>&1; then
  fail "the install step unpacked a tarball that does not match its .sha256"
fi
[ ! -e "$tmp/runner/tailor" ] || fail "a tampered tarball was unpacked"

# Hostile [ci.github] values: one error line naming the key, exit 2, no workflow.
# refused NAME WANT <<TOML: tailor.toml plus the TOML on stdin is refused so, saying WANT.
refused() {
  local name=$1 want=$2
  cp "$cfg" "$tmp/$name.toml"
  cat >> "$tmp/$name.toml"
  set +e
  "$TAILOR" matrix --config "$tmp/$name.toml" --emit github-actions > "$tmp/$name.out" 2> "$tmp/$name.err"
  local rc=$?
  set -e
  [ "$rc" = 2 ] || fail "$name: exit $rc, want 2"
  [ ! -s "$tmp/$name.out" ] || fail "$name: a refused config wrote a workflow"
  [ "$(wc -l < "$tmp/$name.err")" = 1 ] || { cat "$tmp/$name.err"; fail "$name: not one error line"; }
  grep -qF -- "$want" "$tmp/$name.err" || { cat "$tmp/$name.err"; fail "$name: lacks $want"; }
}
refused timeout "ci.github.runner.cpu-x86_64.timeout_minutes: 100000 is over the 360-minute limit of a GitHub-hosted job" <<'TOML'
[ci.github.runner.cpu-x86_64]
timeout_minutes = 100000
TOML
refused newline "ci.github.runner.gpu-x86_64.labels[1]: 'a\x0ab' is not a runner label" <<'TOML'
[ci.github.runner.gpu-x86_64]
labels = ["self-hosted", "a\nb"]
TOML
refused expr "ci.github.runner.gpu-aarch64.labels[0]: '\${{ secrets.GITHUB_TOKEN }}' is not a runner label" <<'TOML'
[ci.github.runner.gpu-aarch64]
labels = ["${{ secrets.GITHUB_TOKEN }}"]
TOML
refused hosted_gpu "ci.github.runner.gpu-x86_64.labels: a GPU runner must be self-hosted" <<'TOML'
[ci.github.runner.gpu-x86_64]
labels = ["ubuntu-24.04"]
TOML
refused unknown "ci.github.runner.cpu-x86_64.timeout: unknown key" <<'TOML'
[ci.github.runner.cpu-x86_64]
timeout = 60
TOML

# A variant of the config through plan, as the matrix names it.
"$TAILOR" plan --config "$cfg" --variant pytorch-sm90-avx512 --format json > "$tmp/p.json" 2> "$tmp/p.err" \
  || fail "plan of a matrix variant: $(cat "$tmp/p.err")"
python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["env"]; assert e["TORCH_CUDA_ARCH_LIST"]=="9.0"; assert "-march=x86-64-v4" in e["CXXFLAGS"]' "$tmp/p.json" \
  || fail "sm90-avx512 plan"
set +e
"$TAILOR" matrix --config "$tmp/missing.toml" > /dev/null 2>&1
[ $? = 2 ] || fail "missing config must exit 2"
set -e
if [ -s "$tmp/missing_options.txt" ]; then
  # The workflow is otherwise checked; a runner would stop at these options of this tailor.
  echo "SKIP: the workflow's commands use options this tailor lacks: $(sort -u "$tmp/missing_options.txt" | paste -sd ';' -)"
  exit 77
fi
echo "matrix e2e: ok"
