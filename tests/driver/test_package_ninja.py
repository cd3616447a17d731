# The package's one Ninja run for real (ninja on PATH), over two modules whose "torch" is a
# stand-in: each module writes its build.ninja in its own folder and hands its compile to
# the driver, the one Ninja compiles every unit longest first, each module links once its
# stamp edge is reported.
import os
import shutil
import sys
import tempfile
import threading
import types
import unittest

from support import DriverTest, Extension
from tailor_driver import modules_at_once, schedule


class Command:
    # setuptools' build_ext as torch's BuildExtension drives it, with the driver's build
    # folder per module (build_temp/<module> in a module's thread).
    def __init__(self, extensions, base, cpp_extension):
        self.extensions, self.base, self.cpp_extension = extensions, base, cpp_extension
        self.use_ninja = True
        self.linked = []

    @property
    def build_temp(self):
        sub = getattr(modules_at_once.local, "sub", None)
        return os.path.join(self.base, sub) if sub else self.base

    def check_extensions_list(self, extensions):
        pass

    def build_extension(self, ext):
        folder = self.build_temp
        os.makedirs(folder, exist_ok=True)
        edges = ["build %s.o: compile %s" % (os.path.join(folder, s), os.path.abspath(s))
                 for s in ext.sources]
        with open(os.path.join(folder, "build.ninja"), "w") as f:
            f.write("ninja_required_version = 1.3\nlog = %s\n\nrule compile\n"
                    "  command = echo $in >> $log && cp $in $out\n\n%s\n" % (
                        os.path.join(os.path.dirname(self.base), "order.txt"), "\n".join(edges)))
        self.cpp_extension._run_ninja_build(folder, True, "Error compiling objects for extension")
        missing = [s for s in ext.sources if not os.path.exists(os.path.join(folder, s + ".o"))]
        self.linked.append((ext.name, missing))


@unittest.skipUnless(shutil.which("ninja"), "no ninja on PATH")
class OneNinja(DriverTest):
    def setUp(self):
        super().setUp()
        self.cpp_extension = types.ModuleType("torch.utils.cpp_extension")

        def torch_run(*args, **kwargs):
            raise AssertionError("torch's own Ninja ran")
        self.cpp_extension._run_ninja_build = torch_run
        sys.modules["torch.utils.cpp_extension"] = self.cpp_extension
        for var in ("MAKEFLAGS", "TAILOR_SPLIT_COMPILE", "TAILOR_SPLIT_UNITS"):
            os.environ.pop(var, None)
        os.environ["MAX_JOBS"] = "1"  # one at a time: the order the units start in is the list's

    def tearDown(self):
        del sys.modules["torch.utils.cpp_extension"]
        super().tearDown()

    def build(self, exts, times):
        command = Command(exts, os.path.join(self.dir, "build"), self.cpp_extension)
        at_once = modules_at_once.ModulesAtOnce(
            lambda c: self.fail("the package's own build ran"), "1", schedule.UnitTimes(times))
        error = []

        def run():
            try:
                at_once.build_extensions(command)
            except Exception as e:  # noqa: BLE001 - handed to the test
                error.append(e)
        with tempfile.TemporaryFile() as out:
            saved = os.dup(1)
            os.dup2(out.fileno(), 1)  # the Ninja's lines go to fd 1
            try:
                with self.said() as lines:
                    worker = threading.Thread(target=run, daemon=True)
                    worker.start()
                    worker.join(60)
            finally:
                os.dup2(saved, 1)
                os.close(saved)
            self.assertFalse(worker.is_alive(), "the build did not end")
            out.seek(0)
            return command, error, lines, out.read().decode()

    def test_two_modules_longest_unit_first_each_links(self):
        for src in ("a1.cpp", "a2.cu", "b1.cu", "b2.cpp"):
            self.write(src, src)
        a = Extension("pkg._a", ["a1.cpp", "a2.cu"])
        b = Extension("pkg._b", ["b1.cu", "b2.cpp"])
        times = {"a1.cpp": 100, "a2.cu": 9000, "b1.cu": 20000, "b2.cpp": 50}
        command, error, lines, ninja_out = self.build([a, b], times)
        self.assertEqual(error, [])
        self.assertEqual(sorted(command.linked), [("pkg._a", []), ("pkg._b", [])])
        self.assertEqual(self.read("order.txt").split(),
                         [self.dir + "/" + s for s in ("b1.cu", "a2.cu", "a1.cpp", "b2.cpp")])
        self.assertEqual(lines[0], "tailor: modules at once: 2 modules, 4 units (2 CUDA), "
                                   "one Ninja, 1 at a time")
        self.assertEqual(lines[1], "tailor: units ordered by 4 units' times from earlier builds")
        manifest = self.read("build/build.ninja")
        # pkg._b, the heaviest, is m0.
        self.assertIn("build .tailor-done/m0: tailor_module_done", manifest)
        self.assertIn("build/pkg._b/b1.cu.o", manifest.split("tailor-done/m0")[1].split("\n")[0])
        self.assertIn("cp %s/b1.cu" % self.dir, ninja_out)
        self.assertNotIn("touch .tailor-done", ninja_out)  # the stamps are the driver's, not shown
        self.assertTrue(os.path.exists(os.path.join(self.dir, "build/.tailor_start")))

    def test_a_failing_unit_fails_its_module(self):
        self.write("ok.cpp", "")
        a = Extension("pkg._a", ["ok.cpp", "missing.cpp"])
        _, error, _, _ = self.build([a], {})
        self.assertEqual(len(error), 1)
        self.assertIn("Error compiling objects for extension: the package's Ninja ended with "
                      "exit 1", str(error[0]))


if __name__ == "__main__":
    unittest.main()
