/* rt.c: the helpers every layer of the runtime uses: allocation through
 * the context's allocator, error reporting, logging and the clock.
 *
 * Errors follow Lua's model: a call returns a status and keeps its message
 * for fg_errmsg.  A context may be shared by threads, so each thread has
 * its own message slot, found by pthread_self() under the context's mutex;
 * the slots live until the context is destroyed (rt_errs_free). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt_base.h"

struct ErrSlot {
	pthread_t thread;
	char *msg;            /* "" or rt_alloc'd */
	size_t cap;
	ErrSlot *next;
};

const char *
fg_status_name(fg_status s)
{
	static const char *const names[] = {
		[FG_OK] = "FG_OK",
		[FG_ERR_INVALID] = "FG_ERR_INVALID",
		[FG_ERR_NOMEM] = "FG_ERR_NOMEM",
		[FG_ERR_IO] = "FG_ERR_IO",
		[FG_ERR_COMPILE] = "FG_ERR_COMPILE",
		[FG_ERR_NO_DRIVER] = "FG_ERR_NO_DRIVER",
		[FG_ERR_NO_DEVICE] = "FG_ERR_NO_DEVICE",
		[FG_ERR_UNSUPPORTED] = "FG_ERR_UNSUPPORTED",
		[FG_ERR_JIT] = "FG_ERR_JIT",
		[FG_ERR_CUDA] = "FG_ERR_CUDA",
	};

	if ((unsigned)s >= COUNT(names) || !names[s])
		return "FG_ERR_UNKNOWN";
	return names[s];
}

void *
rt_alloc(fg_ctx *c, size_t n)
{
	return c->alloc(c->alloc_ud, NULL, 0, n ? n : 1);
}

void *
rt_realloc(fg_ctx *c, void *p, size_t osize, size_t nsize)
{
	return c->alloc(c->alloc_ud, p, osize, nsize ? nsize : 1);
}

void
rt_free(fg_ctx *c, void *p, size_t n)
{
	if (p)
		c->alloc(c->alloc_ud, p, n ? n : 1, 0);
}

char *
rt_strdup(fg_ctx *c, const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = rt_alloc(c, n);

	if (p)
		memcpy(p, s, n);
	return p;
}

void
rt_strfree(fg_ctx *c, char *s)
{
	if (s)
		rt_free(c, s, strlen(s) + 1);
}

double
rt_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* The calling thread's slot, made on first use; NULL when out of memory.
 * Called with c->mu held. */
static ErrSlot *
slot(fg_ctx *c, bool make)
{
	pthread_t self = pthread_self();
	ErrSlot *s;

	for (s = c->errs; s; s = s->next)
		if (pthread_equal(s->thread, self))
			return s;
	if (!make || !(s = rt_alloc(c, sizeof *s)))
		return NULL;
	memset(s, 0, sizeof *s);
	s->thread = self;
	s->next = c->errs;
	c->errs = s;
	return s;
}

/* Keep msg as the thread's message; on allocation failure the slot keeps
 * a truncated copy rather than nothing. */
static void
set_msg(fg_ctx *c, const char *msg)
{
	size_t n = strlen(msg) + 1;
	ErrSlot *s;

	pthread_mutex_lock(&c->mu);
	if ((s = slot(c, true))) {
		if (n > s->cap) {
			char *p = rt_realloc(c, s->msg, s->cap, n);
			if (p) {
				s->msg = p;
				s->cap = n;
			}
		}
		if (s->cap) {
			n = n < s->cap ? n : s->cap;
			memcpy(s->msg, msg, n - 1);
			s->msg[n - 1] = '\0';
		}
	}
	pthread_mutex_unlock(&c->mu);
}

fg_status
rt_err(fg_ctx *c, fg_status st, const char *fmt, ...)
{
	char small[512], *big = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof small, fmt, ap);
	va_end(ap);
	if (n >= (int)sizeof small && (big = rt_alloc(c, (size_t)n + 1))) {
		va_start(ap, fmt);
		vsnprintf(big, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	set_msg(c, big ? big : small);
	rt_log(c, FG_LOG_ERROR, "%s", big ? big : small);
	if (big)
		rt_free(c, big, (size_t)n + 1);
	return st;
}

void
rt_clear(fg_ctx *c)
{
	ErrSlot *s;

	pthread_mutex_lock(&c->mu);
	if ((s = slot(c, false)) && s->cap)
		s->msg[0] = '\0';
	pthread_mutex_unlock(&c->mu);
}

const char *
fg_errmsg(const fg_ctx *c)
{
	fg_ctx *m = (fg_ctx *)c;  /* the mutex is not part of the value */
	const char *msg = "";
	ErrSlot *s;

	if (!c)
		return "no context (fg_ctx_create failed or was not called)";
	pthread_mutex_lock(&m->mu);
	if ((s = slot(m, false)) && s->cap)
		msg = s->msg;
	pthread_mutex_unlock(&m->mu);
	return msg;
}

void
rt_log(fg_ctx *c, int level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!c->log || level > c->log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	c->log(c->log_ud, level, msg);
}

void
rt_errs_free(fg_ctx *c)
{
	ErrSlot *s, *next;

	for (s = c->errs; s; s = next) {
		next = s->next;
		rt_free(c, s->msg, s->cap);
		rt_free(c, s, sizeof *s);
	}
	c->errs = NULL;
}
