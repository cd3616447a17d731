# Unpacks an sdist (.tar.gz, .tgz, .tar.bz2, .tar.xz or .zip) into a folder, bounded, and
# never outside it. Run by src/source/extension_source.cpp as
#   python -c <this> ARCHIVE DEST MAX_BYTES MAX_MEMBERS
# Exit 0: unpacked. Exit 2: the archive is refused, one line on stderr says which member
# and why (a name outside the folder, a link whose target leaves it, a device, more than
# MAX_BYTES unpacked or MAX_MEMBERS members). Exit 1: it cannot be read (one line too).
# Regular files, folders and links inside the tree only; a hard link becomes a copy; the
# members' times are kept. Names in messages are ascii()-escaped: no control characters.
import os
import stat
import sys
import tarfile
import zipfile

archive, dest, max_bytes, max_members = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
root = os.path.realpath(dest)
written = 0
members = 0
times = []


def show(name):
    return ascii(name)[1:-1]


def refuse(why):
    sys.stderr.write(why + "\n")
    sys.exit(2)


def inside(path):
    real = os.path.realpath(path)
    return real == root or real.startswith(root + os.sep)


def resolve(name, what="would be written"):
    """The path of the member `name`, refused when it leaves the folder."""
    norm = os.path.normpath(name)
    if not name or name.startswith("/") or norm == ".." or norm.startswith("../") or "\0" in name:
        refuse("member '%s' %s outside the source folder: refused" % (show(name), what))
    path = os.path.join(root, norm)
    if not inside(os.path.dirname(path)):
        refuse("member '%s' %s outside the source folder (through a link): refused"
               % (show(name), what))
    return path


def place(name):
    """resolve(name), counted, its folder made and an older entry of that name gone."""
    global members
    members += 1
    if members > max_members:
        refuse("more than %d members: refused (an unpack bomb?)" % max_members)
    path = resolve(name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.lexists(path) and not os.path.isdir(path):
        os.unlink(path)
    return path


def count(size, name):
    global written
    written += size
    if written > max_bytes:
        refuse("unpacks to more than %d MiB (at member '%s'): refused (an unpack bomb?)"
               % (max_bytes >> 20, show(name)))


def copy(src, path, size, name, mode):
    left = size
    with open(path, "wb") as out:
        while left > 0:
            chunk = src.read(min(left, 1 << 20))
            if not chunk:
                break
            left -= len(chunk)
            out.write(chunk)
    os.chmod(path, 0o755 if mode & 0o111 else 0o644)


def link(name, path, target):
    where = os.path.normpath(os.path.join(os.path.dirname(name), target))
    if target.startswith("/") or where == ".." or where.startswith("../"):
        refuse("member '%s' is a link to '%s', outside the source tree: refused (a wheel would "
               "carry the build machine's file)" % (show(name), show(target)))
    os.symlink(target, path)
    if not inside(path):
        os.unlink(path)
        refuse("member '%s' is a link to '%s', which leaves the source tree: refused"
               % (show(name), show(target)))


def unpack_tar():
    with tarfile.open(archive, "r:*") as tar:
        for m in tar:
            path = place(m.name)
            if m.isdir():
                os.makedirs(path, exist_ok=True)
            elif m.isreg():
                count(m.size, m.name)
                copy(tar.extractfile(m), path, m.size, m.name, m.mode)
            elif m.issym():
                link(m.name, path, m.linkname)
                continue
            elif m.islnk():
                source = resolve(m.linkname, "links to a place")
                if not os.path.isfile(source) or os.path.islink(source):
                    refuse("member '%s' is a hard link to '%s', which is no earlier file of the "
                           "archive: refused" % (show(m.name), show(m.linkname)))
                size = os.path.getsize(source)
                count(size, m.name)
                with open(source, "rb") as src:
                    copy(src, path, size, m.name, os.stat(source).st_mode)
            else:
                refuse("member '%s' is a device or a fifo: refused" % show(m.name))
            times.append((path, m.mtime))


def unpack_zip():
    with zipfile.ZipFile(archive) as z:
        for info in z.infolist():
            path = place(info.filename)
            mode = info.external_attr >> 16
            if info.is_dir():
                os.makedirs(path, exist_ok=True)
                continue
            if stat.S_ISLNK(mode):
                if info.file_size > 4096:
                    refuse("member '%s': a link target of %d bytes: refused"
                           % (show(info.filename), info.file_size))
                link(info.filename, path, z.read(info).decode("utf-8", "replace"))
                continue
            count(info.file_size, info.filename)
            with z.open(info) as src:
                copy(src, path, info.file_size, info.filename, mode)
            times.append((path, __import__("time").mktime(info.date_time + (0, 0, -1))))


os.makedirs(root, exist_ok=True)
try:
    if archive.endswith(".zip"):
        unpack_zip()
    else:
        unpack_tar()
    for path, mtime in reversed(times):
        os.utime(path, (mtime, mtime), follow_symlinks=False)
except SystemExit:
    raise
except (OSError, EOFError, ValueError, tarfile.TarError, zipfile.BadZipFile) as e:
    sys.stderr.write("cannot unpack: %s\n" % show(str(e)))
    sys.exit(1)
