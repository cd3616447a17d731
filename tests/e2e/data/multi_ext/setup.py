# A TEST FIXTURE for tests/e2e/build_modules.sh (not an example to copy): a torch
# cpp_extension package of three extension modules, so the test sees tailor build them at
# once, each in its own build folder. _a and _b share their sources (one CPython module
# and one CUDA kernel, compiled once per module with its own module name); _c has no CUDA.
# No torch or ATen header: it compiles in seconds. Like flash-attn's NinjaBuildExtension,
# its build command sets MAX_JOBS itself when the environment has none (flash-attn:
# cpu_count() // 2): tailor's jobserver must still decide the jobs.
import os

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension, CUDAExtension


def cuda_module(name):
    return CUDAExtension(
        name="multi_ext." + name,
        sources=["csrc/module.cpp", "csrc/scale.cu"],
        extra_compile_args={"cxx": ["-O2", "-DMODULE_NAME=" + name], "nvcc": ["-O2"]},
    )


class OwnJobsBuildExtension(BuildExtension):
    def __init__(self, *args, **kwargs):
        if not os.environ.get("MAX_JOBS"):
            os.environ["MAX_JOBS"] = "1"
        super().__init__(*args, **kwargs)


setup(
    name="multi_ext",
    version="0.1.0",
    description="tailor's e2e test fixture: three extension modules",
    packages=["multi_ext"],
    ext_modules=[
        cuda_module("_a"),
        cuda_module("_b"),
        CppExtension(
            name="multi_ext._c",
            sources=["csrc/module.cpp"],
            extra_compile_args=["-O2", "-DMODULE_NAME=_c", "-DHOST_ONLY"],
        ),
    ],
    cmdclass={"build_ext": OwnJobsBuildExtension.with_options(use_ninja=True)},
    python_requires=">=3.9",
)
