#!/usr/bin/env bash
# `tailor build torch` without --source, the user's first command: tailor's own clone step
# fetches the release tag with its submodules from a remote (--git: here a local
# repository made of tests/torch_fixture, a TEST FIXTURE standing in for PyTorch, with
# tag v2.9.1, a later commit, and third_party/fake_submodule a submodule from a second
# local repository), then the fixture's build runs in the clone. A second build reuses
# the clone. A remote that is not there fails once, in the clone step, and the diagnosis
# names the remote, not the package.
set -euo pipefail
: "${TAILOR:?}" "${TAILOR_SOURCE_DIR:?}"
command -v nvcc > /dev/null || { echo "skipped: no nvcc on PATH"; exit 77; }
command -v git > /dev/null || { echo "skipped: no git"; exit 77; }
py=$(python3 -c 'import sys; print(sys.executable)')
"$py" -c 'import setuptools, wheel' 2> /dev/null || { echo "skipped: python3 lacks setuptools/wheel"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"  # fail
cuda=$(nvcc --version | sed -n 's/.*release \([0-9]*\.[0-9]*\).*/\1/p')
g() { git -c protocol.file.allow=always -c user.name=t -c user.email=t@t -c init.defaultBranch=main "$@" > /dev/null; }

# The remote: the fixture without its submodule folder, then the submodule added from its
# own repository; the tag, then a later commit on the branch (the clone must take the tag).
cp -r "$TAILOR_SOURCE_DIR/tests/torch_fixture/third_party/fake_submodule" "$tmp/sub"
(cd "$tmp/sub" && g init && g add . && g commit -m sub)
cp -r "$TAILOR_SOURCE_DIR/tests/torch_fixture" "$tmp/pytorch"
rm -rf "$tmp/pytorch/third_party/fake_submodule"
(cd "$tmp/pytorch" && g init && g add . && g commit -m tree &&
  g submodule add "file://$tmp/sub" third_party/fake_submodule && g commit -m submodule &&
  g tag v2.9.1 && echo 2.10.0a0 > version.txt && g commit -am later)

args=(--torch 2.9.1 --git "file://$tmp/pytorch" --arch 7.5 --cuda "$cuda" --python "$py"
      --without cudnn --no-venv --work-dir "$tmp/work")
"$TAILOR" build torch "${args[@]}" --out "$tmp/out" > "$tmp/first.out" 2>&1 || { cat "$tmp/first.out"; fail "first build from the clone"; }
clone="$tmp/work/pytorch"
[ "$(git -C "$clone" rev-parse HEAD)" = "$(git -C "$tmp/pytorch" rev-parse v2.9.1)" ] || fail "the clone is not at the tag"
[ "$(cat "$clone/version.txt")" = 2.9.1a0 ] || fail "the clone's version.txt is not the tag's"
[ -s "$clone/third_party/fake_submodule/README" ] || fail "the submodule was not initialised"
[ ! -e "$clone.partial" ] || fail "a partial clone was left"
grep -q "tailor: clone: cloned v2.9.1" "$tmp/work/build.log" || { cat "$tmp/work/build.log"; fail "the log does not say the tag was cloned"; }
ls "$tmp/out"/torch-2.9.1+cu*.whl > /dev/null || fail "no wheel from the clone"
python3 - "$tmp/out" <<'PY' || fail "report of the cloned build"
import glob, json, sys
r = json.load(open(glob.glob(sys.argv[1] + "/*.report.json")[0]))
assert r["ok"] is True and r["torch"]["targets_verified"] == ["sm_75"], r["torch"]["targets_verified"]
assert r["inputs"]["source"] == "v2.9.1", r["inputs"]
assert r["torch"]["plan"]["git_url"].startswith("file://"), r["torch"]["plan"]["git_url"]
PY

# Again (up to configure, which is enough to show it): the clone is reused, a file the
# first build left in it survives, and the build runs in it.
touch "$clone/left-by-the-first-build"
"$TAILOR" build torch "${args[@]}" --configure-only --out "$tmp/out2" > "$tmp/second.out" 2>&1 || { cat "$tmp/second.out"; fail "second build"; }
grep -q "tailor: clone: reused v2.9.1" "$tmp/work/build.log" || { cat "$tmp/work/build.log"; fail "the second build did not reuse the clone"; }
[ -e "$clone/left-by-the-first-build" ] || fail "the clone was made again"
grep -q "stopped after CMake configure" "$tmp/second.out" || fail "the second build did not run in the reused clone"

# A remote that is not there: the clone step fails, once; the diagnosis names the remote.
set +e
"$TAILOR" build torch --torch 2.9.1 --git "file://$tmp/no-such-remote" --arch 7.5 --cuda "$cuda" \
  --python "$py" --without cudnn --no-venv --work-dir "$tmp/work3" --out "$tmp/out3" > "$tmp/bad.out" 2>&1
rc=$?
set -e
cat "$tmp/bad.out"
[ "$rc" = 1 ] || fail "a missing remote must exit 1 (got $rc)"
[ "$(grep -c '^tailor: error:' "$tmp/bad.out")" = 1 ] || fail "the error line is not printed exactly once"
[ "$(grep -c 'does not appear to be a git repository' "$tmp/bad.out")" = 1 ] || fail "git's failure is not printed exactly once"
grep -q "failed after .*exit 1" "$tmp/bad.out" || fail "the clone step did not fail on its own (could not start?)"
grep -q "diagnosis \[clone-unreachable\]" "$tmp/bad.out" || fail "no clone diagnosis"
[ "$(grep -c "^diagnosis " "$tmp/bad.out")" = 1 ] || fail "more than one diagnosis"
grep -q "cannot reach that remote" "$tmp/bad.out" || fail "the diagnosis does not name the remote"
if grep -qi "package's choice\|build-needs-network" "$tmp/bad.out"; then fail "the package is blamed for tailor's clone"; fi
[ ! -e "$tmp/out3" ] || fail "a failed clone published"
[ ! -e "$tmp/work3/pytorch" ] && [ ! -e "$tmp/work3/pytorch.partial" ] || fail "a failed clone left a tree"
echo "build torch clone e2e: ok"
