/* sirtile.c: the element types of register tiles (issue #22).  A tile
 * holds f32, 16-bit (bf16, f16), i32 or bool elements; i32 tiles come
 * from rowid/colid (element indices) and bool ("predicate") tiles from
 * comparisons.  This file has the type rules of tile operators (which
 * element types meet, constants adopting the tile's type) and the
 * built-ins rowid, colid, select and abs.  Called by sirgen.c's
 * sg_frag_binary and sircall.c's sg_call.  Requires: operands already
 * lowered; layouts are checked by the caller (sg_frag_binary) or here
 * (select).  Ensures: a well-typed SIR instruction or a diagnostic. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"
#include "sir/sirgen.h"

/* The element type an operand contributes: a tile's element type or a
 * scalar's type; TY_VOID for an integer constant, which adopts the type
 * of the tile it meets. */
static Ty
ekind(const SirVal *v)
{
	if (v->ty == TY_FRAG)
		return v->ety;
	if (v->isconst && ty_isint(v->ty))
		return TY_VOID;
	return v->ty;
}

static bool
is_cmp(SirOp op)
{
	return op >= SOP_eq && op <= SOP_ge;
}

static const char *
optext(int op)
{
	static const struct {
		int tok;
		const char *s;
	} t[] = {
		{B_EQ, "=="}, {B_NE, "!="}, {B_LE, "<="}, {B_GE, ">="},
		{B_SHL, "<<"}, {B_SHR, ">>"}, {B_ANDAND, "&&"}, {B_OROR, "||"},
		{'%', "%"}, {'&', "&"}, {'|', "|"}, {'^', "^"}, {'/', "/"},
	};

	for (size_t i = 0; i < COUNT(t); i++)
		if (t[i].tok == op)
			return t[i].s;
	return "?";
}

/* What an operand is, for a message: "a tile of 'i32'", "'f32'". */
static const char *
what(G *g, const SirVal *v)
{
	Buf b;

	buf_init(&b, &g->ctx->scratch);
	if (v->ty == TY_FRAG)
		buf_printf(&b, "a tile of '%s'", ty_name(v->ety));
	else
		buf_printf(&b, "'%s'", ty_name(v->ty));
	return b.p;
}

/* The operand as written (k: 0 left, 1 right of a binary operator, or
 * argument k of a call). */
static const char *
opd(G *g, const Node *n, int k)
{
	const Node *o = n->kind == N_BINARY ? (k ? n->b : n->a) :
		n->kind == N_CALL && k < n->kids.n ? n->kids.v[k] : NULL;

	return o ? sg_text(g, o->span, "x") : "x";
}

/* Comparisons, '&&' and '||' on predicate tiles, and i32 arithmetic:
 * the element types of a binary tile operation n (op) on *a and *b,
 * whose layouts the caller checked; integer constants become the
 * tile's type.  *ety is the result's element type.  rowvec: one operand
 * is a row vector, which only f32 arithmetic takes. */
bool
sg_tile_types(G *g, const Node *n, SirOp op, Ref *a, Ref *b, bool rowvec,
	Ty *ety)
{
	const SirVal *x = sg_val(g, *a), *y = sg_val(g, *b);
	Ty ta = ekind(x), tb = ekind(y);
	bool logic = n->kind == N_BINARY && (n->op == B_ANDAND ||
		n->op == B_OROR);
	bool arith = op == SOP_add || op == SOP_sub || op == SOP_mul ||
		op == SOP_div || op == SOP_min || op == SOP_max ||
		op == SOP_rem;

	if (logic) {
		if (ta != TY_BOOL || tb != TY_BOOL) {
			diag_error(g->ctx, n->span, "'%s' needs predicate tiles "
				"or booleans, found %s and %s", optext(n->op),
				what(g, x), what(g, y));
			return false;
		}
		if (rowvec)
			fg_bug("a row vector of bool");
		*ety = TY_BOOL;
		return true;
	}
	bool pa = x->ty == TY_FRAG && ta == TY_BOOL;
	if (pa || (y->ty == TY_FRAG && tb == TY_BOOL)) {
		diag_error(g->ctx, n->span, "a tile of 'bool' is not a number; "
			"choose numbers with 'select(%s, a, b)'",
			opd(g, n, pa ? 0 : 1));
		return false;
	}
	if (!arith && !is_cmp(op)) {
		diag_error(g->ctx, n->span, "operator '%s' does not apply to "
			"register tiles", optext(n->op));
		return false;
	}
	Ty t = ta == TY_VOID ? tb : ta, u = tb == TY_VOID ? ta : tb;
	if (op == SOP_rem && (t != TY_I32 || u != TY_I32)) {
		diag_error(g->ctx, n->span, "operator '%%' takes tiles of "
			"'i32' (and 'i32' scalars), found %s and %s", what(g, x),
			what(g, y));
		return false;
	}
	if (rowvec && (t != TY_F32 || u != TY_F32 || !arith)) {
		diag_error(g->ctx, n->span, "a row vector combines with f32 "
			"tiles in '+', '-', '*', '/', 'min' and 'max' only");
		return false;
	}
	if (is_cmp(op) && ((t != TY_F32 && t != TY_I32) || t != u)) {
		if (x->ty == TY_FRAG && y->ty == TY_FRAG && t != u &&
		    (t == TY_F32 || t == TY_I32) && (u == TY_F32 || u == TY_I32))
			goto mixed;
		diag_error(g->ctx, n->span, "comparisons take tiles of 'f32' "
			"or 'i32' and a tile or scalar of the same type, found "
			"%s and %s", what(g, x), what(g, y));
		return false;
	}
	if (t != u && x->ty == TY_FRAG && y->ty == TY_FRAG) {
		if (t == TY_I32 || u == TY_I32)
			goto mixed;
	} else if (t != u) {
		const SirVal *f = x->ty == TY_FRAG ? x : y;
		const SirVal *s = x->ty == TY_FRAG ? y : x;
		if (f->ety == TY_I32) {
			diag_error(g->ctx, n->span, "a register tile of 'i32' "
				"combines with 'i32' scalars, not '%s'%s",
				ty_name(s->ty), s->ty == TY_F32 ? "; convert the "
				"tile with 'cvt(x, f32)'" : "");
			return false;
		}
		if (s->ty != TY_F32) {  /* an f32 or 16-bit tile */
			diag_error(g->ctx, n->span, "a register tile combines "
				"with 'f32' scalars, not '%s'", ty_name(s->ty));
			return false;
		}
	}
	*a = sg_coerce(g, *a, t, n->kind == N_BINARY ? n->a->span : n->span);
	*b = sg_coerce(g, *b, t, n->kind == N_BINARY ? n->b->span : n->span);
	if (sg_val(g, *a)->ty == TY_ERR || sg_val(g, *b)->ty == TY_ERR)
		return false;
	*ety = is_cmp(op) ? TY_BOOL : t;
	return true;
mixed:
	diag_error(g->ctx, n->span, "register tiles of 'f32' and 'i32' meet "
		"here; convert with 'cvt(%s, f32)'", opd(g, n, x->ety == TY_I32 ?
		0 : 1));
	return false;
}

static bool
nargs(G *g, const Node *n, const char *f, int want)
{
	if (n->kids.n == want)
		return true;
	diag_error(g->ctx, n->span, "'%s' takes %d argument%s, found %d", f,
		want, want == 1 ? "" : "s", n->kids.n);
	return false;
}

/* rowid(t), colid(t): the i32 tile of t's layout and shape whose element
 * (r, c) is r (colid: c), the tile-local row and column. */
static Ref
index_tile(G *g, const Node *n, SirOp op)
{
	const char *f = sir_ops[op].name;

	if (!nargs(g, n, f, 1))
		return sg_err(g);
	Ref x = sg_expr(g, n->kids.v[0]);
	const SirVal *v = sg_val(g, x);
	if (v->ty == TY_ERR)
		return x;
	if (v->ty != TY_FRAG || v->lay->kind == LK_ROWS) {
		diag_error(g->ctx, n->kids.v[0]->span, "'%s' gives the element "
			"indices of a 2-D register tile, found %s", f,
			v->ty == TY_FRAG ? "a row vector" : what(g, v));
		return sg_err(g);
	}
	Ref r = sg_unop(g, op, x, TY_FRAG, n->span);
	sg_val(g, r)->ety = TY_I32;
	return r;
}

/* abs(x): f32 or i32, a tile or a scalar; constants fold. */
static Ref
abs_call(G *g, const Node *n)
{
	if (!nargs(g, n, "abs", 1))
		return sg_err(g);
	Ref x = sg_expr(g, n->kids.v[0]);
	const SirVal *v = sg_val(g, x);
	Ty t = v->ty == TY_FRAG ? v->ety : v->ty;
	if (v->ty == TY_ERR)
		return x;
	if (v->isconst && v->ty == TY_F32)
		return sg_const_f(g, fabs(v->cf), n->span);
	if (v->isconst && ty_isint(v->ty) && v->ci > INT64_MIN) {
		int64_t a = v->ci < 0 ? -v->ci : v->ci;
		return sg_const_i(g, a, v->ty == TY_I32 && a > INT32_MAX ? TY_I64 :
			v->ty, n->span);  /* as unary '-' widens */
	}
	if ((t != TY_F32 && t != TY_I32) || (v->ty == TY_FRAG &&
	    v->lay->kind == LK_ROWS && t != TY_F32)) {
		diag_error(g->ctx, n->kids.v[0]->span, "'abs' takes 'f32' or "
			"'i32' values, found %s", what(g, v));
		return sg_err(g);
	}
	return sg_unop(g, SOP_abs, x, v->ty, n->span);
}

/* A tile operand of select meets the others' layout and shape (lay,
 * shape of the first tile met); false after a diagnostic. */
static bool
select_fits(G *g, const Node *e, const SirVal *v, const SirVal **first)
{
	if (v->ty != TY_FRAG)
		return true;
	if (v->lay->kind == LK_ROWS) {
		diag_error(g->ctx, e->span, "'select' takes 2-D register tiles "
			"and scalars, not a row vector");
		return false;
	}
	if (!*first) {
		*first = v;
		return true;
	}
	if (!sg_same_layout((*first)->lay, v->lay) || (*first)->m != v->m ||
	    (*first)->n != v->n) {
		diag_error(g->ctx, e->span, "'select' needs tiles of one layout "
			"and shape: this is '%s' [%d,%d], an earlier operand "
			"'%s' [%d,%d]", sg_layname(v->lay), v->m, v->n,
			sg_layname((*first)->lay), (*first)->m, (*first)->n);
		return false;
	}
	return true;
}

/* select(p, a, b): elementwise p ? a : b, with p a predicate tile (or a
 * boolean) and a, b f32 or i32 tiles or scalars of one type; the result
 * is a tile of the tiles' layout.  Without a tile, a scalar select. */
static Ref
select_call(G *g, const Node *n)
{
	Ref o[3];
	const SirVal *first = NULL;

	if (!nargs(g, n, "select", 3))
		return sg_err(g);
	for (int k = 0; k < 3; k++)
		o[k] = sg_expr(g, n->kids.v[k]);
	for (int k = 0; k < 3; k++)
		if (sg_val(g, o[k])->ty == TY_ERR)
			return sg_err(g);
	for (int k = 0; k < 3; k++)
		if (!select_fits(g, n->kids.v[k], sg_val(g, o[k]), &first))
			return sg_err(g);
	if (ekind(sg_val(g, o[0])) != TY_BOOL) {
		diag_error(g->ctx, n->kids.v[0]->span, "'select' chooses by a "
			"tile of 'bool' or a boolean, found %s",
			what(g, sg_val(g, o[0])));
		return sg_err(g);
	}
	Ty ta = ekind(sg_val(g, o[1])), tb = ekind(sg_val(g, o[2]));
	Ty t = ta == TY_VOID ? tb : ta;
	if (t == TY_VOID)
		t = TY_I32;
	if ((t != TY_F32 && t != TY_I32) || (tb != TY_VOID && tb != t)) {
		diag_error(g->ctx, n->span, "'select' chooses between 'f32' or "
			"'i32' values of one type, found %s and %s",
			what(g, sg_val(g, o[1])), what(g, sg_val(g, o[2])));
		return sg_err(g);
	}
	const SirVal fv = first ? *first : (SirVal){0};  /* vals may move */
	for (int k = 1; k < 3; k++)
		o[k] = sg_coerce(g, o[k], t, n->kids.v[k]->span);
	if (sg_val(g, o[1])->ty == TY_ERR || sg_val(g, o[2])->ty == TY_ERR)
		return sg_err(g);
	Ref r = sir_val(g->ctx, g->p, first ? TY_FRAG : t, NULL);
	if (first) {
		sg_frag_like(g, r, &fv);
		sg_val(g, r)->ety = t;
	}
	SirIns *i = sg_emit(g, SOP_select, n->span);
	i->dst = r, i->a[0] = o[0], i->a[1] = o[1], i->a[2] = o[2], i->na = 3;
	return r;
}

/* A tile that goes to memory (store, smem_store, tmem_store) holds f32
 * or 16-bit values: r, or an error value after a diagnostic. */
Ref
sg_tile_stored(G *g, const Node *e, Ref r)
{
	const SirVal *v = sg_val(g, r);

	if (v->ty != TY_FRAG || (v->ety != TY_I32 && v->ety != TY_BOOL))
		return r;
	bool p = v->ety == TY_BOOL;
	diag_error(g->ctx, e->span, "register tiles of f32, bf16 and f16 go "
		"to memory, not tiles of '%s'; write '%s(%s, %s)'",
		ty_name(v->ety), p ? "select" : "cvt", sg_text(g, e->span, "x"),
		p ? "1.0, 0.0" : "f32");
	return sg_err(g);
}

/* The built-ins of this file, or 0 when f is none of them. */
Ref
sg_tile_call(G *g, const Node *n, const char *f)
{
	if (!strcmp(f, "rowid"))
		return index_tile(g, n, SOP_rowid);
	if (!strcmp(f, "colid"))
		return index_tile(g, n, SOP_colid);
	if (!strcmp(f, "select"))
		return select_call(g, n);
	if (!strcmp(f, "abs"))
		return abs_call(g, n);
	return 0;
}
