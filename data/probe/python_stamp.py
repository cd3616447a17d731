# What a cached probe (data/probe/python_probe.py) is keyed by, without importing torch
# (tens of milliseconds): the interpreter, its prefix, where `import torch` would load
# from, and the inode, size and mtime of the files the probe's answers come from
# (version.py: versions; _C: the ABI; lib/libtorch_cuda.so, lib/libc10_cuda.so: the arch
# list). A reinstall changes them. One JSON line after the marker TAILOR_STAMP. Run by
# src/probe/python_probe.cpp as `python -c <this file>`.
import importlib.util, json, os, platform, sys
r = {"version": platform.python_version(), "executable": sys.executable, "prefix": sys.prefix,
     "path": os.environ.get("PYTHONPATH", "")}
s = importlib.util.find_spec("torch")
if s is not None and s.origin:
    d = os.path.dirname(s.origin)
    r["torch"] = d
    files = []
    for n in ["__init__.py", "version.py", "lib/libtorch_cuda.so", "lib/libc10_cuda.so"] + sorted(
            x for x in os.listdir(d) if x.startswith("_C") and x.endswith(".so")):
        try:
            st = os.stat(os.path.join(d, n))
            files.append([n, st.st_ino, st.st_size, st.st_mtime_ns])
        except OSError:
            files.append([n])
    r["files"] = files
print("TAILOR_STAMP " + json.dumps(r, sort_keys=True))
