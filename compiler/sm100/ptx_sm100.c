/* ptx_sm100.c: Blackwell's instruction rows (see ptx_sm90.c for the
 * template language) and tcgen05.mma.  sm_100a has no wgmma; it has
 * tcgen05 and tensor memory, whose fences are single instructions.
 * Validated by ptxas only: no Blackwell GPU has run this output, so the
 * descriptor and layout facts below are from the PTX ISA, CUTLASS and
 * FlashAttention-4's cute sources. */
#include <stdio.h>

#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"
#include "ptx/ptx.h"
#include "ptx/ptxgen.h"
#include "sm100/sm100.h"

const PtxRow sm100_rows[] = {
	{SOP_exp2, ANY, "ex2.approx.ftz.f32 %=, %0;"},
	{SOP_log2, ANY, "lg2.approx.ftz.f32 %=, %0;"},
	{SOP_rcp, ANY, "rcp.approx.ftz.f32 %=, %0;"},
	{SOP_tanh, ANY, "tanh.approx.f32 %=, %0;"},
	{SOP_sqrt, ANY, "sqrt.approx.ftz.f32 %=, %0;"},
	{SOP_rsqrt, ANY, "rsqrt.approx.ftz.f32 %=, %0;"},
	{SOP_fence, FENCE_ASYNC_SMEM, "fence.proxy.async.shared::cta;"},
	{SOP_fence, FENCE_MBAR_INIT, "fence.mbarrier_init.release.cluster;"},
	{SOP_fence, FENCE_ACQ_REL, "fence.acq_rel.cta;"},
	{SOP_fence, FENCE_TMEM_BEFORE, "tcgen05.fence::before_thread_sync;"},
	{SOP_fence, FENCE_TMEM_AFTER, "tcgen05.fence::after_thread_sync;"},
	{SOP_tma_commit, ANY, "cp.async.bulk.commit_group;"},
	{SOP_tma_wait, 0, "cp.async.bulk.wait_group %i;"},
	{SOP_tma_wait, 1, "cp.async.bulk.wait_group.read %i;"},
	{0, 0, NULL},
};

/* A tcgen05 shared-memory descriptor (PTX ISA 9.7.16.4.1): wgmma's
 * fields (start address >> 4 in bits 0-13, leading byte offset >> 4 in
 * 16-29, stride byte offset >> 4 in 32-45), the fixed version 1 at bit
 * 46, and the swizzle mode in bits 61-63: 2 = 128B, 4 = 64B, 6 = 32B
 * (the bits wgmma's 1, 2, 3 set at 62-63).  desc_hi is all but the start
 * address, for operand x used MN-major or not. */
static uint64_t
desc_hi(const Res *x, bool mn)
{
	int swizzle = x->lay->swizzle;
	uint64_t code = swizzle == 128 ? 2 : swizzle == 64 ? 4 : 6;
	int64_t lbo, sbo;

	pg_desc_offs(x, mn, &lbo, &sbo);
	return ((uint64_t)(lbo >> 4) & 0x3fff) << 16 |
		((uint64_t)(sbo >> 4) & 0x3fff) << 32 | 1ull << 46 | code << 61;
}

uint64_t
sm100_smem_desc(uint32_t addr, const Res *x, bool mn, int kk)
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

/* The instruction descriptor of kind::f16 (PTX ISA 9.7.16.4.2): D f32
 * (bits 4-5 = 1), A and B bf16 (1) or f16 (0) at 7 and 10, A and B
 * MN-major at 15 and 16, N >> 3 at 17-22, M >> 4 at 24-28 (bit 23 is
 * reserved). */
uint32_t
sm100_idesc(Ty ety, bool amn, bool bmn, int64_t m, int64_t n)
{
	uint32_t fmt = ety == TY_BF16;

	return 1u << 4 | fmt << 7 | fmt << 10 | (uint32_t)amn << 15 |
		(uint32_t)bmn << 16 | (uint32_t)(n >> 3) << 17 |
		(uint32_t)(m >> 4) << 24;
}

/* A's descriptor (shared memory, K-major or MN-major) or its TMEM
 * address (packed 16-bit, K-major: K-chunk kk is 8 columns further). */
static PReg
a_operand(PG *g, const SirIns *in, bool amn)
{
	const Res *a = in->r[1];
	int sa = a->lay ? a->lay->swizzle : 0;

	if (a->kind == R_TMEM)
		return sm100_tmem_addr(g, a, in->ri[1], 0, false);
	PReg base = pg_stage_base(g, a, in->ri[1]);
	if (in->roff[1])
		ptx_emit(g->f, "add.s32 %R, %R, %I;", base, base,
			in->roff[1] * sa);
	return desc(g, base, a, amn);
}

/* mma D (=|+=) A @ B on sm_100a, inside 'elect': one
 * tcgen05.mma.cta_group::1.kind::f16 per K-chunk of 16 (::2, M = 256,
 * in a CTA pair: the leader issues it for both CTAs), D in tensor
 * memory, A from shared or tensor memory, B from shared memory.  The
 * first chunk enables the old D with the accumulate flag, the rest
 * always.  Completion is the schedule's business: 'commit B'. */
void
sm100_tcmma(PG *g, const SirIns *in)
{
	const Res *d = in->r[0], *a = in->r[1], *b = in->r[2];
	bool bmn = !in->trans[2], atm = a->kind == R_TMEM;
	bool amn = !atm && in->trans[1];
	int64_t m = d->shape[0], n = d->shape[1];
	int64_t k = bmn ? b->shape[0] : b->shape[1];
	int sb = b->lay->swizzle, sa = atm ? 0 : a->lay->swizzle;
	char en[16];

	if (m != 128) {
		diag_error(g->ctx, in->span, "tcgen05.mma with M = %lld is not "
			"lowered: its accumulator's lanes in tensor memory (PTX "
			"'Layout F') are not the rows of a tmem_rows tile",
			(long long)m);
		g->failed = true;
		return;
	}
	if (!sb || (!atm && (!sa || in->roff[1] % 8 || (amn && in->roff[1])))) {
		diag_error(g->ctx, in->span, "tcgen05.mma is lowered for "
			"swizzled shared-memory operands ('arow' a multiple of 8, "
			"and none for an MN-major A)");
		g->failed = true;
		return;
	}
	PReg dt = sm100_tmem_addr(g, d, in->ri[0], 0, false);
	PReg bd = desc(g, pg_stage_base(g, b, in->ri[2]), b, bmn);
	PReg ad = a_operand(g, in, amn);
	PReg bk = ptx_reg(g->f, RB64);
	PReg ak = ptx_reg(g->f, atm ? RB32 : RB64);
	/* a CTA pair's MMA is M = 256: this CTA's 128 rows and the other's */
	uint32_t id = sm100_idesc(b->ety, amn, bmn, g->k->pair ? 256 : m, n);
	const char *grp = g->k->pair ? "2" : "1";

	if (in->a[0])
		ptx_regname(g->f, pg_reg(g, in->a[0]), en);
	else
		snprintf(en, sizeof en, "%d", in->imm ? 1 : 0);
	for (int kk = 0; kk < k / 16; kk++) {
		int64_t boff = pg_desc_koff(b, bmn, kk);
		PReg bx = bd, ax = ad;
		if (boff) {
			ptx_emit(g->f, "add.s64 %R, %R, %I;", bk, bd, boff >> 4);
			bx = bk;
		}
		if (kk && atm) {
			ptx_emit(g->f, "add.s32 %R, %R, %I;", ak, ad,
				(int64_t)(8 * kk));
			ax = ak;
		} else if (kk) {
			ptx_emit(g->f, "add.s64 %R, %R, %I;", ak, ad,
				pg_desc_koff(a, amn, kk) >> 4);
			ax = ak;
		}
		ptx_emit(g->f, atm ? "tcgen05.mma.cta_group::%S.kind::f16 "
			"[%R], [%R], %R, %U, %S;" : "tcgen05.mma.cta_group::%S."
			"kind::f16 [%R], %R, %R, %U, %S;", grp, dt, ax, bx,
			(uint64_t)id, kk ? "1" : en);
	}
}
