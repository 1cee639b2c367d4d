#!/usr/bin/env python3
"""check-dag.py: the include graph between compiler/'s stage folders is a
DAG, and the targets are plug-ins (issue #19, docs/ARCHITECTURE.md).

Reads every '#include "..."' in compiler/ and grammar/, maps each file and
each included header to its stage folder (compiler/ptx/x.c -> ptx; a file
directly in compiler/ -> top; grammar/ -> front) and fails when
  - the folders' graph has a cycle (printed as one),
  - a folder includes a target folder (sm90, sm100, ...) other than itself
    (targets talk to the rest only through ptx/target.h), or
  - a file inside a stage includes the top-level umbrella fgc.h.
Usage: check-dag.py [SRCDIR]   (default: the repository this file is in)
"""
import os
import re
import sys

TARGETS = re.compile(r"^sm\d+$")  # target folders: sm90, sm100, sm120...
INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def stage_of(rel):
    """compiler/ptx/ptxgen.c -> 'ptx'; compiler/driver.c -> 'top'."""
    parts = rel.split("/")
    if parts[0] == "grammar":
        return "front"
    if len(parts) == 2:
        return "top"
    return parts[1]


def header_stage(inc, known):
    """"ptx/ptxgen.h" -> 'ptx'; "fgc.h" -> 'top'; others (flex/bison
    output, lexstate.h) -> None, not a stage."""
    if "/" in inc:
        s = inc.split("/")[0]
        return s if s in known else None
    if inc in ("fgc.h", "driver.h"):
        return "top"
    return None


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..")
    files = []
    for top in ("compiler", "grammar"):
        for d, _, names in os.walk(os.path.join(root, top)):
            for n in sorted(names):
                if n.endswith((".c", ".h", ".y", ".l")):
                    files.append(os.path.relpath(os.path.join(d, n), root))
    known = {stage_of(f) for f in files if f.startswith("compiler/")}
    edges = {}   # (from, to) -> first file:line that makes the edge
    errors = []
    for f in sorted(files):
        text = open(os.path.join(root, f), encoding="utf-8").read()
        src = stage_of(f)
        for m in INC.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            dst = header_stage(m.group(1), known)
            if dst is None or dst == src:
                continue
            where = "%s:%d: #include \"%s\"" % (f, line, m.group(1))
            if dst == "top" and src != "top":
                errors.append("%s: a stage includes the umbrella header; "
                              "include the stages' own headers" % where)
            if TARGETS.match(dst):
                errors.append("%s: '%s' includes the target folder '%s'; "
                              "targets are reached only through "
                              "ptx/target.h" % (where, src, dst))
            edges.setdefault((src, dst), where)
    graph = {}
    for (a, b) in edges:
        graph.setdefault(a, set()).add(b)
    # a cycle, found by depth-first search with colours
    colour, stack = {}, []

    def visit(n):
        colour[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if colour.get(m) == 1:
                cyc = stack[stack.index(m):] + [m]
                errors.append("cycle between stage folders: " +
                              " -> ".join(cyc))
                for a, b in zip(cyc, cyc[1:]):
                    errors.append("  %s -> %s: %s" % (a, b, edges[(a, b)]))
                return True
            if colour.get(m) is None and visit(m):
                return True
        stack.pop()
        colour[n] = 2
        return False

    for n in sorted(graph):
        if colour.get(n) is None and visit(n):
            break
    if errors:
        for e in errors:
            print("check-dag: " + e)
        return 1
    print("check-dag: %d files, stage folders %s, %d edges, no cycle" %
          (len(files), " ".join(sorted(known)), len(edges)))
    for (a, b) in sorted(edges):
        print("  %s -> %s" % (a, b))
    return 0


if __name__ == "__main__":
    sys.exit(main())
