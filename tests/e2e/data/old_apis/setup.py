# A TEST FIXTURE for tests/e2e/build_compat.sh (not an example to copy): a research CUDA
# extension written against torch 1.x, GCC 9 and CUDA 11, as many still are. Against torch
# 2.11, GCC 12 and CUDA 13 its source no longer compiles: `x.type()` in AT_DISPATCH_*,
# AT_CHECK, THC/THC.h with THCudaCheck, THCState and THCCeilDiv, cub::Sum, and a header
# that uses std::unique_ptr, uint32_t and std::runtime_error without including
# <memory>, <cstdint> or <stdexcept>; and it asks nvcc for C++14, which torch 2's headers
# refuse (nvcc alone: g++ under C++14 writes 100,000 lines of errors about torch's headers).
# tailor bridges each in its copy of the source (the standard: in the build driver).
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="old-apis",
    version="0.1.0",
    description="tailor's e2e test fixture: yesterday's extension on today's stack",
    packages=["old_apis"],
    ext_modules=[CUDAExtension("old_apis._C", ["csrc/ops.cpp", "csrc/ops_cuda.cu"],
                               extra_compile_args={"nvcc": ["-std=c++14"]})],
    cmdclass={"build_ext": BuildExtension},
)
