# A TEST FIXTURE for tests/e2e/build_own_choices.sh (not an example to copy): a package that
# makes the build choices real packages make for themselves, each of which tailor takes back:
# - its BuildExtension subclass turns Ninja off (use_ninja=False), so on its own it compiles
#   its three CUDA units one after another, in the source folder, so its relative include
#   folder (csrc/include) works there;
# - it hard-codes its GPU targets: -arch=compute_50 and a -gencode pair in extra_compile_args,
#   and TORCH_CUDA_ARCH_LIST set here (nvcc 13 refuses all three);
# - its distribution name (own-choices) is not its import name (OwnChoices).
# No torch or ATen header: it compiles in seconds.
import os

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

os.environ["TORCH_CUDA_ARCH_LIST"] = "5.0"


class SerialBuildExtension(BuildExtension):
    def __init__(self, *args, **kwargs):
        kwargs["use_ninja"] = False
        super().__init__(*args, **kwargs)


setup(
    name="own-choices",
    version="0.1.0",
    description="tailor's e2e test fixture: a package that chooses its own build",
    packages=["OwnChoices"],
    ext_modules=[
        CUDAExtension(
            name="OwnChoices._kernels",
            sources=["csrc/module.cpp", "csrc/k1.cu", "csrc/k2.cu", "csrc/k3.cu"],
            include_dirs=["csrc/include"],
            extra_compile_args={"cxx": ["-O2"],
                                "nvcc": ["-O2", "-arch=compute_50", "-gencode", "arch=compute_52,code=sm_52"]},
        ),
    ],
    cmdclass={"build_ext": SerialBuildExtension},
    python_requires=">=3.9",
)
