/* meta.c: reads the metadata comment that opens fagen's PTX
 * (docs/LANGUAGE.md §17.1) and evaluates its size programs.
 *
 *	// fagen.kernel name=K target=sm_90a threads=64 cluster=1,1,1 ...
 *	// fagen.grid $N 64 cdiv ; $M 64 cdiv
 *	// fagen.arg 0 param M i32
 *	// fagen.arg 2 global X bf16 rank=2 dims $M ; $N
 *	// fagen.arg 4 tma tx of=X box=64,64 swizzle=128 oob=zero
 *
 * Lines are collected first and read in a second step, because the grid
 * names params declared by later lines.  Everything is checked: a kernel
 * made from hand-edited or foreign PTX fails here with a message, not at
 * launch.  Unknown keys are ignored so newer compilers can add some. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_jit.h"

enum { MAXTOK = 512, MAXLINES = MAXARGS + 8 };

typedef struct Line {
	char **tok;
	int n;
} Line;

typedef struct P {
	Arena *a;
	Meta *m;
	char *err;
	size_t errlen;
	Line grid;
	bool has_kernel, has_grid;
} P;

static bool FMT(2, 3)
fail(P *p, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(p->err, p->errlen, "PTX metadata: ");

	va_start(ap, fmt);
	vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return false;
}

/* Split [s, e) at blanks into arena strings. */
static Line
split(Arena *a, const char *s, const char *e)
{
	Line l = {NEWARR(a, char *, MAXTOK), 0};

	while (s < e && l.n < MAXTOK) {
		while (s < e && (*s == ' ' || *s == '\t' || *s == '\r'))
			s++;
		const char *t = s;
		while (s < e && *s != ' ' && *s != '\t' && *s != '\r')
			s++;
		if (s > t)
			l.tok[l.n++] = arena_strndup(a, t, (size_t)(s - t));
	}
	return l;
}

static bool
num(const char *s, int64_t lo, int64_t hi, int64_t *v)
{
	char *end;
	long long x;

	errno = 0;
	x = strtoll(s, &end, 10);
	if (errno || end == s || *end || x < lo || x > hi)
		return false;
	*v = x;
	return true;
}

/* "a,b,c" into v[0..max); returns the count, or -1. */
static int
list(const char *s, int64_t lo, int64_t hi, int64_t *v, int max)
{
	char buf[128], *save, *t;
	int n = 0;

	if (strlen(s) >= sizeof buf)
		return -1;
	strcpy(buf, s);
	for (t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
		if (n == max || !num(t, lo, hi, &v[n++]))
			return -1;
	return n;
}

static const char *
val(const char *tok, const char *key)
{
	size_t n = strlen(key);

	return !strncmp(tok, key, n) && tok[n] == '=' ? tok + n + 1 : NULL;
}

static bool
kernel_line(P *p, const Line *l)
{
	static const char *const ords[] = {"single", "persistent", "lpt"};
	Meta *m = p->m;
	int64_t threads = 0, smem = 0, tiles = 0, tmem = 0, per_sm = 1, pdl = 0;
	int64_t v[3];
	const struct {
		const char *key;
		int64_t hi, *dst;
	} nums[] = {
		{"threads", 1024, &threads}, {"smem", INT32_MAX, &smem},
		{"tiles", 3, &tiles}, {"tmem", 512, &tmem},
		{"per_sm", 32, &per_sm},  /* or 'max': 0 */
		{"pdl", 1, &pdl},
	};
	const char *s;

	m->cluster[0] = m->cluster[1] = m->cluster[2] = 1;
	for (int i = 1; i < l->n; i++) {
		const char *t = l->tok[i];
		if ((s = val(t, "name"))) {
			m->name = s;
		} else if ((s = val(t, "target"))) {
			m->target = s;
		} else if ((s = val(t, "order"))) {
			for (int j = 0; j < 3; j++)
				if (!strcmp(s, ords[j]))
					m->order = ORD_SINGLE + j;
		} else if ((s = val(t, "per_sm")) && !strcmp(s, "max")) {
			per_sm = 0;
			continue;
		} else if ((s = val(t, "cluster"))) {
			if (list(s, 1, 16, v, 3) != 3)
				return fail(p, "bad value in '%s'", t);
			for (int j = 0; j < 3; j++)
				m->cluster[j] = (int)v[j];
		}
		for (int j = 0; j < (int)COUNT(nums); j++)
			if ((s = val(t, nums[j].key)) && !num(s, 0, nums[j].hi,
			    nums[j].dst))
				return fail(p, "bad value in '%s'", t);
	}
	const Target *tg = m->target ? target_lookup(m->target) : NULL;
	if (!m->name || !tg || !threads || !m->order)
		return fail(p, "the fagen.kernel line needs name, target "
			"(sm_90a, sm_100a or sm_80), threads and order "
			"(single, persistent or lpt)");
	m->tgt = tg->id;
	m->threads = (int)threads;
	m->smem = smem;
	m->ntiles = (int)tiles;
	m->tmem = (int)tmem;
	m->per_sm = (int)per_sm;
	m->pdl = pdl != 0;
	return true;
}

/* tok[from, to) is one postfix program. */
static bool
rpn_parse(P *p, char **tok, int from, int to, Rpn *r)
{
	static const char *const ops[] = {"+", "-", "*", "/", "%", "min",
		"max", "cdiv"};
	int depth = 0;

	r->t = NEWARR(p->a, RpnTok, to > from ? to - from : 1);
	r->n = 0;
	for (int i = from; i < to; i++) {
		RpnTok *t = &r->t[r->n++];
		const char *s = tok[i];
		t->op = -1;
		for (int j = 0; j < (int)COUNT(ops); j++)
			if (!strcmp(s, ops[j]))
				t->op = RPN_ADD + j;
		if (t->op >= 0) {
			if (depth < 2)
				return fail(p, "'%s' needs two operands", s);
			depth--;
			continue;
		}
		depth++;
		if (s[0] == '$') {
			t->op = RPN_PARAM;
			t->v = -1;
			for (int j = 0; j < p->m->nargs; j++)
				if (p->m->args[j].kind == MA_PARAM &&
				    !strcmp(p->m->args[j].name, s + 1))
					t->v = j;
			if (t->v < 0)
				return fail(p, "'%s' names no param", s);
		} else if (t->op = RPN_INT, !num(s, INT64_MIN, INT64_MAX,
		    &t->v)) {
			return fail(p, "bad size token '%s'", s);
		}
	}
	if (depth != 1)
		return fail(p, "a size program leaves %d values, not 1", depth);
	return true;
}

/* Programs separated by ';' in tok[from, l->n): exactly n of them. */
static bool
rpn_list(P *p, const Line *l, int from, Rpn *out, int n, const char *what)
{
	int k = 0, start = from;

	if (from >= l->n && n == 0)
		return true;
	for (int i = from; i <= l->n; i++) {
		if (i < l->n && strcmp(l->tok[i], ";"))
			continue;
		if (k == n)
			return fail(p, "%s has more than %d sizes", what, n);
		if (!rpn_parse(p, l->tok, start, i, &out[k++]))
			return false;
		start = i + 1;
	}
	if (k != n)
		return fail(p, "%s has %d sizes, not %d", what, k, n);
	return true;
}

static bool
param_line(P *p, const Line *l, MetaArg *a)
{
	static const Ty ok[] = {TY_I32, TY_U32, TY_I64, TY_U64, TY_BOOL,
		TY_F32};

	a->kind = MA_PARAM;
	a->ty = l->n == 5 ? ty_lookup(l->tok[4]) : TY_ERR;
	for (int i = 0; i < (int)COUNT(ok); i++)
		if (a->ty == ok[i])
			return true;
	return fail(p, "param '%s' has no supported type (i32, u32, i64, "
		"u64, bool, f32)", a->name);
}

static bool
global_line(P *p, const Line *l, MetaArg *a)
{
	int64_t r;

	a->kind = MA_GLOBAL;
	a->ty = l->n > 4 ? ty_lookup(l->tok[4]) : TY_ERR;
	if (a->ty == TY_ERR || ty_bytes(a->ty) == 0)
		return fail(p, "global '%s' has no element type", a->name);
	if (l->n < 7 || !val(l->tok[5], "rank") || !num(val(l->tok[5], "rank"),
	    1, FG_MAX_RANK, &r) || strcmp(l->tok[6], "dims"))
		return fail(p, "global '%s' needs rank=1..%d and dims",
			a->name, FG_MAX_RANK);
	a->rank = (int)r;
	return true;  /* dims are read once every param is known */
}

static bool
tma_line(P *p, const Line *l, MetaArg *a)
{
	const char *of = NULL, *s;
	int64_t v[1];

	a->kind = MA_TMA;
	a->of = -1;
	a->swizzle = -1;
	for (int i = 4; i < l->n; i++) {
		const char *t = l->tok[i];
		if ((s = val(t, "of")))
			of = s;
		else if ((s = val(t, "box")))
			a->rank = list(s, 1, 256, a->box, FG_MAX_RANK);
		else if ((s = val(t, "swizzle")) && num(s, 0, 128, v))
			a->swizzle = (int)v[0];
		else if ((s = val(t, "oob")))
			a->oob_nan = !strcmp(s, "nan");
	}
	for (int j = 0; of && j < p->m->nargs; j++)
		if (p->m->args[j].kind == MA_GLOBAL &&
		    !strcmp(p->m->args[j].name, of))
			a->of = j;
	if (a->of < 0)
		return fail(p, "tma '%s' views no global", a->name);
	if (a->rank < 1 || a->rank > p->m->args[a->of].rank)
		return fail(p, "tma '%s' needs a box of 1 to %d extents, each "
			"1..256", a->name, p->m->args[a->of].rank);
	if (a->swizzle != 0 && a->swizzle != 32 && a->swizzle != 64 &&
	    a->swizzle != 128)
		return fail(p, "tma '%s' needs swizzle=0, 32, 64 or 128",
			a->name);
	a->ty = p->m->args[a->of].ty;
	p->m->args[a->of].has_tma = true;
	return true;
}

/* '// fagen.arg N strides NAME_st of=X': X's strides, in elements,
 * outermost first (i64 each), a hidden argument the runtime binds from
 * X's tensor ('strided' globals). */
static bool
strides_line(P *p, const Line *l, MetaArg *a)
{
	const char *s;

	a->kind = MA_STRIDES;
	a->of = -1;
	for (int i = 4; i < l->n; i++)
		if ((s = val(l->tok[i], "of")))
			for (int j = 0; j < p->m->nargs; j++)
				if (p->m->args[j].kind == MA_GLOBAL &&
				    !strcmp(p->m->args[j].name, s))
					a->of = j;
	if (a->of < 0)
		return fail(p, "strides '%s' are of no global", a->name);
	a->rank = p->m->args[a->of].rank;
	a->ty = TY_I64;
	p->m->args[a->of].strided = true;
	return true;
}

static bool
arg_line(P *p, const Line *l)
{
	Meta *m = p->m;
	int64_t idx;

	if (l->n < 4 || !num(l->tok[1], 0, MAXARGS - 1, &idx) ||
	    idx != m->nargs)
		return fail(p, "fagen.arg lines must be numbered 0, 1, ... "
			"(at most %d)", MAXARGS);
	MetaArg *a = &m->args[m->nargs];
	a->name = l->tok[3];
	a->user = -1;
	if (!strcmp(l->tok[2], "param") ? !param_line(p, l, a) :
	    !strcmp(l->tok[2], "global") ? !global_line(p, l, a) :
	    !strcmp(l->tok[2], "tma") ? !tma_line(p, l, a) :
	    !strcmp(l->tok[2], "strides") ? !strides_line(p, l, a) :
	    !fail(p, "unknown argument kind '%s'", l->tok[2]))
		return false;
	for (int j = 0; j < m->nargs; j++)
		if (!strcmp(m->args[j].name, a->name))
			return fail(p, "two arguments are named '%s'", a->name);
	m->nargs++;
	return true;
}

/* The second step: sizes, and the caller's positional order. */
static bool
resolve(P *p, Line *lines, int nlines)
{
	Meta *m = p->m;
	int k = 0;

	if (!rpn_list(p, &p->grid, 1, m->grid, m->ntiles, "fagen.grid"))
		return false;
	for (int i = 0; i < nlines; i++) {
		MetaArg *a = &m->args[i];
		if (a->kind == MA_GLOBAL && !rpn_list(p, &lines[i], 7, a->dims,
		    a->rank, a->name))
			return false;
	}
	m->user = NEWARR(p->a, int, m->nargs ? m->nargs : 1);
	for (int i = 0; i < m->nargs; i++)
		if (m->args[i].kind != MA_TMA && m->args[i].kind != MA_STRIDES) {
			m->args[i].user = k;
			m->user[k++] = i;
		}
	m->nuser = k;
	return true;
}

bool
meta_parse(Arena *a, const char *ptx, size_t len, Meta *m, char *err,
	size_t errlen)
{
	P p = {.a = a, .m = m, .err = err, .errlen = errlen};
	Line *lines = NEWARR(a, Line, MAXARGS);
	const char *s = ptx, *end = ptx + len;

	memset(m, 0, sizeof *m);
	m->args = NEWARR(a, MetaArg, MAXARGS);
	while (s < end) {
		const char *e = memchr(s, '\n', (size_t)(end - s));
		e = e ? e : end;
		if (e - s >= 2 && s[0] == '.')
			break;  /* .version: the metadata is above it */
		if (e - s > 9 && !strncmp(s, "// fagen.", 9)) {
			Line l = split(a, s + 3, e);
			if (!strcmp(l.tok[0], "fagen.kernel")) {
				if (p.has_kernel)
					return fail(&p, "two fagen.kernel "
						"lines");
				p.has_kernel = kernel_line(&p, &l);
				if (!p.has_kernel)
					return false;
			} else if (!strcmp(l.tok[0], "fagen.grid")) {
				p.grid = l;
				p.has_grid = true;
			} else if (!strcmp(l.tok[0], "fagen.arg")) {
				if (!arg_line(&p, &l))
					return false;
				lines[m->nargs - 1] = l;
			} else if (!strcmp(l.tok[0], "fagen.direct") ||
			    !strcmp(l.tok[0], "fagen.cpasync")) {
				bool cp = l.tok[0][6] == 'c';
				int j = 0;
				while (j < m->nargs && (m->args[j].kind !=
				    MA_GLOBAL || !l.tok[1] ||
				    strcmp(m->args[j].name, l.tok[1])))
					j++;
				if (j == m->nargs)
					return fail(&p, cp ? "fagen.cpasync names no "
						"global declared above it" : "fagen.direct "
						"names no global declared above it");
				if (cp)
					m->args[j].cpasync = true;
				else
					m->args[j].direct = true;
			}
		}
		s = e + 1;
	}
	if (!p.has_kernel)
		return fail(&p, "no '// fagen.kernel' line: not PTX written by "
			"fagen %s or later", FAGEN_VERSION);
	if (!p.has_grid && m->ntiles)
		return fail(&p, "no '// fagen.grid' line");
	if (!p.has_grid)
		p.grid.n = 1;  /* no tile grid: the programs start at 1 */
	return resolve(&p, lines, m->nargs);
}

/* Integer arithmetic with C's truncating / and %, as the kernel computes
 * it; cdiv rounds towards +infinity; false on overflow or x / 0. */
static bool
apply(int op, int64_t x, int64_t y, int64_t *r)
{
	switch (op) {
	case RPN_ADD:
		return ck_add64(x, y, r);
	case RPN_SUB:
		return ck_sub64(x, y, r);
	case RPN_MUL:
		return ck_mul64(x, y, r);
	case RPN_DIV:
	case RPN_MOD:
	case RPN_CDIV:
		if (y == 0 || (x == INT64_MIN && y == -1))
			return false;
		*r = op == RPN_DIV ? x / y : op == RPN_MOD ? x % y :
			x / y + (x % y != 0 && (x > 0) == (y > 0));
		return true;
	case RPN_MIN:
		*r = x < y ? x : y;
		return true;
	default:
		*r = x > y ? x : y;
		return true;
	}
}

bool
rpn_eval(const Meta *m, const Rpn *r, const int64_t *vals, int64_t *out,
	char *err, size_t errlen)
{
	int64_t st[MAXTOK];
	int n = 0;

	for (int i = 0; i < r->n; i++) {
		const RpnTok *t = &r->t[i];
		if (t->op == RPN_INT || t->op == RPN_PARAM) {
			st[n++] = t->op == RPN_INT ? t->v : vals[t->v];
			continue;
		}
		n--;
		int64_t x = st[n - 1];
		if (!apply(t->op, x, st[n], &st[n - 1])) {
			static const char *const sym[] = {[RPN_ADD] = "+",
				[RPN_SUB] = "-", [RPN_MUL] = "*",
				[RPN_DIV] = "/", [RPN_MOD] = "%",
				[RPN_CDIV] = "cdiv"};
			snprintf(err, errlen, "%s: %lld %s %lld, in a size of "
				"kernel '%s' (check the params)", st[n] == 0 ?
				"division by zero" : "64-bit overflow",
				(long long)x, t->op < (int)COUNT(sym) &&
				sym[t->op] ? sym[t->op] : "?",
				(long long)st[n], m->name);
			return false;
		}
	}
	*out = st[0];
	return true;
}

int
ty_tma_code(Ty t)
{
	switch (t) {
	case TY_BF16: return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
	case TY_F16: return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
	case TY_F32: return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
	case TY_F64: return CU_TENSOR_MAP_DATA_TYPE_FLOAT64;
	case TY_I32: return CU_TENSOR_MAP_DATA_TYPE_INT32;
	case TY_U32: return CU_TENSOR_MAP_DATA_TYPE_UINT32;
	case TY_I64: return CU_TENSOR_MAP_DATA_TYPE_INT64;
	case TY_U64: return CU_TENSOR_MAP_DATA_TYPE_UINT64;
	default: return -1;
	}
}
