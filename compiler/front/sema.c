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
#include "front/sema.h"

Res *
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
	if (r->name)
		kernel_bind(s->ctx, s->k, r);
	return r;
}

const Node *
attr(const Node *d, const char *name)
{
	for (int i = 0; i < d->attrs.n; i++)
		if (!strcmp(d->attrs.v[i]->name, name))
			return d->attrs.v[i];
	return NULL;
}

/* Report attributes the declaration does not take, and duplicates (each
 * repeat once, against the first: a map of the names seen, not a scan of
 * the earlier attributes, which was quadratic, issue #29). */
void
attrs_allowed(S *s, const Node *d, const char *const *ok)
{
	NameMap seen = {0};

	for (int i = 0; i < d->attrs.n; i++) {
		const Node *a = d->attrs.v[i], *first;
		bool found = false;

		for (const char *const *p = ok; *p; p++)
			found |= !strcmp(*p, a->name);
		first = namemap_get(&seen, a->name);
		if (first) {
			diag_error(s->ctx, a->nspan, "attribute '%s' is given "
				"twice", a->name);
			diag_note(s->ctx, first->nspan, "first given here");
		} else {
			namemap_put(&s->ctx->scratch, &seen, a->name, (void *)a);
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

bool
want_int(S *s, const Node *e, const char *what, int64_t lo, int64_t hi,
	int64_t *out)
{
	Val v;

	if (!const_eval(s->ctx, s->k, e, &v))
		return false;
	if (v.ty == TY_WORD) {
		kernel_undeclared(s->ctx, s->k, e->span, v.word, R_CONST);
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

bool
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
int
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

Ty
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
		ty_name(ty), data_ok && scalar_ok ? "'bf16', 'f16', 'f32', "
		"'i32', 'u32', 'i64' or 'u64'" : data_ok ?
		"'bf16', 'f16' or 'f32'" :
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
	if ((def = ctx_find_define(s->ctx, d->name))) {
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
	static const char *const tg[] = {"sm_90a", "sm_100a", "sm_80",
		"sm_120a", NULL};
	static const TargetId ids[] = {TGT_SM90A, TGT_SM100A, TGT_SM80,
		TGT_SM120A};

	attrs_allowed(s, d, ok);
	if (s->k->name) {
		diag_error(s->ctx, d->nspan, "a schedule declares one kernel");
		return;
	}
	s->k->name = d->name;
	s->k->span = d->nspan;
	if (!attr(d, "target")) {
		diag_error(s->ctx, d->nspan, "'kernel' needs 'target=sm_90a', "
			"'target=sm_100a', 'target=sm_80' or 'target=sm_120a'");
		return;
	}
	int t = attr_word(s, d, "target", tg, -1);
	if (t >= 0)
		s->k->target = ids[t];
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
void
runtime_names(S *s, const Node *e)
{
	if (!e)
		return;
	if (e->kind == N_NAME) {
		Res *r = kernel_find(s->k, e->name);
		if (!r) {
			Suggest sg;
			diag_suggest_init(&sg, e->name);
			kernel_suggest(s->k, &sg, R_PARAM);
			kernel_suggest(s->k, &sg, R_CONST);
			diag_undeclared(s->ctx, e->span, &sg);
		}
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
	if (e->kind == N_TERNARY) {
		/* the runtime evaluates sizes: a constant condition picks
		 * one operand here, and only that one is looked at */
		Val c;
		if (const_eval(s->ctx, s->k, e->a, &c))
			runtime_names(s, c.i ? e->b : e->c);
		return;
	}
	if ((e->kind == N_BINARY && !strchr("+-*/%", e->op)) ||
	    (e->kind == N_UNARY && e->op != '-')) {
		diag_error(s->ctx, e->span, "a size uses '+', '-', '*', '/', "
			"'%%', 'cdiv', 'min', 'max' and constant '?:' over "
			"'param' and 'const' names");
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

	attrs_allowed(s, d, (const char *const[]){"grad", "strided", NULL});
	if (!r)
		return;
	/* strided: ld/st and cp_async address it by the strides the caller
	 * passes (a hidden argument), not densely by its dims */
	r->strided = attr(d, "strided") != NULL;
	for (int i = 0; i < d->attrs.n; i++) {
		/* grad=DG: the gradient dscatter adds into, an f32 global of
		 * the same rank declared before (issue #22) */
		const Node *a = d->attrs.v[i];
		if (strcmp(a->name, "grad"))
			continue;
		if (!a->a) {
			diag_error(s->ctx, a->span, "write 'grad=DG', DG an f32 "
				"global of the same dimensions");
			continue;
		}
		Res *g = want_res(s, a->a, R_GLOBAL, "a 'global' tensor");
		if (g == r) {
			diag_error(s->ctx, a->a->span, "'%s' is not its own "
				"gradient; name another, f32 global", d->name);
			g = NULL;
		} else if (g && g->ety != TY_F32) {
			diag_error(s->ctx, a->a->span, "the gradient of '%s' is an "
				"'f32' global; '%s' holds '%s'", d->name, g->name,
				ty_name(g->ety));
			g = NULL;
		}
		r->grad = g;
	}
	if (!d->b || d->b->kids.n != 1) {
		diag_error(s->ctx, d->nspan, "'global %s' needs a type with "
			"one list of dimensions, e.g. 'bf16[M, N]'", d->name);
		return;
	}
	/* integer elements too: indices a kernel loads (G[i]) or stores */
	r->ety = elem_type(s, d->b, true, true);
	if (r->ety == TY_BOOL) {
		diag_error(s->ctx, d->b->nspan, "type 'bool' is not allowed "
			"here; use 'bf16', 'f16', 'f32', 'i32', 'u32', 'i64' or "
			"'u64'");
		r->ety = TY_ERR;
	}
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
	if (r->grad && r->grad->rank != r->rank) {
		diag_error(s->ctx, d->nspan, "'%s' has %d dimensions but its "
			"gradient '%s' has %d", d->name, r->rank, r->grad->name,
			r->grad->rank);
		r->grad = NULL;
	}
}

Res *
want_res(S *s, const Node *e, ResKind kind, const char *what)
{
	Res *r;

	if (e->kind != N_NAME) {
		diag_error(s->ctx, e->span, "expected the name of %s", what);
		return NULL;
	}
	r = kernel_find(s->k, e->name);
	if (!r) {
		kernel_undeclared(s->ctx, s->k, e->span, e->name, (int)kind);
		return NULL;
	}
	if (r->kind != kind) {
		diag_error(s->ctx, e->span, "'%s' is not %s", e->name, what);
		diag_note(s->ctx, r->nspan, "'%s' declared here", e->name);
		return NULL;
	}
	return r;
}

static void items(S *, const NodeList *);

static void
item(S *s, const Node *n)
{
	if (n->kind == N_SASSERT) {  /* a condition on the constants */
		Val c;
		if (!const_eval(s->ctx, s->k, n->a, &c))
			return;
		if (c.ty != TY_BOOL)
			diag_error(s->ctx, n->a->span, "'static assert' needs a "
				"boolean constant, found %s", c.ty == TY_WORD ?
				"an unknown name" : ty_name(c.ty));
		else if (!c.i)
			diag_error(s->ctx, n->a->span, "static assertion failed: "
				"the constants (with their -D values) do not meet "
				"this condition");
		return;
	}
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
	if (n->op != DK_PARTITION && n->op != DK_MOD && n->kids.n) {
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
	case DK_MOD: decl_mod(s, n); break;
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

	mods_collect(&s, ctx->mods);
	items(&s, &mod->kids);
	if (!k->name) {
		if (!s.no_kernel)
			diag_error(ctx, (Span){0, 0}, "the schedule is empty; it "
				"starts with 'kernel NAME target=sm_90a;'");
		return k;
	}
	/* the --mod files' params and globals join the kernel's, after
	 * them; their mods have replaced the schedule's */
	for (int i = 0; ctx->mods && i < ctx->mods->kids.n; i++) {
		const Node *n = ctx->mods->kids.v[i];
		if (n->kind == N_DECL && (n->op == DK_PARAM ||
		    n->op == DK_GLOBAL))
			item(&s, n);
	}
	mods_private(&s, ctx->mods);
	mods_unused(&s, ctx->mods);
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
