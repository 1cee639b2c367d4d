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

/* The scope is a list, newest first, for leaving blocks, and a NameMap
 * of the newest binding of each name, for constant-time lookups (a list
 * walk made long bodies quadratic, issue #29). */
void
sg_bind(G *g, const char *name, Ref r, Span sp)
{
	Bind *b = NEW(&g->ctx->scratch, Bind);

	*b = (Bind){.name = name, .ref = r, .span = sp, .dot = SG_NOTAN,
		.next = g->scope};
	b->shadow = namemap_put(&g->ctx->scratch, &g->names, name, b);
	g->scope = b;
}

Bind *
sg_lookup(G *g, const char *name)
{
	return namemap_get(&g->names, name);
}

void
sg_unscope(G *g, Bind *saved)
{
	for (; g->scope != saved; g->scope = g->scope->next)
		namemap_put(&g->ctx->scratch, &g->names, g->scope->name,
			g->scope->shadow);
}

/* The source text of a span, as the user wrote it, for a diagnostic that
 * names an operand; dflt when it is empty, long or spans lines. */
const char *
sg_text(G *g, Span sp, const char *dflt)
{
	const Src *src = ctx_src(g->ctx, sp.lo);
	const char *t = src->text + (sp.lo - src->base);

	if (sp.hi <= sp.lo || sp.hi - src->base > src->len ||
	    sp.hi - sp.lo > 40)
		return dflt;
	for (uint32_t i = 0; i < sp.hi - sp.lo; i++)
		if ((unsigned char)t[i] < 0x20)
			return dflt;
	return intern(g->ctx->strs, t, sp.hi - sp.lo);
}

/* Operand k (0 left, 1 right) of a binary operator or a two-argument
 * call, as written. */
static const char *
opd_text(G *g, const Node *n, int k, const char *dflt)
{
	const Node *o = NULL;

	if (n->kind == N_BINARY)
		o = k ? n->b : n->a;
	else if (n->kind == N_CALL && n->kids.n == 2)
		o = n->kids.v[k];
	return o ? sg_text(g, o->span, dflt) : dflt;
}

const char *
sg_layname(const Layout *l)
{
	static const char *const k[] = {"?", "smem", "wgmma_acc", "wgmma_a",
		"tmem_rows", "rows", "tmem", "blocked", "cols"};
	return l ? (l->name ? l->name : k[l->kind]) : "?";
}

/* Row vectors depend only on which rows a thread owns: the parent's kind
 * and row count, not its column count. */
bool
sg_rows_fit(const Layout *rows, const Layout *tile)
{
	if (!rows || !tile || !rows->parent)
		return false;
	const Layout *p = rows->parent;
	if (rows->kind == LK_COLS && p->kind == LK_WGMMA_ACC)
		return tile->kind == LK_WGMMA_ACC && p->n == tile->n;
	if (rows->kind == LK_COLS)  /* columns: n, tpr and vec */
		return tile->kind == LK_BLOCKED && p->n == tile->n &&
			p->tpr == tile->tpr && p->vec == tile->vec;
	if (rows->kind != LK_ROWS || p->kind != tile->kind || p->m != tile->m)
		return false;
	return p->kind != LK_BLOCKED || (p->threads == tile->threads &&
		p->tpr == tile->tpr);
}

bool
sg_same_layout(const Layout *a, const Layout *b)
{
	if (a == b)
		return true;
	if (!a || !b || a->kind != b->kind || a->m != b->m)
		return false;
	if (a->kind == LK_ROWS)
		return sg_rows_fit(a, b->parent);
	if (a->kind == LK_COLS)
		return sg_rows_fit(a, b->parent);
	if (a->kind == LK_BLOCKED)
		return a->n == b->n && a->threads == b->threads &&
			a->tpr == b->tpr && a->vec == b->vec;
	return a->n == b->n;
}

Ty
sg_unify(G *g, const Node *n, Ref a, Ref b)
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

void
sg_frag_like(G *g, Ref dst, const SirVal *src)
{
	SirVal *d = sg_val(g, dst);

	d->ety = src->ety;
	d->lay = src->lay;
	d->m = src->m;
	d->n = src->n;
}

/* An accumulator (operand k of n: 0 left, 1 right) meets an A-operand
 * tile: say how to convert it, with the operand as written. */
static void
convert_hint(G *g, const Node *n, const SirVal *x, const SirVal *y, int k)
{
	const SirVal *acc = k ? y : x, *other = k ? x : y;
	bool f32 = acc->ety == TY_F32;

	diag_error(g->ctx, n->span, "register tiles with layouts '%s' and "
		"'%s' meet here; write 'convert(%s%s%s%s%s, %s)' on the %s one",
		sg_layname(x->lay), sg_layname(y->lay), f32 ? "cvt(" : "",
		opd_text(g, n, k, k ? "y" : "x"), f32 ? ", " : "",
		f32 ? ty_name(other->ety) : "", f32 ? ")" : "",
		sg_layname(other->lay), k ? "right-hand" : "left-hand");
}

/* Binary operators on register tiles: tile op tile (same layout), tile op
 * scalar, and tile op row vector (rows(L) broadcast across columns);
 * their element types are sirtile.c's (sg_tile_types). */
Ref
sg_frag_binary(G *g, const Node *n, SirOp op, Ref a, Ref b)
{
	SirVal *x = sg_val(g, a), *y = sg_val(g, b);
	const SirVal *f = x->ty == TY_FRAG ? x : y;
	const SirVal *o = x->ty == TY_FRAG ? y : x;
	bool rowvec = false, rowvec2 = false;
	Ref r;
	Ty ety;

	if (o->ty == TY_FRAG) {
		rowvec = sg_rows_fit(o->lay, f->lay);
		rowvec2 = sg_rows_fit(f->lay, o->lay);
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
				convert_hint(g, n, x, y, 1);
			else if (x->lay->kind == LK_WGMMA_ACC &&
			    y->lay->kind == LK_WGMMA_A)
				convert_hint(g, n, x, y, 0);
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
	}
	const SirVal fv = *f;  /* sir_val may move the array f points into */
	if (!sg_tile_types(g, n, op, &a, &b, rowvec || rowvec2, &ety))
		return sg_err(g);
	r = sir_val(g->ctx, g->p, TY_FRAG, NULL);
	sg_frag_like(g, r, &fv);
	sg_val(g, r)->ety = ety;
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

Ref
sg_fold(G *g, const Node *n, Ref a, Ref b)
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
		return sg_frag_binary(g, n, op, a, b);
	if (sg_val(g, a)->isconst && sg_val(g, b)->isconst)
		return sg_fold(g, n, a, b);
	if ((t = sg_unify(g, n, a, b)) == TY_ERR)
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
		if (ty_isint(x->ty) && n->op != '!') {
			int64_t r = ~x->ci;
			if (n->op == '-' && !ck_neg(x->ci, &r)) {
				diag_error(g->ctx, n->span, "integer overflow in "
					"a constant expression");
				return sg_err(g);
			}
			return sg_const_i(g, r, x->ty == TY_I32 && (r > INT32_MAX ||
				r < INT32_MIN) ? TY_I64 : x->ty, n->span);
		}
		if (x->ty == TY_BOOL && n->op == '!')
			return sg_const_i(g, !x->ci, TY_BOOL, n->span);
	}
	/* a tile's elements: '!' on bool, '-' on f32 and i32 (sirtile.c) */
	Ty et = x->ty == TY_FRAG ? x->ety : x->ty;
	bool num = x->ty != TY_FRAG || et == TY_F32 || et == TY_I32;
	if ((op == SOP_not) != (et == TY_BOOL) || (op == SOP_neg && !num) ||
	    (op == SOP_bnot && (!ty_isint(x->ty)))) {
		diag_error(g->ctx, n->span, "operator '%c' does not apply to "
			"'%s'", n->op, x->ty != TY_FRAG ? ty_name(x->ty) :
			et == TY_BOOL ? "register tile of bool" : "register tile");
		return sg_err(g);
	}
	return sg_unop(g, op, a, x->ty, n->span);  /* not x: sir_val moves it */
}

static Ref
name(G *g, const Node *n)
{
	static const char *const specials[] = {"tid", "warp", "lane"};
	static const char *const cspecials[] = {"cluster_rank", "cluster_x",
		"cluster_y", "cluster_z"};
	Bind *b = sg_lookup(g, n->name);
	Res *r;

	if (b && b->subst) {
		const SirVal *v = sg_val(g, b->ref);
		return v->ty == TY_F32 ? sg_const_f(g, v->cf, n->span) :
			sg_const_i(g, v->ci, v->ty, n->span);
	}
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
		if (r->kind == R_MOD)
			diag_error(g->ctx, n->span, "'%s' is a mod, not a "
				"value; call it: '%s(...)'", n->name, n->name);
		else
			diag_error(g->ctx, n->span, "'%s' is a resource, not "
				"a value", n->name);
		diag_note(g->ctx, r->nspan, "'%s' declared here", n->name);
		return sg_err(g);
	}
	if (!strcmp(n->name, "inf"))
		return sg_const_f(g, INFINITY, n->span);
	/* the cluster (cta cluster=): its size, a constant, and this
	 * CTA's rank and coordinates in it */
	if (!strcmp(n->name, "cluster_size"))
		return sg_const_i(g, (int64_t)g->k->cluster[0] *
			g->k->cluster[1] * g->k->cluster[2], TY_I32, n->span);
	for (size_t k = 0; k < COUNT(cspecials); k++)
		if (!strcmp(cspecials[k], n->name)) {
			if (g->k->cluster[0] * g->k->cluster[1] *
			    g->k->cluster[2] == 1)
				return sg_const_i(g, 0, TY_I32, n->span);
			Ref d = sir_val(g->ctx, g->p, TY_I32, n->name);
			SirIns *i = sg_emit(g, SOP_special, n->span);
			i->dst = d;
			i->imm = SP_CRANK + (int64_t)k;
			return d;
		}
	for (size_t k = 0; k < COUNT(specials); k++)
		if (!strcmp(specials[k], n->name)) {
			Ref d = sir_val(g->ctx, g->p, TY_I32, n->name);
			SirIns *i = sg_emit(g, SOP_special, n->span);
			i->dst = d;
			i->imm = (int64_t)k;
			return d;
		}
	Suggest s;
	diag_suggest_init(&s, n->name);
	for (const Bind *b = g->scope; b; b = b->next)
		diag_suggest_add(&s, b->name);
	kernel_suggest(g->k, &s, R_PARAM);
	kernel_suggest(g->k, &s, R_CONST);
	diag_suggest_add(&s, "inf");
	for (size_t k = 0; k < COUNT(specials); k++)
		diag_suggest_add(&s, specials[k]);
	for (size_t k = 0; k < COUNT(cspecials); k++)
		diag_suggest_add(&s, cspecials[k]);
	diag_suggest_add(&s, "cluster_size");
	diag_undeclared(g->ctx, n->span, &s);
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

Ref
sg_unop(G *g, SirOp op, Ref a, Ty ty, Span sp)
{
	Ref r = sir_val(g->ctx, g->p, ty, NULL);
	SirIns *i = sg_emit(g, op, sp);

	if (ty == TY_FRAG)
		sg_frag_like(g, r, sg_val(g, a));
	i->dst = r;
	i->a[0] = a;
	i->na = 1;
	return r;
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
	Ty t = sg_unify(g, n, a, b);
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

static Ref
expr(G *g, const Node *n)
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
		return sg_call(g, n);
	case N_FIELD:
		return field(g, n);
	case N_INDEX:
		return sg_gload(g, n);  /* G[i, ...]: an element of a global */
	default:
		diag_error(g->ctx, n->span, "expected a value");
		return sg_err(g);
	}
}

/* A tree is at most MAXTREE deep (ast_check_depth), but mods inline
 * trees into trees: the nesting is bounded again here, so that the
 * recursion stays as deep as one tree may be. */
Ref
sg_expr(G *g, const Node *n)
{
	if (g->depth >= MAXTREE) {
		if (!g->too_deep)  /* once: every level above would say it */
			diag_error(g->ctx, n->span, "the expression is nested "
				"too deeply with the mods inlined into it (more "
				"than %d levels)", MAXTREE);
		g->too_deep = true;
		return sg_err(g);
	}
	g->depth++;
	Ref r = expr(g, n);
	g->depth--;
	return r;
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
