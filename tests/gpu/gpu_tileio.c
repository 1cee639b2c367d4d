/* gpu_tileio.c: register tiles to and from memory on a Hopper GPU
 * (tests/gpu/tileio.fa): global_load with a row limit, smem_load, a tile
 * store with a row limit, red.global.add (store ... reduce=add) and the
 * TMA reduce-add (tma_store ... reduce=add).  For T rows of random X, Y
 * must be bf16(2x + 1) on rows < T and keep its poison on the rows after
 * (Y is allocated 64 rows longer than the kernel is told), DQ = A + x and
 * DQ2 = B + (2x + 1) exactly (one f32 add each).  Each case runs twice,
 * outputs poisoned or reset before each run.  Exit 77 without a GPU. */
#include <math.h>
#include <string.h>

#include "gpu_runtime.h"

static fg_ctx *ctx;
static CUstream stream;

static uint16_t
bf16_of(float f)  /* round to nearest even, as cvt.rn.bf16.f32 */
{
	uint32_t u;

	memcpy(&u, &f, 4);
	u += 0x7fff + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

static float
frand(void)
{
	return ((float)gpu_rand16() - 32768.0f) / 4096.0f;
}

static long
run(fg_kernel *k, int T, int grid)
{
	size_t n = (size_t)T * 64, pad = 64 * 64;
	float *hx = malloc(n * 4), *ha = malloc(n * 4), *hb = malloc(n * 4);
	float *hq = malloc(n * 4), *hq2 = malloc(n * 4);
	uint16_t *hy = malloc((n + pad) * 2);
	CUdeviceptr X, Y, DQ, DQ2;
	long bad = 0;

	for (size_t i = 0; i < n; i++) {
		hx[i] = frand();
		ha[i] = frand();
		hb[i] = frand();
	}
	CK(cu.MemAlloc(&X, n * 4));
	CK(cu.MemAlloc(&Y, (n + pad) * 2));
	CK(cu.MemAlloc(&DQ, n * 4));
	CK(cu.MemAlloc(&DQ2, n * 4));
	CK(cu.MemcpyHtoD(X, hx, n * 4));
	FG(ctx, fg_kernel_set_grid_limit(k, grid));
	fg_arg args[] = {FG_INT("T", T), FG_PTR("X", X), FG_PTR("Y", Y),
		FG_PTR("DQ", DQ),
		{.name = "DQ2", .kind = FG_ARG_TENSOR, .t = {.ptr = DQ2,
		.strides = {64, 1}}}};
	for (int rep = 0; rep < 2; rep++) {
		CK(cu.MemsetD8(Y, 0xff, (n + pad) * 2));  /* poison */
		CK(cu.MemcpyHtoD(DQ, ha, n * 4));
		CK(cu.MemcpyHtoD(DQ2, hb, n * 4));
		CK(cu.CtxSynchronize());
		FG(ctx, fg_launch(k, stream, args, 5));
		CK(cu.StreamSynchronize(stream));
		CK(cu.MemcpyDtoH(hy, Y, (n + pad) * 2));
		CK(cu.MemcpyDtoH(hq, DQ, n * 4));
		CK(cu.MemcpyDtoH(hq2, DQ2, n * 4));
		long nb = 0;
		for (size_t i = 0; i < n; i++) {
			float y = hx[i] * 2.0f + 1.0f;
			nb += hy[i] != bf16_of(y);
			nb += hq[i] != ha[i] + hx[i];
			nb += hq2[i] != hb[i] + y;
		}
		for (size_t i = n; i < n + pad; i++)
			nb += hy[i] != 0xffff;  /* rows >= T untouched */
		if (nb)
			printf("  run %d: %ld mismatches\n", rep, nb);
		bad += nb;
	}
	printf("tileio T=%d grid=%d: %s\n", T, grid ? grid : gpu.nsm,
		bad ? "MISMATCH" : "exact");
	free(hx);
	free(ha);
	free(hb);
	free(hq);
	free(hq2);
	free(hy);
	cu.MemFree(X);
	cu.MemFree(Y);
	cu.MemFree(DQ);
	cu.MemFree(DQ2);
	return bad;
}

int
main(void)
{
	fg_options opts = {.cache_dir = ""};
	fg_program *prog;
	fg_kernel *k;
	long bad = 0;

	gpu_open();
	FG(ctx, fg_ctx_create(&ctx, &opts));
	CK(cu.StreamCreate(&stream, CU_STREAM_NON_BLOCKING));
	FG(ctx, fg_compile_file(ctx, gpu_src("tests/gpu/tileio.fa"), NULL,
		&prog));
	FG(ctx, fg_kernel_create(ctx, fg_program_ptx(prog, NULL), 0, &k));
	bad += run(k, 1000, 0);
	bad += run(k, 77, 1);
	bad += run(k, 64, 2);
	bad += run(k, 1, 0);
	bad += run(k, 4099, 3);
	fg_kernel_free(k);
	fg_program_free(prog);
	CK(cu.StreamDestroy(stream));
	fg_ctx_destroy(ctx);
	return bad ? 1 : 0;
}
