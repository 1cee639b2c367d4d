/* run.c: the scheduler, CTA by CTA or cluster by cluster (issue #18).
 *
 * The CTAs of a launch run one cluster after another (a cluster of one
 * CTA when the kernel has none): CTAs of different clusters share only
 * global memory, and fagen's kernels do not communicate through it.  The
 * CTAs of one cluster run together, since they reach each other's shared
 * memory and barriers.
 *
 * The scheduler is deterministic: it sweeps the warps in order (CTA by
 * CTA of the cluster) and runs each runnable warp until it blocks or
 * exits.  A warp's lanes keep their own PCs; each step runs the
 * instruction at the lowest PC for the lanes there, so divergent lanes
 * reconverge where the structured code fagen emits rejoins.  When no warp
 * can run, the queued asynchronous operations complete (in issue order,
 * CTA by CTA) and the sweep starts again; when nothing is queued either,
 * the launch is a hang, reported with every warp's PC, PTX line and what
 * it waits on. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simi.h"

static void
line_text(const SimMod *m, int n, const char **s, int *len)
{
	const char *p = m->text + m->line_at[n];

	while (*p == '\t' || *p == ' ')
		p++;
	const char *e = strchr(p, '\n');
	*len = e ? (int)(e - p) : (int)strlen(p);
	if (*len > 120)
		*len = 120;
	*s = p;
}

/* Prefixes the error with where it happened. */
static void
context(Cta *c, const Warp *w, const Ins *in)
{
	Sim *s = c->sim;
	char *msg = s->err ? strdup(s->err) : NULL;
	const char *t;
	int n;

	line_text(c->m, in->line, &t, &n);
	sim_fail(s, "CTA (%u,%u,%u) warp %d, PTX line %d '%.*s': %s",
		c->ctaid[0], c->ctaid[1], c->ctaid[2], w->id, in->line, n, t,
		msg ? msg : "");
	free(msg);
}

static int
bulk_pending(const Cta *c, const Warp *w)
{
	int n = 0, last = -1;

	for (int i = 0; i < c->nq; i++)   /* groups are pushed in order */
		if (c->q[i].kind == AS_TMA_STORE && c->q[i].warp == w->id &&
		    c->q[i].group < w->bulk_open && c->q[i].group != last) {
			n++;
			last = c->q[i].group;
		}
	return n;
}

static bool
ready(const Cta *c, const Warp *w)
{
	const Wait *t = &w->wait;
	const Mbar *b;

	switch (t->kind) {
	case WT_MBAR:
		b = mbar_find((Cta *)c, t->addr);
		return b && (int)(b->phase & 1) != t->parity;
	case WT_BAR:
		return c->bar[t->id].gen != t->gen;
	case WT_BULK:
		return bulk_pending(c, w) <= t->id;
	case WT_CLUSTER:
		return cluster_ready(c->cl) && c->cl->gen != t->gen;
	case WT_PAIR:
		return c->pair.gen != t->gen;
	default:
		return true;
	}
}

static int
bulk_wait(Cta *c, Warp *w, const Ins *in, uint32_t mask)
{
	int n = (int)opnd_u(c, w, &in->o[0], __builtin_ctz(mask));

	if (bulk_pending(c, w) <= n)
		return ST_OK;
	w->wait = (Wait){WT_BULK, 0, 0, n, 0};
	return ST_BLOCK;
}

/* One instruction for the lanes at the warp's lowest PC. */
static int
step(Cta *c, Warp *w)
{
	const SimMod *m = c->m;
	int32_t pc = INT32_MAX;
	uint32_t mask = 0, run;

	for (int l = 0; l < 32; l++)
		if (w->live >> l & 1 && w->pc[l] < pc)
			pc = w->pc[l];
	for (int l = 0; l < 32; l++)
		if (w->live >> l & 1 && w->pc[l] == pc)
			mask |= 1u << l;
	if (pc >= m->nins) {
		sim_fail(c->sim, "warp %d ran past the last instruction", w->id);
		return ST_ERR;
	}
	const Ins *in = &m->ins[pc];
	run = mask;
	if (in->guard >= 0)
		for (int l = 0; l < 32; l++)
			if (mask >> l & 1 && (*reg_at(w, in->guard, l) & 1) ==
			    in->gneg)
				run &= ~(1u << l);
	int st = ST_OK;
	c->steps++;
	if (run) {
		switch (in->op) {
		case OP_BRA: case OP_BRA_UNI:
			if (in->op == OP_BRA_UNI && run != mask) {
				sim_fail(c->sim, "bra.uni is not uniform: lanes "
					"0x%08x of 0x%08x take it", run, mask);
				st = ST_ERR;
				break;
			}
			for (int l = 0; l < 32; l++)
				if (run >> l & 1)
					w->pc[l] = in->tgt - 1;
			break;
		case OP_RET: case OP_EXIT:
			w->live &= ~run;
			break;
		case OP_BAR_SYNC: case OP_BAR_ARRIVE: case OP_BARRIER_SYNC:
		case OP_BARRIER_ARRIVE: case OP_MBAR_INIT: case OP_MBAR_ARRIVE:
		case OP_MBAR_ARRIVE_TX: case OP_MBAR_TRY_WAIT:
		case OP_MBAR_ARRIVE_CL: case OP_CL_ARRIVE: case OP_CL_ARRIVE_REL:
		case OP_CL_ARRIVE_RLX: case OP_CL_WAIT: case OP_CL_WAIT_ACQ:
		case OP_MBAR_TEST: case OP_MBAR_TEST_PAR: case OP_BARRIER_SYNC_U:
		case OP_BARRIER_ARRIVE_U:
			st = sync_op(c, w, in, run);
			break;
		case OP_CPA_CA: case OP_CPA_CG: case OP_CPA_COMMIT:
		case OP_CPA_WAIT: case OP_CPA_WAIT_ALL: case OP_CPA_ARRIVE:
		case OP_CPA_ARRIVE_NOINC:
			st = cpa_op(c, w, in, run);
			break;
		case OP_LDMATRIX: case OP_LDMATRIX_T: case OP_MMA_SYNC:
			st = mma_sync_op(c, w, in, run);
			break;
		case OP_BULK_WAIT: case OP_BULK_WAIT_RD:
			st = bulk_wait(c, w, in, run);
			break;
		case OP_TMA_LOAD: case OP_TMA_STORE: case OP_TMA_REDUCE:
		case OP_TMA_LOAD_MC: case OP_BULK_S2S: case OP_BULK_G2S:
		case OP_BULK_COMMIT: case OP_TMA_LOAD2: case OP_ST_ASYNC:
		case OP_ST_ASYNC_V2: case OP_ST_ASYNC_V4:
			st = tma_op(c, w, in, run);
			break;
		case OP_WG_FENCE: case OP_WG_COMMIT: case OP_WG_WAIT:
		case OP_WG_MMA:
			st = wgmma_op(c, w, in, run);
			break;
		case OP_TC_ALLOC: case OP_TC_DEALLOC: case OP_TC_RELINQUISH:
		case OP_TC_FENCE_BEFORE: case OP_TC_FENCE_AFTER: case OP_TC_LD:
		case OP_TC_ST: case OP_TC_WAIT_LD: case OP_TC_WAIT_ST:
		case OP_TC_MMA: case OP_TC_COMMIT: case OP_TC_COMMIT_MC:
		case OP_TC_ALLOC2: case OP_TC_DEALLOC2: case OP_TC_RELINQUISH2:
		case OP_TC_MMA2: case OP_TC_COMMIT2: case OP_TC_COMMIT2_MC:
			st = tc_op(c, w, in, run);
			break;
		default:
			st = exec_scalar(c, w, in, run);
		}
	}
	if (st == ST_ERR) {
		context(c, w, in);
		return ST_ERR;
	}
	if (st == ST_BLOCK) {
		w->blocked = true;
		return st;
	}
	for (int l = 0; l < 32; l++)
		if (mask >> l & 1)
			w->pc[l]++;
	if (st == ST_WAIT)
		w->blocked = true;
	return st;
}

static bool
drain(Cta *c)
{
	for (int i = 0; i < c->nq; i++) {
		Async *a = &c->q[i];
		bool ok = a->kind == AS_WGMMA ? wgmma_complete(c, a) :
			a->kind == AS_TC_MMA || a->kind == AS_TC_COMMIT ?
			tc_complete(c, a) : a->kind == AS_CP_ARRIVE ?
			cpa_complete(c, a) : tma_complete(c, a);
		if (!ok) {
			char *msg = c->sim->err ? strdup(c->sim->err) : NULL;
			sim_fail(c->sim, "CTA (%u,%u,%u) warp %d, the asynchronous "
				"operation of PTX line %d: %s", c->ctaid[0],
				c->ctaid[1], c->ctaid[2], a->warp, a->line,
				msg ? msg : "");
			free(msg);
			return false;
		}
	}
	for (int i = 0; i < c->nq; i++)
		wgmma_free(&c->q[i]);
	c->nq = 0;
	return true;
}

static void
hang_cta(Cta *c)
{
	Sim *s = c->sim;

	for (int i = 0; i < c->nw; i++) {
		const Warp *w = &c->w[i];
		const Wait *t = &w->wait;
		int pc = INT32_MAX, n;
		const char *txt;
		if (!w->live) {
			sim_append(s, "  warp %d: exited\n", w->id);
			continue;
		}
		for (int l = 0; l < 32; l++)
			if (w->live >> l & 1 && w->pc[l] < pc)
				pc = w->pc[l];
		pc -= t->kind == WT_PAIR;   /* past the alloc: name it */
		const Ins *in = &c->m->ins[pc < c->m->nins ? pc : 0];
		line_text(c->m, in->line, &txt, &n);
		sim_append(s, "  warp %d: pc %d, PTX line %d '%.*s'", w->id, pc,
			in->line, n, txt);
		if (t->kind == WT_MBAR) {
			const Mbar *b = mbar_find(c, t->addr);
			sim_append(s, ": waits on the mbarrier at shared 0x%x "
				"(fg_smem+%u) for the phase of parity %d; it has "
				"completed %u phases, %d of %d arrivals and %lld "
				"transaction bytes pending\n", t->addr,
				t->addr - SMEM_BASE, t->parity, b ? b->phase : 0,
				b ? b->pending : 0, b ? b->count : 0,
				b ? (long long)b->tx : 0);
		} else if (t->kind == WT_BAR) {
			sim_append(s, ": waits on named barrier %d (%d of %d "
				"threads arrived)\n", t->id, c->bar[t->id].arrived,
				c->bar[t->id].expected);
		} else if (t->kind == WT_CLUSTER) {
			sim_append(s, ": waits on the cluster's barrier (%d "
				"threads arrived)\n", c->cl->arrived);
		} else if (t->kind == WT_PAIR) {
			sim_append(s, ": waits for the pair's tcgen05.%s"
				".cta_group::2 in CTA rank %d\n", c->pair.op ==
				OP_TC_ALLOC2 ? "alloc" : "dealloc", c->rank ^ 1);
		} else {
			sim_append(s, ": waits on its bulk groups\n");
		}
	}
}

/* Every warp of every CTA of the cluster: where it is and what for. */
static void
hang(const Cluster *cl)
{
	const Cta *c = &cl->cta[0];

	if (cl->n == 1)
		sim_fail(c->sim, "hang in CTA (%u,%u,%u): every warp is blocked "
			"and nothing is in flight\n", c->ctaid[0], c->ctaid[1],
			c->ctaid[2]);
	else
		sim_fail(c->sim, "hang in the cluster of CTAs (%u,%u,%u) .. "
			"(%u,%u,%u): every warp is blocked and nothing is in "
			"flight\n", c->ctaid[0], c->ctaid[1], c->ctaid[2],
			cl->cta[cl->n - 1].ctaid[0], cl->cta[cl->n - 1].ctaid[1],
			cl->cta[cl->n - 1].ctaid[2]);
	for (int i = 0; i < cl->n; i++) {
		if (cl->n > 1)
			sim_append(c->sim, " CTA (%u,%u,%u), rank %d:\n",
				cl->cta[i].ctaid[0], cl->cta[i].ctaid[1],
				cl->cta[i].ctaid[2], i);
		hang_cta(&cl->cta[i]);
	}
}

/* A CTA whose warps have all exited: nothing may be left in flight
 * (cp.async copies included), and its tensor memory must have been
 * given back. */
static int
cta_exit(Cta *c)
{
	c->exited = true;
	if (c->nq) {
		Async *a = &c->q[0];
		return sim_fail(c->sim, "CTA (%u,%u,%u) exited with %d "
			"asynchronous operations never waited for (the first from "
			"warp %d, PTX line %d)", c->ctaid[0], c->ctaid[1],
			c->ctaid[2], c->nq, a->warp, a->line);
	}
	return cpa_exit(c) && tc_exit(c) ? 0 : -1;
}

/* One sweep over a CTA's warps: progress, and whether any is still live
 * after it (so that a CTA is known to have exited before a peer acts). */
static int
sweep(Cta *c, bool *progress, bool *live)
{
	Sim *s = c->sim;

	for (int i = 0; i < c->nw; i++) {
		Warp *w = &c->w[i];
		if (!w->live)
			continue;
		if (w->blocked && !ready(c, w))
			continue;
		w->blocked = false;
		w->wait.kind = WT_NONE;
		*progress = true;
		while (w->live && !w->blocked) {
			if (step(c, w) == ST_ERR)
				return -1;
			if (c->steps > (uint64_t)s->step_limit)
				return sim_fail(s, "CTA (%u,%u,%u): more than %lld "
					"instructions: an endless loop?", c->ctaid[0],
					c->ctaid[1], c->ctaid[2],
					(long long)s->step_limit);
		}
	}
	for (int i = 0; i < c->nw; i++)
		*live |= c->w[i].live != 0;
	return 0;
}

static int
run_cluster(Cluster *cl)
{
	for (;;) {
		bool progress = false, any = false, queued = false;
		for (int i = 0; i < cl->n; i++) {
			Cta *c = &cl->cta[i];
			bool live = false;
			if (c->exited)
				continue;
			if (sweep(c, &progress, &live))
				return -1;
			if (!live && cta_exit(c))
				return -1;
			any |= live;
		}
		if (!any)
			return 0;
		for (int i = 0; i < cl->n; i++)
			queued |= cl->cta[i].nq > 0;
		if (!progress && !queued) {
			hang(cl);
			return -1;
		}
		for (int i = 0; !progress && i < cl->n; i++)
			if (!drain(&cl->cta[i]))
				return -1;
	}
}

static void
free_cta(Cta *c)
{
	for (int i = 0; i < c->nw; i++)
		free(c->w[i].reg);
	for (int i = 0; i < c->nq; i++)
		wgmma_free(&c->q[i]);
	free(c->w);
	free(c->mb);
	free(c->q);
	free(c->cp);
	free(c->smem);
	free(c->mbmark);
	free(c->tmem);
}

static bool
init_cta(Cta *c, Sim *s, const SimMod *m, const uint8_t *pbuf,
	const Tmap *maps)
{
	const SimMeta *mt = &m->meta;

	*c = (Cta){.sim = s, .m = m, .param = pbuf, .nparam = m->param_bytes,
		.tmaps = maps, .ntmaps = mt->nargs};
	c->smem_end = SMEM_BASE + (uint32_t)mt->smem;
	c->nw = mt->threads / 32;
	c->smem = malloc(c->smem_end + 1);
	c->mbmark = calloc(c->smem_end / 8 + 1, 1);
	c->w = calloc((size_t)c->nw, sizeof *c->w);
	if (!c->smem || !c->mbmark || !c->w)
		return false;
	/* not zero: a read of what nothing wrote is a NaN in any float */
	memset(c->smem, 0xff, c->smem_end + 1);
	for (int i = 0; i < c->nw; i++) {
		c->w[i].id = i;
		c->w[i].live = ~0u;
		c->w[i].reg = calloc((size_t)m->nslots * 32 + 1, 8);
		if (!c->w[i].reg)
			return false;
	}
	return true;
}

/* The cluster whose first CTA is at base (a multiple of dim), its CTAs
 * ranked x fastest. */
static int
one_cluster(Sim *s, const SimMod *m, const uint8_t *pbuf, const Tmap *maps,
	const unsigned *base, const unsigned *grid, const unsigned *dim)
{
	Cluster cl = {.n = (int)(dim[0] * dim[1] * dim[2]),
		.dim = {dim[0], dim[1], dim[2]}};
	int rc = -1, r = 0;

	cl.cta = calloc((size_t)cl.n, sizeof *cl.cta);
	if (!cl.cta)
		return sim_fail(s, "out of memory");
	for (unsigned z = 0; z < dim[2]; z++)
		for (unsigned y = 0; y < dim[1]; y++)
			for (unsigned x = 0; x < dim[0]; x++, r++) {
				Cta *c = &cl.cta[r];
				if (!init_cta(c, s, m, pbuf, maps))
					goto out;
				c->cl = &cl;
				c->rank = r;
				c->ctaid[0] = base[0] + x;
				c->ctaid[1] = base[1] + y;
				c->ctaid[2] = base[2] + z;
				memcpy(c->nctaid, grid, sizeof c->nctaid);
			}
	rc = run_cluster(&cl);
	for (int i = 0; i < cl.n; i++)
		s->stats.warp_steps += cl.cta[i].steps;
	s->stats.ctas += (uint64_t)cl.n;
out:
	if (rc && !s->errlen)
		sim_fail(s, "out of memory");
	for (int i = 0; i < cl.n; i++)
		free_cta(&cl.cta[i]);
	free(cl.cta);
	return rc;
}

/* The clusters one after another, x fastest (grid: whole clusters). */
int
run_grid(Sim *s, const SimMod *m, const uint8_t *pbuf, const Tmap *maps,
	const unsigned grid[3], const unsigned dim[3])
{
	unsigned b[3];
	int rc = 0;

	for (int i = 0; i < 3; i++)
		if (!dim[i] || grid[i] % dim[i])
			return sim_fail(s, "a grid of %u x %u x %u CTAs is not "
				"whole clusters of %u x %u x %u", grid[0], grid[1],
				grid[2], dim[0], dim[1], dim[2]);
	if (dim[0] * dim[1] * dim[2] > 16)
		return sim_fail(s, "a cluster of %u CTAs (16 at most)",
			dim[0] * dim[1] * dim[2]);
	for (b[2] = 0; !rc && b[2] < grid[2]; b[2] += dim[2])
		for (b[1] = 0; !rc && b[1] < grid[1]; b[1] += dim[1])
			for (b[0] = 0; !rc && b[0] < grid[0]; b[0] += dim[0])
				rc = one_cluster(s, m, pbuf, maps, b, grid, dim);
	return rc;
}
