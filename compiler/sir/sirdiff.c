/* sirdiff.c: dmod(NAME, a0, a1, ...), the derivative of mod NAME with
 * respect to its first parameter at the arguments, by forward-mode
 * differentiation of the mod's body while it is lowered: every
 * subexpression gives its value and its tangent (the derivative of the
 * value along the first parameter), the tangent of the first parameter
 * being 1 and of everything else 0.  The attention backward pass takes a
 * score modifier's derivative so (issue #22: every modifier has its
 * gradient).  Values are lowered as sg_expr lowers them, in the mod's
 * hygienic scope; tangents are built from the same operations on values
 * already lowered (temporaries bound as '$0', '$1', ... and small
 * expressions over them, so the usual type checks and folding apply).
 * Integer and boolean values have no tangent; a tangent that is 0 emits
 * nothing.  Called by sircall.c's sg_call. */
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"
#include "sir/sirgen.h"

#define NOTAN SG_NOTAN

typedef struct Dual {
	Ref v;   /* the value */
	Ref d;   /* its tangent, or NOTAN */
} Dual;

static Dual dual(G *, const Node *, bool need);

static Node *
mk(G *g, NodeKind k, Span sp)
{
	Node *n = NEW(&g->ctx->scratch, Node);

	n->kind = (uint16_t)k;
	n->span = n->nspan = sp;
	return n;
}

/* A name bound to value r for the expressions built below. */
static Node *
tmp(G *g, Ref r, Span sp)
{
	char b[16];
	Node *n = mk(g, N_NAME, sp);

	snprintf(b, sizeof b, "$%d", g->ntmp++);
	n->name = intern_cstr(g->ctx->strs, b);
	sg_bind(g, n->name, r, sp);
	return n;
}

static Node *
num(G *g, double v, Span sp)
{
	Node *n = mk(g, N_FLOAT, sp);

	n->fval = v;
	return n;
}

static Node *
bin(G *g, int op, Node *a, Node *b)
{
	Node *n = mk(g, N_BINARY, a->span);

	n->op = (uint16_t)op;
	n->a = a;
	n->b = b;
	return n;
}

static Node *
call(G *g, const char *f, Span sp, Node *a, Node *b, Node *c)
{
	Node *n = mk(g, N_CALL, sp);
	Node *args[3] = {a, b, c};

	n->a = mk(g, N_NAME, sp);
	n->a->name = intern_cstr(g->ctx->strs, f);
	for (int i = 0; i < 3 && args[i]; i++)
		nodelist_push(g->ctx, &n->kids, args[i]);
	return n;
}

/* Lower e, built over temporaries, and drop the temporaries. */
static Ref
lower(G *g, Bind *saved, const Node *e)
{
	Ref r = sg_expr(g, e);

	sg_unscope(g, saved);
	return r;
}

static bool
is_f32(G *g, Ref r)
{
	const SirVal *v = sg_val(g, r);

	return v->ty == TY_F32 || (v->ty == TY_FRAG && v->ety == TY_F32);
}

/* The tangent as an expression: its temporary, or 0.0. */
static Node *
tan_of(G *g, Ref d, Span sp)
{
	return d == NOTAN ? num(g, 0.0, sp) : tmp(g, d, sp);
}

static Dual
binary(G *g, const Node *n, bool need)
{
	bool arith = n->op == '+' || n->op == '-' || n->op == '*' ||
		n->op == '/';
	Dual a = dual(g, n->a, true), b = dual(g, n->b, true), r;
	Bind *saved = g->scope;
	Span sp = n->span;

	/* the value only where it is needed: by the caller, or by the
	 * quotient's tangent (the others use the operands'), so that a
	 * chain of elementwise operations keeps one tile live, not two */
	r.v = need || n->op == '/' || !arith || sg_val(g, a.v)->ty == TY_ERR ||
		sg_val(g, b.v)->ty == TY_ERR ? sg_binop(g, n, a.v, b.v) : NOTAN;
	r.d = NOTAN;
	if ((r.v != NOTAN && sg_val(g, r.v)->ty == TY_ERR) || !arith ||
	    !(is_f32(g, a.v) || is_f32(g, b.v)) ||
	    (a.d == NOTAN && b.d == NOTAN))
		return r;
	switch (n->op) {
	case '+':
	case '-':
		if (b.d == NOTAN)
			r.d = a.d;
		else if (a.d == NOTAN && n->op == '+')
			r.d = b.d;
		else
			r.d = lower(g, saved, bin(g, n->op, tan_of(g, a.d, sp),
				tmp(g, b.d, sp)));
		return r;
	case '*': {
		/* da * b + a * db */
		Node *x = a.d == NOTAN ? NULL : bin(g, '*', tmp(g, a.d, sp),
			tmp(g, b.v, sp));
		Node *y = b.d == NOTAN ? NULL : bin(g, '*', tmp(g, a.v, sp),
			tmp(g, b.d, sp));
		r.d = lower(g, saved, x && y ? bin(g, '+', x, y) : x ? x : y);
		return r;
	}
	case '/': {
		/* (da - (a / b) db) / b */
		Node *q = tmp(g, r.v, sp), *bv = tmp(g, b.v, sp);
		Node *t = b.d == NOTAN ? tmp(g, a.d, sp) : bin(g, '-',
			tan_of(g, a.d, sp), bin(g, '*', q, tmp(g, b.d, sp)));
		r.d = lower(g, saved, bin(g, '/', t, bv));
		return r;
	}
	default:  /* comparisons and logic: booleans */
		return r;
	}
}

/* 'ternary ? :' on scalars: the tangent of the branch taken. */
static Dual
ternary(G *g, const Node *n)
{
	Dual c = dual(g, n->a, true), a = dual(g, n->b, true),
		b = dual(g, n->c, true), r;
	Bind *saved = g->scope;
	Node *e = mk(g, N_TERNARY, n->span);

	e->a = tmp(g, c.v, n->span);
	e->b = tmp(g, a.v, n->span);
	e->c = tmp(g, b.v, n->span);
	r.v = lower(g, saved, e);
	r.d = NOTAN;
	if (sg_val(g, r.v)->ty == TY_ERR || !is_f32(g, r.v) ||
	    (a.d == NOTAN && b.d == NOTAN))
		return r;
	e = mk(g, N_TERNARY, n->span);
	e->a = tmp(g, c.v, n->span);
	e->b = tan_of(g, a.d, n->span);
	e->c = tan_of(g, b.d, n->span);
	r.d = lower(g, saved, e);
	return r;
}

/* A mod called in the body: its parameters get the arguments' values
 * and tangents, and its body is differentiated in its own scope. */
static Dual
mod_call(G *g, const Node *n, const Res *m, bool need)
{
	const Node *d = m->decl;
	Dual args[MAXMODPARAMS], r = {sg_err(g), NOTAN};
	ModScope ms;

	if (!sg_mod_check(g, n, m, n->kids.n))
		return r;
	for (int k = 0; k < n->kids.n; k++)
		if (sg_val(g, (args[k] = dual(g, n->kids.v[k], true)).v)->ty ==
		    TY_ERR)
			return args[k];
	sg_mod_enter(g, &ms, m);
	for (int k = 0; k < n->kids.n; k++) {
		sg_bind(g, d->kids.v[k]->name, args[k].v, d->kids.v[k]->span);
		g->scope->dot = args[k].d;
	}
	r = dual(g, d->d, need);
	sg_mod_leave(g, &ms, n, false);
	return r;
}

/* Built-in functions: the chain rule for each that is differentiable
 * (the others have integer or boolean values, or are refused). */
static Dual
builtin(G *g, const Node *n, const char *f)
{
	static const char *const flat[] = {
		"rowid", "colid", "cdiv", "sizeof", "all_eq",
	};
	Dual r = {sg_err(g), NOTAN}, a[3];
	Span sp = n->span;

	for (size_t i = 0; i < COUNT(flat); i++)
		if (!strcmp(f, flat[i])) {
			r.v = sg_expr(g, n);
			return r;
		}
	if (!strcmp(f, "cvt")) {
		if (n->kids.n != 2)
			return (Dual){sg_expr(g, n), NOTAN};
		Dual x = dual(g, n->kids.v[0], true);
		Bind *saved = g->scope;
		r.v = lower(g, saved, call(g, "cvt", sp, tmp(g, x.v, sp),
			n->kids.v[1], NULL));
		/* f32 to f32 keeps the tangent; to or from integers none */
		if (is_f32(g, x.v) && is_f32(g, r.v))
			r.d = x.d;
		return r;
	}
	bool ok = !strcmp(f, "tanh") || !strcmp(f, "exp2") ||
		!strcmp(f, "log2") || !strcmp(f, "rcp") || !strcmp(f, "abs") ||
		!strcmp(f, "sqrt") || !strcmp(f, "rsqrt") ||
		!strcmp(f, "min") || !strcmp(f, "max") || !strcmp(f, "select");
	if (!ok) {
		diag_error(g->ctx, n->span, "'dmod' cannot differentiate '%s'; "
			"it differentiates + - * /, ?:, tanh, exp2, log2, rcp, "
			"sqrt, rsqrt, abs, min, max, select, cvt and mods", f);
		return r;
	}
	if (n->kids.n != (!strcmp(f, "select") ? 3 : !strcmp(f, "min") ||
	    !strcmp(f, "max") ? 2 : 1)) {
		r.v = sg_expr(g, n);  /* the usual arity message */
		return r;
	}
	for (int k = 0; k < n->kids.n; k++)
		if (sg_val(g, (a[k] = dual(g, n->kids.v[k], true)).v)->ty ==
		    TY_ERR)
			return a[k];
	Bind *saved = g->scope;
	Node *x = tmp(g, a[0].v, sp), *y = n->kids.n > 1 ? tmp(g, a[1].v,
		sp) : NULL, *z = n->kids.n > 2 ? tmp(g, a[2].v, sp) : NULL;
	r.v = lower(g, saved, call(g, f, sp, x, y, z));
	if (sg_val(g, r.v)->ty == TY_ERR || !is_f32(g, r.v))
		return r;
	Node *v = tmp(g, r.v, sp), *e = NULL;
	if (!strcmp(f, "select")) {
		/* select(p, a, b): the tangent of the one chosen */
		if (a[1].d == NOTAN && a[2].d == NOTAN)
			return sg_unscope(g, saved), r;
		e = call(g, "select", sp, tmp(g, a[0].v, sp), tan_of(g, a[1].d,
			sp), tan_of(g, a[2].d, sp));
	} else if (!strcmp(f, "min") || !strcmp(f, "max")) {
		if (a[0].d == NOTAN && a[1].d == NOTAN)
			return sg_unscope(g, saved), r;
		/* the tangent of the operand that is the result */
		e = call(g, "select", sp, bin(g, !strcmp(f, "min") ? B_LE : B_GE,
			tmp(g, a[0].v, sp), tmp(g, a[1].v, sp)), tan_of(g,
			a[0].d, sp), tan_of(g, a[1].d, sp));
	} else if (a[0].d == NOTAN) {
		return sg_unscope(g, saved), r;
	} else {
		Node *dx = tmp(g, a[0].d, sp), *ux = tmp(g, a[0].v, sp);
		if (!strcmp(f, "tanh"))          /* (1 - t^2) dx */
			e = bin(g, '*', bin(g, '-', num(g, 1.0, sp), bin(g, '*',
				v, tmp(g, r.v, sp))), dx);
		else if (!strcmp(f, "exp2"))     /* ln 2 2^x dx */
			e = bin(g, '*', bin(g, '*', v, num(g, 0.6931471805599453, sp)), dx);
		else if (!strcmp(f, "log2"))     /* dx / (x ln 2) */
			e = bin(g, '/', dx, bin(g, '*', ux, num(g, 0.6931471805599453, sp)));
		else if (!strcmp(f, "sqrt"))     /* dx / (2 sqrt(x)) */
			e = bin(g, '/', dx, bin(g, '*', num(g, 2.0, sp), v));
		else if (!strcmp(f, "rsqrt"))    /* -r^3 dx / 2 */
			e = bin(g, '*', bin(g, '*', bin(g, '*', v, tmp(g, r.v, sp)),
				tmp(g, r.v, sp)), bin(g, '*', num(g, -0.5, sp), dx));
		else if (!strcmp(f, "rcp"))      /* -dx / x^2 */
			e = bin(g, '*', bin(g, '*', v, tmp(g, r.v, sp)),
				bin(g, '-', num(g, 0.0, sp), dx));
		else                             /* abs: sign(x) dx */
			e = call(g, "select", sp, bin(g, '<', ux, num(g, 0.0,
				sp)), bin(g, '-', num(g, 0.0, sp), dx), dx);
	}
	r.d = lower(g, saved, e);
	return r;
}

static Dual
dual(G *g, const Node *n, bool need)
{
	Dual r = {0, NOTAN};

	switch (n->kind) {
	case N_NAME: {
		Bind *b = sg_lookup(g, n->name);
		r.v = sg_expr(g, n);
		if (b && !b->subst)
			r.d = b->dot;
		return r;
	}
	case N_BINARY:
		return binary(g, n, need);
	case N_UNARY: {
		Dual a = dual(g, n->a, true);
		Bind *saved = g->scope;
		Node *e = mk(g, N_UNARY, n->span);
		e->op = n->op;
		e->a = tmp(g, a.v, n->span);
		r.v = lower(g, saved, e);
		if (n->op == '-' && a.d != NOTAN && is_f32(g, r.v)) {
			e = mk(g, N_UNARY, n->span);
			e->op = '-';
			e->a = tmp(g, a.d, n->span);
			r.d = lower(g, saved, e);
		}
		return r;
	}
	case N_TERNARY:
		return ternary(g, n);
	case N_CALL: {
		const char *f = n->a->kind == N_NAME ? n->a->name : "";
		const Res *m = *f ? kernel_find(g->k, f) : NULL;
		if (m && m->kind == R_MOD)
			return mod_call(g, n, m, need);
		if (!strcmp(f, "dmod")) {
			diag_error(g->ctx, n->span, "'dmod' of a mod that "
				"calls 'dmod': second derivatives are not "
				"supported");
			return (Dual){sg_err(g), NOTAN};
		}
		return builtin(g, n, f);
	}
	case N_INDEX: {
		/* a dscatter pass: the selected gather of a global with a
		 * gradient has tangent 1 (the others, and loads, none) */
		const Res *gr = n->a->kind == N_NAME ? kernel_find(g->k,
			n->a->name) : NULL;
		if (g->dpass && gr && gr->kind == R_GLOBAL && gr->grad &&
		    g->dseen++ == g->dsel) {
			r.v = sg_gload_grad(g, n, &g->dlin, &g->dok);
			g->dgrad = gr->grad;
			if (sg_val(g, r.v)->ty != TY_ERR)
				r.d = sg_const_f(g, 1.0, n->span);
			return r;
		}
		r.v = sg_expr(g, n);
		return r;
	}
	default:  /* constants and other loads: no tangent */
		r.v = sg_expr(g, n);
		return r;
	}
}

/* Whether expression e (a mod's body; the mods it calls too) reads a
 * global with 'grad='. */
static bool
reads_grad(G *g, const Node *e, int depth)
{
	if (!e || depth > MAXTREE)
		return false;
	if (e->kind == N_INDEX && e->a->kind == N_NAME) {
		const Res *r = kernel_find(g->k, e->a->name);
		if (r && r->kind == R_GLOBAL && r->grad)
			return true;
	}
	if (e->kind == N_CALL && e->a->kind == N_NAME) {
		const Res *m = kernel_find(g->k, e->a->name);
		if (m && m->kind == R_MOD && m->decl &&
		    reads_grad(g, m->decl->d, depth + 1))
			return true;
	}
	for (int k = 0; k < e->kids.n; k++)
		if (reads_grad(g, e->kids.v[k], depth + 1))
			return true;
	return reads_grad(g, e->a, depth + 1) || reads_grad(g, e->b,
		depth + 1) || reads_grad(g, e->c, depth + 1);
}

/* dscatter(NAME, w, a0, ...): for each gather of a global G with
 * 'grad=DG' that mod NAME's body makes at the arguments (in its own
 * mods too), w times NAME's derivative along that gathered value is
 * added into DG at the gather's indices (a scatter, reduce=add): the
 * gradient of a learnable tensor a score modifier reads, w being the
 * gradient of NAME's value.  One forward-mode pass per gather, its
 * tangent 1 and every other 0; a gather out of bounds adds nothing. */
void
sg_dscatter(G *g, const Node *n)
{
	const Node *f = n->kids.n ? n->kids.v[0] : NULL;
	const Res *m = f && f->kind == N_NAME ? kernel_find(g->k, f->name) :
		NULL;

	if (!m || m->kind != R_MOD || n->kids.n < 2) {
		diag_error(g->ctx, f ? f->span : n->span, "'dscatter' takes a "
			"mod's name, the weight and the mod's arguments: "
			"dscatter(NAME, w, a0, ...)");
		return;
	}
	if (!sg_mod_check(g, n, m, n->kids.n - 2))
		return;
	const Node *d = m->decl;
	/* nothing to add: no code, not even the weight's */
	if (!reads_grad(g, d->d, 0))
		return;
	Ref w = sg_expr(g, n->kids.v[1]);
	if (sg_val(g, w)->ty == TY_ERR)
		return;
	if (!is_f32(g, w)) {
		diag_error(g->ctx, n->kids.v[1]->span, "the weight of "
			"'dscatter' is an 'f32' tile or scalar");
		return;
	}
	Ref args[MAXMODPARAMS];
	for (int k = 0; k < d->kids.n; k++)
		if (sg_val(g, (args[k] = sg_expr(g, n->kids.v[k + 2])))->ty ==
		    TY_ERR)
			return;
	for (g->dsel = 0;; g->dsel++) {
		ModScope ms;
		g->dpass = true;
		g->dseen = 0;
		g->dgrad = NULL;
		sg_mod_enter(g, &ms, m);
		for (int k = 0; k < d->kids.n; k++) {
			sg_bind(g, d->kids.v[k]->name, args[k], d->kids.v[k]->span);
			g->scope->dot = NOTAN;
		}
		Dual r = dual(g, d->d, false);
		sg_mod_leave(g, &ms, n, true);
		g->dpass = false;
		if (!g->dgrad || sg_val(g, r.v == NOTAN ? w : r.v)->ty == TY_ERR)
			break;  /* no gather left (or an error said) */
		if (r.d == NOTAN)
			continue;  /* NAME does not depend on it */
		Node o = {.span = n->span};
		Node mul = {.kind = N_BINARY, .op = '*', .span = n->span,
			.a = &o, .b = &o};
		Ref v = sg_binop(g, &mul, w, r.d);
		const SirVal *vv = sg_val(g, v), *lv = sg_val(g, g->dlin);
		if (vv->ty == TY_ERR)
			break;
		if (vv->ty != TY_FRAG || !sg_same_layout(vv->lay, lv->lay)) {
			diag_error(g->ctx, n->span, "'dscatter': the gradient of "
				"the gather is not a tile of its indices' layout "
				"(a row vector or a scalar weight of a constant "
				"derivative); weight it with a tile");
			break;
		}
		SirIns *i = sg_emit(g, SOP_gscatter, n->span);
		((Res *)g->dgrad)->direct = true;
		i->a[0] = g->dlin;
		i->a[1] = v;
		i->a[2] = g->dok;
		i->na = 3;
		i->imm = 1;  /* reduce=add */
		i->r[0] = (Res *)g->dgrad;
	}
	g->dpass = false;
}

/* dmod(NAME, a0, ...): NAME's derivative along its first parameter. */
Ref
sg_dmod(G *g, const Node *n)
{
	const Node *f = n->kids.n ? n->kids.v[0] : NULL;
	const Res *m = f && f->kind == N_NAME ? kernel_find(g->k, f->name) :
		NULL;

	if (!m || m->kind != R_MOD) {
		diag_error(g->ctx, f ? f->span : n->span, "'dmod' takes a mod's "
			"name and its arguments: dmod(NAME, a0, ...)");
		return sg_err(g);
	}
	const Node *d = m->decl;
	if (!d->kids.n) {
		diag_error(g->ctx, n->span, "'dmod' differentiates along a mod's "
			"first parameter; mod '%s' has none", m->name);
		return sg_err(g);
	}
	if (!sg_mod_check(g, n, m, n->kids.n - 1))
		return sg_err(g);
	Dual args[MAXMODPARAMS];
	for (int k = 0; k < d->kids.n; k++) {
		args[k].v = sg_expr(g, n->kids.v[k + 1]);
		args[k].d = NOTAN;
		if (sg_val(g, args[k].v)->ty == TY_ERR)
			return args[k].v;
	}
	if (!is_f32(g, args[0].v)) {
		diag_error(g->ctx, n->kids.v[1]->span, "'dmod' differentiates "
			"along an 'f32' first argument (a scalar or a tile), "
			"found '%s'", sg_val(g, args[0].v)->ty == TY_FRAG ?
			"register tile of i32 or bool" :
			ty_name(sg_val(g, args[0].v)->ty));
		return sg_err(g);
	}
	args[0].d = sg_const_f(g, 1.0, n->span);
	ModScope ms;
	sg_mod_enter(g, &ms, m);
	for (int k = 0; k < d->kids.n; k++) {
		sg_bind(g, d->kids.v[k]->name, args[k].v, d->kids.v[k]->span);
		g->scope->dot = args[k].d;
	}
	Dual r = dual(g, d->d, false);
	/* no tangent: the value, to tell a constant from no number */
	if (r.d == NOTAN && r.v == NOTAN)
		r = dual(g, d->d, true);
	sg_mod_leave(g, &ms, n, true);
	if (r.d != NOTAN)
		return r.d;
	if (sg_val(g, r.v)->ty == TY_ERR)
		return r.v;
	if (!is_f32(g, r.v)) {
		diag_error(g->ctx, n->span, "'dmod': mod '%s' gives no 'f32' "
			"value here, so it has no derivative", m->name);
		return sg_err(g);
	}
	/* a derivative that is 0 everywhere: a constant */
	return sg_const_f(g, 0.0, n->span);
}
