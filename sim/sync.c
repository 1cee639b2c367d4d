/* sync.c: named barriers, mbarriers and the asynchronous queue
 * (issue #18).
 *
 * Named barriers (bar.sync, bar.arrive, barrier.sync/arrive.aligned)
 * count threads a warp at a time (a warp's arrival counts all 32 of its
 * threads, as the hardware counts them); without a count the barrier
 * expects every thread of the CTA that has not exited.  bar.sync and
 * barrier.sync block the warp until the barrier's generation moves on.
 *
 * An mbarrier (PTX ISA 9.7.13.15) is kept beside shared memory, keyed by
 * its address: its expected count, the arrivals still pending in the
 * current phase, the transaction count (signed: complete_tx may come
 * before expect_tx) and the number of completed phases.  A phase
 * completes when the pending arrivals and the transaction count are both
 * zero.  try_wait.parity P succeeds once the phase of parity P has
 * completed, that is when the current phase's parity differs from P;
 * otherwise the warp blocks there and re-executes it when woken.
 * mbarrier.arrive's state is the number of phases completed before the
 * arrival, and test_wait with a state succeeds once that phase has
 * completed.  test_wait (sm_80's spin: `L: test_wait p; @!p bra L`)
 * never blocks the thread on hardware; here a test that fails writes
 * false and then sleeps the warp until that phase completes, so that a
 * spinning warp yields to the others and a hang is still reported as
 * one.  A warp that does other work between its tests is not modelled
 * faithfully: it does nothing until the phase completes.
 *
 * Asynchronous operations (TMA loads and stores, wgmma) wait in the queue
 * until every warp is blocked (or at issue, with SIM_OPT_EAGER); see
 * launch.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simi.h"

Mbar *
mbar_find(Cta *c, uint32_t addr)
{
	for (int i = 0; i < c->nmb; i++)
		if (c->mb[i].addr == addr)
			return &c->mb[i];
	return NULL;
}

static Mbar *
mbar_get(Cta *c, uint32_t addr, const char *what)
{
	Mbar *b = mbar_find(c, addr);

	if (!b)
		sim_fail(c->sim, "%s on shared address 0x%x, where no mbarrier "
			"was initialized", what, addr);
	return b;
}

static void
mbar_check(Mbar *b)
{
	if (b->pending == 0 && b->tx == 0) {
		b->phase++;
		b->pending = b->count;
	}
}

bool
mbar_complete_tx(Cta *c, uint32_t addr, int64_t bytes)
{
	Mbar *b = mbar_get(c, addr, "complete_tx");

	if (!b)
		return false;
	b->tx -= bytes;
	if (b->pending == 0 && b->tx < 0)
		return sim_fail(c->sim, "complete_tx of %lld bytes takes the "
			"mbarrier at 0x%x below zero transaction bytes after all "
			"arrivals", (long long)bytes, addr), false;
	mbar_check(b);
	return true;
}

/* One arrival (with tx more expected bytes) on the mbarrier at addr. */
bool
mbar_arrive(Cta *c, uint32_t addr, int64_t tx)
{
	Mbar *b = mbar_get(c, addr, "mbarrier.arrive");

	if (!b)
		return false;
	b->tx += tx;
	if (b->pending == 0)
		return sim_fail(c->sim, "an arrival on the mbarrier at 0x%x, "
			"whose phase has no pending arrivals", addr), false;
	b->pending--;
	mbar_check(b);
	return true;
}

static bool
mbar_init(Cta *c, uint32_t addr, int64_t count)
{
	if (!smem_at(c, addr, 8, "mbarrier.init"))
		return false;
	if (count < 1 || count > (1 << 20) - 1)
		return sim_fail(c->sim, "mbarrier.init with count %lld (1 to "
			"2^20 - 1)", (long long)count), false;
	Mbar *b = mbar_find(c, addr);
	if (!b) {
		if (c->nmb == c->capmb) {
			c->capmb = c->capmb ? 2 * c->capmb : 16;
			Mbar *p = realloc(c->mb, (size_t)c->capmb * sizeof *p);
			if (!p)
				return sim_fail(c->sim, "out of memory"), false;
			c->mb = p;
		}
		b = &c->mb[c->nmb++];
	}
	*b = (Mbar){addr, (int)count, (int)count, 0, 0};
	c->mbmark[addr / 8] = 1;
	return true;
}

/* Every lane at an mbarrier operation: its address. */
static bool
mbar_addr(Cta *c, const Warp *w, const Opnd *o, int lane, uint32_t *a)
{
	uint64_t v = (uint64_t)o->imm + (o->r >= 0 ? *reg_at(w, o->r, lane) : 0);

	if (v >> 32 || v % 8)
		return sim_fail(c->sim, "mbarrier address 0x%llx is not an "
			"8-byte aligned shared address", (unsigned long long)v),
			false;
	*a = (uint32_t)v;
	return true;
}

static int
mbar_op(Cta *c, Warp *w, const Ins *in, uint32_t mask)
{
	const Opnd *o = in->o;
	uint32_t a;
	bool all = true;

	for (int l = 0; l < 32; l++) {
		if (!(mask >> l & 1))
			continue;
		switch (in->op) {
		case OP_MBAR_INIT:
			if (!mbar_addr(c, w, &o[0], l, &a) ||
			    !mbar_init(c, a, (int64_t)opnd_u(c, w, &o[1], l)))
				return ST_ERR;
			break;
		case OP_MBAR_ARRIVE_CL: {   /* another CTA's, no state */
			uint64_t v = (uint64_t)o[1].imm + (o[1].r >= 0 ?
				*reg_at(w, o[1].r, l) : 0);
			Cta *p = cluster_cta(c, v, &a, "mbarrier.arrive");
			if (!p || a % 8 || !mbar_arrive(p, a, 0))
				return a % 8 ? sim_fail(c->sim, "mbarrier "
					"address 0x%x is not 8-byte aligned", a),
					ST_ERR : ST_ERR;
			break;
		}
		case OP_MBAR_ARRIVE: case OP_MBAR_ARRIVE_TX: {
			int64_t tx = in->op == OP_MBAR_ARRIVE_TX ?
				(int64_t)(uint32_t)opnd_u(c, w, &o[2], l) : 0;
			Mbar *b;
			if (!mbar_addr(c, w, &o[1], l, &a) ||
			    !(b = mbar_get(c, a, "mbarrier.arrive")))
				return ST_ERR;
			uint32_t phase = b->phase;   /* the state */
			if (!mbar_arrive(c, a, tx))
				return ST_ERR;
			if (o[0].k == OK_REG)
				*reg_at(w, o[0].r, l) = phase;
			break;
		}
		default: {   /* try_wait.parity, test_wait[.parity] */
			Mbar *b;
			if (!mbar_addr(c, w, &o[1], l, &a) ||
			    !(b = mbar_get(c, a, in->op == OP_MBAR_TRY_WAIT ?
			    "mbarrier.try_wait" : "mbarrier.test_wait")))
				return ST_ERR;
			uint64_t v = opnd_u(c, w, &o[2], l);
			int par = (int)(v & 1);
			bool done = in->op == OP_MBAR_TEST ? b->phase !=
				(uint32_t)v : (int)(b->phase & 1) != par;
			if (in->op != OP_MBAR_TRY_WAIT)
				*reg_at(w, o[0].r, l) = done;
			if (!done) {
				if (all)
					w->wait = (Wait){WT_MBAR, a, par, 0, 0};
				all = false;
			}
		}
		}
	}
	if (in->op == OP_MBAR_TEST || in->op == OP_MBAR_TEST_PAR)
		return all ? ST_OK : ST_WAIT;
	if (in->op != OP_MBAR_TRY_WAIT)
		return ST_OK;
	if (!all)
		return ST_BLOCK;
	for (int l = 0; l < 32; l++)
		if (mask >> l & 1)
			*reg_at(w, o[0].r, l) = 1;
	return ST_OK;
}

static int
live_threads(const Cta *c)
{
	int n = 0;

	for (int i = 0; i < c->nw; i++)
		n += c->w[i].live ? 32 : 0;
	return n;
}

/* bar.sync/bar.arrive/barrier.*: a, [b].  barrier.sync and .arrive
 * without .aligned count a warp's arrival as all 32 threads too, and
 * a warp blocks as a whole, so lanes that arrive separately are not
 * modelled. */
static int
bar_op(Cta *c, Warp *w, const Ins *in, uint32_t mask)
{
	int l = __builtin_ctz(mask);
	int64_t id = (int64_t)opnd_u(c, w, &in->o[0], l);
	int64_t cnt = in->nopnd > 1 ? (int64_t)opnd_u(c, w, &in->o[1], l) :
		live_threads(c);
	bool wait = in->op == OP_BAR_SYNC || in->op == OP_BARRIER_SYNC ||
		in->op == OP_BARRIER_SYNC_U;

	if (id < 0 || id > 15)
		return sim_fail(c->sim, "barrier id %lld (0 to 15)",
			(long long)id), ST_ERR;
	if (cnt <= 0 || cnt % 32 || cnt > c->m->meta.threads)
		return sim_fail(c->sim, "barrier %lld with %lld threads: a "
			"positive multiple of 32 up to the CTA's %d", (long long)id,
			(long long)cnt, c->m->meta.threads), ST_ERR;
	if ((in->op == OP_BARRIER_SYNC || in->op == OP_BARRIER_ARRIVE) &&
	    mask != w->live)
		return sim_fail(c->sim, "an .aligned barrier reached by lanes "
			"0x%08x of live 0x%08x", mask, w->live), ST_ERR;
	NBar *b = &c->bar[id];
	if (b->arrived && b->expected != cnt)
		return sim_fail(c->sim, "barrier %lld expects %d threads, but "
			"this arrival says %lld", (long long)id, b->expected,
			(long long)cnt), ST_ERR;
	b->expected = (int)cnt;
	b->arrived += 32;
	uint64_t gen = b->gen;
	if (b->arrived >= b->expected) {
		b->arrived = 0;
		b->gen++;
		return ST_OK;
	}
	if (wait)
		w->wait = (Wait){WT_BAR, 0, 0, (int)id, gen};
	return wait ? ST_WAIT : ST_OK;
}

Cta *
cluster_cta(Cta *c, uint64_t addr, uint32_t *local, const char *what)
{
	Cluster *cl = c->cl;
	uint64_t r = addr >> 24;

	*local = (uint32_t)(addr & 0xffffff);
	if (addr >> 32 || r > (uint64_t)cl->n)
		return sim_fail(c->sim, "%s at shared::cluster address 0x%llx, "
			"which names no CTA of the cluster of %d",
			what, (unsigned long long)addr, cl->n), NULL;
	Cta *p = r ? &cl->cta[r - 1] : c;
	if (p->exited)
		return sim_fail(c->sim, "%s reaches CTA rank %d of the cluster, "
			"which has exited", what, p->rank), NULL;
	return p;
}

/* barrier.cluster's phase completes when every thread of the cluster
 * that has not exited has arrived (a warp counts its 32 threads). */
bool
cluster_ready(Cluster *cl)
{
	int live = 0;

	for (int i = 0; i < cl->n; i++)
		live += live_threads(&cl->cta[i]);
	if (cl->arrived > 0 && cl->arrived >= live) {
		cl->gen++;
		cl->arrived = 0;
	}
	return true;
}

/* barrier.cluster.arrive[.release|.relaxed] and .wait[.acquire]: the
 * memory orders are not modelled (every access is visible at once). */
static int
cluster_bar(Cta *c, Warp *w, const Ins *in, uint32_t mask)
{
	Cluster *cl = c->cl;

	if (mask != w->live)
		return sim_fail(c->sim, "an .aligned barrier.cluster reached by "
			"lanes 0x%08x of live 0x%08x", mask, w->live), ST_ERR;
	if (in->op != OP_CL_WAIT && in->op != OP_CL_WAIT_ACQ) {
		if (w->carrived)
			return sim_fail(c->sim, "barrier.cluster.arrive twice "
				"without a wait between"), ST_ERR;
		w->carrived = true;
		w->cgen = cl->gen;
		cl->arrived += 32;
		cluster_ready(cl);
		return ST_OK;
	}
	if (!w->carrived)
		return sim_fail(c->sim, "barrier.cluster.wait without an "
			"arrive before it"), ST_ERR;
	if (cl->gen != w->cgen) {
		w->carrived = false;
		return ST_OK;
	}
	w->wait = (Wait){WT_CLUSTER, 0, 0, 0, w->cgen};
	return ST_BLOCK;
}

int
sync_op(Cta *c, Warp *w, const Ins *in, uint32_t mask)
{
	switch (in->op) {
	case OP_MBAR_INIT: case OP_MBAR_ARRIVE: case OP_MBAR_ARRIVE_TX:
	case OP_MBAR_TRY_WAIT: case OP_MBAR_ARRIVE_CL: case OP_MBAR_TEST:
	case OP_MBAR_TEST_PAR:
		return mbar_op(c, w, in, mask);
	case OP_CL_ARRIVE: case OP_CL_ARRIVE_REL: case OP_CL_ARRIVE_RLX:
	case OP_CL_WAIT: case OP_CL_WAIT_ACQ:
		return cluster_bar(c, w, in, mask);
	default:
		return bar_op(c, w, in, mask);
	}
}

int
async_push(Cta *c, const Async *a)
{
	if (c->nq == c->capq) {
		c->capq = c->capq ? 2 * c->capq : 16;
		Async *p = realloc(c->q, (size_t)c->capq * sizeof *p);
		if (!p)
			return sim_fail(c->sim, "out of memory"), ST_ERR;
		c->q = p;
	}
	c->q[c->nq++] = *a;
	return ST_OK;
}
