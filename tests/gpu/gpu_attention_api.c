/* gpu_attention_api.c: fg_attention_forward on a Hopper GPU against the
 * float64 reference of gpu_ref.h, for Q, K, V and O in the B,H,S,D and
 * B,S,H,D layouts and as views into one packed QKV tensor, with causal
 * SQ != SK both ways (rows that see no key included), both dtypes and
 * both head dims.  O and LSE are poisoned (NaN) before each run, each run
 * is done twice and compared bit for bit, and every element of O is
 * checked for NaN.  Prints the first call's time (compile, assemble,
 * load) and a warm call's.  Exit 77 (SKIP) without a Hopper GPU. */
#include "gpu_runtime.h"
#include "gpu_ref.h"

enum { BHSD, BSHD, PACKED };
static const char *const layouts[] = {"B,H,S,D", "B,S,H,D", "packed QKV"};

typedef struct Case {
	int layout, z, h, sq, sk, d;
	bool causal, f16;
	int hk;  /* K/V heads (GQA); 0: h.  Not with PACKED */
} Case;

static fg_ctx *ctx;
static CUstream stream;

/* Strides (batch, head, seq, dim) of a tensor of seq rows and h heads;
 * n gets the elements to allocate. */
static void
strides(int layout, const Case *c, int seq, int64_t h, int64_t st[4],
	size_t *n)
{
	int64_t d = c->d;

	if (layout == BHSD) {
		st[0] = h * seq * d, st[1] = seq * d, st[2] = d;
	} else if (layout == BSHD) {
		st[0] = seq * h * d, st[1] = d, st[2] = h * d;
	} else {  /* [B, S, 3, H, D]: q, k, v at offsets 0, H*D, 2*H*D */
		st[0] = seq * 3 * h * d, st[1] = d, st[2] = 3 * h * d;
	}
	st[3] = 1;
	*n = (size_t)c->z * seq * h * d * (layout == PACKED ? 3 : 1);
}

static int
run(const Case *c)
{
	int hk = c->hk ? c->hk : c->h;
	RefProb p = {c->z, c->h, c->sq, c->sk, c->d, c->causal, c->f16, {{0}},
		c->h / hk, false, 0, 0, 0, NULL, NULL, NULL, 0};
	size_t nq, nk, nl = (size_t)c->z * c->h * c->sq, nqkv;
	int bad = 0;

	strides(c->layout, c, c->sq, c->h, p.st[0], &nq);
	strides(c->layout, c, c->sk, hk, p.st[1], &nk);
	memcpy(p.st[2], p.st[1], sizeof p.st[1]);
	strides(c->layout == PACKED ? BSHD : c->layout, c, c->sq, c->h,
		p.st[3], &nq);
	nqkv = c->layout == PACKED ? nk : 0;  /* sq == sk */
	uint16_t *q, *k, *v, *o = malloc(nq * 2), *o2 = malloc(nq * 2);
	uint16_t *qkv = nqkv ? malloc(nqkv * 2) : NULL;
	float *lse = malloc(nl * 4);
	if (qkv) {
		q = qkv, k = qkv + (size_t)c->h * c->d, v = k + (size_t)c->h *
			c->d;
		for (size_t i = 0; i < nqkv; i++)
			qkv[i] = to16(2 * urand(), c->f16);
	} else {
		q = malloc(nq * 2), k = malloc(nk * 2), v = malloc(nk * 2);
		for (size_t i = 0; i < nq; i++)
			q[i] = to16(2 * urand(), c->f16);
		for (size_t i = 0; i < nk; i++) {
			k[i] = to16(2 * urand(), c->f16);
			v[i] = to16(urand(), c->f16);
		}
	}
	CUdeviceptr Q, K, V, O, L;
	if (qkv) {
		CK(cu.MemAlloc(&Q, nqkv * 2));
		CK(cu.MemcpyHtoD(Q, qkv, nqkv * 2));
		K = Q + (size_t)c->h * c->d * 2, V = K + (size_t)c->h * c->d * 2;
	} else {
		CK(cu.MemAlloc(&Q, nq * 2));
		CK(cu.MemAlloc(&K, nk * 2));
		CK(cu.MemAlloc(&V, nk * 2));
		CK(cu.MemcpyHtoD(Q, q, nq * 2));
		CK(cu.MemcpyHtoD(K, k, nk * 2));
		CK(cu.MemcpyHtoD(V, v, nk * 2));
	}
	CK(cu.MemAlloc(&O, nq * 2));
	CK(cu.MemAlloc(&L, nl * 4));
	fg_attention_args a = {
		.q = Q, .k = K, .v = V, .o = O, .lse = L,
		.batch = c->z, .heads = c->h, .seq_q = c->sq, .seq_k = c->sk,
		.head_dim = c->d, .causal = c->causal,
		.dtype = c->f16 ? FG_DTYPE_F16 : FG_DTYPE_BF16, .heads_k = c->hk,
	};
	memcpy(a.q_strides, p.st[0], sizeof a.q_strides);
	memcpy(a.k_strides, p.st[1], sizeof a.k_strides);
	memcpy(a.v_strides, p.st[2], sizeof a.v_strides);
	memcpy(a.o_strides, p.st[3], sizeof a.o_strides);
	double ms[2];
	for (int rep = 0; rep < 2; rep++) {
		CK(cu.MemsetD8Async(O, 0xff, nq * 2, stream));  /* poison */
		CK(cu.MemsetD8Async(L, 0xff, nl * 4, stream));
		CK(cu.StreamSynchronize(stream));
		double t0 = gpu_ms();
		FG(ctx, fg_attention_forward(ctx, &a, stream));
		ms[rep] = gpu_ms() - t0;
		CK(cu.StreamSynchronize(stream));
		CK(cu.MemcpyDtoH(rep ? o2 : o, O, nq * 2));
	}
	CK(cu.MemcpyDtoH(lse, L, nl * 4));
	if (memcmp(o, o2, nq * 2))
		bad |= 4;
	for (size_t i = 0; i < nq; i++)
		if (from16(o[i], c->f16) != from16(o[i], c->f16))
			bad |= 1;
	RefErr e = ref_compare(&p, q, k, v, o, lse);
	bad |= e.bad;
	printf("%s Z=%d H=%d HK=%d SQ=%d SK=%d D=%d %s %s: rel err %.2e, LSE "
		"err %.1e over %ld rows; call %.1f ms, again %.2f ms%s%s%s -> "
		"%s\n", layouts[c->layout], c->z, c->h, hk, c->sq, c->sk, c->d, c->causal ?
		"causal" : "full", c->f16 ? "f16" : "bf16", e.rel, e.lerr,
		e.rows, ms[0], ms[1], bad & 1 ? ", NaN in O" : "", bad & 2 ?
		", NaN in LSE" : "", bad & 4 ? ", runs differ" : "", bad ?
		"FAIL" : "ok");
	if (qkv) {
		free(qkv);
	} else {
		free(q), free(k), free(v);
		cu.MemFree(K), cu.MemFree(V);
	}
	free(o), free(o2), free(lse);
	cu.MemFree(Q), cu.MemFree(O), cu.MemFree(L);
	return bad;
}

int
main(void)
{
	static const Case cases[] = {
		{BHSD, 2, 3, 128, 128, 64, false, false, 0},
		{BSHD, 2, 3, 128, 128, 64, false, false, 0},
		{BHSD, 1, 4, 300, 1000, 128, true, true, 0},
		{BSHD, 1, 4, 300, 1000, 128, true, true, 0},
		{BSHD, 2, 2, 1000, 300, 64, true, false, 0},  /* rows see none */
		{BHSD, 2, 2, 1000, 300, 64, true, false, 0},
		{BSHD, 1, 2, 17, 4097, 128, false, true, 0},
		{BHSD, 3, 5, 1000, 1000, 128, true, false, 0},
		{PACKED, 2, 4, 777, 777, 64, true, true, 0},
		{PACKED, 1, 8, 2048, 2048, 128, false, false, 0},
		/* GQA and MQA through heads_k */
		{BSHD, 2, 8, 1000, 1000, 128, true, false, 2},
		{BHSD, 1, 6, 333, 2049, 64, false, true, 1},
		{BSHD, 3, 4, 63, 63, 256, true, true, 2},
	};
	fg_options opts = {.cache_dir = ""};
	int bad = 0;

	gpu_open();
	FG(ctx, fg_ctx_create(&ctx, &opts));
	CK(cu.StreamCreate(&stream, CU_STREAM_NON_BLOCKING));
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		bad |= run(&cases[i]);
	CK(cu.StreamDestroy(stream));
	fg_ctx_destroy(ctx);
	return bad ? 1 : 0;
}
