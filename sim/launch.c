/* launch.c: global memory and the launch (issue #18).
 *
 * A launch builds the parameter buffer from the metadata as
 * runtime/jit/launch.c does (scalars, global addresses, tensor maps in
 * the .entry's order) and the grid (order=single: the tile grid in
 * whole blocks of the cluster's shape; persistent and lpt: min(tiles,
 * SIM_OPT_MAX_CTAS) CTAs, whole clusters), then runs it (run.c). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simi.h"

Sim *
sim_new(void)
{
	Sim *s = calloc(1, sizeof *s);

	if (!s)
		return NULL;
	s->max_ctas = 132;
	s->step_limit = 200000000;
	return s;
}

void
sim_free(Sim *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->nbuf; i++)
		free(s->buf[i].p);
	free(s->buf);
	free(s->map);
	free(s->err);
	free(s);
}

void
sim_set(Sim *s, int opt, int64_t v)
{
	if (opt == SIM_OPT_MAX_CTAS)
		s->max_ctas = v > 0 ? v : 1;
	else if (opt == SIM_OPT_EAGER)
		s->eager = v != 0;
	else if (opt == SIM_OPT_STEP_LIMIT)
		s->step_limit = v;
}

uint64_t
sim_alloc(Sim *s, size_t n)
{
	if (n == 0 || n > (1ull << GBUF_SHIFT) || s->nbuf >= 4000)
		return 0;
	struct Gbuf *b = realloc(s->buf, (size_t)(s->nbuf + 1) * sizeof *b);
	if (!b)
		return 0;
	s->buf = b;
	b[s->nbuf].p = calloc(1, n);
	b[s->nbuf].n = n;
	if (!b[s->nbuf].p)
		return 0;
	return (uint64_t)++s->nbuf << GBUF_SHIFT;
}

/* sim_alloc's buffers first, then sim_map's ranges: a Sim that holds
 * both could see a host address inside a buffer's window, but the
 * runtime's holds ranges only and the CLI's buffers only. */
void *
sim_host(Sim *s, uint64_t a, size_t n)
{
	uint64_t i = (a >> GBUF_SHIFT) - 1, off = a & ((1ull << GBUF_SHIFT) - 1);

	if ((a >> GBUF_SHIFT) != 0 && i < (uint64_t)s->nbuf &&
	    off <= s->buf[i].n && n <= s->buf[i].n - off)
		return s->buf[i].p + off;
	for (int k = s->nmap - 1; k >= 0; k--) {
		const struct Gmap *g = &s->map[k];
		if (a >= g->lo && a - g->lo <= g->n && n <= g->n - (a - g->lo))
			return (void *)(uintptr_t)a;
	}
	return NULL;
}

uint64_t
sim_map(Sim *s, void *host, size_t n)
{
	uint64_t lo = (uint64_t)(uintptr_t)host;

	if (!host || n == 0 || lo + n < lo || s->nmap >= 1 << 20)
		return 0;
	struct Gmap *g = realloc(s->map, (size_t)(s->nmap + 1) * sizeof *g);
	if (!g)
		return 0;
	s->map = g;
	g[s->nmap++] = (struct Gmap){lo, n};
	return lo;
}

void
sim_unmap(Sim *s, uint64_t a)
{
	for (int k = 0; k < s->nmap; k++)
		if (s->map[k].lo == a) {
			memmove(&s->map[k], &s->map[k + 1],
				(size_t)(s->nmap - k - 1) * sizeof *s->map);
			s->nmap--;
			return;
		}
}

uint8_t *
sim_gmem(Sim *s, uint64_t a, size_t n, const char *what)
{
	uint8_t *p = sim_host(s, a, n);

	if (!p)
		sim_fail(s, "%s of %zu bytes at global address 0x%llx is outside "
			"every buffer", what, n, (unsigned long long)a);
	return p;
}

static void
vappend(Sim *s, const char *fmt, va_list ap)
{
	va_list aq;

	va_copy(aq, ap);
	int n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (n < 0)
		return;
	if (s->errlen + (size_t)n + 1 > s->errcap) {
		size_t cap = (s->errlen + (size_t)n + 1) * 2;
		char *p = realloc(s->err, cap);
		if (!p)
			return;
		s->err = p;
		s->errcap = cap;
	}
	vsnprintf(s->err + s->errlen, (size_t)n + 1, fmt, ap);
	s->errlen += (size_t)n;
}

void
sim_append(Sim *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vappend(s, fmt, ap);
	va_end(ap);
}

int
sim_fail(Sim *s, const char *fmt, ...)
{
	va_list ap;

	s->errlen = 0;
	if (s->err)
		s->err[0] = 0;
	va_start(ap, fmt);
	vappend(s, fmt, ap);
	va_end(ap);
	return -1;
}

const char *
sim_error(const Sim *s)
{
	return s->err ? s->err : "";
}

SimStats
sim_stats(const Sim *s)
{
	return s->stats;
}

/* The text of PTX line n, without its indentation. */
/* The parameter buffer, in the .entry's order, and the tensor maps. */
static int
params(Sim *s, const SimMod *m, const SimVal *v, const int64_t *pv,
	uint8_t *buf, Tmap *maps)
{
	const SimMeta *mt = &m->meta;

	for (int i = 0; i < m->nparams; i++) {
		const Param *p = &m->params[i];
		int a = -1;
		for (int j = 0; j < mt->nargs; j++)
			if (!strcmp(mt->args[j].name, p->name))
				a = j;
		if (a < 0)
			return sim_fail(s, "the .entry parameter '%s' has no "
				"fagen.arg line", p->name);
		const SimArg *g = &mt->args[a];
		uint8_t *d = buf + p->off;
		if (g->kind == SIM_ARG_TMA) {
			uint64_t magic = TMAP_MAGIC, idx = (uint64_t)a;
			if (p->size < 16)
				return sim_fail(s, "tensor map '%s' has %d bytes",
					p->name, p->size);
			if (!tmap_build(s, mt, a, pv, v, &maps[a]))
				return -1;
			memcpy(d, &magic, 8);
			memcpy(d + 8, &idx, 8);
		} else if (g->kind == SIM_ARG_GLOBAL) {
			if (p->size != 8)
				return sim_fail(s, "global '%s' is not a .u64 "
					"parameter", p->name);
			memcpy(d, &v[g->user].ptr, 8);
		} else if (g->kind == SIM_ARG_STRIDES) {
			/* a 'strided' global's: dense, as the caller's are */
			const SimArg *x = &mt->args[g->of];
			int64_t st = 1, e;
			if (p->size != 8 * x->rank)
				return sim_fail(s, "strides '%s' have %d bytes",
					p->name, p->size);
			for (int k = x->rank - 1; k >= 0; k--) {
				memcpy(d + 8 * k, &st, 8);
				if (!sim_rpn_eval(&x->dims[k], pv, &e) ||
				    __builtin_mul_overflow(st, e, &st))
					return sim_fail(s, "global '%s': dimension "
						"%d has no extent", x->name, k);
			}
		} else if (g->ty == TY_F32) {
			float f = (float)v[g->user].f;
			memcpy(d, &f, 4);
		} else {
			memcpy(d, &pv[a], (size_t)(p->size < 8 ? p->size : 8));
		}
	}
	return 0;
}

/* Every global covers its dense extent; its dims for the tensor maps. */
static int
globals(Sim *s, const SimMeta *mt, const SimVal *v, const int64_t *pv)
{
	for (int i = 0; i < mt->nargs; i++) {
		const SimArg *g = &mt->args[i];
		int64_t n = ty_bits(g->ty) / 8, d;
		if (g->kind != SIM_ARG_GLOBAL)
			continue;
		for (int k = 0; k < g->rank; k++) {
			if (!sim_rpn_eval(&g->dims[k], pv, &d) || d <= 0 ||
			    __builtin_mul_overflow(n, d, &n))
				return sim_fail(s, "global '%s': dimension %d has "
					"no positive extent from the params",
					g->name, k);
		}
		if (!sim_host(s, v[g->user].ptr, (size_t)n))
			return sim_fail(s, "global '%s' needs %lld bytes at "
				"0x%llx, beyond its buffer", g->name, (long long)n,
				(unsigned long long)v[g->user].ptr);
	}
	return 0;
}

int
sim_launch(Sim *s, const SimMod *m, const SimVal *v, int nargs)
{
	const SimMeta *mt = &m->meta;
	int64_t pv[SIM_MAXARGS] = {0}, tiles[3] = {1, 1, 1}, n = 1;
	Tmap maps[SIM_MAXARGS];
	unsigned grid[3] = {1, 1, 1};

	sim_fail(s, "%s", "");
	if (nargs != mt->nuser)
		return sim_fail(s, "kernel '%s' takes %d arguments, not %d",
			mt->name, mt->nuser, nargs);
	for (int i = 0; i < mt->nargs; i++)
		if (mt->args[i].kind == SIM_ARG_PARAM)
			pv[i] = v[mt->args[i].user].i;
	for (int i = 0; i < mt->ntiles; i++)
		if (!sim_rpn_eval(&mt->grid[i], pv, &tiles[i]) || tiles[i] <= 0 ||
		    tiles[i] > 65535 || __builtin_mul_overflow(n, tiles[i], &n))
			return sim_fail(s, "the tile grid's dimension %d has no "
				"extent in 1..65535 from the params", i);
	if (globals(s, mt, v, pv))
		return -1;
	uint8_t *pbuf = calloc((size_t)m->param_bytes + 8, 1);
	if (!pbuf)
		return sim_fail(s, "out of memory");
	if (params(s, m, v, pv, pbuf, maps)) {
		free(pbuf);
		return -1;
	}
	/* as runtime/jit/launch.c: whole blocks of the cluster's shape */
	const unsigned dim[3] = {(unsigned)mt->cluster[0],
		(unsigned)mt->cluster[1], (unsigned)mt->cluster[2]};
	int64_t cs = (int64_t)dim[0] * dim[1] * dim[2], blk = 1;
	for (int i = 0; i < 3; i++) {
		tiles[i] = (tiles[i] + dim[i] - 1) / dim[i];
		blk *= tiles[i];
	}
	if (mt->order == SIM_ORD_SINGLE) {
		for (int i = 0; i < 3; i++)
			grid[i] = (unsigned)(tiles[i] * dim[i]);
	} else {
		int64_t cap = s->max_ctas - s->max_ctas % cs;
		n = blk * cs < cap ? blk * cs : cap;
		n = n > cs ? n : cs;
		grid[0] = (unsigned)(n / (dim[1] * dim[2]));
		grid[1] = dim[1];
		grid[2] = dim[2];
	}
	int rc = run_grid(s, m, pbuf, maps, grid, dim);
	free(pbuf);
	return rc;
}

/* ---- launches from the runtime's simulated driver (runtime/driver/sim.c)
 *
 * sim_tmap_encode's record, in a CUtensorMap's opaque bytes: the launch
 * turns it into a Tmap and leaves TMAP_MAGIC and the map's index in the
 * parameter buffer, where tma.c looks for them, as params() does. */
typedef struct RawTmap {
	uint64_t magic, idx, addr;
	int64_t dim[SIM_MAXRANK], stride[SIM_MAXRANK];  /* stride[0]: esize */
	uint16_t box[SIM_MAXRANK];
	uint8_t rank, esize, swizzle, oob_nan;          /* swizzle in bytes */
} RawTmap;
_Static_assert(sizeof(RawTmap) <= SIM_TMAP_BYTES, "a CUtensorMap's bytes");

bool
sim_tmap_encode(void *map, uint64_t addr, int rank, int esize,
	const uint64_t *dim, const uint64_t *stride, const uint32_t *box,
	int swizzle, bool oob_nan)
{
	RawTmap t = {.magic = TMAP_MAGIC, .addr = addr, .rank = (uint8_t)rank,
		.esize = (uint8_t)esize, .swizzle = (uint8_t)swizzle,
		.oob_nan = oob_nan};

	if (rank < 1 || rank > SIM_MAXRANK || (esize != 1 && esize != 2 &&
	    esize != 4 && esize != 8) || (swizzle != 0 && swizzle != 32 &&
	    swizzle != 64 && swizzle != 128) || addr % 16)
		return false;
	for (int i = 0; i < rank; i++) {
		if (dim[i] < 1 || dim[i] > 1ull << 32 || box[i] < 1 ||
		    box[i] > 256)
			return false;
		if (i && (stride[i - 1] % 16 || stride[i - 1] >= 1ull << 40))
			return false;
		t.dim[i] = (int64_t)dim[i];
		t.stride[i] = i ? (int64_t)stride[i - 1] : esize;
		t.box[i] = (uint16_t)box[i];
	}
	memset(map, 0, SIM_TMAP_BYTES);
	memcpy(map, &t, sizeof t);
	return true;
}

/* The record at p (from sim_tmap_encode) as the Tmap tma.c uses, with
 * tmap_build's limits on what is modelled. */
static int
tmap_decode(Sim *s, const char *name, const uint8_t *p, Tmap *t)
{
	RawTmap r;

	memcpy(&r, p, sizeof r);
	if (r.magic != TMAP_MAGIC || r.rank < 1 || r.rank > SIM_MAXRANK)
		return sim_fail(s, "tensor map '%s' was not written by the "
			"simulator's cuTensorMapEncodeTiled", name);
	memset(t, 0, sizeof *t);
	t->addr = r.addr;
	t->rank = r.rank;
	t->esize = r.esize;
	t->swizzle = r.swizzle;
	t->oob_nan = r.oob_nan;
	for (int i = 0; i < r.rank; i++) {
		t->dim[i] = r.dim[i];
		t->stride[i] = r.stride[i];
		t->box[i] = r.box[i];
	}
	int inner = t->box[0] * t->esize;
	if (inner % 16)
		return sim_fail(s, "tma '%s': the inner box (%d bytes) must be "
			"a 16-byte multiple", name, inner);
	if (t->swizzle && inner != t->swizzle)
		return sim_fail(s, "tma '%s': an inner box of %d bytes under a "
			"%d-byte swizzle is not modelled (only equal spans)",
			name, inner, t->swizzle);
	return 0;
}

/* [a, a + n) reachable for this launch, unless it already is. */
static int
reach(Sim *s, const char *name, uint64_t a, int64_t n)
{
	if (a == 0 || n <= 0 || sim_host(s, a, (size_t)n))
		return 0;
	if (!sim_map(s, (void *)(uintptr_t)a, (size_t)n))
		return sim_fail(s, "global '%s': cannot map %lld bytes at "
			"0x%llx", name, (long long)n, (unsigned long long)a);
	return 0;
}

/* What the kernel may touch: each global without a tensor map over its
 * dense extent, each tensor map over the bytes its dims and strides
 * span.  A null pointer (an absent optional global) reaches nothing. */
static int
reach_all(Sim *s, const SimMeta *mt, const uint8_t *pbuf, const int *poff,
	const int64_t *pv, const Tmap *maps)
{
	for (int a = 0; a < mt->nargs; a++) {
		const SimArg *g = &mt->args[a];
		int64_t n = ty_bits(g->ty) / 8, d;
		uint64_t ptr;
		bool viewed = false;
		if (g->kind == SIM_ARG_TMA && poff[a] >= 0) {
			const Tmap *t = &maps[a];
			for (int i = 0; i < t->rank; i++)
				n += (t->dim[i] - 1) * t->stride[i];
			if (reach(s, g->name, t->addr, n))
				return -1;
			continue;
		}
		if (g->kind != SIM_ARG_GLOBAL || poff[a] < 0)
			continue;
		int st = -1;  /* its strides argument ('strided'), if any */
		for (int j = 0; j < mt->nargs; j++) {
			viewed |= mt->args[j].kind == SIM_ARG_TMA &&
				mt->args[j].of == a;
			if (mt->args[j].kind == SIM_ARG_STRIDES &&
			    mt->args[j].of == a && poff[j] >= 0)
				st = j;
		}
		if (viewed)
			continue;
		int64_t span = 1;  /* elements: 1 + sum (d - 1) * stride */
		for (int k = 0; k < g->rank; k++) {
			int64_t x = 0;
			if (!sim_rpn_eval(&g->dims[k], pv, &d) || d <= 0 ||
			    __builtin_mul_overflow(n, d, &n))
				return sim_fail(s, "global '%s': dimension "
					"%d has no positive extent from the "
					"params", g->name, k);
			if (st >= 0) {
				memcpy(&x, pbuf + poff[st] + 8 * k, 8);
				if (x <= 0 || __builtin_mul_overflow(d - 1, x, &x) ||
				    __builtin_add_overflow(span, x, &span))
					return sim_fail(s, "global '%s': bad "
						"strides", g->name);
			}
		}
		if (st >= 0)
			n = span * (ty_bits(g->ty) / 8);
		memcpy(&ptr, pbuf + poff[a], 8);
		if (reach(s, g->name, ptr, n))
			return -1;
	}
	return 0;
}

/* The parameter buffer from the driver's parameters, the params' values
 * for the size programs and the tensor maps. */
static int
raw_params(Sim *s, const SimMod *m, void *const *pp, uint8_t *pbuf,
	int *poff, int64_t *pv, Tmap *maps)
{
	const SimMeta *mt = &m->meta;

	for (int i = 0; i < m->nparams; i++) {
		const Param *p = &m->params[i];
		uint8_t *d = pbuf + p->off;
		int a = -1;
		if (!pp[i])
			return sim_fail(s, "parameter '%s' has no value",
				p->name);
		memcpy(d, pp[i], (size_t)p->size);
		for (int j = 0; j < mt->nargs; j++)
			if (!strcmp(mt->args[j].name, p->name))
				a = j;
		if (a < 0)
			continue;
		const SimArg *g = &mt->args[a];
		poff[a] = p->off;
		if (g->kind == SIM_ARG_TMA) {
			uint64_t magic = TMAP_MAGIC, idx = (uint64_t)a;
			if ((size_t)p->size < sizeof(RawTmap))
				return sim_fail(s, "tensor map '%s' has %d "
					"bytes", p->name, p->size);
			if (tmap_decode(s, p->name, d, &maps[a]))
				return -1;
			memcpy(d, &magic, 8);
			memcpy(d + 8, &idx, 8);
		} else if (g->kind == SIM_ARG_PARAM && p->size <= 8) {
			uint64_t u = 0;
			int sh = 64 - 8 * p->size;
			memcpy(&u, d, (size_t)p->size);
			pv[a] = ty_signed(g->ty) && sh ?
				(int64_t)(u << sh) >> sh : (int64_t)u;
		}
	}
	return 0;
}

int
sim_launch_raw(Sim *s, const SimMod *m, void *const *pp,
	const unsigned grid[3], unsigned block, const unsigned cluster[3],
	unsigned smem)
{
	const SimMeta *mt = &m->meta;
	int64_t pv[SIM_MAXARGS] = {0};
	int poff[SIM_MAXARGS];
	Tmap maps[SIM_MAXARGS];
	int nmap = s->nmap, rc = -1;

	sim_fail(s, "%s", "");
	if ((int)block != mt->threads || (int)smem < mt->smem)
		return sim_fail(s, "kernel '%s' launched with %u threads and "
			"%u bytes of shared memory; its metadata says %d and "
			"%d", mt->name, block, smem, mt->threads, mt->smem);
	if (!grid[0] || !grid[1] || !grid[2])
		return sim_fail(s, "kernel '%s': an empty grid", mt->name);
	for (int a = 0; a < SIM_MAXARGS; a++)
		poff[a] = -1;
	uint8_t *pbuf = calloc((size_t)m->param_bytes + 8, 1);
	if (!pbuf)
		return sim_fail(s, "out of memory");
	if (!raw_params(s, m, pp, pbuf, poff, pv, maps) &&
	    !reach_all(s, mt, pbuf, poff, pv, maps))
		rc = run_grid(s, m, pbuf, maps, grid, cluster);
	s->nmap = nmap;   /* the launch's ranges go with it */
	free(pbuf);
	return rc;
}
