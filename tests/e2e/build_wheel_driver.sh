#!/usr/bin/env bash
# End-to-end: the PEP 517 driver that `tailor build` runs for a package's wheel
# (data/build/build_wheel.py), in the real interpreter, over sources of every kind it
# meets: an in-tree backend named by pyproject.toml (backend-path), a setup.py with no
# pyproject.toml (setuptools' legacy backend, as pip does), neither (one line, exit 1),
# and a backend that names a wheel it did not write (one line, exit 1); and its reader of
# torch's per-module build.ninja files for the package's one Ninja.
set -u
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"  # src, fail, ok, bad
driver=$src/data/build/build_wheel.py
py=${PYTHON:-python3}
command -v "$py" >/dev/null || { echo "skip: no $py"; exit 77; }
"$py" -c 'import setuptools' 2>/dev/null || { echo "skip: $py has no setuptools"; exit 77; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 1. An in-tree backend (backend-path): it is imported from the source, called once.
mkdir -p "$tmp/intree/backend"
cat >"$tmp/intree/pyproject.toml" <<'TOML'
[build-system]
requires = []
build-backend = "mine.hooks:api"
backend-path = ["backend"]
TOML
mkdir -p "$tmp/intree/backend/mine"
cat >"$tmp/intree/backend/mine/__init__.py" <<'PY'
PY
cat >"$tmp/intree/backend/mine/hooks.py" <<'PY'
import os, zipfile
CALLS = []
class api:
    @staticmethod
    def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
        CALLS.append(1)
        assert len(CALLS) == 1, "build_wheel called twice"
        name = "intree-1.0-py3-none-any.whl"
        with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as z:
            z.writestr("intree/__init__.py", "")
        with open(os.path.join(os.getcwd(), "calls.txt"), "a") as f:
            f.write("build_wheel\n")
        return name
PY
out=$( cd "$tmp/intree" && "$py" -u "$driver" "$tmp/intree-out" 2>&1 ); rc=$?
[ $rc = 0 ] && ok "in-tree backend: exit 0" || bad "in-tree backend: exit $rc: $out"
[ -f "$tmp/intree-out/intree-1.0-py3-none-any.whl" ] && ok "in-tree backend: wheel written" || bad "in-tree backend: no wheel"
[ "$(cat "$tmp/intree/calls.txt" 2>/dev/null)" = "build_wheel" ] && ok "in-tree backend: one build_wheel call, no metadata pass" || bad "in-tree backend: calls: $(cat "$tmp/intree/calls.txt" 2>/dev/null)"
grep -q "^tailor: built intree-1.0-py3-none-any.whl with mine.hooks:api$" <<<"$out" && ok "in-tree backend: names the wheel and backend" || bad "in-tree backend: output: $out"

# 2. setup.py alone: setuptools' legacy backend, which imports setup.py once.
mkdir -p "$tmp/legacy/legacy_pkg"
: >"$tmp/legacy/legacy_pkg/__init__.py"
cat >"$tmp/legacy/setup.py" <<'PY'
import os
from setuptools import setup
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "runs.txt"), "a") as f:
    f.write("setup.py\n")
setup(name="legacy-pkg", version="2.0", packages=["legacy_pkg"])
PY
out=$( cd "$tmp/legacy" && "$py" -u "$driver" "$tmp/legacy-out" 2>&1 ); rc=$?
[ $rc = 0 ] && ok "setup.py only: exit 0" || bad "setup.py only: exit $rc: $(tail -5 <<<"$out")"
ls "$tmp/legacy-out"/legacy_pkg-2.0-*.whl >/dev/null 2>&1 && ok "setup.py only: wheel written" || bad "setup.py only: no wheel in $(ls "$tmp/legacy-out" 2>&1)"
[ "$(grep -c setup.py "$tmp/legacy/runs.txt" 2>/dev/null)" = 1 ] && ok "setup.py only: setup.py ran once (pip runs it twice)" || bad "setup.py only: setup.py ran $(grep -c setup.py "$tmp/legacy/runs.txt" 2>/dev/null) times"
grep -q "with setuptools.build_meta:__legacy__$" <<<"$out" && ok "setup.py only: the legacy backend" || bad "setup.py only: output: $(tail -3 <<<"$out")"

# 3. Neither file: one line, exit 1, nothing written.
mkdir -p "$tmp/empty"
out=$( cd "$tmp/empty" && "$py" -u "$driver" "$tmp/empty-out" 2>&1 ); rc=$?
[ $rc = 1 ] && ok "no build files: exit 1" || bad "no build files: exit $rc"
[ "$(wc -l <<<"$out")" = 1 ] && grep -q "has neither pyproject.toml nor setup.py" <<<"$out" && ok "no build files: one line" || bad "no build files: output: $out"
[ ! -e "$tmp/empty-out" ] && ok "no build files: no output folder" || bad "no build files: left $tmp/empty-out"

# 4. A backend that names a wheel it did not write.
mkdir -p "$tmp/liar/b"
printf '[build-system]\nbuild-backend = "liar"\nbackend-path = ["b"]\n' >"$tmp/liar/pyproject.toml"
printf 'def build_wheel(d, c=None, m=None):\n    return "ghost-1.0-py3-none-any.whl"\n' >"$tmp/liar/b/liar.py"
out=$( cd "$tmp/liar" && "$py" -u "$driver" "$tmp/liar-out" 2>&1 ); rc=$?
[ $rc = 1 ] && ok "lying backend: exit 1" || bad "lying backend: exit $rc"
grep -q "named ghost-1.0-py3-none-any.whl but left no such file" <<<"$out" && ok "lying backend: says so" || bad "lying backend: output: $out"

# 5. The package Ninja's reader of torch's per-module build.ninja (read_module), imported
# from the driver without running it: what it merges, and what it leaves whole.
mkdir -p "$tmp/ninja"
out=$(cd "$tmp/ninja" && "$py" - "$driver" <<'PY' 2>&1
import importlib.util, sys
spec = importlib.util.spec_from_file_location("tailor_build_wheel", sys.argv[1])
drv = importlib.util.module_from_spec(spec)
spec.loader.exec_module(drv)  # defines, runs nothing: the build is main()

def module(name, text):
    with open(name, "w") as f:
        f.write(text)
    return drv.read_module(name, 3)

torch_like = """ninja_required_version = 1.3
cxx = c++
rule compile
  command = $cxx -MMD -MF $out.d $cflags -c $in -o $out $post_cflags
  depfile = $out.d
  deps = gcc

cflags = -O2 -DX=$$HOME -I/a$ b
post_cflags = -DTORCH_EXTENSION_NAME=_c

build /o/a$ b.o: compile /s/a$ b.cpp
build /o/c$:d.o: compile /s/c.cpp
"""
rules, edges, outputs = module("torch.ninja", torch_like)
print("rule", rules.splitlines()[0])
print("command", rules.splitlines()[1])
print("edges", [first for first, _ in edges], [e.split(": ")[1] for _, e in edges])
print("outputs", outputs)
for name, text in [("chained", "a = 1\nb = $a\nrule r\n  command = $b\nbuild o: r i\n"),
                   ("twice", "a = 1\na = 2\nrule r\n  command = $a\nbuild o: r i\n"),
                   ("include", "include other.ninja\nbuild o: r i\n"),
                   ("continued", "rule r\n  command = x $\n    y\nbuild o: r i\n"),
                   ("nocolon", "rule r\n  command = x\nbuild o r i\n"),
                   ("binding", "rule r\n  command = x\nbuild o: r i\n  v = $w\n")]:
    print(name, module(name + ".ninja", text))
PY
)
expect_eq "torch's rules are renamed per module" "$(sed -n 1p <<<"$out")" "rule rule compile_m3"
expect_eq "the module's variables are written into its rules, even ones set after the rule" "$(sed -n 2p <<<"$out")" \
  "command   command = c++ -MMD -MF \$out.d -O2 -DX=\$\$HOME -I/a\$ b -c \$in -o \$out -DTORCH_EXTENSION_NAME=_c"
expect_eq "edges keep their escaped paths, the first input read unescaped" "$(sed -n 3p <<<"$out")" \
  "edges ['/s/a b.cpp', '/s/c.cpp'] ['compile_m3 /s/a\$ b.cpp', 'compile_m3 /s/c.cpp']"
expect_eq "the module's outputs for its stamp edge" "$(sed -n 4p <<<"$out")" "outputs ['/o/a\$ b.o', '/o/c\$:d.o']"
printf '%s\n' "$out" >"$tmp/ninja/read.txt"
for name in chained twice include continued nocolon binding; do
  expect_grep "a file torch does not write ($name) is left whole, with no stamp" "^$name (None, \[\], None)$" "$tmp/ninja/read.txt"
done

# The package's own target choices (issue 37): what the driver takes back and how. Its
# functions are importable (the build runs only as main()).
mkdir -p "$tmp/choices/sub"
cat >"$tmp/choices/CMakeLists.txt" <<'CMAKE'
set(CMAKE_CUDA_ARCHITECTURES 80 90a)
message(STATUS "CUDA_ARCHITECTURES ${CMAKE_CUDA_ARCHITECTURES}")
# set_property(TARGET k PROPERTY CUDA_ARCHITECTURES 52)
CMAKE
cat >"$tmp/choices/sub/CMakeLists.txt" <<'CMAKE'
set_target_properties(k PROPERTIES CUDA_ARCHITECTURES "50;52" POSITION_INDEPENDENT_CODE ON)
CMAKE
got=$(cd "$tmp/choices" && TAILOR_CMAKE_ARCHS="80-real;90-real" "$py" - "$driver" <<'PY' 2>&1
import importlib.util, sys
spec = importlib.util.spec_from_file_location("driver", sys.argv[1])
d = importlib.util.module_from_spec(spec)
spec.loader.exec_module(d)
print(d.strip_arch_flags(["-O3", "-arch=compute_50", "-gencode", "arch=compute_60,code=sm_60",
                          "-gencode arch=compute_70,code=sm_70", "--use_fast_math", "-code=sm_50", "-Xptxas", "-v"]))
print(d.arch_specific(["-gencode arch=compute_90a,code=sm_90a", "sm_100f", "sm_86a"], {"90", "100"}))
print(d.upgraded_torch_list("8.0;9.0+PTX", {"90": "a"}), d.upgraded_cmake_list("80-real;90", {"90": "a"}))
print(d.take_back_cmake_archs())
PY
)
expect_eq "driver: nvcc target options out, the rest kept; the arch-specific variants of requested capabilities; the CMake lists" \
  "$(echo "$got" | grep -v '^tailor: ')" \
  "(['-O3', '--use_fast_math', '-Xptxas', '-v'], ['-arch=compute_50', '-gencode arch=compute_60,code=sm_60', '-gencode arch=compute_70,code=sm_70', '-code=sm_50'])
{'90': 'a', '100': 'f'}
8.0;9.0a+PTX 80-real;90a
{'90': 'a'}"
expect_eq "driver: the CMake files' own lists replaced, 90a kept as the variant, strings and comments untouched" \
  "$(cat "$tmp/choices/CMakeLists.txt" "$tmp/choices/sub/CMakeLists.txt")" \
  'set(CMAKE_CUDA_ARCHITECTURES "80-real;90a-real")
message(STATUS "CUDA_ARCHITECTURES ${CMAKE_CUDA_ARCHITECTURES}")
# set_property(TARGET k PROPERTY CUDA_ARCHITECTURES 52)
set_target_properties(k PROPERTIES CUDA_ARCHITECTURES "80-real;90a-real" POSITION_INDEPENDENT_CODE ON)'
case "$got" in *"tailor: package target: sm_90a for sm_90"*"CMakeLists.txt:1: CMAKE_CUDA_ARCHITECTURES 80 90a replaced"*"sub/CMakeLists.txt:1: CUDA_ARCHITECTURES \"50;52\" replaced"*) ok "driver: each replacement said with its file and line" ;;
  *) bad "driver: replacements not said: $got" ;; esac

# The units that set a package's wall are split on their own (issue 37): only from measured
# times covering 90% of the units, only CUDA units of 20 s or more that are longer than
# 1.5 x the work shared over the jobs; K = time over that share, at most the maximum. The
# split rule is the module's own with -split-compile=K at the end of its command.
got=$("$py" - "$driver" <<'PY' 2>&1
import importlib.util, sys
spec = importlib.util.spec_from_file_location("driver", sys.argv[1])
d = importlib.util.module_from_spec(spec)
spec.loader.exec_module(d)
units = ["a.cu", "b.cu", "c.cpp"] + ["u%d.cu" % i for i in range(17)]
times = {"a.cu": 180000, "b.cu": 30000, "c.cpp": 5000}
times.update({"u%d.cu" % i: 10000 for i in range(17)})
print(d.learned_splits(times, units, 16, 16))                     # share 24.7 s: a.cu 8 ways
print(d.learned_splits(times, units, 16, 4))                      # at most 4
print(d.learned_splits({"a.cu": 180000}, units, 16, 16))          # 1 of 20 units known: nothing
print(d.learned_splits(times, units, 1, 16))                      # one job: nothing sets the wall alone
rules = "rule compile_m0\n  command = g++ $in\nrule cuda_compile_m0\n  command = nvcc -c $in -o $out\n  depfile = $out.d"
print(d.split_rule(rules, "cuda_compile_m0", 3))
print(d.split_rule(rules, "missing_m0", 3))
PY
)
expect_eq "driver: learned splits and the split rule" "$got" "{'a.cu': 8}
{'a.cu': 4}
{}
{}
rule cuda_compile_m0_s3
  command = nvcc -c \$in -o \$out -split-compile=3
  depfile = \$out.d
None"

exit $fail
