# The versions of the distributions named as arguments in this interpreter, as one JSON
# object (null: not installed). Run by src/workflow/torch_build.cpp as
# `python -c <this file> NAME...`.
import json, sys
from importlib import metadata
out = {}
for name in sys.argv[1:]:
    try:
        out[name] = metadata.version(name)
    except Exception:
        out[name] = None
print(json.dumps(out))
