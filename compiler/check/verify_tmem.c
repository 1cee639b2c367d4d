/* verify_tmem.c: the verifier's model of tensor memory (sm_100a) and of
 * tcgen05.mma completion, and where a process is (its iteration) for
 * diagnostics.
 *
 * Tensor memory is allocated by 'tmem_alloc', freed by 'tmem_free', and
 * accessed in columns and lane quarters: 'tmem_load'/'tmem_store' by a
 * warp touch its 32 lanes (warp % 4) of the columns of their slice; a
 * tcgen05.mma writes its accumulator's columns (and reads a tensor-memory
 * A operand) in all 128 lanes, asynchronously, until a 'commit' of its
 * issuer after it reaches an mbarrier.  Orderings (the PTX ISA's tcgen05
 * memory consistency rules: only with the tcgen05 fences does a thread
 * sync order tcgen05 operations):
 *   thread -> other    'fence tmem_before', a release (arrive, bsync),
 *                      its acquire, then 'fence tmem_after' in the other
 *                      (a write after a read, and the free, too)
 *   alloc -> other     the same: the allocating warp's first 'fence
 *                      tmem_before' after the alloc publishes it
 *   MMA -> thread      a wait on a phase a later commit of the issuer
 *                      arrived on (or anything ordered after it), then
 *                      'fence tmem_after' (the free, too, in any warp)
 *   MMA -> MMA         issue order, when one process issues both
 * A read not ordered after a write, or a write not ordered after an
 * access, is a 'tmem-race'; an access not ordered after 'tmem_alloc' or
 * after 'tmem_free', and a free not ordered after every access, are
 * 'tmem-alloc' errors; when the thread sync is there and only a fence of
 * the pair is missing, 'tmem-fence'.
 * Requires: a Sim set up by verify.c.  Ensures: those diagnostics. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"
#include "check/check.h"
#include "check/verify.h"

/* ------------------------------------------------------------ iterations */

void
vf_iter(const Proc *p, Iter *it)
{
	it->tile = -1;
	it->i = -1;
	it->loop = NULL;
	for (int d = p->depth - 1; d >= 0; d--) {
		const SirIns *l = p->fr[d].loop;
		if (!l)
			continue;
		if (l->op == SOP_for && !it->loop) {
			it->loop = l;
			it->i = (int32_t)p->fr[d].i;
		} else if (l->op == SOP_tile && it->tile < 0) {
			it->tile = (int32_t)p->fr[d].iter;
		}
	}
}

/* "tile 1, j = 2": the tile iteration (the CTA's, from 0) and the
 * innermost loop's induction variable; "" outside loops. */
const char *
vf_iter_str(Sim *s, const Iter *it)
{
	Buf b;

	buf_init(&b, &s->ctx->perm);
	buf_puts(&b, "");
	if (it->tile >= 0)
		buf_printf(&b, "tile %d", (int)it->tile);
	if (it->loop) {
		const char *n = NULL;
		for (int i = 0; i < s->np && !n; i++)
			if (it->loop->dst <= s->p[i].sp->nvals)
				n = s->p[i].sp->vals[it->loop->dst].name;
		buf_printf(&b, "%s%s = %d", it->tile >= 0 ? ", " : "", n ? n :
			"the loop index", (int)it->i);
	}
	return b.p;
}

/* "'wg warp 1' (tile 0, j = 2)" */
const char *
vf_who(Sim *s, const Proc *p, const Iter *it)
{
	Buf b;
	const char *w = vf_iter_str(s, it);

	buf_init(&b, &s->ctx->perm);
	buf_printf(&b, "'%s'", vf_pname(s, p));
	if (*w)
		buf_printf(&b, " (%s)", w);
	return b.p;
}

/* ------------------------------------------------------------ regions */

static int64_t
ival(const Proc *p, Ref r)
{
	return r ? p->v[r] : 0;
}

static void
region(const Proc *p, const Res *r, Ref idx, int *c0, int *c1)
{
	*c0 = (int)(r->col + ival(p, idx) * r->threads);
	*c1 = *c0 + (int)r->ncols;
}

static const char *
rname(Sim *s, const Proc *p, const Res *r, Ref idx)
{
	Buf b;

	buf_init(&b, &s->ctx->perm);
	if (r->is_array)
		buf_printf(&b, "%s[%lld]", r->name, (long long)ival(p, idx));
	else
		buf_puts(&b, r->name);
	return b.p;
}

/* ------------------------------------------------------------ records */

static bool
is_mma(const TRec *r)
{
	return r->kind == T_MMAW || r->kind == T_MMAR;
}

/* Is access r ordered before q's access (an MMA q issues: mma)?  Across warps, tcgen05 operations are ordered only
 * through the fence pair (PTX ISA, tcgen05 memory consistency): 'fence
 * tmem_before' after r in its warp, a release there that q acquires,
 * then 'fence tmem_after' in q before its access; an MMA's completion
 * reaches q through a commit's phase, then 'fence tmem_after'. */
static bool
ordered(const Sim *s, const TRec *r, const Proc *q, bool mma)
{
	int qi = (int)(q - s->p);

	if (is_mma(r))
		return (mma && r->proc == qi) || (r->clock != CLK_NEVER &&
			q->tvc[TC(s, r->proc)] >= r->clock);
	return r->proc == qi || (r->clock != CLK_NEVER && q->tvc[r->proc] >=
		r->clock);
}

/* Not ordered, but q has acquired what r's side released after r: only
 * the fence pair is missing.  "before": r's warp has no 'fence
 * tmem_before' between r and that release; else q has no 'fence
 * tmem_after' between the acquire and its access. */
static bool
unfenced(const Sim *s, const TRec *r, const Proc *q, bool *before)
{
	if (is_mma(r)) {
		*before = false;
		return r->clock != CLK_NEVER && q->vc[TC(s, r->proc)] >=
			r->clock;
	}
	*before = r->clock == CLK_NEVER || q->vc[r->proc] < r->clock;
	return q->vc[r->proc] >= r->raw;
}

static const char *const verbs[] = {"a tcgen05.mma writes",
	"a tcgen05.mma reads", "'tmem_store' writes", "'tmem_load' reads"};

/* The other operation, for tmem-fence: how it is ordered before. */
static const char *const synced[] = {"a tcgen05.mma writes it, its "
	"completion waited for through a commit", "a tcgen05.mma reads it, "
	"its completion waited for through a commit", "'tmem_store' writes "
	"it in another warp, ordered by a thread sync", "'tmem_load' reads "
	"it in another warp, ordered by a thread sync"};

/* What would have ordered r before an access of q. */
static const char *
missing(const TRec *r, bool mma)
{
	if (is_mma(r))
		return r->clock == CLK_NEVER ? "no 'commit' follows that MMA yet; "
			"commit it to an mbarrier and wait on that phase, then "
			"'fence tmem_after'" : "wait on the mbarrier phase a "
			"'commit' after that MMA arrives on, then 'fence "
			"tmem_after'";
	if (r->clock == CLK_NEVER)
		return "'fence tmem_before' after it, then an arrive or bsync "
			"that this side waits on";
	return mma ? "an arrive or bsync after its 'fence tmem_before' that "
		"the issuer waits on before 'fence tmem_after' and the MMA" :
		"an arrive or bsync after its 'fence tmem_before' that this "
		"side waits on, then 'fence tmem_after'";
}

/* The tmem-fence error: q's operation (what, at in) is ordered after the
 * other warp's (other, by p at at, it) by a thread sync, without the
 * fence pair around that sync. */
static void
fence_missing(Sim *s, Proc *q, const SirIns *in, const char *what,
	const char *other, const Proc *p, const SirIns *at, const Iter *it,
	bool before)
{
	char a[400];
	Iter qit;

	vf_iter(q, &qit);
	snprintf(a, sizeof a, "%s: %s after %s, without the tcgen05 fence "
		"pair", vf_who(s, q, &qit), what, other);
	s->other = p;
	s->other_at = at;
	vf_fail(s, in->span, "tmem-fence", "%s: %s", a, before ? "add 'fence "
		"tmem_before' in that warp after it, before the arrive or "
		"bsync that this side waits on" : "add 'fence tmem_after' in "
		"this warp after the wait, before this operation");
	if (at)
		diag_note(s->ctx, at->span, "the other operation, by %s",
			vf_who(s, p, it));
	vf_note_traces(s, q);
}

/* The schedule's tmem_alloc, for a note, and the partition that runs it. */
static const SirIns *
find_alloc(const SirBlock *b)
{
	for (int i = 0; i < b->n; i++) {
		const SirIns *in = &b->v[i], *x = NULL;
		if (in->op == SOP_tmem_alloc)
			return in;
		if ((in->body && (x = find_alloc(in->body))) ||
		    (in->els && (x = find_alloc(in->els))))
			return x;
	}
	return NULL;
}

static bool
alloc_ok(Sim *s, Proc *q, const SirIns *in)
{
	int qi = (int)(q - s->p);

	if (s->failed)  /* reported: the run stops at this step */
		return false;
	if (s->tm->tm_state == 1 && (s->tm->tm_proc == qi || (s->tm->tm_clock !=
	    CLK_NEVER && q->tvc[s->tm->tm_proc] >= s->tm->tm_clock)))
		return true;
	if (s->tm->tm_state == 1 && q->vc[s->tm->tm_proc] >= s->tm->tm_raw) {
		/* synced after the alloc, without the fence pair */
		Iter it = {-1, -1, NULL};
		fence_missing(s, q, in, in->op == SOP_tmem_free ? "this "
			"'tmem_free' frees tensor memory" : "this uses tensor "
			"memory", "'tmem_alloc' allocates it in another warp, "
			"ordered by a thread sync", &s->p[s->tm->tm_proc],
			s->tm->tm_at, &it, s->tm->tm_clock == CLK_NEVER ||
			q->vc[s->tm->tm_proc] < s->tm->tm_clock);
		return false;
	}
	if (s->tm->tm_state == 2) {
		vf_fail(s, in->span, "tmem-alloc", "'%s' uses tensor memory "
			"after 'tmem_free'%s", vf_pname(s, q), "");
		if (s->tm->tm_at)
			diag_note(s->ctx, s->tm->tm_at->span, "'%s' freed it here",
				vf_pname(s, &s->p[s->tm->tm_proc]));
		return false;
	}
	vf_fail(s, in->span, "tmem-alloc", "'%s' uses tensor memory before "
		"'tmem_alloc' is ordered before it: %s", vf_pname(s, q),
		!s->tm->tm_state ? "nothing has allocated it yet" : "wait for the "
		"allocating warp (a 'bsync' on a barrier it arrives on after "
		"the alloc)");
	if (s->tm->tm_at && s->tm->tm_state)
		diag_note(s->ctx, s->tm->tm_at->span, "'%s' allocates it here",
			vf_pname(s, &s->p[s->tm->tm_proc]));
	for (int i = 0; i < s->m->nparts && !s->tm->tm_state; i++) {
		const SirIns *a = find_alloc(&s->m->parts[i]->body);
		if (a) {
			diag_note(s->ctx, a->span, "'%s' allocates it here, and "
				"nothing orders that before this access",
				s->m->parts[i]->part->name);
			break;
		}
	}
	vf_note_traces(s, q);
	return false;
}

static void
conflict(Sim *s, Proc *q, const SirIns *in, int kind, const Res *res,
	Ref idx, int c0, int c1, const TRec *r)
{
	const char *rn = rname(s, q, res, idx);
	static const char *const mine[] = {"this tcgen05.mma writes",
		"this tcgen05.mma reads", "this writes", "this reads"};
	char a[400], b[300];
	Iter it;

	vf_iter(q, &it);
	snprintf(a, sizeof a, "%s: %s tensor memory '%s' (columns %d..%d) "
		"that %s", vf_who(s, q, &it), mine[kind], rn, c0, c1 - 1,
		verbs[r->kind]);
	snprintf(b, sizeof b, ", not ordered after it: %s",
		missing(r, kind == T_MMAW || kind == T_MMAR));
	s->other = &s->p[r->proc];
	s->other_at = r->at;
	vf_fail(s, in->span, "tmem-race", "%s%s", a, b);
	if (r->at)
		diag_note(s->ctx, r->at->span, "the other access, by %s",
			vf_who(s, &s->p[r->proc], &r->it));
	vf_note_traces(s, q);
}

/* q's operation, for tmem-fence */
static const char *const mine_verb[] = {"this tcgen05.mma writes tensor "
	"memory", "this tcgen05.mma reads tensor memory", "this 'tmem_store' "
	"writes tensor memory", "this 'tmem_load' reads tensor memory"};

/* q's tile iteration, as vf_iter finds it. */
static int32_t
q_it_tile(const Proc *q)
{
	for (int d = q->depth - 1; d >= 0; d--)
		if (q->fr[d].loop && q->fr[d].loop->op == SOP_tile)
			return (int32_t)q->fr[d].iter;
	return -1;
}

/* Check an access of q and record it. */
static void
access(Sim *s, Proc *q, const SirIns *in, int kind, const Res *res,
	Ref idx, int c0, int c1, unsigned lanes)
{
	bool w = kind == T_MMAW || kind == T_THRW;
	bool mma = kind == T_MMAW || kind == T_MMAR;
	int qi = (int)(q - s->p);

	TRec *join = NULL;
	int mine = mma ? TQ_MMA : __builtin_ctz(lanes);

	/* a warp's access meets its lane quarter's records and the MMAs'; an
	 * MMA meets every bucket (a run that failed checks no more) */
	unsigned bk = s->failed ? 0 : mma ? 0x1fu : 1u << mine | 1u << TQ_MMA;
	int32_t tile = -2;  /* q_it_tile(q), once needed */
	for (; bk; bk &= bk - 1) {
		int k = __builtin_ctz(bk);
		for (uint64_t m = s->tm->tlive[k]; m; m &= m - 1) {
			int i = __builtin_ctzll(m);
			TRec *r = &s->tm->trec[k][i];
			/* neither joined nor met: columns apart, lanes apart */
			if (r->c1 < c0 || c1 < r->c0 || !(r->lanes & lanes))
				continue;
			/* a thread's unfenced accesses from one statement (the
			 * unrolled slices of a 'static for') merge into one
			 * record when their columns meet: the same ordering
			 * covers them */
			if (!mma && r->proc == qi && r->kind == kind &&
			    r->lanes == lanes && r->clock == CLK_NEVER &&
			    r->at->span.lo == in->span.lo && r->at->span.hi ==
			    in->span.hi && r->it.tile == (tile == -2 ?
			    (tile = q_it_tile(q)) : tile))
				join = r;
			if (r->c1 <= c0 || c1 <= r->c0)
				continue;
			bool rw = r->kind == T_MMAW || r->kind == T_THRW, bf;
			if ((w || rw) && !ordered(s, r, q, mma)) {
				if (unfenced(s, r, q, &bf))
					fence_missing(s, q, in, mine_verb[kind],
						synced[r->kind], &s->p[r->proc], r->at,
						&r->it, bf);
				else
					conflict(s, q, in, kind, res, idx, c0, c1, r);
				return;
			}
			/* a write replaces what it covers; an access replaces
			 * the same process's like access it covers */
			if (r->c0 >= c0 && r->c1 <= c1 && (r->lanes & ~lanes) ==
			    0 && (w || (r->kind == kind && r->proc == qi))) {
				r->live = false;
				s->tm->tlive[k] &= ~(1ull << i);
			}
		}
	}
	if (join && join->live) {
		join->c0 = join->c0 < c0 ? join->c0 : c0;
		join->c1 = join->c1 > c1 ? join->c1 : c1;
		return;
	}
	/* the first free slot: the lowest clear bit of tlive below ntrec */
	int ti = ~s->tm->tlive[mine] ? __builtin_ctzll(~s->tm->tlive[mine]) : 64;
	if (ti >= s->tm->ntrec[mine] && s->tm->ntrec[mine] < MAXTREC)
		ti = s->tm->ntrec[mine]++;
	TRec *t = ti < s->tm->ntrec[mine] ? &s->tm->trec[mine][ti] : NULL;
	if (!t) {
		if (!s->capped)
			diag_warn(s->ctx, "verify-limit", s->k->span, "the "
				"verifier stopped tracking tensor-memory accesses: "
				"more than %d at once in one lane quarter (%s)",
				MAXTREC, s->shape);
		s->capped = true;
		return;
	}
	s->tm->tlive[mine] |= 1ull << ti;
	*t = (TRec){.kind = kind, .proc = qi, .c0 = c0, .c1 = c1, .lanes =
		lanes, .clock = CLK_NEVER, .raw = q->vc[qi], .live = true,
		.at = in};
	vf_iter(q, &t->it);
}

/* tmem_alloc, tmem_free, tmem_load, tmem_store and tcgen05.mma. */
void
vf_tmem(Sim *s, Proc *p, const SirIns *in)
{
	int self = (int)(p - s->p), c0, c1;

	s->tm = &s->tms[p->cta];  /* its CTA's tensor memory */
	switch (in->op) {
	case SOP_tmem_alloc:
		s->tm->tm_state = 1;
		s->tm->tm_proc = self;
		s->tm->tm_clock = CLK_NEVER;  /* until its 'fence tmem_before' */
		s->tm->tm_raw = p->vc[self];
		s->tm->tm_at = in;
		return;
	case SOP_tmem_free:
		if (!alloc_ok(s, p, in))
			return;
		/* a pair frees together: every access in either CTA's tensor
		 * memory must be ordered before each CTA's free */
		for (int c = 0; c < (s->k->pair ? 2 : 1) && !s->failed; c++) {
		TmState *tm = &s->tms[s->k->pair ? (p->cta & ~1) + c : p->cta];
		for (int k = 0; k <= TQ_MMA && !s->failed; k++)
		FOR_BITS(i, &tm->tlive[k], 1, !s->failed) {
			const TRec *r = &tm->trec[k][i];
			bool bf;
			if (ordered(s, r, p, false))
				continue;
			if (unfenced(s, r, p, &bf)) {
				fence_missing(s, p, in, "this 'tmem_free' frees "
					"tensor memory", synced[r->kind],
					&s->p[r->proc], r->at, &r->it, bf);
				break;
			}
			Iter it;
			vf_iter(p, &it);
			s->other = &s->p[r->proc];
			s->other_at = r->at;
			vf_fail(s, in->span, "tmem-alloc", "%s frees tensor memory "
				"that %s, not ordered before the free", vf_who(s, p,
				&it), s->k->pair && tm != s->tm ? "a tcgen05.mma or "
				"a warp of the pair's other CTA accesses (a pair frees "
				"both CTAs' tensor memory together)" : verbs[r->kind]);
			diag_note(s->ctx, r->at->span, "the access, by %s: %s",
				vf_who(s, &s->p[r->proc], &r->it), is_mma(r) ?
				"wait on the phase a 'commit' after that MMA arrives "
				"on before the free" : "an arrive or bsync after it "
				"that the freeing warp waits on before the free");
			vf_note_traces(s, p);
		}
		}
		s->tm->tm_state = 2;
		s->tm->tm_proc = self;
		s->tm->tm_at = in;
		return;
	case SOP_tmem_load: case SOP_tmem_store: {
		if (!alloc_ok(s, p, in))
			return;
		const Res *r = in->r[0];
		const SirVal *v = &p->sp->vals[in->op == SOP_tmem_load ?
			in->dst : in->a[0]];
		int n = v->n > 0 ? v->n : 1;
		int base = (int)(r->col + ival(p, in->ri[0]) * r->threads);
		c0 = base + (int)(r->packed ? in->imm / 2 : in->imm);
		c1 = c0 + (r->packed ? (n + 1) / 2 : n);
		access(s, p, in, in->op == SOP_tmem_load ? T_THRR : T_THRW,
			r, in->ri[0], c0, c1, 1u <<
			((p->sp->part->warp_lo + p->warp) % 4));
		return;
	}
	case SOP_tc_mma:
		if (!alloc_ok(s, p, in))
			return;
		/* a pair's MMA (the leader's) reads and writes the other
		 * CTA's tensor memory too, allocated with this CTA's */
		for (int c = 0; c < (s->k->pair ? 2 : 1) && !s->failed; c++) {
			s->tm = &s->tms[p->cta + c];
			if (c && s->tm->tm_state != 1) {
				char w[200];
				snprintf(w, sizeof w, "'%s' issues a pair's "
					"tcgen05.mma into the tensor memory of CTA %d",
					vf_pname(s, p), p->cta + c);
				vf_fail(s, in->span, "tmem-alloc", "%s%s", w,
					s->tm->tm_state ? " after its 'tmem_free'" :
					", which has not allocated it");
				return;
			}
			if (in->r[1] && in->r[1]->kind == R_TMEM) {
				region(p, in->r[1], in->ri[1], &c0, &c1);
				access(s, p, in, T_MMAR, in->r[1], in->ri[1], c0, c1,
					0xf);
			}
			region(p, in->r[0], in->ri[0], &c0, &c1);
			access(s, p, in, T_MMAW, in->r[0], in->ri[0], c0, c1, 0xf);
		}
		s->tm = &s->tms[p->cta];
		return;
	}
}

/* fence tmem_before: p's thread accesses so far are ordered before its
 * next release.  fence tmem_after: what p has acquired so far is ordered
 * before its next tensor-memory accesses. */
void
vf_tmem_fence(Sim *s, Proc *p, bool before)
{
	int self = (int)(p - s->p);

	s->tm = &s->tms[p->cta];
	if (!before) {
		memcpy(p->tvc, p->vc, s->nvc * sizeof(Clk));
		return;
	}
	if (s->tm->tm_state == 1 && s->tm->tm_proc == self && s->tm->tm_clock == CLK_NEVER)
		s->tm->tm_clock = p->vc[self];  /* the alloc, published */
	int k = (p->sp->part->warp_lo + p->warp) % 4;
	FOR_BITS(i, &s->tm->tlive[k], 1, true) {
		TRec *r = &s->tm->trec[k][i];
		if (r->proc == self && r->clock == CLK_NEVER)
			r->clock = p->vc[self];
	}
}

/* A commit by p: the MMAs it issued before are done when it arrives;
 * returns its number (the value of p's TC entry it publishes). */
int
vf_tc_commit(Sim *s, Proc *p)
{
	int self = (int)(p - s->p), n = ++p->tc_commits;

	/* a pair's MMAs: in both CTAs' tensor memory */
	for (int c = 0; c < (s->k->pair && p->cta % 2 == 0 ? 2 : 1); c++) {
		TmState *tm = &s->tms[p->cta + c];
		FOR_BITS(i, &tm->tlive[TQ_MMA], 1, true) {
			TRec *r = &tm->trec[TQ_MMA][i];
			if (r->proc == self && r->clock == CLK_NEVER)
				r->clock = n;
		}
	}
	s->tm = &s->tms[p->cta];
	for (int w = 0; w < RECW; w++)  /* pending until a commit */
		for (uint64_t m = s->rpend[self][w]; m; m &= m - 1) {
			Rec *r = &s->rec[w * 64 + __builtin_ctzll(m)];
			if (r->bulk == 2 && r->group == CLK_NEVER)
				r->group = n;
		}
	return n;
}
