/* linear.c: fg_linear (issue #26), nn.Linear on the shipped GEMM,
 * schedules/gemm_ws_sm90.fa (sm_100a: gemm_ws_sm100.fa, the same params,
 * globals and epilogue switches): out = act(alpha x W^T + bias) +
 * residual, the schedule's fused epilogue, with x [M, K] its A, the
 * weight [N, K] its B (both K-major, as nn.Linear keeps them) and out its
 * C.
 *
 * Every argument is checked before anything needs the GPU, as rows.c
 * checks the row kernels'.  The variant is -D DT, SCALE (alpha != 1),
 * BIAS, ACT and RESID, with CM=1 on sm_90a (one CTA a cluster: the
 * measured best), compiled once per context and arch (variants.c)
 * and kept until fg_ctx_destroy.  A launch covers at most
 * Linear.chunk rows of x, so its M fits the schedule's i32, its tile
 * count 32 bits and, with a residual, the kernel's 32-bit element
 * indices into R; more rows take more launches on the stream.
 *
 * K = 0 is refused (FG_ERR_UNSUPPORTED): a tensor map cannot have an
 * extent of 0, so fg_launch refuses A and B, and gemm_ws_sm90.fa's
 * accumulator is written only by its first MMA (acc=kb > 0), which no
 * K step would run. */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rt_front.h"

#define FN "fg_linear"

enum {
	ESZ = 2,        /* bytes per element: bf16 and f16 */
	TMA_ROW = 16,   /* TMA: addresses and row strides in 16 bytes */
	TILE = 128,     /* the schedules' tile rows; their tiles have 128
			 * or 256 columns, so N / 128 bounds the count */
	MAXDEFS = 6,    /* DT, SCALE, BIAS, ACT, RESID, CM */
};

/* A tensor's bytes, for the overlap check. */
typedef struct Range {
	const char *name;
	uint64_t lo, hi;
} Range;

static fg_status FMT(2, 3)
bad(fg_ctx *c, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	int n = snprintf(msg, sizeof msg, FN ": ");

	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
	va_end(ap);
	return rt_err(c, FG_ERR_INVALID, "%s", msg);
}

/* dtype, act and alpha. */
static fg_status
scalars(fg_ctx *c, const fg_linear_args *a)
{
	if (a->dtype == FG_DTYPE_F32)
		return rt_err(c, FG_ERR_UNSUPPORTED, FN ": dtype is "
			"FG_DTYPE_F32: fagen's GEMM (gemm_ws_sm90.fa) takes "
			"16-bit inputs for the tensor cores' wgmma; use "
			"FG_DTYPE_BF16 or FG_DTYPE_F16");
	if (a->dtype != FG_DTYPE_BF16 && a->dtype != FG_DTYPE_F16)
		return bad(c, "dtype is %d: use FG_DTYPE_BF16 or FG_DTYPE_F16",
			(int)a->dtype);
	if ((int)a->act < FG_ACT_NONE || (int)a->act > FG_ACT_SILU)
		return bad(c, "act is %d: use FG_ACT_NONE, FG_ACT_GELU_TANH or "
			"FG_ACT_SILU", (int)a->act);
	if (!isfinite(a->alpha) || fabs(a->alpha) > FLT_MAX)
		return bad(c, "alpha is %g: it must be finite and fit f32 (1: "
			"no scale)", a->alpha);
	return FG_OK;
}

/* x's shape: m, the product of its outer dims, and k, its last. */
static fg_status
x_shape(fg_ctx *c, const fg_tensor *x, Linear *l)
{
	if (x->rank < 1 || x->rank > FG_MAX_RANK)
		return bad(c, "x.rank is %d: give x's rank, 1 to %d, and its "
			"dims", x->rank, FG_MAX_RANK);
	l->m = 1;
	for (int i = 0; i < x->rank; i++) {
		if (x->dims[i] < 0)
			return bad(c, "x.dims[%d] is %lld: extents must be "
				">= 0", i, (long long)x->dims[i]);
		if (i < x->rank - 1 && !ck_mul64(l->m, x->dims[i], &l->m))
			return bad(c, "x: the product of its outer dims (its "
				"rows) overflows 64 bits");
	}
	l->k = x->dims[x->rank - 1];
	return FG_OK;
}

/* The weight gives n: [N, K], given in full. */
static fg_status
w_shape(fg_ctx *c, const fg_tensor *w, Linear *l)
{
	if (w->rank != 2)
		return bad(c, "weight.rank is %d: give weight's rank, 2, and "
			"its dims [N, K] (nn.Linear's)", w->rank);
	if (w->dims[0] < 0)
		return bad(c, "weight.dims[0] is %lld: extents must be >= 0",
			(long long)w->dims[0]);
	if (w->dims[1] != l->k)
		return bad(c, "weight.dims[1] is %lld; it must be %lld (weight "
			"is [N, K], K x's last dim)", (long long)w->dims[1],
			(long long)l->k);
	l->n = w->dims[0];
	return FG_OK;
}

/* The sizes fit the schedule's i32 params and 64-bit addressing. */
static fg_status
sizes(fg_ctx *c, const Linear *l)
{
	int64_t b;

	if (l->n > INT32_MAX)
		return bad(c, "N is %lld (weight.dims[0]): the schedule takes "
			"N as i32, at most %d", (long long)l->n, INT32_MAX);
	if (l->k > INT32_MAX)
		return bad(c, "K is %lld (x's last dim): the schedule takes K "
			"as i32, at most %d", (long long)l->k, INT32_MAX);
	if (!ck_mul64(l->m, l->k, &b) || !ck_mul64(b, ESZ, &b))
		return bad(c, "x: its %lld rows of %lld elements overflow "
			"64-bit addressing", (long long)l->m, (long long)l->k);
	if (!ck_mul64(l->m, l->n, &b) || !ck_mul64(b, ESZ, &b))
		return bad(c, "out: its %lld rows of %lld elements overflow "
			"64-bit addressing", (long long)l->m, (long long)l->n);
	return FG_OK;
}

/* t's shape against the one it must have (rank r, dims d): given, or
 * rank 0 with all dims 0, which means that shape. */
static fg_status
like(fg_ctx *c, const char *name, const fg_tensor *t, int r,
	const int64_t *d, const char *what)
{
	if (t->rank == 0) {
		for (int i = 0; i < FG_MAX_RANK; i++)
			if (t->dims[i])
				return bad(c, "%s.rank is 0 but its dims are "
					"not all 0: give its rank and dims, or "
					"neither (%s)", name, what);
		return FG_OK;
	}
	if (t->rank != r)
		return bad(c, "%s.rank is %d; it must be %d (%s)", name,
			t->rank, r, what);
	for (int i = 0; i < r; i++)
		if (t->dims[i] != d[i])
			return bad(c, "%s.dims[%d] is %lld; it must be %lld "
				"(%s)", name, i, (long long)t->dims[i],
				(long long)d[i], what);
	return FG_OK;
}

/* out's dims (and residual's): x's outer dims, then n. */
static void
out_dims(const fg_linear_args *a, const Linear *l, int64_t d[FG_MAX_RANK])
{
	memcpy(d, a->x.dims, sizeof a->x.dims);
	d[a->x.rank - 1] = l->n;
}

static fg_status
shapes(fg_ctx *c, const fg_linear_args *a, const Linear *l)
{
	int64_t od[FG_MAX_RANK];
	fg_status st;

	out_dims(a, l, od);
	if ((st = like(c, "out", &a->out, a->x.rank, od, "out is [..., N]: "
	    "x's outer dims, then weight's N")) ||
	    (st = like(c, "bias", &a->bias, 1, &l->n, "bias is [N], N "
	    "weight's rows")) ||
	    (st = like(c, "residual", &a->residual, a->x.rank, od,
	    "residual has out's shape, [..., N]")))
		return st;
	return FG_OK;
}

/* Strides all 0, or a dense row-major tensor's (any stride where the
 * extent is 1): the kernel reads and writes every tensor as dense rows. */
static fg_status
dense(fg_ctx *c, const char *name, const fg_tensor *t, int r,
	const int64_t *d)
{
	int64_t want = 1;
	bool given = false;

	for (int i = 0; i < r; i++)
		given |= t->strides[i] != 0;
	for (int i = r - 1; given && i >= 0; i--) {
		if (d[i] > 1 && t->strides[i] != want)
			return bad(c, "%s.strides[%d] is %lld, but the "
				"kernel addresses %s as dense rows: it must be "
				"%lld (or pass all strides 0)", name, i,
				(long long)t->strides[i], name,
				(long long)want);
		want *= d[i];   /* sizes bounded the product */
	}
	return FG_OK;
}

/* A given tensor's address (aligned to align bytes: 16 for those TMA
 * reads or writes), strides and bytes (into *rg). */
static fg_status
place(fg_ctx *c, const char *name, const fg_tensor *t, int r,
	const int64_t *d, int align, Range *rg)
{
	int64_t bytes = ESZ;

	for (int i = 0; i < r; i++)
		bytes *= d[i];  /* sizes bounded the product */
	if (!t->ptr)
		return bad(c, "%s.ptr is NULL", name);
	if (t->ptr % (uint64_t)align && align == ESZ)
		return bad(c, "%s.ptr = 0x%llx is not aligned to its %d-byte "
			"elements", name, (unsigned long long)t->ptr, ESZ);
	if (t->ptr % (uint64_t)align)
		return bad(c, "%s.ptr = 0x%llx is not 16-byte aligned, as TMA "
			"needs", name, (unsigned long long)t->ptr);
	if (t->ptr > UINT64_MAX - (uint64_t)bytes)
		return bad(c, "%s: 0x%llx plus its %lld bytes overflows 64-bit "
			"addressing", name, (unsigned long long)t->ptr,
			(long long)bytes);
	*rg = (Range){name, t->ptr, t->ptr + (uint64_t)bytes};
	return dense(c, name, t, r, d);
}

/* The tensors of a non-empty problem: given where required, aligned,
 * dense, and out overlapping no input (the kernel reads the inputs
 * through the non-coherent cache while it writes). */
static fg_status
tensors(fg_ctx *c, const fg_linear_args *a, const Linear *l)
{
	int64_t od[FG_MAX_RANK], wd[2] = {l->n, l->k};
	Range rg[4] = {{0}}, out = {0};
	fg_status st;

	out_dims(a, l, od);
	if ((st = place(c, "x", &a->x, a->x.rank, a->x.dims, TMA_ROW,
	    &rg[0])) ||
	    (st = place(c, "weight", &a->weight, 2, wd, TMA_ROW, &rg[1])) ||
	    (a->bias.ptr && (st = place(c, "bias", &a->bias, 1, &l->n, ESZ,
	    &rg[2]))) ||
	    (a->residual.ptr && (st = place(c, "residual", &a->residual,
	    a->x.rank, od, ESZ, &rg[3]))) ||
	    (st = place(c, "out", &a->out, a->x.rank, od, TMA_ROW, &out)))
		return st;
	for (int i = 0; i < 4; i++)
		if (rg[i].name && rg[i].lo < out.hi && out.lo < rg[i].hi)
			return bad(c, "%s and out overlap: out must not "
				"overlap an input (no in-place linear)",
				rg[i].name);
	return FG_OK;
}

/* Rows per launch: M within the schedule's i32 and the tile count
 * within 32 bits; with a residual, the kernel's 32-bit element indices
 * into R ((row) * N + column) within 2^31 - 1 too. */
static int64_t
chunk(const Linear *l)
{
	int64_t tn = (l->n + TILE - 1) / TILE;
	int64_t rows = INT32_MAX / tn * TILE;

	if (rows > INT32_MAX / TILE * TILE)
		rows = INT32_MAX / TILE * TILE;
	if (l->cfg.resid) {
		int64_t r = INT32_MAX / l->n;
		r = r >= TILE ? r / TILE * TILE : r;
		rows = r < rows ? r : rows;
	}
	return rows;
}

fg_status
linear_check(fg_ctx *c, const fg_linear_args *a, CUstream s, Linear *l)
{
	fg_status st;

	memset(l, 0, sizeof *l);
	if (!a)
		return bad(c, "args is NULL");
	if (s == NULL || s == CU_STREAM_LEGACY)
		return bad(c, "fagen does not launch on the legacy default "
			"stream (%s); pass a stream you created "
			"(cuStreamCreate, best with CU_STREAM_NON_BLOCKING) or "
			"CU_STREAM_PER_THREAD", s ? "CU_STREAM_LEGACY" :
			"NULL");
	if ((st = scalars(c, a)) || (st = x_shape(c, &a->x, l)) ||
	    (st = w_shape(c, &a->weight, l)) || (st = sizes(c, l)) ||
	    (st = shapes(c, a, l)))
		return st;
	if (l->m == 0 || l->n == 0)
		return FG_OK;   /* nothing to launch */
	if (l->k == 0)
		return rt_err(c, FG_ERR_UNSUPPORTED, FN ": K is 0 (x's last "
			"dim): fagen's GEMM needs K >= 8 (a tensor map has no "
			"empty extent); compute act(alpha * 0 + bias) + "
			"residual without it");
	if (l->k % (TMA_ROW / ESZ))
		return bad(c, "K is %lld: x's and weight's rows must be a "
			"multiple of 16 bytes (8 elements) for TMA",
			(long long)l->k);
	if (l->n % (TMA_ROW / ESZ))
		return bad(c, "N is %lld: out's rows must be a multiple of 16 "
			"bytes (8 elements) for TMA", (long long)l->n);
	if ((st = tensors(c, a, l)))
		return st;
	l->cfg = (LinCfg){.dt = a->dtype, .scale = a->alpha != 1.0,
		.bias = a->bias.ptr != 0, .resid = a->residual.ptr != 0,
		.act = (int)a->act};
	l->chunk = chunk(l);
	return FG_OK;
}

/* cfg's -D list, each in d[i]; returns how many. */
static int
defines(const LinCfg *g, int cc, char d[MAXDEFS][24])
{
	int nd = 0;

	snprintf(d[nd++], 24, "DT=%s", g->dt == FG_DTYPE_F16 ? "f16" :
		"bf16");
	snprintf(d[nd++], 24, "SCALE=%s", g->scale ? "true" : "false");
	snprintf(d[nd++], 24, "BIAS=%s", g->bias ? "true" : "false");
	snprintf(d[nd++], 24, "ACT=%d", g->act);
	snprintf(d[nd++], 24, "RESID=%s", g->resid ? "true" : "false");
	if (cc == 90)           /* gemm_ws_sm100.fa has no clusters */
		snprintf(d[nd++], 24, "CM=1");
	return nd;
}

fg_status
linear_kernel(fg_ctx *c, int cc, const LinCfg *cfg, fg_kernel **out)
{
	const char *file = cc == 100 ? "gemm_ws_sm100.fa" : "gemm_ws_sm90.fa";
	char d[MAXDEFS][24];
	const char *defs[MAXDEFS];
	int nd = defines(cfg, cc, d);

	if (cc != 90 && cc != 100)
		return rt_err(c, FG_ERR_UNSUPPORTED, FN ": device %d is sm_%d; "
			"fagen's GEMM (gemm_ws_sm90.fa, gemm_ws_sm100.fa) runs "
			"on sm_90a (H100, H200) and sm_100a (B200) only",
			c->device, cc);
	for (int i = 0; i < nd; i++)
		defs[i] = d[i];
	return front_kernel(c, FN, cc, file, defs, nd, out);
}

int
linear_bind(const fg_linear_args *a, const Linear *l, int64_t row0,
	int64_t m, fg_arg args[LIN_NARGS])
{
	/* a checked problem's offsets fit: sizes bounded its bytes */
	uint64_t xo = (uint64_t)(row0 * l->k * ESZ);
	uint64_t oo = (uint64_t)(row0 * l->n * ESZ);
	int n = 0;

	args[n++] = FG_INT("M", m);
	args[n++] = FG_INT("N", l->n);
	args[n++] = FG_INT("K", l->k);
	args[n++] = FG_PTR("A", a->x.ptr + xo);
	args[n++] = FG_PTR("B", a->weight.ptr);
	args[n++] = FG_PTR("C", a->out.ptr + oo);
	if (l->cfg.scale)
		args[n++] = FG_FLOAT("alpha", a->alpha);
	if (l->cfg.bias)
		args[n++] = FG_PTR("BV", a->bias.ptr);
	if (l->cfg.resid)
		args[n++] = FG_PTR("R", a->residual.ptr + oo);
	return n;
}

fg_status
fg_linear(fg_ctx *c, const fg_linear_args *a, CUstream s)
{
	fg_arg args[LIN_NARGS];
	fg_kernel *k;
	Driver *d;
	Linear l;
	fg_status st;

	if (!c)
		return FG_ERR_INVALID;
	if ((st = linear_check(c, a, s, &l)))
		return st;
	if (l.m == 0 || l.n == 0) {
		rt_clear(c);
		return FG_OK;
	}
	if ((st = cuda_get(c, &d)) ||
	    (st = linear_kernel(c, d->tcc, &l.cfg,
	    &k)))
		return st;
	for (int64_t r0 = 0; r0 < l.m && !st; r0 += l.chunk) {
		int64_t m = l.m - r0 < l.chunk ? l.m - r0 : l.chunk;
		st = fg_launch(k, s, args, linear_bind(a, &l, r0, m, args));
	}
	return st;
}
