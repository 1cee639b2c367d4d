/* test_runtime_errors.c: issues 25 and 29, the runtime's errors without a
 * GPU.  NULL-safe accessors; a message for every error return; checked
 * arithmetic that names the real culprit; cache entries that are FIFOs;
 * the assembler's time limit; the warning when the driver's JIT takes
 * over; CUDA driver errors by name with a hint (a fake driver table, and
 * the toolkit's stub libcuda when it is installed). */
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

/* ---------------------------------------------------------------- NULL */

/* fg_kernel_info_get(NULL, &info) crashed; every other accessor took
 * NULL (issue 29). */
static void
kernel_info_of_null_is_empty(void **state)
{
	Fix *f = *state;
	fg_kernel_info in;

	memset(&in, 0xff, sizeof in);
	fg_kernel_info_get(NULL, &in);
	assert_string_equal(in.name, "");
	assert_string_equal(in.target, "");
	assert_string_equal(in.order, "");
	assert_int_equal(in.threads, 0);
	assert_int_equal(in.nargs, 0);
	assert_int_equal(in.source, FG_CODE_NONE);
	fg_kernel_info_get(f->k, NULL);
	fg_kernel_info_get(NULL, NULL);
	fg_kernel_info_get(f->k, &in);
	assert_string_equal(in.name, "copy_ws");
}

/* fg_kernel_arg(k, 0, NULL) failed with an empty fg_errmsg (issue 29). */
static void
kernel_arg_without_info_says_so(void **state)
{
	Fix *f = *state;

	assert_int_equal(fg_kernel_set_grid_limit(f->k, 0), FG_OK);
	assert_string_equal(fg_errmsg(f->ctx), "");
	fails(f->ctx, fg_kernel_arg(f->k, 0, NULL), FG_ERR_INVALID,
		"fg_kernel_arg's info is NULL");
}

/* Each failing call on a context leaves a message; a call that succeeds
 * in between clears it, so no message is left over from the one before. */
static void
every_error_return_has_a_message(void **state)
{
	Fix *f = *state;
	fg_ctx *c = f->ctx;
	fg_arg_info ai;
	fg_program *p;
	fg_kernel *k;
	fg_arg a[4] = {FG_INT("M", 64), FG_INT("N", 64), FG_PTR("X", X0),
		FG_PTR("Y", X0)};
	fg_attention_args aa = {0};
	int n = 0;

#define ONE(call) do { \
		assert_int_equal(fg_kernel_set_grid_limit(f->k, 0), FG_OK); \
		assert_string_equal(fg_errmsg(c), ""); \
		fg_status st_ = (call); \
		if (st_ == FG_OK || !fg_errmsg(c)[0]) \
			fail_msg("%s: %s with message '%s'", #call, \
				fg_status_name(st_), fg_errmsg(c)); \
		n++; \
	} while (0)
	ONE(fg_kernel_arg(f->k, 0, NULL));
	ONE(fg_kernel_arg(f->k, 9, &ai));
	ONE(fg_kernel_check(f->k, NULL, 4, NULL));
	ONE(fg_kernel_check(f->k, a, 2, NULL));
	ONE(fg_launch(f->k, NULL, a, 4));
	ONE(fg_kernel_load(f->k));
	ONE(fg_kernel_set_grid_limit(f->k, -1));
	ONE(fg_kernel_create(c, "", 0, &k));
	ONE(fg_kernel_create(c, NULL, 0, &k));
	ONE(fg_compile_string(c, "t.fa", NULL, 3, NULL, &p));
	ONE(fg_compile_string(c, "t.fa", "x", 1, NULL, NULL));
	ONE(fg_compile_file(c, "/nonexistent/x.fa", NULL, &p));
	ONE(fg_attention_forward(c, NULL, FAKE_STREAM));
	ONE(fg_attention_forward(c, &aa, FAKE_STREAM));
	ONE(fg_attention_reference(c, &aa, NULL));
#undef ONE
	assert_int_equal(n, 15);
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

/* ---------------------------------------------------------------- cache */

/* A cache entry that is a FIFO blocked fg_kernel_assemble forever: it
 * was opened before its type was checked (issue 29).  The alarm turns
 * a hang into a failure. */
static void
cache_entry_that_is_a_fifo_is_refused_at_once(void **state)
{
	Fix *f = *state;
	TestAlloc ta = {0};
	fg_ctx *c = new_ctx(&ta, f->dir, 0, NULL, NULL);
	uint8_t key[32];
	fg_code_source from;
	void *data;
	size_t len;
	char *path;

	cache_key(key, "ptx", 3, "sm_90a", "-arch=sm_90a", "test");
	assert_non_null(path = cache_path(c, key));
	assert_int_equal(mkfifo(path, 0600), 0);
	alarm(20);
	assert_int_equal(cache_get(c, key, &data, &len, &from), CACHE_BAD);
	alarm(0);
	assert_null(data);
	/* a symbolic link is not followed */
	unlink(path);
	assert_int_equal(symlink("/dev/zero", path), 0);
	assert_int_equal(cache_get(c, key, &data, &len, &from), CACHE_BAD);
	rt_strfree(c, path);
	fg_ctx_destroy(c);
	assert_int_equal(ta.live, 0);
}

/* ---------------------------------------------------------------- ptxas */

/* A fake ptxas in f->dir that answers --version at once when quick, and
 * otherwise starts a child that sleeps, writing its pid to dir/child. */
static void
fake_ptxas(Fix *f, bool quick_version, char *path, size_t n)
{
	FILE *s;

	snprintf(path, n, "%s/ptxas", f->dir);
	assert_non_null(s = fopen(path, "w"));
	fprintf(s, "#!/bin/sh\n%s"
		"sleep 30 & echo $! > '%s/child'\nwait\n", quick_version ?
		"[ \"$1\" = --version ] && { echo 'Cuda compilation tools, "
		"release 0.0'; exit 0; }\n" : "", f->dir);
	assert_int_equal(fclose(s), 0);
	assert_int_equal(chmod(path, 0755), 0);
}

/* The sleeping child of the fake ptxas was killed with its group: it is
 * gone, or a zombie no one reaps. */
static void
child_was_killed(Fix *f)
{
	char p[300], stat[256] = "";
	FILE *s;
	int pid = 0;

	snprintf(p, sizeof p, "%s/child", f->dir);
	assert_non_null(s = fopen(p, "r"));
	assert_int_equal(fscanf(s, "%d", &pid), 1);
	fclose(s);
	for (int i = 0; i < 100; i++) {  /* SIGKILL is not instant */
		snprintf(p, sizeof p, "/proc/%d/stat", pid);
		if (!(s = fopen(p, "r")))
			return;
		if (!fgets(stat, sizeof stat, s))
			stat[0] = '\0';
		fclose(s);
		char *e = strrchr(stat, ')');
		if (e && e[2] == 'Z')
			return;
		nanosleep(&(struct timespec){.tv_nsec = 20000000}, NULL);
	}
	fail_msg("the fake ptxas's child %d still runs: %s", pid, stat);
}

static double
now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A FAGEN_PTXAS that never exits hung the caller (issue 29): the run is
 * killed after $FAGEN_PTXAS_TIMEOUT seconds and the error names the
 * tool and the limit. */
static void
ptxas_that_hangs_is_killed_after_its_limit(void **state)
{
	Fix *f = *state;
	TestAlloc ta = {0};
	char ptxas[300];
	fg_kernel *k;

	fake_ptxas(f, true, ptxas, sizeof ptxas);
	setenv("FAGEN_PTXAS", ptxas, 1);
	setenv("FAGEN_PTXAS_TIMEOUT", "0.5", 1);
	fg_ctx *c = new_ctx(&ta, "", FG_JIT_PTXAS, NULL, NULL);
	assert_int_equal(fg_kernel_create(c, copy_meta, 0, &k), FG_OK);
	double t0 = now_s();
	fails(c, fg_kernel_assemble(k), FG_ERR_JIT, "ptxas -arch=sm_90a did "
		"not finish within 0.5 s ($FAGEN_PTXAS_TIMEOUT): killed");
	double took = now_s() - t0;
	if (took > 10)
		fail_msg("the limit of 0.5 s took %.1f s", took);
	child_was_killed(f);
	fg_kernel_free(k);
	fg_ctx_destroy(c);

	/* one that hangs on --version too is not an assembler */
	fake_ptxas(f, false, ptxas, sizeof ptxas);
	c = new_ctx(&ta, "", FG_JIT_PTXAS, NULL, NULL);
	assert_int_equal(fg_kernel_create(c, copy_meta, 0, &k), FG_OK);
	fails(c, fg_kernel_assemble(k), FG_ERR_JIT, "--version did not "
		"finish within 0.5 s ($FAGEN_PTXAS_TIMEOUT): killed");
	child_was_killed(f);
	fg_kernel_free(k);
	fg_ctx_destroy(c);
	unsetenv("FAGEN_PTXAS");
	unsetenv("FAGEN_PTXAS_TIMEOUT");
	assert_int_equal(ta.live, 0);
}

typedef struct Logged {
	int warn;             /* FG_LOG_WARN messages about the driver JIT */
	int info;             /* FG_LOG_INFO ones */
} Logged;

static void
count_log(void *ud, int level, const char *msg)
{
	Logged *l = ud;

	if (!strstr(msg, "the driver's JIT will compile it"))
		return;
	if (level == FG_LOG_WARN)
		l->warn++;
	else if (level == FG_LOG_INFO)
		l->info++;
}

/* With no assembler found, the driver's JIT taking over is a warning,
 * not an info line (issue 29); asked for by the caller, it is info. */
static void
driver_jit_fallback_is_a_warning(void **state)
{
	(void)state;
	TestAlloc ta = {0};
	Logged l = {0};
	fg_kernel *k;

	setenv("FAGEN_PTXAS", "/nonexistent/ptxas", 1);
	fg_ctx *c = new_ctx(&ta, "", FG_JIT_PTXAS | FG_JIT_DRIVER, count_log,
		&l);
	assert_int_equal(fg_kernel_create(c, copy_meta, 0, &k), FG_OK);
	assert_int_equal(fg_kernel_assemble(k), FG_OK);
	assert_int_equal(l.warn, 1);
	assert_int_equal(l.info, 0);
	fg_kernel_free(k);
	fg_ctx_destroy(c);
	unsetenv("FAGEN_PTXAS");

	c = new_ctx(&ta, "", FG_JIT_DRIVER, count_log, &l);
	assert_int_equal(fg_kernel_create(c, copy_meta, 0, &k), FG_OK);
	assert_int_equal(fg_kernel_assemble(k), FG_OK);
	assert_int_equal(l.warn, 1);
	assert_int_equal(l.info, 1);
	fg_kernel_free(k);
	fg_ctx_destroy(c);
	assert_int_equal(ta.live, 0);
}

/* ---------------------------------------------------------------- driver */

static CUresult
fake_name(CUresult r, const char **s)
{
	if (r != CUDA_ERROR_NO_DEVICE && r != CUDA_ERROR_INVALID_VALUE)
		return CUDA_ERROR_INVALID_VALUE;
	*s = r == CUDA_ERROR_NO_DEVICE ? "CUDA_ERROR_NO_DEVICE" :
		"CUDA_ERROR_INVALID_VALUE";
	return CUDA_SUCCESS;
}

static CUresult
fake_string(CUresult r, const char **s)
{
	if (r != CUDA_ERROR_NO_DEVICE && r != CUDA_ERROR_INVALID_VALUE)
		return CUDA_ERROR_INVALID_VALUE;
	*s = r == CUDA_ERROR_NO_DEVICE ? "no CUDA-capable device is detected" :
		"invalid argument";
	return CUDA_SUCCESS;
}

/* The stub's answer: it names nothing. */
static CUresult
stub_name(CUresult r, const char **s)
{
	(void)r, (void)s;
	return CUDA_ERROR_STUB_LIBRARY;
}

static void
cuda_says(fg_ctx *c, const Driver *d, CUresult r, const char *want)
{
	assert_int_equal(cuda_check(c, d, r, "cuInit"), FG_ERR_CUDA);
	if (strcmp(fg_errmsg(c), want))
		fail_msg("CUresult %d: want '%s', got '%s'", (int)r, want,
			fg_errmsg(c));
}

/* Driver errors read "cuInit: CUDA error: unknown" (issue 25): now the
 * name and text from the driver, a hint for the common ones, and the
 * number for what nobody names. */
static void
cuda_errors_have_names_and_hints(void **state)
{
	Fix *f = *state;
	Driver d;

	memset(&d, 0, sizeof d);
	d.cu.GetErrorName = fake_name;
	d.cu.GetErrorString = fake_string;
	assert_int_equal(cuda_check(f->ctx, &d, CUDA_SUCCESS, "cuInit"), FG_OK);
	cuda_says(f->ctx, &d, CUDA_ERROR_NO_DEVICE, "cuInit: "
		"CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected); "
		"no GPU is visible to this process (check nvidia-smi and "
		"CUDA_VISIBLE_DEVICES)");
	cuda_says(f->ctx, &d, CUDA_ERROR_INVALID_VALUE, "cuInit: "
		"CUDA_ERROR_INVALID_VALUE (invalid argument)");
	cuda_says(f->ctx, &d, (CUresult)12345, "cuInit: CUDA error 12345");
	/* a driver that names nothing (the stub): fagen's own names */
	d.cu.GetErrorName = stub_name;
	d.cu.GetErrorString = stub_name;
	cuda_says(f->ctx, &d, CUDA_ERROR_STUB_LIBRARY, "cuInit: "
		"CUDA_ERROR_STUB_LIBRARY (CUDA driver is a stub library); "
		"libcuda.so.1 is the toolkit's stub library, not a driver: "
		"point FAGEN_DRIVER_LIB, fg_options.driver_lib or "
		"LD_LIBRARY_PATH at the driver's libcuda.so.1, not at "
		"lib64/stubs");
	cuda_says(f->ctx, &d, (CUresult)35, "cuInit: "
		"CUDA_ERROR_INSUFFICIENT_DRIVER (CUDA driver version is "
		"insufficient for CUDA runtime version); the driver is older "
		"than the CUDA toolkit: update the driver");
	assert_int_equal(cuda_check(f->ctx, &d,
		CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, "cuInit"),
		FG_ERR_CUDA);
	assert_non_null(strstr(fg_errmsg(f->ctx), "the driver is older than "
		"the CUDA toolkit"));
	memset(&d.cu, 0, sizeof d.cu);  /* no error functions at all */
	cuda_says(f->ctx, &d, CUDA_ERROR_NO_DEVICE, "cuInit: "
		"CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected); "
		"no GPU is visible to this process (check nvidia-smi and "
		"CUDA_VISIBLE_DEVICES)");
	cuda_says(f->ctx, &d, (CUresult)777, "cuInit: CUDA error 777");
}

/* The toolkit's stub libcuda, loaded as the driver, is named for what it
 * is (issue 25: it said "cuInit: CUDA error: unknown"). */
static void
stub_driver_is_named(void **state)
{
	(void)state;
	const char *homes[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"),
		"/usr/local/cuda"};
	char stub[512] = "";
	TestAlloc ta = {0};
	Driver *d;

	for (size_t i = 0; i < COUNT(homes) && !stub[0]; i++) {
		if (!homes[i] || !homes[i][0])
			continue;
		snprintf(stub, sizeof stub, "%s/lib64/stubs/libcuda.so",
			homes[i]);
		if (access(stub, R_OK))
			stub[0] = '\0';
	}
	if (!stub[0])
		skip();
	fg_options o = {.alloc = test_alloc, .alloc_ud = &ta, .cache_dir = "",
		.driver_lib = stub};
	fg_ctx *c = NULL;
	assert_int_equal(fg_ctx_create(&c, &o), FG_OK);
	fails(c, cuda_get(c, &d), FG_ERR_NO_DEVICE, "no usable GPU: cuInit: "
		"CUDA_ERROR_STUB_LIBRARY (");
	fails(c, cuda_get(c, &d), FG_ERR_NO_DEVICE, "is the toolkit's stub "
		"library, not a driver");
	fg_ctx_destroy(c);
	assert_int_equal(ta.live, 0);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(kernel_info_of_null_is_empty),
		T(kernel_arg_without_info_says_so),
		T(every_error_return_has_a_message),
		T(dense_attention_overflow_names_its_extents),
		T(tma_stride_bytes_overflow_is_named),
		T(size_program_overflow_names_the_operation),
		T(cache_entry_that_is_a_fifo_is_refused_at_once),
		T(ptxas_that_hangs_is_killed_after_its_limit),
		T(driver_jit_fallback_is_a_warning),
		T(cuda_errors_have_names_and_hints),
		T(stub_driver_is_named),
	};

	setenv("FAGEN_CACHE_DIR", "/nonexistent/fagen-test-cache", 1);
	unsetenv("FAGEN_NVJITLINK_LIB");
	unsetenv("FAGEN_PTXAS_TIMEOUT");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
