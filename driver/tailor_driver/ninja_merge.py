# The package's one Ninja. torch writes one build.ninja per module (its rules and
# variables at the file's top level); they are merged into one file in the package's
# build folder: each module's rules renamed (compile -> compile_m3) with the module's
# variables written into them, and every compile edge of the package in one list,
# longest unit first. Ninja starts ready edges by their critical path, and every
# compile edge here has the same one, so the list's order is the order they start in:
# the longest units of the whole package first, whatever module they belong to. A
# module file this cannot read (a construct torch does not write) is included whole
# with `subninja`, its units in its own order. Each module ends in a stamp edge
# (.tailor-done/mN over its outputs): when Ninja reports it, that module links while
# the Ninja goes on. Only the order in which edges start is changed, never a command
# or an edge's inputs, so the bytes are those of torch's own files.
import os
import re

from . import schedule
from .ninja_syntax import escape_path, references, split_edge, substitute

STAMP_DIR = ".tailor-done"
STAMP_LINE = re.compile(r" touch \.tailor-done/m(\d+)$")  # Ninja's line for a stamp edge (-v)
HEADER = ("# The package's one Ninja, written by tailor's build driver "
          "(driver/tailor_driver) from each module's build.ninja.")
UNREADABLE = (None, [], None)  # read_module: include the file whole


def stamp(number):
    return "%s/m%d" % (STAMP_DIR, number)


def read_module(path, number):
    # -> (rules text, [(first input, edge text)], [outputs]); (None, [], None): include the
    # file whole.
    with open(path) as f:
        lines = f.read().split("\n")
    variables, rules, edges, outputs = {}, [], [], []
    readable = True
    block = None
    for line in lines:
        if line.endswith("$") or line.startswith("\t"):
            readable = False
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.startswith(" "):
            key, eq, value = line.strip().partition("=")
            if not eq or block is None:
                readable = False
                continue
            if block == "rule":
                rules.append(("  %s = " % key.strip(), value.strip()))  # substituted below
            else:
                if references(value.strip()) != []:
                    readable = False  # an edge binding read in the file's scope
                edges[-1][1].append(line)
            continue
        if line.startswith("rule "):
            block = "rule"
            rules.append("rule %s_m%d" % (line[5:].strip(), number))
            continue
        if line.startswith("build "):
            block = "edge"
            parts = split_edge(line)
            if parts is None:
                return UNREADABLE
            outs_text, outs, rule, first, ins = parts
            outputs.extend(outs)
            head = (line if rule == "phony"
                    else "build %s: %s_m%d %s" % (outs_text, rule, number, ins))
            edges.append((first, [head]))
            continue
        block = None
        readable = read_variable(line, variables) and readable
    if not readable:
        # Included whole; its outputs as read here may be cut short (a line continued
        # with $): no stamp, the module links when the Ninja has ended.
        return UNREADABLE
    # The module's variables written into its rules: ninja reads a rule's variables when
    # an edge runs, after the whole file, so every top-level value counts.
    rules = [r if isinstance(r, str) else r[0] + substitute(r[1], variables) for r in rules]
    return "\n".join(rules), [(first, "\n".join(text)) for first, text in edges], outputs


def read_variable(line, variables):
    # A top-level line that is neither a rule nor an edge, into `variables`; False: a line
    # torch does not write (include, subninja, pool, default), a value read from another,
    # or one set twice.
    key, eq, value = line.partition("=")
    key = key.strip()
    if not eq or not re.fullmatch(r"[A-Za-z0-9_.-]+", key):
        return False
    if key == "ninja_required_version":
        return True
    readable = not (references(value.strip()) != [] or key in variables)
    variables[key] = value.strip()
    return readable


def merge_modules(folders, unit_ms):
    # folders: {module build folder: module number}, each holding torch's build.ninja ->
    # (rules, edges, stamps): per module its rules text (or its subninja line), in module
    # order; every edge as (-unit ms, module, index, text), longest unit first; a stamp edge
    # per readable module.
    rules, edges, stamps = [], [], []
    for folder, number in sorted(folders.items(), key=lambda kv: kv[1]):
        path = os.path.join(folder, "build.ninja")
        text, module_edges, outputs = read_module(path, number)
        if text is None:
            rules.append("subninja %s" % escape_path(path))
        else:
            rules.append(text)
            edges.extend((-unit_ms(first) if first else 0, number, i, edge)
                         for i, (first, edge) in enumerate(module_edges))
        if outputs is not None:
            stamps.append("build %s: tailor_module_done %s" % (stamp(number), " ".join(outputs)))
    edges.sort(key=lambda e: e[:3])
    return rules, edges, stamps


def package_manifest(folders, times, split_max, jobs_arg):
    # The package's one build.ninja over its modules' folders (`folders`: folder -> module
    # number), its units ordered by `times` (schedule.UnitTimes) and the units that set the
    # wall split on their own (schedule.chosen_splits: split_max, Ninja's -j arguments).
    rules, edges, stamps = merge_modules(folders, times.ms)
    units = schedule.compile_units(edges)
    chosen, why = schedule.chosen_splits(units, split_max, times.known, jobs_arg)
    numbers = sorted(folders.values())
    rules = rules + schedule.apply_splits(rules, numbers, edges, units, chosen, why)
    return "\n".join([HEADER, "ninja_required_version = 1.3", ""] + rules +
                     ["", "rule tailor_module_done", "  command = touch $out", ""] +
                     [e[3] for e in edges] + [""] + stamps) + "\n"
