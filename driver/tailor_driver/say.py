# The driver's `tailor: ...` lines. tailor reads some of them back from the build's log
# (workflow's extension_build reads the choices, split units and target variants, executor's
# build_progress the modules at once): their formats are a contract, kept here.
import os

# What tailor takes back from the package's own build choices, each said on one line that
# tailor copies into the build's report (run.package_choices).
CHOICE = "tailor: package choice: "
# A requested capability built as the arch-specific variant the package names (sm_90a).
PACKAGE_TARGET = "tailor: package target: "
# A unit split on its own with -split-compile=K (run.split_units, the wheel's provenance).
SPLIT_UNIT = "tailor: split unit: "

_announced = set()  # capabilities whose variant was said already


def line(text):
    print("tailor: " + text, flush=True)


def choice(text):
    print(CHOICE + text, flush=True)


def variants(upgrades):
    # {"90": "a"} -> "tailor: package target: sm_90a for sm_90", once per capability.
    for cc, suffix in sorted(upgrades.items()):
        if cc not in _announced:
            _announced.add(cc)
            print("%ssm_%s%s for sm_%s" % (PACKAGE_TARGET, cc, suffix, cc), flush=True)


def split_unit(unit, k, why):
    print("%s%s %d (%s)" % (SPLIT_UNIT, unit, k, why), flush=True)


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
