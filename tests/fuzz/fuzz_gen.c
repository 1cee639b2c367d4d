/* fuzz_gen.c: a libFuzzer target that reads its input as the choices of a
 * schedule generator, not as schedule text (issue #29).  Byte mutation
 * (fuzz_compile.c) keeps inputs under 16 KB and rarely keeps a program
 * valid enough to reach the later passes; this one turns a few hundred
 * bytes into a well-formed schedule of up to MAXOUT bytes: many and long
 * declarations and const chains, partitions and families, bodies of
 * thousands of statements from repeat counts, 'static for' nested in
 * 'static for', runtime loops and branches nested deep, and constant
 * expressions over hostile values (INT64_MIN, shifts, negation).
 *
 * What it looks for: a pass that is slow in the program's size (run.sh
 * gives each input FUZZ_TIMEOUT seconds, 10 for this target, while a
 * linear compile of MAXOUT bytes takes well under one), memory growth
 * (-rss_limit_mb), and, as fuzz_compile does, sanitizer reports and
 * internal errors.  Built and run by tests/fuzz/run.sh (FUZZ_TARGET=gen);
 * FAGEN_FUZZ_GEN_SAVE=FILE writes the last generated schedule to FILE, to
 * reproduce an artifact with the CLI. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fgc.h"

enum { MAXOUT = 1 << 20, MAXNEST = 40, MAXNAMES = 64 };

typedef struct R R;
struct R {
	const uint8_t *p;
	size_t n, i;
	Buf *out;
	int depth;
	int nconst;         /* c0 .. c{nconst-1} declared */
	const char *vars[MAXNAMES];
	char names[MAXNAMES][16];
	int nvars;
	int uniq;
};

/* Small values first: most choices keep the program valid, so that it
 * reaches the later passes; the hostile ones come one time in 64. */
static const char *const lits[] = {
	"0", "1", "2", "3", "4", "7", "16", "64",
	"4096", "65536", "2147483647", "9223372036854775807",
	"-9223372036854775807 - 1", "(1 << 62)", "(3 << 61)", "(0 - 1)",
};
static const char *const binops[] = {
	"+", "-", "*", "&", "|", "^", "/", "%", "<<", ">>", "<", "==",
};

static unsigned pick(struct R *, unsigned);

static const char *
lit(struct R *r)
{
	return lits[pick(r, 64) != 63 ? pick(r, 8) : 8 + pick(r, 8)];
}

static const char *
binop(struct R *r)
{
	return binops[pick(r, 8) ? pick(r, 6) : pick(r, COUNT(binops))];
}

static unsigned
pick(struct R *r, unsigned n)
{
	return r->i < r->n ? r->p[r->i++] % n : 0;
}

/* A count from 1 up to 2^bits, mostly small. */
static int
count(R *r, int bits)
{
	unsigned b = pick(r, 256);

	return 1 + (int)((b & 0x3f) % 8) + (b & 0xc0 ? 0 :
		(int)((1u << (b % (unsigned)(bits + 1))) - 1));
}

static bool
full(const R *r)
{
	return r->out->len > MAXOUT;
}

/* A constant expression over literals and the consts declared so far. */
static void
cexpr(R *r, int depth)
{
	switch (depth > 4 ? pick(r, 2) : pick(r, 6)) {
	case 0:
		buf_puts(r->out, lit(r));
		break;
	case 1:
		if (r->nconst)
			buf_printf(r->out, "c%u", (pick(r, 256) * 256u +
				pick(r, 256)) % (unsigned)r->nconst);
		else
			buf_puts(r->out, "1");
		break;
	case 2: case 3:
		buf_putc(r->out, '(');
		cexpr(r, depth + 1);
		buf_printf(r->out, " %s ", binop(r));
		cexpr(r, depth + 1);
		buf_putc(r->out, ')');
		break;
	case 4:
		buf_puts(r->out, "-");
		cexpr(r, depth + 1);
		break;
	default:
		buf_puts(r->out, "min(");
		cexpr(r, depth + 1);
		buf_puts(r->out, ", ");
		cexpr(r, depth + 1);
		buf_putc(r->out, ')');
	}
}

/* A runtime expression: constants, variables in scope, tid. */
static void
rexpr(R *r, int depth)
{
	unsigned c = depth > 3 ? pick(r, 3) : pick(r, 5);

	if (c == 0 || (c == 1 && !r->nvars))
		buf_puts(r->out, pick(r, 2) ? "tid" : lit(r));
	else if (c == 1)
		buf_puts(r->out, r->vars[pick(r, (unsigned)r->nvars)]);
	else if (c == 2)
		cexpr(r, 3);
	else {
		buf_putc(r->out, '(');
		rexpr(r, depth + 1);
		buf_printf(r->out, " %s ", binops[pick(r, 3)]);
		rexpr(r, depth + 1);
		buf_putc(r->out, ')');
	}
}

static void body(R *r);

/* Kinds 0..2 declare a name in the current block; the others do not and
 * may be repeated. */
static void
stmt(R *r, unsigned kind)
{
	if (full(r))
		return;
	switch (kind) {
	case 0:
		if (r->nvars < MAXNAMES) {
			snprintf(r->names[r->nvars], sizeof r->names[0], "v%d",
				r->uniq++);
			buf_printf(r->out, "var %s = ", r->names[r->nvars]);
			rexpr(r, 0);
			buf_puts(r->out, ";\n");
			r->vars[r->nvars] = r->names[r->nvars];
			r->nvars++;
			break;
		}
		/* fallthrough */
	case 1:
		buf_printf(r->out, "let l%d = ", r->uniq++);
		rexpr(r, 0);
		buf_puts(r->out, ";\n");
		break;
	case 2:
		buf_printf(r->out, "static if ");
		cexpr(r, 2);
		buf_printf(r->out, " > 0 { let q%d = ", r->uniq++);
		cexpr(r, 1);
		buf_puts(r->out, "; }\n");
		break;
	case 3: case 4:
		buf_printf(r->out, "%s += ", r->vars[pick(r,
			(unsigned)r->nvars)]);
		rexpr(r, 0);
		buf_puts(r->out, ";\n");
		break;
	case 5:
		buf_puts(r->out, "if ");
		rexpr(r, 0);
		buf_puts(r->out, " > 3 ");
		body(r);
		if (pick(r, 2)) {
			buf_puts(r->out, " else ");
			body(r);
		}
		buf_putc(r->out, '\n');
		break;
	case 6:
		buf_printf(r->out, "for i%d in 0..", r->depth);
		rexpr(r, 2);
		buf_putc(r->out, ' ');
		body(r);
		buf_putc(r->out, '\n');
		break;
	case 7: case 8:
		buf_printf(r->out, "static for s%d in 0..%d ", r->depth,
			count(r, 13));
		body(r);
		buf_putc(r->out, '\n');
		break;
	case 9:
		buf_puts(r->out, "elect ");
		body(r);
		buf_putc(r->out, '\n');
		break;
	default: {
		/* one statement, many times */
		int k = count(r, 14);
		size_t at = r->out->len, len;
		stmt(r, 3 + pick(r, 7));
		len = r->out->len - at;
		/* a copy: appending may move the buffer */
		const char *one = arena_strndup(r->out->a, r->out->p + at, len);
		for (int j = 1; j < k && !full(r) && len; j++)
			buf_putn(r->out, one, len);
	}
	}
}

static void
body(R *r)
{
	int n = count(r, 3);
	int nv = r->nvars;

	r->depth++;
	buf_puts(r->out, "{\n");
	for (int i = 0; i < n && !full(r); i++)
		stmt(r, r->depth >= MAXNEST ? pick(r, 5) : pick(r, 12));
	buf_puts(r->out, "}");
	r->depth--;
	r->nvars = nv;
}

static void
generate(R *r)
{
	static const char *const types[] = {"bf16", "f16", "f32"};
	int nparts, warps = 0;

	buf_printf(r->out, "kernel k target=%s;\n", pick(r, 2) ? "sm_90a" :
		"sm_100a");
	buf_printf(r->out, "cta threads=1024;\ntiles grid=(%d);\n",
		1 + (int)pick(r, 4));
	for (int n = count(r, 16), i = 0; i < n && !full(r); i++) {
		/* mostly a chain of small values: one hostile constant
		 * stops the compile before the bodies */
		buf_printf(r->out, "const c%d = ", i);
		if (pick(r, 32) == 31)
			cexpr(r, 0);
		else if (i && pick(r, 2))
			buf_printf(r->out, "c%u %% 64 + %u", pick(r, 256) %
				(unsigned)i, pick(r, 8));
		else
			buf_printf(r->out, "%u", pick(r, 256));
		buf_puts(r->out, ";\n");
		r->nconst = i + 1;
	}
	for (int n = count(r, 2) - 1, i = 0; i < n; i++) {
		buf_printf(r->out, "smem b%d : %s[%d][64, ", i,
			types[pick(r, 3)], 1 + (int)pick(r, 4));
		if (pick(r, 32) != 31)
			buf_printf(r->out, "%d", 64 << pick(r, 2));
		else
			cexpr(r, 3);
		buf_puts(r->out, "] swizzle=128;\n");
	}
	for (int n = count(r, 3) - 1, i = 0; i < n; i++) {
		buf_printf(r->out, "mbar m%d[", i);
		if (pick(r, 32) != 31)
			buf_printf(r->out, "%d", 1 + (int)pick(r, 4));
		else
			cexpr(r, 2);
		buf_puts(r->out, "] count=1;\n");
	}
	nparts = count(r, 5);
	for (int i = 0; i < nparts && warps < 32 && !full(r); i++) {
		int fam = pick(r, 8) ? 0 : 1 + (int)pick(r, 3);
		if (fam && warps + fam <= 32)
			buf_printf(r->out, "partition p%d[j < %d] warps=%d + j ",
				i, fam, warps);
		else
			buf_printf(r->out, "partition p%d warps=%d ", i,
				warps);
		warps += fam && warps + fam <= 32 ? fam : 1;
		r->nvars = 0;
		r->vars[r->nvars++] = "x";
		r->depth = 0;
		buf_puts(r->out, "{\nvar x = tid;\n");
		body(r);
		buf_puts(r->out, "\n}\n");
	}
}

/* Compiles the generated text as the CLI would (PTX, or --check with the
 * other target), with --verify-each; the same checks as fuzz_compile. */
static void
compile(const uint8_t *data, size_t size)
{
	jmp_buf oom;
	Ctx ctx;
	Buf text, diags;
	R r = {.p = data, .n = size};
	bool check = size && data[0] & 1;
	int nerr;

	if (setjmp(oom)) {  /* the default allocator failed: not a bug here */
		ctx_free(&ctx);
		return;
	}
	ctx_init(&ctx, arena_default_alloc, NULL, &oom);
	ctx.verify_each = true;
	buf_init(&text, &ctx.perm);
	r.out = &text;
	if (size)
		r.i = 1;
	generate(&r);
	const char *save = getenv("FAGEN_FUZZ_GEN_SAVE");
	FILE *f = save ? fopen(save, "wb") : NULL;
	if (f) {  /* the text, to reproduce with the CLI */
		fwrite(text.p, 1, text.len, f);
		fclose(f);
	}
	src_init(&ctx, "gen.fa", text.p, text.len);
	nerr = driver_compile(&ctx, EMIT_PTX, check);
	buf_init(&diags, &ctx.perm);
	diag_render(&ctx, &diags);
	if (nerr < 0)
		fg_bug("driver_compile returned %d", nerr);
	if (nerr > 0 && ctx.nerr == 0)
		fg_bug("%d errors reported, none recorded", nerr);
	if (nerr > 0 && diags.len == 0)
		fg_bug("a failed compile rendered no diagnostic");
	if (nerr == 0 && !check && ctx.out.len == 0)
		fg_bug("a compile without errors produced no output");
	ctx_free(&ctx);
}

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	compile(data, size);
	return 0;
}
