# The package's own parallelism gives way to tailor's (jobs, cmake.patch_package_command):
# cmake --build -j N / --parallel N / the native tool's -jN, make -jN and a MAX_JOBS in the
# env= of a command it runs, whatever N is; a CMake configure without a generator gets
# Ninja in the environment it really runs with.
import os
import stat
import subprocess
import unittest

from support import DriverTest
from tailor_driver import cmake, jobs

FIFO = " -j4 --jobserver-auth=fifo:/tmp/x"


class CommandJobs(DriverTest):
    def setUp(self):
        super().setUp()
        os.environ.pop("MAX_JOBS", None)
        os.environ["MAKEFLAGS"] = FIFO
        jobs.remember()

    def test_every_count_goes_under_the_jobserver(self):
        for own in (["-j", "3"], ["-j3"], ["--parallel", "12"], ["--parallel=1"], ["-j"]):
            args, changed = jobs.take_back_command_jobs(["cmake", "--build", "b"] + own + ["--target", "k"])
            self.assertEqual(args, ["cmake", "--build", "b", "--target", "k"], own)
            self.assertEqual(changed, [(own[0], "cmake --build %s dropped: tailor's jobserver decides"
                                        % " ".join(own))])
        args, changed = jobs.take_back_command_jobs(["cmake", "--build", ".", "--", "-j8"])
        self.assertEqual(args, ["cmake", "--build", ".", "--"])
        args, changed = jobs.take_back_command_jobs(["/usr/bin/make", "-j16", "all"])
        self.assertEqual((args, len(changed)), (["/usr/bin/make", "all"], 1))
        # A configure, or another tool: as it was.
        for other in (["cmake", "-S", ".", "-B", "b"], ["ninja", "-j3"]):
            self.assertEqual(jobs.take_back_command_jobs(list(other)), (other, []))

    def test_without_a_jobserver_tailors_count_replaces_it(self):
        os.environ["MAKEFLAGS"] = ""
        os.environ["MAX_JOBS"] = "6"
        jobs.remember()
        args, changed = jobs.take_back_command_jobs(["cmake", "--build", "b", "-j", "3"])
        self.assertEqual(args, ["cmake", "--build", "b", "--parallel", "6"])
        self.assertEqual(changed[0][1], "cmake --build -j 3 dropped: tailor's job count (6) stands")
        args, changed = jobs.take_back_command_jobs(["make", "-j6"])
        self.assertEqual((args, changed), (["make", "-j6"], []))  # tailor's already

    def test_max_jobs_in_a_commands_env(self):
        env = {"PATH": "/bin", "MAX_JOBS": "2"}
        new, changed = jobs.take_back_env_jobs(env)
        self.assertEqual(new, {"PATH": "/bin"})
        self.assertEqual(env["MAX_JOBS"], "2")  # the package's own dict untouched
        self.assertEqual(changed[0][0], "MAX_JOBS")
        self.assertEqual(jobs.take_back_env_jobs(None), (None, []))

    def test_a_configure_without_generator_gets_ninja_in_its_own_env(self):
        os.environ.pop("CMAKE_GENERATOR", None)
        env, ninja = jobs.ninja_for_configure(["cmake", "../csrc"], {"PATH": os.environ["PATH"]})
        self.assertTrue(ninja)
        self.assertEqual(env["CMAKE_GENERATOR"], "Ninja")
        for chosen in (["cmake", "-G", "Unix Makefiles", "."], ["cmake", "-GNinja", "."],
                       ["cmake", "--build", "."]):
            self.assertEqual(jobs.ninja_for_configure(chosen, None), (None, False), chosen)
        env, ninja = jobs.ninja_for_configure(["cmake", "."], {"CMAKE_GENERATOR": "Unix Makefiles"})
        self.assertFalse(ninja)

    def test_the_package_own_calls_run_patched(self):
        # A cmake on PATH that writes its arguments and its generator: the setup.py's calls
        # reach it patched, the list form and a simple shell string alike.
        self.write("setup.py", "import os, subprocess\n"
                               "subprocess.check_call(['cmake', '../csrc'], env=dict(os.environ))\n"
                               "subprocess.check_call(['cmake', '--build', '.', '-j', str(os.cpu_count() // 4)])\n")
        fake = self.write("bin/cmake", "#!/bin/sh\necho \"$CMAKE_GENERATOR $*\" >>\"$(dirname \"$0\")/args\"\n")
        os.chmod(fake, os.stat(fake).st_mode | stat.S_IXUSR)
        os.environ["PATH"] = os.path.dirname(fake) + ":" + os.environ["PATH"]
        os.environ.pop("CMAKE_GENERATOR", None)
        original = subprocess.Popen.__init__
        try:
            cmake.take_back_cmake_calls({})
            with self.said() as lines:
                subprocess.check_call(["cmake", "../csrc"], env=dict(os.environ))
                subprocess.check_call(["cmake", "--build", ".", "-j", "3"])
                subprocess.check_call("cmake --build . --parallel 5", shell=True)
        finally:
            subprocess.Popen.__init__ = original
        self.assertEqual(self.read("bin/args").split("\n"),
                         ["Ninja ../csrc", " --build .", " --build .", ""])
        self.assertEqual(lines, [
            "tailor: package choice: setup.py:2: cmake configure without a generator of its "
            "own: Ninja (CMAKE_GENERATOR=Ninja), so its units run under the build's jobserver",
            "tailor: package choice: setup.py:3: cmake --build -j 3 dropped: tailor's jobserver decides",
            "tailor: package choice: setup.py:3: cmake --build --parallel 5 "
            "dropped: tailor's jobserver decides"])


if __name__ == "__main__":
    unittest.main()


class OldStandard(DriverTest):
    OLDER = ["c++11", "c++0x", "c++14", "c++1y", "gnu++11", "gnu++0x", "gnu++14", "gnu++1y"]

    def test_a_standard_before_cxx17_is_raised_in_its_family(self):
        from support import Extension
        from tailor_driver import choices
        self.write("setup.py", "cxx_args = ['-std=gnu++11']\nnvcc_args = ['-std=c++14', '-O2']\n")
        ext = Extension("channelnorm_cuda", ["a.cc", "b.cu"],
                        {"cxx": ["-std=gnu++11"], "nvcc": ["-std=c++14", "-O2"]})
        keep = Extension("k", ["c.cc"], ["-std=c++17", "-O3"])
        with self.said() as lines:
            choices.old_std_back([ext, keep], "17", self.OLDER,
                                 "torch-cxx17, removed in torch 2.1")
        # One -std each, where the package put it: torch adds its own only where none is.
        self.assertEqual(ext.extra_compile_args,
                         {"cxx": ["-std=gnu++17"], "nvcc": ["-std=c++17", "-O2"]})
        self.assertEqual(keep.extra_compile_args, ["-std=c++17", "-O3"])
        self.assertEqual(lines, [
            "tailor: compatibility: setup.py:1: -std=gnu++11 -> -std=gnu++17 (extension "
            "channelnorm_cuda, cxx; torch-cxx17, removed in torch 2.1)",
            "tailor: compatibility: setup.py:2: -std=c++14 -> -std=c++17 (extension "
            "channelnorm_cuda, nvcc; torch-cxx17, removed in torch 2.1)"])

    def test_only_the_standards_the_layer_names(self):
        # The layer left C++11 out (a digit separator in the package's files) and, with
        # --keep-package-source, names none: those flags stay as the package wrote them.
        from support import Extension
        from tailor_driver import choices
        self.write("setup.py", "args = ['-std=c++11', '-std=c++14']\n")
        ext = Extension("m", ["a.cc"], ["-std=c++11"])
        other = Extension("n", ["a.cc"], ["-std=c++14"])
        with self.said() as lines:
            choices.old_std_back([ext, other], "17", ["c++14"], "torch-cxx17")
        self.assertEqual(ext.extra_compile_args, ["-std=c++11"])
        self.assertEqual(other.extra_compile_args, ["-std=c++17"])
        self.assertEqual(len(lines), 1)

    def test_only_when_the_layer_says_so(self):
        # take_back_choices' build_ext.run raises a -std only with TAILOR_CXX_STANDARD set
        # (tailor sets it unless --keep-package-source), whatever the torch.
        import sys
        import types
        from setuptools import Distribution
        from setuptools.command.build_ext import build_ext
        from support import Extension
        from tailor_driver import choices
        self.write("setup.py", "args = ['-std=c++14']\n")

        class BuildExtension(build_ext):
            pass

        fake = types.ModuleType("torch.utils.cpp_extension")
        fake.BuildExtension = BuildExtension
        saved = sys.modules.get("torch.utils.cpp_extension"), build_ext.run
        sys.modules["torch.utils.cpp_extension"] = fake
        try:
            for standard, want in ((None, "-std=c++14"), ("17", "-std=c++17")):
                build_ext.run = lambda self: None  # what setuptools would build: nothing
                for k in ("TAILOR_CXX_STANDARD", "TAILOR_CXX_OLDER", "TAILOR_TORCH_ARCH_LIST"):
                    os.environ.pop(k, None)
                if standard:
                    os.environ["TAILOR_CXX_STANDARD"] = standard
                    os.environ["TAILOR_CXX_OLDER"] = "c++11 c++14"
                choices.take_back_choices()
                cmd = BuildExtension(Distribution())
                cmd.extensions = [Extension("m", ["a.cc"], ["-std=c++14"])]
                with self.said():
                    cmd.run()
                self.assertEqual(cmd.extensions[0].extra_compile_args, [want])
        finally:
            if saved[0] is None:
                sys.modules.pop("torch.utils.cpp_extension", None)
            else:
                sys.modules["torch.utils.cpp_extension"] = saved[0]
            build_ext.run = saved[1]
