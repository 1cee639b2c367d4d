/* offlinefix.h: the cmocka fixture of the runtime's unit tests that need
 * no GPU: a context with a counting allocator (testalloc.h), no driver
 * (a library path that does not exist), no disk cache, and the source
 * tree's shipped schedules; teardown checks that every byte came back.
 * Header-only: include it once, after cmocka.h and fagen's headers. */
#ifndef OFFLINEFIX_H
#define OFFLINEFIX_H

#include <stdlib.h>

#include "testalloc.h"

#define SHIPPED FAGEN_SRCDIR "/schedules"

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
		.schedule_dir = SHIPPED};

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

#endif
