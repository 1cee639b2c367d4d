/* testalloc.h: a Lua-style allocator for the unit tests that counts live
 * blocks and bytes (leak checking, knot-resolver's test_malloc) and can be
 * told to fail its Nth call (Lua's failnext).  Header-only: each test
 * program includes it once. */
#ifndef TESTALLOC_H
#define TESTALLOC_H

#include <stdlib.h>

typedef struct TestAlloc {
	long calls;   /* allocations and reallocations attempted */
	long failat;  /* fail call number failat (1-based); 0: never */
	long live;    /* blocks not yet freed */
	long bytes;   /* bytes not yet freed */
	long peak;    /* largest live */
} TestAlloc;

static inline void *
test_alloc(void *ud, void *p, size_t osize, size_t nsize)
{
	TestAlloc *t = ud;
	void *q;

	if (nsize == 0) {
		if (p) {
			t->live--;
			t->bytes -= (long)osize;
			free(p);
		}
		return NULL;
	}
	if (++t->calls == t->failat)
		return NULL;
	q = realloc(p, nsize);
	if (!q)
		return NULL;
	if (!p)
		t->live++;
	t->bytes += (long)nsize - (long)(p ? osize : 0);
	if (t->live > t->peak)
		t->peak = t->live;
	return q;
}

#endif
