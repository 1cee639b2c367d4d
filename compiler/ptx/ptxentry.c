/* ptxentry.c: the PTX module around the partitions: header, the metadata
 * comment that the runtime reads to launch the kernel, the entry's
 * parameters and directives, and the prologue (thread indices, mbarrier
 * initialisation, tensor-map prefetch, dispatch by warp range with
 * setmaxnreg). */
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"
#include "ptx/ptx.h"
#include "ptx/ptxgen.h"

/* A runtime size as a postfix program over params, for the runtime to
 * evaluate at launch: integers, '$name' for a param, and the operators
 * + - * / % min max cdiv.  Constants are folded by the compiler. */
static void
rpn(Ctx *ctx, const Kernel *k, const Node *e, Buf *out)
{
	const Res *r = e->kind == N_NAME ? kernel_find(k, e->name) : NULL;

	/* sema checked these names: params and integer consts only */
	if (r && r->kind == R_PARAM) {
		buf_printf(out, " $%s", e->name);
		return;
	}
	if (r && r->kind == R_CONST) {
		buf_printf(out, " %lld", (long long)r->cval.i);
		return;
	}
	if (e->kind == N_INT) {
		buf_printf(out, " %lld", (long long)e->ival);
		return;
	}
	if (e->kind == N_BINARY) {
		rpn(ctx, k, e->a, out);
		rpn(ctx, k, e->b, out);
		buf_printf(out, " %c", (char)e->op);
		return;
	}
	if (e->kind == N_CALL && e->kids.n == 2) {
		rpn(ctx, k, e->kids.v[0], out);
		rpn(ctx, k, e->kids.v[1], out);
		buf_printf(out, " %s", e->a->name);
		return;
	}
	Val v;
	if (e->kind == N_CALL && e->kids.n == 1 && !strcmp(e->a->name,
	    "sizeof") && const_eval(ctx, k, e, &v)) {
		buf_printf(out, " %lld", (long long)v.i);
		return;
	}
	if (e->kind == N_TERNARY && const_eval(ctx, k, e->a, &v)) {
		rpn(ctx, k, v.i ? e->b : e->c, out);  /* sema: a constant */
		return;
	}
	if (e->kind == N_UNARY && e->op == '-') {
		buf_puts(out, " 0");
		rpn(ctx, k, e->a, out);
		buf_puts(out, " -");
		return;
	}
	buf_puts(out, " ?");  /* sema rejects anything else */
}

static void
metadata(Ctx *ctx, const Kernel *k, Buf *out)
{
	static const char *const ord[] = {"?", "single", "persistent", "lpt"};
	int argi = 0;

	buf_printf(out, "// fagen %s: kernel '%s' for %s. Generated; do not "
		"edit.\n", FAGEN_VERSION, k->name, target_get(k->target)->name);
	buf_printf(out, "// fagen.kernel name=%s target=%s threads=%d "
		"cluster=%d,%d,%d smem=%lld order=%s tiles=%d", k->name,
		target_get(k->target)->name, k->threads, k->cluster[0],
		k->cluster[1], k->cluster[2], (long long)k->smem_bytes,
		ord[k->order], k->ntile_dims);
	if (k->tmem_cols)
		buf_printf(out, " tmem=%d", k->tmem_cols);
	if (k->per_sm == 0 && k->order != ORD_SINGLE)
		buf_puts(out, " per_sm=max");
	else if (k->per_sm > 1 && k->order != ORD_SINGLE)
		buf_printf(out, " per_sm=%d", k->per_sm);
	if (k->pdl)
		buf_puts(out, " pdl=1");
	buf_putc(out, '\n');
	buf_puts(out, "// fagen.grid");
	for (int i = 0; i < k->ntile_dims; i++) {
		buf_puts(out, i ? " ;" : "");
		rpn(ctx, k, k->tile_dims[i], out);
	}
	buf_putc(out, '\n');
	for (const Res *r = k->res; r; r = r->next) {
		int64_t inner, bb;
		switch (r->kind) {
		case R_GLOBAL:
			buf_printf(out, "// fagen.arg %d global %s %s rank=%d dims",
				argi++, r->name, ty_name(r->ety), r->rank);
			for (int i = 0; i < r->rank; i++) {
				buf_puts(out, i ? " ;" : "");
				rpn(ctx, k, r->dims[i], out);
			}
			buf_putc(out, '\n');
			/* 'strided': its strides, bound by the runtime */
			if (r->strided)
				buf_printf(out, "// fagen.arg %d strides %s_st of=%s\n",
					argi++, r->name, r->name);
			break;
		case R_TMA:
			pg_tma_blocks(r, &inner, &bb);
			buf_printf(out, "// fagen.arg %d tma %s of=%s box=", argi++,
				r->name, r->of->name);
			for (int i = 0; i < r->rank; i++)
				buf_printf(out, "%s%lld", i ? "," : "", (long long)
					(i == r->rank - 1 ? inner : r->shape[i]));
			buf_printf(out, " swizzle=%d oob=%s\n", r->swizzle,
				r->oob_nan ? "nan" : "zero");
			break;
		case R_PARAM:
			buf_printf(out, "// fagen.arg %d param %s %s\n", argi++,
				r->name, ty_name(r->ety));
			break;
		default:
			break;
		}
	}
	/* globals addressed by ld/st, as dense tensors of their dims: the
	 * runtime refuses other strides for them */
	for (const Res *r = k->res; r; r = r->next)
		if (r->kind == R_GLOBAL && r->direct)
			buf_printf(out, "// fagen.direct %s\n", r->name);
	/* globals cp_async reads in 16-byte chunks: their address and row
	 * strides must be 16-byte multiples */
	for (const Res *r = k->res; r; r = r->next)
		if (r->kind == R_GLOBAL && r->cpasync)
			buf_printf(out, "// fagen.cpasync %s\n", r->name);
	buf_puts(out, "\n");
}

static void
params(PG *g)
{
	char line[160];

	for (const Res *r = g->k->res; r; r = r->next) {
		if (r->kind == R_GLOBAL && r->strided) {
			snprintf(line, sizeof line, ".param .u64 %s", r->name);
			ptx_param(g->f, line);
			snprintf(line, sizeof line, ".param .align 8 .b8 %s_st[%d]",
				r->name, 8 * r->rank);
		} else if (r->kind == R_GLOBAL)
			snprintf(line, sizeof line, ".param .u64 %s", r->name);
		else if (r->kind == R_TMA)
			snprintf(line, sizeof line, ".param .align 64 .b8 %s[128]",
				r->name);
		else if (r->kind == R_PARAM)
			snprintf(line, sizeof line, ".param .%s %s",
				r->ety == TY_F32 ? "f32" : (r->ety == TY_I64 ||
				r->ety == TY_U64) ? "u64" : "u32", r->name);
		else
			continue;
		ptx_param(g->f, line);
	}
}

static void
directives(PG *g)
{
	char line[96];
	const Kernel *k = g->k;

	snprintf(line, sizeof line, ".maxntid %d, 1, 1", k->threads);
	ptx_directive(g->f, line);
	if (k->maxnreg) {
		snprintf(line, sizeof line, ".maxnreg %d", k->maxnreg);
		ptx_directive(g->f, line);
	}
	if (k->cluster[0] * k->cluster[1] * k->cluster[2] > 1) {
		ptx_directive(g->f, ".explicitcluster");
		snprintf(line, sizeof line, ".reqnctapercluster %d, %d, %d",
			k->cluster[0], k->cluster[1], k->cluster[2]);
		ptx_directive(g->f, line);
	}
}

/* Thread 0 initialises every mbarrier and prefetches the tensor maps;
 * then the whole CTA (and cluster) synchronises once. */
static void
prologue(PG *g)
{
	PReg p = ptx_reg(g->f, RP);
	int done = ptx_label(g->f);

	ptx_emit(g->f, "mov.u32 %R, %%tid.x;", g->tid);
	ptx_emit(g->f, "shr.u32 %R, %R, 5;", g->warp, g->tid);
	ptx_emit(g->f, "and.b32 %R, %R, 31;", g->lane, g->tid);
	ptx_emit(g->f, "mov.u32 %R, fg_smem;", g->smem);
	ptx_emit(g->f, "setp.ne.u32 %R, %R, 0;", p, g->tid);
	ptx_emit(g->f, "@%R bra %L;", p, done);
	for (const Res *r = g->k->res; r; r = r->next) {
		if (r->kind == R_TMA) {
			PReg a = ptx_reg(g->f, RB64);
			ptx_emit(g->f, "mov.b64 %R, %S;", a, r->name);
			ptx_emit(g->f, "cvta.param.u64 %R, %R;", a, a);
			ptx_emit(g->f, "prefetch.tensormap [%R];", a);
		}
		if (r->kind != R_MBAR)
			continue;
		for (int i = 0; i < r->count; i++) {
			PReg a = ptx_reg(g->f, RB32);
			ptx_emit(g->f, "add.s32 %R, %R, %I;", a, g->smem,
				r->off + 8 * i);
			ptx_emit(g->f, "mbarrier.init.shared::cta.b64 [%R], %I;", a,
				r->mcount);
		}
	}
	if (g->t->hopper)  /* sm_80: the bar.sync below publishes them */
		ptx_emit(g->f, "fence.mbarrier_init.release.cluster;");
	ptx_place(g->f, done);
	if (g->k->cluster[0] * g->k->cluster[1] * g->k->cluster[2] > 1) {
		ptx_emit(g->f, "barrier.cluster.arrive.release.aligned;");
		ptx_emit(g->f, "barrier.cluster.wait.acquire.aligned;");
	} else {
		ptx_emit(g->f, "bar.sync 0;");
	}
}

static void
partition(PG *g, const SirPart *sp, int end)
{
	const Part *pt = sp->part;
	PReg p = ptx_reg(g->f, RP);
	int next = ptx_label(g->f);

	if (pt->index >= 0)
		ptx_comment(g->f, "partition %s[%d]: warps %d..%d", pt->name,
			pt->index, pt->warp_lo, pt->warp_hi);
	else
		ptx_comment(g->f, "partition %s: warps %d..%d", pt->name,
			pt->warp_lo, pt->warp_hi);
	ptx_emit(g->f, "setp.lt.u32 %R, %R, %I;", p, g->warp,
		(int64_t)pt->warp_lo);
	ptx_emit(g->f, "@%R bra %L;", p, next);
	ptx_emit(g->f, "setp.gt.u32 %R, %R, %I;", p, g->warp,
		(int64_t)pt->warp_hi);
	ptx_emit(g->f, "@%R bra %L;", p, next);
	g->sp = sp;
	g->part_end = end;
	g->map = NEWARR(&g->ctx->scratch, PReg, sp->nvals ? sp->nvals : 1);
	for (uint32_t i = 0; i < sp->nvals; i++)
		g->map[i].id = UINT32_MAX;
	g->frag = NEWARR(&g->ctx->scratch, PReg *, sp->nvals ? sp->nvals : 1);
	g->aff = NEWARR(&g->ctx->scratch, int64_t *, sp->nvals ? sp->nvals :
		1);
	g->absof = NEWARR(&g->ctx->scratch, Ref, sp->nvals ? sp->nvals : 1);
	memset(g->tileref, 0, sizeof g->tileref);
	pg_body(g, &sp->body);
	ptx_emit(g->f, "bra.uni %L;", end);
	ptx_place(g->f, next);
}

/* With register budgets, code is dispatched by warpgroup first: each
 * warpgroup's branch runs its setmaxnreg, then the partitions it holds.
 * ptxas honours setmaxnreg only when the code after it is the code of
 * that warpgroup alone; a partition spanning several warpgroups is
 * emitted once in each of their branches. */
static void
by_warpgroup(PG *g, int end)
{
	const Kernel *k = g->k;
	int nwg = (k->threads / 32 + 3) / 4;
	PReg wg = ptx_reg(g->f, RB32), p = ptx_reg(g->f, RP);

	ptx_emit(g->f, "shr.u32 %R, %R, 2;", wg, g->warp);
	for (int w = 0; w < nwg && !g->failed; w++) {
		int next = ptx_label(g->f), r = k->wg_regs[w];
		ptx_comment(g->f, "warpgroup %d: warps %d..%d", w, 4 * w,
			4 * w + 3);
		ptx_emit(g->f, "setp.ne.u32 %R, %R, %I;", p, wg, (int64_t)w);
		ptx_emit(g->f, "@%R bra %L;", p, next);
		if (r && r != k->maxnreg)
			ptx_emit(g->f, "setmaxnreg.%S.sync.aligned.u32 %I;",
				r > k->maxnreg ? "inc" : "dec", (int64_t)r);
		for (int i = 0; i < g->m->nparts && !g->failed; i++) {
			const Part *pt = g->m->parts[i]->part;
			if (pt->warp_hi / 4 >= w && pt->warp_lo / 4 <= w)
				partition(g, g->m->parts[i], end);
		}
		ptx_emit(g->f, "bra.uni %L;", end);
		ptx_place(g->f, next);
	}
}

/* The targets' emitters (target.h), one line each. */
static const TargetOps *const targets[] = {
	&sm90_ops,
	&sm100_ops,
	&sm80_ops,
	&sm120_ops,
};

static const TargetOps *
target_ops(TargetId id)
{
	for (size_t i = 0; i < COUNT(targets); i++)
		if (targets[i]->id == id)
			return targets[i];
	fg_bug("no emitter for target %d", (int)id);
}

bool
ptx_gen(Ctx *ctx, const SirMod *m, Buf *out)
{
	PG g = {.ctx = ctx, .m = m, .k = m->k, .t = ctx->target,
		.ops = target_ops(ctx->target->id)};
	Buf globals;

	buf_init(&globals, &ctx->perm);
	g.globals = &globals;
	g.f = ptx_new(&ctx->perm, m->k->name);
	g.tid = ptx_reg(g.f, RB32);
	g.warp = ptx_reg(g.f, RB32);
	g.lane = ptx_reg(g.f, RB32);
	g.smem = ptx_reg(g.f, RB32);
	params(&g);
	directives(&g);
	prologue(&g);
	int end = ptx_label(g.f);
	if (m->k->maxnreg)
		by_warpgroup(&g, end);
	else
		for (int i = 0; i < m->nparts && !g.failed; i++)
			partition(&g, m->parts[i], end);
	ptx_place(g.f, end);
	ptx_emit(g.f, "ret;");
	if (g.failed)
		return false;
	metadata(ctx, m->k, out);
	buf_printf(out, ".version %s\n.target %s\n.address_size 64\n\n",
		g.t->ptx_version, g.t->name);
	buf_puts(out, ".extern .shared .align 1024 .b8 fg_smem[];\n\n");
	if (g.nmsg) {
		buf_puts(out, ".extern .func (.param .b32 func_retval0) vprintf("
			".param .b64 vprintf_param_0, .param .b64 "
			"vprintf_param_1);\n");
		buf_puts(out, globals.p);
		buf_puts(out, "\n");
	}
	ptx_finish(g.f, out);
	return true;
}
