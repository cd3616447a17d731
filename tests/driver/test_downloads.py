# A package that downloads a prebuilt wheel unless told to compile, and a package's own
# CMake build without a generator of its choice.
import os
import unittest
from unittest import mock

from support import DriverTest
from tailor_driver import cmake, downloads

TEMPLATE = '''import os
# FORCE_BUILD: Force a fresh build locally, instead of attempting to find prebuilt wheels
FORCE_BUILD = os.getenv("QUANT_MATMUL_FORCE_BUILD", "FALSE") == "TRUE"
SKIP = os.environ.get("QUANT_MATMUL_SKIP_CUDA_BUILD", "FALSE") == "TRUE"
# os.getenv("OLD_FORCE_BUILD") in a comment is not read
if os.environ["OTHER_FORCE_BUILD"]: pass
again = os.getenv('QUANT_MATMUL_FORCE_BUILD')
'''


class ForceSourceBuild(DriverTest):
    def test_template_variables_set_and_said_once(self):
        self.write("setup.py", TEMPLATE)
        for name in ("QUANT_MATMUL_FORCE_BUILD", "OTHER_FORCE_BUILD", "OLD_FORCE_BUILD"):
            os.environ.pop(name, None)
        with self.said() as lines:
            names = downloads.force_source_build()
        self.assertEqual(names, ["QUANT_MATMUL_FORCE_BUILD", "OTHER_FORCE_BUILD"])
        self.assertEqual(os.environ["QUANT_MATMUL_FORCE_BUILD"], "TRUE")
        self.assertEqual(os.environ["OTHER_FORCE_BUILD"], "TRUE")
        self.assertNotIn("OLD_FORCE_BUILD", os.environ)
        self.assertNotIn("QUANT_MATMUL_SKIP_CUDA_BUILD", os.environ)
        self.assertEqual(lines, [
            "tailor: package choice: setup.py:3: the package downloads a prebuilt wheel unless "
            "QUANT_MATMUL_FORCE_BUILD=TRUE; set, so it compiles for the requested targets",
            "tailor: package choice: setup.py:6: the package downloads a prebuilt wheel unless "
            "OTHER_FORCE_BUILD=TRUE; set, so it compiles for the requested targets"])

    def test_the_users_value_stands(self):
        self.write("setup.py", TEMPLATE)
        os.environ["QUANT_MATMUL_FORCE_BUILD"] = "FALSE"
        os.environ.pop("OTHER_FORCE_BUILD", None)
        with self.said() as lines:
            self.assertEqual(downloads.force_source_build(), ["OTHER_FORCE_BUILD"])
        self.assertEqual(os.environ["QUANT_MATMUL_FORCE_BUILD"], "FALSE")
        self.assertEqual(len(lines), 1)

    def test_no_setup_py(self):
        with self.said() as lines:
            self.assertEqual(downloads.force_source_build(), [])
        self.assertEqual(lines, [])


class NinjaGenerator(DriverTest):
    def test_set_for_a_cmake_package_without_a_generator(self):
        self.write("CMakeLists.txt", "project(x)\n")
        os.environ.pop("CMAKE_GENERATOR", None)
        with mock.patch("shutil.which", return_value="/usr/bin/ninja"), self.said() as lines:
            self.assertTrue(cmake.ninja_generator())
        self.assertEqual(os.environ["CMAKE_GENERATOR"], "Ninja")
        self.assertEqual(len(lines), 1)
        self.assertIn("CMake generator: Ninja", lines[0])

    def test_left_alone(self):
        os.environ.pop("CMAKE_GENERATOR", None)
        with mock.patch("shutil.which", return_value="/usr/bin/ninja"):
            self.assertFalse(cmake.ninja_generator())  # no CMakeLists.txt
            self.write("CMakeLists.txt", "project(x)\n")
            os.environ["CMAKE_GENERATOR"] = "Unix Makefiles"
            self.assertFalse(cmake.ninja_generator())  # the user's choice
            self.assertEqual(os.environ["CMAKE_GENERATOR"], "Unix Makefiles")
        del os.environ["CMAKE_GENERATOR"]
        with mock.patch("shutil.which", return_value=None):
            self.assertFalse(cmake.ninja_generator())  # no ninja
        self.assertNotIn("CMAKE_GENERATOR", os.environ)


if __name__ == "__main__":
    unittest.main()
