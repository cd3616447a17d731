# The wheel of the source in the current folder through its PEP 517 backend, in this
# interpreter, with no build isolation: the same as `pip wheel --no-build-isolation
# --no-deps` without pip's separate metadata pass, which runs setup.py (and its
# `import torch`) once more before the build. No pyproject.toml [build-system] means
# setuptools' legacy backend, as pip does.
import importlib
import os
import sys

from . import say
from .choices import take_back_choices
from .cmake import ninja_generator, take_back_cmake_archs, take_back_cmake_calls
from .cross import cross_target
from .downloads import force_source_build
from .modules_at_once import modules_at_once
from .stand_in import stand_in_gpu

LEGACY = "setuptools.build_meta:__legacy__"


def build_system():
    # pyproject.toml's [build-system] table ({} without one); neither file: one line, exit 1.
    if os.path.exists("pyproject.toml"):
        try:
            import tomllib
        except ImportError:
            try:
                import tomli as tomllib
            except ImportError:
                from pip._vendor import tomli as tomllib
        with open("pyproject.toml", "rb") as f:
            return tomllib.load(f).get("build-system", {})
    if not os.path.exists("setup.py"):
        sys.exit("tailor: " + os.getcwd() + " has neither pyproject.toml nor setup.py")
    return {}


def load_backend(system):
    # -> (the backend object, its spec "module:object.path").
    spec = system.get("build-backend") or LEGACY
    for p in reversed(system.get("backend-path", [])):
        sys.path.insert(0, os.path.abspath(p))
    name, _, attr = spec.partition(":")
    backend = importlib.import_module(name)
    for part in filter(None, attr.split(".")):
        backend = getattr(backend, part)
    return backend, spec


def main():
    out = os.path.abspath(sys.argv[1])
    system = build_system()

    cross_target()
    modules_at_once()
    take_back_choices()
    take_back_cmake_calls(take_back_cmake_archs())
    ninja_generator()
    force_source_build()
    stand_in_gpu()

    backend, spec = load_backend(system)
    os.makedirs(out, exist_ok=True)
    wheel = backend.build_wheel(out)
    if not os.path.isfile(os.path.join(out, wheel)):
        sys.exit("tailor: the backend " + spec + " named " + wheel + " but left no such file in "
                 + out)
    say.line("built " + wheel + " with " + spec)
