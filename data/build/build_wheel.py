# Builds the wheel of the source in the current folder through its PEP 517 backend, in this
# interpreter, with no build isolation: python -u -c SCRIPT OUT_DIR. The same as
# `pip wheel --no-build-isolation --no-deps` without pip's separate metadata pass, which
# runs setup.py (and its `import torch`) once more before the build. No pyproject.toml
# [build-system] means setuptools' legacy backend, as pip does. Full-line comments are
# dropped when tailor embeds this in a command line.
import importlib
import json
import os
import re
import sys

# The package's one Ninja. torch writes one build.ninja per module (its rules and
# variables at the file's top level); they are merged into one file in the package's
# build folder: each module's rules renamed (compile -> compile_m3) with the module's
# variables written into them, and every compile edge of the package in one list,
# longest unit first. Ninja starts ready edges by their critical path, and every
# compile edge here has the same one, so the list's order is the order they start in:
# the longest units of the whole package first, whatever module they belong to. A
# module file this cannot read (a construct torch does not write) is included whole
# with `subninja`, its units in its own order. Each module ends in a stamp edge
# (.tailor-done/mN over its outputs): when Ninja reports it, that module links while
# the Ninja goes on. Only the order in which edges start is changed, never a command
# or an edge's inputs, so the bytes are those of torch's own files.
STAMP_DIR = ".tailor-done"
STAMP_LINE = re.compile(r" touch \.tailor-done/m(\d+)$")  # Ninja's line for a stamp edge (-v)


def unescape(text):
    return re.sub(r"\$([$ :])", r"\1", text)


def references(text):
    # The variables a ninja value refers to ($name, ${name}); None: not a value ninja reads.
    names, i = [], 0
    while i < len(text):
        if text[i] != "$":
            i += 1
            continue
        nxt = text[i + 1:i + 2]
        if nxt in ("$", " ", ":"):
            i += 2
            continue
        m = re.match(r"\{([A-Za-z0-9_.-]+)\}|([A-Za-z0-9_-]+)", text[i + 1:])
        if not m:
            return None
        names.append(m.group(1) or m.group(2))
        i += 1 + len(m.group(0))
    return names


def substitute(text, values):
    out, i = [], 0
    while i < len(text):
        if text[i] != "$":
            out.append(text[i])
            i += 1
            continue
        nxt = text[i + 1:i + 2]
        if nxt in ("$", " ", ":"):
            out.append(text[i:i + 2])
            i += 2
            continue
        m = re.match(r"\{([A-Za-z0-9_.-]+)\}|([A-Za-z0-9_-]+)", text[i + 1:])
        name = m.group(1) or m.group(2)
        out.append(values.get(name, "$" + m.group(0)))
        i += 1 + len(m.group(0))
    return "".join(out)


def split_edge(line):
    # "build OUTS: RULE INS" -> (OUTS text, [explicit outputs, escaped], RULE, first
    # input unescaped, INS text); None: no unescaped colon.
    body = line[len("build "):]
    i = 0
    while i < len(body) and body[i] != ":":
        i += 2 if body[i] == "$" else 1
    if i >= len(body):
        return None
    outs, rest = body[:i], body[i + 1:].lstrip(" ")
    explicit = re.split(r"(?<!\$) ", outs.split(" | ")[0].strip())
    rule, _, ins = rest.partition(" ")
    first = re.split(r"(?<!\$) ", ins.strip())[0] if ins.strip() else ""
    return outs, [o for o in explicit if o], rule, unescape(first), ins


def read_module(path, number):
    # -> (rules text, [(first input, edge text)], [outputs]); (None, [], None): include the
    # file whole.
    with open(path) as f:
        lines = f.read().split("\n")
    variables, rules, edges, outputs = {}, [], [], []
    readable = True
    block = None
    for line in lines:
        if line.endswith("$") or line.startswith("\t"):
            readable = False
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.startswith(" "):
            key, eq, value = line.strip().partition("=")
            if not eq or block is None:
                readable = False
                continue
            if block == "rule":
                rules.append(("  %s = " % key.strip(), value.strip()))  # substituted below
            else:
                if references(value.strip()) != []:
                    readable = False  # an edge binding read in the file's scope
                edges[-1][1].append(line)
            continue
        if line.startswith("rule "):
            block = "rule"
            rules.append("rule %s_m%d" % (line[5:].strip(), number))
            continue
        if line.startswith("build "):
            block = "edge"
            parts = split_edge(line)
            if parts is None:
                return None, [], None
            outs_text, outs, rule, first, ins = parts
            outputs.extend(outs)
            head = line if rule == "phony" else "build %s: %s_m%d %s" % (outs_text, rule, number, ins)
            edges.append((first, [head]))
            continue
        block = None
        key, eq, value = line.partition("=")
        key = key.strip()
        if not eq or not re.fullmatch(r"[A-Za-z0-9_.-]+", key):
            readable = False  # include, subninja, pool, default: not torch's
            continue
        if key == "ninja_required_version":
            continue
        if references(value.strip()) != [] or key in variables:
            readable = False  # a value read from another, or set twice
        variables[key] = value.strip()
    if not readable:
        # Included whole; its outputs as read here may be cut short (a line continued
        # with $): no stamp, the module links when the Ninja has ended.
        return None, [], None
    # The module's variables written into its rules: ninja reads a rule's variables when
    # an edge runs, after the whole file, so every top-level value counts.
    rules = [r if isinstance(r, str) else r[0] + substitute(r[1], variables) for r in rules]
    return "\n".join(rules), [(first, "\n".join(text)) for first, text in edges], outputs


def learned_splits(times, units, jobs, max_k, min_ms=20000):
    # The CUDA units that set the package's wall, each split with nvcc -split-compile=K: a
    # unit longer than 1.5 x the package's work shared over its jobs would still run when
    # every other unit has ended. K = its time over that share (at most max_k). Only from
    # measured times (`times`: unit -> ms, of earlier builds or tailor's data) that cover
    # at least 90% of the package's `units`: a guess splits nothing.
    known = {u: times[u] for u in units if u in times}
    if not units or len(known) * 10 < len(units) * 9 or max_k < 2:
        return {}
    share = sum(known.values()) / float(max(1, jobs))
    out = {}
    for unit, ms in sorted(known.items()):
        if unit.endswith(".cu") and ms >= min_ms and ms > 1.5 * share:
            k = min(max_k, int(-(-ms // max(1, int(share)))))
            if k >= 2:
                out[unit] = k
    return out


def split_rule(rules_text, rule, k):
    # The module's rule `rule` with -split-compile=K at the end of its command, renamed;
    # None when the text has no such rule.
    lines, block, out = rules_text.split("\n"), False, []
    for line in lines:
        if line.startswith("rule "):
            block = line == "rule " + rule
            if block:
                out.append("rule %s_s%d" % (rule, k))
            continue
        if block:
            out.append(line + (" -split-compile=%d" % k if line.startswith("  command = ") else ""))
    return "\n".join(out) if out else None


def modules_at_once():
    # torch.utils.cpp_extension builds a package's extension modules one after another,
    # each through its own Ninja in one shared build folder. Here every module gets its
    # own folder (build_temp/<module>), the modules run side by side in threads up to
    # their compile, and one Ninja, a client of tailor's jobserver (MAKEFLAGS) or run
    # with the fixed job count (MAX_JOBS), compiles every module's units at once, the
    # longest first across the whole package; each module links when its own objects are
    # built. Only torch's Ninja path (BuildExtension with use_ninja): its non-Ninja path
    # swaps the compiler executable around each compile, which threads would race on.
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
    import select
    import subprocess
    import threading
    import time

    local = threading.local()

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

    class LinkTokens:
        # What a module's link runs under, beside the package's one Ninja. Under the
        # jobserver this process is one client with one implicit token: the Ninja has it
        # while it runs (GNU make's rule for a child it starts), and each link reads a
        # token from the fifo, or takes the implicit one once the Ninja has ended, and
        # gives it back after. With a fixed job count there is no fifo: links wait for the
        # Ninja to end and then run that many at a time.
        def __init__(self, path, fixed):
            self.fd = os.open(path, os.O_RDWR | os.O_NONBLOCK) if path else None
            self.cond = threading.Condition()
            self.free = 0  # local tokens: the implicit one, or the fixed count, once the Ninja ends
            self.after_ninja = 1 if path else max(1, fixed)

        def ninja_ended(self):
            with self.cond:
                self.free = self.after_ninja
                self.cond.notify_all()

        def take(self, stop):
            while not stop.is_set():
                with self.cond:
                    if self.free > 0:
                        self.free -= 1
                        return "local"
                    if self.fd is None:
                        self.cond.wait(0.2)
                        continue
                if select.select([self.fd], [], [], 0.2)[0]:
                    try:
                        got = os.read(self.fd, 1)
                    except BlockingIOError:
                        continue
                    if got:
                        return got
            return None

        def give(self, token):
            if token == "local":
                with self.cond:
                    self.free += 1
                    self.cond.notify_all()
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

    class PackageNinja:
        # Waits until every module has written its build.ninja (or ended without one), runs
        # the package's one Ninja over them all, and lets each module link as soon as its
        # own objects are built.
        def __init__(self, base, exts, order, tokens, jobs_arg, stop, split_max):
            self.base, self.order, self.tokens, self.jobs_arg, self.stop = base, order, tokens, jobs_arg, stop
            self.split_max = split_max  # None: every unit is split already (few units); 0: none learned
            self.cond = threading.Condition()
            self.expected = len(exts)
            self.ended_early = 0
            self.folders = {}  # build folder -> module number
            self.state = {}    # module number -> "wait", "done", "failed"
            self.started = False
            self.rc = None

        def left(self):
            with self.cond:
                self.ended_early += 1
                self._maybe_start()

        def _maybe_start(self):
            if self.started or len(self.folders) + self.ended_early < self.expected:
                return
            self.started = True
            if self.stop.is_set() or not self.folders:
                for n in self.state:
                    self.state[n] = "failed"
                self.tokens.ninja_ended()
                self.cond.notify_all()
                return
            threading.Thread(target=self._run, daemon=True).start()

        def wait_for(self, folder, ext, error_prefix):
            # Called in the module's thread in place of torch's own Ninja run.
            with self.cond:
                number = self.order.index(id(ext))
                self.folders[folder] = number
                self.state[number] = "wait"
                self._maybe_start()
                while self.state[number] == "wait" and not self.stop.is_set():
                    self.cond.wait(0.2)
                state = self.state[number]
            if state != "done":
                # As torch's own Ninja run fails (a RuntimeError, which setuptools does not
                # turn into a warning even for an optional module).
                raise RuntimeError("%s: the package's Ninja %s" % (
                    error_prefix, "ended with exit %s" % self.rc if self.rc else "stopped"))
            token = self.tokens.take(self.stop)
            if token is None:
                raise RuntimeError(error_prefix + ": the build was stopped")
            local.link_token = token

        def _stamp(self, number):
            return "%s/m%d" % (STAMP_DIR, number)

        def _manifest(self):
            rules, edges, stamps = [], [], []
            for folder, number in sorted(self.folders.items(), key=lambda kv: kv[1]):
                path = os.path.join(folder, "build.ninja")
                text, module_edges, outputs = read_module(path, number)
                if text is None:
                    rules.append("subninja %s" % path.replace("$", "$$").replace(" ", "$ ").replace(":", "$:"))
                else:
                    rules.append(text)
                    edges.extend((-unit_ms(first) if first else 0, number, i, edge)
                                 for i, (first, edge) in enumerate(module_edges))
                if outputs is not None:
                    stamps.append("build %s: tailor_module_done %s" % (self._stamp(number), " ".join(outputs)))
            edges.sort(key=lambda e: e[:3])
            # Units that set the wall, split on their own (learned, or as the wheel being
            # reproduced says: TAILOR_SPLIT_UNITS, unit -> K).
            units = {}
            for _, number, _, edge in edges:
                head = edge.split("\n", 1)[0]
                parts = split_edge(head) if head.startswith("build ") else None
                if parts and "compile" in parts[2] and parts[3]:
                    units[os.path.relpath(os.path.abspath(parts[3]))] = (number, parts[2])
            given = os.environ.get("TAILOR_SPLIT_UNITS")
            if self.split_max is None:
                chosen, why = {}, ""
            elif given is not None:
                try:
                    chosen = {u: int(k) for u, k in json.loads(given).items() if int(k) >= 2}
                except (ValueError, AttributeError, TypeError):
                    chosen = {}
                why = "as the wheel being reproduced was built"
            else:
                jobs = int(self.jobs_arg[1]) if self.jobs_arg else len(os.sched_getaffinity(0))
                chosen = learned_splits(known, list(units), jobs, self.split_max)
                why = "measured in earlier builds: it sets the wall"
            split_rules = {}
            for unit, k in sorted(chosen.items()):
                if unit not in units or not units[unit][1].startswith("cuda_compile"):
                    continue
                number, rule = units[unit]
                text = split_rule(rules[sorted(self.folders.values()).index(number)], rule, k)
                if text is None:
                    continue
                split_rules[(number, rule, k)] = text
                print("tailor: split unit: %s %d (%s)" % (unit, k, why), flush=True)
                for i, e in enumerate(edges):
                    head, _, rest = e[3].partition("\n")
                    parts = split_edge(head) if head.startswith("build ") else None
                    if parts and parts[2] == rule and os.path.relpath(os.path.abspath(parts[3])) == unit:
                        head = head.replace(": %s " % rule, ": %s_s%d " % (rule, k), 1)
                        edges[i] = e[:3] + (head + ("\n" + rest if rest else ""),)
            rules = rules + list(split_rules.values())
            return "\n".join(["# The package's one Ninja, written by tailor's build driver "
                              "(data/build/build_wheel.py) from each module's build.ninja.",
                              "ninja_required_version = 1.3", ""] + rules +
                             ["", "rule tailor_module_done", "  command = touch $out", ""] +
                             [e[3] for e in edges] + [""] + stamps) + "\n"

        def _ninja(self):
            command = ["ninja", "-v"] + self.jobs_arg
            proc = subprocess.Popen(command, cwd=self.base, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    env=os.environ.copy())

            def watch():
                while proc.poll() is None:
                    if self.stop.wait(0.5):
                        proc.terminate()
                        return
            threading.Thread(target=watch, daemon=True).start()
            for line in proc.stdout:
                text = line.rstrip(b"\r\n").decode("utf-8", "replace")
                stamp = STAMP_LINE.search(text)
                n = int(stamp.group(1)) if stamp else None
                if n is None:
                    os.write(1, line)
                    continue
                with self.cond:
                    if self.state.get(n) == "wait":
                        self.state[n] = "done"
                        self.cond.notify_all()
            return proc.wait()

        def _run(self):
            # Any failure here (a module file that cannot be read, no ninja) fails the
            # waiting modules with it; none of them may wait for ever.
            try:
                os.makedirs(os.path.join(self.base, STAMP_DIR), exist_ok=True)
                for n in self.state:
                    try:
                        os.unlink(os.path.join(self.base, self._stamp(n)))
                    except FileNotFoundError:
                        pass
                manifest = os.path.join(self.base, "build.ninja")
                with open(manifest + ".tmp", "w") as f:
                    f.write(self._manifest())
                os.replace(manifest + ".tmp", manifest)
                with open(os.path.join(self.base, ".tailor_start"), "w") as f:
                    f.write("%d\n" % int(time.time() * 1000))
                rc = self._ninja()
            except Exception as e:
                print("tailor: the package's Ninja did not run: %s" % e, flush=True)
                rc = -1
            with self.cond:
                self.rc = rc
                for n, st in self.state.items():
                    if st == "wait":
                        self.state[n] = "done" if rc == 0 else "failed"
                self.tokens.ninja_ended()
                self.cond.notify_all()

    def build_extensions(self):
        exts = list(self.extensions)
        if not getattr(self, "use_ninja", False) or not exts:
            return original(self)
        units = sum(len(e.sources) for e in exts)
        cuda_units = sum(1 for e in exts for s in e.sources if is_cuda(s))
        split = re.fullmatch(r"(\d+):(\d+)", os.environ.get("TAILOR_SPLIT_COMPILE", ""))
        k = min(int(split.group(2)), int(split.group(1)) // cuda_units) if split and cuda_units else 1
        fifo = re.search(r"--jobserver-auth=fifo:(\S+)", os.environ.get("MAKEFLAGS", ""))
        split_flags = ["-split-compile=%d" % k] if k >= 2 else []
        for e in exts:
            if any(is_cuda(s) for s in e.sources):
                for flag in split_flags:
                    add_nvcc_flag(e, flag)
        own = os.environ.get("MAX_JOBS")
        if fifo and own is not None and own != asked_jobs:
            # The package's own count, not the user's: the jobserver decides instead. The
            # variable stays as the package left it (it may pop it after the build).
            print("tailor: the package set MAX_JOBS=%s itself; the build's jobserver shares out the jobs instead" % own,
                  flush=True)
        fixed = asked_jobs or ""
        if fifo and not fixed.isdigit():
            jobs_arg, tokens = [], LinkTokens(fifo.group(1), 0)
            how = "one Ninja under the jobserver"
        else:
            # A fixed count (--jobs, or no jobserver client): the Ninja's -j.
            jobs = int(fixed) if fixed.isdigit() else int(os.environ.get("TAILOR_JOBS") or
                                                           len(os.sched_getaffinity(0)) or 1)
            jobs = max(1, jobs)
            jobs_arg, tokens = ["-j", str(jobs)], LinkTokens(None, jobs)
            how = "one Ninja, %d at a time" % jobs
        print("tailor: modules at once: %d modules, %d units (%d CUDA), %s%s"
              % (len(exts), units, cuda_units, how, ", nvcc " + " ".join(split_flags) if split_flags else ""), flush=True)
        self.check_extensions_list(self.extensions)
        cpp_extension = sys.modules.get("torch.utils.cpp_extension")
        if cpp_extension is None or not hasattr(cpp_extension, "_run_ninja_build"):
            return original(self)
        if not getattr(cpp_extension._run_ninja_build, "tailor_package_ninja", False):
            torch_runs[:] = [cpp_extension._run_ninja_build]
            cpp_extension._run_ninja_build = run_ninja_build
        # The heaviest first: by earlier builds' unit times, else CUDA units weigh more
        # than host ones (the modules' order in the package's Ninja, and so the order of
        # units of equal weight).
        if known:
            order = sorted(exts, key=lambda e: -max([unit_ms(s) for s in e.sources] or [0]))
        else:
            order = sorted(exts, key=lambda e: -sum(20 if is_cuda(s) else 1 for s in e.sources))
        # TAILOR_UNIT_TIMES_FROM: "earlier builds" (this machine's), or tailor's measured
        # times of a known package (data/build/unit_times.toml).
        print("tailor: units ordered by %s" % ("%d units' times from %s" % (
            len(known), os.environ.get("TAILOR_UNIT_TIMES_FROM") or "earlier builds") if known
            else "kind (CUDA first): no earlier build"), flush=True)
        stop = threading.Event()  # a module failed: nothing more starts, the Ninja stops
        package = PackageNinja(os.path.abspath(self.build_temp), exts, [id(e) for e in order], tokens, jobs_arg,
                               stop, None if k >= 2 else int(split.group(2)) if split else 0)

        def one(ext):
            local.sub = re.sub(r"[^A-Za-z0-9_.-]", "_", ext.name)
            local.package, local.ext, local.link_token, local.ext_waited = package, ext, None, False
            try:
                self.build_extension(ext)
            finally:
                if not local.ext_waited:
                    package.left()
                local.sub = local.package = local.ext = None
                if local.link_token:
                    tokens.give(local.link_token)

        failed = []
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(exts)) as pool:
            futures = {pool.submit(one, e): e for e in order}
            for fut in concurrent.futures.as_completed(futures):
                if fut.cancelled() or fut.exception() is None:
                    continue
                ext = futures[fut]
                failed.append((ext, fut.exception()))
                if not getattr(ext, "optional", False):
                    stop.set()
        filt = getattr(self, "_filter_build_errors", None)
        for ext, error in failed:
            if filt is None or not getattr(ext, "optional", False):
                raise error
            with filt(ext):  # an optional module's failure is a warning
                raise error

    def run_ninja_build(build_directory, verbose, error_prefix, *args, **kwargs):
        # torch's Ninja run for one module's objects: in a module's thread, the package's
        # one Ninja does it instead (once per module; a second compile call of the same
        # module runs its own Ninja, as torch would).
        package = getattr(local, "package", None)
        if package is None or getattr(local, "ext_waited", False):
            return torch_runs[0](build_directory, verbose, error_prefix, *args, **kwargs)
        local.ext_waited = True
        package.wait_for(os.path.abspath(build_directory), local.ext, error_prefix)

    run_ninja_build.tailor_package_ninja = True
    torch_runs = []

    build_ext.build_extensions = build_extensions



# What tailor takes back from the package's own build choices, each said on one line
# ("tailor: package choice: ...") that tailor copies into the build's report.
CHOICE = "tailor: package choice: "
ARCH_OPTIONS = ("-arch", "--gpu-architecture", "-gencode", "--generate-code", "-code", "--gpu-code")
ARCH_TOKEN = re.compile(r"\b(?:compute|sm|lto)_\d+[a-z]?\b")
CMAKE_ARCH_PROPERTY = re.compile(r"(\bCUDA_ARCHITECTURES\b)(\s+)((?:\"[^\"\n]*\"|[^\s)\"]+)"
                                 r"(?:\s+(?![A-Z][A-Z0-9_]*\b)(?:\"[^\"\n]*\"|[^\s)\"]+))*)")
CMAKE_ARCH_SET = re.compile(r"(\bset\s*\(\s*CMAKE_CUDA_ARCHITECTURES)(\s+)((?:\"[^\"\n]*\"|[^\s)\"]+)"
                            r"(?:\s+(?!CACHE\b|PARENT_SCOPE\b|FORCE\b)(?:\"[^\"\n]*\"|[^\s)\"]+))*)", re.I)


def say_choice(text):
    print(CHOICE + text, flush=True)


def where_in_source(needle):
    # "setup.py:12": the first line of the package's own top-level Python files that holds
    # `needle`; "setup.py" when none does (a value the package computed).
    files = ["setup.py"] + sorted(f for f in os.listdir(".") if f.endswith(".py") and f != "setup.py"
                                  and not f.startswith("tailor-"))
    for name in files:
        try:
            with open(name, errors="replace") as f:
                for number, line in enumerate(f, 1):
                    if needle in line and not line.lstrip().startswith("#"):
                        return "%s:%d" % (name, number)
        except OSError:
            continue
    return "setup.py (a value it computed)" if os.path.exists("setup.py") else "the package's build"


def strip_arch_flags(args):
    # nvcc arguments -> (kept, removed): every target option, with its value whether it is
    # attached (-arch=sm_80, "-gencode arch=...,code=...") or the next argument.
    kept, removed, i = [], [], 0
    while i < len(args):
        a = args[i]
        text = a.strip() if isinstance(a, str) else None
        head = re.split(r"[= ]", text, 1)[0] if text else None
        if head in ARCH_OPTIONS:
            if text != head or i + 1 >= len(args):
                removed.append(text)
                i += 1
            else:
                removed.append("%s %s" % (text, args[i + 1]))
                i += 2
            continue
        kept.append(a)
        i += 1
    return kept, removed


def requested_ccs(torch_list):
    # "8.0;9.0+PTX" -> {"80", "90"}: the compute capabilities the user asked for.
    return {m.group(1) + m.group(2) for m in re.finditer(r"(\d+)\.(\d+)", torch_list or "")}


def arch_specific(texts, ccs):
    # The arch-specific variants (sm_90a, compute_100f, CMake's 90a-real) the package names
    # for a requested capability: {"90": "a"}. Such a package uses instructions only the
    # variant has (wgmma, tcgen05), so the requested capability is built as that variant.
    found = {}
    for t in texts:
        for m in re.finditer(r"(?:\b(?:compute|sm)_|(?<![\w.])(?=\d+[af]\b|\d+[af]-))(\d+)([af])\b", t or ""):
            if m.group(1) in ccs:
                found[m.group(1)] = m.group(2)
    return found


PACKAGE_TARGET = "tailor: package target: "


def say_variants(upgrades, announced=set()):
    for cc, suffix in sorted(upgrades.items()):
        if cc not in announced:
            announced.add(cc)
            print("%ssm_%s%s for sm_%s" % (PACKAGE_TARGET, cc, suffix, cc), flush=True)


def upgraded_torch_list(torch_list, upgrades):
    # "8.0;9.0+PTX" with {"90": "a"} -> "8.0;9.0a+PTX".
    return re.sub(r"(\d+)\.(\d+)(?![\d.af])", lambda m: m.group(0) + upgrades.get(m.group(1) + m.group(2), ""),
                  torch_list)


def cmake_ccs(cmake_list):
    # "80-real;90" -> {"80", "90"}: the capabilities of a CMake architecture list.
    return {m.group(1) for m in re.finditer(r"(?<![\w.])(\d+)(?=-|;|$)", cmake_list or "")}


def upgraded_cmake_list(cmake_list, upgrades):
    # "80-real;90-real" with {"90": "a"} -> "80-real;90a-real".
    return re.sub(r"(?<![\w.])(\d+)(?=-|;|$)", lambda m: m.group(1) + upgrades.get(m.group(1), ""), cmake_list)


def take_back_choices():
    # Inside setuptools' build_ext.run, before torch's BuildExtension picks its compile path:
    #  - Ninja, always: a BuildExtension the package made with use_ninja=False (in its
    #    __init__, with_options or a subclass) compiles through Ninja like any other, so its
    #    units run at once (and in the package's one Ninja, modules_at_once).
    #  - The requested targets win (TAILOR_TORCH_ARCH_LIST, the user's targets in torch's
    #    spelling; unset with --keep-package-archs): nvcc target options the package wrote
    #    into extra_compile_args are dropped, so torch adds the requested ones, and a
    #    TORCH_CUDA_ARCH_LIST the package set itself is put back.
    #  - A MAX_JOBS the package set itself (MAX_JOBS=1) gives way to tailor's.
    asked_arch = os.environ.get("TAILOR_TORCH_ARCH_LIST")
    asked_jobs = os.environ.get("MAX_JOBS")
    try:
        from setuptools.command.build_ext import build_ext
    except ImportError:
        return
    original_run = build_ext.run

    def run(self):
        cpp_extension = sys.modules.get("torch.utils.cpp_extension")
        torch_build = cpp_extension is not None and isinstance(self, getattr(cpp_extension, "BuildExtension", ()))
        if torch_build and os.environ.get("TAILOR_MODULES_AT_ONCE") == "1" and not getattr(self, "use_ninja", True):
            if cpp_extension.is_ninja_available():
                self.use_ninja = True
                self.force = True  # as BuildExtension.finalize_options does for Ninja
                # Without Ninja the compiler ran in the source folder, so a relative include
                # folder worked there (torch-points-kernels: include_dirs=["cuda/include"]);
                # Ninja compiles in the build folder: the same folders, made absolute.
                for ext in self.extensions:
                    ext.include_dirs = [d if os.path.isabs(d) else os.path.abspath(d) for d in ext.include_dirs]
                    args = ext.extra_compile_args
                    for key, flags in (args.items() if isinstance(args, dict) else [(None, args)]):
                        if not isinstance(flags, list):
                            continue
                        fixed = ["-I" + os.path.abspath(f[2:]) if isinstance(f, str) and f.startswith("-I") and
                                 len(f) > 2 and not os.path.isabs(f[2:]) and os.path.isdir(f[2:]) else f for f in flags]
                        if key is None:
                            ext.extra_compile_args = fixed
                        else:
                            args[key] = fixed
                say_choice("%s: the package turned Ninja off (use_ninja=False); its units compile through "
                           "Ninja, at once" % where_in_source("use_ninja"))
        if os.environ.get("MAX_JOBS") != asked_jobs and os.environ.get("MAX_JOBS") is not None:
            # The package's own count gives way: tailor's (--jobs) is put back, or with the
            # jobserver the package's Ninja ignores it (modules_at_once). The variable stays
            # set: a setup.py that pops it after the build (gsplat) must find it.
            say_choice("%s: MAX_JOBS=%s set by the package; tailor's job count stands"
                       % (where_in_source("MAX_JOBS"), os.environ["MAX_JOBS"]))
            if asked_jobs is not None:
                os.environ["MAX_JOBS"] = asked_jobs
        if asked_arch and torch_build:
            own = os.environ.get("TORCH_CUDA_ARCH_LIST")
            stripped = []  # (extension, flags removed)
            for ext in self.extensions:
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
            # One target list for the whole package: the requested one, each capability
            # built as the arch-specific variant (9.0a) where the package asks for that.
            # (torch's list takes the "a" variants, 9.0a, not the "f" families.)
            upgrades = {cc: v for cc, v in arch_specific([own] + [f for _, removed in stripped for f in removed],
                                                         requested_ccs(asked_arch)).items() if v == "a"}
            targets = upgraded_torch_list(asked_arch, upgrades)
            say_variants(upgrades)
            if own != targets:
                say_choice("%s: TORCH_CUDA_ARCH_LIST=%s set by the package, replaced by the requested %s"
                           % (where_in_source("TORCH_CUDA_ARCH_LIST"), own, targets))
            os.environ["TORCH_CUDA_ARCH_LIST"] = targets
            for ext, removed in stripped:
                for flag in removed:
                    token = ARCH_TOKEN.search(flag)
                    say_choice("%s: nvcc %s (extension %s) replaced by the requested targets (%s)"
                               % (where_in_source(token.group(0) if token else flag.split()[0]), flag, ext.name,
                                  targets))
        return original_run(self)

    build_ext.run = run


def take_back_cmake_archs():
    # TAILOR_CMAKE_ARCHS: the requested targets in CMake's spelling. A CUDA_ARCHITECTURES
    # property or a set(CMAKE_CUDA_ARCHITECTURES ...) written in the package's CMake files
    # gets them instead of its own list (this folder is tailor's copy of the source), each
    # capability as the arch-specific variant (90a-real) where the package names that.
    # Returns the variants, for the package's own cmake calls.
    asked = os.environ.get("TAILOR_CMAKE_ARCHS")
    if not asked:
        return {}
    ccs = cmake_ccs(asked)
    found, seen = [], 0  # (path, text, [match]) of files with a list of their own
    for root, dirs, files in os.walk("."):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in ("build", "dist", "venv"))
        for name in sorted(files):
            if name != "CMakeLists.txt" and not name.endswith(".cmake"):
                continue
            seen += 1
            if seen > 5000:
                break
            path = os.path.join(root, name)
            try:
                if os.path.getsize(path) > (4 << 20):
                    continue
                with open(path, errors="surrogateescape") as f:
                    text = f.read()
            except OSError:
                continue
            matches = []
            for pattern in (CMAKE_ARCH_SET, CMAKE_ARCH_PROPERTY):
                for m in pattern.finditer(text):
                    before = text[text.rfind("\n", 0, m.start()) + 1:m.start()]
                    if before.count('"') % 2 or "#" in before:
                        continue  # inside a string or a comment
                    matches.append(m)
            if matches:
                found.append((path, text, sorted(matches, key=lambda m: m.start(3))))
    upgrades = arch_specific([m.group(3) for _, _, ms in found for m in ms], ccs)
    targets = upgraded_cmake_list(asked, upgrades)
    say_variants(upgrades)
    for path, text, matches in found:
        out, at = [], 0
        for m in matches:
            old = m.group(3)
            if old.strip('"') == targets or m.start(3) < at:
                continue
            line = text.count("\n", 0, m.start(3)) + 1
            what = m.group(1).split("(")[-1].strip()
            say_choice("%s:%d: %s %s replaced by the requested targets (%s)" % (os.path.relpath(path), line, what, old,
                                                                              targets))
            out.append(text[at:m.start(3)] + '"%s"' % targets)
            at = m.end(3)
        out.append(text[at:])
        with open(path + ".tailor-tmp", "w", errors="surrogateescape") as f:
            f.write("".join(out))
        os.replace(path + ".tailor-tmp", path)
    return upgrades


def take_back_cmake_calls(upgrades):
    # The cmake commands a setup.py runs itself: a -DCMAKE_CUDA_ARCHITECTURES=... of its own
    # gets the requested targets (TAILOR_CMAKE_ARCHS), and `cmake --build ... -j1`
    # (or --parallel 1) loses its one job, so the build's jobserver or
    # CMAKE_BUILD_PARALLEL_LEVEL decides.
    import subprocess
    asked = os.environ.get("TAILOR_CMAKE_ARCHS")
    original_init = subprocess.Popen.__init__
    ccs = cmake_ccs(asked)

    def init(self, args, *rest, **kwargs):
        if isinstance(args, (list, tuple)) and args and os.path.basename(str(args[0])) == "cmake":
            args, changed, i = list(args), [], 0
            while i < len(args):
                a = str(args[i])
                own = a.split("=", 1)[1] if a.startswith("-DCMAKE_CUDA_ARCHITECTURES") and "=" in a else None
                if asked and own is not None:
                    variants = dict(upgrades)
                    variants.update(arch_specific([own], ccs))
                    say_variants(variants)
                    targets = upgraded_cmake_list(asked, variants)
                    if own != targets:
                        changed.append(("CMAKE_CUDA_ARCHITECTURES",
                                        "cmake %s replaced by the requested targets (%s)" % (a, targets)))
                    args[i] = "-DCMAKE_CUDA_ARCHITECTURES=" + targets
                elif "--build" in args and a in ("-j1", "--parallel=1", "-j=1"):
                    changed.append((a, "cmake --build %s dropped: tailor's job count stands" % a))
                    del args[i]
                    continue
                elif "--build" in args and a in ("-j", "--parallel") and i + 1 < len(args) and str(args[i + 1]) == "1":
                    changed.append((a, "cmake --build %s 1 dropped: tailor's job count stands" % a))
                    del args[i:i + 2]
                    continue
                i += 1
            for needle, text in changed:
                say_choice("%s: %s" % (where_in_source(needle), text))
        return original_init(self, args, *rest, **kwargs)

    subprocess.Popen.__init__ = init


def stand_in_gpu():
    # TAILOR_STAND_IN_GPU=M.m: this machine has no GPU and the build is for CUDA targets, the
    # highest of them M.m. A setup.py that asks torch.cuda whether it may build CUDA code
    # (warp-rnnt 0.7.0 raises "CPU version is not implemented" without a GPU) is answered as
    # by one GPU of that target: is_available, device_count, get_device_capability,
    # get_device_name. Anything that really uses a GPU still fails as before. torch is
    # imported only for a setup.py that asks.
    cc = re.fullmatch(r"(\d+)\.(\d+)", os.environ.get("TAILOR_STAND_IN_GPU", ""))
    if not cc or not os.path.exists("setup.py"):
        return
    with open("setup.py", errors="replace") as f:
        text = f.read()
    if not re.search(r"cuda\.(is_available|device_count|get_device_capability|get_device_name)\b", text):
        return
    try:
        import torch
        if torch.cuda.is_available():
            return
    except Exception:
        return
    major, minor = int(cc.group(1)), int(cc.group(2))
    name = "no GPU: tailor's stand-in for sm_%d%d" % (major, minor)
    torch.cuda.is_available = lambda: True
    torch.cuda.device_count = lambda: 1
    torch.cuda.get_device_capability = lambda device=None: (major, minor)
    torch.cuda.get_device_name = lambda device=None: name
    print("tailor: no GPU here; while the package builds, torch.cuda answers as one GPU of "
          "sm_%d%d (the highest target): the package's setup.py asks it" % (major, minor), flush=True)


def main():
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

    modules_at_once()
    take_back_choices()
    take_back_cmake_calls(take_back_cmake_archs())
    stand_in_gpu()

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


if __name__ == "__main__":
    main()
