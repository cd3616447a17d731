# nvcc target options in a package's extra_compile_args, and the target lists.
import os
import unittest

from support import DriverTest, Extension
from tailor_driver import choices, targets


class StripArchFlags(unittest.TestCase):
    def test_each_spelling_is_removed_with_its_value(self):
        kept, removed = targets.strip_arch_flags(
            ["-O3", "-arch=sm_80", "-arch", "sm_86", "-gencode=arch=compute_90,code=sm_90",
             "-gencode", "arch=compute_60,code=sm_60", "-gencode arch=compute_70,code=sm_70",
             "-code=sm_50", "--gpu-architecture=compute_75", "--gpu-architecture", "sm_75",
             "--generate-code=arch=compute_52,code=sm_52", "--gpu-code", "sm_61",
             "--use_fast_math", "-Xptxas", "-v"])
        self.assertEqual(kept, ["-O3", "--use_fast_math", "-Xptxas", "-v"])
        self.assertEqual(removed, [
            "-arch=sm_80", "-arch sm_86", "-gencode=arch=compute_90,code=sm_90",
            "-gencode arch=compute_60,code=sm_60", "-gencode arch=compute_70,code=sm_70",
            "-code=sm_50", "--gpu-architecture=compute_75", "--gpu-architecture sm_75",
            "--generate-code=arch=compute_52,code=sm_52", "--gpu-code sm_61"])

    def test_the_e2e_example_of_issue_37(self):
        self.assertEqual(
            targets.strip_arch_flags(
                ["-O3", "-arch=compute_50", "-gencode", "arch=compute_60,code=sm_60",
                 "-gencode arch=compute_70,code=sm_70", "--use_fast_math", "-code=sm_50",
                 "-Xptxas", "-v"]),
            (["-O3", "--use_fast_math", "-Xptxas", "-v"],
             ["-arch=compute_50", "-gencode arch=compute_60,code=sm_60",
              "-gencode arch=compute_70,code=sm_70", "-code=sm_50"]))

    def test_an_option_at_the_end_and_look_alikes(self):
        kept, removed = targets.strip_arch_flags(["-archive", "--arch-x", 3, "-arch"])
        self.assertEqual(kept, ["-archive", "--arch-x", 3])
        self.assertEqual(removed, ["-arch"])


class TargetLists(unittest.TestCase):
    def test_requested_capabilities_and_variants(self):
        self.assertEqual(targets.requested_ccs("8.0;9.0+PTX"), {"80", "90"})
        named = ["-gencode arch=compute_90a,code=sm_90a", "sm_100f", "sm_86a"]
        self.assertEqual(targets.arch_specific(named, {"90", "100"}), {"90": "a", "100": "f"})
        self.assertEqual(targets.arch_specific(["90a-real;80"], {"90", "80"}), {"90": "a"})

    def test_upgraded_lists(self):
        self.assertEqual(targets.upgraded_torch_list("8.0;9.0+PTX", {"90": "a"}), "8.0;9.0a+PTX")
        self.assertEqual(targets.upgraded_cmake_list("80-real;90", {"90": "a"}), "80-real;90a")
        self.assertEqual(targets.cmake_ccs("80-real;90;100a-virtual"), {"80", "90"})


class RequestedTargets(DriverTest):
    # In build_ext.run: the package's own options out of each extension, the requested
    # list in TORCH_CUDA_ARCH_LIST, each replacement said with the package's line.
    def test_dict_and_list_arguments(self):
        self.write("setup.py", "import os\nos.environ['TORCH_CUDA_ARCH_LIST'] = '5.0'\n"
                               "args = ['-arch=compute_50']\n"
                               "nv = ['-gencode', 'arch=compute_90a,code=sm_90a']\n")
        os.environ["TORCH_CUDA_ARCH_LIST"] = "5.0"
        nvcc = ["-O3", "-gencode", "arch=compute_90a,code=sm_90a"]
        a = Extension("pkg._a", ["a.cu"], {"cxx": ["-O2"], "nvcc": nvcc})
        b = Extension("pkg._b", ["b.cu", "b.cpp"], ["-arch=compute_50", "-O3"])
        c = Extension("pkg._c", ["c.cpp"], ["-arch=compute_50"])  # host only: left alone
        with self.said() as lines:
            choices.requested_targets([a, b, c], "8.0;9.0")
        self.assertEqual(a.extra_compile_args, {"cxx": ["-O2"], "nvcc": ["-O3"]})
        self.assertEqual(b.extra_compile_args, ["-O3"])
        self.assertEqual(c.extra_compile_args, ["-arch=compute_50"])
        self.assertEqual(os.environ["TORCH_CUDA_ARCH_LIST"], "8.0;9.0a")
        self.assertEqual(lines, [
            "tailor: package target: sm_90a for sm_90",
            "tailor: package choice: setup.py:2: TORCH_CUDA_ARCH_LIST=5.0 set by the package, "
            "replaced by the requested 8.0;9.0a",
            "tailor: package choice: setup.py:4: nvcc -gencode arch=compute_90a,code=sm_90a "
            "(extension pkg._a) replaced by the requested targets (8.0;9.0a)",
            "tailor: package choice: setup.py:3: nvcc -arch=compute_50 (extension pkg._b) "
            "replaced by the requested targets (8.0;9.0a)"])

    def test_nothing_to_take_back_says_nothing(self):
        os.environ["TORCH_CUDA_ARCH_LIST"] = "8.0"
        a = Extension("a", ["a.cu"], {"nvcc": ["-O3"]})
        with self.said() as lines:
            choices.requested_targets([a], "8.0")
        self.assertEqual(lines, [])
        self.assertEqual(a.extra_compile_args, {"nvcc": ["-O3"]})


if __name__ == "__main__":
    unittest.main()
