/* test_runtime_errors.c: issue 29, the runtime's errors without a GPU:
 * checked arithmetic that names the real culprit. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "rt_front.h"
#include "testalloc.h"

#define COPY FAGEN_SRCDIR "/schedules/copy_ws_sm90.fa"
#define X0 0x7f0000000000ull
#define FAKE_STREAM ((struct CUstream_st *)0x1234)

typedef struct Fix {
	char dir[256];        /* scratch: cache entries, fake tools */
	TestAlloc ta;
	fg_ctx *ctx;
	fg_kernel *k;         /* the copy kernel */
} Fix;

/* The copy kernel's metadata (test_runtime.c's), with TMA views. */
static const char copy_meta[] =
"// fagen.kernel name=copy_ws target=sm_90a threads=64 cluster=1,1,1 "
"smem=32832 order=persistent tiles=2\n"
"// fagen.grid $N 64 cdiv ; $M 64 cdiv\n"
"// fagen.arg 0 param M i32\n"
"// fagen.arg 1 param N i32\n"
"// fagen.arg 2 global X bf16 rank=2 dims $M ; $N\n"
"// fagen.arg 3 global Y bf16 rank=2 dims $M ; $N\n"
"// fagen.arg 4 tma tx of=X box=64,64 swizzle=128 oob=zero\n"
"// fagen.arg 5 tma ty of=Y box=64,64 swizzle=128 oob=zero\n"
"\n.version 8.6\n.target sm_90a\n";

static fg_ctx *
new_ctx(TestAlloc *ta, const char *cache, unsigned jit, fg_log_fn log,
	void *log_ud)
{
	fg_options o = {.alloc = test_alloc, .alloc_ud = ta, .cache_dir = cache,
		.driver_lib = "/nonexistent/libcuda.so.1", .jit = jit,
		.log = log, .log_ud = log_ud, .log_level = FG_LOG_DEBUG,
		.schedule_dir = FAGEN_SRCDIR "/schedules"};
	fg_ctx *c = NULL;

	assert_int_equal(fg_ctx_create(&c, &o), FG_OK);
	return c;
}

static int
setup(void **state)
{
	Fix *f = calloc(1, sizeof *f);
	const char *t = getenv("TMPDIR");

	snprintf(f->dir, sizeof f->dir, "%s/fagen-errors-test-XXXXXX",
		t && t[0] ? t : "/tmp");
	assert_non_null(mkdtemp(f->dir));
	f->ctx = new_ctx(&f->ta, "", 0, NULL, NULL);
	assert_int_equal(fg_kernel_create(f->ctx, copy_meta, 0, &f->k), FG_OK);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	Fix *f = *state;
	char cmd[300];

	fg_kernel_free(f->k);
	fg_ctx_destroy(f->ctx);
	assert_int_equal(f->ta.live, 0);
	assert_int_equal(f->ta.bytes, 0);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

/* st is want and the context's message contains msg. */
static void
fails(fg_ctx *c, fg_status st, fg_status want, const char *msg)
{
	if (st != want || !strstr(fg_errmsg(c), msg))
		fail_msg("want %s with '%s', got %s: '%s'",
			fg_status_name(want), msg, fg_status_name(st),
			fg_errmsg(c));
}

/* ---------------------------------------------------------------- overflow */

/* heads = seq_k = INT32_MAX with dense strides overflowed computing k's
 * batch stride, and the message blamed "k_strides[0] (batch) is
 * -2199023255040", a stride the caller never passed (issue 29). */
static void
dense_attention_overflow_names_its_extents(void **state)
{
	Fix *f = *state;
	fg_attention_args a = {
		.q = X0, .k = X0 + 0x10000000, .v = X0 + 0x20000000,
		.o = X0 + 0x30000000, .lse = X0 + 0x40000000,
		.batch = 1, .heads = INT32_MAX, .seq_q = 1, .seq_k = INT32_MAX,
		.head_dim = 64, .dtype = FG_DTYPE_BF16,
	};
	fg_status st;

	st = fg_attention_forward(f->ctx, &a, FAKE_STREAM);
	fails(f->ctx, st, FG_ERR_INVALID, "fg_attention_forward: k: its "
		"dense strides overflow 64-bit addressing: heads * seq_k * "
		"head_dim = 2147483647 * 2147483647 * 64 elements");
	assert_null(strstr(fg_errmsg(f->ctx), "k_strides"));
	st = fg_attention_reference(f->ctx, &a, FAKE_STREAM);
	fails(f->ctx, st, FG_ERR_INVALID, "fg_attention_reference: k: its "
		"dense strides overflow 64-bit addressing: heads * seq_k * "
		"head_dim");
	/* given strides: the product that overflows is named */
	a.seq_k = 300;
	a.heads = 4;
	int64_t big[4] = {(int64_t)1 << 40, (int64_t)1 << 62, 256, 1};
	memcpy(a.k_strides, big, sizeof big);
	st = fg_attention_reference(f->ctx, &a, FAKE_STREAM);
	fails(f->ctx, st, FG_ERR_INVALID, "k: its strides overflow 64-bit "
		"addressing: (heads - 1) * k_strides[1] is 3 * "
		"4611686018427387904");
}

/* A TMA tensor's stride along an extent of 1 is not bounded by its span:
 * strides[0] * 2 bytes overflowed in the TMA rules (issue 29). */
static void
tma_stride_bytes_overflow_is_named(void **state)
{
	Fix *f = *state;
	fg_arg a[4] = {FG_INT("M", 1), FG_INT("N", 64), FG_PTR("X", X0),
		FG_PTR("Y", X0)};

	assert_int_equal(fg_kernel_check(f->k, a, 4, NULL), FG_OK);
	a[2].t.strides[0] = INT64_MAX;
	a[2].t.strides[1] = 1;
	fails(f->ctx, fg_kernel_check(f->k, a, 4, NULL), FG_ERR_INVALID,
		"tensor 'X': strides[0] is 9223372036854775807 elements, whose "
		"size in bytes (times 2) overflows 64 bits");
}

/* A size program that overflows says which operation did. */
static void
size_program_overflow_names_the_operation(void **state)
{
	Fix *f = *state;
	static const char meta[] =
		"// fagen.kernel name=b target=sm_90a threads=32 order=single\n"
		"// fagen.arg 0 param N i64\n"
		"// fagen.arg 1 global X bf16 rank=1 dims $N 4 *\n";
	fg_kernel *k;
	fg_arg a[] = {FG_INT("N", (int64_t)1 << 62), FG_PTR("X", X0)};

	assert_int_equal(fg_kernel_create(f->ctx, meta, 0, &k), FG_OK);
	fails(f->ctx, fg_kernel_check(k, a, 2, NULL), FG_ERR_INVALID,
		"64-bit overflow: 4611686018427387904 * 4, in a size of "
		"kernel 'b'");
	fg_kernel_free(k);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(dense_attention_overflow_names_its_extents),
		T(tma_stride_bytes_overflow_is_named),
		T(size_program_overflow_names_the_operation),
	};

	setenv("FAGEN_CACHE_DIR", "/nonexistent/fagen-test-cache", 1);
	unsetenv("FAGEN_NVJITLINK_LIB");
	unsetenv("FAGEN_PTXAS_TIMEOUT");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
