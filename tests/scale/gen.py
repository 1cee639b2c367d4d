#!/usr/bin/env python3
"""gen.py SHAPE N: a schedule of size N in one dimension (issue #29).

Shapes: stmts (N lines 'x += 1;' in one partition), lets (N 'let's that
all read the first), consts (N const declarations), parts (N partitions),
chain (a const chain of length N), ifs (N runtime 'if's), nest (runtime
'for's nested N deep), sfor (two nested 'static for's unrolling N
statements), attrs (one declaration with N attributes)."""
import sys

HEAD = "kernel k target=sm_90a;\ncta threads=32;\ntiles grid=(1);\n"


def part(body):
    return HEAD + "partition p warps=0 {\n" + body + "}\n"


def gen(shape, n):
    if shape == "stmts":
        return part("  var x = 0;\n" + "  x += 1;\n" * n)
    if shape == "lets":
        return part("  let x0 = tid;\n" + "".join(
            "  let a%d = x0 + 1;\n" % i for i in range(n)))
    if shape == "consts":
        return HEAD + "".join("const c%d = %d;\n" % (i, i)
                              for i in range(n)) + "partition p warps=0 { }\n"
    if shape == "parts":
        return HEAD.replace("threads=32", "threads=1024") + "".join(
            "partition p%d warps=0 { }\n" % i for i in range(n))
    if shape == "chain":
        return HEAD + "const c0 = 1;\n" + "".join(
            "const c%d = c%d;\n" % (i, i - 1) for i in range(1, n)) + \
            "partition p warps=0 { let y = c%d; }\n" % (n - 1)
    if shape == "ifs":
        return part("  var x = tid;\n" + "  if x > 3 { x += 1; }\n" * n)
    if shape == "nest":
        return part("  var x = 0;\n" + "".join(
            "  for i%d in 0..tid {\n" % i for i in range(n)) +
            "  x += 1;\n" + "  }\n" * n)
    if shape == "sfor":
        return part("  var x = 0;\n  static for i in 0..64 {\n"
                    "    static for j in 0..%d { x += j; }\n  }\n" % (n // 64))
    if shape == "attrs":
        return HEAD + "mbar b" + " count=1" * n + \
            ";\npartition p warps=0 { }\n"
    raise SystemExit("gen.py: unknown shape " + shape)


if __name__ == "__main__":
    sys.stdout.write(gen(sys.argv[1], int(sys.argv[2])))
