# The backend call: the backend pyproject.toml names (with its backend-path), else
# setuptools' legacy one; neither file is one line and exit 1.
import os
import sys
import unittest

from support import DriverTest
from tailor_driver import backend, say


class Backend(DriverTest):
    def tearDown(self):
        sys.modules.pop("mine", None)
        sys.modules.pop("mine.hooks", None)
        sys.path[:] = [p for p in sys.path if not p.startswith(self.dir)]
        super().tearDown()

    def test_an_in_tree_backend(self):
        self.write("pyproject.toml", '[build-system]\nrequires = []\n'
                                     'build-backend = "mine.hooks:api.inner"\n'
                                     'backend-path = ["b"]\n')
        self.write("b/mine/__init__.py", "")
        self.write("b/mine/hooks.py", "class api:\n    class inner:\n        NAME = 'inner'\n")
        system = backend.build_system()
        self.assertEqual(system["backend-path"], ["b"])
        found, spec = backend.load_backend(system)
        self.assertEqual((found.NAME, spec), ("inner", "mine.hooks:api.inner"))
        self.assertEqual(sys.path[0], os.path.join(self.dir, "b"))

    def test_setup_py_alone_is_the_legacy_backend(self):
        self.write("setup.py", "")
        self.assertEqual(backend.build_system(), {})
        self.assertEqual(backend.LEGACY, "setuptools.build_meta:__legacy__")

    def test_neither_file(self):
        with self.assertRaises(SystemExit) as stopped:
            backend.build_system()
        self.assertEqual(str(stopped.exception),
                         "tailor: " + self.dir + " has neither pyproject.toml nor setup.py")


class WhereInSource(DriverTest):
    def test_the_first_line_that_is_not_a_comment(self):
        self.write("setup.py", "# MAX_JOBS in a comment\nimport os\nos.environ['MAX_JOBS'] = '1'\n")
        self.write("build_helpers.py", "TORCH_CUDA_ARCH_LIST = '5.0'\n")
        self.write("tailor-build-wheel.py", "USE_NINJA = 'use_ninja'\n")  # tailor's own: skipped
        self.assertEqual(say.where_in_source("MAX_JOBS"), "setup.py:3")
        self.assertEqual(say.where_in_source("TORCH_CUDA_ARCH_LIST"), "build_helpers.py:1")
        self.assertEqual(say.where_in_source("use_ninja"), "setup.py (a value it computed)")
        os.unlink("setup.py")
        self.assertEqual(say.where_in_source("x"), "the package's build")

    def test_the_most_specific_needle_and_code_only(self):
        # The setup.py:19 for a flag on line 22: the target named earlier (here in a
        # list of versions, and after a comment) is not where the flag is.
        self.write("setup.py", "archs = ['compute_80']  # arch=compute_80,code=sm_80\n"
                   "x = 1\n"
                   "flags = ['-gencode', 'arch=compute_80,code=sm_80']\n")
        self.assertEqual(say.where_in_source("-gencode=arch=compute_80,code=sm_80",
                                             "arch=compute_80,code=sm_80", "compute_80"),
                         "setup.py:3")
        self.assertEqual(say.where_in_source("compute_80"), "setup.py:1")
        self.assertEqual(say.code_part("a = '#x'  # c"), "a = '#x'  ")


if __name__ == "__main__":
    unittest.main()
