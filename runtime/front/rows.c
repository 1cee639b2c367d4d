/* rows.c: the row kernels (issue #26), rmsnorm.fa, rmsnorm_bwd.fa,
 * layernorm.fa, softmax.fa and cross_entropy.fa: a dense [rows, n]
 * problem, a row per TPR threads.  norm.c's fg_rms_norm,
 * fg_rms_norm_backward, fg_layer_norm, fg_softmax, fg_softmax_backward
 * and fg_cross_entropy describe their arguments as a RowArgs (its
 * tensors, their globals, shapes and switches, the f32 [rows] stats, and
 * the backward's partial sums); the rest is here, the same for each.
 *
 * Every argument is checked before anything needs the GPU.  Then the
 * schedule's configuration is chosen from the row width n and the
 * tensors' addresses (docs/API.md, "Row kernels"):
 *
 *	VEC    elements per access: the largest power of 2 of at most 16
 *	       bytes that divides n and every tensor's address (in elements)
 *	TPR    threads per row: the smallest power of 2 from 4 up that
 *	       leaves each thread at most 4 accesses a row, at most 1024,
 *	       where a thread holds at most 64 bytes of a row (wider rows:
 *	       CL below)
 *	WARPS  8, or TPR / 32 when more, and 32 for TPR 512 (two rows a
 *	       CTA): bench/tune_rows.py's best on an H200; a CTA holds
 *	       WARPS * 32 / TPR rows
 *	N      n rounded up to a multiple of TPR * VEC (of 2 * TPR for
 *	       16-bit elements with VEC 1: a thread holds them in pairs).
 *	       cross_entropy.fa walks a row in chunks of N columns, so its
 *	       rows may be of any width: it takes TPR at most 32 (a row
 *	       in one warp, no barriers), WARPS 16, and N at most TPR *
 *	       VEC * 4, the rest of the row in further chunks
 *	WHOLD  (the norms) the weight and bias stay in registers across
 *	       rows, unless a thread of a 1024-thread CTA (64 registers:
 *	       TPR 512 or 1024)
 *	       holds more than 32 bytes of a row: then they are read again
 *	       for each row
 *	CL     rows wider than a CTA takes (RMSNorm, LayerNorm, softmax
 *	       and its backward, issue #27): a cluster of CL = 2, 4 or 8
 *	       CTAs of 512 threads (16 warps) shares each row, CTA r its
 *	       columns r N .. (r + 1) N - 1, a thread holding at most 128
 *	       bytes of it (LayerNorm and the softmax backward: 64; past
 *	       them ptxas spills), the smallest CL that takes the row; the
 *	       weight and bias are read again for each row
 *	WS, ST the forward softmax's rows of 16 to 32 KiB (more than WSLO
 *	       bytes, WSHI at most) with 16-byte accesses: the
 *	       warp-specialized form (issue #26), a bulk-copy loader warp
 *	       filling ST = 2 stages, a row a CTA of TPR = 512 threads
 *	       (0.96 of the copy on an H200 at 16384 columns, against 0.84
 *	       for the best plain form); RMSNorm's measured no better
 *	       than its plain form, so it keeps that
 *
 * but for rmsnorm_bwd.fa, a row a CTA: TPR = WARPS * 32, the smallest
 * power of 2 from 128 that leaves a thread at most 4 accesses a row, at
 * most 1024, where a thread holds at most ONEHOLD elements of a row
 * (ptxas spills past them at 1024 threads); and compiled with DT and the schedule's switches (WEIGHT, BIAS, RESID:
 * whether those tensors are given; BWD: softmax's backward) once per
 * context (under ctx->attn_mu, so concurrent callers compile a
 * configuration once), its kernel kept until fg_ctx_destroy.  A variant
 * is known by its schedule and its whole -D list.  A launch covers at
 * most Rows.chunk rows, so the kernel's 32-bit element indices cannot
 * overflow; more rows take more launches on the stream.  The stats the
 * caller does not want (rstd, mean) are written to scratch from the
 * context's stream-ordered pool, freed on the stream after the last
 * launch.
 *
 * RMSNorm's backward sums dW over the rows a CTA walks, and each CTA
 * stores its sum as a row of the partials (RowPart): a launch's CTAs,
 * min(its rows, #SMs x 2) (launch_ctas), take the rows after the last
 * launch's.  The rows of the caller's buffer that no CTA writes are
 * zeroed on the stream first, so that the caller adds up all of them;
 * partials not wanted go to scratch.  The VEC-wide f32 stores of the
 * partials need their address aligned to min(VEC * 4, 16) bytes. */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rt_front.h"
#include "rows.h"

enum {
	MAXTPR = 1024,  /* threads per row: a whole CTA */
	CHUNKS = 4,     /* accesses per thread and row the heuristic aims at */
	MAXBYTES = 64,  /* of a row per thread at most: at MAXTPR a thread
			 * has 64 registers */
	ONETPR = 128,   /* threads of a one-row CTA at least */
	CLTPR = 512,    /* rows wider than a CTA: a cluster of CL CTAs of
			 * CLTPR threads shares a row */
	CLHOLD = 128,   /* bytes of a row a thread of such a CTA holds at
			 * most (128 registers, f32 weight included;
			 * softmax's backward, with two tensors, half;
			 * RMSNorm's backward, with the row, its gradient,
			 * the weight and dW's f32 partial, a quarter) */
	MAXCL = 8,      /* CTAs of a cluster at most (portable) */
	ONEHOLD = 8,    /* elements of a row a thread of a one-row CTA
			 * holds at most (rmsnorm_bwd.fa: the row, its
			 * gradient, the weight and the weight's partial
			 * sum): at MAXTPR ptxas spills past them */
	/* the warp-specialized form (a kind's ws): rows of more than WSLO
	 * bytes, WSHI at most, with 16-byte accesses, take WSTPR threads a
	 * row, one row a CTA, and a bulk-copy loader warp with WSST
	 * stages */
	WSLO = 16384,
	WSHI = 32768,
	WSTPR = 512,
	WSST = 2,
};

/* Each kind's schedule and what it takes beyond N, DT, VEC, TPR, WARPS. */
const RowKindInfo row_kinds[] = {
	[ROW_RMS] = {"rmsnorm.fa", "RMSNorm", "normalization",
		RF_WEIGHT | RF_RESID | RF_WHOLD, 0, true, true, false, false,
		CLHOLD},
	[ROW_RMS_BWD] = {"rmsnorm_bwd.fa", "RMSNorm backward", "backward",
		RF_WEIGHT, 0, true, false, false, true, CLHOLD / 4},
	[ROW_LAYER] = {"layernorm.fa", "LayerNorm", "normalization",
		RF_WEIGHT | RF_BIAS | RF_RESID | RF_WHOLD, 0, true, true, false,
		false, CLHOLD / 2},
	[ROW_SOFTMAX] = {"softmax.fa", "softmax", "softmax", RF_BWD, 0,
		false, false, false, false, CLHOLD, true},
	[ROW_SOFTMAX_BWD] = {"softmax.fa", "softmax", "softmax", RF_BWD,
		RF_BWD, false, false, false, false, CLHOLD / 2},
	[ROW_XENT] = {"cross_entropy.fa", "cross-entropy", "cross-entropy",
		0, 0, false, false, true, false},
	[ROW_XENT_BWD] = {"cross_entropy_bwd.fa", "cross-entropy backward",
		"cross-entropy backward", 0, 0, false, false, true, false},
};
_Static_assert(COUNT(row_kinds) == NROWKIND, "a row per RowKind");

/* The switches, in the order of the -D list. */
const RowSwitch row_switches[] = {
	{RF_WEIGHT, "WEIGHT", ""},
	{RF_BIAS, "BIAS", ""},
	{RF_RESID, "RESID", "with a residual the kernel writes x + residual "
		"to residual_out"},
	{RF_WHOLD, "WHOLD", ""},
	{RF_BWD, "BWD", ""},
};
const int row_nswitches = COUNT(row_switches);


/* A tensor's bytes, for the overlap check. */
typedef struct Range {
	const char *name;
	uint64_t lo, hi;
	bool out;
} Range;

fg_status FMT(3, 4)
rows_bad(fg_ctx *c, const char *fn, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	int n = snprintf(msg, sizeof msg, "%s: ", fn);

	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
	va_end(ap);
	return rt_err(c, FG_ERR_INVALID, "%s", msg);
}

const char *
rows_dt_name(fg_dtype dt)
{
	return dt == FG_DTYPE_F32 ? "f32" : dt == FG_DTYPE_F16 ? "f16" :
		"bf16";
}

/* x's shape (x: the first tensor): rows, the product of its outer dims,
 * and n, its last. */
static fg_status
x_shape(fg_ctx *c, const char *fn, const RowTensor *rx, Rows *t)
{
	const fg_tensor *x = rx->t;
	const char *nm = rx->name;
	int64_t bytes;

	if (x->rank < 1 || x->rank > FG_MAX_RANK)
		return rows_bad(c, fn, "%s.rank is %d: give %s's rank, 1 to %d, and "
			"its dims", nm, x->rank, nm, FG_MAX_RANK);
	t->rows = 1;
	for (int i = 0; i < x->rank; i++) {
		if (x->dims[i] < 0)
			return rows_bad(c, fn, "%s.dims[%d] is %lld: extents must "
				"be >= 0", nm, i, (long long)x->dims[i]);
		if (i < x->rank - 1 && !ck_mul64(t->rows, x->dims[i],
		    &t->rows))
			return rows_bad(c, fn, "%s: the product of its outer dims "
				"(its rows) overflows 64 bits", nm);
	}
	t->n = x->dims[x->rank - 1];
	/* its bytes fit, and those of the [rows] tensors of 4-byte elements
	 * (stats, targets) */
	if (!ck_mul64(t->rows, t->n, &bytes) || !ck_mul64(bytes, t->esz,
	    &bytes) || !ck_mul64(t->rows, 4, &bytes))
		return rows_bad(c, fn, "%s: its %lld rows of %lld elements overflow "
			"64-bit addressing", nm, (long long)t->rows,
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
				return rows_bad(c, fn, "%s.rank is 0 but its dims "
					"are not all 0: give its rank and "
					"dims, or neither (for %s)", name,
					what);
		return FG_OK;
	}
	if (t->rank != r)
		return rows_bad(c, fn, "%s.rank is %d; it must be %d (%s)", name,
			t->rank, r, what);
	for (int i = 0; i < r; i++)
		if (t->dims[i] != d[i])
			return rows_bad(c, fn, "%s.dims[%d] is %lld; it must be "
				"%lld (%s)", name, i, (long long)t->dims[i],
				(long long)d[i], what);
	return FG_OK;
}

/* The rank and dims tensor i must have: x's, [n], or x's outer dims. */
static int
shape_of(const RowArgs *a, int i, const Rows *t, const int64_t **d)
{
	if (a->t[i].shape == RS_N) {
		*d = &t->n;
		return 1;
	}
	*d = a->t[0].t->dims;
	return a->t[0].t->rank - (a->t[i].shape == RS_OUTER);
}

/* Bytes per element of tensor r. */
int
rows_esz(const RowTensor *r, const Rows *t)
{
	return r->esz ? r->esz : t->esz;
}

/* Every tensor but x has the shape it must have. */
static fg_status
shapes(fg_ctx *c, const char *fn, const RowArgs *a, const Rows *t)
{
	const char *x = a->t[0].name;
	char what[64];
	fg_status st;

	for (int i = 1; i < a->nt; i++) {
		const RowTensor *r = &a->t[i];
		const int64_t *d;
		int rank = shape_of(a, i, t, &d);

		if (r->shape == RS_N)
			snprintf(what, sizeof what, "%s is [n], n %s's last "
				"dim", r->name, x);
		else if (r->shape == RS_OUTER)
			snprintf(what, sizeof what, "%s has the outer dims of "
				"%s, all but the last", r->name, x);
		else
			snprintf(what, sizeof what, "%s's shape", x);
		if ((st = like(c, fn, r->name, r->t, rank, d, what)))
			return st;
	}
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
			return rows_bad(c, fn, "%s.strides[%d] is %lld, but the "
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
		return rows_bad(c, fn, "%s.ptr is NULL", name);
	if (t->ptr % (uint64_t)esz)
		return rows_bad(c, fn, "%s.ptr = 0x%llx is not aligned to its "
			"%d-byte elements", name, (unsigned long long)t->ptr,
			esz);
	if (t->ptr > UINT64_MAX - (uint64_t)bytes)
		return rows_bad(c, fn, "%s: 0x%llx plus its %lld bytes overflows "
			"64-bit addressing", name, (unsigned long long)t->ptr,
			(long long)bytes);
	if ((st = dense(c, fn, name, t, r, d)))
		return st;
	*rg = (Range){name, t->ptr, t->ptr + (uint64_t)bytes, false};
	return FG_OK;
}

/* An f32 [rows] stat: aligned and addressable when given. */
static fg_status
place_stat(fg_ctx *c, const char *fn, const RowStat *s, int64_t rows,
	Range *rg)
{
	if (s->ptr % 4)
		return rows_bad(c, fn, "%s = 0x%llx is not aligned to its f32 "
			"elements", s->name, (unsigned long long)s->ptr);
	if (s->ptr > UINT64_MAX - (uint64_t)rows * 4)
		return rows_bad(c, fn, "%s: 0x%llx plus its %lld f32 elements "
			"overflows 64-bit addressing", s->name,
			(unsigned long long)s->ptr, (long long)rows);
	*rg = (Range){s->name, s->ptr, s->ptr + (uint64_t)rows * 4, !s->in};
	return FG_OK;
}

/* The tensor given with the partials, whose switch writes them. */
static const RowTensor *
part_with(const RowArgs *a)
{
	for (int i = 0; i < a->nt; i++)
		if (a->t[i].flag == a->part.flag)
			return &a->t[i];
	return NULL;
}

/* The partials' buffer, f32 [rows, n], when given: only with the tensor
 * that has it written, a row at least, aligned and addressable. */
static fg_status
place_part(fg_ctx *c, const char *fn, const RowArgs *a, const Rows *t,
	Range *rg, int *nr)
{
	const RowPart *p = &a->part;
	const RowTensor *w = part_with(a);
	int64_t bytes;

	if (!p->glob || !p->ptr)
		return FG_OK;
	if (!w->t->ptr)
		return rows_bad(c, fn, "%s is given but %s is NULL: the kernel "
			"writes %s only with a %s", p->name, w->name, p->name,
			w->name);
	if (p->rows < 1)
		return rows_bad(c, fn, "%s is %lld: %s has a row per CTA, at "
			"least 1", p->rows_name, (long long)p->rows, p->name);
	if (p->ptr % 4)
		return rows_bad(c, fn, "%s = 0x%llx is not aligned to its f32 "
			"elements", p->name, (unsigned long long)p->ptr);
	if (!ck_mul64(p->rows, t->n, &bytes) || !ck_mul64(bytes, 4, &bytes) ||
	    p->ptr > UINT64_MAX - (uint64_t)bytes)
		return rows_bad(c, fn, "%s: 0x%llx plus its %lld rows of %lld f32 "
			"elements overflows 64-bit addressing", p->name,
			(unsigned long long)p->ptr, (long long)p->rows,
			(long long)t->n);
	rg[(*nr)++] = (Range){p->name, p->ptr, p->ptr + (uint64_t)bytes,
		true};
	return FG_OK;
}

/* Outputs overlap neither the inputs nor each other: the kernel reads
 * its inputs through the non-coherent cache while it writes. */
static fg_status
disjoint(fg_ctx *c, const char *fn, const RowArgs *a, const Range *rg,
	int n)
{
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if ((rg[i].out || rg[j].out) && rg[i].lo < rg[j].hi &&
			    rg[j].lo < rg[i].hi)
				return rows_bad(c, fn, "%s and %s overlap: outputs "
					"must not overlap the inputs or each "
					"other (no in-place %s)", rg[i].name,
					rg[j].name, row_kinds[a->kind].inplace);
	return FG_OK;
}

/* Tensors of one switch are given all or none. */
static fg_status
together(fg_ctx *c, const char *fn, const RowArgs *a)
{
	for (int k = 0; k < row_nswitches; k++) {
		const RowTensor *given = NULL, *absent = NULL;

		for (int i = 0; i < a->nt; i++)
			if (a->t[i].flag == row_switches[k].bit) {
				if (a->t[i].t->ptr)
					given = given ? given : &a->t[i];
				else
					absent = absent ? absent : &a->t[i];
			}
		if (given && absent)
			return rows_bad(c, fn, "%s is given but %s is NULL: %s",
				given->name, absent->name, row_switches[k].why);
	}
	return FG_OK;
}

/* The tensors of a non-empty problem: given where required, aligned,
 * dense, and no output overlapping another tensor. */
static fg_status
tensors(fg_ctx *c, const char *fn, const RowArgs *a, const Rows *t)
{
	Range rg[ROW_MAXT + ROW_MAXSTAT + 1];
	int nr = 0;
	fg_status st;

	if ((st = together(c, fn, a)))
		return st;
	for (int i = 0; i < a->nt; i++) {
		const RowTensor *r = &a->t[i];
		const int64_t *d;
		int rank = shape_of(a, i, t, &d);

		if (!r->t->ptr && r->flag)
			continue;       /* optional and absent */
		if ((st = place(c, fn, r->name, r->t, rank, d, rows_esz(r, t),
		    &rg[nr])))
			return st;
		rg[nr++].out = r->out;
	}
	for (int i = 0; i < a->nstat; i++) {
		const RowStat *s = &a->stat[i];

		if (!s->ptr && s->required)
			return rows_bad(c, fn, "%s is NULL", s->name);
		if (s->ptr && (st = place_stat(c, fn, s, t->rows, &rg[nr++])))
			return st;
	}
	if ((st = place_part(c, fn, a, t, rg, &nr)))
		return st;
	return disjoint(c, fn, a, rg, nr);
}

/* Every address of a tensor of dtype divisible by vec elements, and n
 * too (those of their own element type are read one at a time); the
 * partials', stored vec f32 at a time, by min(vec * 4, 16) bytes. */
static bool
aligned(const RowArgs *a, int64_t n, int vec, int esz)
{
	uint64_t b = (uint64_t)vec * (uint64_t)esz;

	for (int i = 0; i < a->nt; i++)
		if (!a->t[i].esz && a->t[i].t->ptr % b)
			return false;
	if (a->part.glob && a->part.ptr % (uint64_t)(vec < 4 ? vec * 4 : 16))
		return false;
	return n % vec == 0;
}

/* Rows wider than a CTA (issue #27): the CL CTAs of a cluster share a
 * row, each CLTPR threads holding at most clh elements of it (the
 * smallest CL of 2, 4, 8 that takes the row), the weight read again for
 * each row; cfg's kind, dtype and VEC are set. */
static fg_status
cluster_config(fg_ctx *c, const char *fn, const RowArgs *a, Rows *t,
	int clh)
{
	RowCfg *g = &t->cfg;
	int ctpr = CLTPR;
	/* the forward softmax: CTAs of half as many threads, two an SM,
	 * where a cluster of MAXCL takes the row (bench/tune_rows.py on an
	 * H200: 1.05x and 1.12x the 512-thread CTAs at 64k and 128k
	 * columns; docs/PERF.md) */
	if (g->kind == ROW_SOFTMAX && (int64_t)MAXCL * (CLTPR / 2) * clh >=
	    t->n)
		ctpr = CLTPR / 2;
	int64_t per = (int64_t)ctpr * clh;

	g->cl = 2;
	while (g->cl < MAXCL && g->cl * per < t->n)
		g->cl *= 2;
	if (g->cl * per < t->n)
		return rt_err(c, FG_ERR_UNSUPPORTED, "%s: rows of %lld "
			"elements are wider than a cluster of %d CTAs takes: "
			"%d threads a CTA holding %d elements of a row each, "
			"%lld elements", fn, (long long)t->n, MAXCL, CLTPR, clh,
			(long long)(MAXCL * per));
	g->tpr = ctpr;
	g->warps = ctpr / 32;
	int pair = t->esz == 2 && g->vec == 1 ? 2 : 1;
	int64_t w = (int64_t)g->tpr * g->vec * pair;
	int64_t slice = (t->n + g->cl - 1) / g->cl;
	g->n = (int)((slice + w - 1) / w * w);
	g->flags = row_kinds[g->kind].fixed;
	for (int i = 0; i < a->nt; i++)
		if (a->t[i].t->ptr)
			g->flags |= a->t[i].flag;
	t->chunk = INT32_MAX / ((int64_t)g->n * g->cl) - 1;
	return FG_OK;
}

/* The schedule's configuration for a checked, non-empty problem. */
static fg_status
config(fg_ctx *c, const char *fn, const RowArgs *a, Rows *t)
{
	RowCfg *g = &t->cfg;
	bool online = row_kinds[a->kind].online, onerow = row_kinds[a->kind].onerow;
	int vec = 16 / t->esz;

	while (vec > 1 && !aligned(a, t->n, vec, t->esz))
		vec /= 2;
	int64_t most = onerow ? MAXTPR * ONEHOLD :
		(int64_t)MAXTPR * MAXBYTES / t->esz;
	char hold[32];
	snprintf(hold, sizeof hold, onerow ? "%d elements" : "%d bytes",
		onerow ? ONEHOLD : MAXBYTES);
	int clh = row_kinds[a->kind].clhold / t->esz;
	if (t->n > most && !online && !clh)
		return rt_err(c, FG_ERR_UNSUPPORTED, "%s: rows of %lld "
			"elements are wider than one CTA takes: %d threads "
			"holding %s of a row each, %lld elements", fn,
			(long long)t->n, MAXTPR, hold, (long long)most);
	g->kind = a->kind;
	g->dt = a->dtype;
	g->vec = vec;
	g->cl = 1;
	if (t->n > most && !online)
		return cluster_config(c, fn, a, t, clh);
	/* the forward softmax holds up to 8 accesses a thread, and never
	 * two rows of 512 threads: its sweep on an H200 measured 0.90 of
	 * the copy at 16384 columns in 256-thread rows, 0.79 in 512 */
	bool sm = a->kind == ROW_SOFTMAX;
	int acc = sm ? 2 * CHUNKS : CHUNKS;
	g->tpr = onerow ? ONETPR : 4;
	while (g->tpr < MAXTPR && t->n > (int64_t)g->tpr * vec * acc)
		g->tpr *= 2;
	/* at least 8 warps, and 2 rows of 512 threads a CTA: the best of
	 * bench/tune_rows.py's sweep on an H200 (docs/PERF.md) */
	g->warps = g->tpr == 512 && !sm ? 32 : g->tpr / 32 > 8 ? g->tpr / 32 :
		8;
	if (onerow)
		g->warps = g->tpr / 32;
	/* a 16-bit tile holds an even count of elements per thread, N /
	 * TPR: with VEC 1, an even count of accesses */
	int pair = t->esz == 2 && vec == 1 ? 2 : 1;
	int64_t w = (int64_t)g->tpr * vec * pair;
	int64_t n = (t->n + w - 1) / w * w;   /* x_shape bounded t->n */
	if (online) {
		/* a row in one warp at most, 16 warps a CTA, chunks of 4
		 * accesses a thread: a sweep on an H200 measured 0.65 to
		 * 0.70 of the copy at 32000 and 128256 columns, against
		 * 0.26 to 0.30 with a row across a 1024-thread CTA, whose
		 * three barriers a chunk leave nothing in flight */
		g->tpr = g->tpr < 32 ? g->tpr : 32;
		g->warps = 16;
		w = (int64_t)g->tpr * vec * pair;
		n = (t->n + w - 1) / w * w;
		int64_t chunk = (int64_t)g->tpr * vec * CHUNKS;
		n = n < chunk ? n : chunk;
	}
	/* the warp-specialized form: the loader's bulk copies move rows of
	 * 16-byte multiples from 16-byte aligned addresses, which VEC's
	 * choice checked (aligned()); bench/tune_rows.py's sweep on an
	 * H200 measured the forward softmax at 0.96 of the copy at 16384
	 * columns against 0.84 for the best plain configuration
	 * (docs/PERF.md) */
	int64_t rb = t->n * t->esz;
	g->st = 0;
	if (row_kinds[a->kind].ws && vec * t->esz == 16 && rb > WSLO &&
	    rb <= WSHI) {
		g->st = WSST;
		g->tpr = WSTPR;
		g->warps = WSTPR / 32;
		w = (int64_t)g->tpr * vec;
		n = (t->n + w - 1) / w * w;
	}
	g->n = (int)n;
	g->flags = row_kinds[a->kind].fixed;
	for (int i = 0; i < a->nt; i++)
		if (a->t[i].t->ptr)
			g->flags |= a->t[i].flag;
	if ((row_kinds[a->kind].defs & RF_WHOLD) &&
	    !(g->warps == 32 && g->n / g->tpr * t->esz > 32))
		g->flags |= RF_WHOLD;
	/* element indices of a launch, (row + ROWS) * w at most, w the
	 * row's chunks' width, fit 32 bits: w is N, at most 2^16, so a
	 * launch has 32735 rows or more, but for cross-entropy, whose rows
	 * may be as wide as that allows for one */
	int rows = g->warps * 32 / g->tpr;
	w = (t->n + g->n - 1) / g->n * g->n;
	t->chunk = INT32_MAX / w - rows;
	if (t->chunk < 1)
		return rt_err(c, FG_ERR_UNSUPPORTED, "%s: rows of %lld "
			"elements are too wide for the kernel's 32-bit element "
			"indices: %lld at most", fn, (long long)t->n,
			(long long)(INT32_MAX / (rows + 1) / g->n * g->n));
	return FG_OK;
}

fg_status
rows_check(fg_ctx *c, const char *fn, const RowArgs *a, CUstream s, Rows *t)
{
	fg_status st;

	memset(t, 0, sizeof *t);
	if (!a)
		return rows_bad(c, fn, "args is NULL");
	if (s == NULL || s == CU_STREAM_LEGACY)
		return rows_bad(c, fn, "fagen does not launch on the legacy "
			"default stream (%s); pass a stream you created "
			"(cuStreamCreate, best with CU_STREAM_NON_BLOCKING) or "
			"CU_STREAM_PER_THREAD", s ? "CU_STREAM_LEGACY" :
			"NULL");
	if (a->dtype != FG_DTYPE_BF16 && a->dtype != FG_DTYPE_F16 &&
	    a->dtype != FG_DTYPE_F32)
		return rows_bad(c, fn, "dtype is %d: use FG_DTYPE_BF16, "
			"FG_DTYPE_F16 or FG_DTYPE_F32", (int)a->dtype);
	if (row_kinds[a->kind].eps && (!isfinite(a->eps) || a->eps < 0 ||
	    a->eps > FLT_MAX))
		return rows_bad(c, fn, "eps is %g: it must be finite, >= 0 and fit "
			"f32", a->eps);
	t->esz = a->dtype == FG_DTYPE_F32 ? 4 : 2;
	if ((st = x_shape(c, fn, &a->t[0], t)) ||
	    (st = shapes(c, fn, a, t)))
		return st;
	if (t->rows == 0 || t->n == 0)
		return FG_OK;   /* nothing to launch */
	if ((st = tensors(c, fn, a, t)))
		return st;
	return config(c, fn, a, t);
}

/* cfg's -D list, "-D N=4096 -D DT=bf16 ...", into list (MAXDEFS
 * entries, each in d[i]); returns how many. */
