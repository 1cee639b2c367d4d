/* test_shipped.c: issue #17, libfagen runs the shipped schedules from
 * its built-in copy wherever it is copied.  This program is built with
 * its own runtime/front/attention.c whose installed and source-tree
 * schedule directories do not exist, as for a library copied away from
 * its build, and with $FAGEN_SCHEDULE_DIR unset: every schedule of
 * schedules/ must then come from the built-in copy, byte for byte, and
 * compile; the option and the environment still win over it. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rt_front.h"
#include "testalloc.h"

#define SRC FAGEN_SRCDIR "/schedules"

typedef struct Fix {
	TestAlloc ta;
	fg_ctx *ctx;
} Fix;

static int
setup(void **state)
{
	Fix *f = calloc(1, sizeof *f);
	fg_options o = {.alloc = test_alloc, .alloc_ud = &f->ta,
		.cache_dir = "", .driver_lib = "/nonexistent/libcuda.so.1"};

	unsetenv("FAGEN_SCHEDULE_DIR");
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

/* The bytes of the file at path in a malloc'd block, *n its length. */
static unsigned char *
slurp(const char *path, size_t *n)
{
	FILE *fp = fopen(path, "rb");
	unsigned char *p = NULL;
	long len;

	assert_non_null(fp);
	assert_int_equal(fseek(fp, 0, SEEK_END), 0);
	assert_true((len = ftell(fp)) >= 0);
	rewind(fp);
	p = malloc((size_t)len + 1);
	assert_non_null(p);
	assert_int_equal(fread(p, 1, (size_t)len, fp), (size_t)len);
	fclose(fp);
	*n = (size_t)len;
	return p;
}

static void
every_shipped_schedule_is_built_in_byte_for_byte(void **state)
{
	Fix *f = *state;
	DIR *d = opendir(SRC);
	const struct dirent *e;
	int nfiles = 0, nbuilt = 0;

	assert_non_null(d);
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name), n;
		char path[4096], want[4096], file[4096];
		const Shipped *in;
		unsigned char *text;

		if (len < 4 || strcmp(e->d_name + len - 3, ".fa"))
			continue;
		nfiles++;
		assert_int_equal(attn_schedule(f->ctx, e->d_name, path,
			sizeof path, &in), FG_OK);
		if (!in)
			fail_msg("'%s' is not built in: reconfigure the build "
				"(meson setup --reconfigure)", e->d_name);
		snprintf(want, sizeof want, "<built-in>/%s", e->d_name);
		assert_string_equal(path, want);
		snprintf(file, sizeof file, "%s/%s", SRC, e->d_name);
		text = slurp(file, &n);
		assert_int_equal(in->len, n);
		assert_memory_equal(in->text, text, n);
		free(text);
	}
	closedir(d);
	for (const Shipped *s = attn_shipped; s->name; s++)
		nbuilt++;
	assert_true(nfiles >= 8);
	assert_int_equal(nbuilt, nfiles);  /* none removed since the build */
}

static void
the_built_in_schedules_compile(void **state)
{
	Fix *f = *state;
	fg_attention_args a = {.batch = 1, .heads = 1, .seq_q = 128,
		.seq_k = 128, .dtype = FG_DTYPE_BF16};
	static const int dims[] = {64, 128, 256};
	fg_kernel *k;

	for (size_t i = 0; i < sizeof dims / sizeof *dims; i++) {
		a.head_dim = dims[i];
		if (attn_variant(f->ctx, "fg_attention_forward", 90, &a, &k, NULL))
			fail_msg("d = %d: %s", dims[i], fg_errmsg(f->ctx));
	}
}

static void
the_option_and_the_environment_win_over_the_built_in_copy(void **state)
{
	Fix *f = *state;
	TestAlloc ta = {0};
	fg_options o = {.alloc = test_alloc, .alloc_ud = &ta, .cache_dir = "",
		.schedule_dir = SRC};
	char path[4096];
	const Shipped *in;
	fg_ctx *c;

	assert_int_equal(fg_ctx_create(&c, &o), FG_OK);
	assert_int_equal(attn_schedule(c, "fa_fwd_sm90.fa", path, sizeof path,
		&in), FG_OK);
	assert_null(in);
	assert_string_equal(path, SRC "/fa_fwd_sm90.fa");
	fg_ctx_destroy(c);
	assert_int_equal(ta.live, 0);
	setenv("FAGEN_SCHEDULE_DIR", SRC, 1);
	assert_int_equal(attn_schedule(f->ctx, "fa_fwd_sm90.fa", path,
		sizeof path, &in), FG_OK);
	assert_null(in);
	assert_string_equal(path, SRC "/fa_fwd_sm90.fa");
	unsetenv("FAGEN_SCHEDULE_DIR");
}

static void
a_schedule_not_built_in_names_the_places_looked_in(void **state)
{
	Fix *f = *state;
	char path[4096];
	const Shipped *in;

	assert_int_equal(attn_schedule(f->ctx, "no_such.fa", path,
		sizeof path, &in), FG_ERR_IO);
	assert_null(in);
	assert_string_equal(fg_errmsg(f->ctx), "cannot find the schedule "
		"'no_such.fa' among libfagen's built-in schedules nor in "
		"/nonexistent/install or /nonexistent/source; set "
		"FAGEN_SCHEDULE_DIR or fg_options.schedule_dir to the "
		"directory of fagen's schedules");
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(every_shipped_schedule_is_built_in_byte_for_byte),
		T(the_built_in_schedules_compile),
		T(the_option_and_the_environment_win_over_the_built_in_copy),
		T(a_schedule_not_built_in_names_the_places_looked_in),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
