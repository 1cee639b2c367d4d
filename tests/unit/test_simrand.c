/* test_simrand.c: attention's options drawn at random, through the
 * runtime on the simulator (FAGEN_SIM=sm_90a), against float64.
 *
 * The fixed tests pick their shapes by hand, and a hand misses what no
 * one thought of: a window whose right side was unbounded lost keys
 * whenever there were more queries than keys (stop 30), in the forward,
 * the backward and the reference alike, because no test combined the
 * two.  Here each case draws batch, heads (GQA), query and key lengths
 * (either longer), head dim (64, 96, 128, 192, 256; V's 128 under 192),
 * bf16 or f16, causal, a window (sides -1, 0, small, past the lengths),
 * a softcap, ALiBi, sinks and variable-length batches (empty sequences
 * among them), runs fg_attention_forward (O and LSE against gpu_ref.h)
 * and, where the backward takes the case (no sinks: the float64
 * backward has none), fg_attention_backward (dQ, dK, dV against
 * gpu_ref_bwd.h; in deterministic mode twice, the same bits), every
 * output poisoned first.  The draws are
 * seeded: the same cases every run; FAGEN_RAND_SEED and FAGEN_RAND_N
 * explore others (a failure prints its case, to make a fixed test of).
 */
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

/* the draws' own generator, apart from gpu_ref.h's (the inputs') */
static uint64_t draw_state;

static int
draw(int n)     /* uniform in 0 .. n - 1 */
{
	draw_state ^= draw_state << 13;
	draw_state ^= draw_state >> 7;
	draw_state ^= draw_state << 17;
	return (int)((draw_state >> 33) % (uint64_t)n);
}

enum { MAXSEQ = 4 };

typedef struct Case {
	int z, h, hk, sq, sk, d, dv;
	bool f16, causal, window, alibi, sinks;
	bool det;               /* the deterministic backward: run twice,
				 * bitwise equal */
	int wl, wr;             /* -1: unbounded */
	double cap;
	bool varlen;            /* z sequences of lq[i] queries and lk[i]
				 * keys, packed: sq and sk are the sums */
	int lq[MAXSEQ], lk[MAXSEQ];
} Case;

static void
show(const Case *c, char *buf, size_t n)
{
	size_t k = (size_t)snprintf(buf, n, "Z=%d H=%d/%d SQ=%d SK=%d D=%d "
		"DV=%d %s%s", c->z, c->h, c->hk, c->sq, c->sk, c->d, c->dv,
		c->f16 ? "f16" : "bf16", c->causal ? " causal" : "");
	for (int i = 0; c->varlen && i < c->z && k < n; i++)
		k += (size_t)snprintf(buf + k, n - k, "%s%d:%d", i ? "," :
			" varlen=", c->lq[i], c->lk[i]);
	if (c->window && k < n)
		k += (size_t)snprintf(buf + k, n - k, " window=(%d, %d)", c->wl,
			c->wr);
	if (k < n)
		snprintf(buf + k, n - k, "%s%s%s%s", c->cap > 0 ? " softcap" :
			"", c->alibi ? " alibi" : "", c->sinks ? " sinks" : "",
			c->det ? " deterministic" : "");
}

/* A length: often short or around a 64- or 128-row block's edge. */
static int
length(void)
{
	static const int edge[] = {1, 2, 63, 64, 65, 127, 128, 129, 191, 200};

	return draw(2) ? edge[draw(10)] : 1 + draw(260);
}

static int
side(int len)   /* a window's side: -1, 0, small, or past the length */
{
	switch (draw(4)) {
	case 0: return -1;
	case 1: return draw(3);
	case 2: return 1 + draw(len > 1 ? len : 1);
	default: return len + draw(200);
	}
}

static Case
draw_case(void)
{
	static const int dims[] = {64, 96, 128, 192, 256};
	Case c = {0};

	c.d = dims[draw(5)];
	c.dv = c.d == 192 && draw(3) == 0 ? 128 : c.d;
	c.z = 1 + draw(2);
	c.hk = 1 + draw(2);
	c.h = c.hk * (1 + draw(c.d > 128 ? 2 : 3));
	c.sq = length();
	c.sk = length();
	c.varlen = draw(4) == 0;
	if (c.varlen) {     /* 1 to 4 sequences, some empty */
		c.z = 1 + draw(MAXSEQ);
		c.sq = c.sk = 0;
		for (int i = 0; i < c.z; i++) {
			c.lq[i] = draw(5) == 0 ? 0 : length();
			c.lk[i] = draw(5) == 0 ? 0 : length();
			c.sq += c.lq[i], c.sk += c.lk[i];
		}
		if (!c.sq || !c.sk)     /* the API takes no empty tensor */
			c.lq[0] += !c.sq, c.sq += !c.sq, c.lk[0] += !c.sk,
			c.sk += !c.sk;
	}
	c.f16 = draw(2);
	c.causal = draw(3) == 0;
	c.window = draw(3) == 0;
	if (c.window) {
		c.wl = side(c.sk);
		c.wr = side(c.sq);
	}
	static const double caps[] = {2.0, 5.0, 30.0};
	c.cap = draw(4) == 0 ? caps[draw(3)] : 0;
	c.alibi = draw(5) == 0;
	c.sinks = draw(6) == 0;
	c.det = draw(4) == 0;
	return c;
}

/* Dense [batch, heads, seq, dim] strides of tensor t (Q, K, V, O). */
static void
strides(const Case *c, RefProb *r)
{
	for (int t = 0; t < 4; t++) {
		int hh = t == 1 || t == 2 ? c->hk : c->h;
		int ss = t == 1 || t == 2 ? c->sk : c->sq;
		int dd = t >= 2 ? c->dv : c->d;
		int64_t st4[4] = {(int64_t)hh * ss * dd, (int64_t)ss * dd, dd,
			1};
		memcpy(r->st[t], st4, sizeof st4);
	}
}

/* Sequence i of a varlen case as a problem of its own: [tokens, heads,
 * dim] rows of the packed tensors. */
static RefProb
seq_prob(const Case *c, const RefProb *r, int i)
{
	RefProb ri = *r;

	ri.z = 1, ri.sq = c->lq[i], ri.sk = c->lk[i];
	for (int t = 0; t < 4; t++) {
		int hh = t == 1 || t == 2 ? c->hk : c->h;
		int dd = t >= 2 ? c->dv : c->d;
		int64_t st4[4] = {0, dd, (int64_t)hh * dd, 1};
		memcpy(ri.st[t], st4, sizeof st4);
	}
	return ri;
}

/* ref_compare over each sequence (its LSE rows gathered from [heads,
 * total]); the errors combined. */
static RefErr
compare_varlen(const Case *c, const RefProb *r, const int32_t *cq,
	const int32_t *ck, const uint16_t *q, const uint16_t *k,
	const uint16_t *v, const uint16_t *o, const float *lse)
{
	RefErr all = {0};

	for (int i = 0; i < c->z; i++) {
		if (!c->lq[i])
			continue;
		RefProb ri = seq_prob(c, r, i);
		float *l = malloc((size_t)c->h * c->lq[i] * 4);
		for (int hh = 0; hh < c->h; hh++)
			memcpy(l + (size_t)hh * c->lq[i], lse + (size_t)hh *
				c->sq + cq[i], (size_t)c->lq[i] * 4);
		size_t oq = (size_t)cq[i] * c->h, ok = (size_t)ck[i] * c->hk;
		RefErr e = ref_compare(&ri, q + oq * c->d, k + ok * c->d,
			v + ok * c->dv, o + oq * c->dv, l);
		all.rel = e.rel > all.rel ? e.rel : all.rel;
		all.lerr = e.lerr > all.lerr ? e.lerr : all.lerr;
		all.rows += e.rows;
		all.bad |= e.bad;
		free(l);
	}
	return all;
}

/* A call of the case that returned st: a skip (true, counted) where
 * unsup takes FG_ERR_UNSUPPORTED as one, else a failure (false). */
static bool
refused(fg_ctx *ctx, fg_status st, bool unsup, const char *name,
	const char *what, int *skipped)
{
	bool skip = st == FG_ERR_UNSUPPORTED && unsup;

	printf("%s: %s %s: %s\n", name, what, skip ? "refused" : "failed",
		fg_errmsg(ctx));
	*skipped += skip;
	return skip;
}

/* One case, forward and (where taken) backward; false on a mismatch.
 * unsup: FG_ERR_UNSUPPORTED is a skip (sm_100a's forward has no head
 * dim 256 in the runtime and its backward no window, softcap, ALiBi or
 * head dims past 128 yet, and each says so), counted in *skipped. */
static bool
run_case(fg_ctx *ctx, const Case *c, bool unsup, int *skipped)
{
	int zt = c->varlen ? 1 : c->z;      /* varlen: one packed batch */
	size_t nq = (size_t)zt * c->h * c->sq * c->d;
	size_t nk = (size_t)zt * c->hk * c->sk * c->d;
	size_t nkv = (size_t)zt * c->hk * c->sk * c->dv;
	size_t nqv = (size_t)zt * c->h * c->sq * c->dv;
	size_t nl = (size_t)zt * c->h * c->sq;
	int32_t cq[MAXSEQ + 1] = {0}, ck[MAXSEQ + 1] = {0};
	int mq = 0, mk = 0;
	uint16_t *q = random16_of(nq, c->f16), *k = random16_of(nk, c->f16);
	uint16_t *v = random16_of(nkv, c->f16), *dout = random16_of(nqv, c->f16);
	uint16_t *o = poisoned(nqv * 2), *dq = poisoned(nq * 2);
	uint16_t *dk = poisoned(nk * 2), *dv = poisoned(nkv * 2);
	float *lse = poisoned(nl * 4);
	float *sink = malloc((size_t)c->h * 4), *slope = malloc((size_t)c->h * 4);
	char name[256];
	bool ok = true;

	show(c, name, sizeof name);
	for (int i = 0; c->varlen && i < c->z; i++) {
		cq[i + 1] = cq[i] + c->lq[i], ck[i + 1] = ck[i] + c->lk[i];
		mq = c->lq[i] > mq ? c->lq[i] : mq;
		mk = c->lk[i] > mk ? c->lk[i] : mk;
	}
	for (int i = 0; i < c->h; i++) {
		sink[i] = (float)urand();
		slope[i] = 0.05f * (float)(i + 1);
	}
	fg_attention_bwd_args b = {
		.fwd = {.q = (uintptr_t)q, .k = (uintptr_t)k,
			.v = (uintptr_t)v, .o = (uintptr_t)o,
			.lse = (uintptr_t)lse, .batch = c->z, .heads = c->h,
			.heads_k = c->hk, .seq_q = c->sq, .seq_k = c->sk,
			.head_dim = c->d, .head_dim_v = c->dv,
			.dtype = c->f16 ? FG_DTYPE_F16 : FG_DTYPE_BF16,
			.causal = c->causal, .window = c->window,
			.window_left = c->wl, .window_right = c->wr,
			.softcap = c->cap,
			.sinks = c->sinks ? (uintptr_t)sink : 0,
			.alibi_slopes = c->alibi ? (uintptr_t)slope : 0},
		.dout = (uintptr_t)dout, .dq = (uintptr_t)dq,
		.dk = (uintptr_t)dk, .dv = (uintptr_t)dv,
		.deterministic = c->det,
	};
	if (c->varlen) {
		b.fwd.cu_seqlens_q = (uintptr_t)cq;
		b.fwd.cu_seqlens_k = (uintptr_t)ck;
		b.fwd.max_seqlen_q = mq, b.fwd.max_seqlen_k = mk;
	}
	RefProb r = {.z = c->z, .h = c->h, .sq = c->sq, .sk = c->sk,
		.d = c->d, .causal = c->causal, .f16 = c->f16,
		.g = c->h / c->hk, .window = c->window, .wl = c->wl,
		.wr = c->wr, .cap = c->cap, .sinks = c->sinks ? sink : NULL,
		.alibi = c->alibi ? slope : NULL, .dv = c->dv};

	strides(c, &r);
	fg_status st = fg_attention_forward(ctx, &b.fwd,
		CU_STREAM_PER_THREAD);
	if (st) {
		ok = refused(ctx, st, unsup, name, "forward", skipped);
		goto out;
	}
	RefErr e = c->varlen ? compare_varlen(c, &r, cq, ck, q, k, v, o, lse) :
		ref_compare(&r, q, k, v, o, lse);
	printf("%s: forward rel %.2e, lse %.2e over %ld rows%s\n", name,
		e.rel, e.lerr, e.rows, e.bad ? " -> FAIL" : "");
	ok = !e.bad;
	if (c->sinks)
		goto out;
	st = fg_attention_backward(ctx, &b, CU_STREAM_PER_THREAD);
	if (st) {
		ok = ok && refused(ctx, st, unsup, name, "backward", skipped);
		goto out;
	}
	double *rq = malloc(nq * 8), *rk = malloc(nk * 8);
	double *rv = malloc(nkv * 8);
	bool nan = false;
	if (!c->varlen)
		ref_backward(&r, q, k, v, dout, NULL, NULL, rq, rk, rv);
	for (int i = 0; c->varlen && i < c->z; i++) {
		RefProb ri = seq_prob(c, &r, i);
		size_t oq = (size_t)cq[i] * c->h, ok = (size_t)ck[i] * c->hk;
		ref_backward(&ri, q + oq * c->d, k + ok * c->d,
			v + ok * c->dv, dout + oq * c->dv, NULL, NULL,
			rq + oq * c->d, rk + ok * c->d, rv + ok * c->dv);
	}
	bool same = true;
	if (c->det) {   /* a second pass: the same bits */
		uint16_t *q2 = malloc(nq * 2), *k2 = malloc(nk * 2);
		uint16_t *v2 = malloc(nkv * 2);
		memcpy(q2, dq, nq * 2), memcpy(k2, dk, nk * 2);
		memcpy(v2, dv, nkv * 2);
		memset(dq, 0xff, nq * 2), memset(dk, 0xff, nk * 2);
		memset(dv, 0xff, nkv * 2);
		same = fg_attention_backward(ctx, &b, CU_STREAM_PER_THREAD) ==
			FG_OK && !memcmp(q2, dq, nq * 2) &&
			!memcmp(k2, dk, nk * 2) && !memcmp(v2, dv, nkv * 2);
		free(q2), free(k2), free(v2);
	}
	double eq = ref_rel16(dq, rq, nq, c->f16, &nan);
	double ek = ref_rel16(dk, rk, nk, c->f16, &nan);
	double ev = ref_rel16(dv, rv, nkv, c->f16, &nan);
	double tol = c->f16 ? 4e-3 : 2e-2;   /* the simulator rows' */
	bool bok = !nan && same && eq <= tol && ek <= tol && ev <= tol;
	printf("%s: backward rel dq %.2e dk %.2e dv %.2e%s%s%s\n", name, eq,
		ek, ev, nan ? " NaN" : "", same ? "" : " NOT REPEATED",
		bok ? "" : " -> FAIL");
	ok = ok && bok;
	free(rq), free(rk), free(rv);
out:
	free(q), free(k), free(v), free(dout), free(o), free(dq), free(dk);
	free(dv), free(lse), free(sink), free(slope);
	return ok;
}

/* count cases (FAGEN_RAND_N, else dflt) on the simulated device sim. */
static void
cases(const char *sim, int dflt, uint64_t seed)
{
	const char *s = getenv("FAGEN_RAND_SEED"), *n = getenv("FAGEN_RAND_N");
	int count = n ? atoi(n) : dflt, bad = 0, skipped = 0;
	TestAlloc ta = {0};
	fg_options o = {.alloc = test_alloc, .alloc_ud = &ta, .cache_dir = "",
		.sim = sim};
	fg_ctx *ctx;
	bool sm100 = !strcmp(sim, "sm_100a");

	draw_state = s ? strtoull(s, NULL, 0) | 1 : seed;
	printf("%s: seed 0x%llx, %d cases\n", sim,
		(unsigned long long)draw_state, count);
	assert_int_equal(fg_ctx_create(&ctx, &o), FG_OK);
	for (int i = 0; i < count; i++) {
		Case c = draw_case();
		bad += !run_case(ctx, &c, sm100, &skipped);
	}
	printf("%s: %d cases, %d mismatched, %d refused\n", sim,
		count, bad, skipped);
	fg_ctx_destroy(ctx);
	assert_int_equal(ta.live, 0);
	assert_int_equal(bad, 0);
}

static void
sm90_random_cases_match_float64(void **state)
{
	(void)state;
	cases("sm_90a", 40, 0x9e3779b97f4a7c15ull);
}

/* sm_100a's schedules (never run on hardware: the simulator is where
 * they run at all) */
static void
sm100_random_cases_match_float64(void **state)
{
	(void)state;
	cases("sm_100a", 16, 0x5851f42d4c957f2dull);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sm90_random_cases_match_float64),
		cmocka_unit_test(sm100_random_cases_match_float64),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
