/* ptx_tmem.c: register tiles on sm_100a, in the tmem_rows layout, and
 * their moves to and from tensor memory and memory.
 *
 * tcgen05.ld/st .32x32b give thread l of warp w (any warpgroup) TMEM lane
 * 32*(w%4) + l, register j holding column j (PTX ISA 9.7.16; [doc], no
 * Blackwell GPU has run this).  An MMA with M = 128 puts row r of D in
 * lane r, so a thread owns one whole row of a tile:
 *     row = 32*(warp%4) + lane,   col = j   (register j).
 * An f32 tile [M, N] is N f32 registers; a 16-bit tile packs columns
 * (2j, 2j+1) into b32 register j, the lower column in the low half (the
 * order of cvt.rn.bf16x2.f32 and of every 16-bit pair in PTX); a row
 * vector rows(tmem_rows) is one f32 register.  Row reductions therefore
 * stay inside the thread: no shuffles.  i32 and bool tiles (issue #22)
 * have one register per element, b32 and pred; their elementwise ops
 * are ptx/ptxtile.c's.
 *
 * Requires: tiles whose layouts sema accepted, a Kernel after
 * pass_layout (the TMEM address slot is at smem_bytes - 16).  Ensures:
 * every element of every tile op, tcgen05.ld/st with their waits, or a
 * diagnostic for a combination not lowered. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"
#include "ptx/ptx.h"
#include "ptx/ptxgen.h"
#include "sm100/sm100.h"

/* Registers per thread of a tile value in the tcgen05.ld 32x32b layout
 * (one row per thread), and their kind (TargetOps.tile_regs); -1 for any
 * other layout. */
static int
tile_regs(const SirVal *v, RKind *k)
{
	const Layout *l = v->lay;
	bool wide = v->ety == TY_F32;

	switch (l ? l->kind : 0) {
	case LK_TMEM_ROWS:  /* f32, i32, bool: one register per element */
		*k = v->ety == TY_I32 ? RB32 : v->ety == TY_BOOL ? RP :
			wide ? RF32 : RB32;
		return wide || v->ety == TY_I32 || v->ety == TY_BOOL ? v->n :
			(v->n + 1) / 2;
	case LK_ROWS:
		if (l->parent && l->parent->kind == LK_TMEM_ROWS && wide) {
			*k = RF32;
			return 1;
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

/* Operand r's register for register j of a tile destination: a scalar
 * is itself, a row vector its one register. */
static PReg
elem(PG *g, Ref r, int j)
{
	const SirVal *v = &g->sp->vals[r];
	int n;

	if (v->ty != TY_FRAG)
		return pg_reg(g, r);
	PReg *x = pg_frag(g, r, &n);
	return is_rows(v) ? x[0] : x[j];
}

/* This thread's row of the tile: 32*(warp%4) + lane. */
static PReg
my_row(PG *g)
{
	PReg r = ptx_reg(g->f, RB32);

	ptx_emit(g->f, "and.b32 %R, %R, 3;", r, g->warp);
	ptx_emit(g->f, "shl.b32 %R, %R, 5;", r, r);
	ptx_emit(g->f, "add.s32 %R, %R, %R;", r, r, g->lane);
	return r;
}

/* elem() as pg_elementwise's broadcast rule. */
static PReg
elem_at(PG *g, Ref r, int j, int ctx)
{
	(void)ctx;
	return elem(g, r, j);
}

static void
elementwise(PG *g, const SirIns *in)
{
	pg_elementwise(g, in, elem_at, 0);
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

/* rowmax/rowsum: the thread's own N registers, as a tree (independent
 * operations for the pipelines), then the initial value. */
static void
reduce(PG *g, const SirIns *in)
{
	const char *op = in->op == SOP_rowmax ? "max.f32" : "add.f32";
	const SirVal *xv = &g->sp->vals[in->a[0]];
	int n, nr;
	PReg *x = pg_frag(g, in->a[0], &n), *d = pg_frag(g, in->dst, &nr);

	if (!x || !d || xv->lay->kind != LK_TMEM_ROWS || xv->ety != TY_F32) {
		pg_unsupported(g, in);
		return;
	}
	PReg *t = NEWARR(&g->ctx->scratch, PReg, (size_t)n);
	int cnt = n;
	memcpy(t, x, (size_t)n * sizeof *t);
	while (cnt > 1) {
		int half = cnt / 2;
		for (int k = 0; k < half; k++) {
			PReg r = ptx_reg(g->f, RF32);
			ptx_emit(g->f, "%S %R, %R, %R;", op, r, t[2 * k],
				t[2 * k + 1]);
			t[k] = r;
		}
		if (cnt & 1)
			t[half++] = t[cnt - 1];
		cnt = half;
	}
	if (in->na > 1)
		ptx_emit(g->f, "%S %R, %R, %R;", op, d[0], t[0],
			elem(g, in->a[1], 0));
	else
		ptx_emit(g->f, "mov.f32 %R, %R;", d[0], t[0]);
}

/* Pack f32 registers s[2j], s[2j+1] into 16-bit pairs d[j]: cvt puts its
 * first source in the high half. */
static void
pack(PG *g, Ty ety, PReg *d, const PReg *s, int n)
{
	for (int j = 0; j < n; j++)
		ptx_emit(g->f, "cvt.rn.%Sx2.f32 %R, %R, %R;", ty_name(ety), d[j],
			s[2 * j + 1], s[2 * j]);
}

static void
unpack(PG *g, Ty ety, PReg *d, const PReg *s, int n)
{
	PReg lo = ptx_reg(g->f, RB16), hi = ptx_reg(g->f, RB16);

	for (int j = 0; j < n; j++) {
		ptx_emit(g->f, "mov.b32 {%R, %R}, %R;", lo, hi, s[j]);
		ptx_emit(g->f, "cvt.f32.%S %R, %R;", ty_name(ety), d[2 * j], lo);
		ptx_emit(g->f, "cvt.f32.%S %R, %R;", ty_name(ety), d[2 * j + 1],
			hi);
	}
}

/* cvt between f32 and 16-bit tiles; convert between equal layouts. */
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
	if (in->op == SOP_convert || dv->ety == sv->ety) {
		for (int j = 0; j < n; j++)
			ptx_emit(g->f, "mov.b32 %R, %R;", d[j], s[j]);
	} else if (sv->ety == TY_F32 && dv->ety != TY_F32) {
		pack(g, dv->ety, d, s, n);
	} else if (dv->ety == TY_F32 && sv->ety != TY_F32) {
		unpack(g, sv->ety, d, s, m);
	} else {
		pg_unsupported(g, in);  /* bf16 <-> f16 */
	}
}

/* mask_cols(x, limit): register j is column j, masked when j >= limit.
 * mask_causal(x, row0, col0): masked when col0 + j > row0 + row. */
static void
mask(PG *g, const SirIns *in)
{
	int n;
	PReg *d = pg_frag(g, in->dst, &n), *x = pg_frag(g, in->a[0], &n);
	PReg p = ptx_reg(g->f, RP), ninf = ptx_reg(g->f, RF32);
	PReg bound = ptx_reg(g->f, RB32);

	if (!d || g->sp->vals[in->a[0]].ety != TY_F32) {
		pg_unsupported(g, in);
		return;
	}
	ptx_emit(g->f, "mov.f32 %R, %F;", ninf, -INFINITY);
	if (in->op == SOP_mask_cols) {
		ptx_emit(g->f, "mov.b32 %R, %R;", bound, pg_u32(g, in->a[1]));
	} else if (in->imm > 1) {  /* P rows per position */
		ptx_emit(g->f, "div.s32 %R, %R, %I;", bound, my_row(g), in->imm);
		ptx_emit(g->f, "add.s32 %R, %R, %R;", bound, bound,
			pg_u32(g, in->a[1]));
		ptx_emit(g->f, "sub.s32 %R, %R, %R;", bound, bound,
			pg_u32(g, in->a[2]));
	} else {  /* masked when j > row0 + row - col0 (mask_below: <) */
		ptx_emit(g->f, "add.s32 %R, %R, %R;", bound,
			pg_u32(g, in->a[1]), my_row(g));
		ptx_emit(g->f, "sub.s32 %R, %R, %R;", bound, bound,
			pg_u32(g, in->a[2]));
	}
	for (int j = 0; j < n; j++) {
		ptx_emit(g->f, in->op == SOP_mask_cols ?
			"setp.le.s32 %R, %R, %I;" : in->op == SOP_mask_below ?
			"setp.gt.s32 %R, %R, %I;" : "setp.lt.s32 %R, %R, %I;", p,
			bound, (int64_t)j);
		ptx_emit(g->f, "selp.f32 %R, %R, %R, %R;", d[j], ninf, x[j], p);
	}
}

/* rowid(x), colid(x): register j of the thread's row is column j. */
static void
index_tile(PG *g, const SirIns *in)
{
	int n;
	PReg *d = pg_frag(g, in->dst, &n);

	if (!d) {
		pg_unsupported(g, in);
		return;
	}
	PReg row = in->op == SOP_rowid ? my_row(g) : (PReg){0};
	int64_t *off = NEWARR(&g->ctx->scratch, int64_t, (size_t)n);
	for (int j = 0; j < n; j++) {
		off[j] = in->op == SOP_rowid ? 0 : j;
		if (in->op == SOP_rowid)
			ptx_emit(g->f, "mov.b32 %R, %R;", d[j], row);
		else
			ptx_emit(g->f, "mov.b32 %R, %I;", d[j], (int64_t)j);
	}
	pg_affine(g, in->dst, off, n);
}

/* The TMEM address of 32-bit column 'col' of element idx of region r,
 * read from the slot tcgen05.alloc wrote; with 'quarter', in this warp's
 * lanes 32*(warp%4).. (bits 16..), as tcgen05.ld/st need. */
PReg
sm100_tmem_addr(PG *g, const Res *r, Ref idx, int64_t col, bool quarter)
{
	PReg a = ptx_reg(g->f, RB32);

	ptx_emit(g->f, "ld.shared.b32 %R, [%R+%I];", a, g->smem,
		g->k->smem_bytes - 16);
	col += r->col;
	if (idx && !g->sp->vals[idx].isconst)
		ptx_emit(g->f, "mad.lo.s32 %R, %R, %I, %R;", a, pg_u32(g, idx),
			r->threads, a);  /* threads: the stride of an array */
	else if (idx)
		col += g->sp->vals[idx].ci * r->threads;
	if (quarter) {
		PReg q = ptx_reg(g->f, RB32);
		ptx_emit(g->f, "and.b32 %R, %R, 3;", q, g->warp);
		ptx_emit(g->f, "shl.b32 %R, %R, 21;", q, q);
		ptx_emit(g->f, "add.s32 %R, %R, %R;", a, a, q);
	}
	if (col)
		ptx_emit(g->f, "add.s32 %R, %R, %I;", a, a, col);
	return a;
}

/* The widest .32x32b.xK to use: K a power of two up to 128, with room
 * for the address and a few more under the entry's register limit (the
 * .maxnreg of setmaxnreg budgets, else what .maxntid leaves): ptxas
 * rejects an .x128 under .maxnreg 128 (C7602) even where setmaxnreg
 * has raised the budget. */
static int
widest(const PG *g)
{
	int lim = g->k->maxnreg ? g->k->maxnreg : (65536 / g->k->threads) & ~7;
	int k = 128;

	while (k > 1 && k + 16 > lim)
		k /= 2;
	return k;
}

/* tcgen05.ld (st) of n consecutive 32-bit columns from (to) taddr into
 * (from) x[0..n), as .32x32b.xK instructions, then the wait that makes
 * the registers (the columns) usable. */
static void
ldst(PG *g, bool ld, PReg taddr, const PReg *x, int n)
{
	char nm[16];

	for (int c = 0; c < n;) {
		int k = widest(g);
		while (k > n - c)
			k /= 2;
		Buf rl;
		buf_init(&rl, &g->ctx->scratch);
		for (int j = 0; j < k; j++)
			buf_printf(&rl, "%s%s", j ? ", " : "{", ptx_regname(g->f,
				x[c + j], nm));
		buf_putc(&rl, '}');
		PReg a = taddr;
		if (c) {
			a = ptx_reg(g->f, RB32);
			ptx_emit(g->f, "add.s32 %R, %R, %I;", a, taddr,
				(int64_t)c);
		}
		if (ld)
			ptx_emit(g->f, "tcgen05.ld.sync.aligned.32x32b.x%I.b32 %S, "
				"[%R];", (int64_t)k, rl.p, a);
		else
			ptx_emit(g->f, "tcgen05.st.sync.aligned.32x32b.x%I.b32 [%R], "
				"%S;", (int64_t)k, a, rl.p);
		c += k;
	}
	ptx_emit(g->f, ld ? "tcgen05.wait::ld.sync.aligned;" :
		"tcgen05.wait::st.sync.aligned;");
}

static PReg *
regs(PG *g, RKind k, int n)
{
	PReg *r = NEWARR(&g->ctx->scratch, PReg, (size_t)n);

	for (int i = 0; i < n; i++)
		r[i] = ptx_reg(g->f, k);
	return r;
}

/* tmem_load x, R[i] [cols=(c0, n)] and tmem_store R[i], x: the tile's
 * columns are the region's logical columns c0.. (imm).  A packed region
 * holds 16-bit pairs, one per 32-bit column: a 16-bit tile moves as is,
 * an f32 tile is packed or unpacked on the way.  A 16-bit value in an
 * unpacked region sits in the low half of its column. */
static void
tmem_move(PG *g, const SirIns *in)
{
	bool ld = in->op == SOP_tmem_load;
	const Res *r = in->r[0];
	Ref x = ld ? in->dst : in->a[0];
	const SirVal *v = &g->sp->vals[x];
	int n;
	PReg *t = pg_frag(g, x, &n);
	bool wide = v->ety == TY_F32;

	if (!t || (!wide && v->n % 2) || (r->packed && in->imm % 2) ||
	    (wide && r->ety != TY_F32 && !r->packed)) {
		diag_error(g->ctx, in->span, "'%s' is lowered for f32 tiles "
			"and f32 or packed regions, and for 16-bit tiles of an "
			"even column count (and first column)",
			sir_ops[in->op].name);
		g->failed = true;
		return;
	}
	PReg a = sm100_tmem_addr(g, r, in->ri[0], r->packed ? in->imm / 2 :
		in->imm, true);
	if (wide ? r->ety == TY_F32 : r->packed) {
		/* the registers are the columns */
		ldst(g, ld, a, t, n);
		return;
	}
	if (wide) {  /* f32 tile, packed 16-bit region */
		PReg *p = regs(g, RB32, n / 2);
		if (ld) {
			ldst(g, true, a, p, n / 2);
			unpack(g, r->ety, t, p, n / 2);
		} else {
			pack(g, r->ety, p, t, n / 2);
			ldst(g, false, a, p, n / 2);
		}
		return;
	}
	/* 16-bit tile, one value per column */
	PReg *c = regs(g, RB32, 2 * n);
	if (ld) {
		ldst(g, true, a, c, 2 * n);
		for (int j = 0; j < n; j++)
			ptx_emit(g->f, "prmt.b32 %R, %R, %R, 0x5410;", t[j],
				c[2 * j], c[2 * j + 1]);
		return;
	}
	for (int j = 0; j < n; j++) {
		ptx_emit(g->f, "and.b32 %R, %R, 65535;", c[2 * j], t[j]);
		ptx_emit(g->f, "shr.u32 %R, %R, 16;", c[2 * j + 1], t[j]);
	}
	ldst(g, false, a, c, 2 * n);
}

/* smem_store B[s], x [row=R] [col=C]: thread's row R + row, columns
 * C.. of the buffer, laid out as TMA stores a box (span-wide column
 * blocks, swizzled).  A 16-byte chunk of a row is contiguous in every
 * swizzle mode, so each chunk is one st.shared.v4; the XOR of a 128-,
 * 64- or 32-byte swizzle depends only on the row (the buffer's stage is
 * aligned to the pattern and its rows are a multiple of 8). */
static void
smem_access(PG *g, const SirIns *in)
{
	bool ld = in->op == SOP_smem_load;
	Ref tv = ld ? in->dst : in->a[0];
	const SirVal *v = &g->sp->vals[tv];
	const Res *b = in->r[0];
	int n, esz = ty_bytes(b->ety), sw = b->lay->swizzle;
	PReg *x = pg_frag(g, tv, &n);
	int64_t rows = b->shape[0], rowbytes = b->shape[b->rank - 1] * esz;
	int64_t span = sw ? sw : rowbytes, c0 = in->imm * esz;
	int64_t bytes = (int64_t)v->n * esz;

	if (!x || v->lay->kind != LK_TMEM_ROWS || ty_bytes(v->ety) != esz ||
	    c0 % 16 || bytes % 16 || span % 16 || (sw && rows % 8)) {
		diag_error(g->ctx, in->span, "'%s' of a tmem_rows tile "
			"is lowered for 16-byte aligned column ranges of a "
			"buffer of the tile's element type (and rows a multiple "
			"of 8 when swizzled)", ld ? "smem_load" : "smem_store");
		g->failed = true;
		return;
	}
	PReg base = pg_stage_base(g, b, in->ri[0]), row = my_row(g);
	PReg rb = ptx_reg(g->f, RB32), xr = ptx_reg(g->f, RB32);
	PReg t = ptx_reg(g->f, RB32), a = ptx_reg(g->f, RB32);
	const char *sp;
	base = pg_smem_base(g, in, base, &sp);   /* cta=K: mapa */
	if (in->roff[0])
		ptx_emit(g->f, "add.s32 %R, %R, %I;", row, row, in->roff[0]);
	ptx_emit(g->f, "mad.lo.s32 %R, %R, %I, %R;", rb, row, span, base);
	if (sw) {  /* the 16-byte chunk XOR of this row */
		ptx_emit(g->f, "mul.lo.s32 %R, %R, %I;", xr, row, span);
		ptx_emit(g->f, "shr.u32 %R, %R, 3;", xr, xr);
		ptx_emit(g->f, "and.b32 %R, %R, %I;", xr, xr,
			(int64_t)(sw - 16));
	}
	int per = 16 / 4;  /* b32 registers per chunk */
	for (int c = 0; c < bytes / 16; c++) {
		int64_t off = c0 + 16 * c, blk = off / span * rows * span;
		if (sw) {
			ptx_emit(g->f, "xor.b32 %R, %R, %I;", t, xr, off % span);
			ptx_emit(g->f, "add.s32 %R, %R, %R;", a, rb, t);
		} else {
			ptx_emit(g->f, "add.s32 %R, %R, %I;", a, rb, off % span);
		}
		if (ld)
			ptx_emit(g->f, "ld.%S.v4.b32 {%R, %R, %R, %R}, "
				"[%R+%I];", sp, x[per * c], x[per * c + 1],
				x[per * c + 2], x[per * c + 3], a, blk);
		else if (blk)
			ptx_emit(g->f, "st.%S.v4.b32 [%R+%I], {%R, %R, %R, "
				"%R};", sp, a, blk, x[per * c], x[per * c + 1],
				x[per * c + 2], x[per * c + 3]);
		else
			ptx_emit(g->f, "st.%S.v4.b32 [%R], {%R, %R, %R, %R};",
				sp, a, x[per * c], x[per * c + 1], x[per * c + 2],
				x[per * c + 3]);
	}
}

/* store G[...], t [rowdim=K] [limit=L] of a tmem_rows tile: every
 * thread its row, a packed pair (16-bit) or one f32 per store; a row
 * whose index K is >= L is skipped. */
static void
gstore_tile(PG *g, const SirIns *in, PReg ptr)
{
	const SirVal *v = &g->sp->vals[in->a[1]];
	int n, esz = ty_bytes(in->r[0]->ety);
	PReg *x = pg_frag(g, in->a[1], &n);
	bool pk = v->ety != TY_F32;

	if (!x || v->lay->kind != LK_TMEM_ROWS) {
		pg_unsupported(g, in);
		return;
	}
	PReg row = my_row(g), u = ptx_reg(g->f, RB32), at = ptx_reg(g->f, RB64);
	PReg q = ptx_reg(g->f, RP);
	int skip = ptx_label(g->f);
	ptx_emit(g->f, "add.s32 %R, %R, %R;", u, row, pg_u32(g, in->a[3]));
	ptx_emit(g->f, "setp.ge.s32 %R, %R, %R;", q, u, pg_u32(g, in->a[2]));
	ptx_emit(g->f, "@%R bra %L;", q, skip);
	ptx_emit(g->f, "mad.lo.s32 %R, %R, %R, %R;", u, row, pg_u32(g, in->a[4]),
		pg_u32(g, in->a[0]));
	ptx_emit(g->f, "mad.wide.s32 %R, %R, %I, %R;", at, u, (int64_t)esz,
		ptr);
	/* reduce=add: red.global.add, f32 or a 16-bit pair */
	const char *op = !in->imm ? (pk ? "st.global.b32" : "st.global.f32") :
		!pk ? "red.global.add.f32" : v->ety == TY_BF16 ?
		"red.global.add.noftz.bf16x2" : "red.global.add.noftz.f16x2";
	for (int j = 0; j < n; j++)
		ptx_emit(g->f, "%S [%R+%I], %R;", op, at,
			(int64_t)((pk ? 2 * j : j) * esz), x[j]);
	ptx_place(g->f, skip);
}

/* global_load x, G[...] [rowdim=K] [limit=L] into a tmem_rows tile:
 * every thread its row, a packed pair (16-bit) or one f32 per load; a
 * row whose index K is >= L reads 0. */
static void
gtload(PG *g, const SirIns *in)
{
	const SirVal *v = &g->sp->vals[in->dst];
	int n, esz = ty_bytes(in->r[0]->ety);
	PReg *x = pg_frag(g, in->dst, &n);
	bool pk = v->ety != TY_F32;
	bool rv = is_rows(v);

	/* a row vector: one row per thread, its stride 1 (a[3]), as a
	 * one-column tile */
	if (!x || (rv ? v->lay->parent->kind : v->lay->kind) !=
	    LK_TMEM_ROWS || (rv && pk)) {
		pg_unsupported(g, in);
		return;
	}
	PReg ptr = ptx_reg(g->f, RB64), row = my_row(g);
	PReg u = ptx_reg(g->f, RB32), at = ptx_reg(g->f, RB64);
	PReg q = ptx_reg(g->f, RP);
	ptx_emit(g->f, "ld.param.u64 %R, [%S];", ptr, in->r[0]->name);
	ptx_emit(g->f, "cvta.to.global.u64 %R, %R;", ptr, ptr);
	ptx_emit(g->f, "add.s32 %R, %R, %R;", u, row, pg_u32(g, in->a[2]));
	ptx_emit(g->f, "setp.ge.s32 %R, %R, %R;", q, u, pg_u32(g, in->a[1]));
	ptx_emit(g->f, "mad.lo.s32 %R, %R, %R, %R;", u, row, pg_u32(g, in->a[3]),
		pg_u32(g, in->a[0]));
	ptx_emit(g->f, "mad.wide.s32 %R, %R, %I, %R;", at, u, (int64_t)esz,
		ptr);
	for (int j = 0; j < n; j++) {
		ptx_emit(g->f, "mov.b32 %R, 0;", x[j]);  /* old value dead */
		ptx_emit(g->f, pk ? "@!%R ld.global.nc.b32 %R, [%R+%I];" :
			"@!%R ld.global.nc.f32 %R, [%R+%I];", q, x[j], at,
			(int64_t)((pk ? 2 * j : j) * esz));
	}
}

/* store G[...], v [limit=L]: a scalar from every executing thread, or a
 * row vector from every thread (its row), rows whose index reaches L
 * skipped; a tile by gstore_tile. */
static void
gstore(PG *g, const SirIns *in)
{
	const Res *r = in->r[0];
	const SirVal *v = &g->sp->vals[in->a[1]];
	PReg ptr = ptx_reg(g->f, RB64), off = ptx_reg(g->f, RB64);
	int esz = ty_bytes(r->ety);
	const char *st = r->ety == TY_F32 ? "f32" : esz == 2 ? "b16" :
		esz == 8 ? "b64" : "b32";
	PReg idx = pg_u32(g, in->a[0]), val;
	int skip = -1;

	if (v->ty == TY_FRAG && is_rows(v) && v->lay->parent->kind !=
	    LK_TMEM_ROWS) {
		pg_unsupported(g, in);
		return;
	}
	ptx_emit(g->f, "ld.param.u64 %R, [%S];", ptr, r->name);
	ptx_emit(g->f, "cvta.to.global.u64 %R, %R;", ptr, ptr);
	if (v->ty == TY_FRAG && !is_rows(v)) {
		gstore_tile(g, in, ptr);
		return;
	}
	if (v->ty == TY_FRAG) {
		int n;
		PReg row = my_row(g), li = ptx_reg(g->f, RB32);
		val = pg_frag(g, in->a[1], &n)[0];
		if (in->na > 2) {  /* the row's last index against limit */
			PReg q = ptx_reg(g->f, RP);
			skip = ptx_label(g->f);
			ptx_emit(g->f, "add.s32 %R, %R, %R;", li, row,
				pg_u32(g, in->a[3]));
			ptx_emit(g->f, "setp.ge.s32 %R, %R, %R;", q, li,
				pg_u32(g, in->a[2]));
			ptx_emit(g->f, "@%R bra %L;", q, skip);
		}
		ptx_emit(g->f, "add.s32 %R, %R, %R;", li, row, idx);
		idx = li;
	} else {
		val = pg_reg(g, in->a[1]);
	}
	ptx_emit(g->f, "mul.wide.s32 %R, %R, %I;", off, idx, (int64_t)esz);
	ptx_emit(g->f, "add.s64 %R, %R, %R;", off, off, ptr);
	ptx_emit(g->f, "st.global.%S [%R], %R;", st, off, val);
	if (skip >= 0)
		ptx_place(g->f, skip);
}

static bool
tile_op(PG *g, const SirIns *in)
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
	case SOP_tmem_load: case SOP_tmem_store:
		tmem_move(g, in);
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
	case SOP_tc_mma:
		sm100_tcmma(g, in);
		return true;
	default:
		return false;
	}
}

/* Register j of a tmem_rows tile: the thread's one row, column j. */
static bool
elem_keys(const Layout *l, int j, int *row, int *col)
{
	if (l->kind != LK_TMEM_ROWS)
		return false;
	*row = 0;
	*col = j;
	return true;
}

const TargetOps sm100_ops = {
	.id = TGT_SM100A,
	.rows = sm100_rows,
	.tile_regs = tile_regs,
	.tile_op = tile_op,
	.elem_keys = elem_keys,
};
