/* test_rows.c: fg_layer_norm, fg_softmax and fg_softmax_backward without
 * a GPU (issue #26), on rows.c's shared machinery that test_norm.c checks
 * through fg_rms_norm: each call's argument checks and their messages,
 * empty problems, the configuration (fg_rms_norm's, for the same row
 * width and addresses), rows too wide for one CTA, the arch, a kernel per
 * schedule and -D list, and the bindings, checked by fg_kernel_check
 * against stand-ins with the schedules' interfaces
 * (tests/unit/norm/layernorm.fa, softmax.fa).  With the argument
 * "schedule" it runs only the check that schedules/layernorm.fa and
 * schedules/softmax.fa compile, on sm_90a and sm_100a, in the
 * configurations the calls pick for the widths, dtypes and switches the
 * GPU tests use, and take the same bindings (unit.rows_schedule).  Every
 * context uses a counting allocator and must give back every byte. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "rowtest.h"

#define LN "fg_layer_norm"
#define SM "fg_softmax"
#define BW "fg_softmax_backward"

/* LayerNorm of x [rows, n] at X0 with a weight and a bias, mean and
 * rstd wanted, no residual; every tensor 1 GiB apart (the [n] and
 * [rows] ones 128 MiB). */
static fg_layernorm_args
layer(fg_dtype dt, int64_t rows, int64_t n)
{
	return (fg_layernorm_args){
		.x = {.ptr = X0, .rank = 2, .dims = {rows, n}},
		.weight = {.ptr = X0 + 0x40000000},
		.bias = {.ptr = X0 + 0x48000000},
		.out = {.ptr = X0 + 0x80000000},
		.mean = X0 + 0xc0000000,
		.rstd = X0 + 0xc8000000,
		.dtype = dt, .eps = 1e-5,
	};
}

static fg_layernorm_args
layer_resid(fg_dtype dt, int64_t rows, int64_t n)
{
	fg_layernorm_args a = layer(dt, rows, n);

	a.residual.ptr = X0 + 0x100000000;
	a.residual_out.ptr = X0 + 0x140000000;
	return a;
}

static fg_softmax_args
soft(fg_dtype dt, int64_t rows, int64_t n)
{
	return (fg_softmax_args){
		.x = {.ptr = X0, .rank = 2, .dims = {rows, n}},
		.out = {.ptr = X0 + 0x80000000},
		.dtype = dt,
	};
}

static fg_softmax_bwd_args
soft_bwd(fg_dtype dt, int64_t rows, int64_t n)
{
	return (fg_softmax_bwd_args){
		.y = {.ptr = X0, .rank = 2, .dims = {rows, n}},
		.dy = {.ptr = X0 + 0x40000000},
		.dx = {.ptr = X0 + 0x80000000},
		.dtype = dt,
	};
}

static void
ln_status(Fix *f, const fg_layernorm_args *a, fg_status want,
	const char *msg)
{
	expect_status(f, LN, fg_layer_norm(f->ctx, a, FAKE_STREAM), want, msg);
}

static void
sm_status(Fix *f, const fg_softmax_args *a, fg_status want, const char *msg)
{
	expect_status(f, SM, fg_softmax(f->ctx, a, FAKE_STREAM), want, msg);
}

static void
bw_status(Fix *f, const fg_softmax_bwd_args *a, fg_status want,
	const char *msg)
{
	expect_status(f, BW, fg_softmax_backward(f->ctx, a, FAKE_STREAM), want,
		msg);
}

/* Valid arguments get as far as the driver, which is missing. */
static void
valid_problems_reach_the_driver(void **state)
{
	Fix *f = *state;
	fg_layernorm_args l;
	fg_softmax_args s;
	fg_softmax_bwd_args b;

	l = layer(FG_DTYPE_BF16, 4, 4096);
	ln_status(f, &l, FG_ERR_NO_DRIVER, "");
	l = layer_resid(FG_DTYPE_F16, 7, 1000);
	l.weight.ptr = l.mean = l.rstd = 0;     /* bias alone, no stats */
	ln_status(f, &l, FG_ERR_NO_DRIVER, "");
	l = layer(FG_DTYPE_F32, 1, 7);          /* rank 1: one row */
	l.x.rank = 1, l.x.dims[0] = 7, l.x.dims[1] = 0;
	l.bias = (fg_tensor){.ptr = l.bias.ptr, .rank = 1, .dims = {7},
		.strides = {1}};
	ln_status(f, &l, FG_ERR_NO_DRIVER, "");
	l.eps = 0;
	ln_status(f, &l, FG_ERR_NO_DRIVER, "");
	s = soft(FG_DTYPE_BF16, 300, 4096);
	sm_status(f, &s, FG_ERR_NO_DRIVER, "");
	s.x = (fg_tensor){.ptr = X0, .rank = 4, .dims = {2, 3, 5, 64},
		.strides = {960, 320, 64, 1}};
	s.out.rank = 4;
	memcpy(s.out.dims, s.x.dims, sizeof s.x.dims);
	sm_status(f, &s, FG_ERR_NO_DRIVER, "");
	b = soft_bwd(FG_DTYPE_F32, 5, 7);
	b.dy.ptr = b.y.ptr;     /* inputs may share memory */
	bw_status(f, &b, FG_ERR_NO_DRIVER, "");
	assert_int_equal(fg_layer_norm(NULL, &l, FAKE_STREAM), FG_ERR_INVALID);
	assert_int_equal(fg_softmax(NULL, &s, FAKE_STREAM), FG_ERR_INVALID);
	assert_int_equal(fg_softmax_backward(NULL, &b, FAKE_STREAM),
		FG_ERR_INVALID);
}

static void
null_args_and_the_legacy_stream_are_refused(void **state)
{
	Fix *f = *state;
	fg_layernorm_args l = layer(FG_DTYPE_BF16, 4, 64);
	fg_softmax_args s = soft(FG_DTYPE_BF16, 4, 64);
	fg_softmax_bwd_args b = soft_bwd(FG_DTYPE_BF16, 4, 64);

	assert_int_equal(fg_layer_norm(f->ctx, NULL, FAKE_STREAM),
		FG_ERR_INVALID);
	assert_string_equal(fg_errmsg(f->ctx), LN ": args is NULL");
	assert_int_equal(fg_softmax(f->ctx, NULL, FAKE_STREAM),
		FG_ERR_INVALID);
	assert_string_equal(fg_errmsg(f->ctx), SM ": args is NULL");
	assert_int_equal(fg_softmax_backward(f->ctx, NULL, FAKE_STREAM),
		FG_ERR_INVALID);
	assert_string_equal(fg_errmsg(f->ctx), BW ": args is NULL");
	assert_int_equal(fg_layer_norm(f->ctx, &l, NULL), FG_ERR_INVALID);
	assert_string_equal(fg_errmsg(f->ctx), LN ": fagen does not launch "
		"on the legacy default stream (NULL); pass a stream you "
		"created (cuStreamCreate, best with CU_STREAM_NON_BLOCKING) "
		"or CU_STREAM_PER_THREAD");
	assert_int_equal(fg_softmax(f->ctx, &s, CU_STREAM_LEGACY),
		FG_ERR_INVALID);
	assert_non_null(strstr(fg_errmsg(f->ctx), "(CU_STREAM_LEGACY)"));
	assert_int_equal(fg_softmax_backward(f->ctx, &b, NULL),
		FG_ERR_INVALID);
	assert_int_equal(fg_softmax_backward(f->ctx, &b, CU_STREAM_PER_THREAD),
		FG_ERR_NO_DRIVER);
}

static void
dtype_and_eps_must_be_supported(void **state)
{
	Fix *f = *state;
	fg_layernorm_args l;
	fg_softmax_args s;
	fg_softmax_bwd_args b;

	l = layer(0, 4, 64);
	ln_status(f, &l, FG_ERR_INVALID, LN ": dtype is 0: use FG_DTYPE_BF16, "
		"FG_DTYPE_F16 or FG_DTYPE_F32");
	l = layer(FG_DTYPE_BF16, 4, 64), l.eps = -1;
	ln_status(f, &l, FG_ERR_INVALID, LN ": eps is -1: it must be finite, "
		">= 0 and fit f32");
	l.eps = INFINITY;
	ln_status(f, &l, FG_ERR_INVALID, "eps is inf");
	s = soft(4, 4, 64);
	sm_status(f, &s, FG_ERR_INVALID, SM ": dtype is 4: use "
		"FG_DTYPE_BF16, FG_DTYPE_F16 or FG_DTYPE_F32");
	b = soft_bwd(-1, 4, 64);
	bw_status(f, &b, FG_ERR_INVALID, BW ": dtype is -1");
}

static void
shapes_must_match_the_first_tensor(void **state)
{
	Fix *f = *state;
	fg_layernorm_args l;
	fg_softmax_args s;
	fg_softmax_bwd_args b;

	l = layer(FG_DTYPE_BF16, 4, 64);
	l.bias.rank = 1, l.bias.dims[0] = 4;
	ln_status(f, &l, FG_ERR_INVALID, LN ": bias.dims[0] is 4; it must be "
		"64 (bias is [n], n x's last dim)");
	l.bias.rank = 2, l.bias.dims[0] = 1, l.bias.dims[1] = 64;
	ln_status(f, &l, FG_ERR_INVALID, "bias.rank is 2; it must be 1 (bias "
		"is [n], n x's last dim)");
	l = layer_resid(FG_DTYPE_BF16, 4, 64);
	l.residual_out.rank = 2, l.residual_out.dims[0] = 4;
	l.residual_out.dims[1] = 63;
	ln_status(f, &l, FG_ERR_INVALID, "residual_out.dims[1] is 63; it must "
		"be 64 (x's shape)");
	s = soft(FG_DTYPE_F16, 4, 64);
	s.out.rank = 1, s.out.dims[0] = 256;
	sm_status(f, &s, FG_ERR_INVALID, SM ": out.rank is 1; it must be 2 "
		"(x's shape)");
	s = soft(FG_DTYPE_F16, 4, 64), s.x.rank = 6;
	sm_status(f, &s, FG_ERR_INVALID, SM ": x.rank is 6: give x's rank, 1 "
		"to 5, and its dims");
	/* the backward's shape is y's */
	b = soft_bwd(FG_DTYPE_BF16, 4, 64), b.y.rank = 0;
	bw_status(f, &b, FG_ERR_INVALID, BW ": y.rank is 0: give y's rank, 1 "
		"to 5, and its dims");
	b = soft_bwd(FG_DTYPE_BF16, -1, 64);
	bw_status(f, &b, FG_ERR_INVALID, "y.dims[0] is -1: extents must be "
		">= 0");
	b = soft_bwd(FG_DTYPE_BF16, 4, 64);
	b.dy.rank = 2, b.dy.dims[0] = 3, b.dy.dims[1] = 64;
	bw_status(f, &b, FG_ERR_INVALID, BW ": dy.dims[0] is 3; it must be 4 "
		"(y's shape)");
	b = soft_bwd(FG_DTYPE_BF16, 4, 64), b.dx.dims[1] = 64;
	bw_status(f, &b, FG_ERR_INVALID, BW ": dx.rank is 0 but its dims are "
		"not all 0: give its rank and dims, or neither (for y's "
		"shape)");
	b = soft_bwd(FG_DTYPE_BF16, (int64_t)1 << 40, (int64_t)1 << 22);
	bw_status(f, &b, FG_ERR_INVALID, BW ": y: its 1099511627776 rows of "
		"4194304 elements overflow 64-bit addressing");
}

static void
residual_and_residual_out_come_together(void **state)
{
	Fix *f = *state;
	fg_layernorm_args l;

	l = layer_resid(FG_DTYPE_BF16, 4, 64), l.residual_out.ptr = 0;
	ln_status(f, &l, FG_ERR_INVALID, LN ": residual is given but "
		"residual_out is NULL: with a residual the kernel writes x + "
		"residual to residual_out");
	l = layer_resid(FG_DTYPE_BF16, 4, 64), l.residual.ptr = 0;
	ln_status(f, &l, FG_ERR_INVALID, "residual_out is given but residual "
		"is NULL");
}

static void
pointers_must_be_set_aligned_and_dense(void **state)
{
	Fix *f = *state;
	fg_layernorm_args l;
	fg_softmax_args s;
	fg_softmax_bwd_args b;

	l = layer(FG_DTYPE_BF16, 4, 64), l.out.ptr = 0;
	ln_status(f, &l, FG_ERR_INVALID, LN ": out.ptr is NULL");
	l = layer(FG_DTYPE_F32, 4, 64), l.bias.ptr += 2;
	ln_status(f, &l, FG_ERR_INVALID, LN ": bias.ptr = 0x7f0048000002 is "
		"not aligned to its 4-byte elements");
	l = layer(FG_DTYPE_BF16, 4, 64), l.mean += 2;
	ln_status(f, &l, FG_ERR_INVALID, LN ": mean = 0x7f00c0000002 is not "
		"aligned to its f32 elements");
	l = layer(FG_DTYPE_BF16, 4, 64), l.rstd = UINT64_MAX - 7;
	ln_status(f, &l, FG_ERR_INVALID, LN ": rstd: 0xfffffffffffffff8 plus "
		"its 4 f32 elements overflows 64-bit addressing");
	l = layer(FG_DTYPE_BF16, 4, 64), l.bias.strides[0] = 2;
	ln_status(f, &l, FG_ERR_INVALID, "bias.strides[0] is 2, but the "
		"kernel addresses bias as dense rows: it must be 1");
	s = soft(FG_DTYPE_BF16, 4, 64), s.x.ptr = 0;
	sm_status(f, &s, FG_ERR_INVALID, SM ": x.ptr is NULL");
	s = soft(FG_DTYPE_BF16, 4, 64), s.x.ptr += 1;
	sm_status(f, &s, FG_ERR_INVALID, SM ": x.ptr = 0x7f0000000001 is not "
		"aligned to its 2-byte elements");
	b = soft_bwd(FG_DTYPE_BF16, 4, 64), b.dy.ptr = 0;
	bw_status(f, &b, FG_ERR_INVALID, BW ": dy.ptr is NULL");
	b = soft_bwd(FG_DTYPE_BF16, 4, 64);
	b.dx.strides[0] = 72, b.dx.strides[1] = 1;
	bw_status(f, &b, FG_ERR_INVALID, BW ": dx.strides[0] is 72, but the "
		"kernel addresses dx as dense rows: it must be 64 (or pass all "
		"strides 0)");
	b = soft_bwd(FG_DTYPE_BF16, 4, 64), b.dx.ptr = UINT64_MAX - 127;
	bw_status(f, &b, FG_ERR_INVALID, BW ": dx: 0xffffffffffffff80 plus "
		"its 512 bytes overflows 64-bit addressing");
}

static void
outputs_must_not_overlap(void **state)
{
	Fix *f = *state;
	fg_layernorm_args l;
	fg_softmax_args s;
	fg_softmax_bwd_args b;

	l = layer(FG_DTYPE_BF16, 4, 64), l.rstd = l.mean + 12;
	ln_status(f, &l, FG_ERR_INVALID, LN ": mean and rstd overlap: outputs "
		"must not overlap the inputs or each other (no in-place "
		"normalization)");
	l.rstd = l.mean + 16;                   /* just past mean */
	ln_status(f, &l, FG_ERR_NO_DRIVER, "");
	l = layer(FG_DTYPE_BF16, 4, 64), l.mean = l.bias.ptr + 64;
	ln_status(f, &l, FG_ERR_INVALID, "bias and mean overlap");
	l = layer_resid(FG_DTYPE_F16, 4, 64), l.out.ptr = l.residual.ptr;
	ln_status(f, &l, FG_ERR_INVALID, "residual and out overlap");
	/* inputs may share memory */
	l = layer_resid(FG_DTYPE_F16, 4, 64);
	l.weight.ptr = l.bias.ptr = l.residual.ptr = l.x.ptr;
	ln_status(f, &l, FG_ERR_NO_DRIVER, "");
	s = soft(FG_DTYPE_BF16, 4, 64), s.out.ptr = s.x.ptr + 510;
	sm_status(f, &s, FG_ERR_INVALID, SM ": x and out overlap: outputs "
		"must not overlap the inputs or each other (no in-place "
		"softmax)");
	b = soft_bwd(FG_DTYPE_BF16, 4, 64), b.dx.ptr = b.dy.ptr;
	bw_status(f, &b, FG_ERR_INVALID, BW ": dy and dx overlap: outputs "
		"must not overlap the inputs or each other (no in-place "
		"softmax)");
	b = soft_bwd(FG_DTYPE_BF16, 4, 64), b.dx.ptr = b.y.ptr + 256;
	bw_status(f, &b, FG_ERR_INVALID, "y and dx overlap");
}

/* Nothing to do succeeds at once, without the driver or addresses; the
 * shapes are still checked. */
static void
empty_problems_launch_nothing(void **state)
{
	Fix *f = *state;
	fg_layernorm_args l;
	fg_softmax_args s;
	fg_softmax_bwd_args b;

	l = layer_resid(FG_DTYPE_BF16, 0, 4096);
	l.x.ptr = l.out.ptr = l.residual_out.ptr = l.mean = 0;
	ln_status(f, &l, FG_OK, "");
	assert_string_equal(fg_errmsg(f->ctx), "");
	l = layer(FG_DTYPE_BF16, 0, 64);
	l.bias.rank = 1, l.bias.dims[0] = 63;
	ln_status(f, &l, FG_ERR_INVALID, "bias.dims[0] is 63");
	s = soft(FG_DTYPE_F32, 1000, 0);
	s.x.ptr = s.out.ptr = 0;
	sm_status(f, &s, FG_OK, "");
	s = soft(FG_DTYPE_BF16, 0, 1 << 30);    /* no width limit either */
	sm_status(f, &s, FG_OK, "");
	b = soft_bwd(FG_DTYPE_F16, 7, 0);
	b.dy.ptr = 0;
	bw_status(f, &b, FG_OK, "");
	b.dy.rank = 1;
	bw_status(f, &b, FG_ERR_INVALID, "dy.rank is 1; it must be 2");
}

static fg_status
ln_check(Fix *f, const fg_layernorm_args *a, Rows *nm)
{
	RowArgs r;

	return rows_check(f->ctx, LN, norm_layer(a, &r), FAKE_STREAM, nm);
}

static fg_status
sm_check(Fix *f, const fg_softmax_args *a, Rows *nm)
{
	RowArgs r;

	return rows_check(f->ctx, SM, norm_softmax(a, &r), FAKE_STREAM, nm);
}

static fg_status
bw_check(Fix *f, const fg_softmax_bwd_args *a, Rows *nm)
{
	RowArgs r;

	return rows_check(f->ctx, BW, norm_softmax_bwd(a, &r), FAKE_STREAM,
		nm);
}

/* got's configuration is want's (fg_rms_norm's), but for its kind and
 * switches. */
static void
same_config(const Rows *got, const Rows *want, RowKind kind,
	unsigned flags, const char *what)
{
	char g[64], w[64];

	cfg_str(&got->cfg, g, sizeof g);
	cfg_str(&want->cfg, w, sizeof w);
	if (strcmp(g, w) || got->chunk != want->chunk ||
	    got->rows != want->rows || got->n != want->n)
		fail_msg("%s: want %s (chunk %lld), got %s (chunk %lld)", what,
			w, (long long)want->chunk, g, (long long)got->chunk);
	assert_int_equal(got->cfg.kind, kind);
	assert_int_equal(got->cfg.dt, want->cfg.dt);
	if (got->cfg.flags != flags)
		fail_msg("%s: switches 0x%x, want 0x%x", what, got->cfg.flags,
			flags);
}

/* The forward softmax: fg_rms_norm's VEC, up to 8 accesses a thread (not
 * 4), at least 8 warps and never two rows of 512 threads a CTA; rows of
 * 16 to 32 KiB with 16-byte accesses the warp-specialized form, 512
 * threads a row and 2 stages (docs/API.md). */
static void
softmax_config(const Rows *got, const Rows *rms, int64_t n, fg_dtype dt,
	const char *what)
{
	int vec = rms->cfg.vec, tpr = 4, esz = dt == FG_DTYPE_F32 ? 4 : 2;
	int pair = dt != FG_DTYPE_F32 && vec == 1 ? 2 : 1;
	bool ws = vec * esz == 16 && n * esz > 16384 && n * esz <= 32768;

	while (tpr < 1024 && n > (int64_t)tpr * vec * 8)
		tpr *= 2;
	if (ws)
		tpr = 512;
	int warps = tpr / 32 > 8 ? tpr / 32 : 8;
	int64_t w = (int64_t)tpr * vec * pair, wide = (n + w - 1) / w * w;
	if (got->cfg.vec != vec || got->cfg.tpr != tpr ||
	    got->cfg.warps != warps || got->cfg.n != wide ||
	    got->chunk != INT32_MAX / wide - warps * 32 / tpr)
		fail_msg("%s: softmax: want VEC=%d TPR=%d WARPS=%d N=%lld, got "
			"VEC=%d TPR=%d WARPS=%d N=%d", what, vec, tpr, warps,
			(long long)wide, got->cfg.vec, got->cfg.tpr,
			got->cfg.warps, got->cfg.n);
	if (got->cfg.st != (ws ? 2 : 0))
		fail_msg("%s: softmax: want ST=%d, got %d", what, ws ? 2 : 0,
			got->cfg.st);
	assert_int_equal(got->cfg.kind, ROW_SOFTMAX);
	assert_int_equal(got->cfg.flags, 0);
}

/* Every call takes fg_rms_norm's configuration for the same width and
 * addresses (test_norm.c checks those against docs/API.md); WHOLD is
 * the norms', by the same rule. */
static void
the_configuration_is_fg_rms_norms(void **state)
{
	static const struct {
		fg_dtype dt;
		int64_t n;
		uint64_t off;   /* byte offset of the second tensor */
	} t[] = {
		{FG_DTYPE_BF16, 1, 0}, {FG_DTYPE_BF16, 2, 0},
		{FG_DTYPE_F16, 7, 0}, {FG_DTYPE_BF16, 64, 0},
		{FG_DTYPE_BF16, 1000, 0}, {FG_DTYPE_F16, 4096, 0},
		{FG_DTYPE_BF16, 5120, 0}, {FG_DTYPE_BF16, 8191, 0},
		{FG_DTYPE_BF16, 16384, 0}, {FG_DTYPE_BF16, 32768, 0},
		{FG_DTYPE_F16, 32767, 0}, {FG_DTYPE_F32, 7, 0},
		{FG_DTYPE_F32, 4096, 0}, {FG_DTYPE_F32, 16384, 0},
		/* the forward softmax's warp-specialized form: 16 to 32
		 * KiB a row, 16-byte accesses */
		{FG_DTYPE_BF16, 8192, 0}, {FG_DTYPE_BF16, 8200, 0},
		{FG_DTYPE_F16, 12288, 0}, {FG_DTYPE_F32, 4100, 0},
		{FG_DTYPE_F32, 8192, 0}, {FG_DTYPE_BF16, 16392, 0},
		{FG_DTYPE_BF16, 12290, 0}, {FG_DTYPE_BF16, 12288, 4},
		/* a misaligned second tensor narrows VEC */
		{FG_DTYPE_BF16, 4096, 2}, {FG_DTYPE_BF16, 4096, 4},
		{FG_DTYPE_BF16, 4096, 8}, {FG_DTYPE_F32, 4096, 4},
	};
	Fix *f = *state;
	char what[64];
	Rows want, got;
	RowArgs r;

	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		fg_rmsnorm_args ra = {
			.x = {.ptr = X0, .rank = 2, .dims = {3, t[i].n}},
			.weight = {.ptr = X0 + 0x40000000 + t[i].off},
			.out = {.ptr = X0 + 0x80000000}, .dtype = t[i].dt};
		fg_layernorm_args l = layer(t[i].dt, 3, t[i].n);
		fg_softmax_args s = soft(t[i].dt, 3, t[i].n);
		fg_softmax_bwd_args b = soft_bwd(t[i].dt, 3, t[i].n);

		l.bias.ptr += t[i].off;
		s.out.ptr += t[i].off;
		b.dy.ptr += t[i].off;
		snprintf(what, sizeof what, "row %zu (%s, n %lld)", i,
			dt_str(t[i].dt), (long long)t[i].n);
		assert_int_equal(rows_check(f->ctx, "fg_rms_norm",
			norm_rms(&ra, &r), FAKE_STREAM, &want), FG_OK);
		unsigned whold = want.cfg.flags & RF_WHOLD;
		if (ln_check(f, &l, &got))
			fail_msg("%s: %s", what, fg_errmsg(f->ctx));
		same_config(&got, &want, ROW_LAYER, RF_WEIGHT | RF_BIAS |
			whold, what);
		assert_int_equal(sm_check(f, &s, &got), FG_OK);
		softmax_config(&got, &want, t[i].n, t[i].dt, what);
		assert_int_equal(bw_check(f, &b, &got), FG_OK);
		same_config(&got, &want, ROW_SOFTMAX_BWD, RF_BWD, what);
	}
	/* the switches: what is given, and WHOLD for wide rows */
	fg_layernorm_args l = layer_resid(FG_DTYPE_BF16, 5000, 32768);
	l.weight.ptr = 0;
	assert_int_equal(ln_check(f, &l, &got), FG_OK);
	assert_int_equal(got.cfg.flags, RF_BIAS | RF_RESID);
	assert_int_equal(got.chunk, INT32_MAX / 32768 - 1);
	l = layer(FG_DTYPE_F32, 5, 16384);
	l.bias.ptr = l.mean = l.rstd = 0;
	assert_int_equal(ln_check(f, &l, &got), FG_OK);
	assert_int_equal(got.cfg.flags, RF_WEIGHT);
	l = layer(FG_DTYPE_F16, 5, 16384);
	assert_int_equal(ln_check(f, &l, &got), FG_OK);
	assert_int_equal(got.cfg.flags, RF_WEIGHT | RF_BIAS);
}

static void
rows_too_wide_take_a_cluster(void **state)
{
	Fix *f = *state;
	fg_layernorm_args l = layer(FG_DTYPE_BF16, 4, 32776);
	fg_softmax_args s = soft(FG_DTYPE_F16, 4, 40000);
	fg_softmax_bwd_args b = soft_bwd(FG_DTYPE_F32, 4, 16388);
	Rows nm;

	/* LayerNorm's threads hold 64 bytes: 16384 16-bit elements a CTA */
	assert_int_equal(ln_check(f, &l, &nm), FG_OK);
	assert_int_equal(nm.cfg.cl, 4);
	assert_int_equal(nm.cfg.n, 8192 + 4096);
	assert_int_equal(nm.cfg.flags, RF_WEIGHT | RF_BIAS);
	l = layer(FG_DTYPE_BF16, 4, 131073);
	ln_status(f, &l, FG_ERR_UNSUPPORTED, LN ": rows of 131073 elements "
		"are wider than a cluster of 8 CTAs takes: 512 threads a CTA "
		"holding 32 elements of a row each, 131072 elements");
	/* the forward softmax: 256-thread CTAs where 8 take the row */
	assert_int_equal(sm_check(f, &s, &nm), FG_OK);
	assert_int_equal(nm.cfg.cl, 4);
	assert_int_equal(nm.cfg.tpr, 256);
	assert_int_equal(nm.cfg.warps, 8);
	s = soft(FG_DTYPE_BF16, 4, 131072);
	assert_int_equal(sm_check(f, &s, &nm), FG_OK);
	assert_int_equal(nm.cfg.cl, 8);
	assert_int_equal(nm.cfg.tpr, 256);
	assert_int_equal(nm.cfg.n, 16384);
	/* past that, 512-thread CTAs */
	s = soft(FG_DTYPE_BF16, 4, 131073);
	assert_int_equal(sm_check(f, &s, &nm), FG_OK);
	assert_int_equal(nm.cfg.cl, 8);
	assert_int_equal(nm.cfg.tpr, 512);
	s = soft(FG_DTYPE_F16, 4, 40000);
	assert_int_equal(bw_check(f, &b, &nm), FG_OK);
	assert_int_equal(nm.cfg.cl, 4);   /* f32, two tensors: 16 a thread */
	s = soft(FG_DTYPE_F16, 4, 262145);
	sm_status(f, &s, FG_ERR_UNSUPPORTED, SM ": rows of 262145 elements "
		"are wider than a cluster of 8 CTAs takes");
	/* the backward's threads hold half as many: two tensors */
	b = soft_bwd(FG_DTYPE_BF16, 4, 131073);
	bw_status(f, &b, FG_ERR_UNSUPPORTED, BW ": rows of 131073 elements "
		"are wider than a cluster of 8 CTAs takes: 512 threads a CTA "
		"holding 32 elements of a row each, 131072 elements");
	s = soft(FG_DTYPE_BF16, 4, 32768);
	sm_status(f, &s, FG_ERR_NO_DRIVER, "");
	/* an argument error comes before the width */
	b = soft_bwd(FG_DTYPE_F32, 4, 1 << 20), b.dx.ptr = 0;
	bw_status(f, &b, FG_ERR_INVALID, "dx.ptr is NULL");
}

static void
only_sm90_and_sm100_have_a_schedule(void **state)
{
	Fix *f = *state;
	fg_layernorm_args l = layer(FG_DTYPE_BF16, 4, 64);
	fg_softmax_bwd_args b = soft_bwd(FG_DTYPE_BF16, 4, 64);
	fg_kernel_info info;
	fg_kernel *k, *k100;
	Rows nm;

	assert_int_equal(ln_check(f, &l, &nm), FG_OK);
	assert_int_equal(rows_kernel(f->ctx, LN, 89, &nm.cfg, &k),
		FG_ERR_UNSUPPORTED);
	assert_string_equal(fg_errmsg(f->ctx), LN ": device 0 is sm_89; "
		"fagen's LayerNorm (layernorm.fa) runs on sm_90a (H100, H200) "
		"and sm_100a (B200) only");
	assert_int_equal(rows_kernel(f->ctx, LN, 90, &nm.cfg, &k), FG_OK);
	assert_int_equal(rows_kernel(f->ctx, LN, 100, &nm.cfg, &k100), FG_OK);
	assert_ptr_not_equal(k, k100);
	fg_kernel_info_get(k100, &info);
	assert_string_equal(info.target, "sm_100a");
	assert_int_equal(bw_check(f, &b, &nm), FG_OK);
	assert_int_equal(rows_kernel(f->ctx, BW, 120, &nm.cfg, &k),
		FG_ERR_UNSUPPORTED);
	assert_string_equal(fg_errmsg(f->ctx), BW ": device 0 is sm_120; "
		"fagen's softmax (softmax.fa) runs on sm_90a (H100, H200) and "
		"sm_100a (B200) only");
}

/* A kernel is compiled once per schedule and -D list: the kind and every
 * switch tell variants apart, even where the rest is the same. */
static void
a_variant_is_its_schedule_and_every_define(void **state)
{
	Fix *f = *state;
	fg_layernorm_args l = layer(FG_DTYPE_BF16, 7, 1000);
	fg_softmax_args s = soft(FG_DTYPE_BF16, 7, 1000);
	fg_softmax_bwd_args b = soft_bwd(FG_DTYPE_BF16, 7, 1000);
	fg_rmsnorm_args ra = {.x = l.x, .weight = l.weight, .out = l.out,
		.rstd = l.rstd, .dtype = l.dtype, .eps = l.eps};
	fg_kernel *k[8];
	RowArgs r;
	int na;

	k[0] = binds(f, LN, norm_layer(&l, &r), "layernorm", 0, 7, &na);
	assert_ptr_equal(binds(f, LN, norm_layer(&l, &r), "layernorm", 0, 7,
		&na), k[0]);
	l.bias.ptr = 0;                 /* -D BIAS=false */
	k[1] = binds(f, LN, norm_layer(&l, &r), "layernorm", 0, 7, &na);
	l.weight.ptr = 0, l.bias.ptr = X0 + 0x48000000;
	k[2] = binds(f, LN, norm_layer(&l, &r), "layernorm", 0, 7, &na);
	k[3] = binds(f, SM, norm_softmax(&s, &r), "softmax", 0, 7, &na);
	k[4] = binds(f, BW, norm_softmax_bwd(&b, &r), "softmax", 0, 7, &na);
	k[5] = binds(f, "fg_rms_norm", norm_rms(&ra, &r), "rmsnorm", 0, 7,
		&na);
	s.x.ptr += 2;                   /* VEC 1 */
	k[6] = binds(f, SM, norm_softmax(&s, &r), "softmax", 0, 7, &na);
	s.x.ptr -= 2, s.dtype = FG_DTYPE_F16;
	k[7] = binds(f, SM, norm_softmax(&s, &r), "softmax", 0, 7, &na);
	for (int i = 0; i < 8; i++)
		for (int j = i + 1; j < 8; j++)
			if (k[i] == k[j])
				fail_msg("variants %d and %d share a kernel", i,
					j);
	s.dtype = FG_DTYPE_BF16;
	assert_ptr_equal(binds(f, SM, norm_softmax(&s, &r), "softmax", 0, 7,
		&na), k[3]);
}

/* The arguments' values, for a later chunk's rows: a tensor of x's shape
 * at its row, an [n] one whole (x's row standing in for one not given),
 * the stats at their rows, those not wanted in scratch. */
static void
the_bindings_match_the_schedules_interfaces(void **state)
{
	Fix *f = *state;
	fg_layernorm_args l = layer_resid(FG_DTYPE_BF16, 100, 64);
	fg_softmax_args s = soft(FG_DTYPE_F32, 100, 64);
	fg_softmax_bwd_args b = soft_bwd(FG_DTYPE_F16, 100, 64);
	fg_arg args[ROW_NARGS];
	RowArgs r;
	Rows nm;
	int na;

	binds(f, LN, norm_layer(&l, &r), "layernorm", 0, 100, &na);
	assert_int_equal(na, 12);
	l.weight.ptr = l.mean = 0;
	binds(f, LN, norm_layer(&l, &r), "layernorm", 40, 60, &na);
	assert_int_equal(ln_check(f, &l, &nm), FG_OK);
	na = rows_bind(norm_layer(&l, &r), &nm, LAUNCH(40, 60), args);
	assert_int_equal(na, 12);
	assert_int_equal(arg(args, na, "M")->i, 60);
	assert_int_equal(arg(args, na, "NC")->i, 64);
	assert_true(arg(args, na, "inv_n")->f == 1.0 / 64);
	assert_true(arg(args, na, "eps")->f == 1e-5);
	assert_int_equal(arg(args, na, "X")->t.ptr, X0 + 40 * 128);
	assert_int_equal(arg(args, na, "W")->t.ptr, X0 + 40 * 128);
	assert_int_equal(arg(args, na, "B")->t.ptr, l.bias.ptr);
	assert_int_equal(arg(args, na, "Y")->t.ptr, l.out.ptr + 40 * 128);
	assert_int_equal(arg(args, na, "R")->t.ptr, l.residual.ptr + 40 * 128);
	assert_int_equal(arg(args, na, "XO")->t.ptr, l.residual_out.ptr +
		40 * 128);
	assert_int_equal(arg(args, na, "MEAN")->t.ptr, SCRATCH + 40 * 4);
	assert_int_equal(arg(args, na, "RSTD")->t.ptr, l.rstd + 40 * 4);
	/* neither stat wanted: rstd's scratch follows mean's */
	l.rstd = 0, l.residual.ptr = l.residual_out.ptr = 0;
	na = rows_bind(norm_layer(&l, &r), &nm, LAUNCH(40, 60), args);
	assert_int_equal(na, 10);
	assert_null(arg(args, na, "R"));
	assert_int_equal(arg(args, na, "RSTD")->t.ptr, SCRATCH + 100 * 4 +
		40 * 4);
	binds(f, LN, norm_layer(&l, &r), "layernorm", 0, 100, &na);
	/* softmax: M, NC and the tensors only */
	binds(f, SM, norm_softmax(&s, &r), "softmax", 0, 100, &na);
	assert_int_equal(sm_check(f, &s, &nm), FG_OK);
	na = rows_bind(norm_softmax(&s, &r), &nm, LAUNCH(40, 60), args);
	assert_int_equal(na, 4);
	assert_null(arg(args, na, "eps"));
	assert_int_equal(arg(args, na, "X")->t.ptr, X0 + 40 * 256);
	assert_int_equal(arg(args, na, "Y")->t.ptr, s.out.ptr + 40 * 256);
	binds(f, BW, norm_softmax_bwd(&b, &r), "softmax", 0, 100, &na);
	assert_int_equal(bw_check(f, &b, &nm), FG_OK);
	na = rows_bind(norm_softmax_bwd(&b, &r), &nm, LAUNCH(40, 60), args);
	assert_int_equal(na, 5);
	assert_int_equal(arg(args, na, "M")->i, 60);
	assert_int_equal(arg(args, na, "Y")->t.ptr, X0 + 40 * 128);
	assert_int_equal(arg(args, na, "DY")->t.ptr, b.dy.ptr + 40 * 128);
	assert_int_equal(arg(args, na, "DX")->t.ptr, b.dx.ptr + 40 * 128);
	/* a problem of f32 rows takes the stand-in with the rest */
	b = soft_bwd(FG_DTYPE_F32, 4099, 7);
	binds(f, BW, norm_softmax_bwd(&b, &r), "softmax", 0, 4099, &na);
}

/* The widths of the GPU tests (tests/gpu/test_python_kernels.py); 32768
 * for 16-bit elements only. */
static const int64_t widths[] = {1, 2, 7, 64, 1000, 1024, 4096, 5120, 8191,
	8192, 16384, 32768};
static const fg_dtype dtypes[] = {FG_DTYPE_BF16, FG_DTYPE_F16,
	FG_DTYPE_F32};

/* schedules/layernorm.fa with each of weight, bias and residual given or
 * not (v's bits 0, 1, 2), at width n, x misaligned (VEC 1) where asked. */
static int
layer_case(Fix *f, fg_dtype dt, int64_t n, unsigned v, bool misaligned)
{
	fg_layernorm_args a = v & 4 ? layer_resid(dt, 4099, n) :
		layer(dt, 4099, n);
	char what[96];
	RowArgs r;

	if (!(v & 1))
		a.weight.ptr = 0;
	if (!(v & 2))
		a.bias.ptr = 0;
	if (misaligned)
		a.x.ptr += dt == FG_DTYPE_F32 ? 4 : 2;
	snprintf(what, sizeof what, "layernorm %s n=%lld%s%s%s%s", dt_str(dt),
		(long long)n, v & 1 ? " weight" : "", v & 2 ? " bias" : "",
		v & 4 ? " residual" : "", misaligned ? " VEC 1" : "");
	return shipped_try(f, LN, norm_layer(&a, &r), "layernorm", what);
}

/* schedules/softmax.fa, forward and backward, at width n. */
static int
softmax_case(Fix *f, fg_dtype dt, int64_t n, bool misaligned)
{
	fg_softmax_args s = soft(dt, 4099, n);
	fg_softmax_bwd_args b = soft_bwd(dt, 4099, n);
	char what[96];
	RowArgs r;
	int nfail;

	if (misaligned) {       /* an element past 16-byte alignment */
		s.x.ptr += dt == FG_DTYPE_F32 ? 4 : 2;
		b.dy.ptr += dt == FG_DTYPE_F32 ? 4 : 2;
	}
	snprintf(what, sizeof what, "softmax %s n=%lld%s", dt_str(dt),
		(long long)n, misaligned ? " misaligned" : "");
	nfail = shipped_try(f, SM, norm_softmax(&s, &r), "softmax", what);
	snprintf(what, sizeof what, "softmax backward %s n=%lld%s",
		dt_str(dt), (long long)n, misaligned ? " misaligned" : "");
	return nfail + shipped_try(f, BW, norm_softmax_bwd(&b, &r), "softmax",
		what);
}

/* schedules/layernorm.fa and softmax.fa themselves: they compile in the
 * configurations of the GPU tests' widths, dtypes and switches, and take
 * the same bindings; every failure is listed with its -D list. */
static void
the_shipped_schedules_compile_for_every_configuration(void **state)
{
	Fix *f = *state;
	int nfail = 0, nrun = 0;

	for (size_t d = 0; d < 3; d++) {
		for (size_t i = 0; i < COUNT(widths); i++) {
			if (dtypes[d] == FG_DTYPE_F32 && widths[i] > 16384)
				continue;
			for (unsigned v = 0; v < 8; v++, nrun += 2)
				nfail += layer_case(f, dtypes[d], widths[i], v,
					false);
			nfail += softmax_case(f, dtypes[d], widths[i], false);
			nrun += 4;
		}
		nfail += layer_case(f, dtypes[d], 4096, 7, true);
		nfail += softmax_case(f, dtypes[d], 4096, true);
		nrun += 6;
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
		T(shapes_must_match_the_first_tensor),
		T(residual_and_residual_out_come_together),
		T(pointers_must_be_set_aligned_and_dense),
		T(outputs_must_not_overlap),
		T(empty_problems_launch_nothing),
		T(the_configuration_is_fg_rms_norms),
		T(rows_too_wide_take_a_cluster),
		T(only_sm90_and_sm100_have_a_schedule),
		T(a_variant_is_its_schedule_and_every_define),
		T(the_bindings_match_the_schedules_interfaces),
	};
	const struct CMUnitTest shipped[] = {
		cmocka_unit_test_setup_teardown(
			the_shipped_schedules_compile_for_every_configuration,
			setup_shipped, teardown),
	};

	if (argc > 1 && !strcmp(argv[1], "schedule"))
		return cmocka_run_group_tests(shipped, NULL, NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
