/* test_runtime_robust.c: the runtime against hostile callers and a
 * failing world, without a GPU (issue 8).  NULL and out-of-range arguments
 * to every entry point that test_runtime.c does not cover; an allocator
 * that fails its Nth call, for every N reached, through a compile of a
 * shipped schedule with defines, a failing compile, kernel creation and
 * assembly with the memory and disk caches; 16 processes compiling and
 * assembling one schedule into one cache directory at once; and cache
 * entries that are not files. */
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "rt_front.h"
#include "testalloc.h"

#define COPY FAGEN_SRCDIR "/schedules/copy_ws_sm90.fa"
#define X0 0x7f0000000000ull
#define FAKE_STREAM ((struct CUstream_st *)0x1234)

typedef struct Fix {
	char dir[256];        /* a fresh cache directory */
	TestAlloc ta;
	fg_ctx *ctx;
} Fix;

static fg_ctx *
new_ctx(TestAlloc *ta, const char *dir, fg_status want)
{
	fg_options o = {.alloc = test_alloc, .alloc_ud = ta, .cache_dir = dir,
		.driver_lib = "/nonexistent/libcuda.so.1"};
	fg_ctx *c = NULL;

	assert_int_equal(fg_ctx_create(&c, &o), want);
	return c;
}

static int
setup(void **state)
{
	Fix *f = calloc(1, sizeof *f);
	const char *t = getenv("TMPDIR");

	snprintf(f->dir, sizeof f->dir, "%s/fagen-robust-test-XXXXXX",
		t && t[0] ? t : "/tmp");
	assert_non_null(mkdtemp(f->dir));
	f->ctx = new_ctx(&f->ta, "", FG_OK);
	*state = f;
	return 0;
}

static void
rm_tree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[512];

	while (d && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		if (unlink(p))
			rm_tree(p);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

static int
teardown(void **state)
{
	Fix *f = *state;

	fg_ctx_destroy(f->ctx);
	assert_int_equal(f->ta.live, 0);
	assert_int_equal(f->ta.bytes, 0);
	rm_tree(f->dir);
	free(f);
	return 0;
}

/* st is FG_ERR_INVALID and the context's message contains want. */
static void
refused(fg_ctx *c, fg_status st, const char *want)
{
	if (st != FG_ERR_INVALID || !strstr(fg_errmsg(c), want))
		fail_msg("want FG_ERR_INVALID with '%s', got %s: %s", want,
			fg_status_name(st), fg_errmsg(c));
}

/* The shipped copy schedule's PTX, compiled in c. */
static char *
copy_ptx(fg_ctx *c)
{
	fg_program *p;
	size_t n;

	assert_int_equal(fg_compile_file(c, COPY, NULL, &p), FG_OK);
	const char *ptx = fg_program_ptx(p, &n);
	char *s = malloc(n + 1);
	memcpy(s, ptx, n + 1);
	fg_program_free(p);
	return s;
}

/* Whether c has an assembler that makes a cubin (not the driver's JIT). */
static bool
can_assemble(fg_ctx *c)
{
	const char *tool;
	int w;

	return !jit_tool(c, NULL, &w, &tool) && w != FG_JIT_DRIVER;
}

/* ---------------------------------------------------------------- args */

static void
compile_arguments_are_checked(void **state)
{
	Fix *f = *state;
	static const char text[] = "kernel k target=sm_90a;\n";
	fg_program *p = (fg_program *)&p;

	assert_int_equal(fg_compile_string(NULL, "t.fa", text, 5, NULL, &p),
		FG_ERR_INVALID);
	assert_int_equal(fg_compile_file(NULL, COPY, NULL, &p),
		FG_ERR_INVALID);
	refused(f->ctx, fg_compile_string(f->ctx, "t.fa", NULL, 5, NULL, &p),
		"text is NULL");
	assert_null(p);
	refused(f->ctx, fg_compile_string(f->ctx, "t.fa", text, 5, NULL,
		NULL), "out is NULL");
	refused(f->ctx, fg_compile_string(f->ctx, "t.fa", text, SIZE_MAX,
		NULL, &p), "the schedule is larger than");
	refused(f->ctx, fg_compile_string(f->ctx, "t.fa", text,
		(size_t)1 << 40, NULL, &p), "the schedule is larger than");
	refused(f->ctx, fg_compile_file(f->ctx, NULL, NULL, &p),
		"path is NULL");
	refused(f->ctx, fg_compile_file(f->ctx, COPY, NULL, NULL),
		"out is NULL");
	assert_int_equal(fg_compile_file(f->ctx, FAGEN_SRCDIR "/schedules",
		NULL, &p), FG_ERR_IO);
	assert_null(p);
	assert_non_null(strstr(fg_errmsg(f->ctx), "cannot read"));
	fg_compile_options o = {.ndefines = -1};
	refused(f->ctx, fg_compile_string(f->ctx, "t.fa", text, 5, &o, &p),
		"ndefines is -1");
	const char *defs[] = {"DT=f16", ""};
	o = (fg_compile_options){.defines = defs, .ndefines = 2};
	refused(f->ctx, fg_compile_file(f->ctx, COPY, &o, &p),
		"is not NAME=VALUE");
	o = (fg_compile_options){.arch = ""};
	refused(f->ctx, fg_compile_file(f->ctx, COPY, &o, &p),
		"unknown arch ''");
	/* an empty schedule is a compile error, not a crash */
	assert_int_equal(fg_compile_string(f->ctx, "e.fa", NULL, 0, NULL, &p),
		FG_ERR_COMPILE);
	assert_non_null(strstr(fg_program_diagnostics(p), "is empty"));
	fg_program_free(p);
	assert_null(fg_program_ptx(NULL, NULL));
	assert_string_equal(fg_program_diagnostics(NULL), "");
	assert_string_equal(fg_program_report(NULL), "");
	fg_program_free(NULL);
}

static void
kernel_arguments_are_checked(void **state)
{
	Fix *f = *state;
	fg_kernel *k = (fg_kernel *)&k;
	fg_arg_info ai;
	size_t n = 7;

	assert_int_equal(fg_kernel_create(NULL, "x", 1, &k), FG_ERR_INVALID);
	refused(f->ctx, fg_kernel_create(f->ctx, NULL, 0, &k), "ptx is NULL");
	refused(f->ctx, fg_kernel_create(f->ctx, "x", 1, NULL), "out is NULL");
	refused(f->ctx, fg_kernel_create(f->ctx, "", 0, &k),
		"no '// fagen.kernel' line");
	assert_null(k);
	/* a kernel that is NULL: refused, with nothing to hold a message */
	assert_int_equal(fg_kernel_assemble(NULL), FG_ERR_INVALID);
	assert_int_equal(fg_kernel_load(NULL), FG_ERR_INVALID);
	assert_int_equal(fg_kernel_arg(NULL, 0, &ai), FG_ERR_INVALID);
	assert_int_equal(fg_kernel_set_grid_limit(NULL, 0), FG_ERR_INVALID);
	assert_int_equal(fg_kernel_check(NULL, NULL, 0, NULL), FG_ERR_INVALID);
	assert_int_equal(fg_launch(NULL, FAKE_STREAM, NULL, 0),
		FG_ERR_INVALID);
	assert_null(fg_kernel_cubin(NULL, &n));
	fg_kernel_free(NULL);
	fg_ctx_destroy(NULL);

	char *ptx = copy_ptx(f->ctx);
	assert_int_equal(fg_kernel_create(f->ctx, ptx, 0, &k), FG_OK);
	refused(f->ctx, fg_kernel_arg(k, -1, &ai), "there is no argument -1");
	refused(f->ctx, fg_kernel_arg(k, INT32_MAX, &ai), "takes 4 arguments");
	refused(f->ctx, fg_kernel_check(k, NULL, 4, NULL),
		"4 arguments at NULL");
	refused(f->ctx, fg_kernel_check(k, NULL, INT32_MIN, NULL),
		"-2147483648 arguments");
	refused(f->ctx, fg_launch(k, FAKE_STREAM, NULL, 4),
		"4 arguments at NULL");
	refused(f->ctx, fg_kernel_set_grid_limit(k, INT32_MIN),
		"a grid limit of -2147483648 CTAs");
	fg_arg a[] = {FG_INT("M", 64), FG_INT("N", 64), FG_PTR("X", X0),
		FG_PTR("Y", X0)};
	a[0].kind = (fg_arg_kind)99;
	refused(f->ctx, fg_kernel_check(k, a, 4, NULL), "'M' is an i32 param");
	a[0].kind = FG_ARG_INT;
	a[2].t.rank = -1;
	refused(f->ctx, fg_kernel_check(k, a, 4, NULL), "rank is -1");
	a[2].t.rank = FG_MAX_RANK + 1;
	refused(f->ctx, fg_kernel_check(k, a, 4, NULL), "rank is 6");
	a[2].t.rank = 0;
	a[1] = FG_FLOAT("N", 0.0 / 0.0);
	refused(f->ctx, fg_kernel_check(k, a, 4, NULL), "'N' is an i32 param");
	/* nothing is assembled yet: no code */
	assert_null(fg_kernel_cubin(k, &n));
	assert_null(fg_kernel_cubin(k, NULL));
	fg_kernel_free(k);
	free(ptx);
}

/* ---------------------------------------------------------------- memory */

/* Lua's failnext over one job: in a fresh context, job runs with the Nth
 * allocation from its start failing, for N = 1, 2, ... until a run ends
 * before its Nth allocation.  Each run ends in FG_OK or in FG_ERR_NOMEM
 * with a message, and every byte is given back.  Returns the last N. */
typedef fg_status Job(fg_ctx *, TestAlloc *, void *arg);

static long
fail_each(Job *job, void *arg)
{
	for (long n = 1;; n++) {
		TestAlloc ta = {0};
		fg_ctx *c = new_ctx(&ta, "", FG_OK);

		ta.failat = ta.calls + n;
		fg_status st = job(c, &ta, arg);
		if (st == FG_ERR_NOMEM && !strstr(fg_errmsg(c), "out of memory"))
			fail_msg("allocation %ld: FG_ERR_NOMEM says '%s'", n,
				fg_errmsg(c));
		if (st != FG_OK && st != FG_ERR_NOMEM)
			fail_msg("allocation %ld: %s: %s", n,
				fg_status_name(st), fg_errmsg(c));
		fg_ctx_destroy(c);
		if (ta.live || ta.bytes)
			fail_msg("allocation %ld failing leaks %ld blocks, %ld "
				"bytes", n, ta.live, ta.bytes);
		if (ta.calls < ta.failat) {  /* it was never reached */
			assert_int_equal(st, FG_OK);
			return n;
		}
	}
}

/* A shipped schedule with defines, to PTX, then a kernel and its check. */
static fg_status
compile_and_check(fg_ctx *c, TestAlloc *ta, void *arg)
{
	const char *defs[] = {"DT=f16", "STAGES=2"};
	fg_compile_options o = {.defines = defs, .ndefines = 2};
	fg_program *p = NULL;
	fg_kernel *k = NULL;
	fg_status st;

	(void)ta, (void)arg;
	if ((st = fg_compile_file(c, COPY, &o, &p)))
		goto out;
	assert_non_null(fg_program_ptx(p, NULL));
	if ((st = fg_kernel_create(c, fg_program_ptx(p, NULL), 0, &k)))
		goto out;
	fg_arg a[] = {FG_INT("M", 100), FG_INT("N", 64), FG_PTR("X", X0),
		FG_PTR("Y", X0)};
	int64_t t[3];
	st = fg_kernel_check(k, a, 4, t);
	if (st == FG_OK)
		assert_int_equal(t[0] * t[1], 2);
out:
	fg_kernel_free(k);
	fg_program_free(p);
	return st;
}

/* A schedule with errors and a warning: the diagnostics are rendered
 * under memory pressure too. */
static fg_status
failing_compile(fg_ctx *c, TestAlloc *ta, void *arg)
{
	static const char bad[] =
		"kernel k target=sm_90a;\n"
		"param M : i32;\n"
		"cta threads=64;\n"
		"tiles grid=(cdiv(M, 64)) order=persistent;\n"
		"partition p warps=0..1 {\n"
		"\tfor t in tiles { wait nosuch, 0; }\n"
		"}\n";
	fg_program *p = NULL;
	fg_status st;

	(void)ta, (void)arg;
	st = fg_compile_string(c, "bad.fa", bad, sizeof bad - 1, NULL, &p);
	if (st == FG_ERR_COMPILE) {
		assert_non_null(strstr(fg_program_diagnostics(p),
			"'nosuch'"));
		st = FG_OK;
	}
	fg_program_free(p);
	return st;
}

static void
every_allocation_failure_in_a_compile_is_survived(void **state)
{
	(void)state;
	print_message("%ld allocations to compile and check\n",
		fail_each(compile_and_check, NULL) - 1);
	print_message("%ld allocations for a failing compile\n",
		fail_each(failing_compile, NULL) - 1);
}

typedef struct AsmArg {
	const char *ptx;
	const char *dir;     /* a cache directory to use, or NULL */
} AsmArg;

/* Assembly, twice: the second comes from the memory cache; or, with a
 * directory, once in a second context that finds the code on disk.  That
 * context is made with the allocator's failures held off. */
static fg_status
assemble_twice(fg_ctx *c, TestAlloc *ta, void *arg)
{
	const AsmArg *a = arg;
	fg_kernel *k = NULL, *k2 = NULL;
	fg_ctx *d = c;
	fg_status st;

	if (a->dir) {
		long failat = ta->failat, before = ta->calls;
		ta->failat = 0;
		d = new_ctx(ta, a->dir, FG_OK);
		ta->failat = failat + (ta->calls - before);
	}
	st = fg_kernel_create(d, a->ptx, 0, &k);
	if (st == FG_OK)
		st = fg_kernel_assemble(k);
	if (st == FG_OK && !a->dir)
		st = fg_kernel_create(d, a->ptx, 0, &k2);
	if (st == FG_OK && !a->dir)
		st = fg_kernel_assemble(k2);
	if (st != FG_OK && d != c)  /* the message is d's: pass it on */
		rt_err(c, st, "%s", fg_errmsg(d));
	fg_kernel_free(k);
	fg_kernel_free(k2);
	if (d != c)
		fg_ctx_destroy(d);
	return st;
}

static void
every_allocation_failure_in_assembly_is_survived(void **state)
{
	Fix *f = *state;
	char *ptx = copy_ptx(f->ctx);

	if (!can_assemble(f->ctx)) {
		free(ptx);
		skip();
	}
	AsmArg a = {.ptx = ptx};
	print_message("%ld allocations to assemble twice in memory\n",
		fail_each(assemble_twice, &a) - 1);
	/* fill the disk cache, then fail through loads from it */
	fg_ctx *c = new_ctx(&f->ta, f->dir, FG_OK);
	fg_kernel *k;
	assert_int_equal(fg_kernel_create(c, ptx, 0, &k), FG_OK);
	assert_int_equal(fg_kernel_assemble(k), FG_OK);
	fg_kernel_free(k);
	fg_ctx_destroy(c);
	a.dir = f->dir;
	print_message("%ld allocations to load from the disk cache\n",
		fail_each(assemble_twice, &a) - 1);
	free(ptx);
}

/* ---------------------------------------------------------------- cache */

/* 16 processes compile the shipped copy schedule and assemble it into one
 * cache directory at once.  Each gets the same cubin; one entry is left,
 * whole, and no temporary file. */
static void
sixteen_processes_compiling_one_schedule_agree(void **state)
{
	Fix *f = *state;
	enum { NPROC = 16 };
	pid_t pids[NPROC];

	if (!can_assemble(f->ctx))
		skip();
	for (int i = 0; i < NPROC; i++) {
		if ((pids[i] = fork()) == 0) {
			fg_options o = {.cache_dir = f->dir,
				.driver_lib = "/nonexistent/libcuda.so.1"};
			fg_ctx *c;
			fg_program *p;
			fg_kernel *k;
			size_t n;
			char out[512];
			if (fg_ctx_create(&c, &o) ||
			    fg_compile_file(c, COPY, NULL, &p) ||
			    fg_kernel_create(c, fg_program_ptx(p, NULL), 0, &k) ||
			    fg_kernel_assemble(k))
				_exit(1);
			const void *cubin = fg_kernel_cubin(k, &n);
			snprintf(out, sizeof out, "%s.%d", f->dir, i);
			FILE *w = fopen(out, "wb");
			if (!w || fwrite(cubin, 1, n, w) != n || fclose(w))
				_exit(2);
			fg_kernel_free(k);
			fg_program_free(p);
			fg_ctx_destroy(c);
			_exit(0);
		}
		assert_true(pids[i] > 0);
	}
	char *first = NULL;
	size_t nfirst = 0;
	for (int i = 0; i < NPROC; i++) {
		int st;
		char path[512];
		assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			fail_msg("process %d failed (status %#x)", i, st);
		snprintf(path, sizeof path, "%s.%d", f->dir, i);
		FILE *r = fopen(path, "rb");
		assert_non_null(r);
		char buf[1 << 16];
		size_t n = fread(buf, 1, sizeof buf, r);
		fclose(r);
		unlink(path);
		assert_true(n > 4 && n < sizeof buf);
		if (!first) {
			first = malloc(n);
			memcpy(first, buf, n);
			nfirst = n;
		} else if (n != nfirst || memcmp(buf, first, n)) {
			fail_msg("process %d got another cubin", i);
		}
	}
	DIR *d = opendir(f->dir);
	struct dirent *e;
	int entries = 0;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		entries++;
		assert_non_null(strstr(e->d_name, ".cubin"));
	}
	closedir(d);
	assert_int_equal(entries, 1);
	/* a fresh context loads that entry from disk, the same bytes */
	fg_ctx *c = new_ctx(&f->ta, f->dir, FG_OK);
	char *ptx = copy_ptx(c);
	fg_kernel *k;
	fg_kernel_info in;
	size_t n;
	assert_int_equal(fg_kernel_create(c, ptx, 0, &k), FG_OK);
	assert_int_equal(fg_kernel_assemble(k), FG_OK);
	fg_kernel_info_get(k, &in);
	assert_int_equal(in.source, FG_CODE_DISK);
	const void *cubin = fg_kernel_cubin(k, &n);
	assert_int_equal(n, nfirst);
	assert_memory_equal(cubin, first, n);
	fg_kernel_free(k);
	fg_ctx_destroy(c);
	free(ptx);
	free(first);
}

/* An entry that is a device, or that cannot be read, is never loaded:
 * the kernel is assembled again and its code comes from the assembler. */
static void
entries_that_are_not_readable_files_are_rebuilt(void **state)
{
	Fix *f = *state;
	char *ptx = copy_ptx(f->ctx);

	if (!can_assemble(f->ctx)) {
		free(ptx);
		skip();
	}
	/* find where the entry goes: assemble once, note the file */
	fg_ctx *c = new_ctx(&f->ta, f->dir, FG_OK);
	fg_kernel *k;
	fg_kernel_info in;
	assert_int_equal(fg_kernel_create(c, ptx, 0, &k), FG_OK);
	assert_int_equal(fg_kernel_assemble(k), FG_OK);
	fg_kernel_free(k);
	fg_ctx_destroy(c);
	DIR *d = opendir(f->dir);
	struct dirent *e;
	char path[512] = "";
	while ((e = readdir(d)))
		if (strstr(e->d_name, ".cubin"))
			snprintf(path, sizeof path, "%s/%s", f->dir, e->d_name);
	closedir(d);
	assert_true(path[0]);
	for (int kind = 0; kind < 2; kind++) {
		unlink(path);
		if (kind == 0) {
			assert_int_equal(symlink("/dev/zero", path), 0);
		} else {
			close(creat(path, 0));  /* binds only when not root */
			if (access(path, R_OK) == 0)
				break;
		}
		c = new_ctx(&f->ta, f->dir, FG_OK);
		assert_int_equal(fg_kernel_create(c, ptx, 0, &k), FG_OK);
		assert_int_equal(fg_kernel_assemble(k), FG_OK);
		fg_kernel_info_get(k, &in);
		if (in.source != FG_CODE_NVJITLINK &&
		    in.source != FG_CODE_PTXAS)
			fail_msg("case %d: the code came from cache (%d)", kind,
				in.source);
		fg_kernel_free(k);
		fg_ctx_destroy(c);
	}
	free(ptx);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(compile_arguments_are_checked),
		T(kernel_arguments_are_checked),
		T(every_allocation_failure_in_a_compile_is_survived),
		T(every_allocation_failure_in_assembly_is_survived),
		T(sixteen_processes_compiling_one_schedule_agree),
		T(entries_that_are_not_readable_files_are_rebuilt),
	};

	setenv("FAGEN_CACHE_DIR", "/nonexistent/fagen-test-cache", 1);
	unsetenv("FAGEN_NVJITLINK_LIB");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
