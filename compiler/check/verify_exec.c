/* verify_exec.c: the instructions a process executes in a verifier run
 * (values, barriers, TMA, wgmma, tcgen05, semaphores); verify_step.c
 * steps through them, its loops and branches.
 * Requires: a Sim set up by verify.c.  Ensures: process and barrier
 * state, access records, events and diagnostics as the steps imply. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"
#include "check/check.h"
#include "check/verify.h"

static int
mbar_of(Sim *s, const Res *r, int64_t idx, int cta)
{
	/* every element is in mb (pass_verify checks MAXBAR), r's in a
	 * row from mbase[r->index], CTA c's nmb1 further on */
	if (r->index >= 0 && r->index < s->nmbase) {
		int b = s->mbase[r->index];
		if (idx < 0 || idx >= r->count)
			return -1;
		if (b >= 0 && b + idx < s->nmb1 && s->mb[b + idx].r == r &&
		    s->mb[b + idx].idx == idx)
			return cta * s->nmb1 + b + (int)idx;
	}
	for (int i = 0; i < s->nmb1; i++)
		if (s->mb[i].r == r && s->mb[i].idx == idx)
			return cta * s->nmb1 + i;
	return -1;
}

/* An mbarrier element by its index, in the process's CTA or (cta >= 0)
 * that one of the cluster, or a failure when a run reaches an index
 * outside the array. */
int
vf_mbar_in(Sim *s, Proc *p, const SirIns *in, const Res *r, int64_t idx,
	int cta)
{
	int b = mbar_of(s, r, idx, cta < 0 ? p->cta : cta);

	if (b < 0) {
		char a[80], c[64];
		snprintf(a, sizeof a, "%s[%lld]", r->name, (long long)idx);
		snprintf(c, sizeof c, "%d elements", r->count);
		char w[300];
		Iter it;
		vf_iter(p, &it);
		snprintf(w, sizeof w, "%s: '%s'", vf_who(s, p, &it), a);
		vf_fail(s, in ? in->span : r->nspan, "index-range", "%s is "
			"outside the array: it has %s", w, c);
	}
	return b;
}
/* The bytes [lo, hi) of stage st of buffer r in p's CTA. */
void
vf_srange(const Proc *p, const Res *r, int64_t st, int64_t *lo, int64_t *hi)
{
	vf_range_of(r, st, lo, hi);
	*lo += CTA_OFF(p->cta);
	*hi += CTA_OFF(p->cta);
}

/* A rank of the cluster that a run computes ('arrive B cta=R'); false
 * after a failure. */
bool
vf_rank_ok(Sim *s, Proc *p, const SirIns *in, int64_t r, const char *what)
{
	if (r >= 0 && r < s->ncta)
		return true;
	char w[300], a[64];
	Iter it;
	vf_iter(p, &it);
	snprintf(w, sizeof w, "%s: %s rank %lld", vf_who(s, p, &it), what,
		(long long)r);
	snprintf(a, sizeof a, "%d CTAs (ranks 0..%d)", s->ncta, s->ncta - 1);
	vf_fail(s, in->span, "cluster-rank", "%s, outside the cluster of %s",
		w, a);
	return false;
}

/* p reaches CTA c from outside (a remote arrive, a multicast): c must
 * not have exited; false after a failure. */
bool
vf_peer_alive(Sim *s, Proc *p, const SirIns *in, int c, const char *what)
{
	if (c == p->cta || !vf_cta_gone(s, c))
		return true;
	char w[300], a[96];
	Iter it;
	vf_iter(p, &it);
	snprintf(w, sizeof w, "%s %s CTA %d", vf_who(s, p, &it), what, c);
	snprintf(a, sizeof a, "%d", c);
	vf_fail(s, in->span, "cluster-exit", "%s after every warp of CTA %s "
		"has finished: a CTA must not exit while a peer may still "
		"arrive on its barriers or write its shared memory (wait for "
		"the peers' last arrivals before the end)", w, a);
	vf_note_traces(s, p);
	return false;
}

/* A cluster reduction's exchange on mbarriers (cbar=MB[s]): the
 * partition's first warp expects every partial's bytes on this CTA's
 * MB[s] (one arrival); each warp holding the first thread of a row group
 * stores its rows' partials into [lo, hi) of every CTA by st.async, a
 * write pending until the bytes complete that CTA's MB[s] phase, which
 * releases the writer's earlier accesses to whoever waits on it (the
 * complete_tx has release semantics at cluster scope). */
static bool
clred_async(Sim *s, Proc *p, const SirIns *in, int64_t lo, int64_t hi)
{
	const Layout *l = p->sp->vals[in->a[0]].lay;
	int self = (int)(p - s->p), c = s->ncta;
	int64_t idx = vf_val(p, in->ri[1]), rows = 0;

	l = l && l->kind == LK_ROWS ? l->parent : l;
	if (!l || l->kind != LK_BLOCKED)
		return true;
	/* this warp's threads t (from the partition's first) with t % tpr
	 * == 0 each hold rows m * tpr / threads of the tile */
	for (int t = p->warp * 32; t < p->warp * 32 + 32; t++)
		if (t < l->threads && t % l->tpr == 0)
			rows += (int64_t)l->m * l->tpr / l->threads;
	if (p->warp == 0) {
		int b = vf_mbar_in(s, p, in, in->r[1], idx, p->cta);
		if (b < 0)
			return true;
		s->mb[b].tx += (int64_t)l->m * c * 4;
		vf_mbar_arrive(s, p, in, b, 1);
	}
	for (int k = 0; k < c && rows && !s->failed; k++) {
		if (!vf_peer_alive(s, p, in, k, "stores a partial into"))
			return true;
		int b = vf_mbar_in(s, p, in, in->r[1], idx, k);
		if (b < 0)
			return true;
		Rec *w = vf_acc_write(s, p, in, lo + CTA_OFF(k), hi + CTA_OFF(k),
			true, 0, 0, 0);
		vf_emit_event(s, EV_TMA, self, b, rows * 4);
		if (!s->nev || s->failed)
			return true;
		Ev *e = &s->ev[s->nev - 1];
		e->rec = w ? (int)(w - s->rec) : -1;
		e->vc = s->nvfree ? s->vfree[--s->nvfree] :
			NEWARR(&s->ctx->scratch, Clk, s->nvc);
		memcpy(e->vc, p->vc, s->nvc * sizeof(Clk));
	}
	p->vc[self]++;
	return true;
}

/* A CTA pair's MMA is issued by its leader, the even CTA; false (after
 * a failure) in the other. */
static bool
pair_leader(Sim *s, Proc *p, const SirIns *in)
{
	if (p->cta % 2 == 0)
		return true;
	char w[300];
	Iter it;
	vf_iter(p, &it);
	snprintf(w, sizeof w, "%s issues a tcgen05.mma in CTA %d", vf_who(s,
		p, &it), p->cta);
	vf_fail(s, in->span, "cta-pair", "%s, the odd CTA of its pair: a "
		"pair's MMA (M = 256, both CTAs' operands and tensor memory) is "
		"issued by the pair's leader, the even CTA only; guard it with "
		"'if cluster_rank %% 2 == 0'", w, "");
	vf_note_traces(s, p);
	return false;
}

/* p arrives at the rendezvous or named barrier id (32 threads); when
 * that completes it, the barrier moves on and, with sync, p takes its
 * arrivers' clocks.  Returns the generation p arrived in. */
static int64_t
nb_arrive(Sim *s, Proc *p, int id, bool sync)
{
	int self = (int)(p - s->p);
	Nbar *n = &s->nb[id];
	int64_t gen = n->gen;

	n->who |= PBIT(self);
	n->arrived += 32;
	vf_join(s, s->nbvc[id][0], p->vc);
	p->vc[self]++;
	if (n->arrived >= n->count) {
		n->arrived = 0;
		n->who = 0;
		n->gen++;
		vf_wake_bar(s, B_NBAR, id);
		memcpy(s->nbvc[id][1], s->nbvc[id][0], s->nvc * sizeof(Clk));
		memset(s->nbvc[id][0], 0, s->nvc * sizeof(Clk));
		if (sync)
			vf_join(s, p->vc, s->nbvc[id][1]);
	}
	return gen;
}

/* A CTA pair's tmem_alloc (tcgen05.alloc.cta_group::2) is collective:
 * the allocating warp of each CTA of the pair, a rendezvous like
 * bar.sync's (the first waits for the other). */
static void
pair_alloc(Sim *s, Proc *p, const SirIns *in)
{
	int id = PAIRB(s, p->cta);

	if (s->failed)
		return;
	int64_t gen = nb_arrive(s, p, id, true);
	if (s->nb[id].gen != gen)
		return;
	p->state = B_NBAR;
	p->bar = id;
	p->want = gen;
	p->at = in;
}

int
vf_mbar_at(Sim *s, Proc *p, const SirIns *in, const Res *r, int64_t idx)
{
	return vf_mbar_in(s, p, in, r, idx, -1);
}

static void
trace(Proc *p, Span sp, const char *what, int64_t phase)
{
	p->tr[p->ntr % NTRACE] = (Trace){sp, what, phase};
	p->ntr++;
}
/* ------------------------------------------------------------ values */

int64_t
vf_val(Proc *p, Ref r)
{
	return r ? p->v[r] : 0;
}

int64_t
vf_arith(int op, int64_t a, int64_t b, Ty t)
{
	bool u = t == TY_U32 || t == TY_U64;

	switch (op) {
	case SOP_add: return a + b;
	case SOP_sub: return a - b;
	case SOP_mul: return a * b;
	case SOP_div: return b ? (u ? (int64_t)((uint64_t)a / (uint64_t)b) :
		a / b) : 0;
	case SOP_rem: return b ? (u ? (int64_t)((uint64_t)a % (uint64_t)b) :
		a % b) : 0;
	case SOP_and: return a & b;
	case SOP_or: return a | b;
	case SOP_xor: return a ^ b;
	case SOP_shl: return b >= 0 && b < 63 ? a << b : 0;
	case SOP_shr: return b >= 0 && b < 63 ? a >> b : 0;
	case SOP_min: return a < b ? a : b;
	case SOP_max: return a > b ? a : b;
	case SOP_eq: return a == b;
	case SOP_ne: return a != b;
	case SOP_lt: return a < b;
	case SOP_le: return a <= b;
	case SOP_gt: return a > b;
	case SOP_ge: return a >= b;
	}
	return 0;
}

int64_t
vf_wrap(int64_t x, Ty t)
{
	if (t == TY_I32)
		return (int32_t)x;
	if (t == TY_U32)
		return (uint32_t)x;
	return x;
}

/* Register tiles a wgmma in flight reads or writes. */
static void
hazard(Sim *s, Proc *p, const SirIns *in)
{
	Ref refs[8];
	int n = 0;

	if (!p->ninfl)
		return;
	if (in->dst)
		refs[n++] = in->dst;
	for (int k = 0; k < in->na; k++)
		refs[n++] = in->a[k];
	for (int k = 0; k < n && !s->failed; k++) {
		Ref r = refs[k];
		if (!r || !p->inflight[r])
			continue;
		if (in->op == SOP_wgmma && (r == in->dst || (k > 0 &&
		    r == in->a[1])))
			continue;  /* chained wgmmas keep their order */
		Iter it;
		vf_iter(p, &it);
		char w[200];
		snprintf(w, sizeof w, "%s: this uses '%s'", vf_who(s, p, &it),
			p->sp->vals[r].name ? p->sp->vals[r].name : "a tile");
		vf_fail(s, in->span, "wgmma-hazard", "%s while a wgmma that %s "
			"it is still in flight: retire it with 'mma_commit' and "
			"'mma_wait' first", w, "reads or writes");
		vf_note_traces(s, p);
	}
}
/* Push a block to run next; a loop frame re-enters its body. */
bool
vf_push(Proc *p, const SirBlock *b, const SirIns *loop)
{
	if (p->depth == (int)COUNT(p->fr))
		return false;  /* deeper than the verifier follows */
	bool el = (p->depth && p->fr[p->depth - 1].elect) || (loop &&
		loop->op == SOP_elect);
	p->fr[p->depth++] = (Frame){.b = b, .loop = loop, .elect = el,
		.skip = vf_skip_slot(p->sim, b)->n};
	return true;
}

void
vf_emit_event(Sim *s, int kind, int proc, int bar, int64_t bytes)
{
	if (s->nev == MAXEV) {  /* stop this run rather than drop events */
		if (!s->capped)
			diag_warn(s->ctx, "verify-limit", s->k->span, "the "
				"verifier stopped following a run: more than %d "
				"asynchronous operations in flight (%s)", MAXEV,
				s->shape);
		s->capped = s->failed = true;
		return;
	}
	if (s->nev < MAXEV)
		s->ev[s->nev++] = (Ev){.kind = kind, .proc = proc, .bar = bar,
			.bytes = bytes, .rec = -1, .rec2 = -1};
}

/* Threads an arrival stands for: one per warp lane outside 'elect'. */
static int64_t
arrivals(bool elect)
{
	return elect ? 1 : 32;
}

int64_t
vf_tma_bytes(const Res *v)
{
	int64_t n = ty_bytes(v->ety);

	for (int i = 0; i < v->rank; i++)
		n *= v->shape[i];
	return n;
}

/* Mark r used by the wgmma group being issued. */
static void
set_inflight(Proc *p, Ref r)
{
	if (!p->inflight[r])
		p->infl[p->ninfl++] = r;
	p->inflight[r] = p->wg_seq + 1;
}

/* A capacity of the semaphore model ran out: a warning, once per run,
 * and the run goes on without that counter's record. */
static void
sem_capped(Sim *s, const char *what, int max)
{
	if (!s->capped)
		diag_warn(s->ctx, "verify-limit", s->k->span, "the verifier "
			"stopped tracking %s: more than %d (%s)", what, max,
			s->shape);
	s->capped = true;
}

/* The counter of a semaphore op, made (0) on first use; -1 when the run
 * holds too many. */
static int
sem_cell(Sim *s, Proc *p, const SirIns *in)
{
	int64_t ix = vf_val(p, in->a[0]);

	for (int i = 0; i < s->nsem; i++)
		if (s->sem[i].r == in->r[0] && s->sem[i].idx == ix)
			return i;
	if (s->nsem == MAXSEM) {
		sem_capped(s, "semaphore counters", MAXSEM);
		return -1;
	}
	Sem *m = &s->sem[s->nsem];
	m->r = in->r[0];
	m->idx = ix;
	m->val = 0;
	m->nadd = 0;
	return s->nsem++;
}

/* sem_add: the counter grows (by each lane outside 'elect'), remembering
 * the adding tile.  sem_wait: blocks while the counter is below the
 * value; once past, the adds it needed must come from its own tile or
 * earlier ones: a later tile's CTA may not have started, as the GPU
 * starts CTAs in grid order and only as earlier ones leave room
 * ('sem-order').  The counter orders nothing in the model (no clock is
 * joined), which can only report more races, never fewer. */
static bool
sem_op(Sim *s, Proc *p, const SirIns *in, bool elect)
{
	int c = sem_cell(s, p, in);
	if (c < 0)
		return true;
	Sem *m = &s->sem[c];
	int64_t v = vf_val(p, in->a[1]);

	if (in->op == SOP_sem_add) {
		int64_t n = elect ? v : 32 * v;
		m->val += n;
		int k = 0;
		while (k < m->nadd && m->tile[k] != p->tileno)
			k++;
		if (k == MAXSEMADD) {
			sem_capped(s, "the tiles that add to one semaphore "
				"counter", MAXSEMADD);
			return true;
		}
		if (k == m->nadd) {
			m->tile[m->nadd] = p->tileno;
			m->amt[m->nadd++] = 0;
		}
		m->amt[k] += n;
		vf_wake_bar(s, B_SEM, c);
		return true;
	}
	if (m->val < v) {
		p->state = B_SEM;
		p->bar = c;
		p->want = v;
		p->at = in;
		return false;
	}
	int64_t mine = 0, late = -1;
	for (int k = 0; k < m->nadd; k++)
		if (m->tile[k] <= p->tileno)
			mine += m->amt[k];
		else if (late < 0 || m->tile[k] < late)
			late = m->tile[k];
	if (mine < v) {
		Iter it;
		char w[200];
		vf_iter(p, &it);
		snprintf(w, sizeof w, "grid tile %lld for '%s' element %lld to "
			"reach %lld, which needs the adds of grid tile %lld",
			(long long)p->tileno, m->r->name, (long long)m->idx,
			(long long)v, (long long)late);
		vf_fail(s, in->span, "sem-order", "%s waits in %s, a later "
			"one: the GPU starts CTAs in grid order, as earlier ones "
			"leave room, so a tile may wait only for its own and "
			"earlier tiles", vf_who(s, p, &it), w);
		vf_note_traces(s, p);
	}
	return true;
}

/* Execute one instruction; returns false when the process blocks on it
 * (it is retried later). */
bool
vf_exec(Sim *s, Proc *p, const SirIns *in, bool elect)
{
	const SirVal *dv = in->dst ? &p->sp->vals[in->dst] : NULL;
	int b, self = (int)(p - s->p);
	int64_t lo, hi;

	if (in->op != SOP_wgmma_wait && in->op != SOP_wgmma_commit)
		hazard(s, p, in);

	switch (in->op) {
	case SOP_const_i:
		p->v[in->dst] = in->imm;
		return true;
	case SOP_smem_store: case SOP_smem_load: {
		/* a warp moves its own rows of the tile: a quarter of a
		 * warpgroup's (wgmma_acc: 16 of 64, tmem_rows: 32 of 128),
		 * those of its warp index mod 4, as the lowering does */
		bool ld = in->op == SOP_smem_load;
		const SirVal *x = &p->sp->vals[ld ? in->dst : in->a[0]];
		int64_t per = x->m / 4;
		int64_t r0 = in->roff[0] + per *
			((p->sp->part->warp_lo + p->warp) % 4);
		if (x->lay && x->lay->kind == LK_BLOCKED) {
			/* blocked: the warp's row groups g0..g1 (tpr threads
			 * each) and their rows g + k * (threads / tpr), the
			 * span that holds them all */
			const Layout *l = x->lay;
			int64_t gs = l->threads / l->tpr, rk = l->m / gs;
			int64_t g0 = (int64_t)p->warp * 32 / l->tpr;
			int64_t g1 = ((int64_t)p->warp * 32 + 31) / l->tpr;
			r0 = in->roff[0] + g0;
			per = g1 - g0 + 1 + (rk - 1) * gs;
		}
		vf_srange(p, in->r[0], vf_val(p, in->ri[0]), &lo, &hi);
		if (in->cta) {  /* cta=R: CTA R's copy of the buffer */
			int64_t c = vf_val(p, in->cta);
			if (!vf_rank_ok(s, p, in, c, ld ? "reads the shared memory "
			    "of" : "writes the shared memory of") ||
			    !vf_peer_alive(s, p, in, (int)c, ld ? "reads the shared "
			    "memory of" : "writes the shared memory of"))
				return true;
			lo += CTA_OFF(c) - CTA_OFF(p->cta);
			hi += CTA_OFF(c) - CTA_OFF(p->cta);
		}
		if (ld)
			vf_acc_gread(s, p, in, lo, hi, vf_geometry(in->r[0]),
				r0, r0 + per);
		else
			vf_acc_write(s, p, in, lo, hi, false,
				vf_geometry(in->r[0]), r0, r0 + per);
		return true;
	}
	case SOP_clred_put: case SOP_clred_get:
		/* a row reduction across a cluster: the first thread of each
		 * row writes the CTA's partials into the stage of every CTA
		 * (threads' writes do not conflict); the reads, of this CTA's
		 * stage, must follow the cluster's barrier */
		vf_range_of(in->r[0], vf_val(p, in->ri[0]), &lo, &hi);
		if (in->op == SOP_clred_get) {
			vf_acc_gread(s, p, in, lo + CTA_OFF(p->cta), hi +
				CTA_OFF(p->cta), 0, 0, 0);
			return true;
		}
		if (in->r[1])  /* cbar=: st.async, bytes on each CTA's barrier */
			return clred_async(s, p, in, lo, hi);
		for (int c = 0; c < s->ncta && !s->failed; c++)
			if (vf_peer_alive(s, p, in, c, "writes the shared memory of"))
				vf_acc_write(s, p, in, lo + CTA_OFF(c), hi +
					CTA_OFF(c), false, 0, 0, 0);
		return true;
	case SOP_cl_sync: {
		/* barrier.cluster: every thread of the cluster that has not
		 * exited; a release by each, an acquire of all */
		Nbar *n = &s->nb[CLB(s)];
		int64_t gen = n->gen;
		n->who |= PBIT(self);
		vf_join(s, s->nbvc[CLB(s)][0], p->vc);
		p->vc[self]++;
		vf_cluster_bar(s);
		if (n->gen == gen) {
			p->state = B_NBAR;
			p->bar = CLB(s);
			p->want = gen;
			p->at = in;
		} else {
			vf_join(s, p->vc, s->nbvc[CLB(s)][1]);
		}
		trace(p, in->span, "synced the cluster here", -1);
		return true;
	}
	case SOP_rowred_put: case SOP_rowred_get:
		/* a row reduction across warps (blocked tiles): lane 0 of
		 * each warp writes its partials into the stage, every thread
		 * reads the whole stage after the barrier; threads' writes
		 * do not conflict with each other, reads must be ordered
		 * after them and later writes after the reads */
		vf_srange(p, in->r[0], vf_val(p, in->ri[0]), &lo, &hi);
		if (in->op == SOP_rowred_get)
			vf_acc_gread(s, p, in, lo, hi, 0, 0, 0);
		else
			vf_acc_write(s, p, in, lo, hi, false, 0, 0, 0);
		return true;
	case SOP_const_f: case SOP_cvt: case SOP_exp2: case SOP_log2:
	case SOP_rcp: case SOP_tanh: case SOP_sqrt: case SOP_rsqrt:
	case SOP_rowmax: case SOP_rowsum: case SOP_colsum:
	case SOP_convert: case SOP_mask_cols: case SOP_mask_causal:
	case SOP_mask_below: case SOP_fill: case SOP_gstore: case SOP_gtload: case SOP_gscatter:
		if (in->op == SOP_cvt && dv && ty_isint(dv->ty))
			p->v[in->dst] = vf_wrap(vf_val(p, in->a[0]), dv->ty);
		return true;
	case SOP_tmem_load: case SOP_tmem_store: case SOP_tmem_alloc:
	case SOP_tmem_free:
		vf_tmem(s, p, in);
		if (in->op == SOP_tmem_alloc && s->k->pair)
			pair_alloc(s, p, in);
		return true;
	case SOP_param:
		p->v[in->dst] = s->params[in->r[0]->index];
		return true;
	case SOP_gstride:  /* an address's only: global memory is not
			    * modelled */
		p->v[in->dst] = 1;
		return true;
	case SOP_gload: {
		/* a global with contents in 'verify': the run's content;
		 * else unknown, and vf_loads() checked that it steers
		 * nothing */
		const Node *c = s->gdata[in->r[0]->index];
		int64_t x = 0, i;
		if (dv->ty == TY_FRAG)  /* a gather: tiles are not modelled */
			return true;
		i = vf_val(p, in->a[0]);
		p->v[in->dst] = 0;
		p->lanevar[in->dst] = p->lanevar[in->a[0]];
		if (c && !vf_element(c, i, &x)) {
			char a[48], b[48];
			snprintf(a, sizeof a, "%s[%lld]", in->r[0]->name,
				(long long)i);
			snprintf(b, sizeof b, "%d", c->kind == N_TUPLE ?
				c->kids.n : 1);
			vf_fail(s, in->span, "index-range", "a run loads %s, "
				"but the 'verify' content of the global has %s "
				"elements", a, b);
			return true;
		}
		p->v[in->dst] = x;
		return true;
	}
	case SOP_special: {
		const int *cl = s->k->cluster;
		int c = s->joint ? 0 : p->cta;  /* joint: CTAs of a grid */
		int64_t cv[] = {c, c % cl[0], c / cl[0] % cl[1],
			c / (cl[0] * cl[1])};
		p->v[in->dst] = in->imm == SP_WARP ? p->warp : in->imm == SP_TID ?
			p->warp * 32 : in->imm >= SP_CRANK ? cv[in->imm - SP_CRANK] :
			0;
		p->lanevar[in->dst] = in->imm == SP_LANE || in->imm == SP_TID;
		return true;
	}
	case SOP_mov:
		if (dv->ty != TY_FRAG) {
			p->v[in->dst] = vf_val(p, in->a[0]);
			p->lanevar[in->dst] = p->lanevar[in->a[0]];
		}
		return true;
	case SOP_neg:
		if (dv->ty != TY_FRAG)
			p->v[in->dst] = vf_wrap(-vf_val(p, in->a[0]), dv->ty);
		return true;
	case SOP_abs:  /* issue #22: a scalar abs may steer a branch */
		if (dv->ty != TY_FRAG) {
			int64_t x = vf_val(p, in->a[0]);
			p->v[in->dst] = vf_wrap(x < 0 ? -x : x, dv->ty);
			p->lanevar[in->dst] = p->lanevar[in->a[0]];
		}
		return true;
	case SOP_not:
		p->v[in->dst] = !vf_val(p, in->a[0]);
		return true;
	case SOP_bnot:
		p->v[in->dst] = vf_wrap(~vf_val(p, in->a[0]), dv->ty);
		return true;
	case SOP_select:
		p->v[in->dst] = vf_val(p, in->a[0]) ? vf_val(p, in->a[1]) :
			vf_val(p, in->a[2]);
		return true;
	case SOP_all_eq:
		/* data: random under random interleavings, else false (the
		 * body of 'if !all_eq(...)' runs) */
		p->v[in->dst] = s->mode == 2 && (vf_rnd(s) & 1);
		return true;
	case SOP_tilefield: {
		int slot = (int)(in->a[0] % 8);
		p->v[in->dst] = p->tile[slot][in->imm];
		return true;
	}
	case SOP_mbar_wait: {
		b = vf_mbar_at(s, p, in, in->r[0], vf_val(p, in->ri[0]));
		if (b < 0)
			return true;
		int64_t par = vf_val(p, in->a[0]) & 1;
		Mbar *m = &s->mb[b];
		if ((m->phase & 1) == par) {
			p->state = B_MBAR;
			p->bar = b;
			p->want = par;
			p->at = in;
			return false;
		}
		int64_t obs = m->phase - 1, last = p->seen[b];
		char a[64];
		if ((last == -2 ? obs > 0 : obs > last + 1) || (last != -2 &&
		    obs == last))
			snprintf(a, sizeof a, "%s[%d]", m->r->name, m->idx);
		if (last == -2 ? obs > 0 : obs > last + 1) {
			char w[160];
			snprintf(w, sizeof w, "'%s' passed this wait on '%s' on "
				"phase %lld", vf_pname(s, p), a, (long long)obs);
			vf_fail(s, in->span, "phase-skip", "%s, %s: an arriver got "
				"two phases ahead of it", w, last == -2 ?
				"after the first two phases" :
				"two phases after the one it saw last");
			vf_note_traces(s, p);
			if (m->last && m->last_proc >= 0)
				diag_note(s->ctx, m->last->span, "the last arrival "
					"on '%s' was by '%s', here", a,
					vf_pname(s, &s->p[m->last_proc]));
		} else if (last != -2 && obs == last) {
			vf_fail(s, in->span, "phase-reuse", "'%s' passed this wait "
				"on '%s' on the phase it had already seen: its parity "
				"did not flip", vf_pname(s, p), a);
			vf_note_traces(s, p);
		}
		p->seen[b] = obs;
		if (obs >= 0) {  /* acquire: what the phase's arrivers did */
			vf_join(s, p->vc, s->done[b][obs & 1]);
			if (VB(s, b) >= 0 && p->vc[VB(s, b)] < obs + 1)
				p->vc[VB(s, b)] = obs + 1;
		}
		trace(p, in->span, "waited here", obs);
		return true;
	}
	case SOP_mbar_arrive: case SOP_mbar_expect:
		if (in->cta) {  /* a peer's barrier */
			int64_t c = vf_val(p, in->cta);
			if (!vf_rank_ok(s, p, in, c, "'cta=' names") ||
			    !vf_peer_alive(s, p, in, (int)c, "arrives on a barrier of"))
				return true;
			b = vf_mbar_in(s, p, in, in->r[0], vf_val(p, in->ri[0]), (int)c);
		} else {
			b = vf_mbar_at(s, p, in, in->r[0], vf_val(p, in->ri[0]));
		}
		if (b < 0)
			return true;
		if (in->op == SOP_mbar_expect) {
			s->mb[b].tx += vf_val(p, in->a[0]);
			vf_mbar_arrive(s, p, in, b, 1 * (elect ? 1 : 32));
		} else {
			vf_mbar_arrive(s, p, in, b, in->imm > 1 ? in->imm *
				arrivals(elect) : arrivals(elect));
		}
		trace(p, in->span, "arrived here", s->mb[b].phase);
		return true;
	case SOP_bar_sync: case SOP_bar_arrive: {
		int64_t ix = vf_val(p, in->ri[0]);
		if (ix < 0 || ix >= in->r[0]->count) {
			char a[80], c[64];
			snprintf(a, sizeof a, "%s[%lld]", in->r[0]->name,
				(long long)ix);
			snprintf(c, sizeof c, "%d elements", in->r[0]->count);
			char w[300];
			Iter it;
			vf_iter(p, &it);
			snprintf(w, sizeof w, "%s: '%s'", vf_who(s, p, &it), a);
			vf_fail(s, in->span, "index-range", "%s is outside the "
				"array: it has %s", w, c);
			return true;
		}
		int id = NNB * p->cta + (int)(in->r[0]->bar_id + ix);
		Nbar *n = &s->nb[id];
		if (n->who & PBIT(self)) {
			vf_fail(s, in->span, "nbar-twice", "'%s' arrives on named "
				"barrier '%s' a second time before it completes: an "
				"arrive where a sync was needed", vf_pname(s, p),
				in->r[0]->name);
			vf_note_traces(s, p);
			return true;
		}
		int64_t gen = nb_arrive(s, p, id, in->op == SOP_bar_sync);
		trace(p, in->span, in->op == SOP_bar_sync ? "synced here" :
			"arrived here", -1);
		if (in->op == SOP_bar_sync && n->gen == gen) {
			p->state = B_NBAR;
			p->bar = id;
			p->want = gen;
			p->at = in;
		}
		return true;  /* the arrival happened; blocking is a state */
	}
	case SOP_tma_load: case SOP_bulk_copy: case SOP_bulk_load:
	case SOP_tma_store:
	case SOP_tma_commit: case SOP_tma_wait: case SOP_cp_async:
	case SOP_cp_commit: case SOP_cp_wait:
		return vf_exec_copy(s, p, in);
	case SOP_mma_sync:
		/* the warp's rows of a K-major A (16 (warp % 4) + arow ..),
		 * all of an MN-major A and of B, read by its threads at once */
		for (int k = 1; k <= 2; k++)
			if (in->r[k]) {
				const Res *x = in->r[k];
				int64_t r0 = 0, r1 = x->shape[0];
				if (k == 1 && !in->trans[1]) {
					r0 = in->roff[1] + 16 * ((p->sp->part->warp_lo +
						p->warp) % 4);
					r1 = r0 + 16;
				}
				vf_srange(p, x, vf_val(p, in->ri[k]), &lo, &hi);
				vf_acc_gread(s, p, in, lo, hi, vf_geometry(x), r0, r1);
			}
		return true;
	case SOP_wgmma: {
		int g = NNB * p->cta + 16 + (p->sp->part->warp_lo + p->warp) / 4 %
			8;
		Nbar *gate = &s->nb[g];
		int64_t ggen = gate->gen;
		/* the warps wait for each other to issue, but that orders
		 * nothing: each warp's share of the MMA runs on its own and
		 * completes at its own 'mma_wait' (its clock is not joined;
		 * the gate's clocks stay empty) */
		gate->arrived += 32;
		if (gate->arrived >= gate->count) {
			gate->arrived = 0;
			gate->gen++;
			vf_wake_bar(s, B_NBAR, g);
		} else {
			p->state = B_NBAR;
			p->bar = g;
			p->want = ggen;
			p->at = in;
		}
		/* one operation per warpgroup, but each warp waits for it
		 * on its own: its shared-memory reads are every issuing
		 * warp's, retired by that warp's 'mma_wait', so a stage
		 * released by one warp is still read by the others */
		for (int k = 1; k <= 2; k++)
			if (in->r[k]) {
				/* A with arow= reads the warpgroup's 64 rows */
				const Res *x = in->r[k];
				int64_t r0 = k == 1 ? in->roff[1] : 0;
				int64_t r1 = k == 1 && !in->trans[1] ? r0 + 64 :
					x->shape[0];
				/* a K-major A: warp q of the warpgroup computes
				 * the MMA's rows 16q.., reading only those rows
				 * of A; transposed (MN-major) A rows are columns,
				 * every row of the buffer; B: all of it */
				if (k == 1 && !in->trans[1]) {
					r0 += 16 * ((p->sp->part->warp_lo + p->warp)
						% 4);
					r1 = r0 + 16;
				}
				vf_srange(p, x, vf_val(p, in->ri[k]), &lo, &hi);
				vf_acc_read(s, p, in, lo, hi, false, vf_geometry(x), r0, r1);
			}
		set_inflight(p, in->dst);
		if (in->a[1])
			set_inflight(p, in->a[1]);
		p->wg_open++;
		return true;
	}
	case SOP_wgmma_commit:
		if (p->wg_open) {
			p->wg_open = 0;
			p->wg_groups++;
			p->wg_seq++;
			vf_emit_event(s, EV_WGMMA, self, -1, 0);
		}
		return true;
	case SOP_wgmma_wait: {
		if (p->wg_groups > in->imm) {
			p->state = B_WGMMA;
			p->want = in->imm;
			p->at = in;
			return false;
		}
		int upto = p->wg_seq - p->wg_groups;
		vf_retire_reads(s, p, false, upto);
		int n = 0;
		for (int i = 0; i < p->ninfl; i++)
			if (p->inflight[p->infl[i]] <= upto)
				p->inflight[p->infl[i]] = 0;
			else
				p->infl[n++] = p->infl[i];
		p->ninfl = n;
		return true;
	}
	case SOP_tc_mma:
		/* shared-memory operands are read until a commit after the
		 * MMA arrives; tensor memory in verify_tmem.c.  A pair's MMA
		 * is the leader's, and reads the other CTA's buffers too */
		if (s->k->pair && !pair_leader(s, p, in))
			return true;
		for (int c = 0; c < (s->k->pair ? 2 : 1) && !s->failed; c++)
		for (int k = 1; k <= 2; k++)
			if (in->r[k] && in->r[k]->kind == R_SMEM) {
				const Res *x = in->r[k];
				vf_srange(p, x, vf_val(p, in->ri[k]), &lo, &hi);
				if (c && !vf_peer_alive(s, p, in, p->cta + 1,
				    "reads the shared memory of"))
					return true;
				vf_acc_read(s, p, in, lo + CTA_OFF(c), hi +
					CTA_OFF(c), 2, vf_geometry(x), 0, x->shape[0]);
			}
		vf_tmem(s, p, in);
		p->tc_inflight++;
		vf_emit_event(s, EV_TC, (int)(p - s->p), -1, 0);
		return true;
	case SOP_tc_commit: {
		/* to this CTA's barrier, or (multicast) to the barrier in each
		 * CTA of the mask: an arrival each, in the queue's order */
		int64_t mask = in->cta ? vf_val(p, in->cta) : 1ll << p->cta;
		if (in->cta && (mask < 1 || mask >= 1ll << s->ncta)) {
			vf_rank_ok(s, p, in, mask < 1 ? -1 : 63 - __builtin_clzll(
				(uint64_t)mask), "the multicast mask names");
			return true;
		}
		Clk done = vf_tc_commit(s, p);
		for (int c = 0; c < s->ncta && !s->failed; c++) {
			if (!(mask >> c & 1) || !vf_peer_alive(s, p, in, c,
			    "commits to a barrier of"))
				continue;
			b = vf_mbar_in(s, p, in, in->r[0], vf_val(p, in->ri[0]), c);
			if (b < 0)
				return true;
			vf_emit_event(s, EV_TC, self, b, 0);
			if (s->failed)
				return true;
			s->ev[s->nev - 1].vc = s->nvfree ? s->vfree[--s->nvfree] :
				NEWARR(&s->ctx->scratch, Clk, s->nvc);
			memcpy(s->ev[s->nev - 1].vc, p->vc, s->nvc * sizeof(Clk));
			/* its arrival says that p's MMAs before it are done */
			s->ev[s->nev - 1].vc[TC(s, self)] = done;
			s->ev[s->nev - 1].at = in;
		}
		p->vc[self]++;
		return true;
	}
	case SOP_sem_wait: case SOP_sem_add:
		return sem_op(s, p, in, elect);
	case SOP_grid_wait: case SOP_grid_launch:
		/* they order this kernel against the previous and next ones
		 * in the stream through global memory, which the model does
		 * not hold: nothing within the CTA waits on them */
		return true;
	case SOP_fence:
		if (in->imm == FENCE_TMEM_BEFORE || in->imm == FENCE_TMEM_AFTER)
			vf_tmem_fence(s, p, in->imm == FENCE_TMEM_BEFORE);
		if (in->imm == FENCE_ASYNC_SMEM)
			FOR_BITS(i, s->rwrite, RECW, true)
				if (s->rec[i].kind == A_GENW && s->rec[i].proc == self)
					s->rec[i].dirty = false;
		if (in->imm == FENCE_ASYNC_SMEM)  /* and its reads */
			FOR_BITS(i, s->rlive, RECW, true)
				if (s->rec[i].kind == A_READ && s->rec[i].bulk == 3 &&
				    s->rec[i].proc == self)
					s->rec[i].dirty = false;
		return true;
	default:
		if (dv && dv->ty != TY_FRAG && in->na == 2) {
			p->v[in->dst] = vf_wrap(vf_arith(in->op, vf_val(p, in->a[0]),
				vf_val(p, in->a[1]), p->sp->vals[in->a[0]].ty), dv->ty);
			p->lanevar[in->dst] = p->lanevar[in->a[0]] ||
				p->lanevar[in->a[1]];
		}
		return true;
	}
}
