# What the driver tells tailor and the build's log. Each fact tailor uses is an event, one
# JSON object a line ({"v": 1, "kind": ..., fields}) written to the file descriptor tailor
# names in TAILOR_EVENTS_FD; its kinds and fields are data/driver/events.toml's, and tailor
# reads only these (builder/driver_events). The `tailor: ...` lines printed beside them are
# for people reading the log: no program reads them back.
import json
import os

VERSION = 1
EVENTS_FD = "TAILOR_EVENTS_FD"
MAX_TEXT = 1000  # bytes of a text field (events.toml)

_announced = set()  # capabilities whose variant was said already


def _text(value):
    # A text field as events.toml bounds it: at most MAX_TEXT bytes of UTF-8, cut at a
    # character's start.
    data = str(value).encode("utf-8", "replace")[:MAX_TEXT]
    return data.decode("utf-8", "ignore")


def event(kind, **fields):
    # One event to tailor, when it gave the driver a descriptor (a driver run by hand says
    # nothing). One write of one line: the descriptor is opened for appending.
    fd = os.environ.get(EVENTS_FD)
    if not fd or not fd.isdigit():
        return
    body = {"v": VERSION, "kind": kind}
    for name, value in fields.items():
        body[name] = value if isinstance(value, int) else _text(value)
    try:
        os.write(int(fd), (json.dumps(body, sort_keys=True) + "\n").encode("utf-8"))
    except OSError:
        pass  # tailor's side is gone or the descriptor is not ours: the log still has it


def line(text):
    print("tailor: " + text, flush=True)


def choice(text):
    # A build choice of the package's own, taken back (the report's package choices).
    event("choice", text=text)
    line("package choice: " + text)


def compat(text):
    # A change that makes the package build with this toolchain, said like a choice.
    event("compat", text=text)
    line("compatibility: " + text)


def variants(upgrades):
    # {"90": "a"} -> sm_90 built as sm_90a, said once per capability.
    for cc, suffix in sorted(upgrades.items()):
        if cc not in _announced:
            _announced.add(cc)
            event("variant", target="sm_%s" % cc, variant="sm_%s%s" % (cc, suffix))
            line("package target: sm_%s%s for sm_%s" % (cc, suffix, cc))


def split_unit(unit, k, why):
    event("split", unit=unit, k=k, why=why)
    line("split unit: %s %d (%s)" % (unit, k, why))


def modules(count, units, cuda_units, split_compile, how):
    # Every extension module at once under one Ninja: progress counts `units` edges.
    event("modules", modules=count, units=units, cuda_units=cuda_units,
          split_compile=split_compile)
    line("modules at once: %d modules, %d units (%d CUDA), %s%s"
         % (count, units, cuda_units, how,
            ", nvcc -split-compile=%d" % split_compile if split_compile >= 2 else ""))


def unit_order(known, source):
    event("unit_order", known=known, source=source)
    if known:
        line("units ordered by %d units' times from %s" % (known, source))
    else:
        line("units ordered by kind (CUDA first): %s" % source)


def code_part(line):
    # The line without its comment: from the first '#' outside a string literal.
    quote = None
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#":
            return line[:i]
    return line


def where_in_source(*needles):
    # "setup.py:12": the first line of the package's own top-level Python files whose code
    # (comments left out) holds the first of `needles` found anywhere, most specific first
    # (the whole flag, then its argument, then the target alone); "setup.py" when none does
    # (a value the package computed).
    files = ["setup.py"] + sorted(f for f in os.listdir(".") if f.endswith(".py")
                                  and f != "setup.py" and not f.startswith("tailor-"))
    for needle in needles:
        for name in files:
            try:
                with open(name, errors="replace") as f:
                    for number, text in enumerate(f, 1):
                        if needle in code_part(text):
                            return "%s:%d" % (name, number)
            except OSError:
                continue
    return "setup.py (a value it computed)" if os.path.exists("setup.py") else "the package's build"
