/* arena.c: bump allocation in chunks taken from a Lua-style allocator.
 *
 * Invariants: every pointer handed out is max_align_t aligned and zeroed;
 * nothing returns NULL (allocator failure longjmps to *oom); a chunk's
 * memory is only given back by arena_reset or arena_free.  The AllocFn must
 * return max_align_t aligned blocks, as malloc does.  Requests larger
 * than a quarter of a standard chunk get a chunk of their own, linked behind
 * the head so the head keeps serving small requests.  Arena.total is the
 * number of bytes currently held from the allocator: 0 after arena_free. */
#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

enum {
	ALIGN = alignof(max_align_t),
	CHUNKSIZE = 16384 - 64,  /* usable bytes of a standard chunk */
	BIGSIZE = CHUNKSIZE / 4, /* larger requests get their own chunk */
};

struct Chunk {
	Chunk *next;
	size_t size;             /* usable bytes in data */
	size_t used;             /* bytes handed out, a multiple of ALIGN */
	size_t last;             /* offset of the newest allocation */
	max_align_t data[];
};

#define BASE(c) ((char *)(c)->data)
#define HDR offsetof(Chunk, data)

static noreturn void
oom(const Arena *a)
{
	if (!a->oom)
		fg_bug("out of memory and no recovery point");
	longjmp(*a->oom, 1);
}

/* Round n up to ALIGN; an overflowing request is out of memory. */
static size_t
round_up(const Arena *a, size_t n)
{
	if (n == 0)
		n = 1;
	if (n > SIZE_MAX - HDR - ALIGN)
		oom(a);
	return (n + ALIGN - 1) & ~(size_t)(ALIGN - 1);
}

static Chunk *
new_chunk(Arena *a, size_t size)
{
	Chunk *c;

	c = a->alloc(a->ud, NULL, 0, HDR + size);
	if (!c)
		oom(a);
	c->next = NULL;
	c->size = size;
	c->used = 0;
	c->last = 0;
	a->total += HDR + size;
	return c;
}

static void
free_chunk(Arena *a, Chunk *c)
{
	a->total -= HDR + c->size;
	a->alloc(a->ud, c, HDR + c->size, 0);
}

void
arena_init(Arena *a, AllocFn alloc, void *ud, jmp_buf *oom)
{
	a->alloc = alloc ? alloc : arena_default_alloc;
	a->ud = ud;
	a->oom = oom;
	a->head = NULL;
	a->total = 0;
}

void *
arena_alloc(Arena *a, size_t n)
{
	size_t sz;
	Chunk *c;
	char *p;

	sz = round_up(a, n);
	if (sz > BIGSIZE) {
		c = new_chunk(a, sz);
		if (a->head) {
			c->next = a->head->next;
			a->head->next = c;
		} else {
			a->head = c;
		}
	} else {
		c = a->head;
		if (!c || c->size - c->used < sz) {
			c = new_chunk(a, CHUNKSIZE);
			c->next = a->head;
			a->head = c;
		}
	}
	c->last = c->used;
	c->used += sz;
	p = BASE(c) + c->last;
	memset(p, 0, sz);
	return p;
}

void *
arena_alloc_array(Arena *a, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		oom(a);
	return arena_alloc(a, n * size);
}

/* A request that has a chunk of its own (the newest one, right behind the
 * head, or the head itself while it holds nothing else: last == 0) is
 * resized by the allocator; return the link to that chunk, or NULL. */
static Chunk **
own_chunk(Arena *a, const void *p)
{
	Chunk *c = a->head;

	if (c && c->size != CHUNKSIZE && c->last == 0 &&
	    (const char *)p == BASE(c))
		return &a->head;
	if (c && c->next && c->next->size != CHUNKSIZE &&
	    (const char *)p == BASE(c->next))
		return &c->next;
	return NULL;
}

/* Grow or shrink in place when p is the newest allocation of the head
 * chunk, resize a chunk of its own, and copy otherwise.  Bytes past osize
 * are zero, as for arena_alloc. */
void *
arena_realloc(Arena *a, void *p, size_t osize, size_t nsize)
{
	Chunk *c = a->head, **link, *nc;
	size_t sz;
	void *q;

	if (!p)
		return arena_alloc(a, nsize);
	sz = round_up(a, nsize);
	if (c && (char *)p == BASE(c) + c->last && sz <= c->size - c->last) {
		c->used = c->last + sz;
	} else if (nsize <= osize) {
		return p;
	} else if (sz > BIGSIZE && (link = own_chunk(a, p))) {
		c = *link;
		nc = a->alloc(a->ud, c, HDR + c->size, HDR + sz);
		if (!nc)
			oom(a);
		a->total += sz - nc->size;
		nc->size = nc->used = sz;
		*link = nc;
		p = BASE(nc);
	} else {
		q = arena_alloc(a, nsize);
		memcpy(q, p, osize);
		return q;
	}
	if (nsize > osize)
		memset((char *)p + osize, 0, nsize - osize);
	return p;
}

char *
arena_strndup(Arena *a, const char *s, size_t n)
{
	char *p;

	if (n == SIZE_MAX)
		oom(a);
	p = arena_alloc(a, n + 1);
	if (n)
		memcpy(p, s, n);
	return p;
}

/* Keep one standard chunk (the oldest) for reuse and free the rest. */
void
arena_reset(Arena *a)
{
	Chunk *c, *next, *keep = NULL;

	for (c = a->head; c; c = next) {
		next = c->next;
		if (c->size == CHUNKSIZE) {
			if (keep)
				free_chunk(a, keep);
			keep = c;
		} else {
			free_chunk(a, c);
		}
	}
	if (keep) {
		keep->next = NULL;
		keep->used = 0;
		keep->last = 0;
	}
	a->head = keep;
}

void
arena_free(Arena *a)
{
	Chunk *c, *next;

	for (c = a->head; c; c = next) {
		next = c->next;
		free_chunk(a, c);
	}
	a->head = NULL;
}

void *
arena_default_alloc(void *ud, void *p, size_t osize, size_t nsize)
{
	(void)ud;
	(void)osize;
	if (nsize == 0) {
		free(p);
		return NULL;
	}
	return realloc(p, nsize);
}
