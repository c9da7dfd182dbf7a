#!/usr/bin/env python3
"""Two structural rules of the code base, checked as text (no build needed):

- no function in the operator (src/), the simulator (sim/src/) or the API (api/src/)
  longer than 60 lines, test modules aside;
- no import circle between the modules of one crate: a module that names another
  (`use`, or a `crate::`/`super::` path) depends on it, and no chain of dependencies
  leads back to where it started. A module naming its own descendants or ancestors
  does not count (a parent re-exports its children).

Prints every violation and exits 1 if there is one.
Usage: hack/check-structure.py [--limit N]
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CRATES = ["src", "sim/src", "api/src"]
FN = re.compile(r"\s*(pub(\([^)]*\))?\s+)?(async\s+)?(const\s+)?(unsafe\s+)?fn\s+(\w+)")
TEST_MODULE = re.compile(r"\s*#\[cfg\(test\)\]")


def rust_files(root):
    for folder, _, files in os.walk(root):
        for name in sorted(files):
            if name.endswith(".rs"):
                yield os.path.join(folder, name)


def long_functions(path, limit):
    """(lines, name) of each function of `path` longer than `limit` lines."""
    lines = open(path, encoding="utf-8").read().split("\n")
    found, i = [], 0
    while i < len(lines):
        if TEST_MODULE.match(lines[i]):
            break
        start = FN.match(lines[i])
        if not start:
            i += 1
            continue
        depth, opened, j = 0, False, i
        while j < len(lines):
            for ch in lines[j]:
                if ch == "{":
                    depth, opened = depth + 1, True
                elif ch == "}":
                    depth -= 1
            if opened and depth == 0:
                break
            if not opened and lines[j].rstrip().endswith(";"):
                break
            j += 1
        if opened and j - i + 1 > limit:
            found.append((j - i + 1, start.group(6)))
        i = j + 1 if opened else i + 1
    return found


def module_of(root, path):
    parts = os.path.relpath(path, root)[:-3].split(os.sep)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return tuple(parts)


def resolve(modules, current, path):
    """The deepest module of `modules` that the path `a::b::c` written in `current` names."""
    parts = path.split("::")
    if parts[0] == "crate":
        base, parts = [], parts[1:]
    elif parts[0] in ("super", "self"):
        base = list(current)
        while parts and parts[0] == "super":
            base, parts = base[:-1], parts[1:]
        if parts and parts[0] == "self":
            parts = parts[1:]
    else:
        return None
    best = None
    for k in range(len(parts) + 1):
        if tuple(base + parts[:k]) in modules:
            best = tuple(base + parts[:k])
    return best


def related(a, b):
    shorter, longer = (a, b) if len(a) <= len(b) else (b, a)
    return longer[: len(shorter)] == shorter


def dependencies(root):
    modules = {module_of(root, p): p for p in rust_files(root)}
    edges = {m: set() for m in modules}
    for module, path in modules.items():
        text = open(path, encoding="utf-8").read()
        text = re.split(r"#\[cfg\(test\)\]\s*mod tests", text)[0]
        named = [m.group(1) for m in re.finditer(r"\b((?:crate|super|self)(?:::\w+)+)", text)]
        for group in re.finditer(r"use\s+((?:crate|super)(?:::\w+)*)::\{([^}]*)\}", text):
            for item in group.group(2).split(","):
                item = item.strip().split(" ")[0].split("::")[0]
                if item and item != "self":
                    named.append(group.group(1) + "::" + item)
        for path_text in named:
            target = resolve(modules, module, path_text)
            if target is not None and not related(module, target):
                edges[module].add(target)
    return edges


def cycles(edges):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    for v in edges:
        if v not in index:
            visit(v)
    return found


def main():
    limit = 60
    if len(sys.argv) == 3 and sys.argv[1] == "--limit":
        limit = int(sys.argv[2])
    problems = 0
    for crate in CRATES:
        root = os.path.join(ROOT, crate)
        if not os.path.isdir(root):
            problems += 1
            print(f"{crate}: no such folder under {ROOT}")
            continue
        for path in rust_files(root):
            if path.endswith("_tests.rs"):
                continue
            for length, name in long_functions(path, limit):
                problems += 1
                print(f"{os.path.relpath(path, ROOT)}: fn {name} has {length} lines (at most {limit})")
        edges = dependencies(root)
        for component in cycles(edges):
            problems += 1
            names = sorted("::".join(m) or "crate root" for m in component)
            print(f"{crate}: import circle between {', '.join(names)}")
            members = set(component)
            for a in sorted(component):
                for b in sorted(edges[a] & members):
                    print(f"    {'::'.join(a)} -> {'::'.join(b)}")
    if problems:
        print(f"{problems} structural problem(s)")
        return 1
    print(f"structure: no function over {limit} lines, no import circle ({', '.join(CRATES)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
