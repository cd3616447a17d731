#!/usr/bin/env python3
"""Runs a Ninja command and measures each unit it runs the way tailor's memory governor does
(src/governor/memory_governor.cpp): a job is a child of Ninja with its whole process tree,
its memory the sum of the tree's RSS, sampled every 250 ms; it is named by its command's
`-o`. Prints JSON: {"units": {OUTPUT: {"seconds", "peak_mib"}}, "wall_s"}.

For bench/torch_real.sh's `cuda` part: a few named CUDA units of a configured PyTorch tree
built directly, because Ninja's critical-path order builds every torch_cpu unit before
any torch_cuda one. Not part of CI.

usage: bench/ninja_units.py -- ninja -C BUILD -j2 TARGET...
"""
import json
import os
import subprocess
import sys
import time


def snapshot():
    procs = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
            rest = stat[stat.rindex(")") + 2:].split()
            ppid, rss_pages = int(rest[1]), int(rest[21])
            procs[int(pid)] = (ppid, rss_pages * os.sysconf("SC_PAGE_SIZE"))
        except (OSError, ValueError, IndexError):
            continue
    return procs


def output_of(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
    except OSError:
        return ""
    words = argv[2].decode(errors="replace").split() if len(argv) > 2 and argv[1] == b"-c" else \
        [a.decode(errors="replace") for a in argv]
    out = ""
    for i, w in enumerate(words[:-1]):
        if w == "-o":
            out = words[i + 1]
    return out


def main():
    cmd = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else sys.argv[1:]
    t0 = time.monotonic()
    ninja = subprocess.Popen(cmd, stdout=sys.stderr)  # Ninja says its lines on stderr
    jobs = {}  # pid -> {"output", "start", "end", "peak"}
    while ninja.poll() is None:
        procs = snapshot()
        children = {}
        for pid, (ppid, _) in procs.items():
            children.setdefault(ppid, []).append(pid)
        now = time.monotonic()
        live = set(children.get(ninja.pid, []))
        for pid in live:
            tree, rss = [pid], 0
            for p in tree:
                tree.extend(children.get(p, []))
                rss += procs.get(p, (0, 0))[1]
            j = jobs.setdefault(pid, {"output": output_of(pid), "start": now, "end": now, "peak": 0})
            j["end"], j["peak"] = now, max(j["peak"], rss)
        time.sleep(0.25)
    units = {j["output"]: {"seconds": round(j["end"] - j["start"], 1),
                           "peak_mib": j["peak"] // (1 << 20)}
             for j in jobs.values() if j["output"]}
    print(json.dumps({"units": units, "wall_s": round(time.monotonic() - t0), "exit": ninja.returncode},
                     indent=2))
    return ninja.returncode


if __name__ == "__main__":
    sys.exit(main())
