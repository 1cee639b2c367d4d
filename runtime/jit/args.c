/* args.c: binds the caller's arguments to a kernel's parameters and checks
 * every one before anything reaches the GPU.
 *
 * Ensures, when it returns FG_OK: every global and param is given exactly
 * once with the right kind; integers fit their type; each global has a
 * non-NULL, element-aligned address, positive extents equal to the
 * schedule's (evaluated over the params) and within 32-bit indexing, and
 * positive strides whose span fits 64 bits; a global that TMA reads or
 * writes also has a 16-byte-aligned address, innermost stride 1, other
 * strides multiples of 16 bytes below 2^40, and each view's box obeys the
 * tensor-map rules; one that cp_async reads has a 16-byte-aligned
 * address and strides of 16-byte multiples but the innermost; the tile grid is non-empty and its tile count fits
 * 32 bits, and CUDA can launch the grid.  The messages name the
 * argument and the rule. */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rt_jit.h"

static fg_status FMT(3, 4)
bad(fg_ctx *c, const Meta *m, const char *fmt, ...)
{
	char msg[768];
	va_list ap;
	int n = snprintf(msg, sizeof msg, "kernel '%s': ", m->name);

	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
	va_end(ap);
	return rt_err(c, FG_ERR_INVALID, "%s", msg);
}

/* "M, N, X, Y": the caller's arguments, for messages. */
static void
arg_names(const Meta *m, char *buf, size_t n)
{
	size_t k = 0;

	buf[0] = '\0';
	for (int i = 0; i < m->nuser && k < n; i++)
		k += (size_t)snprintf(buf + k, n - k, "%s%s", i ? ", " : "",
			m->args[m->user[i]].name);
}

static fg_status
match(fg_ctx *c, const Meta *m, const fg_arg *args, int n, Bound *b)
{
	char names[256];

	for (int j = 0; j < n; j++) {
		const fg_arg *a = &args[j];
		int idx = -1;
		if (!a->name && j < m->nuser)
			idx = m->user[j];
		for (int i = 0; a->name && i < m->nargs; i++)
			if (m->args[i].kind != MA_TMA && m->args[i].kind !=
			    MA_STRIDES && !strcmp(m->args[i].name, a->name))
				idx = i;
		if (idx < 0) {
			arg_names(m, names, sizeof names);
			if (!a->name)
				return bad(c, m, "argument %d is one too many: "
					"it takes %d (%s)", j, m->nuser, names);
			return bad(c, m, "no argument is named '%s' (it takes "
				"%s)", a->name, names);
		}
		if (b->arg[idx])
			return bad(c, m, "argument '%s' is given twice",
				m->args[idx].name);
		b->arg[idx] = a;
	}
	for (int i = 0; i < m->nargs; i++)
		if (m->args[i].kind != MA_TMA && m->args[i].kind != MA_STRIDES &&
		    !b->arg[i])
			return bad(c, m, "argument '%s' (%s%s) is missing",
				m->args[i].name, m->args[i].kind == MA_GLOBAL ?
				"tensor of " : "", ty_name(m->args[i].ty));
	return FG_OK;
}

static fg_status
param(fg_ctx *c, const Meta *m, const MetaArg *p, const fg_arg *a,
	int64_t *v)
{
	static const struct {
		Ty ty;
		int64_t lo, hi;
	} ranges[] = {
		{TY_I32, INT32_MIN, INT32_MAX}, {TY_U32, 0, UINT32_MAX},
		{TY_BOOL, 0, 1}, {TY_I64, INT64_MIN, INT64_MAX},
		{TY_U64, 0, INT64_MAX},
	};

	if (p->ty == TY_F32) {
		if (a->kind != FG_ARG_FLOAT)
			return bad(c, m, "'%s' is an f32 param: pass "
				"FG_ARG_FLOAT (FG_FLOAT)", p->name);
		if (isfinite(a->f) && fabs(a->f) > FLT_MAX)
			return bad(c, m, "'%s' = %g does not fit f32", p->name,
				a->f);
		*v = 0;
		return FG_OK;
	}
	if (a->kind != FG_ARG_INT)
		return bad(c, m, "'%s' is an %s param: pass FG_ARG_INT "
			"(FG_INT)", p->name, ty_name(p->ty));
	for (size_t i = 0; i < COUNT(ranges); i++)
		if (ranges[i].ty == p->ty && (a->i < ranges[i].lo ||
		    a->i > ranges[i].hi))
			return bad(c, m, "'%s' = %lld is out of range for %s "
				"(%lld..%lld)", p->name, (long long)a->i,
				ty_name(p->ty), (long long)ranges[i].lo,
				(long long)ranges[i].hi);
	*v = a->i;
	return FG_OK;
}

/* Extents: given (all non-zero) or all zero, and then the schedule's. */
static fg_status
extents(fg_ctx *c, const Meta *m, const MetaArg *g, const fg_tensor *t,
	const Bound *b, int64_t *d)
{
	char err[256];
	int given = 0;

	for (int i = 0; i < g->rank; i++)
		given += t->dims[i] != 0;
	if (given && given != g->rank)
		return bad(c, m, "tensor '%s': give all %d dims or none",
			g->name, g->rank);
	for (int i = 0; i < g->rank; i++) {
		int64_t want;
		if (!rpn_eval(m, &g->dims[i], b->val, &want, err, sizeof err))
			return bad(c, m, "tensor '%s': %s", g->name, err);
		if (want <= 0)
			return bad(c, m, "tensor '%s': dimension %d has extent "
				"%lld from the params: sizes must be > 0",
				g->name, i, (long long)want);
		if (want > INT32_MAX)
			return bad(c, m, "tensor '%s': dimension %d has extent "
				"%lld, which overflows 32-bit indexing",
				g->name, i, (long long)want);
		if (given && t->dims[i] != want)
			return bad(c, m, "tensor '%s': dims[%d] is %lld but "
				"the schedule's extent from the params is %lld",
				g->name, i, (long long)t->dims[i],
				(long long)want);
		d[i] = want;
	}
	return FG_OK;
}

/* Strides in elements: given (all positive) or all zero (dense). */
static fg_status
strides(fg_ctx *c, const Meta *m, const MetaArg *g, const fg_tensor *t,
	const int64_t *d, int64_t *s)
{
	int given = 0, r = g->rank;
	int64_t span = 1, esz = ty_bytes(g->ty);

	for (int i = 0; i < r; i++)
		given += t->strides[i] != 0;
	for (int i = r - 1; i >= 0; i--) {
		if (!given) {
			/* each extent is < 2^31, but four of them overflow
			 * (the metadata fuzzer's find) */
			if (i == r - 1)
				s[i] = 1;
			else if (!ck_mul64(s[i + 1], d[i + 1], &s[i]))
				return bad(c, m, "tensor '%s': its dense strides "
					"overflow 64-bit addressing: the product "
					"of dims[%d..%d] is above 2^63", g->name,
					i + 1, r - 1);
			continue;
		}
		if (t->strides[i] <= 0)
			return bad(c, m, "tensor '%s': strides[%d] is %lld: "
				"strides must be > 0 (or all 0: dense)",
				g->name, i, (long long)t->strides[i]);
		s[i] = t->strides[i];
	}
	/* a global the kernel reads or writes with ld/st is addressed as
	 * a dense tensor of its dims (a stride of an extent-1 dimension
	 * is never used) */
	int64_t dense = 1;
	if (given && g->strided && s[r - 1] != 1)
		return bad(c, m, "tensor '%s': strides[%d] is %lld: its last "
			"dimension must be contiguous (stride 1)", g->name, r - 1,
			(long long)s[r - 1]);
	for (int i = r - 1; given && g->direct && !g->strided && i >= 0; i--) {
		if (d[i] > 1 && s[i] != dense)
			return bad(c, m, "tensor '%s': strides[%d] is %lld, but "
				"the kernel reads or writes '%s' with ordinary "
				"loads and stores (G[i], store, global_load), "
				"which address it as a dense tensor: strides[%d] "
				"must be %lld (or pass all strides 0)", g->name,
				i, (long long)s[i], g->name, i, (long long)dense);
		if (!ck_mul64(dense, d[i], &dense))
			return bad(c, m, "tensor '%s': its dims overflow 64-bit "
				"addressing", g->name);
	}
	for (int i = 0; i < r; i++) {
		int64_t x;
		if (!ck_mul64(d[i] - 1, s[i], &x))
			return bad(c, m, "tensor '%s': its strides overflow "
				"64-bit addressing: (dims[%d] - 1) * strides[%d] "
				"is %lld * %lld", g->name, i, i,
				(long long)(d[i] - 1), (long long)s[i]);
		if (!ck_add64(span, x, &span))
			return bad(c, m, "tensor '%s': its strides overflow "
				"64-bit addressing: its span through dimension "
				"%d is above 2^63 elements", g->name, i);
	}
	/* ld/st address a strided global in 32-bit element offsets */
	if (g->strided && g->direct && span > INT32_MAX)
		return bad(c, m, "tensor '%s': its strides span %lld elements; "
			"the kernel addresses it with 32-bit offsets (at most "
			"2^31 - 1)", g->name, (long long)span);
	if (!ck_mul64(span, esz, &span))
		return bad(c, m, "tensor '%s': its strides overflow 64-bit "
			"addressing: its span of %lld elements times %lld "
			"bytes", g->name, (long long)span, (long long)esz);
	return FG_OK;
}

/* The tensor-map rules of cuTensorMapEncodeTiled. */
/* A global cp_async reads ('// fagen.cpasync'): each thread copies
 * 16-byte chunks, so the address and the stride of every dimension but
 * the innermost (where its extent is above 1) are multiples of 16
 * bytes; a misaligned chunk would fault on the GPU. */
static fg_status
cpasync_rules(fg_ctx *c, const Meta *m, const MetaArg *g, uint64_t ptr,
	const int64_t *dims, const int64_t *s)
{
	int64_t esz = ty_bytes(g->ty);

	if (ptr % 16)
		return bad(c, m, "tensor '%s': address 0x%llx is not 16-byte "
			"aligned, as cp_async's 16-byte copies require", g->name,
			(unsigned long long)ptr);
	for (int i = 0; i < g->rank - 1; i++)
		if (dims[i] > 1 && s[i] % (16 / esz))
			return bad(c, m, "tensor '%s': strides[%d] is %lld "
				"elements (%lld bytes); cp_async copies 16-byte "
				"chunks, so it must be a multiple of 16 bytes",
				g->name, i, (long long)s[i],
				(long long)(s[i] * esz));
	return FG_OK;
}

static fg_status
tma_rules(fg_ctx *c, const Meta *m, const MetaArg *g, uint64_t ptr,
	const int64_t *s)
{
	int64_t esz = ty_bytes(g->ty);

	if (ty_tma_code(g->ty) < 0)
		return bad(c, m, "tensor '%s': TMA cannot move %s elements",
			g->name, ty_name(g->ty));
	if (ptr % 16)
		return bad(c, m, "tensor '%s': address 0x%llx is not 16-byte "
			"aligned, as TMA requires", g->name,
			(unsigned long long)ptr);
	if (s[g->rank - 1] != 1)
		return bad(c, m, "tensor '%s': the innermost stride is %lld; "
			"TMA needs 1 (contiguous rows)", g->name,
			(long long)s[g->rank - 1]);
	for (int i = 0; i < g->rank - 1; i++) {
		int64_t bytes;
		/* not bounded by the span when dims[i] is 1 */
		if (!ck_mul64(s[i], esz, &bytes))
			return bad(c, m, "tensor '%s': strides[%d] is %lld "
				"elements, whose size in bytes (times %lld) "
				"overflows 64 bits; TMA needs a multiple of 16 "
				"bytes below 2^40", g->name, i,
				(long long)s[i], (long long)esz);
		if (bytes % 16 || bytes >= (int64_t)1 << 40)
			return bad(c, m, "tensor '%s': strides[%d] is %lld "
				"elements (%lld bytes); TMA needs a multiple "
				"of 16 bytes below 2^40", g->name, i,
				(long long)s[i], (long long)bytes);
	}
	return FG_OK;
}

static fg_status
tensor(fg_ctx *c, const Meta *m, int i, Bound *b)
{
	const MetaArg *g = &m->args[i];
	const fg_arg *a = b->arg[i];
	const fg_tensor *t = &a->t;
	fg_status st;

	if (a->kind != FG_ARG_TENSOR)
		return bad(c, m, "'%s' is a tensor: pass FG_ARG_TENSOR "
			"(FG_PTR)", g->name);
	if (t->ptr == 0)
		return bad(c, m, "tensor '%s': the address is NULL", g->name);
	if (t->rank != 0 && t->rank != g->rank)
		return bad(c, m, "tensor '%s': rank is %d but the schedule "
			"declares %d", g->name, t->rank, g->rank);
	if (t->ptr % (uint64_t)ty_bytes(g->ty))
		return bad(c, m, "tensor '%s': address 0x%llx is not aligned "
			"to its %s elements", g->name,
			(unsigned long long)t->ptr, ty_name(g->ty));
	if ((st = extents(c, m, g, t, b, b->dims[i])) ||
	    (st = strides(c, m, g, t, b->dims[i], b->strides[i])) ||
	    (g->cpasync && (st = cpasync_rules(c, m, g, t->ptr, b->dims[i],
	    b->strides[i]))))
		return st;
	return g->has_tma ? tma_rules(c, m, g, t->ptr, b->strides[i]) : FG_OK;
}

/* A view's box against its element type and swizzle. */
static fg_status
view(fg_ctx *c, const Meta *m, const MetaArg *v)
{
	int64_t inner;

	if (!ck_mul64(v->box[v->rank - 1], ty_bytes(v->ty), &inner))
		return bad(c, m, "tma '%s': the inner box of %lld elements "
			"overflows 64 bits in bytes", v->name,
			(long long)v->box[v->rank - 1]);
	if (inner % 16)
		return bad(c, m, "tma '%s': the inner box is %lld bytes; TMA "
			"needs a multiple of 16", v->name, (long long)inner);
	if (v->swizzle && inner > v->swizzle)
		return bad(c, m, "tma '%s': the inner box is %lld bytes, more "
			"than its %d-byte swizzle span", v->name,
			(long long)inner, v->swizzle);
	return FG_OK;
}

/* What CUDA can launch: a single-order grid, rounded up to whole
 * blocks of the cluster's shape, within the grid limits.  (The
 * persistent grid's size needs the device: launch.c.) */
static fg_status
launchable(fg_ctx *c, const Meta *m, const Bound *b)
{
	static const int64_t lim[3] = {INT32_MAX, 65535, 65535};
	const int *cl = m->cluster;

	for (int i = 0; i < 3 && m->order == ORD_SINGLE; i++) {
		int64_t g = (b->tiles[i] + cl[i] - 1) / cl[i] * cl[i];
		if (g > lim[i])
			return bad(c, m, "grid dimension %d is %lld%s, above "
				"CUDA's limit of %lld", i, (long long)g, g !=
				b->tiles[i] ? " (rounded up to whole clusters)" :
				"", (long long)lim[i]);
	}
	return FG_OK;
}

static fg_status
tiles(fg_ctx *c, const Meta *m, Bound *b)
{
	char err[256];
	int64_t total = 1;

	for (int i = 0; i < 3; i++) {
		b->tiles[i] = 1;
		if (i >= m->ntiles)
			continue;
		if (!rpn_eval(m, &m->grid[i], b->val, &b->tiles[i], err,
		    sizeof err))
			return bad(c, m, "tile grid: %s", err);
		if (b->tiles[i] <= 0)
			return bad(c, m, "the tile grid's dimension %d has "
				"extent %lld from the params: sizes must be "
				"> 0", i, (long long)b->tiles[i]);
		if (!ck_mul64(total, b->tiles[i], &total) ||
		    total > INT32_MAX)
			return bad(c, m, "the tile grid has more than 2^31 - 1 "
				"tiles, which overflows 32-bit indexing");
	}
	return launchable(c, m, b);
}

fg_status
args_bind(fg_ctx *c, const Meta *m, const fg_arg *args, int n, Bound *b)
{
	fg_status st;

	memset(b, 0, sizeof *b);
	if (n < 0 || (n > 0 && !args))
		return bad(c, m, "%d arguments at %s", n, args ? "an address" :
			"NULL");
	if ((st = match(c, m, args, n, b)))
		return st;
	for (int i = 0; i < m->nargs; i++)
		if (m->args[i].kind == MA_PARAM &&
		    (st = param(c, m, &m->args[i], b->arg[i], &b->val[i])))
			return st;
	for (int i = 0; i < m->nargs; i++) {
		if (m->args[i].kind == MA_GLOBAL)
			st = tensor(c, m, i, b);
		else if (m->args[i].kind == MA_TMA)
			st = view(c, m, &m->args[i]);
		if (st)
			return st;
	}
	return tiles(c, m, b);
}
