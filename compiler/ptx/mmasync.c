/* mmasync.c: the MMA of the targets with mma.sync (sm80/, sm120/): per
 * warp, ldmatrix from the swizzled shared-memory tiles and mma.sync
 * m16n8k16 into the m64 fragments of ptx/frag.c (four warps' m16n8
 * fragments, stacked by warp % 4, are exactly wgmma's m64 ones). */
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"
#include "ptx/ptx.h"
#include "ptx/ptxgen.h"

/* One MMA operand in shared memory, as ldmatrix reads it: a tile stored
 * [rows][cols] the way a TMA box lies (span-wide column blocks, the
 * swizzle's XOR of each 16-byte chunk with the row), read in 8 x 8
 * matrices of 16-bit elements at stored rows and columns that are
 * multiples of 16.  Lane l gives the address of one row of one matrix:
 * pattern 1 (an A [m][k], or B stored [k][n] read .trans) row l & 15,
 * column 8 (l >> 4); pattern 2 (B stored [n][k], or A stored [k][m]
 * read .trans) row (l & 7) + 8 (l >> 4), column 8 ((l >> 3) & 1).  With
 * the row base a multiple of 8, the XOR depends on the lane's row only
 * and the static column's bits are disjoint from the lane's, so each
 * ldmatrix is base + row offset + (static column ^ lane's XOR). */
typedef struct Opd {
	const Res *x;
	int64_t span, colstride;  /* bytes per row of a column block; block */
	PReg b, l;  /* this lane's base address and column XOR */
} Opd;

/* rt: a runtime offset (or {0}) added to the stored rows (col false) or
 * columns (col true), a multiple of 16 elements; stat: its static part. */
static void
opd_init(PG *g, Opd *o, const Res *x, Ref stage, int pattern, PReg rt,
	bool col)
{
	int sw = x->lay->swizzle;
	int64_t rowbytes = x->shape[x->rank - 1] * 2;
	PReg r = ptx_reg(g->f, RB32), c = ptx_reg(g->f, RB32);
	PReg t = ptx_reg(g->f, RB32);

	o->x = x;
	o->span = sw ? sw : rowbytes;
	o->colstride = x->shape[0] * o->span;
	o->b = ptx_reg(g->f, RB32);
	o->l = ptx_reg(g->f, RB32);
	if (pattern == 1) {
		ptx_emit(g->f, "and.b32 %R, %R, 15;", r, g->lane);
		ptx_emit(g->f, "shr.u32 %R, %R, 4;", c, g->lane);
	} else {
		ptx_emit(g->f, "shr.u32 %R, %R, 4;", t, g->lane);
		ptx_emit(g->f, "and.b32 %R, %R, 7;", r, g->lane);
		ptx_emit(g->f, "shl.b32 %R, %R, 3;", t, t);
		ptx_emit(g->f, "add.s32 %R, %R, %R;", r, r, t);
		ptx_emit(g->f, "shr.u32 %R, %R, 3;", c, g->lane);
		ptx_emit(g->f, "and.b32 %R, %R, 1;", c, c);
	}
	/* l = (lane's column chunk << 4) ^ the row's swizzle XOR */
	ptx_emit(g->f, "shl.b32 %R, %R, 4;", o->l, c);
	if (sw) {
		ptx_emit(g->f, "mul.lo.s32 %R, %R, %I;", t, r, o->span);
		ptx_emit(g->f, "shr.u32 %R, %R, 7;", t, t);
		ptx_emit(g->f, "and.b32 %R, %R, %I;", t, t, (int64_t)(sw / 16 -
			1));
		ptx_emit(g->f, "shl.b32 %R, %R, 4;", t, t);
		ptx_emit(g->f, "xor.b32 %R, %R, %R;", o->l, o->l, t);
	}
	PReg base = pg_stage_base(g, x, stage);
	ptx_emit(g->f, "mad.lo.s32 %R, %R, %I, %R;", o->b, r, o->span, base);
	if (!rt.id)
		return;
	if (!col) {  /* rows: a multiple of 16, so the XOR is unchanged */
		ptx_emit(g->f, "mad.lo.s32 %R, %R, %I, %R;", o->b, rt, o->span,
			o->b);
		return;
	}
	/* columns: block (rt*2 / span) and the chunk bits within it */
	ptx_emit(g->f, "shl.b32 %R, %R, 1;", t, rt);
	ptx_emit(g->f, "div.u32 %R, %R, %I;", c, t, o->span);
	ptx_emit(g->f, "mad.lo.s32 %R, %R, %I, %R;", o->b, c, o->colstride,
		o->b);
	ptx_emit(g->f, "rem.u32 %R, %R, %I;", t, t, o->span);
	ptx_emit(g->f, "xor.b32 %R, %R, %R;", o->l, o->l, t);
}

/* ldmatrix.x(n) of the matrices at stored row r0, column c0 (elements,
 * multiples of 16) into v[0..n-1]. */
static void
ldm(PG *g, const Opd *o, int64_t r0, int64_t c0, bool trans, int n,
	PReg *v)
{
	int64_t cb = c0 * 2, within = cb % o->span;
	int64_t off = cb / o->span * o->colstride + r0 * o->span;
	PReg a = ptx_reg(g->f, RB32);
	char nm[4][16];

	if (within) {
		ptx_emit(g->f, "xor.b32 %R, %R, %I;", a, o->l, within);
		ptx_emit(g->f, "add.s32 %R, %R, %R;", a, a, o->b);
	} else {
		ptx_emit(g->f, "add.s32 %R, %R, %R;", a, o->l, o->b);
	}
	for (int i = 0; i < n; i++) {
		v[i] = ptx_reg(g->f, RB32);
		ptx_regname(g->f, v[i], nm[i]);
	}
	if (n == 4)
		ptx_emit(g->f, "ldmatrix.sync.aligned.m8n8.x4%S.shared.b16 "
			"{%S, %S, %S, %S}, [%R+%I];", trans ? ".trans" : "",
			nm[0], nm[1], nm[2], nm[3], a, off);
	else
		ptx_emit(g->f, "ldmatrix.sync.aligned.m8n8.x2%S.shared.b16 "
			"{%S, %S}, [%R+%I];", trans ? ".trans" : "", nm[0], nm[1],
			a, off);
}

/* mma D (=|+=) A @ B on sm_80: per 16-deep K chunk the warp's A
 * fragment (ldmatrix.x4 of its 16 rows, or four registers of a register
 * A tile), then per pair of 8-column n-tiles one ldmatrix.x4 of B (.x2
 * for a last single one) and an mma.sync m16n8k16 per n-tile into the
 * accumulator's registers 4j..4j+3.  Synchronous: D is ready after it.
 * Without the accumulate flag D starts from zeros. */
void
pg_mma_sync(PG *g, const SirIns *in)
{
	const SirVal *dv = &g->sp->vals[in->dst];
	const Res *a = in->r[1], *b = in->r[2];
	int nd, na = 0, n = dv->n;
	PReg *d = pg_frag(g, in->dst, &nd), *ar = NULL;
	bool bmn = !in->trans[2];  /* B stored [K, N]: read .trans */
	bool amn = a && in->trans[1];  /* A stored [K, M]: read .trans */
	int64_t k = bmn ? b->shape[0] : b->shape[1];
	const char *ty = ty_name(b->ety);
	char nm[16], al[96], dl[96];

	/* sema: 16-bit operands, arow a multiple of 16 */
	if (!d || (!a && !(ar = pg_frag(g, in->a[1], &na)))) {
		pg_unsupported(g, in);
		return;
	}
	/* the accumulate flag: D = 0 first where it is off */
	if (in->a[0] || !in->imm) {
		PReg p = in->a[0] ? pg_reg(g, in->a[0]) : (PReg){0};
		for (int i = 0; i < nd; i++)
			if (in->a[0])
				ptx_emit(g->f, "@!%R mov.f32 %R, 0f00000000;", p, d[i]);
			else
				ptx_emit(g->f, "mov.f32 %R, 0f00000000;", d[i]);
	}
	/* the warp's 16 rows of A: 16 (warp % 4) + arow */
	PReg wr = ptx_reg(g->f, RB32);
	ptx_emit(g->f, "and.b32 %R, %R, 3;", wr, g->warp);
	ptx_emit(g->f, "shl.b32 %R, %R, 4;", wr, wr);
	if (in->roff[1])
		ptx_emit(g->f, "add.s32 %R, %R, %I;", wr, wr, in->roff[1]);
	Opd oa, ob;
	if (a)
		opd_init(g, &oa, a, in->ri[1], amn ? 2 : 1, wr, amn);
	opd_init(g, &ob, b, in->ri[2], bmn ? 1 : 2, (PReg){0}, false);
	for (int kk = 0; kk < k / 16; kk++) {
		PReg av[4];
		if (a)
			ldm(g, &oa, amn ? 16 * kk : 0, amn ? 0 : 16 * kk, amn, 4,
				av);
		else
			memcpy(av, ar + 4 * kk, sizeof av);
		snprintf(al, sizeof al, "{%s, ", ptx_regname(g->f, av[0], nm));
		for (int r = 1; r < 4; r++) {
			strcat(al, ptx_regname(g->f, av[r], nm));
			strcat(al, r < 3 ? ", " : "}");
		}
		for (int j = 0; j < n / 8; j += 2) {
			PReg bv[4];
			int two = j + 1 < n / 8;
			/* n-tiles j, j + 1: stored rows (K-major B) or columns
			 * (MN-major) 8j.. */
			ldm(g, &ob, bmn ? 16 * kk : 8 * j, bmn ? 8 * j : 16 * kk,
				bmn, two ? 4 : 2, bv);
			for (int h = 0; h <= two; h++) {
				char b0[16], b1[16];
				int t = j + h;
				snprintf(dl, sizeof dl, "{%s, ", ptx_regname(g->f,
					d[4 * t], nm));
				for (int r = 1; r < 4; r++) {
					strcat(dl, ptx_regname(g->f, d[4 * t + r], nm));
					strcat(dl, r < 3 ? ", " : "}");
				}
				ptx_regname(g->f, bv[2 * h], b0);
				ptx_regname(g->f, bv[2 * h + 1], b1);
				ptx_emit(g->f, "mma.sync.aligned.m16n8k16.row.col.f32."
					"%S.%S.f32 %S, %S, {%S, %S}, %S;", ty, ty, dl, al,
					b0, b1, dl);
			}
		}
	}
}
