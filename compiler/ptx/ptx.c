/* ptx.c: the PTX builder.  Callers ask for typed virtual registers and pass
 * them to instruction templates; the builder spells every register and
 * label and writes the .reg declarations from per-kind counters, so the
 * output depends only on the order of calls.
 *
 * Invariants: the body holds whole lines, each ending in '\n'; labels are
 * "$L<N>", N counted from 0 per function (PTX labels are function-scoped);
 * every label that a template uses is placed exactly once by ptx_finish.
 * All storage comes from the arena; appends are amortized O(1). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"
#include "ptx/ptx.h"

enum {
	L_USED = 1,    /* named by a %L operand */
	L_PLACED = 2,  /* "$L<N>:" written */
};

struct PtxFn {
	Arena *a;
	const char *name;
	uint32_t nreg[NRKIND];
	int nparam;
	Buf params;   /* "\t.param ..." joined by ",\n" */
	Buf dirs;     /* one performance directive per line */
	Buf body;     /* instruction lines, labels and comments */
	Buf labels;   /* one L_* byte per label id */
};

static const struct {
	const char *type, *prefix;
} kinds[] = {
	[RP] = { ".pred", "%p" },
	[RB16] = { ".b16", "%h" },
	[RB32] = { ".b32", "%r" },
	[RB64] = { ".b64", "%rd" },
	[RF32] = { ".f32", "%f" },
	[RF64] = { ".f64", "%fd" },
};
_Static_assert(COUNT(kinds) == NRKIND, "one row per RKind");

PtxFn *
ptx_new(Arena *a, const char *name)
{
	PtxFn *f = NEW(a, PtxFn);

	f->a = a;
	f->name = arena_strndup(a, name, strlen(name));
	buf_init(&f->params, a);
	buf_init(&f->dirs, a);
	buf_init(&f->body, a);
	buf_init(&f->labels, a);
	return f;
}

PReg
ptx_reg(PtxFn *f, RKind k)
{
	if ((unsigned)k >= NRKIND)
		fg_bug("ptx_reg: bad register kind %d", (int)k);
	if (f->nreg[k] == UINT32_MAX)
		fg_bug("ptx_reg: too many %s registers", kinds[k].type);
	return (PReg){ .id = f->nreg[k]++, .kind = (uint8_t)k };
}

/* A register must have come from this function's counters. */
static void
check_reg(const PtxFn *f, PReg r)
{
	if (r.kind >= NRKIND)
		fg_bug("ptx: bad register kind %d", r.kind);
	if (r.id >= f->nreg[r.kind])
		fg_bug("ptx: register %s%" PRIu32 " not allocated in '%s'",
		    kinds[r.kind].prefix, r.id, f->name);
}

const char *
ptx_regname(PtxFn *f, PReg r, char buf[16])
{
	char d[10];
	int n = 0, k = 0;
	uint32_t id = r.id;

	check_reg(f, r);
	/* by hand, not snprintf: it names every operand of the kernel */
	for (const char *c = kinds[r.kind].prefix; *c; c++)
		buf[n++] = *c;
	do
		d[k++] = (char)('0' + id % 10);
	while ((id /= 10));
	while (k)
		buf[n++] = d[--k];
	buf[n] = 0;
	return buf;
}

void
ptx_param(PtxFn *f, const char *decl)
{
	if (f->nparam++ > 0)
		buf_puts(&f->params, ",\n");
	buf_putc(&f->params, '\t');
	buf_puts(&f->params, decl);
}

void
ptx_directive(PtxFn *f, const char *text)
{
	buf_puts(&f->dirs, text);
	buf_putc(&f->dirs, '\n');
}

int
ptx_label(PtxFn *f)
{
	int l = (int)f->labels.len;

	if (l == INT32_MAX)
		fg_bug("ptx_label: too many labels");
	buf_putc(&f->labels, 0);
	return l;
}

/* Marks label l with flag; placing a label twice is a bug. */
static void
mark_label(PtxFn *f, int l, int flag)
{
	if (l < 0 || (size_t)l >= f->labels.len)
		fg_bug("ptx: label %d was never allocated in '%s'", l, f->name);
	if (flag == L_PLACED && (f->labels.p[l] & L_PLACED))
		fg_bug("ptx: label $L%d placed twice in '%s'", l, f->name);
	f->labels.p[l] |= flag;
}

void
ptx_place(PtxFn *f, int l)
{
	mark_label(f, l, L_PLACED);
	buf_printf(&f->body, "$L%d:\n", l);
}

/* f32 and f64 immediates as PTX hex literals, the exact bits (nvcc style,
 * upper-case digits).  NaN is canonical so the output never depends on a
 * payload. */
static void
put_f32(Buf *b, double d)
{
	float x = (float)d;
	uint32_t bits;

	memcpy(&bits, &x, sizeof bits);
	if (isnan(d))
		bits = 0x7fffffff;
	buf_printf(b, "0f%08" PRIX32, bits);
}

static void
put_f64(Buf *b, double d)
{
	uint64_t bits;

	memcpy(&bits, &d, sizeof bits);
	if (isnan(d))
		bits = UINT64_C(0x7fffffffffffffff);
	buf_printf(b, "0d%016" PRIX64, bits);
}

/* Formats the template line [s, e), consuming operands from *ap.  A line
 * that starts with "%L:" places that label and goes to column 0; every
 * other line is indented by one tab. */
static void
put_line(PtxFn *f, const char *tmpl, const char *s, const char *e,
    va_list *ap)
{
	Buf *b = &f->body;
	bool place = e - s >= 3 && memcmp(s, "%L:", 3) == 0;
	const char *q, *str;
	char name[16];
	int l;

	if (!place)
		buf_putc(b, '\t');
	while (s < e) {
		if (*s != '%') {
			q = memchr(s, '%', (size_t)(e - s));
			q = q ? q : e;
			buf_putn(b, s, (size_t)(q - s));
			s = q;
			continue;
		}
		if (++s == e)
			fg_bug("ptx: template line ends in '%%': \"%s\"", tmpl);
		switch (*s++) {
		case 'R':
			buf_puts(b, ptx_regname(f, va_arg(*ap, PReg), name));
			break;
		case 'I':
			buf_printf(b, "%" PRId64, va_arg(*ap, int64_t));
			break;
		case 'U':
			buf_printf(b, "0x%" PRIx64, va_arg(*ap, uint64_t));
			break;
		case 'L':
			l = va_arg(*ap, int);
			mark_label(f, l, place ? L_PLACED : L_USED);
			place = false;
			buf_printf(b, "$L%d", l);
			break;
		case 'S':
			if (!(str = va_arg(*ap, const char *)))
				fg_bug("ptx: NULL %%S operand in \"%s\"", tmpl);
			buf_puts(b, str);
			break;
		case 'F':
			put_f32(b, va_arg(*ap, double));
			break;
		case 'D':
			put_f64(b, va_arg(*ap, double));
			break;
		case '%':
			buf_putc(b, '%');
			break;
		default:
			fg_bug("ptx: bad template directive '%%%c' in \"%s\"",
			    s[-1], tmpl);
		}
	}
	buf_putc(b, '\n');
}

/* Each '\n'-separated line of the template becomes one body line; leading
 * blanks are dropped (the builder indents) and empty lines are skipped. */
void
ptx_vemit(PtxFn *f, const char *tmpl, va_list ap)
{
	const char *s = tmpl, *e;
	va_list aq;

	va_copy(aq, ap);
	while (*s) {
		while (*s == ' ' || *s == '\t')
			s++;
		if (!(e = strchr(s, '\n')))
			e = s + strlen(s);
		if (e > s)
			put_line(f, tmpl, s, e, &aq);
		s = *e ? e + 1 : e;
	}
	va_end(aq);
}

void
ptx_emit(PtxFn *f, const char *tmpl, ...)
{
	va_list ap;

	va_start(ap, tmpl);
	ptx_vemit(f, tmpl, ap);
	va_end(ap);
}

/* "\t// text"; text with newlines becomes one comment line per line.  The
 * common case formats straight into the body. */
void
ptx_comment(PtxFn *f, const char *fmt, ...)
{
	Buf *b = &f->body;
	size_t start = b->len, n;
	const char *s, *e;
	char *text;
	va_list ap;

	buf_puts(b, "\t// ");
	va_start(ap, fmt);
	buf_vprintf(b, fmt, ap);
	va_end(ap);
	n = b->len - start - 4;
	if (!memchr(b->p + start + 4, '\n', n)) {
		buf_putc(b, '\n');
		return;
	}
	text = arena_strndup(f->a, b->p + start + 4, n);
	b->len = start;
	b->p[start] = '\0';
	for (s = text; *s; s = *e ? e + 1 : e) {
		if (!(e = strchr(s, '\n')))
			e = s + strlen(s);
		buf_puts(b, e > s ? "\t// " : "\t//");
		buf_putn(b, s, (size_t)(e - s));
		buf_putc(b, '\n');
	}
}

void
ptx_finish(PtxFn *f, Buf *out)
{
	size_t l;
	int k;
	bool any = false;

	for (l = 0; l < f->labels.len; l++)
		if (f->labels.p[l] == L_USED)
			fg_bug("ptx: label $L%zu used but never placed in '%s'",
			    l, f->name);
	buf_printf(out, ".visible .entry %s(", f->name);
	if (f->nparam > 0) {
		buf_putc(out, '\n');
		buf_putn(out, f->params.p, f->params.len);
		buf_putc(out, '\n');
	}
	buf_puts(out, ")\n");
	if (f->dirs.len > 0)
		buf_putn(out, f->dirs.p, f->dirs.len);
	buf_puts(out, "{\n");
	for (k = 0; k < NRKIND; k++) {
		if (f->nreg[k] == 0)
			continue;
		buf_printf(out, "\t.reg %s \t%s<%" PRIu32 ">;\n",
		    kinds[k].type, kinds[k].prefix, f->nreg[k]);
		any = true;
	}
	if (any)
		buf_putc(out, '\n');
	if (f->body.len > 0)
		buf_putn(out, f->body.p, f->body.len);
	buf_puts(out, "}\n");
}
