/* verify_load.c: values loaded from global memory ('G[i]', gload) are
 * unknown to the verifier, except from a global whose contents 'verify'
 * lists (a run reads those): a run takes every other loaded value as 0.
 * That is
 * sound only while no loaded value reaches something a run reads: a loop
 * bound, a barrier, buffer or region index, a parity, a byte count, or
 * the condition of an 'if' whose branches do more than arithmetic and
 * global stores.  This check marks every value computed from a load
 * (through arithmetic, 'let', assignment to a 'var' or 'reg', and every
 * assignment under a condition on a loaded value) and refuses, before
 * any run, one that reaches such a place.  The marking is flow
 * insensitive (a 'var' assigned a loaded value anywhere is loaded
 * everywhere), so it is conservative.
 * Requires: a SirMod after the pass pipeline.  Ensures: true, or one
 * error [loaded-value] at the use with a note at the load. */
#include <stdio.h>

#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"
#include "check/check.h"
#include "check/verify.h"

/* Ops whose value operands a run does not read (verify_skip.c's
 * coords(), and the index of a load). */
static bool
unread(int op)
{
	return op == SOP_tma_load || op == SOP_tma_store || op == SOP_gstore ||
		op == SOP_gscatter || op == SOP_rowred_put ||
		op == SOP_rowred_get || op == SOP_clred_put ||
		op == SOP_clred_get || op == SOP_gtload ||
		op == SOP_wgmma || op == SOP_tc_mma || op == SOP_gload ||
		op == SOP_mma_sync || op == SOP_cp_async;
}

/* src[r]: the load value r is computed from, or NULL.  under: the load
 * of the enclosing condition, whose branches assign loaded values.
 * True when a value was marked. */
static bool
spread(const SirBlock *b, const SirIns **src, const SirIns *under)
{
	bool grew = false;

	for (int i = 0; b && i < b->n; i++) {
		const SirIns *in = &b->v[i], *from = under;
		if ((in->op == SOP_gload || in->op == SOP_gtload) &&
		    !in->r[0]->vfy)
			from = in;
		for (int k = 0; k < in->na && !from; k++)
			from = src[in->a[k]];
		if (in->dst && from && !src[in->dst]) {
			src[in->dst] = from;
			grew = true;
		}
		const SirIns *c = in->op == SOP_if && src[in->a[0]] ?
			src[in->a[0]] : under;
		grew |= spread(in->body, src, c);
		grew |= spread(in->els, src, c);
	}
	return grew;
}

/* A block a run may execute or skip without changing what it checks:
 * arithmetic, loads, global stores, and loops and branches of those. */
static bool
inert(const SirBlock *b)
{
	for (int i = 0; b && i < b->n; i++) {
		const SirIns *in = &b->v[i];
		if (in->op == SOP_if || in->op == SOP_for) {
			if (!inert(in->body) || !inert(in->els))
				return false;
		} else if (sir_ops[in->op].eff != E_PURE &&
		    in->op != SOP_gstore && in->op != SOP_gscatter &&
		    in->op != SOP_gload &&
		    in->op != SOP_gtload) {
			return false;
		}
	}
	return true;
}

/* What operand k (0..5) or resource index k (6..8) of in is, when a
 * run reads it, for the message; NULL when a run does not read it. */
static const char *
role(const SirIns *in, int k, char *buf, size_t n)
{
	if (k == 9)
		return in->op == SOP_tma_load ? "the multicast mask" :
			in->op == SOP_bulk_copy ? "the cluster rank of a "
			"'bulk_copy'" : "the cluster rank of an 'arrive'";
	if (k == 10)
		return "the row of a 'tma_load'";
	if (k == 11)
		return "the cluster rank of a 'tma_load' barrier";
	if (k >= 6) {
		snprintf(buf, n, "the index of '%s'", in->r[k - 6]->name);
		return buf;
	}
	switch (in->op) {
	case SOP_for: return "a loop bound";
	case SOP_if: return "the condition of an 'if' that synchronizes";
	case SOP_tile: return "the tile grid";
	case SOP_mbar_wait: return "the parity of a 'wait'";
	case SOP_mbar_expect: return "the byte count of an 'expect'";
	}
	snprintf(buf, n, "an operand of '%s'", sir_ops[in->op].name);
	return buf;
}

static bool
check(Ctx *ctx, const SirPart *sp, const SirBlock *b, const SirIns **src,
	SirFinding **finds)
{
	char buf[96];

	for (int i = 0; i < b->n; i++) {
		const SirIns *in = &b->v[i], *from = NULL;
		int k = 0;
		if (in->op == SOP_if) {
			if (src[in->a[0]] && (!inert(in->body) ||
			    !inert(in->els)))
				from = src[in->a[0]];
		} else if (sir_ops[in->op].eff != E_PURE) {
			for (k = 0; k < in->na && !unread(in->op); k++)
				if (sp->vals[in->a[k]].ty != TY_FRAG &&
				    (from = src[in->a[k]]))
					break;
			for (int j = 0; j < 3 && !from; j++)
				if (in->ri[j] && (from = src[in->ri[j]]))
					k = 6 + j;
			if (!from && in->cta && (from = src[in->cta]))
				k = 9;
			if (!from && in->row && (from = src[in->row]))
				k = 10;
			if (!from && in->peer && (from = src[in->peer]))
				k = 11;
		}
		if (from) {
			diag_error(ctx, in->span, "%s depends on '%s', loaded "
				"from global memory: the verifier does not know "
				"loaded values, so they may not steer loops, "
				"barriers or branches that synchronize "
				"[loaded-value]", role(in, k, buf, sizeof buf),
				from->r[0]->name);
			SirFinding *f = vf_find_add(ctx, finds, "loaded-value",
				vf_last_error(ctx), sp, in->span);
			diag_note(ctx, from->span, "'%s' is loaded here",
				from->r[0]->name);
			f->other = sp;
			f->other_at = from->span;
			return false;
		}
		if (in->body && !check(ctx, sp, in->body, src, finds))
			return false;
		if (in->els && !check(ctx, sp, in->els, src, finds))
			return false;
	}
	return true;
}

bool
vf_loads(Ctx *ctx, const SirMod *m, SirFinding **finds)
{
	for (int i = 0; i < m->nparts; i++) {
		const SirPart *sp = m->parts[i];
		const SirIns **src = NEWARR(&ctx->scratch, const SirIns *,
			sp->nvals + 1);
		while (spread(&sp->body, src, NULL))
			;
		if (!check(ctx, sp, &sp->body, src, finds))
			return false;
	}
	return true;
}
