/* buf.c: a growable byte string in an arena.
 *
 * Invariant: b->p[b->len] == '\0' and b->len < b->cap at all times, so a
 * Buf can be used as a C string as soon as buf_init returns.  Growth goes
 * through arena_realloc, which extends in place while the buffer is the
 * newest allocation of its arena. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"

enum { BUFMIN = 64 };

void
buf_init(Buf *b, Arena *a)
{
	b->a = a;
	b->cap = BUFMIN;
	b->len = 0;
	b->p = arena_alloc(a, b->cap);
}

/* Make room for n more bytes plus the terminating NUL. */
static void
reserve(Buf *b, size_t n)
{
	size_t cap;

	if (n < b->cap - b->len)
		return;
	if (n > SIZE_MAX / 2 - b->len - 1)
		cap = SIZE_MAX; /* arena_realloc reports it as out of memory */
	else
		cap = b->len + n + 1;
	if (cap < b->cap * 2)
		cap = b->cap * 2;
	b->p = arena_realloc(b->a, b->p, b->cap, cap);
	b->cap = cap;
}

void
buf_putn(Buf *b, const char *s, size_t n)
{
	reserve(b, n);
	if (n)
		memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void
buf_putc(Buf *b, int c)
{
	char ch = (char)c;

	buf_putn(b, &ch, 1);
}

void
buf_puts(Buf *b, const char *s)
{
	buf_putn(b, s, strlen(s));
}

void
buf_vprintf(Buf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	int n;

	va_copy(ap2, ap);
	n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	if (n < 0)
		fg_bug("vsnprintf failed for format \"%s\"", fmt);
	if ((size_t)n >= b->cap - b->len) {
		/* drop the truncated text in case reserve longjmps */
		b->p[b->len] = '\0';
		reserve(b, (size_t)n);
		vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap2);
	}
	va_end(ap2);
	b->len += (size_t)n;
}

void
buf_printf(Buf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	buf_vprintf(b, fmt, ap);
	va_end(ap);
}
