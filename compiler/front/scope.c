/* scope.c: the kernel's declaration scope -- every declared resource by
 * its interned name.  Used by sema (declarations) and const eval (names
 * in constant expressions).  A NameMap (base.h): lookups and bindings
 * take constant time, so declarations scale linearly (issue #29).  A
 * binding that hides another (a partition family's index) remembers it
 * in Res.shadow, and kernel_unbind shows it again. */
#include "base/base.h"
#include "front/front.h"

Res *
kernel_find(const Kernel *k, const char *name)
{
	return namemap_get(&k->scope, name);
}

void
kernel_bind(Ctx *ctx, Kernel *k, Res *r)
{
	r->shadow = namemap_put(&ctx->perm, &k->scope, r->name, r);
}

void
kernel_unbind(Ctx *ctx, Kernel *k, Res *r)
{
	namemap_put(&ctx->perm, &k->scope, r->name, r->shadow);
}

/* Offer the declared names of kind (0: any) to a "did you mean". */
void
kernel_suggest(const Kernel *k, Suggest *s, int kind)
{
	for (const Res *r = k ? k->res : NULL; r; r = r->next)
		if (!kind || (int)r->kind == kind)
			diag_suggest_add(s, r->name);
}

/* "'NAME' is not declared", with the closest declared name of kind
 * (0: any) when one is close. */
void
kernel_undeclared(Ctx *c, const Kernel *k, Span sp, const char *name,
	int kind)
{
	Suggest s;

	diag_suggest_init(&s, name);
	kernel_suggest(k, &s, kind);
	diag_undeclared(c, sp, &s);
}
