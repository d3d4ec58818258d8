#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""lint.daemon_layers: daemon/ calls and includes one way.

usage: check-layers.py SRCDIR BUILDDIR

Fails (exit 1, one line per finding) when, among the modules of daemon/
(a module is NAME.c with NAME.h, and NAME_impl.h if it has one: a
module's private object definitions, which its unit test may include):
  - the include graph has a cycle (a.h or a.c includes b.h, ... back to a);
  - the call graph has a cycle: a module's object file uses a symbol that
    another module's object defines (nm over BUILDDIR/daemon's objects);
  - a file includes, or its object calls, a module of a folder above its
    own in LAYERS below (the order HACKING.md's module map gives).
Within one folder, modules may call each other as long as no cycle forms.
"""
import glob
import os
import re
import subprocess
import sys

# Bottom to top. A folder may include and call its own and those before it.
# cli/ is apart: the client programs see no other daemon/ folder but base/'s
# log (they link conf/ and metric names, never a handler); the root (main)
# starts them.
LAYERS = ["port", "base", "rpc", "wb", "nfs3", "acl", "nlm", "mount", "ctl", "."]
APART = {"cli": {"cli", "base"}}


def modules(src):
    """{module: folder} and {module: [files]} for daemon/."""
    folder, files = {}, {}
    root = os.path.join(src, "daemon")
    for dirpath, _, names in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        for n in names:
            if n.endswith((".c", ".h")):
                m = n[:-2]
                if m.endswith("_impl"):
                    m = m[:-5]
                folder[m] = rel
                files.setdefault(m, []).append(os.path.join(dirpath, n))
    return folder, files


def includes(folder, files):
    graph = {m: set() for m in folder}
    for m, paths in files.items():
        for p in paths:
            with open(p, encoding="utf-8") as f:
                for line in f:
                    r = re.match(r'\s*#\s*include\s+"([^"]+)\.h"', line)
                    if r:
                        t = os.path.basename(r.group(1))
                        if t.endswith("_impl"):
                            t = t[:-5]
                        if t in folder and t != m:
                            graph[m].add(t)
    return graph


def calls(folder, build):
    defs, uses = {}, {}
    objs = glob.glob(os.path.join(build, "daemon", "**", "*.c.o"),
                     recursive=True)
    for o in objs:
        m = os.path.basename(o)[:-4]
        if m not in folder:
            continue
        out = subprocess.run(["nm", o], capture_output=True, text=True,
                             check=True).stdout
        for line in out.splitlines():
            p = line.split()
            if len(p) == 2 and p[0] == "U":
                uses.setdefault(m, set()).add(p[1])
            elif len(p) == 3 and p[1] in "TDBRVW":
                defs[p[2]] = m
    graph = {m: set() for m in folder}
    why = {}
    for m, syms in uses.items():
        for s in syms:
            t = defs.get(s)
            if t and t != m:
                graph[m].add(t)
                why.setdefault((m, t), s)
    return graph, why, len(objs)


def cycles(graph):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def allowed(src_folder, dst_folder):
    if src_folder == ".":
        return True
    if src_folder in APART:
        return dst_folder in APART[src_folder]
    if dst_folder in APART:
        return False
    if src_folder not in LAYERS or dst_folder not in LAYERS:
        return False
    return LAYERS.index(dst_folder) <= LAYERS.index(src_folder)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, build = sys.argv[1], sys.argv[2]
    folder, files = modules(src)
    bad = []
    for f in sorted(set(folder.values())):
        if f not in LAYERS and f not in APART:
            bad.append(f"daemon/{f}/: a folder not in LAYERS (scripts/check-layers.py)")
    inc = includes(folder, files)
    cal, why, nobj = calls(folder, build)
    if nobj == 0:
        bad.append(f"no object files under {build}/daemon: build first")
    for kind, graph in (("include", inc), ("call", cal)):
        for comp in cycles(graph):
            bad.append(f"{kind} cycle: {' '.join(comp)}")
        for m in sorted(graph):
            for t in sorted(graph[m]):
                if not allowed(folder[m], folder[t]):
                    how = f" ({why[(m, t)]})" if kind == "call" else ""
                    bad.append(f"{kind} upward: {folder[m]}/{m} -> "
                               f"{folder[t]}/{t}{how}")
    for line in bad:
        print(line)
    print(f"check-layers: {len(folder)} modules, {nobj} objects, "
          f"{len(bad)} findings")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
