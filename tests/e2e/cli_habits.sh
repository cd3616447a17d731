#!/usr/bin/env bash
# The command-line habits people expect: shell completions that complete (bash, and zsh or
# fish syntax where installed), a man page that renders with every command in it,
# `cmake --install` laying out binary, man page and completions, a schema name in every
# JSON document, and colour only on a terminal (never with NO_COLOR, never when piped).
set -uo pipefail
T="$TAILOR"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"  # fail
commands=$("$T" help | awk '/^Subcommands:/ {on=1; next} on && /^  [a-z]/ {print $1}')
[ -n "$commands" ] || fail "no commands in tailor help"

# Completions.
"$T" completion bash > "$work/tailor.bash" || fail "completion bash exit $?"
bash -n "$work/tailor.bash" || fail "the bash completion does not parse"
out=$(bash -c '
  source "$1"
  comp() { COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMPREPLY=(); _tailor; echo "${COMPREPLY[*]}"; }
  comp tailor sl; comp tailor slim --ke; comp tailor build torch --pla; comp tailor completion f' _ "$work/tailor.bash")
[ "$out" = "$(printf 'slim\n--keep --keep-ptx\n--platform\nfish')" ] || fail "bash completions: $out"
for shell in zsh fish; do
  "$T" completion $shell > "$work/tailor.$shell" || fail "completion $shell exit $?"
  for c in $commands; do grep -q "$c" "$work/tailor.$shell" || fail "$shell completion lacks $c"; done
done
if command -v zsh >/dev/null; then zsh -n "$work/tailor.zsh" || fail "the zsh completion does not parse"; fi
if command -v fish >/dev/null; then fish --no-execute "$work/tailor.fish" || fail "the fish completion does not parse"; fi
"$T" completion tcsh 2> "$work/err" && fail "an unknown shell should fail"
grep -q "bash, zsh or fish" "$work/err" || fail "unknown shell message: $(cat "$work/err")"
echo "ok: completions (bash completes commands, options and nested commands)"

# The man page.
"$T" help --man > "$work/tailor.1" || fail "help --man exit $?"
for c in $commands; do grep -q "^\.SS \"tailor $c" "$work/tailor.1" || fail "the man page lacks $c"; done
if command -v groff >/dev/null; then
  warnings=$(groff -man -Tutf8 -ww "$work/tailor.1" 2>&1 >/dev/null)
  [ -z "$warnings" ] || fail "groff warns: $warnings"
  groff -man -Tutf8 -P-bcou "$work/tailor.1" 2>/dev/null | grep -q "EXIT STATUS" || fail "the man page does not render"
fi
echo "ok: man page with every command"

# A command's long description (data/cli/commands.toml) in its help and in the man page.
"$T" help build > "$work/help-build" || fail "help build exit $?"
grep -q "recipe or not" "$work/help-build" || fail "help build lacks the command's description"
grep -q "recipe or not" "$work/tailor.1" || fail "the man page lacks build's description"
echo "ok: each command's description in its help and the man page"

# cmake --install.
if [ -n "${TAILOR_BINARY_DIR:-}" ] && [ -f "$TAILOR_BINARY_DIR/CMakeCache.txt" ]; then
  # scripts/test.sh builds tailor before the e2e tests, but not the man page and completions
  # that the install lays out: they are made here from that binary, under the lock every
  # build of this tree takes (flock /tmp/tailor-ninja.lock), so a build running beside the
  # tests is never raced.
  lock=()
  if command -v flock >/dev/null; then lock=(flock /tmp/tailor-ninja.lock); fi
  "${lock[@]}" cmake --build "$TAILOR_BINARY_DIR" --target tailor_docs >/dev/null || fail "building tailor_docs"
  cmake --install "$TAILOR_BINARY_DIR" --prefix "$work/prefix" >/dev/null || fail "cmake --install"
  for f in bin/tailor share/man/man1/tailor.1 share/bash-completion/completions/tailor \
           share/zsh/site-functions/_tailor share/fish/vendor_completions.d/tailor.fish; do
    [ -s "$work/prefix/$f" ] || fail "cmake --install did not install $f"
  done
  # TAILOR_EMULATOR: how to run a cross-built binary here (scripts/aarch64_check.sh sets it).
  # shellcheck disable=SC2086  # the emulator's words
  ${TAILOR_EMULATOR:-} "$work/prefix/bin/tailor" --version >/dev/null || fail "the installed tailor does not run"
  echo "ok: cmake --install lays out binary, man page and completions"
fi

# A schema in every JSON document.
schema() {  # schema NAME WANT CMD...: the document's schema must be WANT
  local name=$1 want=$2; shift 2
  "$@" > "$work/doc.json" 2>/dev/null
  got=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1])).get('schema'))" "$work/doc.json" 2>/dev/null)
  [ "$got" = "$want" ] || fail "$name --json: schema '$got', want '$want'"
}
fixtures=${TAILOR_BINARY_DIR:-}/fixtures
printf 'x.cu(3): error: identifier "foo" is undefined\nninja: build stopped\n' > "$work/build.log"
cat > "$work/tailor.toml" <<'EOF'
[matrix]
torch = ["2.9.1"]
cuda = ["12.8"]
gpu = ["9.0"]
python = ["3.12"]
EOF
schema detect tailor.detect/1 "$T" detect --json
schema arch tailor.arch/1 "$T" arch 8.0 --json
schema plan tailor.plan/1 "$T" plan torch --torch 2.9.1 --cuda 12.8 --arch 9.0 --python 3.12 --format json
schema doctor tailor.doctor/1 "$T" doctor --torch 2.9.1 --cuda 12.8 --arch 9.0 --python 3.12 --json
schema matrix tailor.matrix/1 "$T" matrix list --config "$work/tailor.toml" --json
schema explain tailor.explain/1 "$T" explain "$work/build.log" --json
if [ -f "$fixtures/sass_75_80.so" ]; then
  schema inspect tailor.inspect/1 "$T" inspect "$fixtures/sass_75_80.so" --json
  schema slim tailor.slim/1 "$T" slim "$fixtures/sass_75_80.so" --keep sm_80 --dry-run --json
fi
echo "ok: every JSON document names its schema"

# Colour: never when piped, always on request, on a terminal unless NO_COLOR is set.
esc=$(printf '\033')
"$T" inspect /nonexistent.so 2> "$work/err"; grep -q "$esc" "$work/err" && fail "colour in piped stderr"
"$T" --color=always inspect /nonexistent.so 2> "$work/err"; grep -q "$esc\[1;31mtailor: error:" "$work/err" || fail "no colour with --color=always: $(cat -v "$work/err")"
"$T" inspect /nonexistent.so --color never 2> "$work/err"; grep -q "$esc" "$work/err" && fail "colour with --color never"
"$T" --color=sometimes arch 8.0 2> "$work/err" && fail "--color=sometimes should be refused"
if command -v script >/dev/null; then
  script -qec "$T inspect /nonexistent.so" /dev/null > "$work/tty" 2>&1
  grep -q "$esc" "$work/tty" || fail "no colour on a terminal: $(cat -v "$work/tty")"
  NO_COLOR=1 script -qec "$T inspect /nonexistent.so" /dev/null > "$work/tty" 2>&1
  grep -q "$esc" "$work/tty" && fail "colour on a terminal despite NO_COLOR"
fi
echo "ok: colour only on a terminal, never with NO_COLOR or --color=never"
echo PASS
