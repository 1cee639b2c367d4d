/* test_decode.c: fg_attention_decode's checks and plan without a GPU
 * (runtime/front/decode.c, issue #16): every argument check and its
 * message, the variant chosen from the arguments, FlashAttention's split
 * heuristic, and the plan's workspace (fg_attention_decode_workspace).
 * Every context uses a counting allocator and must give back every
 * byte. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "decodetest.h"

static void
valid_problems_reach_the_driver(void **state)
{
	Fix *f = *state;
	fg_decode_args a;

	a = problem(4, 1, 32, 8, 128, 4096);
	valid(f, &a);
	a.num_splits = 0;           /* the heuristic needs the SMs */
	valid(f, &a);
	a = paged(problem(2, 4, 64, 8, 64, 0), 100, 16, 64);
	a.dtype = FG_DTYPE_F16, a.causal = 1, a.softcap = 30;
	valid(f, &a);
	a = appending(problem(3, 2, 8, 0, 256, 1000), 2);   /* heads_k 0 */
	a.window = 1, a.window_left = 128, a.window_right = -1;
	a.num_splits = 7, a.lse = 0;
	valid(f, &a);
	a = problem(1, 1, 4, 4, 64, 8);
	a.cache_seqlens = 0, a.scale = 0.1;
	a.q_strides[0] = 4096, a.q_strides[1] = 512, a.q_strides[2] = 64;
	a.q_strides[3] = 1;
	a.k_strides[0] = 1 << 20, a.k_strides[1] = 1024;
	a.k_strides[2] = 128, a.k_strides[3] = 1;
	valid(f, &a);
	a.workspace = X0 + 9 * GiB, a.workspace_bytes = 1;
	valid(f, &a);       /* one split and an lse: none needed */
	assert_int_equal(fg_attention_decode(f->ctx, &a,
		CU_STREAM_PER_THREAD), FG_ERR_NO_DRIVER);
	assert_int_equal(fg_attention_decode(NULL, &a, FAKE_STREAM),
		FG_ERR_INVALID);
}

static void
null_args_and_the_legacy_stream_are_refused(void **state)
{
	Fix *f = *state;
	fg_decode_args a = problem(1, 1, 8, 8, 128, 64);
	size_t n;

	assert_int_equal(fg_attention_decode(f->ctx, NULL, FAKE_STREAM),
		FG_ERR_INVALID);
	assert_string_equal(fg_errmsg(f->ctx), FN ": args is NULL");
	assert_int_equal(fg_attention_decode(f->ctx, &a, NULL),
		FG_ERR_INVALID);
	assert_string_equal(fg_errmsg(f->ctx), FN ": fagen does not launch "
		"on the legacy default stream (NULL); pass a stream you "
		"created (cuStreamCreate, best with CU_STREAM_NON_BLOCKING) "
		"or CU_STREAM_PER_THREAD");
	assert_int_equal(fg_attention_decode(f->ctx, &a, CU_STREAM_LEGACY),
		FG_ERR_INVALID);
	assert_non_null(strstr(fg_errmsg(f->ctx), "(CU_STREAM_LEGACY)"));
	assert_int_equal(fg_attention_decode_workspace(f->ctx, NULL, &n),
		FG_ERR_INVALID);
	assert_string_equal(fg_errmsg(f->ctx), FN ": args is NULL");
	assert_int_equal(fg_attention_decode_workspace(f->ctx, &a, NULL),
		FG_ERR_INVALID);
	assert_string_equal(fg_errmsg(f->ctx), FN ": bytes is NULL");
	assert_int_equal(fg_attention_decode_workspace(NULL, &a, &n),
		FG_ERR_INVALID);
}

static void
sizes_are_positive_and_fit_32_bits(void **state)
{
	Fix *f = *state;
	fg_decode_args a;

	a = problem(0, 1, 8, 8, 128, 64);
	invalid(f, &a, FN ": batch is 0: sizes must be > 0");
	a = problem(1, -1, 8, 8, 128, 64);
	invalid(f, &a, FN ": seq_q is -1: sizes must be > 0");
	a = problem(1, 1, 0, 8, 128, 64);
	invalid(f, &a, "heads is 0");
	a = problem(1, 1, 8, 8, 0, 64);
	invalid(f, &a, "head_dim is 0");
	a = problem((int64_t)1 << 31, 1, 8, 8, 128, 64);
	invalid(f, &a, "batch is 2147483648, which overflows 32-bit "
		"indexing (at most 2^31 - 1)");
	a = problem(1, 1, 8, 8, 96, 64);
	invalid(f, &a, FN ": head_dim is 96; the decode kernel supports 64, "
		"128 and 256");
	a = problem(1, 1, 8, 16, 128, 64);
	invalid(f, &a, FN ": heads_k is 16: the K/V heads must be between 1 "
		"and heads (8), or 0 for heads");
	a = problem(1, 1, 8, -1, 128, 64);
	invalid(f, &a, "heads_k is -1");
	a = problem(1, 1, 12, 8, 128, 64);
	invalid(f, &a, FN ": heads (12) is not a multiple of heads_k (8): "
		"grouped-query attention shares each K/V head among heads / "
		"heads_k query heads");
	a = problem(1, 1 << 30, 1, 1, 128, 64);
	invalid(f, &a, FN ": seq_q is 1073741824: the kernel's 32-bit query "
		"positions take at most 2^30 - 1");
	a = problem(1 << 16, 1 << 10, 1 << 6, 1, 128, 64);
	invalid(f, &a, FN ": batch * heads * seq_q = 65536 * 64 * 1024 LSE "
		"entries overflow the kernels' 32-bit indexing (at most "
		"2^31 - 1)");
}

static void
the_cache_is_contiguous_or_paged(void **state)
{
	Fix *f = *state;
	fg_decode_args a;

	a = problem(1, 1, 8, 8, 128, 0);
	invalid(f, &a, FN ": cache_len is 0: a contiguous cache holds 1 to "
		"2^30 - 1 keys a sequence (the kernel's 32-bit key positions)");
	a = problem(1, 1, 8, 8, 128, 1 << 30);
	invalid(f, &a, "cache_len is 1073741824");
	/* paged: cache_len is ignored */
	a = paged(problem(1, 1, 8, 8, 128, 0), 0, 16, 4);
	invalid(f, &a, FN ": num_pages is 0: a paged cache (page_table "
		"given) needs it between 1 and 2^31 - 1");
	a = paged(problem(1, 1, 8, 8, 128, 0), 8, 16, -4);
	invalid(f, &a, "max_pages is -4");
	a = paged(problem(1, 1, 8, 8, 128, 0), 8, (int64_t)1 << 31, 4);
	invalid(f, &a, "page_size is 2147483648");
	a = paged(problem(1, 1, 8, 8, 128, 0), 8, 24, 4);
	invalid(f, &a, FN ": page_size is 24: at head_dim 128 the kernel "
		"loads blocks of 128 keys, so pages hold a multiple of 8 keys "
		"that divides 128 or that 128 divides (8, 16, 32, 64, 128, "
		"256, 384, ...)");
	a = paged(problem(1, 1, 8, 8, 256, 0), 8, 96, 4);
	invalid(f, &a, "page_size is 96: at head_dim 256 the kernel loads "
		"blocks of 64 keys, so pages hold a multiple of 8 keys that "
		"divides 64 or that 64 divides (8, 16, 32, 64, 128, 192, ...)");
	a = paged(problem(1, 1, 8, 8, 128, 0), 8, 12, 4);
	invalid(f, &a, "page_size is 12");
	a = paged(problem(1, 1, 8, 8, 256, 0), 8, 192, 4);
	valid(f, &a);
	a = paged(problem(1, 1, 8, 8, 64, 0), 8, 8, 4);
	valid(f, &a);
	a = paged(problem(1, 1, 8, 8, 128, 0), 8, 1 << 20, 1 << 10);
	invalid(f, &a, FN ": max_pages * page_size = 1024 * 1048576 keys a "
		"sequence overflow the kernel's 32-bit key positions (at most "
		"2^30 - 1)");
	a = paged(problem(1 << 20, 1, 1, 1, 128, 0), 8, 16, 1 << 12);
	invalid(f, &a, FN ": batch * max_pages = 1048576 * 4096 page_table "
		"entries overflow the kernels' 32-bit indexing (at most 2^31 "
		"- 1)");
}

static void
scalars_are_checked(void **state)
{
	Fix *f = *state;
	fg_decode_args a = problem(1, 1, 8, 8, 128, 64);

	a.dtype = FG_DTYPE_F32;
	invalid(f, &a, FN ": dtype is 3: use FG_DTYPE_BF16 or FG_DTYPE_F16");
	a.dtype = 0;
	invalid(f, &a, "dtype is 0");
	a = problem(1, 1, 8, 8, 128, 64), a.scale = -1;
	invalid(f, &a, FN ": scale is -1: it must be finite and > 0 (0: "
		"1/sqrt(head_dim))");
	a.scale = 1.0 / 0.0;
	invalid(f, &a, "scale is inf");
	a = problem(1, 1, 8, 8, 128, 64), a.softcap = -2;
	invalid(f, &a, FN ": softcap is -2: it must be finite and > 0 (0: "
		"none)");
	a = problem(1, 1, 8, 8, 128, 64);
	a.window = 1, a.window_left = -2, a.window_right = 0;
	invalid(f, &a, FN ": window is (-2, 0): each side is a number of "
		"keys >= 0, or -1 for unbounded");
	a.window = 0;       /* the sides are not looked at */
	valid(f, &a);
	a = problem(1, 1, 8, 8, 128, 64), a.num_splits = 257;
	invalid(f, &a, FN ": num_splits is 257: give 1 to 256 splits of the "
		"keys, or 0 for the heuristic");
	a.num_splits = -1;
	invalid(f, &a, "num_splits is -1");
	a.num_splits = 256;
	valid(f, &a);
}

static void
tensors_are_given_aligned_and_strided_for_tma(void **state)
{
	Fix *f = *state;
	fg_decode_args a;

	a = problem(1, 1, 8, 8, 128, 64), a.q = 0;
	invalid(f, &a, FN ": q is NULL");
	a = problem(1, 1, 8, 8, 128, 64), a.v_cache = 0;
	invalid(f, &a, FN ": v_cache is NULL");
	a = problem(1, 1, 8, 8, 128, 64), a.o = 0;
	invalid(f, &a, FN ": o is NULL");
	a = problem(1, 1, 8, 8, 128, 64), a.k_cache += 8;
	invalid(f, &a, FN ": k_cache = 0x7f0040000008 is not 16-byte "
		"aligned, as TMA requires");
	a = problem(1, 1, 8, 8, 128, 64), a.o += 2;
	invalid(f, &a, FN ": o = 0x7f00c0000002 is not 16-byte aligned");
	a = problem(1, 1, 8, 8, 128, 64), a.lse += 2;
	invalid(f, &a, FN ": lse = 0x7f0100000002 is not aligned to its f32 "
		"elements");
	a = problem(1, 1, 8, 8, 128, 64), a.cache_seqlens += 1;
	invalid(f, &a, FN ": cache_seqlens = 0x7f0140000001 is not aligned "
		"to its int32 elements");
	a = paged(problem(1, 1, 8, 8, 128, 0), 8, 16, 4), a.page_table += 2;
	invalid(f, &a, "page_table = 0x7f0180000002 is not aligned to its "
		"int32 elements");
	a = problem(1, 1, 8, 8, 128, 64), a.workspace = X0 + 8;
	invalid(f, &a, FN ": workspace = 0x7f0000000008 is not 16-byte "
		"aligned");
	/* strides in the tensors' own order: (batch, seq, head, dim) */
	a = problem(2, 1, 8, 8, 128, 64);
	a.q_strides[0] = 1024, a.q_strides[1] = 1024, a.q_strides[2] = 128;
	invalid(f, &a, FN ": q_strides[3] (dim) is 0: the head dimension must "
		"be contiguous (stride 1)");
	a.q_strides[3] = 1;
	valid(f, &a);
	a.q_strides[3] = 2;
	invalid(f, &a, FN ": q_strides[3] (dim) is 2: the head dimension must "
		"be contiguous (stride 1)");
	a.q_strides[3] = 1, a.q_strides[2] = 100;
	invalid(f, &a, FN ": q_strides[2] (head) is 100 elements; TMA needs "
		"a multiple of 8 (16 bytes) below 2^39 (2^40 bytes)");
	a.q_strides[2] = 128, a.q_strides[1] = 0;
	invalid(f, &a, FN ": q_strides[1] (seq) is 0: strides must be > 0 "
		"(or all 0: dense)");
	a = problem(2, 1, 8, 8, 128, 64);
	a.k_strides[0] = (int64_t)1 << 39, a.k_strides[1] = 1024;
	a.k_strides[2] = 128, a.k_strides[3] = 1;
	invalid(f, &a, "k_strides[0] (batch) is 549755813888 elements");
	a = paged(problem(2, 1, 8, 8, 128, 0), 8, 16, 4);
	a.v_strides[0] = 16 * 1024, a.v_strides[1] = -1024;
	a.v_strides[2] = 128, a.v_strides[3] = 1;
	invalid(f, &a, FN ": v_strides[1] (row) is -1024: strides must be > "
		"0");
	a = problem(2, 1, 8, 8, 128, 64);
	a.k_strides[0] = (int64_t)1 << 38, a.k_strides[1] = (int64_t)1 << 38;
	a.k_strides[2] = 128, a.k_strides[3] = 1;
	a.batch = 1 << 24;
	invalid(f, &a, FN ": k_cache: its strides overflow 64-bit addressing "
		"(its span through k_strides[1], seq)");
}

static void
new_tokens_need_lengths_and_a_dense_cache(void **state)
{
	Fix *f = *state;
	fg_decode_args a;

	a = problem(2, 1, 8, 8, 128, 64), a.seq_new = 1;
	invalid(f, &a, FN ": seq_new is 1 but k_new and v_new are NULL: give "
		"the new keys and values, or seq_new 0");
	a = appending(problem(2, 1, 8, 8, 128, 64), 1), a.v_new = 0;
	invalid(f, &a, FN ": v_new is NULL but k_new is given: the new keys "
		"and values come together");
	a = appending(problem(2, 1, 8, 8, 128, 64), 1), a.k_new = 0;
	invalid(f, &a, "k_new is NULL but v_new is given");
	a = appending(problem(2, 1, 8, 8, 128, 64), 1), a.v_new += 4;
	invalid(f, &a, FN ": v_new = 0x7f0200000004 is not 16-byte aligned: "
		"kv_append.fa reads it in 16-byte vectors");
	a = appending(problem(2, 1, 8, 8, 128, 64), 0);
	invalid(f, &a, FN ": seq_new is 0: k_new and v_new hold 1 to 64 new "
		"tokens a sequence (the cache's capacity)");
	a = appending(problem(2, 1, 8, 8, 128, 64), 65);
	invalid(f, &a, "seq_new is 65");
	a = appending(problem(2, 1, 8, 8, 128, 64), 64);
	valid(f, &a);
	a.cache_seqlens = 0;
	invalid(f, &a, FN ": k_new is given but cache_seqlens is NULL: the "
		"new tokens go after each sequence's cached keys, so give "
		"cache_seqlens (int32 [batch], the keys before them)");
	/* kv_append.fa addresses the cache densely */
	a = appending(problem(2, 1, 8, 8, 128, 64), 1);
	a.k_strides[0] = 64 * 1024, a.k_strides[1] = 1024;
	a.k_strides[2] = 128, a.k_strides[3] = 1;
	valid(f, &a);       /* the dense strides, given */
	a.k_strides[0] = 128 * 1024;
	invalid(f, &a, FN ": k_cache's strides are (131072, 1024, 128, 1), "
		"but kv_append.fa writes k_new and v_new into a dense cache: "
		"they must be (65536, 1024, 128, 1) (or all 0)");
	a = appending(paged(problem(2, 1, 8, 8, 128, 0), 8, 16, 4), 1);
	a.v_strides[0] = 16 * 1024, a.v_strides[1] = 2048;
	a.v_strides[2] = 128, a.v_strides[3] = 1;
	invalid(f, &a, "v_cache's strides are (16384, 2048, 128, 1), but "
		"kv_append.fa writes k_new and v_new into a dense cache: they "
		"must be (16384, 1024, 128, 1)");
	/* kv_append.fa's 32-bit indexing */
	a = appending(problem(1, 1, 8, 8, 128, 1 << 21), 1 << 21);
	invalid(f, &a, FN ": k_new: a sequence's seq_new * heads_k * head_dim "
		"= 2097152 * 8 * 128 elements overflow kv_append.fa's 32-bit "
		"indexing (at most 2^31 - 1)");
	a = appending(problem(1, 1, 8, 8, 128, 1 << 21), 1);
	invalid(f, &a, FN ": k_cache: a sequence's cache_len * heads_k * "
		"head_dim = 2097152 * 8 * 128 elements overflow kv_append.fa's "
		"32-bit indexing (at most 2^31 - 1) when k_new is given");
	a = appending(paged(problem(1, 1, 8, 8, 128, 0), 1 << 14, 128, 8), 1);
	invalid(f, &a, FN ": k_cache: num_pages * page_size * heads_k * "
		"head_dim = 16384 * 128 * 8 * 128 elements overflow "
		"kv_append.fa's 32-bit indexing (at most 2^31 - 1) when k_new "
		"is given");
	a.k_new = a.v_new = 0, a.seq_new = 0;   /* TMA's 64-bit addressing */
	valid(f, &a);
}

static void
the_variant_follows_the_arguments(void **state)
{
	Fix *f = *state;
	fg_decode_args a;
	Decode t;

	a = problem(4, 1, 32, 8, 128, 4096);
	assert_int_equal(decode_check(f->ctx, &a, &t), FG_OK);
	assert_int_equal(t.cfg.kind, DEC_ATTN);
	assert_int_equal(t.cfg.d, 128);
	assert_int_equal(t.cfg.dt, FG_DTYPE_BF16);
	assert_int_equal(t.g, 4);
	assert_int_equal(t.cfg.pack, 4);
	assert_int_equal(t.cfg.nw, 1);
	assert_int_equal(t.cfg.ps, 0);
	assert_true(t.cfg.seqlens);
	assert_false(t.cfg.causal || t.cfg.window || t.cfg.softcap);
	assert_int_equal(t.cap, 4096);
	assert_int_equal(t.bn, 128);
	assert_int_equal(t.tiles, 4 * 8);
	/* PACK = gcd(G, 64); NW = 2 past 64 rows */
	a = problem(2, 16, 48, 8, 64, 100);         /* G 6 */
	assert_int_equal(decode_check(f->ctx, &a, &t), FG_OK);
	assert_int_equal(t.cfg.pack, 2);
	assert_int_equal(t.cfg.nw, 1);              /* 32 rows */
	assert_int_equal(t.tiles, 2 * 24);
	a.seq_q = 33;                               /* 66 rows */
	assert_int_equal(decode_check(f->ctx, &a, &t), FG_OK);
	assert_int_equal(t.cfg.nw, 2);
	assert_int_equal(t.tiles, 2 * 24);
	a = problem(1, 3, 128, 1, 256, 100);        /* G 128 */
	assert_int_equal(decode_check(f->ctx, &a, &t), FG_OK);
	assert_int_equal(t.cfg.pack, 64);
	assert_int_equal(t.cfg.nw, 2);
	assert_int_equal(t.bn, 64);
	assert_int_equal(t.tiles, 2 * 2);           /* 192 rows a group */
	a = problem(1, 5, 8, 8, 128, 100);          /* MHA */
	assert_int_equal(decode_check(f->ctx, &a, &t), FG_OK);
	assert_int_equal(t.cfg.pack, 1);
	assert_int_equal(t.tiles, 8);
	/* causal; a window makes causal its right side */
	a = problem(1, 1, 8, 8, 128, 100);
	a.causal = 1, a.cache_seqlens = 0, a.softcap = 50;
	assert_int_equal(decode_check(f->ctx, &a, &t), FG_OK);
	assert_true(t.cfg.causal && t.cfg.softcap);
	assert_false(t.cfg.window || t.cfg.seqlens);
	a.window = 1, a.window_left = 30, a.window_right = 5;
	assert_int_equal(decode_check(f->ctx, &a, &t), FG_OK);
	assert_true(t.cfg.window);
	assert_false(t.cfg.causal);
	assert_int_equal(t.wl, 30);
	assert_int_equal(t.wr, 0);
	a.causal = 0, a.window_left = -1, a.window_right = 500;
	assert_int_equal(decode_check(f->ctx, &a, &t), FG_OK);
	assert_int_equal(t.wl, 100);                /* clamped to the cache */
	assert_int_equal(t.wr, 100);
	/* more new tokens than the cache holds: the right side is bound by
	 * seq_q, so that row 0 still sees the last key */
	a.seq_q = 300, a.window_right = -1;
	assert_int_equal(decode_check(f->ctx, &a, &t), FG_OK);
	assert_int_equal(t.wr, 300);
	a.seq_q = 1, a.window_right = 500;
	assert_true(t.scale == 1 / sqrt(128.0));
	/* paged */
	a = paged(problem(1, 1, 8, 8, 128, 0), 9, 256, 3);
	a.dtype = FG_DTYPE_F16;
	assert_int_equal(decode_check(f->ctx, &a, &t), FG_OK);
	assert_int_equal(t.cfg.ps, 256);
	assert_int_equal(t.cap, 768);
	assert_int_equal(t.cfg.dt, FG_DTYPE_F16);
	DecCfg g = decode_cfg(&t, DEC_APPEND);
	assert_int_equal(g.kind, DEC_APPEND);
	assert_int_equal(g.ps, 256);
	assert_int_equal(g.d, 128);
	assert_int_equal(g.pack, 0);
	g = decode_cfg(&t, DEC_COMBINE);
	assert_int_equal(g.ps, 0);
	assert_int_equal(g.dt, FG_DTYPE_F16);
}

/* FlashAttention's num_splits_heuristic (values from its code run by
 * hand): one split once the tiles fill 80 % of the SMs, else the
 * fewest splits within 85 % of the best wave efficiency, counting only
 * splits that change the blocks a split. */
static void
the_heuristic_is_flash_attentions(void **state)
{
	(void)state;
	assert_int_equal(decode_splits(106, 1000, 132), 1);
	assert_int_equal(decode_splits(105, 1000, 132), 5);
	assert_int_equal(decode_splits(1, 1000, 132), 112);
	assert_int_equal(decode_splits(1, 8192, 132), 110);
	assert_int_equal(decode_splits(32, 64, 132), 4);
	assert_int_equal(decode_splits(8, 64, 132), 16);
	assert_int_equal(decode_splits(16, 256, 132), 7);
	assert_int_equal(decode_splits(64, 512, 114), 5);
	assert_int_equal(decode_splits(8, 1000, 132), 15);
	assert_int_equal(decode_splits(2, 33, 78), 33);
	assert_int_equal(decode_splits(50, 16, 132), 2);
	assert_int_equal(decode_splits(4, 2, 132), 2);
	assert_int_equal(decode_splits(1, 1, 132), 1);
	assert_int_equal(decode_splits(1, 1000, 0), 1);
}

static void
the_plan_lays_out_the_workspace(void **state)
{
	Fix *f = *state;
	fg_decode_args a;
	Decode t;
	size_t n;

	/* one split with an lse: no workspace */
	a = problem(2, 3, 32, 8, 128, 4096);
	assert_int_equal(fg_attention_decode_workspace(f->ctx, &a, &n), FG_OK);
	assert_int_equal(n, 0);
	assert_string_equal(fg_errmsg(f->ctx), "");
	/* without one, the LSE's 2 * 32 * 3 f32 */
	a.lse = 0;
	assert_int_equal(fg_attention_decode_workspace(f->ctx, &a, &n), FG_OK);
	assert_int_equal(n, 768);
	/* 5 splits: O's partials, then LSE's, then the LSE */
	a.num_splits = 5;
	assert_int_equal(fg_attention_decode_workspace(f->ctx, &a, &n), FG_OK);
	assert_int_equal(n, 5 * 192 * 128 * 4 + 5 * 192 * 4 + 768);
	assert_int_equal(decode_check(f->ctx, &a, &t), FG_OK);
	assert_int_equal(decode_plan(f->ctx, &a, 0, &t), FG_OK);
	assert_int_equal(t.ns, 5);
	assert_true(t.cfg.split);
	assert_int_equal(t.op, 0);
	assert_int_equal(t.lsep, 5 * 192 * 128 * 4);
	assert_int_equal(t.lse, t.lsep + 5 * 192 * 4);
	assert_int_equal(t.bytes, n);
	/* 16-byte alignment after an odd count of rows */
	a = problem(1, 1, 3, 1, 64, 100);
	a.num_splits = 3, a.lse = 0;
	assert_int_equal(decode_check(f->ctx, &a, &t), FG_OK);
	assert_int_equal(decode_plan(f->ctx, &a, 0, &t), FG_OK);
	assert_int_equal(t.lsep, 3 * 3 * 64 * 4);
	assert_int_equal(t.lse, 3 * 3 * 64 * 4 + 48);   /* 36 bytes, up */
	assert_int_equal(t.bytes, t.lse + 12);
	/* the heuristic needs the device's SMs */
	a.num_splits = 0;
	assert_int_equal(fg_attention_decode_workspace(f->ctx, &a, &n),
		FG_ERR_NO_DRIVER);
	assert_int_equal(decode_plan(f->ctx, &a, 132, &t), FG_OK);
	assert_int_equal(t.ns, 1);      /* one block */
	a = problem(1, 1, 32, 8, 128, 128 * 1000);
	a.num_splits = 0;
	assert_int_equal(decode_check(f->ctx, &a, &t), FG_OK);
	assert_int_equal(decode_plan(f->ctx, &a, 132, &t), FG_OK);
	assert_int_equal(t.tiles, 8);
	assert_int_equal(t.ns, decode_splits(8, 1000, 132));
	assert_int_equal(t.bytes, (size_t)t.ns * 32 * 128 * 4 +
		(size_t)t.ns * 32 * 4);
	/* a workspace too small is refused before the driver */
	a.num_splits = 4, a.workspace = X0 + 9 * GiB;
	a.workspace_bytes = 4 * 32 * 129 * 4 - 1;
	invalid(f, &a, FN ": workspace_bytes is 66047: this call needs 66048 "
		"bytes of workspace (fg_attention_decode_workspace)");
	a.workspace_bytes++;
	valid(f, &a);
	/* the partials are indexed in 32 bits */
	a = problem(256, 256, 64, 8, 256, 1000);
	a.num_splits = 2;
	invalid(f, &a, FN ": num_splits is 2: the partial results, num_splits "
		"* batch * heads * seq_q * head_dim = 2 * 256 * 64 * 256 * 256 "
		"elements, overflow the kernels' 32-bit indexing (at most 2^31 "
		"- 1); use fewer splits");
	a.num_splits = 1;
	valid(f, &a);
	/* the heuristic keeps within them: 109 splits asked, 31 fit */
	a = problem(1, 4096, 64, 1, 256, 1 << 20);
	a.num_splits = 0;
	assert_int_equal(decode_check(f->ctx, &a, &t), FG_OK);
	assert_int_equal(t.tiles, 2048);
	assert_int_equal(decode_plan(f->ctx, &a, 132, &t), FG_OK);
	assert_int_equal(t.ns, 1);      /* the tiles fill the SMs */
	assert_int_equal(decode_splits(2048, 16384, 1 << 18), 109);
	assert_int_equal(decode_plan(f->ctx, &a, 1 << 18, &t), FG_OK);
	assert_int_equal(t.ns, 31);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(valid_problems_reach_the_driver),
		T(null_args_and_the_legacy_stream_are_refused),
		T(sizes_are_positive_and_fit_32_bits),
		T(the_cache_is_contiguous_or_paged),
		T(scalars_are_checked),
		T(tensors_are_given_aligned_and_strided_for_tma),
		T(new_tokens_need_lengths_and_a_dense_cache),
		T(the_variant_follows_the_arguments),
		T(the_heuristic_is_flash_attentions),
		T(the_plan_lays_out_the_workspace),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
