/* test_attention.c: fg_attention_forward without a GPU: every argument
 * check and its message, the defaults (scale, dense strides), the stride
 * mapping onto the shipped schedule's [Z, S, H, D] tensors (checked by
 * fg_kernel_check against each compiled variant), the variant cache, the
 * arch choice, and where the schedules are found.  Every context uses a
 * counting allocator and must give back every byte. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rt_front.h"
#include "testalloc.h"

#define X0 0x7f0000000000ull   /* a 16-byte aligned device address */
#define FAKE_STREAM ((struct CUstream_st *)0x1234)
#define FWD "fg_attention_forward"

typedef struct Fix {
	TestAlloc ta;
	fg_ctx *ctx;
} Fix;

static int
setup(void **state)
{
	Fix *f = calloc(1, sizeof *f);
	fg_options o = {.alloc = test_alloc, .alloc_ud = &f->ta,
		.cache_dir = "", .driver_lib = "/nonexistent/libcuda.so.1",
		.schedule_dir = FAGEN_SRCDIR "/schedules"};

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

/* A valid problem: 2 x 4 heads, 100 queries, 300 keys, D 64, dense. */
static fg_attention_args
problem(void)
{
	return (fg_attention_args){
		.q = X0, .k = X0 + 0x10000000, .v = X0 + 0x20000000,
		.o = X0 + 0x30000000, .lse = X0 + 0x40000000,
		.batch = 2, .heads = 4, .seq_q = 100, .seq_k = 300,
		.head_dim = 64, .dtype = FG_DTYPE_BF16,
	};
}

/* B,S,H,D strides for seq s and h heads: (batch, head, seq, dim). */
static void
bshd_h(int64_t st[4], const fg_attention_args *a, int64_t s, int64_t h)
{
	st[0] = s * h * a->head_dim;
	st[1] = a->head_dim;
	st[2] = h * a->head_dim;
	st[3] = 1;
}

static void
bshd(int64_t st[4], const fg_attention_args *a, int64_t s)
{
	bshd_h(st, a, s, a->heads);
}

static void
invalid(Fix *f, const fg_attention_args *a, const char *want)
{
	fg_status st = fg_attention_forward(f->ctx, a, FAKE_STREAM);

	if (st != FG_ERR_INVALID || !strstr(fg_errmsg(f->ctx), want))
		fail_msg("want FG_ERR_INVALID with '%s', got %s: %s", want,
			fg_status_name(st), fg_errmsg(f->ctx));
	if (strncmp(fg_errmsg(f->ctx), FWD ": ", strlen(FWD) + 2))
		fail_msg("the message does not name the function: %s",
			fg_errmsg(f->ctx));
}

/* Valid arguments get as far as the driver, which is missing. */
static void
valid(Fix *f, const fg_attention_args *a)
{
	fg_status st = fg_attention_forward(f->ctx, a, FAKE_STREAM);

	if (st != FG_ERR_NO_DRIVER)
		fail_msg("want FG_ERR_NO_DRIVER, got %s: %s",
			fg_status_name(st), fg_errmsg(f->ctx));
}

static void
valid_problems_reach_the_driver(void **state)
{
	Fix *f = *state;
	fg_attention_args a = problem();

	valid(f, &a);
	bshd(a.q_strides, &a, a.seq_q);
	bshd(a.o_strides, &a, a.seq_q);
	bshd(a.k_strides, &a, a.seq_k);
	bshd(a.v_strides, &a, a.seq_k);
	a.causal = 1, a.dtype = FG_DTYPE_F16, a.head_dim = 128, a.scale = 0.3;
	valid(f, &a);
	a = problem();
	a.q_strides[0] = 1 << 20, a.q_strides[1] = 4096;  /* padded */
	a.q_strides[2] = 72, a.q_strides[3] = 1;
	valid(f, &a);
	assert_int_equal(fg_attention_forward(NULL, &a, FAKE_STREAM),
		FG_ERR_INVALID);
}

static void
null_args_and_the_legacy_stream_are_refused(void **state)
{
	Fix *f = *state;
	fg_attention_args a = problem();

	assert_int_equal(fg_attention_forward(f->ctx, NULL, FAKE_STREAM),
		FG_ERR_INVALID);
	assert_non_null(strstr(fg_errmsg(f->ctx), "args is NULL"));
	assert_int_equal(fg_attention_forward(f->ctx, &a, NULL),
		FG_ERR_INVALID);
	assert_non_null(strstr(fg_errmsg(f->ctx), "legacy default stream "
		"(NULL)"));
	assert_int_equal(fg_attention_forward(f->ctx, &a, CU_STREAM_LEGACY),
		FG_ERR_INVALID);
	assert_non_null(strstr(fg_errmsg(f->ctx), "(CU_STREAM_LEGACY)"));
	assert_int_equal(fg_attention_forward(f->ctx, &a,
		CU_STREAM_PER_THREAD), FG_ERR_NO_DRIVER);
}

static void
sizes_must_be_positive_and_fit_32_bits(void **state)
{
	Fix *f = *state;
	fg_attention_args a;

	a = problem(), a.batch = 0;
	invalid(f, &a, "batch is 0: sizes must be > 0");
	a = problem(), a.heads = -3;
	invalid(f, &a, "heads is -3: sizes must be > 0");
	a = problem(), a.seq_q = 0;
	invalid(f, &a, "seq_q is 0: sizes must be > 0");
	a = problem(), a.seq_k = -1;
	invalid(f, &a, "seq_k is -1: sizes must be > 0");
	a = problem(), a.head_dim = 0;
	invalid(f, &a, "head_dim is 0: sizes must be > 0");
	a = problem(), a.seq_k = (int64_t)1 << 31;
	invalid(f, &a, "seq_k is 2147483648, which overflows 32-bit "
		"indexing");
	a = problem(), a.batch = 5000000000;
	invalid(f, &a, "batch is 5000000000, which overflows");
	/* each size fits, but LSE's index does not */
	a = problem(), a.batch = 1 << 16, a.heads = 1 << 8, a.seq_q = 1 << 7;
	invalid(f, &a, "batch * heads * seq_q = 65536 * 256 * 128 LSE "
		"entries overflow the kernel's 32-bit indexing");
	a.seq_q = (1 << 7) - 1;
	valid(f, &a);
}

static void
head_dim_dtype_and_scale_must_be_supported(void **state)
{
	Fix *f = *state;
	fg_attention_args a;

	a = problem(), a.head_dim = 80;
	invalid(f, &a, "head_dim is 80; the fused kernels support 64, 96, "
		"128, 192 and 256");
	/* V's head dim: head_dim's, or 128 at 192 (DeepSeek's MLA) */
	a = problem(), a.head_dim_v = 128;
	invalid(f, &a, "head_dim_v is 128 with head_dim 64; the fused "
		"kernels take head_dim_v = head_dim, or 128 with head_dim 192");
	a = problem(), a.head_dim = 192, a.head_dim_v = 64;
	invalid(f, &a, "head_dim_v is 64 with head_dim 192");
	a = problem(), a.head_dim_v = -1;
	invalid(f, &a, "head_dim_v is -1: V's head dim must be > 0 (0: "
		"head_dim)");
	a = problem(), a.head_dim = 96;
	valid(f, &a);
	a = problem(), a.head_dim = 192, a.head_dim_v = 128;
	valid(f, &a);
	a.head_dim_v = 192;
	valid(f, &a);
	a = problem(), a.head_dim = 512;
	invalid(f, &a, "head_dim is 512");
	a = problem(), a.dtype = 0;
	invalid(f, &a, "dtype is 0: use FG_DTYPE_BF16 or FG_DTYPE_F16");
	a = problem(), a.dtype = 7;
	invalid(f, &a, "dtype is 7");
	a = problem(), a.scale = -0.5;
	invalid(f, &a, "scale is -0.5: it must be finite and > 0");
	a = problem(), a.scale = NAN;
	invalid(f, &a, "scale is nan");
	a = problem(), a.scale = INFINITY;
	invalid(f, &a, "scale is inf");
	a = problem(), a.scale = 1e300;
	invalid(f, &a, "scale is 1e+300");
}

/* GQA/MQA: heads_k K/V heads, each shared by heads / heads_k query
 * heads; 0 means heads (MHA).  Dense K/V strides follow heads_k, and the
 * kernel gets G = heads / heads_k. */
static void
kv_heads_must_divide_the_query_heads(void **state)
{
	Fix *f = *state;
	fg_attention_args a;
	fg_arg args[ATTN_NARGS];
	Attn t;

	a = problem(), a.heads = 32, a.heads_k = 8;
	valid(f, &a);
	a = problem(), a.heads = 6, a.heads_k = 4;
	invalid(f, &a, "heads (6) is not a multiple of heads_k (4): "
		"grouped-query attention shares each K/V head among heads / "
		"heads_k query heads");
	a = problem(), a.heads_k = 5;
	invalid(f, &a, "heads_k is 5: the K/V heads must be between 1 and "
		"heads (4), or 0 for heads");
	a = problem(), a.heads_k = -1;
	invalid(f, &a, "heads_k is -1");
	/* dense K/V strides use heads_k; Q and O keep heads */
	a = problem(), a.heads = 8, a.heads_k = 2;
	assert_int_equal(attn_check(f->ctx, FWD, &a, FAKE_STREAM, true, &t),
		FG_OK);
	assert_int_equal(t.st[0][0], 8 * 100 * 64);
	assert_int_equal(t.st[1][0], 2 * 300 * 64);
	assert_int_equal(t.st[2][0], 2 * 300 * 64);
	assert_int_equal(t.st[3][0], 8 * 100 * 64);
	int na = attn_bind(&a, &t, attn_pack(&a, 90), args), g = -1;
	for (int i = 0; i < na; i++)
		if (!strcmp(args[i].name, "G"))
			g = (int)args[i].i;
	assert_int_equal(g, 4);
	/* an overflow names heads_k, not heads */
	a = problem(), a.heads = INT32_MAX, a.heads_k = INT32_MAX;
	a.seq_q = 1, a.seq_k = INT32_MAX, a.head_dim = 64, a.batch = 1;
	invalid(f, &a, "k: its dense strides overflow 64-bit addressing: "
		"heads_k * seq_k * head_dim");
}

static int64_t
arg_int(const fg_arg *args, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(args[i].name, name))
			return args[i].i;
	fail_msg("no argument '%s'", name);
	return -1;
}

/* A sliding window (each side -1 for unbounded, clamped to seq_k; causal
 * makes the right side 0) and a softcap compile their own variants and
 * pass WL, WR and sc_in; bad values are refused before any launch. */
static void
window_and_softcap_are_checked_and_bound(void **state)
{
	Fix *f = *state;
	fg_attention_args a;
	fg_arg args[ATTN_NARGS];
	fg_kernel *k;
	int64_t tiles[3];
	Attn t;

	a = problem(), a.softcap = -1;
	invalid(f, &a, "softcap is -1: it must be finite and > 0 (0: none)");
	a = problem(), a.softcap = NAN;
	invalid(f, &a, "softcap is nan");
	a = problem(), a.window = 1, a.window_left = -2;
	invalid(f, &a, "window is (-2, 0): each side is a number of keys >= "
		"0, or -1 for unbounded");
	a = problem(), a.window = 1, a.seq_k = (int64_t)1 << 30;
	invalid(f, &a, "seq_k is 1073741824: a window needs seq_q and seq_k "
		"below 2^30");
	a = problem(), a.window = 1, a.seq_q = (int64_t)1 << 30;
	a.batch = 1, a.heads = 1;
	invalid(f, &a, "seq_q is 1073741824: a window needs seq_q and seq_k "
		"below 2^30");
	/* the sides the kernel gets */
	a = problem(), a.window = 1, a.window_left = 100, a.window_right = -1;
	assert_int_equal(attn_check(f->ctx, FWD, &a, FAKE_STREAM, true, &t),
		FG_OK);
	assert_int_equal(t.wl, 100);
	/* unbounded: seq_q (row 0 sees keys up to seq_k - seq_q + wr) */
	assert_int_equal(t.wr, 100);
	/* more queries than keys: a right side up to seq_q means something
	 * (row 0 sees keys up to wr - 400), and -1 becomes seq_q (it was
	 * seq_k, which cut rows 0 .. 399's keys off) */
	a.seq_q = 700, a.window_right = 500;
	assert_int_equal(attn_check(f->ctx, FWD, &a, FAKE_STREAM, true, &t),
		FG_OK);
	assert_int_equal(t.wr, 500);
	a.window_right = -1;
	assert_int_equal(attn_check(f->ctx, FWD, &a, FAKE_STREAM, true, &t),
		FG_OK);
	assert_int_equal(t.wl, 100);
	assert_int_equal(t.wr, 700);
	a.window_right = 701;
	assert_int_equal(attn_check(f->ctx, FWD, &a, FAKE_STREAM, true, &t),
		FG_OK);
	assert_int_equal(t.wr, 700);
	a.seq_q = 100;
	a.causal = 1, a.window_left = 1000;     /* clamped; causal: right 0 */
	assert_int_equal(attn_check(f->ctx, FWD, &a, FAKE_STREAM, true, &t),
		FG_OK);
	assert_int_equal(t.wl, 300);
	assert_int_equal(t.wr, 0);
	/* every combination compiles its variant and binds */
	for (int v = 0; v < 8; v++) {
		a = problem();
		a.head_dim = v & 1 ? 128 : 64;
		a.window = (v & 2) != 0, a.window_left = 37, a.window_right = 5;
		a.softcap = v & 4 ? 30.0 : 0;
		a.causal = v == 6;
		if (attn_variant(f->ctx, FWD, 90, &a, &k, NULL) != FG_OK)
			fail_msg("variant %d: %s", v, fg_errmsg(f->ctx));
		assert_int_equal(attn_check(f->ctx, FWD, &a, FAKE_STREAM, true,
			&t), FG_OK);
		int na = attn_bind(&a, &t, attn_pack(&a, 90), args);
		assert_int_equal(na, 11 + (a.window ? 2 : 0) + (a.softcap > 0));
		if (fg_kernel_check(k, args, na, tiles) != FG_OK)
			fail_msg("variant %d: %s", v, fg_errmsg(f->ctx));
		if (a.window) {
			assert_int_equal(arg_int(args, na, "WL"), 37);
			assert_int_equal(arg_int(args, na, "WR"), v == 6 ? 0 : 5);
		}
		/* a kernel without the params refuses them */
		if (!a.window && !a.softcap) {
			args[na] = FG_INT("WL", 37);
			assert_int_not_equal(fg_kernel_check(k, args, na + 1,
				tiles), FG_OK);
		}
	}
	a = problem(), a.softcap = 30.0;        /* head_dim 64: scale 1/8 */
	assert_int_equal(attn_check(f->ctx, FWD, &a, FAKE_STREAM, true, &t),
		FG_OK);
	int na = attn_bind(&a, &t, attn_pack(&a, 90), args);
	assert_true(fabs(args[na - 1].f - 0.125 / 30.0) < 1e-12);
	assert_true(fabs(args[4].f - 30.0 * 1.4426950408889634) < 1e-9);
}

static void
pointers_must_be_set_and_aligned(void **state)
{
	Fix *f = *state;
	fg_attention_args a;

	a = problem(), a.q = 0;
	invalid(f, &a, "q is NULL");
	a = problem(), a.k = 0;
	invalid(f, &a, "k is NULL");
	a = problem(), a.v = X0 + 8;
	invalid(f, &a, "v = 0x7f0000000008 is not 16-byte aligned, as TMA "
		"requires");
	a = problem(), a.o = X0 + 2;
	invalid(f, &a, "o = 0x7f0000000002 is not 16-byte aligned");
	a = problem(), a.lse = 0;
	invalid(f, &a, "lse is NULL");
	a = problem(), a.lse = X0 + 2;
	invalid(f, &a, "lse = 0x7f0000000002 is not aligned to its f32 "
		"elements");
	a = problem(), a.lse = X0 + 4;
	valid(f, &a);
}

static void
strides_must_suit_tma(void **state)
{
	Fix *f = *state;
	fg_attention_args a;

	a = problem();
	bshd(a.k_strides, &a, a.seq_k);
	a.k_strides[3] = 2;
	invalid(f, &a, "k_strides[3] (head_dim) is 2: the head dimension "
		"must be contiguous (stride 1)");
	a.k_strides[3] = 0;  /* some given, so not dense */
	invalid(f, &a, "k_strides[3] (head_dim) is 0");
	a = problem();
	bshd(a.q_strides, &a, a.seq_q);
	a.q_strides[1] = 0;
	invalid(f, &a, "q_strides[1] (heads) is 0: strides must be > 0");
	a.q_strides[1] = -64;
	invalid(f, &a, "q_strides[1] (heads) is -64");
	a.q_strides[1] = 68;
	invalid(f, &a, "q_strides[1] (heads) is 68 elements; TMA needs a "
		"multiple of 8 (16 bytes)");
	a = problem();
	bshd(a.v_strides, &a, a.seq_k);
	a.v_strides[0] = (int64_t)1 << 39;
	invalid(f, &a, "v_strides[0] (batch) is 549755813888 elements; TMA "
		"needs a multiple of 8 (16 bytes) below 2^39");
	a.v_strides[0] = ((int64_t)1 << 39) - 8;
	valid(f, &a);
	a = problem();
	bshd(a.o_strides, &a, a.seq_q);
	a.o_strides[0] = a.o_strides[1] = a.o_strides[2] =
		((int64_t)1 << 39) - 8;
	a.batch = a.heads = 1;
	a.seq_q = INT32_MAX / 2;
	invalid(f, &a, "o: its strides overflow 64-bit addressing");
}

/* The reference takes any head_dim up to 512 and any positive strides. */
static void
the_reference_checks_only_what_it_needs(void **state)
{
	Fix *f = *state;
	fg_attention_args a = problem();
	Attn t;

	a.head_dim = 96;
	a.q = X0 + 2;
	bshd(a.k_strides, &a, a.seq_k);
	a.k_strides[1] = 97;
	a.batch = 1 << 16, a.heads = 1 << 8, a.seq_q = 1 << 7;
	assert_int_equal(attn_check(f->ctx, "ref", &a, FAKE_STREAM, false,
		&t), FG_OK);
	a.head_dim = 513;
	assert_int_equal(attn_check(f->ctx, "ref", &a, FAKE_STREAM, false,
		&t), FG_ERR_INVALID);
	assert_string_equal(fg_errmsg(f->ctx), "ref: head_dim is 513; the "
		"reference supports up to 512");
	a.head_dim = 64;
	a.q = X0 + 1;
	assert_int_equal(attn_check(f->ctx, "ref", &a, FAKE_STREAM, false,
		&t), FG_ERR_INVALID);
	assert_non_null(strstr(fg_errmsg(f->ctx), "is not 2-byte aligned"));
}

static void
defaults_are_dense_bhsd_and_one_over_sqrt_d(void **state)
{
	Fix *f = *state;
	fg_attention_args a = problem();
	Attn t;

	assert_int_equal(attn_check(f->ctx, FWD, &a, FAKE_STREAM, true, &t),
		FG_OK);
	assert_true(fabs(t.scale - 0.125) < 1e-15);
	const int64_t q[4] = {4 * 100 * 64, 100 * 64, 64, 1};
	const int64_t k[4] = {4 * 300 * 64, 300 * 64, 64, 1};
	for (int i = 0; i < 4; i++) {
		assert_int_equal(t.st[0][i], q[i]);
		assert_int_equal(t.st[1][i], k[i]);
		assert_int_equal(t.st[2][i], k[i]);
		assert_int_equal(t.st[3][i], q[i]);
	}
	a.scale = 0.5;
	assert_int_equal(attn_check(f->ctx, FWD, &a, FAKE_STREAM, true, &t),
		FG_OK);
	assert_true(t.scale == 0.5);
}

/* Sinks (gpt-oss): an f32 per head, 4-byte aligned, or 0 for none.  With
 * them the SINKS=true variant is compiled (a variant of its own) and the
 * pointer is bound as its SINK tensor. */
static void
sinks_pick_their_variant_and_bind_as_sink(void **state)
{
	Fix *f = *state;
	fg_attention_args a = problem();
	fg_kernel *plain, *sinks;
	fg_arg args[ATTN_NARGS];
	int64_t tiles[3];
	Attn t;

	a.sinks = X0 + 2;
	invalid(f, &a, "sinks = 0x7f0000000002 is not aligned to its f32 "
		"elements");
	a.sinks = X0 + 0x50000004;
	valid(f, &a);
	for (int d = 64; d <= 128; d += 64) {
		a = problem(), a.head_dim = d;  /* the baseline, fa_fwd_sm90 */
		assert_int_equal(attn_variant(f->ctx, FWD, 90, &a, &plain, NULL),
			FG_OK);
		a.sinks = X0 + 0x50000000;
		if (attn_variant(f->ctx, FWD, 90, &a, &sinks, NULL) != FG_OK)
			fail_msg("D=%d: %s", d, fg_errmsg(f->ctx));
		assert_ptr_not_equal(plain, sinks);
		assert_int_equal(attn_check(f->ctx, FWD, &a, FAKE_STREAM, true,
			&t), FG_OK);
		int n = attn_bind(&a, &t, attn_pack(&a, 90), args);
		assert_int_equal(n, 12);
		assert_string_equal(args[11].name, "SINK");
		assert_int_equal(args[11].t.ptr, X0 + 0x50000000);
		if (fg_kernel_check(sinks, args, n, tiles) != FG_OK)
			fail_msg("D=%d: %s", d, fg_errmsg(f->ctx));
		/* the plain kernel has no SINK; without sinks, no SINK arg */
		assert_int_not_equal(fg_kernel_check(plain, args, n, tiles),
			FG_OK);
		a.sinks = 0;
		assert_int_equal(attn_bind(&a, &t, attn_pack(&a, 90), args), 11);
		assert_int_equal(fg_kernel_check(plain, args, 11, tiles), FG_OK);
	}
}

/* ALiBi (issue #22): slopes are an f32 per head, 4-byte aligned, or 0 for
 * none.  With them the ALIBI=true variant is compiled, in both sm_90
 * schedules, and the pointer is bound as its SLOPES tensor. */
static void
alibi_picks_its_variant_and_binds_slopes(void **state)
{
	Fix *f = *state;
	fg_attention_args a = problem();
	fg_kernel *plain, *alibi;
	fg_arg args[ATTN_NARGS];
	int64_t tiles[3];
	Attn t;

	a.alibi_slopes = X0 + 2;
	invalid(f, &a, "alibi_slopes = 0x7f0000000002 is not aligned to its "
		"f32 elements");
	a.alibi_slopes = X0 + 0x50000004;
	valid(f, &a);
	for (int d = 64; d <= 128; d += 64) {
		a = problem(), a.head_dim = d;  /* the baseline, fa_fwd_sm90 */
		assert_int_equal(attn_variant(f->ctx, FWD, 90, &a, &plain, NULL),
			FG_OK);
		a.alibi_slopes = X0 + 0x50000000;
		if (attn_variant(f->ctx, FWD, 90, &a, &alibi, NULL) != FG_OK)
			fail_msg("D=%d: %s", d, fg_errmsg(f->ctx));
		assert_ptr_not_equal(plain, alibi);
		assert_int_equal(attn_check(f->ctx, FWD, &a, FAKE_STREAM, true,
			&t), FG_OK);
		int n = attn_bind(&a, &t, attn_pack(&a, 90), args);
		assert_int_equal(n, 12);
		assert_string_equal(args[11].name, "SLOPES");
		assert_int_equal(args[11].t.ptr, X0 + 0x50000000);
		if (fg_kernel_check(alibi, args, n, tiles) != FG_OK)
			fail_msg("D=%d: %s", d, fg_errmsg(f->ctx));
		assert_int_not_equal(fg_kernel_check(plain, args, n, tiles),
			FG_OK);
	}
}

/* Programmable attention (issue #22): a mod file replaces the schedule's
 * score_mod and mask_mod hooks, its globals are bound by name after the
 * schedule's own arguments, and a block mask binds four int32 tables.
 * Bad combinations are refused before anything needs the GPU. */
static void
mods_and_block_masks_are_checked_and_bound(void **state)
{
	static const char mods[] =
		"global BIAS : f32[H, SK];\n"
		"mod score_mod(s, b, h, q, k) = s - 0.5 * abs(cvt(q - k, f32)) "
		"+ BIAS[h, 0];\n"
		"mod mask_mod(b, h, q, k) = q >= k || k < 64;\n";
	Fix *f = *state;
	fg_attention_args a = problem();
	fg_arg margs[1] = {FG_PTR("BIAS", X0 + 0x60000000)};
	fg_arg args[ATTN_NARGS];
	fg_kernel *plain, *flex, *again;
	int64_t tiles[3];
	Attn t;
	fg_status st;

	a.score_mod = 1;
	invalid(f, &a, "score_mod is set but mods is NULL");
	a.mods = mods, a.score_mod = 0;
	invalid(f, &a, "neither score_mod nor mask_mod is set");
	a.score_mod = a.mask_mod = 1, a.softcap = 30;
	invalid(f, &a, "a score_mod with a softcap: write the softcap in the "
		"score_mod");
	a.softcap = 0, a.nmod_args = 17, a.mod_args = margs;
	invalid(f, &a, "nmod_args is 17 with mod_args set: give 0 to 16");
	a.nmod_args = 1;
	a.block_kv_num = X0 + 0x70000000;
	invalid(f, &a, "block_kv_idx is NULL, but not all of the block mask "
		"is");
	a.block_kv_idx = X0 + 0x71000000, a.block_full_num = X0 + 0x72000002;
	a.block_full_idx = X0 + 0x73000000;
	invalid(f, &a, "block_full_num = 0x7f0072000002 is not aligned");
	a.block_full_num = X0 + 0x72000000, a.causal = 1;
	invalid(f, &a, "a block mask with causal: write the causal mask as "
		"the mask_mod");
	a.causal = 0, a.block_heads = 3;
	invalid(f, &a, "block_batch = 0, block_heads = 3: each is 0, 1 or the "
		"query's (batch 2, heads 4)");
	a.block_heads = 0, a.block_batch = -1;
	invalid(f, &a, "block_batch = -1");
	a.block_batch = 2;
	valid(f, &a);
	a.block_batch = 0;
	valid(f, &a);
	a.cu_seqlens_q = a.cu_seqlens_k = X0 + 0x74000000;
	a.max_seqlen_q = a.max_seqlen_k = 10;
	st = fg_attention_forward(f->ctx, &a, FAKE_STREAM);
	assert_int_equal(st, FG_ERR_UNSUPPORTED);
	assert_non_null(strstr(fg_errmsg(f->ctx), "not supported with "
		"variable-length batches"));
	a.cu_seqlens_q = a.cu_seqlens_k = 0;
	/* the unfused reference would ignore them: refused */
	st = fg_attention_reference(f->ctx, &a, FAKE_STREAM);
	assert_int_equal(st, FG_ERR_UNSUPPORTED);
	assert_non_null(strstr(fg_errmsg(f->ctx), "no mods or block masks"));

	for (int d = 64; d <= 128; d += 64) {
		fg_attention_args p = problem();

		p.head_dim = a.head_dim = d;
		p.schedule = a.schedule = "fa_fwd_sm90.fa";
		assert_int_equal(attn_variant(f->ctx, FWD, 90, &p, &plain, NULL),
			FG_OK);
		if (attn_variant(f->ctx, FWD, 90, &a, &flex, NULL) != FG_OK)
			fail_msg("D=%d: %s", d, fg_errmsg(f->ctx));
		assert_ptr_not_equal(plain, flex);
		/* the same text is the same variant; another text is not */
		assert_int_equal(attn_variant(f->ctx, FWD, 90, &a, &again, NULL),
			FG_OK);
		assert_ptr_equal(flex, again);
		assert_int_equal(attn_check(f->ctx, FWD, &a, FAKE_STREAM, true,
			&t), FG_OK);
		int n = attn_bind(&a, &t, attn_pack(&a, 90), args);
		assert_int_equal(n, 11 + 1 + 2 + 4 + 1);
		assert_string_equal(args[4].name, "scale_log2");
		assert_true(fabs(args[4].f - 1.4426950408889634) < 1e-12);
		assert_string_equal(args[11].name, "sm_scale");
		assert_true(fabs(args[11].f - 1 / sqrt(d)) < 1e-12);
		/* a batch moves 4 heads of one query block's list, a head
		 * one */
		assert_string_equal(args[12].name, "LZ");
		assert_int_equal(args[12].i, 4);
		assert_string_equal(args[13].name, "LH");
		assert_int_equal(args[13].i, 1);
		assert_string_equal(args[14].name, "KNUM");
		assert_string_equal(args[17].name, "FIDX");
		assert_string_equal(args[18].name, "BIAS");
		if (fg_kernel_check(flex, args, n, tiles) != FG_OK)
			fail_msg("D=%d: %s", d, fg_errmsg(f->ctx));
		/* one mask for every head: a head moves none */
		a.block_heads = 1;
		attn_bind(&a, &t, attn_pack(&a, 90), args);
		assert_int_equal(args[12].i, 1);
		assert_int_equal(args[13].i, 0);
		/* and for every batch too: the one list of each block */
		a.block_batch = 1;
		attn_bind(&a, &t, attn_pack(&a, 90), args);
		assert_int_equal(args[12].i, 0);
		assert_int_equal(args[13].i, 0);
		a.block_batch = a.block_heads = 0;
		assert_int_not_equal(fg_kernel_check(plain, args, n, tiles),
			FG_OK);
	}
	/* a mod file that does not compile names itself */
	a.mods = "mod score_mod(s, b, h, q, k) = s + nothere;\n";
	st = attn_variant(f->ctx, FWD, 90, &a, &flex, NULL);
	assert_int_equal(st, FG_ERR_COMPILE);
	if (!strstr(fg_errmsg(f->ctx), "with the mods given") ||
	    !strstr(fg_errmsg(f->ctx), "nothere"))
		fail_msg("%s", fg_errmsg(f->ctx));
}

/* The backward's checks (before the GPU): sinks and mods pass, as
 * block masks do with their class and range tables; the baseline
 * schedule refuses what it lacks; tables without a mask are refused. */
static void
backward_takes_sinks_mods_and_block_tables(void **state)
{
	Fix *f = *state;
	fg_attention_bwd_args b = {.fwd = problem(), .dout = X0 + 0x60000000,
		.dq = X0 + 0x61000000, .dk = X0 + 0x62000000,
		.dv = X0 + 0x63000000};
	fg_status st;

	b.fwd.sinks = X0 + 0x64000000;
	st = fg_attention_backward(f->ctx, &b, FAKE_STREAM);
	if (st != FG_ERR_NO_DRIVER)
		fail_msg("sinks: %s: %s", fg_status_name(st),
			fg_errmsg(f->ctx));
	b.schedule = "fa_bwd_baseline_sm90.fa";
	assert_int_equal(fg_attention_backward(f->ctx, &b, FAKE_STREAM),
		FG_ERR_UNSUPPORTED);
	assert_non_null(strstr(fg_errmsg(f->ctx), "with sinks"));
	b.schedule = NULL, b.fwd.sinks = 0;
	/* head dims 192 and 256 (issue #13): fa_bwd_sm90.fa's SPLIT form
	 * takes them, and 192 with head_dim_v 128; the baseline does not */
	for (int d = 192; d <= 256; d += 64) {
		b.fwd.head_dim = d;
		st = fg_attention_backward(f->ctx, &b, FAKE_STREAM);
		if (st != FG_ERR_NO_DRIVER)
			fail_msg("head_dim %d: %s: %s", d, fg_status_name(st),
				fg_errmsg(f->ctx));
		b.schedule = "fa_bwd_baseline_sm90.fa";
		assert_int_equal(fg_attention_backward(f->ctx, &b,
			FAKE_STREAM), FG_ERR_UNSUPPORTED);
		if (!strstr(fg_errmsg(f->ctx), "with fa_bwd_baseline_sm90.fa, "
		    "which takes 64, 96 and 128"))
			fail_msg("%s", fg_errmsg(f->ctx));
		b.schedule = NULL;
	}
	b.fwd.head_dim = 192, b.fwd.head_dim_v = 128;
	st = fg_attention_backward(f->ctx, &b, FAKE_STREAM);
	if (st != FG_ERR_NO_DRIVER)
		fail_msg("head_dim 192, head_dim_v 128: %s: %s",
			fg_status_name(st), fg_errmsg(f->ctx));
	b.fwd.head_dim = 64, b.fwd.head_dim_v = 0;
	b.fwd.mods = "mod mask_mod(b, h, q, k) = q >= k;\n";
	b.fwd.mask_mod = 1;
	b.fwd.block_kv_num = X0 + 0x70000000;
	b.fwd.block_kv_idx = X0 + 0x71000000;
	b.fwd.block_full_num = X0 + 0x72000000;
	b.fwd.block_full_idx = X0 + 0x73000000;
	assert_int_equal(fg_attention_backward(f->ctx, &b, FAKE_STREAM),
		FG_ERR_INVALID);
	assert_non_null(strstr(fg_errmsg(f->ctx), "block_qlist is 0"));
	b.block_qlist = X0 + 0x75000002;
	assert_int_equal(fg_attention_backward(f->ctx, &b, FAKE_STREAM),
		FG_ERR_INVALID);
	assert_non_null(strstr(fg_errmsg(f->ctx), "block_qlist = "
		"0x7f0075000002 is not aligned"));
	b.block_qlist = X0 + 0x75000000;
	st = fg_attention_backward(f->ctx, &b, FAKE_STREAM);
	if (st != FG_ERR_NO_DRIVER)
		fail_msg("block mask: %s: %s", fg_status_name(st),
			fg_errmsg(f->ctx));
	b.fwd.block_kv_num = b.fwd.block_kv_idx = 0;
	b.fwd.block_full_num = b.fwd.block_full_idx = 0;
	assert_int_equal(fg_attention_backward(f->ctx, &b, FAKE_STREAM),
		FG_ERR_INVALID);
	assert_non_null(strstr(fg_errmsg(f->ctx), "block_qlist is given but "
		"the forward has no block mask"));
}

/* Issue #13's deterministic backward: refused, naming why, with the
 * baseline schedule (per-element atomics) and with a block mask, before
 * the GPU; otherwise it reaches the driver.  Its main kernel is a
 * variant of its own (-D DETERMINISTIC=true), cached apart from the fast
 * one; the pre and post kernels have none. */
static void
deterministic_backward_refuses_baseline_and_block_masks(void **state)
{
	Fix *f = *state;
	fg_attention_bwd_args b = {.fwd = problem(), .dout = X0 + 0x60000000,
		.dq = X0 + 0x61000000, .dk = X0 + 0x62000000,
		.dv = X0 + 0x63000000, .deterministic = 1};
	static const char BWD[] = "fg_attention_backward";
	fg_kernel *fast, *det, *again, *pre, *pre_det;
	fg_status st;

	st = fg_attention_backward(f->ctx, &b, FAKE_STREAM);
	if (st != FG_ERR_NO_DRIVER)
		fail_msg("deterministic: %s: %s", fg_status_name(st),
			fg_errmsg(f->ctx));
	b.schedule = "fa_bwd_baseline_sm90.fa";
	assert_int_equal(fg_attention_backward(f->ctx, &b, FAKE_STREAM),
		FG_ERR_UNSUPPORTED);
	if (!strstr(fg_errmsg(f->ctx), "deterministic is set but "
	    "fa_bwd_baseline_sm90.fa has no deterministic mode"))
		fail_msg("%s", fg_errmsg(f->ctx));
	b.deterministic = 0;
	st = fg_attention_backward(f->ctx, &b, FAKE_STREAM);
	if (st != FG_ERR_NO_DRIVER)
		fail_msg("baseline: %s: %s", fg_status_name(st),
			fg_errmsg(f->ctx));
	b.schedule = NULL, b.deterministic = 1;
	b.fwd.mods = "mod mask_mod(b, h, q, k) = q >= k;\n";
	b.fwd.mask_mod = 1;
	b.fwd.block_kv_num = X0 + 0x70000000;
	b.fwd.block_kv_idx = X0 + 0x71000000;
	b.fwd.block_full_num = X0 + 0x72000000;
	b.fwd.block_full_idx = X0 + 0x73000000;
	b.block_qlist = X0 + 0x75000000;
	assert_int_equal(fg_attention_backward(f->ctx, &b, FAKE_STREAM),
		FG_ERR_UNSUPPORTED);
	if (!strstr(fg_errmsg(f->ctx), "deterministic is set with a block "
	    "mask"))
		fail_msg("%s", fg_errmsg(f->ctx));
	/* without the mask's tables the mask is refused first, as ever */
	b.block_qlist = 0;
	assert_int_equal(fg_attention_backward(f->ctx, &b, FAKE_STREAM),
		FG_ERR_INVALID);
	assert_non_null(strstr(fg_errmsg(f->ctx), "block_qlist is 0"));

	fg_attention_args a = problem();
	if (attn_kernel(f->ctx, BWD, "fa_bwd_sm90.fa", 90, &a, 0, &fast) ||
	    attn_kernel(f->ctx, BWD, "fa_bwd_sm90.fa", 90, &a,
	    AK_DETERMINISTIC, &det))
		fail_msg("%s", fg_errmsg(f->ctx));
	assert_ptr_not_equal(fast, det);
	assert_int_equal(attn_kernel(f->ctx, BWD, "fa_bwd_sm90.fa", 90, &a,
		AK_DETERMINISTIC, &again), FG_OK);
	assert_ptr_equal(det, again);
	assert_int_equal(attn_kernel(f->ctx, BWD, "fa_bwd_sm90.fa", 90, &a, 0,
		&again), FG_OK);
	assert_ptr_equal(fast, again);
	assert_int_equal(attn_kernel(f->ctx, BWD, "fa_bwd_pre_sm90.fa", 90,
		&a, AK_PLAIN, &pre), FG_OK);
	assert_int_equal(attn_kernel(f->ctx, BWD, "fa_bwd_pre_sm90.fa", 90,
		&a, AK_PLAIN | AK_DETERMINISTIC, &pre_det), FG_OK);
	assert_ptr_equal(pre, pre_det);
}

/* The ABI Python's ctypes mirror (python/fagen) relies on: the fields
 * appended for variable-length batches sit after sinks. */
_Static_assert(sizeof(fg_attention_args) == 416, "fg_attention_args size");
_Static_assert(offsetof(fg_attention_args, pack_gqa) == 384, "pack_gqa");
_Static_assert(offsetof(fg_attention_args, head_dim_v) == 392, "head_dim_v");
_Static_assert(offsetof(fg_attention_args, block_heads) == 408, "block_heads");
_Static_assert(offsetof(fg_attention_args, sinks) == 272, "sinks");
_Static_assert(offsetof(fg_attention_args, cu_seqlens_q) == 280, "cuq");
_Static_assert(offsetof(fg_attention_args, cu_seqlens_k) == 288, "cuk");
_Static_assert(offsetof(fg_attention_args, max_seqlen_q) == 296, "mq");
_Static_assert(offsetof(fg_attention_args, max_seqlen_k) == 304, "mk");
_Static_assert(offsetof(fg_attention_args, alibi_slopes) == 312, "alibi");
_Static_assert(offsetof(fg_attention_args, mods) == 320, "mods");
_Static_assert(offsetof(fg_attention_args, mod_args) == 336, "mod_args");
_Static_assert(offsetof(fg_attention_args, block_full_idx) == 376, "blocks");
_Static_assert(sizeof(fg_attention_bwd_args) == 600, "bwd args size");
_Static_assert(offsetof(fg_attention_bwd_args, block_qlist) == 584,
	"block_qlist");
_Static_assert(offsetof(fg_attention_bwd_args, deterministic) == 592,
	"deterministic");

/* A packed batch of 3 sequences, 100 query and 300 key tokens in all. */
static fg_attention_args
packed(void)
{
	fg_attention_args a = problem();

	a.batch = 3;
	a.cu_seqlens_q = X0 + 0x50000000;
	a.cu_seqlens_k = X0 + 0x50001000;
	a.max_seqlen_q = 60;
	a.max_seqlen_k = 200;
	return a;
}

/* Variable-length batches: both offset tables, aligned; max lengths
 * within the totals; o dense; the VARLEN variant of the head dim's
 * schedule (fa_fwd_baseline_sm90.fa at 64, as dense batches, else
 * fa_fwd_sm90.fa), its grid over max_seqlen_q, MQ, MK, CUQ and CUK
 * bound; the reference refuses them. */
static void
varlen_is_checked_and_bound(void **state)
{
	Fix *f = *state;
	fg_attention_args a;
	fg_kernel *k, *dense, *named;
	fg_arg args[ATTN_NARGS];
	int64_t tiles[3];
	Attn t;

	a = packed(), valid(f, &a);
	a = packed(), a.cu_seqlens_k = 0;
	invalid(f, &a, "cu_seqlens_k is NULL: a variable-length batch gives "
		"both");
	a = packed(), a.cu_seqlens_q = X0 + 2;
	invalid(f, &a, "cu_seqlens_q = 0x7f0000000002 is not aligned");
	a = packed(), a.max_seqlen_q = 0;
	invalid(f, &a, "max_seqlen_q is 0: a variable-length batch needs 1 "
		".. seq_q (100");
	a = packed(), a.max_seqlen_k = 301;
	invalid(f, &a, "max_seqlen_k is 301");
	a = packed(), a.o_strides[0] = 0, a.o_strides[1] = 64;
	a.o_strides[2] = 512, a.o_strides[3] = 1;  /* a padded token row */
	invalid(f, &a, "o_strides are (head 64, token 512): a "
		"variable-length batch writes o from registers");
	a = packed(), a.q_strides[0] = 12345;  /* unused: dense */
	valid(f, &a);
	for (int d = 64; d <= 256; d *= 2) {
		a = problem(), a.head_dim = d;
		assert_int_equal(attn_variant(f->ctx, FWD, 90, &a, &dense, NULL),
			FG_OK);
		a = packed(), a.head_dim = d, a.causal = d == 128;
		if (attn_variant(f->ctx, FWD, 90, &a, &k, NULL) != FG_OK)
			fail_msg("D=%d: %s", d, fg_errmsg(f->ctx));
		assert_ptr_not_equal(k, dense);
		assert_int_equal(attn_check(f->ctx, FWD, &a, FAKE_STREAM, true,
			&t), FG_OK);
		int n = attn_bind(&a, &t, attn_pack(&a, 90), args);
		assert_int_equal(n, 15);
		assert_string_equal(args[11].name, "MQ");
		assert_int_equal(args[11].i, 60);
		assert_string_equal(args[14].name, "CUK");
		assert_int_equal(args[14].t.ptr, X0 + 0x50001000);
		if (fg_kernel_check(k, args, n, tiles) != FG_OK)
			fail_msg("D=%d: %s", d, fg_errmsg(f->ctx));
		/* one query block of 128 rows covers max_seqlen_q = 60 */
		assert_int_equal(tiles[0] * tiles[1] * tiles[2], 1 * 4 * 3);
		assert_int_not_equal(fg_kernel_check(dense, args, n, tiles),
			FG_OK);
		/* the schedule pick() chose, by name: the same variant */
		a.schedule = d == 64 ? "fa_fwd_baseline_sm90.fa" :
			"fa_fwd_sm90.fa";
		assert_int_equal(attn_variant(f->ctx, FWD, 90, &a, &named, NULL),
			FG_OK);
		assert_ptr_equal(named, k);
	}
	/* D = 64: the baseline's 64-row tiles, 2 cover max_seqlen_q = 100,
	 * causal or not (fa_fwd_sm90.fa's 128-row tiles: 1) */
	for (int causal = 0; causal < 2; causal++) {
		a = packed(), a.head_dim = 64, a.causal = causal;
		a.max_seqlen_q = 100;
		assert_int_equal(attn_variant(f->ctx, FWD, 90, &a, &k, NULL), FG_OK);
		assert_int_equal(attn_check(f->ctx, FWD, &a, FAKE_STREAM, true,
			&t), FG_OK);
		int n = attn_bind(&a, &t, attn_pack(&a, 90), args);
		if (fg_kernel_check(k, args, n, tiles) != FG_OK)
			fail_msg("causal=%d: %s", causal, fg_errmsg(f->ctx));
		assert_int_equal(tiles[0] * tiles[1] * tiles[2], 2 * 4 * 3);
		a.schedule = "fa_fwd_sm90.fa";
		assert_int_equal(attn_variant(f->ctx, FWD, 90, &a, &named, NULL),
			FG_OK);
		assert_ptr_not_equal(named, k);
		assert_int_equal(fg_kernel_check(named, args, n, tiles), FG_OK);
		assert_int_equal(tiles[0] * tiles[1] * tiles[2], 1 * 4 * 3);
	}
	/* a packed batch passes the reference's checks (it runs each
	 * sequence on the device: here there is none) */
	a = packed();
	fg_status rs = fg_attention_reference(f->ctx, &a, FAKE_STREAM);
	if (rs != FG_ERR_NO_DRIVER)
		fail_msg("reference, varlen: %s: %s", fg_status_name(rs),
			fg_errmsg(f->ctx));
}

/* Every variant compiles from the shipped schedule, and the arguments
 * fg_attention_forward passes satisfy the kernel for both layouts. */
static void
every_variant_binds_both_layouts(void **state)
{
	Fix *f = *state;
	fg_kernel *k, *again;
	fg_arg args[ATTN_NARGS];
	int64_t tiles[3];
	Attn t;

	for (int v = 0; v < 12; v++) {
		fg_attention_args a = problem();
		a.heads_k = v % 3 == 2 ? 1 : v % 3 == 1 ? 2 : 0;  /* GQA, MQA */
		a.head_dim = v >= 8 ? 256 : v & 1 ? 128 : 64;
		a.dtype = v & 2 ? FG_DTYPE_F16 : FG_DTYPE_BF16;
		a.causal = (v & 4) != 0;
		if (attn_variant(f->ctx, FWD, 90, &a, &k, NULL) != FG_OK)
			fail_msg("variant %d: %s", v, fg_errmsg(f->ctx));
		assert_int_equal(attn_variant(f->ctx, FWD, 90, &a, &again, NULL),
			FG_OK);
		assert_ptr_equal(k, again);  /* compiled once */
		for (int layout = 0; layout < 2; layout++) {
			if (layout) {
				bshd(a.q_strides, &a, a.seq_q);
				bshd(a.o_strides, &a, a.seq_q);
				bshd_h(a.k_strides, &a, a.seq_k,
					attn_heads_k(&a));
				bshd_h(a.v_strides, &a, a.seq_k,
					attn_heads_k(&a));
			}
			assert_int_equal(attn_check(f->ctx, FWD, &a,
				FAKE_STREAM, true, &t), FG_OK);
			int na = attn_bind(&a, &t, attn_pack(&a, 90), args);
			if (fg_kernel_check(k, args, na, tiles) != FG_OK)
				fail_msg("variant %d layout %d: %s", v, layout,
					fg_errmsg(f->ctx));
			/* 100 queries: one 128-row tile per (batch, head)
			 * for fa_fwd_sm90 at D = 128, two 64-row ones for
			 * the baseline, the default at D = 64 */
			assert_int_equal(tiles[0] * tiles[1] * tiles[2],
				a.head_dim == 64 ? 16 : 8);
		}
	}
}

/* nvJitLink assembles PTX as relocatable code, which ignores setmaxnreg
 * and serializes wgmma around calls: fa_fwd_sm90 ran at half speed so.
 * Its kernels are assembled by ptxas, as a whole program, where ptxas is
 * available. */
static void
the_fused_kernel_is_assembled_as_a_whole_program(void **state)
{
	Fix *f = *state;
	fg_attention_args a = problem();
	fg_options o = {.cache_dir = "", .jit = FG_JIT_PTXAS};
	fg_kernel_info info;
	fg_kernel *k, *k2;
	fg_ctx *c2;
	size_t n, n2;

	a.head_dim = 128;
	assert_int_equal(attn_variant(f->ctx, FWD, 90, &a, &k, NULL), FG_OK);
	if (fg_kernel_assemble(k) != FG_OK) {
		print_message("no assembler here: %s\n", fg_errmsg(f->ctx));
		skip();
	}
	fg_kernel_info_get(k, &info);
	assert_int_equal(fg_ctx_create(&c2, &o), FG_OK);
	assert_int_equal(fg_kernel_create(c2, k->ptx, k->ptxlen, &k2), FG_OK);
	if (fg_kernel_assemble(k2) == FG_OK && info.source !=
	    FG_CODE_PTXAS) {
		fg_kernel_free(k2);
		fg_ctx_destroy(c2);
		fail_msg("assembled by %s, not ptxas", info.source ==
			FG_CODE_NVJITLINK ? "nvJitLink" : "?");
	}
	const void *cb = fg_kernel_cubin(k, &n), *cb2 = fg_kernel_cubin(k2,
		&n2);
	if (cb2 && (n != n2 || memcmp(cb, cb2, n)))
		fail_msg("the cubin differs from ptxas's");
	fg_kernel_free(k2);
	fg_ctx_destroy(c2);
}

/* sm_100 takes fa_fwd_sm100.fa, the baseline for ALiBi, packs GQA in
 * 128-row tiles and refuses head_dim 256 and block masks by name; other
 * archs have no schedule. */
static void
each_target_has_schedules(void **state)
{
	Fix *f = *state;
	fg_attention_args a = problem();
	float slopes[4];
	fg_kernel *k, *k2;
	int pack = 0;

	assert_int_equal(attn_variant(f->ctx, FWD, 100, &a, &k, &pack), FG_OK);
	assert_int_equal(pack, 1);
	a.alibi_slopes = (uintptr_t)slopes;
	assert_int_equal(attn_variant(f->ctx, FWD, 100, &a, &k2, NULL), FG_OK);
	assert_ptr_not_equal(k, k2);
	a = problem();
	a.heads_k = 1;
	a.seq_q = 1;
	assert_int_equal(attn_variant(f->ctx, FWD, 100, &a, &k, &pack), FG_OK);
	assert_int_equal(pack, 4);
	a = problem();
	a.head_dim = 256;
	assert_int_equal(attn_variant(f->ctx, FWD, 100, &a, &k, NULL),
		FG_ERR_UNSUPPORTED);
	assert_non_null(strstr(fg_errmsg(f->ctx), "head_dim 256 on sm_100: "
		"fagen's sm_100a attention schedules take head_dim 64, 96, 128 "
		"and 192"));
	/* 96 in the warp-specialized one, 192 in the baseline */
	a = problem(), a.head_dim = 96;
	assert_int_equal(attn_variant(f->ctx, FWD, 100, &a, &k, NULL), FG_OK);
	a = problem(), a.head_dim = 192, a.head_dim_v = 128;
	assert_int_equal(attn_variant(f->ctx, FWD, 100, &a, &k, NULL), FG_OK);
	a = problem();
	a.block_kv_num = X0 + 0x50000000;
	assert_int_equal(attn_variant(f->ctx, FWD, 100, &a, &k, NULL),
		FG_ERR_UNSUPPORTED);
	assert_non_null(strstr(fg_errmsg(f->ctx), "block masks on sm_100"));
	a = problem();
	assert_int_equal(attn_variant(f->ctx, FWD, 75, &a, &k, NULL),
		FG_ERR_UNSUPPORTED);
	assert_non_null(strstr(fg_errmsg(f->ctx), "sm_75; fagen's attention "
		"runs on sm_80 (A100 and later, as PTX), sm_90a (H100, H200), "
		"sm_100a (B200) and sm_120a (RTX 50, RTX PRO 6000) only"));
	/* sm_80 (8.x devices: the runtime's target 80) and sm_120a */
	assert_int_equal(attn_variant(f->ctx, FWD, 80, &a, &k, NULL), FG_OK);
	assert_int_equal(attn_variant(f->ctx, FWD, 120, &a, &k, NULL), FG_OK);
	a.head_dim = 256;
	assert_int_equal(attn_variant(f->ctx, FWD, 120, &a, &k, NULL), FG_OK);
	a = problem();
	a.block_kv_num = X0 + 0x50000000;
	assert_int_equal(attn_variant(f->ctx, FWD, 80, &a, &k, NULL),
		FG_ERR_UNSUPPORTED);
	assert_non_null(strstr(fg_errmsg(f->ctx), "block masks on sm_80"));
}

/* Long head-dim-64 and 96 grids without a mask on sm_90 take
 * fa_fwd_sm90.fa with three consumer warpgroups (-D NC=3; at 96 -D
 * PVS=true) instead of the baseline or two: at seq_q 8192 (64) or 2048
 * (96), not causal, with no feature, packing, other arch or schedule
 * (docs/API.md). */
static void
long_d64_grids_take_three_consumers(void **state)
{
	Fix *f = *state;
	fg_attention_args a = problem();
	const char *ws = "fa_fwd_sm90.fa";
	fg_kernel_info info;
	fg_kernel *base, *nc3;

	a.head_dim = 64, a.seq_q = a.seq_k = 8192;
	assert_true(attn_nc3(&a, 90, ws, 1));
	assert_false(attn_nc3(&a, 90, ws, 2));                 /* packed */
	assert_false(attn_nc3(&a, 100, ws, 1));
	assert_false(attn_nc3(&a, 90, "fa_fwd_baseline_sm90.fa", 1));
	a.seq_q = 8191;
	assert_false(attn_nc3(&a, 90, ws, 1));
	a.seq_q = 8192, a.causal = 1;
	assert_false(attn_nc3(&a, 90, ws, 1));
	a.causal = 0, a.softcap = 30;
	assert_false(attn_nc3(&a, 90, ws, 1));
	a.softcap = 0, a.window = 1, a.window_left = 100;
	assert_false(attn_nc3(&a, 90, ws, 1));
	a = problem();
	a.head_dim = 128, a.seq_q = a.seq_k = 16384;
	assert_false(attn_nc3(&a, 90, ws, 1));
	/* head dim 96 from 2048, with P through shared memory */
	a.head_dim = 96, a.seq_q = 2048;
	assert_true(attn_nc3(&a, 90, ws, 1));
	a.seq_q = 2047;
	assert_false(attn_nc3(&a, 90, ws, 1));
	a.seq_q = 4096, a.head_dim_v = 64;
	assert_false(attn_nc3(&a, 90, ws, 1));
	/* causal at 96 where the grid runs a CTA a tile */
	a.head_dim_v = 0, a.causal = 1;
	assert_true(attn_nc3(&a, 90, ws, 1));
	a.seq_q = 2048;
	assert_false(attn_nc3(&a, 90, ws, 1));
	a.seq_q = 4096, a.heads_k = 1;                          /* GQA */
	assert_false(attn_nc3(&a, 90, ws, 1));
	a.seq_q = 16384;
	assert_true(attn_nc3(&a, 90, ws, 1));
	a.head_dim = 64;
	assert_false(attn_nc3(&a, 90, ws, 1));
	/* the baseline below 8192, the three consumers' kernel from it */
	a = problem();
	a.head_dim = 64, a.seq_q = a.seq_k = 4096;
	assert_int_equal(attn_variant(f->ctx, FWD, 90, &a, &base, NULL), FG_OK);
	fg_kernel_info_get(base, &info);
	assert_int_equal(info.threads, 128);
	a.seq_q = 8192;
	if (attn_variant(f->ctx, FWD, 90, &a, &nc3, NULL) != FG_OK)
		fail_msg("%s", fg_errmsg(f->ctx));
	fg_kernel_info_get(nc3, &info);
	assert_int_equal(info.threads, 512);
	assert_ptr_not_equal(base, nc3);
	a.head_dim = 96, a.seq_q = 4096;
	if (attn_variant(f->ctx, FWD, 90, &a, &nc3, NULL) != FG_OK)
		fail_msg("%s", fg_errmsg(f->ctx));
	fg_kernel_info_get(nc3, &info);
	assert_int_equal(info.threads, 512);
}

/* A long causal or block-masked grid on sm_90 runs a CTA a tile (-D
 * PERSIST=false): at seq_q 4096 with all heads, 16384 with GQA; not with
 * a window, varlen, packing, another schedule or arch. */
static void
long_causal_grids_run_a_cta_a_tile(void **state)
{
	Fix *f = *state;
	fg_attention_args a = problem();
	const char *ws = "fa_fwd_sm90.fa";
	fg_kernel *lpt, *single;

	a.head_dim = 128, a.causal = 1, a.seq_q = a.seq_k = 4096;
	assert_true(attn_single(&a, 90, ws, 1));
	assert_false(attn_single(&a, 90, ws, 4));               /* packed */
	assert_false(attn_single(&a, 100, ws, 1));
	assert_false(attn_single(&a, 90, "fa_fwd_baseline_sm90.fa", 1));
	a.heads_k = 1;                                          /* GQA */
	assert_false(attn_single(&a, 90, ws, 1));
	a.seq_q = 16384;
	assert_true(attn_single(&a, 90, ws, 1));
	a.window = 1, a.window_left = 100;
	assert_false(attn_single(&a, 90, ws, 1));
	a = problem();
	a.head_dim = 128, a.causal = 1, a.seq_q = 2048;
	assert_false(attn_single(&a, 90, ws, 1));
	a.causal = 0, a.seq_q = 16384;
	assert_false(attn_single(&a, 90, ws, 1));
	a.block_kv_num = 0x1000;                        /* a block mask */
	assert_true(attn_single(&a, 90, ws, 1));
	a.seq_q = 2048;
	assert_false(attn_single(&a, 90, ws, 1));
	/* its own variant, compiled with the const */
	a = problem();
	a.head_dim = 128, a.causal = 1, a.seq_q = 1024;
	assert_int_equal(attn_variant(f->ctx, FWD, 90, &a, &lpt, NULL), FG_OK);
	a.seq_q = 4096;
	if (attn_variant(f->ctx, FWD, 90, &a, &single, NULL) != FG_OK)
		fail_msg("%s", fg_errmsg(f->ctx));
	assert_ptr_not_equal(lpt, single);
}

static void
schedules_come_from_option_env_or_built_in_copy(void **state)
{
	TestAlloc ta = {0};
	fg_options o = {.alloc = test_alloc, .alloc_ud = &ta, .cache_dir = "",
		.schedule_dir = "/nonexistent/sched"};
	char path[4096];
	const Shipped *in;
	fg_ctx *c;

	(void)state;
	assert_int_equal(fg_ctx_create(&c, &o), FG_OK);
	setenv("FAGEN_SCHEDULE_DIR", FAGEN_SRCDIR "/schedules", 1);
	assert_int_equal(attn_schedule(c, "fa_fwd_sm90.fa", path,
		sizeof path, &in), FG_ERR_IO);   /* the option wins */
	assert_string_equal(fg_errmsg(c), "cannot read the schedule "
		"'fa_fwd_sm90.fa' in /nonexistent/sched (from "
		"fg_options.schedule_dir)");
	fg_ctx_destroy(c);
	o.schedule_dir = NULL;
	assert_int_equal(fg_ctx_create(&c, &o), FG_OK);
	assert_int_equal(attn_schedule(c, "fa_fwd_sm90.fa", path,
		sizeof path, &in), FG_OK);
	assert_string_equal(path, FAGEN_SRCDIR "/schedules/fa_fwd_sm90.fa");
	setenv("FAGEN_SCHEDULE_DIR", "/nonexistent/env", 1);
	assert_int_equal(attn_schedule(c, "fa_fwd_sm90.fa", path,
		sizeof path, &in), FG_ERR_IO);
	assert_non_null(strstr(fg_errmsg(c), "(from $FAGEN_SCHEDULE_DIR)"));
	unsetenv("FAGEN_SCHEDULE_DIR");
	/* no option, no environment: the built-in copy (test_shipped.c),
	 * else installed, else this source tree */
	assert_int_equal(attn_schedule(c, "fa_fwd_sm90.fa", path,
		sizeof path, &in), FG_OK);
	assert_non_null(in);
	assert_string_equal(path, "<built-in>/fa_fwd_sm90.fa");
	assert_int_equal(attn_schedule(c, "no_such.fa", path,
		sizeof path, &in), FG_ERR_IO);
	assert_non_null(strstr(fg_errmsg(c), "cannot find the schedule "
		"'no_such.fa' among libfagen's built-in schedules nor in "));
	assert_non_null(strstr(fg_errmsg(c), "set FAGEN_SCHEDULE_DIR"));
	fg_ctx_destroy(c);
	assert_int_equal(ta.live, 0);
}

static void
schedule_must_be_a_shipped_file_name(void **state)
{
	Fix *f = *state;
	fg_attention_args a = problem();
	char longname[80];

	a.schedule = "fa_fwd_baseline_sm90.fa";
	valid(f, &a);
	a.schedule = "../fa_fwd_sm90.fa";
	invalid(f, &a, "schedule is '../fa_fwd_sm90.fa': give the file name");
	a.schedule = "/tmp/x.fa";
	invalid(f, &a, "no directory");
	a.schedule = "fa_fwd_sm90";
	invalid(f, &a, "ending in .fa");
	a.schedule = ".fa";
	invalid(f, &a, "schedule is '.fa'");
	memset(longname, 'a', sizeof longname - 4);
	strcpy(longname + sizeof longname - 4, ".fa");
	a.schedule = longname;
	invalid(f, &a, "under 64 bytes");
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(valid_problems_reach_the_driver),
		T(null_args_and_the_legacy_stream_are_refused),
		T(sizes_must_be_positive_and_fit_32_bits),
		T(head_dim_dtype_and_scale_must_be_supported),
		T(kv_heads_must_divide_the_query_heads),
		T(window_and_softcap_are_checked_and_bound),
		T(pointers_must_be_set_and_aligned),
		T(strides_must_suit_tma),
		T(the_reference_checks_only_what_it_needs),
		T(defaults_are_dense_bhsd_and_one_over_sqrt_d),
		T(every_variant_binds_both_layouts),
		T(sinks_pick_their_variant_and_bind_as_sink),
		T(alibi_picks_its_variant_and_binds_slopes),
		T(mods_and_block_masks_are_checked_and_bound),
		T(backward_takes_sinks_mods_and_block_tables),
		T(deterministic_backward_refuses_baseline_and_block_masks),
		T(varlen_is_checked_and_bound),
		T(the_fused_kernel_is_assembled_as_a_whole_program),
		T(each_target_has_schedules),
		T(long_d64_grids_take_three_consumers),
		T(long_causal_grids_run_a_cta_a_tile),
		T(schedule_must_be_a_shipped_file_name),
		cmocka_unit_test(schedules_come_from_option_env_or_built_in_copy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
