#!/usr/bin/env bash
# The README walked as a newcomer would (issue 27), without a second full build: what the
# quick start builds is enough for the Install step, the quick start's compile is never
# silent, every command tailor suggests ("fix: `tailor ...`") carries the user's own flags
# and runs as printed, texts follow the plan's own version and facts, and the small CLI
# habits (help COMMAND, -V, "did you mean", repeatable --gpu, one error spelling) hold.
set -uo pipefail
T="$TAILOR"
src=${TAILOR_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${TAILOR_BINARY_DIR:-$src/build}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fail=1; }
expect_eq() { if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: got '$2', want '$3'"; fi; }
has() { case "$2" in *"$3"*) ok "$1" ;; *) bad "$1: no '$3' in: $2" ;; esac; }
lacks() { case "$2" in *"$3"*) bad "$1: '$3' in: $2" ;; *) ok "$1" ;; esac; }

# ---- the quick start builds what `cmake --install` copies (item 8) ------------------------
targets=$(sed -n 's/^bash scripts\/build_tailor.sh \([^#]*\).*/\1/p' "$src/scripts/quickstart.sh")
[ -n "$targets" ] || bad "quickstart.sh: no build_tailor.sh line with targets"
if [ -f "$bin/build.ninja" ] && command -v ninja >/dev/null; then
  # shellcheck disable=SC2086  # the targets are words
  inputs=$(ninja -C "$bin" -t inputs $targets 2>&1)
  for f in share/man/man1/tailor.1 share/bash-completion/completions/tailor share/zsh/site-functions/_tailor \
           share/fish/vendor_completions.d/tailor.fish; do
    has "the quick start's targets ($targets) make $f" "$inputs" "$f"
  done
  if [ -f "$bin/share/man/man1/tailor.1" ]; then
    cmake --install "$bin" --prefix "$work/prefix" --strip >"$work/install.log" 2>&1
    expect_eq "README Install step: cmake --install --prefix --strip exit" "$?" 0
    [ -x "$work/prefix/bin/tailor" ] && [ -f "$work/prefix/share/man/man1/tailor.1" ] && ok "installed binary and man page" \
      || bad "install layout: $(cat "$work/install.log")"
  fi
else
  echo "skip the install check: no Ninja build folder at $bin"
fi

# ---- the quick start's compile shows Ninja's progress (item 13) ---------------------------
mkdir -p "$work/stub" "$work/tree/scripts"
cp "$src/scripts/build_tailor.sh" "$work/tree/scripts/"
printf '#!/bin/sh\n[ "$1" = --help ] && { echo "  --quiet  no status"; exit 1; }\necho "ninja $*" >>"%s/ninja.args"\n' "$work" >"$work/stub/ninja"
printf '#!/bin/sh\nexit 0\n' >"$work/stub/cmake"
chmod +x "$work/stub/ninja" "$work/stub/cmake"
out=$(PATH="$work/stub:$PATH" bash "$work/tree/scripts/build_tailor.sh" tailor 2>&1)
expect_eq "build_tailor.sh exit (stub ninja)" "$?" 0
lacks "build_tailor.sh: Ninja's progress is shown (no --quiet)" "$(cat "$work/ninja.args")" "--quiet"
has "build_tailor.sh says what it builds" "$out" "building tailor"
has "quickstart.sh names the report page at the end" "$(cat "$src/scripts/quickstart.sh")" '.report.html'

# ---- every suggested command carries the user's flags and runs as printed (item 9) ----------
# fix_command TEXT: the first `tailor ...` in TEXT's fix lines, without the leading `tailor`.
fix_command() { sed -n 's/.*fix:.*`tailor \([^`]*\)`.*/\1/p' <<<"$1" | head -n 1; }
run_fix() {  # NAME TEXT: runs the fix's command; exit 0 and the user's version and Python in it
  local cmd
  cmd=$(fix_command "$2")
  [ -n "$cmd" ] || { bad "$1: no fix command in: $2"; return; }
  has "$1 carries --torch 2.9.1" "$cmd" "--torch 2.9.1"
  has "$1 carries --python 3.10" "$cmd" "--python 3.10"
  (cd "$work" && eval "\"\$T\" $cmd") >"$work/fix.out" 2>"$work/fix.err"
  expect_eq "$1 runs as printed: tailor $cmd" "$?" 0
}
flags=(--torch 2.9.1 --python 3.10 --gpu T4G)
[ "$(uname -m)" = aarch64 ] && flags=(--torch 2.9.1 --python 3.10 --gpu A10G)  # a GPU of the other platform
plan_err=$("$T" plan "${flags[@]}" --format json 2>&1 >/dev/null)
run_fix "plan's fix" "$plan_err"
doctor_out=$("$T" doctor "${flags[@]}" 2>&1)
run_fix "doctor's fix" "$doctor_out"
has "the fix's script is for the asked release" "$(cat "$work/build-torch.sh" 2>/dev/null)" "2.9.1"

# ---- texts come from the plan's own version and facts (item 11) ---------------------------
text=$("$T" plan --torch 2.11.0 --gpu T4G 2>/dev/null)
lacks "plan 2.11.0: no '2.9.1 alone'" "$text" "2.9.1 alone"
has "plan 2.11.0: the version label note names 2.11.0" "$text" "so 2.11.0 alone"
docker=$("$T" plan --torch 2.9.1 --python 3.10 --gpu T4G --format dockerfile 2>/dev/null)
base=$(grep -m1 '^# Base ' <<<"$docker")
glibc=$(sed -n 's/.*glibc \([0-9.]*\) ->.*/\1/p' <<<"$base")
has "Dockerfile: the tag follows the base image's glibc ($base)" "$base" "manylinux_${glibc/./_}_"

# ---- CLI habits (item 15) ---------------------------------------------------------------
has "tailor help build shows the full usage" "$("$T" help build)" "Usage: tailor build"
expect_eq "tailor -V is --version" "$("$T" -V 2>&1)" "$("$T" --version 2>&1)"
err=$("$T" build --archh 8.0 2>&1)
expect_eq "unknown option: exit 2" "$?" 2
has "unknown option: did you mean" "$err" "did you mean --arch?"
err=$("$T" build torch --cdua 12.8 2>&1)
has "unknown option of build torch: did you mean" "$err" "did you mean --cuda?"
err=$("$T" inspect --gpu T4G --gpu H100 "$work/none.whl" 2>&1)
lacks "inspect takes --gpu twice, as plan does" "$err" "At Most 1"
err=$("$T" plan --format sh 2>&1 >/dev/null)
lacks "plan's problems: no bare 'error:' line" "$(grep -v '^tailor: \|^  fix:' <<<"$err")" "error:"
exit $fail
