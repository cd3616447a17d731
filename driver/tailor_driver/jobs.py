# The package's own parallelism gives way to tailor's (a package without a recipe): a job
# count in the build commands its setup.py runs itself (`cmake --build -j N`, `--parallel N`,
# `make -jN`, a MAX_JOBS in the environment it hands them) is dropped when the build has
# tailor's jobserver (MAKEFLAGS --jobserver-auth: Ninja and make then take their jobs from
# it), else replaced by tailor's count (MAX_JOBS as tailor started the build). A CMake
# configure without a generator of the package's choice runs with CMAKE_GENERATOR=Ninja in
# the environment it really gets, so its build joins the jobserver instead of one make.
import os
import re
import shutil

JOBSERVER = re.compile(r"--jobserver-auth=fifo:\S+")
# -j, -jN, -j=N, --parallel, --parallel=N, --jobs, --jobs=N
JOB_FLAG = re.compile(r"^(?:-j(?:=?\d*)|--parallel(?:=\d*)?|--jobs(?:=\d*)?)$")

_tailor_jobs = None  # MAX_JOBS as tailor started the build (set by remember())
_generator_by_tailor = False  # CMAKE_GENERATOR=Ninja is tailor's (cmake.ninja_generator)


def generator_set_by_tailor():
    global _generator_by_tailor
    _generator_by_tailor = True


def remember():
    # Called before the package's own code runs: tailor's count, kept from its changes.
    global _tailor_jobs
    _tailor_jobs = os.environ.get("MAX_JOBS")


def jobserver():
    return bool(JOBSERVER.search(os.environ.get("MAKEFLAGS", "")))


def tailor_count():
    # The count a package's command gets instead of its own; None: the jobserver decides.
    return None if jobserver() else _tailor_jobs


def _drop_job_flags(args, start):
    # -> (args without the job flags at or after `start`, [the flags as written]).
    out, dropped, i = list(args[:start]), [], start
    while i < len(args):
        a = str(args[i])
        if JOB_FLAG.match(a):
            bare = a in ("-j", "--parallel", "--jobs")
            if bare and i + 1 < len(args) and str(args[i + 1]).isdigit():
                dropped.append(a + " " + str(args[i + 1]))
                i += 2
                continue
            dropped.append(a)
            i += 1
            continue
        out.append(args[i])
        i += 1
    return out, dropped


def _tool(args):
    return os.path.basename(str(args[0])) if args else ""


def take_back_command_jobs(args):
    # One command of the package -> (its arguments, [(needle, what changed)]): the job
    # count of `cmake --build` (its own and the native tool's after `--`) and of make.
    tool = _tool(args)
    if tool == "cmake" and "--build" in [str(a) for a in args]:
        start = [str(a) for a in args].index("--build") + 2
        args, dropped = _drop_job_flags(args, start)
        count = tailor_count()
        if dropped and count:
            args.insert(start, "--parallel")
            args.insert(start + 1, count)
        what = "cmake --build"
    elif tool in ("make", "gmake"):
        args, dropped = _drop_job_flags(args, 1)
        count = tailor_count()
        if dropped and count:
            args.insert(1, "-j" + count)
        what = tool
    else:
        return args, []
    count = tailor_count()
    if count is not None and dropped == ["-j" + count]:
        return args, []  # tailor's own count already
    instead = ("tailor's jobserver decides" if jobserver()
               else "tailor's job count (%s) stands" % count if count
               else "tailor's job count stands")
    return args, [(d.split(" ")[0], "%s %s dropped: %s" % (what, d, instead)) for d in dropped]


def take_back_env_jobs(env):
    # The environment a package hands its command (env=...) -> (the env to use, [(needle,
    # what changed)]): a MAX_JOBS of its own gives way to tailor's, or goes under the
    # jobserver when tailor set none. (One the package sets in os.environ is choices'.)
    if not isinstance(env, dict) or "MAX_JOBS" not in env or env["MAX_JOBS"] == _tailor_jobs:
        return env, []
    own, env = env["MAX_JOBS"], dict(env)
    if _tailor_jobs is None:
        del env["MAX_JOBS"]
        instead = "tailor's jobserver decides"
    else:
        env["MAX_JOBS"] = _tailor_jobs
        instead = "tailor's job count (%s) stands" % _tailor_jobs
    return env, [("MAX_JOBS", "MAX_JOBS=%s in the environment of a command it runs: %s"
                  % (own, instead))]


def is_cmake_configure(args):
    # `cmake [options] <source or build folder>`: not --build, --install, -E, -P or --version.
    words = [str(a) for a in args]
    if _tool(words) != "cmake":
        return False
    return not any(w in ("--build", "--install", "-E", "-P", "--version", "--help", "--open")
                   or w.startswith("--build=") for w in words[1:])


def has_generator(args):
    return any(str(a) == "-G" or str(a).startswith("-G") for a in args[1:])


def ninja_for_configure(args, env):
    # A cmake configure with no -G: CMAKE_GENERATOR=Ninja in the environment that call really
    # gets (an env= of the package's own included), unless the package named a generator.
    # -> the new env (or None: os.environ as it is), and whether Ninja was set.
    if not is_cmake_configure(args) or has_generator(args) or not shutil.which("ninja"):
        return env, False
    target = env if isinstance(env, dict) else os.environ
    own = target.get("CMAKE_GENERATOR")
    if own and not (own == "Ninja" and _generator_by_tailor):
        return env, False  # the package's (or the user's) generator
    if isinstance(env, dict):
        env = dict(env)
        env["CMAKE_GENERATOR"] = "Ninja"
        return env, True
    os.environ["CMAKE_GENERATOR"] = "Ninja"
    return env, True
