/* rowtest.h: what test_norm.c, test_rows.c and test_xent.c share to test
 * the row kernels (runtime/front/rows.c, issue #26) without a GPU: a
 * context with a counting allocator and a schedule directory (the
 * stand-ins of tests/unit/norm, or schedules/), the status and message a
 * call must give, and the binding of a checked problem accepted by its
 * kernel (fg_kernel_check).  Header-only: each test program includes it
 * once. */
#ifndef ROWTEST_H
#define ROWTEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_front.h"
#include "testalloc.h"

#define X0 0x7f0000000000ull   /* a 16-byte aligned device address */
#define FAKE_STREAM ((struct CUstream_st *)0x1234)
#define STUB FAGEN_SRCDIR "/tests/unit/norm"
#define SHIPPED FAGEN_SRCDIR "/schedules"
#define SCRATCH (X0 + 0x200000000)  /* the stats not wanted */
#define CTAS 264                     /* a launch's, 132 SMs x 2 (H100) */
/* A launch of rows r0 .. r0 + nr - 1, its CTAs writing the first rows
 * of partials. */
#define LAUNCH(r0, nr) (&(RowLaunch){.row0 = (r0), .m = (nr), \
	.scratch = SCRATCH, .parts = CTAS})

typedef struct Fix {
	TestAlloc ta;
	fg_ctx *ctx;
} Fix;

static int
fix_setup(void **state, const char *dir)
{
	Fix *f = calloc(1, sizeof *f);
	fg_options o = {.alloc = test_alloc, .alloc_ud = &f->ta,
		.cache_dir = "", .driver_lib = "/nonexistent/libcuda.so.1",
		.schedule_dir = dir};

	assert_int_equal(fg_ctx_create(&f->ctx, &o), FG_OK);
	*state = f;
	return 0;
}

static int
setup(void **state)
{
	return fix_setup(state, STUB);
}

static int
setup_shipped(void **state)
{
	return fix_setup(state, SHIPPED);
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

/* A call of fn gave st: it must be want, with msg in the message, which
 * names fn when it is an argument's error. */
static void
expect_status(Fix *f, const char *fn, fg_status st, fg_status want,
	const char *msg)
{
	const char *m = fg_errmsg(f->ctx);

	if (st != want || !strstr(m, msg))
		fail_msg("want %s with '%s', got %s: %s", fg_status_name(want),
			msg, fg_status_name(st), m);
	if (want != FG_OK && want != FG_ERR_NO_DRIVER &&
	    (strncmp(m, fn, strlen(fn)) || strncmp(m + strlen(fn), ": ", 2)))
		fail_msg("the message does not name %s: %s", fn, m);
}

static const char *
cfg_str(const RowCfg *g, char *buf, size_t n)
{
	snprintf(buf, n, "N=%d VEC=%d TPR=%d WARPS=%d", g->n, g->vec, g->tpr,
		g->warps);
	return buf;
}

static const char *
dt_str(fg_dtype dt)
{
	return dt == FG_DTYPE_F32 ? "f32" : dt == FG_DTYPE_F16 ? "f16" :
		"bf16";
}

static const fg_arg *
arg(const fg_arg *args, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(args[i].name, name))
			return &args[i];
	return NULL;
}

/* a's kernel (from the context's schedule directory, for compute
 * capability cc) is named kernel and accepts its binding for rows row0
 * .. row0 + m - 1, with the tile grid cdiv(m, ROWS): the kernel, or NULL
 * with the reason in the context's message; *na gets the arguments'
 * count. */
static fg_kernel *
try_binds(Fix *f, const char *fn, const RowArgs *a, const char *kernel,
	int cc, int64_t row0, int64_t m, int *na)
{
	fg_arg args[ROW_NARGS];
	fg_kernel_info info;
	int64_t tiles[3];
	fg_kernel *k;
	Rows nm;

	if (rows_check(f->ctx, fn, a, FAKE_STREAM, &nm) != FG_OK ||
	    rows_kernel(f->ctx, fn, cc, &nm.cfg, &k) != FG_OK)
		return NULL;
	*na = rows_bind(a, &nm, LAUNCH(row0, m), args);
	if (fg_kernel_check(k, args, *na, tiles) != FG_OK)
		return NULL;
	int rows = nm.cfg.warps * 32 / nm.cfg.tpr;
	if (nm.cfg.cl > 1) {   /* (CL, row tiles): a cluster a row tile */
		assert_int_equal(tiles[0], nm.cfg.cl);
		assert_int_equal(tiles[1], (m + rows - 1) / rows);
	} else {
		assert_int_equal(tiles[0], (m + rows - 1) / rows);
		assert_int_equal(tiles[1], 1);
	}
	fg_kernel_info_get(k, &info);
	/* the warp-specialized form: and its loader warp */
	assert_int_equal(info.threads, nm.cfg.warps * 32 + (nm.cfg.st ? 32 :
		0));
	assert_string_equal(info.name, kernel);
	return k;
}

/* try_binds on sm_90a that must succeed. */
static fg_kernel *
binds(Fix *f, const char *fn, const RowArgs *a, const char *kernel,
	int64_t row0, int64_t m, int *na)
{
	fg_kernel *k = try_binds(f, fn, a, kernel, 90, row0, m, na);

	if (!k)
		fail_msg("%s", fg_errmsg(f->ctx));
	return k;
}

/* A shipped schedule in a's configuration on sm_90a and sm_100a, bound
 * for rows 0 .. 4098 (fewer where a launch takes fewer): each failure
 * printed with what (the case) and its first error; returns how many. */
static int
shipped_try(Fix *f, const char *fn, const RowArgs *a, const char *kernel,
	const char *what)
{
	int nfail = 0, na;
	int64_t rows = 4099;
	Rows nm;

	if (rows_check(f->ctx, fn, a, FAKE_STREAM, &nm) == FG_OK &&
	    nm.chunk < rows)
		rows = nm.chunk;
	for (int cc = 90; cc <= 100; cc += 10) {
		if (try_binds(f, fn, a, kernel, cc, 0, rows, &na))
			continue;
		const char *m = fg_errmsg(f->ctx), *e = strstr(m, "error: ");
		e = e ? e : m;
		fprintf(stderr, "FAIL %s cc=%d: %.*s\n", what, cc,
			(int)strcspn(e, "\n"), e);
		if (e != m)         /* the -D list is on the first line */
			fprintf(stderr, "  %.*s\n", (int)strcspn(m, "\n"), m);
		nfail++;
	}
	return nfail;
}

#endif
