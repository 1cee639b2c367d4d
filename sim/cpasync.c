/* cpasync.c: cp.async, its groups and cp.async.mbarrier.arrive, the
 * per-thread asynchronous copies of sm_80 and later (PTX ISA 9.7.9.25.3).
 *
 * cp.async.{ca,cg}.shared.global [dst], [src], cp-size[, src-size] copies
 * cp-size bytes (4, 8 or 16; .cg: 16) to shared memory: src-size bytes
 * (0 to cp-size, a register or a number) from global memory, then
 * zeros; an ignore-src predicate in that place copies none when it
 * holds.  dst, and src when bytes are read from it, must be aligned to
 * cp-size.  The source is read when the copy is issued (so a bad source
 * is reported at its instruction; src-size 0 reads nothing, so src may
 * be any address then) and kept with the copy; the bytes land in shared
 * memory only when
 *   - a cp.async.wait_group N (or wait_all) of the issuing thread
 *     retires the copy's group: the thread's copies in all but its
 *     newest N committed groups land, in issue order;
 *   - a cp.async.mbarrier.arrive of the thread fires: every copy the
 *     thread issued before it lands, grouped or not, then the arrival.
 * So a read of the destination before then sees the old bytes (0xff at
 * first: NaN in any float), which is how a missing wait shows.  The
 * arrive is an event in the CTA's asynchronous queue and fires when
 * every warp is blocked, as a TMA load's completion does (run.c).
 * Without .noinc the mbarrier's pending count goes up by one at issue,
 * so the event's arrival is net zero; with .noinc the arrival counts
 * against the expected count.  With SIM_OPT_EAGER a copy lands and an
 * arrive fires at issue.  A copy that has not landed when the CTA ends
 * is an error. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simi.h"

const char *
cpa_check(const Ins *in)
{
	const Opnd *o = in->o;

	switch (in->op) {
	case OP_CPA_CA: case OP_CPA_CG:
		if ((in->nopnd != 3 && in->nopnd != 4) || o[0].k != OK_ADDR ||
		    o[1].k != OK_ADDR || o[2].k != OK_IMM || (in->nopnd == 4 &&
		    o[3].k != OK_REG && o[3].k != OK_IMM))
			return "expected [dst], [src], cp-size[, src-size or "
				"ignore-src]";
		if (in->op == OP_CPA_CG ? o[2].imm != 16 : o[2].imm != 4 &&
		    o[2].imm != 8 && o[2].imm != 16)
			return "cp-size must be 16 (.cg) or 4, 8 or 16 (.ca)";
		return NULL;
	case OP_CPA_WAIT:
		return in->nopnd == 1 && o[0].k == OK_IMM && o[0].imm >= 0 ?
			NULL : "expected a group count";
	default:   /* cp.async.mbarrier.arrive[.noinc] */
		return in->nopnd == 1 && o[0].k == OK_ADDR ? NULL :
			"expected [mbar]";
	}
}

/* The declared type of a register slot. */
static int
slot_ty(const SimMod *m, int slot)
{
	for (int d = 0; d < m->ndecls; d++) {
		const struct RegDecl *rd = &m->decls[d];
		if (slot >= rd->base && slot < rd->base + (rd->n ? rd->n : 1))
			return rd->ty;
	}
	return TY_NONE;
}

/* [reg+imm] of lane l. */
static uint64_t
addr(const Warp *w, const Opnd *o, int l)
{
	return (uint64_t)o->imm + (o->r >= 0 ? *reg_at(w, o->r, l) : 0);
}

static bool
over_mbar(Cta *c, uint32_t dst, int n, int line)
{
	for (uint32_t b = dst / 8; b <= (dst + (uint32_t)n - 1) / 8; b++)
		if (c->mbmark[b])
			return sim_fail(c->sim, "the cp.async of PTX line %d "
				"writes over the mbarrier at 0x%x", line, b * 8),
				true;
	return false;
}

static bool
land(Cta *c, const CpCopy *p)
{
	if (over_mbar(c, p->dst, p->n, p->line))
		return false;
	memcpy(c->smem + p->dst, p->data, (size_t)p->n);
	return true;
}

/* Lands, in issue order, the copies of warp's lanes in mask whose group
 * is below below[lane] and which were issued before seq. */
static bool
land_some(Cta *c, int warp, uint32_t mask, const int *below, uint64_t seq)
{
	int k = 0;
	bool ok = true;

	for (int i = 0; i < c->ncp; i++) {
		CpCopy *p = &c->cp[i];
		if (ok && p->warp == warp && mask >> p->lane & 1 &&
		    p->group < below[p->lane] && p->seq < seq &&
		    (ok = land(c, p)))
			continue;
		c->cp[k++] = *p;
	}
	c->ncp = k;
	return ok;
}

static bool
push(Cta *c, const CpCopy *p)
{
	if (c->ncp == c->capcp) {
		int cap = c->capcp ? 2 * c->capcp : 64;
		CpCopy *q = realloc(c->cp, (size_t)cap * sizeof *q);
		if (!q)
			return sim_fail(c->sim, "out of memory"), false;
		c->cp = q;
		c->capcp = cap;
	}
	c->cp[c->ncp++] = *p;
	return true;
}

static int
issue(Cta *c, Warp *w, const Ins *in, uint32_t mask)
{
	const Opnd *o = in->o;
	int n = (int)o[2].imm;
	bool ignore = in->nopnd == 4 && o[3].k == OK_REG &&
		slot_ty(c->m, o[3].r) == TY_PRED;

	for (int l = 0; l < 32; l++) {
		if (!(mask >> l & 1))
			continue;
		uint64_t dst = addr(w, &o[0], l), src = addr(w, &o[1], l);
		uint64_t sz = (uint64_t)n;
		if (in->nopnd == 4) {
			uint64_t v = opnd_u(c, w, &o[3], l);
			sz = ignore ? (v & 1 ? 0 : sz) : v & 0xffffffffu;
		}
		if (sz > (uint64_t)n)
			return sim_fail(c->sim, "a cp.async of %d bytes with "
				"src-size %llu", n, (unsigned long long)sz),
				ST_ERR;
		if (dst >> 32)
			return sim_fail(c->sim, "cp.async destination 0x%llx "
				"is above 32 bits", (unsigned long long)dst),
				ST_ERR;
		if (!smem_at(c, (uint32_t)dst, (uint32_t)n, "a cp.async "
		    "destination") || over_mbar(c, (uint32_t)dst, n, in->line))
			return ST_ERR;
		CpCopy cp = {.warp = w->id, .lane = l, .group = w->cpa_open[l],
			.line = in->line, .seq = c->cpseq++,
			.dst = (uint32_t)dst, .n = n};
		if (sz && src % (uint64_t)n)
			return sim_fail(c->sim, "cp.async source 0x%llx is not "
				"%d-byte aligned", (unsigned long long)src, n),
				ST_ERR;
		const uint8_t *g = sz ? sim_gmem(c->sim, src, (size_t)sz,
			"a cp.async read") : NULL;
		if (sz && !g)
			return ST_ERR;
		if (sz)
			memcpy(cp.data, g, (size_t)sz);
		if (c->sim->eager ? !land(c, &cp) : !push(c, &cp))
			return ST_ERR;
	}
	return ST_OK;
}

/* cp.async.wait_group n: each lane's groups but its newest n land. */
static int
wait_group(Cta *c, Warp *w, uint32_t mask, int n)
{
	int below[32];

	for (int l = 0; l < 32; l++)
		below[l] = w->cpa_open[l] - n;
	return land_some(c, w->id, mask, below, UINT64_MAX) ? ST_OK : ST_ERR;
}

static int
arrive(Cta *c, Warp *w, const Ins *in, uint32_t mask)
{
	for (int l = 0; l < 32; l++) {
		if (!(mask >> l & 1))
			continue;
		uint64_t v = addr(w, &in->o[0], l);
		Mbar *b = v >> 32 || v % 8 ? NULL : mbar_find(c, (uint32_t)v);
		if (!b)
			return sim_fail(c->sim, "cp.async.mbarrier.arrive on "
				"shared address 0x%llx, where no mbarrier was "
				"initialized", (unsigned long long)v), ST_ERR;
		if (in->op == OP_CPA_ARRIVE)
			b->pending++;
		Async a = {.kind = AS_CP_ARRIVE, .warp = w->id, .lane = l,
			.line = in->line, .mbar = (uint32_t)v, .seq = c->cpseq};
		if (c->sim->eager ? !cpa_complete(c, &a) :
		    async_push(c, &a) != ST_OK)
			return ST_ERR;
	}
	return ST_OK;
}

/* The thread's copies issued before the arrive land, then it arrives. */
bool
cpa_complete(Cta *c, const Async *a)
{
	int below[32];

	for (int l = 0; l < 32; l++)
		below[l] = INT_MAX;
	return land_some(c, a->warp, 1u << a->lane, below, a->seq) &&
		mbar_arrive(c, a->mbar, 0);
}

int
cpa_op(Cta *c, Warp *w, const Ins *in, uint32_t mask)
{
	switch (in->op) {
	case OP_CPA_CA: case OP_CPA_CG:
		return issue(c, w, in, mask);
	case OP_CPA_ARRIVE: case OP_CPA_ARRIVE_NOINC:
		return arrive(c, w, in, mask);
	case OP_CPA_WAIT:
		return wait_group(c, w, mask, (int)in->o[0].imm);
	default:   /* commit_group; wait_all commits and waits for all */
		for (int l = 0; l < 32; l++)
			w->cpa_open[l] += mask >> l & 1;
		return in->op == OP_CPA_WAIT_ALL ? wait_group(c, w, mask, 0) :
			ST_OK;
	}
}

bool
cpa_exit(Cta *c)
{
	if (!c->ncp)
		return true;
	return sim_fail(c->sim, "CTA (%u,%u,%u) exited with %d cp.async "
		"copies that never landed: no cp.async.wait_group or "
		"cp.async.mbarrier.arrive of their thread retired them (the "
		"first from warp %d lane %d, PTX line %d)", c->ctaid[0],
		c->ctaid[1], c->ctaid[2], c->ncp, c->cp[0].warp,
		c->cp[0].lane, c->cp[0].line), false;
}
