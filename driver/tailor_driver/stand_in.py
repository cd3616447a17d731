# TAILOR_STAND_IN_GPU=M.m: this machine has no GPU and the build is for CUDA targets, the
# highest of them M.m. A setup.py that asks torch.cuda whether it may build CUDA code
# (warp-rnnt 0.7.0 raises "CPU version is not implemented" without a GPU) is answered as
# by one GPU of that target: is_available, device_count, get_device_capability,
# get_device_name. Anything that really uses a GPU still fails as before. torch is
# imported only for a setup.py that asks.
import os
import re

from . import say

ASKS = re.compile(r"cuda\.(is_available|device_count|get_device_capability|get_device_name)\b")


def stand_in_gpu():
    cc = re.fullmatch(r"(\d+)\.(\d+)", os.environ.get("TAILOR_STAND_IN_GPU", ""))
    if not cc or not os.path.exists("setup.py"):
        return
    with open("setup.py", errors="replace") as f:
        text = f.read()
    if not ASKS.search(text):
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
    say.line("no GPU here; while the package builds, torch.cuda answers as one GPU of "
             "sm_%d%d (the highest target): the package's setup.py asks it" % (major, minor))
