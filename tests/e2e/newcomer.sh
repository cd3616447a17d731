#!/usr/bin/env bash
# The README walked as a newcomer would (issue 27), without a second full build: what the
# quick start builds is enough for the Install step, the quick start's compile is never
# silent, every command tailor suggests ("fix: `tailor ...`") carries the user's own flags
# and runs as printed, texts follow the plan's own version and facts, and the small CLI
# habits (help COMMAND, -V, "did you mean", repeatable --gpu, one error spelling) hold.
set -uo pipefail
T="$TAILOR"
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"  # src, fail, ok, bad, expect_eq
bin=${TAILOR_BINARY_DIR:-$src/build}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
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
fix_command() { sed -n 's/.*fix:[^`]*`tailor \([^`]*\)`.*/\1/p' <<<"$1" | head -n 1; }
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

# ---- --color=always on arch (item 15); build's lines: tests/cli/build_output_test.cpp -----
esc=$(printf '\033[')
has "arch --color=always colours the run modes" "$("$T" --color=always arch 8.6 | cat)" "${esc}32mnative SASS"
lacks "arch piped without --color: no escapes" "$("$T" arch 8.6 | cat)" "$esc"
lacks "arch --color=never: no escapes" "$("$T" arch 8.6 --color=never)" "$esc"

# ---- arch says why a spelling gave what it did (item 15) -----------------------------------
out=$("$T" arch Blackwell)
has "arch Blackwell explains sm_110 (Jetson Thor)" "$out" "leaves out 11.0 (Jetson Thor"
has "arch Blackwell says how to add it" "$out" "tailor arch Blackwell Blackwell+Tegra"
has "that command gives sm_110" "$("$T" arch Blackwell Blackwell+Tegra)" "sm_110"
has "arch Turing: a family name embeds PTX" "$("$T" arch Turing)" "a family name also embeds PTX of its newest CC (compute_75)"
has "arch T4G: a GPU name gives SASS only" "$("$T" arch T4G)" "T4G names one GPU: only its SASS (sm_75), no PTX"

# ---- the aarch64 plan says why oneDNN is off and how to choose (item 15) --------------------
text=$("$T" plan --torch 2.9.1 --gpu T4G 2>/dev/null)
has "plan T4G: oneDNN note names ACL" "$text" "official aarch64 wheels build it with ACL, the Arm Compute Library"
has "plan T4G: oneDNN note says how to choose" "$text" "--with mkldnn"
lacks "plan T4G --with mkldnn: no note" "$("$T" plan --torch 2.9.1 --gpu T4G --with mkldnn 2>/dev/null)" "oneDNN (mkldnn) is off"

# ---- a script for another machine finds its tools there (item 10) -------------------------
other=T4G; [ "$(uname -m)" = aarch64 ] && other=A10G
sh_text=$("$T" plan torch --gpu "$other" --format sh 2>/dev/null)
json=$("$T" plan torch --gpu "$other" --format json 2>/dev/null)
host_py=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["python_interpreter"])' <<<"$json")
py_ver=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["python"])' <<<"$json")
lacks "sh for $other: not this host's interpreter ($host_py)" "$sh_text" "$host_py -m venv"
has "sh for $other: the interpreter is found there" "$sh_text" "PYTHON=\"\${PYTHON:-python$py_ver}\""
lacks "sh for $other: no MAX_JOBS of this host" "$sh_text" "export MAX_JOBS=$(nproc)"
has "sh for $other: MAX_JOBS counted there" "$sh_text" 'export MAX_JOBS="${MAX_JOBS:-$(tailor_max_jobs)}"'
has "sh for $other: CUDA found there" "$sh_text" 'export CUDA_HOME="${CUDA_HOME:-/usr/local/cuda-'
has "sh for this host keeps its own interpreter" "$("$T" plan torch --torch 2.9.1 --cpu-only --format sh 2>/dev/null)" " -m venv "

# ---- explain on a compile error names the user's file and quotes the compiler (item 12) ----
mkdir -p "$work/ext/csrc"
: >"$work/ext/csrc/rms_norm.cu"
cat >"$work/compile.log" <<LOG
### tailor step 1/1: build the generic wheel (PEP 517) (2026-11-27T15:19:14Z)
### cd $work/cache/ext-0123/src && /usr/bin/bwrap --dev-bind / / --tmpfs /tmp/.tailor-build --bind $work/cache/ext-0123 /tmp/.tailor-build/ext --chdir /tmp/.tailor-build/ext/src -- python3 -u /tmp/.tailor-build/ext/tailor-build-wheel.py
FAILED: [code=2] /tmp/.tailor-build/ext/src/build/temp.linux-x86_64-cpython-311/csrc/rms_norm.o
/usr/local/cuda/bin/nvcc -c /tmp/.tailor-build/ext/src/csrc/rms_norm.cu -o /tmp/.tailor-build/ext/src/build/temp.linux-x86_64-cpython-311/csrc/rms_norm.o
../../csrc/rms_norm.cu(38): error: identifier "eps_" is undefined
1 error detected in the compilation of "../../csrc/rms_norm.cu".
ninja: build stopped: subcommand failed.
LOG
out=$("$T" explain "$work/compile.log" 2>&1)
expect_eq "explain a compile error: exit 1 (tailor cannot say why the code is wrong)" "$?" 1
lacks "explain's fix is not a circle" "$(grep 'fix:' <<<"$out")" "tailor explain"
has "explain quotes the compiler" "$out" '> ../../csrc/rms_norm.cu(38): error: identifier "eps_" is undefined'
has "explain names the file inside the package" "$out" "line 38 of csrc/rms_norm.cu in the package's source"
out=$("$T" explain "$work/compile.log" --source "$work/ext" 2>&1)
has "explain --source names the user's file" "$out" "Correct line 38 of $work/ext/csrc/rms_norm.cu (the build compiled its copy, $work/cache/ext-0123/src/csrc/rms_norm.cu)"
"$T" explain "$work/compile.log" --source "$work/none" >/dev/null 2>"$work/err"
expect_eq "explain --source of no folder: exit 2" "$?" 2
has "explain --source of no folder: one line" "$(cat "$work/err")" "tailor: error: --source $work/none: not a folder"

# ==== issue 40: the second newcomer walk ====================================================
# Item 1 (build machine folders in a published wheel): tests/e2e/build_example.sh checks the
# example's wheel with readelf (it builds it; this script builds nothing).

# ---- no output folder before the input is known good (item 3) ------------------------------
"$T" slim "$work/nope/x.whl" --keep 8.6 --out "$work/so2" >/dev/null 2>"$work/err"
expect_eq "slim of a missing wheel: exit 2" "$?" 2
[ -e "$work/so2" ] && bad "slim of a missing wheel left $work/so2" || ok "slim of a missing wheel left no --out folder"
printf 'not a wheel' >"$work/junk.whl"
"$T" slim "$work/junk.whl" --keep 8.6 --out "$work/so3" >/dev/null 2>&1
expect_eq "slim of a damaged wheel: exit 2" "$?" 2
[ -e "$work/so3" ] && bad "slim of a damaged wheel left $work/so3" || ok "slim of a damaged wheel left no --out folder"
"$T" build "$work/nope" --arch 8.6 --out "$work/bo" >/dev/null 2>&1
expect_eq "build of a missing source: exit 2" "$?" 2
[ -e "$work/bo" ] && bad "build of a missing source left $work/bo" || ok "build of a missing source left no --out folder"
printf '[matrix\n' >"$work/bad.toml"
"$T" matrix build --config "$work/bad.toml" --out "$work/mo" >/dev/null 2>&1
[ -e "$work/mo" ] && bad "matrix of a broken tailor.toml left $work/mo" || ok "matrix of a broken tailor.toml left no --out folder"
"$T" stack -r "$work/nope/req.txt" --gpu H100 --build --out "$work/sto" >/dev/null 2>&1
[ -e "$work/sto" ] && bad "stack --build of a missing -r left $work/sto" || ok "stack --build of a missing -r left no --out folder"
"$T" build torch --torch 0.0.1 --cpu-only --out "$work/to" >/dev/null 2>&1
[ -e "$work/to" ] && bad "build torch of an unknown release left $work/to" || ok "build torch of an unknown release left no --out folder"

# ---- a build leaves no lock file in or beside the user's folders (item 3) ------------------
# A Python without torch fails the build's pre-flight, after it took its folder locks.
if python3 -m venv --without-pip "$work/notorch" >/dev/null 2>&1; then
  mkdir -p "$work/user"
  (cd "$work/user" && "$T" build "$src/examples/fused_ops" --arch 8.6 --python "$work/notorch/bin/python" \
    --work-dir "$work/lockwork" --out "$work/user/dist" --progress plain >/dev/null 2>"$work/lock.err")
  rc=$?
  [ "$rc" != 0 ] && ok "build with a Python without torch fails (exit $rc)" || bad "build with a Python without torch passed"
  grep -q "torch" "$work/lock.err" && ok "it says torch is missing" || bad "no word of torch in: $(cat "$work/lock.err")"
  expect_eq "nothing left in the user's folder (no .dist.tailor.lock, no dist)" "$(ls -A "$work/user")" ""
  expect_eq "no lock file in the work folder" "$(find "$work/lockwork" -name '*.tailor.lock' 2>/dev/null)" ""
else
  echo "skip the lock file check: python3 -m venv unavailable"
fi

# ---- errors name what the input is and what the command takes (item 2) ---------------------
make_wheel "$work/random-1.0-py3-none-any.whl" >/dev/null 2>&1 || printf 'PK' >"$work/random-1.0-py3-none-any.whl"
err=$("$T" build "$work/random-1.0-py3-none-any.whl" --arch 8.6 2>&1)
expect_eq "build of a wheel: exit 2" "$?" 2
has "build of a wheel says it is a wheel, already built" "$err" "a wheel, which is already built"
has "build of a wheel points at inspect" "$err" "tailor inspect $work/random-1.0-py3-none-any.whl"
has "build of a wheel says what build takes" "$err" "build takes a source folder, an sdist (.tar.gz, .zip), NAME==VERSION or a git URL"
lacks "build of a wheel: no 'no such folder'" "$err" "no such folder"
lacks "build of a wheel: no NAME==1.2.3 advice" "$err" ".whl==1.2.3"
err=$("$T" build /bin/sh --arch 8.6 2>&1)
has "build of a program says it is built" "$err" "an ELF file (a built library or program), not a source"
err=$("$T" build nosuchthing --arch 8.6 2>&1)
has "build of a missing name: no such folder or file, and the index form" "$err" "no such folder or file; for the package index give an exact version, e.g. nosuchthing==1.2.3"
err=$("$T" inspect /etc/hostname 2>&1)
has "inspect of a text file says what inspect takes" "$err" "inspect takes wheels, ELF libraries and folders"
printf 'hello\n' >"$work/not.json"
err=$("$T" report "$work/not.json" --html "$work/r.html" 2>&1)
has "report of a non-report says what report reads" "$err" "reads the <wheel>.report.json a build writes"
: >"$work/empty.log"
err=$("$T" explain "$work/empty.log" 2>&1)
expect_eq "explain of an empty file: exit 2" "$?" 2
has "explain of an empty file says so" "$err" "empty: no build log to explain"
has "explain of another text says it is no tailor log" "$("$T" explain /etc/hostname 2>&1)" "not a log a tailor build wrote"
: >"$work/empty.txt"
err=$("$T" stack -r "$work/empty.txt" --gpu H100 2>&1)
expect_eq "stack -r of an empty file: exit 2" "$?" 2
has "stack -r of an empty file says it holds no requirement" "$err" "no requirement in it"

# ---- smaller truths (item 6) -----------------------------------------------------------------
cat >"$work/interrupted.log" <<'LOG'
### tailor step 1/1: build the generic wheel (PEP 517) (2026-11-28T10:00:00Z)
[3/12] /usr/local/cuda/bin/nvcc -c csrc/a.cu -o a.o
### tailor step 1 INTERRUPTED (signal 2) after 31.4 s
### tailor: interrupted by signal 2; the run stopped here
LOG
out=$("$T" explain "$work/interrupted.log" 2>&1)
lacks "explain of an interrupted build: not 'No error found'" "$out" "No error found"
has "explain of an interrupted build says so" "$out" "The build was interrupted by SIGINT (Ctrl-C)"
expect_eq "explain --json: interrupted" "$("$T" explain "$work/interrupted.log" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["interrupted"]["signal"])')" 2
first_python=$(python3 -c 'import sys; print(sys.executable)')
json=$(cd "$work" && "$T" plan torch --torch 2.11.0 --cpu-only --format json 2>/dev/null)
planned=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["python_interpreter"])' <<<"$json")
expect_eq "plan's default Python is the python3 first on PATH" "$(readlink -f "$planned")" "$(readlink -f "$first_python")"
err=$("$T" arch 9.O 2>&1)
has "9.O suggests 9.0" "$err" "(did you mean: 9.0?)"
lacks "9.O does not suggest 3.5" "$err" "3.5"
if ! nvidia-smi -L >/dev/null 2>&1; then
  out=$("$T" doctor --torch 2.11.0 2>&1)
  lacks "doctor without GPU or --arch: no FAIL arch" "$out" "[FAIL] arch"
  has "doctor without GPU or --arch: says the targets were not checked" "$out" "not checked: no --arch or --gpu given"
  has "doctor without GPU or --arch: says what to pass" "$out" "--arch '8.0;9.0' or --gpu H100"
fi

# ---- no silent stretches (item 5) -----------------------------------------------------------
lacks "test.sh: the sanitizer build shows Ninja's lines" "$(grep 'ninja -C build-asan' "$src/scripts/test.sh")" "--quiet"
setup=$(cat "$src/scripts/setup.sh")
has "setup.sh says it installs the Python side" "$setup" "setup: installing the Python side"
lacks "setup.sh: pip is not quiet" "$setup" "pip install -q"
lacks "setup.sh: apt is not sent to /dev/null" "$(grep -A6 'apt-get install -y -q --no-install-recommends \\$' "$src/scripts/setup.sh")" ">/dev/null"

# ---- Nix output a user can build as it is: nixpkgs pinned and locked (item 7) -------------
# (the rest of item 7, evaluated against the stub nixpkgs: tests/e2e/matrix_nix.sh)
if "$TAILOR" matrix --config "$src/examples/tailor.toml" --emit nix --emit-dir "$work/nixout" > /dev/null 2>&1; then
  flake=$(cat "$work/nixout/flake.nix")
  lacks "the flake does not follow an unpinned branch" "$flake" "nixos-unstable"
  has "the flake pins a nixpkgs revision" "$flake" "inputs.nixpkgs.url = \"github:NixOS/nixpkgs/"
  [ -f "$work/nixout/flake.lock" ] && ok "the flake comes with its flake.lock" || bad "no flake.lock beside flake.nix"
  lacks "default.nix does not take <nixpkgs> from the user's channel" "$(cat "$work/nixout/default.nix")" "<nixpkgs>"
else
  bad "matrix --emit nix of the example's tailor.toml failed"
fi

# ---- install says when tailor is not on PATH, with the line that fixes it (item 4) ---------
if [ -f "$bin/cmake_install.cmake" ] && [ -x "$bin/bin/tailor" ]; then
  out=$(PATH=/usr/bin:/bin cmake --install "$bin" --prefix "$work/p2" --component tailor 2>&1)
  expect_eq "cmake --install --component tailor: exit" "$?" 0
  has "install says the prefix's bin is not on PATH" "$out" "but $work/p2/bin is not on PATH"
  has "install prints the fixing line" "$out" "export PATH=\"$work/p2/bin:\$PATH\""
  out=$(PATH="$work/p2/bin:/usr/bin:/bin" cmake --install "$bin" --prefix "$work/p2" --component tailor 2>&1)
  lacks "install on PATH: no warning" "$out" "not on PATH"
else
  echo "skip the install PATH check: no configured build at $bin"
fi
exit $fail
