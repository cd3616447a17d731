#!/usr/bin/env bash
# End-to-end: the same wheel from any folder with nothing installed (issue 38). bubblewrap
# is hidden from PATH (a folder of links to every other program), so the fixed work path
# comes from tailor's own mount namespace or, where none can be made, a real fixed folder:
#  - the test fixture (tests/e2e/data/tiny_ext, --arch 8.0) built in one work folder and
#    HOME on the namespace route (the report says "namespace"), and at the same time where
#    no namespace can be made (a seccomp filter refuses unshare, as container runtimes'
#    default profiles do: lib/deny_unshare.py) from another work folder and HOME, which
#    takes the folder route and says why: one sha256; the folder build's tree is back in
#    its work folder afterwards and nothing is left at the fixed folder;
#  - two builds of one package (the test fixture, tests/e2e/data/tiny_ext: seconds) from
#    two work folders at once on the folder route (forced: TAILOR_FIXED_PATH_ROUTE=folder,
#    the switch for tests): the second waits for the first
#    (`waiting for tailor build pid N using /tmp/.tailor-build/tiny_ext`), both succeed,
#    with one sha256;
#  - an unprivileged user (setpriv to nobody) gets the namespace too: tailor's launcher
#    run as that user sees its folder at the fixed path and writes files as itself; where
#    that user can also run python3 with torch, its build of the fixture has the same
#    sha256 (skipped, and said so, where it cannot read the tree or the interpreter);
#  - `tailor detect` (text, --json) names the route builds take here and a forced one.
# (A build without a fixed path and its warning: build_reproducible.sh.)
# Four builds of the fixture, two at a time (seconds each; the bundled example's own build
# is build_example.sh's).
set -u
: "${TAILOR:?TAILOR must point at the built binary}"
[ -x "$TAILOR" ] || { echo "skip: $TAILOR not built"; exit 77; }
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || { echo "skip: no nvcc"; exit 77; }
python3 -c 'import torch' 2>/dev/null || { echo "skip: python3 with torch needed"; exit 77; }
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"
# shellcheck source=lib/sleepy_package.sh
. "$(dirname "$0")/lib/sleepy_package.sh"  # wait_until
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]:-}"; do [ -n "$p" ] && kill -TERM "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
chmod 755 "$tmp"
export XDG_CACHE_HOME="$tmp/xdg"
mkdir -p "$tmp/home1" "$tmp/a/much/longer/home2" "$tmp/home3"

# PATH without bubblewrap: links to everything else on it.
nobw="$tmp/nobwrap-bin"
mkdir -p "$nobw"
for d in ${PATH//:/ }; do
  for f in "$d"/*; do
    n=$(basename "$f")
    [ "$n" = bwrap ] || [ -e "$nobw/$n" ] || ln -s "$f" "$nobw/$n" 2>/dev/null
  done
done
PATH="$nobw" command -v bwrap >/dev/null && { echo "FAIL bwrap still on the test's PATH"; exit 1; }

# build NAME SOURCE WORK HOME [VAR=VALUE...]: SOURCE ("" for the bundled example, built
# from inside the repository) into $tmp/out-NAME, in the background; $last_pid is its pid.
# $launch goes before tailor (lib/deny_unshare.py: no namespace).
launch=
build() {
  local name=$1 source=$2 work=$3 home=$4
  shift 4
  (cd "$src" && exec env PATH="$nobw" HOME="$home" "$@" $launch "$TAILOR" build $source --arch 8.0 --work-dir "$work" \
    --out "$tmp/out-$name" --no-tests --cache none --progress plain >"$tmp/$name.log" 2>&1) &
  last_pid=$!
  pids+=("$last_pid")
}
sha() { sha256sum "$tmp"/out-"$1"/*.whl 2>/dev/null | cut -d' ' -f1; }
report() { ls "$tmp"/out-"$1"/*.report.json 2>/dev/null | head -1; }
finished() {  # finished NAME PID: its exit, the log's tail when it failed
  wait "$2"
  local rc=$?
  expect_eq "build $1: exit 0" "$rc" 0
  [ "$rc" = 0 ] || { echo "--- $1.log"; tail -n 25 "$tmp/$1.log"; }
}

# The route this user has here (a kernel or AppArmor may refuse unprivileged namespaces:
# then every build here takes the folder route, which the second build covers anyway).
here_route=$(cd "$src" && PATH="$nobw" "$TAILOR" detect --no-python --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["fixed_path"]["route"])')
[ "$here_route" = namespace ] || echo "skip (part): no namespace for $(id -un) here ($here_route route):" \
  "$(cd "$src" && PATH="$nobw" "$TAILOR" detect --no-python | grep -m1 'not namespace')"

# 1. The fixture on the namespace route (as root or as this user, whichever runs the
#    test) and, at the same time, on the folder route from another work folder and HOME.
build ns "$tiny_ext" "$tmp/w" "$tmp/home1"
ns=$last_pid
deny="python3 $src/tests/e2e/lib/deny_unshare.py"
folder_env=TAILOR_FIXED_PATH_ROUTE=
if ! $deny true 2>/dev/null; then
  echo "skip (part): no seccomp filter here ($($deny true 2>&1)): the folder route is forced instead of refused"
  deny=
  folder_env=TAILOR_FIXED_PATH_ROUTE=folder
fi
launch=$deny build folder "$tiny_ext" "$tmp/a/much/longer/work/folder" "$tmp/a/much/longer/home2" "$folder_env"
folder=$last_pid
finished ns "$ns"
finished folder "$folder"
if [ -n "$(report ns)" ]; then
  expect_eq "namespace: route in the report" "$(json_get "$(report ns)" 'j["run"]["work_path_route"]')" "$here_route"
  expect_eq "namespace: work path" "$(json_get "$(report ns)" 'j["run"]["work_path"]')" /tmp/.tailor-build/tiny_ext
  expect_eq "namespace: no warning" "$(json_get "$(report ns)" 'j["run"]["work_path_note"]')" None
fi
if [ -n "$(report folder)" ]; then
  expect_eq "folder: route in the report" "$(json_get "$(report folder)" 'j["run"]["work_path_route"]')" folder
  expect_eq "folder: work path" "$(json_get "$(report folder)" 'j["run"]["work_path"]')" /tmp/.tailor-build/tiny_ext
  if [ -n "$deny" ]; then
    json_get "$(report folder)" 'j["run"]["work_path_tried"]' | grep -q "^namespace: unshare(CLONE_NEWUSER|CLONE_NEWNS): permission denied" \
      && ok "folder: the report says why not a namespace" || bad "folder: no reason in run.work_path_tried"
    json_get "$(report folder)" 'j["run"]["work_path_tried"]' | grep -q "bwrap: no bwrap (bubblewrap) on PATH" \
      && ok "folder: ... nor bubblewrap" || bad "folder: no bwrap reason in run.work_path_tried"
  fi
fi
[ -n "$(sha ns)" ] && expect_eq "folder route, other work folder and HOME: the namespace build's bytes" "$(sha folder)" "$(sha ns)"
ls -d "$tmp/a/much/longer/work/folder"/*/src/build >/dev/null 2>&1 && ok "the folder build's tree is back in its work folder" \
  || bad "no build tree in the folder build's work folder"
expect_eq "nothing left at the fixed folder" \
  "$(find /tmp/.tailor-build/tiny_ext -mindepth 1 -maxdepth 1 ! -name .tailor.lock 2>/dev/null | wc -l)" 0

# 2. Two builds of one package from two work folders at once on the folder route: the
#    second waits for the first, by pid; both succeed, with the same bytes.
build t1 "$src/tests/e2e/data/tiny_ext" "$tmp/t/one" "$tmp/home1" TAILOR_FIXED_PATH_ROUTE=folder
t1=$last_pid
wait_until 120 grep -q "^==> fixed work path /tmp/.tailor-build/tiny_ext (folder" "$tmp/t1.log" || bad "t1 never took the fixed folder"
build t2 "$src/tests/e2e/data/tiny_ext" "$tmp/t/a/much/longer/two" "$tmp/a/much/longer/home2" TAILOR_FIXED_PATH_ROUTE=folder
t2=$last_pid
finished t1 "$t1"
finished t2 "$t2"
grep -q "^waiting for tailor build pid $t1 using /tmp/.tailor-build/tiny_ext" "$tmp/t2.log" \
  && ok "the second folder build waited for the first, by pid" \
  || { bad "t2 did not say it waits for pid $t1"; grep -i "waiting\|fixed" "$tmp/t2.log"; }
[ -n "$(sha t1)" ] && expect_eq "two folder builds at once: the same bytes" "$(sha t2)" "$(sha t1)"
grep -l "tailor: warning: no fixed work path" "$tmp"/*.log && bad "a build above warned of no fixed path" || ok "no build warned"

# 3. An unprivileged user: tailor's own launcher makes a user namespace where it is itself.
nobody_run() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
if [ "$(id -u)" != 0 ]; then
  echo "skip (part): not root: the unprivileged half needs to become another user (this run is unprivileged already)"
elif ! command -v setpriv >/dev/null; then
  echo "skip (part): no setpriv"
elif ! nobody_run test -x "$TAILOR"; then
  echo "skip (part): user nobody cannot run $TAILOR"
else
  mkdir -p "$tmp/nobody/work"
  chown -R 65534:65534 "$tmp/nobody"
  out=$(cd / && PATH="$nobw" nobody_run "$TAILOR" __fixed-path --tmpfs /tmp/.tailor-build --bind "$tmp/nobody/work" \
    /tmp/.tailor-build/nobody-test --chdir /tmp/.tailor-build/nobody-test -- sh -c 'pwd; id -u; touch made' 2>&1)
  rc=$?
  if [ "$rc" = 127 ] && grep -qE "unshare\(|making the mounts private|/proc/self/(setgroups|uid_map|gid_map)" <<<"$out"; then
    echo "skip (part): no user namespace for an unprivileged user here: $out"
  else
    expect_eq "nobody: the launcher's namespace" "$out" "/tmp/.tailor-build/nobody-test
65534"
    expect_eq "nobody: the file it wrote is its own" "$(stat -c %u "$tmp/nobody/work/made" 2>/dev/null)" 65534
    # The whole build, where nobody can read the tree and run python3 with torch.
    py=$(command -v python3)
    if ! nobody_run test -r "$tiny_ext/setup.py"; then
      echo "skip (part): user nobody cannot read $src: no unprivileged build"
    elif ! nobody_run "$py" -c 'import torch' >/dev/null 2>&1; then
      echo "skip (part): user nobody cannot run $py with torch (it lies in a folder only root reads): no unprivileged build"
    else
      mkdir -p "$tmp/nobody/home" "$tmp/out-nb" && chown -R 65534:65534 "$tmp/nobody" "$tmp/out-nb"
      (cd "$src" && PATH="$nobw" HOME="$tmp/nobody/home" XDG_CACHE_HOME="$tmp/nobody/xdg" nobody_run "$TAILOR" build "$tiny_ext" --arch 8.0 \
        --work-dir "$tmp/nobody/work" --out "$tmp/out-nb" --no-tests --cache none --progress plain >"$tmp/nb.log" 2>&1)
      expect_eq "nobody: build exit 0" "$?" 0
      expect_eq "nobody: the same bytes as root's" "$(sha nb)" "$(sha ns)"
    fi
  fi
fi

# 4. detect says which route builds take here, and why not the better ones.
if [ -n "$deny" ]; then
  PATH="$nobw" $deny "$TAILOR" detect --no-python >"$tmp/detect-denied.txt" 2>&1
  expect_grep "detect, no namespace: the folder route" "route         folder: builds run in a real folder" "$tmp/detect-denied.txt"
  expect_grep "detect, no namespace: why" "not namespace: unshare(CLONE_NEWUSER|CLONE_NEWNS): permission denied" "$tmp/detect-denied.txt"
  expect_grep "detect, no namespace: no bwrap" "not bwrap: no bwrap (bubblewrap) on PATH" "$tmp/detect-denied.txt"
fi
(cd "$src" && PATH="$nobw" TAILOR_FIXED_PATH_ROUTE=none "$TAILOR" detect --no-python >"$tmp/detect.txt" 2>&1)
expect_grep "detect: route none, forced" "route         none (TAILOR_FIXED_PATH_ROUTE=none)" "$tmp/detect.txt"
(cd "$src" && PATH="$nobw" "$TAILOR" detect --no-python --json >"$tmp/detect.json" 2>&1)
expect_eq "detect --json: the route the build took" "$(json_get "$tmp/detect.json" 'j["fixed_path"]["route"]')" \
  "$(json_get "$(report ns)" 'j["run"]["work_path_route"]' 2>/dev/null)"
exit $fail
