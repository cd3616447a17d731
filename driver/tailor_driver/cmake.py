# The package's CMake targets taken back (TAILOR_CMAKE_ARCHS: the requested targets in
# CMake's spelling; unset with --keep-package-archs): the lists in its CMake files, and the
# cmake commands its setup.py runs itself.
import os
import re

from . import jobs, say
from .targets import arch_specific, cmake_ccs, upgraded_cmake_list

CMAKE_ARCH_PROPERTY = re.compile(
    r"(\bCUDA_ARCHITECTURES\b)(\s+)((?:\"[^\"\n]*\"|[^\s)\"]+)"
    r"(?:\s+(?![A-Z][A-Z0-9_]*\b)(?:\"[^\"\n]*\"|[^\s)\"]+))*)")
CMAKE_ARCH_SET = re.compile(
    r"(\bset\s*\(\s*CMAKE_CUDA_ARCHITECTURES)(\s+)((?:\"[^\"\n]*\"|[^\s)\"]+)"
    r"(?:\s+(?!CACHE\b|PARENT_SCOPE\b|FORCE\b)(?:\"[^\"\n]*\"|[^\s)\"]+))*)", re.I)
MAX_FILES = 5000          # CMake files looked at, at most
MAX_FILE_BYTES = 4 << 20  # a larger CMake file is not the package's own


def arch_lists(text):
    # The target lists a CMake file sets itself (set(CMAKE_CUDA_ARCHITECTURES ...), a
    # CUDA_ARCHITECTURES property), in the order of their values; none inside a string or
    # after a comment's #.
    matches = []
    for pattern in (CMAKE_ARCH_SET, CMAKE_ARCH_PROPERTY):
        for m in pattern.finditer(text):
            before = text[text.rfind("\n", 0, m.start()) + 1:m.start()]
            if before.count('"') % 2 or "#" in before:
                continue  # inside a string or a comment
            matches.append(m)
    return sorted(matches, key=lambda m: m.start(3))


def cmake_files_with_lists(top="."):
    # -> [(path, text, [match])]: the package's CMake files that set a list of their own.
    found, seen = [], 0
    for root, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs
                         if not d.startswith(".") and d not in ("build", "dist", "venv"))
        for name in sorted(files):
            if name != "CMakeLists.txt" and not name.endswith(".cmake"):
                continue
            seen += 1
            if seen > MAX_FILES:
                break
            path = os.path.join(root, name)
            try:
                if os.path.getsize(path) > MAX_FILE_BYTES:
                    continue
                with open(path, errors="surrogateescape") as f:
                    text = f.read()
            except OSError:
                continue
            matches = arch_lists(text)
            if matches:
                found.append((path, text, matches))
    return found


def rewrite_lists(path, text, matches, targets):
    # Each list of the file that is not `targets` already becomes "targets", said with its
    # file and line; the file is replaced whole.
    out, at = [], 0
    for m in matches:
        old = m.group(3)
        if old.strip('"') == targets or m.start(3) < at:
            continue
        line = text.count("\n", 0, m.start(3)) + 1
        what = m.group(1).split("(")[-1].strip()
        say.choice("%s:%d: %s %s replaced by the requested targets (%s)"
                   % (os.path.relpath(path), line, what, old, targets))
        out.append(text[at:m.start(3)] + '"%s"' % targets)
        at = m.end(3)
    out.append(text[at:])
    with open(path + ".tailor-tmp", "w", errors="surrogateescape") as f:
        f.write("".join(out))
    os.replace(path + ".tailor-tmp", path)


def take_back_cmake_archs():
    # A CUDA_ARCHITECTURES property or a set(CMAKE_CUDA_ARCHITECTURES ...) written in the
    # package's CMake files gets the requested targets instead of its own list (this folder
    # is tailor's copy of the source), each capability as the arch-specific variant
    # (90a-real) where the package names that. Returns the variants, for the package's own
    # cmake calls.
    asked = os.environ.get("TAILOR_CMAKE_ARCHS")
    if not asked:
        return {}
    found = cmake_files_with_lists()
    upgrades = arch_specific([m.group(3) for _, _, ms in found for m in ms], cmake_ccs(asked))
    targets = upgraded_cmake_list(asked, upgrades)
    say.variants(upgrades)
    for path, text, matches in found:
        rewrite_lists(path, text, matches, targets)
    return upgrades


def patch_cmake_args(args, asked, upgrades):
    # One cmake command line -> (its arguments, [(needle, what changed)]): a
    # -DCMAKE_CUDA_ARCHITECTURES=... of its own gets the requested targets (`asked`, with
    # the package's variants). Its job count is jobs.take_back_command_jobs'.
    args, changed = list(args), []
    ccs = cmake_ccs(asked)
    for i, a in enumerate(args):
        a = str(a)
        own = (a.split("=", 1)[1] if a.startswith("-DCMAKE_CUDA_ARCHITECTURES") and "=" in a
               else None)
        if asked and own is not None:
            variants = dict(upgrades)
            variants.update(arch_specific([own], ccs))
            say.variants(variants)
            targets = upgraded_cmake_list(asked, variants)
            if own != targets:
                changed.append(("CMAKE_CUDA_ARCHITECTURES",
                                "cmake %s replaced by the requested targets (%s)" % (a, targets)))
            args[i] = "-DCMAKE_CUDA_ARCHITECTURES=" + targets
    return args, changed


SHELL_OPERATORS = set("|&;<>()$`\\\"'*?[#~")


def _words(args, shell):
    # The words of a command given as a list, or as one simple shell string (no operators,
    # quoting or expansions: those are left as they are); None when it is neither.
    if isinstance(args, (list, tuple)):
        return list(args)
    if isinstance(args, str) and shell and not (set(args) & SHELL_OPERATORS):
        return args.split()
    return None


def patch_package_command(args, kwargs):
    # A command the package runs itself -> its arguments, kwargs' env patched, and the
    # changes said with the package's line: the requested CMake targets, its own job
    # counts, Ninja for a CMake configure without a generator.
    words = _words(args, kwargs.get("shell"))
    if not words:
        return args
    asked = os.environ.get("TAILOR_CMAKE_ARCHS")
    changed = []
    if os.path.basename(str(words[0])) == "cmake":
        words, changed = patch_cmake_args(words, asked, _upgrades)
    words, dropped = jobs.take_back_command_jobs(words)
    changed += dropped
    env, ninja = jobs.ninja_for_configure(words, kwargs.get("env"))
    if env is not None:
        kwargs["env"] = env
    if ninja:
        source = [str(w) for w in words[1:] if not str(w).startswith("-")]
        changed.append((source[-1] if source else "cmake", "cmake configure without a generator of its own: Ninja "
                                 "(CMAKE_GENERATOR=Ninja), so its units run under the build's "
                                 "jobserver"))
    env, dropped = jobs.take_back_env_jobs(kwargs.get("env"))
    if dropped:
        kwargs["env"] = env
        changed += dropped
    for needle, text in changed:
        # The package's line: the flag as written, else its command's.
        for n in (needle, "--build" if "--build" in text else os.path.basename(str(words[0]))):
            where = say.where_in_source(n)
            if ":" in where:
                break
        say.choice("%s: %s" % (where, text))
    if not changed:
        return args
    return words if isinstance(args, (list, tuple)) else " ".join(str(w) for w in words)


_upgrades = {}


def take_back_cmake_calls(upgrades):
    # The commands a setup.py runs itself, through subprocess, patched as they start.
    import subprocess
    _upgrades.update(upgrades)
    jobs.remember()
    original_init = subprocess.Popen.__init__

    def init(self, args, *rest, **kwargs):
        args = patch_package_command(args, kwargs)
        return original_init(self, args, *rest, **kwargs)

    subprocess.Popen.__init__ = init


def ninja_generator():
    # A package's own CMake build without a generator of its choice (pybind11's cmake_example
    # template, which torch-kdtree 1.0 uses) gets CMake's default, Unix Makefiles: make runs
    # one job at a time under tailor's make shim, outside the jobserver. CMAKE_GENERATOR (read
    # by CMake 3.15+ when no -G is given) makes it Ninja, which joins the build's jobserver.
    # An explicit -G in the package's cmake call still wins. -> whether it was set.
    import shutil
    if os.environ.get("CMAKE_GENERATOR") or not shutil.which("ninja"):
        return False
    if not os.path.exists("CMakeLists.txt"):
        return False
    os.environ["CMAKE_GENERATOR"] = "Ninja"
    jobs.generator_set_by_tailor()
    say.line("CMake generator: Ninja (CMAKE_GENERATOR was unset), so the package's CMake build "
             "runs its units in parallel under the build's jobserver")
    return True
