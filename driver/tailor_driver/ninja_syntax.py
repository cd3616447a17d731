# The pieces of Ninja's syntax the package Ninja needs: escapes, a value's variable
# references and their substitution, and a build edge's head.
import re

NAME = re.compile(r"\{([A-Za-z0-9_.-]+)\}|([A-Za-z0-9_-]+)")  # after a $: ${name} or $name


def unescape(text):
    return re.sub(r"\$([$ :])", r"\1", text)


def escape_path(path):
    # A path as Ninja reads it in a subninja line or an edge.
    return path.replace("$", "$$").replace(" ", "$ ").replace(":", "$:")


def references(text):
    # The variables a ninja value refers to ($name, ${name}); None: not a value ninja reads.
    names, i = [], 0
    while i < len(text):
        if text[i] != "$":
            i += 1
            continue
        nxt = text[i + 1:i + 2]
        if nxt in ("$", " ", ":"):
            i += 2
            continue
        m = NAME.match(text[i + 1:])
        if not m:
            return None
        names.append(m.group(1) or m.group(2))
        i += 1 + len(m.group(0))
    return names


def substitute(text, values):
    # `text` with each variable of `values` written in; escapes and other variables kept.
    out, i = [], 0
    while i < len(text):
        if text[i] != "$":
            out.append(text[i])
            i += 1
            continue
        nxt = text[i + 1:i + 2]
        if nxt in ("$", " ", ":"):
            out.append(text[i:i + 2])
            i += 2
            continue
        m = NAME.match(text[i + 1:])
        name = m.group(1) or m.group(2)
        out.append(values.get(name, "$" + m.group(0)))
        i += 1 + len(m.group(0))
    return "".join(out)


def split_edge(line):
    # "build OUTS: RULE INS" -> (OUTS text, [explicit outputs, escaped], RULE, first
    # input unescaped, INS text); None: no unescaped colon.
    body = line[len("build "):]
    i = 0
    while i < len(body) and body[i] != ":":
        i += 2 if body[i] == "$" else 1
    if i >= len(body):
        return None
    outs, rest = body[:i], body[i + 1:].lstrip(" ")
    explicit = re.split(r"(?<!\$) ", outs.split(" | ")[0].strip())
    rule, _, ins = rest.partition(" ")
    first = re.split(r"(?<!\$) ", ins.strip())[0] if ins.strip() else ""
    return outs, [o for o in explicit if o], rule, unescape(first), ins


def edge_head(edge):
    # An edge's text (its build line, then its bindings) -> (build line, the rest, its
    # split_edge parts or None).
    head, _, rest = edge.partition("\n")
    return head, rest, split_edge(head) if head.startswith("build ") else None
