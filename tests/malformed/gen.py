#!/usr/bin/env python3
"""gen.py OUTDIR SCHEDULE: write the malformed inputs of run.sh into OUTDIR.

Prints one line per input, 'NAME EXPECT', where EXPECT is
  error  fagen exits 1 with at least one 'FILE:LINE:COL: error:'
  ok     fagen exits 0 and reports no error
  any    fagen exits 0, or 1 with a located error (never a crash)
SCHEDULE is a valid schedule that the inputs are made from.  Everything is
deterministic: the random bytes come from a fixed seed.
"""
import os
import random
import sys

out, sched = sys.argv[1], sys.argv[2]
src = open(sched, "rb").read()
cases = []


def case(name, expect, data):
    with open(os.path.join(out, name + ".fa"), "wb") as f:
        f.write(data)
    cases.append((name, expect))


def edit(old, new):
    """The schedule with its first 'old' replaced; old must be there."""
    assert old in src, old
    return src.replace(old, new, 1)


N = 100000
CONST = b"const STAGES = 4;"
BODY = b"let s = it % STAGES;"

case("empty", "error", b"")
case("whitespace", "error", b" \t\n\r\n\f\v  \n" * 1000)
random.seed(1)
case("garbage", "error", bytes(random.getrandbits(8) for _ in range(65536)))
case("nul_in_decl", "error", edit(b"const TN", b"const\0TN"))
case("nul_in_body", "error", edit(b"wait full", b"wait \0\0full"))
case("nul_in_comment", "ok", edit(b"// tile rows", b"// tile\0rows"))
case("utf8_invalid_in_name", "error",
     edit(b"mbar full[STAGES]", b"mbar f\xc3\x28ull[STAGES]"))
case("utf8_valid_in_name", "error",
     edit(b"mbar full[STAGES]", b"mbar f\xc3\xbcll[STAGES]"))
case("utf8_invalid_in_comment", "ok",
     edit(b"// tile rows", b"// tile rows \xff\xfe \xc0\xaf \xed\xa0\x80 \xf8"))
case("utf8_invalid_in_block_comment", "ok",
     edit(CONST, CONST + b" /* \xff\xfe\n \xc0\xaf */"))
case("huge_int", "error", edit(CONST, b"const STAGES = 99999999999999999999999;"))
case("huge_hex", "error", edit(CONST, b"const STAGES = 0x1ffffffffffffffff;"))
case("huge_float", "error", edit(CONST, b"const STAGES = 1e999;"))
case("long_number", "error", edit(CONST, b"const STAGES = " + b"9" * 100000 + b";"))
case("bad_number", "error", edit(CONST, b"const STAGES = 4xyz;"))
case("deep_paren", "error",
     edit(CONST, b"const STAGES = " + b"(" * N + b"4" + b")" * N + b";"))
case("deep_bracket", "error",
     edit(CONST, b"const STAGES = " + b"[" * N + b"4" + b"]" * N + b";"))
case("deep_brace", "error",
     src + b"partition z warps=2..2 " + b"{" * N + b"}" * N + b"\n")
case("deep_unary_minus", "error", edit(CONST, b"const STAGES = " + b"-" * N + b"4;"))
case("deep_unary_mixed", "error",
     edit(CONST, b"const STAGES = " + b"!~-" * (N // 3) + b"4;"))
case("deep_ternary", "error",
     edit(CONST, b"const STAGES = " + b"true ? 1 : " * N + b"4;"))
case("long_sum", "error", edit(CONST, b"const STAGES = 1" + b" + 1" * N + b";"))
case("long_sum_in_body", "error", edit(BODY, b"let s = it" + b" + 1" * N + b";"))
case("long_field_chain", "error", edit(BODY, b"let s = t" + b".x" * N + b";"))
case("long_index_chain", "error", edit(BODY, b"let s = t" + b"[0]" * N + b";"))
case("long_call_chain", "error", edit(BODY, b"let s = f" + b"()" * N + b";"))
case("long_else_if_chain", "error",
     edit(BODY, BODY + b"\n\t\tif it == 0 { }" + b" else if it == 1 { }" * (N // 5)))
flat = b" ".join(l.split(b"//")[0].strip() for l in src.split(b"\n"))
case("line_1mb", "error", flat + b" " * (1 << 20) + b"$\n")
case("line_1mb_name", "error", b"a" * (1 << 20) + b"\n")
case("line_1mb_comment", "ok", edit(CONST, CONST + b" // " + b"x" * (1 << 20)))
case("line_1mb_error_first", "error", b"$" + flat + b" " * (1 << 20) + b"\n")
case("cr_line_ends", "error", edit(CONST, b"const STAGES = ;").replace(b"\n", b"\r"))
case("crlf_line_ends", "ok", src.replace(b"\n", b"\r\n"))
case("semicolons", "error", b";" * N)
case("semicolons_after", "error", src + b";" * N)
case("many_errors", "error", src + b"mbar ;\n" * (N // 10))
case("many_strays", "error", src + b"$\n" * (N // 10))
case("static_if_deep_ok", "ok", src + b"static if true {\n" * 200 + b"}\n" * 200)
case("static_if_too_deep", "error", src + b"static if true {\n" * 1000 + b"}\n" * 1000)
case("static_if_deep_body", "error",
     edit(b"\tvar it = 0;", b"\tstatic if true {" * 1000 + b"}" * 1000 + b"\n\tvar it = 0;"))
case("unclosed_comment_huge", "error", src + b"/*" + b" " * (1 << 20))
case("many_decls", "ok", src + b"".join(b"mbar m%d count=1;\n" % i for i in range(5000)))
for cut in range(0, len(src), 50):
    case("truncated_%05d" % cut, "error" if cut < 200 else "any", src[:cut])

for name, expect in cases:
    print(name, expect)
