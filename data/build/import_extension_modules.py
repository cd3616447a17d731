# Appended to the import check's code by src/workflow/extension_build.cpp and run in the check
# venv after the package's own import, with the built wheel as sys.argv[1]: imports every
# compiled extension module of the wheel by its dotted name, not only the top package, so a
# module the package does not import at its top is loaded too. A file with a Python module
# init for another name than its own (`_C;touch x.cpython-311-x86_64-linux-gnu.so`, whose
# init is PyInit__C) is no importable module: the check fails, naming it (ascii-escaped).
# A library with no Python module init at all (a torch operator library, a bundled .so) is
# left to the package, which loads it itself.
import importlib as _il, importlib.machinery as _ilm, mmap as _mm, os as _os, sys as _sys
import sysconfig as _sc, zipfile as _zf


def _tailor_extension_modules(whl):
    sfx = sorted(_ilm.EXTENSION_SUFFIXES, key=len, reverse=True)
    for n in sorted(_zf.ZipFile(whl).namelist()):
        if n.split('/')[0].endswith(('.dist-info', '.data')):
            continue
        s = next((x for x in sfx if n.endswith(x)), None)
        if s:
            yield n, n[:-len(s)].replace('/', '.')


def _tailor_inits(path, last):
    # Told from the file, not by loading it: (an init for this name, any Python init).
    if _os.path.getsize(path) == 0:
        return False, False
    with open(path, 'rb') as f, _mm.mmap(f.fileno(), 0, access=_mm.ACCESS_READ) as m:
        return m.find(b'PyInit_' + last.encode('utf-8', 'replace') + b'\0') != -1, m.find(b'PyInit_') != -1


for _n, _mod in _tailor_extension_modules(_sys.argv[1]):
    _path = _os.path.join(_sc.get_paths()['platlib'], _n)
    if not _os.path.isfile(_path):
        continue
    _own, _any = _tailor_inits(_path, _mod.split('.')[-1])
    if _own and all(p.isidentifier() for p in _mod.split('.')):
        _il.import_module(_mod)
        print('tailor: imported extension module', _mod)
    elif _any:
        print('tailor: extension module %s is not importable: its file name is no module name '
              'with a Python init of its own' % ascii(_n))
        _sys.exit(1)
