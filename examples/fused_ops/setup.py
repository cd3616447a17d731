# The bundled example extension that `tailor build` builds when run with no SOURCE inside
# tailor's repository. A real torch cpp_extension package: three .cu files with
# dtype-dispatched kernels, a C++ binding with CPU reference implementations, and pytest
# tests that compare both against torch. Its targets come from TORCH_CUDA_ARCH_LIST, like
# every torch cpp_extension package.
import os

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

here = os.path.dirname(os.path.abspath(__file__))
csrc = os.path.join("csrc")

setup(
    name="fused_ops",
    version="0.1.0",
    description="Fused elementwise and reduction CUDA kernels (tailor's example extension)",
    packages=["fused_ops"],
    ext_modules=[
        CUDAExtension(
            name="fused_ops._C",
            sources=[
                os.path.join(csrc, "bindings.cpp"),
                os.path.join(csrc, "bias_gelu.cu"),
                os.path.join(csrc, "scale_residual.cu"),
                os.path.join(csrc, "rms_norm.cu"),
            ],
            extra_compile_args={"cxx": ["-O2"], "nvcc": ["-O2"]},
        )
    ],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
    python_requires=">=3.9",
)
