/* gpu_fa.c: schedules/fa_fwd_sm90.fa on a Hopper GPU against a float64
 * host reference, over the shapes of issue #3: batch 1 and 3; heads 1, 5,
 * 16; sequence lengths from {1, 17, 128, 1000, 4097, 8192} with q != k;
 * causal on and off; head dim 64, 128 and 256; bf16 and f16.  Fresh random
 * inputs per case, O and LSE poisoned (NaN) before each run, each run done
 * twice and compared bit for bit.  Every element of O is checked for NaN
 * (an unwritten one); the float64 comparison covers every row of small
 * problems and 48 rows per (batch, head) of large ones (the first 8, the
 * last 8 and 32 at random).  Cases with attention sinks (-D SINKS=true,
 * a random f32 logit per head, some large enough to dominate their rows)
 * run on both schedules too.  Compiles, assembles and launches through
 * libfagen.  `gpu_fa bench` times each kernel with CUDA events on the
 * test's stream.  Exit 77 (SKIP) without a Hopper GPU. */
#include "gpu_runtime.h"
#include "gpu_ref.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

typedef struct Case {
	int z, h, sq, sk, d;
	bool causal, f16;
	const char *extra;  /* one more -D for fa_fwd_sm90, or NULL */
	int g;              /* query heads per K/V head; 0: 1 (MHA) */
	bool window;        /* -D WINDOW=true: keys i' - wl .. i' + wr */
	int wl, wr;         /* -1: unbounded */
	double cap;         /* > 0: -D SOFTCAP=true */
} Case;

/* A schedule under test: both take the same arguments. */
typedef struct Sched {
	const char *file, *kernel;
	bool persistent;
	int maxd;           /* the largest head dim it takes; 0: 256 */
} Sched;

static const Sched scheds[] = {
	{"schedules/fa_fwd_sm90.fa", "fa_fwd", true, 0},
	{"schedules/fa_fwd_baseline_sm90.fa", "fa_fwd_base", false, 0},
	/* sm_80 PTX, JIT-compiled for the Hopper GPU (issue #28) */
	{"schedules/fa_fwd_sm80.fa", "fa_fwd_sm80", false, 0},
	{"schedules/fa_fwd_ws_sm80.fa", "fa_fwd_ws_sm80", false, 128},
};

static fg_ctx *ctx;
static CUstream stream;
static bool bench;

static int
cmpf(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

/* Median kernel time in ms over 20 runs after 5 of warm-up: every run
 * between its own pair of events, all queued before the first sync, so
 * that the host's launch work overlaps the previous kernel. */
static float
time_kernel(fg_kernel *k, const fg_arg *args, int n)
{
	CUevent e[25][2];
	float ms[20];

	for (int r = 0; r < 25; r++) {
		CK(cu.EventCreate(&e[r][0], 0));
		CK(cu.EventCreate(&e[r][1], 0));
		CK(cu.EventRecord(e[r][0], stream));
		FG(ctx, fg_launch(k, stream, args, n));
		CK(cu.EventRecord(e[r][1], stream));
	}
	CK(cu.EventSynchronize(e[24][1]));
	for (int r = 0; r < 25; r++) {
		if (r >= 5)
			CK(cu.EventElapsedTime(&ms[r - 5], e[r][0], e[r][1]));
		cu.EventDestroy(e[r][0]);
		cu.EventDestroy(e[r][1]);
	}
	qsort(ms, 20, sizeof ms[0], cmpf);
	return ms[10];
}

/* sinks: with -D SINKS=true and a SINK tensor */
static int
run(const Sched *sc, const Case *c, bool sinks)
{
	char d1[32], d2[32], d3[32], d4[32];
	const char *defs[7] = {d1, d2, d3};
	bool extra = c->extra && !strcmp(sc->kernel, "fa_fwd");
	fg_compile_options opt = {.defines = defs, .ndefines = 3};
	fg_program *prog;
	fg_kernel *fk;
	size_t nq = (size_t)c->z * c->sq * c->h * c->d;
	int g = c->g > 1 ? c->g : 1, hk = c->h / g;  /* K/V heads */
	size_t nk = (size_t)c->z * c->sk * hk * c->d;
	size_t nl = (size_t)c->z * c->h * c->sq;
	int bad = 0;
	if (sc->maxd && c->d > sc->maxd)
		return 0;
	/* fa_fwd_ws_sm80.fa refuses a softcap above D = 64 (registers) */
	if (sc->maxd && c->cap > 0 && c->d > 64)
		return 0;
	/* B,S,H,D, dense: the schedule's [Z, S, H, D] */
	RefProb p = {c->z, c->h, c->sq, c->sk, c->d, c->causal, c->f16, {
		{(int64_t)c->sq * c->h * c->d, c->d, (int64_t)c->h * c->d, 1},
		{(int64_t)c->sk * hk * c->d, c->d, (int64_t)hk * c->d, 1},
		{(int64_t)c->sk * hk * c->d, c->d, (int64_t)hk * c->d, 1},
		{(int64_t)c->sq * c->h * c->d, c->d, (int64_t)c->h * c->d, 1},
	}, g, c->window, c->wl, c->wr, c->cap, NULL, NULL, NULL, 0};

	snprintf(d1, sizeof d1, "D=%d", c->d);
	snprintf(d2, sizeof d2, "CAUSAL=%s", c->causal ? "true" : "false");
	snprintf(d3, sizeof d3, "DT=%s", c->f16 ? "f16" : "bf16");
	snprintf(d4, sizeof d4, "%s", c->extra ? c->extra : "");
	if (extra)
		defs[opt.ndefines++] = d4;
	if (sinks)
		defs[opt.ndefines++] = "SINKS=true";
	if (c->window)
		defs[opt.ndefines++] = "WINDOW=true";
	if (c->cap > 0)
		defs[opt.ndefines++] = "SOFTCAP=true";
	FG(ctx, fg_compile_file(ctx, gpu_src(sc->file), &opt, &prog));
	FG(ctx, fg_kernel_create(ctx, fg_program_ptx(prog, NULL), 0, &fk));
	uint16_t *q = malloc(nq * 2), *k = malloc(nk * 2), *v = malloc(nk * 2);
	uint16_t *o = malloc(nq * 2), *o2 = malloc(nq * 2);
	float *lse = malloc(nl * 4), *sink = calloc((size_t)c->h, 4);
	/* every third head's sink dominates its rows; drawn only with
	 * sinks, so that the other cases keep their inputs */
	for (int i = 0; sinks && i < c->h; i++)
		sink[i] = (float)(3 * urand() + (i % 3 == 2 ? 6 : 0));
	if (sinks)
		p.sinks = sink;
	for (size_t i = 0; i < nq; i++)
		q[i] = to16(2 * urand(), c->f16);
	for (size_t i = 0; i < nk; i++) {
		k[i] = to16(2 * urand(), c->f16);
		v[i] = to16(urand(), c->f16);
	}
	CUdeviceptr Q, K, V, O, L, S;
	CK(cu.MemAlloc(&S, (size_t)c->h * 4));
	CK(cu.MemcpyHtoD(S, sink, (size_t)c->h * 4));
	CK(cu.MemAlloc(&Q, nq * 2));
	CK(cu.MemAlloc(&K, nk * 2));
	CK(cu.MemAlloc(&V, nk * 2));
	CK(cu.MemAlloc(&O, nq * 2));
	CK(cu.MemAlloc(&L, nl * 4));
	CK(cu.MemcpyHtoD(Q, q, nq * 2));
	CK(cu.MemcpyHtoD(K, k, nk * 2));
	CK(cu.MemcpyHtoD(V, v, nk * 2));
	double scale = 1 / sqrt((double)c->d);
	float sl2 = (float)(1.4426950408889634 * (c->cap > 0 ? c->cap : scale));
	/* the window's sides as the runtime passes them: -1 (unbounded) and
	 * anything past SK become SK; causal makes the right side 0 */
	int wl = c->wl < 0 || c->wl > c->sk ? c->sk : c->wl;
	int wr = c->causal ? 0 : c->wr < 0 || c->wr > c->sk ? c->sk : c->wr;
	fg_arg args[15] = {
		FG_INT("Z", c->z), FG_INT("H", c->h), FG_INT("G", g),
		FG_INT("SQ", c->sq), FG_INT("SK", c->sk),
		FG_FLOAT("scale_log2", sl2), FG_PTR("Q", Q), FG_PTR("K", K),
		FG_PTR("V", V), FG_PTR("O", O), FG_PTR("LSE", L),
	};
	int na = 11;
	if (c->window) {
		args[na++] = FG_INT("WL", wl);
		args[na++] = FG_INT("WR", wr);
	}
	if (c->cap > 0)
		args[na++] = FG_FLOAT("sc_in", scale / c->cap);
	if (sinks)
		args[na++] = FG_PTR("SINK", S);
	int64_t tiles[3];
	FG(ctx, fg_kernel_check(fk, args, na, tiles));
	int64_t nt = tiles[0] * tiles[1] * tiles[2];
	int grid = (int)(sc->persistent && nt > gpu.nsm ? gpu.nsm : nt);
	for (int rep = 0; rep < 2; rep++) {
		CK(cu.MemsetD8(O, 0xff, nq * 2));
		CK(cu.MemsetD8(L, 0xff, nl * 4));
		CK(cu.CtxSynchronize());
		FG(ctx, fg_launch(fk, stream, args, na));
		CK(cu.StreamSynchronize(stream));
		CK(cu.MemcpyDtoH(rep ? o2 : o, O, nq * 2));
	}
	double tflops = 0;
	if (bench) {  /* CUDA events, warm-up excluded, median of 20 */
		float ms = time_kernel(fk, args, na);
		double fl = 4.0 * c->z * c->h * (double)c->sq * c->sk * c->d;
		tflops = fl / (c->causal ? 2 : 1) / (ms * 1e-3) / 1e12;
	}
	CK(cu.MemcpyDtoH(lse, L, nl * 4));
	if (memcmp(o, o2, nq * 2))
		bad |= 4;
	for (size_t i = 0; i < nq; i++)
		if (from16(o[i], c->f16) != from16(o[i], c->f16))
			bad |= 1;
	RefErr e = ref_compare(&p, q, k, v, o, lse);
	bad |= e.bad;
	printf("%s Z=%d H=%d G=%d SQ=%d SK=%d D=%d %s%s%s%s %s%s%s grid=%d: "
		"rel err %.2e, LSE err %.1e over %ld rows%s%s%s -> %s",
		sc->kernel, c->z, c->h, g, c->sq, c->sk, c->d, c->causal ?
		"causal" : "full", c->window ? " window" : "", c->cap > 0 ?
		" softcap" : "", sinks ? " sinks" : "",
		c->f16 ? "f16" : "bf16", extra ? " " : "", extra ? d4 : "",
		grid, e.rel, e.lerr, e.rows,
		bad & 1 ? ", NaN in O" : "", bad & 2 ? ", NaN in LSE" : "",
		bad & 4 ? ", runs differ" : "", bad ? "FAIL" : "ok");
	if (bench)
		printf(", %.0f TFLOP/s", tflops);
	printf("\n");
	free(q), free(k), free(v), free(o), free(o2), free(lse), free(sink);
	cu.MemFree(Q), cu.MemFree(K), cu.MemFree(V), cu.MemFree(O);
	cu.MemFree(L), cu.MemFree(S);
	fg_kernel_free(fk);
	fg_program_free(prog);
	return bad;
}

int
main(int argc, char **argv)
{
	static const Case cases[] = {
		{1, 1, 1, 1, 64, false, false, NULL, 1, false, 0, 0, 0},
		{1, 1, 17, 17, 128, true, false, NULL, 1, false, 0, 0, 0},
		{1, 5, 128, 128, 64, true, true, NULL, 1, false, 0, 0, 0},
		{3, 5, 1000, 1000, 128, false, false, NULL, 1, false, 0, 0, 0},
		{3, 5, 1000, 1000, 128, true, false, NULL, 1, false, 0, 0, 0},
		{1, 5, 1000, 4097, 128, true, false, NULL, 1, false, 0, 0, 0},
		{3, 1, 4097, 17, 64, false, false, NULL, 1, false, 0, 0, 0},
		{1, 5, 1000, 17, 128, true, false, NULL, 1, false, 0, 0, 0},
		{3, 16, 1, 128, 128, true, false, NULL, 1, false, 0, 0, 0},
		{1, 5, 128, 1000, 64, false, true, NULL, 1, false, 0, 0, 0},
		{1, 16, 4097, 4097, 64, false, true, NULL, 1, false, 0, 0, 0},
		{1, 16, 4097, 4097, 128, true, false, NULL, 1, false, 0, 0, 0},
		{1, 1, 17, 8192, 128, true, true, NULL, 1, false, 0, 0, 0},
		{1, 1, 8192, 8192, 128, false, false, NULL, 1, false, 0, 0, 0},
		{1, 1, 8192, 8192, 64, true, true, NULL, 1, false, 0, 0, 0},
		{3, 16, 1000, 1000, 64, true, false, NULL, 1, false, 0, 0, 0},
		/* causal head groups of 2 (15 planes: 8 groups, the last of
		 * one) and of 1 */
		{3, 5, 1000, 1000, 128, true, false, "L2KV=1048576", 1, false, 0, 0, 0},
		{1, 16, 4097, 4097, 64, true, true, "L2KV=1", 1, false, 0, 0, 0},
		/* head dim 256: 64-key blocks, O over Q */
		{1, 5, 1000, 1000, 256, false, false, NULL, 1, false, 0, 0, 0},
		{2, 3, 777, 1500, 256, true, true, NULL, 1, false, 0, 0, 0},
		{1, 2, 4097, 4097, 256, true, false, NULL, 1, false, 0, 0, 0},
		/* every exp2 of the unmasked blocks by polynomial */
		{3, 5, 1000, 1000, 128, false, false, "POLY=8", 1, false, 0, 0, 0},
		{1, 16, 4097, 4097, 64, true, true, "POLY=8", 1, false, 0, 0, 0},
		{1, 5, 1000, 4097, 64, false, false, "POLY=3", 1, false, 0, 0, 0},
		/* GQA (G query heads per K/V head) and MQA (G = H) */
		{1, 8, 1000, 1000, 128, false, false, NULL, 4, false, 0, 0, 0},
		{2, 32, 333, 2049, 128, true, false, NULL, 8, false, 0, 0, 0},
		{1, 4, 4097, 4097, 64, true, true, NULL, 4, false, 0, 0, 0},
		{3, 6, 63, 63, 256, false, true, NULL, 2, false, 0, 0, 0},
		{1, 32, 2049, 2049, 128, true, true, "L2KV=1048576", 32, false, 0, 0, 0},
		{2, 2, 1, 3333, 64, false, false, NULL, 2, false, 0, 0, 0},
		/* sliding windows (bottom right; -1 unbounded), with causal,
		 * GQA, odd lengths, a window that misses every key */
		{1, 4, 1000, 1000, 128, false, false, NULL, 1, true, 100, 50, 0},
		{2, 8, 333, 2049, 128, true, false, NULL, 4, true, 256, -1, 0},
		{1, 2, 4097, 4097, 64, false, true, NULL, 1, true, 1000, 0, 0},
		{1, 2, 3333, 3333, 256, false, false, NULL, 2, true, -1, 63, 0},
		{3, 2, 63, 2049, 64, false, true, NULL, 1, true, 0, 0, 0},
		{1, 2, 300, 1000, 128, false, false, NULL, 1, true, 0, -1, 0},
		{1, 2, 1000, 300, 64, true, false, NULL, 1, true, 17, 1, 0},
		/* logit softcap (Gemma 2: 50), alone and with the rest */
		{2, 4, 1000, 1000, 128, false, false, NULL, 1, false, 0, 0, 50},
		{1, 8, 2049, 2049, 64, true, true, NULL, 2, false, 0, 0, 5},
		{1, 4, 777, 1500, 256, true, false, NULL, 1, true, 300, 0, 20},
	};
	/* attention sinks: a row that sees no key (SQ > SK, causal) gets
	 * O = 0 and LSE = its head's sink */
	static const Case sink_cases[] = {
		{1, 5, 1000, 1000, 128, false, false, NULL, 1, false, 0, 0, 0},
		{2, 3, 777, 1500, 64, true, true, NULL, 1, false, 0, 0, 0},
		{1, 4, 1000, 17, 128, true, false, NULL, 1, false, 0, 0, 0},
		{1, 8, 333, 2049, 256, true, false, NULL, 4, false, 0, 0, 0},
		{1, 6, 1, 1, 64, false, true, NULL, 3, false, 0, 0, 0},
		{1, 16, 4097, 4097, 64, true, false, "POLY=8", 1, false, 0, 0, 0},
	};
	fg_options opts = {.cache_dir = ""};
	int bad = 0;

	bench = argc > 1 && !strcmp(argv[1], "bench");
	/* GPU_FA_ONLY=KERNEL: that schedule's cases alone */
	const char *only = getenv("GPU_FA_ONLY");
	gpu_open();
	FG(ctx, fg_ctx_create(&ctx, &opts));
	CK(cu.StreamCreate(&stream, CU_STREAM_NON_BLOCKING));
	if (bench) {  /* 16k tokens, hidden 2048: issue #7's grid, S = 8k */
		static const Case b[] = {
			{2, 16, 8192, 8192, 128, false, false, NULL, 1, false, 0, 0, 0},
			{2, 16, 8192, 8192, 128, true, false, NULL, 1, false, 0, 0, 0},
			{2, 32, 8192, 8192, 64, false, false, NULL, 1, false, 0, 0, 0},
			{2, 32, 8192, 8192, 64, true, false, NULL, 1, false, 0, 0, 0},
		};
		for (size_t s = 0; s < COUNT(scheds); s++)
			for (size_t i = 0; i < COUNT(b) && (!only ||
			    !strcmp(only, scheds[s].kernel)); i++)
				bad |= run(&scheds[s], &b[i], false);
	} else {
		for (size_t s = 0; s < COUNT(scheds); s++) {
			if (only && strcmp(only, scheds[s].kernel))
				continue;
			for (size_t i = 0; i < COUNT(cases); i++)
				bad |= run(&scheds[s], &cases[i], false);
			for (size_t i = 0; i < COUNT(sink_cases); i++)
				bad |= run(&scheds[s], &sink_cases[i], true);
		}
	}
	CK(cu.StreamDestroy(stream));
	fg_ctx_destroy(ctx);
	return bad ? 1 : 0;
}
