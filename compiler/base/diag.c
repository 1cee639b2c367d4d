/* diag.c: source line tables, diagnostics and their GCC-style rendering,
 * and the compilation context.
 *
 * Phases only append diagnostics to ctx->diags; diag_render turns the list
 * into text once, at the end.  Columns count UTF-8 code points; a byte that
 * is not part of valid UTF-8 counts as one column.  Tabs are echoed as tabs
 * and reproduced in the caret line so that carets line up whatever the tab
 * width; control characters and invalid bytes are echoed as '?'.
 *
 * A Diag's wname is NULL for an error or note, the warning's name for a
 * named warning, and "" for a warning without a name (diag_plain). */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

enum {
	MAXCOLS = 200, /* longer lines are shown as a window of this width */
	LEAD = 40,     /* columns shown before the caret in such a window */
};

/* ------------------------------------------------------------ source text */

/* Length of the valid UTF-8 sequence at s (n bytes available), 0 if the
 * bytes there are not valid UTF-8: overlong forms, surrogates and code
 * points past U+10FFFF are invalid. */
static int
u8len(const unsigned char *s, size_t n)
{
	uint32_t cp, min;
	int len, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1f, min = 0x80;
	else if ((s[0] & 0xf0) == 0xe0)
		len = 3, cp = s[0] & 0x0f, min = 0x800;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07, min = 0x10000;
	else
		return 0;
	if ((size_t)len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

typedef enum { C_TEXT, C_TAB, C_BAD } CellKind;

/* The display cell (one column) starting at t[i], i < end: its kind and
 * its length in bytes.  C1 controls are C_BAD too: they are terminal
 * escapes, not text. */
static size_t
cell(const char *t, size_t i, size_t end, CellKind *k)
{
	const unsigned char *s = (const unsigned char *)t + i;
	int n;

	*k = C_BAD;
	if (s[0] == '\t') {
		*k = C_TAB;
		return 1;
	}
	if (s[0] < 0x20 || s[0] == 0x7f)
		return 1;
	n = u8len(s, end - i);
	if (n == 0)
		return 1;
	if (n == 2 && s[0] == 0xc2 && s[1] < 0xa0)
		return 2;
	*k = C_TEXT;
	return (size_t)n;
}

/* Number of cells that start in [from, to); end (>= to) bounds decoding,
 * so a code point that straddles to is counted whole. */
static uint32_t
ncells(const char *t, size_t from, size_t to, size_t end)
{
	uint32_t n = 0;
	CellKind k;

	while (from < to) {
		from += cell(t, from, end, &k);
		n++;
	}
	return n;
}

/* Byte offset of cell k of the text starting at from (at most to). */
static size_t
skip_cells(const char *t, size_t from, size_t to, uint32_t k)
{
	CellKind kind;

	for (; k > 0 && from < to; k--)
		from += cell(t, from, to, &kind);
	return from;
}

/* Start of the line after the one that holds p, or NULL: a line ends at
 * '\n', at "\r\n" or at a '\r' alone. */
static const char *
next_line(const char *p, const char *end)
{
	for (; p < end; p++)
		if (*p == '\n' || (*p == '\r' && (p + 1 == end ||
		    p[1] != '\n')))
			return p + 1;
	return NULL;
}

/* Line 1 starts after a UTF-8 byte-order mark (the lexer skips it too), so
 * that its columns count from the first real character. */
static void
src_fill(Ctx *c, Src *s, const char *name, const char *text, size_t len)
{
	const char *p, *end;
	uint32_t n = 1;

	s->name = name;
	s->text = text ? text : "";
	s->len = len;
	/* A line starts after every line end but a final one. */
	end = s->text + len;
	for (p = s->text; (p = next_line(p, end)) && p < end;)
		n++;
	s->lines = NEWARR(&c->perm, uint32_t, n);
	s->nlines = n;
	s->lines[0] = len >= 3 && !memcmp(s->text, "\xEF\xBB\xBF", 3) ? 3 : 0;
	n = 1;
	for (p = s->text; (p = next_line(p, end)) && p < end;)
		s->lines[n++] = (uint32_t)(p - s->text);
}

void
src_init(Ctx *c, const char *name, const char *text, size_t len)
{
	if (len > UINT32_MAX) {
		diag_plain(c, D_ERROR, "input is larger than 4 GiB");
		len = UINT32_MAX;
	}
	c->src.base = 0;
	src_fill(c, &c->src, name, text, len);
}

/* One offset past the end of the last source, so that a Span at the end
 * of one file (end of file) is not the start of the next. */
Src *
src_add(Ctx *c, const char *name, const char *text, size_t len)
{
	Src *last = &c->src, **tail = &c->more, *s;

	for (; *tail; tail = &(*tail)->next)
		last = *tail;
	uint64_t base = (uint64_t)last->base + last->len + 1;
	if (base + len > UINT32_MAX) {
		diag_plain(c, D_ERROR, "'%s': the sources are larger than 4 "
			"GiB together", name);
		return NULL;
	}
	s = NEW(&c->perm, Src);
	s->base = (uint32_t)base;
	src_fill(c, s, name, text, len);
	*tail = s;
	return s;
}

const Src *
ctx_src(const Ctx *c, uint32_t off)
{
	const Src *s = &c->src;

	for (const Src *m = c->more; m && m->base <= off; m = m->next)
		s = m;
	return s;
}

/* Where off is shown: an offset at or past the end of a text that ends in a
 * line end shows at the end of the last line. */
static size_t
shown_at(const Src *s, size_t off)
{
	if (off > s->len)
		off = s->len;
	if (off == s->len && off > 0 && (s->text[off - 1] == '\n' ||
	    s->text[off - 1] == '\r')) {
		off--;
		if (s->text[off] == '\n' && off > 0 && s->text[off - 1] == '\r')
			off--;
	}
	return off;
}

static uint32_t
find_line(const Src *s, size_t off)
{
	uint32_t lo = 0, hi = s->nlines, mid;

	while (hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		if (s->lines[mid] <= off)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* End of the displayed part of line l: its line end ('\n', "\r\n" or
 * '\r'), or the end of the text. */
static size_t
line_end(const Src *s, uint32_t l)
{
	const char *nl;
	size_t start = s->lines[l], e;

	if (l + 1 < s->nlines) {
		e = s->lines[l + 1] - 1;
	} else {
		nl = next_line(s->text + start, s->text + s->len);
		e = nl ? (size_t)(nl - s->text) - 1 : s->len;
	}
	if (e > start && e < s->len && s->text[e - 1] == '\r')
		e--;
	return e;
}

void
src_linecol(const Src *s, uint32_t off, uint32_t *line, uint32_t *col)
{
	size_t o, e;
	uint32_t l;

	off = off >= s->base ? off - s->base : 0;
	if (!s->lines) {
		*line = 1;
		*col = off + 1;
		return;
	}
	o = shown_at(s, off);
	l = find_line(s, o);
	e = line_end(s, l);
	*line = l + 1;
	*col = ncells(s->text, s->lines[l], o < e ? o : e, e) + 1;
}

/* ------------------------------------------------------------ recording */

static void
push(Ctx *c, DiagKind k, const char *wname, bool has_span, Span sp,
    const char *msg)
{
	Diag *d = NEW(&c->perm, Diag);

	d->kind = k;
	d->span = sp;
	d->has_span = has_span;
	d->wname = wname ? intern_cstr(c->strs, wname) : NULL;
	d->msg = (char *)msg;
	if (c->dlast)
		c->dlast->next = d;
	else
		c->diags = d;
	c->dlast = d;
}

static const char *
format(Ctx *c, const char *fmt, va_list ap)
{
	Buf b;

	buf_init(&b, &c->perm);
	buf_vprintf(&b, fmt, ap);
	return b.p;
}

/* The same primary diagnostic at the same place again: code expanded by
 * 'static for' or by a partition family reports each mistake once. */
static bool
repeated(const Ctx *c, DiagKind k, bool has_span, Span sp, const char *msg)
{
	for (const Diag *d = c->diags; d; d = d->next)
		if (d->kind == k && d->has_span == has_span &&
		    d->span.lo == sp.lo && d->span.hi == sp.hi &&
		    !strcmp(d->msg, msg))
			return true;
	return false;
}

/* Decide whether a primary diagnostic (error or warning) is kept, and count
 * it.  Once MAXERRORS errors are kept, everything but notes of kept
 * diagnostics is dropped: the output says it stopped there. */
static bool
admit(Ctx *c, DiagKind k)
{
	if (!c->too_many && k == D_ERROR && c->nerr >= MAXERRORS)
		c->too_many = true;
	if (c->too_many) {
		c->drop_notes = true;
		return false;
	}
	if (k == D_ERROR)
		c->nerr++;
	else
		c->nwarn++;
	c->drop_notes = false;
	return true;
}

/* The state of warning wname: 0 off, 1 on, 2 error.  The first entry of
 * ctx->wopts that names it wins; diag_set_warning pushes to the front, so
 * the last option on the command line wins. */
static int
wstate(const Ctx *c, const char *wname)
{
	const WarnOpt *w;
	int st = 1;

	for (w = c->wopts; w; w = w->next) {
		if (wname && strcmp(w->name, wname) == 0) {
			st = w->state;
			break;
		}
	}
	if (st == 1 && c->werror)
		st = 2;
	return st;
}

void
diag_set_warning(Ctx *c, const char *name, int state)
{
	WarnOpt *w = NEW(&c->perm, WarnOpt);

	w->name = intern_cstr(c->strs, name);
	w->state = state;
	w->next = c->wopts;
	c->wopts = w;
}

/* Every name diag_warn is called with, so that -W options can be checked
 * (tests/cli/warnings.sh finds the names in the sources and tries each). */
static const char *const wnames[] = {
	"register-pressure", "tma-outside-elect", "unused-warps",
	"verify-limit",
};

/* Levenshtein distance between a and b; b is a known name (short). */
static size_t
edits(const char *a, const char *b)
{
	size_t row[32], nb = strlen(b), diag, up, i, j;

	if (nb >= COUNT(row))
		return SIZE_MAX;
	for (j = 0; j <= nb; j++)
		row[j] = j;
	for (i = 1; a[i - 1]; i++) {
		diag = row[0];
		row[0] = i;
		for (j = 1; j <= nb; j++) {
			up = row[j];
			row[j] = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < row[j])
				row[j] = up + 1;
			if (row[j - 1] + 1 < row[j])
				row[j] = row[j - 1] + 1;
			diag = up;
		}
	}
	return row[nb];
}

bool
diag_warning_known(const char *name, const char **near)
{
	size_t best = 3, d;

	*near = NULL;
	for (size_t i = 0; i < COUNT(wnames); i++) {
		if (!strcmp(name, wnames[i]))
			return true;
		d = edits(name, wnames[i]);
		if (d < best) {
			best = d;
			*near = wnames[i];
		}
	}
	return false;
}

const char *
diag_warning_name(size_t i)
{
	return i < COUNT(wnames) ? wnames[i] : NULL;
}

static void
vwarn(Ctx *c, const char *wname, bool has_span, Span sp, const char *fmt,
    va_list ap)
{
	int st = wstate(c, wname);
	DiagKind k = st == 2 ? D_ERROR : D_WARNING;

	const char *msg;

	if (st == 0) {
		c->drop_notes = true;
		return;
	}
	msg = format(c, fmt, ap);
	if (repeated(c, k, has_span, sp, msg)) {
		c->drop_notes = true;
		return;
	}
	if (admit(c, k))
		push(c, k, wname ? wname : "", has_span, sp, msg);
}

void
diag_error(Ctx *c, Span sp, const char *fmt, ...)
{
	va_list ap;
	const char *msg;

	if (c->too_many) {
		c->drop_notes = true;
		return;
	}
	va_start(ap, fmt);
	msg = format(c, fmt, ap);
	va_end(ap);
	if (repeated(c, D_ERROR, true, sp, msg)) {
		c->drop_notes = true;
		return;
	}
	if (admit(c, D_ERROR))
		push(c, D_ERROR, NULL, true, sp, msg);
}

void
diag_warn(Ctx *c, const char *wname, Span sp, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwarn(c, wname, true, sp, fmt, ap);
	va_end(ap);
}

void
diag_note(Ctx *c, Span sp, const char *fmt, ...)
{
	va_list ap;

	if (c->drop_notes)
		return;
	va_start(ap, fmt);
	push(c, D_NOTE, NULL, true, sp, format(c, fmt, ap));
	va_end(ap);
}

void
diag_note_since(Ctx *c, const Diag *mark, Span sp, const char *fmt, ...)
{
	const char *msg = NULL;
	Diag *d = mark ? mark->next : c->diags;
	va_list ap;

	while (d) {
		Diag *e = d, *n;
		while (e->next && e->next->kind == D_NOTE)
			e = e->next;
		if (d->kind != D_NOTE) {
			if (!msg) {
				va_start(ap, fmt);
				msg = format(c, fmt, ap);
				va_end(ap);
			}
			n = NEW(&c->perm, Diag);
			*n = (Diag){D_NOTE, sp, true, NULL, (char *)msg,
				e->next};
			e->next = n;
			if (c->dlast == e)
				c->dlast = n;
			e = n;
		}
		d = e->next;
	}
}

void
diag_plain(Ctx *c, DiagKind k, const char *fmt, ...)
{
	Span none = { 0, 0 };
	va_list ap;
	bool keep;

	va_start(ap, fmt);
	if (k == D_WARNING) {
		vwarn(c, NULL, false, none, fmt, ap);
	} else {
		keep = k == D_NOTE ? !c->drop_notes : admit(c, D_ERROR);
		if (keep)
			push(c, k, NULL, false, none, format(c, fmt, ap));
	}
	va_end(ap);
}

/* ------------------------------------------------------------ rendering */

static void
put_cells(Buf *b, const char *t, size_t i, size_t end, uint32_t n)
{
	CellKind k;
	size_t len;

	for (; n > 0 && i < end; n--, i += len) {
		len = cell(t, i, end, &k);
		if (k == C_TEXT)
			buf_putn(b, t + i, len);
		else
			buf_putc(b, k == C_TAB ? '\t' : '?');
	}
}

/* Cells [from, from + n) of the caret line: tabs stay tabs, the first cell
 * is the caret when caret is set, and other cells are fill. */
static void
put_marks(Buf *b, const char *t, size_t i, size_t end, uint32_t n,
    bool caret, int fill)
{
	CellKind k;

	for (; n > 0; n--, caret = false) {
		k = C_TEXT;
		if (i < end)
			i += cell(t, i, end, &k);
		buf_putc(b, caret ? '^' : k == C_TAB ? '\t' : fill);
	}
}

/* The source line of sp and a caret line under it, the span underlined to
 * the end of its first line.  A long line is shown as a window of MAXCOLS
 * columns that holds the caret. */
static void
excerpt(const Src *s, Span sp, Buf *b)
{
	const char *t = s->text;
	size_t lo = shown_at(s, sp.lo), hi = sp.hi, ls, de, w;
	uint32_t l, c0, c1, nc, ws, we;

	l = find_line(s, lo);
	ls = s->lines[l];
	de = line_end(s, l);
	if (lo > de)
		lo = de;
	hi = hi < lo ? lo : hi > de ? de : hi;
	c0 = ncells(t, ls, lo, de);
	c1 = ncells(t, ls, hi, de);
	nc = ncells(t, ls, de, de);
	ws = 0;
	we = nc;
	if (nc > MAXCOLS) {
		ws = c0 > LEAD ? c0 - LEAD : 0;
		we = ws + MAXCOLS;
		if (we > nc) {
			we = nc;
			ws = nc - MAXCOLS;
		}
	}
	w = skip_cells(t, ls, de, ws);

	buf_printf(b, "%5" PRIu32 " |", l + 1);
	if (nc > 0) {
		buf_puts(b, ws > 0 ? " ..." : " ");
		put_cells(b, t, w, de, we - ws);
		if (we < nc)
			buf_puts(b, "...");
	}
	buf_puts(b, ws > 0 ? "\n      |    " : "\n      | ");
	put_marks(b, t, w, de, c0 - ws, false, ' ');
	if (c1 > we)
		c1 = we;
	put_marks(b, t, skip_cells(t, w, de, c0 - ws), de,
	    c1 > c0 ? c1 - c0 : 1, true, '~');
	buf_putc(b, '\n');
}

static void
render_one(const Ctx *c, const Diag *d, Buf *b)
{
	static const char *const label[] = {
		[D_ERROR] = "error",
		[D_WARNING] = "warning",
		[D_NOTE] = "note",
	};
	const Src *s = ctx_src(c, d->span.lo);
	bool located = d->has_span && s->lines;
	Span sp = {d->span.lo - s->base, d->span.hi >= d->span.lo ?
		d->span.hi - s->base : d->span.lo - s->base};
	uint32_t line, col;

	if (located) {
		src_linecol(s, d->span.lo, &line, &col);
		buf_printf(b, "%s:%" PRIu32 ":%" PRIu32 ": ",
		    s->name ? s->name : "<input>", line, col);
	} else {
		buf_printf(b, "%s: ", s->name ? s->name : "fagen");
	}
	buf_printf(b, "%s: %s", label[d->kind], d->msg);
	if (d->wname && *d->wname)
		buf_printf(b, d->kind == D_ERROR ? " [-Werror=%s]" : " [-W%s]",
		    d->wname);
	else if (d->wname && d->kind == D_ERROR)
		buf_puts(b, " [-Werror]");
	buf_putc(b, '\n');
	if (located)
		excerpt(s, sp, b);
}

void
diag_render(const Ctx *c, Buf *b)
{
	const Diag *d;

	for (d = c->diags; d; d = d->next)
		render_one(c, d, b);
	if (c->too_many)
		buf_printf(b, "too many errors; stopping after %d\n",
		    MAXERRORS);
	if (c->nerr)
		buf_printf(b, "%d error%s", c->nerr, c->nerr == 1 ? "" : "s");
	if (c->nerr && c->nwarn)
		buf_puts(b, ", ");
	if (c->nwarn)
		buf_printf(b, "%d warning%s", c->nwarn,
		    c->nwarn == 1 ? "" : "s");
	if (c->nerr || c->nwarn)
		buf_putc(b, '\n');
}

noreturn void
fg_bug_at(const char *file, int line, const char *fmt, ...)
{
	const char *base = strrchr(file, '/');
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "fagen: internal error at %s:%d: ",
	    base ? base + 1 : file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

/* ------------------------------------------------------------ context */

/* Allocates (the intern table, the output buffer), so *oom must already be
 * a valid recovery point. */
void
ctx_init(Ctx *c, AllocFn alloc, void *ud, jmp_buf *oom)
{
	memset(c, 0, sizeof *c);
	arena_init(&c->perm, alloc, ud, oom);
	arena_init(&c->scratch, alloc, ud, oom);
	c->oom = oom;
	c->strs = intern_new(&c->perm);
	buf_init(&c->out, &c->perm);
}

bool
ctx_define(Ctx *c, const char *name, const char *value)
{
	Define *d;

	if (namemap_get(&c->defmap, name))
		return false;
	d = NEW(&c->perm, Define);
	d->name = name;
	d->value = value;
	namemap_put(&c->perm, &c->defmap, name, d);
	if (!c->deftail)
		for (c->deftail = &c->defines; *c->deftail;
		    c->deftail = &(*c->deftail)->next)
			;
	*c->deftail = d;
	c->deftail = &d->next;
	return true;
}

Define *
ctx_find_define(const Ctx *c, const char *name)
{
	return namemap_get(&c->defmap, name);
}

void
ctx_free(Ctx *c)
{
	arena_free(&c->scratch);
	arena_free(&c->perm);
	memset(c, 0, sizeof *c);
}
