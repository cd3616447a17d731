# Run in the check venv as `python -c <this file> WHEEL MISSING [--recipe-knows]` when importing
# the package failed on the module MISSING: exit 3 when MISSING is a module of the wheel
# itself (then the wheel is broken, not the environment), exit 4 when no Requires-Dist of
# the wheel's METADATA names it (py-cpuinfo provides cpuinfo: a name that contains it
# counts; so does a distribution of `provides`, whose name does not contain its module's:
# scikit-image provides skimage) and the caller did not pass --recipe-knows (MISSING is in the recipe's
# undeclared_requires: the package imports it without declaring it); otherwise load every compiled extension module of the
# wheel straight from its file, without importing the package around it, and print
# "loaded NAME" for each (exit 1 at the first that fails). A shared library with no Python
# module init is a torch operator library (PyG's _convert_cuda.so): loaded as the package
# loads it, with torch.ops.load_library. Run by src/workflow/extension_build.cpp.
import sys, zipfile, sysconfig, os, importlib.util, importlib.machinery
whl, missing, recipe_knows = sys.argv[1], sys.argv[2], sys.argv[3:] == ['--recipe-knows']
names = zipfile.ZipFile(whl).namelist()
def top(n): return n.split('/')[0].split('.')[0]
own = {top(n) for n in names if not n.split('/')[0].endswith(('.dist-info', '.data'))}
if missing.split('.')[0] in own:
    print('the wheel itself lacks', missing); sys.exit(3)
import re
norm = lambda x: re.sub(r'[-_.]+', '_', x).lower()
meta = next((n for n in names if n.count('/') == 1 and n.endswith('.dist-info/METADATA')), None)
reqs = []
if meta:
    for line in zipfile.ZipFile(whl).read(meta).decode('utf-8', 'replace').splitlines():
        if line.startswith('Requires-Dist:'):
            r = re.match(r'\s*([A-Za-z0-9._-]+)', line[len('Requires-Dist:'):])
            if r: reqs.append(norm(r.group(1)))
# Distributions whose name does not contain the module they provide (normalised names).
provides = {'skimage': ('scikit_image',), 'sklearn': ('scikit_learn',), 'bs4': ('beautifulsoup4',),
            'cv2': ('opencv_python', 'opencv_python_headless', 'opencv_contrib_python',
                    'opencv_contrib_python_headless')}
want = norm(missing.split('.')[0])
declared = any(want == r or want in r or r in provides.get(want, ()) for r in reqs)
if not declared and not recipe_knows:
    print(missing, 'is not a declared dependency of the wheel (Requires-Dist:', ', '.join(reqs) or 'none', ')'); sys.exit(4)
import torch
site = sysconfig.get_paths()['platlib']
sfx = sorted(importlib.machinery.EXTENSION_SUFFIXES, key=len, reverse=True)
import mmap
def has_python_init(path, name):
    # Told from the file, not by loading it: dlopen runs the library's static
    # initialisers, which register a torch operator library's operators.
    if os.path.getsize(path) == 0: return False
    with open(path, 'rb') as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        return m.find(b'PyInit_' + name.encode() + b'\0') != -1
ops = []  # torch operator libraries: no Python module init
for n in sorted(names):
    if n.split('/')[0].endswith(('.dist-info', '.data')): continue
    s = next((x for x in sfx if n.endswith(x)), None)
    if s is None: continue
    mod = n[:-len(s)].replace('/', '.')
    path = os.path.join(site, n)
    if not has_python_init(path, mod.split('.')[-1]):
        ops.append((mod, n))
        continue
    spec = importlib.util.spec_from_file_location(mod, path)
    m = importlib.util.module_from_spec(spec)
    sys.modules[mod] = m
    spec.loader.exec_module(m)
    print('loaded', mod)
# A package that ships one operator library per device loads one of each pair, the CUDA
# one when it is there (PyG: _convert_cuda, else _convert_cpu): both register the same
# operators, and a second registration aborts the process.
have = {mod for mod, _ in ops}
for mod, n in ops:
    if mod.endswith('_cpu') and mod[:-len('_cpu')] + '_cuda' in have:
        print('skipped', mod, '(its _cuda library registers the same operators)')
        continue
    torch.ops.load_library(os.path.join(site, n))
    print('loaded', mod, '(torch operator library)')
