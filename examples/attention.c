/* attention.c: causal attention through libfagen; with K = 0, row i of O
 * is V's mean over keys 0..i.  cc attention.c $(pkg-config --cflags --libs
 * fagen) -lcuda */
#include <cuda.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fagen.h"

enum { B = 2, H = 8, S = 1024, D = 128 };
#define CU(x) if ((x) != CUDA_SUCCESS) return fprintf(stderr, "%s\n", #x)
#define FG(x) if ((x)) return fprintf(stderr, "%s\n", fg_errmsg(ctx))

int
main(void)
{
	size_t n = (size_t)B * H * S * D, bytes = n * 2;  /* bf16, B,H,S,D */
	uint16_t *hv = malloc(bytes), *ho = malloc(bytes);
	float *hl = malloc((size_t)B * H * S * 4), f, err = 0;
	CUdevice dev;
	CUcontext cuctx;   /* the device's primary context: fagen's too */
	CUstream st;       /* fagen never launches on the legacy stream */
	CUdeviceptr q, k, v, o, lse;
	fg_ctx *ctx = NULL;
	uint32_t u;

	for (size_t i = 0; i < n; i++) {  /* V[j] = j % 16, exact in bf16 */
		f = (float)(i / D % S % 16), memcpy(&u, &f, 4);
		hv[i] = (uint16_t)(u >> 16);
	}
	CU(cuInit(0) || cuDeviceGet(&dev, 0) ||
		cuDevicePrimaryCtxRetain(&cuctx, dev) || cuCtxSetCurrent(cuctx) ||
		cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
	CU(cuMemAlloc(&q, bytes) || cuMemAlloc(&k, bytes) ||
		cuMemAlloc(&v, bytes) || cuMemAlloc(&o, bytes) ||
		cuMemAlloc(&lse, (size_t)B * H * S * 4));
	CU(cuMemsetD16(q, 0x3f80, n) || cuMemsetD8(k, 0, bytes) ||
		cuMemcpyHtoD(v, hv, bytes));             /* Q = 1, K = 0 */
	FG(fg_ctx_create(&ctx, NULL));
	fg_attention_args a = {.q = q, .k = k, .v = v, .o = o, .lse = lse,
		.batch = B, .heads = H, .seq_q = S, .seq_k = S, .head_dim = D,
		.dtype = FG_DTYPE_BF16, .causal = 1};   /* strides 0: dense */
	FG(fg_attention_forward(ctx, &a, st));
	CU(cuStreamSynchronize(st) || cuMemcpyDtoH(ho, o, bytes) ||
		cuMemcpyDtoH(hl, lse, (size_t)B * H * S * 4));
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
	return err >= 1e-2;
}
