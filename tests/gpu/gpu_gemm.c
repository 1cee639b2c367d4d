/* gpu_gemm.c: schedules/gemm_ws_sm90.fa on a Hopper GPU, C = A B^T and
 * with its fused epilogues (scale, bias, GELU or SiLU, residual), in
 * clusters of 1, 2 and 4 CTAs that multicast B's tile (-D CM), against
 * a float64 host reference at ragged sizes, C poisoned before each run
 * and each run repeated; then schedules/gemm_ws_sm80.fa, whose sm_80 PTX
 * the driver JIT-compiles for the Hopper GPU.  Compiles, assembles and launches
 * through libfagen.  Exit 77 (SKIP) without a Hopper GPU. */
#include "gpu_runtime.h"
#include "gpu_ref.h"

static fg_ctx *ctx;
static CUstream stream;

/* The fused epilogue: -D SCALE, BIAS, ACT, RESID. */
typedef struct Epi {
	bool scale, bias, resid;
	int act;          /* 0 none, 1 GELU (tanh form), 2 SiLU */
	int cm;           /* CTAs of a cluster (0: 1) */
	int bn;           /* the tile's columns (0: the schedule's, 256) */
} Epi;

static const double alpha = 0.75;

static int
run_epi(const char *src, int M, int N, int K, bool f16, int grid,
	const Epi *ep)
{
	char d[8][32];
	const char *defs[] = {d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]};
	/* gemm_ws_sm80.fa has no clusters, BN or ST to set: the epilogue's */
	fg_compile_options opt = {.defines = defs, .ndefines = strstr(src,
		"sm80") ? 5 : ep->bn ? 8 : 6};
	int cm = ep->cm ? ep->cm : 1;
	fg_program *prog;
	fg_kernel *fk;
	size_t na = (size_t)M * K, nb = (size_t)N * K, nc = (size_t)M * N;
	int bad = 0;

	snprintf(d[0], sizeof d[0], "DT=%s", f16 ? "f16" : "bf16");
	snprintf(d[1], sizeof d[1], "SCALE=%s", ep->scale ? "true" : "false");
	snprintf(d[2], sizeof d[2], "BIAS=%s", ep->bias ? "true" : "false");
	snprintf(d[3], sizeof d[3], "ACT=%d", ep->act);
	snprintf(d[4], sizeof d[4], "RESID=%s", ep->resid ? "true" : "false");
	snprintf(d[5], sizeof d[5], "CM=%d", cm);
	snprintf(d[6], sizeof d[6], "BN=%d", ep->bn);
	snprintf(d[7], sizeof d[7], "ST=%d", ep->bn == 128 ? 4 : 3);
	FG(ctx, fg_compile_file(ctx, src, &opt, &prog));
	FG(ctx, fg_kernel_create(ctx, fg_program_ptx(prog, NULL), 0, &fk));
	uint16_t *a = malloc(na * 2), *b = malloc(nb * 2);
	uint16_t *c = malloc(nc * 2), *c2 = malloc(nc * 2);
	uint16_t *bv = malloc((size_t)N * 2), *r = malloc(nc * 2);
	for (size_t i = 0; i < na; i++)
		a[i] = to16(urand(), f16);
	for (size_t i = 0; i < nb; i++)
		b[i] = to16(urand(), f16);
	for (int i = 0; i < N; i++)
		bv[i] = to16(urand(), f16);
	for (size_t i = 0; i < nc; i++)
		r[i] = to16(urand(), f16);
	CUdeviceptr A, B, C, BV, R;
	CK(cu.MemAlloc(&A, na * 2));
	CK(cu.MemAlloc(&B, nb * 2));
	CK(cu.MemAlloc(&C, nc * 2));
	CK(cu.MemAlloc(&BV, (size_t)N * 2));
	CK(cu.MemAlloc(&R, nc * 2));
	CK(cu.MemcpyHtoD(A, a, na * 2));
	CK(cu.MemcpyHtoD(B, b, nb * 2));
	CK(cu.MemcpyHtoD(BV, bv, (size_t)N * 2));
	CK(cu.MemcpyHtoD(R, r, nc * 2));
	fg_arg args[9] = {
		FG_INT("M", M), FG_INT("N", N), FG_INT("K", K), FG_PTR("A", A),
		FG_PTR("B", B), FG_PTR("C", C),
	};
	int nargs = 6;
	if (ep->scale)
		args[nargs++] = FG_FLOAT("alpha", alpha);
	if (ep->bias)
		args[nargs++] = FG_PTR("BV", BV);
	if (ep->resid)
		args[nargs++] = FG_PTR("R", R);
	int bn = strstr(src, "sm80") ? (ep->resid ? 64 : 128) : ep->bn ?
		ep->bn : 256;
	int tiles = (M + 127) / 128 * ((N + bn - 1) / bn);
	if (grid > tiles)
		grid = tiles;
	FG(ctx, fg_kernel_set_grid_limit(fk, grid));
	for (int rep = 0; rep < 2; rep++) {
		CK(cu.MemsetD8(C, 0xff, nc * 2));
		CK(cu.CtxSynchronize());
		FG(ctx, fg_launch(fk, stream, args, nargs));
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
			acc *= ep->scale ? alpha : 1;
			acc += ep->bias ? from16(bv[j], f16) : 0;
			if (ep->act == 1)
				acc = 0.5 * acc * (1 + tanh(0.7978845608028654 *
					(acc + 0.044715 * acc * acc * acc)));
			if (ep->act == 2)
				acc = acc / (1 + exp(-acc));
			acc += ep->resid ? from16(r[(size_t)i * N + j], f16) : 0;
			if (x != x)
				bad |= 1;
			err += (x - acc) * (x - acc);
			ref2 += acc * acc;
		}
	double rel = sqrt(err / ref2), tol = f16 ? 3e-3 : 1e-2;
	if (rel > tol)
		bad |= 8;
	printf("%s M=%d N=%d K=%d %s grid=%d cluster=%d BN=%d%s%s%s%s: "
		"rel err %.2e (tol %.0e)%s%s -> %s\n", strstr(src, "sm80") ?
		"gemm_ws_sm80" : "gemm_ws_sm90", M, N, K, f16 ? "f16" :
		"bf16", grid, cm, bn,
		ep->scale ? " scale" : "", ep->bias ? " bias" : "", ep->act ==
		1 ? " gelu" : ep->act == 2 ? " silu" : "", ep->resid ?
		" resid" : "", rel, tol, bad & 1 ? ", NaN in C" : "", bad & 4 ?
		", runs differ" : "", bad ? "FAIL" : "ok");
	free(a), free(b), free(c), free(c2), free(bv), free(r);
	cu.MemFree(A), cu.MemFree(B), cu.MemFree(C), cu.MemFree(BV);
	cu.MemFree(R);
	fg_kernel_free(fk);
	fg_program_free(prog);
	return bad;
}

static int
run(const char *src, int M, int N, int K, bool f16, int grid)
{
	static const Epi none;

	return run_epi(src, M, N, K, f16, grid, &none);
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
	bad |= run_epi(src, 1000, 1000, 1000, false, gpu.nsm,
		&(Epi){.bias = true, .act = 1});
	bad |= run_epi(src, 333, 520, 264, true, gpu.nsm,
		&(Epi){.scale = true, .bias = true, .act = 2, .resid = true});
	bad |= run_epi(src, 17, 136, 72, false, 3, &(Epi){.act = 1,
		.resid = true});
	/* clusters: ragged M (tiles past the last row block run too), a
	 * grid of one cluster, a K of one block and of none */
	for (int cm = 2; cm <= 4; cm *= 2) {
		bad |= run_epi(src, 1000, 1000, 1000, false, gpu.nsm,
			&(Epi){.cm = cm});
		bad |= run_epi(src, 4097, 520, 264, true, gpu.nsm,
			&(Epi){.cm = cm});
		bad |= run_epi(src, 17, 136, 72, false, 3, &(Epi){.cm = cm});
		bad |= run_epi(src, 300, 200, 8, true, 2, &(Epi){.cm = cm});
		bad |= run_epi(src, 1000, 1000, 1000, false, 5,
			&(Epi){.cm = cm, .bias = true, .act = 1});
	}
	/* 128-column tiles (four stages) */
	bad |= run_epi(src, 1000, 1000, 1000, false, gpu.nsm,
		&(Epi){.bn = 128});
	bad |= run_epi(src, 4097, 520, 264, true, gpu.nsm,
		&(Epi){.bn = 128, .cm = 2, .bias = true, .act = 2});
	bad |= run_epi(src, 17, 304, 72, false, 3, &(Epi){.bn = 128,
		.resid = true, .scale = true});
	/* the sm_80 GEMM (issue #28), its PTX JIT-compiled for the GPU:
	 * one tile per CTA, ragged M, N and K, every epilogue */
	const char *s80 = gpu_src("schedules/gemm_ws_sm80.fa");
	{
		bad |= run(s80, 1000, 1000, 1000, false, 0);
		bad |= run(s80, 17, 136, 72, false, 0);
		bad |= run(s80, 4097, 520, 264, true, 0);
		bad |= run(s80, 256, 256, 8, true, 0);
		bad |= run(s80, 300, 200, 8, false, 0);
		bad |= run_epi(s80, 1000, 1000, 1000, false, 0,
			&(Epi){.bias = true, .act = 1});
		bad |= run_epi(s80, 333, 520, 264, true, 0,
			&(Epi){.scale = true, .bias = true, .act = 2, .resid = true});
	}
	CK(cu.StreamDestroy(stream));
	fg_ctx_destroy(ctx);
	return bad ? 1 : 0;
}
