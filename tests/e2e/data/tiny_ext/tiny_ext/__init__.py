"""tailor's e2e test fixture (tests/e2e/data/tiny_ext): one CUDA kernel behind a CPython module."""
import torch  # noqa: F401  (loads libc10/libtorch, which the extension links, before it)

from tiny_ext import _C

__version__ = "0.1.0"


def scale(values, factor):
    """[v * factor for v in values], computed on the GPU (RuntimeError without one)."""
    return _C.scale([float(v) for v in values], float(factor))
