/* gpu_gemm.c: schedules/gemm_ws_sm90.fa on a Hopper GPU, C = A B^T,
 * against a float64 host reference at ragged sizes, C poisoned before
 * each run and each run repeated.  Compiles, assembles and launches
 * through libfagen.  Exit 77 (SKIP) without a Hopper GPU. */
#include "gpu_runtime.h"
#include "gpu_ref.h"

static fg_ctx *ctx;
static CUstream stream;

static int
run(const char *src, int M, int N, int K, bool f16, int grid)
{
	char d1[32];
	const char *defs[] = {d1};
	fg_compile_options opt = {.defines = defs, .ndefines = 1};
	fg_program *prog;
	fg_kernel *fk;
	size_t na = (size_t)M * K, nb = (size_t)N * K, nc = (size_t)M * N;
	int bad = 0;

	snprintf(d1, sizeof d1, "DT=%s", f16 ? "f16" : "bf16");
	FG(ctx, fg_compile_file(ctx, src, &opt, &prog));
	FG(ctx, fg_kernel_create(ctx, fg_program_ptx(prog, NULL), 0, &fk));
	uint16_t *a = malloc(na * 2), *b = malloc(nb * 2);
	uint16_t *c = malloc(nc * 2), *c2 = malloc(nc * 2);
	for (size_t i = 0; i < na; i++)
		a[i] = to16(urand(), f16);
	for (size_t i = 0; i < nb; i++)
		b[i] = to16(urand(), f16);
	CUdeviceptr A, B, C;
	CK(cu.MemAlloc(&A, na * 2));
	CK(cu.MemAlloc(&B, nb * 2));
	CK(cu.MemAlloc(&C, nc * 2));
	CK(cu.MemcpyHtoD(A, a, na * 2));
	CK(cu.MemcpyHtoD(B, b, nb * 2));
	fg_arg args[] = {
		FG_INT("M", M), FG_INT("N", N), FG_INT("K", K), FG_PTR("A", A),
		FG_PTR("B", B), FG_PTR("C", C),
	};
	int tiles = (M + 127) / 128 * ((N + 127) / 128);
	if (grid > tiles)
		grid = tiles;
	FG(ctx, fg_kernel_set_grid_limit(fk, grid));
	for (int rep = 0; rep < 2; rep++) {
		CK(cu.MemsetD8(C, 0xff, nc * 2));
		CK(cu.CtxSynchronize());
		FG(ctx, fg_launch(fk, stream, args, 6));
		CK(cu.StreamSynchronize(stream));
		CK(cu.MemcpyDtoH(rep ? c2 : c, C, nc * 2));
	}
	if (memcmp(c, c2, nc * 2))
		bad |= 4;
	double err = 0, ref2 = 0;
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++) {
			double acc = 0, x = from16(c[(size_t)i * N + j], f16);
			for (int k = 0; k < K; k++)
				acc += from16(a[(size_t)i * K + k], f16) *
					from16(b[(size_t)j * K + k], f16);
			if (x != x)
				bad |= 1;
			err += (x - acc) * (x - acc);
			ref2 += acc * acc;
		}
	double rel = sqrt(err / ref2), tol = f16 ? 3e-3 : 1e-2;
	if (rel > tol)
		bad |= 8;
	printf("gemm_ws_sm90 M=%d N=%d K=%d %s grid=%d: rel err %.2e (tol "
		"%.0e)%s%s -> %s\n", M, N, K, f16 ? "f16" : "bf16", grid, rel,
		tol, bad & 1 ? ", NaN in C" : "", bad & 4 ? ", runs differ" : "",
		bad ? "FAIL" : "ok");
	free(a), free(b), free(c), free(c2);
	cu.MemFree(A), cu.MemFree(B), cu.MemFree(C);
	fg_kernel_free(fk);
	fg_program_free(prog);
	return bad;
}

int
main(void)
{
	fg_options opts = {.cache_dir = ""};
	const char *src = gpu_src("schedules/gemm_ws_sm90.fa");
	int bad = 0;

	gpu_open();
	FG(ctx, fg_ctx_create(&ctx, &opts));
	CK(cu.StreamCreate(&stream, CU_STREAM_NON_BLOCKING));
	bad |= run(src, 1000, 1000, 1000, false, gpu.nsm);
	bad |= run(src, 17, 136, 72, false, gpu.nsm);
	bad |= run(src, 4097, 520, 264, true, gpu.nsm);
	bad |= run(src, 1000, 1000, 1000, false, 3);
	bad |= run(src, 256, 256, 8, true, 2);
	CK(cu.StreamDestroy(stream));
	fg_ctx_destroy(ctx);
	return bad ? 1 : 0;
}
