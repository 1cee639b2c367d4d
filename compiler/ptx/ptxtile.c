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
	if (in->op == SOP_abs || in->op == SOP_select)
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
		[SOP_mul] = "mul.lo.s32", [SOP_min] = "min.s32",
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

bool
pg_tile_elem(PG *g, const SirIns *in)
{
	if (!mine(g, in))
		return false;
	const SirVal *dv = &g->sp->vals[in->dst];
	const SirVal *av = &g->sp->vals[in->a[0]];
	bool cmp = in->op >= SOP_eq && in->op <= SOP_ge;
	Ty t = cmp ? (av->ty == TY_FRAG ? av->ety : av->ty) : dv->ety;
	const char *o = insn(in, t);
	int n;
	PReg *d = pg_frag(g, in->dst, &n);

	if (in->op == SOP_cvt && av->ety == TY_I32 && dv->ety == TY_F32)
		o = "cvt.rn.f32.s32";
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
	return true;
}
