/* test_decode_run.c: fg_attention_decode's kernels and arguments without
 * a GPU (runtime/front/decode_run.c, issue #16): kv_append.fa's launches
 * over large batches, validate's checks of the tables, the arch, the
 * kernel cache, and the binding, checked by fg_kernel_check against the
 * shipped schedules themselves (fa_decode_sm90.fa, fa_combine.fa and
 * kv_append.fa, in the variants fg_attention_decode picks).  Every
 * context uses a counting allocator and must give back every byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "decodetest.h"

/* Several launches of kv_append.fa where one would overflow its 32-bit
 * indexing or its grid; each moves its pointers on. */
static void
appends_take_the_sequences_that_fit(void **state)
{
	Fix *f = *state;
	fg_arg args[DEC_NARGS];
	fg_decode_args a;
	Decode t;

	a = appending(problem(300, 1, 8, 8, 128, 8192), 2);
	assert_int_equal(decode_check(f->ctx, &a, &t), FG_OK);
	assert_int_equal(t.chunk, INT32_MAX / (8192 * 1024));   /* 255 */
	int n = decode_append_bind(&a, &t, 255, 45, args);
	assert_int_equal(n, 9);
	assert_string_equal(args[0].name, "Z");
	assert_int_equal(args[0].i, 45);
	assert_string_equal(args[4].name, "SEQ");
	assert_int_equal(args[4].t.ptr, a.cache_seqlens + 255 * 4);
	assert_string_equal(args[5].name, "KN");
	assert_int_equal(args[5].t.ptr, a.k_new + 255ull * 2 * 1024 * 2);
	assert_int_equal(args[6].t.ptr, a.v_new + 255ull * 2 * 1024 * 2);
	assert_string_equal(args[7].name, "KC");
	assert_int_equal(args[7].t.ptr, a.k_cache + 255ull * 8192 * 1024 * 2);
	assert_int_equal(args[8].t.ptr, a.v_cache + 255ull * 8192 * 1024 * 2);
	/* paged: the cache stays, the table moves on */
	a = appending(paged(problem(70000, 1, 1, 1, 64, 0), 1000, 16, 4), 1);
	assert_int_equal(decode_check(f->ctx, &a, &t), FG_OK);
	assert_int_equal(t.chunk, 65535);   /* the grid's z */
	n = decode_append_bind(&a, &t, 65535, 4465, args);
	assert_int_equal(n, 12);
	assert_string_equal(args[4].name, "NP");
	assert_string_equal(args[6].name, "PT");
	assert_int_equal(args[6].t.ptr, a.page_table + 65535ull * 4 * 4);
	assert_int_equal(args[10].t.ptr, a.k_cache);
	/* one launch */
	a = appending(problem(3, 1, 8, 8, 128, 100), 5);
	assert_int_equal(decode_check(f->ctx, &a, &t), FG_OK);
	assert_int_equal(t.chunk, 3);
	a = appending(problem(1, 1, 8, 8 * 65536, 128, 100), 5);
	a.heads = 8 * 65536;
	invalid(f, &a, FN ": heads_k is 524288: kv_append.fa's grid takes at "
		"most 524280 K/V heads");
}

static void
validate_checks_the_tables(void **state)
{
	Fix *f = *state;
	int32_t len[3] = {0, 100, 37}, pt[3 * 4] = {
		0, 9, 9, 9,             /* 1 key: page 0 */
		1, 2, 3, 4,             /* 101 keys: pages 1 .. 4 */
		5, 6, 7, 9,             /* 38 keys: pages 5 .. 6 */
	};
	fg_decode_args a;
	Decode t;

	a = appending(paged(problem(3, 1, 8, 8, 128, 0), 9, 32, 4), 1);
	assert_int_equal(decode_check(f->ctx, &a, &t), FG_OK);
	assert_int_equal(decode_tables(f->ctx, &a, &t, len, pt), FG_OK);
	len[1] = 127;               /* 128 keys after the append */
	assert_int_equal(decode_tables(f->ctx, &a, &t, len, pt), FG_OK);
	len[1] = 128;
	expect_status(f, decode_tables(f->ctx, &a, &t, len, pt),
		FG_ERR_INVALID, FN ": validate: cache_seqlens[1] is 128: each "
		"must be 0 .. 127 (the cache holds 128 keys a sequence, "
		"seq_new more appended)");
	len[1] = -1;
	expect_status(f, decode_tables(f->ctx, &a, &t, len, pt),
		FG_ERR_INVALID, "cache_seqlens[1] is -1");
	len[1] = 100, len[2] = 64;  /* a third page */
	assert_int_equal(decode_tables(f->ctx, &a, &t, len, pt), FG_OK);
	len[2] = 96;                /* a fourth */
	expect_status(f, decode_tables(f->ctx, &a, &t, len, pt),
		FG_ERR_INVALID, FN ": validate: page_table[2][3] is 9: page "
		"numbers must be 0 .. 8 (num_pages); sequence 2's 97 keys use "
		"its first 4 entries");
	len[2] = 37, pt[1 * 4 + 0] = -1;
	expect_status(f, decode_tables(f->ctx, &a, &t, len, pt),
		FG_ERR_INVALID, "page_table[1][0] is -1");
	/* without lengths, every sequence fills its pages */
	pt[4] = 1;
	a.k_new = a.v_new = 0, a.seq_new = 0, a.cache_seqlens = 0;
	assert_int_equal(decode_check(f->ctx, &a, &t), FG_OK);
	expect_status(f, decode_tables(f->ctx, &a, &t, NULL, pt),
		FG_ERR_INVALID, "page_table[0][1] is 9: page numbers must be 0 "
		".. 8 (num_pages); sequence 0's 128 keys use its first 4 "
		"entries");
	for (int i = 0; i < 12; i++)
		pt[i] = i % 9;
	assert_int_equal(decode_tables(f->ctx, &a, &t, NULL, pt), FG_OK);
	/* contiguous: lengths only */
	a = problem(3, 1, 8, 8, 128, 100);
	len[0] = 100;
	assert_int_equal(decode_check(f->ctx, &a, &t), FG_OK);
	assert_int_equal(decode_tables(f->ctx, &a, &t, len, NULL), FG_OK);
	len[0] = 101;
	expect_status(f, decode_tables(f->ctx, &a, &t, len, NULL),
		FG_ERR_INVALID, "cache_seqlens[0] is 101: each must be 0 .. "
		"100 (the cache holds 100 keys a sequence)");
}

static void
only_sm90_has_a_schedule(void **state)
{
	Fix *f = *state;
	fg_decode_args a = problem(1, 1, 8, 8, 128, 100);
	fg_kernel_info info;
	fg_kernel *k, *k2, *kc;
	Decode t;

	assert_int_equal(decode_check(f->ctx, &a, &t), FG_OK);
	assert_int_equal(decode_plan(f->ctx, &a, 0, &t), FG_OK);
	assert_int_equal(decode_kernel(f->ctx, 89, &t.cfg, &k),
		FG_ERR_UNSUPPORTED);
	assert_string_equal(fg_errmsg(f->ctx), FN ": device 0 is sm_89; "
		"fagen's decode attention (fa_decode_sm90.fa, "
		"fa_decode_sm100.fa) runs on sm_90a (H100, H200) and sm_100a "
		"(B200) only");
	/* sm_100a: fa_decode_sm100.fa, compiled (not run: no Blackwell) */
	assert_int_equal(decode_kernel(f->ctx, 100, &t.cfg, &k), FG_OK);
	fg_kernel_info_get(k, &info);
	assert_string_equal(info.name, "fa_decode");
	assert_int_equal(decode_kernel(f->ctx, 90, &t.cfg, &k), FG_OK);
	fg_kernel_info_get(k, &info);
	assert_string_equal(info.name, "fa_decode");
	assert_string_equal(info.order, "persistent");
	assert_int_equal(decode_kernel(f->ctx, 90, &t.cfg, &k2), FG_OK);
	assert_ptr_equal(k2, k);
	DecCfg g = decode_cfg(&t, DEC_COMBINE);
	assert_int_equal(decode_kernel(f->ctx, 90, &g, &kc), FG_OK);
	assert_ptr_not_equal(kc, k);
	fg_kernel_info_get(kc, &info);
	assert_string_equal(info.name, "fa_combine");
	g = decode_cfg(&t, DEC_APPEND);
	assert_int_equal(decode_kernel(f->ctx, 90, &g, &k2), FG_OK);
	fg_kernel_info_get(k2, &info);
	assert_string_equal(info.name, "kv_append");
	t.cfg.nw = 2;
	assert_int_equal(decode_kernel(f->ctx, 90, &t.cfg, &k2), FG_OK);
	assert_ptr_not_equal(k2, k);
}

/* a's kernels accept its binding on nsm SMs (0: its num_splits), with
 * their tile grids; fails with what and the context's message
 * otherwise. */
static void
binds(Fix *f, const fg_decode_args *a, int nsm, const char *what)
{
	fg_arg args[DEC_NARGS];
	int64_t tiles[3];
	uint64_t ws = X0 + 9 * GiB;
	fg_kernel *k;
	Decode t;
	DecCfg g;

	if (decode_check(f->ctx, a, &t) || decode_plan(f->ctx, a, nsm, &t))
		fail_msg("%s: %s", what, fg_errmsg(f->ctx));
	if (decode_kernel(f->ctx, 90, &t.cfg, &k) ||
	    fg_kernel_check(k, args, decode_bind(a, &t, ws, args), tiles))
		fail_msg("%s: %s", what, fg_errmsg(f->ctx));
	int64_t bm = 64 * t.cfg.nw, p = t.cfg.pack;
	assert_int_equal(tiles[0], t.ns);
	assert_int_equal(tiles[1], a->heads / p);
	assert_int_equal(tiles[2], a->batch * ((a->seq_q * p + bm - 1) / bm));
	if (t.ns > 1) {
		int64_t r = a->batch * a->heads * a->seq_q;
		int64_t rows = a->head_dim == 64 ? 16 : 8;
		g = decode_cfg(&t, DEC_COMBINE);
		if (decode_kernel(f->ctx, 90, &g, &k) ||
		    fg_kernel_check(k, args, decode_combine_bind(a, &t, ws,
		    args), tiles))
			fail_msg("%s (combine): %s", what, fg_errmsg(f->ctx));
		assert_int_equal(tiles[0], (r + rows - 1) / rows);
	}
	g = decode_cfg(&t, DEC_APPEND);
	for (int64_t z0 = 0, nz; a->k_new && z0 < a->batch; z0 += nz) {
		nz = a->batch - z0 < t.chunk ? a->batch - z0 : t.chunk;
		if (decode_kernel(f->ctx, 90, &g, &k) ||
		    fg_kernel_check(k, args, decode_append_bind(a, &t, z0, nz,
		    args), tiles))
			fail_msg("%s (append): %s", what, fg_errmsg(f->ctx));
		assert_int_equal(tiles[0], a->seq_new);
		assert_int_equal(tiles[1], (t.hk + 7) / 8);
		assert_int_equal(tiles[2], nz);
	}
}

/* The variants fg_attention_decode picks take its binding: each head
 * dim and dtype, contiguous and paged caches (page sizes below, at and
 * above a block), with and without lengths and new tokens, one split
 * and several, GQA packings from 1 to 64 query heads a tile and one or
 * two warpgroups, causal, windows, softcaps, strided q and caches. */
static void
every_variant_takes_the_binding(void **state)
{
	Fix *f = *state;
	static const int64_t hd[3] = {64, 128, 256};
	static const int64_t heads[5][2] = {
		{32, 8}, {8, 8}, {48, 8}, {64, 8}, {128, 1},
	};
	static const int64_t sq[4] = {1, 4, 16, 33};
	char what[160];

	for (int v = 0; v < 36; v++) {
		int64_t d = hd[v % 3], g = v / 2 % 5;
		fg_decode_args a = problem(1 + v % 3, sq[v / 3 % 4],
			heads[g][0], heads[g][1], d, 1000 + v);
		a.dtype = v & 1 ? FG_DTYPE_F16 : FG_DTYPE_BF16;
		a.num_splits = v % 4 == 1 ? 3 : 1;
		a.lse = v % 7 == 3 ? 0 : a.lse;
		if (v % 4 == 2)
			a = paged(a, 40, d == 256 ? (v & 8 ? 64 : 192) :
				(v & 8 ? 16 : 256), 8);
		if (v % 5 == 3)
			a = appending(a, 1 + v % 4);
		else if (v % 5 == 4)
			a.cache_seqlens = 0;
		a.causal = v % 8 < 3;
		a.window = v % 9 == 1;
		a.window_left = 100, a.window_right = -1;
		a.softcap = v % 10 == 7 ? 20 : 0;
		if (v % 11 == 6 && !a.k_new) {
			a.q_strides[0] = 1 << 20, a.q_strides[1] = 1 << 14;
			a.q_strides[2] = 256, a.q_strides[3] = 1;
			for (int i = 0; i < 4; i++)
				a.k_strides[i] = a.v_strides[i] = 0;
			a.k_strides[0] = (int64_t)1 << 30;
			a.k_strides[1] = a.heads_k * d * 2;
			a.k_strides[2] = d, a.k_strides[3] = 1;
		}
		snprintf(what, sizeof what, "v%d: b=%lld sq=%lld h=%lld/%lld "
			"d=%lld ps=%lld ns=%d sn=%lld causal=%d window=%d "
			"softcap=%g", v, (long long)a.batch, (long long)a.seq_q,
			(long long)a.heads, (long long)a.heads_k, (long long)d,
			(long long)a.page_size, a.num_splits,
			(long long)a.seq_new, a.causal, a.window, a.softcap);
		binds(f, &a, 0, what);
	}
	/* the heuristic's splits, and several appends */
	fg_decode_args a = problem(2, 1, 32, 8, 128, 1 << 16);
	a.num_splits = 0;
	binds(f, &a, 132, "heuristic");
	a = appending(problem(300, 1, 8, 8, 128, 8192), 2);
	binds(f, &a, 0, "300 sequences, 2 appends");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(appends_take_the_sequences_that_fit),
		T(validate_checks_the_tables),
		T(only_sm90_has_a_schedule),
		T(every_variant_takes_the_binding),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
