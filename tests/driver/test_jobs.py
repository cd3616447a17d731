# MAX_JOBS: a count the package set itself gives way to tailor's, and the job count of the
# package's one Ninja (a fixed -j, or the jobserver's tokens).
import os
import sys
import unittest

from support import DriverTest, Extension
from tailor_driver import choices, modules_at_once, schedule


class MaxJobsBack(DriverTest):
    def setUp(self):
        super().setUp()
        self.write("setup.py", "import os\n\nos.environ['MAX_JOBS'] = '1'\n")

    def test_the_package_count_gives_way_to_tailor(self):
        os.environ["MAX_JOBS"] = "1"
        with self.said() as lines:
            choices.max_jobs_back("6")
        self.assertEqual(os.environ["MAX_JOBS"], "6")
        self.assertEqual(lines, ["tailor: package choice: setup.py:3: MAX_JOBS=1 set by the "
                                 "package; tailor's job count stands"])

    def test_set_where_tailor_set_none_it_stays_for_the_package(self):
        os.environ["MAX_JOBS"] = "1"
        with self.said() as lines:
            choices.max_jobs_back(None)
        self.assertEqual(os.environ["MAX_JOBS"], "1")  # a setup.py that pops it must find it
        self.assertEqual(len(lines), 1)

    def test_unchanged_or_unset_says_nothing(self):
        for asked, now in (("6", "6"), ("6", None), (None, None)):
            os.environ.pop("MAX_JOBS", None)
            if now is not None:
                os.environ["MAX_JOBS"] = now
            with self.said() as lines:
                choices.max_jobs_back(asked)
            self.assertEqual(lines, [], (asked, now))
            self.assertEqual(os.environ.get("MAX_JOBS"), now)


class NinjaJobs(unittest.TestCase):
    fifo = " -j --jobserver-auth=fifo:/tmp/js.fifo"

    def test_the_jobserver_unless_a_fixed_count(self):
        jobs = modules_at_once.ninja_jobs
        self.assertEqual(jobs(None, self.fifo, None, 8),
                         ("/tmp/js.fifo", None, "one Ninja under the jobserver"))
        self.assertEqual(jobs("4", self.fifo, None, 8), (None, 4, "one Ninja, 4 at a time"))
        self.assertEqual(jobs("x", self.fifo, None, 8)[0], "/tmp/js.fifo")

    def test_without_a_jobserver(self):
        jobs = modules_at_once.ninja_jobs
        self.assertEqual(jobs("3", "", "7", 8), (None, 3, "one Ninja, 3 at a time"))
        self.assertEqual(jobs(None, "", "7", 8), (None, 7, "one Ninja, 7 at a time"))
        self.assertEqual(jobs(None, "-j2", None, 8), (None, 8, "one Ninja, 8 at a time"))
        self.assertEqual(jobs("0", "", None, 0), (None, 1, "one Ninja, 1 at a time"))


class Command:
    # What build_extensions reads of setuptools' build_ext command.
    def __init__(self, extensions, build_temp):
        self.extensions, self.build_temp, self.use_ninja = extensions, build_temp, True
        self.checked = self.built = 0

    def check_extensions_list(self, extensions):
        self.checked += 1


class BuildExtensionsWithoutTorch(DriverTest):
    # Without torch's cpp_extension the package's own build_extensions runs, after the
    # driver said what it would do: its lines and the package's MAX_JOBS under a jobserver.
    def test_lines_split_flags_and_the_package_max_jobs(self):
        self.assertNotIn("torch.utils.cpp_extension", sys.modules)
        fifo = os.path.join(self.dir, "js.fifo")
        os.mkfifo(fifo)
        os.environ.update({"MAKEFLAGS": "-j --jobserver-auth=fifo:" + fifo, "MAX_JOBS": "3",
                           "TAILOR_SPLIT_COMPILE": "16:8"})
        a = Extension("pkg._a", ["a.cu", "b.cu", "a.cpp"], ["-O3"])
        b = Extension("pkg._b", ["b.cpp"], ["-O2"])
        command = Command([a, b], self.dir)
        ran = []
        at_once = modules_at_once.ModulesAtOnce(lambda c: ran.append(c), None,
                                                schedule.UnitTimes({}))
        with self.said() as lines:
            at_once.build_extensions(command)
        self.assertEqual(ran, [command])
        self.assertEqual(command.checked, 1)
        self.assertEqual(lines, [
            "tailor: the package set MAX_JOBS=3 itself; the build's jobserver shares out the "
            "jobs instead",
            "tailor: modules at once: 2 modules, 4 units (2 CUDA), one Ninja under the jobserver, "
            "nvcc -split-compile=8"])
        self.assertEqual(a.extra_compile_args,
                         {"cxx": ["-O3"], "nvcc": ["-O3", "-split-compile=8"]})
        self.assertEqual(b.extra_compile_args, ["-O2"])

    def test_a_fixed_count_under_a_jobserver(self):
        # --jobs 4 under a jobserver: the Ninja's -j is 4; the package's own MAX_JOBS is
        # still said to give way.
        fifo = os.path.join(self.dir, "js.fifo")
        os.mkfifo(fifo)
        os.environ.update({"MAKEFLAGS": "-j --jobserver-auth=fifo:" + fifo, "MAX_JOBS": "1"})
        os.environ.pop("TAILOR_SPLIT_COMPILE", None)
        command = Command([Extension("m", ["m.cpp"])], self.dir)
        at_once = modules_at_once.ModulesAtOnce(lambda c: None, "4", schedule.UnitTimes({}))
        with self.said() as lines:
            at_once.build_extensions(command)
        self.assertEqual(lines, [
            "tailor: the package set MAX_JOBS=1 itself; the build's jobserver shares out the "
            "jobs instead",
            "tailor: modules at once: 1 modules, 1 units (0 CUDA), one Ninja, 4 at a time"])

    def test_a_fixed_count_is_the_ninja_j(self):
        os.environ.pop("MAKEFLAGS", None)
        os.environ.pop("TAILOR_SPLIT_COMPILE", None)
        os.environ["MAX_JOBS"] = "5"
        command = Command([Extension("m", ["m.cu"], {"nvcc": []})], self.dir)
        at_once = modules_at_once.ModulesAtOnce(lambda c: None, "5", schedule.UnitTimes({}))
        with self.said() as lines:
            at_once.build_extensions(command)
        self.assertEqual(lines, ["tailor: modules at once: 1 modules, 1 units (1 CUDA), "
                                 "one Ninja, 5 at a time"])


if __name__ == "__main__":
    unittest.main()
