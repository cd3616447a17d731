#!/usr/bin/env bash
# End-to-end: the PEP 517 driver that `tailor build` runs for a package's wheel
# (driver/tailor-build-wheel.py and its tailor_driver package), in the real interpreter,
# over sources of every kind it meets: an in-tree backend named by pyproject.toml
# (backend-path), a setup.py with no pyproject.toml (setuptools' legacy backend, as pip
# does), neither (one line, exit 1), and a backend that names a wheel it did not write (one
# line, exit 1). Its parts one by one (the package Ninja, the choices it takes back, the
# split units): tests/driver.
set -u
# shellcheck source=lib/common.sh
. "$(dirname "$0")/lib/common.sh"  # src, fail, ok, bad
py=${PYTHON:-python3}
command -v "$py" >/dev/null || { echo "skip: no $py"; exit 77; }
"$py" -c 'import setuptools' 2>/dev/null || { echo "skip: $py has no setuptools"; exit 77; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# As a build has it: the program and its package copied into a folder of their own.
mkdir -p "$tmp/work"
cp -r "$src/driver/tailor-build-wheel.py" "$src/driver/tailor_driver" "$tmp/work/"
rm -rf "$tmp/work/tailor_driver/__pycache__"
driver=$tmp/work/tailor-build-wheel.py

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

# The driver's modules leave no __pycache__ beside them (a build writes them into its work
# folder, fresh each time).
[ -z "$(find "$tmp/work" -name __pycache__)" ] && ok "no __pycache__ beside the driver" || bad "driver left $(find "$tmp/work" -name __pycache__)"

exit $fail
