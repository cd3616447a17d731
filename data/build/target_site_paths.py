# The target interpreter's site folders and what their .pth files add to its path, one
# folder a line, in sys.path order. When the target Python is itself a venv, a venv made
# with --system-site-packages sees the base interpreter's, not these: the import check
# hands them to its venv (data/build/venv_add_paths.py). Run by
# src/workflow/extension_build.cpp.
import site, sys
s = site.getsitepackages()
i = min([sys.path.index(p) for p in s if p in sys.path] or [len(sys.path)])
print('\n'.join(p for p in sys.path[i:] if p))
