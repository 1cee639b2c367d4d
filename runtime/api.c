/* api.c: the runtime's top layer: the context's creation from the
 * caller's options and its teardown, which calls down into every layer's
 * free function (the helpers it uses are in base/rt.c). */
#include <stdlib.h>
#include <string.h>

#include "rt_base.h"
#include "rt_driver.h"
#include "rt_jit.h"
#include "rt_front.h"

const char *
fg_version(void)
{
	return FAGEN_VERSION;
}

/* fg_options.sim, else $FAGEN_SIM, as fg_ctx.sim; -2 for an option
 * value it does not know (an invalid option), -1 for such a variable
 * (an error with a message once the driver is needed). */
static int
sim_target(const char *opt)
{
	const char *s = opt ? opt : getenv("FAGEN_SIM");

	if (!s || !s[0] || !strcmp(s, "0"))
		return 0;
	if (!strcmp(s, "1") || !strcmp(s, "sm_90a"))
		return 90;
	if (!strcmp(s, "sm_100a"))
		return 100;
	if (!strcmp(s, "sm_120a"))
		return 120;
	return opt ? -2 : -1;
}

/* fg_options.target, else $FAGEN_TARGET, as fg_ctx.target (80, 90, 100
 * or 120; 0: the device's own); -2 for an option value it does not know,
 * -1 for such a variable (an error once the driver is needed). */
static int
pick_target(const char *opt)
{
	const char *s = opt ? opt : getenv("FAGEN_TARGET");

	if (!s || !s[0])
		return 0;
	if (!strcmp(s, "sm_80"))
		return 80;
	if (!strcmp(s, "sm_90a"))
		return 90;
	if (!strcmp(s, "sm_100a"))
		return 100;
	if (!strcmp(s, "sm_120a"))
		return 120;
	return opt ? -2 : -1;
}

static void *
default_alloc(void *ud, void *p, size_t osize, size_t nsize)
{
	(void)ud;
	(void)osize;
	if (nsize == 0) {
		free(p);
		return NULL;
	}
	return realloc(p, nsize);
}

fg_status
fg_ctx_create(fg_ctx **out, const fg_options *opts)
{
	static const fg_options defaults;
	const fg_options *o = opts ? opts : &defaults;
	fg_alloc alloc = o->alloc ? o->alloc : default_alloc;
	fg_ctx *c;

	if (!out)
		return FG_ERR_INVALID;
	*out = NULL;
	if (o->log_level < FG_LOG_OFF || o->log_level > FG_LOG_DEBUG ||
	    o->device < 0 || o->jit > (FG_JIT_NVJITLINK | FG_JIT_PTXAS |
	    FG_JIT_DRIVER) || sim_target(o->sim) == -2 ||
	    pick_target(o->target) == -2)
		return FG_ERR_INVALID;
	if (!(c = alloc(o->alloc_ud, NULL, 0, sizeof *c)))
		return FG_ERR_NOMEM;
	memset(c, 0, sizeof *c);
	c->alloc = alloc;
	c->alloc_ud = o->alloc_ud;
	c->malloc_alloc = !o->alloc;
	c->log = o->log;
	c->log_ud = o->log_ud;
	c->log_level = o->log_level;
	c->device = o->device;
	c->sim = sim_target(o->sim);
	c->target = pick_target(o->target);
	const char *np = getenv("FAGEN_NO_PDL");
	c->no_pdl = np && *np && strcmp(np, "0");
	c->jit = o->jit ? o->jit : FG_JIT_NVJITLINK | FG_JIT_PTXAS |
		FG_JIT_DRIVER;
	atomic_init(&c->disk_ok, true);
	pthread_mutex_init(&c->mu, NULL);
	pthread_mutex_init(&c->attn_mu, NULL);
	bool ok = true;
	if (o->driver_lib)
		ok = (c->driver_lib = rt_strdup(c, o->driver_lib)) != NULL;
	if (ok && c->sim < 0)
		ok = (c->sim_bad = rt_strdup(c, getenv("FAGEN_SIM"))) != NULL;
	if (ok && c->target < 0)
		ok = (c->target_bad = rt_strdup(c, getenv("FAGEN_TARGET"))) !=
			NULL;
	if (ok && o->schedule_dir)
		ok = (c->schedule_dir = rt_strdup(c, o->schedule_dir)) != NULL;
	if (ok && o->cache_dir && o->cache_dir[0])
		ok = (c->cache_dir = rt_strdup(c, o->cache_dir)) != NULL;
	else if (ok && !o->cache_dir)
		c->cache_dir = cache_default_dir(c);  /* NULL: memory only */
	if (!ok) {
		fg_ctx_destroy(c);
		return FG_ERR_NOMEM;
	}
	rt_log(c, FG_LOG_INFO, "fagen %s: cache %s%s", FAGEN_VERSION,
		c->cache_dir ? c->cache_dir : "in memory only", c->sim > 0 ?
		"; kernels run on the simulator (FAGEN_SIM)" : "");
	*out = c;
	return FG_OK;
}

void
fg_ctx_destroy(fg_ctx *c)
{
	if (!c)
		return;
	front_free(c);        /* their modules need the driver */
	attn_free(c);
	ref_free(c);
	cuda_free(c);
	jit_free(c);
	cache_free(c);
	rt_errs_free(c);
	rt_strfree(c, c->driver_lib);
	rt_strfree(c, c->cache_dir);
	rt_strfree(c, c->schedule_dir);
	rt_strfree(c, c->sim_bad);
	rt_strfree(c, c->target_bad);
	pthread_mutex_destroy(&c->attn_mu);
	pthread_mutex_destroy(&c->mu);
	c->alloc(c->alloc_ud, c, sizeof *c, 0);
}

fg_status
fg_ctx_open(fg_ctx *c)
{
	Driver *d;
	fg_status st;

	if (!c)
		return FG_ERR_INVALID;
	if ((st = cuda_get(c, &d)) == FG_OK)
		rt_clear(c);
	return st;
}
