/* fuzz_meta.c: a libFuzzer target over the runtime's reading of PTX it is
 * handed (fg_kernel_create: the '// fagen.' metadata lines and their size
 * programs), then over argument checking against what was read: every
 * argument described by fg_kernel_arg, passed by name with values taken
 * from the input's hash (sizes from -1 to 2^40, aligned and misaligned
 * addresses, explicit dims and strides), through fg_kernel_check.  No GPU
 * is touched: the driver library is one that does not exist.  Every
 * context uses a counting allocator and must give back every byte.  Built
 * and run by tests/fuzz/run.sh (FUZZ_TARGET=meta). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fagen.h"
#include "testalloc.h"

static const int64_t sizes[] = {
	1, 2, 7, 64, 65, 128, 1000, 4096, 65535, 65536, 0, -1,
	INT32_MAX, (int64_t)INT32_MAX + 1, (int64_t)1 << 40, INT64_MAX,
};
static const uint64_t ptrs[] = {
	0x7f0000000000ull, 0x7f0000000002ull, 0x7f0000000008ull, 0,
	UINT64_MAX - 15,
};

static uint64_t
mix(uint64_t *h)
{
	*h ^= *h >> 33;
	*h *= 0xff51afd7ed558ccdull;
	*h ^= *h >> 29;
	return *h;
}

/* Arguments for k from the hash h: a value for each, by name. */
static void
check_args(fg_kernel *k, uint64_t h)
{
	fg_kernel_info in;
	fg_arg a[64];
	int64_t tiles[3];
	int n = 0;

	fg_kernel_info_get(k, &in);
	for (int i = 0; i < in.nargs && n < 64; i++) {
		fg_arg_info ai;
		if (fg_kernel_arg(k, i, &ai) != FG_OK)
			abort();  /* the kernel said it takes nargs */
		fg_arg *x = &a[n++];
		memset(x, 0, sizeof *x);
		x->name = mix(&h) % 8 ? ai.name : NULL;
		x->kind = ai.kind;
		if (ai.kind == FG_ARG_INT) {
			x->i = sizes[mix(&h) % (sizeof sizes / sizeof *sizes)];
		} else if (ai.kind == FG_ARG_FLOAT) {
			x->f = (double)(mix(&h) % 1000) / 7.0;
		} else {
			x->t.ptr = ptrs[mix(&h) % (sizeof ptrs / sizeof *ptrs)];
			if (mix(&h) % 4 == 0) {  /* explicit dims and strides */
				x->t.rank = ai.rank;
				for (int d = 0; d < ai.rank && d < FG_MAX_RANK;
				    d++) {
					x->t.dims[d] = sizes[mix(&h) % 10];
					x->t.strides[d] = sizes[mix(&h) % 12];
				}
			}
		}
	}
	fg_kernel_check(k, a, n, tiles);
	if (n > 0)
		fg_kernel_check(k, a, n - 1, NULL);  /* one missing */
	fg_kernel_set_grid_limit(k, (int)(h % 4));
}

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	TestAlloc ta = {0};
	fg_options o = {.alloc = test_alloc, .alloc_ud = &ta, .cache_dir = "",
		.driver_lib = "/nonexistent/libcuda.so.1"};
	fg_ctx *c;
	fg_kernel *k;
	uint64_t h = 0x9e3779b97f4a7c15ull;

	for (size_t i = 0; i < size; i++)
		h = (h ^ data[i]) * 0x100000001b3ull;
	if (fg_ctx_create(&c, &o) != FG_OK)
		abort();
	/* the PTX need not be NUL-terminated when its length is given */
	if (size > 0 && fg_kernel_create(c, (const char *)data, size, &k) ==
	    FG_OK) {
		check_args(k, h);
		fg_kernel_free(k);
	}
	fg_ctx_destroy(c);
	if (ta.live || ta.bytes)
		abort();  /* a leak through the context's allocator */
	return 0;
}
