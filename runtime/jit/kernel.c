/* kernel.c: kernels from PTX, their machine code and their modules.
 *
 * fg_kernel_create reads the PTX's metadata and touches no GPU.
 * fg_kernel_assemble obtains a cubin: the memory cache, the disk cache,
 * else an assembler (jit.c), whose result is cached.  fg_kernel_load puts
 * it on the device, or hands the PTX to the driver's JIT when there is no
 * assembler, or to the simulator (driver/sim.c) in simulator mode, which
 * assembles and caches nothing.  Assembly and loading happen once per
 * kernel, under the kernel's mutex; afterwards the kernel is only read,
 * so launches from several threads need no lock. */
#include <stdio.h>
#include <string.h>

#include "rt_jit.h"

/* The entry point's setjmp; nothing is changed after it. */
static fg_status
create_jmp(fg_ctx *c, const char *ptx, size_t len, fg_kernel *k)
{
	char err[512];
	jmp_buf oom;

	arena_init(&k->arena, c->alloc, c->alloc_ud, &oom);
	if (setjmp(oom)) {
		arena_free(&k->arena);
		return rt_err(c, FG_ERR_NOMEM, "out of memory");
	}
	k->ptx = arena_strndup(&k->arena, ptx, len);
	k->ptxlen = len;
	if (!meta_parse(&k->arena, k->ptx, len, &k->meta, err, sizeof err)) {
		arena_free(&k->arena);
		return rt_err(c, FG_ERR_INVALID, "%s", err);
	}
	k->arena.oom = NULL;  /* nothing is allocated from it any more */
	return FG_OK;
}

fg_status
fg_kernel_create(fg_ctx *c, const char *ptx, size_t len, fg_kernel **out)
{
	fg_kernel *k;
	fg_status st;

	if (!c || !out || !ptx)
		return c ? rt_err(c, FG_ERR_INVALID, "%s is NULL", out ?
			"ptx" : "out") : FG_ERR_INVALID;
	*out = NULL;
	if (!(k = rt_alloc(c, sizeof *k)))
		return rt_err(c, FG_ERR_NOMEM, "out of memory");
	memset(k, 0, sizeof *k);
	k->ctx = c;
	if ((st = create_jmp(c, ptx, len ? len : strlen(ptx), k))) {
		rt_free(c, k, sizeof *k);
		return st;
	}
	pthread_mutex_init(&k->mu, NULL);
	atomic_init(&k->loaded, false);
	atomic_init(&k->max_ctas, 0);
	*out = k;
	rt_clear(c);
	return FG_OK;
}

void
fg_kernel_free(fg_kernel *k)
{
	fg_ctx *c;
	Driver *d;

	if (!k)
		return;
	c = k->ctx;
	if (atomic_load(&k->loaded) && (d = c->drv)) {
		CUcontext prev;
		d->cu.CtxPushCurrent(d->pctx);
		d->cu.ModuleUnload(k->mod);
		d->cu.CtxPopCurrent(&prev);
	}
	rt_free(c, k->cubin, k->cubinlen);
	pthread_mutex_destroy(&k->mu);
	arena_free(&k->arena);
	rt_free(c, k, sizeof *k);
}

/* With k->mu held. */
static fg_status
assemble(fg_kernel *k)
{
	fg_ctx *c = k->ctx;
	const char *arch = k->meta.target, *tool;
	char opts[64];
	uint8_t key[32];
	int which, used;
	fg_status st;
	double t0 = rt_ms();

	if (k->cubin || k->driver_jit)
		return FG_OK;
	if (c->sim > 0) {
		/* the simulator reads the PTX itself: no assembler, and no
		 * cubin to cache */
		k->driver_jit = true;
		k->source = FG_CODE_SIM;
		return FG_OK;
	}
	if ((st = jit_tool(c, k->ptx, &which, &tool)))
		return st;
	if (which == FG_JIT_DRIVER) {
		/* a warning when an assembler was allowed but is missing:
		 * the driver's JIT is slower, uncached, and may not know
		 * the PTX's version */
		rt_log(c, c->jit & (FG_JIT_NVJITLINK | FG_JIT_PTXAS) ?
			FG_LOG_WARN : FG_LOG_INFO, "kernel %s: no PTX "
			"assembler; the driver's JIT will compile it for %s "
			"(not cached)", k->meta.name, arch);
		k->driver_jit = true;
		k->source = FG_CODE_DRIVER;
		return FG_OK;
	}
	snprintf(opts, sizeof opts, "-arch=%s", arch);
	cache_key(key, k->ptx, k->ptxlen, arch, opts, tool);
	if (cache_get(c, key, &k->cubin, &k->cubinlen, &k->source) ==
	    CACHE_HIT) {
		k->assemble_ms = rt_ms() - t0;
		return FG_OK;
	}
	if ((st = jit_run(c, which, k->ptx, k->ptxlen, arch, &k->cubin,
	    &k->cubinlen, &used)))
		return st;
	k->source = used == FG_JIT_NVJITLINK ? FG_CODE_NVJITLINK :
		FG_CODE_PTXAS;
	cache_put(c, key, k->cubin, k->cubinlen);
	k->assemble_ms = rt_ms() - t0;
	rt_log(c, FG_LOG_INFO, "kernel %s: assembled for %s by %s in %.1f ms",
		k->meta.name, arch, used == FG_JIT_NVJITLINK ? "nvJitLink" :
		"ptxas", k->assemble_ms);
	return FG_OK;
}

fg_status
fg_kernel_assemble(fg_kernel *k)
{
	fg_status st;

	if (!k)
		return FG_ERR_INVALID;
	pthread_mutex_lock(&k->mu);
	st = assemble(k);
	pthread_mutex_unlock(&k->mu);
	if (!st)
		rt_clear(k->ctx);
	return st;
}

/* The kernel's target against the device: sm_90a code runs on compute
 * capability 9.0 only, sm_100a on 10.0, sm_120a on 12.0; sm_80 PTX on
 * any device from 8.0 on (the driver JIT-compiles it: PTX is forward
 * compatible). */
static fg_status
fits(fg_kernel *k, const Driver *d)
{
	const Meta *m = &k->meta;
	int want = m->tgt == TGT_SM90A ? 90 : m->tgt == TGT_SM80 ? 80 :
		m->tgt == TGT_SM120A ? 120 : 100;
	int cc = d->cc_major * 10 + d->cc_minor;

	if (m->tgt == TGT_SM80 ? cc < want : cc != want)
		return rt_err(k->ctx, FG_ERR_UNSUPPORTED, "kernel '%s' is "
			"built for %s, but device %d (%s) is sm_%d%d", m->name,
			m->target, k->ctx->device, d->name, d->cc_major,
			d->cc_minor);
	if (m->smem > d->smem_optin)
		return rt_err(k->ctx, FG_ERR_UNSUPPORTED, "kernel '%s' needs "
			"%lld bytes of shared memory; %s allows %d per block",
			m->name, (long long)m->smem, d->name, d->smem_optin);
	return FG_OK;
}

/* cuModuleLoadDataEx on the PTX, with the driver JIT's error log. */
static fg_status
driver_jit(fg_kernel *k, const Driver *d)
{
	enum { LOG = 1 << 14 };
	fg_ctx *c = k->ctx;
	char *log = rt_alloc(c, LOG);
	CUjit_option o[] = {CU_JIT_ERROR_LOG_BUFFER,
		CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
	void *v[] = {log, (void *)(uintptr_t)LOG};
	CUresult r;

	if (!log)
		return rt_err(c, FG_ERR_NOMEM, "out of memory");
	log[0] = '\0';
	r = d->cu.ModuleLoadDataEx(&k->mod, k->ptx, 2, o, v);
	fg_status st = !r ? FG_OK : c->sim > 0 ? rt_err(c,
		FG_ERR_UNSUPPORTED, "the simulator (FAGEN_SIM) cannot run "
		"kernel '%s': %s; run it on a GPU", k->meta.name, log) :
		rt_err(c, FG_ERR_JIT, "the driver's JIT rejected kernel '%s' "
		"(error %d):\n%s", k->meta.name, (int)r, log);
	rt_free(c, log, LOG);
	return st;
}

/* A cluster of several CTAs: how many fit the device at once
 * (cuOccupancyMaxActiveClusters), and a clear error when none does.
 * Clusters above 8 CTAs need the non-portable attribute. */
static fg_status
cluster_fit(fg_kernel *k, const Driver *d)
{
	const Meta *m = &k->meta;
	fg_ctx *c = k->ctx;
	int n = m->cluster[0] * m->cluster[1] * m->cluster[2];
	fg_status st;

	k->max_clusters = 0;
	if (n == 1)
		return FG_OK;
	if (n > 8 && (st = cuda_check(c, d, d->cu.FuncSetAttribute(k->fn,
	    CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
	    "cuFuncSetAttribute(non-portable cluster size)")))
		return st;
	CUlaunchAttribute attr = {.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION};
	attr.value.clusterDim.x = (unsigned)m->cluster[0];
	attr.value.clusterDim.y = (unsigned)m->cluster[1];
	attr.value.clusterDim.z = (unsigned)m->cluster[2];
	CUlaunchConfig cfg = {
		.gridDimX = (unsigned)m->cluster[0],
		.gridDimY = (unsigned)m->cluster[1],
		.gridDimZ = (unsigned)m->cluster[2],
		.blockDimX = (unsigned)m->threads, .blockDimY = 1,
		.blockDimZ = 1, .sharedMemBytes = (unsigned)m->smem,
		.attrs = &attr, .numAttrs = 1,
	};
	if ((st = cuda_check(c, d, d->cu.OccupancyMaxActiveClusters(
	    &k->max_clusters, k->fn, &cfg), "cuOccupancyMaxActiveClusters")))
		return st;
	if (k->max_clusters < 1)
		return rt_err(c, FG_ERR_UNSUPPORTED, "kernel '%s': a cluster "
			"of %d CTAs (%d x %d x %d) of %d threads and %lld bytes "
			"of shared memory each does not fit on device %d (%s): "
			"cuOccupancyMaxActiveClusters found room for none",
			m->name, n, m->cluster[0], m->cluster[1], m->cluster[2],
			m->threads, (long long)m->smem, c->device, d->name);
	return FG_OK;
}

/* With k->mu held and the primary context current. */
static fg_status
load_module(fg_kernel *k, const Driver *d)
{
	fg_ctx *c = k->ctx;
	CUresult r;
	fg_status st;

	if (k->cubin && (r = d->cu.ModuleLoadDataEx(&k->mod, k->cubin, 0,
	    NULL, NULL))) {
		/* a cubin the driver does not take (an assembler newer than
		 * the driver): its JIT may still manage the PTX */
		if (!(c->jit & FG_JIT_DRIVER))
			return cuda_check(c, d, r, "cuModuleLoadData(cubin)");
		rt_log(c, FG_LOG_WARN, "kernel %s: the driver rejected the "
			"cubin (error %d); trying its JIT", k->meta.name,
			(int)r);
		k->driver_jit = true;
	}
	if (k->driver_jit && (st = driver_jit(k, d)))
		return st;
	if ((st = cuda_check(c, d, d->cu.ModuleGetFunction(&k->fn, k->mod,
	    k->meta.name), "cuModuleGetFunction")))
		goto fail;
	if (k->meta.smem > 48 * 1024 && (st = cuda_check(c, d,
	    d->cu.FuncSetAttribute(k->fn,
	    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
	    (int)k->meta.smem), "cuFuncSetAttribute(max dynamic smem)")))
		goto fail;
	/* per_sm=max: as many CTAs of a persistent grid as fit an SM */
	k->occupancy = 1;
	if (k->meta.order != ORD_SINGLE && !k->meta.per_sm && (st =
	    cuda_check(c, d, d->cu.OccupancyMaxActiveBlocksPerMultiprocessor(
	    &k->occupancy, k->fn, k->meta.threads, (size_t)k->meta.smem),
	    "cuOccupancyMaxActiveBlocksPerMultiprocessor")))
		goto fail;
	if (k->occupancy < 1)
		k->occupancy = 1;
	if ((st = cluster_fit(k, d)))
		goto fail;
	return FG_OK;
fail:
	d->cu.ModuleUnload(k->mod);
	k->mod = NULL;
	return st;
}

fg_status
fg_kernel_load(fg_kernel *k)
{
	fg_ctx *c;
	Driver *d;
	fg_status st;
	CUcontext prev;

	if (!k)
		return FG_ERR_INVALID;
	c = k->ctx;
	if (atomic_load_explicit(&k->loaded, memory_order_acquire))
		return FG_OK;
	if ((st = cuda_get(c, &d)) || (st = fits(k, d)))
		return st;
	pthread_mutex_lock(&k->mu);
	if (!atomic_load(&k->loaded) && !(st = assemble(k))) {
		double t0 = rt_ms();
		if ((st = cuda_check(c, d, d->cu.CtxPushCurrent(d->pctx),
		    "cuCtxPushCurrent")) == FG_OK) {
			st = load_module(k, d);
			d->cu.CtxPopCurrent(&prev);
		}
		if (!st) {
			if (k->driver_jit)
				k->assemble_ms += rt_ms() - t0;
			atomic_store_explicit(&k->loaded, true,
				memory_order_release);
		}
	}
	pthread_mutex_unlock(&k->mu);
	if (!st)
		rt_clear(c);
	return st;
}

void
fg_kernel_info_get(const fg_kernel *k, fg_kernel_info *info)
{
	static const char *const ord[] = {"?", "single", "persistent", "lpt"};
	const Meta *m;
	fg_kernel *mk = (fg_kernel *)k;  /* the mutex is not its value */

	if (!info)
		return;
	memset(info, 0, sizeof *info);
	if (!k) {  /* like the other accessors: an empty answer */
		info->name = info->target = info->order = "";
		return;
	}
	m = &k->meta;
	info->name = m->name;
	info->target = m->target;
	info->order = ord[m->order];
	info->threads = m->threads;
	memcpy(info->cluster, m->cluster, sizeof info->cluster);
	info->smem = m->smem;
	info->tmem = m->tmem;
	info->tile_dims = m->ntiles;
	info->nargs = m->nuser;
	pthread_mutex_lock(&mk->mu);
	info->source = k->source;
	info->assemble_ms = k->assemble_ms;
	pthread_mutex_unlock(&mk->mu);
}

fg_status
fg_kernel_arg(const fg_kernel *k, int i, fg_arg_info *ai)
{
	if (!k)
		return FG_ERR_INVALID;
	if (!ai)
		return rt_err(k->ctx, FG_ERR_INVALID, "kernel '%s': "
			"fg_kernel_arg's info is NULL", k->meta.name);
	if (i < 0 || i >= k->meta.nuser)
		return rt_err(k->ctx, FG_ERR_INVALID, "kernel '%s' takes %d "
			"arguments; there is no argument %d", k->meta.name,
			k->meta.nuser, i);
	const MetaArg *a = &k->meta.args[k->meta.user[i]];
	ai->name = a->name;
	ai->kind = a->kind == MA_GLOBAL ? FG_ARG_TENSOR : a->ty == TY_F32 ?
		FG_ARG_FLOAT : FG_ARG_INT;
	ai->type = ty_name(a->ty);
	ai->rank = a->kind == MA_GLOBAL ? a->rank : 0;
	ai->tma = a->has_tma;
	return FG_OK;
}

const void *
fg_kernel_cubin(const fg_kernel *k, size_t *len)
{
	fg_kernel *mk = (fg_kernel *)k;
	const void *p;

	if (!k) {
		if (len)
			*len = 0;
		return NULL;
	}
	pthread_mutex_lock(&mk->mu);
	p = k->cubin;
	if (len)
		*len = p ? k->cubinlen : 0;
	pthread_mutex_unlock(&mk->mu);
	return p;
}

fg_status
fg_kernel_set_grid_limit(fg_kernel *k, int max_ctas)
{
	if (!k)
		return FG_ERR_INVALID;
	if (max_ctas < 0)
		return rt_err(k->ctx, FG_ERR_INVALID, "kernel '%s': a grid "
			"limit of %d CTAs", k->meta.name, max_ctas);
	atomic_store(&k->max_ctas, max_ctas);
	rt_clear(k->ctx);
	return FG_OK;
}

fg_status
fg_kernel_check(const fg_kernel *k, const fg_arg *args, int n,
	int64_t tiles[3])
{
	Bound b;
	fg_status st;

	if (!k)
		return FG_ERR_INVALID;
	if ((st = args_bind(k->ctx, &k->meta, args, n, &b)))
		return st;
	if (tiles)
		memcpy(tiles, b.tiles, sizeof b.tiles);
	rt_clear(k->ctx);
	return FG_OK;
}
