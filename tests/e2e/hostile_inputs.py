#!/usr/bin/env python3
"""Hostile inputs for every command that reads user files, made here in a temporary folder:
ELF files whose sections, DT_NEEDED entries, version needs or fatbin identifiers all name
one long string; fatbin payloads declaring huge sizes; FIFOs, devices, files of zeros,
unreadable files and empty folders. Each run of tailor must end with exit 1 or 2, exactly
one `tailor: error:` line on stderr, nothing on stdout, nothing written, and (unless the
binary is sanitized) a peak RSS under 128 MB with a 1 GiB address-space limit. A hang is
caught by a generous guard; wall times and RSS are printed, not asserted.

Usage: hostile_inputs.py TAILOR
"""
import json
import os
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import time

TAILOR = os.path.abspath(sys.argv[1])
RSS_LIMIT_KB = 128 * 1024
HANG_GUARD_S = float(os.environ.get("HOSTILE_GUARD_S", "30"))
SANITIZED = b"__asan_init" in open(TAILOR, "rb").read()
# HOSTILE_AS_LIMIT_MB raises the address-space limit, to measure an old binary's real peak RSS.
AS_LIMIT = 0 if SANITIZED else int(os.environ.get("HOSTILE_AS_LIMIT_MB", "1024")) << 20
IS_ROOT = os.geteuid() == 0
failures = []


# ---------------------------------------------------------------- ELF building
def strtab(names):
    t, idx = b"\0", []
    for n in names:
        idx.append(len(t))
        t += n + b"\0"
    return t, idx


class Elf:
    def __init__(self):
        self.body = bytearray(64)
        self.sections = []  # (name, type, offset, size, link, info)

    def add(self, data):
        while len(self.body) % 8:
            self.body.append(0)
        at = len(self.body)
        self.body += data
        return at

    def section(self, name, typ, off, size, link=0, info=0):
        self.sections.append((name, typ, off, size, link, info))
        return len(self.sections)

    def sections_repeated(self, count, entry):
        self.sections.extend([entry] * count)

    def build(self, shstrndx):
        out = bytearray(self.body)
        while len(out) % 8:
            out.append(0)
        shoff = len(out)
        count = len(self.sections) + 1
        out += bytes(64)  # section 0
        packed = {}
        for s in self.sections:
            h = packed.get(s)
            if h is None:
                h = packed[s] = struct.pack("<IIQQQQIIQQ", s[0], s[1], 0, 0, s[2], s[3], s[4], s[5], 1, 0)
            out += h
        out[0:7] = b"\x7fELF\x02\x01\x01"
        struct.pack_into("<HHI", out, 0x10, 3, 62, 1)
        struct.pack_into("<Q", out, 0x28, shoff)
        struct.pack_into("<HH", out, 0x34, 64, 0)
        struct.pack_into("<H", out, 0x3A, 64)
        if count < 0xFF00:
            struct.pack_into("<H", out, 0x3C, count)
        else:
            struct.pack_into("<H", out, 0x3C, 0)
            struct.pack_into("<Q", out, shoff + 32, count)
        struct.pack_into("<H", out, 0x3E, shstrndx)
        return bytes(out)


def many_sections(count, name_len):
    e = Elf()
    names, idx = strtab([b".shstrtab", b"S" * name_len])
    at = e.add(names)
    shstr = e.section(idx[0], 3, at, len(names))
    e.sections_repeated(count, (idx[1], 1, 0, 0, 0, 0))
    return e.build(shstr)


def with_needed(names, count):
    e = Elf()
    shn, idx = strtab([b".shstrtab", b".dynstr", b".dynamic"])
    dstr, didx = strtab(names)
    dyn = b"".join(struct.pack("<qQ", 1, didx[i % len(didx)]) for i in range(count)) + bytes(16)
    a, b, c = e.add(shn), e.add(dstr), e.add(dyn)
    shstr = e.section(idx[0], 3, a, len(shn))
    s = e.section(idx[1], 3, b, len(dstr))
    e.section(idx[2], 6, c, len(dyn), s)
    return e.build(shstr)


def many_version_needs(count, name_len):
    e = Elf()
    shn, idx = strtab([b".shstrtab", b".dynstr", b".gnu.version_r"])
    strs, sidx = strtab([b"libc.so.6", b"GLIBC_" + b"9" * name_len])
    vr = struct.pack("<HHIII", 1, count, sidx[0], 16, 0)
    vr += b"".join(struct.pack("<IHHII", 0, 0, 0, sidx[1], 16 if i + 1 < count else 0) for i in range(count))
    a, b, c = e.add(shn), e.add(strs), e.add(vr)
    shstr = e.section(idx[0], 3, a, len(shn))
    s = e.section(idx[1], 3, b, len(strs))
    e.section(idx[2], 0x6FFFFFFE, c, len(vr), s, 1)
    return e.build(shstr)


def entry_header(kind, stored, arch, name_off=0, name_len=0, flags=0, compressed=0, declared=0):
    h = bytearray(64)
    struct.pack_into("<HHIQI", h, 0, kind, 0x101, 64, stored, compressed)
    struct.pack_into("<III", h, 0x1C, arch, name_off, name_len)
    struct.pack_into("<Q", h, 0x28, flags)
    struct.pack_into("<Q", h, 0x38, declared)
    return bytes(h)


def container(body):
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body


def fatbin_identifiers(entries, id_len):
    body = bytearray()
    id_at = entries * 64
    for i in range(entries):
        last = i + 1 == entries
        body += entry_header(2, id_len if last else 0, 80, id_at - i * 64, id_len)
    body += b"I" * id_len
    return container(bytes(body))


def with_fatbin(section, copies=1):
    e = Elf()
    shn, idx = strtab([b".shstrtab", b".nv_fatbin"])
    a, f = e.add(shn), e.add(section)
    shstr = e.section(idx[0], 3, a, len(shn))
    e.sections_repeated(copies, (idx[1], 1, f, len(section), 0, 0))
    return e.build(shstr)


def one_entry(payload, flags, declared):
    pad = (-len(payload)) % 8
    return container(entry_header(2, len(payload) + pad, 90, flags=flags, compressed=len(payload), declared=declared)
                     + payload + bytes(pad))


def lz4_block(total):
    """A raw LZ4 block decoding to `total` bytes: 1 literal, then a match of 600 at offset 1."""
    seq_out = 601
    n = (total - 8) // seq_out
    ml = 600 - 4 - 15
    ext = b"\xff" * (ml // 255) + bytes([ml % 255])
    seq = bytes([0x1F]) + b"A" + struct.pack("<H", 1) + ext
    tail = total - n * seq_out
    last = bytes([min(tail, 15) << 4])
    if tail >= 15:
        rest = tail - 15
        last += b"\xff" * (rest // 255) + bytes([rest % 255])
    return seq * n + last + b"B" * tail


# ---------------------------------------------------------------- running
def limits():
    if AS_LIMIT:
        resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))


def run(name, args, stdin=None, expect=(1, 2), json_out=False):
    out_dir = tempfile.mkdtemp(dir=work)
    out_path, err_path = os.path.join(work, "stdout"), os.path.join(work, "stderr")
    t0 = time.monotonic()
    with open(out_path, "wb") as fo, open(err_path, "wb") as fe:
        p = subprocess.Popen([TAILOR] + args, cwd=out_dir, stdin=stdin or subprocess.DEVNULL,
                             stdout=fo, stderr=fe, preexec_fn=limits)
    # wait4 gives this child's peak RSS (on Linux it includes the forked interpreter's pages
    # before exec, so it is an upper bound on tailor's own).
    while True:
        pid, status, usage = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() - t0 > HANG_GUARD_S:
            p.kill()
            os.wait4(p.pid, 0)
            p.returncode = -9
            failures.append(f"{name}: still running after {HANG_GUARD_S} s")
            print(f"FAIL {name}: hang")
            return None
        time.sleep(0.005)
    rc = os.waitstatus_to_exitcode(status)
    p.returncode = rc
    out, err = open(out_path, "rb").read(), open(err_path, "rb").read()
    wall = time.monotonic() - t0
    rss_kb = usage.ru_maxrss
    rc = p.returncode
    problems = []
    if rc not in expect:
        problems.append(f"exit {rc}, expected {expect}")
    lines = err.decode("utf-8", "replace").splitlines()
    if expect != (0,) and not json_out:
        if len(lines) != 1 or not lines[0].startswith("tailor: error: "):
            problems.append(f"stderr is not one error line: {lines[:3]}")
        if out:
            problems.append(f"printed to stdout: {out[:200]!r}")
    if os.listdir(out_dir):
        problems.append(f"wrote files: {os.listdir(out_dir)}")
    if not SANITIZED and rss_kb > RSS_LIMIT_KB:
        problems.append(f"peak RSS {rss_kb // 1024} MB (limit {RSS_LIMIT_KB // 1024})")
    print(f"{'FAIL' if problems else 'ok  '} {name}: exit {rc}, {wall:.2f} s, peak RSS {rss_kb // 1024} MB;"
          f" {lines[0] if lines else ''}"[:300])
    for pr in problems:
        failures.append(f"{name}: {pr}")
        print(f"     {pr}")
    shutil.rmtree(out_dir, ignore_errors=True)
    return out


work = tempfile.mkdtemp(prefix="tailor_hostile_")
try:
    def write(name, data):
        p = os.path.join(work, name)
        with open(p, "wb") as f:
            f.write(data)
        return p

    fifo_so, fifo_whl, fifo_log = (os.path.join(work, n) for n in ("x.so", "x-1.0-py3-none-any.whl", "fifo.log"))
    for f in (fifo_so, fifo_whl, fifo_log):
        os.mkfifo(f)
    run("fifo .so", ["inspect", fifo_so])
    run("fifo .whl", ["inspect", fifo_whl])
    run("explain fifo", ["explain", fifo_log])
    run("matrix --config fifo", ["matrix", "--config", fifo_log])
    run("inspect /dev/zero", ["inspect", "/dev/zero"])
    run("explain /dev/zero", ["explain", "/dev/zero"])
    with open("/dev/zero", "rb") as z:
        run("explain - < /dev/zero", ["explain", "-"], stdin=z)
    run("matrix --config /dev/zero", ["matrix", "--config", "/dev/zero"])
    zeros = write("zeros.log", b"")
    os.truncate(zeros, 300 << 20)  # sparse: 300 MiB of zeros, no disk
    run("explain 300 MiB of zeros", ["explain", zeros])
    big = write("big.log", b"")
    os.truncate(big, 600 << 20)
    run("explain 600 MiB log", ["explain", big])
    big_toml = write("big.toml", b"")
    os.truncate(big_toml, 64 << 20)
    run("matrix --config 64 MiB", ["matrix", "--config", big_toml])
    os.makedirs(os.path.join(work, "empty"))
    write("empty/README.txt", b"no libraries here\n")
    run("inspect empty folder", ["inspect", os.path.join(work, "empty")])

    locked = write("locked.so", with_needed([b"libc.so.6"], 1))
    os.chmod(locked, 0)
    if IS_ROOT:
        print("skip mode 000 file: running as root, which can read it anyway")
    else:
        run("inspect mode 000 file", ["inspect", locked])

    run("sections naming one 30 KB string", ["inspect", write("sections.so", many_sections(60000, 30000))])
    run("DT_NEEDED x200000 naming one string",
        ["inspect", "--json", write("needed.so", with_needed([b"n" * 4000], 200000))])
    run("version needs x65535 naming one string", ["inspect", write("verneed.so", many_version_needs(65535, 4000))])
    run("fatbin identifiers x50000 naming one string",
        ["inspect", write("fatbin_ids.so", with_fatbin(fatbin_identifiers(50000, 60000)))])
    run("5000 .nv_fatbin sections over one range",
        ["inspect", write("fatbin_sections.so", with_fatbin(fatbin_identifiers(16000, 0), 5000))])

    zstd = shutil.which("zstd")
    if zstd:
        frame = subprocess.run([zstd, "-1", "-c"], input=bytes(64 << 20), stdout=subprocess.PIPE, check=True).stdout
        bomb = write("bomb.so", with_fatbin(one_entry(frame, 0x8000, 1 << 30)))
        run("--verify-payloads of a ZSTD entry declaring 1 GiB", ["inspect", "--verify-payloads", bomb])
    else:
        print("skip ZSTD bomb: no zstd command to make the frame")
    lz4 = lz4_block(96 << 20)
    # Sound, and larger than any one-piece buffer: it must verify, in bounded memory.
    run("--verify-payloads of a sound 96 MiB LZ4 entry",
        ["inspect", "--verify-payloads", write("lz4ok.so", with_fatbin(one_entry(lz4, 0x2000, 96 << 20)))],
        expect=(0,), json_out=True)
    run("--verify-payloads of a 96 MiB LZ4 entry (declared one byte more)",
        ["inspect", "--verify-payloads", write("lz4.so", with_fatbin(one_entry(lz4, 0x2000, (96 << 20) + 1)))])

    # Not failures: these must succeed, with their names escaped.
    out = run("--json with DT_NEEDED bytes that are not UTF-8",
              ["inspect", "--json", write("utf8.so", with_needed([b"lib\xff\xfe.so", b"libok.so"], 2))],
              expect=(0,), json_out=True)
    if out is not None:
        doc = json.loads(out)
        names = [n["soname"] for n in doc["libraries"][0]["needed"]]
        if "lib\\xff\\xfe.so" not in names:
            failures.append(f"non-UTF-8 name not escaped: {names}")
    out = run("text with terminal escapes in DT_NEEDED",
              ["inspect", write("esc.so", with_needed([b"lib\x1b]0;owned\x07.so", b"lib\x1b[2J.so"], 2))],
              expect=(0,), json_out=True)
    if out is not None and (b"\x1b" in out or b"\x07" in out):
        failures.append("terminal escapes reached stdout")
    log = write("esc.log", b"FAILED: x.o\n\x1b]0;owned\x07x.cpp:1:1: error: \xff\xfe bad\n")
    out = run("explain --json of a log that is not UTF-8", ["explain", "--json", log], expect=(0, 1), json_out=True)
    if out is not None:
        json.loads(out)
    out = run("explain text of a log with escapes", ["explain", log], expect=(0, 1), json_out=True)
    if out is not None and (b"\x1b" in out or b"\x07" in out):
        failures.append("terminal escapes from the log reached stdout")
finally:
    for root, dirs, files in os.walk(work):
        for n in files:
            try:
                os.chmod(os.path.join(root, n), 0o600)
            except OSError:
                pass
    shutil.rmtree(work, ignore_errors=True)

if failures:
    print(f"\n{len(failures)} failure(s):")
    for f in failures:
        print("  " + f)
    sys.exit(1)
print("ok")
