from ._cj import kernels  # noqa: F401
