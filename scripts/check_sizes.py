#!/usr/bin/env python3
"""Fails on a src/ file over 700 lines or a C++ function over 120 lines.

A function's size counts its lines from the signature's first line (its `template <...>`
line included) to its closing brace. Functions are found by their bodies: outside any
function, a `{` whose head (the text since the last `;`, `{`, `}` or access label) ends in a
parameter list, its qualifiers or a constructor's initialisers opens a body, and its matching
`}` closes it; lambdas and blocks inside a body are part of that body. Comments, string and
character literals (raw strings included) and preprocessor lines are blanked first, so their
braces do not count.

What is still too big is listed in scripts/size_allowlist.txt, one item a line with the size it
has now: `PATH LINES` for a file, `PATH:FUNCTION LINES` for a function (a name's second
definition in one file is `FUNCTION#2`). The list only shrinks: an item that grew, or a new
item over the limit, fails; so does a listed item now within the limit or gone (take its line
out); one that shrank but is still over is said, so its line can be lowered.

    scripts/check_sizes.py [--root DIR] [--allowlist FILE] [--list]
        exit 0: clean; 1: one line per failure; --list prints every item over a limit in the
        allowlist's format and exits 0
"""
import argparse
import os
import re
import sys

FILE_LIMIT = 700
FUNCTION_LIMIT = 120
SOURCE_SUFFIXES = (".cpp", ".h", ".cc", ".hpp")

_IDENT = re.compile(r"[A-Za-z0-9_]")


def _blank(chars, begin, end):
    """Spaces over chars[begin:end], newlines kept, so line numbers stay."""
    for i in range(begin, end):
        if chars[i] != "\n":
            chars[i] = " "


def strip_code(text):
    """The text with comments, literals' contents and preprocessor lines blanked.

    Quotes stay (an `extern "C"` still reads as one), every newline stays.
    """
    chars = list(text)
    n = len(text)
    i = 0
    line_start = True  # only whitespace so far on this line
    while i < n:
        c = text[i]
        if c == "\n":
            line_start = True
            i += 1
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        if line_start and c == "#":
            # A directive runs to the end of the line, and on over backslash continuations.
            j = i
            while j < n:
                if text[j] == "\n" and (j == 0 or text[j - 1] != "\\"):
                    break
                if text.startswith("/*", j):  # a comment may hide the directive's end
                    close = text.find("*/", j + 2)
                    j = n if close < 0 else close + 2
                    continue
                if text.startswith("//", j):
                    while j < n and not (text[j] == "\n" and text[j - 1] != "\\"):
                        j += 1
                    break
                j += 1
            _blank(chars, i, j)
            i = j
            continue
        line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            _blank(chars, i, j)
            i = j
            continue
        if text.startswith("/*", i):
            close = text.find("*/", i + 2)
            j = n if close < 0 else close + 2
            _blank(chars, i, j)
            i = j
            continue
        if c == '"':
            raw = _raw_string_prefix(text, i)
            if raw is not None:
                close = text.find(")" + raw + '"', i)
                j = n if close < 0 else close + len(raw) + 1
                _blank(chars, i + 1, j - 1)
                i = j + 1 if close >= 0 else n
                continue
            j = _literal_end(text, i, '"')
            _blank(chars, i + 1, j - 1)
            i = j
            continue
        if c == "'" and not _digit_separator(text, i):
            j = _literal_end(text, i, "'")
            _blank(chars, i + 1, j - 1)
            i = j
            continue
        i += 1
    return "".join(chars)


def _raw_string_prefix(text, quote):
    """The delimiter of a raw string whose opening quote is at `quote`, else None."""
    k = quote - 1
    if k < 0 or text[k] != "R":
        return None
    k -= 1
    # Encoding prefixes: u8R, uR, UR, LR.
    if k >= 1 and text[k - 1 : k + 1] == "u8":
        k -= 2
    elif k >= 0 and text[k] in "uUL":
        k -= 1
    if k >= 0 and _IDENT.match(text[k]):
        return None  # an identifier ending in R, then a string
    paren = text.find("(", quote + 1)
    if paren < 0 or paren - quote - 1 > 16:
        return None
    return text[quote + 1 : paren]


def _literal_end(text, start, quote):
    """The index just past the literal opened at `start` (or the line's end if unclosed)."""
    i = start + 1
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == quote:
            return i + 1
        if c == "\n":
            return i  # unterminated: stop at the line's end rather than eat the file
        i += 1
    return n


def _digit_separator(text, i):
    """Whether the `'` at i separates digits (1'000'000) rather than opening a char."""
    k = i - 1
    while k >= 0 and (_IDENT.match(text[k]) or text[k] in "'."):
        k -= 1
    token = text[k + 1 : i]
    return bool(token) and token[0].isdigit() and i + 1 < len(text) and _IDENT.match(text[i + 1])


def _matching_brace(code, open_at):
    depth = 0
    for k in range(open_at, len(code)):
        c = code[k]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return k
    return len(code) - 1


_ACCESS = re.compile(r"^\s*(?:public|private|protected)\s*:(?!:)")
_TAIL_QUALIFIERS = re.compile(
    r"^(?:\s*(?:const|volatile|noexcept|override|final|mutable|constexpr|try)\b|\s*&&?"
    r"|\s*noexcept\s*\([^()]*(?:\([^()]*\)[^()]*)*\)"
    r"|\s*->[^;{}]*"
    r"|\s*requires\b[^;{}]*)*\s*$"
)
_CTOR_INIT = re.compile(r"\)\s*(?:noexcept\s*)?:(?!:)")


def _last_group_end(head):
    """The index of the last top-level `)` in head, or -1."""
    depth = 0
    last = -1
    for k, c in enumerate(head):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                last = k
    return last


def _before_trailing_return(head):
    """head without a trailing return type (`auto f(int) -> Expected<decltype(g())>`)."""
    depth = 0
    for k, c in enumerate(head):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif depth == 0 and head.startswith("->", k) and not re.search(r"operator\s*$", head[:k]):
            return head[:k]
    return head


def _is_function_head(head):
    if not head or "(" not in head:
        return False
    if _CTOR_INIT.search(head) and re.search(r"[)}]\s*$", head):
        return True  # Foo::Foo(...) : m_a(a), m_b{b} {
    head = _before_trailing_return(head)
    end = _last_group_end(head)
    return end >= 0 and bool(_TAIL_QUALIFIERS.match(head[end + 1 :]))


_REQUIRES_EXPRESSION = re.compile(r"\brequires\s*(?:\([^()]*(?:\([^()]*\)[^()]*)*\))?\s*$")


def _in_constructor_initialisers(head):
    """Whether a `{` after head is a member's brace initialiser: Foo::Foo() : m_b{...}."""
    return bool(_CTOR_INIT.search(head)) and bool(re.search(r"[\w>]\s*$", head))


def _without_angles(text):
    """text with its <...> groups taken out, innermost first (template parameter lists)."""
    while True:
        stripped = re.sub(r"<[^<>]*>", "", text)
        if stripped == text:
            return text
        text = stripped


def _is_class_head(head):
    """`class X : Base`, `template <class T = int> struct Y`, not `struct P p = ` nor an enum."""
    if re.search(r"\benum\b", head):
        return False
    m = re.search(r"\b(?:class|struct|union)\b(.*)$", _without_angles(head), re.S)
    if not m:
        return False
    rest = re.sub(r"\b(?:alignas|__attribute__)\s*\((?:[^()]|\([^()]*\))*\)|\[\[.*?\]\]", "", m.group(1))
    return "=" not in rest and "(" not in rest


_OPERATOR = re.compile(r"((?:~?\w+\s*(?:<[^()]*>)?\s*::\s*)*)operator\b\s*(\(\s*\)|[^\w\s(]+|[\w:<>*& ]+?)\s*\(")


def _function_name(head):
    """The function's name in its head: `ns::Type::name`, `operator()`, a lambda's variable."""
    flat = re.sub(r"\s+", " ", head)
    # A requires-expression's body comes before the declarator: the name follows it.
    flat = re.sub(r"^.*\brequires\b[^{}]*\{[^{}]*\}", "", flat)
    op = _OPERATOR.search(flat)
    if op:
        prefix = re.sub(r"\s+", "", op.group(1))
        symbol = op.group(2).strip()
        # A conversion keeps its space ("operator bool"); a symbol has none ("operator()").
        return prefix + ("operator " + symbol if re.match(r"\w", symbol) else "operator" + re.sub(r"\s+", "", symbol))
    angle = 0
    depth = 0
    for k, c in enumerate(flat):
        if c == "<" and depth == 0:
            angle += 1
        elif c == ">" and depth == 0 and flat[k - 1] != "-":
            angle = max(0, angle - 1)
        elif c == "=" and depth == 0 and angle == 0 and flat[k + 1 : k + 2] != "=":
            # A lambda given to a variable: its name is the variable's.
            m = re.search(r"([\w:]+)\s*(?:\[[^\]]*\])?\s*$", flat[:k])
            if m:
                return m.group(1)
        elif c == "(":
            if depth == 0 and angle == 0:
                m = re.search(r"(~?\w+(?:\s*(?:<[^()]*>)?\s*::\s*~?\w+)*)\s*(?:<[^()]*>)?\s*$",
                              flat[:k])
                if m and m.group(1) not in ("alignas", "decltype", "__attribute__"):
                    return re.sub(r"\s+", "", m.group(1))
            depth += 1
        elif c == ")":
            depth -= 1
    return "?"


class Function:
    def __init__(self, name, first_line, last_line):
        self.name = name
        self.first_line = first_line
        self.last_line = last_line

    @property
    def lines(self):
        return self.last_line - self.first_line + 1


def find_functions(text):
    """Every function body outside another function, in file order."""
    code = strip_code(text)
    line_of = _line_index(code)
    functions = []
    # Scopes that hold declarations (namespace, class); anything else is skipped whole.
    i = 0
    head_start = 0
    n = len(code)
    while i < n:
        c = code[i]
        if c == ";" or c == "}":
            head_start = i + 1
            i += 1
            continue
        if c == ":" and _ACCESS.match(code[head_start : i + 1]):
            head_start = i + 1
            i += 1
            continue
        if c != "{":
            i += 1
            continue
        head = code[head_start:i].strip()
        if re.match(r"^(?:inline\s+)?namespace\b[^(]*$", head) or re.match(r'^extern\s*"\s*"$', head):
            head_start = i + 1  # namespace scope: its declarations are read one by one
            i += 1
            continue
        if _REQUIRES_EXPRESSION.search(head):
            i = _matching_brace(code, i) + 1  # a constraint's body: part of the head
            continue
        if _is_function_head(head):
            close = _matching_brace(code, i)
            first = head_start + (len(code[head_start:i]) - len(code[head_start:i].lstrip()))
            functions.append(Function(_function_name(head), line_of(first), line_of(close)))
            head_start = close + 1
            i = close + 1
            continue
        if _in_constructor_initialisers(head):
            i = _matching_brace(code, i) + 1  # part of the head; the body follows
            continue
        if _is_class_head(head):
            head_start = i + 1  # class scope: member functions are read one by one
            i += 1
            continue
        # An initialiser, an enum, an array: skipped whole; the `;` after it ends the head.
        i = _matching_brace(code, i) + 1
    return functions


def _line_index(code):
    starts = [0]
    for k, c in enumerate(code):
        if c == "\n":
            starts.append(k + 1)

    def line_of(pos):
        lo, hi = 0, len(starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if starts[mid] <= pos:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1

    return line_of


def measure(root):
    """{item: lines} for every C++ file under root/src and every function in them."""
    sizes = {}
    src = os.path.join(root, "src")
    for dirpath, dirs, files in os.walk(src):
        dirs.sort()
        for f in sorted(files):
            if not f.endswith(SOURCE_SUFFIXES):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
            sizes[rel] = len(text.splitlines())
            seen = {}
            for fn in find_functions(text):
                seen[fn.name] = seen.get(fn.name, 0) + 1
                key = fn.name if seen[fn.name] == 1 else f"{fn.name}#{seen[fn.name]}"
                sizes[f"{rel}:{key}"] = fn.lines
    return sizes


def limit_of(item):
    return FUNCTION_LIMIT if ":" in item else FILE_LIMIT


def over_limits(sizes):
    return {item: lines for item, lines in sizes.items() if lines > limit_of(item)}


def read_allowlist(path):
    """{item: lines} from the allowlist; ValueError names the line it cannot read."""
    allowed = {}
    if not os.path.exists(path):
        return allowed
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split()
            if len(parts) != 2 or not parts[1].isdigit():
                raise ValueError(f"{path}:{number}: expected 'PATH[:FUNCTION] LINES', got {line!r}")
            if parts[0] in allowed:
                raise ValueError(f"{path}:{number}: {parts[0]} is listed twice")
            allowed[parts[0]] = int(parts[1])
    return allowed


def compare(sizes, allowed):
    """(failures, notes): what breaks the limits or the allowlist, and what may be lowered."""
    failures = []
    notes = []
    for item, lines in sorted(over_limits(sizes).items()):
        what = "function" if ":" in item else "file"
        if item not in allowed:
            failures.append(f"{item}: {what} of {lines} lines, over the limit of {limit_of(item)}")
        elif lines > allowed[item]:
            failures.append(f"{item}: {what} grew to {lines} lines (allowlisted at {allowed[item]}; "
                            f"the limit is {limit_of(item)})")
        elif lines < allowed[item]:
            notes.append(f"{item}: shrank to {lines} lines (allowlisted at {allowed[item]}): "
                         "lower its allowlist line")
    for item in sorted(allowed):
        lines = sizes.get(item)
        if lines is None:
            failures.append(f"{item}: allowlisted but no longer there: take its line out of the "
                            "allowlist")
        elif lines <= limit_of(item):
            failures.append(f"{item}: now {lines} lines, within the limit of {limit_of(item)}: "
                            "take its line out of the allowlist")
    return failures, notes


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.join(here, ".."))
    parser.add_argument("--allowlist", default=None)
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args(argv)
    allowlist = args.allowlist or os.path.join(args.root, "scripts", "size_allowlist.txt")
    sizes = measure(args.root)
    if args.list:
        for item, lines in sorted(over_limits(sizes).items()):
            print(f"{item} {lines}")
        return 0
    try:
        allowed = read_allowlist(allowlist)
    except ValueError as e:
        print(f"check_sizes: {e}", file=sys.stderr)
        return 2
    failures, notes = compare(sizes, allowed)
    for line in notes:
        print(f"check_sizes: note: {line}")
    for line in failures:
        print(line)
    if failures:
        print(f"check_sizes: {len(failures)} size problem(s) (files <= {FILE_LIMIT} lines, "
              f"functions <= {FUNCTION_LIMIT}; {os.path.relpath(allowlist, args.root)})",
              file=sys.stderr)
        return 1
    print(f"check_sizes: files <= {FILE_LIMIT} lines and functions <= {FUNCTION_LIMIT} "
          f"but {len(allowed)} allowlisted item(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
