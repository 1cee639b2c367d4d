/* gpu_attention_bwd.c: fg_attention_backward on a Hopper GPU (issue #13)
 * against the float64 backward of gpu_ref_bwd.h: random Q, K, V and dO,
 * the forward by fg_attention_forward, then dQ, dK and dV poisoned (NaN)
 * and computed twice; dK and dV must repeat bit for bit (dQ is summed
 * with atomic adds), nothing may be NaN, and each gradient's relative
 * RMS error must stay within a 16-bit tolerance.  Odd lengths, SQ != SK
 * both ways (rows that see no key), GQA and MQA, both dtypes and head
 * dims, B,H,S,D and B,S,H,D layouts, windows and softcaps, variable-
 * length batches; deterministic mode (computed three times: dQ too
 * must repeat bit for bit); and refusals of what it does not support.
 * Exit 77 without a Hopper GPU. */
#include "gpu_runtime.h"
#include "gpu_ref.h"
#include "gpu_ref_bwd.h"

typedef struct Case {
	bool bshd;
	int z, h, hk, sq, sk, d;
	bool causal, f16;
	int wl, wr;      /* a window (-2: none; -1: unbounded side) */
	double cap;      /* a softcap (0: none) */
	bool det;        /* deterministic: dQ repeats bit for bit too */
} Case;

static fg_ctx *ctx;
static CUstream stream;

static void
strides(bool bshd, int z, int seq, int64_t h, int64_t d, int64_t st[4],
	size_t *n)
{
	if (bshd)
		st[0] = seq * h * d, st[1] = d, st[2] = h * d;
	else
		st[0] = h * seq * d, st[1] = seq * d, st[2] = d;
	st[3] = 1;
	*n = (size_t)z * seq * h * d;
}

static CUdeviceptr
upload(const void *h, size_t bytes)
{
	CUdeviceptr p;

	CK(cu.MemAlloc(&p, bytes));
	CK(cu.MemcpyHtoD(p, h, bytes));
	return p;
}

static int
run(const Case *c)
{
	RefProb p = {c->z, c->h, c->sq, c->sk, c->d, c->causal, c->f16, {{0}},
		c->h / c->hk, c->wl > -2, c->wl, c->wr, c->cap, NULL, NULL,
		NULL, 0};
	size_t nq, nk, nl = (size_t)c->z * c->h * c->sq;
	int bad = 0, nrun = c->det ? 3 : 2;

	strides(c->bshd, c->z, c->sq, c->h, c->d, p.st[0], &nq);
	strides(c->bshd, c->z, c->sk, c->hk, c->d, p.st[1], &nk);
	memcpy(p.st[2], p.st[1], sizeof p.st[1]);
	memcpy(p.st[3], p.st[0], sizeof p.st[0]);
	uint16_t *q = malloc(nq * 2), *k = malloc(nk * 2), *v = malloc(nk * 2);
	uint16_t *g = malloc(nq * 2), *dq[3], *dk[3], *dv[3];
	for (int r = 0; r < nrun; r++) {
		dq[r] = malloc(nq * 2);
		dk[r] = malloc(nk * 2);
		dv[r] = malloc(nk * 2);
	}
	for (size_t i = 0; i < nq; i++) {
		q[i] = to16(2 * urand(), c->f16);
		g[i] = to16(urand(), c->f16);
	}
	for (size_t i = 0; i < nk; i++) {
		k[i] = to16(2 * urand(), c->f16);
		v[i] = to16(urand(), c->f16);
	}
	CUdeviceptr Q = upload(q, nq * 2), K = upload(k, nk * 2);
	CUdeviceptr V = upload(v, nk * 2), G = upload(g, nq * 2), O, L;
	CUdeviceptr DQ, DK, DV;
	CK(cu.MemAlloc(&O, nq * 2));
	CK(cu.MemAlloc(&L, nl * 4));
	CK(cu.MemAlloc(&DQ, nq * 2));
	CK(cu.MemAlloc(&DK, nk * 2));
	CK(cu.MemAlloc(&DV, nk * 2));
	fg_attention_bwd_args a = {.fwd = {
		.q = Q, .k = K, .v = V, .o = O, .lse = L,
		.batch = c->z, .heads = c->h, .seq_q = c->sq, .seq_k = c->sk,
		.head_dim = c->d, .causal = c->causal,
		.dtype = c->f16 ? FG_DTYPE_F16 : FG_DTYPE_BF16,
		.heads_k = c->hk, .window = c->wl > -2, .window_left = c->wl,
		.window_right = c->wr, .softcap = c->cap}, .dout = G, .dq = DQ,
		.dk = DK, .dv = DV, .deterministic = c->det};
	if (c->bshd) {
		memcpy(a.fwd.q_strides, p.st[0], sizeof p.st[0]);
		memcpy(a.fwd.k_strides, p.st[1], sizeof p.st[1]);
		memcpy(a.fwd.v_strides, p.st[1], sizeof p.st[1]);
		memcpy(a.fwd.o_strides, p.st[0], sizeof p.st[0]);
		memcpy(a.dout_strides, p.st[0], sizeof p.st[0]);
		memcpy(a.dq_strides, p.st[0], sizeof p.st[0]);
		memcpy(a.dk_strides, p.st[1], sizeof p.st[1]);
		memcpy(a.dv_strides, p.st[1], sizeof p.st[1]);
	}
	FG(ctx, fg_attention_forward(ctx, &a.fwd, stream));
	double ms = 0;
	for (int r = 0; r < nrun; r++) {
		CK(cu.MemsetD8Async(DQ, 0xff, nq * 2, stream));  /* poison */
		CK(cu.MemsetD8Async(DK, 0xff, nk * 2, stream));
		CK(cu.MemsetD8Async(DV, 0xff, nk * 2, stream));
		CK(cu.StreamSynchronize(stream));
		double t0 = gpu_ms();
		FG(ctx, fg_attention_backward(ctx, &a, stream));
		CK(cu.StreamSynchronize(stream));
		ms = gpu_ms() - t0;
		CK(cu.MemcpyDtoH(dq[r], DQ, nq * 2));
		CK(cu.MemcpyDtoH(dk[r], DK, nk * 2));
		CK(cu.MemcpyDtoH(dv[r], DV, nk * 2));
	}
	for (int r = 1; r < nrun; r++) {
		if (memcmp(dk[0], dk[r], nk * 2) ||
		    memcmp(dv[0], dv[r], nk * 2))
			bad |= 4;
		if (c->det && memcmp(dq[0], dq[r], nq * 2))
			bad |= 2;
	}
	double *rq = malloc(nq * 8), *rk = malloc(nk * 8), *rv = malloc(nk * 8);
	ref_backward(&p, q, k, v, g, NULL, NULL, rq, rk, rv);
	bool nan = false;
	double eq = ref_rel16(dq[0], rq, nq, c->f16, &nan);
	double ek = ref_rel16(dk[0], rk, nk, c->f16, &nan);
	double ev = ref_rel16(dv[0], rv, nk, c->f16, &nan);
	double tol = c->f16 ? 4e-3 : 2e-2;
	if (nan)
		bad |= 1;
	if (!(eq <= tol && ek <= tol && ev <= tol))
		bad |= 8;
	char var[64] = "";
	if (c->wl > -2)
		snprintf(var, sizeof var, " window (%d, %d)", c->wl, c->wr);
	if (c->cap > 0)
		snprintf(var + strlen(var), sizeof var - strlen(var),
			" softcap %g", c->cap);
	if (c->det)
		snprintf(var + strlen(var), sizeof var - strlen(var),
			" deterministic (%d runs)", nrun);
	printf("%s Z=%d H=%d HK=%d SQ=%d SK=%d D=%d %s%s %s: rel err dQ %.2e "
		"dK %.2e dV %.2e; call %.2f ms%s%s%s -> %s\n", c->bshd ?
		"B,S,H,D" : "B,H,S,D", c->z, c->h, c->hk, c->sq, c->sk, c->d,
		c->causal ? "causal" : "full", var, c->f16 ? "f16" : "bf16", eq,
		ek, ev, ms,
		nan ? ", NaN" : "", bad & 4 ? ", dK/dV differ between runs" : "",
		bad & 2 ? ", dQ differs between runs" : "", bad ? "FAIL" :
		"ok");
	free(q), free(k), free(v), free(g), free(rq), free(rk), free(rv);
	for (int r = 0; r < nrun; r++)
		free(dq[r]), free(dk[r]), free(dv[r]);
	cu.MemFree(Q), cu.MemFree(K), cu.MemFree(V), cu.MemFree(G);
	cu.MemFree(O), cu.MemFree(L), cu.MemFree(DQ), cu.MemFree(DK);
	cu.MemFree(DV);
	return bad;
}

/* A variable-length batch (packed sequences of the given lengths, GQA
 * 4/2, bf16, B,S,H,D packed): each sequence against its own float64
 * backward; dK and dV repeat bit for bit, and dQ too when det
 * (deterministic, three runs). */
static int
run_varlen(int n, const int *lq, const int *lk, int d, bool causal, bool det)
{
	int h = 4, hk = 2, sq = 0, sk = 0, mq = 0, mk = 0, bad = 0;
	int nrun = det ? 3 : 2;
	int32_t cq[17] = {0}, ck[17] = {0};

	for (int b = 0; b < n; b++) {
		cq[b + 1] = cq[b] + lq[b], ck[b + 1] = ck[b] + lk[b];
		mq = lq[b] > mq ? lq[b] : mq, mk = lk[b] > mk ? lk[b] : mk;
	}
	sq = cq[n], sk = ck[n];
	size_t nq = (size_t)sq * h * d, nk = (size_t)sk * hk * d;
	uint16_t *q = malloc(nq * 2), *k = malloc(nk * 2), *v = malloc(nk * 2);
	uint16_t *g = malloc(nq * 2), *dq[3], *dk[3], *dv[3];
	for (int r = 0; r < nrun; r++) {
		dq[r] = malloc(nq * 2);
		dk[r] = malloc(nk * 2), dv[r] = malloc(nk * 2);
	}
	for (size_t i = 0; i < nq; i++)
		q[i] = to16(2 * urand(), false), g[i] = to16(urand(), false);
	for (size_t i = 0; i < nk; i++)
		k[i] = to16(2 * urand(), false), v[i] = to16(urand(), false);
	CUdeviceptr Q = upload(q, nq * 2), K = upload(k, nk * 2);
	CUdeviceptr V = upload(v, nk * 2), G = upload(g, nq * 2);
	CUdeviceptr CQ = upload(cq, (size_t)(n + 1) * 4);
	CUdeviceptr CK = upload(ck, (size_t)(n + 1) * 4), O, L, DQ, DK, DV;
	CK(cu.MemAlloc(&O, nq * 2));
	CK(cu.MemAlloc(&L, (size_t)h * sq * 4));
	CK(cu.MemAlloc(&DQ, nq * 2));
	CK(cu.MemAlloc(&DK, nk * 2));
	CK(cu.MemAlloc(&DV, nk * 2));
	fg_attention_bwd_args a = {.fwd = {
		.q = Q, .k = K, .v = V, .o = O, .lse = L, .batch = n, .heads = h,
		.seq_q = sq, .seq_k = sk, .head_dim = d, .causal = causal,
		.dtype = FG_DTYPE_BF16, .heads_k = hk, .cu_seqlens_q = CQ,
		.cu_seqlens_k = CK, .max_seqlen_q = mq, .max_seqlen_k = mk},
		.dout = G, .dq = DQ, .dk = DK, .dv = DV, .deterministic = det};
	FG(ctx, fg_attention_forward(ctx, &a.fwd, stream));
	for (int r = 0; r < nrun; r++) {
		CK(cu.MemsetD8Async(DQ, 0xff, nq * 2, stream));  /* poison */
		CK(cu.MemsetD8Async(DK, 0xff, nk * 2, stream));
		CK(cu.MemsetD8Async(DV, 0xff, nk * 2, stream));
		FG(ctx, fg_attention_backward(ctx, &a, stream));
		CK(cu.StreamSynchronize(stream));
		CK(cu.MemcpyDtoH(dq[r], DQ, nq * 2));
		CK(cu.MemcpyDtoH(dk[r], DK, nk * 2));
		CK(cu.MemcpyDtoH(dv[r], DV, nk * 2));
	}
	for (int r = 1; r < nrun; r++) {
		if (memcmp(dk[0], dk[r], nk * 2) ||
		    memcmp(dv[0], dv[r], nk * 2))
			bad |= 4;
		if (det && memcmp(dq[0], dq[r], nq * 2))
			bad |= 2;
	}
	double *rq = malloc(nq * 8), *rk = malloc(nk * 8), *rv = malloc(nk * 8);
	for (int b = 0; b < n; b++) {
		RefProb p = {1, h, lq[b], lk[b], d, causal, false, {
			{0, d, (int64_t)h * d, 1}, {0, d, (int64_t)hk * d, 1},
			{0, d, (int64_t)hk * d, 1}, {0, d, (int64_t)h * d, 1}},
			h / hk, false, 0, 0, 0, NULL, NULL, NULL, 0};
		size_t oq = (size_t)cq[b] * h * d, ok = (size_t)ck[b] * hk * d;
		ref_backward(&p, q + oq, k + ok, v + ok, g + oq, NULL, NULL,
			rq + oq, rk + ok, rv + ok);
	}
	bool nan = false;
	double eq = ref_rel16(dq[0], rq, nq, false, &nan);
	double ek = ref_rel16(dk[0], rk, nk, false, &nan);
	double ev = ref_rel16(dv[0], rv, nk, false, &nan);
	if (nan)
		bad |= 1;
	if (!(eq <= 2e-2 && ek <= 2e-2 && ev <= 2e-2))
		bad |= 8;
	printf("varlen %d sequences (SQ=%d SK=%d) H=4 HK=2 D=%d %s bf16%s: "
		"rel err dQ %.2e dK %.2e dV %.2e%s%s%s -> %s\n", n, sq, sk, d,
		causal ? "causal" : "full", det ? " deterministic (3 runs)" :
		"", eq, ek, ev, nan ? ", NaN" : "", bad & 4 ?
		", dK/dV differ between runs" : "", bad & 2 ?
		", dQ differs between runs" : "", bad ? "FAIL" : "ok");
	free(q), free(k), free(v), free(g), free(rq), free(rk), free(rv);
	for (int r = 0; r < nrun; r++)
		free(dq[r]), free(dk[r]), free(dv[r]);
	cu.MemFree(Q), cu.MemFree(K), cu.MemFree(V), cu.MemFree(G);
	cu.MemFree(CQ), cu.MemFree(CK), cu.MemFree(O), cu.MemFree(L);
	cu.MemFree(DQ), cu.MemFree(DK), cu.MemFree(DV);
	return bad;
}

/* Misuse is refused before any launch, naming the argument: sinks with
 * the baseline backward (fa_bwd_sm90.fa takes them: they are in the
 * LSE), head dim 192 (V's 128) and 256 with the baseline, no dk,
 * deterministic with the baseline. */
static int
refusals(void)
{
	fg_attention_bwd_args a = {.fwd = {.q = 256, .k = 256, .v = 256,
		.o = 256, .lse = 256, .batch = 1, .heads = 2, .seq_q = 8,
		.seq_k = 8, .head_dim = 64, .dtype = FG_DTYPE_BF16},
		.dout = 256, .dq = 256, .dk = 256, .dv = 256};
	struct {
		const char *what;
		fg_status want;
	} cs[] = {
		{"sinks", FG_ERR_UNSUPPORTED},
		{"head_dim 192 with fa_bwd_baseline_sm90.fa", FG_ERR_UNSUPPORTED},
		{"head_dim 256 with fa_bwd_baseline_sm90.fa",
			FG_ERR_UNSUPPORTED},
		{"dk", FG_ERR_INVALID},
		{"fa_bwd_baseline_sm90.fa has no deterministic mode",
			FG_ERR_UNSUPPORTED},
	};
	int bad = 0;

	for (int i = 0; i < (int)(sizeof cs / sizeof cs[0]); i++) {
		fg_attention_bwd_args b = a;
		if (i == 0) {
			b.fwd.sinks = 256;
			b.schedule = "fa_bwd_baseline_sm90.fa";
		}
		else if (i == 1) {
			b.fwd.head_dim = 192, b.fwd.head_dim_v = 128;
			b.schedule = "fa_bwd_baseline_sm90.fa";
		} else if (i == 2) {
			b.fwd.head_dim = 256;
			b.schedule = "fa_bwd_baseline_sm90.fa";
		} else if (i == 3)
			b.dk = 0;
		else {
			b.schedule = "fa_bwd_baseline_sm90.fa";
			b.deterministic = 1;
		}
		fg_status st = fg_attention_backward(ctx, &b, stream);
		const char *msg = fg_errmsg(ctx);
		bool ok = st == cs[i].want && strstr(msg, cs[i].what);
		printf("refused (%s): %d \"%s\" -> %s\n", cs[i].what, (int)st, msg,
			ok ? "ok" : "FAIL");
		bad |= !ok;
	}
	return bad;
}

int
main(void)
{
	static const Case cases[] = {
		{false, 2, 4, 4, 200, 200, 64, false, false, -2, -2, 0, false},
		{true, 1, 8, 2, 77, 300, 128, true, false, -2, -2, 0, false},
		/* rows see none */
		{false, 1, 4, 1, 300, 77, 64, true, true, -2, -2, 0, false},
		{true, 2, 2, 2, 1000, 1000, 128, false, true, -2, -2, 0, false},
		{false, 1, 2, 2, 1, 1, 64, false, false, -2, -2, 0, false},
		{true, 1, 6, 3, 513, 129, 128, false, false, -2, -2, 0, false},
		{false, 2, 2, 1, 130, 1000, 128, true, true, -2, -2, 0, false},
		/* windows and softcaps (fa_bwd_sm90.fa only) */
		{true, 1, 4, 2, 300, 500, 128, false, false, 64, 16, 0, false},
		{false, 2, 2, 2, 500, 300, 64, true, true, 100, -1, 0, false},
		{false, 1, 4, 4, 333, 333, 128, true, false, -2, -2, 5, false},
		{true, 1, 4, 1, 200, 700, 64, false, true, -1, 50, 2.0, false},
		/* deterministic: both head dims, causal and not, GQA, a
		 * window (its key blocks start past 0) */
		{false, 2, 4, 4, 300, 300, 64, false, false, -2, -2, 0, true},
		{true, 1, 8, 2, 333, 200, 64, true, true, -2, -2, 0, true},
		{true, 1, 4, 4, 1000, 1000, 128, false, false, -2, -2, 0, true},
		{false, 2, 8, 2, 513, 700, 128, true, false, -2, -2, 0, true},
		{true, 1, 4, 2, 300, 500, 128, false, false, 64, 16, 0, true},
		/* head dims 192 and 256: the SPLIT form (64 keys a CTA,
		 * half the columns a consumer) */
		{false, 1, 4, 2, 333, 500, 256, true, false, -2, -2, 0, false},
		{true, 2, 2, 2, 700, 300, 256, false, true, 100, -1, 0, true},
		{false, 1, 4, 1, 500, 333, 192, false, false, -2, -2, 3.0,
			false},
		{true, 1, 4, 4, 300, 700, 192, true, true, -2, -2, 0, true},
	};
	fg_options opts = {.cache_dir = ""};
	int bad = 0;

	gpu_open();
	FG(ctx, fg_ctx_create(&ctx, &opts));
	CK(cu.StreamCreate(&stream, CU_STREAM_NON_BLOCKING));
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		bad |= run(&cases[i]);
	static const int vq1[] = {1, 300, 129, 64, 0};
	static const int vk1[] = {5, 385, 129, 1, 200};
	static const int vq2[] = {200, 77, 513}, vk2[] = {100, 300, 513};
	bad |= run_varlen(5, vq1, vk1, 128, false, false);
	bad |= run_varlen(3, vq2, vk2, 64, true, false);
	bad |= run_varlen(3, vq2, vk2, 128, true, true);
	bad |= run_varlen(3, vq2, vk2, 256, false, true);
	bad |= refusals();
	CK(cu.StreamDestroy(stream));
	fg_ctx_destroy(ctx);
	return bad ? 1 : 0;
}
