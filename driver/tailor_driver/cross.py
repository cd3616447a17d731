# TAILOR_CROSS_TORCH=DIR (tailor build --platform): the build runs in this host's
# interpreter and imports the host's torch, but compiles for another platform. Once
# torch.utils.cpp_extension is imported, its torch folder is the target torch's (DIR: the
# headers it adds with -I, the libraries it links with -L) and the CUDA runtime it links is
# the target's (TAILOR_CROSS_CUDA_LIB, linker names for the index's CUDA runtime wheel)
# instead of the host toolkit's lib64. Everything else (the compilers, the sysconfig data,
# the wheel's platform tag) comes from the environment tailor sets.
import importlib.abc
import importlib.util
import os
import sys

from . import say

MODULE = "torch.utils.cpp_extension"


def point_at_target(module, torch_dir, cuda_lib):
    # The module's folders: read at call time by include_paths() and library_paths().
    host_lib64 = module._join_cuda_home("lib64")
    host_lib = module._join_cuda_home("lib")
    module._TORCH_PATH = torch_dir
    module.TORCH_LIB_PATH = os.path.join(torch_dir, "lib")
    host_library_paths = module.library_paths

    def library_paths(*args, **kwargs):
        paths = host_library_paths(*args, **kwargs)
        if not cuda_lib:
            return paths
        return [cuda_lib if p in (host_lib64, host_lib) else p for p in paths]

    module.library_paths = library_paths
    ccbin_is_no_arch_flag(module)


def ccbin_is_no_arch_flag(module):
    # torch adds its -gencode flags only when no flag of the package's nvcc arguments holds
    # the text "arch" (_get_cuda_arch_flags): a package that passes its own -ccbin=$CC
    # (chamferdist 1.0.3) names the cross compiler, aarch64-linux-gnu-gcc, and torch then
    # adds no target at all, so nvcc builds its default. A -ccbin flag is no target flag.
    arch_flags = getattr(module, "_get_cuda_arch_flags", None)
    if arch_flags is None:
        return

    def _get_cuda_arch_flags(cflags=None):
        if cflags is not None:
            cflags = [f for f in cflags
                      if not (isinstance(f, str) and f.startswith(("-ccbin", "--compiler-bindir")))]
        return arch_flags(cflags)

    module._get_cuda_arch_flags = _get_cuda_arch_flags


class _AfterImport(importlib.abc.MetaPathFinder):
    # Finds torch.utils.cpp_extension as the path would, and runs `then` on the module once
    # its code has run.
    def __init__(self, then):
        self.then = then

    def find_spec(self, name, path, target=None):
        if name != MODULE:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            self.then(module)

        spec.loader.exec_module = exec_module
        return spec


def cross_target():
    torch_dir = os.environ.get("TAILOR_CROSS_TORCH", "")
    if not torch_dir:
        return False
    if not os.path.isdir(os.path.join(torch_dir, "include")):
        sys.exit("tailor: TAILOR_CROSS_TORCH=" + torch_dir + " holds no torch headers (include/)")
    cuda_lib = os.environ.get("TAILOR_CROSS_CUDA_LIB", "")

    def then(module):
        point_at_target(module, torch_dir, cuda_lib)

    if MODULE in sys.modules:
        then(sys.modules[MODULE])
    else:
        sys.meta_path.insert(0, _AfterImport(then))
    say.line("cross build for %s: torch's headers and libraries from %s, the CUDA runtime "
             "from %s" % (os.environ.get("TAILOR_CROSS_PLATFORM", "the target"), torch_dir,
                          cuda_lib or "the toolkit"))
    return True
