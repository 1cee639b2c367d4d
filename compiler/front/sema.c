/* sema.c: declarations to a checked Kernel.  Folds every declaration
 * attribute that must be constant, applies -D overrides, checks names,
 * types, layouts, target availability and the static budgets that do not
 * need the programs (threads, warps, registers, named-barrier ids).
 * Partition bodies are checked by sirgen.c as it lowers them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "front/front.h"

typedef struct {
	Ctx *ctx;
	Kernel *k;
	bool no_kernel;  /* 'kernel' missing at the top: reported once */
} S;

Res *
kernel_find(const Kernel *k, const char *name)
{
	for (Res *r = k->res; r; r = r->next)
		if (r->name == name)
			return r;
	return NULL;
}

static bool want_int(S *, const Node *, const char *, int64_t, int64_t,
	int64_t *);

static Res *
declare(S *s, ResKind kind, const Node *d)
{
	Res *old = d->name ? kernel_find(s->k, d->name) : NULL;
	Res *r;

	if (old) {
		diag_error(s->ctx, d->nspan, "'%s' is already declared",
			d->name);
		diag_note(s->ctx, old->nspan, "previous declaration of '%s'",
			d->name);
		return NULL;
	}
	r = NEW(&s->ctx->perm, Res);
	r->kind = kind;
	r->name = d->name;
	r->span = d->span;
	r->nspan = d->nspan;
	r->decl = d;
	r->count = 1;
	r->index = s->k->nres[kind]++;
	if (kind != R_PART && d->c) {
		diag_error(s->ctx, d->a->span, "only partitions form families "
			"('%s[i < N]'); write '%s[N]' for an array", d->name,
			d->name);
	} else if (kind != R_PART && d->a) {
		int64_t n = 1;
		if (kind != R_MBAR && kind != R_NBAR && kind != R_TMEM)
			diag_error(s->ctx, d->a->span, "'%s' cannot be an array",
				decl_names[d->op]);
		else if (want_int(s, d->a, "an array length", 1, 64, &n))
			r->count = (int)n;
		r->is_array = true;
	}
	if (s->k->res_last)
		s->k->res_last->next = r;
	else
		s->k->res = r;
	s->k->res_last = r;
	return r;
}

static const Node *
attr(const Node *d, const char *name)
{
	for (int i = 0; i < d->attrs.n; i++)
		if (!strcmp(d->attrs.v[i]->name, name))
			return d->attrs.v[i];
	return NULL;
}

/* Report attributes the declaration does not take, and duplicates. */
static void
attrs_allowed(S *s, const Node *d, const char *const *ok)
{
	for (int i = 0; i < d->attrs.n; i++) {
		const Node *a = d->attrs.v[i];
		bool found = false;

		for (const char *const *p = ok; *p; p++)
			found |= !strcmp(*p, a->name);
		for (int j = 0; j < i; j++)
			if (!strcmp(d->attrs.v[j]->name, a->name)) {
				diag_error(s->ctx, a->nspan, "attribute '%s' is "
					"given twice", a->name);
				diag_note(s->ctx, d->attrs.v[j]->nspan,
					"first given here");
			}
		if (!found) {
			Buf b;
			buf_init(&b, &s->ctx->scratch);
			for (const char *const *p = ok; *p; p++)
				buf_printf(&b, "%s'%s'", p == ok ? "" : ", ",
					*p);
			diag_error(s->ctx, a->nspan, "'%s' takes no attribute "
				"'%s'; it takes %s", decl_names[d->op],
				a->name, b.len ? b.p : "none");
		}
	}
}

static bool
want_int(S *s, const Node *e, const char *what, int64_t lo, int64_t hi,
	int64_t *out)
{
	Val v;

	if (!const_eval(s->ctx, s->k, e, &v))
		return false;
	if (v.ty == TY_WORD) {
		diag_error(s->ctx, e->span, "'%s' is not declared", v.word);
		return false;
	}
	if (v.ty != TY_I64) {
		diag_error(s->ctx, e->span, "%s must be an integer, found %s",
			what, ty_name(v.ty));
		return false;
	}
	if (v.i < lo || v.i > hi) {
		diag_error(s->ctx, e->span, "%s must be in %lld..%lld, found "
			"%lld", what, (long long)lo, (long long)hi,
			(long long)v.i);
		return false;
	}
	*out = v.i;
	return true;
}

static bool
attr_int(S *s, const Node *d, const char *name, bool required, int64_t lo,
	int64_t hi, int64_t *out)
{
	const Node *a = attr(d, name);
	char what[64];

	if (!a) {
		if (required)
			diag_error(s->ctx, d->nspan, "'%s' needs '%s=...'",
				decl_names[d->op], name);
		return false;
	}
	if (!a->a) {
		diag_error(s->ctx, a->span, "'%s' needs a value: '%s=...'",
			name, name);
		return false;
	}
	snprintf(what, sizeof what, "'%s'", name);
	return want_int(s, a->a, what, lo, hi, out);
}

/* An enum word attribute: returns the index into words[], or -1. */
static int
attr_word(S *s, const Node *d, const char *name, const char *const *words,
	int dflt)
{
	const Node *a = attr(d, name);
	Val v;

	if (!a)
		return dflt;
	/* an enum word wins over a declaration of the same name ('K') */
	if (a->a && a->a->kind == N_NAME)
		for (int i = 0; words[i]; i++)
			if (!strcmp(words[i], a->a->name))
				return i;
	if (!a->a || !const_eval(s->ctx, s->k, a->a, &v))
		goto bad;
	if (v.ty == TY_WORD || v.ty == TY_DTYPE) {
		const char *w = v.ty == TY_WORD ? v.word : ty_name((Ty)v.i);
		for (int i = 0; words[i]; i++)
			if (!strcmp(words[i], w))
				return i;
	}
bad:;
	Buf b;
	buf_init(&b, &s->ctx->scratch);
	for (int i = 0; words[i]; i++)
		buf_printf(&b, "%s'%s'", i ? ", " : "", words[i]);
	diag_error(s->ctx, a->a ? a->a->span : a->span, "'%s' must be one of "
		"%s", name, b.p);
	return -1;
}

static Ty
elem_type(S *s, const Node *t, bool scalar_ok, bool data_ok)
{
	Val v;
	Node tmp = *t;
	Res *r = kernel_find(s->k, t->name);

	tmp.kind = N_NAME;
	if (r && r->kind != R_CONST) {
		diag_error(s->ctx, t->nspan, "'%s' is not a type", t->name);
		diag_note(s->ctx, r->nspan, "'%s' declared here", t->name);
		return TY_ERR;
	}
	if (!const_eval(s->ctx, s->k, &tmp, &v))
		return TY_ERR;
	if (v.ty != TY_DTYPE) {
		diag_error(s->ctx, t->nspan, "'%s' is not a type", t->name);
		return TY_ERR;
	}
	Ty ty = (Ty)v.i;
	bool data = ty == TY_BF16 || ty == TY_F16 || ty == TY_F32;
	bool scal = ty_isint(ty) || ty == TY_F32 || ty == TY_BOOL;
	if ((data && data_ok) || (scal && scalar_ok))
		return ty;
	diag_error(s->ctx, t->nspan, "type '%s' is not allowed here; use %s",
		ty_name(ty), data_ok ? "'bf16', 'f16' or 'f32'" :
		"'i32', 'u32', 'i64', 'u64', 'f32' or 'bool'");
	return TY_ERR;
}

static const char *
val_kind(Ty t)
{
	switch (t) {
	case TY_I64: return "an integer";
	case TY_F64: return "a number";
	case TY_BOOL: return "a boolean";
	case TY_DTYPE: return "an element type";
	case TY_WORD: return "a word";
	default: return ty_name(t);
	}
}

/* -D NAME=VALUE: the text is an integer, a float, true/false, or a word
 * (an element type or an enum word). */
static bool
define_val(S *s, const Define *def, Val *v, Span sp)
{
	const char *t = def->value;
	char *end;

	if (!*t)
		goto bad;
	bool hex = t[0] == '0' && (t[1] == 'x' || t[1] == 'X');
	errno = 0;
	long long i = strtoll(t, &end, hex ? 16 : 10);  /* never octal */
	if (!*end) {
		if (errno == ERANGE) {
			diag_error(s->ctx, sp, "-D %s=%s: the integer is too "
				"large", def->name, t);
			return false;
		}
		*v = (Val){.ty = TY_I64, .i = i};
		return true;
	}
	double f = strtod(t, &end);
	if (!*end && (f != f || f > 1e300 || f < -1e300)) {
		diag_error(s->ctx, sp, "-D %s=%s: the number is not finite",
			def->name, t);
		return false;
	}
	if (!*end) {
		*v = (Val){.ty = TY_F64, .f = f};
		return true;
	}
	if (!strcmp(t, "true") || !strcmp(t, "false")) {
		*v = (Val){.ty = TY_BOOL, .i = t[0] == 't'};
		return true;
	}
	for (const char *p = t; *p; p++)
		if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' &&
		    *p <= 'Z') || (p > t && *p >= '0' && *p <= '9')))
			goto bad;
	Ty ty = ty_lookup(t);
	*v = ty != TY_ERR ? (Val){.ty = TY_DTYPE, .i = ty} :
		(Val){.ty = TY_WORD, .word = intern_cstr(s->ctx->strs, t)};
	return true;
bad:
	diag_error(s->ctx, sp, "-D %s=%s: the value is not a number, a "
		"boolean or a name", def->name, t);
	return false;
}

static void
decl_const(S *s, const Node *d)
{
	Res *r = declare(s, R_CONST, d);
	Define *def;

	attrs_allowed(s, d, (const char *const[]){NULL});
	if (d->b)
		diag_error(s->ctx, d->b->span, "a 'const' takes its type from "
			"its value; write 'const %s = ...;'", d->name);
	if (!r)
		return;
	if (!d->d) {
		diag_error(s->ctx, d->nspan, "'const %s' needs a value: "
			"'const %s = ...;'", d->name, d->name);
		return;
	}
	for (def = s->ctx->defines; def; def = def->next)
		if (def->name == d->name)
			break;
	if (def) {
		def->used = true;
		Val old;
		if (!define_val(s, def, &r->cval, d->d->span))
			return;
		/* the schedule's own value must still make sense */
		if (const_eval(s->ctx, s->k, d->d, &old) && old.ty !=
		    r->cval.ty && !(old.ty == TY_F64 && r->cval.ty == TY_I64)) {
			diag_error(s->ctx, d->d->span, "-D %s=%s gives %s, but "
				"'%s' is %s", def->name, def->value,
				val_kind(r->cval.ty), d->name, val_kind(old.ty));
			r->cval.ty = TY_ERR;
		} else if (old.ty == TY_F64 && r->cval.ty == TY_I64) {
			r->cval = (Val){.ty = TY_F64, .f = (double)r->cval.i};
		}
		return;
	}
	const_eval(s->ctx, s->k, d->d, &r->cval);
}

static void
decl_kernel(S *s, const Node *d)
{
	static const char *const ok[] = {"target", NULL};
	static const char *const tg[] = {"sm_90a", "sm_100a", NULL};

	attrs_allowed(s, d, ok);
	if (s->k->name) {
		diag_error(s->ctx, d->nspan, "a schedule declares one kernel");
		return;
	}
	s->k->name = d->name;
	s->k->span = d->nspan;
	if (!attr(d, "target")) {
		diag_error(s->ctx, d->nspan, "'kernel' needs 'target=sm_90a' "
			"or 'target=sm_100a'");
		return;
	}
	int t = attr_word(s, d, "target", tg, -1);
	if (t >= 0)
		s->k->target = t == 0 ? TGT_SM90A : TGT_SM100A;
	if (s->ctx->arch)  /* --arch overrides the schedule's target */
		s->k->target = (TargetId)s->ctx->arch;
}

static void
decl_param(S *s, const Node *d)
{
	Res *r = declare(s, R_PARAM, d);

	attrs_allowed(s, d, (const char *const[]){NULL});
	if (!r)
		return;
	if (!d->b || d->b->kids.n) {
		diag_error(s->ctx, d->nspan, "'param %s' needs a scalar type, "
			"e.g. 'param %s : i32;'", d->name, d->name);
		return;
	}
	r->ety = elem_type(s, d->b, true, false);
}

/* Names in runtime expressions must be params or consts. */
static void
runtime_names(S *s, const Node *e)
{
	if (!e)
		return;
	if (e->kind == N_NAME) {
		Res *r = kernel_find(s->k, e->name);
		if (!r)
			diag_error(s->ctx, e->span, "'%s' is not declared",
				e->name);
		else if (r->kind != R_PARAM && r->kind != R_CONST)
			diag_error(s->ctx, e->span, "'%s' is not a 'param' or "
				"a 'const'", e->name);
		return;
	}
	if (e->kind == N_CALL) {
		const char *f = e->a->kind == N_NAME ? e->a->name : "";
		if (strcmp(f, "cdiv") && strcmp(f, "min") && strcmp(f, "max") &&
		    strcmp(f, "sizeof"))
			diag_error(s->ctx, e->a->span, "'%s' is not available "
				"here; sizes use 'cdiv', 'min' and 'max'", f);
		for (int i = 0; i < e->kids.n; i++)
			runtime_names(s, e->kids.v[i]);
		return;
	}
	if (e->kind != N_BINARY && e->kind != N_UNARY && e->kind != N_TERNARY &&
	    e->kind != N_INT) {
		diag_error(s->ctx, e->span, "expected an integer expression "
			"over 'param' and 'const' names");
		return;
	}
	runtime_names(s, e->a);
	runtime_names(s, e->b);
	runtime_names(s, e->c);
}

static void
decl_global(S *s, const Node *d)
{
	Res *r = declare(s, R_GLOBAL, d);

	attrs_allowed(s, d, (const char *const[]){NULL});
	if (!r)
		return;
	if (!d->b || d->b->kids.n != 1) {
		diag_error(s->ctx, d->nspan, "'global %s' needs a type with "
			"one list of dimensions, e.g. 'bf16[M, N]'", d->name);
		return;
	}
	r->ety = elem_type(s, d->b, false, true);
	const Node *dims = d->b->kids.v[0];
	if (dims->kids.n > 5) {
		diag_error(s->ctx, dims->span, "a global tensor has at most 5 "
			"dimensions, found %d", dims->kids.n);
		return;
	}
	r->rank = dims->kids.n;
	for (int i = 0; i < r->rank; i++) {
		r->dims[i] = dims->kids.v[i];
		runtime_names(s, r->dims[i]);
	}
}

static Res *
want_res(S *s, const Node *e, ResKind kind, const char *what)
{
	Res *r;

	if (e->kind != N_NAME) {
		diag_error(s->ctx, e->span, "expected the name of %s", what);
		return NULL;
	}
	r = kernel_find(s->k, e->name);
	if (!r) {
		diag_error(s->ctx, e->span, "'%s' is not declared", e->name);
		return NULL;
	}
	if (r->kind != kind) {
		diag_error(s->ctx, e->span, "'%s' is not %s", e->name, what);
		diag_note(s->ctx, r->nspan, "'%s' declared here", e->name);
		return NULL;
	}
	return r;
}

static int
swizzle_of(S *s, const Node *d)
{
	int64_t sw = 0;

	if (attr(d, "swizzle") && attr_int(s, d, "swizzle", false, 0, 128,
	    &sw) && sw != 0 && sw != 32 && sw != 64 && sw != 128) {
		diag_error(s->ctx, attr(d, "swizzle")->a->span, "'swizzle' "
			"must be 0, 32, 64 or 128 (bytes), found %lld",
			(long long)sw);
		return 0;
	}
	return (int)sw;
}

static void
decl_tma(S *s, const Node *d)
{
	static const char *const ok[] = {"box", "swizzle", "oob", NULL};
	static const char *const oob[] = {"zero", "nan", NULL};
	Res *r = declare(s, R_TMA, d);
	const Node *box;

	attrs_allowed(s, d, ok);
	if (!r)
		return;
	if (!d->d) {
		diag_error(s->ctx, d->nspan, "'tma %s' needs the tensor it "
			"views: 'tma %s = X box=(...);'", d->name, d->name);
		return;
	}
	if (!(r->of = want_res(s, d->d, R_GLOBAL, "a 'global' tensor")))
		return;
	r->ety = r->of->ety;
	r->swizzle = swizzle_of(s, d);
	r->oob_nan = attr_word(s, d, "oob", oob, 0) == 1;
	if (!(box = attr(d, "box")) || !box->a) {
		diag_error(s->ctx, d->nspan, "'tma' needs 'box=(...)', one "
			"extent per dimension of '%s'", r->of->name);
		return;
	}
	const Node *b = box->a;
	int n = b->kind == N_TUPLE ? b->kids.n : 1;
	if (n != r->of->rank) {
		diag_error(s->ctx, b->span, "the box has %d extents but '%s' "
			"has %d dimensions", n, r->of->name, r->of->rank);
		diag_note(s->ctx, r->of->nspan, "'%s' declared here",
			r->of->name);
		return;
	}
	r->rank = n;
	for (int i = 0; i < n; i++) {
		const Node *e = b->kind == N_TUPLE ? b->kids.v[i] : b;
		want_int(s, e, "a box extent", 1, 256, &r->shape[i]);
	}
	int64_t inner = r->shape[n - 1] * ty_bytes(r->ety);
	if (inner % 16)
		diag_error(s->ctx, b->span, "the box's inner extent is %lld "
			"bytes; TMA needs a multiple of 16",
			(long long)inner);
	else if (r->swizzle && inner % r->swizzle)
		diag_error(s->ctx, b->span, "the box's inner extent (%lld "
			"bytes) must be a multiple of the %d-byte swizzle span",
			(long long)inner, r->swizzle);
}

static void
decl_cta(S *s, const Node *d)
{
	static const char *const ok[] = {"threads", "cluster", NULL};
	const Node *c = attr(d, "cluster");
	int64_t t = 0;

	attrs_allowed(s, d, ok);
	if (s->k->threads) {
		diag_error(s->ctx, d->nspan, "'cta' is given twice");
		return;
	}
	if (attr_int(s, d, "threads", true, 32, 1024, &t) && t % 32)
		diag_error(s->ctx, attr(d, "threads")->a->span, "'threads' "
			"must be a multiple of 32, found %lld", (long long)t);
	s->k->threads = (int)(t / 32 * 32);
	s->k->cluster[0] = s->k->cluster[1] = s->k->cluster[2] = 1;
	if (c && c->a) {
		int n = c->a->kind == N_TUPLE ? c->a->kids.n : 1;
		int64_t v, prod = 1;
		if (n > 3)
			diag_error(s->ctx, c->a->span, "'cluster' has at most "
				"3 extents");
		for (int i = 0; i < n && i < 3; i++) {
			const Node *e = c->a->kind == N_TUPLE ?
				c->a->kids.v[i] : c->a;
			if (want_int(s, e, "a cluster extent", 1, 16, &v)) {
				s->k->cluster[i] = (int)v;
				prod *= v;
			}
		}
		if (prod > 16)
			diag_error(s->ctx, c->a->span, "a cluster has at most "
				"16 CTAs, found %lld", (long long)prod);
	}
}

static void
decl_tiles(S *s, const Node *d)
{
	static const char *const ok[] = {"grid", "order", "group", NULL};
	static const char *const ord[] = {"single", "persistent", "lpt", NULL};
	const Node *g = attr(d, "grid"), *grp = attr(d, "group");

	attrs_allowed(s, d, ok);
	if (s->k->ntile_dims) {
		diag_error(s->ctx, d->nspan, "'tiles' is given twice");
		return;
	}
	s->k->tiles_span = d->nspan;
	int o = attr_word(s, d, "order", ord, 0);
	s->k->order = o < 0 ? ORD_SINGLE : (TileOrder)(o + 1);
	if (!g || !g->a) {
		diag_error(s->ctx, d->nspan, "'tiles' needs 'grid=(...)': the "
			"number of tiles along x, y and z");
		return;
	}
	int n = g->a->kind == N_TUPLE ? g->a->kids.n : 1;
	if (n > 3) {
		diag_error(s->ctx, g->a->span, "'grid' has at most 3 extents");
		n = 3;
	}
	for (int i = 0; i < n; i++) {
		s->k->tile_dims[i] = g->a->kind == N_TUPLE ? g->a->kids.v[i] :
			g->a;
		runtime_names(s, s->k->tile_dims[i]);
	}
	s->k->ntile_dims = n;
	if (grp && grp->a) {
		if (s->k->order == ORD_SINGLE)
			diag_error(s->ctx, grp->span, "'group' needs a persistent "
				"order ('order=persistent' or 'order=lpt'): with "
				"one tile per CTA the hardware picks the order");
		else if (n < 3)
			diag_error(s->ctx, grp->span, "'group' needs a 3-D grid: "
				"it groups the (x, y) planes and walks z within "
				"each group; this grid has %d extent%s", n,
				n == 1 ? "" : "s");
		runtime_names(s, grp->a);
		s->k->tile_group = grp->a;
	}
}

/* layout NAME = smem(...) | wgmma_acc(...) | wgmma_a(...) | tmem_rows(...)
 * | rows(L) */
static const Layout *
layout_expr(S *s, const Node *e)
{
	static const char *const kinds[] = {"smem", "wgmma_acc", "wgmma_a",
		"tmem_rows", "rows", NULL};
	Layout *l = NEW(&s->ctx->perm, Layout);
	int kind = -1;

	l->span = e->span;
	if (e->kind == N_NAME) {
		Res *r = want_res(s, e, R_LAYOUT, "a layout");
		return r ? r->cval.lay : NULL;
	}
	if (e->kind == N_CALL && e->a->kind == N_NAME)
		for (int i = 0; kinds[i]; i++)
			if (!strcmp(kinds[i], e->a->name))
				kind = i;
	if (kind < 0) {
		diag_error(s->ctx, e->span, "expected a layout: 'smem(...)', "
			"'wgmma_acc(n=...)', 'wgmma_a(n=...)', "
			"'tmem_rows(n=...)' or 'rows(L)'");
		return NULL;
	}
	l->kind = (LayoutKind)(kind + 1);
	l->m = kind == 3 ? 128 : 64;
	for (int i = 0; i < e->kids.n; i++) {
		const Node *a = e->kids.v[i];
		int64_t v;
		if (l->kind == LK_ROWS && a->kind != N_NAMEDARG) {
			l->parent = layout_expr(s, a);
			continue;
		}
		if (a->kind != N_NAMEDARG) {
			diag_error(s->ctx, a->span, "layout arguments are "
				"named, e.g. 'swizzle=128'");
			continue;
		}
		if (l->kind == LK_SMEM && !strcmp(a->name, "swizzle")) {
			if (want_int(s, a->a, "'swizzle'", 0, 128, &v) &&
			    v != 0 && v != 32 && v != 64 && v != 128)
				diag_error(s->ctx, a->a->span, "'swizzle' must be "
					"0, 32, 64 or 128 (bytes)");
			l->swizzle = (int)v;
		} else if (l->kind == LK_SMEM && !strcmp(a->name, "major")) {
			if (a->a->kind == N_NAME && (!strcmp(a->a->name, "K") ||
			    !strcmp(a->a->name, "MN")))
				l->mn_major = a->a->name[0] == 'M';
			else
				diag_error(s->ctx, a->a->span, "'major' must be "
					"'K' or 'MN'");
		} else if (l->kind != LK_SMEM && l->kind != LK_ROWS &&
		    (!strcmp(a->name, "n") || !strcmp(a->name, "m"))) {
			if (want_int(s, a->a, "a fragment extent", 8, 256, &v))
				*(a->name[0] == 'n' ? &l->n : &l->m) = (int)v;
		} else {
			diag_error(s->ctx, a->nspan, "'%s' takes no argument "
				"'%s'", kinds[kind], a->name);
		}
	}
	if (l->kind == LK_ROWS && !l->parent) {
		diag_error(s->ctx, e->span, "'rows' needs the layout whose "
			"rows it holds, e.g. 'rows(acc)'");
		return NULL;
	}
	bool sm90 = s->k->target == TGT_SM90A;
	if (sm90 && l->kind == LK_TMEM_ROWS)
		diag_error(s->ctx, e->span, "'tmem_rows' is a tensor-memory "
			"layout; sm_90a has no tensor memory");
	if (!sm90 && (l->kind == LK_WGMMA_ACC || l->kind == LK_WGMMA_A))
		diag_error(s->ctx, e->span, "'%s' is a wgmma layout; sm_100a "
			"has no wgmma (use 'tmem_rows')", kinds[kind]);
	if (l->kind == LK_WGMMA_ACC && (l->n == 0 || l->n % 8))
		diag_error(s->ctx, e->span, "'wgmma_acc' needs 'n=N' with N a "
			"multiple of 8 in 8..256");
	return l;
}

static void
decl_layout(S *s, const Node *d)
{
	Res *r = declare(s, R_LAYOUT, d);

	attrs_allowed(s, d, (const char *const[]){NULL});
	if (!r)
		return;
	if (!d->d) {
		diag_error(s->ctx, d->nspan, "'layout %s' needs a value, e.g. "
			"'= smem(swizzle=128, major=K)'", d->name);
		return;
	}
	Layout *l = (Layout *)layout_expr(s, d->d);
	if (l && !l->name) {
		l->name = d->name;
		r->cval = (Val){.ty = TY_LAYOUT, .lay = l};
	} else if (l) {
		r->cval = (Val){.ty = TY_LAYOUT, .lay = l};
	}
}


static void
decl_smem(S *s, const Node *d)
{
	static const char *const ok[] = {"layout", "swizzle", "major", "alias",
		NULL};
	Res *r = declare(s, R_SMEM, d);
	const Node *la = attr(d, "layout"), *al = attr(d, "alias");

	attrs_allowed(s, d, ok);
	if (!r)
		return;
	if (!d->b || d->b->kids.n < 1 || d->b->kids.n > 2) {
		diag_error(s->ctx, d->nspan, "'smem %s' needs a type such as "
			"'bf16[STAGES][R, C]' or 'f32[R, C]'", d->name);
		return;
	}
	r->ety = elem_type(s, d->b, false, true);
	r->stages = 1;
	const Node *shape = d->b->kids.v[d->b->kids.n - 1];
	if (d->b->kids.n == 2) {
		const Node *st = d->b->kids.v[0];
		int64_t v = 1;
		if (st->kids.n != 1)
			diag_error(s->ctx, st->span, "the stage count is one "
				"extent, e.g. '[STAGES]'");
		else if (want_int(s, st->kids.v[0], "the stage count", 1, 64,
		    &v))
			r->stages = (int)v;
	}
	if (shape->kids.n > 2) {
		diag_error(s->ctx, shape->span, "a shared-memory tile has 1 or "
			"2 dimensions, found %d", shape->kids.n);
		return;
	}
	r->rank = shape->kids.n;
	for (int i = 0; i < r->rank; i++)
		want_int(s, shape->kids.v[i], "a tile extent", 1, 1 << 16,
			&r->shape[i]);
	if (la && (attr(d, "swizzle") || attr(d, "major")))
		diag_error(s->ctx, la->span, "give either 'layout=' or "
			"'swizzle='/'major=', not both");
	if (la && la->a) {
		r->lay = layout_expr(s, la->a);
		if (r->lay && r->lay->kind != LK_SMEM) {
			diag_error(s->ctx, la->a->span, "a shared-memory buffer "
				"needs an 'smem(...)' layout");
			r->lay = NULL;
		}
	}
	if (!r->lay) {
		Layout *l = NEW(&s->ctx->perm, Layout);
		l->kind = LK_SMEM;
		l->span = d->nspan;
		l->swizzle = swizzle_of(s, d);
		const Node *mj = attr(d, "major");
		bool word = mj && mj->a && mj->a->kind == N_NAME;
		if (word && !strcmp(mj->a->name, "MN"))
			l->mn_major = true;
		else if (mj && !(word && !strcmp(mj->a->name, "K")))
			diag_error(s->ctx, mj->span, "'major' must be 'K' or "
				"'MN'");
		r->lay = l;
	}
	int64_t row = r->shape[r->rank - 1] * ty_bytes(r->ety);
	if (r->lay->swizzle && row % r->lay->swizzle)
		diag_error(s->ctx, shape->span, "rows of '%s' are %lld bytes; "
			"a %d-byte swizzle needs a multiple of %d", d->name,
			(long long)row, r->lay->swizzle, r->lay->swizzle);
	if (al && al->a && (r->alias = want_res(s, al->a, R_SMEM,
	    "a shared-memory buffer")) && r->alias->alias)
		diag_error(s->ctx, al->a->span, "'%s' is itself an alias; "
			"alias the buffer it overlays", r->alias->name);
}

static void
decl_tmem(S *s, const Node *d)
{
	static const char *const ok[] = {"col", "stride", "packed", "alias",
		NULL};
	Res *r = declare(s, R_TMEM, d);
	const Node *al = attr(d, "alias");
	int64_t v;

	attrs_allowed(s, d, ok);
	if (!r)
		return;
	if (s->k->target == TGT_SM90A) {
		diag_error(s->ctx, d->nspan, "tensor memory ('tmem') is not "
			"available on sm_90a");
		return;
	}
	if (!d->b || d->b->kids.n != 1 || d->b->kids.v[0]->kids.n != 2) {
		diag_error(s->ctx, d->nspan, "'tmem %s' needs a type such as "
			"'f32[128, 128]' (lanes, columns)", d->name);
		return;
	}
	r->ety = elem_type(s, d->b, false, true);
	r->rank = 2;
	const Node *sh = d->b->kids.v[0];
	want_int(s, sh->kids.v[0], "the lane count", 32, 128, &r->shape[0]);
	want_int(s, sh->kids.v[1], "the column count", 1, 512, &r->shape[1]);
	r->packed = attr(d, "packed") != NULL;
	if (r->packed && ty_bytes(r->ety) != 2)
		diag_error(s->ctx, attr(d, "packed")->span, "'packed' holds two "
			"16-bit values per column; '%s' is %s", d->name,
			ty_name(r->ety));
	r->ncols = r->packed ? (r->shape[1] + 1) / 2 : r->shape[1];
	if (attr_int(s, d, "col", true, 0, 511, &v))
		r->col = v;
	r->threads = r->ncols;  /* stride between array elements */
	if (attr(d, "stride") && attr_int(s, d, "stride", false, 1, 512, &v))
		r->threads = v;
	if (al && al->a)
		r->alias = want_res(s, al->a, R_TMEM, "a tensor-memory region");
}

static void
decl_mbar(S *s, const Node *d)
{
	static const char *const ok[] = {"count", "tx", NULL};
	Res *r = declare(s, R_MBAR, d);
	int64_t v;

	attrs_allowed(s, d, ok);
	if (!r)
		return;
	if (d->b)
		diag_error(s->ctx, d->b->span, "an 'mbar' has no type");
	r->mcount = 1;
	if (attr_int(s, d, "count", true, 1, (1 << 20) - 1, &v))
		r->mcount = v;
	if (attr(d, "tx") && attr_int(s, d, "tx", false, 0, (1 << 20) - 1,
	    &v))
		r->tx = v;
}

static void
decl_nbar(S *s, const Node *d)
{
	static const char *const ok[] = {"threads", NULL};
	Res *r = declare(s, R_NBAR, d);
	int64_t v;

	attrs_allowed(s, d, ok);
	if (!r)
		return;
	if (attr_int(s, d, "threads", true, 32, 1024, &v)) {
		if (v % 32)
			diag_error(s->ctx, attr(d, "threads")->a->span, "a named "
				"barrier counts whole warps: 'threads' must be a "
				"multiple of 32, found %lld", (long long)v);
		r->threads = v;
	}
}

/* A family index is a constant while its instance's attributes are
 * evaluated: a temporary const resource at the end of the list. */
static Res *
push_index(S *s, const char *name, int64_t i)
{
	Res *r = NEW(&s->ctx->perm, Res);

	r->kind = R_CONST;
	r->name = name;
	r->cval = (Val){.ty = TY_I64, .i = i};
	r->next = s->k->res;  /* searched first */
	s->k->res = r;
	return r;
}

static void
pop_index(S *s, Res *r)
{
	s->k->res = r->next;
}

static void
decl_partition(S *s, const Node *d)
{
	static const char *const ok[] = {"warps", "regs", NULL};
	const Node *w = attr(d, "warps");
	int64_t n = 1;

	attrs_allowed(s, d, ok);
	if (!declare(s, R_PART, d))
		return;
	if (d->c && !want_int(s, d->a, "the family size", 1, 32, &n))
		return;
	if (!d->c && d->a) {
		diag_error(s->ctx, d->a->span, "a partition family is written "
			"'%s[i < N]'", d->name);
		return;
	}
	if (!w || !w->a) {
		diag_error(s->ctx, d->nspan, "'partition' needs 'warps=A..B'");
		return;
	}
	for (int64_t i = 0; i < n; i++) {
		Res *ix = d->c ? push_index(s, d->c->name, i) : NULL;
		Part *p = NEW(&s->ctx->perm, Part);
		int64_t lo = 0, hi = 0, regs = 0;
		bool ok_w;

		p->name = d->name;
		p->index = d->c ? (int)i : -1;
		p->ivar = d->c ? d->c->name : NULL;
		p->span = d->span;
		p->nspan = d->nspan;
		p->decl = d;
		if (w->a->kind == N_RANGE && !w->a->c)
			ok_w = want_int(s, w->a->a, "a warp index", 0, 31, &lo)
				&& want_int(s, w->a->b, "a warp index", 0, 31,
				&hi);
		else
			ok_w = want_int(s, w->a, "a warp index", 0, 31, &lo) &&
				(hi = lo, true);
		if (ok_w && hi < lo) {
			diag_error(s->ctx, w->a->span, "the warp range %lld..%lld "
				"is empty", (long long)lo, (long long)hi);
			ok_w = false;
		}
		if (attr(d, "regs") && attr_int(s, d, "regs", false, 24, 256,
		    &regs) && regs % 8) {
			diag_error(s->ctx, attr(d, "regs")->a->span, "'regs' "
				"must be a multiple of 8 (setmaxnreg), found "
				"%lld", (long long)regs);
			regs = 0;
		}
		if (ix)
			pop_index(s, ix);
		if (!ok_w)
			continue;
		p->warp_lo = (int)lo;
		p->warp_hi = (int)hi;
		p->regs = (int)regs;
		if (s->k->parts_last)
			s->k->parts_last->next = p;
		else
			s->k->parts = p;
		s->k->parts_last = p;
		s->k->nparts++;
	}
}

/* verify P=(v, ...) ...: the values of integer params the verifier
 * explores (each combination is one shape class). */
static void
decl_verify(S *s, const Node *d)
{
	if (s->k->verify) {
		diag_error(s->ctx, d->nspan, "'verify' is given twice");
		return;
	}
	s->k->verify = d;
	for (int i = 0; i < d->attrs.n; i++) {
		const Node *a = d->attrs.v[i];
		Res *p = kernel_find(s->k, a->name);
		if (!p || p->kind != R_PARAM || !ty_isint(p->ety)) {
			diag_error(s->ctx, a->nspan, "'verify' gives values of "
				"integer params; '%s' is not one", a->name);
			continue;
		}
		if (!a->a) {
			diag_error(s->ctx, a->span, "write '%s=(v, ...)'",
				a->name);
			continue;
		}
		int n = a->a->kind == N_TUPLE ? a->a->kids.n : 1;
		if (n > 16)
			diag_error(s->ctx, a->a->span, "at most 16 values per "
				"param");
		for (int k = 0; k < n && k < 16; k++) {
			int64_t v;
			want_int(s, a->a->kind == N_TUPLE ? a->a->kids.v[k] :
				a->a, "a verified value", 0, 1 << 20, &v);
		}
	}
}

static void items(S *, const NodeList *);

static void
item(S *s, const Node *n)
{
	if (n->kind == N_SIF) {
		Val c;
		if (!const_eval(s->ctx, s->k, n->a, &c))
			return;
		if (c.ty != TY_BOOL) {
			diag_error(s->ctx, n->a->span, "'static if' needs a "
				"boolean constant, found %s", c.ty == TY_WORD ?
				"an unknown name" : ty_name(c.ty));
			return;
		}
		if (c.i)
			items(s, &n->b->kids);
		else if (n->c && n->c->kind == N_SIF)
			item(s, n->c);
		else if (n->c)
			items(s, &n->c->kids);
		return;
	}
	if (!s->k->name && n->op != DK_KERNEL && !s->no_kernel) {
		diag_error(s->ctx, n->nspan, "a schedule starts with 'kernel "
			"NAME target=...;'");
		s->no_kernel = true;
	}
	if (n->op != DK_PARTITION && n->kids.n) {
		diag_error(s->ctx, n->nspan, "only a 'partition' has a body; "
			"end '%s' with ';'", decl_names[n->op]);
		return;
	}
	switch (n->op) {
	case DK_KERNEL: decl_kernel(s, n); break;
	case DK_CONST: decl_const(s, n); break;
	case DK_PARAM: decl_param(s, n); break;
	case DK_GLOBAL: decl_global(s, n); break;
	case DK_TMA: decl_tma(s, n); break;
	case DK_CTA: decl_cta(s, n); break;
	case DK_TILES: decl_tiles(s, n); break;
	case DK_LAYOUT: decl_layout(s, n); break;
	case DK_SMEM: decl_smem(s, n); break;
	case DK_TMEM: decl_tmem(s, n); break;
	case DK_MBAR: decl_mbar(s, n); break;
	case DK_NBAR: decl_nbar(s, n); break;
	case DK_PARTITION: decl_partition(s, n); break;
	case DK_VERIFY: decl_verify(s, n); break;
	default: fg_bug("declaration kind %d", n->op);
	}
	if (n->op != DK_PARTITION && n->d && (n->op == DK_PARAM ||
	    n->op == DK_GLOBAL || n->op == DK_SMEM || n->op == DK_MBAR ||
	    n->op == DK_NBAR || n->op == DK_TMEM))
		diag_error(s->ctx, n->d->span, "'%s' takes no '= value'",
			decl_names[n->op]);
}

static void
items(S *s, const NodeList *l)
{
	for (int i = 0; i < l->n; i++)
		item(s, l->v[i]);
}

Kernel *
sema_kernel(Ctx *ctx, const Node *mod)
{
	S s = {.ctx = ctx, .k = NEW(&ctx->perm, Kernel)};
	Kernel *k = s.k;

	items(&s, &mod->kids);
	if (!k->name) {
		if (!s.no_kernel)
			diag_error(ctx, (Span){0, 0}, "the schedule is empty; it "
				"starts with 'kernel NAME target=sm_90a;'");
		return k;
	}
	for (Define *d = ctx->defines; d; d = d->next)
		if (!d->used)
			diag_plain(ctx, D_ERROR, "-D %s: the schedule has no "
				"'const %s'", d->name, d->name);
	if (!k->target)
		return k;
	if (!k->threads)
		diag_error(ctx, k->span, "kernel '%s' has no 'cta threads=N;'",
			k->name);
	if (!k->ntile_dims)
		diag_error(ctx, k->span, "kernel '%s' has no 'tiles "
			"grid=(...);'", k->name);
	if (!k->parts && !ctx->nerr)
		diag_error(ctx, k->span, "kernel '%s' has no partition",
			k->name);
	if (ctx->nerr == 0)
		sema_budgets(ctx, k);
	return k;
}
