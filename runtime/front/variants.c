/* variants.c: the fronts' kernels, each compiled once per context.
 *
 * The row kernels, fg_linear and the decode (rows_run.c, linear.c,
 * decode_run.c) each name a shipped schedule and its -D list; the first
 * call compiles it (front_build) and the kernel stays in ctx->variants,
 * keyed by the compute capability, the file and the definitions in
 * their order, until fg_ctx_destroy.  Compiles run under ctx->attn_mu,
 * so two threads asking for one variant compile it once; a failed
 * compile is not kept, and the next call tries again.  (Attention keeps
 * its own list, keyed by its variant's fields and mods: attention.c.) */
#include <stdio.h>
#include <string.h>

#include "rt_front.h"

struct FrontVariant {
	int cc;
	char *key;              /* "file -D A=1 -D B=2" */
	fg_kernel *k;
	FrontVariant *next;
};

enum { KEYLEN = 512 };

fg_status
front_kernel(fg_ctx *c, const char *fn, int cc, const char *file,
	const char *const *defs, int nd, fg_kernel **out)
{
	char key[KEYLEN];
	size_t at = (size_t)snprintf(key, sizeof key, "%s", file);
	FrontVariant *v;
	fg_kernel *k = NULL;
	fg_status st = FG_OK;

	for (int i = 0; i < nd && at < sizeof key; i++)
		at += (size_t)snprintf(key + at, sizeof key - at, " -D %s",
			defs[i]);
	if (at >= sizeof key)
		return rt_err(c, FG_ERR_INVALID, "%s: the -D list of %s is "
			"longer than %d bytes", fn, file, KEYLEN - 1);
	pthread_mutex_lock(&c->attn_mu);
	for (v = c->variants; v; v = v->next)
		if (v->cc == cc && !strcmp(v->key, key))
			break;
	if (!v && !(st = front_build(c, fn, cc, file, defs, nd, NULL, &k))) {
		char *s = rt_strdup(c, key);
		if (s && (v = rt_alloc(c, sizeof *v))) {
			*v = (FrontVariant){.cc = cc, .key = s, .k = k,
				.next = c->variants};
			c->variants = v;
		} else {
			rt_strfree(c, s);
			fg_kernel_free(k);
			st = rt_err(c, FG_ERR_NOMEM, "out of memory");
		}
	}
	pthread_mutex_unlock(&c->attn_mu);
	if (v)
		*out = v->k;
	return st;
}

void
front_free(fg_ctx *c)
{
	FrontVariant *v, *next;

	for (v = c->variants; v; v = next) {
		next = v->next;
		fg_kernel_free(v->k);
		rt_strfree(c, v->key);
		rt_free(c, v, sizeof *v);
	}
	c->variants = NULL;
}
