/* verify_vc.c: the verifier's vector clocks and its shared-memory race
 * and proxy-fence checks over the access records of a run.
 * Requires: a Sim set up by verify.c.  Ensures: the 'race' and
 * 'proxy-fence' diagnostics. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"
#include "check/check.h"
#include "check/verify.h"

/* Does b (or a block in it) hold a TMA load, cp_async or a cluster
 * reduction's st.async completing on r, or (r NULL) a tcgen05.mma or
 * commit? */
static bool
uses(const SirBlock *b, const Res *r)
{
	for (int i = 0; i < b->n; i++) {
		const SirIns *in = &b->v[i];
		if (r ? ((in->op == SOP_tma_load || in->op == SOP_cp_async ||
		    in->op == SOP_bulk_copy || in->op == SOP_bulk_load) &&
		    in->r[2] == r) || (in->op == SOP_clred_put &&
		    in->r[1] == r) :
		    in->op == SOP_tc_mma || in->op == SOP_tc_commit)
			return true;
		if ((in->body && uses(in->body, r)) ||
		    (in->els && uses(in->els, r)))
			return true;
	}
	return false;
}

/* The clock entries: one per process; one per element of an mbarrier
 * that TMA loads or cp_async complete on (VB: the phases observed, which
 * order the loads' writes; no other barrier's is read); on sm_100a, one
 * per warp of a partition that issues tcgen05.mma or commits (TC).  The
 * entries are independent under a join, so leaving out those nothing
 * reads changes no other. */
static void
slots(Sim *s)
{
	int n = s->np;

	s->vbslot = NEWARR(&s->ctx->scratch, int, s->nmb + 1);
	for (int b = 0; b < s->nmb; b++) {
		bool tma = false;
		for (int i = 0; i < s->m->nparts && !tma; i++)
			tma = uses(&s->m->parts[i]->body, s->mb[b].r);
		s->vbslot[b] = tma ? n++ : -1;
	}
	for (int i = 0; i < s->np; i++)
		s->tcslot[i] = s->k->target == TGT_SM100A &&
			uses(&s->p[i].sp->body, NULL) ? n++ : -1;
	s->nvc = (n + 3) & ~3;
}

/* The clocks of processes, mbarrier phases and named barriers, sized to
 * the processes and mbarriers in use (the same in every run).  A run
 * starts from zero in those it joins into (processes, accumulating
 * phases and barriers); the completed ones (done, nbvc[][1]) are copied
 * whole when a phase or barrier completes, before anything reads them. */
void
vf_clocks(Sim *s)
{
	Clk *c;

	if (!s->clocks) {
		slots(s);
		s->nclocks = 2 * s->np + 3 * s->nmb + 2 * NBVC(s);
		s->clocks = NEWARR(&s->ctx->scratch, Clk, (size_t)s->nclocks *
			s->nvc);
	}
	memset(s->clocks, 0, (size_t)(2 * s->np + s->nmb + NBVC(s)) *
		s->nvc *
		sizeof(Clk));
	c = s->clocks;
	for (int i = 0; i < s->np; i++, c += s->nvc) {
		s->p[i].vc = c;
		c[i] = 1;  /* an access before any release is at 1: it is
			    * ordered before no other process */
	}
	for (int i = 0; i < s->np; i++, c += s->nvc)
		s->p[i].tvc = c;
	for (int b = 0; b < s->nmb; b++, c += s->nvc)
		s->acc[b] = c;
	for (int i = 0; i < NBVC(s); i++, c += s->nvc)
		s->nbvc[i][0] = c;
	for (int b = 0; b < s->nmb; b++, c += 2 * s->nvc) {
		s->done[b][0] = c;
		s->done[b][1] = c + s->nvc;
	}
	for (int i = 0; i < NBVC(s); i++, c += s->nvc)
		s->nbvc[i][1] = c;
	for (int e = 0; e < s->nev; e++)  /* left by a failed run */
		if (s->ev[e].vc)
			vf_vfree(s, s->ev[e].vc);
}

/* Return an EV_TC clock for reuse. */
void
vf_vfree(Sim *s, Clk *vc)
{
	if (s->nvfree == s->vfcap) {
		Clk **v = NEWARR(&s->ctx->scratch, Clk *, 2 * s->vfcap +
			16);
		if (s->nvfree)
			memcpy(v, s->vfree, s->nvfree * sizeof *v);
		s->vfree = v;
		s->vfcap = 2 * s->vfcap + 16;
	}
	s->vfree[s->nvfree++] = vc;
}

/* ------------------------------------------------------------ races */

/* Accesses overlap when their bytes do, unless both name rows of tiles of
 * one geometry at one base: a warpgroup's rows of a 128-row tile
 * (arow=, row=) do not meet another warpgroup's, whatever the layout. */
static bool
overlaps(const Rec *r, int64_t lo, int64_t hi, int64_t geo, int64_t r0,
	int64_t r1)
{
	if (r->hi <= lo || hi <= r->lo)
		return false;
	if (geo && r->geo == geo && r->lo == lo)
		return r->r0 < r1 && r0 < r->r1;
	return true;
}

int64_t
vf_geometry(const Res *b)
{
	return (b->shape[0] << 24) ^ (b->shape[b->rank - 1] * ty_bytes(b->ety)
		<< 8) ^ b->lay->swizzle ^ 1;
}

static bool
ordered(const Sim *s, const Rec *r, const Proc *q)
{
	int qi = (int)(q - s->p);

	switch (r->kind) {
	case A_TMAW:
		return !r->pending && q->vc[VB(s, r->bar)] >= r->tag;
	case A_READ:
		if (r->bulk == 2)  /* tcgen05.mma: a commit after it */
			return r->group != CLK_NEVER && q->vc[TC(s, r->proc)] >=
				r->group;
		if (r->bulk == BULK_COPY_READ)  /* done with the copy's phase */
			return !r->pending && q->vc[VB(s, r->bar)] >= r->tag;
		return !r->pending && (r->proc == qi || q->vc[r->proc] >=
			r->clock);
	default:  /* a cp.async write is ordered once its group retired */
		return !r->pending && (r->proc == qi || q->vc[r->proc] >=
			r->clock);
	}
}

static void
race(Sim *s, Proc *q, const SirIns *in, const Rec *r, const char *what)
{
	static const char *const kinds[] = {"a TMA load writes",
		"threads write", "an asynchronous read (wgmma or TMA store) "
		"reads"};
	char a[200];

	bool tc = r->kind == A_READ && r->bulk == 2;
	bool cp = r->kind != A_READ && r->bulk == CP_GROUP;
	bool thr = r->kind == A_READ && r->bulk == 3;
	bool bc = r->at && (r->at->op == SOP_bulk_copy || r->at->op ==
		SOP_bulk_load);
	bool cr = r->at && r->at->op == SOP_clred_put && r->kind == A_TMAW;
	Iter it;
	vf_iter(q, &it);
	snprintf(a, sizeof a, "%s: %s shared memory that %s", vf_who(s, q,
		&it), what, tc ? "a tcgen05.mma reads" : thr ? "threads read "
		"(smem_load or mma.sync)" : cp ? "a cp_async writes" : cr ?
		"a cluster reduction's st.async writes" : bc ?
		(r->kind == A_READ ? "a bulk_copy reads" : "a bulk_copy writes") :
		kinds[r->kind]);
	s->other = &s->p[r->proc];
	s->other_at = r->at;
	vf_fail(s, in->span, "race", "%s without an ordering barrier%s", a,
		tc ? (r->group == CLK_NEVER ? " (no commit follows the MMA yet)" :
		" (wait on the phase a commit after the MMA arrives on)") :
		cp && r->pending && r->kind == A_GENW ? " (it is still in "
		"flight: 'cp_async_commit', "
		"then 'cp_async_wait' for its group, and a barrier before "
		"other warps read it)" : r->pending ? " (it is still in flight)" :
		"");
	if (r->at)
		diag_note(s->ctx, r->at->span, "the other access, by %s",
			vf_who(s, &s->p[r->proc], &r->it));
	vf_note_traces(s, q);
}

/* The byte range of buffer r, stage st. */
void
vf_range_of(const Res *r, int64_t st, int64_t *lo, int64_t *hi)
{
	*lo = r->off + st * r->bytes;
	*hi = *lo + r->bytes;
}

static Rec *
add_rec(Sim *s, int kind, Proc *p, int64_t lo, int64_t hi, const SirIns *at)
{
	int i = 0;

	/* the first free slot: the lowest clear bit of rlive below nrec */
	while (i < s->nrec && !~s->rlive[i / 64])
		i += 64;
	if (i < s->nrec)
		i += __builtin_ctzll(~s->rlive[i / 64]);
	if (i >= s->nrec) {
		if (s->nrec == MAXREC) {
			if (!s->capped)
				diag_warn(s->ctx, "verify-limit", s->k->span, "the "
					"verifier stopped tracking shared-memory "
					"accesses: more than %d at once (%s)", MAXREC,
					s->shape);
			s->capped = true;
			return NULL;
		}
		i = s->nrec++;
	}
	s->rec[i] = (Rec){.kind = kind, .proc = (int)(p - s->p), .lo = lo,
		.hi = hi, .live = true, .at = at, .clock = p->vc[p - s->p]};
	vf_iter(p, &s->rec[i].it);
	s->rlive[i / 64] |= 1ull << (i % 64);
	if (kind != A_READ)
		s->rwrite[i / 64] |= 1ull << (i % 64);
	return &s->rec[i];
}

/* Drop p's earlier read records of exactly [lo, hi) (same geometry and
 * rows, same kind of reader) before p records another: the new read
 * retires no earlier than they do (one process's groups retire in
 * order; thread reads are done at once), so whatever is ordered after
 * it is ordered after them.  Without this, a buffer read in every
 * iteration of a long loop (K and V in a backward pass) fills the
 * record table.  tcgen05 reads (bulk 2) complete by commits and are
 * kept. */
static void
supersede(Sim *s, const Proc *p, int64_t lo, int64_t hi, int bulk,
	int64_t geo, int64_t r0, int64_t r1)
{
	int pi = (int)(p - s->p);

	if (bulk == 2 || bulk == BULK_COPY_READ)
		return;
	for (int w = 0; w < RECW; w++)
		for (uint64_t m = s->rlive[w] & ~s->rwrite[w]; m; m &= m - 1) {
			int i = w * 64 + __builtin_ctzll(m);
			Rec *r = &s->rec[i];
			if (r->kind != A_READ || r->proc != pi || r->bulk != bulk ||
			    r->lo != lo || r->hi != hi || r->geo != geo ||
			    r->r0 != r0 || r->r1 != r1)
				continue;
			r->live = false;
			s->rlive[w] &= ~(1ull << (i % 64));
			s->rpend[pi][w] &= ~(1ull << (i % 64));
		}
}

/* An asynchronous read of [lo, hi) (wgmma operand, TMA store source,
 * bulk_copy source): every write to it must be visible, and generic
 * writes fenced.  Returns its record (NULL past the table's end). */
Rec *
vf_acc_read(Sim *s, Proc *p, const SirIns *in, int64_t lo, int64_t hi,
	int bulk, int64_t geo, int64_t r0, int64_t r1)
{
	FOR_BITS(i, s->rwrite, RECW, !s->failed) {
		Rec *r = &s->rec[i];
		if (!overlaps(r, lo, hi, geo, r0, r1))
			continue;
		if (r->kind == A_GENW && r->dirty) {
			s->other = &s->p[r->proc];
			s->other_at = r->at;
			vf_fail(s, in->span, "proxy-fence", "%s reads shared "
				"memory that '%s' wrote with ordinary stores and no "
				"'fence async_smem' after them", in->op ==
				SOP_bulk_copy ? "a bulk_copy" : "TMA or wgmma",
				vf_pname(s, &s->p[r->proc]));
			if (r->at)
				diag_note(s->ctx, r->at->span, "the write");
			return NULL;
		}
		if (!ordered(s, r, p))
			race(s, p, in, r, "this reads");
	}
	supersede(s, p, lo, hi, bulk, geo, r0, r1);
	Rec *r = add_rec(s, A_READ, p, lo, hi, in);
	if (r) {
		r->geo = geo;
		r->r0 = r0;
		r->r1 = r1;
		r->pending = true;
		r->bulk = bulk;
		int i = (int)(r - s->rec);
		s->rpend[r->proc][i / 64] |= 1ull << (i % 64);
		r->group = bulk == 2 || bulk == BULK_COPY_READ ? CLK_NEVER :
			bulk ? p->bulk_groups + 1 : p->wg_seq + 1;
	}
	return r;
}

/* A read of [lo, hi) by threads (smem_load): every write to it must be
 * ordered before it (a TMA write by its mbarrier phase, another warp's
 * store by a barrier; a warp's own stores are), and later writes after
 * it: a record that is not pending, at the reader's clock. */
void
vf_acc_gread(Sim *s, Proc *p, const SirIns *in, int64_t lo, int64_t hi,
	int64_t geo, int64_t r0, int64_t r1)
{
	FOR_BITS(i, s->rwrite, RECW, !s->failed) {
		Rec *r = &s->rec[i];
		if (overlaps(r, lo, hi, geo, r0, r1) && !ordered(s, r, p))
			race(s, p, in, r, "this reads");
	}
	supersede(s, p, lo, hi, 3, geo, r0, r1);
	Rec *r = add_rec(s, A_READ, p, lo, hi, in);
	if (r) {
		r->geo = geo;
		r->r0 = r0;
		r->r1 = r1;
		r->pending = false;
		r->bulk = 3;  /* threads: race() says so */
		/* an async-proxy write after it needs 'fence async_smem' by
		 * the readers first (vf_acc_write); sm_80 has no such proxy */
		r->dirty = s->k->target != TGT_SM80;
	}
}

/* Is r from p's current tile iteration and innermost loop step? */
static bool
same_iter(const Rec *r, const Proc *p)
{
	Iter it;

	vf_iter(p, &it);
	return r->it.tile == it.tile && r->it.i == it.i && r->it.loop ==
		it.loop;
}

/* A write of [lo, hi): by TMA (tma) or by threads; earlier accesses must
 * be ordered before it.  It replaces the records it covers. */
Rec *
vf_acc_write(Sim *s, Proc *p, const SirIns *in, int64_t lo, int64_t hi,
	bool tma, int64_t geo, int64_t r0, int64_t r1)
{
	for (int i = 0; i < s->nrec && !s->failed; i++) {
		Rec *r = &s->rec[i];
		if (!r->live || !overlaps(r, lo, hi, geo, r0, r1))
			continue;
		/* threads write their own rows: generic writes do not
		 * conflict with each other at this granularity, nor do the
		 * warps' chunks of cp.async tiles */
		bool cp = in->op == SOP_cp_async && r->bulk == CP_GROUP &&
			r->kind != A_READ;
		/* a cluster reduction's st.async partials: each row's slot is
		 * its row group's first thread's, so the warps' stores of one
		 * reduction do not conflict (their tile iteration tells a
		 * reduction from the next one into the stage) */
		if (in->op == SOP_clred_put && r->kind == A_TMAW && r->at == in &&
		    same_iter(r, p))
			cp = true;
		if (!ordered(s, r, p) && !(r->kind == A_GENW && !tma) && !cp)
			race(s, p, in, r, in->op == SOP_bulk_copy || in->op ==
				SOP_bulk_load ? "a bulk_copy overwrites" : in->op ==
				SOP_clred_put ? "this st.async overwrites" : tma &&
				in->op != SOP_cp_async ? "a TMA load overwrites" :
				"this overwrites");
		else if (tma && in->op != SOP_cp_async && in->op !=
		    SOP_clred_put && r->dirty &&
		    ((r->kind == A_READ && r->bulk == 3) || r->kind == A_GENW)) {
			/* write after read (or write) across proxies: threads'
			 * loads or stores, then the async proxy's copy
			 * (measured: without the fence an H200 let a bulk copy
			 * land under softmax.fa's reads) */
			s->other = &s->p[r->proc];
			s->other_at = r->at;
			bool rd = r->kind == A_READ;
			const char *who = in->op == SOP_tma_load ? "a TMA load" :
				"a bulk_copy";
			if (rd)
				vf_fail(s, in->span, "proxy-fence", "%s overwrites "
					"shared memory that '%s' read with ordinary loads "
					"and no 'fence async_smem' between those reads and "
					"the barrier that hands it over", who,
					vf_pname(s, &s->p[r->proc]));
			else
				vf_fail(s, in->span, "proxy-fence", "%s overwrites "
					"shared memory that '%s' wrote with ordinary stores "
					"and no 'fence async_smem' between those writes "
					"and the barrier that hands it over", who,
					vf_pname(s, &s->p[r->proc]));
			if (r->at)
				diag_note(s->ctx, r->at->span, rd ? "the read" :
					"the write");
			return NULL;
		}
		/* another warp's cp.async in flight stays: its threads'
		 * chunks land at its own 'cp_async_wait' */
		bool keep = r->pending && r->bulk == CP_GROUP &&
			r->proc != (int)(p - s->p);
		if (!keep && r->lo >= lo && r->hi <= hi && (!geo ||
		    r->geo != geo || (r->r0 >= r0 && r->r1 <= r1))) {
			r->live = false;
			s->rlive[i / 64] &= ~(1ull << (i % 64));
			s->rwrite[i / 64] &= ~(1ull << (i % 64));
			s->rpend[r->proc][i / 64] &= ~(1ull << (i % 64));
		}
	}
	Rec *r = add_rec(s, tma ? A_TMAW : A_GENW, p, lo, hi, in);
	if (r) {
		r->geo = geo;
		r->r0 = r0;
		r->r1 = r1;
		r->pending = tma;
		r->dirty = !tma;
	}
	return r;
}

/* A wait retired groups: their reads are done, at the current clock. */
void
vf_retire_reads(Sim *s, Proc *p, bool bulk, int upto)
{
	uint64_t *pend = s->rpend[p - s->p];

	for (int w = 0; w < RECW; w++)
		for (uint64_t m = pend[w]; m; m &= m - 1) {
			Rec *r = &s->rec[w * 64 + __builtin_ctzll(m)];
			if (r->bulk == bulk && r->group <= upto) {
				r->pending = false;
				r->clock = p->vc[p - s->p];
				pend[w] &= ~(m & -m);
			}
		}
}

/* A cp.async write of [lo, hi) by p's threads (each warp's record covers
 * the whole tile: its threads' chunks are spread over it): earlier
 * accesses must be ordered before it, as for any write by threads, and
 * it is pending -- unordered with everything, its own warp's reads
 * included -- until 'cp_async_wait' retires group 'group' of p. */
void
vf_acc_cpwrite(Sim *s, Proc *p, const SirIns *in, int64_t lo, int64_t hi,
	int group, int64_t geo)
{
	Rec *r = vf_acc_write(s, p, in, lo, hi, false, geo, 0, INT32_MAX);

	if (!r)
		return;
	int i = (int)(r - s->rec);
	r->pending = true;
	r->bulk = CP_GROUP;
	r->group = group;
	s->rpend[r->proc][i / 64] |= 1ull << (i % 64);
}

/* 'cp_async_wait': p's copies of groups up to 'upto' have landed, at its
 * current clock (visible to p now, to others through a barrier). */
void
vf_retire_cp(Sim *s, Proc *p, int upto)
{
	uint64_t *pend = s->rpend[p - s->p];

	for (int w = 0; w < RECW; w++)
		for (uint64_t m = pend[w]; m; m &= m - 1) {
			Rec *r = &s->rec[w * 64 + __builtin_ctzll(m)];
			if (r->kind == A_GENW && r->bulk == CP_GROUP &&
			    r->group <= upto) {
				r->pending = false;
				r->clock = p->vc[p - s->p];
				pend[w] &= ~(m & -m);
			}
		}
}
