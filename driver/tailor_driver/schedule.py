# When each compile unit of a package starts, and which units are split on their own.
# Each unit's time comes from earlier builds of the same package and targets, or from
# tailor's measured times of a known package (TAILOR_UNIT_TIMES: a JSON object, source
# relative to the source folder -> ms); the package's Ninja lists its units longest first
# (ninja_merge). The CUDA units that set the package's wall get -split-compile=K of their
# own (learned_splits), or the K the wheel being reproduced was built with
# (TAILOR_SPLIT_UNITS), each said on a `tailor: split unit:` line, since K changes the
# unit's bytes.
import json
import os
import re

from . import say
from .ninja_syntax import edge_head

LEARNED = "measured in earlier builds: it sets the wall"
REPRODUCED = "as the wheel being reproduced was built"


def is_cuda(path):
    return path.endswith((".cu", ".cuh"))


def unit_key(path):
    # A unit as the times name it: relative to the current (source) folder.
    return os.path.relpath(os.path.abspath(path))


def read_unit_times(path):
    # The JSON object at `path` (None or empty: no file) -> {unit: ms}; anything else: {}.
    try:
        with open(path or os.devnull) as f:
            data = json.load(f) if path else {}
        return {k: int(v) for k, v in data.items()
                if isinstance(k, str) and isinstance(v, int) and v >= 0}
    except (OSError, ValueError, AttributeError):
        return {}


class UnitTimes:
    # A unit with no record counts as the longest known unit of its kind, a first build's
    # CUDA units as longer than every host unit.
    def __init__(self, known):
        self.known = known
        self.longest = {True: max([v for k, v in known.items() if is_cuda(k)] or [1 << 40]),
                        False: max([v for k, v in known.items() if not is_cuda(k)] or [0])}

    @classmethod
    def from_environment(cls):
        return cls(read_unit_times(os.environ.get("TAILOR_UNIT_TIMES")))

    def ms(self, src):
        return self.known.get(unit_key(src), self.longest[is_cuda(src)])


def module_order(exts, times):
    # The heaviest first: by earlier builds' unit times, else CUDA units weigh more than
    # host ones (the modules' order in the package's Ninja, and so the order of units of
    # equal weight).
    if times.known:
        return sorted(exts, key=lambda e: -max([times.ms(s) for s in e.sources] or [0]))
    return sorted(exts, key=lambda e: -sum(20 if is_cuda(s) else 1 for s in e.sources))


def learned_splits(times, units, jobs, max_k, min_ms=20000):
    # The CUDA units that set the package's wall, each split with nvcc -split-compile=K: a
    # unit longer than 1.5 x the package's work shared over its jobs would still run when
    # every other unit has ended. K = its time over that share (at most max_k). Only from
    # measured times (`times`: unit -> ms, of earlier builds or tailor's data) that cover
    # at least 90% of the package's `units`: a guess splits nothing.
    known = {u: times[u] for u in units if u in times}
    if not units or len(known) * 10 < len(units) * 9 or max_k < 2:
        return {}
    share = sum(known.values()) / float(max(1, jobs))
    out = {}
    for unit, ms in sorted(known.items()):
        if unit.endswith(".cu") and ms >= min_ms and ms > 1.5 * share:
            k = min(max_k, int(-(-ms // max(1, int(share)))))
            if k >= 2:
                out[unit] = k
    return out


def split_rule(rules_text, rule, k):
    # The module's rule `rule` with -split-compile=K at the end of its command, renamed;
    # None when the text has no such rule.
    lines, block, out = rules_text.split("\n"), False, []
    for line in lines:
        if line.startswith("rule "):
            block = line == "rule " + rule
            if block:
                out.append("rule %s_s%d" % (rule, k))
            continue
        if block:
            out.append(line + (" -split-compile=%d" % k if line.startswith("  command = ") else ""))
    return "\n".join(out) if out else None


def compile_units(edges):
    # The package's merged edges -> {unit: (module number, rule)} of its compile edges.
    units = {}
    for _, number, _, edge in edges:
        _, _, parts = edge_head(edge)
        if parts and "compile" in parts[2] and parts[3]:
            units[unit_key(parts[3])] = (number, parts[2])
    return units


def given_splits(text):
    # TAILOR_SPLIT_UNITS (unit -> K, JSON) -> {unit: K} of the K of 2 or more; bad text: {}.
    try:
        return {u: int(k) for u, k in json.loads(text).items() if int(k) >= 2}
    except (ValueError, AttributeError, TypeError):
        return {}


def chosen_splits(units, split_max, known, jobs_arg):
    # -> ({unit: K}, why). split_max None: every unit is split already (a package of few
    # units); 0: none is learned. The wheel being reproduced says its own, learned or not.
    given = os.environ.get("TAILOR_SPLIT_UNITS")
    if split_max is None:
        return {}, ""
    if given is not None:
        return given_splits(given), REPRODUCED
    jobs = int(jobs_arg[1]) if jobs_arg else len(os.sched_getaffinity(0))
    return learned_splits(known, list(units), jobs, split_max), LEARNED


def apply_splits(rules, numbers, edges, units, chosen, why):
    # Each chosen CUDA unit's edge moves to its module's rule with -split-compile=K (edges
    # are changed in place) -> the split rules' texts. `rules` and `numbers`: the modules'
    # rules texts and their module numbers, in the same order.
    split_rules = {}
    for unit, k in sorted(chosen.items()):
        if unit not in units or not units[unit][1].startswith("cuda_compile"):
            continue
        number, rule = units[unit]
        text = split_rule(rules[numbers.index(number)], rule, k)
        if text is None:
            continue
        split_rules[(number, rule, k)] = text
        say.split_unit(unit, k, why)
        for i, e in enumerate(edges):
            head, rest, parts = edge_head(e[3])
            if parts and parts[2] == rule and unit_key(parts[3]) == unit:
                head = head.replace(": %s " % rule, ": %s_s%d " % (rule, k), 1)
                edges[i] = e[:3] + (head + ("\n" + rest if rest else ""),)
    return list(split_rules.values())


def split_compile(spec, cuda_units):
    # TAILOR_SPLIT_COMPILE="REF:MAX" and the package's CUDA units -> (K, split_max). Every
    # nvcc unit gets -split-compile=K with K = min(MAX, REF // units) when K is 2 or more: a
    # package of few units uses REF cores, and K depends on the source alone, so the bytes
    # do not depend on the machine. split_max: None when every unit is split so, else the
    # most a unit that sets the wall may be split by (0: none, no spec).
    split = re.fullmatch(r"(\d+):(\d+)", spec)
    k = min(int(split.group(2)), int(split.group(1)) // cuda_units) if split and cuda_units else 1
    return k, None if k >= 2 else int(split.group(2)) if split else 0
