"""Lays out a PEP 503 package index for tests/e2e/stack.sh.

Wheels are made here from the CUDA fixtures (real nvcc output): kern75 (sm_75 only),
kern90 (sm_90 only), kernptx (sm_80 + compute_80 PTX) and kernmulti (sm_75, and a second
build for CUDA 11 that links libcudart.so.11.0); a pure-Python wheel (purepkg, which
depends on kern75); and the sdist of a CUDA extension package (no wheel): the test
fixture tests/e2e/data/tiny_ext.

python3 stack_index.py OUT FIXTURE_DIR PACKAGE_DIR
"""
import base64
import hashlib
import html
import os
import shutil
import subprocess
import sys
import zipfile

out, fixtures, package = (os.path.abspath(a) for a in sys.argv[1:4])
files = os.path.join(out, "files")
os.makedirs(files, exist_ok=True)
tag = "py3-none-linux_x86_64"


def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def make_wheel(dist, version, members, requires=(), purelib=False, platform_tag=None):
    wheel_tag = "py3-none-any" if purelib else (platform_tag or tag)
    info = f"{dist}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires
    )
    wheel = f"Wheel-Version: 1.0\nGenerator: tailor-test\nRoot-Is-Purelib: {'true' if purelib else 'false'}\nTag: {wheel_tag}\n"
    members = dict(members)
    members[f"{info}/METADATA"] = metadata.encode()
    members[f"{info}/WHEEL"] = wheel.encode()
    record = [record_line(n, d) for n, d in members.items()] + [f"{info}/RECORD,,"]
    members[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    path = os.path.join(files, f"{dist}-{version}-{wheel_tag}.whl")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in members.items():
            z.writestr(n, d)
    return path


def loader(module, libs):
    lines = ["import ctypes, os", "_here = os.path.dirname(__file__)"]
    for lib in libs:
        lines.append(f"ctypes.CDLL(os.path.join(_here, {lib!r}))")
    return ("\n".join(lines) + "\n").encode()


def read(name):
    with open(os.path.join(fixtures, name), "rb") as f:
        return f.read()


make_wheel("kern75", "1.0", {"kern75/__init__.py": loader("kern75", ["_k.so"]), "kern75/_k.so": read("only_75.so")})
make_wheel("kern90", "1.0", {"kern90/__init__.py": b"", "kern90/_k.so": read("only_90.so")})
make_wheel("kernptx", "1.0", {"kernptx/__init__.py": b"", "kernptx/_k.so": read("sass_ptx_80.so")})
make_wheel(
    "kernmulti",
    "1.0",
    {"kernmulti/__init__.py": b"", "kernmulti/_k_cuda13.so": read("only_75.so"), "kernmulti/_k_cuda11.so": read("cuda11.so")},
)
make_wheel("purepkg", "1.0", {"purepkg/__init__.py": b"VALUE = 42\n"}, requires=["kern75>=1.0"], purelib=True)

# A hostile file: a wheel cut off in the middle.
with open(make_wheel("broken", "1.0", {"broken/_k.so": read("only_75.so")}), "r+b") as f:
    f.truncate(4096)

# A torch in the PyTorch index's style, for an aarch64 target: the CUDA 13.0 build (its
# coverage comes from the official arch list in tailor's data, not from its bytes).
make_wheel("torch", "2.11.0+cu130", {"torch/__init__.py": b""}, platform_tag="py3-none-manylinux_2_28_aarch64")
# A torch for x86_64 built for a CUDA tailor's data has no arch list for (19.9): its
# coverage is unknown until its own libraries are inspected.
make_wheel("torch", "2.99.0+cu199", {"torch/__init__.py": b""}, platform_tag="py3-none-manylinux_2_28_x86_64")

# A torch from the default index's style: no +cuNNN label, its CUDA stated only by the NVIDIA
# libraries its METADATA requires (CUDA 13 by nvidia-cudnn-cu13's name: the issue's 2.12.1);
# and a package that needs exactly it.
make_wheel("nvidia_cudnn_cu13", "9.13.0.50", {"nvidia/cudnn/__init__.py": b""}, purelib=True)
make_wheel("torch", "2.12.1", {"torch/__init__.py": b""}, requires=["nvidia-cudnn-cu13==9.13.0.50"],
           platform_tag="py3-none-manylinux_2_28_x86_64")
make_wheel("needstorch", "1.0", {"needstorch/__init__.py": b""}, requires=["torch==2.12.1"], purelib=True)
# The release this machine's torch is (2.11.0), as the default index has it: no label, CUDA
# 13.0 by the runtime its METADATA requires; a tailor wheel built with 2.11.0+cu130 is for it.
make_wheel("nvidia_cuda_runtime", "13.0.96", {"nvidia/cuda_runtime/__init__.py": b""}, purelib=True)
make_wheel("torch", "2.11.0", {"torch/__init__.py": b""}, requires=["nvidia-cuda-runtime==13.0.96"],
           platform_tag="py3-none-manylinux_2_28_x86_64")

# The package's sdist (its setup.py imports torch, as CUDA extensions' do).
work = os.path.join(out, "package")
shutil.copytree(package, work, ignore=shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__"))
subprocess.run([sys.executable, "setup.py", "-q", "sdist", "-d", files], cwd=work, check=True, capture_output=True)
shutil.rmtree(work)

# PEP 503: /simple/<normalised name>/ lists the files with their sha256.
simple = os.path.join(out, "simple")
projects = {}
for f in sorted(os.listdir(files)):
    name = f.split("-")[0].lower().replace("_", "-")
    projects.setdefault(name, []).append(f)
os.makedirs(simple, exist_ok=True)
with open(os.path.join(simple, "index.html"), "w") as idx:
    idx.write("<!DOCTYPE html><html><body>\n")
    for name, names in projects.items():
        idx.write(f'<a href="{name}/">{name}</a>\n')
        os.makedirs(os.path.join(simple, name), exist_ok=True)
        with open(os.path.join(simple, name, "index.html"), "w") as page:
            page.write("<!DOCTYPE html><html><body>\n")
            for f in names:
                with open(os.path.join(files, f), "rb") as fh:
                    digest = hashlib.sha256(fh.read()).hexdigest()
                page.write(f'<a href="../../files/{html.escape(f)}#sha256={digest}">{html.escape(f)}</a>\n')
            page.write("</body></html>\n")
    idx.write("</body></html>\n")
print("\n".join(sorted(os.listdir(files))))
