from cmake_archs._cm import kernels  # noqa: F401
