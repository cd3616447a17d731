# Prints the [build-system] of an sdist as one JSON line: {"requires": [...],
# "build_backend": "..."} (empty when the sdist has no pyproject.toml). Used by tailor
# stack to say what building a package needs: python -c SCRIPT SDIST
import json
import sys
import tarfile
import zipfile

try:
    import tomllib
except ImportError:  # Python < 3.11
    from pip._vendor import tomli as tomllib


def pyproject_text(path):
    if path.endswith(".zip"):
        with zipfile.ZipFile(path) as z:
            names = [n for n in z.namelist() if n.count("/") == 1 and n.endswith("/pyproject.toml")]
            return z.read(names[0]).decode() if names else None
    with tarfile.open(path) as t:
        for m in t.getmembers():
            if m.isfile() and m.name.count("/") == 1 and m.name.endswith("/pyproject.toml"):
                if m.size > 1 << 20:
                    return None
                return t.extractfile(m).read().decode()
    return None


text = pyproject_text(sys.argv[1])
system = tomllib.loads(text).get("build-system", {}) if text else {}
print(json.dumps({"requires": list(system.get("requires", [])), "build_backend": system.get("build-backend", "")}))
