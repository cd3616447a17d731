# Builds the wheel of the source in the current folder through its PEP 517 backend, in this
# interpreter, with no build isolation: python -u -c SCRIPT OUT_DIR. The same as
# `pip wheel --no-build-isolation --no-deps` without pip's separate metadata pass, which
# runs setup.py (and its `import torch`) once more before the build. No pyproject.toml
# [build-system] means setuptools' legacy backend, as pip does. Full-line comments are
# dropped when tailor embeds this in a command line.
import importlib
import os
import sys

out = os.path.abspath(sys.argv[1])
system = {}
if os.path.exists("pyproject.toml"):
    try:
        import tomllib
    except ImportError:
        try:
            import tomli as tomllib
        except ImportError:
            from pip._vendor import tomli as tomllib
    with open("pyproject.toml", "rb") as f:
        system = tomllib.load(f).get("build-system", {})
elif not os.path.exists("setup.py"):
    sys.exit("tailor: " + os.getcwd() + " has neither pyproject.toml nor setup.py")
spec = system.get("build-backend") or "setuptools.build_meta:__legacy__"
for p in reversed(system.get("backend-path", [])):
    sys.path.insert(0, os.path.abspath(p))
name, _, attr = spec.partition(":")
backend = importlib.import_module(name)
for part in filter(None, attr.split(".")):
    backend = getattr(backend, part)
os.makedirs(out, exist_ok=True)
wheel = backend.build_wheel(out)
if not os.path.isfile(os.path.join(out, wheel)):
    sys.exit("tailor: the backend " + spec + " named " + wheel + " but left no such file in " + out)
print("tailor: built " + wheel + " with " + spec, flush=True)
