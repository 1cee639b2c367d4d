/* common.c: lowering helpers that every target shares -- the storage of
 * register tiles (their shape comes from the target's tile_regs hook),
 * shared-memory stage bases, the K-major operand offsets of wgmma and
 * tcgen05.mma, and exp2 on the FMA pipe.  Requires a PG set up by
 * ptxentry.c. */
#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"
#include "ptx/ptx.h"
#include "ptx/ptxgen.h"

/* The registers of a tile, allocated on first use. */
PReg *
pg_frag(PG *g, Ref r, int *n)
{
	const SirVal *v = &g->sp->vals[r];
	RKind k;
	int cnt = pg_blocked_regs(v, &k);

	if (cnt < 0)
		cnt = g->ops->tile_regs(v, &k);

	if (cnt <= 0) {
		*n = 0;
		return NULL;
	}
	if (!g->frag[r]) {
		g->frag[r] = NEWARR(&g->ctx->perm, PReg, (size_t)cnt);
		for (int i = 0; i < cnt; i++)
			g->frag[r][i] = ptx_reg(g->f, k);
	}
	*n = cnt;
	return g->frag[r];
}

/* d = 2^x on the FMA and integer pipes, for exp2(x, poly=N): x clamped
 * to [-127, 127] and split as j + f with j = round(x) (the 1.5 * 2^23
 * trick), 2^f for |f| <= 1/2 by a degree-3 polynomial (minimax relative
 * error 7.5e-5, below f16's half ulp), and j added to its exponent.  An
 * exponent that underflows makes the integer negative, and the max with
 * 0 turns it into +0: -inf and x < -127 give 0 like ex2.approx.ftz;
 * x > 127 gives about 2^127 where the MUFU gives inf; NaN gives 0. */
void
pg_exp2_poly(PG *g, PReg d, PReg x)
{
	PReg c = ptx_reg(g->f, RF32), t = ptx_reg(g->f, RF32);
	PReg j = ptx_reg(g->f, RF32), p = ptx_reg(g->f, RF32);
	PReg e = ptx_reg(g->f, RB32), b = ptx_reg(g->f, RB32);

	ptx_emit(g->f, "max.f32 %R, %R, 0fC2FE0000;", c, x);
	ptx_emit(g->f, "min.f32 %R, %R, 0f42FE0000;", c, c);
	ptx_emit(g->f, "add.rn.f32 %R, %R, 0f4B400000;", t, c);
	ptx_emit(g->f, "sub.rn.f32 %R, %R, 0f4B400000;", j, t);
	ptx_emit(g->f, "sub.rn.f32 %R, %R, %R;", c, c, j);
	ptx_emit(g->f, "fma.rn.f32 %R, %R, 0f3D61FB53, 0f3E786EE6;", p, c);
	ptx_emit(g->f, "fma.rn.f32 %R, %R, %R, 0f3F31798D;", p, p, c);
	ptx_emit(g->f, "fma.rn.f32 %R, %R, %R, 0f3F7FFB4A;", p, p, c);
	ptx_emit(g->f, "mov.b32 %R, %R;", e, t);
	ptx_emit(g->f, "shl.b32 %R, %R, 23;", e, e);
	ptx_emit(g->f, "mov.b32 %R, %R;", b, p);
	ptx_emit(g->f, "add.s32 %R, %R, %R;", b, b, e);
	ptx_emit(g->f, "max.s32 %R, %R, 0;", b, b);
	ptx_emit(g->f, "mov.b32 %R, %R;", d, b);
}

PReg
pg_stage_base(PG *g, const Res *b, Ref idx)
{
	PReg a = ptx_reg(g->f, RB32);

	if (!idx || g->sp->vals[idx].isconst) {
		int64_t i = idx ? g->sp->vals[idx].ci : 0;
		ptx_emit(g->f, "add.s32 %R, %R, %I;", a, g->smem,
			b->off + i * b->bytes);
	} else {
		ptx_emit(g->f, "mad.lo.s32 %R, %R, %I, %R;", a,
			pg_u32(g, idx), b->bytes, g->smem);
		ptx_emit(g->f, "add.s32 %R, %R, %I;", a, a, b->off);
	}
	return a;
}

/* An smem_store/smem_load's buffer address: base, or with 'cta=K' CTA
 * K's copy of it (mapa.shared::cluster); *space the state space its
 * accesses name. */
PReg
pg_smem_base(PG *g, const SirIns *in, PReg base, const char **space)
{
	*space = in->cta ? "shared::cluster" : "shared";
	if (!in->cta)
		return base;
	PReg pb = ptx_reg(g->f, RB32);
	ptx_emit(g->f, "mapa.shared::cluster.u32 %R, %R, %R;", pb, base,
		pg_u32(g, in->cta));
	return pb;
}

/* The byte offset of K-chunk kk (16 elements) in a K-major operand of
 * 'rows' rows: span-wide column blocks of rows x span bytes.  The same
 * for wgmma and tcgen05.mma. */
int64_t
pg_kmajor_off(const Res *x, int kk)
{
	int esz = ty_bytes(x->ety), span = x->lay->swizzle;
	int64_t per = span / esz, k0 = 16 * kk;

	return k0 / per * x->shape[0] * span + k0 % per * esz;
}

/* The byte offsets in the shared-memory descriptor of a swizzled operand
 * laid out as above (the same for wgmma and tcgen05.mma, PTX ISA
 * "matrix descriptor"): K-major, the leading offset is unused (16 by
 * convention) and the stride offset steps 8 rows; MN-major (rows are K,
 * columns M or N), the leading offset steps a span-wide column block of
 * all the rows and the stride offset 8 rows. */
void
pg_desc_offs(const Res *x, bool mn, int64_t *lbo, int64_t *sbo)
{
	int span = x->lay->swizzle;

	*lbo = mn ? x->shape[0] * span : 16;
	*sbo = 8 * span;
}

/* The byte offset of K-chunk kk (16 elements) from the operand's start:
 * 16 rows of an MN-major operand, pg_kmajor_off of a K-major one. */
int64_t
pg_desc_koff(const Res *x, bool mn, int kk)
{
	return mn ? 16 * kk * x->lay->swizzle : pg_kmajor_off(x, kk);
}

/* Whether every operand of in is f32 (a tile of f32 elements or an f32
 * scalar). */
bool
pg_all_f32(PG *g, const SirIns *in)
{
	for (int k = 0; k < in->na; k++) {
		const SirVal *v = &g->sp->vals[in->a[k]];
		if (v->ty == TY_FRAG ? v->ety != TY_F32 : v->ty != TY_F32)
			return false;
	}
	return true;
}

/* An elementwise f32 op on register tiles: one instruction per register
 * of the result (exp2 with poly=N: N of every 8 registers by the
 * polynomial), its operands' registers given by the target's broadcast
 * rule elem(g, operand, register, ctx). */
void
pg_elementwise(PG *g, const SirIns *in, PgElem elem, int ctx)
{
	static const char *const op2[] = {
		[SOP_add] = "add.f32", [SOP_sub] = "sub.f32",
		[SOP_mul] = "mul.f32", [SOP_div] = "div.rn.f32",
		[SOP_min] = "min.f32", [SOP_max] = "max.f32",
	};
	static const char *const op1[] = {
		[SOP_neg] = "neg.f32", [SOP_exp2] = "ex2.approx.ftz.f32",
		[SOP_log2] = "lg2.approx.ftz.f32", [SOP_rcp] = "rcp.approx.ftz.f32",
		[SOP_tanh] = "tanh.approx.f32",
		[SOP_sqrt] = "sqrt.approx.ftz.f32",
		[SOP_rsqrt] = "rsqrt.approx.ftz.f32",
	};
	int n;
	PReg *d = pg_frag(g, in->dst, &n);
	const char *o = in->na == 2 ? (in->op < COUNT(op2) ? op2[in->op] :
		NULL) : in->op < COUNT(op1) ? op1[in->op] : NULL;

	if (!d || !o || !pg_all_f32(g, in)) {
		pg_unsupported(g, in);
		return;
	}
	for (int j = 0; j < n; j++) {
		if (in->na == 2)
			ptx_emit(g->f, "%S %R, %R, %R;", o, d[j],
				elem(g, in->a[0], j, ctx),
				elem(g, in->a[1], j, ctx));
		else if (in->op == SOP_exp2 && j % 8 < in->imm)
			pg_exp2_poly(g, d[j], elem(g, in->a[0], j, ctx));
		else
			ptx_emit(g->f, "%S %R, %R;", o, d[j],
				elem(g, in->a[0], j, ctx));
	}
}
