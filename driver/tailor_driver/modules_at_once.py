# torch.utils.cpp_extension builds a package's extension modules one after another, each
# through its own Ninja in one shared build folder. Here every module gets its own folder
# (build_temp/<module>), the modules run side by side in threads up to their compile, and
# one Ninja, a client of tailor's jobserver (MAKEFLAGS) or run with the fixed job count
# (MAX_JOBS), compiles every module's units at once, the longest first across the whole
# package (package_ninja); each module links when its own objects are built. Only torch's
# Ninja path (BuildExtension with use_ninja): its non-Ninja path swaps the compiler
# executable around each compile, which threads would race on. TAILOR_MODULES_AT_ONCE=1
# turns it on.
import concurrent.futures
import os
import re
import sys
import threading

from . import say
from .package_ninja import PackageNinja
from .schedule import UnitTimes, is_cuda, module_order, split_compile
from .tokens import LinkTokens

local = threading.local()  # a module's thread: sub, package, ext, link_token, ext_waited
JOBSERVER = re.compile(r"--jobserver-auth=fifo:(\S+)")  # GNU make 4.4's, in MAKEFLAGS


def add_nvcc_flag(ext, flag):
    args = ext.extra_compile_args
    if isinstance(args, dict):
        args["nvcc"] = list(args.get("nvcc") or []) + [flag]
    else:
        # torch gives a list to both compilers: the same as {cxx: list, nvcc: list}.
        ext.extra_compile_args = {"cxx": list(args or []), "nvcc": list(args or []) + [flag]}


def ninja_jobs(asked_jobs, makeflags, tailor_jobs, cores):
    # -> (jobserver fifo or None, Ninja's -j or None, how): a fixed count (MAX_JOBS as
    # tailor started the build, --jobs) is the Ninja's -j; else a jobserver client's Ninja
    # takes no -j; with neither, TAILOR_JOBS or this process's cores.
    fifo = JOBSERVER.search(makeflags or "")
    fixed = asked_jobs or ""
    if fifo and not fixed.isdigit():
        return fifo.group(1), None, "one Ninja under the jobserver"
    jobs = max(1, int(fixed) if fixed.isdigit() else int(tailor_jobs or cores or 1))
    return None, jobs, "one Ninja, %d at a time" % jobs


class ModulesAtOnce:
    def __init__(self, original, asked_jobs, times):
        self.original = original  # setuptools' build_ext.build_extensions
        self.asked_jobs = asked_jobs
        self.times = times
        self.torch_run = None  # torch's own _run_ninja_build

    def build_extensions(self, command):
        exts = list(command.extensions)
        if not getattr(command, "use_ninja", False) or not exts:
            return self.original(command)
        units = sum(len(e.sources) for e in exts)
        cuda_units = sum(1 for e in exts for s in e.sources if is_cuda(s))
        k, split_max = split_compile(os.environ.get("TAILOR_SPLIT_COMPILE", ""), cuda_units)
        makeflags = os.environ.get("MAKEFLAGS", "")
        fifo, jobs, how = ninja_jobs(self.asked_jobs, makeflags, os.environ.get("TAILOR_JOBS"),
                                     len(os.sched_getaffinity(0)))
        split_flags = ["-split-compile=%d" % k] if k >= 2 else []
        for e in exts:
            if any(is_cuda(s) for s in e.sources):
                for flag in split_flags:
                    add_nvcc_flag(e, flag)
        own = os.environ.get("MAX_JOBS")
        if JOBSERVER.search(makeflags) and own is not None and own != self.asked_jobs:
            # The package's own count, not the user's: the jobserver decides instead (or the
            # fixed count tailor was asked for). The variable stays as the package left it
            # (it may pop it after the build).
            say.line("the package set MAX_JOBS=%s itself; the build's jobserver shares out the "
                     "jobs instead" % own)
        if fifo:
            jobs_arg, tokens = [], LinkTokens(fifo, 0)
        else:
            jobs_arg, tokens = ["-j", str(jobs)], LinkTokens(None, jobs)
        say.modules(len(exts), units, cuda_units, k if split_flags else 0, how)
        command.check_extensions_list(command.extensions)
        cpp_extension = sys.modules.get("torch.utils.cpp_extension")
        if cpp_extension is None or not hasattr(cpp_extension, "_run_ninja_build"):
            return self.original(command)
        if not getattr(cpp_extension._run_ninja_build, "tailor_package_ninja", False):
            self.torch_run = cpp_extension._run_ninja_build
            cpp_extension._run_ninja_build = self.run_ninja_build_function()
        order = module_order(exts, self.times)
        # TAILOR_UNIT_TIMES_FROM: "earlier builds" (this machine's), or tailor's measured
        # times of a known package (data/build/unit_times.toml).
        source = os.environ.get("TAILOR_UNIT_TIMES_FROM") or "earlier builds"
        if self.times.known:
            say.unit_order(len(self.times.known), source)
        else:
            say.unit_order(0, "no earlier build")
        stop = threading.Event()  # a module failed: nothing more starts, the Ninja stops
        package = PackageNinja(os.path.abspath(command.build_temp), len(exts),
                               [id(e) for e in order], tokens, jobs_arg, stop, split_max,
                               self.times)
        self.build_all(command, order, package, tokens, stop)

    def build_all(self, command, order, package, tokens, stop):
        # Every module in a thread of its own; the first failure of a module that is not
        # optional stops the rest; an optional module's failure is a warning.
        def one(ext):
            local.sub = re.sub(r"[^A-Za-z0-9_.-]", "_", ext.name)
            local.package, local.ext, local.link_token, local.ext_waited = package, ext, None, False
            try:
                command.build_extension(ext)
            finally:
                if not local.ext_waited:
                    package.left()
                local.sub = local.package = local.ext = None
                if local.link_token:
                    tokens.give(local.link_token)

        failed = []
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(order)) as pool:
            futures = {pool.submit(one, e): e for e in order}
            for fut in concurrent.futures.as_completed(futures):
                if fut.cancelled() or fut.exception() is None:
                    continue
                ext = futures[fut]
                failed.append((ext, fut.exception()))
                if not getattr(ext, "optional", False):
                    stop.set()
        filt = getattr(command, "_filter_build_errors", None)
        for ext, error in failed:
            if filt is None or not getattr(ext, "optional", False):
                raise error
            with filt(ext):  # an optional module's failure is a warning
                raise error

    def run_ninja_build_function(self):
        # torch's Ninja run for one module's objects: in a module's thread, the package's
        # one Ninja does it instead (once per module; a second compile call of the same
        # module runs its own Ninja, as torch would).
        def run_ninja_build(build_directory, verbose, error_prefix, *args, **kwargs):
            package = getattr(local, "package", None)
            if package is None or getattr(local, "ext_waited", False):
                return self.torch_run(build_directory, verbose, error_prefix, *args, **kwargs)
            local.ext_waited = True
            local.link_token = package.wait_for(os.path.abspath(build_directory), local.ext,
                                                error_prefix)

        run_ninja_build.tailor_package_ninja = True
        return run_ninja_build


def modules_at_once():
    if os.environ.get("TAILOR_MODULES_AT_ONCE") != "1":
        return
    # MAX_JOBS as tailor started the build: a package may set its own when it is unset
    # (flash-attn's NinjaBuildExtension: cpu_count() // 2), which would pin Ninja's -j
    # below the tokens the jobserver hands out.
    asked_jobs = os.environ.get("MAX_JOBS")
    try:
        from setuptools.command.build_ext import build_ext
    except ImportError:
        return

    def get_temp(self):
        base = self.__dict__.get("_tailor_build_temp")
        sub = getattr(local, "sub", None)
        return os.path.join(base, sub) if base and sub else base

    def set_temp(self, value):
        self.__dict__["_tailor_build_temp"] = value

    build_ext.build_temp = property(get_temp, set_temp)
    at_once = ModulesAtOnce(build_ext.build_extensions, asked_jobs, UnitTimes.from_environment())

    def build_extensions(self):
        return at_once.build_extensions(self)

    build_ext.build_extensions = build_extensions
