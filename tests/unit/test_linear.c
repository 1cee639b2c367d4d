/* test_linear.c: fg_linear without a GPU (issue #26): every argument
 * check and its message, empty problems and K = 0, the variant chosen
 * from the arguments, the rows a launch takes, the arch, the kernel
 * cache, and the binding, checked by fg_kernel_check against the
 * shipped schedules themselves (schedules/gemm_ws_sm90.fa and
 * gemm_ws_sm100.fa, in every variant fg_linear picks).  Every context
 * uses a counting allocator and must give back every byte. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rt_front.h"
#include "offlinefix.h"

#define FN "fg_linear"
#define X0 0x7f0000000000ull   /* a 16-byte aligned device address */
#define GiB 0x40000000ull
#define FAR 0x100000000000ull  /* 16 TiB: apart for the largest problems */
#define FAKE_STREAM ((struct CUstream_st *)0x1234)
/* x [m, k] of dt at X0, weight [n, k] 1 GiB on, out 2 GiB on; no bias,
 * residual, scale or activation. */
static fg_linear_args
problem(fg_dtype dt, int64_t m, int64_t n, int64_t k)
{
	return (fg_linear_args){
		.x = {.ptr = X0, .rank = 2, .dims = {m, k}},
		.weight = {.ptr = X0 + GiB, .rank = 2, .dims = {n, k}},
		.out = {.ptr = X0 + 2 * GiB},
		.dtype = dt, .alpha = 1,
	};
}

/* With every part of the epilogue: alpha, bias (3 GiB on), GELU and a
 * residual (4 GiB on). */
static fg_linear_args
epilogue(fg_dtype dt, int64_t m, int64_t n, int64_t k)
{
	fg_linear_args a = problem(dt, m, n, k);

	a.alpha = 0.5;
	a.bias.ptr = X0 + 3 * GiB;
	a.residual.ptr = X0 + 4 * GiB;
	a.act = FG_ACT_GELU_TANH;
	return a;
}

/* a's tensors FAR apart, in the same order. */
static fg_linear_args
far(fg_linear_args a)
{
	a.weight.ptr = X0 + FAR;
	a.out.ptr = X0 + 2 * FAR;
	a.bias.ptr = a.bias.ptr ? X0 + 3 * FAR : 0;
	a.residual.ptr = a.residual.ptr ? X0 + 4 * FAR : 0;
	return a;
}

/* A call gave st: it must be want, with msg in the message, which names
 * fg_linear when it is an argument's error. */
static void
expect_status(Fix *f, fg_status st, fg_status want, const char *msg)
{
	const char *m = fg_errmsg(f->ctx);

	if (st != want || !strstr(m, msg))
		fail_msg("want %s with '%s', got %s: %s", fg_status_name(want),
			msg, fg_status_name(st), m);
	if (want != FG_OK && want != FG_ERR_NO_DRIVER &&
	    strncmp(m, FN ": ", strlen(FN ": ")))
		fail_msg("the message does not name " FN ": %s", m);
}

static void
status(Fix *f, const fg_linear_args *a, fg_status want, const char *msg)
{
	expect_status(f, fg_linear(f->ctx, a, FAKE_STREAM), want, msg);
}

static void
invalid(Fix *f, const fg_linear_args *a, const char *msg)
{
	status(f, a, FG_ERR_INVALID, msg);
}

/* Valid arguments get as far as the driver, which is missing. */
static void
valid(Fix *f, const fg_linear_args *a)
{
	status(f, a, FG_ERR_NO_DRIVER, "");
}

static void
valid_problems_reach_the_driver(void **state)
{
	Fix *f = *state;
	fg_linear_args a;

	a = problem(FG_DTYPE_BF16, 1000, 1000, 1000);
	valid(f, &a);
	a = epilogue(FG_DTYPE_F16, 17, 136, 72);
	valid(f, &a);
	a.act = FG_ACT_SILU, a.alpha = -3;
	valid(f, &a);
	a.alpha = 0;                /* out = act(bias) + residual */
	valid(f, &a);
	/* rank 1: one row, out [n] */
	a = problem(FG_DTYPE_BF16, 0, 8, 64);
	a.x.rank = 1, a.x.dims[0] = 64, a.x.dims[1] = 0;
	valid(f, &a);
	a.out.rank = 1, a.out.dims[0] = 8;
	valid(f, &a);
	/* [2, 3, K] -> [2, 3, N], shapes and strides given in full */
	a = epilogue(FG_DTYPE_BF16, 0, 136, 72);
	a.x = (fg_tensor){.ptr = X0, .rank = 3, .dims = {2, 3, 72},
		.strides = {216, 72, 1}};
	a.weight.strides[0] = 72, a.weight.strides[1] = 1;
	a.out.rank = a.residual.rank = 3;
	a.out.dims[0] = a.residual.dims[0] = 2;
	a.out.dims[1] = a.residual.dims[1] = 3;
	a.out.dims[2] = a.residual.dims[2] = 136;
	a.out.strides[0] = 408, a.out.strides[1] = 136, a.out.strides[2] = 1;
	a.bias.rank = 1, a.bias.dims[0] = 136, a.bias.strides[0] = 1;
	valid(f, &a);
	/* an extent of 1 may have any stride */
	a.x.dims[1] = 1, a.x.strides[1] = 12345, a.x.strides[0] = 72;
	a.out.rank = a.residual.rank = 0;
	memset(a.out.dims, 0, sizeof a.out.dims);
	memset(a.out.strides, 0, sizeof a.out.strides);
	memset(a.residual.dims, 0, sizeof a.residual.dims);
	valid(f, &a);
	a = problem(FG_DTYPE_BF16, 4, 8, 8);
	assert_int_equal(fg_linear(f->ctx, &a, CU_STREAM_PER_THREAD),
		FG_ERR_NO_DRIVER);
	assert_int_equal(fg_linear(NULL, &a, FAKE_STREAM), FG_ERR_INVALID);
}

static void
null_args_and_the_legacy_stream_are_refused(void **state)
{
	Fix *f = *state;
	fg_linear_args a = problem(FG_DTYPE_BF16, 4, 64, 64);

	assert_int_equal(fg_linear(f->ctx, NULL, FAKE_STREAM),
		FG_ERR_INVALID);
	assert_string_equal(fg_errmsg(f->ctx), FN ": args is NULL");
	assert_int_equal(fg_linear(f->ctx, &a, NULL), FG_ERR_INVALID);
	assert_string_equal(fg_errmsg(f->ctx), FN ": fagen does not launch "
		"on the legacy default stream (NULL); pass a stream you "
		"created (cuStreamCreate, best with CU_STREAM_NON_BLOCKING) "
		"or CU_STREAM_PER_THREAD");
	assert_int_equal(fg_linear(f->ctx, &a, CU_STREAM_LEGACY),
		FG_ERR_INVALID);
	assert_non_null(strstr(fg_errmsg(f->ctx), "(CU_STREAM_LEGACY)"));
}

static void
dtype_act_and_alpha_must_be_supported(void **state)
{
	Fix *f = *state;
	fg_linear_args a;

	a = problem(0, 4, 64, 64);
	invalid(f, &a, FN ": dtype is 0: use FG_DTYPE_BF16 or FG_DTYPE_F16");
	a = problem(7, 4, 64, 64);
	invalid(f, &a, "dtype is 7");
	a = problem(FG_DTYPE_F32, 4, 64, 64);
	status(f, &a, FG_ERR_UNSUPPORTED, FN ": dtype is FG_DTYPE_F32: "
		"fagen's GEMM (gemm_ws_sm90.fa) takes 16-bit inputs for the "
		"tensor cores' wgmma; use FG_DTYPE_BF16 or FG_DTYPE_F16");
	a = problem(FG_DTYPE_BF16, 4, 64, 64), a.act = 3;
	invalid(f, &a, "act is 3: use FG_ACT_NONE, FG_ACT_GELU_TANH or "
		"FG_ACT_SILU");
	a.act = (fg_activation)-1;
	invalid(f, &a, "act is -1");
	a = problem(FG_DTYPE_BF16, 4, 64, 64), a.alpha = NAN;
	invalid(f, &a, "alpha is nan: it must be finite and fit f32 (1: no "
		"scale)");
	a.alpha = -INFINITY;
	invalid(f, &a, "alpha is -inf");
	a.alpha = 1e300;
	invalid(f, &a, "alpha is 1e+300");
	/* empty problems check them too */
	a = problem(FG_DTYPE_F32, 0, 64, 64);
	status(f, &a, FG_ERR_UNSUPPORTED, "FG_DTYPE_F32");
}

static void
x_and_weight_give_the_shape(void **state)
{
	Fix *f = *state;
	fg_linear_args a;

	a = problem(FG_DTYPE_BF16, 4, 64, 64), a.x.rank = 0;
	invalid(f, &a, "x.rank is 0: give x's rank, 1 to 5, and its dims");
	a.x.rank = 6;
	invalid(f, &a, "x.rank is 6");
	a = problem(FG_DTYPE_BF16, -4, 64, 64);
	invalid(f, &a, "x.dims[0] is -4: extents must be >= 0");
	a = problem(FG_DTYPE_BF16, 4, 64, 64);
	a.x.rank = 3, a.x.dims[0] = a.x.dims[1] = (int64_t)1 << 40;
	a.x.dims[2] = 64;
	invalid(f, &a, "x: the product of its outer dims (its rows) "
		"overflows 64 bits");
	a = problem(FG_DTYPE_BF16, 4, 64, 64), a.weight.rank = 0;
	invalid(f, &a, "weight.rank is 0: give weight's rank, 2, and its dims "
		"[N, K] (nn.Linear's)");
	a.weight.rank = 3;
	invalid(f, &a, "weight.rank is 3");
	a = problem(FG_DTYPE_BF16, 4, -8, 64);
	invalid(f, &a, "weight.dims[0] is -8: extents must be >= 0");
	a = problem(FG_DTYPE_BF16, 4, 64, 64), a.weight.dims[1] = 72;
	invalid(f, &a, "weight.dims[1] is 72; it must be 64 (weight is [N, K], "
		"K x's last dim)");
	/* the schedule's i32 params, 64-bit addressing */
	a = problem(FG_DTYPE_BF16, 4, (int64_t)1 << 31, 64);
	invalid(f, &a, "N is 2147483648 (weight.dims[0]): the schedule takes "
		"N as i32, at most 2147483647");
	a = problem(FG_DTYPE_BF16, 4, 64, (int64_t)1 << 31);
	invalid(f, &a, "K is 2147483648 (x's last dim): the schedule takes K "
		"as i32, at most 2147483647");
	a = problem(FG_DTYPE_BF16, (int64_t)1 << 40, 64, (int64_t)1 << 23);
	invalid(f, &a, "x: its 1099511627776 rows of 8388608 elements "
		"overflow 64-bit addressing");
	a = problem(FG_DTYPE_BF16, (int64_t)1 << 40, (int64_t)1 << 23, 64);
	invalid(f, &a, "out: its 1099511627776 rows of 8388608 elements "
		"overflow 64-bit addressing");
}

static void
out_bias_and_residual_have_their_shapes(void **state)
{
	Fix *f = *state;
	fg_linear_args a;

	a = problem(FG_DTYPE_BF16, 4, 64, 32);
	a.out.rank = 2, a.out.dims[0] = 4, a.out.dims[1] = 32;
	invalid(f, &a, "out.dims[1] is 32; it must be 64 (out is [..., N]: "
		"x's outer dims, then weight's N)");
	a.out.dims[0] = 5, a.out.dims[1] = 64;
	invalid(f, &a, "out.dims[0] is 5; it must be 4");
	a.out.rank = 1, a.out.dims[0] = 256;
	invalid(f, &a, "out.rank is 1; it must be 2 (out is [..., N]");
	a = problem(FG_DTYPE_BF16, 4, 64, 32), a.out.dims[0] = 4;
	invalid(f, &a, "out.rank is 0 but its dims are not all 0: give its "
		"rank and dims, or neither (out is [..., N]");
	a = epilogue(FG_DTYPE_BF16, 4, 64, 32);
	a.bias.rank = 1, a.bias.dims[0] = 32;
	invalid(f, &a, "bias.dims[0] is 32; it must be 64 (bias is [N], N "
		"weight's rows)");
	a.bias.rank = 2, a.bias.dims[0] = 1, a.bias.dims[1] = 64;
	invalid(f, &a, "bias.rank is 2; it must be 1");
	a = epilogue(FG_DTYPE_BF16, 4, 64, 32);
	a.residual.rank = 2, a.residual.dims[0] = 4, a.residual.dims[1] = 32;
	invalid(f, &a, "residual.dims[1] is 32; it must be 64 (residual has "
		"out's shape, [..., N])");
	a.residual.rank = 3;
	invalid(f, &a, "residual.rank is 3; it must be 2");
	/* [2, 3, K]: out is [2, 3, N] */
	a = problem(FG_DTYPE_BF16, 0, 64, 32);
	a.x.rank = 3, a.x.dims[0] = 2, a.x.dims[1] = 3, a.x.dims[2] = 32;
	a.out.rank = 2, a.out.dims[0] = 6, a.out.dims[1] = 64;
	invalid(f, &a, "out.rank is 2; it must be 3");
}

static void
rows_must_be_multiples_of_16_bytes(void **state)
{
	Fix *f = *state;
	fg_linear_args a;

	a = problem(FG_DTYPE_BF16, 4, 64, 7);
	invalid(f, &a, FN ": K is 7: x's and weight's rows must be a multiple "
		"of 16 bytes (8 elements) for TMA");
	a = problem(FG_DTYPE_F16, 4, 64, 1004);
	invalid(f, &a, "K is 1004: x's and weight's rows");
	a = problem(FG_DTYPE_BF16, 4, 100, 64);
	invalid(f, &a, FN ": N is 100: out's rows must be a multiple of 16 "
		"bytes (8 elements) for TMA");
	a = problem(FG_DTYPE_BF16, 4, 1, 64);
	invalid(f, &a, "N is 1: out's rows");
	a = problem(FG_DTYPE_BF16, 1, 8, 8);
	valid(f, &a);
}

static void
pointers_must_be_set_aligned_and_dense(void **state)
{
	Fix *f = *state;
	fg_linear_args a;

	a = problem(FG_DTYPE_BF16, 4, 64, 64), a.x.ptr = 0;
	invalid(f, &a, "x.ptr is NULL");
	a = problem(FG_DTYPE_BF16, 4, 64, 64), a.weight.ptr = 0;
	invalid(f, &a, "weight.ptr is NULL");
	a = problem(FG_DTYPE_BF16, 4, 64, 64), a.out.ptr = 0;
	invalid(f, &a, "out.ptr is NULL");
	/* x, weight and out go through TMA: 16-byte aligned */
	a = problem(FG_DTYPE_BF16, 4, 64, 64), a.x.ptr += 2;
	invalid(f, &a, "x.ptr = 0x7f0000000002 is not 16-byte aligned, as TMA "
		"needs");
	a = problem(FG_DTYPE_BF16, 4, 64, 64), a.weight.ptr += 8;
	invalid(f, &a, "weight.ptr = 0x7f0040000008 is not 16-byte aligned");
	a = problem(FG_DTYPE_F16, 4, 64, 64), a.out.ptr += 1;
	invalid(f, &a, "out.ptr = 0x7f0080000001 is not 16-byte aligned");
	a = problem(FG_DTYPE_BF16, 4, 64, 64), a.x.ptr += 16;
	valid(f, &a);
	/* bias and residual are read an element at a time */
	a = epilogue(FG_DTYPE_BF16, 4, 64, 64), a.bias.ptr += 1;
	invalid(f, &a, "bias.ptr = 0x7f00c0000001 is not aligned to its "
		"2-byte elements");
	a = epilogue(FG_DTYPE_BF16, 4, 64, 64), a.residual.ptr += 3;
	invalid(f, &a, "residual.ptr = 0x7f0100000003 is not aligned to its "
		"2-byte elements");
	a = epilogue(FG_DTYPE_BF16, 4, 64, 64);
	a.bias.ptr += 2, a.residual.ptr += 6;
	valid(f, &a);
	a = problem(FG_DTYPE_BF16, 4, 64, 64), a.out.ptr = UINT64_MAX - 255;
	invalid(f, &a, "out: 0xffffffffffffff00 plus its 512 bytes overflows "
		"64-bit addressing");
	/* a padded row, a transposed weight, strided bias and residual */
	a = problem(FG_DTYPE_BF16, 4, 64, 64);
	a.x.strides[0] = 72, a.x.strides[1] = 1;
	invalid(f, &a, "x.strides[0] is 72, but the kernel addresses x as "
		"dense rows: it must be 64 (or pass all strides 0)");
	a = problem(FG_DTYPE_BF16, 4, 64, 64);
	a.weight.strides[0] = 1, a.weight.strides[1] = 64;
	invalid(f, &a, "weight.strides[1] is 64, but the kernel addresses "
		"weight as dense rows: it must be 1");
	a = epilogue(FG_DTYPE_BF16, 4, 64, 64), a.bias.strides[0] = 2;
	invalid(f, &a, "bias.strides[0] is 2");
	a = epilogue(FG_DTYPE_BF16, 4, 64, 64), a.residual.strides[1] = 1;
	invalid(f, &a, "residual.strides[0] is 0");
	a = problem(FG_DTYPE_BF16, 4, 64, 64), a.out.strides[0] = 128;
	a.out.strides[1] = 1;
	invalid(f, &a, "out.strides[0] is 128");
}

static void
out_must_not_overlap_an_input(void **state)
{
	Fix *f = *state;
	fg_linear_args a;

	a = problem(FG_DTYPE_BF16, 4, 64, 64), a.out.ptr = a.x.ptr;
	invalid(f, &a, "x and out overlap: out must not overlap an input (no "
		"in-place linear)");
	a.out.ptr = a.x.ptr + 496;          /* x is 512 bytes */
	invalid(f, &a, "x and out overlap");
	a.out.ptr = a.x.ptr + 512;          /* just past x */
	valid(f, &a);
	a = problem(FG_DTYPE_BF16, 4, 64, 64), a.out.ptr = a.weight.ptr + 8176;
	invalid(f, &a, "weight and out overlap");
	a = epilogue(FG_DTYPE_BF16, 4, 64, 64), a.out.ptr = a.bias.ptr - 16;
	invalid(f, &a, "bias and out overlap");
	a = epilogue(FG_DTYPE_BF16, 4, 64, 64), a.out.ptr = a.residual.ptr;
	invalid(f, &a, "residual and out overlap");
	/* inputs may share memory */
	a = epilogue(FG_DTYPE_BF16, 4, 64, 64);
	a.residual.ptr = a.x.ptr, a.bias.ptr = a.weight.ptr;
	valid(f, &a);
}

/* Nothing to do succeeds at once, without the driver, and needs no
 * addresses and no TMA rules; K = 0 with rows to write is refused. */
static void
empty_problems_launch_nothing_and_k_0_is_unsupported(void **state)
{
	Fix *f = *state;
	fg_linear_args a;

	a = problem(FG_DTYPE_BF16, 0, 64, 64);
	a.x.ptr = a.weight.ptr = a.out.ptr = 0;
	status(f, &a, FG_OK, "");
	assert_string_equal(fg_errmsg(f->ctx), "");
	a = problem(FG_DTYPE_F16, 1000, 0, 7);
	a.out.ptr = 0;
	status(f, &a, FG_OK, "");
	a = problem(FG_DTYPE_BF16, 0, 64, 0);
	status(f, &a, FG_OK, "");
	/* the shapes are still checked */
	a = problem(FG_DTYPE_BF16, 0, 64, 64), a.weight.dims[1] = 63;
	invalid(f, &a, "weight.dims[1] is 63");
	a = epilogue(FG_DTYPE_BF16, 0, 64, 64), a.bias.rank = 1;
	a.bias.dims[0] = 63;
	invalid(f, &a, "bias.dims[0] is 63");
	a = problem(FG_DTYPE_BF16, 0, 64, 64), a.alpha = NAN;
	invalid(f, &a, "alpha is nan");
	/* K = 0 */
	a = epilogue(FG_DTYPE_BF16, 4, 64, 0);
	status(f, &a, FG_ERR_UNSUPPORTED, FN ": K is 0 (x's last dim): fagen's "
		"GEMM needs K >= 8 (a tensor map has no empty extent); compute "
		"act(alpha * 0 + bias) + residual without it");
}

static void
the_variant_follows_the_arguments(void **state)
{
	Fix *f = *state;
	fg_linear_args a;
	Linear l;

	a = problem(FG_DTYPE_BF16, 300, 136, 72);
	assert_int_equal(linear_check(f->ctx, &a, FAKE_STREAM, &l), FG_OK);
	assert_int_equal(l.m, 300);
	assert_int_equal(l.n, 136);
	assert_int_equal(l.k, 72);
	assert_int_equal(l.cfg.dt, FG_DTYPE_BF16);
	assert_false(l.cfg.scale || l.cfg.bias || l.cfg.resid);
	assert_int_equal(l.cfg.act, 0);
	a = epilogue(FG_DTYPE_F16, 300, 136, 72);
	a.act = FG_ACT_SILU;
	assert_int_equal(linear_check(f->ctx, &a, FAKE_STREAM, &l), FG_OK);
	assert_int_equal(l.cfg.dt, FG_DTYPE_F16);
	assert_true(l.cfg.scale && l.cfg.bias && l.cfg.resid);
	assert_int_equal(l.cfg.act, FG_ACT_SILU);
	/* alpha 1 is no scale; the others come one at a time */
	a.alpha = 1, a.bias.ptr = 0, a.act = FG_ACT_NONE;
	assert_int_equal(linear_check(f->ctx, &a, FAKE_STREAM, &l), FG_OK);
	assert_false(l.cfg.scale || l.cfg.bias);
	assert_true(l.cfg.resid);
	/* [2, 3, K]: 6 rows */
	a = problem(FG_DTYPE_BF16, 0, 8, 8);
	a.x.rank = 3, a.x.dims[0] = 2, a.x.dims[1] = 3, a.x.dims[2] = 8;
	assert_int_equal(linear_check(f->ctx, &a, FAKE_STREAM, &l), FG_OK);
	assert_int_equal(l.m, 6);
}

/* A launch's rows: M within i32 and its tile count within 32 bits;
 * with a residual, (row) * N + column within 32 bits. */
static void
launches_take_rows_that_fit_32_bits(void **state)
{
	Fix *f = *state;
	fg_arg args[LIN_NARGS];
	fg_linear_args a;
	Linear l;

	a = problem(FG_DTYPE_BF16, 4096, 4096, 8);
	assert_int_equal(linear_check(f->ctx, &a, FAKE_STREAM, &l), FG_OK);
	assert_int_equal(l.chunk, INT32_MAX / 128 * 128);
	a = far(problem(FG_DTYPE_BF16, 4096, INT32_MAX - 7, 8));
	assert_int_equal(linear_check(f->ctx, &a, FAKE_STREAM, &l), FG_OK);
	assert_int_equal(l.chunk, 127 * 128);   /* 2^24 column tiles */
	a = epilogue(FG_DTYPE_BF16, 4096, 4096, 8);
	assert_int_equal(linear_check(f->ctx, &a, FAKE_STREAM, &l), FG_OK);
	assert_int_equal(l.chunk, INT32_MAX / 4096 / 128 * 128);
	a = far(epilogue(FG_DTYPE_BF16, 4096, 1 << 30, 8));
	assert_int_equal(linear_check(f->ctx, &a, FAKE_STREAM, &l), FG_OK);
	assert_int_equal(l.chunk, 1);
	/* a later launch's rows: x, out and the residual move on */
	a = far(epilogue(FG_DTYPE_F16, 3000000, 4096, 72));
	assert_int_equal(linear_check(f->ctx, &a, FAKE_STREAM, &l), FG_OK);
	assert_int_equal(l.chunk, 524160);
	int n = linear_bind(&a, &l, 524160, 1000, args);
	assert_int_equal(n, 9);
	assert_string_equal(args[0].name, "M");
	assert_int_equal(args[0].i, 1000);
	assert_int_equal(args[1].i, 4096);
	assert_int_equal(args[2].i, 72);
	assert_int_equal(args[3].t.ptr, X0 + 524160ull * 72 * 2);
	assert_int_equal(args[4].t.ptr, X0 + FAR);
	assert_int_equal(args[5].t.ptr, X0 + 2 * FAR + 524160ull * 4096 * 2);
	assert_string_equal(args[6].name, "alpha");
	assert_true(args[6].f == 0.5);
	assert_string_equal(args[7].name, "BV");
	assert_int_equal(args[7].t.ptr, X0 + 3 * FAR);
	assert_string_equal(args[8].name, "R");
	assert_int_equal(args[8].t.ptr, X0 + 4 * FAR + 524160ull * 4096 * 2);
	a = problem(FG_DTYPE_BF16, 5, 8, 8);
	assert_int_equal(linear_check(f->ctx, &a, FAKE_STREAM, &l), FG_OK);
	assert_int_equal(linear_bind(&a, &l, 0, 5, args), 6);
}

static void
only_sm90_and_sm100_have_a_schedule(void **state)
{
	Fix *f = *state;
	fg_linear_args a = problem(FG_DTYPE_BF16, 4, 64, 64);
	fg_kernel_info info;
	fg_kernel *k, *k100, *k2;
	Linear l;

	assert_int_equal(linear_check(f->ctx, &a, FAKE_STREAM, &l), FG_OK);
	assert_int_equal(linear_kernel(f->ctx, 89, &l.cfg, &k),
		FG_ERR_UNSUPPORTED);
	assert_string_equal(fg_errmsg(f->ctx), FN ": device 0 is sm_89; "
		"fagen's GEMM (gemm_ws_sm90.fa, gemm_ws_sm100.fa) runs on "
		"sm_90a (H100, H200) and sm_100a (B200) only");
	assert_int_equal(linear_kernel(f->ctx, 103, &l.cfg, &k),
		FG_ERR_UNSUPPORTED);
	/* one variant, a kernel per arch, compiled once */
	assert_int_equal(linear_kernel(f->ctx, 90, &l.cfg, &k), FG_OK);
	assert_int_equal(linear_kernel(f->ctx, 100, &l.cfg, &k100), FG_OK);
	assert_ptr_not_equal(k, k100);
	fg_kernel_info_get(k, &info);
	assert_string_equal(info.target, "sm_90a");
	assert_string_equal(info.name, "gemm_ws");
	fg_kernel_info_get(k100, &info);
	assert_string_equal(info.target, "sm_100a");
	assert_int_equal(linear_kernel(f->ctx, 90, &l.cfg, &k2), FG_OK);
	assert_ptr_equal(k2, k);
	a.alpha = 2;
	assert_int_equal(linear_check(f->ctx, &a, FAKE_STREAM, &l), FG_OK);
	assert_int_equal(linear_kernel(f->ctx, 90, &l.cfg, &k2), FG_OK);
	assert_ptr_not_equal(k2, k);
}

/* a's kernel on cc accepts its binding for rows 0 .. m - 1 (m the
 * chunk at most), with the tile grid (cdiv(N, BN), cdiv(m, 128)), BN
 * 128 or 256: fails with what and the context's message otherwise. */
static void
binds(Fix *f, const fg_linear_args *a, int cc, const char *what)
{
	fg_arg args[LIN_NARGS];
	int64_t tiles[3];
	fg_kernel *k;
	Linear l;

	if (linear_check(f->ctx, a, FAKE_STREAM, &l) != FG_OK ||
	    linear_kernel(f->ctx, cc, &l.cfg, &k) != FG_OK)
		fail_msg("%s cc=%d: %s", what, cc, fg_errmsg(f->ctx));
	int64_t m = l.m < l.chunk ? l.m : l.chunk;
	int n = linear_bind(a, &l, 0, m, args);
	if (fg_kernel_check(k, args, n, tiles) != FG_OK)
		fail_msg("%s cc=%d: %s", what, cc, fg_errmsg(f->ctx));
	if (tiles[0] != (l.n + 127) / 128 && tiles[0] != (l.n + 255) / 256)
		fail_msg("%s cc=%d: %lld column tiles for N %lld", what, cc,
			(long long)tiles[0], (long long)l.n);
	assert_int_equal(tiles[1], (m + 127) / 128);
}

/* Every variant of both schedules takes the binding: bf16 and f16, with
 * and without scale, bias and residual, each activation, at the GPU
 * tests' ragged sizes and at a size that takes several launches. */
static void
every_variant_takes_the_binding(void **state)
{
	Fix *f = *state;
	char what[96];

	for (int v = 0; v < 48; v++) {
		fg_dtype dt = v & 1 ? FG_DTYPE_F16 : FG_DTYPE_BF16;
		fg_linear_args a = problem(dt, 1000, 136, 4096);
		a.alpha = v & 2 ? 0.25 : 1;
		a.bias.ptr = v & 4 ? X0 + 3 * GiB : 0;
		a.residual.ptr = v & 8 ? X0 + 4 * GiB : 0;
		a.act = (fg_activation)(v >> 4);
		snprintf(what, sizeof what, "%s alpha=%g%s act=%d%s",
			dt == FG_DTYPE_F16 ? "f16" : "bf16", a.alpha,
			a.bias.ptr ? " bias" : "", (int)a.act,
			a.residual.ptr ? " residual" : "");
		binds(f, &a, 90, what);
		binds(f, &a, 100, what);
	}
	fg_linear_args a = epilogue(FG_DTYPE_BF16, 1, 8, 8);
	binds(f, &a, 90, "M=1 N=8 K=8");
	a = epilogue(FG_DTYPE_BF16, 4097, 1000, 72);
	a.x.rank = 3, a.x.dims[0] = 1, a.x.dims[1] = 4097, a.x.dims[2] = 72;
	binds(f, &a, 90, "[1, 4097, 72]");
	a = far(epilogue(FG_DTYPE_BF16, 3000000, 4096, 8));  /* 6 launches */
	binds(f, &a, 90, "M=3000000 N=4096 residual");
	binds(f, &a, 100, "M=3000000 N=4096 residual");
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(valid_problems_reach_the_driver),
		T(null_args_and_the_legacy_stream_are_refused),
		T(dtype_act_and_alpha_must_be_supported),
		T(x_and_weight_give_the_shape),
		T(out_bias_and_residual_have_their_shapes),
		T(rows_must_be_multiples_of_16_bytes),
		T(pointers_must_be_set_aligned_and_dense),
		T(out_must_not_overlap_an_input),
		T(empty_problems_launch_nothing_and_k_0_is_unsupported),
		T(the_variant_follows_the_arguments),
		T(launches_take_rows_that_fit_32_bits),
		T(only_sm90_and_sm100_have_a_schedule),
		T(every_variant_takes_the_binding),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
