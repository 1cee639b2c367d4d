/* verify_step.c: a process's steps in a verifier run: its loops (the
 * tile loop's coordinates, as ptxgen.c lowers them), branches and the
 * instructions verify_exec.c executes, until it blocks or reaches an
 * interleaving point.
 * Requires: a Sim set up by verify.c.  Ensures: process state as the
 * steps imply. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"
#include "check/check.h"
#include "check/verify.h"

/* What exec() does for the pure instructions that need no hazard check
 * (p has no wgmma in flight) and only set a scalar or nothing: the
 * common steps, without the call.  False for any other instruction. */
static inline bool
quick(const Sim *s, Proc *p, const SirIns *in)
{
	const SirVal *dv;

	if (p->ninfl)
		return false;
	switch (in->op) {
	case SOP_const_i:
		p->v[in->dst] = in->imm;
		return true;
	case SOP_param:
		p->v[in->dst] = s->params[in->r[0]->index];
		return true;
	case SOP_gstride:
		p->v[in->dst] = 1;
		return true;
	case SOP_const_f: case SOP_exp2: case SOP_log2: case SOP_rcp:
	case SOP_tanh: case SOP_sqrt: case SOP_rsqrt: case SOP_rowmax:
	case SOP_rowsum: case SOP_colsum: case SOP_convert:
	case SOP_mask_cols: case SOP_mask_causal: case SOP_mask_below:
	case SOP_fill: case SOP_gstore: case SOP_gtload: case SOP_gscatter:
		return true;
	case SOP_mov:
		if (p->sp->vals[in->dst].ty != TY_FRAG) {
			p->v[in->dst] = vf_val(p, in->a[0]);
			p->lanevar[in->dst] = p->lanevar[in->a[0]];
		}
		return true;
	case SOP_add: case SOP_sub: case SOP_mul: case SOP_div: case SOP_rem:
	case SOP_and: case SOP_or: case SOP_xor: case SOP_shl: case SOP_shr:
	case SOP_min: case SOP_max: case SOP_eq: case SOP_ne: case SOP_lt:
	case SOP_le: case SOP_gt: case SOP_ge:
		dv = in->dst ? &p->sp->vals[in->dst] : NULL;
		if (dv && dv->ty != TY_FRAG && in->na == 2) {
			p->v[in->dst] = vf_wrap(vf_arith(in->op, vf_val(p, in->a[0]),
				vf_val(p, in->a[1]), p->sp->vals[in->a[0]].ty), dv->ty);
			p->lanevar[in->dst] = p->lanevar[in->a[0]] ||
				p->lanevar[in->a[1]];
		}
		return true;
	}
	return false;
}

/* The coordinates of work index i of a tile loop over grid d (total
 * tiles), in the order ptxgen.c's gen_tile lowers: linear (lpt: from the
 * end), or grouped by (x, y) planes when the loop has a group operand. */
static void
tile_at(const Sim *s, Proc *p, const SirIns *in, const int64_t *d,
    int64_t total, int64_t i)
{
	int64_t *t = p->tile[in->dst % 8];
	bool lpt = s->k->order == ORD_LPT;

	if (in->na == 4) {
		int64_t np = d[0] * d[1], gr = vf_val(p, in->a[3]);
		gr = gr < 1 ? 1 : gr > np ? np : gr;
		int64_t sec = i / (gr * d[2]), r = i - sec * gr * d[2];
		int64_t gs = np - sec * gr < gr ? np - sec * gr : gr;
		int64_t pl = sec * gr + r % gs;
		t[0] = pl % d[0];
		t[1] = pl / d[0];
		t[2] = lpt ? d[2] - 1 - r / gs : r / gs;
		return;
	}
	int64_t lin = lpt ? total - 1 - i : i;
	t[0] = lin % d[0];
	t[1] = lin / d[0] % d[1];
	t[2] = lin / d[0] / d[1];
}

/* A cluster walks the grid in blocks of its shape (ptxgen.c, gen_tile):
 * the grid in blocks, rounded up, in d ... */
static void
cluster_dims(const Sim *s, int64_t *d)
{
	for (int k = 0; k < 3; k++)
		d[k] = (d[k] + s->k->cluster[k] - 1) / s->k->cluster[k];
}

/* ... and p's CTA takes its place in the block. */
static void
cluster_tile(const Sim *s, Proc *p, const SirIns *in)
{
	int64_t *t = p->tile[in->dst % 8];
	const int *cl = s->k->cluster;
	int r = s->joint ? 0 : p->cta;  /* joint: each CTA its own tiles */
	int64_t c[3] = {r % cl[0], r / cl[0] % cl[1], r / (cl[0] * cl[1])};

	for (int k = 0; k < 3; k++)
		t[k] = t[k] * cl[k] + c[k];
}

/* Start a structured instruction: push its body (tile loop, for, if,
 * elect).  Returns true when it was one. */
static bool
enter(Sim *s, Proc *p, const SirIns *in)
{
	Frame *f;

	switch (in->op) {
	case SOP_if: {
		const SirBlock *b = vf_val(p, in->a[0]) ? in->body : in->els;
		if (b && b->n && vf_push(p, b, NULL) && p->lanevar[in->a[0]])
			/* a condition on lane or tid holds for some lanes: their
			 * arrivals count one each, as under 'elect' */
			p->fr[p->depth - 1].elect = true;
		return true;
	}
	case SOP_elect:
		/* the elected lane: one per partition, or one per warp */
		if (in->imm || p->warp == 0)
			vf_push(p, in->body, in);
		return true;
	case SOP_for:
		if (vf_val(p, in->a[0]) >= vf_val(p, in->a[1]))
			return true;
		vf_push(p, in->body, in);
		f = &p->fr[p->depth - 1];
		f->i = vf_val(p, in->a[0]);
		f->hi = vf_val(p, in->a[1]);
		f->step = vf_val(p, in->a[2]);
		p->v[in->dst] = f->i;
		return true;
	case SOP_tile: {
		int64_t d[3] = {1, 1, 1}, total = 1;
		for (int k = 0; k < in->na && k < 3; k++)
			d[k] = vf_val(p, in->a[k]);
		cluster_dims(s, d);
		for (int k = 0; k < 3; k++)
			total *= d[k] > 0 ? d[k] : 0;
		/* ctaid -1: the last tile of a one-tile-per-CTA grid; a
		 * joint run's CTA c starts at tile c */
		int64_t first = s->joint ? p->cta : s->ctaid < 0 ? total - 1 :
			s->ctaid;
		if (first >= total || first < 0)
			return true;
		vf_push(p, in->body, in);
		f = &p->fr[p->depth - 1];
		f->i = first;
		f->hi = s->k->order == ORD_SINGLE ? first + 1 : total;
		if (s->twotiles)  /* the loop body must be re-entrant */
			f->hi = first + 2 < total ? first + 2 : total;
		f->step = s->k->order == ORD_SINGLE ? 1 : s->nctaid;
		f->iter = 0;
		tile_at(s, p, in, d, total, f->i);
		cluster_tile(s, p, in);
		p->tile[in->dst % 8][3] = 0;
		p->tileno = f->i;
		return true;
	}
	case SOP_exit:
		p->depth = 0;
		return true;
	}
	return false;
}

/* The end of a loop body: next iteration or pop. */
static void
loop_end(Sim *s, Proc *p)
{
	Frame *f = &p->fr[p->depth - 1];
	const SirIns *in = f->loop;

	if (in && in->op == SOP_for) {
		f->i += f->step;
		if (f->i < f->hi) {
			p->v[in->dst] = f->i;
			f->pc = 0;
			return;
		}
	} else if (in && in->op == SOP_tile) {
		f->i += f->step;
		f->iter++;
		if (f->i < f->hi) {
			int64_t d[3] = {1, 1, 1}, total = f->hi;
			for (int k = 0; k < in->na && k < 3; k++)
				d[k] = vf_val(p, in->a[k]);
			cluster_dims(s, d);
			tile_at(s, p, in, d, total, f->i);
			cluster_tile(s, p, in);
			p->tile[in->dst % 8][3] = f->iter;
			p->tileno = f->i;
			f->pc = 0;
			return;
		}
	}
	p->depth--;
}

/* Run one process until it blocks, finishes, or completes one
 * synchronizing instruction (an interleaving point).  The innermost
 * frame's position and the step counts live in locals between the calls
 * that leave the frame (enter, exec) and are stored back before them. */
void
vf_step(Sim *s, Proc *p)
{
	long ps = p->steps, ss = s->steps;

	while (p->depth > 0) {
		Frame *f = &p->fr[p->depth - 1];
		const SirIns *v = f->b->v;
		const int *skip = f->skip;
		int n = f->b->n, pc = f->pc;
		const SirIns *in = NULL;
		while (pc < n) {
			int k = skip[pc];
			if (k > 0 && ps + k <= MAXSTEPS / 4 && ss + k <= MAXSTEPS) {
				ps += k;  /* as if stepped one by one */
				ss += k;
				pc += k;
				continue;
			}
			in = &v[pc];
			if (++ps > MAXSTEPS / 4 || ++ss > MAXSTEPS)
				break;
			if (k >= 0 || !quick(s, p, in))
				break;
			pc++;
			in = NULL;
		}
		f->pc = pc;
		p->steps = ps;
		s->steps = ss;
		if (!in) {
			loop_end(s, p);
			continue;
		}
		if (ps > MAXSTEPS / 4 || ss > MAXSTEPS) {
			Iter it;
			vf_iter(p, &it);
			vf_fail(s, in->span, "runaway", "a run of the schedule did "
				"not finish: %s was still running here when %s step "
				"budget ran out", vf_who(s, p, &it), ps > MAXSTEPS / 4 ?
				"its" : "the run's");
			p->depth = 0;
			break;
		}
		if (in->body || in->op == SOP_exit) {
			f->pc++;
			enter(s, p, in);
			continue;
		}
		if (!vf_exec(s, p, in, f->elect))
			return;  /* blocked: retried when it may pass */
		f->pc++;
		int eff = sir_ops[in->op].eff;
		if (eff == E_SYNC || eff == E_ASYNC || p->state != B_RUN)
			return;
	}
	p->state = B_DONE;
	vf_cluster_bar(s);  /* it no longer holds the cluster's barrier */
	if (p->bulk_unread || p->bulk_open) {
		vf_fail(s, p->sp->part->nspan, "exit-pending", "partition '%s' "
			"ends with bulk stores still reading shared memory; "
			"end with 'tma_wait 0'%s", vf_pname(s, p), "");
	} else if (p->cp_open || p->cp_seq > p->cp_done) {
		vf_fail(s, p->sp->part->nspan, "exit-pending", "partition '%s' "
			"ends with cp_async copies in flight%s; end with "
			"'cp_async_commit' and 'cp_async_wait 0'", vf_pname(s, p),
			p->cp_open ? " (some in no committed group)" : "");
		if (p->cp_last)
			diag_note(s->ctx, p->cp_last->span, "the last copy into "
				"a group");
	} else if (p->bulk_unwaited) {
		/* 'tma_wait N read' says the stores have read shared memory,
		 * not that their writes to global memory are done */
		vf_fail(s, p->sp->part->nspan, "exit-pending", "partition '%s' "
			"ends with bulk stores in flight: 'tma_wait N read' waited "
			"only for their reads; end with 'tma_wait 0'%s",
			vf_pname(s, p), "");
		if (p->bulk_last)
			diag_note(s->ctx, p->bulk_last->span, "the last bulk-store "
				"group it committed");
	}
}
