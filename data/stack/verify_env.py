# Verifies an environment tailor stack installed: every distribution imports (its
# top-level modules, from top_level.txt or RECORD), torch reports its CUDA and arch list,
# and on a GPU a small kernel runs. Prints one JSON document. python -c SCRIPT NAME...
import importlib
import importlib.metadata as md
import json
import sys
import traceback


def top_level(dist):
    text = dist.read_text("top_level.txt")
    if text:
        return sorted({t.strip() for t in text.split() if t.strip() and not t.startswith("_")})
    names = set()
    for f in dist.files or []:
        parts = f.parts
        if not parts or parts[0].endswith((".dist-info", ".data")) or parts[0] in ("..", "bin"):
            continue
        if len(parts) > 1 and (parts[1] == "__init__.py"):
            names.add(parts[0])
        elif len(parts) == 1 and parts[0].endswith(".py"):
            names.add(parts[0][:-3])
        elif len(parts) == 1 and parts[0].endswith(".so"):
            names.add(parts[0].split(".")[0])
    return sorted(n for n in names if n.isidentifier() and not n.startswith("_"))


result = {"imports": [], "torch": None, "gpu": None}
for name in sys.argv[1:]:
    try:
        dist = md.distribution(name)
    except md.PackageNotFoundError:
        result["imports"].append({"dist": name, "module": "", "ok": False, "error": "not installed"})
        continue
    modules = top_level(dist)
    if not modules:
        result["imports"].append({"dist": name, "module": "", "ok": True, "error": "no top-level module (data only)"})
    for module in modules:
        try:
            importlib.import_module(module)
            result["imports"].append({"dist": name, "module": module, "ok": True, "error": ""})
        except BaseException as e:  # noqa: BLE001 - an import may raise anything
            last = traceback.format_exception_only(type(e), e)[-1].strip()
            result["imports"].append({"dist": name, "module": module, "ok": False, "error": last})
try:
    import torch

    arch = []
    if torch.version.cuda:
        # get_arch_list() is [] without a GPU; the compiled-in list is in _cuda_getArchFlags.
        arch = list(torch.cuda.get_arch_list())
        flags = getattr(torch._C, "_cuda_getArchFlags", None)
        if not arch and flags:
            arch = (flags() or "").split()
    result["torch"] = {"version": torch.__version__, "cuda": torch.version.cuda or "", "arch_list": arch}
    if torch.cuda.is_available():
        cap = torch.cuda.get_device_capability(0)
        a = torch.randn(256, 256, device="cuda")
        ok = bool(torch.allclose((a @ a).cpu(), a.cpu() @ a.cpu(), rtol=1e-2, atol=1e-2))
        result["gpu"] = {"name": torch.cuda.get_device_name(0), "cc": f"{cap[0]}.{cap[1]}", "matmul": ok}
except BaseException as e:  # noqa: BLE001
    result["torch_error"] = traceback.format_exception_only(type(e), e)[-1].strip()
print(json.dumps(result))
