/* verify_skip.c: the pure instructions a verifier run may step over,
 * and the constants it sets when a run starts.
 * Requires: a SirMod after the pass pipeline.  Ensures: a skip table for
 * every block (vf_skip_slot) and the constants of every partition. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"
#include "check/check.h"
#include "check/verify.h"

/* ------------------------------------------------------------ skipping
 *
 * Most instructions a run steps through are pure: tile arithmetic that
 * the verifier does not model, and scalar arithmetic whose result reaches
 * nothing the verifier looks at (a mask bound, an output row).  A pure
 * instruction may be stepped over, counting its step, when
 *   - it does not draw from the random stream (all_eq does),
 *   - no wgmma may have its destination or operands in flight (the
 *     wgmma-hazard check could fire on it), and
 *   - its destination is not relevant: read, directly or through other
 *     pure instructions, by a control-flow, synchronizing, asynchronous
 *     or memory instruction.  Those read only scalars, so their register
 *     tile operands are not relevant, but every operand of a relevant
 *     pure instruction is.
 * Each process then has the same values, clocks and diagnostics at every
 * instruction it executes as when it executes them all. */

/* Ops whose value operands the verifier does not read: coordinates in
 * global memory, the accumulate flag. */
static bool
coords(int op)
{
	return op == SOP_tma_load || op == SOP_tma_store || op == SOP_gstore ||
		op == SOP_gscatter || op == SOP_rowred_put ||
		op == SOP_rowred_get || op == SOP_clred_put ||
		op == SOP_clred_get || op == SOP_gtload ||
		op == SOP_wgmma || op == SOP_tc_mma || op == SOP_gload ||
		op == SOP_mma_sync || op == SOP_cp_async;
}

static void
mark_roots(const SirBlock *b, const SirPart *sp, bool *rel, bool *wg)
{
	for (int i = 0; i < b->n; i++) {
		const SirIns *in = &b->v[i];
		if (in->op == SOP_wgmma) {
			wg[in->dst] = true;
			wg[in->a[1]] = true;
		}
		if (sir_ops[in->op].eff != E_PURE && !coords(in->op))
			for (int k = 0; k < in->na; k++)
				if (sp->vals[in->a[k]].ty != TY_FRAG)
					rel[in->a[k]] = true;
		if (sir_ops[in->op].eff != E_PURE) {
			for (int k = 0; k < 3; k++)
				rel[in->ri[k]] = true;
			rel[in->cta] = rel[in->row] = true;  /* a peer, a row */
			rel[in->peer] = true;
		}
		if (in->body)
			mark_roots(in->body, sp, rel, wg);
		if (in->els)
			mark_roots(in->els, sp, rel, wg);
	}
}

/* Operands of relevant pure instructions become relevant; true when one
 * did. */
static bool
mark_uses(const SirBlock *b, bool *rel)
{
	bool grew = false;

	for (int i = 0; i < b->n; i++) {
		const SirIns *in = &b->v[i];
		if ((sir_ops[in->op].eff == E_PURE || in->op == SOP_gload) &&
		    in->dst && rel[in->dst])
			for (int k = 0; k < in->na; k++)
				if (!rel[in->a[k]])
					grew = rel[in->a[k]] = true;
		if (in->body)
			grew |= mark_uses(in->body, rel);
		if (in->els)
			grew |= mark_uses(in->els, rel);
	}
	return grew;
}

/* A constant defined once, before every use of it (later in its block or
 * nested there), can be set when the run starts: no instruction could
 * have read the zero it held before.  Such a 'const' is stepped over. */
typedef struct Konst {
	const SirIns **def;   /* by Ref: the only definition, a const */
	const SirBlock **blk; /* and its block */
	int *at;              /* and index there */
	int *ndef;
	bool *bad;            /* a use it does not come before */
} Konst;

static void
konst_defs(const SirBlock *b, Konst *kc)
{
	for (int i = 0; i < b->n; i++) {
		const SirIns *in = &b->v[i];
		if (in->dst && kc->ndef[in->dst]++ == 0 && in->op == SOP_const_i) {
			kc->def[in->dst] = in;
			kc->blk[in->dst] = b;
			kc->at[in->dst] = i;
		}
		if (in->body)
			konst_defs(in->body, kc);
		if (in->els)
			konst_defs(in->els, kc);
	}
}

/* path[d], at[d]: the blocks enclosing b and the index in each. */
static void
konst_uses(const SirBlock *b, Konst *kc, const SirBlock **path, int *at,
	int d)
{
	path[d] = b;
	for (int i = 0; i < b->n; i++) {
		const SirIns *in = &b->v[i];
		Ref u[9];
		int nu = 0;
		at[d] = i;
		for (int k = 0; k < in->na && k < 6; k++)
			u[nu++] = in->a[k];
		for (int k = 0; k < 3; k++)
			u[nu++] = in->ri[k];
		for (int k = 0; k < nu; k++) {
			Ref r = u[k];
			if (!r || !kc->def[r] || kc->bad[r])
				continue;
			int e = d;
			while (e >= 0 && path[e] != kc->blk[r])
				e--;
			kc->bad[r] = e < 0 || at[e] <= kc->at[r];
		}
		if (in->body)
			konst_uses(in->body, kc, path, at, d + 1);
		if (in->els)
			konst_uses(in->els, kc, path, at, d + 1);
	}
}

static int
depth_of(const SirBlock *b)
{
	int d = 0;

	for (int i = 0; i < b->n; i++) {
		int e = 0;
		if (b->v[i].body && (e = depth_of(b->v[i].body)) > d)
			d = e;
		if (b->v[i].els && (e = depth_of(b->v[i].els)) > d)
			d = e;
	}
	return d + 1;
}

/* The constants of sp set up front (konst), marked in isk. */
static void
konsts(Sim *s, int pi, bool *isk)
{
	const SirPart *sp = s->m->parts[pi];
	Arena *a = &s->ctx->scratch;
	size_t n = sp->nvals + 1;
	Konst kc = {NEWARR(a, const SirIns *, n), NEWARR(a, const SirBlock *,
		n), NEWARR(a, int, n), NEWARR(a, int, n), NEWARR(a, bool, n)};
	int d = depth_of(&sp->body), nk = 0;

	konst_defs(&sp->body, &kc);
	konst_uses(&sp->body, &kc, NEWARR(a, const SirBlock *, d),
		NEWARR(a, int, d), 0);
	s->konst[pi] = NEWARR(a, const SirIns *, n);
	for (Ref r = 1; r < n; r++)
		if (kc.def[r] && kc.ndef[r] == 1 && !kc.bad[r]) {
			isk[r] = true;
			s->konst[pi][nk++] = kc.def[r];
		}
	s->nkonst[pi] = nk;
}

/* What a new run of sp must clear: its relevant values (and Ref 0).
 * Every other value is read only by pure instructions that are not
 * relevant, into values that are not relevant, so what the last run
 * left there reaches nothing the verifier looks at; lanevar, too, flows
 * from operands to the result of a pure instruction.  The constants of
 * konsts() keep the value that their only definition writes. */
static void
clears(Sim *s, int pi, const bool *rel, const bool *isk)
{
	const SirPart *sp = s->m->parts[pi];
	int n = 0;

	s->clr[pi] = NEWARR(&s->ctx->scratch, Ref, sp->nvals + 1);
	for (Ref r = 0; r <= (Ref)sp->nvals; r++)
		if (r == 0 || (rel[r] && !isk[r]))
			s->clr[pi][n++] = r;
	s->nclr[pi] = n;
}

static bool
skippable(const SirIns *in, const bool *rel, const bool *wg,
	const bool *isk)
{
	if (in->op == SOP_const_i && isk[in->dst] && !wg[in->dst])
		return true;
	/* a load is pure to a run: it reads no state the run keeps */
	if ((sir_ops[in->op].eff != E_PURE && in->op != SOP_gload) ||
	    in->op == SOP_all_eq || in->body || (in->dst && (rel[in->dst] ||
	    wg[in->dst])))
		return false;
	for (int k = 0; k < in->na; k++)
		if (wg[in->a[k]])
			return false;
	return true;
}

Skip *
vf_skip_slot(const Sim *s, const SirBlock *b)
{
	uint64_t h = (uint64_t)(uintptr_t)b * 0x9e3779b97f4a7c15ull;

	for (int i = (int)(h >> 40) & s->skipmask;; i = (i + 1) & s->skipmask)
		if (s->skip[i].b == b || !s->skip[i].b)
			return &s->skip[i];
}

static int
skip_blocks(Sim *s, const SirBlock *b, const bool *rel, const bool *wg,
	const bool *isk)
{
	Skip *k = vf_skip_slot(s, b);
	int nb = 1;

	k->b = b;
	k->n = NEWARR(&s->ctx->scratch, int, b->n + 1);
	for (int i = b->n - 1; i >= 0; i--)
		k->n[i] = skippable(&b->v[i], rel, wg, isk) ? k->n[i + 1] + 1 :
			0;
	for (int i = 0; i < b->n; i++)
		if (!k->n[i] && vf_quick_op(b->v[i].op))
			k->n[i] = -1;
	for (int i = 0; i < b->n; i++) {
		if (b->v[i].body)
			nb += skip_blocks(s, b->v[i].body, rel, wg, isk);
		if (b->v[i].els)
			nb += skip_blocks(s, b->v[i].els, rel, wg, isk);
	}
	return nb;
}

static int
count_blocks(const SirBlock *b)
{
	int n = 1;

	for (int i = 0; i < b->n; i++) {
		if (b->v[i].body)
			n += count_blocks(b->v[i].body);
		if (b->v[i].els)
			n += count_blocks(b->v[i].els);
	}
	return n;
}

/* The skip runs of every block of m. */
void
vf_skips(Sim *s, const SirMod *m)
{
	int nb = 0, cap = 16;

	for (int i = 0; i < m->nparts; i++)
		nb += count_blocks(&m->parts[i]->body);
	while (cap < 2 * nb)
		cap *= 2;
	s->skip = NEWARR(&s->ctx->scratch, Skip, cap);
	s->skipmask = cap - 1;
	for (int i = 0; i < m->nparts; i++) {
		const SirPart *sp = m->parts[i];
		bool *rel = NEWARR(&s->ctx->scratch, bool, sp->nvals + 1);
		bool *wg = NEWARR(&s->ctx->scratch, bool, sp->nvals + 1);
		bool *isk = NEWARR(&s->ctx->scratch, bool, sp->nvals + 1);
		mark_roots(&sp->body, sp, rel, wg);
		while (mark_uses(&sp->body, rel))
			;
		rel[0] = wg[0] = false;
		if (i < 64) {
			konsts(s, i, isk);
			clears(s, i, rel, isk);
		}
		skip_blocks(s, &sp->body, rel, wg, isk);
	}
}
