# Builds the wheel of the source in the current folder through its PEP 517 backend, in this
# interpreter, with no build isolation: python -u -c SCRIPT OUT_DIR. The same as
# `pip wheel --no-build-isolation --no-deps` without pip's separate metadata pass, which
# runs setup.py (and its `import torch`) once more before the build. No pyproject.toml
# [build-system] means setuptools' legacy backend, as pip does. Full-line comments are
# dropped when tailor embeds this in a command line.
import importlib
import json
import os
import sys

out = os.path.abspath(sys.argv[1])
system = {}
if os.path.exists("pyproject.toml"):
    try:
        import tomllib
    except ImportError:
        try:
            import tomli as tomllib
        except ImportError:
            from pip._vendor import tomli as tomllib
    with open("pyproject.toml", "rb") as f:
        system = tomllib.load(f).get("build-system", {})
elif not os.path.exists("setup.py"):
    sys.exit("tailor: " + os.getcwd() + " has neither pyproject.toml nor setup.py")

def modules_at_once():
    # torch.utils.cpp_extension builds a package's extension modules one after another,
    # each through its own Ninja in one shared build folder. Here every module gets its
    # own folder (build_temp/<module>) and the modules build side by side in threads:
    # each Ninja is a client of tailor's jobserver (MAKEFLAGS), or, with a fixed job
    # count (MAX_JOBS), the count is shared out between the modules running at once.
    # Only torch's Ninja path (BuildExtension with use_ninja): its non-Ninja path swaps
    # the compiler executable around each compile, which threads would race on.
    # TAILOR_SPLIT_COMPILE="REF:MAX" gives every nvcc unit -split-compile=K with
    # K = min(MAX, REF // units): a package of few units uses REF cores, and K depends
    # on the source alone, so the bytes do not depend on the machine.
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
    import concurrent.futures
    import re
    import select
    import threading
    import time

    import contextlib

    local = threading.local()
    _nothing = contextlib.nullcontext

    def get_temp(self):
        base = self.__dict__.get("_tailor_build_temp")
        sub = getattr(local, "sub", None)
        return os.path.join(base, sub) if base and sub else base

    def set_temp(self, value):
        self.__dict__["_tailor_build_temp"] = value

    build_ext.build_temp = property(get_temp, set_temp)
    original = build_ext.build_extensions

    def is_cuda(path):
        return path.endswith((".cu", ".cuh"))

    def add_nvcc_flag(ext, flag):
        args = ext.extra_compile_args
        if isinstance(args, dict):
            args["nvcc"] = list(args.get("nvcc") or []) + [flag]
        else:
            # torch gives a list to both compilers: the same as {cxx: list, nvcc: list}.
            ext.extra_compile_args = {"cxx": list(args or []), "nvcc": list(args or []) + [flag]}

    class JobserverSlots:
        # The implicit token for one module at a time; a token read from the fifo for each
        # other, written back after its link. Modules get their slots in the order given
        # (the heaviest first): only the head of the line waits on the jobserver, and it
        # takes whichever comes first (with every token withdrawn by the governor, the
        # implicit one still frees up).
        def __init__(self, path):
            self.fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)
            self.cond = threading.Condition()
            self.implicit_free = True
            self.serving = 0

        def take(self, stop, ticket):
            with self.cond:
                while self.serving != ticket and not stop.is_set():
                    self.cond.wait(0.2)
            got = False
            while got is False and not stop.is_set():
                with self.cond:
                    if self.implicit_free:
                        self.implicit_free = False
                        got = None
                        break
                if select.select([self.fd], [], [], 0.2)[0]:
                    try:
                        got = os.read(self.fd, 1) or False
                    except BlockingIOError:
                        pass
            if got is not False:
                with self.cond:
                    self.serving += 1
                    self.cond.notify_all()
            return got

        def give(self, token):
            if token is None:
                with self.cond:
                    self.implicit_free = True
            elif token:
                os.write(self.fd, token)

    # Each unit's time from earlier builds of the same package and targets
    # (TAILOR_UNIT_TIMES: a JSON object, source relative to this folder -> ms). A unit with
    # no record counts as the longest known unit of its kind, a first build's CUDA units
    # as longer than every host unit.
    known = {}
    try:
        with open(os.environ.get("TAILOR_UNIT_TIMES") or os.devnull) as f:
            data = json.load(f) if os.environ.get("TAILOR_UNIT_TIMES") else {}
        known = {k: int(v) for k, v in data.items() if isinstance(k, str) and isinstance(v, int) and v >= 0}
    except (OSError, ValueError, AttributeError):
        known = {}
    longest = {True: max([v for k, v in known.items() if is_cuda(k)] or [1 << 40]),
               False: max([v for k, v in known.items() if not is_cuda(k)] or [0])}

    def unit_ms(src):
        rel = os.path.relpath(os.path.abspath(src))
        return known.get(rel, longest[is_cuda(src)])

    def longest_units_first():
        # Within a module's build.ninja, Ninja starts ready edges in the order written, and
        # torch writes them in source order: a module's long units would start after its
        # short ones. Written longest first instead (the link's object order is
        # distutils' own and stays as it was, so the bytes do not change; not with a
        # device-link step, whose inputs follow this order).
        cpp_extension = sys.modules.get("torch.utils.cpp_extension")
        write = getattr(cpp_extension, "_write_ninja_file_and_compile_objects", None)
        if write is None or getattr(write, "tailor_longest_first", False):
            return

        def reordered(*args, **kwargs):
            if not args and "sources" in kwargs and "objects" in kwargs and kwargs.get("cuda_dlink_post_cflags") is None:
                pairs = sorted(zip(kwargs["sources"], kwargs["objects"]), key=lambda p: -unit_ms(p[0]))
                kwargs["sources"] = [src for src, _ in pairs]
                kwargs["objects"] = [obj for _, obj in pairs]
            return write(*args, **kwargs)

        reordered.tailor_longest_first = True
        cpp_extension._write_ninja_file_and_compile_objects = reordered

    def build_extensions(self):
        exts = list(self.extensions)
        if not getattr(self, "use_ninja", False) or not exts:
            return original(self)
        units = sum(len(e.sources) for e in exts)
        cuda_units = sum(1 for e in exts for s in e.sources if is_cuda(s))
        split = re.fullmatch(r"(\d+):(\d+)", os.environ.get("TAILOR_SPLIT_COMPILE", ""))
        k = min(int(split.group(2)), int(split.group(1)) // cuda_units) if split and cuda_units else 1
        if k >= 2:
            for e in exts:
                if any(is_cuda(s) for s in e.sources):
                    add_nvcc_flag(e, "-split-compile=%d" % k)
        fifo = re.search(r"--jobserver-auth=fifo:(\S+)", os.environ.get("MAKEFLAGS", ""))
        own = os.environ.get("MAX_JOBS")
        if fifo and own is not None and own != asked_jobs:
            # The package's own count, not the user's: the jobserver decides instead.
            del os.environ["MAX_JOBS"]
            print("tailor: the package set MAX_JOBS=%s itself; the build's jobserver shares out the jobs instead" % own,
                  flush=True)
        fixed = os.environ.get("MAX_JOBS", "")
        jobs = int(fixed) if fixed.isdigit() else int(os.environ.get("TAILOR_JOBS") or len(os.sched_getaffinity(0)) or 1)
        if fifo and not fixed.isdigit() and jobs > 1:
            # Every module at once, each Ninja a jobserver client. This process is one
            # client with one implicit token: like GNU make for its children, it takes a
            # token for each Ninja it runs beside the first and gives it back after the
            # module's link (the governor counts Ninjas of one parent as one client).
            # At most half as many modules as jobs at a time: a module whose Ninja got
            # only its one slot runs its units one after another (torch-cluster on 16
            # cores: 18 modules, each CUDA module's host file waiting 75 s for its .cu).
            workers = min(len(exts), max(2, jobs // 2))
            slots = JobserverSlots(fifo.group(1))
        else:
            workers = max(1, min(len(exts), jobs))
            slots = None
            if not fixed.isdigit():
                fixed = str(jobs)
            # A fixed count (--jobs, or no jobserver client): shared out between modules.
            os.environ["MAX_JOBS"] = str(max(1, int(fixed) // workers))
        print("tailor: modules at once: %d modules, %d units (%d CUDA), %s%s"
              % (len(exts), units, cuda_units,
                 ("up to %d at a time under the jobserver" if slots else "%d at a time") % workers,
                 ", nvcc -split-compile=%d" % k if k >= 2 else ""),
              flush=True)
        self.check_extensions_list(self.extensions)
        longest_units_first()
        # The heaviest first: by earlier builds' unit times, else CUDA units weigh more
        # than host ones.
        if known:
            order = sorted(exts, key=lambda e: -max([unit_ms(s) for s in e.sources] or [0]))
        else:
            order = sorted(exts, key=lambda e: -sum(20 if is_cuda(s) else 1 for s in e.sources))
        print("tailor: units ordered by %s" % ("%d units' times from earlier builds" % len(known) if known
                                               else "kind (CUDA first): no earlier build"), flush=True)
        tickets = {id(e): i for i, e in enumerate(order)}

        stop = threading.Event()  # a module failed: the waiting ones never start

        def one(ext):
            token = slots.take(stop, tickets[id(ext)]) if slots else None
            if token is False:
                return
            local.sub = re.sub(r"[^A-Za-z0-9_.-]", "_", ext.name)
            try:
                os.makedirs(self.build_temp, exist_ok=True)
                with open(os.path.join(self.build_temp, ".tailor_start"), "w") as f:
                    f.write("%d\n" % int(time.time() * 1000))
                self.build_extension(ext)
            finally:
                local.sub = None
                if slots:
                    slots.give(token)

        failed = []
        if workers < 2:
            # One at a time, in the same per-module folders: the same bytes as at once
            # (the objects' folder reaches the debug info's DW_AT_comp_dir).
            for ext in self.extensions:
                with getattr(self, "_filter_build_errors")(ext) if getattr(ext, "optional", False) else _nothing():
                    one(ext)
            return
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
            futures = {pool.submit(one, e): e for e in order}
            for fut in concurrent.futures.as_completed(futures):
                if fut.cancelled() or fut.exception() is None:
                    continue
                ext = futures[fut]
                failed.append((ext, fut.exception()))
                if not getattr(ext, "optional", False):
                    stop.set()
                    for other in futures:
                        other.cancel()  # not started yet: never starts
        filt = getattr(self, "_filter_build_errors", None)
        for ext, error in failed:
            if filt is None or not getattr(ext, "optional", False):
                raise error
            with filt(ext):  # an optional module's failure is a warning
                raise error

    build_ext.build_extensions = build_extensions


modules_at_once()

spec = system.get("build-backend") or "setuptools.build_meta:__legacy__"
for p in reversed(system.get("backend-path", [])):
    sys.path.insert(0, os.path.abspath(p))
name, _, attr = spec.partition(":")
backend = importlib.import_module(name)
for part in filter(None, attr.split(".")):
    backend = getattr(backend, part)
os.makedirs(out, exist_ok=True)
wheel = backend.build_wheel(out)
if not os.path.isfile(os.path.join(out, wheel)):
    sys.exit("tailor: the backend " + spec + " named " + wheel + " but left no such file in " + out)
print("tailor: built " + wheel + " with " + spec, flush=True)
