/* norm.c: fg_rms_norm, RMSNorm on the shipped schedule rmsnorm.fa (issue
 * #26), with the residual add of pre-norm transformers fused in.
 *
 * Every argument is checked here before anything needs the GPU.  Then the
 * schedule's configuration is chosen from the row width n and the
 * tensors' addresses (docs/API.md, "Normalization"):
 *
 *	VEC    elements per access: the largest power of 2 of at most 16
 *	       bytes that divides n and every tensor's address (in elements)
 *	TPR    threads per row: the smallest power of 2 from 4 up that
 *	       leaves each thread at most 4 accesses a row, at most 1024,
 *	       where a thread holds at most 64 bytes of a row (wider rows
 *	       need a cluster, issue #27)
 *	WARPS  max(4, TPR / 32): a CTA holds WARPS * 32 / TPR rows
 *	N      n rounded up to a multiple of TPR * VEC (of 2 * TPR for
 *	       16-bit elements with VEC 1: a thread holds them in pairs)
 *	WHOLD  the weight stays in registers across rows, unless a thread
 *	       of a 1024-thread CTA (64 registers) holds more than 32
 *	       bytes of a row: then it is read again for each row
 *
 * and compiled with DT, WEIGHT and RESID once per context (under
 * ctx->attn_mu, so concurrent callers compile a configuration once), its
 * kernel kept until fg_ctx_destroy.  A launch covers at most Norm.chunk
 * rows, so the kernel's 32-bit element indices cannot overflow; more rows
 * take more launches on the stream.  When the caller wants no rstd, the
 * kernel writes it to scratch from the context's stream-ordered pool,
 * freed on the stream after the last launch. */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rt_front.h"

#define NORM_FILE "rmsnorm.fa"

enum {
	MAXTPR = 1024,  /* threads per row: a whole CTA */
	CHUNKS = 4,     /* accesses per thread and row the heuristic aims at */
	MAXBYTES = 64,  /* of a row per thread at most: at MAXTPR a thread
			 * has 64 registers */
};

struct NormVariant {
	int cc;
	NormCfg cfg;
	fg_kernel *k;
	NormVariant *next;
};

/* A tensor's bytes, for the overlap check. */
typedef struct Range {
	const char *name;
	uint64_t lo, hi;
	bool out;
} Range;

static fg_status FMT(3, 4)
bad(fg_ctx *c, const char *fn, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	int n = snprintf(msg, sizeof msg, "%s: ", fn);

	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
	va_end(ap);
	return rt_err(c, FG_ERR_INVALID, "%s", msg);
}

static const char *
dt_name(fg_dtype dt)
{
	return dt == FG_DTYPE_F32 ? "f32" : dt == FG_DTYPE_F16 ? "f16" :
		"bf16";
}

/* x's shape: rows, the product of its outer dims, and n, its last. */
static fg_status
x_shape(fg_ctx *c, const char *fn, const fg_tensor *x, Norm *t)
{
	int64_t bytes;

	if (x->rank < 1 || x->rank > FG_MAX_RANK)
		return bad(c, fn, "x.rank is %d: give x's rank, 1 to %d, and "
			"its dims", x->rank, FG_MAX_RANK);
	t->rows = 1;
	for (int i = 0; i < x->rank; i++) {
		if (x->dims[i] < 0)
			return bad(c, fn, "x.dims[%d] is %lld: extents must be "
				">= 0", i, (long long)x->dims[i]);
		if (i < x->rank - 1 && !ck_mul64(t->rows, x->dims[i],
		    &t->rows))
			return bad(c, fn, "x: the product of its outer dims "
				"(its rows) overflows 64 bits");
	}
	t->n = x->dims[x->rank - 1];
	if (!ck_mul64(t->rows, t->n, &bytes) || !ck_mul64(bytes, t->esz,
	    &bytes))
		return bad(c, fn, "x: its %lld rows of %lld elements overflow "
			"64-bit addressing", (long long)t->rows,
			(long long)t->n);
	return FG_OK;
}

/* t's shape against the one it must have (rank r, dims d): given, or
 * rank 0 with all dims 0, which means that shape. */
static fg_status
like(fg_ctx *c, const char *fn, const char *name, const fg_tensor *t,
	int r, const int64_t *d, const char *what)
{
	if (t->rank == 0) {
		for (int i = 0; i < FG_MAX_RANK; i++)
			if (t->dims[i])
				return bad(c, fn, "%s.rank is 0 but its dims "
					"are not all 0: give its rank and "
					"dims, or neither (for %s)", name,
					what);
		return FG_OK;
	}
	if (t->rank != r)
		return bad(c, fn, "%s.rank is %d; it must be %d (%s)", name,
			t->rank, r, what);
	for (int i = 0; i < r; i++)
		if (t->dims[i] != d[i])
			return bad(c, fn, "%s.dims[%d] is %lld; it must be "
				"%lld (%s)", name, i, (long long)t->dims[i],
				(long long)d[i], what);
	return FG_OK;
}

/* Strides all 0, or a dense row-major tensor's (any stride where the
 * extent is 1): the kernel addresses every tensor as dense rows. */
static fg_status
dense(fg_ctx *c, const char *fn, const char *name, const fg_tensor *t,
	int r, const int64_t *d)
{
	int64_t want = 1;
	bool given = false;

	for (int i = 0; i < r; i++)
		given |= t->strides[i] != 0;
	for (int i = r - 1; given && i >= 0; i--) {
		if (d[i] > 1 && t->strides[i] != want)
			return bad(c, fn, "%s.strides[%d] is %lld, but the "
				"kernel addresses %s as dense rows: it must be "
				"%lld (or pass all strides 0)", name, i,
				(long long)t->strides[i], name,
				(long long)want);
		want *= d[i];  /* x_shape bounded the product */
	}
	return FG_OK;
}

/* A given tensor's address, strides and bytes (into *rg). */
static fg_status
place(fg_ctx *c, const char *fn, const char *name, const fg_tensor *t,
	int r, const int64_t *d, int esz, Range *rg)
{
	int64_t bytes = esz;
	fg_status st;

	for (int i = 0; i < r; i++)
		bytes *= d[i];  /* x_shape bounded the product */
	if (!t->ptr)
		return bad(c, fn, "%s.ptr is NULL", name);
	if (t->ptr % (uint64_t)esz)
		return bad(c, fn, "%s.ptr = 0x%llx is not aligned to its "
			"%d-byte elements", name, (unsigned long long)t->ptr,
			esz);
	if (t->ptr > UINT64_MAX - (uint64_t)bytes)
		return bad(c, fn, "%s: 0x%llx plus its %lld bytes overflows "
			"64-bit addressing", name, (unsigned long long)t->ptr,
			(long long)bytes);
	if ((st = dense(c, fn, name, t, r, d)))
		return st;
	*rg = (Range){name, t->ptr, t->ptr + (uint64_t)bytes, false};
	return FG_OK;
}

/* Outputs overlap neither the inputs nor each other: the kernel reads
 * its inputs through the non-coherent cache while it writes. */
static fg_status
disjoint(fg_ctx *c, const char *fn, const Range *rg, int n)
{
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if ((rg[i].out || rg[j].out) && rg[i].lo < rg[j].hi &&
			    rg[j].lo < rg[i].hi)
				return bad(c, fn, "%s and %s overlap: outputs "
					"must not overlap the inputs or each "
					"other (no in-place normalization)",
					rg[i].name, rg[j].name);
	return FG_OK;
}

/* Every address divisible by vec elements, and n too. */
static bool
aligned(const fg_rmsnorm_args *a, int64_t n, int vec, int esz)
{
	const uint64_t p[] = {a->x.ptr, a->weight.ptr, a->residual.ptr,
		a->out.ptr, a->residual_out.ptr};
	uint64_t b = (uint64_t)vec * (uint64_t)esz;

	for (size_t i = 0; i < COUNT(p); i++)
		if (p[i] % b)
			return false;
	return n % vec == 0;
}

/* The schedule's configuration for a checked, non-empty problem. */
static fg_status
config(fg_ctx *c, const char *fn, const fg_rmsnorm_args *a, Norm *t)
{
	NormCfg *g = &t->cfg;
	int full = 16 / t->esz, vec = full;

	while (vec > 1 && !aligned(a, t->n, vec, t->esz))
		vec /= 2;
	int64_t most = (int64_t)MAXTPR * MAXBYTES / t->esz;
	if (t->n > most)
		return rt_err(c, FG_ERR_UNSUPPORTED, "%s: rows of %lld "
			"elements are wider than one CTA takes: %d threads "
			"holding %d bytes of a row each, %lld elements; wider "
			"rows need a cluster (issue #27)", fn, (long long)t->n,
			MAXTPR, MAXBYTES, (long long)most);
	g->dt = a->dtype;
	g->vec = vec;
	g->tpr = 4;
	while (g->tpr < MAXTPR && t->n > (int64_t)g->tpr * vec * CHUNKS)
		g->tpr *= 2;
	g->warps = g->tpr / 32 > 4 ? g->tpr / 32 : 4;
	/* a 16-bit tile holds an even count of elements per thread, N /
	 * TPR: with VEC 1, an even count of accesses */
	int64_t w = (int64_t)g->tpr * vec * (t->esz == 2 && vec == 1 ? 2 : 1);
	g->n = (int)((t->n + w - 1) / w * w);
	g->weight = a->weight.ptr != 0;
	g->whold = !(g->tpr == MAXTPR && g->n / g->tpr * t->esz > 32);
	g->resid = a->residual.ptr != 0;
	/* element indices of a launch, (row + ROWS) * N at most, fit
	 * 32 bits; N is at most 2^16, so a chunk has 32735 rows or more */
	t->chunk = INT32_MAX / g->n - g->warps * 32 / g->tpr;
	return FG_OK;
}

static const char *const names[] = {"x", "weight", "residual", "out",
	"residual_out"};

/* The tensors of a non-empty problem: given where required, aligned,
 * dense, and no output overlapping another tensor. */
static fg_status
tensors(fg_ctx *c, const char *fn, const fg_rmsnorm_args *a, const Norm *t)
{
	const fg_tensor *ts[] = {&a->x, &a->weight, &a->residual, &a->out,
		&a->residual_out};
	const int64_t wd[1] = {t->n};
	Range rg[6];
	int nr = 0;
	fg_status st;

	if (!a->residual.ptr != !a->residual_out.ptr)
		return bad(c, fn, "%s is given but %s is NULL: with a residual "
			"the kernel writes x + residual to residual_out",
			a->residual.ptr ? "residual" : "residual_out",
			a->residual.ptr ? "residual_out" : "residual");
	for (int i = 0; i < 5; i++) {
		if (!ts[i]->ptr && (i == 1 || i == 2 || i == 4))
			continue;       /* optional and absent */
		if ((st = place(c, fn, names[i], ts[i], i == 1 ? 1 :
		    a->x.rank, i == 1 ? wd : a->x.dims, t->esz, &rg[nr])))
			return st;
		rg[nr++].out = i >= 3;
	}
	if (a->rstd % 4)
		return bad(c, fn, "rstd = 0x%llx is not aligned to its f32 "
			"elements", (unsigned long long)a->rstd);
	if (a->rstd && a->rstd > UINT64_MAX - (uint64_t)t->rows * 4)
		return bad(c, fn, "rstd: 0x%llx plus its %lld f32 elements "
			"overflows 64-bit addressing",
			(unsigned long long)a->rstd, (long long)t->rows);
	if (a->rstd)
		rg[nr++] = (Range){"rstd", a->rstd, a->rstd +
			(uint64_t)t->rows * 4, true};
	return disjoint(c, fn, rg, nr);
}

fg_status
norm_check(fg_ctx *c, const char *fn, const fg_rmsnorm_args *a, CUstream s,
	Norm *t)
{
	const int64_t *xd = a ? a->x.dims : NULL;
	fg_status st;

	memset(t, 0, sizeof *t);
	if (!a)
		return bad(c, fn, "args is NULL");
	if (s == NULL || s == CU_STREAM_LEGACY)
		return bad(c, fn, "fagen does not launch on the legacy "
			"default stream (%s); pass a stream you created "
			"(cuStreamCreate, best with CU_STREAM_NON_BLOCKING) or "
			"CU_STREAM_PER_THREAD", s ? "CU_STREAM_LEGACY" :
			"NULL");
	if (a->dtype != FG_DTYPE_BF16 && a->dtype != FG_DTYPE_F16 &&
	    a->dtype != FG_DTYPE_F32)
		return bad(c, fn, "dtype is %d: use FG_DTYPE_BF16, "
			"FG_DTYPE_F16 or FG_DTYPE_F32", (int)a->dtype);
	if (!isfinite(a->eps) || a->eps < 0 || a->eps > FLT_MAX)
		return bad(c, fn, "eps is %g: it must be finite, >= 0 and fit "
			"f32", a->eps);
	t->esz = a->dtype == FG_DTYPE_F32 ? 4 : 2;
	if ((st = x_shape(c, fn, &a->x, t)))
		return st;
	const int64_t wd[1] = {t->n};
	const char *xs = "x's shape", *ws = "weight is [n], n x's last dim";
	if ((st = like(c, fn, "weight", &a->weight, 1, wd, ws)) ||
	    (st = like(c, fn, "residual", &a->residual, a->x.rank, xd, xs)) ||
	    (st = like(c, fn, "out", &a->out, a->x.rank, xd, xs)) ||
	    (st = like(c, fn, "residual_out", &a->residual_out, a->x.rank, xd,
	    xs)))
		return st;
	if (t->rows == 0 || t->n == 0)
		return FG_OK;   /* nothing to launch */
	if ((st = tensors(c, fn, a, t)))
		return st;
	return config(c, fn, a, t);
}

/* Compile cfg's kernel; called with c->attn_mu held. */
static fg_status
build(fg_ctx *c, const char *fn, int cc, const NormCfg *g, fg_kernel **out)
{
	char path[4096], d[8][24], list[256];
	const char *defs[8];
	/* the schedule's target is sm_90a; it compiles for sm_100a too */
	fg_compile_options o = {.defines = defs, .ndefines = 8,
		.arch = cc == 100 ? "sm_100a" : NULL};
	const Shipped *in;
	fg_program *p;
	fg_status st;
	size_t at = 0;

	if ((st = attn_schedule(c, NORM_FILE, path, sizeof path, &in)))
		return st;
	snprintf(d[0], sizeof d[0], "N=%d", g->n);
	snprintf(d[1], sizeof d[1], "DT=%s", dt_name(g->dt));
	snprintf(d[2], sizeof d[2], "VEC=%d", g->vec);
	snprintf(d[3], sizeof d[3], "TPR=%d", g->tpr);
	snprintf(d[4], sizeof d[4], "WARPS=%d", g->warps);
	snprintf(d[5], sizeof d[5], "WEIGHT=%s", g->weight ? "true" : "false");
	snprintf(d[6], sizeof d[6], "RESID=%s", g->resid ? "true" : "false");
	snprintf(d[7], sizeof d[7], "WHOLD=%s", g->whold ? "true" : "false");
	for (int i = 0; i < 8; i++)
		defs[i] = d[i];
	st = in ? fg_compile_string(c, path, (const char *)in->text, in->len,
		&o, &p) : fg_compile_file(c, path, &o, &p);
	if (st == FG_OK) {
		st = fg_kernel_create(c, fg_program_ptx(p, NULL), 0, out);
	} else if (st == FG_ERR_COMPILE) {
		list[0] = 0;
		for (int i = 0; i < 8 && at < sizeof list; i++)
			at += (size_t)snprintf(list + at, sizeof list - at,
				"%s-D %s", i ? " " : "", defs[i]);
		st = rt_err(c, st, "%s: the schedule %s (%s%s) does not "
			"compile:\n%s", fn, path, list, o.arch ?
			" for sm_100a" : "", fg_program_diagnostics(p));
	}
	fg_program_free(p);
	return st;
}

static bool
same(const NormCfg *a, const NormCfg *b)
{
	return a->dt == b->dt && a->n == b->n && a->vec == b->vec &&
		a->tpr == b->tpr && a->warps == b->warps &&
		a->weight == b->weight && a->resid == b->resid &&
		a->whold == b->whold;
}

fg_status
norm_kernel(fg_ctx *c, const char *fn, int cc, const NormCfg *cfg,
	fg_kernel **out)
{
	NormVariant *v;
	fg_kernel *k = NULL;
	fg_status st = FG_OK;

	if (cc != 90 && cc != 100)
		return rt_err(c, FG_ERR_UNSUPPORTED, "%s: device %d is sm_%d; "
			"fagen's RMSNorm (%s) runs on sm_90a (H100, H200) and "
			"sm_100a (B200) only", fn, c->device, cc, NORM_FILE);
	pthread_mutex_lock(&c->attn_mu);
	for (v = c->norm; v; v = v->next)
		if (v->cc == cc && same(&v->cfg, cfg))
			break;
	if (!v && !(st = build(c, fn, cc, cfg, &k))) {
		if ((v = rt_alloc(c, sizeof *v))) {
			*v = (NormVariant){.cc = cc, .cfg = *cfg, .k = k,
				.next = c->norm};
			c->norm = v;
		} else {
			fg_kernel_free(k);
			st = rt_err(c, FG_ERR_NOMEM, "out of memory");
		}
	}
	pthread_mutex_unlock(&c->attn_mu);
	if (v)
		*out = v->k;
	return st;
}

int
norm_bind(const fg_rmsnorm_args *a, const Norm *t, int64_t row0, int64_t m,
	uint64_t rstd, fg_arg args[NORM_NARGS])
{
	/* a checked problem's offsets fit: x_shape bounded its bytes */
	uint64_t off = (uint64_t)(row0 * t->n * t->esz);
	int n = 0;

	args[n++] = FG_INT("M", m);
	args[n++] = FG_INT("NC", t->n);
	args[n++] = FG_FLOAT("inv_n", 1.0 / (double)t->n);
	args[n++] = FG_FLOAT("eps", a->eps);
	args[n++] = FG_PTR("X", a->x.ptr + off);
	/* WEIGHT=false never reads W, which must still hold n elements */
	args[n++] = FG_PTR("W", a->weight.ptr ? a->weight.ptr : a->x.ptr +
		off);
	args[n++] = FG_PTR("Y", a->out.ptr + off);
	args[n++] = FG_PTR("RSTD", rstd + (uint64_t)row0 * 4);
	if (a->residual.ptr) {
		args[n++] = FG_PTR("R", a->residual.ptr + off);
		args[n++] = FG_PTR("XO", a->residual_out.ptr + off);
	}
	return n;
}

/* rows f32 of scratch on stream s, from the context's pool. */
static fg_status
scratch(fg_ctx *c, const Driver *d, CUstream s, int64_t rows,
	CUdeviceptr *out)
{
	CUmemoryPool mp;
	CUcontext prev;
	fg_status st;

	if ((st = attn_pool(c, d, &mp)) ||
	    (st = cuda_check(c, d, d->cu.CtxPushCurrent(d->pctx),
	    "cuCtxPushCurrent")))
		return st;
	st = cuda_check(c, d, d->cu.MemAllocFromPoolAsync(out, (size_t)rows *
		4, mp, s), "cuMemAllocFromPoolAsync (fg_rms_norm's rstd)");
	d->cu.CtxPopCurrent(&prev);
	return st;
}

fg_status
fg_rms_norm(fg_ctx *c, const fg_rmsnorm_args *a, CUstream s)
{
	static const char fn[] = "fg_rms_norm";
	fg_arg args[NORM_NARGS];
	CUdeviceptr tmp = 0;
	CUcontext prev;
	fg_kernel *k;
	Driver *d;
	Norm t;
	fg_status st;

	if (!c)
		return FG_ERR_INVALID;
	if ((st = norm_check(c, fn, a, s, &t)))
		return st;
	if (t.rows == 0 || t.n == 0) {
		rt_clear(c);
		return FG_OK;
	}
	if ((st = cuda_get(c, &d)) ||
	    (st = norm_kernel(c, fn, d->cc_major * 10 + d->cc_minor, &t.cfg,
	    &k)) ||
	    (!a->rstd && (st = scratch(c, d, s, t.rows, &tmp))))
		return st;
	uint64_t rstd = a->rstd ? a->rstd : tmp;
	for (int64_t r0 = 0; r0 < t.rows && !st; r0 += t.chunk) {
		int64_t m = t.rows - r0 < t.chunk ? t.rows - r0 : t.chunk;
		st = fg_launch(k, s, args, norm_bind(a, &t, r0, m, rstd, args));
	}
	if (!tmp)
		return st;
	/* freed after whatever was launched: stream order */
	d->cu.CtxPushCurrent(d->pctx);
	fg_status fst = cuda_check(c, d, d->cu.MemFreeAsync(tmp, s),
		"cuMemFreeAsync");
	d->cu.CtxPopCurrent(&prev);
	return st ? st : fst;
}

void
norm_free(fg_ctx *c)
{
	NormVariant *v, *next;

	for (v = c->norm; v; v = next) {
		next = v->next;
		fg_kernel_free(v->k);
		rt_free(c, v, sizeof *v);
	}
	c->norm = NULL;
}
