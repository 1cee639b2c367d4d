/* stream_pipeline.c: many attention batches streamed through the GPU.
 *
 * Each batch's Q, K and V come from pinned host memory, go through
 * fg_attention_forward, and O and LSE go back to pinned host memory.  The
 * same work runs twice: on one non-blocking stream, where every copy
 * waits for the kernel before it and the other way round, then on two,
 * batches alternating between them with a set of device buffers each, so
 * one stream's copies overlap the other's kernel.  Events time every
 * step of the one-stream run; the program prints both times, the lower
 * bound that perfect overlap would reach (the busiest of the upload copy
 * engine, the download copy engine and the SMs), and how much of the
 * possible saving the two streams reached.  Both runs must give the same
 * bits.  Needs a Hopper GPU; the driver is loaded with dlopen
 * (cuda_dl.h), which also gives the exit status: 0 identical results, 1
 * an error (no driver or GPU, a failed call), 2 the runs differ.  Build
 * from the repository root as examples/attention.c says:
 *	cc examples/stream_pipeline.c -o stream_pipeline \
 *	    -I/usr/local/cuda/include \
 *	    $(PKG_CONFIG_PATH=build/meson-uninstalled \
 *	    pkg-config --cflags --libs fagen) -ldl
 *	LD_LIBRARY_PATH=build ./stream_pipeline */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_dl.h"
#include "fagen.h"

enum { NB = 12, Z = 1, H = 16, S = 8192, D = 128 };
#define IN ((size_t)Z * H * S * D * 2)    /* bytes of each of Q, K, V, O */
#define LSE ((size_t)Z * H * S * 4)

static fg_ctx *ctx;
static unsigned char *hin[NB], *hout[NB];   /* pinned: Q K V; O LSE */
static CUdeviceptr dbuf[2];                 /* per stream: Q K V O LSE */

/* Batch b on stream s with device buffers d; ev (may be NULL) gets an
 * event before the upload, after it, after the kernel and after the
 * download. */
static void
batch(int b, CUstream s, CUdeviceptr d, CUevent ev[4])
{
	fg_attention_args a = {.q = d, .k = d + IN, .v = d + 2 * IN,
		.o = d + 3 * IN, .lse = d + 4 * IN, .batch = Z, .heads = H,
		.seq_q = S, .seq_k = S, .head_dim = D, .dtype = FG_DTYPE_BF16};

	if (ev)
		CU(cu.EventRecord(ev[0], s));
	CU(cu.MemcpyHtoDAsync(d, hin[b], 3 * IN, s));
	if (ev)
		CU(cu.EventRecord(ev[1], s));
	FG(ctx, fg_attention_forward(ctx, &a, s));
	if (ev)
		CU(cu.EventRecord(ev[2], s));
	CU(cu.MemcpyDtoHAsync(hout[b], d + 3 * IN, IN + LSE, s));
	if (ev)
		CU(cu.EventRecord(ev[3], s));
}

static float
ms(CUevent a, CUevent b)
{
	float t;

	CU(cu.EventElapsedTime(&t, a, b));
	return t;
}

int
main(void)
{
	CUstream s[2];
	CUevent ev[NB][4], t0, t1[2];
	unsigned char *first = malloc(NB * (IN + LSE));
	float up = 0, kern = 0, down = 0;
	uint64_t rng = 1;

	if (!first)
		return fputs("out of memory\n", stderr), EXIT_ERROR;
	FG(ctx, fg_ctx_create(&ctx, NULL));
	cu_open(ctx);   /* device 0's primary context: fagen's too */
	for (int i = 0; i < 2; i++) {
		CU(cu.StreamCreate(&s[i], CU_STREAM_NON_BLOCKING));
		CU(cu.MemAlloc(&dbuf[i], 4 * IN + LSE));
		CU(cu.EventCreate(&t1[i], 0));
	}
	CU(cu.EventCreate(&t0, 0));
	for (int b = 0; b < NB; b++) {
		CU(cu.MemHostAlloc((void **)&hin[b], 3 * IN, 0));
		CU(cu.MemHostAlloc((void **)&hout[b], IN + LSE, 0));
		for (size_t i = 0; i < 3 * IN / 2; i++) {  /* bf16 in +-[1, 2) */
			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			((uint16_t *)hin[b])[i] = (uint16_t)((rng >> 33 & 0x807f) |
				0x3f80);
		}
		for (int e = 0; e < 4; e++)
			CU(cu.EventCreate(&ev[b][e], 0));
	}
	batch(0, s[0], dbuf[0], NULL);  /* compile and load the kernel */
	CU(cu.StreamSynchronize(s[0]));

	/* one stream */
	for (int b = 0; b < NB; b++)
		batch(b, s[0], dbuf[0], ev[b]);
	CU(cu.StreamSynchronize(s[0]));
	for (int b = 0; b < NB; b++) {
		up += ms(ev[b][0], ev[b][1]);
		kern += ms(ev[b][1], ev[b][2]);
		down += ms(ev[b][2], ev[b][3]);
		memcpy(first + b * (IN + LSE), hout[b], IN + LSE);
	}
	float one = ms(ev[0][0], ev[NB - 1][3]);

	/* two streams: s[1] starts with s[0] */
	CU(cu.EventRecord(t0, s[0]));
	CU(cu.StreamWaitEvent(s[1], t0, 0));
	for (int b = 0; b < NB; b++)
		batch(b, s[b % 2], dbuf[b % 2], NULL);
	for (int i = 0; i < 2; i++)
		CU(cu.EventRecord(t1[i], s[i]));
	CU(cu.CtxSynchronize());
	float two = ms(t0, t1[0]) > ms(t0, t1[1]) ? ms(t0, t1[0]) :
		ms(t0, t1[1]);
	int same = 1;
	for (int b = 0; b < NB; b++)
		same &= !memcmp(first + b * (IN + LSE), hout[b], IN + LSE);

	float bound = up > kern ? up : kern;
	bound = bound > down ? bound : down;
	printf("%d batches of attention Z=%d H=%d S=%d D=%d bf16, %.0f MiB "
		"up and %.0f MiB down each\n", NB, Z, H, S, D, 3.0 * IN / (1 << 20),
		(double)(IN + LSE) / (1 << 20));
	printf("one stream:  %7.2f ms (uploads %.2f, kernels %.2f, downloads "
		"%.2f)\n", one, up, kern, down);
	printf("two streams: %7.2f ms; perfect overlap would take %.2f ms\n",
		two, bound);
	printf("overlap: saved %.2f ms of the %.2f ms possible (%.0f%%); "
		"results %s\n", one - two, one - bound, 100 * (one - two) /
		(one - bound), same ? "identical" : "DIFFER");
	fg_ctx_destroy(ctx);
	return same ? 0 : EXIT_WRONG;
}
