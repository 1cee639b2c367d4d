/* decodetest.h: what test_decode.c and test_decode_run.c share to test
 * fg_attention_decode (runtime/front/decode.c, decode_run.c; issue #16)
 * without a GPU: a context with a counting allocator over the shipped
 * schedules, problems at fake device addresses, and the status and
 * message a call must give.  Header-only: each test program includes it
 * once. */
#ifndef DECODETEST_H
#define DECODETEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_front.h"
#include "offlinefix.h"

#define FN "fg_attention_decode"
#define X0 0x7f0000000000ull   /* a 16-byte aligned device address */
#define GiB 0x40000000ull
#define FAKE_STREAM ((struct CUstream_st *)0x1234)
#define UNUSED __attribute__((unused))

/* A contiguous cache of cap keys a sequence: q at X0, k_cache, v_cache,
 * o, lse and cache_seqlens 1 to 5 GiB on, all dense; one split. */
static fg_decode_args UNUSED
problem(int64_t b, int64_t sq, int64_t h, int64_t hk, int64_t d,
	int64_t cap)
{
	return (fg_decode_args){
		.q = X0, .k_cache = X0 + GiB, .v_cache = X0 + 2 * GiB,
		.o = X0 + 3 * GiB, .lse = X0 + 4 * GiB,
		.cache_seqlens = X0 + 5 * GiB,
		.batch = b, .seq_q = sq, .heads = h, .heads_k = hk,
		.head_dim = d, .cache_len = cap, .dtype = FG_DTYPE_BF16,
		.num_splits = 1,
	};
}

/* a's cache paged: np pages of ps keys, mp a sequence, the table 6 GiB
 * on. */
static fg_decode_args UNUSED
paged(fg_decode_args a, int64_t np, int64_t ps, int64_t mp)
{
	a.page_table = X0 + 6 * GiB;
	a.num_pages = np, a.page_size = ps, a.max_pages = mp;
	a.cache_len = 0;
	return a;
}

/* sn new tokens a sequence, k_new and v_new 7 and 8 GiB on. */
static fg_decode_args UNUSED
appending(fg_decode_args a, int64_t sn)
{
	a.k_new = X0 + 7 * GiB, a.v_new = X0 + 8 * GiB, a.seq_new = sn;
	return a;
}

/* A call gave st: it must be want, with msg in the message, which names
 * fg_attention_decode when it is an argument's error. */
static void UNUSED
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

static void UNUSED
status(Fix *f, const fg_decode_args *a, fg_status want, const char *msg)
{
	expect_status(f, fg_attention_decode(f->ctx, a, FAKE_STREAM), want,
		msg);
}

static void UNUSED
invalid(Fix *f, const fg_decode_args *a, const char *msg)
{
	status(f, a, FG_ERR_INVALID, msg);
}

/* Valid arguments get as far as the driver, which is missing. */
static void UNUSED
valid(Fix *f, const fg_decode_args *a)
{
	status(f, a, FG_ERR_NO_DRIVER, "");
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

#endif
