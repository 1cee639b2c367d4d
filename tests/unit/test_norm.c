/* test_norm.c: fg_rms_norm without a GPU (issue #26): every argument
 * check and its message, empty problems, the configuration chosen for
 * each width and alignment, rows too wide for one CTA, the arch, and the
 * binding, checked by fg_kernel_check against a stand-in schedule with
 * rmsnorm.fa's interface (tests/unit/norm/rmsnorm.fa), all through
 * rows.c as fg_rms_norm describes its arguments (norm_rms; rowtest.h has
 * the fixture test_rows.c shares).  With the argument "schedule" it runs
 * only the check that schedules/rmsnorm.fa itself compiles in the
 * configurations fg_rms_norm picks and takes the same binding
 * (unit.norm_schedule).  Every context uses a counting allocator and
 * must give back every byte. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "rowtest.h"

#define FN "fg_rms_norm"

/* x [rows, n] of dt at X0, everything else 1 GiB apart; weight given,
 * no residual; rstd wanted. */
static fg_rmsnorm_args
problem(fg_dtype dt, int64_t rows, int64_t n)
{
	return (fg_rmsnorm_args){
		.x = {.ptr = X0, .rank = 2, .dims = {rows, n}},
		.weight = {.ptr = X0 + 0x40000000},
		.out = {.ptr = X0 + 0x80000000},
		.rstd = X0 + 0xc0000000,
		.dtype = dt, .eps = 1e-6,
	};
}

static fg_rmsnorm_args
residual(fg_dtype dt, int64_t rows, int64_t n)
{
	fg_rmsnorm_args a = problem(dt, rows, n);

	a.residual.ptr = X0 + 0x100000000;
	a.residual_out.ptr = X0 + 0x140000000;
	return a;
}

static void
status(Fix *f, const fg_rmsnorm_args *a, fg_status want, const char *msg)
{
	expect_status(f, FN, fg_rms_norm(f->ctx, a, FAKE_STREAM), want, msg);
}

/* rows_check of a as fg_rms_norm describes it. */
static fg_status
check(Fix *f, const fg_rmsnorm_args *a, Rows *nm)
{
	RowArgs r;

	return rows_check(f->ctx, FN, norm_rms(a, &r), FAKE_STREAM, nm);
}

static void
invalid(Fix *f, const fg_rmsnorm_args *a, const char *msg)
{
	status(f, a, FG_ERR_INVALID, msg);
}

/* Valid arguments get as far as the driver, which is missing. */
static void
valid(Fix *f, const fg_rmsnorm_args *a)
{
	status(f, a, FG_ERR_NO_DRIVER, "");
}

static void
valid_problems_reach_the_driver(void **state)
{
	Fix *f = *state;
	fg_rmsnorm_args a;

	a = problem(FG_DTYPE_BF16, 4, 4096);
	valid(f, &a);
	a = residual(FG_DTYPE_F16, 7, 1000);
	a.weight.ptr = 0;
	valid(f, &a);
	a = problem(FG_DTYPE_F32, 1, 7);        /* rank 1: one row */
	a.x.rank = 1, a.x.dims[0] = 7, a.x.dims[1] = 0;
	valid(f, &a);
	/* [2, 3, 5, n]: the outer dims are rows; shapes given in full */
	a = residual(FG_DTYPE_BF16, 0, 0);
	a.x = (fg_tensor){.ptr = X0, .rank = 4, .dims = {2, 3, 5, 64},
		.strides = {960, 320, 64, 1}};
	a.out.rank = a.residual.rank = a.residual_out.rank = 4;
	memcpy(a.out.dims, a.x.dims, sizeof a.x.dims);
	memcpy(a.residual.dims, a.x.dims, sizeof a.x.dims);
	memcpy(a.residual_out.dims, a.x.dims, sizeof a.x.dims);
	a.weight.rank = 1, a.weight.dims[0] = 64, a.weight.strides[0] = 1;
	a.rstd = 0;                             /* not wanted */
	valid(f, &a);
	/* an extent of 1 may have any stride */
	a.x.dims[1] = 1, a.x.strides[1] = 12345;
	a.out.rank = a.residual.rank = a.residual_out.rank = 0;
	memset(a.out.dims, 0, sizeof a.out.dims);
	memset(a.residual.dims, 0, sizeof a.residual.dims);
	memset(a.residual_out.dims, 0, sizeof a.residual_out.dims);
	a.x.strides[0] = 320;
	valid(f, &a);
	a.eps = 0;
	valid(f, &a);
	assert_int_equal(fg_rms_norm(NULL, &a, FAKE_STREAM), FG_ERR_INVALID);
}

static void
null_args_and_the_legacy_stream_are_refused(void **state)
{
	Fix *f = *state;
	fg_rmsnorm_args a = problem(FG_DTYPE_BF16, 4, 4096);

	assert_int_equal(fg_rms_norm(f->ctx, NULL, FAKE_STREAM),
		FG_ERR_INVALID);
	assert_string_equal(fg_errmsg(f->ctx), FN ": args is NULL");
	assert_int_equal(fg_rms_norm(f->ctx, &a, NULL), FG_ERR_INVALID);
	assert_non_null(strstr(fg_errmsg(f->ctx), "legacy default stream "
		"(NULL)"));
	assert_int_equal(fg_rms_norm(f->ctx, &a, CU_STREAM_LEGACY),
		FG_ERR_INVALID);
	assert_non_null(strstr(fg_errmsg(f->ctx), "(CU_STREAM_LEGACY)"));
	assert_int_equal(fg_rms_norm(f->ctx, &a, CU_STREAM_PER_THREAD),
		FG_ERR_NO_DRIVER);
}

static void
dtype_and_eps_must_be_supported(void **state)
{
	Fix *f = *state;
	fg_rmsnorm_args a;

	a = problem(0, 4, 64);
	invalid(f, &a, "dtype is 0: use FG_DTYPE_BF16, FG_DTYPE_F16 or "
		"FG_DTYPE_F32");
	a = problem(7, 4, 64);
	invalid(f, &a, "dtype is 7");
	a = problem(FG_DTYPE_BF16, 4, 64), a.eps = -1e-6;
	invalid(f, &a, "eps is -1e-06: it must be finite, >= 0 and fit f32");
	a.eps = NAN;
	invalid(f, &a, "eps is nan");
	a.eps = INFINITY;
	invalid(f, &a, "eps is inf");
	a.eps = 1e300;
	invalid(f, &a, "eps is 1e+300");
}

static void
shapes_must_match_x(void **state)
{
	Fix *f = *state;
	fg_rmsnorm_args a;

	a = problem(FG_DTYPE_BF16, 4, 64), a.x.rank = 0;
	invalid(f, &a, "x.rank is 0: give x's rank, 1 to 5, and its dims");
	a.x.rank = 6;
	invalid(f, &a, "x.rank is 6");
	a = problem(FG_DTYPE_BF16, -4, 64);
	invalid(f, &a, "x.dims[0] is -4: extents must be >= 0");
	a = problem(FG_DTYPE_BF16, 4, 64);
	a.x.rank = 3, a.x.dims[0] = a.x.dims[1] = (int64_t)1 << 40;
	a.x.dims[2] = 2;
	invalid(f, &a, "x: the product of its outer dims (its rows) "
		"overflows 64 bits");
	a = problem(FG_DTYPE_BF16, (int64_t)1 << 40, (int64_t)1 << 22);
	invalid(f, &a, "x: its 1099511627776 rows of 4194304 elements "
		"overflow 64-bit addressing");
	a = problem(FG_DTYPE_BF16, 4, 64);
	a.out.rank = 2, a.out.dims[0] = 4, a.out.dims[1] = 65;
	invalid(f, &a, "out.dims[1] is 65; it must be 64 (x's shape)");
	a.out.rank = 1, a.out.dims[0] = 256, a.out.dims[1] = 0;
	invalid(f, &a, "out.rank is 1; it must be 2 (x's shape)");
	a = problem(FG_DTYPE_BF16, 4, 64);
	a.out.dims[0] = 4;
	invalid(f, &a, "out.rank is 0 but its dims are not all 0: give its "
		"rank and dims, or neither (for x's shape)");
	a = problem(FG_DTYPE_BF16, 4, 64);
	a.weight.rank = 1, a.weight.dims[0] = 4;
	invalid(f, &a, "weight.dims[0] is 4; it must be 64 (weight is [n], n "
		"x's last dim)");
	a.weight.rank = 2, a.weight.dims[0] = 1, a.weight.dims[1] = 64;
	invalid(f, &a, "weight.rank is 2; it must be 1");
	a = residual(FG_DTYPE_F16, 4, 64);
	a.residual.rank = 2, a.residual.dims[0] = 3, a.residual.dims[1] = 64;
	invalid(f, &a, "residual.dims[0] is 3; it must be 4 (x's shape)");
	a = residual(FG_DTYPE_F16, 4, 64);
	a.residual_out.rank = 3;
	a.residual_out.dims[0] = 4, a.residual_out.dims[1] = 64;
	a.residual_out.dims[2] = 1;
	invalid(f, &a, "residual_out.rank is 3; it must be 2");
}

static void
residual_and_residual_out_come_together(void **state)
{
	Fix *f = *state;
	fg_rmsnorm_args a;

	a = residual(FG_DTYPE_BF16, 4, 64), a.residual_out.ptr = 0;
	invalid(f, &a, "residual is given but residual_out is NULL: with a "
		"residual the kernel writes x + residual to residual_out");
	a = residual(FG_DTYPE_BF16, 4, 64), a.residual.ptr = 0;
	invalid(f, &a, "residual_out is given but residual is NULL");
}

static void
pointers_must_be_set_aligned_and_dense(void **state)
{
	Fix *f = *state;
	fg_rmsnorm_args a;

	a = problem(FG_DTYPE_BF16, 4, 64), a.x.ptr = 0;
	invalid(f, &a, "x.ptr is NULL");
	a = problem(FG_DTYPE_BF16, 4, 64), a.out.ptr = 0;
	invalid(f, &a, "out.ptr is NULL");
	a = problem(FG_DTYPE_BF16, 4, 64), a.x.ptr = X0 + 1;
	invalid(f, &a, "x.ptr = 0x7f0000000001 is not aligned to its 2-byte "
		"elements");
	a = problem(FG_DTYPE_F32, 4, 64), a.weight.ptr += 2;
	invalid(f, &a, "weight.ptr = 0x7f0040000002 is not aligned to its "
		"4-byte elements");
	a = residual(FG_DTYPE_F32, 4, 64), a.residual_out.ptr += 6;
	invalid(f, &a, "residual_out.ptr = 0x7f0140000006 is not aligned");
	a = problem(FG_DTYPE_F32, 4, 64), a.rstd += 2;
	invalid(f, &a, "rstd = 0x7f00c0000002 is not aligned to its f32 "
		"elements");
	a = problem(FG_DTYPE_BF16, 4, 64), a.out.ptr = UINT64_MAX - 127;
	invalid(f, &a, "out: 0xffffffffffffff80 plus its 512 bytes overflows "
		"64-bit addressing");
	/* a padded row, a transposed tensor, a strided weight */
	a = problem(FG_DTYPE_BF16, 4, 64);
	a.x.strides[0] = 72, a.x.strides[1] = 1;
	invalid(f, &a, "x.strides[0] is 72, but the kernel addresses x as "
		"dense rows: it must be 64 (or pass all strides 0)");
	a = problem(FG_DTYPE_BF16, 4, 64);
	a.out.strides[0] = 1, a.out.strides[1] = 4;
	invalid(f, &a, "out.strides[1] is 4, but the kernel addresses out as "
		"dense rows: it must be 1");
	a = problem(FG_DTYPE_BF16, 4, 64), a.weight.strides[0] = 2;
	invalid(f, &a, "weight.strides[0] is 2");
	a = problem(FG_DTYPE_BF16, 4, 64);
	a.x.strides[1] = 1;     /* some given: the others must be too */
	invalid(f, &a, "x.strides[0] is 0");
}

static void
outputs_must_not_overlap(void **state)
{
	Fix *f = *state;
	fg_rmsnorm_args a;

	a = problem(FG_DTYPE_BF16, 4, 64), a.out.ptr = a.x.ptr;
	invalid(f, &a, "x and out overlap: outputs must not overlap the "
		"inputs or each other (no in-place normalization)");
	a = problem(FG_DTYPE_BF16, 4, 64), a.out.ptr = a.x.ptr + 510;
	invalid(f, &a, "x and out overlap");
	a.out.ptr = a.x.ptr + 512;              /* just past x */
	valid(f, &a);
	a = problem(FG_DTYPE_BF16, 4, 64), a.rstd = a.weight.ptr + 64;
	invalid(f, &a, "weight and rstd overlap");
	a = residual(FG_DTYPE_F16, 4, 64);
	a.residual_out.ptr = a.out.ptr + 256;
	invalid(f, &a, "out and residual_out overlap");
	a = residual(FG_DTYPE_F16, 4, 64);
	a.residual_out.ptr = a.residual.ptr;
	invalid(f, &a, "residual and residual_out overlap");
	/* inputs may share memory: the same tensor as x and residual */
	a = residual(FG_DTYPE_F16, 4, 64);
	a.residual.ptr = a.x.ptr;
	a.weight.ptr = a.x.ptr;
	valid(f, &a);
}

/* Nothing to do succeeds at once, without the driver, and needs no
 * addresses. */
static void
empty_problems_launch_nothing(void **state)
{
	Fix *f = *state;
	fg_rmsnorm_args a;

	a = problem(FG_DTYPE_BF16, 0, 4096);
	a.x.ptr = a.out.ptr = a.weight.ptr = a.rstd = 0;
	status(f, &a, FG_OK, "");
	assert_string_equal(fg_errmsg(f->ctx), "");
	a = residual(FG_DTYPE_F32, 1000, 0);
	a.x.ptr = a.residual_out.ptr = 0;
	status(f, &a, FG_OK, "");
	a = problem(FG_DTYPE_BF16, 0, 1 << 30);    /* no width limit either */
	status(f, &a, FG_OK, "");
	/* the shapes are still checked */
	a = problem(FG_DTYPE_BF16, 0, 64);
	a.weight.rank = 1, a.weight.dims[0] = 63;
	invalid(f, &a, "weight.dims[0] is 63");
	a = problem(FG_DTYPE_BF16, 0, 64), a.eps = -1;
	invalid(f, &a, "eps is -1");
}

/* The heuristic of docs/API.md ("Row kernels"), row by row. */
static void
the_configuration_follows_the_width_and_alignment(void **state)
{
	static const struct {
		fg_dtype dt;
		int64_t n;
		uint64_t xoff, woff;  /* byte offsets of x and weight */
		const char *want;
	} t[] = {
		{FG_DTYPE_BF16, 4096, 0, 0, "N=4096 VEC=8 TPR=128 WARPS=8"},
		{FG_DTYPE_BF16, 1, 0, 0, "N=8 VEC=1 TPR=4 WARPS=8"},
		{FG_DTYPE_BF16, 2, 0, 0, "N=8 VEC=2 TPR=4 WARPS=8"},
		{FG_DTYPE_BF16, 7, 0, 0, "N=8 VEC=1 TPR=4 WARPS=8"},
		{FG_DTYPE_BF16, 9, 0, 0, "N=16 VEC=1 TPR=4 WARPS=8"},
		{FG_DTYPE_F32, 9, 0, 0, "N=12 VEC=1 TPR=4 WARPS=8"},
		{FG_DTYPE_BF16, 64, 0, 0, "N=64 VEC=8 TPR=4 WARPS=8"},
		{FG_DTYPE_BF16, 1000, 0, 0, "N=1024 VEC=8 TPR=32 WARPS=8"},
		{FG_DTYPE_BF16, 1024, 0, 0, "N=1024 VEC=8 TPR=32 WARPS=8"},
		{FG_DTYPE_BF16, 5120, 0, 0, "N=6144 VEC=8 TPR=256 WARPS=8"},
		{FG_DTYPE_BF16, 8192, 0, 0, "N=8192 VEC=8 TPR=256 WARPS=8"},
		{FG_DTYPE_BF16, 32768, 0, 0, "N=32768 VEC=8 TPR=1024 WARPS=32"},
		{FG_DTYPE_F16, 4098, 0, 0, "N=6144 VEC=2 TPR=1024 WARPS=32"},
		{FG_DTYPE_F16, 4100, 0, 0, "N=6144 VEC=4 TPR=512 WARPS=32"},
		{FG_DTYPE_F32, 4096, 0, 0, "N=4096 VEC=4 TPR=256 WARPS=8"},
		{FG_DTYPE_F32, 5120, 0, 0, "N=6144 VEC=4 TPR=512 WARPS=32"},
		{FG_DTYPE_F32, 16384, 0, 0, "N=16384 VEC=4 TPR=1024 WARPS=32"},
		{FG_DTYPE_F32, 7, 0, 0, "N=8 VEC=1 TPR=4 WARPS=8"},
		/* an address that is not 16-byte aligned narrows VEC */
		{FG_DTYPE_BF16, 4096, 2, 0, "N=4096 VEC=1 TPR=1024 WARPS=32"},
		{FG_DTYPE_BF16, 4096, 0, 4, "N=4096 VEC=2 TPR=512 WARPS=32"},
		{FG_DTYPE_BF16, 4096, 8, 0, "N=4096 VEC=4 TPR=256 WARPS=8"},
		{FG_DTYPE_F32, 4096, 4, 0, "N=4096 VEC=1 TPR=1024 WARPS=32"},
	};
	Fix *f = *state;
	char got[64];
	Rows nm;

	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		fg_rmsnorm_args a = problem(t[i].dt, 3, t[i].n);
		a.x.ptr += t[i].xoff;
		a.weight.ptr += t[i].woff;
		if (check(f, &a, &nm) != FG_OK)
			fail_msg("row %zu: %s", i, fg_errmsg(f->ctx));
		if (strcmp(cfg_str(&nm.cfg, got, sizeof got), t[i].want))
			fail_msg("row %zu (n %lld): want %s, got %s", i,
				(long long)t[i].n, t[i].want, got);
		assert_int_equal(nm.rows, 3);
		assert_int_equal(nm.n, t[i].n);
		assert_int_equal(nm.cfg.dt, t[i].dt);
		assert_int_equal(nm.cfg.kind, ROW_RMS);
		assert_int_equal(nm.cfg.flags & (RF_WEIGHT | RF_RESID |
			RF_BIAS | RF_BWD), RF_WEIGHT);
	}
	/* a launch's element indices fit 32 bits */
	fg_rmsnorm_args a = problem(FG_DTYPE_BF16, 5000, 32768);
	assert_int_equal(check(f, &a, &nm), FG_OK);
	assert_int_equal(nm.chunk, INT32_MAX / 32768 - 1);
	assert_false(nm.cfg.flags & RF_WHOLD);
	a = problem(FG_DTYPE_BF16, 5000, 8192);
	assert_int_equal(check(f, &a, &nm), FG_OK);
	assert_true(nm.cfg.flags & RF_WHOLD);
	a = residual(FG_DTYPE_F16, 5, 7);
	a.weight.ptr = 0;
	assert_int_equal(check(f, &a, &nm), FG_OK);
	assert_int_equal(nm.cfg.flags, RF_RESID | RF_WHOLD);
	assert_int_equal(nm.chunk, INT32_MAX / 8 - 64);
}

static void
rows_too_wide_take_a_cluster(void **state)
{
	Fix *f = *state;
	fg_rmsnorm_args a;
	Rows nm;

	/* past one CTA's 32768 16-bit elements (16384 f32), the smallest
	 * cluster of 512-thread CTAs holding 64 elements a thread */
	a = problem(FG_DTYPE_BF16, 4, 32776);
	assert_int_equal(check(f, &a, &nm), FG_OK);
	assert_int_equal(nm.cfg.cl, 2);
	assert_int_equal(nm.cfg.tpr, 512);
	assert_int_equal(nm.cfg.warps, 16);
	assert_int_equal(nm.cfg.vec, 8);
	assert_int_equal(nm.cfg.n, 16384 + 4096);  /* 16388 up to 4096s */
	assert_int_equal(nm.cfg.flags, RF_WEIGHT);  /* the weight reread */
	a = problem(FG_DTYPE_F32, 4, 16388);
	assert_int_equal(check(f, &a, &nm), FG_OK);
	assert_int_equal(nm.cfg.cl, 2);
	a = problem(FG_DTYPE_BF16, 3, 262144);
	assert_int_equal(check(f, &a, &nm), FG_OK);
	assert_int_equal(nm.cfg.cl, 8);
	assert_int_equal(nm.cfg.n, 32768);
	a = problem(FG_DTYPE_BF16, 3, 131073);
	assert_int_equal(check(f, &a, &nm), FG_OK);
	assert_int_equal(nm.cfg.cl, 8);
	assert_int_equal(nm.cfg.vec, 1);
	valid(f, &a);
	a = problem(FG_DTYPE_BF16, 3, 262145);
	status(f, &a, FG_ERR_UNSUPPORTED, FN ": rows of 262145 elements are "
		"wider than a cluster of 8 CTAs takes: 512 threads a CTA "
		"holding 64 elements of a row each, 262144 elements");
	a = problem(FG_DTYPE_F32, 4, 16384);
	valid(f, &a);
	/* odd widths take 1-element accesses */
	a = problem(FG_DTYPE_BF16, 4, 32767);
	valid(f, &a);
	a = problem(FG_DTYPE_BF16, 4, 8191);
	valid(f, &a);
	/* an argument error comes before the width */
	a = problem(FG_DTYPE_BF16, 4, 1 << 20), a.out.ptr = 0;
	invalid(f, &a, "out.ptr is NULL");
}

static void
only_sm90_and_sm100_have_a_schedule(void **state)
{
	Fix *f = *state;
	fg_rmsnorm_args a = problem(FG_DTYPE_BF16, 4, 64);
	fg_kernel_info info;
	fg_kernel *k, *k100;
	Rows nm;

	assert_int_equal(check(f, &a, &nm), FG_OK);
	assert_int_equal(rows_kernel(f->ctx, FN, 89, &nm.cfg, &k),
		FG_ERR_UNSUPPORTED);
	assert_string_equal(fg_errmsg(f->ctx), FN ": device 0 is sm_89; "
		"fagen's RMSNorm (rmsnorm.fa) runs on sm_90a (H100, H200) and "
		"sm_100a (B200) only");
	assert_int_equal(rows_kernel(f->ctx, FN, 103, &nm.cfg, &k),
		FG_ERR_UNSUPPORTED);
	/* one configuration, a kernel per arch */
	assert_int_equal(rows_kernel(f->ctx, FN, 90, &nm.cfg, &k), FG_OK);
	assert_int_equal(rows_kernel(f->ctx, FN, 100, &nm.cfg, &k100), FG_OK);
	assert_ptr_not_equal(k, k100);
	fg_kernel_info_get(k, &info);
	assert_string_equal(info.target, "sm_90a");
	fg_kernel_info_get(k100, &info);
	assert_string_equal(info.target, "sm_100a");
}

/* a binds on sm_90a, with its 8 arguments, or 10 with a residual. */
static fg_kernel *
rms_binds(Fix *f, const fg_rmsnorm_args *a, int64_t row0, int64_t m)
{
	RowArgs r;
	int na;
	fg_kernel *k = binds(f, FN, norm_rms(a, &r), "rmsnorm", row0, m, &na);

	assert_int_equal(na, a->residual.ptr ? 10 : 8);
	return k;
}

static void
the_binding_matches_the_schedules_interface(void **state)
{
	Fix *f = *state;
	fg_arg args[ROW_NARGS];
	fg_rmsnorm_args a;
	fg_kernel *k1, *k2;
	RowArgs r;
	Rows nm;

	a = problem(FG_DTYPE_BF16, 300, 4096);
	k1 = rms_binds(f, &a, 0, 300);
	a = residual(FG_DTYPE_F16, 7, 1000);
	rms_binds(f, &a, 0, 7);
	a.weight.ptr = 0;
	rms_binds(f, &a, 0, 7);
	a = problem(FG_DTYPE_F32, 4099, 7);
	a.rstd = 0;
	rms_binds(f, &a, 0, 4099);
	/* a configuration is compiled once; another is another kernel */
	a = problem(FG_DTYPE_BF16, 5, 4096);
	assert_ptr_equal(rms_binds(f, &a, 0, 5), k1);
	a.x.ptr += 2;
	k2 = rms_binds(f, &a, 0, 5);
	assert_ptr_not_equal(k2, k1);
	/* the values: a later chunk's rows, W standing in for no weight */
	a = residual(FG_DTYPE_BF16, 100, 64);
	a.weight.ptr = 0;
	assert_int_equal(check(f, &a, &nm), FG_OK);
	int na = rows_bind(norm_rms(&a, &r), &nm, LAUNCH(40, 60), args);
	assert_int_equal(arg(args, na, "M")->i, 60);
	assert_int_equal(arg(args, na, "NC")->i, 64);
	assert_true(arg(args, na, "inv_n")->f == 1.0 / 64);
	assert_true(arg(args, na, "eps")->f == 1e-6);
	assert_int_equal(arg(args, na, "X")->t.ptr, X0 + 40 * 64 * 2);
	assert_int_equal(arg(args, na, "W")->t.ptr, X0 + 40 * 64 * 2);
	assert_int_equal(arg(args, na, "Y")->t.ptr, a.out.ptr + 40 * 128);
	assert_int_equal(arg(args, na, "R")->t.ptr, a.residual.ptr + 40 * 128);
	assert_int_equal(arg(args, na, "XO")->t.ptr, a.residual_out.ptr +
		40 * 128);
	assert_int_equal(arg(args, na, "RSTD")->t.ptr, a.rstd + 40 * 4);
	a.residual.ptr = a.residual_out.ptr = 0;
	a.weight.ptr = X0 + 0x40000000;
	na = rows_bind(norm_rms(&a, &r), &nm, LAUNCH(0, 100), args);
	assert_int_equal(na, 8);
	assert_int_equal(arg(args, na, "W")->t.ptr, X0 + 0x40000000);
	assert_null(arg(args, na, "R"));
	/* no rstd wanted: the kernel writes scratch */
	a.rstd = 0;
	na = rows_bind(norm_rms(&a, &r), &nm, LAUNCH(40, 60), args);
	assert_int_equal(arg(args, na, "RSTD")->t.ptr, SCRATCH + 40 * 4);
}

/* One configuration of schedules/rmsnorm.fa on sm_90a and sm_100a: v 0
 * with a weight, 1 with a weight and a residual, 2 with neither; x is
 * misaligned (VEC 1) where asked.  Prints each failure's first error;
 * returns how many. */
static int
shipped_case(Fix *f, fg_dtype dt, int64_t n, int v, bool misaligned)
{
	fg_rmsnorm_args a = v == 1 ? residual(dt, 4099, n) :
		problem(dt, 4099, n);
	char what[96];
	RowArgs r;

	if (v == 2)
		a.weight.ptr = 0;
	if (misaligned)
		a.x.ptr += dt == FG_DTYPE_F32 ? 4 : 2;  /* one element */
	snprintf(what, sizeof what, "%s n=%lld%s%s%s", dt_str(dt),
		(long long)n, v == 2 ? "" : " weight", v == 1 ? " residual" :
		"", misaligned ? " VEC 1" : "");
	return shipped_try(f, FN, norm_rms(&a, &r), "rmsnorm", what);
}

/* schedules/rmsnorm.fa itself: it compiles in the configurations the
 * GPU tests and the benchmark use, with and without a weight and a
 * residual, and takes the same binding; every failure is listed. */
static void
the_shipped_schedule_compiles_for_every_configuration(void **state)
{
	static const int64_t ns[] = {1, 2, 7, 64, 1000, 1024, 4096, 5120,
		8191, 8192, 16384, 32767, 32768};
	static const fg_dtype dts[] = {FG_DTYPE_BF16, FG_DTYPE_F16,
		FG_DTYPE_F32};
	Fix *f = *state;
	int nfail = 0, nrun = 0;

	for (size_t d = 0; d < 3; d++) {
		for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
			if (dts[d] == FG_DTYPE_F32 && ns[i] > 16384)
				continue;
			for (int v = 0; v < 3; v++, nrun += 2)
				nfail += shipped_case(f, dts[d], ns[i], v,
					false);
		}
		nfail += shipped_case(f, dts[d], 4096, 1, true);
		nrun += 2;
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
		T(dtype_and_eps_must_be_supported),
		T(shapes_must_match_x),
		T(residual_and_residual_out_come_together),
		T(pointers_must_be_set_aligned_and_dense),
		T(outputs_must_not_overlap),
		T(empty_problems_launch_nothing),
		T(the_configuration_follows_the_width_and_alignment),
		T(rows_too_wide_take_a_cluster),
		T(only_sm90_and_sm100_have_a_schedule),
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
