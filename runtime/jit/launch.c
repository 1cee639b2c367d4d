/* launch.c: one launch: the parameter buffer (device addresses, tensor
 * maps, scalars, in the .entry's order), the grid, and cuLaunchKernelEx
 * on the caller's stream.
 *
 * Grid: order=single launches the tile grid itself (x, y, z);
 * persistent and lpt launch min(#SMs x per_sm, tiles) CTAs in x ('tiles
 * ... per_sm=N': N per SM, 1 by default; 'per_sm=max': as many as fit,
 * the occupancy found at load; fg_kernel_set_grid_limit lowers or raises
 * the cap), and the CTAs walk the tiles.  A cluster is launched with the
 * cluster-dimension attribute and takes the tiles of one block of its
 * shape: order=single rounds the grid up to whole blocks; a persistent
 * grid is (clusters x X, Y, Z), at most the clusters that fit at once.
 * Block: (threads, 1, 1); dynamic shared memory: the kernel's smem. */
#include <stdio.h>
#include <string.h>

#include "rt_jit.h"

typedef union Slot {
	uint64_t u64;
	uint32_t u32;
	float f32;
} Slot;

/* Tensor-map encoding: driver order is innermost first. */
static fg_status
tmap(fg_kernel *k, const Driver *d, const MetaArg *v, const Bound *b,
	CUtensorMap *out)
{
	const Meta *m = &k->meta;
	const MetaArg *g = &m->args[v->of];
	const int64_t *dims = b->dims[v->of], *st = b->strides[v->of];
	int r = g->rank, esz = ty_bytes(g->ty);
	cuuint64_t gdim[FG_MAX_RANK], gstride[FG_MAX_RANK];
	cuuint32_t box[FG_MAX_RANK], estr[FG_MAX_RANK];
	static const CUtensorMapSwizzle sw[] = {
		[0] = CU_TENSOR_MAP_SWIZZLE_NONE,
		[1] = CU_TENSOR_MAP_SWIZZLE_32B,
		[2] = CU_TENSOR_MAP_SWIZZLE_64B,
		[4] = CU_TENSOR_MAP_SWIZZLE_128B,
	};

	for (int i = 0; i < r; i++) {
		int64_t bytes;
		gdim[i] = (cuuint64_t)dims[r - 1 - i];
		/* args_bind's TMA rules checked it; kept checked here */
		if (i < r - 1 && !ck_mul64(st[r - 2 - i], esz, &bytes))
			return rt_err(k->ctx, FG_ERR_INVALID, "kernel '%s': "
				"tensor '%s': strides[%d] in bytes overflows 64 "
				"bits", m->name, g->name, r - 2 - i);
		if (i < r - 1)
			gstride[i] = (cuuint64_t)bytes;
		/* a box of lower rank covers the innermost dimensions */
		int bi = v->rank - 1 - i;
		box[i] = bi >= 0 ? (cuuint32_t)v->box[bi] : 1;
		estr[i] = 1;
	}
	CUresult res = d->cu.TensorMapEncodeTiled(out,
		(CUtensorMapDataType)ty_tma_code(g->ty), (cuuint32_t)r,
		(void *)(uintptr_t)b->arg[v->of]->t.ptr, gdim, gstride, box,
		estr, CU_TENSOR_MAP_INTERLEAVE_NONE, sw[v->swizzle / 32],
		CU_TENSOR_MAP_L2_PROMOTION_L2_128B, v->oob_nan ?
		CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA :
		CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
	if (res) {
		char what[128];
		snprintf(what, sizeof what, "cuTensorMapEncodeTiled for '%s'",
			v->name);
		return cuda_check(k->ctx, d, res, what);
	}
	return FG_OK;
}

int64_t
launch_ctas(const fg_kernel *k, const Driver *d, int64_t tiles)
{
	const Meta *m = &k->meta;
	int64_t cx = m->cluster[0];

	if (m->order == ORD_SINGLE)
		return tiles;
	int64_t cs = cx * m->cluster[1] * m->cluster[2];
	int64_t cap = atomic_load(&k->max_ctas);
	cap = cap ? cap : (int64_t)d->nsm * (m->per_sm ? m->per_sm :
		k->occupancy);
	if (cs > 1 && k->max_clusters > 0 && cap > k->max_clusters * cs)
		cap = k->max_clusters * cs;
	tiles = tiles < cap ? tiles : cap;
	tiles -= tiles % cs;
	return tiles > cs ? tiles : cs;
}

/* args_bind checked the limits and the cluster multiples. */
static void
grid(const fg_kernel *k, const Driver *d, const Bound *b, unsigned g[3])
{
	const int *cl = k->meta.cluster;
	int64_t n, blk[3];

	for (int i = 0; i < 3; i++)  /* whole blocks of the cluster's shape */
		blk[i] = (b->tiles[i] + cl[i] - 1) / cl[i];
	if (k->meta.order == ORD_SINGLE) {
		for (int i = 0; i < 3; i++)
			g[i] = (unsigned)(blk[i] * cl[i]);
		return;
	}
	/* args_bind checked that the product fits 32 bits */
	if (!ck_mul64(blk[0], blk[1], &n) || !ck_mul64(n, blk[2], &n) ||
	    !ck_mul64(n, (int64_t)cl[0] * cl[1] * cl[2], &n))
		n = INT64_MAX;
	n = launch_ctas(k, d, n);
	g[0] = (unsigned)(n / (cl[1] * cl[2]));
	g[1] = (unsigned)cl[1];
	g[2] = (unsigned)cl[2];
}

fg_status
launch_kernel(fg_kernel *k, CUstream stream, const Bound *b)
{
	const Meta *m = &k->meta;
	fg_ctx *c = k->ctx;
	CUtensorMap maps[MAXARGS];   /* the type is 64-byte aligned */
	Slot slots[MAXARGS];
	void *params[MAXARGS];
	unsigned g[3];
	Driver *d = c->drv;   /* loaded: fg_kernel_load succeeded */
	CUcontext prev;
	fg_status st;

	grid(k, d, b, g);
	for (int i = 0; i < m->nargs; i++) {
		const MetaArg *a = &m->args[i];
		params[i] = &slots[i];
		if (a->kind == MA_GLOBAL) {
			slots[i].u64 = b->arg[i]->t.ptr;
		} else if (a->kind == MA_STRIDES) {  /* its global's, i64 */
			params[i] = (void *)b->strides[a->of];
		} else if (a->kind == MA_TMA) {
			if ((st = tmap(k, d, a, b, &maps[i])))
				return st;
			params[i] = &maps[i];
		} else if (a->ty == TY_F32) {
			slots[i].f32 = (float)b->arg[i]->f;
		} else if (a->ty == TY_I64 || a->ty == TY_U64) {
			slots[i].u64 = (uint64_t)b->val[i];
		} else {
			slots[i].u32 = (uint32_t)b->val[i];
		}
	}
	CUlaunchAttribute attr[2];
	unsigned na = 0;
	if (m->cluster[0] * m->cluster[1] * m->cluster[2] > 1) {
		attr[na].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
		attr[na].value.clusterDim.x = (unsigned)m->cluster[0];
		attr[na].value.clusterDim.y = (unsigned)m->cluster[1];
		attr[na++].value.clusterDim.z = (unsigned)m->cluster[2];
	}
	/* programmatic dependent launch: the kernel may start before the
	 * one before it in the stream ends (once that one's CTAs have all
	 * run grid_dep_launch or exited); its grid_dep_wait, in every
	 * thread that reads what that one wrote, waits for the rest */
	if (m->pdl && !c->no_pdl) {
		attr[na].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
		attr[na++].value.programmaticStreamSerializationAllowed = 1;
	}
	CUlaunchConfig cfg = {
		.gridDimX = g[0], .gridDimY = g[1], .gridDimZ = g[2],
		.blockDimX = (unsigned)m->threads, .blockDimY = 1,
		.blockDimZ = 1, .sharedMemBytes = (unsigned)m->smem,
		.hStream = stream, .attrs = attr, .numAttrs = na,
	};
	if ((st = cuda_check(c, d, d->cu.CtxPushCurrent(d->pctx),
	    "cuCtxPushCurrent")))
		return st;
	st = cuda_check(c, d, d->cu.LaunchKernelEx(&cfg, k->fn, params, NULL),
		"cuLaunchKernelEx");
	d->cu.CtxPopCurrent(&prev);
	return st;
}

fg_status
fg_launch(fg_kernel *k, struct CUstream_st *stream, const fg_arg *args,
	int n)
{
	Bound b;
	fg_status st;

	if (!k)
		return FG_ERR_INVALID;
	if (stream == NULL || stream == CU_STREAM_LEGACY)
		return rt_err(k->ctx, FG_ERR_INVALID, "kernel '%s': fagen does "
			"not launch on the legacy default stream (%s); pass a "
			"stream you created (cuStreamCreate, best with "
			"CU_STREAM_NON_BLOCKING) or CU_STREAM_PER_THREAD",
			k->meta.name, stream ? "CU_STREAM_LEGACY" : "NULL");
	if ((st = args_bind(k->ctx, &k->meta, args, n, &b)) ||
	    (st = fg_kernel_load(k)) || (st = launch_kernel(k, stream, &b)))
		return st;
	rt_clear(k->ctx);
	return FG_OK;
}
