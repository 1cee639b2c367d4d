/* attention.c: causal attention through libfagen; with K = 0, row i of O
 * is V's mean over keys 0..i.  Needs a Hopper GPU; the driver is loaded
 * with dlopen (cuda_dl.h), which also gives the exit status: 0 right, 1
 * an error (no driver or GPU, a failed call), 2 wrong results.  Build
 * against the uninstalled build tree (or drop PKG_CONFIG_PATH once
 * 'meson install' has run), from the repository root:
 *	cc examples/attention.c -o attention -I/usr/local/cuda/include \
 *	    $(PKG_CONFIG_PATH=build/meson-uninstalled \
 *	    pkg-config --cflags --libs fagen) -ldl -lm
 *	LD_LIBRARY_PATH=build ./attention */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_dl.h"
#include "fagen.h"

enum { B = 2, H = 8, S = 1024, D = 128 };

int
main(void)
{
	size_t n = (size_t)B * H * S * D, bytes = n * 2;  /* bf16, B,H,S,D */
	uint16_t *hv = malloc(bytes), *ho = malloc(bytes);
	float *hl = malloc((size_t)B * H * S * 4), f, err = 0;
	CUstream st;       /* fagen never launches on the legacy stream */
	CUdeviceptr q, k, v, o, lse;
	fg_ctx *ctx = NULL;
	uint32_t u;

	if (!hv || !ho || !hl)
		return fputs("out of memory\n", stderr), EXIT_ERROR;
	FG(ctx, fg_ctx_create(&ctx, NULL));
	cu_open(ctx);      /* device 0's primary context: fagen's too */
	for (size_t i = 0; i < n; i++) {  /* V[j] = j % 16, exact in bf16 */
		f = (float)(i / D % S % 16), memcpy(&u, &f, 4);
		hv[i] = (uint16_t)(u >> 16);
	}
	CU(cu.StreamCreate(&st, CU_STREAM_NON_BLOCKING));
	CU(cu.MemAlloc(&q, bytes));
	CU(cu.MemAlloc(&k, bytes));
	CU(cu.MemAlloc(&v, bytes));
	CU(cu.MemAlloc(&o, bytes));
	CU(cu.MemAlloc(&lse, (size_t)B * H * S * 4));
	CU(cu.MemsetD16(q, 0x3f80, n));              /* Q = 1 */
	CU(cu.MemsetD8(k, 0, bytes));                /* K = 0 */
	CU(cu.MemcpyHtoD(v, hv, bytes));
	fg_attention_args a = {.q = q, .k = k, .v = v, .o = o, .lse = lse,
		.batch = B, .heads = H, .seq_q = S, .seq_k = S, .head_dim = D,
		.dtype = FG_DTYPE_BF16, .causal = 1};   /* strides 0: dense */
	FG(ctx, fg_attention_forward(ctx, &a, st));
	CU(cu.StreamSynchronize(st));
	CU(cu.MemcpyDtoH(ho, o, bytes));
	CU(cu.MemcpyDtoH(hl, lse, (size_t)B * H * S * 4));
	for (int i = 0; i < S; i += 73) {  /* row i of batch 1, head 5 */
		size_t r = ((size_t)1 * H + 5) * S + i;
		double want = 0;
		for (int j = 0; j <= i; j++)
			want += (j % 16) / (i + 1.0);
		u = (uint32_t)ho[r * D + 7] << 16, memcpy(&f, &u, 4);
		err = fmaxf(err, fmaxf(fabsf(f - (float)want) / 16,
			fabsf(hl[r] - logf(i + 1.0f))));
	}
	printf("15 rows: max error %.2e: %s\n", err, err < 1e-2 ? "ok" : "BAD");
	fg_ctx_destroy(ctx);
	return err < 1e-2 ? 0 : EXIT_WRONG;
}
