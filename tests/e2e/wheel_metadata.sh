#!/usr/bin/env bash
# End-to-end: the wheel's metadata (pyproject.toml) agrees with the CMake project and the
# built binary: the version scikit-build-core reads out of CMakeLists.txt is the one
# `tailor --version` prints, every CMake option the wheel sets exists, and the wheel carries
# the binary only (no Python ABI). The wheels themselves: scripts/build_wheel.sh.
set -u
: "${TAILOR:?TAILOR must point at the built binary}"
: "${TAILOR_SOURCE_DIR:?TAILOR_SOURCE_DIR must point at the source tree}"
[ -x "$TAILOR" ] || { echo "skip: $TAILOR not built"; exit 77; }
python3 -c 'import tomllib' 2>/dev/null || { echo "skip: python3 >= 3.11 (tomllib) needed"; exit 77; }

# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"  # src (TAILOR_SOURCE_DIR), fail, expect_eq
# py EXPR: evaluated with p = the parsed pyproject.toml, cm = CMakeLists.txt's text.
py() {
  python3 - "$src" "$1" <<'PY'
import re, sys, tomllib, pathlib
src = pathlib.Path(sys.argv[1])
p = tomllib.loads((src / "pyproject.toml").read_text())
cm = (src / "CMakeLists.txt").read_text()
print(eval(sys.argv[2]))
PY
}

skb='p["tool"]["scikit-build"]'
# The version scikit-build-core's regex provider reads, applied the way it applies it.
wheel_version=$(py "(lambda m: re.search(m['regex'], (src / m['input']).read_text()).group('value'))($skb['metadata']['version'])")
binary_version=$("$TAILOR" --version | awk '{print $2}')
expect_eq "wheel version is the binary's" "$wheel_version" "$binary_version"
expect_eq "version is dynamic" "$(py '"version" in p["project"]["dynamic"] and "version" not in p["project"]')" True
expect_eq "no Python ABI" "$(py "$skb['wheel']['py-api']")" py3
expect_eq "no Python package" "$(py "$skb['wheel']['packages']")" "[]"
# Every option the wheel sets is one CMakeLists.txt declares, and tests/bench/fuzz are off.
expect_eq "defines are options" "$(py "sorted(k for k in $skb['cmake']['define'] if not re.search(r'option\(' + k + r'\b', cm))")" "[]"
expect_eq "tests, bench, fuzz off" "$(py "[$skb['cmake']['define'][k] for k in ('TAILOR_TESTS', 'TAILOR_BENCH', 'TAILOR_FUZZ')]")" "['OFF', 'OFF', 'OFF']"
# The binary goes to the wheel's scripts folder (on PATH after pip install).
expect_eq "binary to scripts" "$(py "'set(CMAKE_INSTALL_BINDIR \${SKBUILD_SCRIPTS_DIR})' in cm")" True
# The release toolchain: both architectures and their compiler wrappers.
for f in cmake/zig-x86_64.cmake cmake/zig-aarch64.cmake cmake/zig-toolchain.cmake cmake/zig-project.cmake; do
  expect_eq "$f exists" "$([ -f "$src/$f" ] && echo yes)" yes
done
for f in zig-cc zig-c++ zig-ar zig-ranlib build_wheel.sh; do
  expect_eq "scripts/$f executable" "$([ -x "$src/scripts/$f" ] && echo yes)" yes
done
# A wrong architecture is refused with one line and exit 2, before any build starts.
err=$(bash "$src/scripts/build_wheel.sh" riscv64 2>&1 >/dev/null); rc=$?
expect_eq "unknown arch exit" "$rc" 2
expect_eq "unknown arch message" "$err" "build_wheel: unknown architecture 'riscv64' (x86_64, aarch64 or all)"
exit $fail
