# A TEST FIXTURE for tests/e2e/build_compat.sh (not an example to copy): a setup.py that
# configures its CMake project (in csrc/, not beside setup.py) with no generator, so CMake
# would pick Unix Makefiles, and builds it with its own job count, as real packages do
# (`-j <cpu_count() // 4>`). tailor runs it on Ninja under the build's jobserver instead.
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
        env = dict(os.environ)
        subprocess.check_call(["cmake", os.path.abspath("csrc"), "-DCMAKE_BUILD_TYPE=Release",
                               "-DPython_EXECUTABLE=" + sys.executable,
                               "-DCMAKE_LIBRARY_OUTPUT_DIRECTORY=" + out], cwd=tmp, env=env)
        subprocess.check_call(["cmake", "--build", ".", "-j", "3"], cwd=tmp)


setup(
    name="cmake-jobs",
    version="0.1.0",
    description="tailor's e2e test fixture: a CMake build with its own generator and job count",
    packages=["cmake_jobs"],
    ext_modules=[Extension("cmake_jobs._cj", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.9",
)
