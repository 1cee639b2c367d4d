/* fgdesc.c: the fagen half of the encoding oracle (issue #18).  Writes
 * on stdout the cases.inc that oracle.cpp checks against CUTLASS: one
 * call per shared-memory or instruction descriptor, with the operand it
 * describes and the values fagen's encoders (sm90_smem_desc,
 * sm100_smem_desc, sm100_idesc) give it.
 *
 *   fgdesc sweep                  every dtype, major-ness, swizzle and
 *                                 tcgen05 N the lowering accepts, over
 *                                 a set of tile shapes
 *   fgdesc kernel NAME FILE [-D NAME=VALUE]...
 *                                 every MMA of a schedule, at every
 *                                 stage of its operands
 *
 * In kernel mode it also reads the PTX it compiled and checks that
 * every wgmma and tcgen05.mma there takes exactly the descriptors the
 * encoders give, in order (the descriptor registers are followed from
 * 'and 262143; shr 4; cvt; or HI' through 'add.s64 OFF'), so that
 * what CUTLASS checks is what the kernel runs.  Exit 1 on a mismatch
 * or a compile error. */
#include <ctype.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fgc.h"
#include "ptx/ptxgen.h"
#include "sm100/sm100.h"
#include "sm90/sm90.h"

enum { SM90, SM100 };

typedef struct Mma {      /* one emitted MMA instruction's constants */
	int tgt;
	bool has_a;           /* A is a shared-memory descriptor */
	uint64_t a, b;        /* descriptors at address 0 */
	uint32_t idesc;       /* SM100 */
} Mma;

typedef struct List {
	Mma *v;
	int n, cap;
} List;

static void
push(List *l, Mma m)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		if (!(l->v = realloc(l->v, l->cap * sizeof *l->v))) {
			fputs("fgdesc: out of memory\n", stderr);
			exit(2);
		}
	}
	l->v[l->n++] = m;
}

static const char *
cty(Ty t)
{
	return t == TY_BF16 ? "bf16" : "f16";
}

static uint64_t
smem_desc(int tgt, uint32_t addr, const Res *x, bool mn, int kk)
{
	return tgt == SM100 ? sm100_smem_desc(addr, x, mn, kk) :
		sm90_smem_desc(addr, x, mn, kk);
}

/* One descriptor case: operand x (rows roff.. of it for A), used
 * MN-major or not, at shared address addr, all of its K-chunks. */
static void
put_smem(int tgt, bool isa, const Res *x, bool mn, int64_t roff,
	uint32_t addr, int nk, const char *what)
{
	int sw = x->lay->swizzle;

	printf("%s_%c<%s, %d, %s, %" PRId64 ", %" PRId64 "%s>(", tgt == SM100 ?
		"umma" : "gmma", isa ? 'a' : 'b', cty(x->ety), sw, mn ? "true" :
		"false", x->shape[0], x->shape[1], tgt == SM100 && isa ?
		", 128" : "");
	if (isa)
		printf("%" PRId64 ", ", roff);
	printf("0x%" PRIx32 ", \"%s\", {", addr, what);
	for (int kk = 0; kk < nk; kk++)
		printf("%s0x%016" PRIx64 "ull", kk ? ", " : "", smem_desc(tgt,
			addr + (uint32_t)(roff * sw), x, mn, kk));
	printf("});\n");
}

static void
put_idesc(Ty ety, int64_t m, int64_t n, bool amn, bool bmn, bool ts,
	const char *what)
{
	printf("umma_idesc<%s, %" PRId64 ", %" PRId64 ", %s, %s, %s>(\"%s\", "
		"0x%08" PRIx32 "u);\n", cty(ety), m, n, amn ? "true" : "false",
		bmn ? "true" : "false", ts ? "true" : "false", what,
		sm100_idesc(ety, amn, bmn, m, n));
}

static Res
tile(Ty ety, int sw, bool mn, int64_t r, int64_t c, Layout *l)
{
	*l = (Layout){.kind = LK_SMEM, .swizzle = sw, .mn_major = mn};
	return (Res){.kind = R_SMEM, .ety = ety, .rank = 2,
		.shape = {r, c}, .stages = 1, .lay = l};
}

/* fagen accepts 16-bit tiles with 32-, 64- and 128-byte swizzles, either
 * major-ness (an MN-major A whole: 64 rows on sm_90a), rows a multiple
 * of the span. */
static void
sweep(void)
{
	static const Ty tys[] = {TY_F16, TY_BF16};
	static const int sws[] = {32, 64, 128};
	static const int64_t mns[] = {64, 256}, ks[] = {64, 128};
	static const uint32_t addrs[] = {0, 0x2c400};
	char what[128];
	Layout l;

	for (int t = 0; t < 2; t++)
	for (int s = 0; s < 3; s++)
	for (int mn = 0; mn < 2; mn++)
	for (int i = 0; i < 2; i++)
	for (int j = 0; j < 2; j++)
	for (int tgt = SM90; tgt <= SM100; tgt++) {
		Ty ty = tys[t];
		int sw = sws[s];
		int64_t k = ks[j];
		Res b = mn ? tile(ty, sw, true, k, mns[i], &l) :
			tile(ty, sw, false, mns[i], k, &l);
		snprintf(what, sizeof what, "sweep %s B %s %s-major swizzle "
			"%d [%" PRId64 ", %" PRId64 "]", tgt ? "sm_100a" :
			"sm_90a", cty(ty), mn ? "MN" : "K", sw, b.shape[0],
			b.shape[1]);
		put_smem(tgt, false, &b, mn, 0, addrs[i], (int)k / 16, what);
		/* A: the MMA's M rows of a tile of 'rows' rows from roff
		 * (M is 64 on sm_90a, and on sm_100a the rows left below
		 * roff, lowered for 128); MN-major only whole */
		static const int64_t slices[2][4][2] = {
			{{64, 0}, {128, 0}, {128, 8}, {128, 64}},
			{{128, 0}, {136, 8}, {256, 128}, {128, 0}},
		};
		for (int q = 2 * i; q < 2 * i + 2; q++) {
			int64_t rows = slices[tgt][q][0], roff = slices[tgt][q][1];
			Res a = mn ? tile(ty, sw, true, k, rows, &l) :
				tile(ty, sw, false, rows, k, &l);
			/* MN-major only whole, and on sm_90a only 64 rows */
			if (mn && (roff || (tgt == SM90 && rows != 64)))
				continue;
			snprintf(what, sizeof what, "sweep %s A %s %s-major "
				"swizzle %d [%" PRId64 ", %" PRId64 "] rows %"
				PRId64 "..", tgt ? "sm_100a" : "sm_90a", cty(ty),
				mn ? "MN" : "K", sw, a.shape[0], a.shape[1], roff);
			put_smem(tgt, true, &a, mn, roff, addrs[j], (int)k / 16,
				what);
		}
	}
	/* tcgen05.mma kind::f16 is lowered for M = 128, N a multiple of 16
	 * in 16..256, A K- or MN-major in shared memory or K-major in
	 * tensor memory */
	for (int t = 0; t < 2; t++)
	for (int64_t n = 16; n <= 256; n += 16)
	for (int a = 0; a < 3; a++)
	for (int bmn = 0; bmn < 2; bmn++) {
		snprintf(what, sizeof what, "sweep idesc %s M 128 N %" PRId64
			" A %s B %s", cty(tys[t]), n, a == 2 ? "tmem" : a ?
			"MN" : "K", bmn ? "MN" : "K");
		put_idesc(tys[t], 128, n, a == 1, bmn, a == 2, what);
	}
}

/* ------------------------------------------------------------ kernels */

typedef struct Walk {
	const char *name;
	const SirPart *sp;
	bool pair;            /* a CTA pair's kernel: its MMAs are M = 256 */
	List want;            /* the encoders' constants, in emission order */
	int tgt;
	bool bad;
} Walk;

static void
put_stages(Walk *w, bool isa, const Res *x, bool mn, int64_t roff, int nk)
{
	char what[160];

	for (int s = 0; s < x->stages; s++) {
		int64_t at = x->off + s * x->bytes + roff * x->lay->swizzle;
		/* both encoders leave the base offset 0, which holds for an
		 * operand that starts on a swizzle atom (8 rows of a span) */
		if (at % (8 * x->lay->swizzle)) {
			fprintf(stderr, "fgdesc: %s: '%s' stage %d starts at byte "
				"%" PRId64 ", not on a %d-byte swizzle atom\n",
				w->name, x->name, s, at, 8 * x->lay->swizzle);
			w->bad = true;
		}
		snprintf(what, sizeof what, "%s: %s '%s' stage %d%s", w->name,
			isa ? "A" : "B", x->name, s, roff ? " (a row slice)" : "");
		put_smem(w->tgt, isa, x, mn, roff, (uint32_t)(x->off + s *
			x->bytes), nk, what);
	}
}

/* As sm100_tcmma and sm90_wgmma read the instruction. */
static void
mma(Walk *w, const SirIns *in)
{
	const Res *a = in->r[1], *b = in->r[2];
	bool bmn = !in->trans[2];
	int nk = (int)((bmn ? b->shape[0] : b->shape[1]) / 16);
	char what[160];

	if (in->op == SOP_tc_mma) {
		const Res *d = in->r[0];
		bool atm = a->kind == R_TMEM, amn = !atm && in->trans[1];
		/* a CTA pair's MMA is this CTA's rows and the other's */
		int64_t m = w->pair ? 2 * d->shape[0] : d->shape[0];
		snprintf(what, sizeof what, "%s: idesc of '%s' = '%s' @ '%s'",
			w->name, d->name, a->name, b->name);
		put_idesc(b->ety, m, d->shape[1], amn, bmn, atm, what);
		if (!atm)
			put_stages(w, true, a, amn, in->roff[1], nk);
		put_stages(w, false, b, bmn, 0, nk);
		for (int kk = 0; kk < nk; kk++)
			push(&w->want, (Mma){SM100, !atm, atm ? 0 :
				sm100_smem_desc(0, a, amn, kk), sm100_smem_desc(0, b,
				bmn, kk), sm100_idesc(b->ety, amn, bmn, m,
				d->shape[1])});
	} else {
		bool amn = a && in->trans[1];   /* 'X.T' of a major=MN A */
		if (a)
			put_stages(w, true, a, amn, in->roff[1], nk);
		put_stages(w, false, b, bmn, 0, nk);
		for (int kk = 0; kk < nk; kk++)
			push(&w->want, (Mma){SM90, a != NULL, a ?
				sm90_smem_desc(0, a, amn, kk) : 0,
				sm90_smem_desc(0, b, bmn, kk), 0});
	}
}

static void
walk(Walk *w, const SirBlock *bl)
{
	for (int i = 0; bl && i < bl->n; i++) {
		const SirIns *in = &bl->v[i];
		if (in->op == SOP_tc_mma || in->op == SOP_wgmma)
			mma(w, in);
		walk(w, in->body);
		walk(w, in->els);
	}
}

/* The PTX side: what each 64-bit register holds, as far as it is a
 * descriptor: 'and.b32 T, X, 262143; shr.u32 T, T, 4; cvt.u64.u32 D, T;
 * or.b64 D, D, HI' makes D the descriptor HI at the address in X, and
 * 'add.s64 E, D, OFF' moves it OFF (x 16 bytes).  A value is HI + OFF,
 * the descriptor at address 0. */
enum { NONE, MASKED, SHIFTED, CVT, DESC };

typedef struct Reg {
	int st;
	uint64_t v;
} Reg;

typedef struct Regs {
	Reg *r32, *r64;
	size_t n;
} Regs;

static Reg *
reg(Regs *rs, const char *tok)
{
	bool wide = !strncmp(tok, "%rd", 3);
	const char *p = tok + (wide ? 3 : 2);
	size_t i;

	if (strncmp(tok, "%r", 2) || !isdigit((unsigned char)*p))
		return NULL;
	i = strtoul(p, NULL, 10);
	if (i >= rs->n) {
		size_t n = 2 * i + 64;
		rs->r32 = realloc(rs->r32, n * sizeof(Reg));
		rs->r64 = realloc(rs->r64, n * sizeof(Reg));
		if (!rs->r32 || !rs->r64)
			exit(2);
		memset(rs->r32 + rs->n, 0, (n - rs->n) * sizeof(Reg));
		memset(rs->r64 + rs->n, 0, (n - rs->n) * sizeof(Reg));
		rs->n = n;
	}
	return wide ? &rs->r64[i] : &rs->r32[i];
}

/* Splits "op a, b, c;" into the opcode and up to 8 operands, braces
 * kept whole. */
static int
split(char *line, char **op, char *arg[8])
{
	char *p = line + strspn(line, " \t");
	int n = 0;

	*op = p;
	p += strcspn(p, " \t;");
	if (!*p)
		return 0;
	*p++ = '\0';
	while (n < 8) {
		p += strspn(p, " \t");
		if (!*p || *p == ';')
			break;
		arg[n++] = p;
		p += *p == '{' ? strcspn(p, "}") : strcspn(p, ",;");
		if (*p == '}')
			p++;
		char *end = p;
		p += strspn(p, " \t");
		if (*p == ',' || *p == ';')
			p++;
		*end = '\0';
	}
	return n;
}

static void
scrape(char *ptx, List *got)
{
	Regs rs = {0};
	char *save, *op, *arg[8];

	for (char *line = strtok_r(ptx, "\n", &save); line; line =
	    strtok_r(NULL, "\n", &save)) {
		int n = split(line, &op, arg);
		Reg *d = n ? reg(&rs, arg[0]) : NULL, *x = n > 1 ? reg(&rs,
			arg[1]) : NULL;
		if (!strncmp(op, "tcgen05.mma.", 12) && n == 5) {
			Reg *b = reg(&rs, arg[2]);
			bool ts = arg[1][0] == '[';
			push(got, (Mma){SM100, !ts, x && !ts && x->st == DESC ?
				x->v : ~0ull, b && b->st == DESC ? b->v : ~0ull,
				(uint32_t)strtoull(arg[3], NULL, 0)});
			continue;
		}
		if (!strncmp(op, "wgmma.mma_async.", 16) && n >= 4) {
			Reg *b = reg(&rs, arg[2]);
			bool rs_a = arg[1][0] == '{';
			push(got, (Mma){SM90, !rs_a, x && !rs_a && x->st ==
				DESC ? x->v : ~0ull, b && b->st == DESC ? b->v :
				~0ull, 0});
			continue;
		}
		if (!d)
			continue;
		Reg nd = {NONE, 0};
		if (!strcmp(op, "and.b32") && n == 3 &&
		    !strcmp(arg[2], "262143"))
			nd.st = MASKED;
		else if (!strcmp(op, "shr.u32") && n == 3 && x == d &&
		    d->st == MASKED && !strcmp(arg[2], "4"))
			nd.st = SHIFTED;
		else if (!strcmp(op, "cvt.u64.u32") && x && x->st == SHIFTED)
			nd.st = CVT;
		else if (!strcmp(op, "or.b64") && n == 3 && x == d &&
		    d->st == CVT)
			nd = (Reg){DESC, strtoull(arg[2], NULL, 0)};
		else if (!strcmp(op, "add.s64") && n == 3 && x &&
		    x->st == DESC)
			nd = (Reg){DESC, x->v + strtoull(arg[2], NULL, 0)};
		*d = nd;
	}
	free(rs.r32);
	free(rs.r64);
}

static char *
slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *p = NULL;
	long n;

	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) || !(p = malloc((size_t)n + 1)) ||
	    fread(p, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "fgdesc: cannot read '%s'\n", path);
		exit(2);
	}
	fclose(f);
	p[n] = '\0';
	*len = (size_t)n;
	return p;
}

static bool
same(const Mma *w, const Mma *g)
{
	return w->tgt == g->tgt && w->has_a == g->has_a && (!w->has_a ||
		w->a == g->a) && w->b == g->b && w->idesc == g->idesc;
}

/* Compiles the schedule, walks its MMAs and compares with its PTX. */
static int
check_kernel(Ctx *ctx, int argc, char **argv)
{
	Walk w = {.name = argv[2]};
	List got = {0};
	size_t len;
	int bad = 0;

	for (int i = 4; i < argc; i++) {
		if (!strcmp(argv[i], "--arch") && i + 1 < argc) {
			const Target *t = target_lookup(argv[++i]);
			if (!t) {
				fprintf(stderr, "fgdesc: bad --arch '%s'\n",
					argv[i]);
				return 2;
			}
			ctx->arch = t->id;
			continue;
		}
		if (!strncmp(argv[i], "-W", 2))
			continue;   /* a warning option: nothing to the encoders */
		const char *a = argv[i][2] ? argv[i] + 2 : argv[++i];
		const char *eq = a ? strchr(a, '=') : NULL;
		if (!eq || !ctx_define(ctx, intern(ctx->strs, a, (size_t)(eq -
		    a)), eq + 1)) {
			fprintf(stderr, "fgdesc: bad -D '%s'\n", a ? a : "");
			return 2;
		}
	}
	char *text = slurp(argv[3], &len);
	src_init(ctx, argv[3], text, len);
	if (driver_compile(ctx, EMIT_PTX, false)) {
		Buf d;
		buf_init(&d, &ctx->perm);
		diag_render(ctx, &d);
		fwrite(d.p, 1, d.len, stderr);
		fprintf(stderr, "fgdesc: %s does not compile\n", argv[2]);
		free(text);
		return 1;
	}
	w.tgt = ctx->kern->target == TGT_SM90A ? SM90 : SM100;
	for (int i = 0; i < ctx->sir->nparts; i++) {
		w.sp = ctx->sir->parts[i];
		w.pair = ctx->sir->k->pair;
		walk(&w, &w.sp->body);
	}
	char *ptx = malloc(ctx->out.len + 1);
	if (!ptx)
		exit(2);
	memcpy(ptx, ctx->out.p, ctx->out.len);
	ptx[ctx->out.len] = '\0';
	scrape(ptx, &got);
	bad = w.bad;
	if (got.n != w.want.n) {
		fprintf(stderr, "fgdesc: %s: the PTX has %d MMA instructions, "
			"the schedule's MMAs make %d\n", w.name, got.n, w.want.n);
		bad = 1;
	}
	for (int i = 0; got.n == w.want.n && i < got.n; i++) {
		const Mma *e = &w.want.v[i], *g = &got.v[i];
		if (same(e, g))
			continue;
		fprintf(stderr, "fgdesc: %s: MMA instruction %d of the PTX "
			"takes A 0x%016" PRIx64 " B 0x%016" PRIx64 " idesc 0x%08"
			PRIx32 "; the encoders give A 0x%016" PRIx64 " B 0x%016"
			PRIx64 " idesc 0x%08" PRIx32 "\n", w.name, i, g->a, g->b,
			g->idesc, e->a, e->b, e->idesc);
		bad = 1;
		break;      /* the first is enough */
	}
	if (!bad)
		fprintf(stderr, "fgdesc: %s: %d MMA instructions take the "
			"encoders' descriptors\n", w.name, got.n);
	free(ptx);
	free(text);
	free(got.v);
	free(w.want.v);
	return bad;
}

static int
kernel(int argc, char **argv)
{
	jmp_buf oom;
	Ctx ctx;

	if (setjmp(oom)) {
		fputs("fgdesc: out of memory\n", stderr);
		return 2;
	}
	ctx_init(&ctx, arena_default_alloc, NULL, &oom);
	int r = check_kernel(&ctx, argc, argv);
	ctx_free(&ctx);
	return r;
}

int
main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "sweep")) {
		sweep();
		return 0;
	}
	if (argc >= 4 && !strcmp(argv[1], "kernel"))
		return kernel(argc, argv);
	fputs("usage: fgdesc sweep\n"
		"       fgdesc kernel NAME FILE [-D NAME=VALUE]...\n", stderr);
	return 2;
}
