/* gpu_mmat.c: the sm_90a wgmma with an MN-major (transposed) A operand
 * from shared memory: tests/gpu/mma_tn.fa computes C = A^T B for random
 * bf16 A, B ([64, 64] each, K = 64 rows); C is checked against float64
 * (the products of bf16 values are exact in f32, so only the f32 sums
 * round: relative error ~1e-6), poisoned (NaN) first, run twice and
 * compared bitwise.  Exit 77 without a GPU. */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "gpu_runtime.h"

static float
bf16_to_f(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;

	memcpy(&f, &u, 4);
	return f;
}

int
main(void)
{
	fg_options opts = {.cache_dir = ""};
	fg_ctx *ctx;
	CUstream stream;
	fg_program *prog;
	fg_kernel *k;
	enum { K = 64, M = 64, N = 64 };
	uint16_t ha[K * M], hb[K * N];
	float hc[2][M * N];
	CUdeviceptr A, B, C;
	double worst = 0;

	gpu_open();
	FG(ctx, fg_ctx_create(&ctx, &opts));
	CK(cu.StreamCreate(&stream, CU_STREAM_NON_BLOCKING));
	FG(ctx, fg_compile_file(ctx, gpu_src("tests/gpu/mma_tn.fa"), NULL,
		&prog));
	FG(ctx, fg_kernel_create(ctx, fg_program_ptx(prog, NULL), 0, &k));
	for (int i = 0; i < K * M; i++)  /* small finite bf16 values */
		ha[i] = (uint16_t)(0x3c00 + gpu_rand16() % 0x0600) ^
			(gpu_rand16() & 0x8000);
	for (int i = 0; i < K * N; i++)
		hb[i] = (uint16_t)(0x3c00 + gpu_rand16() % 0x0600) ^
			(gpu_rand16() & 0x8000);
	CK(cu.MemAlloc(&A, sizeof ha));
	CK(cu.MemAlloc(&B, sizeof hb));
	CK(cu.MemAlloc(&C, sizeof hc[0]));
	CK(cu.MemcpyHtoD(A, ha, sizeof ha));
	CK(cu.MemcpyHtoD(B, hb, sizeof hb));
	fg_arg args[] = {FG_INT("K", K), FG_PTR("A", A), FG_PTR("B", B),
		FG_PTR("C", C)};
	for (int rep = 0; rep < 2; rep++) {
		CK(cu.MemsetD8(C, 0xff, sizeof hc[0]));  /* NaN poison */
		CK(cu.CtxSynchronize());
		FG(ctx, fg_launch(k, stream, args, 4));
		CK(cu.StreamSynchronize(stream));
		CK(cu.MemcpyDtoH(hc[rep], C, sizeof hc[0]));
	}
	for (int m = 0; m < M; m++)
		for (int n = 0; n < N; n++) {
			double ref = 0, mag = 0;
			for (int kk = 0; kk < K; kk++) {
				double p = (double)bf16_to_f(ha[kk * M + m]) *
					bf16_to_f(hb[kk * N + n]);
				ref += p;
				mag += fabs(p);
			}
			double e = fabs(hc[0][m * N + n] - ref) / (mag + 1e-30);
			if (!(e <= worst))  /* NaN too */
				worst = isnan(e) ? INFINITY : e;
		}
	bool same = !memcmp(hc[0], hc[1], sizeof hc[0]);
	bool ok = worst < 1e-5 && same;
	printf("mma_tn C = A^T B (A, B MN-major, %dx%dx%d bf16): max error "
		"%.2e relative to sum |a b|; repeat %s -> %s\n", M, N, K, worst,
		same ? "bitwise" : "DIFFERS", ok ? "ok" : "FAIL");
	cu.MemFree(A);
	cu.MemFree(B);
	cu.MemFree(C);
	fg_kernel_free(k);
	fg_program_free(prog);
	CK(cu.StreamDestroy(stream));
	fg_ctx_destroy(ctx);
	return ok ? 0 : 1;
}
