# tailor's build driver: the PEP 517 backend call that builds a package's wheel and what it
# changes around that call (tailor-build-wheel.py runs it):
#   backend     the backend named by pyproject.toml (else setuptools' legacy one), called once
#   say         the events tailor reads (data/driver/events.toml) and the log's lines
#   targets     nvcc target options and the target lists of torch and CMake
#   choices     the package's own build choices taken back (Ninja, targets, MAX_JOBS)
#   cmake       CMake target lists in the package's files and its own cmake calls
#   stand_in    torch.cuda answered as one GPU on a machine without one
#   cross       torch.utils.cpp_extension pointed at the target torch of a cross build
#   ninja_syntax, ninja_merge   torch's per-module build.ninja read and merged into one
#   schedule    unit times, the order units start in, the units split on their own
#   tokens, package_ninja, modules_at_once   every module of a package built at once
# Only the order in which compile units start changes, never a command or an edge's
# inputs: the wheel's bytes are those of the package's own build.
