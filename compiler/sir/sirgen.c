/* sirgen.c: partition bodies (AST) to schedule IR, checking as it goes:
 * names, scalar and register-tile types, layouts (a mismatch says which
 * conversion to write), and operands of each operation.  'static if' and
 * 'static for' are expanded here; constant subexpressions are folded.
 * Requires: a Kernel from sema with no errors.  Ensures: a SirMod with one
 * SirPart per partition instance, or diagnostics. */
#include <math.h>
#include <string.h>

#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"
#include "sir/sirgen.h"


SirVal *
sg_val(G *g, Ref r)
{
	return &g->p->vals[r];
}

SirIns *
sg_emit(G *g, SirOp op, Span sp)
{
	return sir_push(g->ctx, g->cur, op, sp);
}

Ref
sg_err(G *g)
{
	return sir_val(g->ctx, g->p, TY_ERR, NULL);
}

Ref
sg_const_i(G *g, int64_t v, Ty ty, Span sp)
{
	Ref r = sir_val(g->ctx, g->p, ty, NULL);
	SirIns *i = sg_emit(g, SOP_const_i, sp);

	i->dst = r;
	i->imm = v;
	sg_val(g, r)->isconst = true;
	sg_val(g, r)->ci = v;
	return r;
}

Ref
sg_const_f(G *g, double v, Span sp)
{
	Ref r = sir_val(g->ctx, g->p, TY_F32, NULL);
	SirIns *i = sg_emit(g, SOP_const_f, sp);

	i->dst = r;
	i->fimm = v;
	sg_val(g, r)->isconst = true;
	sg_val(g, r)->cf = v;
	return r;
}

void
sg_bind(G *g, const char *name, Ref r, Span sp)
{
	Bind *b = NEW(&g->ctx->scratch, Bind);

	*b = (Bind){name, r, sp, g->scope};
	g->scope = b;
}

Bind *
sg_lookup(G *g, const char *name)
{
	for (Bind *b = g->scope; b; b = b->next)
		if (b->name == name)
			return b;
	return NULL;
}

const char *
sg_layname(const Layout *l)
{
	static const char *const k[] = {"?", "smem", "wgmma_acc", "wgmma_a",
		"tmem_rows", "rows", "tmem"};
	return l ? (l->name ? l->name : k[l->kind]) : "?";
}

/* Row vectors depend only on which rows a thread owns: the parent's kind
 * and row count, not its column count. */
static bool
rows_fit(const Layout *rows, const Layout *tile)
{
	return rows && tile && rows->kind == LK_ROWS && rows->parent &&
		rows->parent->kind == tile->kind && rows->parent->m == tile->m;
}

bool
sg_same_layout(const Layout *a, const Layout *b)
{
	if (a == b)
		return true;
	if (!a || !b || a->kind != b->kind || a->m != b->m)
		return false;
	if (a->kind == LK_ROWS)
		return rows_fit(a, b->parent);
	return a->n == b->n;
}

static Ty
unify(G *g, const Node *n, Ref a, Ref b)
{
	SirVal *x = sg_val(g, a), *y = sg_val(g, b);

	if (x->ty == TY_ERR || y->ty == TY_ERR)
		return TY_ERR;
	if (x->ty == y->ty)
		return x->ty;
	if (x->isconst && ty_isint(x->ty) && (ty_isint(y->ty) ||
	    y->ty == TY_F32))
		return y->ty;
	if (y->isconst && ty_isint(y->ty) && (ty_isint(x->ty) ||
	    x->ty == TY_F32))
		return x->ty;
	diag_error(g->ctx, n->span, "operands have types '%s' and '%s'; "
		"convert one with 'cvt(x, %s)'", ty_name(x->ty), ty_name(y->ty),
		ty_name(x->ty));
	return TY_ERR;
}

/* A constant adopts the type it meets: an integer constant read as f32
 * becomes an f32 constant (never a bit pattern), and one read as another
 * integer type must fit it. */
Ref
sg_coerce(G *g, Ref r, Ty t, Span sp)
{
	SirVal *v = sg_val(g, r);

	if (!v->isconst || v->ty == t || v->ty == TY_BOOL || t == TY_BOOL)
		return r;
	if (t == TY_F32 && ty_isint(v->ty))
		return sg_const_f(g, (double)v->ci, sp);
	if (ty_isint(t) && ty_isint(v->ty)) {
		int64_t x = v->ci;
		bool fits = t == TY_I64 || (t == TY_I32 && x >= INT32_MIN &&
			x <= INT32_MAX) || (t == TY_U32 && x >= 0 &&
			x <= (int64_t)UINT32_MAX) || (t == TY_U64 && x >= 0);
		if (!fits) {
			diag_error(g->ctx, sp, "constant %lld does not fit in "
				"'%s'", (long long)x, ty_name(t));
			return sg_err(g);
		}
		return sg_const_i(g, x, t, sp);
	}
	return r;
}

static void
frag_like(G *g, Ref dst, const SirVal *src)
{
	SirVal *d = sg_val(g, dst);

	d->ety = src->ety;
	d->lay = src->lay;
	d->m = src->m;
	d->n = src->n;
}

/* Binary operators on register tiles: tile op tile (same layout), tile op
 * scalar, and tile op row vector (rows(L) broadcast across columns). */
static Ref
frag_binary(G *g, const Node *n, SirOp op, Ref a, Ref b)
{
	SirVal *x = sg_val(g, a), *y = sg_val(g, b);
	const SirVal *f = x->ty == TY_FRAG ? x : y;
	const SirVal *o = x->ty == TY_FRAG ? y : x;
	Ref r;

	if (op >= SOP_eq && op <= SOP_ge) {
		diag_error(g->ctx, n->span, "comparisons apply to scalars, not "
			"register tiles; use 'mask_cols' or 'mask_causal'");
		return sg_err(g);
	}
	if (o->ty == TY_FRAG) {
		bool rowvec = rows_fit(o->lay, f->lay);
		bool rowvec2 = rows_fit(f->lay, o->lay);
		if (rowvec2) {
			const SirVal *t = f;
			f = o;
			o = t;
		} else if (!rowvec && !sg_same_layout(f->lay, o->lay)) {
			if (f->lay->kind == LK_ROWS || o->lay->kind == LK_ROWS)
				diag_error(g->ctx, n->span, "row vector '%s' does "
					"not fit tile layout '%s': a row vector "
					"combines with tiles of its parent's kind and "
					"row count", sg_layname(o->lay->kind ==
					LK_ROWS ? o->lay : f->lay),
					sg_layname(o->lay->kind == LK_ROWS ? f->lay :
					o->lay));
			else if (f->lay->kind == o->lay->kind)
				diag_error(g->ctx, n->span, "register tiles of "
					"shapes [%d,%d] and [%d,%d] meet here", x->m,
					x->n, y->m, y->n);
			else if (y->lay->kind == LK_WGMMA_ACC &&
			    x->lay->kind == LK_WGMMA_A)
				diag_error(g->ctx, n->span, "register tiles with "
					"layouts '%s' and '%s' meet here; write "
					"'convert(%s%s%s, %s)' on the right-hand one",
					sg_layname(x->lay), sg_layname(y->lay),
					y->ety == TY_F32 ? "cvt(y, " : "y",
					y->ety == TY_F32 ? ty_name(x->ety) : "",
					y->ety == TY_F32 ? ")" : "",
					sg_layname(x->lay));
			else if (x->lay->kind == LK_WGMMA_ACC &&
			    y->lay->kind == LK_WGMMA_A)
				diag_error(g->ctx, n->span, "register tiles with "
					"layouts '%s' and '%s' meet here; write "
					"'convert(%s%s%s, %s)' on the left-hand one",
					sg_layname(x->lay), sg_layname(y->lay),
					x->ety == TY_F32 ? "cvt(x, " : "x",
					x->ety == TY_F32 ? ty_name(y->ety) : "",
					x->ety == TY_F32 ? ")" : "",
					sg_layname(y->lay));
			else
				diag_error(g->ctx, n->span, "register tiles with "
					"layouts '%s' and '%s' meet here, and no "
					"conversion between them exists",
					sg_layname(x->lay), sg_layname(y->lay));
			return sg_err(g);
		}
		if (!rowvec && !rowvec2 && (f->m != o->m || f->n != o->n)) {
			diag_error(g->ctx, n->span, "register tiles of shapes "
				"[%d,%d] and [%d,%d] meet here", x->m, x->n,
				y->m, y->n);
			return sg_err(g);
		}
	} else if (o->ty != TY_F32 && !(o->isconst && ty_isint(o->ty))) {
		diag_error(g->ctx, n->span, "a register tile combines with "
			"'f32' scalars, not '%s'", ty_name(o->ty));
		return sg_err(g);
	}
	const SirVal fv = *f;  /* sir_val may move the array f points into */
	r = sir_val(g->ctx, g->p, TY_FRAG, NULL);
	frag_like(g, r, &fv);
	SirIns *i = sg_emit(g, op, n->span);
	i->dst = r;
	i->a[0] = a;
	i->a[1] = b;
	i->na = 2;
	return r;
}

static const struct {
	int tok;
	SirOp op;
} binops[] = {
	{'+', SOP_add}, {'-', SOP_sub}, {'*', SOP_mul}, {'/', SOP_div},
	{'%', SOP_rem}, {'&', SOP_and}, {'|', SOP_or}, {'^', SOP_xor},
	{B_SHL, SOP_shl}, {B_SHR, SOP_shr}, {B_EQ, SOP_eq}, {B_NE, SOP_ne},
	{'<', SOP_lt}, {B_LE, SOP_le}, {'>', SOP_gt}, {B_GE, SOP_ge},
	{B_ANDAND, SOP_and}, {B_OROR, SOP_or},
};

static Ref
fold(G *g, const Node *n, Ref a, Ref b)
{
	SirVal *x = sg_val(g, a), *y = sg_val(g, b);
	Val va, vb, out;

	va = x->ty == TY_F32 ? (Val){.ty = TY_F64, .f = x->cf} :
		(Val){.ty = x->ty == TY_BOOL ? TY_BOOL : TY_I64, .i = x->ci};
	vb = y->ty == TY_F32 ? (Val){.ty = TY_F64, .f = y->cf} :
		(Val){.ty = y->ty == TY_BOOL ? TY_BOOL : TY_I64, .i = y->ci};
	if (!const_binary(g->ctx, n, &va, &vb, &out))
		return sg_err(g);
	if (out.ty == TY_F64)
		return sg_const_f(g, out.f, n->span);
	if (out.ty == TY_BOOL)
		return sg_const_i(g, out.i, TY_BOOL, n->span);
	Ty t = x->ty == TY_BOOL ? y->ty : x->ty;
	if (y->ty == TY_I64 || y->ty == TY_U64)
		t = y->ty;
	if (!ty_isint(t))
		t = TY_I32;
	if (t == TY_I32 && (out.i > INT32_MAX || out.i < INT32_MIN))
		t = TY_I64;  /* a wide constant stays exact; coerce checks use */
	return sg_const_i(g, out.i, t, n->span);
}

static Ref binop(G *, const Node *, Ref, Ref);
static Ref unop(G *, SirOp, Ref, Ty, Span);

static Ref
binary(G *g, const Node *n)
{
	/* operands in source order: argument evaluation order is unspecified
	 * in C, and the emitted code must not depend on the C compiler */
	Ref a = sg_expr(g, n->a);
	Ref b = sg_expr(g, n->b);

	return binop(g, n, a, b);
}

/* A binary operator on two lowered values (n gives the operator and the
 * span). */
Ref
sg_binop(G *g, const Node *n, Ref a, Ref b)
{
	return binop(g, n, a, b);
}

static Ref
binop(G *g, const Node *n, Ref a, Ref b)
{
	SirOp op = SOP_add;
	Ty t;

	for (size_t i = 0; i < COUNT(binops); i++)
		if (binops[i].tok == n->op)
			op = binops[i].op;
	if (sg_val(g, a)->ty == TY_ERR || sg_val(g, b)->ty == TY_ERR)
		return sg_err(g);
	if (sg_val(g, a)->ty == TY_FRAG || sg_val(g, b)->ty == TY_FRAG)
		return frag_binary(g, n, op, a, b);
	if (sg_val(g, a)->isconst && sg_val(g, b)->isconst)
		return fold(g, n, a, b);
	if ((t = unify(g, n, a, b)) == TY_ERR)
		return sg_err(g);
	a = sg_coerce(g, a, t, n->a ? n->a->span : n->span);
	b = sg_coerce(g, b, t, n->b ? n->b->span : n->span);
	if (sg_val(g, a)->ty == TY_ERR || sg_val(g, b)->ty == TY_ERR)
		return sg_err(g);
	bool logic = n->op == B_ANDAND || n->op == B_OROR;
	if (logic && t != TY_BOOL) {
		diag_error(g->ctx, n->span, "'%s' needs booleans, found '%s'",
			n->op == B_ANDAND ? "&&" : "||", ty_name(t));
		return sg_err(g);
	}
	if ((op == SOP_rem || op == SOP_and || op == SOP_or || op == SOP_xor ||
	    op == SOP_shl || op == SOP_shr) && t == TY_F32) {
		diag_error(g->ctx, n->span, "operator needs integers, found "
			"'f32'");
		return sg_err(g);
	}
	Ref r = sir_val(g->ctx, g->p, op >= SOP_eq && op <= SOP_ge ? TY_BOOL :
		t, NULL);
	SirIns *i = sg_emit(g, op, n->span);
	i->dst = r;
	i->a[0] = a;
	i->a[1] = b;
	i->na = 2;
	return r;
}

static Ref
unary(G *g, const Node *n)
{
	Ref a = sg_expr(g, n->a);
	SirVal *x = sg_val(g, a);
	SirOp op = n->op == '-' ? SOP_neg : n->op == '!' ? SOP_not : SOP_bnot;

	if (x->ty == TY_ERR)
		return a;
	if (x->isconst) {
		if (x->ty == TY_F32 && n->op == '-')
			return sg_const_f(g, -x->cf, n->span);
		if (ty_isint(x->ty) && n->op != '!')
			return sg_const_i(g, n->op == '-' ? -x->ci : ~x->ci, x->ty,
				n->span);
		if (x->ty == TY_BOOL && n->op == '!')
			return sg_const_i(g, !x->ci, TY_BOOL, n->span);
	}
	if ((op == SOP_not) != (x->ty == TY_BOOL) ||
	    (op == SOP_bnot && !ty_isint(x->ty))) {
		diag_error(g->ctx, n->span, "operator '%c' does not apply to "
			"'%s'", n->op, x->ty == TY_FRAG ? "register tile" :
			ty_name(x->ty));
		return sg_err(g);
	}
	return unop(g, op, a, x->ty, n->span);  /* not x: sir_val moves it */
}

static Ref
name(G *g, const Node *n)
{
	static const char *const specials[] = {"tid", "warp", "lane"};
	Bind *b = sg_lookup(g, n->name);
	Res *r;

	if (b)
		return b->ref;
	if ((r = kernel_find(g->k, n->name))) {
		if (r->kind == R_CONST) {
			Val v = r->cval;
			if (v.ty == TY_I64 || v.ty == TY_BOOL)
				return sg_const_i(g, v.i, v.ty == TY_BOOL ?
					TY_BOOL : (v.i > INT32_MAX || v.i < INT32_MIN) ?
					TY_I64 : TY_I32, n->span);
			if (v.ty == TY_F64)
				return sg_const_f(g, v.f, n->span);
			diag_error(g->ctx, n->span, "constant '%s' is %s, not "
				"a number", n->name, ty_name(v.ty));
			return sg_err(g);
		}
		if (r->kind == R_PARAM) {
			Ref d = sir_val(g->ctx, g->p, r->ety, r->name);
			SirIns *i = sg_emit(g, SOP_param, n->span);
			i->dst = d;
			i->r[0] = r;
			return d;
		}
		diag_error(g->ctx, n->span, "'%s' is a resource, not a value",
			n->name);
		diag_note(g->ctx, r->nspan, "'%s' declared here", n->name);
		return sg_err(g);
	}
	if (!strcmp(n->name, "inf"))
		return sg_const_f(g, INFINITY, n->span);
	for (size_t k = 0; k < COUNT(specials); k++)
		if (!strcmp(specials[k], n->name)) {
			Ref d = sir_val(g->ctx, g->p, TY_I32, n->name);
			SirIns *i = sg_emit(g, SOP_special, n->span);
			i->dst = d;
			i->imm = (int64_t)k;
			return d;
		}
	diag_error(g->ctx, n->span, "'%s' is not declared", n->name);
	return sg_err(g);
}


bool
sg_const_int(G *g, Ref r, int64_t *out)
{
	SirVal *v = sg_val(g, r);

	if (!v->isconst || !(ty_isint(v->ty) || v->ty == TY_BOOL))
		return false;
	*out = v->ci;
	return true;
}

static Ref
unop(G *g, SirOp op, Ref a, Ty ty, Span sp)
{
	Ref r = sir_val(g->ctx, g->p, ty, NULL);
	SirIns *i = sg_emit(g, op, sp);

	if (ty == TY_FRAG)
		frag_like(g, r, sg_val(g, a));
	i->dst = r;
	i->a[0] = a;
	i->na = 1;
	return r;
}

static bool
nargs(G *g, const Node *n, const char *f, int lo, int hi)
{
	if (n->kids.n >= lo && n->kids.n <= hi)
		return true;
	if (lo == hi)
		diag_error(g->ctx, n->span, "'%s' takes %d argument%s, found "
			"%d", f, lo, lo == 1 ? "" : "s", n->kids.n);
	else
		diag_error(g->ctx, n->span, "'%s' takes %d to %d arguments, "
			"found %d", f, lo, hi, n->kids.n);
	return false;
}

static const Layout *
rows_of(G *g, const Layout *l)
{
	Layout *r = NEW(&g->ctx->perm, Layout);

	*r = (Layout){.kind = LK_ROWS, .parent = l, .m = l->m, .n = 1};
	Buf b;
	buf_init(&b, &g->ctx->perm);
	buf_printf(&b, "rows(%s)", sg_layname(l));
	r->name = b.p;
	return r;
}

/* rowmax(x [, init]) and rowsum(x [, init]): reduce each row of a tile
 * to a row vector whose layout is rows(layout of x). */
static Ref
reduce(G *g, const Node *n, SirOp op)
{
	const char *f = sir_ops[op].name;
	Ref x, init = 0, r;

	if (!nargs(g, n, f, 1, 2))
		return sg_err(g);
	x = sg_expr(g, n->kids.v[0]);
	if (sg_val(g, x)->ty == TY_ERR)
		return x;
	if (sg_val(g, x)->ty != TY_FRAG || sg_val(g, x)->lay->kind == LK_ROWS) {
		diag_error(g->ctx, n->kids.v[0]->span, "'%s' reduces the rows "
			"of a register tile", f);
		return sg_err(g);
	}
	const Layout *rl = rows_of(g, sg_val(g, x)->lay);
	if (n->kids.n == 2) {
		init = sg_expr(g, n->kids.v[1]);
		SirVal *iv = sg_val(g, init);
		if (iv->ty == TY_FRAG && !sg_same_layout(iv->lay, rl)) {
			diag_error(g->ctx, n->kids.v[1]->span, "the initial "
				"value has layout '%s'; '%s' needs '%s'",
				sg_layname(iv->lay), f, sg_layname(rl));
			return sg_err(g);
		}
		if (iv->ty != TY_FRAG && iv->ty != TY_F32 && !iv->isconst) {
			diag_error(g->ctx, n->kids.v[1]->span, "the initial "
				"value must be a row vector or an f32 scalar");
			return sg_err(g);
		}
	}
	r = sir_val(g->ctx, g->p, TY_FRAG, NULL);
	sg_val(g, r)->ety = TY_F32;
	sg_val(g, r)->lay = rl;
	sg_val(g, r)->m = sg_val(g, x)->m;
	sg_val(g, r)->n = 1;
	SirIns *i = sg_emit(g, op, n->span);
	i->dst = r;
	i->a[0] = x;
	i->a[1] = init;
	i->na = init ? 2 : 1;
	return r;
}

static const Layout *
layout_arg(G *g, const Node *e)
{
	Res *r = e->kind == N_NAME ? kernel_find(g->k, e->name) : NULL;

	if (!r || r->kind != R_LAYOUT) {
		diag_error(g->ctx, e->span, "expected the name of a 'layout'");
		return NULL;
	}
	return r->cval.lay;
}

static Ref
convert(G *g, const Node *n)
{
	Ref x;
	const Layout *l;

	if (!nargs(g, n, "convert", 2, 2))
		return sg_err(g);
	x = sg_expr(g, n->kids.v[0]);
	if (!(l = layout_arg(g, n->kids.v[1])) || sg_val(g, x)->ty == TY_ERR)
		return sg_err(g);
	SirVal *v = sg_val(g, x);
	if (v->ty != TY_FRAG || l->kind == LK_SMEM) {
		diag_error(g->ctx, n->span, "'convert' changes the layout of a "
			"register tile to another register layout");
		return sg_err(g);
	}
	bool ok = sg_same_layout(v->lay, l) ||
		(v->lay->kind == LK_WGMMA_ACC && l->kind == LK_WGMMA_A &&
		ty_bytes(v->ety) == 2);
	if (!ok) {
		if (v->lay->kind == LK_WGMMA_ACC && l->kind == LK_WGMMA_A)
			diag_error(g->ctx, n->span, "'convert' to '%s' needs "
				"16-bit values; write 'convert(cvt(x, bf16), %s)'",
				sg_layname(l), sg_layname(l));
		else
			diag_error(g->ctx, n->span, "no conversion from layout "
				"'%s' to '%s' is available", sg_layname(v->lay),
				sg_layname(l));
		return sg_err(g);
	}
	Ref r = unop(g, SOP_convert, x, TY_FRAG, n->span);
	sg_val(g, r)->lay = l;
	return r;
}

static Ref
cvt(G *g, const Node *n)
{
	Ref x;
	Val t;

	if (!nargs(g, n, "cvt", 2, 2))
		return sg_err(g);
	x = sg_expr(g, n->kids.v[0]);
	if (!const_eval(g->ctx, g->k, n->kids.v[1], &t) || sg_val(g, x)->ty ==
	    TY_ERR)
		return sg_err(g);
	if (t.ty != TY_DTYPE) {
		diag_error(g->ctx, n->kids.v[1]->span, "'cvt' needs a type such "
			"as 'f32' or 'bf16'");
		return sg_err(g);
	}
	SirVal *v = sg_val(g, x);
	if (v->ty == TY_FRAG) {
		if (t.i != TY_BF16 && t.i != TY_F16 && t.i != TY_F32) {
			diag_error(g->ctx, n->span, "a register tile converts to "
				"'f32', 'bf16' or 'f16'");
			return sg_err(g);
		}
		Ref r = unop(g, SOP_cvt, x, TY_FRAG, n->span);
		sg_val(g, r)->ety = (Ty)t.i;
		return r;
	}
	if (v->isconst && ty_isint((Ty)t.i) && ty_isint(v->ty))
		return sg_const_i(g, v->ci, (Ty)t.i, n->span);
	if ((Ty)t.i == TY_BF16 || (Ty)t.i == TY_F16) {
		diag_error(g->ctx, n->span, "scalars convert to 'i32', 'u32', "
			"'i64', 'u64' or 'f32'");
		return sg_err(g);
	}
	return unop(g, SOP_cvt, x, (Ty)t.i, n->span);
}

static Ref
math1(G *g, const Node *n, SirOp op)
{
	Ref x;

	if (!nargs(g, n, sir_ops[op].name, 1, 1))
		return sg_err(g);
	x = sg_expr(g, n->kids.v[0]);
	SirVal *v = sg_val(g, x);
	if (v->ty == TY_ERR)
		return x;
	if (v->ty == TY_FRAG && v->ety == TY_F32)
		return unop(g, op, x, TY_FRAG, n->span);
	if (v->ty == TY_F32 || v->isconst) {
		if (v->isconst && !ty_isfloat(v->ty) && v->ty != TY_F32)
			x = sg_const_f(g, (double)v->ci, n->span);
		return unop(g, op, x, TY_F32, n->span);
	}
	diag_error(g->ctx, n->span, "'%s' needs f32 values, found '%s'",
		sir_ops[op].name, v->ty == TY_FRAG ? ty_name(v->ety) :
		ty_name(v->ty));
	return sg_err(g);
}

static Ref
minmax_cdiv(G *g, const Node *n, const char *f)
{
	Ref a, b;

	if (!nargs(g, n, f, 2, 2))
		return sg_err(g);
	a = sg_expr(g, n->kids.v[0]);
	b = sg_expr(g, n->kids.v[1]);
	if (sg_val(g, a)->ty == TY_ERR || sg_val(g, b)->ty == TY_ERR)
		return sg_err(g);
	if (sg_val(g, a)->ty == TY_FRAG || sg_val(g, b)->ty == TY_FRAG)
		return frag_binary(g, n, f[1] == 'i' ? SOP_min : SOP_max, a, b);
	Ty t = unify(g, n, a, b);
	if (t == TY_ERR)
		return sg_err(g);
	a = sg_coerce(g, a, t, n->kids.v[0]->span);
	b = sg_coerce(g, b, t, n->kids.v[1]->span);
	if (f[0] == 'c') {  /* cdiv(a, b) = (a + b - 1) / b */
		if (!ty_isint(t)) {
			diag_error(g->ctx, n->span, "'cdiv' needs integers");
			return sg_err(g);
		}
		Node add = {.kind = N_BINARY, .op = '+', .span = n->span};
		Node sub = {.kind = N_BINARY, .op = '-', .span = n->span};
		Node dv = {.kind = N_BINARY, .op = '/', .span = n->span};
		if (sg_val(g, a)->isconst && sg_val(g, b)->isconst) {
			Ref s = fold(g, &add, a, b);
			Ref s1 = fold(g, &sub, s, sg_const_i(g, 1, t, n->span));
			return fold(g, &dv, s1, b);
		}
		Ref r1 = sir_val(g->ctx, g->p, t, NULL), r2, r3;
		SirIns *i = sg_emit(g, SOP_add, n->span);
		i->dst = r1, i->a[0] = a, i->a[1] = b, i->na = 2;
		Ref one1 = sg_const_i(g, 1, t, n->span);  /* before the sub */
		r2 = sir_val(g->ctx, g->p, t, NULL);
		i = sg_emit(g, SOP_sub, n->span);
		i->dst = r2, i->a[0] = r1, i->a[1] = one1, i->na = 2;
		r3 = sir_val(g->ctx, g->p, t, NULL);
		i = sg_emit(g, SOP_div, n->span);
		i->dst = r3, i->a[0] = r2, i->a[1] = b, i->na = 2;
		return r3;
	}
	Ref r = sir_val(g->ctx, g->p, t, NULL);
	SirIns *i = sg_emit(g, f[1] == 'i' ? SOP_min : SOP_max, n->span);
	i->dst = r, i->a[0] = a, i->a[1] = b, i->na = 2;
	return r;
}

/* mask_cols(x, limit): columns >= limit become -inf.
 * mask_causal(x, row0, col0): element (r, c) becomes -inf when
 * col0 + c > row0 + r. */
static Ref
mask(G *g, const Node *n, SirOp op)
{
	int na = op == SOP_mask_cols ? 2 : 3;
	Ref a[3];

	if (!nargs(g, n, sir_ops[op].name, na, na))
		return sg_err(g);
	for (int k = 0; k < na; k++)
		a[k] = sg_expr(g, n->kids.v[k]);
	if (sg_val(g, a[0])->ty != TY_FRAG || sg_val(g, a[0])->lay->kind == LK_ROWS) {
		diag_error(g->ctx, n->kids.v[0]->span, "'%s' masks a register "
			"tile", sir_ops[op].name);
		return sg_err(g);
	}
	for (int k = 1; k < na; k++)
		if (!ty_isint(sg_val(g, a[k])->ty)) {
			diag_error(g->ctx, n->kids.v[k]->span, "'%s' needs an "
				"integer here", sir_ops[op].name);
			return sg_err(g);
		}
	Ref r = sir_val(g->ctx, g->p, TY_FRAG, NULL);
	frag_like(g, r, sg_val(g, a[0]));
	SirIns *i = sg_emit(g, op, n->span);
	i->dst = r;
	memcpy(i->a, a, sizeof a);
	i->na = na;
	return r;
}

/* all_eq(x, v): whether every element of the f32 tile x that the lanes
 * of a warp hold equals v.  A warp vote: the same in the lanes of a warp,
 * not across the warps of a partition. */
static Ref
all_eq(G *g, const Node *n)
{
	Ref x, v;

	if (!nargs(g, n, "all_eq", 2, 2))
		return sg_err(g);
	if (g->in_elect) {
		diag_error(g->ctx, n->span, "'all_eq' is a vote of the whole "
			"warp; it cannot be inside 'elect'");
		return sg_err(g);
	}
	x = sg_expr(g, n->kids.v[0]);
	v = sg_expr(g, n->kids.v[1]);
	const SirVal *xv = sg_val(g, x), *vv = sg_val(g, v);
	if (xv->ty == TY_ERR || vv->ty == TY_ERR)
		return sg_err(g);
	if (xv->ty != TY_FRAG || xv->ety != TY_F32) {
		diag_error(g->ctx, n->kids.v[0]->span, "'all_eq' compares the "
			"elements of an f32 register tile, found %s '%s'",
			xv->ty == TY_FRAG ? "a tile of" : "a scalar",
			ty_name(xv->ty == TY_FRAG ? xv->ety : xv->ty));
		return sg_err(g);
	}
	if (vv->isconst && ty_isint(vv->ty))
		v = sg_const_f(g, (double)vv->ci, n->kids.v[1]->span);
	else if (vv->ty != TY_F32) {
		diag_error(g->ctx, n->kids.v[1]->span, "'all_eq' compares with "
			"an f32 scalar, found '%s'", vv->ty == TY_FRAG ?
			"a register tile" : ty_name(vv->ty));
		return sg_err(g);
	}
	Ref r = sir_val(g->ctx, g->p, TY_BOOL, NULL);
	SirIns *i = sg_emit(g, SOP_all_eq, n->span);
	i->dst = r;
	i->a[0] = x;
	i->a[1] = v;
	i->na = 2;
	return r;
}

/* exp2(x [, poly=N]): N of every 8 elements of a thread's f32 tile are
 * computed with an FMA polynomial instead of the MUFU (ptx_frag.c). */
static Ref
exp2_call(G *g, const Node *n)
{
	Node one = *n;
	int64_t poly = 0;

	if (n->kids.n == 2 && n->kids.v[1]->kind == N_NAMEDARG) {
		const Node *a = n->kids.v[1];
		Ref c = strcmp(a->name, "poly") ? 0 : sg_expr(g, a->a);
		if (!c || !sg_const_int(g, c, &poly) || poly < 0 || poly > 8) {
			diag_error(g->ctx, a->span, "'exp2' takes one named "
				"argument, 'poly=N' with N a constant in 0..8 "
				"(of every 8 elements of a tile, how many a "
				"polynomial computes)");
			return sg_err(g);
		}
		one.kids.n = 1;
	}
	for (int k = 0; k < one.kids.n; k++)
		if (one.kids.v[k]->kind == N_NAMEDARG) {
			diag_error(g->ctx, one.kids.v[k]->span, "'exp2' takes "
				"'poly=N' after its operand, and no other named "
				"argument");
			return sg_err(g);
		}
	Ref r = math1(g, &one, SOP_exp2);
	if (poly && sg_val(g, r)->ty != TY_ERR) {
		if (sg_val(g, r)->ty != TY_FRAG) {
			diag_error(g->ctx, n->kids.v[1]->span, "'poly' applies "
				"to a register tile; a scalar exp2 always uses "
				"the MUFU");
			return sg_err(g);
		}
		g->cur->v[g->cur->n - 1].imm = poly;
	}
	return r;
}

static Ref
call(G *g, const Node *n)
{
	const char *f = n->a->kind == N_NAME ? n->a->name : "";

	if (!strcmp(f, "exp2"))
		return exp2_call(g, n);
	for (int k = 0; k < n->kids.n; k++)
		if (n->kids.v[k]->kind == N_NAMEDARG) {
			diag_error(g->ctx, n->kids.v[k]->span, "'%s' takes no "
				"named arguments", f);
			return sg_err(g);
		}
	if (!strcmp(f, "rowmax"))
		return reduce(g, n, SOP_rowmax);
	if (!strcmp(f, "rowsum"))
		return reduce(g, n, SOP_rowsum);
	if (!strcmp(f, "convert"))
		return convert(g, n);
	if (!strcmp(f, "cvt"))
		return cvt(g, n);
	if (!strcmp(f, "exp2"))
		return math1(g, n, SOP_exp2);
	if (!strcmp(f, "log2"))
		return math1(g, n, SOP_log2);
	if (!strcmp(f, "rcp"))
		return math1(g, n, SOP_rcp);
	if (!strcmp(f, "min") || !strcmp(f, "max") || !strcmp(f, "cdiv"))
		return minmax_cdiv(g, n, f);
	if (!strcmp(f, "mask_cols"))
		return mask(g, n, SOP_mask_cols);
	if (!strcmp(f, "all_eq"))
		return all_eq(g, n);
	if (!strcmp(f, "mask_causal"))
		return mask(g, n, SOP_mask_causal);
	if (!strcmp(f, "sizeof")) {
		Val v;
		if (!const_eval(g->ctx, g->k, n, &v))
			return sg_err(g);
		return sg_const_i(g, v.i, TY_I32, n->span);
	}
	diag_error(g->ctx, n->a->span, "unknown function '%s'", f);
	return sg_err(g);
}

static Ref
field(G *g, const Node *n)
{
	static const char *const f[] = {"x", "y", "z", "iter"};
	Ref b = sg_expr(g, n->a);

	if (sg_val(g, b)->ty == TY_ERR)
		return b;
	if (sg_val(g, b)->ty != TY_TILE) {
		diag_error(g->ctx, n->span, "only tiles have fields (t.x, t.y, "
			"t.z, t.iter)");
		return sg_err(g);
	}
	for (int k = 0; k < 4; k++)
		if (!strcmp(f[k], n->name)) {
			Ref r = sir_val(g->ctx, g->p, TY_I32, NULL);
			SirIns *i = sg_emit(g, SOP_tilefield, n->span);
			i->dst = r;
			i->a[0] = b;
			i->na = 1;
			i->imm = k;
			return r;
		}
	diag_error(g->ctx, n->nspan, "a tile has fields 'x', 'y', 'z' and "
		"'iter', not '%s'", n->name);
	return sg_err(g);
}

static Ref
ternary(G *g, const Node *n)
{
	Ref c = sg_cond(g, n->a), a, b;
	int64_t cv;

	if (sg_const_int(g, c, &cv))
		return sg_expr(g, cv ? n->b : n->c);
	a = sg_expr(g, n->b);
	b = sg_expr(g, n->c);
	if (sg_val(g, c)->ty == TY_ERR || sg_val(g, a)->ty == TY_ERR ||
	    sg_val(g, b)->ty == TY_ERR)
		return sg_err(g);
	Ty t = unify(g, n, a, b);
	if (t == TY_ERR)
		return sg_err(g);
	a = sg_coerce(g, a, t, n->b->span);
	b = sg_coerce(g, b, t, n->c->span);
	if (t == TY_FRAG) {
		diag_error(g->ctx, n->span, "'?:' chooses between scalars");
		return sg_err(g);
	}
	Ref r = sir_val(g->ctx, g->p, t, NULL);
	SirIns *i = sg_emit(g, SOP_select, n->span);
	i->dst = r, i->a[0] = c, i->a[1] = a, i->a[2] = b, i->na = 3;
	return r;
}

Ref
sg_expr(G *g, const Node *n)
{
	switch (n->kind) {
	case N_INT:
		if (n->ival > INT32_MAX)
			return sg_const_i(g, n->ival, TY_I64, n->span);
		return sg_const_i(g, n->ival, TY_I32, n->span);
	case N_FLOAT:
		return sg_const_f(g, n->fval, n->span);
	case N_BOOL:
		return sg_const_i(g, n->ival, TY_BOOL, n->span);
	case N_NAME:
		return name(g, n);
	case N_BINARY:
		return binary(g, n);
	case N_UNARY:
		return unary(g, n);
	case N_TERNARY:
		return ternary(g, n);
	case N_CALL:
		return call(g, n);
	case N_FIELD:
		return field(g, n);
	case N_INDEX: {
		Res *r = n->a->kind == N_NAME ? kernel_find(g->k, n->a->name) :
			NULL;
		if (r)
			diag_error(g->ctx, n->span, "'%s' is a resource; it is "
				"used by operations such as 'wait' or "
				"'tma_load', not as a value", r->name);
		else
			diag_error(g->ctx, n->span, "only resources are "
				"indexed");
		return sg_err(g);
	}
	default:
		diag_error(g->ctx, n->span, "expected a value");
		return sg_err(g);
	}
}

Ref
sg_cond(G *g, const Node *n)
{
	Ref c = sg_expr(g, n);
	Ty t = sg_val(g, c)->ty;

	if (t != TY_BOOL && t != TY_ERR) {
		diag_error(g->ctx, n->span, "a condition must be a boolean, "
			"found '%s'", t == TY_FRAG ? "register tile" :
			ty_name(t));
		return sg_err(g);
	}
	return c;
}
