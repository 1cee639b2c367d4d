/* intern.c: interned strings, so that equal names are equal pointers,
 * and NameMap, the scopes' maps keyed by them.
 *
 * An open-addressing table (linear probing, FNV-1a hashes, power-of-two
 * size, at most 3/4 full) lives in the arena together with the strings.
 * Strings are compared by length and bytes, so embedded NULs are fine; each
 * copy is NUL-terminated.  Growing leaves the old slot array in the arena:
 * it dies with the compilation like everything else. */
#include <string.h>

#include "base/base.h"

enum { INITSIZE = 256 };

typedef struct Slot {
	const char *s;  /* NULL: empty */
	size_t n;
	uint32_t h;
} Slot;

struct Intern {
	Arena *a;
	Slot *tab;
	size_t size;    /* a power of two */
	size_t count;
};

static uint32_t
fnv1a(const char *s, size_t n)
{
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 16777619u;
	}
	return h;
}

Intern *
intern_new(Arena *a)
{
	Intern *t = NEW(a, Intern);

	t->a = a;
	t->size = INITSIZE;
	t->tab = NEWARR(a, Slot, t->size);
	return t;
}

static void
grow(Intern *t)
{
	Slot *old = t->tab;
	size_t i, j, mask, osize = t->size;

	t->size *= 2;
	t->tab = NEWARR(t->a, Slot, t->size);
	mask = t->size - 1;
	for (i = 0; i < osize; i++) {
		if (!old[i].s)
			continue;
		for (j = old[i].h & mask; t->tab[j].s; j = (j + 1) & mask)
			;
		t->tab[j] = old[i];
	}
}

const char *
intern(Intern *t, const char *s, size_t n)
{
	uint32_t h;
	size_t i, mask;
	Slot *e;

	if (n == 0)
		s = "";
	h = fnv1a(s, n);
	mask = t->size - 1;
	for (i = h & mask; t->tab[i].s; i = (i + 1) & mask) {
		e = &t->tab[i];
		if (e->h == h && e->n == n && memcmp(e->s, s, n) == 0)
			return e->s;
	}
	if ((t->count + 1) * 4 > t->size * 3) {
		grow(t);
		mask = t->size - 1;
		for (i = h & mask; t->tab[i].s; i = (i + 1) & mask)
			;
	}
	e = &t->tab[i];
	e->s = arena_strndup(t->a, s, n);
	e->n = n;
	e->h = h;
	t->count++;
	return e->s;
}

const char *
intern_cstr(Intern *t, const char *s)
{
	return intern(t, s, strlen(s));
}

/* NameMap: the name's address, multiplied by the golden ratio, picks the
 * slot; at most half full.  A slot never empties again (unbinding stores
 * NULL), so linear probing needs no tombstones.  The old slot array of a
 * growth stays in the arena. */
enum { MAPMIN = 64 };

static NameSlot *
map_probe(const NameMap *m, const char *name)
{
	uint64_t h = (uint64_t)(uintptr_t)name * 0x9E3779B97F4A7C15ull;
	uint32_t i = (uint32_t)(h >> 32) & (m->size - 1);

	while (m->tab[i].name && m->tab[i].name != name)
		i = (i + 1) & (m->size - 1);
	return &m->tab[i];
}

void *
namemap_get(const NameMap *m, const char *name)
{
	if (!m->size || !name)
		return NULL;
	return map_probe(m, name)->val;
}

void *
namemap_put(Arena *a, NameMap *m, const char *name, void *val)
{
	NameSlot *s = m->size ? map_probe(m, name) : NULL;
	void *old;

	if (!s || !s->name) {
		if (2 * (m->count + 1) > m->size) {
			NameSlot *ot = m->tab;
			uint32_t osize = m->size;
			m->size = osize ? 2 * osize : MAPMIN;
			m->tab = NEWARR(a, NameSlot, m->size);
			for (uint32_t i = 0; i < osize; i++)
				if (ot[i].name)
					*map_probe(m, ot[i].name) = ot[i];
		}
		s = map_probe(m, name);
		s->name = name;
		m->count++;
	}
	old = s->val;
	s->val = val;
	return old;
}
