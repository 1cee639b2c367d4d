/* gpu_bwdpre.c: schedules/fa_bwd_pre_sm90.fa, the backward pass's
 * preprocessing, on a Hopper GPU: DELTA = rowsum(dO * O) against float64
 * for random bf16 O and dO, and DQACC cleared, for odd lengths and every
 * head dim; outputs poisoned (NaN) first, each case run twice and
 * compared bitwise.  Exit 77 without a GPU. */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "gpu_runtime.h"

static fg_ctx *ctx;
static CUstream stream;

static float
bf16_to_f(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;

	memcpy(&f, &u, 4);
	return f;
}

static bool
run(int Z, int S, int H, int D)
{
	char d1[16];
	const char *defs[] = {d1};
	fg_compile_options o = {.defines = defs, .ndefines = 1};
	fg_program *prog;
	fg_kernel *k;
	size_t n = (size_t)Z * S * H * D, nd = (size_t)Z * H * S;
	uint16_t *ho = malloc(n * 2), *hg = malloc(n * 2);
	float *hd[2] = {malloc(nd * 4), malloc(nd * 4)}, *hq = malloc(n * 4);
	CUdeviceptr O, DO, DEL, DQ;
	double worst = 0;
	long nonzero = 0;

	snprintf(d1, sizeof d1, "D=%d", D);
	FG(ctx, fg_compile_file(ctx, gpu_src("schedules/fa_bwd_pre_sm90.fa"),
		&o, &prog));
	FG(ctx, fg_kernel_create(ctx, fg_program_ptx(prog, NULL), 0, &k));
	for (size_t i = 0; i < n; i++) {  /* finite bf16 in about +-4 */
		ho[i] = (uint16_t)(0x3c00 + gpu_rand16() % 0x0500) ^
			(gpu_rand16() & 0x8000);
		hg[i] = (uint16_t)(0x3c00 + gpu_rand16() % 0x0500) ^
			(gpu_rand16() & 0x8000);
	}
	CK(cu.MemAlloc(&O, n * 2));
	CK(cu.MemAlloc(&DO, n * 2));
	CK(cu.MemAlloc(&DEL, nd * 4));
	CK(cu.MemAlloc(&DQ, n * 4));
	CK(cu.MemcpyHtoD(O, ho, n * 2));
	CK(cu.MemcpyHtoD(DO, hg, n * 2));
	fg_arg args[] = {FG_INT("Z", Z), FG_INT("H", H), FG_INT("S", S),
		FG_PTR("O", O), FG_PTR("DO", DO), FG_PTR("DELTA", DEL),
		FG_PTR("DQACC", DQ)};
	for (int rep = 0; rep < 2; rep++) {
		CK(cu.MemsetD8(DEL, 0xff, nd * 4));
		CK(cu.MemsetD8(DQ, 0xff, n * 4));
		CK(cu.CtxSynchronize());
		FG(ctx, fg_launch(k, stream, args, 7));
		CK(cu.StreamSynchronize(stream));
		CK(cu.MemcpyDtoH(hd[rep], DEL, nd * 4));
		CK(cu.MemcpyDtoH(hq, DQ, n * 4));
		for (size_t i = 0; i < n; i++)
			nonzero += hq[i] != 0.0f;
	}
	for (int z = 0; z < Z; z++)
		for (int h = 0; h < H; h++)
			for (int s = 0; s < S; s++) {
				double ref = 0, mag = 0;
				for (int d = 0; d < D; d++) {
					size_t i = (((size_t)z * S + s) * H + h) * D +
						(size_t)d;
					double p = (double)bf16_to_f(ho[i]) *
						bf16_to_f(hg[i]);
					ref += p;
					mag += fabs(p);
				}
				double got = hd[0][((size_t)z * H + h) * S +
					(size_t)s];
				double e = fabs(got - ref) / (mag + 1e-30);
				if (!(e <= worst))
					worst = isnan(e) ? INFINITY : e;
			}
	bool same = !memcmp(hd[0], hd[1], nd * 4);
	bool ok = worst < 1e-5 && same && !nonzero;
	printf("fa_bwd_pre Z=%d S=%d H=%d D=%d: DELTA max error %.2e "
		"(relative to sum |o g|), DQACC %s, repeat %s -> %s\n", Z, S, H,
		D, worst, nonzero ? "NOT CLEARED" : "cleared", same ?
		"bitwise" : "DIFFERS", ok ? "ok" : "FAIL");
	free(ho);
	free(hg);
	free(hd[0]);
	free(hd[1]);
	free(hq);
	cu.MemFree(O);
	cu.MemFree(DO);
	cu.MemFree(DEL);
	cu.MemFree(DQ);
	fg_kernel_free(k);
	fg_program_free(prog);
	return ok;
}

int
main(void)
{
	fg_options opts = {.cache_dir = ""};
	bool ok = true;

	gpu_open();
	FG(ctx, fg_ctx_create(&ctx, &opts));
	CK(cu.StreamCreate(&stream, CU_STREAM_NON_BLOCKING));
	ok &= run(2, 333, 3, 64);
	ok &= run(1, 1, 2, 128);
	ok &= run(3, 1000, 4, 128);
	ok &= run(1, 129, 2, 256);
	CK(cu.StreamDestroy(stream));
	fg_ctx_destroy(ctx);
	return ok ? 0 : 1;
}
