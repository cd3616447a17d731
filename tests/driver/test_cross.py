# A cross build: torch.utils.cpp_extension, imported after the driver's hook, names the
# target torch's folders and the target's CUDA runtime; without the variable nothing moves.
import os
import sys
import types
import unittest

from support import DriverTest
from tailor_driver import cross


def fake_cpp_extension(cuda_home):
    # The parts of torch.utils.cpp_extension the hook reads and replaces.
    m = types.ModuleType("torch.utils.cpp_extension")
    m._TORCH_PATH = "/host/torch"
    m.TORCH_LIB_PATH = "/host/torch/lib"

    def _join_cuda_home(*parts):
        return os.path.join(cuda_home, *parts)

    def library_paths(device_type="cpu"):
        paths = [m.TORCH_LIB_PATH]
        if device_type == "cuda":
            paths.append(_join_cuda_home("lib64"))
        return paths

    def include_paths(device_type="cpu"):
        return [os.path.join(m._TORCH_PATH, "include")]

    m._join_cuda_home = _join_cuda_home
    m.library_paths = library_paths
    m.include_paths = include_paths
    return m


class CrossTarget(DriverTest):
    def test_points_an_imported_module_at_the_target(self):
        target = os.path.join(self.dir, "site", "torch")
        os.makedirs(os.path.join(target, "include"))
        os.environ["TAILOR_CROSS_TORCH"] = target
        os.environ["TAILOR_CROSS_CUDA_LIB"] = "/cache/cross/cuda-lib"
        os.environ["TAILOR_CROSS_PLATFORM"] = "aarch64"
        module = fake_cpp_extension("/usr/local/cuda")
        sys.modules[cross.MODULE] = module
        try:
            with self.said() as lines:
                self.assertTrue(cross.cross_target())
        finally:
            del sys.modules[cross.MODULE]
        self.assertEqual(module.include_paths(), [os.path.join(target, "include")])
        self.assertEqual(module.library_paths("cuda"),
                         [os.path.join(target, "lib"), "/cache/cross/cuda-lib"])
        self.assertEqual(module.library_paths(), [os.path.join(target, "lib")])
        self.assertEqual(len(lines), 1)
        self.assertIn("cross build for aarch64", lines[0])

    def test_hooks_a_later_import(self):
        target = os.path.join(self.dir, "torch")
        os.makedirs(os.path.join(target, "include"))
        pkg = os.path.join(self.dir, "pkgs", "torchlike", "utils")
        os.makedirs(pkg)
        for folder in (os.path.dirname(pkg), pkg):
            self.write(os.path.join(folder, "__init__.py"), "")
        self.write(os.path.join(pkg, "cpp_extension.py"),
                   "import os\n_TORCH_PATH = '/host/torch'\nTORCH_LIB_PATH = '/host/torch/lib'\n"
                   "def _join_cuda_home(*p): return os.path.join('/usr/local/cuda', *p)\n"
                   "def library_paths(device_type='cpu'):\n"
                   "    return [TORCH_LIB_PATH, _join_cuda_home('lib64')]\n")
        os.environ["TAILOR_CROSS_TORCH"] = target
        os.environ.pop("TAILOR_CROSS_CUDA_LIB", None)
        old_module = cross.MODULE
        cross.MODULE = "torchlike.utils.cpp_extension"
        sys.path.insert(0, os.path.join(self.dir, "pkgs"))
        try:
            with self.said():
                cross.cross_target()
            import torchlike.utils.cpp_extension as m
            self.assertEqual(m._TORCH_PATH, target)
            # No target CUDA runtime named: the toolkit's folder stays.
            self.assertEqual(m.library_paths(),
                             [os.path.join(target, "lib"), "/usr/local/cuda/lib64"])
        finally:
            cross.MODULE = old_module
            sys.path.remove(os.path.join(self.dir, "pkgs"))
            for name in [n for n in sys.modules if n.startswith("torchlike")]:
                del sys.modules[name]

    def test_a_ccbin_flag_naming_the_cross_compiler_is_no_target_flag(self):
        module = fake_cpp_extension("/usr/local/cuda")

        def _get_cuda_arch_flags(cflags=None):
            # torch's test: any flag holding "arch" means the package chose its targets.
            if cflags is not None and any("arch" in f for f in cflags):
                return []
            return ["-gencode=arch=compute_90,code=sm_90"]

        module._get_cuda_arch_flags = _get_cuda_arch_flags
        cross.point_at_target(module, "/t/torch", "")
        self.assertEqual(module._get_cuda_arch_flags(["-ccbin=/w/aarch64-linux-gnu-gcc", "-O3"]),
                         ["-gencode=arch=compute_90,code=sm_90"])
        # The package's own target flags still count as its choice.
        self.assertEqual(module._get_cuda_arch_flags(["-arch=sm_80"]), [])

    def test_nothing_without_the_variable(self):
        os.environ.pop("TAILOR_CROSS_TORCH", None)
        before = list(sys.meta_path)
        self.assertFalse(cross.cross_target())
        self.assertEqual(sys.meta_path, before)

    def test_a_folder_without_headers_is_one_line(self):
        os.environ["TAILOR_CROSS_TORCH"] = self.dir
        with self.assertRaises(SystemExit) as e:
            cross.cross_target()
        self.assertIn("holds no torch headers", str(e.exception))


if __name__ == "__main__":
    unittest.main()
