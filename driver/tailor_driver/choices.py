# The build choices a package makes for itself in setup.py, taken back inside setuptools'
# build_ext.run, before torch's BuildExtension picks its compile path; each is said on a
# `tailor: package choice:` line with the package's file and line (say.choice):
#  - Ninja, always: a BuildExtension the package made with use_ninja=False (in its
#    __init__, with_options or a subclass) compiles through Ninja like any other, so its
#    units run at once (and in the package's one Ninja, modules_at_once).
#  - The requested targets win (TAILOR_TORCH_ARCH_LIST, the user's targets in torch's
#    spelling; unset with --keep-package-archs): nvcc target options the package wrote
#    into extra_compile_args are dropped, so torch adds the requested ones, and a
#    TORCH_CUDA_ARCH_LIST the package set itself is put back.
#  - A MAX_JOBS the package set itself (MAX_JOBS=1) gives way to tailor's.
#  - A C++ standard torch refuses (-std=c++14) is raised to the one it needs, when tailor's
#    compatibility layer says so (said as a compatibility change, not a choice).
import os
import re
import sys

from . import say
from .targets import ARCH_TOKEN, arch_specific, requested_ccs, strip_arch_flags, upgraded_torch_list


def absolute_includes(ext):
    # Without Ninja the compiler ran in the source folder, so a relative include folder
    # worked there (torch-points-kernels: include_dirs=["cuda/include"]); Ninja compiles in
    # the build folder: the same folders, made absolute.
    ext.include_dirs = [d if os.path.isabs(d) else os.path.abspath(d) for d in ext.include_dirs]
    args = ext.extra_compile_args
    for key, flags in (args.items() if isinstance(args, dict) else [(None, args)]):
        if not isinstance(flags, list):
            continue
        fixed = ["-I" + os.path.abspath(f[2:]) if relative_include(f) else f for f in flags]
        if key is None:
            ext.extra_compile_args = fixed
        else:
            args[key] = fixed


def relative_include(flag):
    # "-Icuda/include", a folder that exists: a relative include folder.
    return (isinstance(flag, str) and flag.startswith("-I") and len(flag) > 2
            and not os.path.isabs(flag[2:]) and os.path.isdir(flag[2:]))


def ninja_on(command, cpp_extension):
    # A BuildExtension with use_ninja=False, under modules at once: Ninja after all.
    if not cpp_extension.is_ninja_available():
        return
    command.use_ninja = True
    command.force = True  # as BuildExtension.finalize_options does for Ninja
    for ext in command.extensions:
        absolute_includes(ext)
    say.choice("%s: the package turned Ninja off (use_ninja=False); its units compile through "
               "Ninja, at once" % say.where_in_source("use_ninja"))


def max_jobs_back(asked_jobs):
    # The package's own count gives way: tailor's (--jobs) is put back, or with the
    # jobserver the package's Ninja ignores it (modules_at_once). The variable stays set:
    # a setup.py that pops it after the build (gsplat) must find it.
    own = os.environ.get("MAX_JOBS")
    if own == asked_jobs or own is None:
        return
    say.choice("%s: MAX_JOBS=%s set by the package; tailor's job count stands"
               % (say.where_in_source("MAX_JOBS"), own))
    if asked_jobs is not None:
        os.environ["MAX_JOBS"] = asked_jobs


def strip_extensions(extensions):
    # -> [(extension, nvcc target options removed)] of every extension whose nvcc arguments
    # could be read; the options are dropped from its extra_compile_args.
    stripped = []
    for ext in extensions:
        args = ext.extra_compile_args
        if isinstance(args, dict):
            nvcc = args.get("nvcc")
            if not isinstance(nvcc, (list, tuple)):
                continue
            kept, removed = strip_arch_flags(list(nvcc))
            if removed:
                args["nvcc"] = kept
        elif isinstance(args, (list, tuple)) and any(s.endswith(".cu") for s in ext.sources):
            kept, removed = strip_arch_flags(list(args))
            if removed:
                ext.extra_compile_args = kept
        else:
            continue
        stripped.append((ext, removed))
    return stripped


def requested_targets(extensions, asked_arch):
    # The package's own targets out, the requested ones (torch's spelling) in: one list for
    # the whole package, TORCH_CUDA_ARCH_LIST, each capability built as the arch-specific
    # variant (9.0a) where the package asks for that. (torch's list takes the "a" variants,
    # 9.0a, not the "f" families.)
    own = os.environ.get("TORCH_CUDA_ARCH_LIST")
    stripped = strip_extensions(extensions)
    named = [own] + [f for _, removed in stripped for f in removed]
    upgrades = {cc: v for cc, v in arch_specific(named, requested_ccs(asked_arch)).items()
                if v == "a"}
    targets = upgraded_torch_list(asked_arch, upgrades)
    say.variants(upgrades)
    if own != targets:
        say.choice("%s: TORCH_CUDA_ARCH_LIST=%s set by the package, replaced by the requested %s"
                   % (say.where_in_source("TORCH_CUDA_ARCH_LIST"), own, targets))
    os.environ["TORCH_CUDA_ARCH_LIST"] = targets
    for ext, removed in stripped:
        for flag in removed:
            token = ARCH_TOKEN.search(flag)
            # The flag as written, its value ("arch=compute_80,code=sm_80" of -gencode), the
            # target alone: the line that holds the most of it.
            value = flag.split("=", 1)[1] if flag.startswith("-") and "=" in flag else \
                flag.split()[-1]
            needles = [flag, value] + ([token.group(0)] if token else [flag.split()[0]])
            say.choice("%s: nvcc %s (extension %s) replaced by the requested targets (%s)"
                       % (say.where_in_source(*needles), flag, ext.name, targets))


STD_FLAG = re.compile(r"^(--?std=)(.+)$")


def old_std_back(extensions, standard, older, removal):
    # A C++ standard the build's torch refuses, in a package's own compile flags (flownet2's
    # -std=c++11, mmdet3d's -std=c++14): torch 2's headers stop at an #error below C++17.
    # Tailor's compatibility layer names the standard and the -std= values it may raise
    # (TAILOR_CXX_STANDARD, TAILOR_CXX_OLDER: data/compat/removals.toml's [[cxx_standard]],
    # less those a file of the package would read otherwise); each is raised in its own
    # family (c++14 -> c++17, gnu++14 -> gnu++17) where it stands, and said as a change.
    for ext in extensions:
        args = ext.extra_compile_args
        for key, flags in (args.items() if isinstance(args, dict) else [(None, args)]):
            if not isinstance(flags, list):
                continue
            for i, flag in enumerate(flags):
                m = STD_FLAG.match(flag) if isinstance(flag, str) else None
                if not m or m.group(2) not in older:
                    continue
                family = m.group(2).rsplit("++", 1)[0]
                flags[i] = "%s%s++%s" % (m.group(1), family, standard)
                say.compat("%s: %s -> %s (extension %s%s; %s)"
                           % (say.where_in_source(flag), flag, flags[i], ext.name,
                              ", " + key if key else "", removal))


def take_back_choices():
    # Called before the backend: wraps build_ext.run. The requested targets and MAX_JOBS as
    # tailor started the build.
    asked_arch = os.environ.get("TAILOR_TORCH_ARCH_LIST")
    asked_jobs = os.environ.get("MAX_JOBS")
    cxx_standard = os.environ.get("TAILOR_CXX_STANDARD")
    cxx_older = os.environ.get("TAILOR_CXX_OLDER", "").split()
    cxx_removal = os.environ.get("TAILOR_CXX_REMOVAL", "")
    try:
        from setuptools.command.build_ext import build_ext
    except ImportError:
        return
    original_run = build_ext.run

    def run(self):
        cpp_extension = sys.modules.get("torch.utils.cpp_extension")
        torch_build = cpp_extension is not None and isinstance(
            self, getattr(cpp_extension, "BuildExtension", ()))
        at_once = os.environ.get("TAILOR_MODULES_AT_ONCE") == "1"
        if torch_build and at_once and not getattr(self, "use_ninja", True):
            ninja_on(self, cpp_extension)
        max_jobs_back(asked_jobs)
        if torch_build and cxx_standard:
            old_std_back(self.extensions, cxx_standard, cxx_older, cxx_removal)
        if asked_arch and torch_build:
            requested_targets(self.extensions, asked_arch)
        return original_run(self)

    build_ext.run = run
