#!/usr/bin/env bash
# End-to-end: `tailor build --sandbox` (tailor's own namespace with no network and a
# read-only file system but the work folder, the compiler cache and /dev/shm):
#  - the test fixture extension (tests/e2e/data/tiny_ext) with a setup.py that appends to
#    $HOME/.bashrc fails (exit 1) with the package's own error, `[Errno 30] Read-only file
#    system: '$HOME/.bashrc'`, and the file is untouched; `tailor explain` of its log names
#    the sandbox;
#  - the same with a setup.py that opens a connection: `[Errno 101] Network is unreachable`;
#  - the fixture as it is builds under --sandbox (exit 0; through ccache where it is
#    installed, whose folder stays writable), and the report says so.
set -u
: "${TAILOR:?TAILOR must point at the built binary}"
[ -x "$TAILOR" ] || { echo "skip: $TAILOR not built"; exit 77; }
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || { echo "skip: no nvcc"; exit 77; }
python3 -c 'import torch' 2>/dev/null || { echo "skip: python3 with torch needed"; exit 77; }
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export XDG_CACHE_HOME="$tmp/xdg"
export HOME="$tmp/home"  # never the real one: the point is that nothing is written there
mkdir -p "$HOME"
echo "# the user's own" >"$HOME/.bashrc"
copy_package "$tiny_ext" "$tmp/good" "$tmp/home-writer" "$tmp/connector"
# A setup.py that does what a hostile or careless package does while it builds.
{ echo 'import os'; echo 'open(os.path.expanduser("~/.bashrc"), "a").write("alias ls=evil\n")'; cat "$tiny_ext/setup.py"; } \
  >"$tmp/home-writer/tiny_ext/setup.py"
{ echo 'import socket'; echo 'socket.create_connection(("1.1.1.1", 443), 5)'; cat "$tiny_ext/setup.py"; } \
  >"$tmp/connector/tiny_ext/setup.py"

build() {  # build NAME [CACHE]: $tmp/NAME/tiny_ext under --sandbox into $tmp/out-NAME
  "$TAILOR" build "$tmp/$1/tiny_ext" --sandbox --arch 8.0 --work-dir "$tmp/w-$1" --out "$tmp/out-$1" --no-tests \
    --cache "${2:-none}" --progress plain >"$tmp/$1.log" 2>&1
}

build home-writer
rc=$?
if [ "$rc" != 0 ] && grep -q "sandbox: no private namespace here\|--sandbox: " "$tmp/home-writer.log" \
  && ! grep -q "Errno" "$tmp/home-writer.log"; then
  echo "skip: no sandbox on this machine: $(grep -m1 -- '--sandbox' "$tmp/home-writer.log")"
  exit 77
fi
expect_eq "writes \$HOME/.bashrc: exit 1" "$rc" 1
expect_grep "the package's own error names the file" "\[Errno 30\] Read-only file system: '$HOME/.bashrc'" "$tmp/home-writer.log"
expect_eq "\$HOME/.bashrc untouched" "$(cat "$HOME/.bashrc")" "# the user's own"
log=$(ls "$tmp"/w-home-writer/*/build.log 2>/dev/null | head -1)
if [ -n "$log" ]; then
  "$TAILOR" explain "$log" >"$tmp/explain.txt" 2>&1
  expect_grep "explain names the sandbox" "tailor build --sandbox" "$tmp/explain.txt"
else
  bad "no build log for the home writer"
fi

build connector
expect_eq "opens a connection: exit 1" "$?" 1
expect_grep "the package's own error: no network" "\[Errno 101\] Network is unreachable" "$tmp/connector.log"

cache=none
command -v ccache >/dev/null && cache=ccache
build good "$cache"
rc=$?
expect_eq "the fixture as it is: exit 0 under --sandbox" "$rc" 0
[ "$rc" = 0 ] || tail -n 25 "$tmp/good.log"
r=$(ls "$tmp"/out-good/*.report.json 2>/dev/null | head -1)
[ -n "$r" ] && expect_eq "report: sandbox" "$(json_get "$r" 'j["run"]["sandbox"]')" True
[ -n "$r" ] && expect_eq "report: the cache it ran with" "$(json_get "$r" 'j["run"]["cache"]["tool"]')" "$cache"
exit $fail
