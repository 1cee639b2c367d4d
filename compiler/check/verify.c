/* verify.c: the schedule verifier.  It runs the partitions and the
 * asynchronous units (TMA loads, bulk-store groups, wgmma groups, the
 * tcgen05 queue) as communicating state machines, for every shape class
 * (each combination of the 'verify' values of the integer params) and for
 * one and two persistent CTAs (or clusters), under several schedules:
 * processes first,
 * asynchronous completions first, and seeded random interleavings.
 *
 * Each warp is a process (lanes are uniform except inside 'elect').  An
 * mbarrier has a phase count, pending arrivals and a transaction count; a
 * named barrier counts threads.  The checks, each with a stable name:
 *   deadlock      every process is blocked and nothing is in flight
 *   over-arrival  a phase receives more arrivals than its count
 *   tx-bytes      a phase completes with other bytes than 'tx=' declares
 *   phase-skip    a wait lets a process through two phases ahead
 *   phase-reuse   a wait observes the same phase as the previous one
 *   nbar-twice    a warp arrives twice on a named barrier before it
 *                 completes (an arrive where a sync was needed)
 *   exit-pending  a process ends with bulk stores still reading smem,
 *                 or only waited for with 'tma_wait N read'
 *   tmem-race     tensor-memory accesses (tmem_load/store, tcgen05.mma)
 *                 not ordered (verify_tmem.c)
 *   tmem-alloc    tensor memory used before tmem_alloc or after
 *                 tmem_free, or freed while in use
 *   tmem-fence    tensor-memory operations of two warps ordered by a
 *                 thread sync without 'fence tmem_before' / 'fence
 *                 tmem_after' around it (verify_tmem.c)
 *   runaway       a run does not finish within the step budget
 *   index-range   a run indexes a barrier array outside its elements
 *   race          two accesses to overlapping shared memory, one a write,
 *                 not ordered by happens-before (vector clocks: program
 *                 order, mbarrier phases, named barriers; a TMA write is
 *                 visible once its mbarrier phase is observed; wgmma and
 *                 bulk-store reads last until their group retires)
 *   proxy-fence   a generic-proxy write read by TMA or wgmma without
 *                 'fence async_smem' by the writer, or a generic read
 *                 (smem_load, mma.sync) or write overwritten by a TMA
 *                 load or bulk copy without 'fence async_smem' by the
 *                 reader or writer
 *   wgmma-hazard  a register tile used while a wgmma that reads or
 *                 writes it is in flight
 *   cluster-exit  a CTA of a cluster exited (every warp finished) before
 *                 a peer's arrival on its barrier or multicast into it
 *   cluster-rank  a run computes a rank or multicast mask outside the
 *                 cluster
 *   cta-pair      in a CTA pair ('cta ... pair'), an MMA issued by the
 *                 pair's odd CTA, or a TMA load completing on a barrier
 *                 of a CTA outside this CTA's pair
 * A cluster runs as all its CTAs: processes, barriers and shared memory
 * (offsets CTA_OFF apart) per CTA.
 * This file holds a run and its scheduler; verify_runs.c decides which
 * runs there are and runs them, on threads; verify_step.c steps a
 * process through the instructions verify_exec.c executes, verify_vc.c keeps the clocks and the race checks, and
 * verify_skip.c finds the instructions a run steps over (verify.h).
 * Requires: a SirMod after the pass pipeline.  Ensures: diagnostics. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"
#include "check/check.h"
#include "check/verify.h"

static const char *
bname(const Mbar *m)
{
	static _Thread_local char b[80];

	int n = m->r->is_array ? snprintf(b, sizeof b, "%s[%d]", m->r->name,
		m->idx) : snprintf(b, sizeof b, "%s", m->r->name);
	if (m->cta > 0 || m->r->remote)
		snprintf(b + n, sizeof b - (size_t)n, " of CTA %d", m->cta);
	return b;
}

void
vf_note_traces(Sim *s, const Proc *p)
{
	for (int i = 0; i < p->ntr && i < NTRACE; i++) {
		const Trace *t = &p->tr[(p->ntr - 1 - i) % NTRACE];
		if (t->phase >= 0)
			diag_note(s->ctx, t->span, "before that it %s (phase %lld)",
				t->what, (long long)t->phase);
		else
			diag_note(s->ctx, t->span, "before that it %s", t->what);
	}
}

const char *
vf_pname(Sim *s, const Proc *p)
{
	Buf b;

	buf_init(&b, &s->ctx->perm);
	buf_puts(&b, p->sp->part->name);
	if (p->sp->part->index >= 0)
		buf_printf(&b, "[%d]", p->sp->part->index);
	if (p->nwarps > 1)
		buf_printf(&b, " warp %d", p->warp);
	if (s->ncta > 1)
		buf_printf(&b, " of CTA %d", p->cta);
	return b.p;
}

/* The text of the last diagnostic, an error, without its ' [check]'. */
const char *
vf_last_error(Ctx *ctx)
{
	const char *m = ctx->dlast ? ctx->dlast->msg : "";
	const char *b = strrchr(m, '[');

	return arena_strndup(&ctx->perm, m, b && b > m ? (size_t)(b - m - 1) :
		strlen(m));
}

/* A new finding at the end of *list (perm: it outlives the pass). */
SirFinding *
vf_find_add(Ctx *ctx, SirFinding **list, const char *check,
	const char *msg, const SirPart *part, Span at)
{
	SirFinding *f = NEW(&ctx->perm, SirFinding);

	f->check = check;
	f->msg = arena_strndup(&ctx->perm, msg, strlen(msg));
	f->part = part;
	f->at = at;
	while (*list)
		list = &(*list)->next;
	*list = f;
	return f;
}

/* Keep a failure for --emit dot: the stepping process (s->cur) and what
 * the caller set in s->other, s->other_at and s->wait_bar, which it
 * clears. */
void
vf_find(Sim *s, Span sp, const char *check, const char *msg)
{
	SirFinding *f = vf_find_add(s->ctx, s->finds, check, msg, s->cur ?
		s->cur->sp : NULL, sp);

	if (s->other && s->other_at) {
		f->other = s->other->sp;
		f->other_at = s->other_at->span;
	}
	f->bar = s->wait_bar;
	s->other = NULL;
	s->other_at = NULL;
	s->wait_bar = NULL;
}

void
vf_fail(Sim *s, Span sp, const char *check, const char *fmt, const char *a,
	const char *b)
{
	char msg[512];

	snprintf(msg, sizeof msg, fmt, a, b);
	vf_find(s, sp, check, msg);
	if (s->shape[0])
		diag_error(s->ctx, sp, "%s [%s] (%s)", msg, check, s->shape);
	else
		diag_error(s->ctx, sp, "%s [%s]", msg, check);
	s->failed = true;
}

/* ------------------------------------------------------------ barriers */

void
vf_mbar_complete(Sim *s, int b)
{
	Mbar *m = &s->mb[b];

	if (m->pending != 0 || m->tx != 0)
		return;
	if (m->r->tx && m->bytes != m->r->tx) {
		char a[64], c[64];
		snprintf(a, sizeof a, "%s[%d]", m->r->name, m->idx);
		snprintf(c, sizeof c, "%lld bytes but declares tx=%lld",
			(long long)m->bytes, (long long)m->r->tx);
		s->wait_bar = m->r;
		if (m->last && m->last_proc >= 0) {
			s->other = &s->p[m->last_proc];
			s->other_at = m->last;
		}
		vf_fail(s, m->r->nspan, "tx-bytes", "a phase of '%s' received %s",
			a, c);
		if (m->last && m->last_proc >= 0)
			diag_note(s->ctx, m->last->span, "the last arrival on "
				"'%s' in that phase was by '%s' (phase %lld)", a,
				vf_pname(s, &s->p[m->last_proc]), (long long)m->phase);
	}
	memcpy(s->done[b][m->phase & 1], s->acc[b], s->nvc * sizeof(Clk));
	memset(s->acc[b], 0, s->nvc * sizeof(Clk));
	m->phase++;
	m->pending = m->count;
	m->bytes = 0;
	vf_wake_bar(s, B_MBAR, b);
}

void
vf_mbar_arrive(Sim *s, Proc *p, const SirIns *in, int b, int64_t n)
{
	Mbar *m = &s->mb[b];

	if (p) {  /* a release: publish, then advance the own clock */
		vf_join(s, s->acc[b], p->vc);
		p->vc[p - s->p]++;
		if (in) {
			m->last = in;
			m->last_proc = (int)(p - s->p);
		}
	}

	m->pending -= n;
	if (m->pending < 0) {
		char a[64];
		snprintf(a, sizeof a, "%s[%d]", m->r->name, m->idx);
		char w[300] = "";
		if (p) {
			Iter it;
			vf_iter(p, &it);
			snprintf(w, sizeof w, " (the arrival of %s)", vf_who(s, p,
				&it));
		}
		vf_fail(s, in ? in->span : m->r->nspan, "over-arrival", "'%s' "
			"receives more arrivals in one phase than its count%s",
			a, w);
		diag_note(s->ctx, m->r->nspan, "'%s' declared with count=%lld",
			m->r->name, (long long)m->count);
		if (p)
			vf_note_traces(s, p);
		m->pending = 0;
		return;
	}
	vf_mbar_complete(s, b);
}
/* Has every warp of CTA c finished (so the CTA has exited)? */
bool
vf_cta_gone(const Sim *s, int c)
{
	for (int i = 0; i < s->np; i++)
		if (s->p[i].cta == c && s->p[i].state != B_DONE)
			return false;
	return true;
}

/* The cluster's barrier completes when every process that has not
 * finished has arrived (barrier.cluster waits for the threads that have
 * not exited): at an arrival, and when a process finishes. */
void
vf_cluster_bar(Sim *s)
{
	Nbar *n = &s->nb[CLB(s)];

	if (!n->who)
		return;
	for (int i = 0; i < s->np; i++)
		if (s->p[i].state != B_DONE && !(n->who & PBIT(i)))
			return;
	n->who = 0;
	n->gen++;
	memcpy(s->nbvc[CLB(s)][1], s->nbvc[CLB(s)][0], s->nvc * sizeof(Clk));
	memset(s->nbvc[CLB(s)][0], 0, s->nvc * sizeof(Clk));
	vf_wake_bar(s, B_NBAR, CLB(s));
}

/* A blocked process whose condition now holds becomes runnable. */
static bool
ready(Sim *s, Proc *p)
{
	switch (p->state) {
	case B_RUN:
		return true;
	case B_MBAR:
		return (s->mb[p->bar].phase & 1) != p->want;
	case B_NBAR:
		return s->nb[p->bar].gen != p->want;
	case B_WGMMA:
		return p->wg_groups <= p->want;
	case B_BULK:
		return p->bulk_groups <= p->want;
	case B_SEM:
		return s->sem[p->bar].val >= p->want;
	default:
		return false;
	}
}

/* Process i may move or not: s->rdy mirrors ready() for every process,
 * updated wherever what ready() reads changes (a process's state and
 * group counts, a phase of an mbarrier or the generation of a named
 * barrier it waits on), so the scheduler need not scan them. */
void
vf_wake(Sim *s, int i)
{
	if (s->p[i].state != B_DONE && ready(s, &s->p[i]))
		s->rdy |= PBIT(i);
	else
		s->rdy &= ~PBIT(i);
}

/* Barrier bar moved on: recheck the processes blocked on it in state. */
void
vf_wake_bar(Sim *s, int state, int bar)
{
	for (int i = 0; i < s->np; i++)
		if (s->p[i].state == state && s->p[i].bar == bar)
			vf_wake(s, i);
}

/* Complete event e (TMA data landing, a group retiring, a tcgen05
 * operation finishing in order). */
static void
complete(Sim *s, int e)
{
	Ev ev = s->ev[e];

	memmove(&s->ev[e], &s->ev[e + 1], (size_t)(s->nev - e - 1) *
		sizeof *s->ev);
	s->nev--;
	Proc *p = &s->p[ev.proc];
	switch (ev.kind) {
	case EV_TMA:
		if (s->mb[ev.bar].cta != p->cta && vf_cta_gone(s,
		    s->mb[ev.bar].cta)) {  /* a multicast into an exited CTA */
			char a[16];
			const SirIns *at = ev.rec >= 0 ? s->rec[ev.rec].at : NULL;
			snprintf(a, sizeof a, "%d", s->mb[ev.bar].cta);
			s->cur = p;
			vf_fail(s, at ? at->span : s->k->span, "cluster-exit",
				at && at->op == SOP_clred_put ? "a cluster reduction's "
				"partial (st.async) lands in CTA %s after every warp of "
				"CTA %s has finished: a CTA must not exit while a peer "
				"may still write its shared memory" :
				at && at->op == SOP_bulk_copy ? "a bulk_copy lands in "
				"CTA %s after every warp of CTA %s has finished: a CTA "
				"must not exit while a peer may still write its shared "
				"memory" : "a multicast load lands in CTA %s after "
				"every warp of CTA %s has finished: a CTA must not "
				"exit while a peer may still write its shared memory",
				a, a);
			break;
		}
		if (ev.rec2 >= 0 && s->mb[ev.bar].cta != p->cta &&
		    vf_cta_gone(s, p->cta)) {  /* the source is gone */
			char a[16];
			snprintf(a, sizeof a, "%d", p->cta);
			s->cur = p;
			vf_fail(s, s->rec[ev.rec2].at ? s->rec[ev.rec2].at->span :
				s->k->span, "cluster-exit", "a bulk_copy from CTA %s "
				"completes after every warp of CTA %s has finished: "
				"its shared memory must stay until the copy has read "
				"it (wait for the destination's word that it landed)",
				a, a);
			break;
		}
		if (ev.rec2 >= 0 && s->rec[ev.rec2].live &&
		    s->rec[ev.rec2].pending) {  /* the source has been read */
			Rec *r = &s->rec[ev.rec2];
			r->pending = false;
			r->bar = ev.bar;
			r->tag = s->mb[ev.bar].phase + 1;
			s->rpend[r->proc][ev.rec2 / 64] &= ~(1ull << (ev.rec2 % 64));
		}
		if (ev.rec >= 0 && s->rec[ev.rec].live &&
		    s->rec[ev.rec].kind == A_TMAW && s->rec[ev.rec].pending) {
			s->rec[ev.rec].pending = false;
			s->rec[ev.rec].bar = ev.bar;
			s->rec[ev.rec].tag = s->mb[ev.bar].phase + 1;
		}
		if (ev.vc) {  /* st.async: its complete_tx releases */
			vf_join(s, s->acc[ev.bar], ev.vc);
			vf_vfree(s, ev.vc);
		}
		s->mb[ev.bar].tx -= ev.bytes;
		s->mb[ev.bar].bytes += ev.bytes;
		vf_mbar_complete(s, ev.bar);
		break;
	case EV_CPA:  /* cp.async landed: the threads' async arrival */
		if (ev.rec >= 0 && s->rec[ev.rec].live &&
		    s->rec[ev.rec].kind == A_TMAW && s->rec[ev.rec].pending) {
			s->rec[ev.rec].pending = false;
			s->rec[ev.rec].bar = ev.bar;
			s->rec[ev.rec].tag = s->mb[ev.bar].phase + 1;
		}
		vf_mbar_arrive(s, NULL, NULL, ev.bar, 32);
		break;
	case EV_BULK:
		p->bulk_groups--;
		vf_wake(s, ev.proc);
		break;
	case EV_WGMMA:
		p->wg_groups--;
		vf_wake(s, ev.proc);
		break;
	case EV_TC:
		if (ev.bar >= 0 && s->mb[ev.bar].cta != p->cta &&
		    vf_cta_gone(s, s->mb[ev.bar].cta)) {
			char a[16];
			snprintf(a, sizeof a, "%d", s->mb[ev.bar].cta);
			s->cur = p;
			vf_fail(s, ev.at ? ev.at->span : s->k->span,
				"cluster-exit", "a multicast tcgen05.commit arrives in CTA %s after every warp of "
				"CTA %s has finished: a CTA must not exit while a peer "
				"may still arrive on its barriers", a, a);
			break;
		}
		if (ev.bar >= 0) {
			if (ev.vc) {
				vf_join(s, s->acc[ev.bar], ev.vc);
				vf_vfree(s, ev.vc);
			}
			vf_mbar_arrive(s, NULL, NULL, ev.bar, 1);
		}
		else
			p->tc_inflight--;
		break;
	}
}

/* The deadlock report: one note per blocked partition (its first blocked
 * warp), at the wait, with what it waits for and its last sync steps. */
static void
deadlock(Sim *s)
{
	const Proc *first = NULL;

	for (int i = 0; i < s->np; i++)
		if (s->p[i].state != B_DONE && s->p[i].at) {
			first = &s->p[i];
			break;
		}
	if (!first)
		return;
	s->cur = first;
	s->wait_bar = first->state == B_MBAR ? s->mb[first->bar].r :
		first->state == B_NBAR && first->at->r[0] && first->bar % NNB < 16 ?
		first->at->r[0] : NULL;
	vf_fail(s, first->at->span, "deadlock", "deadlock: every partition is "
		"blocked and nothing is in flight%s%s", "", "");
	SirFinding *df = *s->finds;  /* the error's: it gets first's note */
	while (df && df->next)
		df = df->next;
	const SirPart *shown[MAXPROC];
	int ns = 0;
	for (int i = 0; i < s->np; i++) {
		Proc *p = &s->p[i];
		bool dup = false;
		for (int k = 0; k < ns; k++)
			dup |= shown[k] == p->sp;
		if (p->state == B_DONE || dup || !p->at)
			continue;
		shown[ns++] = p->sp;
		char note[400];
		if (p->state == B_MBAR) {
			const Mbar *m = &s->mb[p->bar];
			char what[96];
			if (m->tx >= 0)
				snprintf(what, sizeof what, "%lld arrival%s and %lld "
					"bytes missing", (long long)m->pending,
					m->pending == 1 ? "" : "s", (long long)m->tx);
			else
				snprintf(what, sizeof what, "%lld arrival%s missing, "
					"%lld bytes more than expected",
					(long long)m->pending, m->pending == 1 ? "" : "s",
					(long long)-m->tx);
			snprintf(note, sizeof note, "'%s' waits here on '%s' for "
				"parity %lld; it has completed %lld phase%s (%s)",
				vf_pname(s, p), bname(m), (long long)p->want,
				(long long)m->phase, m->phase == 1 ? "" : "s", what);
		} else if (p->state == B_NBAR && p->bar == CLB(s)) {
			int left = 0;
			for (int k = 0; k < s->np; k++)
				left += s->p[k].state != B_DONE &&
					!(s->nb[CLB(s)].who & PBIT(k));
			snprintf(note, sizeof note, "'%s' waits here at the "
				"cluster's barrier, which every warp of the cluster "
				"that has not finished must reach (%d %s not)",
				vf_pname(s, p), left, left == 1 ? "has" : "have");
		} else if (p->state == B_NBAR && p->bar > CLB(s)) {
			snprintf(note, sizeof note, "'%s' waits here for the "
				"other CTA of its pair (CTA %d) to run 'tmem_alloc' "
				"too: a pair allocates tensor memory together, a warp "
				"of each CTA", vf_pname(s, p), p->cta ^ 1);
		} else if (p->state == B_SEM) {
			const Sem *m = &s->sem[p->bar];
			snprintf(note, sizeof note, "'%s' waits here for '%s' "
				"element %lld to reach %lld; it holds %lld",
				vf_pname(s, p), m->r->name, (long long)m->idx,
				(long long)p->want, (long long)m->val);
		} else if (p->state == B_NBAR && p->bar % NNB >= 16) {
			snprintf(note, sizeof note, "'%s' waits here for the other "
				"warps of its warpgroup to issue this wgmma",
				vf_pname(s, p));
		} else if (p->state == B_NBAR) {
			snprintf(note, sizeof note, "'%s' waits here on named "
				"barrier '%s' (%lld of %lld threads arrived)",
				vf_pname(s, p), p->at->r[0]->name,
				(long long)s->nb[p->bar].arrived,
				(long long)s->nb[p->bar].count);
		} else {
			snprintf(note, sizeof note, "'%s' waits here for its own "
				"asynchronous operations", vf_pname(s, p));
		}
		diag_note(s->ctx, p->at->span, "%s", note);
		if (p == first && df) {  /* the graph shows what each waits on */
			df->msg = arena_strndup(&s->ctx->perm, note, strlen(note));
		} else {
			s->cur = p;
			s->wait_bar = p->state == B_MBAR ? s->mb[p->bar].r :
				p->state == B_NBAR && p->at->r[0] && p->bar % NNB < 16 ?
				p->at->r[0] :
				NULL;
			vf_find(s, p->at->span, "deadlock", note);
		}
		vf_note_traces(s, p);
	}
	vf_why_deadlock(s, first);
}
static void
setup(Sim *s, const SirMod *m)
{
	s->np = 0;
	for (int c = 0; c < s->ncta; c++)  /* each CTA of the cluster */
	for (int i = 0; i < m->nparts; i++) {
		const SirPart *sp = m->parts[i];
		int nw = sp->part->warp_hi - sp->part->warp_lo + 1;
		for (int w = 0; w < nw && s->np < MAXPROC; w++) {
			Proc *p = &s->p[s->np++];
			int64_t *v = p->v, *seen = p->seen;
			int *inf = p->inflight;
			Ref *infl = p->infl;
			bool *lv = p->lanevar;
			for (int k = 0; inf && k < p->ninfl; k++)
				inf[infl[k]] = 0;  /* the last run's, all nonzero */
			memset(p, 0, offsetof(Proc, fr));  /* push sets a frame */
			p->sp = sp;
			p->warp = w;
			p->nwarps = nw;
			p->cta = c;
			p->tileno = s->joint ? c : s->ctaid;
			p->sim = s;
			p->inflight = inf && p->sp == sp ? inf :
				NEWARR(&s->ctx->scratch, int, sp->nvals + 1);
			p->infl = infl ? infl : NEWARR(&s->ctx->scratch, Ref,
				sp->nvals + 1);
			p->lanevar = lv ? lv : NEWARR(&s->ctx->scratch, bool,
				sp->nvals + 1);
			p->v = v ? v : NEWARR(&s->ctx->scratch, int64_t,
				sp->nvals + 1);
			if (v && i < 64) {  /* what matters of the last run's */
				for (int k = 0; k < s->nclr[i]; k++) {
					p->v[s->clr[i][k]] = 0;
					p->lanevar[s->clr[i][k]] = false;
				}
			} else if (v) {
				memset(p->lanevar, 0, (sp->nvals + 1) * sizeof(bool));
				memset(p->v, 0, (sp->nvals + 1) * sizeof *p->v);
			}
			for (int k = 0; !v && i < 64 && k < s->nkonst[i]; k++)
				p->v[s->konst[i][k]->dst] = s->konst[i][k]->imm;
			p->seen = seen ? seen : NEWARR(&s->ctx->scratch, int64_t,
				MAXBAR);
			vf_push(p, &sp->body, NULL);
		}
	}
	s->nsem = 0;
	s->nmb = s->nmb1 = 0;
	for (int c = 0; c < s->ncta; c++)
	for (const Res *r = s->k->res; r; r = r->next) {
		if (r->kind == R_MBAR && r->index >= 0 && r->index < s->nmbase &&
		    c == 0)
			s->mbase[r->index] = s->nmb;
		if (r->kind == R_MBAR)
			for (int i = 0; i < r->count && s->nmb < MAXBAR; i++)
				s->mb[s->nmb++] = (Mbar){r, i, c, r->mcount,
					r->mcount, 0, 0, 0, NULL, -1};
		if (r->kind == R_NBAR)
			for (int i = 0; i < r->count && r->bar_id + i < 16; i++)
				s->nb[NNB * c + r->bar_id + i] = (Nbar){r->threads,
					0, 0, 0};
		if (c == 0 && !r->next)
			s->nmb1 = s->nmb;
	}
	for (int i = 0; i < s->np; i++)
		for (int b = 0; b < s->nmb; b++)
			s->p[i].seen[b] = -2;
	vf_clocks(s);
	/* wgmma is warpgroup-collective: the operation starts when all the
	 * warpgroup's warps have issued it, a rendezvous like bar.sync */
	for (int c = 0; c < s->ncta; c++)
		for (int g = 0; g < 8; g++)
			s->nb[NNB * c + 16 + g] = (Nbar){0, 0, 0, 0};
	s->nb[CLB(s)] = (Nbar){0, 0, 0, 0};
	for (int c = 0; c < s->ncta; c += 2)  /* a warp of each CTA */
		s->nb[PAIRB(s, c)] = (Nbar){64, 0, 0, 0};
	for (int i = 0; i < s->np; i++) {
		const Part *pt = s->p[i].sp->part;
		s->nb[NNB * s->p[i].cta + 16 + (pt->warp_lo + s->p[i].warp) / 4 %
			8].count += 32;
	}
	s->nrec = 0;
	memset(s->rlive, 0, sizeof s->rlive);
	memset(s->rwrite, 0, sizeof s->rwrite);
	memset(s->rpend, 0, sizeof s->rpend);
	for (int c = 0; c < s->ncta; c++) {
		TmState *t = &s->tms[c];
		memset(t->ntrec, 0, sizeof t->ntrec);
		memset(t->tlive, 0, sizeof t->tlive);
		t->tm_state = 0;
		t->tm_at = NULL;
	}
	s->tm = &s->tms[0];
	s->nev = 0;
	s->steps = 0;
	s->rdy = s->np < MAXPROC ? PBIT(s->np) - 1 : ~(PMask)0;  /* all B_RUN */
}

/* The next move: a process, MAXPROC + an event, or -1 when none can
 * move.  The candidates are the ready processes, in order, then the events
 * their queues allow: bulk and wgmma groups and the tcgen05 queue complete
 * in order per process, TMA loads in any order.  Mode 0 takes the first
 * candidate, mode 1 the first event (event 0 is always allowed), mode 2 a
 * random one; modes 0 and 1 look no further than their pick. */
static int
next(Sim *s)
{
	int cand[MAXEV], n = 0;
	PMask seen[NEV_KINDS] = {0};  /* by event kind: processes queued */

	if (s->mode == 1 && s->nev)
		return MAXPROC;
	if (s->mode < 2)
		return s->rdy ? pm_ctz(s->rdy) : s->nev ? MAXPROC : -1;
	int nr = pm_popcount(s->rdy);
	for (int e = 0; e < s->nev; e++) {
		PMask bit = PBIT(s->ev[e].proc);
		if (s->ev[e].kind == EV_TMA || s->ev[e].kind == EV_CPA ||
		    !(seen[s->ev[e].kind] & bit))
			cand[n++] = MAXPROC + e;
		seen[s->ev[e].kind] |= bit;
	}
	if (!nr && !n)
		return -1;
	uint64_t k = vf_rnd(s) % (uint64_t)(nr + n);
	if (k >= (uint64_t)nr)
		return cand[k - nr];
	PMask m = s->rdy;  /* the k-th ready process */
	while (k--)
		m &= m - 1;
	return pm_ctz(m);
}

/* One run under the current mode; false when it failed. */
bool
vf_run(Sim *s)
{
	setup(s, s->m);
	while (!s->failed) {
		int pick = next(s);
		if (pick < 0) {
			for (int i = 0; i < s->np; i++)
				if (s->p[i].state != B_DONE) {
					deadlock(s);
					return false;
				}
			return true;
		}
		if (pick < MAXPROC) {
			Proc *p = &s->p[pick];
			if (p->state == B_NBAR)
				vf_join(s, p->vc, s->nbvc[p->bar][1]);
			p->state = B_RUN;
			s->cur = p;
			vf_step(s, p);
			vf_wake(s, pick);
		} else {
			s->cur = NULL;
			complete(s, pick - MAXPROC);
		}
	}
	return false;
}
