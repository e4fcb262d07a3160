#!/usr/bin/env python3
"""Fails when a function of pkbw's own code (core/, engine/, app/, toolkit/, problems/) is longer than
100 lines.

A function that long does several things whose order and hand-offs nobody can see at once; the
project keeps them near 60 lines and split into named steps. C++ (*.cpp, *.h, *.cu below those
folders) is scanned by matching braces (ctags is not on every CI machine); Python (engine/python/*.py)
through ast. Tests, samples (written as a model writes them) and tools are not scanned.

Offenders not yet split are named in tools/function_length_allow.txt ("path function" lines). The
check also fails on an entry there that is no longer an offender, so the list only shrinks.

Usage: check_function_length.py [REPO_ROOT] [--list]. Exit 0 when clean, 1 naming
file:line:function:length for each offender. --list prints every offender and exits 0.
"""

import ast
import pathlib
import re
import sys

LIMIT = 100
FOLDERS = ("core", "engine", "app", "toolkit", "problems")
ALLOW_FILE = "tools/function_length_allow.txt"


def strip_cpp(text):
    """The text with comments, string and character literals and preprocessor lines blanked.

    Newlines are kept so that offsets still map to line numbers.
    """
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if line_start and c == "#":  # a preprocessor line, with its continuations
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        line_start = c == "\n"
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i + m.end())
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum())):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * (j - i - 2) + c if j - i >= 2 else " " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _drop_template_prefix(header):
    header = header.strip()
    while header.startswith("template"):
        start = header.find("<")
        if start < 0:
            return header
        depth = 0
        for k in range(start, len(header)):
            depth += {"<": 1, ">": -1}.get(header[k], 0)
            if depth == 0:
                header = header[k + 1 :].strip()
                break
        else:
            return header
    return header


def _has_lone_assignment(header):
    """An `=` at parenthesis depth 0 that is not part of an operator (==, <=, operator=)."""
    depth = 0
    for k, c in enumerate(header):
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "=" and depth == 0:
            before = header[k - 1] if k else ""
            after = header[k + 1] if k + 1 < len(header) else ""
            if before not in "=!<>+-*/%&|^" and after != "=":
                return True
    return False


def classify(header):
    """What a `{` opens at namespace or class scope: "function", "scope" (namespace, class) or "other"."""
    header = " ".join(header.split())
    if re.search(r"\boperator\b", header) and "(" in header:
        return "function"
    if _has_lone_assignment(header):
        return "other"
    bare = re.sub(r"^(public|private|protected)\s*:\s*", "", _drop_template_prefix(header))
    bare = re.sub(r"^\[\[.*?\]\]\s*", "", bare)
    if re.match(r"(inline\s+)?(namespace|class|struct|union|enum|extern)\b", bare) or bare == "":
        return "scope"
    if "(" in header:
        return "function"
    return "other"


def function_name(header):
    """The (qualified) name before the parameter list: `Run::execute`, `operator==`, `~Guard`."""
    header = " ".join(header.split())
    m = re.search(r"((?:[\w~]+::)*operator\s*[^\s(]+|(?:[\w~]+(?:<[^<>()]*>)?::)*~?\w+)\s*\(", header)
    return re.sub(r"\s+", "", m.group(1)) if m else "?"


def cpp_functions(text):
    """(name, first line, last line) of every function defined at namespace or class scope."""
    code = strip_cpp(text)
    line_of = []
    line = 1
    for c in code:
        line_of.append(line)
        if c == "\n":
            line += 1
    stack = []  # kinds of the open braces
    header_start = 0  # where the text before the next `{` at this level begins
    found = []
    open_function = None  # (name, line of its name, depth)
    init_list = False  # inside a constructor's member-initializer list
    for i, c in enumerate(code):
        if c in ";":
            if not stack or stack[-1] == "scope":
                header_start = i + 1
        elif c == "{":
            if stack and stack[-1] != "scope":
                stack.append("inner")
                continue
            header = code[header_start:i]
            prev = header.rstrip()[-1:] if header.strip() else ""
            if re.search(r"\)\s*(noexcept|const|override|final|\s)*:(?!:)", header) and "(" in header:
                # A constructor: `name{` in its initializer list is a member's braces, not the body.
                if prev.isalnum() or prev in "_>":
                    stack.append("inner")
                    init_list = True
                    continue
            kind = classify(header)
            stack.append(kind)
            init_list = False
            if kind == "function":
                name = function_name(header)
                at = header.find(name.split("::")[-1] + "(") if name != "?" else -1
                if at < 0:
                    m = re.search(re.escape(name.split("::")[-1]).replace(r"\ ", r"\s*") + r"\s*\(", header)
                    at = m.start() if m else len(header) - len(header.lstrip())
                open_function = (name, line_of[header_start + at], len(stack))
            header_start = i + 1
        elif c == "}":
            if not stack:
                continue
            kind = stack.pop()
            if kind == "inner" and init_list and (not stack or stack[-1] == "scope"):
                continue  # a member's braces closed; the header goes on to the body
            if open_function and len(stack) + 1 == open_function[2]:
                found.append((open_function[0], open_function[1], line_of[i]))
                open_function = None
            if not stack or stack[-1] == "scope":
                header_start = i + 1
    return found


def python_functions(text):
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node.lineno, node.end_lineno


def offenders(root):
    engine = root / "engine"
    paths = sorted(p for folder in FOLDERS for p in (root / folder).rglob("*")
                   if p.suffix in (".cpp", ".h", ".cu") and p.is_file() and "tests" not in p.relative_to(root).parts)
    found = []
    for path in paths:
        for name, first, last in cpp_functions(path.read_text(errors="replace")):
            found.append((path.relative_to(root).as_posix(), first, name, last - first + 1))
    for path in sorted((engine / "python").glob("*.py")):
        for name, first, last in python_functions(path.read_text()):
            found.append((path.relative_to(root).as_posix(), first, name, last - first + 1))
    return [f for f in found if f[3] > LIMIT]


def read_allowlist(root):
    allowed = set()
    path = root / ALLOW_FILE
    if not path.exists():
        return allowed
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2:
            sys.exit(f"{ALLOW_FILE}:{number}: expected 'path function', got '{line}'")
        allowed.add(tuple(parts))
    return allowed


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    root = pathlib.Path(args[0] if args else pathlib.Path(__file__).resolve().parent.parent)
    found = offenders(root)
    if "--list" in argv:
        for path, line, name, length in sorted(found, key=lambda f: -f[3]):
            print(f"{path}:{line}:{name}:{length}")
        return 0
    allowed = read_allowlist(root)
    failed = False
    for path, line, name, length in found:
        if (path, name) not in allowed:
            print(f"{path}:{line}:{name}:{length} lines (over {LIMIT}: split it into named steps)")
            failed = True
    current = {(path, name) for path, _, name, _ in found}
    for path, name in sorted(allowed - current):
        print(f"{ALLOW_FILE}: '{path} {name}' is no longer over {LIMIT} lines: remove it from the list")
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
