/* test_simdrv.c: the runtime on the simulator (FAGEN_SIM, issue #18 item
 * 5), with no GPU: the C API on host buffers, against float64.
 * fg_attention_forward (the shipped sm_90a schedule, d64 bf16, 1 x 2
 * heads, 130 queries and keys, causal and not; the sm_100a schedules
 * with their variants), fg_attention_backward (sm_100a; sm_90a's
 * deterministic mode) and fg_rms_norm on
 * pseudo-random inputs, their outputs poisoned with NaN bytes first; a
 * schedule that hangs and the sm_100a device's kernels end in an error
 * whose message says what happened, never a crash or a silent result.
 * Every context uses a counting allocator and gives back every byte. */
#include <cuda.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fagen.h"
#include "testalloc.h"
#include "../gpu/gpu_ref.h"
#include "../gpu/gpu_ref_bwd.h"
#include "simbuf.h"

typedef struct Fix {
	TestAlloc ta;
	fg_ctx *ctx;
} Fix;

static Fix *
open_ctx(const char *sim)
{
	Fix *f = calloc(1, sizeof *f);
	fg_options o = {.alloc = test_alloc, .alloc_ud = &f->ta,
		.cache_dir = "", .sim = sim};

	assert_non_null(f);
	assert_int_equal(fg_ctx_create(&f->ctx, &o), FG_OK);
	return f;
}

static void
close_ctx(Fix *f)
{
	fg_ctx_destroy(f->ctx);
	assert_int_equal(f->ta.live, 0);
	assert_int_equal(f->ta.bytes, 0);
	free(f);
}

static uint16_t *
random16(size_t n)
{
	return random16_of(n, false);
}

/* One attention problem: dense [batch, heads, seq, head_dim] tensors. */
typedef struct Prob {
	int z, h, hk, sq, sk, d;
	bool causal;
	int wl, wr;              /* a window when wl > -2 (-1: unbounded) */
	double cap;
	bool sinks, alibi;
} Prob;

/* fg_attention_forward on fx's device against float64 (gpu_ref.h). */
static fg_status
attention(Fix *fx, const Prob *p)
{
	size_t nq = (size_t)p->z * p->h * p->sq * p->d;
	size_t nk = (size_t)p->z * p->hk * p->sk * p->d;
	uint16_t *q = random16(nq), *k = random16(nk), *v = random16(nk);
	uint16_t *o = poisoned(nq * 2);
	float *lse = poisoned((size_t)p->z * p->h * p->sq * 4);
	float *sink = malloc((size_t)p->h * 4), *slope = malloc((size_t)p->h * 4);
	fg_attention_args a = {
		.q = (uintptr_t)q, .k = (uintptr_t)k, .v = (uintptr_t)v,
		.o = (uintptr_t)o, .lse = (uintptr_t)lse,
		.batch = p->z, .heads = p->h, .heads_k = p->hk, .seq_q = p->sq,
		.seq_k = p->sk, .head_dim = p->d, .dtype = FG_DTYPE_BF16,
		.causal = p->causal, .window = p->wl > -2,
		.window_left = p->wl, .window_right = p->wr,
		.softcap = p->cap,
		.sinks = p->sinks ? (uintptr_t)sink : 0,
		.alibi_slopes = p->alibi ? (uintptr_t)slope : 0,
	};

	for (int i = 0; i < p->h; i++) {
		sink[i] = (float)urand();
		slope[i] = 0.05f * (float)(i + 1);
	}
	fg_status st = fg_attention_forward(fx->ctx, &a,
		CU_STREAM_PER_THREAD);
	if (st == FG_OK) {
		RefProb c = {.z = p->z, .h = p->h, .sq = p->sq, .sk = p->sk,
			.d = p->d, .causal = p->causal, .g = p->h / p->hk,
			.window = p->wl > -2, .wl = p->wl, .wr = p->wr,
			.cap = p->cap, .sinks = p->sinks ? sink : NULL,
			.alibi = p->alibi ? slope : NULL};
		for (int t = 0; t < 4; t++) {
			int hh = t == 1 || t == 2 ? p->hk : p->h;
			int ss = t == 1 || t == 2 ? p->sk : p->sq;
			int64_t st4[4] = {(int64_t)hh * ss * p->d,
				(int64_t)ss * p->d, p->d, 1};
			memcpy(c.st[t], st4, sizeof st4);
		}
		RefErr e = ref_compare(&c, q, k, v, o, lse);
		printf("attention Z=%d H=%d/%d SQ=%d SK=%d D=%d%s%s%s%s%s: "
			"rel %.2e, lse %.2e over %ld rows\n", p->z, p->h, p->hk,
			p->sq, p->sk, p->d, p->causal ? " causal" : "",
			p->wl > -2 ? " window" : "", p->cap > 0 ? " softcap" : "",
			p->sinks ? " sinks" : "", p->alibi ? " alibi" : "", e.rel,
			e.lerr, e.rows);
		assert_true(e.rows >= (long)p->z * p->h * (p->sq <= 128 ?
			p->sq : 48));  /* gpu_ref.h's sample */
		assert_int_equal(e.bad, 0);
	}
	free(q);
	free(k);
	free(v);
	free(o);
	free(lse);
	free(sink);
	free(slope);
	return st;
}

static void
attention_matches_float64(void **state)
{
	Fix *fx = open_ctx("sm_90a");
	Prob p = {1, 2, 2, 130, 130, 64, false, -2, 0, 0, false, false};

	(void)state;
	assert_int_equal(attention(fx, &p), FG_OK);
	p.causal = true;
	assert_int_equal(attention(fx, &p), FG_OK);
	close_ctx(fx);
}

/* fg_attention_forward on the simulated device sim (with schedule
 * target target, NULL: the device's) for each of n problems. */
static void
attention_all(const char *sim, const char *target, const Prob *ps,
	size_t n)
{
	if (target)
		setenv("FAGEN_TARGET", target, 1);
	Fix *fx = open_ctx(sim);
	unsetenv("FAGEN_TARGET");

	for (size_t i = 0; i < n; i++) {
		fg_status st = attention(fx, &ps[i]);
		if (st)
			fprintf(stderr, "%s\n", fg_errmsg(fx->ctx));
		assert_int_equal(st, FG_OK);
	}
	close_ctx(fx);
}

/* The sm_80 schedule through the runtime (fg_options.target's variable,
 * FAGEN_TARGET=sm_80) on the simulated sm_90a device: fa_fwd_sm80.fa,
 * GQA, causal, a window with a softcap. */
static void
sm80_attention_matches_float64(void **state)
{
	static const Prob ps[] = {
		{1, 2, 2, 130, 200, 128, false, -2, 0, 0, false, false},
		{2, 4, 2, 77, 150, 64, true, -2, 0, 0, false, false},
		{1, 2, 2, 200, 250, 64, true, 50, -1, 20, false, false},
	};

	(void)state;
	attention_all("sm_90a", "sm_80", ps, sizeof ps / sizeof ps[0]);
}

/* Consumer Blackwell through the runtime, on the simulated sm_120a
 * device (12.0, 99 KB of shared memory): fa_fwd_baseline_sm90.fa built
 * for sm_120a (TMA, mma.sync), GQA, causal, a window with a softcap,
 * head dim 256 with sinks, ALiBi. */
static void
sm120_attention_matches_float64(void **state)
{
	static const Prob ps[] = {
		{1, 2, 2, 130, 200, 128, false, -2, 0, 0, false, false},
		{2, 4, 2, 77, 150, 64, true, -2, 0, 0, false, false},
		{1, 2, 2, 200, 250, 64, true, 50, -1, 20, false, false},
		{1, 2, 1, 65, 100, 256, true, -2, 0, 0, true, false},
		{1, 3, 3, 100, 170, 128, true, -2, 0, 0, false, true},
	};

	(void)state;
	attention_all("sm_120a", NULL, ps, sizeof ps / sizeof ps[0]);
}

/* The Blackwell schedules through the runtime, on the simulated sm_100a
 * device: fa_fwd_sm100.fa (with packed GQA, a window, softcap, sinks)
 * and, for ALiBi, fa_fwd_baseline_sm100.fa. */
static void
sm100_attention_matches_float64(void **state)
{
	static const Prob ps[] = {
		{1, 2, 2, 130, 200, 128, false, -2, 0, 0, false, false},
		{2, 2, 1, 333, 257, 64, true, -2, 0, 0, false, false},
		{1, 8, 2, 5, 300, 128, false, -2, 0, 0, true, false},
		{1, 2, 2, 200, 250, 64, true, 50, -1, 20, false, false},
		{1, 3, 3, 100, 170, 128, true, -2, 0, 0, false, true},
	};
	Fix *fx = open_ctx("sm_100a");

	(void)state;
	for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++)
		assert_int_equal(attention(fx, &ps[i]), FG_OK);
	close_ctx(fx);
}

/* The backward on the simulated sm_100a device (fa_bwd_sm100.fa, the
 * sm_90a pre and post kernels compiled for sm_100a): the forward, then
 * dQ, dK, dV against float64 (gpu_ref_bwd.h), GQA, causal and not. */
static void
sm100_backward(Fix *fx, bool causal)
{
	enum { Z = 1, H = 2, HK = 1, SQ = 130, SK = 200, D = 64 };
	size_t nq = (size_t)Z * H * SQ * D, nk = (size_t)Z * HK * SK * D;
	uint16_t *q = random16(nq), *k = random16(nk), *v = random16(nk);
	uint16_t *dout = random16(nq), *o = poisoned(nq * 2);
	uint16_t *dq = poisoned(nq * 2), *dk = poisoned(nk * 2);
	uint16_t *dv = poisoned(nk * 2);
	float *lse = poisoned((size_t)Z * H * SQ * 4);
	double *rq = malloc(nq * 8), *rk = malloc(nk * 8), *rv = malloc(nk * 8);
	fg_attention_bwd_args b = {
		.fwd = {.q = (uintptr_t)q, .k = (uintptr_t)k, .v = (uintptr_t)v,
			.o = (uintptr_t)o, .lse = (uintptr_t)lse, .batch = Z,
			.heads = H, .heads_k = HK, .seq_q = SQ, .seq_k = SK,
			.head_dim = D, .dtype = FG_DTYPE_BF16, .causal = causal},
		.dout = (uintptr_t)dout, .dq = (uintptr_t)dq,
		.dk = (uintptr_t)dk, .dv = (uintptr_t)dv,
	};
	RefProb c = {.z = Z, .h = H, .sq = SQ, .sk = SK, .d = D,
		.causal = causal, .g = H / HK};
	bool nan = false;

	for (int t = 0; t < 4; t++) {
		int hh = t == 1 || t == 2 ? HK : H, ss = t == 1 || t == 2 ? SK : SQ;
		int64_t st4[4] = {(int64_t)hh * ss * D, (int64_t)ss * D, D, 1};
		memcpy(c.st[t], st4, sizeof st4);
	}
	assert_int_equal(fg_attention_forward(fx->ctx, &b.fwd,
		CU_STREAM_PER_THREAD), FG_OK);
	fg_status st = fg_attention_backward(fx->ctx, &b, CU_STREAM_PER_THREAD);
	if (st)
		fprintf(stderr, "%s\n", fg_errmsg(fx->ctx));
	assert_int_equal(st, FG_OK);
	ref_backward(&c, q, k, v, dout, NULL, NULL, rq, rk, rv);
	double eq = ref_rel16(dq, rq, nq, false, &nan);
	double ek = ref_rel16(dk, rk, nk, false, &nan);
	double ev = ref_rel16(dv, rv, nk, false, &nan);
	printf("sm_100a backward%s: rel dq %.2e dk %.2e dv %.2e\n", causal ?
		" causal" : "", eq, ek, ev);
	assert_false(nan);
	assert_true(eq <= 2e-2 && ek <= 2e-2 && ev <= 2e-2);
	free(q), free(k), free(v), free(dout), free(o), free(dq), free(dk);
	free(dv), free(lse), free(rq), free(rk), free(rv);
}

/* ... and what it has no mode for yet is refused, naming it: a window,
 * deterministic (issue #13). */
static void
sm100_backward_matches_float64(void **state)
{
	Fix *fx = open_ctx("sm_100a");
	fg_attention_bwd_args b = {0};

	(void)state;
	sm100_backward(fx, false);
	sm100_backward(fx, true);
	b.fwd = (fg_attention_args){.batch = 1, .heads = 1, .seq_q = 8,
		.seq_k = 8, .head_dim = 64, .dtype = FG_DTYPE_BF16, .window = 1,
		.window_left = 4, .window_right = 0};
	b.fwd.q = b.fwd.k = b.fwd.v = b.fwd.o = b.fwd.lse = 0x10000;
	b.dout = b.dq = b.dk = b.dv = 0x10000;
	assert_int_equal(fg_attention_backward(fx->ctx, &b,
		CU_STREAM_PER_THREAD), FG_ERR_UNSUPPORTED);
	assert_non_null(strstr(fg_errmsg(fx->ctx), "sm_100a backward "
		"(fa_bwd_sm100.fa) has no sliding window yet"));
	b.fwd.window = 0, b.deterministic = 1;
	assert_int_equal(fg_attention_backward(fx->ctx, &b,
		CU_STREAM_PER_THREAD), FG_ERR_UNSUPPORTED);
	assert_non_null(strstr(fg_errmsg(fx->ctx), "deterministic on "
		"sm_100: the runtime does not offer it yet"));
	close_ctx(fx);
}

/* The backward b runs times into freshly poisoned dq, dk and dv (nq and
 * nk 16-bit elements); true when every run gave the first's bits. */
static bool
det_runs(Fix *fx, fg_attention_bwd_args *b, int runs, uint16_t **dq,
	uint16_t **dk, uint16_t **dv, size_t nq, size_t nk)
{
	bool same = true;

	for (int r = 0; r < runs; r++) {
		dq[r] = poisoned(nq * 2), dk[r] = poisoned(nk * 2);
		dv[r] = poisoned(nk * 2);
		b->dq = (uintptr_t)dq[r], b->dk = (uintptr_t)dk[r];
		b->dv = (uintptr_t)dv[r];
		fg_status st = fg_attention_backward(fx->ctx, b,
			CU_STREAM_PER_THREAD);
		if (st)
			fail_msg("run %d: %s", r, fg_errmsg(fx->ctx));
		same &= !memcmp(dq[0], dq[r], nq * 2) &&
			!memcmp(dk[0], dk[r], nk * 2) &&
			!memcmp(dv[0], dv[r], nk * 2);
	}
	return same;
}

/* The deterministic backward (issue #13) on the simulated sm_90a device:
 * fa_bwd_sm90.fa with -D DETERMINISTIC=true, its DQSEM counters in the
 * scratch (the simulator's allocations come poisoned with 0xff bytes, so
 * counters not zeroed first make it spin until its instruction limit).
 * Two runs, each into freshly poisoned dq, dk, dv, bitwise equal and
 * against float64 (the simulator runs one CTA after another, so a third
 * would order nothing anew; the GPU tests run three); GQA, causal, not,
 * and a window (whose later query blocks' first key block is past 0). */
static void
sm90_det_backward(Fix *fx, bool causal, int wl, int wr)
{
	enum { Z = 1, H = 2, HK = 1, SQ = 130, SK = 200, D = 64, RUNS = 2 };
	size_t nq = (size_t)Z * H * SQ * D, nk = (size_t)Z * HK * SK * D;
	uint16_t *q = random16(nq), *k = random16(nk), *v = random16(nk);
	uint16_t *dout = random16(nq), *o = poisoned(nq * 2);
	uint16_t *dq[RUNS], *dk[RUNS], *dv[RUNS];
	float *lse = poisoned((size_t)Z * H * SQ * 4);
	double *rq = malloc(nq * 8), *rk = malloc(nk * 8), *rv = malloc(nk * 8);
	fg_attention_bwd_args b = {
		.fwd = {.q = (uintptr_t)q, .k = (uintptr_t)k, .v = (uintptr_t)v,
			.o = (uintptr_t)o, .lse = (uintptr_t)lse, .batch = Z,
			.heads = H, .heads_k = HK, .seq_q = SQ, .seq_k = SK,
			.head_dim = D, .dtype = FG_DTYPE_BF16, .causal = causal,
			.window = wl > -2, .window_left = wl,
			.window_right = wr},
		.dout = (uintptr_t)dout, .deterministic = 1,
	};
	RefProb c = {.z = Z, .h = H, .sq = SQ, .sk = SK, .d = D,
		.causal = causal, .g = H / HK, .window = wl > -2, .wl = wl,
		.wr = wr};
	bool nan = false, same;

	for (int t = 0; t < 4; t++) {
		bool kv = t == 1 || t == 2;
		int hh = kv ? HK : H, ss = kv ? SK : SQ;
		int64_t st4[4] = {(int64_t)hh * ss * D, (int64_t)ss * D, D, 1};
		memcpy(c.st[t], st4, sizeof st4);
	}
	assert_int_equal(fg_attention_forward(fx->ctx, &b.fwd,
		CU_STREAM_PER_THREAD), FG_OK);
	same = det_runs(fx, &b, RUNS, dq, dk, dv, nq, nk);
	ref_backward(&c, q, k, v, dout, NULL, NULL, rq, rk, rv);
	double eq = ref_rel16(dq[0], rq, nq, false, &nan);
	double ek = ref_rel16(dk[0], rk, nk, false, &nan);
	double ev = ref_rel16(dv[0], rv, nk, false, &nan);
	printf("sm_90a deterministic backward%s%s: rel dq %.2e dk %.2e dv "
		"%.2e, %d runs %s\n", causal ? " causal" : "", wl > -2 ?
		" window" : "", eq, ek, ev, RUNS, same ? "bitwise equal" :
		"DIFFER");
	assert_false(nan);
	assert_true(same);
	assert_true(eq <= 2e-2 && ek <= 2e-2 && ev <= 2e-2);
	for (int r = 0; r < RUNS; r++)
		free(dq[r]), free(dk[r]), free(dv[r]);
	free(q), free(k), free(v), free(dout), free(o), free(lse);
	free(rq), free(rk), free(rv);
}

/* ... and a variable-length batch of 3 sequences (packed [tokens,
 * heads, head_dim], causal): DQSEM is then [sequences, heads,
 * cdiv(total query tokens, 64)], each sequence against its own float64
 * backward. */
static void
sm90_det_backward_varlen(Fix *fx)
{
	enum { N = 3, H = 2, HK = 1, D = 64, RUNS = 2 };
	static const int lq[N] = {70, 130, 5}, lk[N] = {100, 64, 200};
	int32_t cq[N + 1] = {0}, ck[N + 1] = {0};
	int mq = 0, mk = 0;

	for (int i = 0; i < N; i++) {
		cq[i + 1] = cq[i] + lq[i], ck[i + 1] = ck[i] + lk[i];
		mq = lq[i] > mq ? lq[i] : mq, mk = lk[i] > mk ? lk[i] : mk;
	}
	size_t nq = (size_t)cq[N] * H * D, nk = (size_t)ck[N] * HK * D;
	uint16_t *q = random16(nq), *k = random16(nk), *v = random16(nk);
	uint16_t *dout = random16(nq), *o = poisoned(nq * 2);
	uint16_t *dq[RUNS], *dk[RUNS], *dv[RUNS];
	float *lse = poisoned((size_t)H * cq[N] * 4);
	double *rq = malloc(nq * 8), *rk = malloc(nk * 8), *rv = malloc(nk * 8);
	fg_attention_bwd_args b = {
		.fwd = {.q = (uintptr_t)q, .k = (uintptr_t)k, .v = (uintptr_t)v,
			.o = (uintptr_t)o, .lse = (uintptr_t)lse, .batch = N,
			.heads = H, .heads_k = HK, .seq_q = cq[N],
			.seq_k = ck[N], .head_dim = D, .dtype = FG_DTYPE_BF16,
			.causal = 1, .cu_seqlens_q = (uintptr_t)cq,
			.cu_seqlens_k = (uintptr_t)ck, .max_seqlen_q = mq,
			.max_seqlen_k = mk},
		.dout = (uintptr_t)dout, .deterministic = 1,
	};
	bool nan = false, same;

	assert_int_equal(fg_attention_forward(fx->ctx, &b.fwd,
		CU_STREAM_PER_THREAD), FG_OK);
	same = det_runs(fx, &b, RUNS, dq, dk, dv, nq, nk);
	for (int i = 0; i < N; i++) {
		RefProb c = {.z = 1, .h = H, .sq = lq[i], .sk = lk[i], .d = D,
			.causal = true, .g = H / HK, .st = {
			{0, D, H * D, 1}, {0, D, HK * D, 1}, {0, D, HK * D, 1},
			{0, D, H * D, 1}}};
		size_t oq = (size_t)cq[i] * H * D, ok = (size_t)ck[i] * HK * D;
		ref_backward(&c, q + oq, k + ok, v + ok, dout + oq, NULL, NULL,
			rq + oq, rk + ok, rv + ok);
	}
	double eq = ref_rel16(dq[0], rq, nq, false, &nan);
	double ek = ref_rel16(dk[0], rk, nk, false, &nan);
	double ev = ref_rel16(dv[0], rv, nk, false, &nan);
	printf("sm_90a deterministic backward, varlen %d sequences causal: rel "
		"dq %.2e dk %.2e dv %.2e, %d runs %s\n", N, eq, ek, ev, RUNS,
		same ? "bitwise equal" : "DIFFER");
	assert_false(nan);
	assert_true(same);
	assert_true(eq <= 2e-2 && ek <= 2e-2 && ev <= 2e-2);
	for (int r = 0; r < RUNS; r++)
		free(dq[r]), free(dk[r]), free(dv[r]);
	free(q), free(k), free(v), free(dout), free(o), free(lse);
	free(rq), free(rk), free(rv);
}

static void
sm90_deterministic_backward_matches_float64(void **state)
{
	Fix *fx = open_ctx("sm_90a");

	(void)state;
	sm90_det_backward(fx, false, -2, -2);
	sm90_det_backward(fx, true, -2, -2);
	sm90_det_backward(fx, false, 64, 16);
	sm90_det_backward_varlen(fx);
	close_ctx(fx);
}

/* fg_rms_norm over 37 rows of 1000 with a weight, rstd wanted. */
static void
rms_norm_rows(int R, int N)
{
	Fix *fx = open_ctx("1");
	uint16_t *x = random16((size_t)R * N), *w = random16((size_t)N);
	uint16_t *y = poisoned((size_t)R * N * 2);
	float *rstd = poisoned((size_t)R * 4);
	fg_rmsnorm_args a = {
		.x = {.ptr = (uintptr_t)x, .rank = 2, .dims = {R, N}},
		.weight = {.ptr = (uintptr_t)w, .rank = 1, .dims = {N}},
		.out = {.ptr = (uintptr_t)y, .rank = 2, .dims = {R, N}},
		.rstd = (uintptr_t)rstd, .dtype = FG_DTYPE_BF16, .eps = 1e-6,
	};
	double worst = 0;

	assert_int_equal(fg_rms_norm(fx->ctx, &a, CU_STREAM_PER_THREAD),
		FG_OK);
	for (int i = 0; i < R; i++) {
		double ss = 0;
		for (int j = 0; j < N; j++)
			ss += from16(x[(size_t)i * N + j], false) *
				from16(x[(size_t)i * N + j], false);
		double r = 1 / sqrt(ss / N + 1e-6);
		assert_true(fabs(rstd[i] - r) <= 1e-5 * r);
		for (int j = 0; j < N; j++) {
			double want = from16(x[(size_t)i * N + j], false) * r *
				from16(w[j], false);
			double got = from16(y[(size_t)i * N + j], false);
			double err = fabs(got - want) / (fabs(want) + 1e-3);
			assert_true(err <= 1e-2);  /* bf16: 2^-9 rounding */
			worst = err > worst ? err : worst;
		}
	}
	printf("rms_norm %d x %d: worst relative error %.2e\n", R, N, worst);
	free(x);
	free(w);
	free(y);
	free(rstd);
	close_ctx(fx);
}

/* 37 rows of 1000, and 3 rows of 100000, which the runtime spreads over
 * the CTAs of a cluster (rows wider than one CTA holds). */
static void
rms_norm_matches_float64(void **state)
{
	(void)state;
	rms_norm_rows(37, 1000);
	rms_norm_rows(2, 40000);
}

/* fg_attention_decode through the runtime on the simulated device (the
 * runtime's split heuristic, binding and, on sm_100a, its 128-row
 * retiling): batch 2 of a paged cache (16-token pages, shuffled), GQA
 * 8 over 2, one new query, lengths 37 and 300, then the same with 4
 * splits forced; O and LSE against float64 per sequence. */
static void
decode_case(Fix *fx, int splits)
{
	enum { B = 2, H = 8, HK = 2, D = 128, PS = 16, MP = 20, NP = B * MP };
	int32_t lens[B] = {37, 300}, pt[B * MP];
	size_t nq = (size_t)B * H * D, nc = (size_t)NP * PS * HK * D;
	uint16_t *q = random16(nq), *kc = random16(nc), *vc = random16(nc);
	uint16_t *o = poisoned(nq * 2);
	float *lse = poisoned((size_t)B * H * 4);
	fg_decode_args a = {
		.q = (uintptr_t)q, .k_cache = (uintptr_t)kc,
		.v_cache = (uintptr_t)vc, .cache_seqlens = (uintptr_t)lens,
		.page_table = (uintptr_t)pt, .o = (uintptr_t)o,
		.lse = (uintptr_t)lse, .batch = B, .seq_q = 1, .heads = H,
		.heads_k = HK, .head_dim = D, .num_pages = NP, .page_size = PS,
		.max_pages = MP, .dtype = FG_DTYPE_BF16, .num_splits = splits,
		.validate = 1,
	};

	for (int i = 0; i < B * MP; i++)   /* a shuffled page order */
		pt[i] = (i * 7 + 3) % NP;
	fg_status st = fg_attention_decode(fx->ctx, &a, CU_STREAM_PER_THREAD);
	if (st)
		fprintf(stderr, "%s\n", fg_errmsg(fx->ctx));
	assert_int_equal(st, FG_OK);
	double worst = 0, lw = 0;
	for (int b = 0; b < B; b++) {
		int n = lens[b];
		/* this sequence's keys gathered densely, [n, HK, D] */
		uint16_t *k = malloc((size_t)n * HK * D * 2);
		uint16_t *v = malloc((size_t)n * HK * D * 2);
		for (int j = 0; j < n; j++) {
			size_t src = ((size_t)pt[b * MP + j / PS] * PS + j % PS) *
				HK * D;
			memcpy(k + (size_t)j * HK * D, kc + src, HK * D * 2);
			memcpy(v + (size_t)j * HK * D, vc + src, HK * D * 2);
		}
		RefProb c = {.z = 1, .h = H, .sq = 1, .sk = n, .d = D,
			.g = H / HK};
		int64_t sq4[4] = {(int64_t)H * D, D, (int64_t)H * D, 1};
		int64_t sk4[4] = {(int64_t)n * HK * D, D, (int64_t)HK * D, 1};
		memcpy(c.st[0], sq4, sizeof sq4);
		memcpy(c.st[1], sk4, sizeof sk4);
		memcpy(c.st[2], sk4, sizeof sk4);
		memcpy(c.st[3], sq4, sizeof sq4);
		RefErr e = ref_compare(&c, q + (size_t)b * H * D, k, v,
			o + (size_t)b * H * D, lse + (size_t)b * H);
		assert_int_equal(e.bad, 0);
		worst = e.rel > worst ? e.rel : worst;
		lw = e.lerr > lw ? e.lerr : lw;
		free(k);
		free(v);
	}
	printf("decode splits=%d: rel err %.2e, lse err %.1e\n", splits, worst,
		lw);
	free(q), free(kc), free(vc), free(o), free(lse);
}

static void
decode_matches_float64(void **state)
{
	(void)state;
	for (int t = 0; t < 2; t++) {
		Fix *fx = open_ctx(t ? "sm_100a" : "sm_90a");
		decode_case(fx, 0);
		decode_case(fx, 4);
		close_ctx(fx);
	}
}

/* fg_rms_norm_backward of rows of 20000 (past one CTA's 8192: a cluster
 * shares each row) with a weight: dX and the sum of the dW partials
 * against float64, rstd the float64 forward's in f32. */
static void
rms_norm_backward_wide_rows(void **state)
{
	enum { R = 5, N = 20000 };
	Fix *fx = open_ctx("sm_90a");
	uint16_t *x = random16((size_t)R * N), *w = random16(N);
	uint16_t *dy = random16((size_t)R * N), *dx = poisoned((size_t)R * N * 2);
	float rstd[R];
	int64_t np = 0;
	fg_rmsnorm_bwd_args a = {
		.x = {.ptr = (uintptr_t)x, .rank = 2, .dims = {R, N}},
		.weight = {.ptr = (uintptr_t)w, .rank = 1, .dims = {N}},
		.dy = {.ptr = (uintptr_t)dy, .rank = 2, .dims = {R, N}},
		.rstd = (uintptr_t)rstd,
		.dx = {.ptr = (uintptr_t)dx, .rank = 2, .dims = {R, N}},
		.dtype = FG_DTYPE_BF16,
	};

	(void)state;
	for (int i = 0; i < R; i++) {
		double ss = 0;
		for (int j = 0; j < N; j++)
			ss += pow(from16(x[(size_t)i * N + j], false), 2);
		rstd[i] = (float)(1 / sqrt(ss / N + 1e-6));
	}
	assert_int_equal(fg_rms_norm_backward_partials(fx->ctx, &a, &np),
		FG_OK);
	float *dwp = poisoned((size_t)np * N * 4);
	a.dw_partial = (uintptr_t)dwp;
	a.dw_partial_rows = np;
	assert_int_equal(fg_rms_norm_backward(fx->ctx, &a,
		CU_STREAM_PER_THREAD), FG_OK);
	for (int i = 0; i < R; i++) {
		double c = 0, r = rstd[i];
		for (int j = 0; j < N; j++)
			c += from16(dy[(size_t)i * N + j], false) *
				from16(w[j], false) * from16(x[(size_t)i * N + j],
				false);
		for (int j = 0; j < N; j++) {
			double xv = from16(x[(size_t)i * N + j], false);
			double g = from16(dy[(size_t)i * N + j], false) *
				from16(w[j], false);
			double want = r * (g - xv * r * r * c / N);
			double got = from16(dx[(size_t)i * N + j], false);
			assert_true(fabs(got - want) <= fabs(want) * 0x1p-7 +
				1e-3 * r);
		}
	}
	for (int j = 0; j < N; j++) {
		double want = 0, got = 0;
		for (int i = 0; i < R; i++)
			want += from16(dy[(size_t)i * N + j], false) *
				from16(x[(size_t)i * N + j], false) * rstd[i];
		for (int64_t p = 0; p < np; p++)
			got += dwp[(size_t)p * N + j];
		assert_true(fabs(got - want) <= 1e-4 * (fabs(want) + 1));
	}
	printf("rms_norm backward %d x %d: %lld partial rows\n", R, N,
		(long long)np);
	free(x), free(w), free(dy), free(dx), free(dwp);
	close_ctx(fx);
}

/* fg_cross_entropy, then fg_cross_entropy_backward with each row's
 * gradient, against float64: rows of 70000 classes (several chunks), one
 * row ignored (target -1), one target at the last class. */
static void
cross_entropy_and_backward(void **state)
{
	enum { R = 5, C = 70000 };
	Fix *fx = open_ctx("sm_90a");
	uint16_t *x = random16((size_t)R * C), *dx = poisoned((size_t)R * C * 2);
	int32_t tgt[R] = {3, -1, C - 1, 12345, 0};
	float *loss = poisoned(R * 4), *lse = poisoned(R * 4);
	float dl[R] = {0.5f, 0.25f, -1.0f, 2.0f, 1.0f};
	fg_cross_entropy_args f = {
		.logits = {.ptr = (uintptr_t)x, .rank = 2, .dims = {R, C}},
		.target = {.ptr = (uintptr_t)tgt, .rank = 1, .dims = {R}},
		.loss = (uintptr_t)loss, .lse = (uintptr_t)lse,
		.dtype = FG_DTYPE_BF16,
	};
	fg_cross_entropy_bwd_args b = {
		.logits = f.logits, .target = f.target, .lse = (uintptr_t)lse,
		.dloss = (uintptr_t)dl,
		.dlogits = {.ptr = (uintptr_t)dx, .rank = 2, .dims = {R, C}},
		.dtype = FG_DTYPE_BF16,
	};
	double worst = 0;

	(void)state;
	assert_int_equal(fg_cross_entropy(fx->ctx, &f, CU_STREAM_PER_THREAD),
		FG_OK);
	assert_int_equal(fg_cross_entropy_backward(fx->ctx, &b,
		CU_STREAM_PER_THREAD), FG_OK);
	for (int i = 0; i < R; i++) {
		double mx = -INFINITY, s = 0;
		for (int j = 0; j < C; j++)
			mx = fmax(mx, from16(x[(size_t)i * C + j], false));
		for (int j = 0; j < C; j++)
			s += exp(from16(x[(size_t)i * C + j], false) - mx);
		double l = mx + log(s);
		assert_true(fabs(lse[i] - l) <= 1e-5 * fabs(l) + 1e-5);
		for (int j = 0; j < C; j++) {
			double p = exp(from16(x[(size_t)i * C + j], false) - l);
			double want = tgt[i] < 0 ? 0 : (p - (j == tgt[i])) * dl[i];
			double got = from16(dx[(size_t)i * C + j], false);
			double e = fabs(got - want);
			/* bf16's rounding of the result, and f32 exp of a
			 * value within 1e-5 of the float64 one */
			assert_true(e <= fabs(want) * 0x1p-7 + 1e-9);
			worst = e > worst ? e : worst;
		}
	}
	printf("cross_entropy backward %d x %d: worst abs error %.2e\n", R, C,
		worst);
	free(x), free(dx), free(loss), free(lse);
	close_ctx(fx);
}

/* tests/gpu/hang_copy.fa's storer never frees a stage: one CTA walking
 * five tiles through four stages waits forever on the fifth. */
static void
hang_is_a_clear_error(void **state)
{
	enum { M = 320, N = 64 };
	Fix *fx = open_ctx("sm_90a");
	fg_compile_options co = {.no_verify = 1};
	fg_program *p;
	fg_kernel *k;
	uint16_t *x = random16((size_t)M * N), *y = poisoned(M * N * 2);
	fg_arg args[] = {FG_INT("M", M), FG_INT("N", N), FG_PTR("X", x),
		FG_PTR("Y", y)};
	fg_kernel_info info;

	(void)state;
	assert_int_equal(fg_compile_file(fx->ctx, FAGEN_SRCDIR
		"/tests/gpu/hang_copy.fa", &co, &p), FG_OK);
	assert_int_equal(fg_kernel_create(fx->ctx, fg_program_ptx(p, NULL), 0,
		&k), FG_OK);
	fg_program_free(p);
	assert_int_equal(fg_kernel_set_grid_limit(k, 1), FG_OK);
	assert_int_equal(fg_launch(k, CU_STREAM_PER_THREAD, args, 4),
		FG_ERR_CUDA);
	const char *msg = fg_errmsg(fx->ctx);
	printf("%s\n", msg);
	assert_non_null(strstr(msg, "cuLaunchKernelEx: CUDA_ERROR_LAUNCH_"
		"FAILED (the simulator: hang in CTA (0,0,0)"));
	assert_non_null(strstr(msg, "warp 0: pc"));
	assert_non_null(strstr(msg, "mbarrier.try_wait"));
	assert_non_null(strstr(msg, "hint: the schedule waits on a barrier"));
	fg_kernel_info_get(k, &info);
	assert_int_equal(info.source, FG_CODE_SIM);
	assert_null(fg_kernel_cubin(k, NULL));
	fg_kernel_free(k);
	free(x);
	free(y);
	close_ctx(fx);
}

/* A store past the 32 elements the metadata declares for OUT is a
 * fault, though the host buffer behind it is larger: each launch reaches
 * exactly the extents its metadata gives its globals. */
static void
store_past_the_tensor_is_a_clear_error(void **state)
{
	static const char ptx[] =
		"// fagen.kernel name=t target=sm_90a threads=32 "
		"cluster=1,1,1 smem=0 order=single tiles=0\n"
		"// fagen.arg 0 global OUT u32 rank=1 dims 32\n"
		".version 8.6\n.target sm_90a\n.address_size 64\n"
		".visible .entry t(.param .u64 OUT)\n{\n"
		"\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<4>;\n"
		"\tmov.u32 %r0, %tid.x;\n"
		"\tld.param.u64 %rd0, [OUT];\n"
		"\tmul.wide.u32 %rd1, %r0, 4;\n\tadd.s64 %rd1, %rd0, %rd1;\n"
		"\tst.global.u32 [%rd1+64], %r0;\n"
		"\tret;\n}\n";
	Fix *fx = open_ctx("sm_90a");
	uint32_t *out = poisoned(64 * 4);
	fg_arg arg = FG_PTR("OUT", out);
	fg_kernel *k;

	(void)state;
	assert_int_equal(fg_kernel_create(fx->ctx, ptx, 0, &k), FG_OK);
	assert_int_equal(fg_launch(k, CU_STREAM_PER_THREAD, &arg, 1),
		FG_ERR_CUDA);
	const char *msg = fg_errmsg(fx->ctx);
	printf("%s\n", msg);
	assert_non_null(strstr(msg, "CUDA_ERROR_LAUNCH_FAILED (the simulator: "
		"CTA (0,0,0) warp 0, PTX line 14 'st.global.u32"));
	assert_non_null(strstr(msg, "is outside every buffer"));
	assert_non_null(strstr(msg, "hint: an access outside the extents"));
	fg_kernel_free(k);
	free(out);
	close_ctx(fx);
}

/* On the sm_100a device (FAGEN_SIM from the environment), fg_linear
 * (gemm_ws_sm100.fa, on tcgen05 and tensor memory) agrees with float64. */
static void
sm100_linear_is_right(void **state)
{
	enum { M = 64, N = 64, K = 64 };
	Fix *fx;
	uint16_t *x = random16(M * K), *w = random16(N * K);
	uint16_t *y = poisoned(M * N * 2);
	fg_linear_args a = {
		.x = {.ptr = (uintptr_t)x, .rank = 2, .dims = {M, K}},
		.weight = {.ptr = (uintptr_t)w, .rank = 2, .dims = {N, K}},
		.out = {.ptr = (uintptr_t)y, .rank = 2, .dims = {M, N}},
		.dtype = FG_DTYPE_BF16, .alpha = 1,
	};

	(void)state;
	setenv("FAGEN_SIM", "sm_100a", 1);
	fx = open_ctx(NULL);
	unsetenv("FAGEN_SIM");
	assert_int_equal(fg_ctx_open(fx->ctx), FG_OK);
	fg_status st = fg_linear(fx->ctx, &a, CU_STREAM_PER_THREAD);
	if (st)
		fprintf(stderr, "sm_100a: %s\n", fg_errmsg(fx->ctx));
	assert_int_equal(st, FG_OK);
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++) {
			double want = 0;
			for (int kk = 0; kk < K; kk++)
				want += from16(x[i * K + kk], false) *
					from16(w[j * K + kk], false);
			assert_true(fabs(from16(y[i * N + j], false) - want) <=
				1e-2 * fabs(want) + 1e-2);
		}
	free(x);
	free(w);
	free(y);
	close_ctx(fx);
}

static void
bad_sim_values_are_refused(void **state)
{
	fg_options o = {.cache_dir = "", .sim = "sm_80"};
	fg_ctx *c;
	Fix *fx;

	(void)state;
	assert_int_equal(fg_ctx_create(&c, &o), FG_ERR_INVALID);
	setenv("FAGEN_SIM", "hopper", 1);
	fx = open_ctx(NULL);
	unsetenv("FAGEN_SIM");
	assert_int_equal(fg_ctx_open(fx->ctx), FG_ERR_NO_DEVICE);
	printf("%s\n", fg_errmsg(fx->ctx));
	assert_non_null(strstr(fg_errmsg(fx->ctx), "FAGEN_SIM=hopper: "
		"expected 1, sm_90a, sm_100a or sm_120a"));
	close_ctx(fx);
}

/* fg_options.target and $FAGEN_TARGET: an unknown value is refused (the
 * option at once, the variable on the driver's first use), and a target
 * the device cannot run is a clear error; sm_80 on the (simulated)
 * sm_90a device is accepted. */
static void
bad_target_values_are_refused(void **state)
{
	fg_options o = {.cache_dir = "", .target = "sm_70"};
	fg_ctx *c;
	Fix *fx;

	(void)state;
	assert_int_equal(fg_ctx_create(&c, &o), FG_ERR_INVALID);
	setenv("FAGEN_TARGET", "ampere", 1);
	fx = open_ctx("sm_90a");
	unsetenv("FAGEN_TARGET");
	assert_int_equal(fg_ctx_open(fx->ctx), FG_ERR_INVALID);
	printf("%s\n", fg_errmsg(fx->ctx));
	assert_non_null(strstr(fg_errmsg(fx->ctx), "FAGEN_TARGET=ampere: "
		"expected sm_80, sm_90a, sm_100a or sm_120a"));
	close_ctx(fx);
	setenv("FAGEN_TARGET", "sm_100a", 1);
	fx = open_ctx("sm_90a");
	unsetenv("FAGEN_TARGET");
	assert_int_equal(fg_ctx_open(fx->ctx), FG_ERR_UNSUPPORTED);
	printf("%s\n", fg_errmsg(fx->ctx));
	assert_non_null(strstr(fg_errmsg(fx->ctx), "target sm_100a asked "
		"for, but device 0"));
	close_ctx(fx);
	setenv("FAGEN_TARGET", "sm_80", 1);
	fx = open_ctx("sm_90a");
	unsetenv("FAGEN_TARGET");
	assert_int_equal(fg_ctx_open(fx->ctx), FG_OK);
	close_ctx(fx);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(attention_matches_float64),
		cmocka_unit_test(sm100_attention_matches_float64),
		cmocka_unit_test(sm80_attention_matches_float64),
		cmocka_unit_test(sm120_attention_matches_float64),
		cmocka_unit_test(sm100_backward_matches_float64),
		cmocka_unit_test(sm90_deterministic_backward_matches_float64),
		cmocka_unit_test(rms_norm_matches_float64),
		cmocka_unit_test(decode_matches_float64),
		cmocka_unit_test(rms_norm_backward_wide_rows),
		cmocka_unit_test(cross_entropy_and_backward),
		cmocka_unit_test(hang_is_a_clear_error),
		cmocka_unit_test(store_past_the_tensor_is_a_clear_error),
		cmocka_unit_test(sm100_linear_is_right),
		cmocka_unit_test(bad_sim_values_are_refused),
		cmocka_unit_test(bad_target_values_are_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
