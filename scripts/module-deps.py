#!/usr/bin/env python3
"""Module dependency graph of a crate: for each top-level module of `src/`, the other
top-level modules it names through `crate::` paths (in `use` items and in code, not in comments); names
that are not modules are items of the crate root (`lib`). Test code (`tests.rs`,
`tests/` folders, `tests_unit.rs`, `#[cfg(test)] mod tests { ... }`) is left out. Prints the graph and every
pair of modules that import each other; exits 1 if there is such a pair.

Usage: scripts/module-deps.py crates/wormhole/src
"""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "crates/wormhole/src"
raw = {}
for dp, _, fs in os.walk(root):
    for f in fs:
        if not f.endswith(".rs"):
            continue
        p = os.path.join(dp, f)
        parts = os.path.relpath(p, root)[:-3].split("/")
        if parts[-1] == "mod":
            parts = parts[:-1]
        if any(part.startswith("tests") for part in parts):
            continue
        top = parts[0] if parts[0] not in ("lib", "main") else "lib"
        src = open(p).read()
        m = re.search(r"#\[cfg\(test\)\]\s*mod tests\s*\{", src)
        if m:
            src = src[: m.start()]
        src = re.sub(r"//[^\n]*", "", src)
        names = set(re.findall(r"\bcrate::(\w+)", src))
        for u in re.finditer(r"\buse\s+crate::\{(.*?)\};", src, re.S):
            depth, cur = 0, ""
            for ch in u.group(1) + ",":
                if ch == "{":
                    depth += 1
                elif ch == "}":
                    depth -= 1
                if ch == "," and depth == 0:
                    if cur.strip():
                        names.add(re.split(r"\W", cur.strip())[0])
                    cur = ""
                else:
                    cur += ch
        if top == "lib":
            # The crate root names its modules without `crate::` (`pub use config::X`).
            names |= {"@" + n for n in re.findall(r"(?<![:\w])(\w+)::", src)}
        raw.setdefault(top, set()).update(names)
mods = set(raw)
graph = {
    k: {n.lstrip("@") if n.lstrip("@") in mods else "lib" for n in v if n[0] != "@" or n[1:] in mods}
    - {k}
    for k, v in raw.items()
}
for k in sorted(graph):
    print(f"{k:8} -> {', '.join(sorted(graph[k])) or '(none)'}")
cycles = [(a, b) for a in graph for b in graph[a] if b in graph and a in graph[b] and a < b]
for a, b in cycles:
    print(f"cycle: {a} <-> {b}")
if not cycles:
    print("no two modules import each other")
sys.exit(1 if cycles else 0)
