/* verify_runs.c: which runs the schedule verifier makes, and making
 * them.  A run is one shape class (a combination of the 'verify' values
 * of the integer params and globals), one grid (one CTA or one of two;
 * for order=single, the first tile, two tiles of one CTA or the last
 * tile) and one mode (processes first, events first, or one of four
 * seeded random interleavings).  The runs are independent, so they run
 * on a pool of threads; a failure is reported as the serial order would
 * report it (verify.c makes one run).
 * Requires: a SirMod after the pass pipeline.  Ensures: diagnostics. */
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"
#include "check/check.h"
#include "check/verify.h"

/* Every mbarrier that is waited on must have a producer somewhere. */
static void
scan(const SirBlock *b, const Res *r, const SirIns **wait, bool *prod)
{
	for (int i = 0; i < b->n; i++) {
		const SirIns *in = &b->v[i];
		if (in->op == SOP_mbar_wait && in->r[0] == r && !*wait)
			*wait = in;
		if ((in->op == SOP_mbar_arrive || in->op == SOP_mbar_expect ||
		    in->op == SOP_tc_commit) && in->r[0] == r)
			*prod = true;
		if ((in->op == SOP_tma_load || in->op == SOP_cp_async ||
		    in->op == SOP_bulk_copy || in->op == SOP_bulk_load) &&
		    in->r[2] == r)
			*prod = true;
		if (in->op == SOP_clred_put && in->r[1] == r)
			*prod = true;  /* rowsum(... cbar=) */
		if (in->body)
			scan(in->body, r, wait, prod);
		if (in->els)
			scan(in->els, r, wait, prod);
	}
}

static bool
producers(Ctx *ctx, SirMod *m)
{
	bool ok = true;

	for (const Res *r = m->k->res; r; r = r->next) {
		const SirIns *w = NULL;
		const SirPart *wp = NULL;
		bool prod = false;
		if (r->kind != R_MBAR)
			continue;
		for (int i = 0; i < m->nparts; i++) {
			scan(&m->parts[i]->body, r, &w, &prod);
			if (w && !wp)
				wp = m->parts[i];
		}
		if (w && !prod) {
			diag_error(ctx, w->span, "'%s' is waited on but nothing "
				"arrives on it: no arrive, expect, TMA, cp_async, bulk_copy or "
				"commit "
				"[no-producer]", r->name);
			vf_find_add(ctx, &m->finds, "no-producer",
				vf_last_error(ctx), wp, w->span)->bar = r;
			diag_note(ctx, r->nspan, "'%s' declared here", r->name);
			ok = false;
		}
	}
	return ok;
}

/* Does the tile loop carry state from one tile to the next: read
 * 't.iter', or assign a 'var' set before the loop?  Then it was written
 * to run several tiles, and order=single is also run as two tiles of one
 * CTA. */
static bool
carried(const SirPart *sp, const SirBlock *b, bool *outer, bool in_tile)
{
	for (int i = 0; i < b->n; i++) {
		const SirIns *in = &b->v[i];
		if (in_tile && ((in->op == SOP_tilefield && in->imm == 3) ||
		    (in->op == SOP_mov && outer[in->dst])))
			return true;
		if (!in_tile && in->op == SOP_mov && sp->vals[in->dst].ty !=
		    TY_FRAG)
			outer[in->dst] = true;
		bool t = in_tile || in->op == SOP_tile;
		if ((in->body && carried(sp, in->body, outer, t)) ||
		    (in->els && carried(sp, in->els, outer, t)))
			return true;
	}
	return false;
}

static bool
loop_carries(Ctx *ctx, const SirMod *m)
{
	for (int i = 0; i < m->nparts; i++) {
		const SirPart *sp = m->parts[i];
		bool *outer = NEWARR(&ctx->scratch, bool, sp->nvals + 1);
		if (carried(sp, &sp->body, outer, false))
			return true;
	}
	return false;
}

/* Does the schedule use a semaphore ('sem_wait', 'sem_add')? */
static bool
uses_sem(const SirBlock *b)
{
	for (int i = 0; i < b->n; i++) {
		const SirIns *in = &b->v[i];
		if (in->op == SOP_sem_wait || in->op == SOP_sem_add ||
		    (in->body && uses_sem(in->body)) || (in->els &&
		    uses_sem(in->els)))
			return true;
	}
	return false;
}

/* The values to explore for each integer param: its 'verify' list, or
 * 1 and 2. */
static int
domain(const Kernel *k, const Res *p, int64_t *out)
{
	(void)k;
	if (p->vfy) {  /* folded by sema: N_INT values */
		const Node *v = p->vfy;
		int n = v->kind == N_TUPLE ? v->kids.n : 1;
		for (int j = 0; j < n && j < 16; j++)
			out[j] = (v->kind == N_TUPLE ? v->kids.v[j] : v)->ival;
		if (n > 0)
			return n < 16 ? n : 16;
	}
	out[0] = 1;
	out[1] = 2;
	return 2;
}

/* Whether a global's 'verify' value lists several contents. */
static bool
several(const Node *v)
{
	return v->kind == N_TUPLE && v->kids.n > 0 &&
		v->kids.v[0]->kind == N_TUPLE;
}

/* The contents of a global to explore: their indices 0..n-1. */
static int
contents(const Res *g, int64_t *out)
{
	int n = several(g->vfy) ? g->vfy->kids.n : 1;

	n = n < 16 ? n : 16;
	for (int j = 0; j < n; j++)
		out[j] = j;
	return n;
}

/* Content j of a global: a tuple of integers, or one integer. */
static const Node *
content(const Res *g, int64_t j)
{
	return several(g->vfy) ? g->vfy->kids.v[j] : g->vfy;
}

/* Element i of a content, or false when i is outside it. */
bool
vf_element(const Node *c, int64_t i, int64_t *v)
{
	int n = c->kind == N_TUPLE ? c->kids.n : 1;
	const Node *e = c->kind == N_TUPLE && i >= 0 && i < n ?
		c->kids.v[i] : c;

	bool neg = e->kind == N_UNARY && e->op == '-' && e->a->kind == N_INT;

	if (i < 0 || i >= n || (e->kind != N_INT && !neg))
		return false;
	*v = neg ? -e->a->ival : e->ival;  /* '-5' parses as a negation */
	return true;
}

/* Append ' G=[a, b, ...]' to the shape's text; the new length. */
static size_t
shape_content(Sim *s, size_t len, const char *name, const Node *c)
{
	int n = c->kind == N_TUPLE ? c->kids.n : 1;
	char buf[sizeof s->shape];
	size_t k = (size_t)snprintf(buf, sizeof buf, "%s%s=[", len ? " " : "",
		name);

	for (int i = 0; i < n && k < sizeof buf - 24; i++) {
		int64_t v = 0;
		vf_element(c, i, &v);
		k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%lld",
			i ? ", " : "", (long long)v);
	}
	if (k < sizeof buf - 2)
		buf[k++] = ']', buf[k] = 0;
	if (len + k < sizeof s->shape - 32) {
		memcpy(s->shape + len, buf, k + 1);
		len += k;
	}
	return len;
}

/* ------------------------------------------------------------ the runs
 *
 * The runs are items: shape class c (each combination of the 'verify'
 * values), grid g (one CTA, CTA 0 of two, CTA 1 of two; for order=single
 * the first tile, two tiles of one CTA, the last tile) and mode (procs
 * first, events first, four random interleavings), in that order.  Each
 * run starts from the same state (setup()), so runs are independent: a
 * pool of threads may run them in any order, and only a run that fails or
 * says anything is run again, alone, on the caller's context, for its
 * diagnostics, which are then the serial order's. */

enum { NGRID = 3, NMODE = 6 };

typedef struct Plan {
	const Res *ps[64];
	int64_t dom[64][16];
	int nd[64], np;
	long combos;
	bool carries;
} Plan;

/* Set s up for shape class c (params, globals' contents, the shape
 * text); the text's length. */
static size_t
plan_class(Sim *s, const Plan *pl, long c)
{
	long rest = c * (pl->combos == 512 ? 7919 : 1);
	size_t len = 0;

	s->shape[0] = 0;
	for (int i = 0; i < pl->np; i++) {
		const Res *r = pl->ps[i];
		int64_t v = pl->dom[i][rest % pl->nd[i]];
		rest /= pl->nd[i];
		if (r->kind == R_GLOBAL) {
			const Node *n = content(r, v);
			s->gdata[r->index] = n;
			len = shape_content(s, len, r->name, n);
			continue;
		}
		s->params[r->index] = v;
		if (ty_isint(r->ety) && len < sizeof s->shape - 32)
			len += (size_t)snprintf(s->shape + len, sizeof s->shape -
				len, "%s%s=%lld", len ? " " : "", r->name,
				(long long)v);
	}
	return len;
}

/* Set s up for grid g of a class whose shape text is len long; false
 * when that grid is not run. */
static bool
plan_grid(Sim *s, const Plan *pl, int g, size_t len)
{
	static const int64_t grids[NGRID][2] = {{1, 0}, {2, 0}, {2, 1}};
	bool single = s->m->k->order == ORD_SINGLE;
	char *tail = s->shape + len;

	if (s->joint) {  /* semaphores: the grid's first CTAs together */
		if (g)
			return false;
		s->nctaid = s->ncta;
		s->ctaid = 0;
		s->twotiles = false;
		snprintf(tail, sizeof s->shape - len, "%s%d CTAs together%s",
			len ? ", " : "", s->ncta, single ? ", one tile each" :
			"");
		return true;
	}

	s->nctaid = grids[g][0];
	s->ctaid = grids[g][1];
	/* order=single: the first and the last tile, and, when the tile loop
	 * carries state, the first two tiles run by one CTA, so that what one
	 * tile leaves in flight meets the next tile's accesses */
	s->twotiles = single && g == 1;
	if (s->twotiles && !pl->carries)
		return false;
	if (single)
		s->nctaid = 1, s->ctaid = g == 2 ? -1 : 0;
	/* a cluster of several CTAs: the runs are of clusters */
	const char *u = s->ncta > 1 ? "cluster" : "CTA";
	if (s->twotiles)
		snprintf(tail, sizeof s->shape - len, "%stwo %s in one %s",
			len ? ", " : "", s->ncta > 1 ? "clusters' tiles" : "tiles",
			u);
	else if (single)
		snprintf(tail, sizeof s->shape - len, "%s%s %s", len ? ", " :
			"", g == 2 ? "the last" : "the first", s->ncta > 1 ?
			"cluster's tiles" : "tile");
	else
		snprintf(tail, sizeof s->shape - len, "%s%lld %s%s, %s %lld",
			len ? ", " : "", (long long)s->nctaid, u, s->nctaid > 1 ?
			"s" : "", u, (long long)s->ctaid);
	return true;
}

static void
plan_mode(Sim *s, long c, int mode)
{
	s->mode = mode < 2 ? mode : 2;
	s->rng = 0x9e3779b97f4a7c15ull * (uint64_t)(mode + 1) ^ (uint64_t)c;
}

/* Set s up for item it; false when it is not run. */
static bool
plan_item(Sim *s, const Plan *pl, long it)
{
	long c = it / (NGRID * NMODE);
	int g = (int)(it / NMODE % NGRID);

	if (!plan_grid(s, pl, g, plan_class(s, pl, c)))
		return false;
	plan_mode(s, c, (int)(it % NMODE));
	return true;
}

/* The runs one at a time, in order, on the caller's context. */
static void
serial(Sim *s, const Plan *pl)
{
	long total = 0;

	for (long c = 0; c < pl->combos && !s->failed; c++) {
		if (total > MAXTOTAL) {  /* large 'verify' values */
			diag_warn(s->ctx, "verify-limit", s->k->span, "the "
				"verifier stopped after %ld of %ld shape classes: "
				"more than %d steps in all", c, pl->combos, MAXTOTAL);
			break;
		}
		size_t len = plan_class(s, pl, c);
		for (int g = 0; g < NGRID && !s->failed; g++) {
			if (!plan_grid(s, pl, g, len))
				continue;
			for (int mode = 0; mode < NMODE && !s->failed; mode++) {
				plan_mode(s, c, mode);
				vf_run(s);
				total += s->steps;
			}
		}
	}
}

typedef struct Pool {
	const Plan *pl;
	const Sim *tmpl;      /* the caller's Sim, set up for runs */
	long nitems;
	_Atomic long next;    /* the next item to take */
	_Atomic long bad;     /* the first item that failed or said
			       * anything (nitems: none) */
	_Atomic bool serial;  /* a worker could not finish: run serially */
	long *steps;          /* by item: its steps */
	bool *failed;         /* by item: the run failed */
} Pool;

typedef struct Worker {
	Pool *pool;
	pthread_t t;
	Ctx ctx;              /* the caller's, with arenas and diagnostics
			       * of its own */
	jmp_buf oom;
	SirFinding *finds;
} Worker;

static void
bad_min(Pool *pl, long it)
{
	long b = atomic_load(&pl->bad);

	while (it < b && !atomic_compare_exchange_weak(&pl->bad, &b, it))
		;
}

static void *
work(void *arg)
{
	Worker *w = arg;
	Pool *pool = w->pool;
	const Sim *t = pool->tmpl;

	if (setjmp(w->oom)) {  /* leaves its arenas for the caller */
		atomic_store(&pool->serial, true);
		return NULL;
	}
	Ctx *cx = &w->ctx;
	Sim *s = NEW(&cx->scratch, Sim);
	s->ctx = cx;
	s->m = t->m;
	s->k = t->k;
	s->nmbase = t->nmbase;
	s->ncta = t->ncta;
	s->joint = t->joint;
	s->mbase = NEWARR(&cx->scratch, int, t->nmbase + 1);
	s->gdata = NEWARR(&cx->scratch, const Node *, t->k->nres[R_GLOBAL] +
		1);
	s->finds = &w->finds;
	s->skip = t->skip;  /* read only, as are the constants */
	s->skipmask = t->skipmask;
	memcpy(s->konst, t->konst, sizeof s->konst);
	memcpy(s->nkonst, t->nkonst, sizeof s->nkonst);
	memcpy(s->clr, t->clr, sizeof s->clr);
	memcpy(s->nclr, t->nclr, sizeof s->nclr);
	for (;;) {
		long it = atomic_fetch_add(&pool->next, 1);
		if (it >= pool->nitems || it > atomic_load(&pool->bad) ||
		    atomic_load(&pool->serial))
			break;
		if (!plan_item(s, pool->pl, it)) {
			pool->steps[it] = 0;
			continue;
		}
		int said = cx->nerr + cx->nwarn;
		bool ok = vf_run(s);
		pool->steps[it] = s->steps;
		pool->failed[it] = !ok || s->failed;
		if (!ok || s->failed || s->capped || w->finds || cx->nerr +
		    cx->nwarn != said || cx->drop_notes)
			bad_min(pool, it);
		s->failed = false;
		s->capped = false;
		cx->drop_notes = false;
		w->finds = NULL;
	}
	return NULL;
}

/* How many threads may run the runs: FAGEN_VERIFY_JOBS, else the online
 * processors, at most 8; 1 when the caller's allocator is its own. */
static int
jobs(const Ctx *ctx)
{
	const char *e = getenv("FAGEN_VERIFY_JOBS");
	long n;

	if (!ctx->verify_threads)
		return 1;
	n = e && *e ? strtol(e, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : n > 8 ? 8 : (int)n;
}

/* The runs on a pool of threads, the caller's among them.  Each run is
 * decided alone; the first (in serial order) that said anything must
 * have failed, and is run again on s, so the diagnostics are serial()'s.
 * When it only warned, when the steps pass MAXTOTAL before it, or when a
 * thread could not start or ran out of memory, serial() runs them all. */
static void
parallel(Sim *s, const Plan *pl, int nthreads)
{
	Pool pool = {.pl = pl, .tmpl = s, .nitems = pl->combos * NGRID *
		NMODE};
	Worker *w = NEWARR(&s->ctx->scratch, Worker, nthreads);
	int n = 1;

	atomic_init(&pool.next, 0);
	atomic_init(&pool.bad, pool.nitems);
	atomic_init(&pool.serial, false);
	pool.steps = NEWARR(&s->ctx->scratch, long, pool.nitems);
	pool.failed = NEWARR(&s->ctx->scratch, bool, pool.nitems);
	for (int i = 0; i < nthreads; i++) {
		w[i].pool = &pool;
		w[i].ctx = *s->ctx;
		arena_init(&w[i].ctx.perm, arena_default_alloc, NULL, &w[i].oom);
		arena_init(&w[i].ctx.scratch, arena_default_alloc, NULL,
			&w[i].oom);
		w[i].ctx.oom = &w[i].oom;
		w[i].ctx.diags = w[i].ctx.dlast = NULL;
		w[i].ctx.nerr = w[i].ctx.nwarn = 0;
		w[i].ctx.too_many = w[i].ctx.drop_notes = false;
		w[i].ctx.dump = NULL;
	}
	for (; n < nthreads; n++)
		if (pthread_create(&w[n].t, NULL, work, &w[n]) != 0) {
			atomic_store(&pool.serial, true);
			break;
		}
	work(&w[0]);
	for (int i = 1; i < n; i++)
		pthread_join(w[i].t, NULL);
	for (int i = 0; i < nthreads; i++) {
		arena_free(&w[i].ctx.perm);
		arena_free(&w[i].ctx.scratch);
	}
	long bad = atomic_load(&pool.bad), total = 0;
	bool redo = atomic_load(&pool.serial) || (bad < pool.nitems &&
		!pool.failed[bad]);
	for (long it = 0; it <= bad && it < pool.nitems && !redo; it++) {
		if (it % (NGRID * NMODE) == 0 && total > MAXTOTAL)
			redo = true;
		total += it < bad ? pool.steps[it] : 0;
	}
	if (redo)
		serial(s, pl);
	else if (bad < pool.nitems && plan_item(s, pl, bad))
		vf_run(s);
}

void
pass_verify(Ctx *ctx, SirMod *m)
{
	Sim *s;
	Plan *pl;

	if (ctx->no_verify || !producers(ctx, m) || !vf_loads(ctx, m, &m->finds))
		return;
	int nbar = 0, nmres = 0;
	for (const Res *r = m->k->res; r; r = r->next)
		if (r->kind == R_MBAR) {
			nbar += r->count;
			if (r->index >= nmres)
				nmres = r->index + 1;
		}
	/* a cluster is modelled as its CTAs, each with all its warps */
	const int *cl = m->k->cluster;
	int ncta = cl[0] * cl[1] * cl[2], nw = 0;
	for (int i = 0; i < m->nparts; i++)
		nw += m->parts[i]->part->warp_hi - m->parts[i]->part->warp_lo + 1;
	if (nbar * ncta > MAXBAR) {
		diag_warn(ctx, "verify-limit", m->k->span, "the verifier does not "
			"run: %d mbarrier elements, more than %d", nbar * ncta,
			MAXBAR);
		return;
	}
	if (ncta > MAXCTA || nw * ncta > MAXPROC) {
		diag_warn(ctx, "verify-limit", m->k->span, "the verifier does not "
			"run: a cluster of %d CTAs of %d warps, more than %d CTAs "
			"or %d warps in all", ncta, nw, MAXCTA, MAXPROC);
		return;
	}

	/* semaphores order CTAs of the grid: the grid's first CTAs run
	 * together, as many as the model holds (a cluster's CTAs are not
	 * told apart from the grid's: sema refuses the two together) */
	bool joint = false;
	for (int i = 0; i < m->nparts && !joint; i++)
		joint = uses_sem(&m->parts[i]->body);
	if (joint && ncta > 1) {
		diag_warn(ctx, "verify-limit", m->k->span, "the verifier does "
			"not run: it models semaphores ('sem_wait', 'sem_add') "
			"in kernels without clusters only");
		return;
	}
	if (joint) {
		ncta = MAXPROC / (nw ? nw : 1);
		if (ncta > MAXCTA)
			ncta = MAXCTA;
		if (nbar && ncta > MAXBAR / nbar)
			ncta = MAXBAR / nbar;
	}

	s = NEW(&ctx->scratch, Sim);
	s->ctx = ctx;
	s->m = m;
	s->k = m->k;
	s->nmbase = nmres;
	s->joint = joint;
	s->ncta = ncta;
	s->finds = &m->finds;
	s->mbase = NEWARR(&ctx->scratch, int, nmres + 1);
	vf_skips(s, m);
	s->gdata = NEWARR(&ctx->scratch, const Node *,
		m->k->nres[R_GLOBAL] + 1);
	pl = NEW(&ctx->scratch, Plan);
	pl->combos = 1;
	for (const Res *r = m->k->res; r; r = r->next)
		if ((r->kind == R_PARAM || (r->kind == R_GLOBAL && r->vfy)) &&
		    pl->np < 64) {
			int i = pl->np++;
			pl->ps[i] = r;
			pl->nd[i] = r->kind == R_GLOBAL ? contents(r, pl->dom[i]) :
				ty_isint(r->ety) ? domain(m->k, r, pl->dom[i]) : 1;
			if (r->kind == R_PARAM && !ty_isint(r->ety))
				pl->dom[i][0] = 1;
			if (pl->combos <= 512)  /* 64 params of 16 values overflow */
				pl->combos *= pl->nd[i];
		}
	if (pl->combos > 512)
		pl->combos = 512;  /* beyond that, a deterministic sample */
	pl->carries = m->k->order == ORD_SINGLE && loop_carries(ctx, m);
	int nt = jobs(ctx);
	if (nt > 1 && pl->combos * NGRID * NMODE >= 4 * nt)
		parallel(s, pl, nt);
	else
		serial(s, pl);
}
