"""Writes a small wheel for the e2e tests from files on disk.

    python3 make_wheel.py [--stored] [--bad-hash] OUT FILE:ARC...

Name, version and tag come from OUT's file name (NAME-VERSION-PY-ABI-PLATFORM.whl); each
FILE is stored as member ARC (the last ':' splits them), then the .dist-info's WHEEL,
METADATA and a RECORD with every member's sha256 and size. Libraries (*.so, *.so.N) get
mode 0755, the rest 0644. --stored writes the members uncompressed (default: deflate);
--bad-hash gives the first member a wrong sha256 in RECORD.
"""
import argparse
import base64
import hashlib
import os
import re
import zipfile


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--stored", action="store_true", help="members uncompressed")
    p.add_argument("--bad-hash", action="store_true", help="a wrong sha256 for the first member")
    p.add_argument("out")
    p.add_argument("members", nargs="+", metavar="FILE:ARC")
    a = p.parse_args()
    parts = os.path.basename(a.out)[: -len(".whl")].split("-")
    if not a.out.endswith(".whl") or len(parts) != 5:
        p.error(f"{a.out}: not NAME-VERSION-PY-ABI-PLATFORM.whl")
    name, version, tag = parts[0], parts[1], "-".join(parts[2:])
    di = f"{name}-{version}.dist-info"
    files = {}
    for pair in a.members:
        src, sep, arc = pair.rpartition(":")
        if not sep or not src or not arc:
            p.error(f"'{pair}' is not FILE:ARC")
        with open(src, "rb") as f:
            files[arc] = f.read()
    files[f"{di}/WHEEL"] = f"Wheel-Version: 1.0\nGenerator: e2e\nRoot-Is-Purelib: false\nTag: {tag}\n".encode()
    files[f"{di}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
    rows = []
    for arc, data in files.items():
        h = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode().rstrip("=")
        rows.append(f"{arc},sha256={h},{len(data)}")
    if a.bad_hash:
        arc, _, size = rows[0].split(",")
        rows[0] = f"{arc},sha256={'B' * 43},{size}"
    rows.append(f"{di}/RECORD,,")
    files[f"{di}/RECORD"] = ("\n".join(rows) + "\n").encode()
    compression = zipfile.ZIP_STORED if a.stored else zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(a.out, "w", compression) as z:
        for arc, data in files.items():
            info = zipfile.ZipInfo(arc)
            info.external_attr = (0o755 if re.search(r"\.so(\.\d+)*$", arc) else 0o644) << 16
            info.compress_type = compression
            z.writestr(info, data)


if __name__ == "__main__":
    main()
