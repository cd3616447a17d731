# A package that downloads a prebuilt wheel instead of compiling. setup.py files made from
# flash-attn's template (quant-matmul, causal-conv1d, mamba-ssm, ...) subclass bdist_wheel to
# fetch a wheel built for other targets, and compile only when <NAME>_FORCE_BUILD=TRUE or the
# download fails with an HTTP error; without a network it fails with a URLError instead and
# the build stops. Setting the variable makes the package compile, for the requested targets.
import os
import re

from . import say

# os.getenv("X_FORCE_BUILD", ...), os.environ.get("X_FORCE_BUILD"), os.environ["X_FORCE_BUILD"]
FORCE_BUILD = re.compile(r"""(?:getenv|environ\.get|environ\[)\s*\(?\s*["']([A-Z][A-Z0-9_]*_FORCE_BUILD)["']""")


def force_source_build(path="setup.py"):
    # -> the variables set. The user's own value of one (even FALSE) is left as it is.
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return []
    names = []
    for m in FORCE_BUILD.finditer(text):
        name = m.group(1)
        start = text.rfind("\n", 0, m.start()) + 1
        if name in names or name in os.environ or text[start:m.start()].lstrip().startswith("#"):
            continue
        names.append(name)
        os.environ[name] = "TRUE"
        say.choice("%s:%d: the package downloads a prebuilt wheel unless %s=TRUE; set, so it "
                   "compiles for the requested targets"
                   % (path, text.count("\n", 0, m.start()) + 1, name))
    return names
