/* test_norm_bwd.c: fg_rms_norm_backward and
 * fg_rms_norm_backward_partials without a GPU (issue #26), on rows.c's
 * machinery that test_norm.c checks through fg_rms_norm: every argument
 * check and its message (dw_partial and dw_partial_rows included), empty
 * problems, the configuration of a row a CTA for each width and
 * alignment, rows too wide, the arch, the grid rule that counts the
 * partial rows, and the binding, checked by fg_kernel_check against a
 * stand-in with rmsnorm_bwd.fa's interface
 * (tests/unit/norm/rmsnorm_bwd.fa).  With the argument "schedule" it
 * runs only the check that schedules/rmsnorm_bwd.fa itself compiles on
 * sm_90a and sm_100a in the configurations the call picks for the
 * widths, dtypes and alignments the GPU tests use, and takes the same
 * binding (unit.norm_bwd_schedule).  Every context uses a counting
 * allocator and must give back every byte. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "rowtest.h"

#define FN "fg_rms_norm_backward"
#define PN "fg_rms_norm_backward_partials"

/* The backward of x [rows, n] of dt at X0 with a weight, dy, rstd, dx
 * and 264 rows of partials, every tensor 1 GiB apart. */
static fg_rmsnorm_bwd_args
problem(fg_dtype dt, int64_t rows, int64_t n)
{
	return (fg_rmsnorm_bwd_args){
		.x = {.ptr = X0, .rank = 2, .dims = {rows, n}},
		.weight = {.ptr = X0 + 0x40000000},
		.dy = {.ptr = X0 + 0x80000000},
		.rstd = X0 + 0xc0000000,
		.dx = {.ptr = X0 + 0x100000000},
		.dw_partial = X0 + 0x140000000,
		.dw_partial_rows = CTAS,
		.dtype = dt,
	};
}

/* Without a weight: no dW, so no partials. */
static fg_rmsnorm_bwd_args
plain(fg_dtype dt, int64_t rows, int64_t n)
{
	fg_rmsnorm_bwd_args a = problem(dt, rows, n);

	a.weight.ptr = 0;
	a.dw_partial = 0;
	a.dw_partial_rows = 0;
	return a;
}

static void
status(Fix *f, const fg_rmsnorm_bwd_args *a, fg_status want,
	const char *msg)
{
	expect_status(f, FN, fg_rms_norm_backward(f->ctx, a, FAKE_STREAM),
		want, msg);
}

static fg_status
check(Fix *f, const fg_rmsnorm_bwd_args *a, Rows *nm)
{
	RowArgs r;

	return rows_check(f->ctx, FN, norm_rms_bwd(a, &r), FAKE_STREAM, nm);
}

static void
invalid(Fix *f, const fg_rmsnorm_bwd_args *a, const char *msg)
{
	status(f, a, FG_ERR_INVALID, msg);
}

/* Valid arguments get as far as the driver, which is missing. */
static void
valid(Fix *f, const fg_rmsnorm_bwd_args *a)
{
	status(f, a, FG_ERR_NO_DRIVER, "");
}

static void
valid_problems_reach_the_driver(void **state)
{
	Fix *f = *state;
	fg_rmsnorm_bwd_args a;

	a = problem(FG_DTYPE_BF16, 4, 4096);
	valid(f, &a);
	a = plain(FG_DTYPE_F16, 7, 1000);
	valid(f, &a);
	a = problem(FG_DTYPE_F32, 1, 7);        /* rank 1: one row */
	a.x.rank = 1, a.x.dims[0] = 7, a.x.dims[1] = 0;
	valid(f, &a);
	/* dW not wanted, the weight given: the partials go to scratch */
	a = problem(FG_DTYPE_BF16, 300, 4096);
	a.dw_partial = 0, a.dw_partial_rows = 0;
	valid(f, &a);
	/* more rows of partials than the CTAs: the rest are zeroed */
	a = problem(FG_DTYPE_BF16, 300, 4096);
	a.dw_partial_rows = 100000;
	valid(f, &a);
	/* [2, 3, 5, n]: the outer dims are rows; shapes given in full */
	a = problem(FG_DTYPE_BF16, 0, 0);
	a.x = (fg_tensor){.ptr = X0, .rank = 4, .dims = {2, 3, 5, 64},
		.strides = {960, 320, 64, 1}};
	a.dy.rank = a.dx.rank = 4;
	memcpy(a.dy.dims, a.x.dims, sizeof a.x.dims);
	memcpy(a.dx.dims, a.x.dims, sizeof a.x.dims);
	a.weight.rank = 1, a.weight.dims[0] = 64, a.weight.strides[0] = 1;
	valid(f, &a);
	/* inputs may share memory: x as dy, rstd inside x */
	a = problem(FG_DTYPE_F16, 4, 64);
	a.dy.ptr = a.x.ptr;
	a.rstd = a.x.ptr + 64;
	valid(f, &a);
	assert_int_equal(fg_rms_norm_backward(NULL, &a, FAKE_STREAM),
		FG_ERR_INVALID);
}

static void
null_args_and_the_legacy_stream_are_refused(void **state)
{
	Fix *f = *state;
	fg_rmsnorm_bwd_args a = problem(FG_DTYPE_BF16, 4, 4096);

	assert_int_equal(fg_rms_norm_backward(f->ctx, NULL, FAKE_STREAM),
		FG_ERR_INVALID);
	assert_string_equal(fg_errmsg(f->ctx), FN ": args is NULL");
	assert_int_equal(fg_rms_norm_backward(f->ctx, &a, NULL),
		FG_ERR_INVALID);
	assert_non_null(strstr(fg_errmsg(f->ctx), "legacy default stream "
		"(NULL)"));
	assert_int_equal(fg_rms_norm_backward(f->ctx, &a, CU_STREAM_LEGACY),
		FG_ERR_INVALID);
	assert_int_equal(fg_rms_norm_backward(f->ctx, &a,
		CU_STREAM_PER_THREAD), FG_ERR_NO_DRIVER);
}

static void
dtype_and_shapes_must_match_x(void **state)
{
	Fix *f = *state;
	fg_rmsnorm_bwd_args a;

	a = problem(0, 4, 64);
	invalid(f, &a, "dtype is 0: use FG_DTYPE_BF16, FG_DTYPE_F16 or "
		"FG_DTYPE_F32");
	a = problem(FG_DTYPE_BF16, 4, 64), a.x.rank = 0;
	invalid(f, &a, "x.rank is 0: give x's rank, 1 to 5, and its dims");
	a = problem(FG_DTYPE_BF16, -4, 64);
	invalid(f, &a, "x.dims[0] is -4: extents must be >= 0");
	a = problem(FG_DTYPE_BF16, 4, 64);
	a.dy.rank = 2, a.dy.dims[0] = 4, a.dy.dims[1] = 65;
	invalid(f, &a, "dy.dims[1] is 65; it must be 64 (x's shape)");
	a = problem(FG_DTYPE_BF16, 4, 64);
	a.dx.rank = 1, a.dx.dims[0] = 256;
	invalid(f, &a, "dx.rank is 1; it must be 2 (x's shape)");
	a = problem(FG_DTYPE_BF16, 4, 64);
	a.weight.rank = 1, a.weight.dims[0] = 4;
	invalid(f, &a, "weight.dims[0] is 4; it must be 64 (weight is [n], n "
		"x's last dim)");
}

static void
pointers_must_be_set_aligned_and_dense(void **state)
{
	Fix *f = *state;
	fg_rmsnorm_bwd_args a;

	a = problem(FG_DTYPE_BF16, 4, 64), a.x.ptr = 0;
	invalid(f, &a, "x.ptr is NULL");
	a = problem(FG_DTYPE_BF16, 4, 64), a.dy.ptr = 0;
	invalid(f, &a, "dy.ptr is NULL");
	a = problem(FG_DTYPE_BF16, 4, 64), a.dx.ptr = 0;
	invalid(f, &a, "dx.ptr is NULL");
	/* the forward's rstd is an input, and required */
	a = problem(FG_DTYPE_BF16, 4, 64), a.rstd = 0;
	invalid(f, &a, FN ": rstd is NULL");
	a = problem(FG_DTYPE_BF16, 4, 64), a.rstd += 2;
	invalid(f, &a, "rstd = 0x7f00c0000002 is not aligned to its f32 "
		"elements");
	a = problem(FG_DTYPE_F32, 4, 64), a.dy.ptr += 2;
	invalid(f, &a, "dy.ptr = 0x7f0080000002 is not aligned to its 4-byte "
		"elements");
	a = problem(FG_DTYPE_BF16, 4, 64);
	a.dx.strides[0] = 72, a.dx.strides[1] = 1;
	invalid(f, &a, "dx.strides[0] is 72, but the kernel addresses dx as "
		"dense rows: it must be 64 (or pass all strides 0)");
}

static void
dw_partial_comes_with_a_weight_and_rows(void **state)
{
	Fix *f = *state;
	fg_rmsnorm_bwd_args a;

	a = problem(FG_DTYPE_BF16, 4, 64), a.weight.ptr = 0;
	invalid(f, &a, FN ": dw_partial is given but weight is NULL: the "
		"kernel writes dw_partial only with a weight");
	a = problem(FG_DTYPE_BF16, 4, 64), a.dw_partial_rows = 0;
	invalid(f, &a, FN ": dw_partial_rows is 0: dw_partial has a row per "
		"CTA, at least 1");
	a.dw_partial_rows = -3;
	invalid(f, &a, "dw_partial_rows is -3");
	a = problem(FG_DTYPE_BF16, 4, 64), a.dw_partial += 2;
	invalid(f, &a, "dw_partial = 0x7f0140000002 is not aligned to its "
		"f32 elements");
	a = problem(FG_DTYPE_BF16, 4, 64), a.dw_partial_rows = INT64_MAX / 8;
	invalid(f, &a, "dw_partial: 0x7f0140000000 plus its "
		"1152921504606846975 rows of 64 f32 elements overflows 64-bit "
		"addressing");
	a = problem(FG_DTYPE_BF16, 4, 64), a.dw_partial = UINT64_MAX - 4095;
	invalid(f, &a, "overflows 64-bit addressing");
	/* neither wanted nor given: the rows are not looked at */
	a = plain(FG_DTYPE_BF16, 4, 64), a.dw_partial_rows = -1;
	valid(f, &a);
}

static void
outputs_must_not_overlap(void **state)
{
	Fix *f = *state;
	fg_rmsnorm_bwd_args a;

	a = problem(FG_DTYPE_BF16, 4, 64), a.dx.ptr = a.dy.ptr;
	invalid(f, &a, FN ": dy and dx overlap: outputs must not overlap the "
		"inputs or each other (no in-place backward)");
	a = problem(FG_DTYPE_BF16, 4, 64), a.dx.ptr = a.x.ptr + 510;
	invalid(f, &a, "x and dx overlap");
	a.dx.ptr = a.x.ptr + 512;               /* just past x */
	valid(f, &a);
	a = problem(FG_DTYPE_BF16, 4, 64), a.rstd = a.dx.ptr + 8;
	invalid(f, &a, "dx and rstd overlap");
	/* 264 rows of 64 f32: 67584 bytes */
	a = problem(FG_DTYPE_BF16, 4, 64), a.dw_partial = a.x.ptr + 256;
	invalid(f, &a, "x and dw_partial overlap");
	a = problem(FG_DTYPE_BF16, 4, 64);
	a.dx.ptr = a.dw_partial + 67584 - 16;
	invalid(f, &a, "dx and dw_partial overlap");
	a.dx.ptr = a.dw_partial + 67584;
	valid(f, &a);
	a = problem(FG_DTYPE_BF16, 4, 64), a.rstd = a.dw_partial + 4096;
	invalid(f, &a, "rstd and dw_partial overlap");
}

/* Nothing to do succeeds at once, without the driver, and needs no
 * addresses; it has no partial rows either. */
static void
empty_problems_launch_nothing(void **state)
{
	Fix *f = *state;
	fg_rmsnorm_bwd_args a;
	int64_t np = -1;

	a = problem(FG_DTYPE_BF16, 0, 4096);
	a.x.ptr = a.dy.ptr = a.dx.ptr = a.rstd = 0;
	status(f, &a, FG_OK, "");
	assert_int_equal(fg_rms_norm_backward_partials(f->ctx, &a, &np),
		FG_OK);
	assert_int_equal(np, 0);
	a = plain(FG_DTYPE_F32, 1000, 0);
	status(f, &a, FG_OK, "");
	a = problem(FG_DTYPE_BF16, 0, 1 << 30);    /* no width limit either */
	status(f, &a, FG_OK, "");
	/* the shapes are still checked */
	a = problem(FG_DTYPE_BF16, 0, 64);
	a.weight.rank = 1, a.weight.dims[0] = 63;
	invalid(f, &a, "weight.dims[0] is 63");
}

/* fg_rms_norm_backward_partials checks the rest as the call does, needs
 * the driver, and does not look at the partials. */
static void
the_partials_count_needs_the_driver(void **state)
{
	Fix *f = *state;
	fg_rmsnorm_bwd_args a = problem(FG_DTYPE_BF16, 4, 4096);
	int64_t np = -1;

	assert_int_equal(fg_rms_norm_backward_partials(f->ctx, &a, NULL),
		FG_ERR_INVALID);
	assert_string_equal(fg_errmsg(f->ctx), PN ": rows is NULL");
	assert_int_equal(fg_rms_norm_backward_partials(f->ctx, NULL, &np),
		FG_ERR_INVALID);
	assert_string_equal(fg_errmsg(f->ctx), PN ": args is NULL");
	assert_int_equal(np, 0);
	assert_int_equal(fg_rms_norm_backward_partials(NULL, &a, &np),
		FG_ERR_INVALID);
	a.dy.ptr = 0;
	expect_status(f, PN, fg_rms_norm_backward_partials(f->ctx, &a, &np),
		FG_ERR_INVALID, PN ": dy.ptr is NULL");
	/* dw_partial and its rows are not looked at */
	a = problem(FG_DTYPE_BF16, 4, 4096);
	a.dw_partial = 3, a.dw_partial_rows = 0;
	expect_status(f, PN, fg_rms_norm_backward_partials(f->ctx, &a, &np),
		FG_ERR_NO_DRIVER, "");
	a = plain(FG_DTYPE_BF16, 4, 4096);
	expect_status(f, PN, fg_rms_norm_backward_partials(f->ctx, &a, &np),
		FG_ERR_NO_DRIVER, "");
	a = problem(FG_DTYPE_BF16, 4, 65537);
	expect_status(f, PN, fg_rms_norm_backward_partials(f->ctx, &a, &np),
		FG_ERR_UNSUPPORTED, "65536 elements");
}

/* One row a CTA: TPR = WARPS * 32, the smallest power of 2 from 128
 * with n <= TPR * VEC * 4; VEC as the forward's, the partials' address
 * counted too. */
static void
the_configuration_is_a_row_a_cta(void **state)
{
	static const struct {
		fg_dtype dt;
		int64_t n;
		uint64_t xoff, poff;  /* byte offsets of x and dw_partial */
		const char *want;
	} t[] = {
		{FG_DTYPE_BF16, 4096, 0, 0, "N=4096 VEC=8 TPR=128 WARPS=4"},
		{FG_DTYPE_BF16, 1, 0, 0, "N=256 VEC=1 TPR=128 WARPS=4"},
		{FG_DTYPE_BF16, 7, 0, 0, "N=256 VEC=1 TPR=128 WARPS=4"},
		{FG_DTYPE_BF16, 64, 0, 0, "N=1024 VEC=8 TPR=128 WARPS=4"},
		{FG_DTYPE_BF16, 1000, 0, 0, "N=1024 VEC=8 TPR=128 WARPS=4"},
		{FG_DTYPE_BF16, 4104, 0, 0, "N=6144 VEC=8 TPR=256 WARPS=8"},
		{FG_DTYPE_BF16, 5120, 0, 0, "N=6144 VEC=8 TPR=256 WARPS=8"},
		{FG_DTYPE_BF16, 8192, 0, 0, "N=8192 VEC=8 TPR=256 WARPS=8"},
		{FG_DTYPE_BF16, 8191, 0, 0, "N=8192 VEC=1 TPR=1024 WARPS=32"},
		{FG_DTYPE_F16, 4098, 0, 0, "N=6144 VEC=2 TPR=1024 WARPS=32"},
		{FG_DTYPE_F16, 4100, 0, 0, "N=6144 VEC=4 TPR=512 WARPS=16"},
		{FG_DTYPE_F32, 7, 0, 0, "N=128 VEC=1 TPR=128 WARPS=4"},
		{FG_DTYPE_F32, 4096, 0, 0, "N=4096 VEC=4 TPR=256 WARPS=8"},
		{FG_DTYPE_F32, 5120, 0, 0, "N=6144 VEC=4 TPR=512 WARPS=16"},
		{FG_DTYPE_F32, 8192, 0, 0, "N=8192 VEC=4 TPR=512 WARPS=16"},
		/* an address that is not 16-byte aligned narrows VEC */
		{FG_DTYPE_BF16, 4096, 2, 0, "N=4096 VEC=1 TPR=1024 WARPS=32"},
		{FG_DTYPE_BF16, 4096, 8, 0, "N=4096 VEC=4 TPR=256 WARPS=8"},
		/* the partials' VEC f32 stores: min(VEC * 4, 16) bytes */
		{FG_DTYPE_BF16, 4096, 0, 8, "N=4096 VEC=2 TPR=512 WARPS=16"},
		{FG_DTYPE_BF16, 4096, 0, 4, "N=4096 VEC=1 TPR=1024 WARPS=32"},
		{FG_DTYPE_F32, 4096, 0, 8, "N=4096 VEC=2 TPR=512 WARPS=16"},
	};
	Fix *f = *state;
	char got[64];
	Rows nm;

	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		fg_rmsnorm_bwd_args a = problem(t[i].dt, 3, t[i].n);
		a.x.ptr += t[i].xoff;
		a.dw_partial += t[i].poff;
		if (check(f, &a, &nm) != FG_OK)
			fail_msg("row %zu: %s", i, fg_errmsg(f->ctx));
		if (strcmp(cfg_str(&nm.cfg, got, sizeof got), t[i].want))
			fail_msg("row %zu (n %lld): want %s, got %s", i,
				(long long)t[i].n, t[i].want, got);
		assert_int_equal(nm.rows, 3);
		assert_int_equal(nm.n, t[i].n);
		assert_int_equal(nm.cfg.kind, ROW_RMS_BWD);
		assert_int_equal(nm.cfg.flags, RF_WEIGHT);
		assert_int_equal(nm.chunk, INT32_MAX / nm.cfg.n - 1);
	}
	/* without a weight; dW not wanted leaves VEC to the tensors */
	fg_rmsnorm_bwd_args a = plain(FG_DTYPE_F16, 5, 4096);
	assert_int_equal(check(f, &a, &nm), FG_OK);
	assert_int_equal(nm.cfg.flags, 0);
	a = problem(FG_DTYPE_BF16, 5, 4096);
	a.dw_partial = 0;
	assert_int_equal(check(f, &a, &nm), FG_OK);
	assert_int_equal(nm.cfg.vec, 8);
	assert_int_equal(nm.cfg.flags, RF_WEIGHT);
}

/* Past one CTA's 8192 elements, a cluster of 512-thread CTAs shares a
 * row (rmsnorm_bwd.fa -D CL), each thread holding 32 bytes of it (16
 * 16-bit elements, 8 f32): up to 8 CTAs, 65536 or 32768 elements. */
static void
rows_too_wide_take_a_cluster(void **state)
{
	Fix *f = *state;
	fg_rmsnorm_bwd_args a;

	a = problem(FG_DTYPE_BF16, 4, 8200);
	valid(f, &a);
	a = problem(FG_DTYPE_F32, 4, 8193);
	valid(f, &a);
	a = plain(FG_DTYPE_F16, 4, 65536);
	valid(f, &a);
	a = problem(FG_DTYPE_BF16, 4, 65537);
	status(f, &a, FG_ERR_UNSUPPORTED, FN ": rows of 65537 elements are "
		"wider than a cluster of 8 CTAs takes: 512 threads a CTA "
		"holding 16 elements of a row each, 65536 elements");
	a = problem(FG_DTYPE_F32, 4, 32769);
	status(f, &a, FG_ERR_UNSUPPORTED, "holding 8 elements of a row each, "
		"32768 elements");
	a = problem(FG_DTYPE_F32, 4, 8192);
	valid(f, &a);
	a = problem(FG_DTYPE_BF16, 4, 8191);
	valid(f, &a);
	/* an argument error comes before the width */
	a = problem(FG_DTYPE_BF16, 4, 1 << 20), a.dx.ptr = 0;
	invalid(f, &a, "dx.ptr is NULL");
}

static void
only_sm90_and_sm100_have_a_schedule(void **state)
{
	Fix *f = *state;
	fg_rmsnorm_bwd_args a = problem(FG_DTYPE_BF16, 4, 64);
	fg_kernel_info info;
	fg_kernel *k, *k100;
	Rows nm;

	assert_int_equal(check(f, &a, &nm), FG_OK);
	assert_int_equal(rows_kernel(f->ctx, FN, 89, &nm.cfg, &k),
		FG_ERR_UNSUPPORTED);
	assert_string_equal(fg_errmsg(f->ctx), FN ": device 0 is sm_89; "
		"fagen's RMSNorm backward (rmsnorm_bwd.fa) runs on sm_90a "
		"(H100, H200) and sm_100a (B200) only");
	assert_int_equal(rows_kernel(f->ctx, FN, 90, &nm.cfg, &k), FG_OK);
	assert_int_equal(rows_kernel(f->ctx, FN, 100, &nm.cfg, &k100), FG_OK);
	assert_ptr_not_equal(k, k100);
	fg_kernel_info_get(k, &info);
	assert_string_equal(info.target, "sm_90a");
	assert_string_equal(info.order, "persistent");
	assert_int_equal(info.threads, 128);
}

/* The partials have a row per CTA: launch_ctas, the grid's rule, gives
 * min(rows, #SMs x 2) for the schedule's per_sm=2, or the grid limit. */
static void
a_launch_has_a_partial_row_per_cta(void **state)
{
	Fix *f = *state;
	fg_rmsnorm_bwd_args a = problem(FG_DTYPE_BF16, 4, 4096);
	Driver d = {.nsm = 132};
	fg_kernel *k;
	Rows nm;

	assert_int_equal(check(f, &a, &nm), FG_OK);
	assert_int_equal(rows_kernel(f->ctx, FN, 90, &nm.cfg, &k), FG_OK);
	assert_int_equal(launch_ctas(k, &d, 1), 1);
	assert_int_equal(launch_ctas(k, &d, 7), 7);
	assert_int_equal(launch_ctas(k, &d, 264), 264);
	assert_int_equal(launch_ctas(k, &d, 4099), 264);
	d.nsm = 78;
	assert_int_equal(launch_ctas(k, &d, 4099), 156);
	assert_int_equal(fg_kernel_set_grid_limit(k, 10), FG_OK);
	assert_int_equal(launch_ctas(k, &d, 4099), 10);
	assert_int_equal(launch_ctas(k, &d, 3), 3);
	assert_int_equal(fg_kernel_set_grid_limit(k, 0), FG_OK);
	assert_int_equal(launch_ctas(k, &d, 4099), 156);
}

/* a binds on sm_90a with its 10 arguments. */
static fg_kernel *
bwd_binds(Fix *f, const fg_rmsnorm_bwd_args *a, int64_t row0, int64_t m)
{
	RowArgs r;
	int na;
	fg_kernel *k = binds(f, FN, norm_rms_bwd(a, &r), "rmsnorm_bwd", row0,
		m, &na);

	assert_int_equal(na, 10);
	return k;
}

static void
the_binding_matches_the_schedules_interface(void **state)
{
	Fix *f = *state;
	fg_arg args[ROW_NARGS];
	fg_rmsnorm_bwd_args a;
	fg_kernel *k1;
	RowArgs r;
	Rows nm;
	int na;

	a = problem(FG_DTYPE_BF16, 300, 4096);
	k1 = bwd_binds(f, &a, 0, 300);
	bwd_binds(f, &a, 100, 200);
	a = plain(FG_DTYPE_F16, 7, 1000);
	assert_ptr_not_equal(bwd_binds(f, &a, 0, 7), k1);
	a = problem(FG_DTYPE_F32, 4099, 7);
	bwd_binds(f, &a, 0, 4099);
	a = problem(FG_DTYPE_BF16, 5, 4096);
	assert_ptr_equal(bwd_binds(f, &a, 0, 5), k1);
	/* the values: a later launch's rows and partial rows */
	a = problem(FG_DTYPE_BF16, 100000, 64);
	assert_int_equal(check(f, &a, &nm), FG_OK);
	RowLaunch l = {.row0 = 40000, .m = 60000, .scratch = SCRATCH,
		.part0 = 264, .parts = 200};
	na = rows_bind(norm_rms_bwd(&a, &r), &nm, &l, args);
	assert_int_equal(na, 10);
	assert_int_equal(arg(args, na, "M")->i, 60000);
	assert_int_equal(arg(args, na, "NC")->i, 64);
	assert_true(arg(args, na, "inv_n")->f == 1.0 / 64);
	assert_null(arg(args, na, "eps"));
	assert_int_equal(arg(args, na, "P")->i, 200);
	assert_int_equal(arg(args, na, "X")->t.ptr, X0 + 40000 * 128);
	assert_int_equal(arg(args, na, "W")->t.ptr, a.weight.ptr);
	assert_int_equal(arg(args, na, "DY")->t.ptr, a.dy.ptr + 40000 * 128);
	assert_int_equal(arg(args, na, "DX")->t.ptr, a.dx.ptr + 40000 * 128);
	assert_int_equal(arg(args, na, "RSTD")->t.ptr, a.rstd + 40000 * 4);
	assert_int_equal(arg(args, na, "DWP")->t.ptr, a.dw_partial +
		264 * 64 * 4);
	/* dW not wanted: the partials at scratch */
	a.dw_partial = 0;
	na = rows_bind(norm_rms_bwd(&a, &r), &nm, &l, args);
	assert_int_equal(arg(args, na, "DWP")->t.ptr, SCRATCH + 264 * 64 * 4);
	assert_int_equal(arg(args, na, "P")->i, 200);
	/* no weight: W and DWP are declared but never touched, DWP a row at
	 * the forward's rstd (f32 aligned) */
	a = plain(FG_DTYPE_BF16, 100000, 64);
	a.x.ptr += 2;
	assert_int_equal(check(f, &a, &nm), FG_OK);
	na = rows_bind(norm_rms_bwd(&a, &r), &nm, &l, args);
	assert_int_equal(na, 10);
	assert_int_equal(arg(args, na, "W")->t.ptr, a.x.ptr + 40000 * 128);
	assert_int_equal(arg(args, na, "DWP")->t.ptr, a.rstd + 40000 * 4);
	assert_int_equal(arg(args, na, "P")->i, 1);
}

/* One configuration of schedules/rmsnorm_bwd.fa on sm_90a and sm_100a,
 * with a weight or without; x or dw_partial misaligned by off bytes
 * where asked.  Prints each failure's first error; returns how many. */
static int
shipped_case(Fix *f, fg_dtype dt, int64_t n, bool weight, uint64_t xoff,
	uint64_t poff)
{
	fg_rmsnorm_bwd_args a = weight ? problem(dt, 4099, n) :
		plain(dt, 4099, n);
	char what[96];
	RowArgs r;

	a.x.ptr += xoff;
	a.dw_partial += poff;
	snprintf(what, sizeof what, "%s n=%lld%s%s%s", dt_str(dt),
		(long long)n, weight ? " weight" : "", xoff ? " x off" : "",
		poff ? " dw_partial off" : "");
	return shipped_try(f, FN, norm_rms_bwd(&a, &r), "rmsnorm_bwd", what);
}

/* schedules/rmsnorm_bwd.fa itself: it compiles in the configurations the
 * GPU tests and the benchmark use, with and without a weight, at every
 * VEC, and takes the same binding; every failure is listed. */
static void
the_shipped_schedule_compiles_for_every_configuration(void **state)
{
	static const int64_t ns[] = {1, 2, 7, 64, 1000, 1024, 2048, 4096,
		5120, 6144, 8191, 8192, 8200, 16384, 20000, 32768, 65536};
	static const fg_dtype dts[] = {FG_DTYPE_BF16, FG_DTYPE_F16,
		FG_DTYPE_F32};
	Fix *f = *state;
	int nfail = 0, nrun = 0;

	for (size_t d = 0; d < 3; d++) {
		int esz = dts[d] == FG_DTYPE_F32 ? 4 : 2;
		for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
			for (int w = 0; w < 2 && ns[i] * esz <= 131072; w++,
			    nrun += 2)  /* f32 rows to 32768 */
				nfail += shipped_case(f, dts[d], ns[i], w, 0,
					0);
		/* VEC 1, 2 and 4 at the widest rows */
		for (uint64_t off = esz; off < 16; off *= 2, nrun += 4) {
			nfail += shipped_case(f, dts[d], 8192, true, off, 0);
			nfail += shipped_case(f, dts[d], 4104, true, off, 0);
			nfail += shipped_case(f, dts[d], 16392, true, off, 0);
		}
	}
	fprintf(stderr, "%d of %d configurations failed\n", nfail, nrun);
	assert_int_equal(nfail, 0);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		T(valid_problems_reach_the_driver),
		T(null_args_and_the_legacy_stream_are_refused),
		T(dtype_and_shapes_must_match_x),
		T(pointers_must_be_set_aligned_and_dense),
		T(dw_partial_comes_with_a_weight_and_rows),
		T(outputs_must_not_overlap),
		T(empty_problems_launch_nothing),
		T(the_partials_count_needs_the_driver),
		T(the_configuration_is_a_row_a_cta),
		T(rows_too_wide_take_a_cluster),
		T(only_sm90_and_sm100_have_a_schedule),
		T(a_launch_has_a_partial_row_per_cta),
		T(the_binding_matches_the_schedules_interface),
	};
	const struct CMUnitTest shipped[] = {
		cmocka_unit_test_setup_teardown(
			the_shipped_schedule_compiles_for_every_configuration,
			setup_shipped, teardown),
	};

	if (argc > 1 && !strcmp(argv[1], "schedule"))
		return cmocka_run_group_tests(shipped, NULL, NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
