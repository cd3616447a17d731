#!/usr/bin/env python3
"""Fails on an #include that crosses the layer order of ARCHITECTURE.md.

Each src/<module>/CMakeLists.txt names the modules it may use (tailor_module(NAME DEPS ...)).
A file of src/<module>/ may include "<other>/..." only when <other> is the module itself or
one of its DEPS. The link graph alone does not catch a header whose inline code crosses the
rule (every module's include path is the whole src/), so this reads the includes.

    scripts/check_layers.py [ROOT]     exit 0: clean; 1: one line per crossing include
"""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
src = os.path.join(root, "src")
decl = re.compile(r"tailor_module\(\s*(\w+)(?:\s+DEPS\s+([^)]*?))?(?:\s+EXTERNAL\b[^)]*)?\)", re.S)
# data is a plain library (it embeds data/ and driver/ at build time): its links, by name.
plain = re.compile(r"target_link_libraries\(\s*tailor_(\w+)\s+PUBLIC\s+([^)]*)\)", re.S)
include = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/[^"]+"', re.M)

deps = {}
for module in sorted(os.listdir(src)):
    cmake = os.path.join(src, module, "CMakeLists.txt")
    if not os.path.isfile(cmake):
        continue
    text = open(cmake, encoding="utf-8").read()
    m = decl.search(text)
    if m:
        names = (m.group(2) or "").split()
    elif p := plain.search(text):
        names = [n[len("tailor_"):] for n in p.group(2).split() if n.startswith("tailor_")]
    else:
        print(f"check_layers: {cmake}: neither tailor_module(NAME DEPS ...) nor target_link_libraries", file=sys.stderr)
        sys.exit(2)
    # cli builds its list in a loop (`${cli_deps}`): it may use every module.
    deps[module] = None if any(n.startswith("${") for n in names) else set(names)

bad = 0
for module, allowed in sorted(deps.items()):
    if allowed is None:
        continue
    for dirpath, _, files in os.walk(os.path.join(src, module)):
        for f in sorted(files):
            if not f.endswith((".h", ".cpp")):
                continue
            path = os.path.join(dirpath, f)
            text = open(path, encoding="utf-8").read()
            for m in include.finditer(text):
                target = m.group(1)
                if target == module or target in allowed or target not in deps:
                    continue
                line = text.count("\n", 0, m.start()) + 1
                rel = os.path.relpath(path, root)
                print(f"{rel}:{line}: {module} includes {target}/ (allowed: {' '.join(sorted(allowed)) or 'none'})")
                bad += 1
if bad:
    print(f"check_layers: {bad} include(s) against the layer order", file=sys.stderr)
    sys.exit(1)
print(f"check_layers: {len(deps)} modules, every include follows the layer order")
