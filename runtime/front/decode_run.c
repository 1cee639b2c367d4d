/* decode_run.c: fg_attention_decode's kernels, arguments and launches
 * (issue #16).
 *
 * A call launches on the caller's stream: kv_append.fa when k_new is
 * given (as many launches as decode.c's chunk asks), fa_decode_sm90.fa
 * (-D SPLIT=true with several splits, its partials in the workspace),
 * then fa_combine.fa with several splits (fa_decode_sm100.fa on
 * sm_100a).  Each variant is compiled once per context and kept until
 * fg_ctx_destroy (variants.c).  Every launch's arguments are checked
 * (fg_kernel_check) before the first launch, so a refusal leaves the
 * cache as it was.  With validate, the tables are read on the host
 * before anything is launched.  Without a workspace of the caller's,
 * one is taken stream-ordered from the context's pool (which a CUDA
 * graph captures) and freed on the stream after the last launch. */
#include <stdio.h>

#include "rt_front.h"

#define FN "fg_attention_decode"

enum {
	ESZ = 2,        /* bytes per element: bf16 and f16 */
	MAXDEFS = 10,   /* D, DT, PS, CAUSAL, WINDOW, SOFTCAP, SEQLENS,
			 * SPLIT, PACK, NW */
};

/* fa_decode_sm100.fa on sm_100 (the others declare sm_90a and compile
 * for sm_100a as they are) */
static const char *const files[] = {
	[DEC_ATTN] = "fa_decode_sm90.fa",
	[DEC_COMBINE] = "fa_combine.fa",
	[DEC_APPEND] = "kv_append.fa",
};

static const char *
tf(bool b)
{
	return b ? "true" : "false";
}

/* cfg's -D list, each in d[i]; returns how many. */
static int
defines(const DecCfg *g, char d[MAXDEFS][24])
{
	int nd = 0;

	snprintf(d[nd++], 24, "D=%d", g->d);
	snprintf(d[nd++], 24, "DT=%s", g->dt == FG_DTYPE_F16 ? "f16" :
		"bf16");
	if (g->kind == DEC_COMBINE)
		return nd;
	snprintf(d[nd++], 24, "PS=%d", g->ps);
	if (g->kind == DEC_APPEND)
		return nd;
	snprintf(d[nd++], 24, "CAUSAL=%s", tf(g->causal));
	snprintf(d[nd++], 24, "WINDOW=%s", tf(g->window));
	snprintf(d[nd++], 24, "SOFTCAP=%s", tf(g->softcap));
	snprintf(d[nd++], 24, "SEQLENS=%s", tf(g->seqlens));
	snprintf(d[nd++], 24, "SPLIT=%s", tf(g->split));
	snprintf(d[nd++], 24, "PACK=%d", g->pack);
	snprintf(d[nd++], 24, "NW=%d", g->nw);
	return nd;
}

fg_status
decode_kernel(fg_ctx *c, int cc, const DecCfg *cfg, fg_kernel **out)
{
	char d[MAXDEFS][24];
	const char *defs[MAXDEFS], *file = cc == 100 && cfg->kind ==
		DEC_ATTN ? "fa_decode_sm100.fa" : files[cfg->kind];
	int nd = defines(cfg, d);

	if (cc != 90 && cc != 100)
		return rt_err(c, FG_ERR_UNSUPPORTED, FN ": device %d is sm_%d; "
			"fagen's decode attention (fa_decode_sm90.fa, "
			"fa_decode_sm100.fa) runs on sm_90a (H100, H200) and "
			"sm_100a (B200) only", c->device, cc);
	for (int i = 0; i < nd; i++)
		defs[i] = d[i];
	return front_kernel(c, FN, cc, file, defs, nd, out);
}

DecCfg
decode_cfg(const Decode *t, DecKind kind)
{
	if (kind == DEC_ATTN)
		return t->cfg;
	return (DecCfg){.kind = kind, .dt = t->cfg.dt, .d = t->cfg.d,
		.ps = kind == DEC_APPEND ? t->cfg.ps : 0};
}

/* A tensor argument of strides st (its own dim order, 4 of them). */
static fg_arg
tens(const char *name, uint64_t ptr, const int64_t *st)
{
	return (fg_arg){.name = name, .kind = FG_ARG_TENSOR, .t = {.ptr = ptr,
		.strides = {st[0], st[1], st[2], st[3]}}};
}

int
decode_bind(const fg_decode_args *a, const Decode *t, uint64_t ws,
	fg_arg args[DEC_NARGS])
{
	const int64_t *q = t->st[0];
	double l2e = 1.4426950408889634;
	int n = 0;

	args[n++] = FG_INT("Z", a->batch);
	args[n++] = FG_INT("H", a->heads);
	args[n++] = FG_INT("G", t->g);
	args[n++] = FG_INT("SQ", a->seq_q);
	args[n++] = FG_INT("SKC", t->cap);
	args[n++] = FG_INT("NS", t->ns);
	args[n++] = FG_INT("SN", a->seq_new);
	/* softcap: s -> cap * tanh(s * scale / cap), the softmax in base 2
	 * of that, as attn_bind */
	args[n++] = FG_FLOAT("scale_log2", (a->softcap > 0 ? a->softcap :
		t->scale) * l2e);
	if (t->cfg.ps) {
		args[n++] = FG_INT("NP", a->num_pages);
		args[n++] = FG_INT("MP", a->max_pages);
	}
	if (t->cfg.window) {
		args[n++] = FG_INT("WL", t->wl);
		args[n++] = FG_INT("WR", t->wr);
	}
	if (t->cfg.softcap)
		args[n++] = FG_FLOAT("sc_in", t->scale / a->softcap);
	/* Q as [Z, SQ, H / PACK, PACK, D]: a tile's row r is query head
	 * hg * PACK + r % PACK */
	args[n++] = (fg_arg){.name = "Q", .kind = FG_ARG_TENSOR, .t = {
		.ptr = a->q, .strides = {q[0], q[1], t->cfg.pack * q[2], q[2],
		1}}};
	args[n++] = tens("KC", a->k_cache, t->st[1]);
	args[n++] = tens("VC", a->v_cache, t->st[2]);
	if (t->cfg.ps)
		args[n++] = FG_PTR("PT", a->page_table);
	if (t->cfg.seqlens)
		args[n++] = FG_PTR("SEQ", a->cache_seqlens);
	if (t->cfg.split) {
		args[n++] = FG_PTR("OP", ws + t->op);
		args[n++] = FG_PTR("LSEP", ws + t->lsep);
	} else {
		/* o dense: [Z, SQ, H / PACK, PACK, D] has its dense strides */
		args[n++] = FG_PTR("O", a->o);
		args[n++] = FG_PTR("LSE", a->lse ? a->lse : ws + t->lse);
	}
	return n;
}

int
decode_combine_bind(const fg_decode_args *a, const Decode *t, uint64_t ws,
	fg_arg args[DEC_NARGS])
{
	int n = 0;

	args[n++] = FG_INT("Z", a->batch);
	args[n++] = FG_INT("H", a->heads);
	args[n++] = FG_INT("SQ", a->seq_q);
	args[n++] = FG_INT("PK", t->cfg.pack);
	args[n++] = FG_INT("NS", t->ns);
	args[n++] = FG_PTR("OP", ws + t->op);
	args[n++] = FG_PTR("LSEP", ws + t->lsep);
	args[n++] = FG_PTR("O", a->o);
	args[n++] = FG_PTR("LSE", a->lse ? a->lse : ws + t->lse);
	return n;
}

int
decode_append_bind(const fg_decode_args *a, const Decode *t, int64_t z0,
	int64_t nz, fg_arg args[DEC_NARGS])
{
	/* checked: a launch's elements fit 32 bits, the whole 64 */
	int64_t row = t->hk * a->head_dim;
	uint64_t kn = (uint64_t)(z0 * a->seq_new * row * ESZ);
	uint64_t kc = a->page_table ? 0 : (uint64_t)(z0 * t->cap * row * ESZ);
	int n = 0;

	args[n++] = FG_INT("Z", nz);
	args[n++] = FG_INT("HK", t->hk);
	args[n++] = FG_INT("SN", a->seq_new);
	args[n++] = FG_INT("SKC", t->cap);
	if (t->cfg.ps) {
		args[n++] = FG_INT("NP", a->num_pages);
		args[n++] = FG_INT("MP", a->max_pages);
		args[n++] = FG_PTR("PT", a->page_table +
			(uint64_t)(z0 * a->max_pages * 4));
	}
	args[n++] = FG_PTR("SEQ", a->cache_seqlens + (uint64_t)z0 * 4);
	args[n++] = FG_PTR("KN", a->k_new + kn);
	args[n++] = FG_PTR("VN", a->v_new + kn);
	args[n++] = FG_PTR("KC", a->k_cache + kc);
	args[n++] = FG_PTR("VC", a->v_cache + kc);
	return n;
}

fg_status
decode_tables(fg_ctx *c, const fg_decode_args *a, const Decode *t,
	const int32_t *len, const int32_t *pt)
{
	int64_t most = t->cap - a->seq_new;

	for (int64_t b = 0; b < a->batch; b++) {
		int64_t l = t->cap;
		if (len && (len[b] < 0 || len[b] > most))
			return decode_bad(c, "validate: cache_seqlens[%lld] is %d: "
				"each must be 0 .. %lld (the cache holds %lld "
				"keys a sequence%s)", (long long)b, (int)len[b],
				(long long)most, (long long)t->cap, a->seq_new ?
				", seq_new more appended" : "");
		if (len)
			l = len[b] + a->seq_new;
		int64_t used = pt ? (l + a->page_size - 1) / a->page_size : 0;
		for (int64_t j = 0; pt && j < used; j++) {
			int32_t p = pt[b * a->max_pages + j];
			if (p < 0 || p >= a->num_pages)
				return decode_bad(c, "validate: "
					"page_table[%lld][%lld] is %d: page "
					"numbers must be 0 .. %lld "
					"(num_pages); sequence %lld's %lld "
					"keys use its first %lld entries",
					(long long)b, (long long)j, (int)p,
					(long long)(a->num_pages - 1),
					(long long)b, (long long)l,
					(long long)used);
		}
	}
	return FG_OK;
}

/* validate: cache_seqlens and page_table copied to the host in stream
 * order, the stream synchronized, and the tables checked.  Refused
 * while the stream captures a graph (it could not synchronize). */
static fg_status
validate(fg_ctx *c, const Driver *d, const fg_decode_args *a,
	const Decode *t, CUstream s)
{
	size_t nl = a->cache_seqlens ? (size_t)a->batch : 0;
	size_t np = a->page_table ? (size_t)(a->batch * a->max_pages) : 0;
	CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
	const CudaApi *cu = &d->cu;
	int32_t *h = NULL;
	CUcontext prev;
	fg_status st;

	if (!a->validate || nl + np == 0)
		return FG_OK;
	if ((st = cuda_check(c, d, cu->CtxPushCurrent(d->pctx),
	    "cuCtxPushCurrent")))
		return st;
	if (!(st = cuda_check(c, d, cu->StreamIsCapturing(s, &cs),
	    "cuStreamIsCapturing")) && cs != CU_STREAM_CAPTURE_STATUS_NONE)
		st = decode_bad(c, "validate is set but the stream is capturing a "
			"CUDA graph: validate reads cache_seqlens and "
			"page_table on the host, which synchronizes the "
			"stream; pass validate 0 during capture");
	if (!st && !(h = rt_alloc(c, (nl + np) * 4)))
		st = rt_err(c, FG_ERR_NOMEM, FN ": out of memory (validate's "
			"copy of the tables, %zu bytes)", (nl + np) * 4);
	if (!st && nl)
		st = cuda_check(c, d, cu->MemcpyDtoHAsync(h, a->cache_seqlens,
			nl * 4, s), FN ": validate: cuMemcpyDtoHAsync "
			"(cache_seqlens)");
	if (!st && np)
		st = cuda_check(c, d, cu->MemcpyDtoHAsync(h + nl, a->page_table,
			np * 4, s), FN ": validate: cuMemcpyDtoHAsync "
			"(page_table)");
	if (!st)
		st = cuda_check(c, d, cu->StreamSynchronize(s), FN ": "
			"validate: cuStreamSynchronize");
	cu->CtxPopCurrent(&prev);
	if (!st)
		st = decode_tables(c, a, t, nl ? h : NULL, np ? h + nl : NULL);
	if (h)
		rt_free(c, h, (nl + np) * 4);
	return st;
}

/* bytes of workspace on stream s, from the context's pool. */
static fg_status
scratch(fg_ctx *c, const Driver *d, CUstream s, size_t bytes,
	CUdeviceptr *out)
{
	CUmemoryPool mp;
	CUcontext prev;
	fg_status st;

	if ((st = attn_pool(c, d, &mp)) ||
	    (st = cuda_check(c, d, d->cu.CtxPushCurrent(d->pctx),
	    "cuCtxPushCurrent")))
		return st;
	st = cuda_check(c, d, d->cu.MemAllocFromPoolAsync(out, bytes, mp, s),
		"cuMemAllocFromPoolAsync (" FN "'s workspace)");
	d->cu.CtxPopCurrent(&prev);
	return st;
}

/* Plan a checked problem: the heuristic's SMs from the driver, which is
 * loaded first when num_splits is 0 (else after), and the workspace
 * given checked against the plan. */
static fg_status
prepare(fg_ctx *c, const fg_decode_args *a, Decode *t, Driver **d)
{
	fg_status st;

	if (!a->num_splits && (st = cuda_get(c, d)))
		return st;
	if (!a->num_splits)
		decode_retile(a, t, (*d)->tcc);
	if ((st = decode_plan(c, a, a->num_splits ? 0 : (*d)->nsm, t)))
		return st;
	if (a->workspace && a->workspace_bytes < t->bytes)
		return decode_bad(c, "workspace_bytes is %zu: this call needs %zu "
			"bytes of workspace (fg_attention_decode_workspace)",
			a->workspace_bytes, t->bytes);
	return a->num_splits ? cuda_get(c, d) : FG_OK;
}

/* The kernels of a planned problem (k[DEC_APPEND] NULL without k_new,
 * k[DEC_COMBINE] without splits). */
static fg_status
kernels(fg_ctx *c, int cc, const fg_decode_args *a, const Decode *t,
	fg_kernel *k[3])
{
	DecCfg g[3] = {decode_cfg(t, DEC_ATTN), decode_cfg(t, DEC_COMBINE),
		decode_cfg(t, DEC_APPEND)};
	fg_status st;

	if ((st = decode_kernel(c, cc, &g[DEC_ATTN], &k[DEC_ATTN])) ||
	    (t->ns > 1 && (st = decode_kernel(c, cc, &g[DEC_COMBINE],
	    &k[DEC_COMBINE]))) ||
	    (a->k_new && (st = decode_kernel(c, cc, &g[DEC_APPEND],
	    &k[DEC_APPEND]))))
		return st;
	return FG_OK;
}

/* Every launch's arguments checked, then the launches. */
static fg_status
launch(const fg_decode_args *a, const Decode *t, fg_kernel *const k[3],
	uint64_t ws, CUstream s)
{
	fg_arg da[DEC_NARGS], ca[DEC_NARGS], aa[DEC_NARGS];
	int nd = decode_bind(a, t, ws, da), nc = 0;
	int64_t z0, nz;
	fg_status st;

	if (t->ns > 1)
		nc = decode_combine_bind(a, t, ws, ca);
	if ((st = fg_kernel_check(k[DEC_ATTN], da, nd, NULL)) ||
	    (nc && (st = fg_kernel_check(k[DEC_COMBINE], ca, nc, NULL))))
		return st;
	for (z0 = 0; a->k_new && z0 < a->batch && !st; z0 += nz) {
		nz = a->batch - z0 < t->chunk ? a->batch - z0 : t->chunk;
		st = fg_kernel_check(k[DEC_APPEND], aa, decode_append_bind(a,
			t, z0, nz, aa), NULL);
	}
	for (z0 = 0; a->k_new && z0 < a->batch && !st; z0 += nz) {
		nz = a->batch - z0 < t->chunk ? a->batch - z0 : t->chunk;
		st = fg_launch(k[DEC_APPEND], s, aa, decode_append_bind(a, t,
			z0, nz, aa));
	}
	if (!st)
		st = fg_launch(k[DEC_ATTN], s, da, nd);
	if (!st && nc)
		st = fg_launch(k[DEC_COMBINE], s, ca, nc);
	return st;
}

fg_status
fg_attention_decode(fg_ctx *c, const fg_decode_args *a, CUstream s)
{
	fg_kernel *k[3] = {NULL};
	CUdeviceptr tmp = 0;
	CUcontext prev;
	Driver *d = NULL;
	Decode t;
	fg_status st;

	if (!c)
		return FG_ERR_INVALID;
	if (!a)
		return decode_bad(c, "args is NULL");
	if (s == NULL || s == CU_STREAM_LEGACY)
		return decode_bad(c, "fagen does not launch on the legacy default "
			"stream (%s); pass a stream you created "
			"(cuStreamCreate, best with CU_STREAM_NON_BLOCKING) or "
			"CU_STREAM_PER_THREAD", s ? "CU_STREAM_LEGACY" :
			"NULL");
	if ((st = decode_check(c, a, &t)) || (st = prepare(c, a, &t, &d)) ||
	    (st = kernels(c, d->tcc, a, &t, k)) ||
	    (st = validate(c, d, a, &t, s)))
		return st;
	uint64_t ws = a->workspace;
	if (t.bytes && !ws) {
		if ((st = scratch(c, d, s, t.bytes, &tmp)))
			return st;
		ws = tmp;
	}
	st = launch(a, &t, k, ws, s);
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
fg_attention_decode_workspace(fg_ctx *c, const fg_decode_args *a,
	size_t *bytes)
{
	Driver *d = NULL;
	Decode t;
	fg_status st;

	if (!c)
		return FG_ERR_INVALID;
	if (a && !bytes)
		return decode_bad(c, "bytes is NULL");
	if ((st = decode_check(c, a, &t)) ||
	    (!a->num_splits && (st = cuda_get(c, &d))))
		return st;
	if (d)
		decode_retile(a, &t, d->tcc);
	if ((st = decode_plan(c, a, d ? d->nsm : 0, &t)))
		return st;
	*bytes = t.bytes;
	rt_clear(c);
	return FG_OK;
}
