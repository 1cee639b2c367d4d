/* ptx_sm90.c: Hopper's instruction rows: SIR ops that are one PTX
 * instruction on sm_90a (STYLE B6, QBE's omap).  '%=' is the result,
 * '%0'..'%2' the operands, '%i' the instruction's immediate.  Rows are
 * keyed by op and, where the op has variants, by its immediate.
 * Multi-instruction features (wgmma, TMA, mbarrier waits) are emit_*
 * functions in ptxsync.c. */
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"
#include "ptx/ptx.h"
#include "ptx/ptxgen.h"
#include "sm90/sm90.h"

const PtxRow sm90_rows[] = {
	{SOP_exp2, ANY, "ex2.approx.ftz.f32 %=, %0;"},
	{SOP_log2, ANY, "lg2.approx.ftz.f32 %=, %0;"},
	{SOP_rcp, ANY, "rcp.approx.ftz.f32 %=, %0;"},
	{SOP_tanh, ANY, "tanh.approx.f32 %=, %0;"},
	{SOP_sqrt, ANY, "sqrt.approx.ftz.f32 %=, %0;"},
	{SOP_rsqrt, ANY, "rsqrt.approx.ftz.f32 %=, %0;"},
	{SOP_fence, FENCE_ASYNC_SMEM, "fence.proxy.async.shared::cta;"},
	{SOP_fence, FENCE_MBAR_INIT, "fence.mbarrier_init.release.cluster;"},
	{SOP_fence, FENCE_ACQ_REL, "fence.acq_rel.cta;"},
	{SOP_tma_commit, ANY, "cp.async.bulk.commit_group;"},
	{SOP_tma_wait, 0, "cp.async.bulk.wait_group %i;"},
	{SOP_tma_wait, 1, "cp.async.bulk.wait_group.read %i;"},
	{SOP_wgmma_commit, ANY, "wgmma.commit_group.sync.aligned;"},
	{SOP_wgmma_wait, ANY, "wgmma.wait_group.sync.aligned %i;"},
	{0, 0, NULL},
};

/* A wgmma shared-memory matrix descriptor (PTX ISA 9.7.15.5.1.2): start
 * address >> 4 in bits 0-13, leading byte offset >> 4 in 16-29, stride
 * byte offset >> 4 in 32-45, the swizzle mode in 62-63 (1 = 128B,
 * 2 = 64B, 3 = 32B).  desc_hi is all but the start address, for operand
 * x used MN-major or not. */
static uint64_t
desc_hi(const Res *x, bool mn)
{
	int swizzle = x->lay->swizzle;
	uint64_t code = swizzle == 128 ? 1 : swizzle == 64 ? 2 : 3;
	int64_t lbo, sbo;

	pg_desc_offs(x, mn, &lbo, &sbo);
	return ((uint64_t)(lbo >> 4) & 0x3fff) << 16 |
		((uint64_t)(sbo >> 4) & 0x3fff) << 32 | code << 62;
}

uint64_t
sm90_smem_desc(uint32_t addr, const Res *x, bool mn, int kk)
{
	return ((addr & 262143) >> 4 | desc_hi(x, mn)) +
		(uint64_t)(pg_desc_koff(x, mn, kk) >> 4);
}

static PReg
desc(PG *g, PReg addr, const Res *x, bool mn)
{
	PReg t = ptx_reg(g->f, RB32), d = ptx_reg(g->f, RB64);

	ptx_emit(g->f, "and.b32 %R, %R, 262143;", t, addr);
	ptx_emit(g->f, "shr.u32 %R, %R, 4;", t, t);
	ptx_emit(g->f, "cvt.u64.u32 %R, %R;", d, t);
	ptx_emit(g->f, "or.b64 %R, %R, %U;", d, d, desc_hi(x, mn));
	return d;
}

/* mma D (=|+=) A @ B on sm_90a: one wgmma.mma_async m64nNk16 per K-chunk
 * of 16, after a wgmma.fence (the accumulator or A registers may have
 * been written by ordinary instructions).  The first chunk scales D by
 * the accumulate flag; the rest accumulate.  Completion is the
 * schedule's business: mma_commit and mma_wait. */
void
sm90_wgmma(PG *g, const SirIns *in)
{
	const SirVal *dv = &g->sp->vals[in->dst];
	const Res *a = in->r[1], *b = in->r[2];
	int nd, na = 0, n = dv->n;
	PReg *d = pg_frag(g, in->dst, &nd), *ar = NULL;
	bool bmn = !in->trans[2];  /* B used as [K, N] with N contiguous */
	bool amn = a && in->trans[1];  /* A used as [M, K] with M contiguous */
	int64_t k = bmn ? b->shape[0] : b->shape[1];
	const char *ty = ty_name(b->ety);
	char nm[16];
	Buf dl;

	if (!d || !b->lay->swizzle || (a && (!a->lay->swizzle ||
	    in->roff[1] % 8 || (amn && in->roff[1])))) {
		diag_error(g->ctx, in->span, "this wgmma needs swizzled "
			"operands (and 'arow' a multiple of 8, or none for an "
			"MN-major A) to be lowered");
		g->failed = true;
		return;
	}
	if (!a && !(ar = pg_frag(g, in->a[1], &na))) {
		pg_unsupported(g, in);
		return;
	}
	buf_init(&dl, &g->ctx->scratch);
	for (int i = 0; i < nd; i++)
		buf_printf(&dl, "%s%s", i ? ", " : "{", ptx_regname(g->f, d[i],
			nm));
	buf_putc(&dl, '}');

	PReg bd = desc(g, pg_stage_base(g, b, in->ri[2]), b, bmn);
	PReg ad = {0};
	if (a) {
		PReg base = pg_stage_base(g, a, in->ri[1]);
		if (in->roff[1])
			ptx_emit(g->f, "add.s32 %R, %R, %I;", base, base,
				in->roff[1] * a->lay->swizzle);
		ad = desc(g, base, a, amn);
	}
	PReg p = ptx_reg(g->f, RP);
	if (in->a[0]) {
		ptx_emit(g->f, "mov.pred %R, %R;", p, pg_reg(g, in->a[0]));
	} else {
		PReg t = ptx_reg(g->f, RB32);
		ptx_emit(g->f, "mov.u32 %R, %I;", t, in->imm);
		ptx_emit(g->f, "setp.ne.u32 %R, %R, 0;", p, t);
	}
	ptx_emit(g->f, "wgmma.fence.sync.aligned;");
	PReg bk = ptx_reg(g->f, RB64), ak = ptx_reg(g->f, RB64);
	for (int kk = 0; kk < k / 16; kk++) {
		int64_t boff = pg_desc_koff(b, bmn, kk);
		char sc[16];
		ptx_emit(g->f, "add.s64 %R, %R, %I;", bk, bd, boff >> 4);
		snprintf(sc, sizeof sc, "%s", kk ? "1" : ptx_regname(g->f, p,
			nm));
		if (a) {
			ptx_emit(g->f, "add.s64 %R, %R, %I;", ak, ad,
				pg_desc_koff(a, amn, kk) >> 4);
			/* imm-trans-a, imm-trans-b: MN-major operands */
			ptx_emit(g->f, "wgmma.mma_async.sync.aligned.m64n%Ik16."
				"f32.%S.%S %S, %R, %R, %S, 1, 1, %I, %I;",
				(int64_t)n, ty, ty, dl.p, ak, bk, sc,
				(int64_t)amn, (int64_t)bmn);
		} else {
			char al[80];
			snprintf(al, sizeof al, "{%s, ", ptx_regname(g->f,
				ar[4 * kk], nm));
			for (int r = 1; r < 4; r++) {
				strcat(al, ptx_regname(g->f, ar[4 * kk + r], nm));
				strcat(al, r < 3 ? ", " : "}");
			}
			ptx_emit(g->f, "wgmma.mma_async.sync.aligned.m64n%Ik16."
				"f32.%S.%S %S, %S, %R, %S, 1, 1, %I;",
				(int64_t)n, ty, ty, dl.p, al, bk, sc,
				(int64_t)bmn);
		}
	}
}

/* Register tiles are ptx/frag.c's; the MMA is wgmma. */
static bool
tile_op(PG *g, const SirIns *in)
{
	if (in->op == SOP_wgmma) {
		sm90_wgmma(g, in);
		return true;
	}
	return pg_frag_op(g, in);
}

const TargetOps sm90_ops = {
	.id = TGT_SM90A,
	.rows = sm90_rows,
	.tile_regs = pg_frag_regs,
	.tile_op = tile_op,
	.elem_keys = pg_frag_keys,
};
