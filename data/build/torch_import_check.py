# The torch a fresh venv imports: version, file, CUDA and arch list as one JSON object.
# Run by src/workflow/torch_build.cpp after the built wheel is installed.
import json, os, sys
import torch
info = {"version": torch.__version__, "file": torch.__file__,
        "cuda": getattr(torch.version, "cuda", None),
        "arch_list": torch.cuda.get_arch_list() if hasattr(torch.cuda, "get_arch_list") else []}
print(json.dumps(info))
