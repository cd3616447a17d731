#!/usr/bin/env bash
# End-to-end: `tailor build ... --print-env` for several recipes through the real binary:
# each package gets its own variable in its own spelling, the build commands, nothing is
# fetched or built, and bad input exits 2 with one line. (The resolution itself is tested
# by the recipes' unit tests; this checks what the build command prints.)
set -u
: "${TAILOR:?TAILOR must point at the built binary}"
[ -x "$TAILOR" ] || { echo "skip: $TAILOR not built"; exit 77; }
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"  # src, fail, ok, bad, expect_eq
# has NAME OUTPUT-FILE FIXED-STRING
has() { if grep -qF -- "$3" "$2"; then ok "$1"; else bad "$1: no '$3' in:"; sed 's/^/    /' "$2"; fi; }
hasnt() { if grep -qF -- "$3" "$2"; then bad "$1: '$3' present"; else ok "$1"; fi; }
# export_value FILE VAR: the value of `export VAR=...` with shell quotes removed.
export_value() { sed -n "s/^export $2=//p" "$1" | head -1 | tr -d "'\""; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

env_of() {  # env_of NAME ARGS...: run --print-env into $tmp/NAME
  local name=$1; shift
  "$TAILOR" build "$@" --print-env --work-dir "$tmp/work" >"$tmp/$name" 2>"$tmp/$name.err"
  expect_eq "$name exit" "$?" 0
  bash -n "$tmp/$name" && ok "$name is valid shell" || bad "$name: not valid shell"
}

env_of xformers xformers==0.0.32 --arch "8.0;9.0" --jobs 4
expect_eq "xformers TORCH_CUDA_ARCH_LIST" "$(export_value "$tmp/xformers" TORCH_CUDA_ARCH_LIST)" "8.0;9.0"
expect_eq "xformers FORCE_CUDA" "$(export_value "$tmp/xformers" FORCE_CUDA)" 1
expect_eq "xformers MAX_JOBS from --jobs" "$(export_value "$tmp/xformers" MAX_JOBS)" 4
# The build runs its PEP 517 driver (a file written at build time); the printed script
# gives pip's equivalent so it works when pasted.
has "xformers wheel by hand" "$tmp/xformers" "pip wheel --no-build-isolation --no-deps -w $tmp/work/xformers-"
has "xformers wheel as tailor runs it" "$tmp/xformers" "# tailor runs: python3 -u $tmp/work/xformers-"
# What the build adds for the same wheel twice: no nvcc temp names, no work-folder paths,
# and the epoch (the source's, at build time; the caller's when set).
# nvcc 12.9 and later also get a fixed seed for cudafe++'s module id (data/build/reproducible.toml).
nvcc_version=$(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9]*\.[0-9]*\).*/\1/p')
seed=""
if [ -n "$nvcc_version" ] && [ "$(printf '%s\n12.9\n' "$nvcc_version" | sort -V | head -1)" = 12.9 ]; then
  seed="-Xcudafe --frandom-seed=tailor "
fi
has "reproducible: nvcc -objtemp${seed:+, the seed}" "$tmp/xformers" "NVCC_APPEND_FLAGS='-objtemp ${seed}-Xcompiler=-ffile-prefix-map=$tmp/work/xformers-"
has "reproducible: prefix map" "$tmp/xformers" "CXXFLAGS=-ffile-prefix-map=$tmp/work/xformers-"
has "reproducible: the epoch comes from the source" "$tmp/xformers" "# note: SOURCE_DATE_EPOCH: the source's own date"
SOURCE_DATE_EPOCH=1700000000 env_of epoch xformers==0.0.32 --arch 8.0
expect_eq "SOURCE_DATE_EPOCH from the caller" "$(export_value "$tmp/epoch" SOURCE_DATE_EPOCH)" 1700000000

env_of flash flash-attn==2.8.3 --arch "sm_80,sm_90" --jobs 4
expect_eq "flash-attn FLASH_ATTN_CUDA_ARCHS" "$(export_value "$tmp/flash" FLASH_ATTN_CUDA_ARCHS)" "80;90"
expect_eq "flash-attn force build" "$(export_value "$tmp/flash" FLASH_ATTENTION_FORCE_BUILD)" TRUE
[ -n "$(export_value "$tmp/flash" NVCC_THREADS)" ] && ok "flash-attn NVCC_THREADS" || bad "flash-attn NVCC_THREADS"

env_of bnb bitsandbytes==0.48.0 --arch "7.5 8.0 9.0" --jobs 4
has "bitsandbytes COMPUTE_CAPABILITY" "$tmp/bnb" "-DCOMPUTE_CAPABILITY=75;80;90"
has "bitsandbytes cuda backend" "$tmp/bnb" "-DCOMPUTE_BACKEND=cuda"
expect_eq "bitsandbytes CMAKE_BUILD_PARALLEL_LEVEL" "$(export_value "$tmp/bnb" CMAKE_BUILD_PARALLEL_LEVEL)" 4
hasnt "bitsandbytes has no TORCH_CUDA_ARCH_LIST" "$tmp/bnb" "TORCH_CUDA_ARCH_LIST"

env_of conv causal-conv1d==1.5.2 --arch 9.0
has "causal-conv1d gencode patch" "$tmp/conv" "-gencode=arch=compute_90,code=sm_90"
hasnt "causal-conv1d patch has no other target" "$tmp/conv" "compute_80"
expect_eq "causal-conv1d force build" "$(export_value "$tmp/conv" CAUSAL_CONV1D_FORCE_BUILD)" TRUE

env_of scatter torch-scatter==2.1.2 --gpu A10G
expect_eq "torch-scatter arch from --gpu A10G" "$(export_value "$tmp/scatter" TORCH_CUDA_ARCH_LIST)" "8.6"
expect_eq "torch-scatter FORCE_CUDA" "$(export_value "$tmp/scatter" FORCE_CUDA)" 1
# torch-scatter turns ninja off; tailor's recipe patch turns it back on, so MAX_JOBS counts.
has "torch-scatter parallel by recipe patch" "$tmp/scatter" "# parallel: ninja switched on by recipe patch (torch-scatter turns it off)"
has "torch-scatter jobs reason" "$tmp/scatter" "# jobs: $(export_value "$tmp/scatter" MAX_JOBS) (ninja switched on by recipe patch"
has "torch-scatter patch shown" "$tmp/scatter" "use_ninja=True)  # tailor: ninja on"
hasnt "torch-scatter is no longer serial" "$tmp/scatter" "one file at a time"
env_of scatter1 torch-scatter==2.1.2 --arch 8.6 --jobs 1
hasnt "torch-scatter --jobs 1: no patch" "$tmp/scatter1" "# parallel:"
expect_eq "torch-scatter --jobs 1 MAX_JOBS" "$(export_value "$tmp/scatter1" MAX_JOBS)" 1

# What a package adds by design is shown; a restriction profile adds its switches.
has "bitsandbytes declares PTX of the highest" "$tmp/bnb" "# verify accepts compute_90: added by bitsandbytes' build (PTX of the highest target)"
env_of flashmin flash-attn==2.8.3 --arch 9.0 --jobs 2 --profile minimal
has "flash-attn profile minimal" "$tmp/flashmin" "# profile: minimal"
has "flash-attn minimal disables backward" "$tmp/flashmin" "-DFLASHATTENTION_DISABLE_BACKWARD"
"$TAILOR" build flash-attn==2.8.3 --arch 9.0 --profile nope --print-env --work-dir "$tmp/work" >/dev/null 2>"$tmp/badprofile.err"
expect_eq "unknown --profile exit" "$?" 2
has "unknown --profile message" "$tmp/badprofile.err" "tailor: error: --profile nope: the flash-attn recipe has the profiles minimal"

# The bundled example, from inside the repository, with another spelling of 7.5.
(cd "$src" && "$TAILOR" build --arch sm_75 --print-env --work-dir "$tmp/work") >"$tmp/example" 2>&1
expect_eq "example exit" "$?" 0
expect_eq "example TORCH_CUDA_ARCH_LIST" "$(export_value "$tmp/example" TORCH_CUDA_ARCH_LIST)" "7.5"
[ -n "$(export_value "$tmp/example" MAX_JOBS)" ] && ok "example MAX_JOBS from memory" || bad "example MAX_JOBS"

# An sdist: the by-hand pip command points at the folder the sdist unpacks to (its top folder
# under src/), where setup.py is, not at src/ above it.
mkdir -p "$tmp/sd" && cp -r "$src/tests/e2e/data/tiny_ext" "$tmp/sd/tiny_ext-0.1.0" \
  && tar -czf "$tmp/tiny_ext-0.1.0.tar.gz" -C "$tmp/sd" tiny_ext-0.1.0 && rm -rf "$tmp/sd"
"$TAILOR" build "$tmp/tiny_ext-0.1.0.tar.gz" --arch 7.5 --print-env --work-dir "$tmp/work" >"$tmp/sdist" 2>&1
expect_eq "sdist exit" "$?" 0
expect_grep "sdist: pip wheel of the unpacked package folder" \
  "^(cd $tmp/work/tiny_ext-[0-9a-f]*/src/tiny_ext-0.1.0 && .* -m pip wheel --no-build-isolation --no-deps -w $tmp/work/tiny_ext-[0-9a-f]*/wheelhouse $tmp/work/tiny_ext-[0-9a-f]*/src/tiny_ext-0.1.0)$" "$tmp/sdist"
rm -f "$tmp/tiny_ext-0.1.0.tar.gz"

expect_eq "--print-env fetched and built nothing" "$(ls -A "$tmp/work" 2>/dev/null | wc -l)" 0

# The real nvcc: a unit of template instantiations only, compiled twice at one path with the
# NVCC_APPEND_FLAGS the build sets, gives the same bytes; without the seed its cubin carries
# cudafe++'s process id (printed as a note: a later nvcc may stop doing that).
if [ -n "$seed" ]; then
  flags=$(export_value "$tmp/example" NVCC_APPEND_FLAGS)
  mkdir -p "$tmp/unit" && cp "$src/tests/e2e/data/template_only_unit.cu" "$tmp/unit/u.cu"
  compile_twice() {  # compile_twice APPEND_FLAGS: 0 when both objects are byte-identical
    (cd "$tmp/unit" && NVCC_APPEND_FLAGS="$1" nvcc -c -lineinfo -arch=sm_75 u.cu -o u.o && mv u.o u1.o &&
      NVCC_APPEND_FLAGS="$1" nvcc -c -lineinfo -arch=sm_75 u.cu -o u.o && cmp -s u.o u1.o)
  }
  case "$flags" in *"--frandom-seed="*) ok "example NVCC_APPEND_FLAGS has the seed" ;;
    *) bad "example NVCC_APPEND_FLAGS: '$flags'" ;; esac
  compile_twice "$flags" && ok "nvcc $nvcc_version: one unit twice with the build's flags, same bytes" ||
    bad "nvcc $nvcc_version: one unit twice with the build's flags ('$flags') differs"
  compile_twice "${flags/$seed/}" && echo "note nvcc $nvcc_version: without the seed the unit was the same twice" ||
    echo "ok   nvcc $nvcc_version: without the seed the unit differs run to run (the hazard the seed removes)"
else
  echo "skip the real-nvcc seed check: nvcc ${nvcc_version:-not found} is older than 12.9"
fi

# Bad input: exit 2, one line, nothing on stdout.
"$TAILOR" build "no-such-dir/x" --arch 8.0 >"$tmp/bad" 2>"$tmp/bad.err"
expect_eq "bad SOURCE exit" "$?" 2
has "bad SOURCE message" "$tmp/bad.err" "tailor: error: SOURCE 'no-such-dir/x'"
expect_eq "bad SOURCE stdout empty" "$(wc -c <"$tmp/bad")" 0
"$TAILOR" build xformers==0.0.32 --arch "sm_999x" --print-env >"$tmp/badarch" 2>"$tmp/badarch.err"
expect_eq "bad --arch exit" "$?" 2
"$TAILOR" build xformers==0.0.32 --arch 8.0 --jobs 0 --print-env >/dev/null 2>"$tmp/jobs.err"
expect_eq "--jobs 0 exit" "$?" 2
(cd "$tmp" && "$TAILOR" build --arch 8.0 --print-env) >/dev/null 2>"$tmp/noexample.err"
expect_eq "no SOURCE outside the repository exit" "$?" 2
has "no SOURCE message" "$tmp/noexample.err" "not tailor's repository"
if ! nvidia-smi -L >/dev/null 2>&1; then
  "$TAILOR" build xformers==0.0.32 --print-env >/dev/null 2>"$tmp/nogpu.err"
  expect_eq "no GPU, no target exit" "$?" 2
  has "no GPU message" "$tmp/nogpu.err" "no GPU found and no target given; name one with --arch (e.g. --arch 8.6) or --gpu (e.g. --gpu A10G)"
fi

# `build torch` is the nested subcommand, not a SOURCE named "torch".
"$TAILOR" build torch --help >"$tmp/torch_help" 2>&1
expect_eq "build torch --help exit" "$?" 0
has "build torch --help is torch's" "$tmp/torch_help" "--torch"
exit $fail
