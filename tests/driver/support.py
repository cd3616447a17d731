# What the driver's tests share: the driver's package on the path (driver/, as a build
# writes it beside the source), a fresh temporary folder as the working folder, the
# environment restored, and the driver's printed lines captured.
import contextlib
import io
import os
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DRIVER = os.path.join(ROOT, "driver")
if DRIVER not in sys.path:
    sys.path.insert(0, DRIVER)

from tailor_driver import say  # noqa: E402


class DriverTest(unittest.TestCase):
    # Each test runs in a fresh temporary folder (the driver works in the package's source
    # folder) with the environment as it was, and says each target variant anew.
    def setUp(self):
        self._cwd = os.getcwd()
        self._env = dict(os.environ)
        self._tmp = tempfile.TemporaryDirectory(prefix="tailor-driver-test-")
        self.dir = os.path.realpath(self._tmp.name)
        os.chdir(self.dir)
        say._announced.clear()

    def tearDown(self):
        os.chdir(self._cwd)
        os.environ.clear()
        os.environ.update(self._env)
        self._tmp.cleanup()

    def write(self, path, text):
        full = os.path.join(self.dir, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)
        return full

    def read(self, path):
        with open(os.path.join(self.dir, path)) as f:
            return f.read()

    @contextlib.contextmanager
    def said(self):
        # The lines the driver prints inside the block, as a list once it ends.
        lines, out = [], io.StringIO()
        with contextlib.redirect_stdout(out):
            yield lines
        lines.extend(out.getvalue().splitlines())


class Extension:
    # What the driver reads of a setuptools Extension.
    def __init__(self, name, sources, extra_compile_args=None, include_dirs=None):
        self.name, self.sources = name, sources
        self.extra_compile_args = extra_compile_args if extra_compile_args is not None else []
        self.include_dirs = include_dirs or []
