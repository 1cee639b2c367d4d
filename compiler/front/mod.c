/* mod.c: 'mod' declarations -- named, pure expression functions that
 * partition bodies call, inlined at each call by sirgen (sircall.c) --
 * and the items of --mod files around the schedule's: a file's mod
 * replaces the schedule's mod of its name (the schedule's is the
 * default, as a 'const' is for -D), a file's param and global are added
 * to the kernel.  Also the names of the built-in functions, which no mod
 * may take.  Called by sema.c; bodies are checked where they are called,
 * since a mod's types are its arguments' (a mod is polymorphic). */
#include <string.h>

#include "base/base.h"
#include "front/front.h"
#include "front/sema.h"

/* sircall.c's sg_call lowers exactly these: a name here that it does not
 * lower is an internal error there, and a call it lowers that is not
 * here is an unknown function, so the two lists cannot drift apart. */
const char *const builtin_names[] = {
	"abs", "all_eq", "cdiv", "colid", "colsum", "convert", "cvt", "dmod",
	"exp2",
	"log2",
	"mask_below", "mask_causal", "mask_cols", "max", "min", "rcp",
	"rowid", "rowmax", "rowsum", "rsqrt", "select", "sizeof", "sqrt",
	"tanh", NULL,
};

bool
builtin_known(const char *name)
{
	for (const char *const *p = builtin_names; *p; p++)
		if (!strcmp(*p, name))
			return true;
	return false;
}

typedef struct FileMod {
	const Node *d;
	bool used;        /* it replaced a mod of the schedule */
} FileMod;

/* The name and the parameters: not a built-in's name, at most
 * MAXMODPARAMS parameters, each named once. */
static bool
head_ok(S *s, const Node *d)
{
	NameMap seen = {0};
	bool ok = true;

	if (builtin_known(d->name)) {
		diag_error(s->ctx, d->nspan, "'%s' is a built-in function; a "
			"mod needs another name", d->name);
		ok = false;
	}
	if (d->kids.n > MAXMODPARAMS) {
		diag_error(s->ctx, d->kids.v[MAXMODPARAMS]->span, "a mod takes "
			"at most %d parameters, found %d", MAXMODPARAMS,
			d->kids.n);
		return false;
	}
	for (int i = 0; i < d->kids.n; i++) {
		const Node *p = d->kids.v[i], *first;
		if ((first = namemap_get(&seen, p->name))) {
			diag_error(s->ctx, p->span, "parameter '%s' is given "
				"twice", p->name);
			diag_note(s->ctx, first->span, "first given here");
			ok = false;
		}
		namemap_put(&s->ctx->scratch, &seen, p->name, (void *)p);
	}
	return ok;
}

/* A --mod file holds mods, params and globals only. */
static bool
file_item_ok(S *s, const Node *n)
{
	bool decl = n->kind == N_DECL;

	if (decl && (n->op == DK_MOD || n->op == DK_PARAM ||
	    n->op == DK_GLOBAL))
		return true;
	/* the keyword and the name, or 'static' */
	Span sp = {n->span.lo, decl ? n->nspan.hi : n->span.lo + 6};
	diag_error(s->ctx, sp, "a --mod file holds 'mod', 'param' and "
		"'global' declarations, found '%s'", decl ? decl_names[n->op] :
		"static if");
	return false;
}

/* The files' mods are kept by name for decl_mod to find. */
void
mods_collect(S *s, const Node *files)
{
	for (int i = 0; files && i < files->kids.n; i++) {
		const Node *n = files->kids.v[i];
		FileMod *old, *fm;
		if (!file_item_ok(s, n) || n->op != DK_MOD || !head_ok(s, n))
			continue;
		if ((old = namemap_get(&s->over, n->name))) {
			diag_error(s->ctx, n->nspan, "'%s' is already declared",
				n->name);
			diag_note(s->ctx, old->d->nspan, "previous declaration "
				"of '%s'", n->name);
			continue;
		}
		fm = NEW(&s->ctx->scratch, FileMod);
		fm->d = n;
		namemap_put(&s->ctx->scratch, &s->over, n->name, fm);
	}
}

void
decl_mod(S *s, const Node *d)
{
	FileMod *fm = namemap_get(&s->over, d->name);
	Res *r;

	if (fm)
		fm->used = true;
	if (!head_ok(s, d) || !(r = declare(s, R_MOD, d)) || !fm)
		return;
	if (fm->d->kids.n != d->kids.n) {
		diag_error(s->ctx, fm->d->nspan, "--mod: '%s' takes %d "
			"parameter%s here, but the schedule's takes %d",
			d->name, fm->d->kids.n, fm->d->kids.n == 1 ? "" : "s",
			d->kids.n);
		diag_note(s->ctx, d->nspan, "the schedule's '%s' declared here",
			d->name);
		return;
	}
	r->decl = fm->d;
}

/* A file's mod whose name starts with '_' and that replaces nothing is
 * the file's own helper (fagen.flex_attention's tracer names a shared
 * subexpression so): it joins the kernel's mods. */
void
mods_private(S *s, const Node *files)
{
	for (int i = 0; files && i < files->kids.n; i++) {
		const Node *n = files->kids.v[i];
		FileMod *fm = n->kind == N_DECL && n->op == DK_MOD ?
			namemap_get(&s->over, n->name) : NULL;
		if (!fm || fm->d != n || fm->used || n->name[0] != '_')
			continue;
		fm->used = true;
		declare(s, R_MOD, n);
	}
}

/* A file's mod that replaced nothing: a misspelt hook, most likely. */
void
mods_unused(S *s, const Node *files)
{
	for (int i = 0; files && i < files->kids.n; i++) {
		const Node *n = files->kids.v[i];
		FileMod *fm = n->kind == N_DECL && n->op == DK_MOD ?
			namemap_get(&s->over, n->name) : NULL;
		if (!fm || fm->d != n || fm->used)
			continue;
		Suggest sg;
		Buf b;
		buf_init(&b, &s->ctx->scratch);
		diag_suggest_init(&sg, n->name);
		for (const Res *r = s->k->res; r; r = r->next)
			if (r->kind == R_MOD) {
				buf_printf(&b, "%s%s", b.len ? ", " : "",
					r->name);
				diag_suggest_add(&sg, r->name);
			}
		if (!b.len)
			diag_error(s->ctx, n->nspan, "--mod: '%s' is not a mod "
				"of kernel '%s', which declares none", n->name,
				s->k->name);
		else if (sg.best)
			diag_error(s->ctx, n->nspan, "--mod: '%s' is not a mod "
				"of kernel '%s'; its mods: %s; did you mean "
				"'%s'?", n->name, s->k->name, b.p, sg.best);
		else
			diag_error(s->ctx, n->nspan, "--mod: '%s' is not a mod "
				"of kernel '%s'; its mods: %s", n->name,
				s->k->name, b.p);
	}
}
