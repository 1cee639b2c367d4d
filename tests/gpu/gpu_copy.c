/* gpu_copy.c: runs schedules/copy_ws_sm90.fa through libfagen on a Hopper
 * GPU and checks that Y is a bit-exact copy of X, for ragged shapes, both
 * element types, two ring depths and grids small enough that each CTA
 * walks many tiles (so every mbarrier goes through many phases).  Y is
 * poisoned before each run and every run is repeated to catch a moving
 * result.  Exit 77 (SKIP) without a GPU. */
#include "gpu_runtime.h"

static fg_ctx *ctx;
static CUstream stream;

/* One configuration: returns the number of mismatching elements. */
static long
run(const char *dt, const char *stages, int M, int N, int grid)
{
	char d1[32], d2[32];
	const char *defs[] = {d1, d2};
	fg_compile_options o = {.defines = defs, .ndefines = 2};
	fg_program *prog;
	fg_kernel *k;
	fg_kernel_info info;
	CUdeviceptr X, Y;
	size_t bytes = (size_t)M * N * 2;
	long bad = 0;

	snprintf(d1, sizeof d1, "DT=%s", dt);
	snprintf(d2, sizeof d2, "STAGES=%s", stages);
	FG(ctx, fg_compile_file(ctx, gpu_src("schedules/copy_ws_sm90.fa"), &o,
		&prog));
	FG(ctx, fg_kernel_create(ctx, fg_program_ptx(prog, NULL), 0, &k));
	FG(ctx, fg_kernel_set_grid_limit(k, grid));
	uint16_t *hx = malloc(bytes), *hy = malloc(bytes);
	for (size_t i = 0; i < (size_t)M * N; i++)
		hx[i] = gpu_rand16();
	CK(cu.MemAlloc(&X, bytes));
	CK(cu.MemAlloc(&Y, bytes));
	CK(cu.MemcpyHtoD(X, hx, bytes));
	fg_arg args[] = {FG_INT("M", M), FG_INT("N", N), FG_PTR("X", X),
		FG_PTR("Y", Y)};
	for (int rep = 0; rep < 2; rep++) {
		CK(cu.MemsetD8(Y, 0xff, bytes));  /* poison */
		CK(cu.CtxSynchronize());
		FG(ctx, fg_launch(k, stream, args, 4));
		CK(cu.StreamSynchronize(stream));
		CK(cu.MemcpyDtoH(hy, Y, bytes));
		long poison = 0, first = -1, nb = 0;
		for (size_t i = 0; i < (size_t)M * N; i++) {
			if (hx[i] == hy[i])
				continue;
			nb++;
			poison += hy[i] == 0xffff;
			if (first < 0)
				first = (long)i;
		}
		if (nb)
			printf("  run %d: %ld of %ld differ (%ld still poison); "
				"first at row %ld col %ld: want %04x got %04x\n",
				rep, nb, (long)M * N, poison, first / N, first % N,
				hx[first], hy[first]);
		bad += nb;
	}
	fg_kernel_info_get(k, &info);
	printf("copy_ws_sm90 DT=%s STAGES=%s M=%d N=%d grid=%d smem=%lld: "
		"%s\n", dt, stages, M, N, grid ? grid : gpu.nsm,
		(long long)info.smem, bad ? "MISMATCH" : "bit-exact");
	free(hx);
	free(hy);
	cu.MemFree(X);
	cu.MemFree(Y);
	fg_kernel_free(k);
	fg_program_free(prog);
	return bad;
}

int
main(void)
{
	fg_options opts = {.cache_dir = ""};
	long bad = 0;

	gpu_open();
	FG(ctx, fg_ctx_create(&ctx, &opts));
	CK(cu.StreamCreate(&stream, CU_STREAM_NON_BLOCKING));
	bad += run("bf16", "4", 1000, 1000, 0);   /* one CTA per SM */
	bad += run("bf16", "4", 1000, 1000, 3);
	bad += run("f16", "2", 777, 4096, 5);
	bad += run("bf16", "2", 64, 64, 1);
	bad += run("f16", "3", 4096, 8, 0);
	bad += run("bf16", "4", 8192, 8192, 0);
	CK(cu.StreamDestroy(stream));
	fg_ctx_destroy(ctx);
	return bad ? 1 : 0;
}
