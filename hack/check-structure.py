#!/usr/bin/env python3
"""Two structural rules of the code base, checked as text (no build needed):

- no function in the operator (src/), the simulator (sim/src/) or the API (api/src/)
  longer than 60 lines, test modules aside;
- no import circle between the modules of one crate: a module that names another
  (`use`, or a `crate::`/`super::` path) depends on it, and no chain of dependencies
  leads back to where it started, at any depth. A name a module re-exports (`pub use`)
  counts as the module that defines it, so `super::Context` re-exported by a parent from
  its child `context` is an edge to `context`; an item defined in an ancestor's own file
  is an edge to that ancestor. Only declaring a child (`mod child;`) is not an edge.

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


def base_and_parts(current, path):
    """The module a path `a::b::c` written in `current` starts from, and the rest."""
    parts = path.split("::")
    if parts[0] == "crate":
        return [], parts[1:]
    if parts[0] in ("super", "self"):
        base = list(current)
        while parts and parts[0] == "super":
            base, parts = base[:-1], parts[1:]
        if parts and parts[0] == "self":
            parts = parts[1:]
        return base, parts
    return None, None


def resolve(modules, reexports, current, path, depth=0):
    """The module of `modules` that defines what the path `a::b::c` written in `current`
    names: the deepest module on the path, or, where the next name is one that module
    re-exports, the module the re-export names (followed to its origin)."""
    base, parts = base_and_parts(current, path)
    if base is None:
        return None
    best, k_best = None, 0
    for k in range(len(parts) + 1):
        if tuple(base + parts[:k]) in modules:
            best, k_best = tuple(base + parts[:k]), k
    if best is None:
        return None
    rest = parts[k_best:]
    if rest and (best, rest[0]) in reexports and depth < 16:
        origin_module, origin_path = reexports[(best, rest[0])]
        found = resolve(modules, reexports, origin_module, origin_path, depth + 1)
        if found is not None:
            return found
    return best


PUB_USE = re.compile(r"pub(?:\([^)]*\))?\s+use\s+((?:crate|super|self)(?:::\w+)*)(?:::\{([^}]*)\}|::(\w+)(?:\s+as\s+(\w+))?)\s*;")


def code_of(path):
    """The text of `path` without its test module."""
    text = open(path, encoding="utf-8").read()
    return re.split(r"#\[cfg\(test\)\]\s*mod tests", text)[0]


def reexports_of(modules):
    """(module, name) -> (module, path) of each `pub use` of a crate path."""
    found = {}
    for module, path in modules.items():
        for m in PUB_USE.finditer(code_of(path)):
            prefix = m.group(1)
            if m.group(3):
                found[(module, m.group(4) or m.group(3))] = (module, prefix + "::" + m.group(3))
                continue
            for item in m.group(2).split(","):
                words = item.strip().split()
                if not words or words[0] == "self":
                    continue
                name = words[-1] if len(words) == 3 and words[1] == "as" else words[0]
                found[(module, name.split("::")[-1])] = (module, prefix + "::" + words[0])
    return found


def dependencies(root):
    modules = {
        module_of(root, p): p for p in rust_files(root) if not p.endswith("_tests.rs")
    }
    reexports = reexports_of(modules)
    edges = {m: set() for m in modules}
    for module, path in modules.items():
        text = code_of(path)
        named = [m.group(1) for m in re.finditer(r"\b((?:crate|super|self)(?:::\w+)+)", text)]
        for group in re.finditer(r"use\s+((?:crate|super|self)(?:::\w+)*)::\{([^}]*)\}", text):
            for item in group.group(2).split(","):
                item = item.strip().split(" ")[0]
                if item and item != "self":
                    named.append(group.group(1) + "::" + item)
        for path_text in named:
            target = resolve(modules, reexports, module, path_text)
            if target is not None and target != module:
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
