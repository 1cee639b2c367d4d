/* ptxblock.c: register tiles in 'blocked' layouts (issue #26), the same
 * on every target: the layout of memory-bound kernels (norms, softmax),
 * where a row is spread over the lanes of a warp, or several warps, in
 * vectors of consecutive elements so that loads and stores are 16-byte
 * and coalesced.
 *
 * blocked(m=M, n=N, threads=P, tpr=T, vec=V): partition thread t (0..P-1)
 * is in row group g = t / T at place l = t % T.  It holds rows
 *     row(k) = g + k * (P / T),             k = 0 .. RK-1, RK = M T / P
 * and in each, C = N / (T V) chunks of V consecutive columns
 *     col(c, e) = c * T * V + l * V + e,    c = 0 .. C-1, e = 0 .. V-1.
 * Element j = (k * C + c) * V + e is register j (f32, i32, bool), or half
 * of b32 register j / 2 (16-bit, the even element in the low half).  A
 * row vector rows(L) is RK f32 registers (row k); a column vector
 * cols(L) is C * V elements (column j), f32 or 16-bit packed as a tile.
 *
 * A row's reduction: a thread's elements, then a butterfly over the
 * lanes of its row (the T <= 32 lanes of a row group lie together in one
 * warp); with T > 32 that is a warp's partial, and rowred_put (lane 0
 * of each warp writes it to shared memory), a barrier and rowred_get
 * (each thread reads and combines its rows' partials, in warp order, so
 * every thread gets the same bits) finish it.
 *
 * Requires: tiles whose layouts sema checked (blocked_check).  Ensures:
 * every op on a blocked tile is lowered here or diagnosed. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"
#include "ptx/ptx.h"
#include "ptx/ptxgen.h"

typedef struct {
	int P, T, V, RK, C;
} Geo;

/* The blocked layout behind l (itself, or a row or column vector's
 * parent), NULL for other layouts. */
static const Layout *
blocked_of(const Layout *l)
{
	if (l && (l->kind == LK_ROWS || l->kind == LK_COLS))
		l = l->parent;
	return l && l->kind == LK_BLOCKED ? l : NULL;
}

static Geo
geo(const Layout *l)
{
	Geo b;

	l = blocked_of(l);
	b.P = l->threads;
	b.T = l->tpr;
	b.V = l->vec;
	b.RK = l->m * l->tpr / l->threads;
	b.C = l->n / (l->tpr * l->vec);
	return b;
}

static bool
is_kind(const SirVal *v, LayoutKind k)
{
	return v->ty == TY_FRAG && v->lay && v->lay->kind == k &&
		blocked_of(v->lay);
}

int
pg_blocked_regs(const SirVal *v, RKind *k)
{
	const Layout *l = v->lay;

	if (!blocked_of(l))
		return -1;
	Geo b = geo(l);
	int n = l->kind == LK_BLOCKED ? b.RK * b.C * b.V : l->kind == LK_COLS ?
		b.C * b.V : b.RK;
	switch (v->ety) {
	case TY_F32: *k = RF32; return n;
	case TY_I32: *k = RB32; return l->kind == LK_ROWS ? -1 : n;
	case TY_BOOL: *k = RP; return l->kind == LK_ROWS ? -1 : n;
	case TY_BF16: case TY_F16:
		*k = RB32;
		return l->kind == LK_ROWS ? -1 : n / 2;
	default:
		return -1;
	}
}

bool
pg_blocked_keys(const Layout *l, int j, int *row, int *col)
{
	if (!l || l->kind != LK_BLOCKED)
		return false;
	Geo b = geo(l);
	*row = j / (b.C * b.V);
	*col = j % (b.C * b.V);
	return true;
}

/* This thread's row group (g) and place in its row (l), from its index
 * in the partition. */
static void
place(PG *g, const Geo *b, PReg *grp, PReg *pl)
{
	PReg t = ptx_reg(g->f, RB32);

	ptx_emit(g->f, "sub.s32 %R, %R, %I;", t, g->tid,
		(int64_t)g->sp->part->warp_lo * 32);
	*grp = ptx_reg(g->f, RB32);
	*pl = ptx_reg(g->f, RB32);
	ptx_emit(g->f, "shr.u32 %R, %R, %I;", *grp, t,
		(int64_t)__builtin_ctz((unsigned)b->T));
	ptx_emit(g->f, "and.b32 %R, %R, %I;", *pl, t, (int64_t)(b->T - 1));
}

/* Element j of operand r seen by a result of layout kind dk (a tile, a
 * row vector or a column vector), one register per element. */
static PReg
elem(PG *g, Ref r, int j, int dk)
{
	const SirVal *v = &g->sp->vals[r];
	int n;

	if (v->ty != TY_FRAG)
		return pg_reg(g, r);
	PReg *x = pg_frag(g, r, &n);
	Geo b = geo(v->lay);
	if (dk == LK_BLOCKED && v->lay->kind == LK_ROWS)
		return x[j / (b.C * b.V)];
	if (dk == LK_BLOCKED && v->lay->kind == LK_COLS)
		return x[j % (b.C * b.V)];
	return x[j];
}

static void
elementwise(PG *g, const SirIns *in)
{
	pg_elementwise(g, in, elem, g->sp->vals[in->dst].lay->kind);
}

/* fill (a scalar into every element), mov (a copy), cvt between f32 and
 * 16-bit (pairs: the even element in the low half), convert (a rename:
 * only to an equal layout). */
static void
move(PG *g, const SirIns *in)
{
	const SirVal *dv = &g->sp->vals[in->dst];
	const SirVal *sv = &g->sp->vals[in->a[0]];
	int n, m;
	PReg *d = pg_frag(g, in->dst, &n);

	if (!d) {
		pg_unsupported(g, in);
		return;
	}
	if (sv->ty != TY_FRAG) {
		PReg v = pg_reg(g, in->a[0]);
		if (dv->ety == TY_F32) {
			for (int j = 0; j < n; j++)
				ptx_emit(g->f, "mov.f32 %R, %R;", d[j], v);
			return;
		}
		PReg p = ptx_reg(g->f, RB32);
		ptx_emit(g->f, "cvt.rn.%Sx2.f32 %R, %R, %R;", ty_name(dv->ety), p,
			v, v);
		for (int j = 0; j < n; j++)
			ptx_emit(g->f, "mov.b32 %R, %R;", d[j], p);
		return;
	}
	PReg *s = pg_frag(g, in->a[0], &m);
	if (!s) {
		pg_unsupported(g, in);
		return;
	}
	if (dv->ety == sv->ety || in->op != SOP_cvt) {
		for (int j = 0; j < n && j < m; j++)
			ptx_emit(g->f, "mov.b32 %R, %R;", d[j], s[j]);
		return;
	}
	if (sv->ety == TY_F32) {  /* pack: the first source is the high half */
		for (int j = 0; j < n; j++)
			ptx_emit(g->f, "cvt.rn.%Sx2.f32 %R, %R, %R;",
				ty_name(dv->ety), d[j], s[2 * j + 1], s[2 * j]);
		return;
	}
	if (dv->ety != TY_F32) {
		pg_unsupported(g, in);
		return;
	}
	PReg lo = ptx_reg(g->f, RB16), hi = ptx_reg(g->f, RB16);
	for (int j = 0; j < m; j++) {
		ptx_emit(g->f, "mov.b32 {%R, %R}, %R;", lo, hi, s[j]);
		ptx_emit(g->f, "cvt.f32.%S %R, %R;", ty_name(sv->ety), d[2 * j],
			lo);
		ptx_emit(g->f, "cvt.f32.%S %R, %R;", ty_name(sv->ety),
			d[2 * j + 1], hi);
	}
}

/* rowmax/rowsum: a thread's elements of each row in four chains, joined,
 * then a butterfly over the min(T, 32) lanes of the row.  With T > 32
 * the result is the warp's partial (sirgen adds rowred_put/get). */
static void
reduce(PG *g, const SirIns *in)
{
	const char *op = in->op == SOP_rowmax ? "max.f32" : "add.f32";
	const SirVal *xv = &g->sp->vals[in->a[0]];
	int n, nr;
	PReg *x = pg_frag(g, in->a[0], &n), *d = pg_frag(g, in->dst, &nr);
	PReg t = ptx_reg(g->f, RF32);

	if (!x || !d || xv->lay->kind != LK_BLOCKED || xv->ety != TY_F32) {
		pg_unsupported(g, in);
		return;
	}
	Geo b = geo(xv->lay);
	int per = b.C * b.V, lanes = b.T < 32 ? b.T : 32;
	for (int k = 0; k < b.RK; k++) {
		PReg part[4];
		int c = per < 4 ? per : 4;
		for (int i = 0; i < c; i++) {
			part[i] = ptx_reg(g->f, RF32);
			ptx_emit(g->f, "mov.f32 %R, %R;", part[i], x[k * per + i]);
		}
		for (int i = 4; i < per; i++)
			ptx_emit(g->f, "%S %R, %R, %R;", op, part[i % 4],
				part[i % 4], x[k * per + i]);
		for (int w = 1; w < c; w *= 2)
			for (int j = 0; j + w < c; j += 2 * w)
				ptx_emit(g->f, "%S %R, %R, %R;", op, part[j],
					part[j], part[j + w]);
		for (int s = 1; s < lanes; s *= 2) {
			ptx_emit(g->f, "shfl.sync.bfly.b32 %R, %R, %I, 31, "
				"0xffffffff;", t, part[0], (int64_t)s);
			ptx_emit(g->f, "%S %R, %R, %R;", op, part[0], part[0], t);
		}
		if (in->na > 1)
			ptx_emit(g->f, "%S %R, %R, %R;", op, part[0], part[0],
				elem(g, in->a[1], k, LK_ROWS));
		ptx_emit(g->f, "mov.f32 %R, %R;", d[k], part[0]);
	}
}

/* The address of element i of a stage of f32 buffer r. */
static PReg
slot_addr(PG *g, const SirIns *in, PReg idx)
{
	PReg base = pg_stage_base(g, in->r[0], in->ri[0]);
	PReg a = ptx_reg(g->f, RB32);

	ptx_emit(g->f, "mad.lo.s32 %R, %R, 4, %R;", a, idx, base);
	return a;
}

/* rowred_put: lane 0 of each warp writes its rows' partials, row(k) of
 * the tile at element row(k) * (T / 32) + (the warp's place in the row).
 * rowred_get: each thread combines the T / 32 partials of each of its
 * rows, in warp order, with the initial value last. */
static void
across(PG *g, const SirIns *in)
{
	bool put = in->op == SOP_rowred_put;
	const SirVal *v = &g->sp->vals[in->a[0]];
	int n, nd;
	PReg *x = pg_frag(g, in->a[0], &n);
	PReg *d = put ? NULL : pg_frag(g, in->dst, &nd);

	if (!x || !is_kind(v, LK_ROWS) || (!put && !d)) {
		pg_unsupported(g, in);
		return;
	}
	Geo b = geo(v->lay);
	int wpr = b.T / 32;
	PReg grp, pl, i = ptx_reg(g->f, RB32), w = ptx_reg(g->f, RB32);
	place(g, &b, &grp, &pl);
	if (put) {
		PReg p = ptx_reg(g->f, RP);
		ptx_emit(g->f, "setp.ne.u32 %R, %R, 0;", p, g->lane);
		ptx_emit(g->f, "shr.u32 %R, %R, 5;", w, pl);
		for (int k = 0; k < b.RK; k++) {
			/* (grp + k P/T) * wpr + w */
			ptx_emit(g->f, "add.s32 %R, %R, %I;", i, grp,
				(int64_t)k * (b.P / b.T));
			ptx_emit(g->f, "mad.lo.s32 %R, %R, %I, %R;", i, i,
				(int64_t)wpr, w);
			ptx_emit(g->f, "@!%R st.shared.f32 [%R], %R;", p,
				slot_addr(g, in, i), x[k]);
		}
		return;
	}
	const char *op = in->imm ? "max.f32" : "add.f32";
	PReg t = ptx_reg(g->f, RF32);
	for (int k = 0; k < b.RK; k++) {
		ptx_emit(g->f, "add.s32 %R, %R, %I;", i, grp,
			(int64_t)k * (b.P / b.T));
		ptx_emit(g->f, "mul.lo.s32 %R, %R, %I;", i, i, (int64_t)wpr);
		PReg a = slot_addr(g, in, i);
		ptx_emit(g->f, "ld.shared.f32 %R, [%R];", d[k], a);
		for (int q = 1; q < wpr; q++) {
			ptx_emit(g->f, "ld.shared.f32 %R, [%R+%I];", t, a,
				(int64_t)q * 4);
			ptx_emit(g->f, "%S %R, %R, %R;", op, d[k], d[k], t);
		}
		if (in->na > 1)
			ptx_emit(g->f, "%S %R, %R, %R;", op, d[k], d[k],
				elem(g, in->a[1], k, LK_ROWS));
	}
}

/* clred_put: the first thread of each row group writes its rows' CTA
 * partials into element row(k) * C + rank of the stage in each of the C
 * CTAs of the cluster (mapa, st.shared::cluster).  clred_get: each
 * thread combines the C partials of each of its rows, in rank order,
 * with the initial value last. */
static void
across_ctas(PG *g, const SirIns *in)
{
	bool put = in->op == SOP_clred_put;
	const SirVal *v = &g->sp->vals[in->a[0]];
	const int *cl = g->k->cluster;
	int n, nd, c = cl[0] * cl[1] * cl[2];
	PReg *x = pg_frag(g, in->a[0], &n);
	PReg *d = put ? NULL : pg_frag(g, in->dst, &nd);

	if (!x || !is_kind(v, LK_ROWS) || (!put && !d)) {
		pg_unsupported(g, in);
		return;
	}
	Geo b = geo(v->lay);
	PReg grp, pl, i = ptx_reg(g->f, RB32);
	place(g, &b, &grp, &pl);
	if (put) {
		/* cbar= (in->r[1]): the first thread of the partition expects
		 * the partials of every row and CTA on this CTA's barrier,
		 * and the stores are st.async, each completing its bytes on
		 * the barrier of the CTA it reaches */
		PReg p = ptx_reg(g->f, RP), rk = ptx_reg(g->f, RB32);
		PReg ra = ptx_reg(g->f, RB32), rb = ptx_reg(g->f, RB32);
		PReg bar = {0};
		if (in->r[1]) {
			PReg q = ptx_reg(g->f, RP);
			bar = pg_bar_addr(g, in->r[1], in->ri[1]);
			ptx_emit(g->f, "setp.ne.u32 %R, %R, %I;", q, g->tid,
				(int64_t)g->sp->part->warp_lo * 32);
			ptx_emit(g->f, "@!%R mbarrier.arrive.expect_tx.shared::cta."
				"b64 _, [%R], %I;", q, bar,
				(int64_t)blocked_of(v->lay)->m * c * 4);
		}
		ptx_emit(g->f, "setp.ne.u32 %R, %R, 0;", p, pl);
		ptx_emit(g->f, "mov.u32 %R, %%cluster_ctarank;", rk);
		for (int k = 0; k < b.RK; k++) {
			ptx_emit(g->f, "add.s32 %R, %R, %I;", i, grp,
				(int64_t)k * (b.P / b.T));
			ptx_emit(g->f, "mad.lo.s32 %R, %R, %I, %R;", i, i,
				(int64_t)c, rk);
			PReg a = slot_addr(g, in, i);
			for (int q = 0; q < c; q++) {
				ptx_emit(g->f, "mapa.shared::cluster.u32 %R, %R, %I;",
					ra, a, (int64_t)q);
				if (!in->r[1]) {
					ptx_emit(g->f, "@!%R st.shared::cluster.f32 [%R], "
						"%R;", p, ra, x[k]);
					continue;
				}
				ptx_emit(g->f, "mapa.shared::cluster.u32 %R, %R, %I;",
					rb, bar, (int64_t)q);
				ptx_emit(g->f, "@!%R st.async.shared::cluster.mbarrier::"
					"complete_tx::bytes.f32 [%R], %R, [%R];", p, ra, x[k],
					rb);
			}
		}
		if (in->r[1])
			return;
		/* the writers release their stores at cluster scope; the
		 * cluster's barrier (cl_sync) then arrives relaxed, without
		 * a GPU-scope MEMBAR in every thread */
		ptx_emit(g->f, "@!%R fence.acq_rel.cluster;", p);
		return;
	}
	const char *op = in->imm ? "max.f32" : "add.f32";
	PReg t = ptx_reg(g->f, RF32);
	for (int k = 0; k < b.RK; k++) {
		ptx_emit(g->f, "add.s32 %R, %R, %I;", i, grp,
			(int64_t)k * (b.P / b.T));
		ptx_emit(g->f, "mul.lo.s32 %R, %R, %I;", i, i, (int64_t)c);
		PReg a = slot_addr(g, in, i);
		ptx_emit(g->f, "ld.shared.f32 %R, [%R];", d[k], a);
		for (int q = 1; q < c; q++) {
			ptx_emit(g->f, "ld.shared.f32 %R, [%R+%I];", t, a,
				(int64_t)q * 4);
			ptx_emit(g->f, "%S %R, %R, %R;", op, d[k], d[k], t);
		}
		if (in->na > 1)
			ptx_emit(g->f, "%S %R, %R, %R;", op, d[k], d[k],
				elem(g, in->a[1], k, LK_ROWS));
	}
}

/* colsum(x) of a tile of one row group: column j of the vector is the
 * sum of the thread's RK rows' element j, in row order. */
static void
colsum(PG *g, const SirIns *in)
{
	const SirVal *xv = &g->sp->vals[in->a[0]];
	int n, nd;
	PReg *x = pg_frag(g, in->a[0], &n), *d = pg_frag(g, in->dst, &nd);

	if (!x || !d || xv->lay->kind != LK_BLOCKED || xv->ety != TY_F32) {
		pg_unsupported(g, in);
		return;
	}
	Geo b = geo(xv->lay);
	int per = b.C * b.V;
	for (int j = 0; j < per && j < nd; j++) {
		ptx_emit(g->f, "mov.f32 %R, %R;", d[j], x[j]);
		for (int k = 1; k < b.RK; k++)
			ptx_emit(g->f, "add.f32 %R, %R, %R;", d[j], d[j],
				x[k * per + j]);
	}
}

/* rowid(x), colid(x): row(k) and col(c, e) of each element. */
static void
index_tile(PG *g, const SirIns *in)
{
	const SirVal *xv = &g->sp->vals[in->a[0]];
	int n;
	PReg *d = pg_frag(g, in->dst, &n), grp, pl;

	if (!d || xv->lay->kind != LK_BLOCKED) {
		pg_unsupported(g, in);
		return;
	}
	Geo b = geo(xv->lay);
	place(g, &b, &grp, &pl);
	if (in->op == SOP_colid)
		ptx_emit(g->f, "shl.b32 %R, %R, %I;", pl, pl,
			(int64_t)__builtin_ctz((unsigned)b.V));
	int64_t *off = NEWARR(&g->ctx->scratch, int64_t, (size_t)n);
	for (int j = 0; j < n; j++) {
		int k = j / (b.C * b.V), c = j / b.V % b.C, e = j % b.V;
		off[j] = in->op == SOP_rowid ? (int64_t)k * (b.P / b.T) :
			(int64_t)c * b.T * b.V + e;
		ptx_emit(g->f, "add.s32 %R, %R, %I;", d[j], in->op == SOP_rowid ?
			grp : pl, off[j]);
	}
	pg_affine(g, in->dst, off, n);
}

/* The pieces of one chunk of V elements of esz bytes in memory: at most
 * 16 bytes each, as ld/st .v4/.v2/.b32 (or .b16 for one 16-bit
 * element).  Register r of the chunk's first is reg0 + r. */
typedef struct {
	int off;      /* byte offset in the chunk */
	int nreg;     /* registers: 1, 2 or 4 */
	int reg;      /* the chunk's register index of its first */
} Piece;

static int
pieces(int V, int esz, Piece *p)
{
	int bytes = V * esz, n = 0;

	for (int off = 0; off < bytes; off += 16) {
		int len = bytes - off < 16 ? bytes - off : 16;
		p[n++] = (Piece){off, len < 4 ? 1 : len / 4, off / 4};
	}
	return n;
}

/* One chunk's access at address at (plus off and the piece's offset)
 * in state space sp ("global": loads through the read-only path, or
 * "shared", "shared::cluster"), under predicate skip when pred (true: not
 * accessed; a load gives 0).  x: the tile's registers, the chunk's
 * elements j0 .. j0+V-1. */
static void
chunk(PG *g, bool ld, Ty ety, const char *sp, PReg at, int64_t off,
	bool pred, PReg skip, PReg *x, int j0, int V)
{
	int esz = ty_bytes(ety);
	bool f32 = ety == TY_F32, gl = !strcmp(sp, "global");
	const char *lop = gl ? "ld.global.nc" : ld ? "ld.shared" : "";
	char pp[24] = "", name[16];
	Piece pc[4];
	int np = pieces(V, esz, pc);

	if (pred)
		snprintf(pp, sizeof pp, "@!%s ", ptx_regname(g->f, skip, name));
	if (!gl)
		lop = !strcmp(sp, "shared") ? "ld.shared" :
			"ld.shared::cluster";
	if (!f32 && V == 1) {  /* one 16-bit element: a half of x[j0 / 2] */
		PReg h = ptx_reg(g->f, RB16), o = ptx_reg(g->f, RB16);
		PReg lo = ptx_reg(g->f, RB16), hi = ptx_reg(g->f, RB16);
		bool high = j0 % 2;
		PReg a = at;
		if (off) {
			a = ptx_reg(g->f, at.kind);
			ptx_emit(g->f, at.kind == RB64 ? "add.s64 %R, %R, %I;" :
				"add.s32 %R, %R, %I;", a, at, off);
		}
		if (ld) {
			ptx_emit(g->f, "mov.b16 %R, 0;", h);
			ptx_emit(g->f, "%S%S.b16 %R, [%R];", pp, lop, h, a);
			if (!high) {
				ptx_emit(g->f, "mov.b16 %R, 0;", o);
				ptx_emit(g->f, "mov.b32 %R, {%R, %R};", x[j0 / 2], h,
					o);
			} else {
				ptx_emit(g->f, "mov.b32 {%R, %R}, %R;", lo, o,
					x[j0 / 2]);
				ptx_emit(g->f, "mov.b32 %R, {%R, %R};", x[j0 / 2], lo,
					h);
			}
		} else {
			ptx_emit(g->f, "mov.b32 {%R, %R}, %R;", lo, hi, x[j0 / 2]);
			ptx_emit(g->f, "%Sst.%S.b16 [%R], %R;", pp, sp, a,
				high ? hi : lo);
		}
		return;
	}
	int base = f32 ? j0 : j0 / 2;
	const char *t = f32 ? "f32" : "b32";
	for (int i = 0; i < np; i++) {
		PReg *r = x + base + pc[i].reg;
		int64_t o = off + pc[i].off;
		if (ld && pred)
			for (int q = 0; q < pc[i].nreg; q++)
				ptx_emit(g->f, "mov.b32 %R, 0;", r[q]);
		switch (pc[i].nreg) {
		case 1:
			if (ld)
				ptx_emit(g->f, "%S%S.%S %R, [%R+%I];", pp, lop, t,
					r[0], at, o);
			else
				ptx_emit(g->f, "%Sst.%S.%S [%R+%I], %R;", pp, sp, t,
					at, o, r[0]);
			break;
		case 2:
			if (ld)
				ptx_emit(g->f, "%S%S.v2.%S {%R, %R}, [%R+%I];", pp,
					lop, t, r[0], r[1], at, o);
			else
				ptx_emit(g->f, "%Sst.%S.v2.%S [%R+%I], {%R, %R};",
					pp, sp, t, at, o, r[0], r[1]);
			break;
		default:
			if (ld)
				ptx_emit(g->f, "%S%S.v4.%S {%R, %R, %R, %R}, "
					"[%R+%I];", pp, lop, t, r[0], r[1], r[2],
					r[3], at, o);
			else
				ptx_emit(g->f, "%Sst.%S.v4.%S [%R+%I], {%R, %R, %R, "
					"%R};", pp, sp, t, at, o, r[0], r[1], r[2],
					r[3]);
			break;
		}
	}
}

/* The global's generic address. */
static PReg
gptr(PG *g, const Res *r)
{
	PReg p = ptx_reg(g->f, RB64);

	ptx_emit(g->f, "ld.param.u64 %R, [%S];", p, r->name);
	ptx_emit(g->f, "cvta.to.global.u64 %R, %R;", p, p);
	return p;
}

/* A blocked tile to or from global memory (global_load: dst, a[0] the
 * linear index, a[1] the row limit, a[2] index K, a[3] the row stride,
 * a[4] the width; store: a[0] index, a[1] the tile, a[2] limit, a[3]
 * index K, a[4] stride, a[5] width), or a column vector from it (a[0],
 * a[4]).  Row k is skipped when index K + row(k) >= the limit, a chunk
 * when its last column is >= the width (the width is a multiple of V,
 * docs/LANGUAGE.md: a vector that crosses it is neither read, it gives
 * 0, nor written, and no access leaves the row). */
static void
gtile(PG *g, const SirIns *in)
{
	bool ld = in->op == SOP_gtload;
	Ref tv = ld ? in->dst : in->a[1];
	const SirVal *v = &g->sp->vals[tv];
	bool cols = v->lay->kind == LK_COLS;
	Ref lin = in->a[0], lim = in->a[ld ? 1 : 2], rix = in->a[ld ? 2 : 3];
	Ref stride = in->a[ld ? 3 : 4], width = in->a[ld ? 4 : 5];
	int n, esz = ty_bytes(in->r[0]->ety);
	PReg *x = pg_frag(g, tv, &n);

	if (!x || (ld ? in->na != 5 : in->na != 6 || in->imm) ||
	    v->ety != in->r[0]->ety) {
		pg_unsupported(g, in);
		return;
	}
	Geo b = geo(v->lay);
	PReg ptr = gptr(g, in->r[0]), grp, pl;
	place(g, &b, &grp, &pl);
	PReg c0 = ptx_reg(g->f, RB32), cc = ptx_reg(g->f, RB32);
	PReg u = ptx_reg(g->f, RB32), ri = ptx_reg(g->f, RB32);
	PReg rowp = ptx_reg(g->f, RP);
	PReg skip = ptx_reg(g->f, RP), at = ptx_reg(g->f, RB64);
	ptx_emit(g->f, "shl.b32 %R, %R, %I;", c0, pl,
		(int64_t)__builtin_ctz((unsigned)b.V));
	for (int k = 0; k < (cols ? 1 : b.RK); k++) {
		if (cols) {
			ptx_emit(g->f, "mov.b32 %R, %R;", u, pg_u32(g, lin));
			ptx_emit(g->f, "setp.ne.u32 %R, %R, %R;", rowp, u, u);
		} else {
			ptx_emit(g->f, "add.s32 %R, %R, %I;", ri, grp,
				(int64_t)k * (b.P / b.T));
			ptx_emit(g->f, "add.s32 %R, %R, %R;", u, ri,
				pg_u32(g, rix));
			ptx_emit(g->f, "setp.ge.s32 %R, %R, %R;", rowp, u,
				pg_u32(g, lim));
			ptx_emit(g->f, "mad.lo.s32 %R, %R, %R, %R;", u, ri,
				pg_u32(g, stride), pg_u32(g, lin));
		}
		for (int c = 0; c < b.C; c++) {
			/* the chunk's last column, c0 + V - 1, past the width:
			 * a vector that crosses it is not accessed */
			ptx_emit(g->f, "add.s32 %R, %R, %I;", cc, c0,
				(int64_t)c * b.T * b.V + b.V - 1);
			ptx_emit(g->f, "setp.ge.s32 %R, %R, %R;", skip, cc,
				pg_u32(g, width));
			ptx_emit(g->f, "sub.s32 %R, %R, %I;", cc, cc,
				(int64_t)b.V - 1);
			ptx_emit(g->f, "or.pred %R, %R, %R;", skip, skip, rowp);
			ptx_emit(g->f, "add.s32 %R, %R, %R;", cc, cc, u);
			ptx_emit(g->f, "mad.wide.s32 %R, %R, %I, %R;", at, cc,
				(int64_t)esz, ptr);
			chunk(g, ld, v->ety, "global", at, 0, true, skip, x,
				(k * b.C + c) * b.V, b.V);
		}
	}
}

/* smem_load x, B[s] [row=R] [col=C] [cta=K] and smem_store B[s], x of a
 * blocked tile: each thread its chunks, 16 bytes (or V elements) an
 * access, where cp_async (or a TMA box) puts element (r, c) of an
 * unswizzled buffer: byte (R + r) * rowbytes + (C + c) * esz of the
 * stage.  The thread's part, grp * rowbytes + l * V * esz, is computed
 * once; every access is [register + constant].  A warp's chunks of a row
 * are contiguous, so the accesses are free of bank conflicts. */
static void
smem_tile(PG *g, const SirIns *in)
{
	bool ld = in->op == SOP_smem_load;
	Ref tv = ld ? in->dst : in->a[0];
	const SirVal *v = &g->sp->vals[tv];
	const Res *r = in->r[0];
	int n, esz = ty_bytes(v->ety);
	PReg *x = pg_frag(g, tv, &n);

	if (!x || v->lay->kind != LK_BLOCKED || r->lay->swizzle ||
	    v->ety != r->ety) {
		pg_unsupported(g, in);
		return;
	}
	Geo b = geo(v->lay);
	int64_t rowbytes = r->shape[r->rank - 1] * esz;
	const char *sp;
	PReg base = pg_smem_base(g, in, pg_stage_base(g, r, in->ri[0]), &sp);
	PReg grp, pl, at = ptx_reg(g->f, RB32);
	place(g, &b, &grp, &pl);
	ptx_emit(g->f, "mad.lo.s32 %R, %R, %I, %R;", at, grp, rowbytes, base);
	ptx_emit(g->f, "mad.lo.s32 %R, %R, %I, %R;", at, pl,
		(int64_t)b.V * esz, at);
	/* width=W: chunk c is read when its last column, l V + c T V + V -
	 * 1, is below W */
	bool wd = ld && in->na > 0;
	PReg c0 = at, skip = at;
	if (wd) {
		c0 = ptx_reg(g->f, RB32);
		skip = ptx_reg(g->f, RP);
		ptx_emit(g->f, "shl.b32 %R, %R, %I;", c0, pl,
			(int64_t)__builtin_ctz((unsigned)b.V));
		ptx_emit(g->f, "sub.s32 %R, %R, %R;", c0, pg_u32(g, in->a[0]),
			c0);
	}
	for (int k = 0; k < b.RK; k++)
		for (int c = 0; c < b.C; c++) {
			int64_t off = (in->roff[0] + (int64_t)k * (b.P / b.T)) *
				rowbytes + (in->imm + (int64_t)c * b.T * b.V) * esz;
			if (wd)  /* skip: W - l V <= c T V + V - 1 */
				ptx_emit(g->f, "setp.le.s32 %R, %R, %I;", skip, c0,
					(int64_t)c * b.T * b.V + b.V - 1);
			chunk(g, ld, v->ety, sp, at, off, wd, skip, x,
				(k * b.C + c) * b.V, b.V);
		}
}

/* store G[...], v [limit=L] of a row vector of a blocked tile: the
 * first thread of each row group writes its rows, row(k) at the index
 * plus row(k), rows whose last index is >= L skipped. */
static void
gstore_rows(PG *g, const SirIns *in)
{
	const Res *r = in->r[0];
	int n, esz = ty_bytes(r->ety);
	PReg *x = pg_frag(g, in->a[1], &n);

	if (!x || r->ety != TY_F32) {
		pg_unsupported(g, in);
		return;
	}
	Geo b = geo(g->sp->vals[in->a[1]].lay);
	PReg ptr = gptr(g, r), grp, pl;
	PReg ri = ptx_reg(g->f, RB32), li = ptx_reg(g->f, RB32);
	PReg p = ptx_reg(g->f, RP), q = ptx_reg(g->f, RP);
	PReg at = ptx_reg(g->f, RB64);
	place(g, &b, &grp, &pl);
	ptx_emit(g->f, "setp.ne.u32 %R, %R, 0;", p, pl);
	for (int k = 0; k < b.RK; k++) {
		ptx_emit(g->f, "add.s32 %R, %R, %I;", ri, grp,
			(int64_t)k * (b.P / b.T));
		if (in->na > 2) {
			ptx_emit(g->f, "add.s32 %R, %R, %R;", li, ri,
				pg_u32(g, in->a[3]));
			ptx_emit(g->f, "setp.ge.s32 %R, %R, %R;", q, li,
				pg_u32(g, in->a[2]));
			ptx_emit(g->f, "or.pred %R, %R, %R;", q, q, p);
		} else {
			ptx_emit(g->f, "mov.pred %R, %R;", q, p);
		}
		ptx_emit(g->f, "add.s32 %R, %R, %R;", li, ri,
			pg_u32(g, in->a[0]));
		ptx_emit(g->f, "mad.wide.s32 %R, %R, %I, %R;", at, li,
			(int64_t)esz, ptr);
		ptx_emit(g->f, "@!%R st.global.f32 [%R], %R;", q, at, x[k]);
	}
}

/* global_load v, G[i] [limit=L] of a row vector of a blocked tile
 * (a[0] the linear index, a[1] the limit, a[2] the last index): row(k)
 * from the index plus row(k), 0 where the last index plus row(k) is >=
 * L; the threads of a row group read the same address. */
static void
gload_rows(PG *g, const SirIns *in)
{
	const Res *r = in->r[0];
	int n, esz = ty_bytes(r->ety);
	PReg *x = pg_frag(g, in->dst, &n);

	if (!x || r->ety != TY_F32) {
		pg_unsupported(g, in);
		return;
	}
	Geo b = geo(g->sp->vals[in->dst].lay);
	PReg ptr = gptr(g, r), grp, pl;
	PReg ri = ptx_reg(g->f, RB32), li = ptx_reg(g->f, RB32);
	PReg q = ptx_reg(g->f, RP), at = ptx_reg(g->f, RB64);
	place(g, &b, &grp, &pl);
	for (int k = 0; k < b.RK; k++) {
		ptx_emit(g->f, "add.s32 %R, %R, %I;", ri, grp,
			(int64_t)k * (b.P / b.T));
		ptx_emit(g->f, "add.s32 %R, %R, %R;", li, ri,
			pg_u32(g, in->a[2]));
		ptx_emit(g->f, "setp.ge.s32 %R, %R, %R;", q, li,
			pg_u32(g, in->a[1]));
		ptx_emit(g->f, "add.s32 %R, %R, %R;", li, ri,
			pg_u32(g, in->a[0]));
		ptx_emit(g->f, "mad.wide.s32 %R, %R, %I, %R;", at, li,
			(int64_t)esz, ptr);
		ptx_emit(g->f, "mov.b32 %R, 0;", x[k]);
		ptx_emit(g->f, "@!%R ld.global.nc.f32 %R, [%R];", q, x[k], at);
	}
}

/* Whether in is an op on a blocked tile, row or column vector (after
 * ptxtile.c took those of i32 and bool tiles). */
static bool
mine(const PG *g, const SirIns *in)
{
	if (in->op == SOP_rowred_put || in->op == SOP_rowred_get ||
	    in->op == SOP_clred_put || in->op == SOP_clred_get)
		return true;
	if (in->op == SOP_smem_store)
		return in->na > 0 && g->sp->vals[in->a[0]].ty == TY_FRAG &&
			blocked_of(g->sp->vals[in->a[0]].lay);
	if (in->op == SOP_gstore)
		return in->na > 1 && g->sp->vals[in->a[1]].ty == TY_FRAG &&
			blocked_of(g->sp->vals[in->a[1]].lay);
	if (in->op == SOP_rowid || in->op == SOP_colid || in->op == SOP_rowmax ||
	    in->op == SOP_rowsum || in->op == SOP_colsum)
		return blocked_of(g->sp->vals[in->a[0]].lay) != NULL;
	return in->dst && g->sp->vals[in->dst].ty == TY_FRAG &&
		blocked_of(g->sp->vals[in->dst].lay);
}

bool
pg_blocked_op(PG *g, const SirIns *in)
{
	if (!mine(g, in))
		return false;
	switch (in->op) {
	case SOP_add: case SOP_sub: case SOP_mul: case SOP_div:
	case SOP_min: case SOP_max: case SOP_neg: case SOP_exp2:
	case SOP_log2: case SOP_rcp: case SOP_tanh: case SOP_sqrt:
	case SOP_rsqrt:
		elementwise(g, in);
		return true;
	case SOP_fill: case SOP_mov: case SOP_cvt: case SOP_convert:
		move(g, in);
		return true;
	case SOP_rowmax: case SOP_rowsum:
		reduce(g, in);
		return true;
	case SOP_rowred_put: case SOP_rowred_get:
		across(g, in);
		return true;
	case SOP_clred_put: case SOP_clred_get:
		across_ctas(g, in);
		return true;
	case SOP_colsum:
		colsum(g, in);
		return true;
	case SOP_smem_load: case SOP_smem_store:
		smem_tile(g, in);
		return true;
	case SOP_rowid: case SOP_colid:
		index_tile(g, in);
		return true;
	case SOP_gtload:
		if (g->sp->vals[in->dst].lay->kind == LK_ROWS)
			gload_rows(g, in);
		else
			gtile(g, in);
		return true;
	case SOP_gstore:
		if (g->sp->vals[in->a[1]].lay->kind == LK_ROWS)
			gstore_rows(g, in);
		else
			gtile(g, in);
		return true;
	default:
		pg_unsupported(g, in);
		return true;
	}
}
