# The package's CMake targets: the lists in its CMake files, and its own cmake calls.
import os
import stat
import subprocess
import unittest

from support import DriverTest
from tailor_driver import cmake

TOP = ('set(CMAKE_CUDA_ARCHITECTURES 80 90a)\n'
       'message(STATUS "CUDA_ARCHITECTURES ${CMAKE_CUDA_ARCHITECTURES}")\n'
       '# set_property(TARGET k PROPERTY CUDA_ARCHITECTURES 52)\n')
SUB = ('set_target_properties(k PROPERTIES CUDA_ARCHITECTURES "%s" '
       'POSITION_INDEPENDENT_CODE ON)\n')
REPLACED = "replaced by the requested targets (80-real;90a-real)"


class CMakeFiles(DriverTest):
    def test_lists_replaced_strings_and_comments_untouched(self):
        self.write("CMakeLists.txt", TOP)
        self.write("sub/CMakeLists.txt", SUB % "50;52")
        self.write("cmake/cuda.cmake", 'set(CMAKE_CUDA_ARCHITECTURES "75" CACHE STRING "x")\n')
        # A build folder is not the package's own.
        self.write("build/CMakeLists.txt", "set(CMAKE_CUDA_ARCHITECTURES 50)\n")
        os.environ["TAILOR_CMAKE_ARCHS"] = "80-real;90-real"
        with self.said() as lines:
            self.assertEqual(cmake.take_back_cmake_archs(), {"90": "a"})
        self.assertEqual(self.read("CMakeLists.txt"),
                         TOP.replace("80 90a", '"80-real;90a-real"', 1))
        self.assertEqual(self.read("CMakeLists.txt").split("\n")[1:], TOP.split("\n")[1:])
        self.assertEqual(self.read("sub/CMakeLists.txt"), SUB % "80-real;90a-real")
        self.assertEqual(self.read("cmake/cuda.cmake"),
                         'set(CMAKE_CUDA_ARCHITECTURES "80-real;90a-real" CACHE STRING "x")\n')
        self.assertEqual(self.read("build/CMakeLists.txt"), "set(CMAKE_CUDA_ARCHITECTURES 50)\n")
        self.assertEqual(lines, [
            "tailor: package target: sm_90a for sm_90",
            "tailor: package choice: CMakeLists.txt:1: CMAKE_CUDA_ARCHITECTURES 80 90a " + REPLACED,
            'tailor: package choice: cmake/cuda.cmake:1: CMAKE_CUDA_ARCHITECTURES "75" ' + REPLACED,
            'tailor: package choice: sub/CMakeLists.txt:1: CUDA_ARCHITECTURES "50;52" ' + REPLACED])
        # No temporary file left.
        self.assertEqual(os.listdir(os.path.join(self.dir, "sub")), ["CMakeLists.txt"])

    def test_a_list_already_requested_is_left_alone(self):
        self.write("CMakeLists.txt", 'set(CMAKE_CUDA_ARCHITECTURES "80-real")\n')
        os.environ["TAILOR_CMAKE_ARCHS"] = "80-real"
        with self.said() as lines:
            cmake.take_back_cmake_archs()
        self.assertEqual(lines, [])
        self.assertEqual(self.read("CMakeLists.txt"), 'set(CMAKE_CUDA_ARCHITECTURES "80-real")\n')

    def test_nothing_requested_touches_nothing(self):
        os.environ.pop("TAILOR_CMAKE_ARCHS", None)
        self.write("CMakeLists.txt", "set(CMAKE_CUDA_ARCHITECTURES 50)\n")
        self.assertEqual(cmake.take_back_cmake_archs(), {})
        self.assertEqual(self.read("CMakeLists.txt"), "set(CMAKE_CUDA_ARCHITECTURES 50)\n")


class CMakeCalls(DriverTest):
    def test_targets_replaced(self):
        with self.said() as lines:
            args, changed = cmake.patch_cmake_args(
                ["cmake", "-S", ".", "-DCMAKE_CUDA_ARCHITECTURES=70;90a", "-DX=1"],
                "80-real;90-real", {})
        self.assertEqual(args, ["cmake", "-S", ".", "-DCMAKE_CUDA_ARCHITECTURES=80-real;90a-real",
                                "-DX=1"])
        self.assertEqual(changed, [("CMAKE_CUDA_ARCHITECTURES",
                                    "cmake -DCMAKE_CUDA_ARCHITECTURES=70;90a " + REPLACED)])
        self.assertEqual(lines, ["tailor: package target: sm_90a for sm_90"])
        # --keep-package-archs: nothing asked, the package's own list stays.
        args, _ = cmake.patch_cmake_args(["cmake", "-DCMAKE_CUDA_ARCHITECTURES=70"], None, {})
        self.assertEqual(args, ["cmake", "-DCMAKE_CUDA_ARCHITECTURES=70"])

    def test_the_package_own_cmake_call_runs_patched(self):
        # A cmake on PATH that writes its arguments: the setup.py's call reaches it patched.
        self.write("setup.py", "import subprocess\n"
                               "subprocess.check_call(['cmake', '--build', '.', '-j1'])\n"
                               "# -DCMAKE_CUDA_ARCHITECTURES=70\n"
                               "flags = ['-DCMAKE_CUDA_ARCHITECTURES=70']\n")
        fake = self.write("bin/cmake",
                          "#!/bin/sh\nprintf '%s\\n' \"$@\" >>\"$(dirname \"$0\")/args\"\n")
        os.chmod(fake, os.stat(fake).st_mode | stat.S_IXUSR)
        os.environ["TAILOR_CMAKE_ARCHS"] = "80-real"
        os.environ["CMAKE_GENERATOR"] = "Unix Makefiles"  # the user's: it stands
        original = subprocess.Popen.__init__
        try:
            cmake.take_back_cmake_calls({})
            with self.said() as lines:
                subprocess.check_call([fake, "--build", ".", "-j1"])
                subprocess.check_call([fake, "-S", ".", "-DCMAKE_CUDA_ARCHITECTURES=70"])
                subprocess.check_call(["true", "-j1", "--build"])  # not cmake: as it was
        finally:
            subprocess.Popen.__init__ = original
        self.assertEqual(self.read("bin/args").split("\n"),
                         ["--build", ".", "-S", ".", "-DCMAKE_CUDA_ARCHITECTURES=80-real", ""])
        self.assertEqual(lines, [
            "tailor: package choice: setup.py:2: cmake --build -j1 dropped: "
            "tailor's job count stands",
            "tailor: package choice: setup.py:4: cmake -DCMAKE_CUDA_ARCHITECTURES=70 "
            "replaced by the requested targets (80-real)"])


if __name__ == "__main__":
    unittest.main()
