/* gpu_dsmem.c: distributed shared memory on a Hopper GPU (issue #27):
 * the two CTAs of a cluster each put a tile into the other's buffer and
 * store what they received, so CTA r's 64 rows of Y hold r ^ 1 + 1;
 * tests/golden/ptx/dsmem.fa by threads' stores (smem_store ... cta=) and
 * the cluster's barrier, dsmem_bulk.fa by bulk copies (bulk_copy ...
 * cta=) completing on the peer's mbarrier.  Y is poisoned before each of
 * 200 launches of each, which must all give exactly that.  Exit 77
 * without a GPU. */
#include <string.h>

#include "gpu_runtime.h"

static long
run(fg_ctx *ctx, CUstream stream, const char *file)
{
	enum { M = 128, N = 32, REPS = 200 };
	fg_program *prog;
	fg_kernel *k;
	CUdeviceptr Y;
	float *hy = malloc((size_t)M * N * 4);
	long bad = 0;

	FG(ctx, fg_compile_file(ctx, gpu_src(file), NULL, &prog));
	FG(ctx, fg_kernel_create(ctx, fg_program_ptx(prog, NULL), 0, &k));
	CK(cu.MemAlloc(&Y, (size_t)M * N * 4));
	fg_arg args[] = {FG_INT("M", M), FG_PTR("Y", Y)};
	for (int rep = 0; rep < REPS; rep++) {
		CK(cu.MemsetD8(Y, 0xff, (size_t)M * N * 4));  /* poison */
		FG(ctx, fg_launch(k, stream, args, 2));
		CK(cu.StreamSynchronize(stream));
		CK(cu.MemcpyDtoH(hy, Y, (size_t)M * N * 4));
		for (int i = 0; i < M * N; i++)
			bad += hy[i] != (float)((i / N / (M / 2)) ^ 1) + 1;
	}
	printf("%s: %d launches of a 2-CTA cluster swapping tiles: %s\n",
		file, REPS, bad ? "MISMATCH" : "exact");
	cu.MemFree(Y);
	free(hy);
	fg_kernel_free(k);
	fg_program_free(prog);
	return bad;
}

int
main(void)
{
	fg_options opts = {.cache_dir = ""};
	fg_ctx *ctx;
	CUstream stream;
	long bad;

	gpu_open();
	FG(ctx, fg_ctx_create(&ctx, &opts));
	CK(cu.StreamCreate(&stream, CU_STREAM_NON_BLOCKING));
	bad = run(ctx, stream, "tests/golden/ptx/dsmem.fa");
	bad += run(ctx, stream, "tests/golden/ptx/dsmem_bulk.fa");
	CK(cu.StreamDestroy(stream));
	fg_ctx_destroy(ctx);
	return bad ? 1 : 0;
}
