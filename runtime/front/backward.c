/* backward.c: fg_attention_backward, the attention backward pass on the
 * shipped schedules (issue #13).
 *
 * Three launches on the caller's stream: fa_bwd_pre_sm90.fa (DELTA =
 * rowsum(dO * O) per query row, and dQ's f32 accumulator cleared),
 * fa_bwd_sm90.fa (one CTA per 128 keys, warp-specialized: dK and dV, dQ
 * added into the accumulator by TMA reduce-adds; args.schedule may name
 * fa_bwd_baseline_sm90.fa, one warpgroup per 64 keys, without windows
 * or softcaps) and fa_bwd_post_sm90.fa (dQ = accumulator * scale,
 * in the caller's type and strides).  DELTA and the accumulator are
 * scratch taken stream-ordered from a pool of the context's and freed
 * on the stream after the last launch.  args.deterministic builds
 * fa_bwd_sm90.fa with -D DETERMINISTIC=true, whose CTAs add their dQ
 * tiles in key-block order, counted in DQSEM: more scratch, zeroed on
 * the stream before the launches.  Every argument is checked as
 * fg_attention_forward checks its own, before anything needs the GPU. */
#include <stdio.h>
#include <string.h>

#include "rt_front.h"

/* Scratch kept by the pool between calls (bytes): a step's DQACC at
 * B=1, S=16k, H=32, D=128 is 256 MB. */
#define BWD_KEEP ((cuuint64_t)1 << 30)

fg_status
attn_pool(fg_ctx *c, const Driver *d, CUmemoryPool *out)
{
	const CudaApi *cu = &d->cu;
	CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
		.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE,
		.id = d->dev}};
	cuuint64_t keep = BWD_KEEP;
	fg_status st = FG_OK;

	pthread_mutex_lock(&c->attn_mu);
	if (!c->bwd_pool) {
		CUmemoryPool p;
		if (!(st = cuda_check(c, d, cu->MemPoolCreate(&p, &props),
		    "cuMemPoolCreate"))) {
			if ((st = cuda_check(c, d, cu->MemPoolSetAttribute(p,
			    CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep),
			    "cuMemPoolSetAttribute(release threshold)")))
				cu->MemPoolDestroy(p);
			else
				c->bwd_pool = p;
		}
	}
	*out = c->bwd_pool;
	pthread_mutex_unlock(&c->attn_mu);
	return st;
}

static fg_status
unsupported(fg_ctx *c, const char *fn, const char *what)
{
	return rt_err(c, FG_ERR_UNSUPPORTED, "%s: %s has no backward pass "
		"yet (supported: head_dim 64, 96, 128, 192 and 256, causal or not, "
		"GQA/MQA, "
		"sliding windows, softcaps, ALiBi, sinks, variable-length "
		"batches, mods, block masks)", fn,
		what);
}

/* What deterministic mode does not take: only fa_bwd_sm90.fa orders
 * its dQ adds (the baseline's are per-element atomics), and not with a
 * block mask, whose empty blocks are skipped: a query block's counter
 * in DQSEM would wait for key blocks that never add. */
static fg_status
check_det(fg_ctx *c, const char *fn, const fg_attention_bwd_args *a)
{
	if (!a->deterministic)
		return FG_OK;
	if (a->schedule && !strcmp(a->schedule, "fa_bwd_baseline_sm90.fa"))
		return rt_err(c, FG_ERR_UNSUPPORTED, "%s: deterministic is set "
			"but fa_bwd_baseline_sm90.fa has no deterministic mode "
			"(its dQ is summed by per-element atomic adds, in no "
			"fixed order); leave schedule NULL for fa_bwd_sm90.fa",
			fn);
	if (a->fwd.block_kv_num)
		return rt_err(c, FG_ERR_UNSUPPORTED, "%s: deterministic is set "
			"with a block mask: fa_bwd_sm90.fa has no "
			"deterministic mode with block masks yet", fn);
	return FG_OK;
}

static fg_status
check(fg_ctx *c, const char *fn, const fg_attention_bwd_args *a,
	CUstream s, Attn *t, int64_t st[4][4])
{
	const fg_attention_args *f = &a->fwd;
	fg_status rs;

	if ((rs = attn_check(c, fn, f, s, true, t)) ||
	    (rs = flex_check(c, fn, f)))
		return rs;
	bool base = a->schedule && !strcmp(a->schedule,
		"fa_bwd_baseline_sm90.fa");
	if (attn_varlen(f) && base)
		return unsupported(c, fn, "fa_bwd_baseline_sm90.fa with a "
			"variable-length batch");
	if (f->window && base)
		return unsupported(c, fn, "fa_bwd_baseline_sm90.fa with a "
			"sliding window");
	if (f->softcap > 0 && base)
		return unsupported(c, fn, "fa_bwd_baseline_sm90.fa with a "
			"softcap");
	if (f->sinks && base)
		return unsupported(c, fn, "fa_bwd_baseline_sm90.fa with sinks");
	if (flex_any(f) && base)
		return unsupported(c, fn, "fa_bwd_baseline_sm90.fa with mods or "
			"a block mask");
	if (f->block_kv_num && !a->block_qlist)
		return rt_err(c, FG_ERR_INVALID, "%s: the forward has a block "
			"mask but block_qlist is 0: give each key block's list "
			"of query blocks", fn);
	if (!f->block_kv_num && a->block_qlist)
		return rt_err(c, FG_ERR_INVALID, "%s: block_qlist is given but "
			"the forward has no block mask", fn);
	if (a->block_qlist % 4)
		return rt_err(c, FG_ERR_INVALID, "%s: block_qlist = 0x%llx is "
			"not aligned to its int32 elements", fn,
			(unsigned long long)a->block_qlist);
	if (f->alibi_slopes && base)
		return unsupported(c, fn, "fa_bwd_baseline_sm90.fa with ALiBi");
	/* attn_check took head_dim 64, 96, 128, 192 or 256, and head_dim_v
	 * = head_dim or 128 with 192 (DeepSeek's MLA prefill shape): all
	 * have a backward (fa_bwd_sm90.fa's SPLIT form above 128) */
	if (f->head_dim > 128 && base)
		return rt_err(c, FG_ERR_UNSUPPORTED, "%s: head_dim %lld with "
			"fa_bwd_baseline_sm90.fa, which takes 64, 96 and 128 "
			"(its one warpgroup's dK and dV would not fit in "
			"registers); leave schedule NULL for fa_bwd_sm90.fa",
			fn, (long long)f->head_dim);
	if (f->schedule)
		return rt_err(c, FG_ERR_INVALID, "%s: fwd.schedule is '%.64s'; "
			"the backward pass's schedule is args.schedule (leave "
			"fwd.schedule NULL)", fn, f->schedule);
	if (a->schedule && strcmp(a->schedule, "fa_bwd_sm90.fa") &&
	    strcmp(a->schedule, "fa_bwd_baseline_sm90.fa"))
		return rt_err(c, FG_ERR_INVALID, "%s: schedule is '%.64s'; the "
			"backward pass runs fa_bwd_sm90.fa (NULL) or "
			"fa_bwd_baseline_sm90.fa", fn, a->schedule);
	if ((rs = check_det(c, fn, a)) ||
	    (rs = attn_tensor(c, fn, "dout", a->dout, a->dout_strides, true,
	    true, f, true, st[0])) ||
	    (rs = attn_tensor(c, fn, "dq", a->dq, a->dq_strides, true, false,
	    f, true, st[1])) ||
	    (rs = attn_tensor(c, fn, "dk", a->dk, a->dk_strides, false, false,
	    f, true, st[2])) ||
	    (rs = attn_tensor(c, fn, "dv", a->dv, a->dv_strides, false, true,
	    f, true, st[3])))
		return rs;
	/* varlen: a sequence's last rows of dK and dV go out from
	 * registers, which address them densely */
	for (int i = 2; i < 4 && attn_varlen(f); i++) {
		int64_t dd = i == 2 ? f->head_dim : attn_dv(f);
		int64_t hkd = attn_heads_k(f) * dd;
		if (st[i][1] != dd || st[i][2] != hkd)
			return rt_err(c, FG_ERR_INVALID, "%s: %s_strides are (head "
				"%lld, token %lld): a variable-length batch writes "
				"%s as a dense [seq_k, heads_k, head_dim] tensor; "
				"pass 0 strides and a contiguous %s", fn, i == 2 ?
				"dk" : "dv", (long long)st[i][1],
				(long long)st[i][2], i == 2 ? "dk" : "dv", i == 2 ?
				"dk" : "dv");
	}
	return FG_OK;
}

/* n int32 zeros at p, on stream s (DQSEM: the main kernel counts in
 * them, from 0, and the pool hands back memory a last call counted in). */
static fg_status
zero32(fg_ctx *c, const Driver *d, uint64_t p, int64_t n, CUstream s)
{
	CUcontext prev;
	fg_status st;

	if ((st = cuda_check(c, d, d->cu.CtxPushCurrent(d->pctx),
	    "cuCtxPushCurrent")))
		return st;
	st = cuda_check(c, d, d->cu.MemsetD32Async(p, 0, (size_t)n, s),
		"cuMemsetD32Async (the backward's DQSEM)");
	d->cu.CtxPopCurrent(&prev);
	return st;
}

/* A tensor argument over the schedule's [Z, S, H, D], from strides
 * (batch, head, seq, dim). */
static fg_arg
tens(const char *name, uint64_t ptr, const int64_t *st)
{
	return (fg_arg){.name = name, .kind = FG_ARG_TENSOR, .t = {.ptr = ptr,
		.strides = {st[0], st[2], st[1], 1}}};
}

fg_status
fg_attention_backward(fg_ctx *c, const fg_attention_bwd_args *a,
	CUstream s)
{
	static const char fn[] = "fg_attention_backward";
	int64_t gst[4][4], nrow, nacc, nsem = 0;
	fg_kernel *pre, *mid, *post;
	CUmemoryPool mp;
	CUdeviceptr scratch;
	CUcontext prev;
	Driver *d;
	Attn t;
	fg_status st;

	if (!c)
		return FG_ERR_INVALID;
	if (!a)
		return rt_err(c, FG_ERR_INVALID, "%s: args is NULL", fn);
	const fg_attention_args *f = &a->fwd;
	if ((st = check(c, fn, a, s, &t, gst)) || (st = cuda_get(c, &d)))
		return st;
	int cc = d->tcc;
	const char *main_file = "fa_bwd_sm90.fa";
	if (cc != 90 && cc != 100)
		return rt_err(c, FG_ERR_UNSUPPORTED, "%s: device %d is sm_%d; "
			"fagen's backward pass runs on sm_90a (H100, H200) and "
			"sm_100a (B200) only", fn, c->device, cc);
	if (cc == 100 && a->deterministic)
		return rt_err(c, FG_ERR_UNSUPPORTED, "%s: deterministic on "
			"sm_100: the runtime does not offer it yet (fa_bwd_sm100.fa "
			"has the variant, -D DETERMINISTIC=true, checked by ptxas, "
			"the verifier and the simulator at head_dim 128 only)", fn);
	int dd = (int)f->head_dim;
	/* sm_100: fa_bwd_sm100.fa, the Blackwell main loop (never run on
	 * hardware: ptxas, the verifier and the simulator), with the sm_90a
	 * pre and post kernels compiled for sm_100a */
	if (cc == 100 && !a->schedule) {
		if (dd != 64 && dd != 96 && dd != 128)
			return rt_err(c, FG_ERR_UNSUPPORTED, "%s: head_dim %d on "
				"sm_100: fagen's sm_100a backward takes head_dim "
				"64, 96 and 128", fn, dd);
		if (f->window || f->softcap > 0 || attn_varlen(f) ||
		    f->alibi_slopes || flex_any(f))
			return rt_err(c, FG_ERR_UNSUPPORTED, "%s: fagen's "
				"sm_100a backward (fa_bwd_sm100.fa) has no %s yet: "
				"dense and causal attention, GQA, sinks", fn,
				f->window ? "sliding window" : f->softcap > 0 ?
				"softcap" : attn_varlen(f) ? "variable-length "
				"batches" : f->alibi_slopes ? "ALiBi" :
				"score or mask mods or block masks");
		main_file = "fa_bwd_sm100.fa";
	}
	/* rows of DELTA and of the f32 accumulator: fit 64 bits, as the
	 * checks above bound every extent by 2^31 */
	/* varlen: the packed rows are one batch to DELTA and dQ */
	int64_t zt = attn_varlen(f) ? 1 : f->batch;
	if (!ck_mul64(zt, f->heads, &nrow) ||
	    !ck_mul64(nrow, f->seq_q, &nrow) || !ck_mul64(nrow, dd, &nacc) ||
	    nacc > INT32_MAX)
		return rt_err(c, FG_ERR_INVALID, "%s: batch * heads * seq_q * "
			"head_dim = %lld * %lld * %lld * %d overflows the "
			"kernels' 32-bit indexing of dQ's accumulator", fn,
			(long long)f->batch, (long long)f->heads,
			(long long)f->seq_q, dd);
	/* DQSEM: a counter per batch (varlen: sequence), query head and
	 * 64-row query block */
	if (a->deterministic && (!ck_mul64(f->batch, f->heads, &nsem) ||
	    !ck_mul64(nsem, (f->seq_q + 63) / 64, &nsem) ||
	    nsem > INT32_MAX))
		return rt_err(c, FG_ERR_INVALID, "%s: batch * heads * "
			"cdiv(seq_q, 64) = %lld * %lld * %lld overflows the "
			"kernel's 32-bit indexing of its deterministic mode's "
			"counters", fn, (long long)f->batch,
			(long long)f->heads, (long long)(f->seq_q + 63) / 64);
	bool win = f->window != 0, cap = f->softcap > 0, vl = attn_varlen(f);
	/* sinks need no variant of the backward: they are in the LSE, so
	 * P = exp(S - LSE) is already the forward's, and DELTA = rowsum(dO
	 * O) holds them too (the sinks' own gradient, -sum exp(sink - LSE)
	 * DELTA, is the caller's; Python's is in fagen.attention) */
	fg_attention_args fk = *f, fq = *f;
	fk.sinks = 0;
	/* the pre kernel reads O and dO (-D DV where V's head dim is not
	 * Q's); the post kernel only dQ's head_dim columns */
	fq.head_dim_v = 0;
	if ((st = attn_kernel(c, fn, "fa_bwd_pre_sm90.fa", cc, f, AK_PLAIN,
	    &pre)) ||
	    (st = attn_kernel(c, fn, a->schedule ? a->schedule : main_file,
	    cc, &fk, a->deterministic ? AK_DETERMINISTIC : 0, &mid)) ||
	    (st = attn_kernel(c, fn, "fa_bwd_post_sm90.fa", cc, &fq, AK_PLAIN,
	    &post)) || (st = attn_pool(c, d, &mp)))
		return st;
	if ((st = cuda_check(c, d, d->cu.CtxPushCurrent(d->pctx),
	    "cuCtxPushCurrent")))
		return st;
	/* DELTA, then the accumulator and DQSEM, each 16-byte aligned */
	size_t bytes = (size_t)(nrow + nacc + nsem) * 4 + 32;
	st = cuda_check(c, d, d->cu.MemAllocFromPoolAsync(&scratch, bytes, mp,
		s), "cuMemAllocFromPoolAsync (the backward's scratch)");
	d->cu.CtxPopCurrent(&prev);
	if (st)
		return st;
	uint64_t delta = scratch, acc = scratch + (uint64_t)nrow * 4;
	acc = (acc + 15) & ~(uint64_t)15;  /* nrow * 4 is a multiple of 4 */
	uint64_t sem = (acc + (uint64_t)nacc * 4 + 15) & ~(uint64_t)15;
	double l2e = 1.4426950408889634;
	const int64_t *ost = t.st[3];
	fg_arg pa[] = {
		FG_INT("Z", zt), FG_INT("H", f->heads),
		FG_INT("S", f->seq_q), tens("O", f->o, ost),
		tens("DO", a->dout, gst[0]), FG_PTR("DELTA", delta),
		FG_PTR("DQACC", acc),
	};
	/* softcap: s -> cap * tanh(s * scale / cap), the softmax in base 2
	 * of that, as the forward */
	fg_arg ma[26 + FLEX_NARGS] = {
		FG_INT("Z", f->batch), FG_INT("H", f->heads),
		FG_INT("G", f->heads / attn_heads_k(f)),
		FG_INT("SQ", f->seq_q), FG_INT("SK", f->seq_k),
		FG_FLOAT("scale_log2", f->mods && f->score_mod ? l2e :
			(cap ? f->softcap : t.scale) * l2e),
		FG_FLOAT("scale", t.scale), tens("Q", f->q, t.st[0]),
		tens("K", f->k, t.st[1]), tens("V", f->v, t.st[2]),
		tens("DO", a->dout, gst[0]), FG_PTR("LSE", f->lse),
		FG_PTR("DELTA", delta), FG_PTR("DQACC", acc),
		tens("GK", a->dk, gst[2]), tens("GV", a->dv, gst[3]),
	};
	int nm = 16;
	if (win) {
		ma[nm++] = FG_INT("WL", t.wl);
		ma[nm++] = FG_INT("WR", t.wr);
	}
	if (cap)
		ma[nm++] = FG_FLOAT("sc_in", t.scale / f->softcap);
	if (f->alibi_slopes)
		ma[nm++] = FG_PTR("SLOPES", f->alibi_slopes);  /* f32 [heads] */
	if (vl) {
		/* at least one key block: a batch without keys has an
		 * empty grid otherwise (its CTAs find no key and leave) */
		ma[nm++] = FG_INT("MK", f->max_seqlen_k > 0 ? f->max_seqlen_k :
			1);
		ma[nm++] = FG_PTR("CUQ", f->cu_seqlens_q);  /* i32 [Z + 1] */
		ma[nm++] = FG_PTR("CUK", f->cu_seqlens_k);
	}
	if (f->block_kv_num) {
		ma[nm++] = FG_PTR("QLST", a->block_qlist);
	}
	if (nsem)
		ma[nm++] = FG_PTR("DQSEM", sem);  /* i32 [Z, H, cdiv(SQ, 64)] */
	for (int i = 0; f->mods && i < f->nmod_args; i++)
		ma[nm++] = f->mod_args[i];
	fg_arg qa[] = {
		FG_INT("Z", zt), FG_INT("H", f->heads),
		FG_INT("S", f->seq_q), FG_FLOAT("scale", t.scale),
		FG_PTR("DQACC", acc), tens("DQ", a->dq, gst[1]),
	};
	if (nsem)
		st = zero32(c, d, sem, nsem, s);
	if (!st && !(st = fg_launch(pre, s, pa, (int)COUNT(pa))) &&
	    !(st = fg_launch(mid, s, ma, nm)))
		st = fg_launch(post, s, qa, (int)COUNT(qa));
	/* freed after whatever was launched: stream order */
	d->cu.CtxPushCurrent(d->pctx);
	fg_status fst = cuda_check(c, d, d->cu.MemFreeAsync(scratch, s),
		"cuMemFreeAsync");
	d->cu.CtxPopCurrent(&prev);
	return st ? st : fst;
}
