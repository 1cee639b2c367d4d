/* rows_run.c: the row kernels' variants (their schedule and -D list,
 * compiled once per context and arch: variants.c), their bindings,
 * scratch and chunked launches, for the checked, configured problems of
 * rows.c (whose header comment says how they are chosen). */
#include <stdio.h>

#include "rt_front.h"
#include "rows.h"

static int
defines(const RowCfg *g, char d[MAXDEFS][24])
{
	unsigned defs = row_kinds[g->kind].defs;
	int nd = 0;

	snprintf(d[nd++], 24, "N=%d", g->n);
	snprintf(d[nd++], 24, "DT=%s", rows_dt_name(g->dt));
	snprintf(d[nd++], 24, "VEC=%d", g->vec);
	snprintf(d[nd++], 24, "TPR=%d", g->tpr);
	snprintf(d[nd++], 24, "WARPS=%d", g->warps);
	if (g->cl > 1)
		snprintf(d[nd++], 24, "CL=%d", g->cl);
	if (g->st) {
		snprintf(d[nd++], 24, "WS=true");
		snprintf(d[nd++], 24, "ST=%d", g->st);
	}
	for (int i = 0; i < row_nswitches; i++)
		if (defs & row_switches[i].bit)
			snprintf(d[nd++], 24, "%s=%s", row_switches[i].def,
				g->flags & row_switches[i].bit ? "true" : "false");
	return nd;
}

fg_status
rows_kernel(fg_ctx *c, const char *fn, int cc, const RowCfg *cfg,
	fg_kernel **out)
{
	const char *file = row_kinds[cfg->kind].file;
	char d[MAXDEFS][24];
	int nd = defines(cfg, d);
	const char *defs[MAXDEFS];

	if (cc != 90 && cc != 100)
		return rt_err(c, FG_ERR_UNSUPPORTED, "%s: device %d is sm_%d; "
			"fagen's %s (%s) runs on sm_90a (H100, H200) and "
			"sm_100a (B200) only", fn, c->device, cc,
			row_kinds[cfg->kind].what, file);
	for (int i = 0; i < nd; i++)
		defs[i] = d[i];
	return front_kernel(c, fn, cc, file, defs, nd, out);
}

/* Where row row0 of tensor r is, bytes past its address: a checked
 * problem's offsets fit, as x_shape bounded its bytes. */
static uint64_t
row_off(const RowTensor *r, const Rows *t, int64_t row0)
{
	switch (r->shape) {
	case RS_N:
		return 0;
	case RS_OUTER:
		return (uint64_t)(row0 * rows_esz(r, t));
	default:
		return (uint64_t)(row0 * t->n * rows_esz(r, t));
	}
}

/* The scratch bytes of the stats not wanted, rounded up to 16: the
 * partials not wanted follow them, aligned for their stores. */
static uint64_t
stat_bytes(const RowArgs *a, const Rows *t)
{
	uint64_t b = 0;

	for (int i = 0; i < a->nstat; i++)
		if (!a->stat[i].ptr)
			b += (uint64_t)t->rows * 4;
	return (b + 15) / 16 * 16;
}

/* The kernel writes partials: its switch is on. */
static bool
writes_part(const RowArgs *a, const Rows *t)
{
	return a->part.glob && (t->cfg.flags & a->part.flag);
}

/* The partials' global and its rows, after n arguments: launch l's rows,
 * in the caller's buffer or at scratch; where the kernel writes none, a
 * row at stat, the first stat's address, which it never writes there
 * (the global is declared all the same).  Returns the new count. */
static int
bind_part(const RowArgs *a, const Rows *t, const RowLaunch *l,
	uint64_t scratch, uint64_t stat, fg_arg *args, int n)
{
	const RowPart *p = &a->part;
	uint64_t base = p->ptr ? p->ptr : scratch;

	if (!writes_part(a, t)) {
		args[n++] = FG_PTR(p->glob, stat);
		args[n++] = FG_INT(p->param, 1);
		return n;
	}
	args[n++] = FG_PTR(p->glob, base + (uint64_t)(l->part0 * t->n * 4));
	args[n++] = FG_INT(p->param, l->parts);
	return n;
}

int
rows_bind(const RowArgs *a, const Rows *t, const RowLaunch *l,
	fg_arg args[ROW_NARGS])
{
	uint64_t scratch = l->scratch, stat = 0;
	int64_t row0 = l->row0;
	int n = 0;

	args[n++] = FG_INT("M", l->m);
	args[n++] = FG_INT("NC", t->n);
	if (row_kinds[a->kind].inv_n)
		args[n++] = FG_FLOAT("inv_n", 1.0 / (double)t->n);
	if (row_kinds[a->kind].eps)
		args[n++] = FG_FLOAT("eps", a->eps);
	for (int i = 0; i < a->nt; i++) {
		const RowTensor *r = &a->t[i];
		uint64_t p = r->t->ptr;

		if (p)
			p += row_off(r, t, row0);
		else if (r->shape == RS_N)  /* never read, but must hold n
					     * elements: x's row */
			p = a->t[0].t->ptr + row_off(&a->t[0], t, row0);
		else                    /* not declared without it */
			continue;
		args[n++] = FG_PTR(r->glob, p);
	}
	for (int i = 0; i < a->nstat; i++) {
		uint64_t p = a->stat[i].ptr;

		if (!p) {
			p = scratch;
			scratch += (uint64_t)t->rows * 4;
		}
		p += (uint64_t)row0 * 4;
		stat = stat ? stat : p;
		args[n++] = FG_PTR(a->stat[i].glob, p);
	}
	if (a->part.glob)
		n = bind_part(a, t, l, l->scratch + stat_bytes(a, t), stat,
			args, n);
	return n;
}

/* bytes of scratch on stream s, from the context's pool. */
static fg_status
scratch(fg_ctx *c, const Driver *d, CUstream s, const char *fn,
	size_t bytes, CUdeviceptr *out)
{
	char what[96];
	CUmemoryPool mp;
	CUcontext prev;
	fg_status st;

	if ((st = attn_pool(c, d, &mp)) ||
	    (st = cuda_check(c, d, d->cu.CtxPushCurrent(d->pctx),
	    "cuCtxPushCurrent")))
		return st;
	snprintf(what, sizeof what, "cuMemAllocFromPoolAsync (%s's scratch)",
		fn);
	st = cuda_check(c, d, d->cu.MemAllocFromPoolAsync(out, bytes, mp, s),
		what);
	d->cu.CtxPopCurrent(&prev);
	return st;
}

/* The rows of partials k's launch over m rows of a checked problem
 * writes: a row per CTA, or per cluster when CL CTAs share a row (each
 * writes its columns of the cluster's row). */
static int64_t
ctas(const Rows *t, const Driver *d, const fg_kernel *k, int64_t m)
{
	int rows = t->cfg.warps * 32 / t->cfg.tpr;
	int64_t cl = t->cfg.cl;

	return launch_ctas(k, d, (m + rows - 1) / rows * cl) / cl;
}

/* The rows of partials the launches of a checked, non-empty problem
 * write on d's device, a row per CTA (k loaded first: its grid may be
 * its occupancy's); 0 where the kernel writes none. */
static fg_status
count_parts(const RowArgs *a, const Rows *t, const Driver *d, fg_kernel *k,
	int64_t *out)
{
	fg_status st;

	*out = 0;
	if (!writes_part(a, t))
		return FG_OK;
	if ((st = fg_kernel_load(k)))
		return st;
	for (int64_t r0 = 0; r0 < t->rows; r0 += t->chunk)
		*out += ctas(t, d, k, t->rows - r0 < t->chunk ? t->rows - r0 :
			t->chunk);
	return FG_OK;
}

/* The caller's partials hold the np rows the launches write; those past
 * them are zeroed on stream s. */
static fg_status
zero_parts(fg_ctx *c, const char *fn, const Driver *d, CUstream s,
	const RowArgs *a, const Rows *t, int64_t np)
{
	const RowPart *p = &a->part;
	char what[128];
	CUcontext prev;
	fg_status st;

	if (!p->glob || !p->ptr)
		return FG_OK;
	if (p->rows < np)
		return rows_bad(c, fn, "%s is %lld, fewer than the %lld rows of "
			"partial sums the launch writes on this device (a row "
			"per CTA)", p->rows_name, (long long)p->rows,
			(long long)np);
	if (p->rows == np)
		return FG_OK;
	if ((st = cuda_check(c, d, d->cu.CtxPushCurrent(d->pctx),
	    "cuCtxPushCurrent")))
		return st;
	snprintf(what, sizeof what, "cuMemsetD32Async (%s's rows past the "
		"CTAs')", p->name);
	st = cuda_check(c, d, d->cu.MemsetD32Async(p->ptr + (uint64_t)(np *
		t->n * 4), 0, (size_t)((p->rows - np) * t->n), s), what);
	d->cu.CtxPopCurrent(&prev);
	return st;
}

fg_status
rows_run(fg_ctx *c, const char *fn, const RowArgs *a, CUstream s)
{
	fg_arg args[ROW_NARGS];
	CUdeviceptr tmp = 0;
	CUcontext prev;
	fg_kernel *k;
	Driver *d;
	Rows t;
	fg_status st;
	int64_t np;

	if (!c)
		return FG_ERR_INVALID;
	if ((st = rows_check(c, fn, a, s, &t)))
		return st;
	if (t.rows == 0 || t.n == 0) {
		rt_clear(c);
		return FG_OK;
	}
	if ((st = cuda_get(c, &d)) ||
	    (st = rows_kernel(c, fn, d->tcc, &t.cfg,
	    &k)) ||
	    (st = count_parts(a, &t, d, k, &np)) ||
	    (st = zero_parts(c, fn, d, s, a, &t, np)))
		return st;
	/* the stats not wanted, then the partials not wanted */
	uint64_t bytes = stat_bytes(a, &t) + (a->part.ptr ? 0 :
		(uint64_t)(np * t.n * 4));
	if (bytes && (st = scratch(c, d, s, fn, (size_t)bytes, &tmp)))
		return st;
	RowLaunch l = {.scratch = tmp};
	for (; l.row0 < t.rows && !st; l.row0 += l.m) {
		l.part0 += l.parts;
		l.m = t.rows - l.row0 < t.chunk ? t.rows - l.row0 : t.chunk;
		l.parts = writes_part(a, &t) ? ctas(&t, d, k, l.m) : 0;
		st = fg_launch(k, s, args, rows_bind(a, &t, &l, args));
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

fg_status
rows_parts(fg_ctx *c, const char *fn, const RowArgs *a, int64_t *out)
{
	fg_kernel *k;
	Driver *d;
	Rows t;
	fg_status st;

	*out = 0;
	if (!a)
		return rows_bad(c, fn, "args is NULL");
	/* as for a buffer aligned to 16 bytes; no stream is used */
	RowArgs b = *a;
	b.part.ptr = 0;
	b.part.rows = 0;
	if ((st = rows_check(c, fn, &b, CU_STREAM_PER_THREAD, &t)))
		return st;
	if (t.rows == 0 || t.n == 0) {
		rt_clear(c);
		return FG_OK;
	}
	if ((st = cuda_get(c, &d)) ||
	    (st = rows_kernel(c, fn, d->tcc, &t.cfg,
	    &k)) ||
	    (st = count_parts(&b, &t, d, k, out)))
		return st;
	rt_clear(c);
	return FG_OK;
}

