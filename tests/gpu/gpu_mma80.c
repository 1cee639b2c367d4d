/* gpu_mma80.c: the sm_80 target's MMA (mma.sync, issue #28), JIT-compiled
 * for the Hopper GPU from sm_80 PTX: tests/gpu/mma80.fa computes C = A @ B
 * (+ A @ B) for random bf16 A, B through every way the lowering reads its
 * operands -- A K-major or transposed, B K-major or MN-major
 * (ldmatrix.trans), a single last n-tile (ldmatrix.x2), swizzles 0, 32,
 * 64 and 128 -- with the tiles brought in by cp_async through groups or
 * an mbarrier, and A's rows past M zero-filled.  C is checked against
 * float64 (bf16 products are exact in f32: only the f32 sums round),
 * poisoned (NaN) first, run twice and compared bitwise.  Exit 77 without
 * a GPU. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "gpu_runtime.h"
#include "gpu_ref.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

typedef struct Cfg {
	int k, n, sw;
	bool at, bmn, mbar, acc;
	int m;  /* A's rows (AT: K's) read; the rest zero-filled */
} Cfg;

static int
run(fg_ctx *ctx, CUstream stream, const Cfg *c)
{
	char d[7][24];
	const char *defs[7];
	int nd = 0;
	fg_program *prog;
	fg_kernel *k;
	int K = c->k, N = c->n, M = 64;
	size_t na = (size_t)K * M, nb = (size_t)K * N, nc = (size_t)M * N;
	uint16_t *ha = malloc(na * 2), *hb = malloc(nb * 2);
	float *hc[2] = {malloc(nc * 4), malloc(nc * 4)};
	CUdeviceptr A, B, C;
	double worst = 0;

	snprintf(d[nd], 24, "K=%d", K), defs[nd] = d[nd], nd++;
	snprintf(d[nd], 24, "N=%d", N), defs[nd] = d[nd], nd++;
	snprintf(d[nd], 24, "SW=%d", c->sw), defs[nd] = d[nd], nd++;
	snprintf(d[nd], 24, "AT=%s", c->at ? "true" : "false"),
		defs[nd] = d[nd], nd++;
	snprintf(d[nd], 24, "BMN=%s", c->bmn ? "true" : "false"),
		defs[nd] = d[nd], nd++;
	snprintf(d[nd], 24, "MBAR=%s", c->mbar ? "true" : "false"),
		defs[nd] = d[nd], nd++;
	snprintf(d[nd], 24, "ACC=%s", c->acc ? "true" : "false"),
		defs[nd] = d[nd], nd++;
	fg_compile_options opt = {.defines = defs, .ndefines = nd};
	FG(ctx, fg_compile_file(ctx, gpu_src("tests/gpu/mma80.fa"), &opt,
		&prog));
	FG(ctx, fg_kernel_create(ctx, fg_program_ptx(prog, NULL), 0, &k));
	for (size_t i = 0; i < na; i++)  /* small finite bf16 values */
		ha[i] = (uint16_t)(0x3c00 + gpu_rand16() % 0x0600) ^
			(gpu_rand16() & 0x8000);
	for (size_t i = 0; i < nb; i++)
		hb[i] = (uint16_t)(0x3c00 + gpu_rand16() % 0x0600) ^
			(gpu_rand16() & 0x8000);
	CK(cu.MemAlloc(&A, na * 2));
	CK(cu.MemAlloc(&B, nb * 2));
	CK(cu.MemAlloc(&C, nc * 4));
	CK(cu.MemcpyHtoD(A, ha, na * 2));
	CK(cu.MemcpyHtoD(B, hb, nb * 2));
	fg_arg args[] = {FG_INT("M", c->m), FG_PTR("A", A), FG_PTR("B", B),
		FG_PTR("C", C)};
	for (int rep = 0; rep < 2; rep++) {
		CK(cu.MemsetD8(C, 0xff, nc * 4));  /* NaN poison */
		CK(cu.CtxSynchronize());
		FG(ctx, fg_launch(k, stream, args, 4));
		CK(cu.StreamSynchronize(stream));
		CK(cu.MemcpyDtoH(hc[rep], C, nc * 4));
	}
	for (int m = 0; m < M; m++)
		for (int n = 0; n < N; n++) {
			double ref = 0, mag = 0;
			for (int kk = 0; kk < K; kk++) {
				/* A stored [64, K] or (AT) [K, 64]; its first index
				 * is the row cp_async bounds by M */
				int row = c->at ? kk : m;
				uint16_t ah = c->at ? ha[(size_t)kk * M + m] :
					ha[(size_t)m * K + kk];
				double a = row < c->m ? from16(ah, false) : 0;
				double b = from16(c->bmn ? hb[(size_t)kk * N + n] :
					hb[(size_t)n * K + kk], false);
				ref += a * b;
				mag += fabs(a * b);
			}
			if (c->acc)
				ref *= 2, mag *= 2;
			double e = fabs(hc[0][(size_t)m * N + n] - ref) /
				(mag + 1e-30);
			if (!(e <= worst))  /* NaN too */
				worst = isnan(e) ? INFINITY : e;
		}
	bool same = !memcmp(hc[0], hc[1], nc * 4);
	bool ok = worst < 1e-5 && same;
	printf("mma80 %dx%dx%d swizzle %d A %s B %s %s%s M=%d: max error "
		"%.2e relative to sum |a b|; repeat %s -> %s\n", M, N, K, c->sw,
		c->at ? "[K,M].T" : "[M,K]", c->bmn ? "[K,N]" : "[N,K].T",
		c->mbar ? "mbarrier" : "groups", c->acc ? " acc" : "", c->m,
		worst, same ? "bitwise" : "DIFFERS", ok ? "ok" : "FAIL");
	cu.MemFree(A), cu.MemFree(B), cu.MemFree(C);
	free(ha), free(hb), free(hc[0]), free(hc[1]);
	fg_kernel_free(k);
	fg_program_free(prog);
	return !ok;
}

int
main(void)
{
	static const Cfg cfg[] = {
		{64, 24, 128, false, false, false, false, 64},
		{64, 24, 128, false, false, false, false, 37},
		{64, 24, 128, true, false, false, false, 64},
		{64, 32, 64, false, true, false, false, 50},
		{64, 64, 64, true, true, false, true, 64},
		{64, 24, 128, false, false, true, true, 64},
		{64, 8, 128, true, false, true, false, 29},
		{32, 24, 32, false, false, false, false, 64},
		{16, 8, 0, false, false, false, false, 9},
		{16, 16, 32, false, true, true, false, 64},
	};
	fg_options opts = {.cache_dir = ""};
	fg_ctx *ctx;
	CUstream stream;
	int bad = 0;

	gpu_open();
	FG(ctx, fg_ctx_create(&ctx, &opts));
	CK(cu.StreamCreate(&stream, CU_STREAM_NON_BLOCKING));
	for (size_t i = 0; i < COUNT(cfg); i++)
		bad |= run(ctx, stream, &cfg[i]);
	CK(cu.StreamDestroy(stream));
	fg_ctx_destroy(ctx);
	return bad;
}
