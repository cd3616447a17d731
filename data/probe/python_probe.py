# What one Python interpreter is and the torch it would build against, as one JSON line
# after the marker TAILOR_PROBE (site hooks may print before it). Run by
# src/probe/python_probe.cpp as `python -c <this file>`.
# torch.cuda.get_arch_list() is [] without a GPU on some versions; the compiled-in list
# is then read from torch._C._cuda_getArchFlags().
import json, platform, sys
r = {"version": platform.python_version(), "executable": sys.executable}
try:
    import torch
    t = {"version": torch.__version__, "cuda": torch.version.cuda, "path": torch.__path__[0]}
    a = []
    try:
        a = list(torch.cuda.get_arch_list())
    except Exception:
        pass
    if not a:
        f = getattr(torch._C, "_cuda_getArchFlags", None)
        if f is not None:
            a = (f() or "").split()
    t["arch_list"] = a
    t["cxx11_abi"] = getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", None)
    r["torch"] = t
except Exception as e:
    r["torch_error"] = type(e).__name__ + ": " + str(e)
print("TAILOR_PROBE " + json.dumps(r))
