/* ptxtile.c: elementwise operations on register tiles of i32 and bool
 * elements, and the ones that make or choose with them (comparisons,
 * select, abs, cvt from i32), the same on every target (issue #22).
 * Every target's tile_regs gives f32, i32 and bool tiles one register per
 * element (.f32, .b32, .pred), register j holding the same element of
 * every tile of one layout and shape, so an elementwise operation is
 * register j of the operands to register j of the result, whatever the
 * layout; a scalar operand is its one register.  Row vectors do not
 * reach here except as abs's operand (sirtile.c), which keeps to its own
 * registers.  The element indices (rowid, colid) are the targets'.
 * Requires: tiles whose types sirtile.c checked.  Ensures: the ops this
 * file takes (pg_tile_elem returns true) are lowered or diagnosed. */
#include <string.h>

#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"
#include "ptx/ptx.h"
#include "ptx/ptxgen.h"

static bool
is_tile(const PG *g, Ref r, Ty ety)
{
	const SirVal *v = &g->sp->vals[r];

	return v->ty == TY_FRAG && v->ety == ety;
}

/* Is in an operation of this file: a tile result of i32 or bool, or of
 * abs or select, or a cvt or convert of an i32 or bool tile. */
static bool
mine(const PG *g, const SirIns *in)
{
	if (!in->dst || g->sp->vals[in->dst].ty != TY_FRAG ||
	    in->op == SOP_rowid || in->op == SOP_colid)
		return false;
	if (in->op == SOP_abs || in->op == SOP_select || in->op == SOP_gload)
		return true;
	if (in->op == SOP_cvt || in->op == SOP_convert || in->op == SOP_mov)
		return is_tile(g, in->a[0], TY_I32) || is_tile(g, in->a[0],
			TY_BOOL);
	return is_tile(g, in->dst, TY_I32) || is_tile(g, in->dst, TY_BOOL);
}

/* Operand k's register for element j: a tile's register j, else the
 * scalar's register. */
static PReg
opnd(PG *g, const SirIns *in, int k, int j, int n)
{
	const SirVal *v = &g->sp->vals[in->a[k]];
	int m;

	if (v->ty != TY_FRAG)
		return pg_reg(g, in->a[k]);
	PReg *x = pg_frag(g, in->a[k], &m);
	if (!x || m != n)
		fg_bug("tile operand %d of '%s' has %d registers, not %d", k,
			sir_ops[in->op].name, m, n);
	return x[j];
}

/* The instruction for in on element type t (of the operands: a
 * comparison's, else the result's), NULL when there is none. */
static const char *
insn(const SirIns *in, Ty t)
{
	static const char *const i32[] = {
		[SOP_add] = "add.s32", [SOP_sub] = "sub.s32",
		[SOP_mul] = "mul.lo.s32", [SOP_div] = "div.s32",
		[SOP_rem] = "rem.s32", [SOP_min] = "min.s32",
		[SOP_max] = "max.s32", [SOP_neg] = "neg.s32",
		[SOP_abs] = "abs.s32", [SOP_eq] = "setp.eq.s32",
		[SOP_ne] = "setp.ne.s32", [SOP_lt] = "setp.lt.s32",
		[SOP_le] = "setp.le.s32", [SOP_gt] = "setp.gt.s32",
		[SOP_ge] = "setp.ge.s32", [SOP_select] = "selp.b32",
		[SOP_mov] = "mov.b32", [SOP_convert] = "mov.b32",
		[SOP_cvt] = "mov.b32",
	};
	/* '!=' is true for NaN, as in C: the unordered compare */
	static const char *const f32[] = {
		[SOP_abs] = "abs.f32", [SOP_eq] = "setp.eq.f32",
		[SOP_ne] = "setp.neu.f32", [SOP_lt] = "setp.lt.f32",
		[SOP_le] = "setp.le.f32", [SOP_gt] = "setp.gt.f32",
		[SOP_ge] = "setp.ge.f32", [SOP_select] = "selp.f32",
	};
	static const char *const pred[] = {
		[SOP_and] = "and.pred", [SOP_or] = "or.pred",
		[SOP_not] = "not.pred", [SOP_mov] = "mov.pred",
		[SOP_convert] = "mov.pred",
	};
	const char *const *tab = t == TY_I32 ? i32 : t == TY_F32 ? f32 :
		t == TY_BOOL ? pred : NULL;
	size_t cnt = t == TY_I32 ? COUNT(i32) : t == TY_F32 ? COUNT(f32) :
		COUNT(pred);

	return tab && in->op < cnt ? tab[in->op] : NULL;
}

/* ------------------------------------------------------------ gathers
 *
 * A thread of a 64x128 accumulator holds 64 elements of 2 rows and 32
 * columns, and ptxas (13.0) does not merge repeated ld.global.nc of one
 * address: a document mask and a key bias, three gathers of 64 elements
 * with 66 distinct, assembled to 192 LDG.  So when a gather's index and
 * predicate are functions of rowid alone (or colid alone) and scalars,
 * the registers of one row (column) hold one value, and the gather
 * loads once per row (column) and copies. */

/* The row and column keys of register j of a tile of layout l: a
 * blocked layout's (ptxblock.c), else the target's; false without. */
static bool
keys(const PG *g, const Layout *l, int j, int *row, int *col)
{
	if (pg_blocked_keys(l, j, row, col))
		return true;
	return g->ops->elem_keys && g->ops->elem_keys(l, j, row, col);
}

/* For each of the n registers of a tile of layout l whose values depend
 * on d (sir_elem_deps) besides scalars, the first register holding the
 * same value (itself when it is the first): a gather loads only those,
 * a scatter stores only those. */
static void
same_as(const PG *g, const Layout *l, int d, int n, int *src)
{
	int *key = NEWARR(&g->ctx->scratch, int, (size_t)n);

	for (int j = 0; j < n; j++) {
		int row, col;
		src[j] = j;
		if (d & ~(SD_ROW | SD_COL) || d == (SD_ROW | SD_COL) ||
		    !keys(g, l, j, &row, &col))
			continue;
		key[j] = d == SD_ROW ? row : d == SD_COL ? col : 0;
		for (int i = 0; i < j && src[j] == j; i++)
			if (src[i] == i && key[i] == key[j])
				src[j] = i;
	}
}

/* A gather (a gload with a tile result, sir/sirload.c): element j of
 * the result is the global's element at register j of the linear index
 * tile where register j of the in-bounds tile holds, else 0: 'mov 0',
 * then a predicated ld.global.nc, so an index out of bounds makes no
 * access (16-bit elements: into a b16 register, widened to f32). */
static void
gather(PG *g, const SirIns *in)
{
	const Res *r = in->r[0];
	const Layout *l = g->sp->vals[in->dst].lay;
	int n, m, esz = ty_bytes(r->ety);
	PReg *d = pg_frag(g, in->dst, &n), *lin = pg_frag(g, in->a[0], &m);

	if (!d || !lin || m != n) {
		diag_error(g->ctx, in->span, "'gload' of a tile of layout '%s' "
			"(a gather) is not lowered to PTX for %s yet",
			l->name ? l->name : "?", g->t->name);
		g->failed = true;
		return;
	}
	PReg ptr = ptx_reg(g->f, RB64), at = ptx_reg(g->f, RB64);
	PReg h = esz == 2 ? ptx_reg(g->f, RB16) : (PReg){0};
	int *src = NEWARR(&g->ctx->scratch, int, (size_t)n);
	bool f32 = g->sp->vals[in->dst].ety == TY_F32;
	const int *dep = sir_elem_deps(g->ctx, g->sp);
	same_as(g, l, dep[in->a[0]] | dep[in->a[1]], n, src);
	ptx_emit(g->f, "ld.param.u64 %R, [%S];", ptr, r->name);
	ptx_emit(g->f, "cvta.to.global.u64 %R, %R;", ptr, ptr);
	for (int j = 0; j < n; j++) {
		PReg p = opnd(g, in, 1, j, n);
		if (src[j] != j) {
			ptx_emit(g->f, f32 ? "mov.f32 %R, %R;" : "mov.b32 %R, %R;",
				d[j], d[src[j]]);
			continue;
		}
		ptx_emit(g->f, "mad.wide.s32 %R, %R, %I, %R;", at, lin[j],
			(int64_t)esz, ptr);
		if (esz != 2) {
			ptx_emit(g->f, "mov.b32 %R, 0;", d[j]);
			ptx_emit(g->f, "@%R ld.global.nc.%S %R, [%R];", p,
				r->ety == TY_F32 ? "f32" : "b32", d[j], at);
			continue;
		}
		ptx_emit(g->f, "mov.b16 %R, 0;", h);
		ptx_emit(g->f, "@%R ld.global.nc.b16 %R, [%R];", p, h, at);
		ptx_emit(g->f, "cvt.f32.%S %R, %R;", r->ety == TY_BF16 ? "bf16" :
			"f16", d[j], h);
	}
}

/* A scatter (sir/sirload.c): element j of the value (a row vector's
 * register of j's row) to the global's element at register j of the
 * linear index tile, where register j of the in-bounds tile holds: a
 * predicated st.global (16-bit elements rounded from f32 by cvt.rn), or
 * red.global.add.f32 for reduce=add.  A plain store whose index,
 * predicate and value depend on the row alone (or the column alone)
 * stores once per row (column) of the thread, as a gather loads. */
static void
scatter(PG *g, const SirIns *in)
{
	const Res *r = in->r[0];
	const SirVal *vv = &g->sp->vals[in->a[1]];
	const Layout *l = g->sp->vals[in->a[0]].lay;
	bool rowvec = vv->lay->kind == LK_ROWS, red = in->imm != 0;
	int n, m, nv, esz = ty_bytes(r->ety);
	PReg *lin = pg_frag(g, in->a[0], &n), *ok = pg_frag(g, in->a[2], &m);
	PReg *v = pg_frag(g, in->a[1], &nv);
	int row, col;

	if (!lin || !ok || !v || m != n || (!rowvec && nv != n) ||
	    (rowvec && !keys(g, l, 0, &row, &col))) {
		diag_error(g->ctx, in->span, "a scatter of a tile of layout "
			"'%s' is not lowered to PTX for %s yet", l->name ?
			l->name : "?", g->t->name);
		g->failed = true;
		return;
	}
	int *src = NEWARR(&g->ctx->scratch, int, (size_t)n);
	const int *dep = sir_elem_deps(g->ctx, g->sp);
	/* reduce=add adds every element: none is left out */
	same_as(g, l, red ? SD_ANY : dep[in->a[0]] | dep[in->a[2]] |
		(rowvec ? SD_ROW : dep[in->a[1]]), n, src);
	PReg ptr = ptx_reg(g->f, RB64), at = ptx_reg(g->f, RB64);
	PReg h = esz == 2 ? ptx_reg(g->f, RB16) : (PReg){0};
	ptx_emit(g->f, "ld.param.u64 %R, [%S];", ptr, r->name);
	ptx_emit(g->f, "cvta.to.global.u64 %R, %R;", ptr, ptr);
	for (int j = 0; j < n; j++) {
		if (src[j] != j)
			continue;
		PReg x = v[j];
		if (rowvec) {
			keys(g, l, j, &row, &col);
			if (row < 0 || row >= nv)
				fg_bug("scatter: row key %d of %d", row, nv);
			x = v[row];
		}
		ptx_emit(g->f, "mad.wide.s32 %R, %R, %I, %R;", at, lin[j],
			(int64_t)esz, ptr);
		if (red)
			ptx_emit(g->f, "@%R red.global.add.f32 [%R], %R;", ok[j], at,
				x);
		else if (esz == 2) {
			ptx_emit(g->f, "cvt.rn.%S.f32 %R, %R;", r->ety == TY_BF16 ?
				"bf16" : "f16", h, x);
			ptx_emit(g->f, "@%R st.global.b16 [%R], %R;", ok[j], at, h);
		} else {
			ptx_emit(g->f, "@%R st.global.%S [%R], %R;", ok[j],
				r->ety == TY_F32 ? "f32" : "b32", at, x);
		}
	}
}

/* ------------------------------------------------------------ affine tiles
 *
 * rowid and colid give register j of a thread its register 0's value
 * plus a constant (frag.c, ptxblock.c, sm100/ptx_tmem.c), and sums,
 * differences, negations and constant multiples of such tiles and of
 * scalars keep the form: x_j = X + c_j, X in register 0.  ALiBi's
 * distance is one (q - k: rowid - colid plus scalars).  A cvt to f32 of
 * such a tile, or of its abs, then converts two registers a thread, not
 * one a register: with A = X & ~1023 (a multiple of 1024, exact in f32)
 * and B = X & 1023, X + c_j = A + (B + c_j) where B + c_j is exact in f32
 * while |c_j| <= 2^24 - 1024, so f32(A) + (f32(B) + c_j) rounds once, as
 * cvt.rn.f32.s32 does: two FADDs on the FMA pipe for a conversion on the
 * XU pipe, which exp2 needs (issue #22, docs/PERF.md).  It is X + c_j
 * unwrapped: where element j's i32 arithmetic overflows, it differs
 * from the wrapped value (docs/LANGUAGE.md 8.3 says so).  No branch to
 * a conversion a register there: the join would keep all n results
 * live at once (a 128-column tmem_rows tile spilled). */

/* Offsets past AFF_LIM are of no use (a cvt takes them within 2^24)
 * and are not kept, so that sums and products of kept ones stay far
 * inside int64_t. */
#define AFF_LIM ((int64_t)1 << 40)

void
pg_affine(PG *g, Ref dst, const int64_t *off, int n)
{
	if (g->sp->vals[dst].mut)
		return;
	int64_t *a = NEWARR(&g->ctx->scratch, int64_t, (size_t)n);
	for (int j = 0; j < n; j++) {
		a[j] = off[j] - off[0];
		if (a[j] <= -AFF_LIM || a[j] >= AFF_LIM)
			return;
	}
	g->aff[dst] = a;
}

/* Operand k's offsets (NULL: not affine; a scalar's are all 0), into
 * o[0..n); *c: a compile-time scalar's value (else it stays as it was). */
static bool
aff_opnd(const PG *g, const SirIns *in, int k, int n, int64_t *o,
	int64_t *c)
{
	const SirVal *v = &g->sp->vals[in->a[k]];

	if (v->ty != TY_FRAG) {
		if (v->ty != TY_I32)
			return false;
		if (v->isconst)
			*c = v->ci;
		memset(o, 0, (size_t)n * sizeof *o);
		return true;
	}
	if (!g->aff[in->a[k]])
		return false;
	memcpy(o, g->aff[in->a[k]], (size_t)n * sizeof *o);
	return true;
}

/* After an i32 tile operation: its result's offsets, where they are
 * constants; abs of an affine tile is noted for cvt. */
static void
aff_note(PG *g, const SirIns *in, int n)
{
	int64_t *o[2], c[2] = { 0, 0 };
	bool ok[2] = { false, false };

	if (g->sp->vals[in->dst].mut || g->sp->vals[in->dst].ety != TY_I32)
		return;
	for (int k = 0; k < in->na && k < 2; k++) {
		o[k] = NEWARR(&g->ctx->scratch, int64_t, (size_t)n);
		c[k] = INT64_MIN;
		ok[k] = aff_opnd(g, in, k, n, o[k], &c[k]);
	}
	switch (in->op) {
	case SOP_abs:
		if (ok[0] && g->sp->vals[in->a[0]].ty == TY_FRAG)
			g->absof[in->dst] = in->a[0];
		return;
	case SOP_mov: case SOP_convert: case SOP_cvt:
		if (ok[0] && g->sp->vals[in->a[0]].ty == TY_FRAG)
			pg_affine(g, in->dst, o[0], n);
		return;
	case SOP_neg:
		if (!ok[0])
			return;
		for (int j = 0; j < n; j++)
			o[0][j] = -o[0][j];
		pg_affine(g, in->dst, o[0], n);
		return;
	case SOP_add: case SOP_sub:
		if (!ok[0] || !ok[1])
			return;
		for (int j = 0; j < n; j++)
			o[0][j] += in->op == SOP_add ? o[1][j] : -o[1][j];
		pg_affine(g, in->dst, o[0], n);
		return;
	case SOP_mul:
		if (!ok[0] || !ok[1] || (c[0] == INT64_MIN && c[1] == INT64_MIN))
			return;
		int64_t m = c[1] != INT64_MIN ? c[1] : c[0];
		int64_t *t = c[1] != INT64_MIN ? o[0] : o[1];
		/* kept offsets are below 2^40 (operands' sums below 2^41):
		 * a factor below 2^20 keeps the product inside 2^61 */
		if (m <= -((int64_t)1 << 20) || m >= (int64_t)1 << 20)
			return;
		for (int j = 0; j < n; j++)
			t[j] *= m;
		pg_affine(g, in->dst, t, n);
		return;
	default:
		return;
	}
}

/* cvt(x, f32) or cvt(abs(x), f32) of an affine i32 tile x (above); false
 * when x is not affine or its offsets are too wide. */
static bool
aff_cvt(PG *g, const SirIns *in, PReg *d, int n)
{
	Ref x = in->a[0];
	bool ab = false;

	if (!g->aff[x] && g->absof[x]) {
		x = g->absof[x];
		ab = true;
	}
	const int64_t *c = g->aff[x];
	int m0;
	PReg *xr = c ? pg_frag(g, x, &m0) : NULL;
	if (!xr || m0 != n)
		return false;
	int64_t big = 0;
	for (int j = 0; j < n; j++)
		big = c[j] > big ? c[j] : -c[j] > big ? -c[j] : big;
	if (big > ((int64_t)1 << 24) - 1024)
		return false;
	PReg a = ptx_reg(g->f, RB32), b = ptx_reg(g->f, RB32);
	PReg af = ptx_reg(g->f, RF32), bf = ptx_reg(g->f, RF32);
	ptx_comment(g->f, "cvt of an affine i32 tile: offsets within %lld",
		(long long)big);
	ptx_emit(g->f, "and.b32 %R, %R, -1024;", a, xr[0]);
	ptx_emit(g->f, "and.b32 %R, %R, 1023;", b, xr[0]);
	ptx_emit(g->f, "cvt.rn.f32.s32 %R, %R;", af, a);
	ptx_emit(g->f, "cvt.rn.f32.s32 %R, %R;", bf, b);
	for (int j = 0; j < n; j++) {
		ptx_emit(g->f, "add.f32 %R, %R, %F;", d[j], bf, (double)c[j]);
		ptx_emit(g->f, "add.f32 %R, %R, %R;", d[j], af, d[j]);
		if (ab)
			ptx_emit(g->f, "abs.f32 %R, %R;", d[j], d[j]);
	}
	return true;
}

bool
pg_tile_elem(PG *g, const SirIns *in)
{
	if (in->op == SOP_gscatter) {
		scatter(g, in);
		return true;
	}
	if (!mine(g, in))
		return false;
	if (in->op == SOP_gload) {
		gather(g, in);
		return true;
	}
	const SirVal *dv = &g->sp->vals[in->dst];
	const SirVal *av = &g->sp->vals[in->a[0]];
	bool cmp = in->op >= SOP_eq && in->op <= SOP_ge;
	Ty t = cmp ? (av->ty == TY_FRAG ? av->ety : av->ty) : dv->ety;
	const char *o = insn(in, t);
	int n;
	PReg *d = pg_frag(g, in->dst, &n);

	if (in->op == SOP_cvt && av->ety == TY_I32 && dv->ety == TY_F32) {
		o = "cvt.rn.f32.s32";
		if (d && aff_cvt(g, in, d, n))
			return true;
	}
	if (!d || !o) {
		pg_unsupported(g, in);
		return true;
	}
	for (int k = 0; k < in->na; k++)
		if (g->sp->vals[in->a[k]].ty == TY_FRAG && !pg_frag(g, in->a[k],
		    &(int){0})) {
			pg_unsupported(g, in);
			return true;
		}
	for (int j = 0; j < n; j++) {
		if (in->op == SOP_select)  /* selp d, a, b, p */
			ptx_emit(g->f, "%S %R, %R, %R, %R;", o, d[j],
				opnd(g, in, 1, j, n), opnd(g, in, 2, j, n),
				opnd(g, in, 0, j, n));
		else if (in->na == 2)
			ptx_emit(g->f, "%S %R, %R, %R;", o, d[j],
				opnd(g, in, 0, j, n), opnd(g, in, 1, j, n));
		else
			ptx_emit(g->f, "%S %R, %R;", o, d[j],
				opnd(g, in, 0, j, n));
	}
	aff_note(g, in, n);
	return true;
}
