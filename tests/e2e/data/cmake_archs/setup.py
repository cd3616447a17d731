# A TEST FIXTURE for tests/e2e/build_own_choices.sh (not an example to copy): a package whose
# setup.py runs CMake itself, as many CUDA packages do, with its own -DCMAKE_CUDA_ARCHITECTURES
# and `cmake --build -j1`; CMakeLists.txt hard-codes targets too.
import os
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        out = os.path.abspath(os.path.dirname(self.get_ext_fullpath(ext.name)))
        tmp = os.path.abspath(self.build_temp)
        os.makedirs(tmp, exist_ok=True)
        subprocess.check_call(["cmake", "-S", os.path.abspath("."), "-B", tmp, "-G", "Ninja",
                               "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_CUDA_ARCHITECTURES=50",
                               "-DPython_EXECUTABLE=" + sys.executable,
                               "-DCMAKE_LIBRARY_OUTPUT_DIRECTORY=" + out])
        subprocess.check_call(["cmake", "--build", tmp, "-j1"])


setup(
    name="cmake-archs",
    version="0.1.0",
    description="tailor's e2e test fixture: a CMake project with hard-coded GPU targets",
    packages=["cmake_archs"],
    ext_modules=[Extension("cmake_archs._cm", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.9",
)
