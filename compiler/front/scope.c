/* scope.c: the kernel's declaration scope -- every declared resource by
 * its interned name.  Used by sema (declarations) and const eval (names
 * in constant expressions). */
#include "base/base.h"
#include "front/front.h"

Res *
kernel_find(const Kernel *k, const char *name)
{
	for (Res *r = k->res; r; r = r->next)
		if (r->name == name)
			return r;
	return NULL;
}
