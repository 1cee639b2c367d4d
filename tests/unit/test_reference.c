/* test_reference.c: fg_attention_reference without a GPU: nvrtc compiles
 * the reference kernels' CUDA C (for sm_90, and sm_100 where the nvrtc
 * knows it), a second compile comes from the cache, a missing nvrtc and
 * bad source are clear errors, and the reference's argument checks.
 * The nvrtc cases are skipped where nvrtc cannot be loaded.  Every
 * context uses a counting allocator and must give back every byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rt_front.h"
#include "testalloc.h"

#define X0 0x7f0000000000ull
#define FAKE_STREAM ((struct CUstream_st *)0x1234)

typedef struct Fix {
	TestAlloc ta;
	fg_ctx *ctx;
	int compiled;         /* "compiled" log messages seen */
} Fix;

static void
count_compiles(void *ud, int level, const char *msg)
{
	(void)level;
	if (strstr(msg, " compiled for "))
		((Fix *)ud)->compiled++;
}

static int
setup(void **state)
{
	Fix *f = calloc(1, sizeof *f);
	fg_options o = {.alloc = test_alloc, .alloc_ud = &f->ta,
		.cache_dir = "", .driver_lib = "/nonexistent/libcuda.so.1",
		.log = count_compiles, .log_ud = f, .log_level = FG_LOG_INFO};

	assert_int_equal(fg_ctx_create(&f->ctx, &o), FG_OK);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	Fix *f = *state;

	fg_ctx_destroy(f->ctx);
	assert_int_equal(f->ta.live, 0);
	assert_int_equal(f->ta.bytes, 0);
	free(f);
	return 0;
}

/* Compile src for arch; skip the test where nvrtc is missing. */
static fg_status
try_compile(Fix *f, const char *src, const char *arch)
{
	void *cubin;
	size_t len;
	fg_status st = nvrtc_cubin(f->ctx, "test", src, "test.cu", arch,
		&cubin, &len);

	if (st == FG_ERR_JIT && strstr(fg_errmsg(f->ctx), "cannot load "
	    "nvrtc")) {
		print_message("no nvrtc here: %s\n", fg_errmsg(f->ctx));
		skip();
	}
	if (st == FG_OK) {
		assert_true(len > 1000);
		assert_memory_equal(cubin, "\177ELF", 4);
		rt_free(f->ctx, cubin, len);
	}
	return st;
}

static void
the_reference_kernels_compile_once(void **state)
{
	Fix *f = *state;

	if (try_compile(f, ref_source(), "sm_90") != FG_OK)
		fail_msg("%s", fg_errmsg(f->ctx));
	assert_int_equal(f->compiled, 1);
	assert_int_equal(try_compile(f, ref_source(), "sm_90"), FG_OK);
	assert_int_equal(f->compiled, 1);   /* from the cache */
	/* sm_100 where this nvrtc knows it */
	fg_status st = try_compile(f, ref_source(), "sm_100");
	if (st != FG_OK && !strstr(fg_errmsg(f->ctx), "sm_100"))
		fail_msg("%s", fg_errmsg(f->ctx));
}

static void
bad_source_gives_the_nvrtc_log(void **state)
{
	Fix *f = *state;

	assert_int_equal(try_compile(f, "extern \"C\" __global__ void k() "
		"{ undeclared_thing = 1; }\n", "sm_90"), FG_ERR_JIT);
	assert_non_null(strstr(fg_errmsg(f->ctx), "test: nvrtc could not "
		"compile test.cu for sm_90"));
	assert_non_null(strstr(fg_errmsg(f->ctx), "undeclared_thing"));
}

static void
missing_nvrtc_is_a_clear_error(void **state)
{
	Fix *f = *state;
	void *cubin;
	size_t len;

	setenv("FAGEN_NVRTC_LIB", "/nonexistent/libnvrtc.so", 1);
	assert_int_equal(nvrtc_cubin(f->ctx, "fg_attention_reference",
		ref_source(), "r.cu", "sm_90", &cubin, &len), FG_ERR_JIT);
	unsetenv("FAGEN_NVRTC_LIB");
	assert_non_null(strstr(fg_errmsg(f->ctx), "fg_attention_reference: "
		"cannot load nvrtc, which compiles the reference kernels: "
		"/nonexistent/libnvrtc.so"));
	assert_non_null(strstr(fg_errmsg(f->ctx), "set FAGEN_NVRTC_LIB"));
	assert_null(cubin);
}

static fg_attention_args
problem(void)
{
	return (fg_attention_args){
		.q = X0, .k = X0 + 0x10000000, .v = X0 + 0x20000000,
		.o = X0 + 0x30000000, .lse = X0 + 0x40000000,
		.batch = 2, .heads = 4, .seq_q = 100, .seq_k = 300,
		.head_dim = 96, .dtype = FG_DTYPE_F16,
	};
}

static void
reference_arguments_are_checked_before_the_driver(void **state)
{
	Fix *f = *state;
	fg_attention_args a = problem();

	assert_int_equal(fg_attention_reference(f->ctx, &a, FAKE_STREAM),
		FG_ERR_NO_DRIVER);
	a.q = X0 + 2;   /* 2-byte alignment and odd strides are enough */
	a.k_strides[0] = 300 * 4 * 97, a.k_strides[1] = 97;
	a.k_strides[2] = 4 * 97, a.k_strides[3] = 1;
	assert_int_equal(fg_attention_reference(f->ctx, &a, FAKE_STREAM),
		FG_ERR_NO_DRIVER);
	a = problem(), a.head_dim = 1000;
	assert_int_equal(fg_attention_reference(f->ctx, &a, FAKE_STREAM),
		FG_ERR_INVALID);
	assert_string_equal(fg_errmsg(f->ctx), "fg_attention_reference: "
		"head_dim is 1000; the reference supports up to 512");
	a = problem(), a.seq_q = 2000000;
	assert_int_equal(fg_attention_reference(f->ctx, &a, FAKE_STREAM),
		FG_ERR_INVALID);
	assert_string_equal(fg_errmsg(f->ctx), "fg_attention_reference: "
		"seq_q is 2000000; the reference supports up to 1048560");
	a = problem(), a.v = X0 + 1;
	assert_int_equal(fg_attention_reference(f->ctx, &a, FAKE_STREAM),
		FG_ERR_INVALID);
	assert_non_null(strstr(fg_errmsg(f->ctx), "v = 0x7f0000000001 is not "
		"2-byte aligned"));
	a = problem();
	assert_int_equal(fg_attention_reference(f->ctx, &a, NULL),
		FG_ERR_INVALID);
	assert_int_equal(fg_attention_reference(NULL, &a, FAKE_STREAM),
		FG_ERR_INVALID);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(the_reference_kernels_compile_once),
		T(bad_source_gives_the_nvrtc_log),
		T(missing_nvrtc_is_a_clear_error),
		T(reference_arguments_are_checked_before_the_driver),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
