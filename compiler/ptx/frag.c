/* frag.c: register tiles in the fragment layouts that wgmma (sm_90a) and
 * four warps' mma.sync m16n8k16 (sm_80, sm_120a) share.
 *
 * Thread t of a warpgroup (warp w = t/32 % 4, lane l) holds, of an m64nN
 * accumulator, elements i = 0..N/2-1 at
 *     row = 16w + l/4 + 8*((i>>1)&1),   col = 8*(i>>2) + 2*(l%4) + (i&1)
 * (the PTX ISA's wgmma fragments; checked on an H200).  So each
 * thread owns two rows ("slots" 0 and 1), spread over the 4 lanes of a
 * quad.  A 16-bit tile in this layout packs elements (2j, 2j+1) into b32
 * register j, and that is exactly the register A operand of the next
 * wgmma: converting acc -> wgmma_a renames registers.  A row vector,
 * rows(acc), is two f32 registers: slot 0 and slot 1.  i32 and bool
 * tiles (issue #22) have one register per element, as f32 ones: b32
 * and pred; their elementwise ops are ptx/ptxtile.c's.
 *
 * Requires: tiles whose layouts sema accepted.  Ensures: every element
 * of every tile op, or a diagnostic for a combination not lowered yet. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"
#include "ptx/ptx.h"
#include "ptx/ptxgen.h"

static int
slot_of(int i)
{
	return (i >> 1) & 1;
}

static int
col_of(int i)   /* the column offset of element i, less 2*(l%4) */
{
	return 8 * (i >> 2) + (i & 1);
}

static int
cslot_of(int i) /* the column-vector register of element i */
{
	return 2 * (i >> 2) + (i & 1);
}

/* Registers per thread of a tile value in wgmma's fragment layouts, and
 * their kind (TargetOps.tile_regs); -1 for any other layout. */
int
pg_frag_regs(const SirVal *v, RKind *k)
{
	const Layout *l = v->lay;
	bool wide = v->ety == TY_F32;
	bool elem = wide || v->ety == TY_I32 || v->ety == TY_BOOL;

	switch (l ? l->kind : 0) {
	case LK_WGMMA_ACC:  /* f32, i32, bool: one register per element */
		*k = v->ety == TY_I32 ? RB32 : v->ety == TY_BOOL ? RP :
			wide ? RF32 : RB32;
		return elem ? v->n / 2 : v->n / 4;
	case LK_WGMMA_A:
		if (v->ety == TY_I32 || v->ety == TY_BOOL)
			return -1;
		*k = RB32;
		return v->n / 4;
	case LK_ROWS:
		if (l->parent && l->parent->kind == LK_WGMMA_ACC && wide) {
			*k = RF32;
			return 2;
		}
		return -1;
	case LK_COLS:
		if (l->parent && l->parent->kind == LK_WGMMA_ACC && wide) {
			*k = RF32;
			return l->n / 4;
		}
		return -1;
	default:
		return -1;
	}
}

static bool
is_rows(const SirVal *v)
{
	return v->ty == TY_FRAG && v->lay->kind == LK_ROWS;
}

static bool
is_cols(const SirVal *v)
{
	return v->ty == TY_FRAG && v->lay->kind == LK_COLS;
}

/* Element j of operand r as seen by a destination of layout kind dk: a
 * tile, a row vector (LK_ROWS) or a column vector (LK_COLS). */
static PReg
elem(PG *g, Ref r, int j, int dk)
{
	const SirVal *v = &g->sp->vals[r];
	int n;

	if (v->ty != TY_FRAG)
		return pg_reg(g, r);
	PReg *x = pg_frag(g, r, &n);
	if (is_rows(v))
		return x[dk == LK_ROWS ? j : slot_of(j)];
	if (is_cols(v))
		return x[dk == LK_COLS ? j : cslot_of(j)];
	return x[j];
}

/* This thread's first row (16w + l/4) and first column (2*(l%4)). */
static void
coords(PG *g, PReg *row, PReg *col)
{
	PReg t = ptx_reg(g->f, RB32);

	*row = ptx_reg(g->f, RB32);
	*col = ptx_reg(g->f, RB32);
	ptx_emit(g->f, "and.b32 %R, %R, 3;", t, g->warp);
	ptx_emit(g->f, "shl.b32 %R, %R, 4;", t, t);
	ptx_emit(g->f, "shr.u32 %R, %R, 2;", *row, g->lane);
	ptx_emit(g->f, "add.s32 %R, %R, %R;", *row, *row, t);
	ptx_emit(g->f, "and.b32 %R, %R, 3;", *col, g->lane);
	ptx_emit(g->f, "shl.b32 %R, %R, 1;", *col, *col);
}

/* The elementwise ops: a row vector broadcasts its slot's register, a
 * column vector its column's. */
static void
elementwise(PG *g, const SirIns *in)
{
	pg_elementwise(g, in, elem, g->sp->vals[in->dst].lay->kind);
}

static void
fill_or_mov(PG *g, const SirIns *in)
{
	const SirVal *dv = &g->sp->vals[in->dst];
	const SirVal *sv = &g->sp->vals[in->a[0]];
	int n, m;
	PReg *d = pg_frag(g, in->dst, &n);

	if (!d) {
		pg_unsupported(g, in);
		return;
	}
	if (sv->ty == TY_FRAG) {  /* mov: same layout and shape */
		PReg *s = pg_frag(g, in->a[0], &m);
		for (int j = 0; j < n && j < m; j++)
			ptx_emit(g->f, "mov.b32 %R, %R;", d[j], s[j]);
		return;
	}
	PReg v = pg_reg(g, in->a[0]);
	if (dv->ety == TY_F32) {
		for (int j = 0; j < n; j++)
			ptx_emit(g->f, "mov.f32 %R, %R;", d[j], v);
		return;
	}
	PReg p = ptx_reg(g->f, RB32);
	ptx_emit(g->f, "cvt.rn.%Sx2.f32 %R, %R, %R;", ty_name(dv->ety), p, v,
		v);
	for (int j = 0; j < n; j++)
		ptx_emit(g->f, "mov.b32 %R, %R;", d[j], p);
}

/* rowmax/rowsum: each thread's elements of a row, then across the quad
 * (lanes 4q..4q+3 hold the same rows) with two butterfly shuffles. */
static void
reduce(PG *g, const SirIns *in)
{
	const char *op = in->op == SOP_rowmax ? "max.f32" : "add.f32";
	int n, nr;
	PReg *x = pg_frag(g, in->a[0], &n);
	PReg *d = pg_frag(g, in->dst, &nr);
	PReg t = ptx_reg(g->f, RF32);

	if (!x || !d || g->sp->vals[in->a[0]].lay->kind != LK_WGMMA_ACC ||
	    g->sp->vals[in->a[0]].ety != TY_F32) {
		pg_unsupported(g, in);
		return;
	}
	for (int s = 0; s < 2; s++) {
		/* four chains of the row's elements in turn, then joined: a
		 * quarter of one chain's latency on the softmax's path */
		PReg part[4], acc;
		int k = 0;
		for (int i = 0; i < n; i++) {
			if (slot_of(i) != s)
				continue;
			if (k < 4) {
				part[k] = ptx_reg(g->f, RF32);
				ptx_emit(g->f, "mov.f32 %R, %R;", part[k], x[i]);
			} else {
				ptx_emit(g->f, "%S %R, %R, %R;", op, part[k % 4],
					part[k % 4], x[i]);
			}
			k++;
		}
		if (!k)
			fg_bug("a row reduction of an empty row");
		for (int w = 1; w < 4 && w < k; w *= 2)
			for (int j = 0; j + w < 4 && j + w < k; j += 2 * w)
				ptx_emit(g->f, "%S %R, %R, %R;", op, part[j],
					part[j], part[j + w]);
		acc = part[0];
		for (int b = 1; b <= 2; b *= 2) {
			ptx_emit(g->f, "shfl.sync.bfly.b32 %R, %R, %I, 31, "
				"0xffffffff;", t, acc, (int64_t)b);
			ptx_emit(g->f, "%S %R, %R, %R;", op, acc, acc, t);
		}
		if (in->na > 1)
			ptx_emit(g->f, "%S %R, %R, %R;", op, acc, acc,
				elem(g, in->a[1], s, LK_ROWS));
		ptx_emit(g->f, "mov.f32 %R, %R;", d[s], acc);
	}
}

/* cvt between f32 and 16-bit tiles in the accumulator layout; convert
 * from a 16-bit accumulator to the A-operand layout (a renaming). */
static void
convert(PG *g, const SirIns *in)
{
	const SirVal *dv = &g->sp->vals[in->dst];
	const SirVal *sv = &g->sp->vals[in->a[0]];
	int n, m;
	PReg *d = pg_frag(g, in->dst, &n);
	PReg *s = pg_frag(g, in->a[0], &m);

	if (!d || !s) {
		pg_unsupported(g, in);
		return;
	}
	if (in->op == SOP_convert && (is_rows(sv) || is_cols(sv))) {
		/* a vector broadcast into a tile */
		for (int j = 0; j < n; j++)
			ptx_emit(g->f, "mov.b32 %R, %R;", d[j], is_rows(sv) ?
				s[slot_of(j)] : s[cslot_of(j)]);
		return;
	}
	if (in->op == SOP_convert || dv->ety == sv->ety) {
		for (int j = 0; j < n; j++)
			ptx_emit(g->f, "mov.b32 %R, %R;", d[j], s[j]);
		return;
	}
	if (sv->ety == TY_F32) {  /* pack: first source is the high half */
		for (int j = 0; j < n; j++)
			ptx_emit(g->f, "cvt.rn.%Sx2.f32 %R, %R, %R;",
				ty_name(dv->ety), d[j], s[2 * j + 1], s[2 * j]);
		return;
	}
	PReg lo = ptx_reg(g->f, RB16), hi = ptx_reg(g->f, RB16);
	for (int j = 0; j < m; j++) {
		ptx_emit(g->f, "mov.b32 {%R, %R}, %R;", lo, hi, s[j]);
		ptx_emit(g->f, "cvt.f32.%S %R, %R;", ty_name(sv->ety),
			d[2 * j], lo);
		ptx_emit(g->f, "cvt.f32.%S %R, %R;", ty_name(sv->ety),
			d[2 * j + 1], hi);
	}
}

/* mask_cols(x, limit): columns >= limit become -inf.
 * mask_causal(x, row0, col0): (r, c) with col0 + c > row0 + r. */
static void
mask(PG *g, const SirIns *in)
{
	int n;
	PReg *d = pg_frag(g, in->dst, &n), *x = pg_frag(g, in->a[0], &n);
	PReg row, col, p = ptx_reg(g->f, RP), ninf = ptx_reg(g->f, RF32);
	PReg bound[2] = {ptx_reg(g->f, RB32), ptx_reg(g->f, RB32)};

	if (!d || g->sp->vals[in->a[0]].ety != TY_F32) {
		pg_unsupported(g, in);
		return;
	}
	coords(g, &row, &col);
	ptx_emit(g->f, "mov.f32 %R, %F;", ninf, -INFINITY);
	if (in->op == SOP_mask_cols) {
		/* masked when 2*(l%4) + col_of(i) >= limit */
		ptx_emit(g->f, "sub.s32 %R, %R, %R;", bound[0],
			pg_u32(g, in->a[1]), col);
		for (int i = 0; i < n; i++) {
			ptx_emit(g->f, "setp.le.s32 %R, %R, %I;", p, bound[0],
				(int64_t)col_of(i));
			ptx_emit(g->f, "selp.f32 %R, %R, %R, %R;", d[i], ninf,
				x[i], p);
		}
		return;
	}
	/* mask_causal: masked when col_of(i) > row0 + row + 8*slot - col0 -
	 * col; mask_below: when col_of(i) is less than that */
	for (int s = 0; s < 2 && in->imm > 1; s++) {
		/* P rows per position: row0 + (row + 8*slot) / P */
		ptx_emit(g->f, "add.s32 %R, %R, %I;", bound[s], row,
			(int64_t)(8 * s));
		ptx_emit(g->f, "div.s32 %R, %R, %I;", bound[s], bound[s],
			in->imm);
		ptx_emit(g->f, "add.s32 %R, %R, %R;", bound[s], bound[s],
			pg_u32(g, in->a[1]));
		ptx_emit(g->f, "sub.s32 %R, %R, %R;", bound[s], bound[s],
			pg_u32(g, in->a[2]));
		ptx_emit(g->f, "sub.s32 %R, %R, %R;", bound[s], bound[s], col);
	}
	for (int s = 0; s < 2 && in->imm <= 1; s++) {
		ptx_emit(g->f, "add.s32 %R, %R, %R;", bound[s],
			pg_u32(g, in->a[1]), row);
		ptx_emit(g->f, "sub.s32 %R, %R, %R;", bound[s], bound[s],
			pg_u32(g, in->a[2]));
		ptx_emit(g->f, "sub.s32 %R, %R, %R;", bound[s], bound[s], col);
		if (s)
			ptx_emit(g->f, "add.s32 %R, %R, 8;", bound[s], bound[s]);
	}
	for (int i = 0; i < n; i++) {
		ptx_emit(g->f, in->op == SOP_mask_below ?
			"setp.gt.s32 %R, %R, %I;" : "setp.lt.s32 %R, %R, %I;", p,
			bound[slot_of(i)], (int64_t)col_of(i));
		ptx_emit(g->f, "selp.f32 %R, %R, %R, %R;", d[i], ninf, x[i], p);
	}
}

/* rowid(x), colid(x) of an accumulator tile: element i's row
 * 16w + l/4 + 8*slot_of(i), or its column 2*(l%4) + col_of(i). */
static void
index_tile(PG *g, const SirIns *in)
{
	int n;
	PReg *d = pg_frag(g, in->dst, &n), row, col;

	if (!d || g->sp->vals[in->a[0]].lay->kind != LK_WGMMA_ACC) {
		pg_unsupported(g, in);
		return;
	}
	coords(g, &row, &col);
	int64_t *off = NEWARR(&g->ctx->scratch, int64_t, (size_t)n);
	for (int i = 0; i < n; i++) {
		off[i] = in->op == SOP_rowid ? 8 * slot_of(i) : col_of(i);
		ptx_emit(g->f, "add.s32 %R, %R, %I;", d[i], in->op == SOP_rowid ?
			row : col, off[i]);
	}
	pg_affine(g, in->dst, off, n);
}

/* The byte offset of (row, col) of a tile stored the way TMA stores a
 * box: span-wide column blocks of R rows, swizzled (XOR of the 16-byte
 * chunk with address bits 7..) when the layout says so. */
static PReg
tile_addr(PG *g, const Res *b, PReg base, PReg row, PReg col)
{
	int esz = ty_bytes(b->ety), sw = b->lay->swizzle;
	int64_t rows = b->shape[0], rowbytes = b->shape[b->rank - 1] * esz;
	int64_t span = sw ? sw : rowbytes;
	PReg lin = ptx_reg(g->f, RB32), t = ptx_reg(g->f, RB32);
	PReg a = ptx_reg(g->f, RB32);

	/* lin = (col*esz / span)*rows*span + row*span + (col*esz % span) */
	ptx_emit(g->f, "mul.lo.s32 %R, %R, %I;", t, col, (int64_t)esz);
	ptx_emit(g->f, "div.u32 %R, %R, %I;", lin, t, span);
	ptx_emit(g->f, "mul.lo.s32 %R, %R, %I;", lin, lin, rows * span);
	ptx_emit(g->f, "rem.u32 %R, %R, %I;", t, t, span);
	ptx_emit(g->f, "add.s32 %R, %R, %R;", lin, lin, t);
	ptx_emit(g->f, "mad.lo.s32 %R, %R, %I, %R;", lin, row, span, lin);
	if (sw) {
		ptx_emit(g->f, "shr.u32 %R, %R, 7;", t, lin);
		ptx_emit(g->f, "and.b32 %R, %R, %I;", t, t, (int64_t)(sw / 16 -
			1));
		ptx_emit(g->f, "shl.b32 %R, %R, 4;", t, t);
		ptx_emit(g->f, "xor.b32 %R, %R, %R;", lin, lin, t);
	}
	ptx_emit(g->f, "add.s32 %R, %R, %R;", a, base, lin);
	return a;
}

/* smem_access's fast path: the same addresses as tile_addr, with the
 * thread's part computed once.  Thread (row_t = 16w + l/4, col_t =
 * 2*(l%4)) and element i (row R_i = R + 8*slot, column C_i = C +
 * col_of(i), R and C the row= and col= offsets) meet at byte
 *     lin = panel*rows*span + (row_t + R_i)*span + (cib ^ x)*16 + within
 * where t = col_t*esz = 16*tq + te and C_i*esz = 16*q_i + e_i: with no
 * carry out of the 16-byte chunk (te + e_i + 4 <= 16) and none out of
 * the panel (q_i % P + tq < P, P = span/16), chunk q_i + tq has panel
 * q_i / P and cib = q_i % P + tq, and with R_i % 8 == 0 and rows % 8 ==
 * 0 the swizzle's x = ((row_t >> s7) & (P - 1)), s7 = 7 - log2(span),
 * is the thread's alone.  So each distinct q_i % P costs a register,
 * T0 + ((16*(q_i % P) + 16*tq) ^ 16x) with T0 = base + row_t*span + te,
 * and every access is [that register + a constant]; adjacent f32
 * elements in one 8-byte slot move as a v2.  Unswizzled rows are
 * linear: one register.  False (nothing emitted) when a condition
 * fails: tile_addr then takes every element. */
static bool
fast_access(PG *g, const SirIns *in, const Res *b, PReg base,
	const char *sp, PReg *x, int n, bool pk, bool ld)
{
	int esz = ty_bytes(b->ety), sw = b->lay->swizzle;
	int64_t rows = b->shape[0], rowbytes = b->shape[b->rank - 1] * esz;
	int64_t span = sw ? sw : rowbytes, roff = in->roff[0];
	int64_t coff = in->imm, P = span / 16;
	int te_max = 0, tq_max = 0;

	if (esz != 2 && esz != 4)
		return false;
	if (sw && (sw < 32 || rows % 8 || roff % 8))
		return false;
	for (int l = 0; l < 4; l++) {  /* t = col_t * esz */
		int t = 2 * l * esz;
		te_max = t % 16 > te_max ? t % 16 : te_max;
		tq_max = t / 16 > tq_max ? t / 16 : tq_max;
	}
	for (int j = 0; j < n; j++) {
		int i = pk ? 2 * j : j;
		int64_t e = (coff + col_of(i)) * esz;
		if (e < 0 || (sw ? e % 16 + te_max + 4 > 16 ||
		    (e / 16) % P + tq_max >= P : e + 6 * esz + 4 > rowbytes))
			return false;
	}
	PReg row, col, t = ptx_reg(g->f, RB32), t0 = ptx_reg(g->f, RB32);
	coords(g, &row, &col);
	ptx_emit(g->f, "mul.lo.s32 %R, %R, %I;", t, col, (int64_t)esz);
	PReg xr = t, tq = t;
	if (sw) {
		int s7 = 7 - __builtin_ctz((unsigned)span);
		PReg te = ptx_reg(g->f, RB32);
		xr = ptx_reg(g->f, RB32);
		tq = ptx_reg(g->f, RB32);
		ptx_emit(g->f, "and.b32 %R, %R, 15;", te, t);
		ptx_emit(g->f, "and.b32 %R, %R, -16;", tq, t);
		ptx_emit(g->f, "mad.lo.s32 %R, %R, %I, %R;", t0, row, span, te);
		ptx_emit(g->f, "shr.u32 %R, %R, %I;", xr, row, (int64_t)s7);
		ptx_emit(g->f, "and.b32 %R, %R, %I;", xr, xr, P - 1);
		ptx_emit(g->f, "shl.b32 %R, %R, 4;", xr, xr);
	} else {
		ptx_emit(g->f, "mad.lo.s32 %R, %R, %I, %R;", t0, row, span, t);
	}
	ptx_emit(g->f, "add.s32 %R, %R, %R;", t0, t0, base);
	PReg at[16];        /* by q % P */
	bool have[16] = {false};
	for (int j = 0; j < n; j++) {
		int i = pk ? 2 * j : j;
		int64_t r = roff + 8 * slot_of(i), e = (coff + col_of(i)) * esz;
		int64_t q = e / 16, imm = sw ? q / P * rows * span + r * span +
			e % 16 : r * span + e;
		PReg a = t0;
		if (sw) {
			int k = (int)(q % P);
			if (!have[k]) {
				have[k] = true;
				at[k] = ptx_reg(g->f, RB32);
				ptx_emit(g->f, "add.s32 %R, %R, %I;", at[k], tq,
					(int64_t)16 * k);
				ptx_emit(g->f, "xor.b32 %R, %R, %R;", at[k], at[k],
					xr);
				ptx_emit(g->f, "add.s32 %R, %R, %R;", at[k], at[k],
					t0);
			}
			a = at[k];
		}
		/* f32 elements i, i + 1 (same row, adjacent columns) in one
		 * 8-byte slot: a v2 */
		bool v2 = !pk && !(i & 1) && j + 1 < n && e % 8 == 0 && (sw ?
			e % 16 + te_max + 8 <= 16 : e + 6 * esz + 8 <= rowbytes);
		if (v2 && ld)
			ptx_emit(g->f, "ld.%S.v2.f32 {%R, %R}, [%R+%I];", sp, x[j],
				x[j + 1], a, imm);
		else if (v2)
			ptx_emit(g->f, "st.%S.v2.f32 [%R+%I], {%R, %R};", sp, a, imm,
				x[j], x[j + 1]);
		else if (ld)
			ptx_emit(g->f, pk ? "ld.%S.b32 %R, [%R+%I];" :
				"ld.%S.f32 %R, [%R+%I];", sp, x[j], a, imm);
		else
			ptx_emit(g->f, pk ? "st.%S.b32 [%R+%I], %R;" :
				"st.%S.f32 [%R+%I], %R;", sp, a, imm, x[j]);
		j += v2;
	}
	return true;
}

/* smem_store B[s], x [row=R] [col=C] [cta=K] and smem_load x, B[s]
 * [row=R] [col=C] [cta=K]: the accumulator layout, one packed pair
 * (16-bit) or one element (f32) per access; with cta=K in CTA K's
 * shared memory (mapa, then the .shared::cluster forms). */
static void
smem_access(PG *g, const SirIns *in)
{
	bool ld = in->op == SOP_smem_load;
	Ref t = ld ? in->dst : in->a[0];
	const SirVal *v = &g->sp->vals[t];
	const Res *b = in->r[0];
	int n;
	PReg *x = pg_frag(g, t, &n);

	if (!x || v->lay->kind != LK_WGMMA_ACC) {
		pg_unsupported(g, in);
		return;
	}
	PReg base = pg_stage_base(g, b, in->ri[0]), row, col;
	PReg r = ptx_reg(g->f, RB32), c = ptx_reg(g->f, RB32);
	const char *sp;
	base = pg_smem_base(g, in, base, &sp);
	bool pk = v->ety != TY_F32;
	if (fast_access(g, in, b, base, sp, x, n, pk, ld))
		return;
	coords(g, &row, &col);
	for (int j = 0; j < n; j++) {
		int i = pk ? 2 * j : j;  /* the first element of register j */
		ptx_emit(g->f, "add.s32 %R, %R, %I;", r, row,
			in->roff[0] + 8 * slot_of(i));
		ptx_emit(g->f, "add.s32 %R, %R, %I;", c, col,
			in->imm + col_of(i));  /* imm: col=C */
		PReg a = tile_addr(g, b, base, r, c);
		if (ld)
			ptx_emit(g->f, pk ? "ld.%S.b32 %R, [%R];" :
				"ld.%S.f32 %R, [%R];", sp, x[j], a);
		else
			ptx_emit(g->f, pk ? "st.%S.b32 [%R], %R;" :
				"st.%S.f32 [%R], %R;", sp, a, x[j]);
	}
}

/* The two row addresses of this thread's elements of a tile moved to or
 * from global memory (slots 0 and 1: rows row and row + 8), and p[s]:
 * the row's index K (rix + r) is >= lim, so it is skipped.  The element
 * (r, c) is at lin + r * stride + c. */
static void
row_addrs(PG *g, Ref lin, Ref lim, Ref rix, Ref stride, int esz, PReg ptr,
	PReg at[2], PReg p[2])
{
	PReg row, col;

	coords(g, &row, &col);
	PReg t = ptx_reg(g->f, RB32), u = ptx_reg(g->f, RB32);
	for (int s = 0; s < 2; s++) {
		at[s] = ptx_reg(g->f, RB64);
		p[s] = ptx_reg(g->f, RP);
		ptx_emit(g->f, "add.s32 %R, %R, %I;", t, row, (int64_t)(8 * s));
		ptx_emit(g->f, "add.s32 %R, %R, %R;", u, t, pg_u32(g, rix));
		ptx_emit(g->f, "setp.ge.s32 %R, %R, %R;", p[s], u,
			pg_u32(g, lim));
		ptx_emit(g->f, "mad.lo.s32 %R, %R, %R, %R;", u, t,
			pg_u32(g, stride), pg_u32(g, lin));
		ptx_emit(g->f, "add.s32 %R, %R, %R;", u, u, col);
		ptx_emit(g->f, "mad.wide.s32 %R, %R, %I, %R;", at[s], u,
			(int64_t)esz, ptr);
	}
}

/* store G[...], t [rowdim=K] [limit=L] [width=W] of an accumulator tile:
 * each thread its elements, a packed pair (16-bit) or one f32 per store,
 * from two row addresses (its slots), rows whose index K is >= L
 * skipped, and with W the columns >= W (of a pair that straddles W, its
 * first element, st.global.b16). */
static void
gstore_tile(PG *g, const SirIns *in, PReg ptr)
{
	const SirVal *v = &g->sp->vals[in->a[1]];
	int n, esz = ty_bytes(in->r[0]->ety);
	PReg *x = pg_frag(g, in->a[1], &n);
	bool pk = v->ety != TY_F32;

	if (!x || v->lay->kind != LK_WGMMA_ACC) {
		pg_unsupported(g, in);
		return;
	}
	PReg at[2], p[2];
	row_addrs(g, in->a[0], in->a[2], in->a[3], in->a[4], esz, ptr, at, p);
	/* reduce=add: red.global.add, f32 or a 16-bit pair */
	const char *op = !in->imm ? (pk ? "st.global.b32" : "st.global.f32") :
		!pk ? "red.global.add.f32" : v->ety == TY_BF16 ?
		"red.global.add.noftz.bf16x2" : "red.global.add.noftz.f16x2";
	if (in->na > 5 && in->a[5]) {  /* width=W: columns >= W skipped */
		PReg row, col, c = ptx_reg(g->f, RB32), q = ptx_reg(g->f, RP);
		PReg h = ptx_reg(g->f, RB16), w = pg_u32(g, in->a[5]);
		int skip;
		coords(g, &row, &col);
		for (int j = 0; j < n; j++) {
			int i = pk ? 2 * j : j, sl = slot_of(i);
			int64_t off = col_of(i) * esz;
			skip = ptx_label(g->f);
			ptx_emit(g->f, "@%R bra %L;", p[sl], skip);
			ptx_emit(g->f, "add.s32 %R, %R, %I;", c, col,
				(int64_t)col_of(i) + pk);  /* the last element */
			ptx_emit(g->f, "setp.lt.s32 %R, %R, %R;", q, c, w);
			ptx_emit(g->f, "@%R %S [%R+%I], %R;", q, op, at[sl], off,
				x[j]);
			if (pk && !in->imm) {  /* a pair at the edge: its first */
				ptx_emit(g->f, "setp.eq.s32 %R, %R, %R;", q, c, w);
				ptx_emit(g->f, "cvt.u16.u32 %R, %R;", h, x[j]);
				ptx_emit(g->f, "@%R st.global.b16 [%R+%I], %R;", q,
					at[sl], off, h);
			}
			ptx_place(g->f, skip);
		}
		return;
	}
	for (int j = 0; j < n; j++) {
		int i = pk ? 2 * j : j;  /* the first element of register j */
		ptx_emit(g->f, "@!%R %S [%R+%I], %R;", p[slot_of(i)], op,
			at[slot_of(i)], (int64_t)(col_of(i) * esz), x[j]);
	}
}

/* global_load x, G[...] [rowdim=K] [limit=L] into an accumulator tile:
 * each thread its elements, a packed pair (16-bit) or one f32 per load
 * (ld.global.nc: a loaded global is not written by the kernel), from two
 * row addresses; a row whose index K is >= L reads 0.  A row vector
 * reads its two rows, a column vector (width=W) its N/4 columns, those
 * >= W as 0. */
static void
gtload(PG *g, const SirIns *in)
{
	const SirVal *v = &g->sp->vals[in->dst];
	int n, esz = ty_bytes(in->r[0]->ety);
	PReg *x = pg_frag(g, in->dst, &n);
	bool pk = v->ety != TY_F32;
	bool rv = is_rows(v), cv = is_cols(v);

	if (!x || (rv || cv ? v->lay->parent->kind : v->lay->kind) !=
	    LK_WGMMA_ACC || ((rv || cv) && pk) || (cv && in->na < 5)) {
		pg_unsupported(g, in);
		return;
	}
	PReg ptr = ptx_reg(g->f, RB64);
	ptx_emit(g->f, "ld.param.u64 %R, [%S];", ptr, in->r[0]->name);
	ptx_emit(g->f, "cvta.to.global.u64 %R, %R;", ptr, ptr);
	PReg at[2], p[2];
	if (cv) {  /* a column vector: register k is column c at lin + c */
		PReg row, col, u = ptx_reg(g->f, RB32);
		PReg a = ptx_reg(g->f, RB64), q = ptx_reg(g->f, RP);
		coords(g, &row, &col);
		ptx_emit(g->f, "add.s32 %R, %R, %R;", u, col,
			pg_u32(g, in->a[0]));
		ptx_emit(g->f, "mad.wide.s32 %R, %R, %I, %R;", a, u,
			(int64_t)esz, ptr);
		/* the columns >= the width read 0: each register is set
		 * first, so that its old value is dead (a predicated load
		 * alone would keep it live around the loop) */
		for (int k = 0; k < n; k++) {
			int c = 8 * (k >> 1) + (k & 1);
			ptx_emit(g->f, "add.s32 %R, %R, %I;", u, col, (int64_t)c);
			ptx_emit(g->f, "setp.ge.s32 %R, %R, %R;", q, u,
				pg_u32(g, in->a[4]));
			ptx_emit(g->f, "mov.b32 %R, 0;", x[k]);
			ptx_emit(g->f, "@!%R ld.global.nc.f32 %R, [%R+%I];", q,
				x[k], a, (int64_t)c * esz);
		}
		return;
	}
	if (rv) {  /* a row vector: slot s is row 'row + 8s', at lin + r */
		PReg row, col, u = ptx_reg(g->f, RB32);
		PReg a = ptx_reg(g->f, RB64), q = ptx_reg(g->f, RP);
		coords(g, &row, &col);
		for (int s = 0; s < 2; s++) {
			ptx_emit(g->f, "add.s32 %R, %R, %I;", u, row,
				(int64_t)(8 * s));
			ptx_emit(g->f, "add.s32 %R, %R, %R;", u, u,
				pg_u32(g, in->a[2]));
			ptx_emit(g->f, "setp.ge.s32 %R, %R, %R;", q, u,
				pg_u32(g, in->a[1]));
			ptx_emit(g->f, "add.s32 %R, %R, %I;", u, row,
				(int64_t)(8 * s));
			ptx_emit(g->f, "add.s32 %R, %R, %R;", u, u,
				pg_u32(g, in->a[0]));
			ptx_emit(g->f, "mad.wide.s32 %R, %R, %I, %R;", a, u,
				(int64_t)esz, ptr);
			/* set first: a predicated load alone would keep its old value
			 * live around a loop */
			ptx_emit(g->f, "mov.b32 %R, 0;", x[s]);
			ptx_emit(g->f, "@!%R ld.global.nc.f32 %R, [%R];", q, x[s],
				a);
		}
		return;
	}
	row_addrs(g, in->a[0], in->a[1], in->a[2], in->a[3], esz, ptr, at, p);
	for (int j = 0; j < n; j++) {
		int i = pk ? 2 * j : j;  /* the first element of register j */
		ptx_emit(g->f, "mov.b32 %R, 0;", x[j]);  /* old value dead */
		ptx_emit(g->f, pk ? "@!%R ld.global.nc.b32 %R, [%R+%I];" :
			"@!%R ld.global.nc.f32 %R, [%R+%I];", p[slot_of(i)], x[j],
			at[slot_of(i)], (int64_t)(col_of(i) * esz));
	}
}

/* store G[...], v [limit=L]: a scalar from every executing thread, or a
 * row vector from the first lane of each quad, rows >= L skipped; a tile
 * by gstore_tile. */
static void
gstore(PG *g, const SirIns *in)
{
	const Res *r = in->r[0];
	const SirVal *v = &g->sp->vals[in->a[1]];
	PReg ptr = ptx_reg(g->f, RB64), off = ptx_reg(g->f, RB64);
	int esz = ty_bytes(r->ety);
	const char *st = r->ety == TY_F32 ? "f32" : esz == 2 ? "b16" :
		esz == 8 ? "b64" : "b32";

	ptx_emit(g->f, "ld.param.u64 %R, [%S];", ptr, r->name);
	ptx_emit(g->f, "cvta.to.global.u64 %R, %R;", ptr, ptr);
	if (v->ty == TY_FRAG && !is_rows(v)) {
		gstore_tile(g, in, ptr);
		return;
	}
	if (v->ty != TY_FRAG) {
		ptx_emit(g->f, "mul.wide.s32 %R, %R, %I;", off,
			pg_u32(g, in->a[0]), (int64_t)esz);
		ptx_emit(g->f, "add.s64 %R, %R, %R;", off, off, ptr);
		ptx_emit(g->f, "st.global.%S [%R], %R;", st, off,
			pg_reg(g, in->a[1]));
		return;
	}
	int n;
	PReg *x = pg_frag(g, in->a[1], &n), row, col;
	PReg p = ptx_reg(g->f, RP), q = ptx_reg(g->f, RP);
	PReg ri = ptx_reg(g->f, RB32), li = ptx_reg(g->f, RB32);
	int skip = ptx_label(g->f);
	coords(g, &row, &col);
	ptx_emit(g->f, "setp.ne.u32 %R, %R, 0;", p, col);
	ptx_emit(g->f, "@%R bra %L;", p, skip);
	for (int s = 0; s < 2; s++) {
		int next = ptx_label(g->f);
		ptx_emit(g->f, "add.s32 %R, %R, %I;", ri, row, (int64_t)(8 * s));
		if (in->na > 2) {  /* the row's last index against limit */
			ptx_emit(g->f, "add.s32 %R, %R, %R;", li, ri,
				pg_u32(g, in->a[3]));
			ptx_emit(g->f, "setp.ge.s32 %R, %R, %R;", q, li,
				pg_u32(g, in->a[2]));
			ptx_emit(g->f, "@%R bra %L;", q, next);
		}
		ptx_emit(g->f, "add.s32 %R, %R, %R;", li, ri,
			pg_u32(g, in->a[0]));
		ptx_emit(g->f, "mul.wide.s32 %R, %R, %I;", off, li,
			(int64_t)esz);
		ptx_emit(g->f, "add.s64 %R, %R, %R;", off, off, ptr);
		ptx_emit(g->f, "st.global.%S [%R], %R;", st, off, x[s]);
		ptx_place(g->f, next);
	}
	ptx_place(g->f, skip);
}

bool
pg_frag_op(PG *g, const SirIns *in)
{
	switch (in->op) {
	case SOP_add: case SOP_sub: case SOP_mul: case SOP_div:
	case SOP_min: case SOP_max: case SOP_neg: case SOP_exp2:
	case SOP_log2: case SOP_rcp: case SOP_tanh: case SOP_sqrt:
	case SOP_rsqrt:
		if (g->sp->vals[in->dst].ty != TY_FRAG)
			return false;
		elementwise(g, in);
		return true;
	case SOP_fill:
		fill_or_mov(g, in);
		return true;
	case SOP_mov: case SOP_cvt:
		if (g->sp->vals[in->dst].ty != TY_FRAG)
			return false;
		if (in->op == SOP_mov)
			fill_or_mov(g, in);
		else
			convert(g, in);
		return true;
	case SOP_convert:
		convert(g, in);
		return true;
	case SOP_rowmax: case SOP_rowsum:
		reduce(g, in);
		return true;
	case SOP_mask_cols: case SOP_mask_causal: case SOP_mask_below:
		mask(g, in);
		return true;
	case SOP_rowid: case SOP_colid:
		index_tile(g, in);
		return true;
	case SOP_smem_store: case SOP_smem_load:
		smem_access(g, in);
		return true;
	case SOP_gstore:
		gstore(g, in);
		return true;
	case SOP_gtload:
		gtload(g, in);
		return true;
	default:
		return false;
	}
}

/* Element i of an accumulator: row 16w + l/4 + 8*slot_of(i), column
 * 2*(l%4) + col_of(i), the thread's part the same for every i. */
bool
pg_frag_keys(const Layout *l, int i, int *row, int *col)
{
	if (l->kind != LK_WGMMA_ACC)
		return false;
	*row = slot_of(i);
	*col = col_of(i);
	return true;
}
