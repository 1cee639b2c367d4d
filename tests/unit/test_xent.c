/* test_xent.c: fg_cross_entropy without a GPU (issue #26), on rows.c's
 * shared machinery: its argument checks and their messages (an int32
 * target of logits' outer shape, a required f32 loss, an optional lse),
 * empty problems, the configuration (fg_rms_norm's VEC, a row in one
 * warp at most, 16 warps, chunks of 4 accesses a thread, so rows of any
 * width up to the 32-bit indices' limit),
 * the arch, a kernel per -D list, and the bindings, checked by
 * fg_kernel_check against a stand-in with cross_entropy.fa's interface
 * (tests/unit/norm/cross_entropy.fa).  With the argument "schedule" it
 * runs only the check that schedules/cross_entropy.fa compiles, on
 * sm_90a and sm_100a, in the configurations fg_cross_entropy picks for
 * the widths and dtypes the GPU tests and the benchmark use, and takes
 * the same bindings (unit.xent_schedule).  Every context uses a counting
 * allocator and must give back every byte. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "rowtest.h"

#define FN "fg_cross_entropy"
/* each tensor 1 TiB apart: the widest problems here are 16 GiB */
#define TGT0 (X0 + 0x10000000000)
#define LOSS0 (X0 + 0x20000000000)
#define LSE0 (X0 + 0x30000000000)

/* logits [rows, n] of dt at X0, target [rows], loss and lse wanted. */
static fg_cross_entropy_args
problem(fg_dtype dt, int64_t rows, int64_t n)
{
	return (fg_cross_entropy_args){
		.logits = {.ptr = X0, .rank = 2, .dims = {rows, n}},
		.target = {.ptr = TGT0},
		.loss = LOSS0, .lse = LSE0, .dtype = dt,
	};
}

static void
status(Fix *f, const fg_cross_entropy_args *a, fg_status want,
	const char *msg)
{
	expect_status(f, FN, fg_cross_entropy(f->ctx, a, FAKE_STREAM), want,
		msg);
}

static void
invalid(Fix *f, const fg_cross_entropy_args *a, const char *msg)
{
	status(f, a, FG_ERR_INVALID, msg);
}

/* Valid arguments get as far as the driver, which is missing. */
static void
valid(Fix *f, const fg_cross_entropy_args *a)
{
	status(f, a, FG_ERR_NO_DRIVER, "");
}

static fg_status
check(Fix *f, const fg_cross_entropy_args *a, Rows *nm)
{
	RowArgs r;

	return rows_check(f->ctx, FN, norm_xent(a, &r), FAKE_STREAM, nm);
}

static void
valid_problems_reach_the_driver(void **state)
{
	Fix *f = *state;
	fg_cross_entropy_args a;

	a = problem(FG_DTYPE_BF16, 4096, 32000);
	valid(f, &a);
	a = problem(FG_DTYPE_F16, 7, 1000), a.lse = 0;  /* lse not wanted */
	valid(f, &a);
	/* rows of any width */
	a = problem(FG_DTYPE_BF16, 4, 1000000);
	valid(f, &a);
	a = problem(FG_DTYPE_F32, 3, 262144);
	valid(f, &a);
	/* [2, 3, n]: the target [2, 3], given in full */
	a = problem(FG_DTYPE_BF16, 0, 0);
	a.logits = (fg_tensor){.ptr = X0, .rank = 3, .dims = {2, 3, 50257},
		.strides = {3 * 50257, 50257, 1}};
	a.target = (fg_tensor){.ptr = TGT0, .rank = 2, .dims = {2, 3},
		.strides = {3, 1}};
	valid(f, &a);
	/* rank 1: one row, its target a scalar (rank 0) */
	a = problem(FG_DTYPE_F32, 0, 0);
	a.logits = (fg_tensor){.ptr = X0, .rank = 1, .dims = {7}};
	valid(f, &a);
	/* the inputs may share memory, and the target need not be 16-byte
	 * aligned */
	a = problem(FG_DTYPE_BF16, 4, 64), a.target.ptr = X0 + 4;
	valid(f, &a);
	assert_int_equal(fg_cross_entropy(NULL, &a, FAKE_STREAM),
		FG_ERR_INVALID);
}

static void
null_args_and_the_legacy_stream_are_refused(void **state)
{
	Fix *f = *state;
	fg_cross_entropy_args a = problem(FG_DTYPE_BF16, 4, 64);

	assert_int_equal(fg_cross_entropy(f->ctx, NULL, FAKE_STREAM),
		FG_ERR_INVALID);
	assert_string_equal(fg_errmsg(f->ctx), FN ": args is NULL");
	assert_int_equal(fg_cross_entropy(f->ctx, &a, NULL), FG_ERR_INVALID);
	assert_string_equal(fg_errmsg(f->ctx), FN ": fagen does not launch "
		"on the legacy default stream (NULL); pass a stream you "
		"created (cuStreamCreate, best with CU_STREAM_NON_BLOCKING) "
		"or CU_STREAM_PER_THREAD");
	assert_int_equal(fg_cross_entropy(f->ctx, &a, CU_STREAM_LEGACY),
		FG_ERR_INVALID);
	assert_int_equal(fg_cross_entropy(f->ctx, &a, CU_STREAM_PER_THREAD),
		FG_ERR_NO_DRIVER);
}

static void
dtype_must_be_supported(void **state)
{
	Fix *f = *state;
	fg_cross_entropy_args a;

	a = problem(0, 4, 64);
	invalid(f, &a, FN ": dtype is 0: use FG_DTYPE_BF16, FG_DTYPE_F16 or "
		"FG_DTYPE_F32");
	a = problem(4, 4, 64);
	invalid(f, &a, FN ": dtype is 4");
}

static void
target_has_the_outer_dims_of_logits(void **state)
{
	Fix *f = *state;
	fg_cross_entropy_args a;

	a = problem(FG_DTYPE_BF16, 4, 64);
	a.target.rank = 2, a.target.dims[0] = 4, a.target.dims[1] = 64;
	invalid(f, &a, FN ": target.rank is 2; it must be 1 (target has the "
		"outer dims of logits, all but the last)");
	a.target.rank = 1, a.target.dims[0] = 3, a.target.dims[1] = 0;
	invalid(f, &a, FN ": target.dims[0] is 3; it must be 4 (target has "
		"the outer dims of logits, all but the last)");
	a.target.rank = 0;
	invalid(f, &a, FN ": target.rank is 0 but its dims are not all 0: "
		"give its rank and dims, or neither (for target has the outer "
		"dims of logits, all but the last)");
	/* one row: the target is a scalar */
	a = problem(FG_DTYPE_BF16, 0, 0);
	a.logits = (fg_tensor){.ptr = X0, .rank = 1, .dims = {64}};
	a.target.rank = 1, a.target.dims[0] = 1;
	invalid(f, &a, FN ": target.rank is 1; it must be 0");
	a = problem(FG_DTYPE_BF16, 4, 64), a.logits.rank = 0;
	invalid(f, &a, FN ": logits.rank is 0: give logits's rank, 1 to 5, "
		"and its dims");
	a = problem(FG_DTYPE_BF16, 4, -64);
	invalid(f, &a, FN ": logits.dims[1] is -64: extents must be >= 0");
	a = problem(FG_DTYPE_BF16, (int64_t)1 << 40, (int64_t)1 << 22);
	invalid(f, &a, FN ": logits: its 1099511627776 rows of 4194304 "
		"elements overflow 64-bit addressing");
	/* rows * 4, the loss's bytes, too */
	a = problem(FG_DTYPE_BF16, (int64_t)1 << 61, 1);
	invalid(f, &a, FN ": logits: its 2305843009213693952 rows of 1 "
		"elements overflow 64-bit addressing");
}

static void
pointers_must_be_set_aligned_and_dense(void **state)
{
	Fix *f = *state;
	fg_cross_entropy_args a;

	a = problem(FG_DTYPE_BF16, 4, 64), a.logits.ptr = 0;
	invalid(f, &a, FN ": logits.ptr is NULL");
	a = problem(FG_DTYPE_BF16, 4, 64), a.target.ptr = 0;
	invalid(f, &a, FN ": target.ptr is NULL");
	a = problem(FG_DTYPE_BF16, 4, 64), a.loss = 0;
	invalid(f, &a, FN ": loss is NULL");
	a = problem(FG_DTYPE_F32, 4, 64), a.logits.ptr += 2;
	invalid(f, &a, FN ": logits.ptr = 0x7f0000000002 is not aligned to "
		"its 4-byte elements");
	a = problem(FG_DTYPE_BF16, 4, 64), a.target.ptr += 2;
	invalid(f, &a, FN ": target.ptr = 0x800000000002 is not aligned to "
		"its 4-byte elements");
	a = problem(FG_DTYPE_BF16, 4, 64), a.loss += 2;
	invalid(f, &a, FN ": loss = 0x810000000002 is not aligned to its f32 "
		"elements");
	a = problem(FG_DTYPE_BF16, 4, 64), a.lse = UINT64_MAX - 7;
	invalid(f, &a, FN ": lse: 0xfffffffffffffff8 plus its 4 f32 elements "
		"overflows 64-bit addressing");
	a = problem(FG_DTYPE_BF16, 4, 64), a.target.ptr = UINT64_MAX - 11;
	invalid(f, &a, FN ": target: 0xfffffffffffffff4 plus its 16 bytes "
		"overflows 64-bit addressing");
	a = problem(FG_DTYPE_BF16, 4, 64);
	a.target.rank = 1, a.target.dims[0] = 4, a.target.strides[0] = 2;
	invalid(f, &a, FN ": target.strides[0] is 2, but the kernel "
		"addresses target as dense rows: it must be 1 (or pass all "
		"strides 0)");
	a = problem(FG_DTYPE_BF16, 4, 64), a.logits.strides[0] = 72;
	a.logits.strides[1] = 1;
	invalid(f, &a, FN ": logits.strides[0] is 72");
}

static void
outputs_must_not_overlap(void **state)
{
	Fix *f = *state;
	fg_cross_entropy_args a;

	a = problem(FG_DTYPE_BF16, 4, 64), a.lse = a.loss + 12;
	invalid(f, &a, FN ": loss and lse overlap: outputs must not overlap "
		"the inputs or each other (no in-place cross-entropy)");
	a.lse = a.loss + 16;                    /* just past loss */
	valid(f, &a);
	a = problem(FG_DTYPE_BF16, 4, 64), a.loss = X0 + 508;
	invalid(f, &a, FN ": logits and loss overlap");
	a = problem(FG_DTYPE_BF16, 4, 64), a.lse = a.target.ptr + 12;
	invalid(f, &a, FN ": target and lse overlap");
	/* the scratch lse overlaps nothing given */
	a = problem(FG_DTYPE_BF16, 4, 64), a.lse = 0;
	valid(f, &a);
}

/* fg_cross_entropy_backward: the same machinery, with lse and dloss
 * required inputs and dlogits an output of logits' shape. */
#define DX0 (X0 + 0x40000000000)
static void
the_backward_checks_its_arguments(void **state)
{
	Fix *f = *state;
	const char *bn = "fg_cross_entropy_backward";
	fg_cross_entropy_bwd_args a = {
		.logits = {.ptr = X0, .rank = 2, .dims = {4, 64}},
		.target = {.ptr = TGT0}, .lse = LSE0, .dloss = LOSS0,
		.dlogits = {.ptr = DX0}, .dtype = FG_DTYPE_BF16,
	}, b = a;

	expect_status(f, bn, fg_cross_entropy_backward(f->ctx, &a,
		FAKE_STREAM), FG_ERR_NO_DRIVER, "");
	a.lse = 0;
	expect_status(f, bn, fg_cross_entropy_backward(f->ctx, &a,
		FAKE_STREAM), FG_ERR_INVALID, "fg_cross_entropy_backward: lse "
		"is NULL");
	a = b, a.dloss = 0;
	expect_status(f, bn, fg_cross_entropy_backward(f->ctx, &a,
		FAKE_STREAM), FG_ERR_INVALID, "fg_cross_entropy_backward: dloss "
		"is NULL");
	a = b, a.dlogits.ptr = X0 + 256;
	expect_status(f, bn, fg_cross_entropy_backward(f->ctx, &a,
		FAKE_STREAM), FG_ERR_INVALID, "fg_cross_entropy_backward: logits "
		"and dlogits overlap");
	a = b, a.dlogits.rank = 2, a.dlogits.dims[0] = 4;
	a.dlogits.dims[1] = 63;
	expect_status(f, bn, fg_cross_entropy_backward(f->ctx, &a,
		FAKE_STREAM), FG_ERR_INVALID, "fg_cross_entropy_backward: "
		"dlogits");
}

/* Nothing to do succeeds at once, without the driver or addresses; the
 * shapes are still checked. */
static void
empty_problems_launch_nothing(void **state)
{
	Fix *f = *state;
	fg_cross_entropy_args a;

	a = problem(FG_DTYPE_BF16, 0, 32000);
	a.logits.ptr = a.target.ptr = a.loss = a.lse = 0;
	status(f, &a, FG_OK, "");
	assert_string_equal(fg_errmsg(f->ctx), "");
	a = problem(FG_DTYPE_F32, 5, 0), a.loss = 0;
	status(f, &a, FG_OK, "");
	a.target.rank = 1, a.target.dims[0] = 4;
	invalid(f, &a, "target.dims[0] is 4; it must be 5");
}

/* The configuration for each width and alignment: fg_rms_norm's VEC,
 * its TPR up to 32, 16 warps, chunks of at most 4 accesses a thread; a
 * misaligned target does not narrow VEC. */
static void
the_configuration_chunks_wide_rows(void **state)
{
	static const struct {
		fg_dtype dt;
		int64_t n;
		uint64_t xoff, toff;  /* byte offsets of logits and target */
		const char *want;
		int64_t chunk;        /* rows per launch */
	} t[] = {
		/* a row in one warp at most, 16 warps, chunks of 4
		 * accesses a thread; unaligned logits narrow VEC, an
		 * unaligned target does not */
		{FG_DTYPE_BF16, 1, 0, 0, "N=8 VEC=1 TPR=4 WARPS=16",
			268435327},
		{FG_DTYPE_BF16, 64, 0, 0, "N=64 VEC=8 TPR=4 WARPS=16",
			33554303},
		{FG_DTYPE_BF16, 1000, 0, 0, "N=1024 VEC=8 TPR=32 WARPS=16",
			2097135},
		{FG_DTYPE_BF16, 4096, 0, 0, "N=1024 VEC=8 TPR=32 WARPS=16",
			524271},
		{FG_DTYPE_BF16, 8192, 0, 0, "N=1024 VEC=8 TPR=32 WARPS=16",
			262127},
		{FG_DTYPE_F16, 4098, 0, 0, "N=256 VEC=2 TPR=32 WARPS=16",
			493431},
		{FG_DTYPE_F32, 8192, 0, 0, "N=512 VEC=4 TPR=32 WARPS=16",
			262127},
		{FG_DTYPE_F32, 16384, 0, 0, "N=512 VEC=4 TPR=32 WARPS=16",
			131055},
		{FG_DTYPE_BF16, 8200, 0, 0, "N=1024 VEC=8 TPR=32 WARPS=16",
			233000},
		{FG_DTYPE_BF16, 16000, 0, 0, "N=1024 VEC=8 TPR=32 WARPS=16",
			131055},
		{FG_DTYPE_F16, 16384, 0, 0, "N=1024 VEC=8 TPR=32 WARPS=16",
			131055},
		{FG_DTYPE_BF16, 32000, 0, 0, "N=1024 VEC=8 TPR=32 WARPS=16",
			65519},
		{FG_DTYPE_F16, 32767, 0, 0, "N=128 VEC=1 TPR=32 WARPS=16",
			65519},
		{FG_DTYPE_BF16, 50257, 0, 0, "N=128 VEC=1 TPR=32 WARPS=16",
			42674},
		{FG_DTYPE_BF16, 128256, 0, 0, "N=1024 VEC=8 TPR=32 WARPS=16",
			16628},
		{FG_DTYPE_BF16, 262144, 0, 0, "N=1024 VEC=8 TPR=32 WARPS=16",
			8175},
		{FG_DTYPE_F32, 262144, 0, 0, "N=512 VEC=4 TPR=32 WARPS=16",
			8175},
		{FG_DTYPE_BF16, 1000000, 0, 0, "N=1024 VEC=8 TPR=32 WARPS=16",
			2130},
		{FG_DTYPE_F32, 1000001, 0, 0, "N=128 VEC=1 TPR=32 WARPS=16",
			2131},
		{FG_DTYPE_BF16, 4096, 2, 0, "N=128 VEC=1 TPR=32 WARPS=16",
			524271},
		{FG_DTYPE_BF16, 4096, 8, 0, "N=512 VEC=4 TPR=32 WARPS=16",
			524271},
		{FG_DTYPE_BF16, 4096, 0, 4, "N=1024 VEC=8 TPR=32 WARPS=16",
			524271},
		{FG_DTYPE_BF16, 32000, 4, 4, "N=256 VEC=2 TPR=32 WARPS=16",
			67092},
	};
	Fix *f = *state;
	char got[64];
	Rows nm;

	for (size_t i = 0; i < COUNT(t); i++) {
		fg_cross_entropy_args a = problem(t[i].dt, 3, t[i].n);
		a.logits.ptr += t[i].xoff;
		a.target.ptr += t[i].toff;
		if (check(f, &a, &nm) != FG_OK)
			fail_msg("row %zu: %s", i, fg_errmsg(f->ctx));
		if (strcmp(cfg_str(&nm.cfg, got, sizeof got), t[i].want))
			fail_msg("row %zu (n %lld): want %s, got %s", i,
				(long long)t[i].n, t[i].want, got);
		if (t[i].chunk && nm.chunk != t[i].chunk)
			fail_msg("row %zu (n %lld): %lld rows a launch, want "
				"%lld", i, (long long)t[i].n,
				(long long)nm.chunk, (long long)t[i].chunk);
		assert_int_equal(nm.rows, 3);
		assert_int_equal(nm.n, t[i].n);
		assert_int_equal(nm.cfg.kind, ROW_XENT);
		assert_int_equal(nm.cfg.dt, t[i].dt);
		assert_int_equal(nm.cfg.flags, 0);
	}
}

/* Every width from 1 to 16384: fg_rms_norm's VEC, its TPR up to 32,
 * 16 warps, the row or a chunk of 4 accesses a thread. */
static void
narrow_rows_take_fg_rms_norms_configuration(void **state)
{
	static const fg_dtype dts[] = {FG_DTYPE_BF16, FG_DTYPE_F16,
		FG_DTYPE_F32};
	Fix *f = *state;
	char g[64], w[64];
	Rows want, got;
	RowArgs r;
	int nsame = 0;

	for (size_t d = 0; d < COUNT(dts); d++)
		for (int64_t n = 1; n <= 16384; n += n < 64 ? 1 : 61) {
			fg_rmsnorm_args ra = {
				.x = {.ptr = X0, .rank = 2, .dims = {3, n}},
				.out = {.ptr = LOSS0}, .dtype = dts[d]};
			fg_cross_entropy_args a = problem(dts[d], 3, n);

			assert_int_equal(rows_check(f->ctx, "fg_rms_norm",
				norm_rms(&ra, &r), FAKE_STREAM, &want), FG_OK);
			assert_int_equal(check(f, &a, &got), FG_OK);
			cfg_str(&want.cfg, w, sizeof w);
			cfg_str(&got.cfg, g, sizeof g);
			/* fg_rms_norm's VEC; its TPR up to 32; 16 warps;
			 * the row, or a chunk of 4 accesses a thread */
			int pair = dts[d] == FG_DTYPE_F32 || want.cfg.vec > 1 ?
				1 : 2;
			int tpr = want.cfg.tpr < 32 ? want.cfg.tpr : 32;
			int64_t wd = (int64_t)tpr * want.cfg.vec * pair;
			int64_t row = (n + wd - 1) / wd * wd;
			int64_t chunk = (int64_t)tpr * want.cfg.vec * 4;
			if (got.cfg.vec != want.cfg.vec || got.cfg.tpr != tpr ||
			    got.cfg.warps != 16 || got.cfg.n != (row < chunk ?
			    row : chunk))
				fail_msg("%s n=%lld: fg_rms_norm's %s, got %s",
					dt_str(dts[d]), (long long)n, w, g);
			nsame++;
		}
	assert_true(nsame > 600);
}

/* Rows too wide for 32-bit element indices, even one a launch. */
static void
rows_past_the_32_bit_indices_are_unsupported(void **state)
{
	Fix *f = *state;
	fg_cross_entropy_args a;
	Rows nm;

	a = problem(FG_DTYPE_BF16, 2, 126321664);
	valid(f, &a);
	assert_int_equal(check(f, &a, &nm), FG_OK);
	assert_int_equal(nm.chunk, 1);
	a = problem(FG_DTYPE_BF16, 2, 126321672);
	status(f, &a, FG_ERR_UNSUPPORTED, FN ": rows of 126321672 elements "
		"are too wide for the kernel's 32-bit element indices: "
		"126321664 at most");
	a = problem(FG_DTYPE_BF16, 1, (int64_t)1 << 39);
	status(f, &a, FG_ERR_UNSUPPORTED, "126321664 at most");
	/* an argument error comes first */
	a.loss = 0;
	invalid(f, &a, "loss is NULL");
}

static void
only_sm90_and_sm100_have_a_schedule(void **state)
{
	Fix *f = *state;
	fg_cross_entropy_args a = problem(FG_DTYPE_BF16, 4, 64);
	fg_kernel_info info;
	fg_kernel *k, *k100;
	Rows nm;

	assert_int_equal(check(f, &a, &nm), FG_OK);
	assert_int_equal(rows_kernel(f->ctx, FN, 89, &nm.cfg, &k),
		FG_ERR_UNSUPPORTED);
	assert_string_equal(fg_errmsg(f->ctx), FN ": device 0 is sm_89; "
		"fagen's cross-entropy (cross_entropy.fa) runs on sm_90a "
		"(H100, H200) and sm_100a (B200) only");
	assert_int_equal(rows_kernel(f->ctx, FN, 90, &nm.cfg, &k), FG_OK);
	assert_int_equal(rows_kernel(f->ctx, FN, 100, &nm.cfg, &k100), FG_OK);
	assert_ptr_not_equal(k, k100);
	fg_kernel_info_get(k100, &info);
	assert_string_equal(info.target, "sm_100a");
}

/* A kernel per -D list: the dtype, VEC and the chunk tell variants
 * apart; another problem of the same configuration shares one. */
static void
a_variant_is_its_every_define(void **state)
{
	Fix *f = *state;
	fg_cross_entropy_args a[] = {
		problem(FG_DTYPE_BF16, 7, 32000),
		problem(FG_DTYPE_F16, 7, 32000),
		problem(FG_DTYPE_BF16, 7, 32001),       /* VEC 1 */
		problem(FG_DTYPE_BF16, 7, 100),         /* one chunk */
		problem(FG_DTYPE_F32, 7, 32000),
	};
	fg_kernel *k[COUNT(a)];
	RowArgs r;
	int na;

	for (size_t i = 0; i < COUNT(a); i++)
		k[i] = binds(f, FN, norm_xent(&a[i], &r), "cross_entropy", 0,
			7, &na);
	for (size_t i = 0; i < COUNT(a); i++)
		for (size_t j = i + 1; j < COUNT(a); j++)
			if (k[i] == k[j])
				fail_msg("variants %zu and %zu share a kernel",
					i, j);
	fg_cross_entropy_args b = problem(FG_DTYPE_BF16, 300, 262144);
	b.lse = 0;
	assert_ptr_equal(binds(f, FN, norm_xent(&b, &r), "cross_entropy", 0,
		300, &na), k[0]);
}

/* The arguments' values for a later launch's rows: logits and the
 * target at their rows, loss and lse too, an lse not wanted in scratch. */
static void
the_binding_matches_the_schedules_interface(void **state)
{
	Fix *f = *state;
	fg_cross_entropy_args a = problem(FG_DTYPE_BF16, 100, 50257);
	fg_arg args[ROW_NARGS];
	RowArgs r;
	Rows nm;
	int na;

	binds(f, FN, norm_xent(&a, &r), "cross_entropy", 0, 100, &na);
	assert_int_equal(na, 6);
	binds(f, FN, norm_xent(&a, &r), "cross_entropy", 40, 60, &na);
	assert_int_equal(check(f, &a, &nm), FG_OK);
	na = rows_bind(norm_xent(&a, &r), &nm, LAUNCH(40, 60), args);
	assert_int_equal(na, 6);
	assert_int_equal(arg(args, na, "M")->i, 60);
	assert_int_equal(arg(args, na, "NC")->i, 50257);
	assert_null(arg(args, na, "eps"));
	assert_int_equal(arg(args, na, "X")->t.ptr, X0 + 40 * 50257 * 2);
	assert_int_equal(arg(args, na, "TGT")->t.ptr, TGT0 + 40 * 4);
	assert_int_equal(arg(args, na, "LOSS")->t.ptr, LOSS0 + 40 * 4);
	assert_int_equal(arg(args, na, "LSE")->t.ptr, LSE0 + 40 * 4);
	a.lse = 0;
	na = rows_bind(norm_xent(&a, &r), &nm, LAUNCH(40, 60), args);
	assert_int_equal(arg(args, na, "LSE")->t.ptr, SCRATCH + 40 * 4);
	/* f32 logits, a rank-3 problem */
	a = problem(FG_DTYPE_F32, 0, 0);
	a.logits = (fg_tensor){.ptr = X0, .rank = 3, .dims = {3, 33, 1000}};
	binds(f, FN, norm_xent(&a, &r), "cross_entropy", 0, 99, &na);
	assert_int_equal(check(f, &a, &nm), FG_OK);
	na = rows_bind(norm_xent(&a, &r), &nm, LAUNCH(10, 89), args);
	assert_int_equal(arg(args, na, "X")->t.ptr, X0 + 10 * 4000);
	assert_int_equal(arg(args, na, "TGT")->t.ptr, TGT0 + 10 * 4);
}

/* The widths of the GPU tests (tests/gpu/test_python_xent.py) and the
 * benchmark, and some of their neighbours. */
static const int64_t widths[] = {1, 2, 7, 64, 1000, 4096, 8192, 8200,
	16000, 16384, 32000, 32768, 50257, 128256, 262144, 1000000};

/* schedules/cross_entropy.fa at width n, logits misaligned (an element
 * past 16 bytes) where asked, bound for its first launch's rows. */
static int
shipped_case(Fix *f, fg_dtype dt, int64_t n, bool misaligned)
{
	fg_cross_entropy_args a = problem(dt, 4099, n);
	char what[96];
	RowArgs r;

	if (misaligned)
		a.logits.ptr += dt == FG_DTYPE_F32 ? 4 : 2;
	snprintf(what, sizeof what, "cross_entropy %s n=%lld%s", dt_str(dt),
		(long long)n, misaligned ? " misaligned" : "");
	return shipped_try(f, FN, norm_xent(&a, &r), "cross_entropy", what);
}

/* schedules/cross_entropy.fa itself: it compiles in the configurations
 * of the GPU tests' widths and dtypes, aligned or not, and takes the
 * same bindings; every failure is listed with its -D list. */
static void
the_shipped_schedule_compiles_for_every_configuration(void **state)
{
	static const fg_dtype dts[] = {FG_DTYPE_BF16, FG_DTYPE_F16,
		FG_DTYPE_F32};
	Fix *f = *state;
	int nfail = 0, nrun = 0;

	for (size_t d = 0; d < COUNT(dts); d++) {
		for (size_t i = 0; i < COUNT(widths); i++, nrun += 2)
			nfail += shipped_case(f, dts[d], widths[i], false);
		nfail += shipped_case(f, dts[d], 4096, true);
		nfail += shipped_case(f, dts[d], 128256, true);
		nrun += 4;
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
		T(dtype_must_be_supported),
		T(target_has_the_outer_dims_of_logits),
		T(pointers_must_be_set_aligned_and_dense),
		T(outputs_must_not_overlap),
		T(the_backward_checks_its_arguments),
		T(empty_problems_launch_nothing),
		T(the_configuration_chunks_wide_rows),
		T(narrow_rows_take_fg_rms_norms_configuration),
		T(rows_past_the_32_bit_indices_are_unsupported),
		T(only_sm90_and_sm100_have_a_schedule),
		T(a_variant_is_its_every_define),
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
