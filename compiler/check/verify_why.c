/* verify_why.c: the likeliest cause of a deadlock.  The deadlock report
 * shows where every partition is blocked, which is the symptom; this
 * looks for the place to change: a barrier something arrives on that
 * nothing waits on (a deleted wait), else the end of the chain of
 * waits, each on a barrier that only a blocked partition arrives on,
 * whose arrivers have all finished (a missing arrive or a parity one
 * phase off).  Requires: a Sim whose run deadlocked.  Ensures: at most
 * one note. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"
#include "check/check.h"
#include "check/verify.h"

/* The first instruction of b (nested) that arrives on r, and whether one
 * waits on it. */
static void
uses(const SirBlock *b, const Res *r, const SirIns **arr, bool *waited)
{
	for (int i = 0; i < b->n; i++) {
		const SirIns *in = &b->v[i];
		if (in->op == SOP_mbar_wait && in->r[0] == r)
			*waited = true;
		if (!*arr && (((in->op == SOP_mbar_arrive ||
		    in->op == SOP_mbar_expect || in->op == SOP_tc_commit) &&
		    in->r[0] == r) || ((in->op == SOP_tma_load ||
		    in->op == SOP_bulk_copy || in->op == SOP_bulk_load) &&
		    in->r[2] == r) || (in->op == SOP_clred_put &&
		    in->r[1] == r)))
			*arr = in;
		if (in->body)
			uses(in->body, r, arr, waited);
		if (in->els)
			uses(in->els, r, arr, waited);
	}
}

/* A barrier arrived on and never waited on: its wait was deleted. */
static bool
unwaited(Sim *s)
{
	for (const Res *r = s->k->res; r; r = r->next) {
		const SirIns *arr = NULL;
		bool waited = false;
		if (r->kind != R_MBAR)
			continue;
		for (int i = 0; i < s->m->nparts; i++)
			uses(&s->m->parts[i]->body, r, &arr, &waited);
		if (arr && !waited) {
			diag_note(s->ctx, arr->span, "likeliest cause: this "
				"arrives on '%s' but nothing waits on it; a 'wait "
				"%s' is missing, and what it ordered runs early",
				r->name, r->name);
			return true;
		}
	}
	return false;
}

/* A blocked process that arrives on r somewhere in its partition. */
static int
blocked_arriver(const Sim *s, const Res *r, int not)
{
	for (int i = 0; i < s->np; i++) {
		const SirIns *arr = NULL;
		bool waited = false;
		if (i == not || s->p[i].state == B_DONE)
			continue;
		uses(&s->p[i].sp->body, r, &arr, &waited);
		if (arr)
			return i;
	}
	return -1;
}

/* In a cycle of waits, a process blocked on its first wait on a barrier
 * that never completed a phase, for parity 0: a wait on a free slot
 * that should have passed at once (parity 1). */
static bool
first_wait(Sim *s, int at, int nx, PMask cycle)
{
	cycle |= PBIT(at);
	for (int i = 0; i < s->np; i++) {
		const Proc *p = &s->p[i];
		if (!(cycle & PBIT(i)) || p->state != B_MBAR)
			continue;
		const Mbar *m = &s->mb[p->bar];
		if (m->phase || p->want || p->seen[p->bar] != -2)
			continue;
		diag_note(s->ctx, p->at->span, "likeliest cause: '%s' waits "
			"here for the first phase of '%s', which needs '%s', "
			"which waits on it in turn; a first wait on a free slot "
			"takes parity 1 and passes at once (write '... ^ 1')",
			vf_pname(s, p), m->r->name, vf_pname(s, &s->p[i == at ?
			nx : at]));
		return true;
	}
	return false;
}

void
vf_why_deadlock(Sim *s, const Proc *first)
{
	if (unwaited(s))
		return;
	int at = (int)(first - s->p);
	PMask seen = 0;
	for (int n = 0; n < s->np && s->p[at].state == B_MBAR; n++) {
		const Proc *p = &s->p[at];
		const Mbar *m = &s->mb[p->bar];
		int nx = blocked_arriver(s, m->r, at);
		if (!m->pending && m->tx) {  /* arrived: bytes are missing */
			diag_note(s->ctx, p->at->span, "likeliest cause: the "
				"phase of '%s' '%s' waits for has all its arrivals, "
				"but its 'expect' bytes and its TMA loads' bytes "
				"differ by %lld", m->r->name, vf_pname(s, p),
				(long long)(m->tx < 0 ? -m->tx : m->tx));
			return;
		}
		if (nx < 0) {
			diag_note(s->ctx, p->at->span, "likeliest cause: '%s' "
				"waits here for a phase of '%s' that nothing left "
				"running arrives on: an arrive is missing, or the "
				"parity %lld is a phase off", vf_pname(s, p), m->r->name,
				(long long)p->want);
			return;
		}
		if (seen & PBIT(nx)) {
			if (first_wait(s, at, nx, seen))
				return;
			diag_note(s->ctx, p->at->span, "likeliest cause: '%s' "
				"waits here on '%s', which only '%s' arrives on, and "
				"that waits, directly or not, on '%s': the two wait "
				"on each other; check the order of their waits and "
				"the initial parities", vf_pname(s, p), m->r->name,
				vf_pname(s, &s->p[nx]), vf_pname(s, p));
			return;
		}
		seen |= PBIT(at);
		at = nx;
	}
}
