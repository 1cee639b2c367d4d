/* gpu_reference.c: fg_attention_reference, the nvrtc-compiled unfused
 * baseline, on a Hopper GPU.  First the reference itself against the
 * float64 reference of gpu_ref.h on small problems; then
 * fg_attention_forward against the reference on the GPU for problems
 * too big for a host reference (every element of O and LSE compared),
 * in both layouts, causal and not, SQ != SK.  Each problem runs the
 * reference twice (the stream-ordered scratch is reused; the results must
 * agree bit for bit) and prints both kernels' times (CUDA events, the
 * second call of each).  Exit 77 (SKIP) without a Hopper GPU. */
#include "gpu_runtime.h"
#include "gpu_ref.h"

typedef struct Case {
	bool bshd;
	int z, h, sq, sk, d;
	bool causal, f16;
	int hk;  /* K/V heads (GQA); 0: h */
} Case;

static fg_ctx *ctx;
static CUstream stream;

static void
strides(const Case *c, int seq, int64_t h, int64_t st[4])
{
	int64_t d = c->d;

	if (c->bshd)
		st[0] = seq * h * d, st[1] = d, st[2] = h * d;
	else
		st[0] = h * seq * d, st[1] = seq * d, st[2] = d;
	st[3] = 1;
}

typedef fg_status (*AttnFn)(fg_ctx *, const fg_attention_args *,
	struct CUstream_st *);

static float
timed(AttnFn fn, const fg_attention_args *a)
{
	CUevent e0, e1;
	float ms;

	CK(cu.EventCreate(&e0, 0));
	CK(cu.EventCreate(&e1, 0));
	CK(cu.EventRecord(e0, stream));
	FG(ctx, fn(ctx, a, stream));
	CK(cu.EventRecord(e1, stream));
	CK(cu.EventSynchronize(e1));
	CK(cu.EventElapsedTime(&ms, e0, e1));
	cu.EventDestroy(e0);
	cu.EventDestroy(e1);
	return ms;
}

static int
run(const Case *c, bool host_ref)
{
	size_t nq = (size_t)c->z * c->h * c->sq * c->d;
	int hk = c->hk ? c->hk : c->h;
	size_t nk = (size_t)c->z * hk * c->sk * c->d;
	size_t nl = (size_t)c->z * c->h * c->sq;
	RefProb p = {c->z, c->h, c->sq, c->sk, c->d, c->causal, c->f16, {{0}},
		c->h / hk, false, 0, 0, 0, NULL, NULL, NULL, 0};
	int bad = 0;

	strides(c, c->sq, c->h, p.st[0]);
	strides(c, c->sk, hk, p.st[1]);
	strides(c, c->sk, hk, p.st[2]);
	strides(c, c->sq, c->h, p.st[3]);
	uint16_t *q = malloc(nq * 2), *k = malloc(nk * 2), *v = malloc(nk * 2);
	uint16_t *o[3] = {malloc(nq * 2), malloc(nq * 2), malloc(nq * 2)};
	float *l[2] = {malloc(nl * 4), malloc(nl * 4)};
	for (size_t i = 0; i < nq; i++)
		q[i] = to16(2 * urand(), c->f16);
	for (size_t i = 0; i < nk; i++) {
		k[i] = to16(2 * urand(), c->f16);
		v[i] = to16(urand(), c->f16);
	}
	CUdeviceptr Q, K, V, O, L;
	CK(cu.MemAlloc(&Q, nq * 2));
	CK(cu.MemAlloc(&K, nk * 2));
	CK(cu.MemAlloc(&V, nk * 2));
	CK(cu.MemAlloc(&O, nq * 2));
	CK(cu.MemAlloc(&L, nl * 4));
	CK(cu.MemcpyHtoD(Q, q, nq * 2));
	CK(cu.MemcpyHtoD(K, k, nk * 2));
	CK(cu.MemcpyHtoD(V, v, nk * 2));
	fg_attention_args a = {
		.q = Q, .k = K, .v = V, .o = O, .lse = L,
		.batch = c->z, .heads = c->h, .seq_q = c->sq, .seq_k = c->sk,
		.heads_k = c->hk,
		.head_dim = c->d, .causal = c->causal,
		.dtype = c->f16 ? FG_DTYPE_F16 : FG_DTYPE_BF16,
	};
	memcpy(a.q_strides, p.st[0], sizeof a.q_strides);
	memcpy(a.k_strides, p.st[1], sizeof a.k_strides);
	memcpy(a.v_strides, p.st[2], sizeof a.v_strides);
	memcpy(a.o_strides, p.st[3], sizeof a.o_strides);
	/* fagen twice (the first call compiles): o[2], l[1]; then the
	 * reference twice (the first compiles with nvrtc): o[0], o[1], l[0];
	 * each time of the second call */
	float ms_ref = 0, ms_fa = 0;
	for (int rep = 0; rep < 4; rep++) {
		CK(cu.MemsetD8Async(O, 0xff, nq * 2, stream));
		CK(cu.MemsetD8Async(L, 0xff, nl * 4, stream));
		if (rep < 2)
			ms_fa = timed(fg_attention_forward, &a);
		else
			ms_ref = timed(fg_attention_reference, &a);
		if (rep == 0)
			continue;
		CK(cu.MemcpyDtoH(o[rep == 1 ? 2 : rep - 2], O, nq * 2));
		if (rep != 3)
			CK(cu.MemcpyDtoH(l[rep == 1], L, nl * 4));
	}
	if (memcmp(o[0], o[1], nq * 2))
		bad |= 4;
	double err = 0, ref2 = 0, lerr = 0;
	for (size_t i = 0; i < nq; i++) {
		double x = from16(o[2][i], c->f16), y = from16(o[0][i], c->f16);
		if (x != x || y != y)
			bad |= 1;
		err += (x - y) * (x - y);
		ref2 += y * y;
	}
	for (size_t i = 0; i < nl; i++) {
		if (l[0][i] != l[0][i] || l[1][i] != l[1][i])
			bad |= 2;
		else if (l[0][i] == -INFINITY ? l[1][i] != -INFINITY :
		    fabs(l[0][i] - l[1][i]) > lerr)
			lerr = l[0][i] == -INFINITY ? 1e9 :
				fabs(l[0][i] - l[1][i]);
	}
	double rel = ref2 > 0 ? sqrt(err / ref2) : sqrt(err);
	if (rel > (c->f16 ? 3e-3 : 1e-2) || lerr > 1e-3)
		bad |= 8;
	/* the (query, key) pairs computed: causal rows see
	 * min(sk, max(0, i + sk - sq + 1)) keys */
	double pairs = (double)c->sq * c->sk;
	if (c->causal) {
		pairs = 0;
		for (int64_t i = 0; i < c->sq; i++) {
			int64_t n = i + c->sk - c->sq + 1;
			pairs += n < 0 ? 0 : n > c->sk ? c->sk : n;
		}
	}
	double fl = 4.0 * c->z * c->h * pairs * c->d;
	printf("%s Z=%d H=%d HK=%d SQ=%d SK=%d D=%d %s %s: fagen vs reference: "
		"rel err %.2e, LSE err %.1e over all %zu rows; reference %.2f ms, "
		"fagen %.2f ms (%.0f TFLOP/s)", c->bshd ? "B,S,H,D" : "B,H,S,D",
		c->z, c->h, hk, c->sq, c->sk, c->d, c->causal ? "causal" : "full",
		c->f16 ? "f16" : "bf16", rel, lerr, nl, ms_ref, ms_fa,
		fl / (ms_fa * 1e-3) / 1e12);
	if (host_ref) {  /* the reference itself, against float64 */
		RefErr e = ref_compare(&p, q, k, v, o[0], l[0]);
		printf("; reference vs float64: rel err %.2e, LSE err %.1e",
			e.rel, e.lerr);
		bad |= e.bad;
	}
	printf("%s%s%s%s -> %s\n", bad & 1 ? ", NaN in O" : "", bad & 2 ?
		", NaN in LSE" : "", bad & 4 ? ", reference runs differ" : "",
		bad & 8 ? ", over tolerance" : "", bad ? "FAIL" : "ok");
	free(q), free(k), free(v), free(o[0]), free(o[1]), free(o[2]);
	free(l[0]), free(l[1]);
	cu.MemFree(Q), cu.MemFree(K), cu.MemFree(V), cu.MemFree(O);
	cu.MemFree(L);
	return bad;
}

int
main(void)
{
	static const Case small[] = {
		{false, 2, 3, 128, 128, 64, false, false, 0},
		{true, 1, 4, 300, 1000, 128, true, true, 0},
		{true, 2, 2, 1000, 300, 64, true, false, 0},
		{false, 1, 8, 200, 333, 64, true, false, 2},  /* GQA */
		{true, 2, 4, 129, 129, 128, false, true, 1},  /* MQA */
	};
	static const Case big[] = {
		{false, 2, 16, 4096, 4096, 128, false, false, 0},
		{true, 2, 16, 4096, 4096, 128, true, false, 0},
		{false, 1, 32, 8192, 8192, 64, true, true, 0},
		{true, 4, 8, 1000, 8192, 128, true, true, 0},
		{false, 2, 8, 8192, 2048, 64, true, false, 0},
		{true, 1, 16, 16384, 16384, 128, false, false, 0},
		{true, 2, 32, 2048, 2048, 128, true, false, 8},  /* Llama 3 */
		{false, 1, 32, 4096, 4096, 128, false, true, 8},
	};
	fg_options opts = {.cache_dir = ""};
	int bad = 0;

	gpu_open();
	FG(ctx, fg_ctx_create(&ctx, &opts));
	CK(cu.StreamCreate(&stream, CU_STREAM_NON_BLOCKING));
	for (size_t i = 0; i < sizeof small / sizeof small[0]; i++)
		bad |= run(&small[i], true);
	for (size_t i = 0; i < sizeof big / sizeof big[0]; i++)
		bad |= run(&big[i], false);
	CK(cu.StreamDestroy(stream));
	fg_ctx_destroy(ctx);
	return bad ? 1 : 0;
}
