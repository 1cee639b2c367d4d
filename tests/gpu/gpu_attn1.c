/* gpu_attn1.c: runs tests/gpu/attn1.fa (one 64-row query tile against one
 * key block) on a Hopper GPU and checks O and LSE against a float64
 * reference on fresh random inputs, with O and LSE poisoned before each
 * run and each run repeated (a moving result is a race).  Compiles,
 * assembles and launches through libfagen.  Exit 77 (SKIP) without a
 * GPU. */
#include "gpu_runtime.h"
#include "gpu_ref.h"

static fg_ctx *ctx;
static CUstream stream;

/* One configuration; returns 0 when it passes. */
static int
run(const char *src, int D, int BN, int SK, bool f16)
{
	char d1[32], d2[32], d3[32];
	const char *defs[] = {d1, d2, d3};
	fg_compile_options opt = {.defines = defs, .ndefines = 3};
	fg_program *prog;
	fg_kernel *fk;
	size_t nq = 64 * (size_t)D, nk = (size_t)BN * D;
	uint16_t *q = malloc(nq * 2), *k = malloc(nk * 2), *v = malloc(nk * 2);
	uint16_t *o = malloc(nq * 2);
	float lse[64];
	double scale = 1 / sqrt((double)D), err = 0, ref2 = 0, lerr = 0;
	int bad = 0;

	snprintf(d1, sizeof d1, "D=%d", D);
	snprintf(d2, sizeof d2, "BN=%d", BN);
	snprintf(d3, sizeof d3, "DT=%s", f16 ? "f16" : "bf16");
	FG(ctx, fg_compile_file(ctx, src, &opt, &prog));
	FG(ctx, fg_kernel_create(ctx, fg_program_ptx(prog, NULL), 0, &fk));
	for (size_t i = 0; i < nq; i++)
		q[i] = to16(2 * urand(), f16);
	for (size_t i = 0; i < nk; i++) {
		k[i] = to16(2 * urand(), f16);
		v[i] = to16(urand(), f16);
	}
	CUdeviceptr Q, K, V, O, L;
	CK(cu.MemAlloc(&Q, nq * 2));
	CK(cu.MemAlloc(&K, nk * 2));
	CK(cu.MemAlloc(&V, nk * 2));
	CK(cu.MemAlloc(&O, nq * 2));
	CK(cu.MemAlloc(&L, sizeof lse));
	CK(cu.MemcpyHtoD(Q, q, nq * 2));
	CK(cu.MemcpyHtoD(K, k, nk * 2));
	CK(cu.MemcpyHtoD(V, v, nk * 2));
	float sl2 = (float)(scale * 1.4426950408889634);
	fg_arg args[] = {
		FG_INT("SK", SK), FG_FLOAT("scale_log2", sl2), FG_PTR("Q", Q),
		FG_PTR("K", K), FG_PTR("V", V), FG_PTR("O", O),
		FG_PTR("LSE", L),
	};

	/* float64 reference */
	double *ro = calloc(nq, sizeof *ro), rl[64];
	for (int r = 0; r < 64; r++) {
		double s[256], m = -INFINITY, l = 0;
		for (int c = 0; c < BN; c++) {
			double acc = 0;
			for (int d = 0; d < D; d++)
				acc += from16(q[r * D + d], f16) *
					from16(k[c * D + d], f16);
			s[c] = c < SK ? acc * scale : -INFINITY;
			m = fmax(m, s[c]);
		}
		for (int c = 0; c < BN; c++)
			l += s[c] == -INFINITY ? 0 : exp(s[c] - m);
		for (int d = 0; d < D; d++) {
			double acc = 0;
			for (int c = 0; c < SK && c < BN; c++)
				acc += exp(s[c] - m) * from16(v[c * D + d], f16);
			ro[r * D + d] = acc / l;
		}
		rl[r] = m + log(l);
	}
	uint16_t *first = malloc(nq * 2);
	for (int rep = 0; rep < 2; rep++) {
		CK(cu.MemsetD8(O, 0xff, nq * 2));   /* poison: NaN */
		CK(cu.MemsetD8(L, 0xff, sizeof lse));
		CK(cu.CtxSynchronize());
		FG(ctx, fg_launch(fk, stream, args, 7));
		CK(cu.StreamSynchronize(stream));
		CK(cu.MemcpyDtoH(o, O, nq * 2));
		CK(cu.MemcpyDtoH(lse, L, sizeof lse));
		if (rep == 0)
			memcpy(first, o, nq * 2);
		else if (memcmp(first, o, nq * 2))
			bad |= 4;
	}
	for (size_t i = 0; i < nq; i++) {
		double x = from16(o[i], f16);
		if (x != x)
			bad |= 1;
		err += (x - ro[i]) * (x - ro[i]);
		ref2 += ro[i] * ro[i];
	}
	for (int r = 0; r < 64; r++) {
		if (lse[r] != lse[r])
			bad |= 2;
		lerr = fmax(lerr, fabs(lse[r] - rl[r]));
	}
	double rel = sqrt(err / ref2), tol = f16 ? 3e-3 : 1e-2;
	if (rel > tol || lerr > 1e-3)
		bad |= 8;
	printf("attn1 D=%d BN=%d SK=%d %s: rel err %.2e (tol %.0e), LSE err "
		"%.2e%s%s%s -> %s\n", D, BN, SK, f16 ? "f16" : "bf16", rel, tol,
		lerr, bad & 1 ? ", NaN in O" : "", bad & 2 ? ", NaN in LSE" : "",
		bad & 4 ? ", runs differ" : "", bad ? "FAIL" : "ok");
	free(q), free(k), free(v), free(o), free(ro), free(first);
	cu.MemFree(Q), cu.MemFree(K), cu.MemFree(V), cu.MemFree(O);
	cu.MemFree(L);
	fg_kernel_free(fk);
	fg_program_free(prog);
	return bad;
}

int
main(void)
{
	fg_options opts = {.cache_dir = ""};
	const char *src = gpu_src("tests/gpu/attn1.fa");
	int bad = 0;

	gpu_open();
	FG(ctx, fg_ctx_create(&ctx, &opts));
	CK(cu.StreamCreate(&stream, CU_STREAM_NON_BLOCKING));
	bad |= run(src, 64, 64, 64, false);
	bad |= run(src, 64, 64, 17, false);
	bad |= run(src, 64, 64, 1, false);
	bad |= run(src, 128, 64, 64, false);
	bad |= run(src, 64, 128, 100, false);
	bad |= run(src, 128, 128, 128, false);
	bad |= run(src, 64, 64, 64, true);
	bad |= run(src, 128, 128, 77, true);
	CK(cu.StreamDestroy(stream));
	fg_ctx_destroy(ctx);
	return bad ? 1 : 0;
}
