# nvcc target options and the target lists of torch ("8.0;9.0+PTX") and CMake
# ("80-real;90"): what the package asked for, what is requested, and the arch-specific
# variants (sm_90a, sm_100f) a package needs for a requested capability.
import re

ARCH_OPTIONS = ("-arch", "--gpu-architecture", "-gencode", "--generate-code", "-code", "--gpu-code")
ARCH_TOKEN = re.compile(r"\b(?:compute|sm|lto)_\d+[a-z]?\b")
# sm_90a, compute_100f, CMake's 90a-real: a capability and its variant letter.
VARIANT = re.compile(r"(?:\b(?:compute|sm)_|(?<![\w.])(?=\d+[af]\b|\d+[af]-))(\d+)([af])\b")
CMAKE_CC = re.compile(r"(?<![\w.])(\d+)(?=-|;|$)")  # 80 of "80-real;90"


def strip_arch_flags(args):
    # nvcc arguments -> (kept, removed): every target option, with its value whether it is
    # attached (-arch=sm_80, "-gencode arch=...,code=...") or the next argument.
    kept, removed, i = [], [], 0
    while i < len(args):
        a = args[i]
        text = a.strip() if isinstance(a, str) else None
        head = re.split(r"[= ]", text, 1)[0] if text else None
        if head in ARCH_OPTIONS:
            if text != head or i + 1 >= len(args):
                removed.append(text)
                i += 1
            else:
                removed.append("%s %s" % (text, args[i + 1]))
                i += 2
            continue
        kept.append(a)
        i += 1
    return kept, removed


def requested_ccs(torch_list):
    # "8.0;9.0+PTX" -> {"80", "90"}: the compute capabilities the user asked for.
    return {m.group(1) + m.group(2) for m in re.finditer(r"(\d+)\.(\d+)", torch_list or "")}


def arch_specific(texts, ccs):
    # The arch-specific variants (sm_90a, compute_100f, CMake's 90a-real) the package names
    # for a requested capability: {"90": "a"}. Such a package uses instructions only the
    # variant has (wgmma, tcgen05), so the requested capability is built as that variant.
    found = {}
    for t in texts:
        for m in VARIANT.finditer(t or ""):
            if m.group(1) in ccs:
                found[m.group(1)] = m.group(2)
    return found


def upgraded_torch_list(torch_list, upgrades):
    # "8.0;9.0+PTX" with {"90": "a"} -> "8.0;9.0a+PTX".
    return re.sub(r"(\d+)\.(\d+)(?![\d.af])",
                  lambda m: m.group(0) + upgrades.get(m.group(1) + m.group(2), ""), torch_list)


def cmake_ccs(cmake_list):
    # "80-real;90" -> {"80", "90"}: the capabilities of a CMake architecture list.
    return {m.group(1) for m in CMAKE_CC.finditer(cmake_list or "")}


def upgraded_cmake_list(cmake_list, upgrades):
    # "80-real;90-real" with {"90": "a"} -> "80-real;90a-real".
    return CMAKE_CC.sub(lambda m: m.group(1) + upgrades.get(m.group(1), ""), cmake_list)
