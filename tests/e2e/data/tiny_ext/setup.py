# A TEST FIXTURE for tests/e2e (not an example to copy): the smallest real torch
# cpp_extension package, so the infrastructure tests (compiler caches, sccache-dist, the
# memory governor, failures, `tailor stack`) run the whole build path (tailor's build
# driver and recipe logic, torch's BuildExtension and Ninja, nvcc, sccache's nvcc steps)
# in seconds. Its two sources include no torch or ATen header: a .cu with one kernel and
# an extern "C" launcher, and a CPython module that calls it. examples/fused_ops is the
# real example, built by tests/e2e/build_example.sh.
#
# The C++ file is compiled and linked with -flto: the link then runs GCC's code generation
# and lasts a few tenths of a second instead of about 0.15 s, longer than the memory
# governor's 250 ms sample period, so governor.sh sees `ld` among the build's processes
# (as it did with the example's larger link).
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="tiny_ext",
    version="0.1.0",
    description="tailor's e2e test fixture: one CUDA kernel behind a CPython module",
    packages=["tiny_ext"],
    ext_modules=[
        CUDAExtension(
            name="tiny_ext._C",
            sources=["csrc/module.cpp", "csrc/scale.cu"],
            extra_compile_args={"cxx": ["-O2", "-flto"], "nvcc": ["-O2"]},
            extra_link_args=["-flto"],
        )
    ],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
    python_requires=">=3.9",
)
