/* budget.c: static budgets that follow from the declarations alone.
 * Requires a Kernel from sema with no errors.  Ensures: every warp belongs
 * to at most one partition, register budgets fit the register file and
 * follow setmaxnreg's rules, named barriers have hardware ids, and
 * tensor-memory regions fit and overlap only where declared as aliases.
 * Shared-memory sizes are checked by pass_layout. */
#include <stdio.h>

#include "base/base.h"
#include "front/front.h"

/* "name" or "name[i]" for a partition of a family, in ctx->perm. */
const char *
budget_pname(Ctx *ctx, const Part *p)
{
	Buf b;

	if (p->index < 0)
		return p->name;
	buf_init(&b, &ctx->perm);
	buf_printf(&b, "%s[%d]", p->name, p->index);
	return b.p;
}

static void
check_warps(Ctx *ctx, Kernel *k)
{
	const Part *owner[32] = {0};
	int nwarps = k->threads / 32;

	for (Part *p = k->parts; p; p = p->next) {
		bool reported = false;
		if (p->warp_hi >= nwarps)
			diag_error(ctx, p->nspan, "partition '%s' has warps "
				"%d..%d but the CTA has %d warp%s (threads=%d)",
				budget_pname(ctx, p), p->warp_lo, p->warp_hi, nwarps,
				nwarps == 1 ? "" : "s", k->threads);
		for (int w = p->warp_lo; w <= p->warp_hi && w < nwarps; w++) {
			if (owner[w] && !reported) {
				diag_error(ctx, p->nspan, "warp %d is in "
					"partition '%s' and in '%s'", w,
					budget_pname(ctx, p), budget_pname(ctx, owner[w]));
				diag_note(ctx, owner[w]->nspan, "'%s' declared "
					"here", budget_pname(ctx, owner[w]));
				reported = true;
			}
			if (!owner[w])
				owner[w] = p;
		}
	}
	if (ctx->nerr)
		return;  /* ownership is not meaningful after these errors */
	for (int w = 0; w < nwarps; w++) {
		int e = w;
		if (owner[w])
			continue;
		while (e + 1 < nwarps && !owner[e + 1])
			e++;
		if (e == w)
			diag_warn(ctx, "unused-warps", k->span, "warp %d has no "
				"partition; it exits at once", w);
		else
			diag_warn(ctx, "unused-warps", k->span, "warps %d..%d "
				"have no partition; they exit at once", w, e);
		w = e;
	}
}

/* setmaxnreg is per warpgroup and '.sync.aligned': every warp of a
 * warpgroup must run the same one, so a budget belongs to a warpgroup.
 * Partitions that share a warpgroup must agree on it (FA4's load, MMA and
 * epilogue warps share one at 48); the prologue then runs it once per
 * warpgroup.  The budgets must fit 64K registers, or their share of
 * them with per_sm=N CTAs on an SM (65536 / N: the launch gives each
 * CTA the entry budget, which setmaxnreg then moves between its
 * warpgroups). */
static void
check_regs(Ctx *ctx, Kernel *k)
{
	const Part *who[8] = {0};
	int64_t total = 0;
	int nwg = (k->threads / 32 + 3) / 4;

	for (Part *p = k->parts; p; p = p->next) {
		for (int g = p->warp_lo / 4; g <= p->warp_hi / 4; g++) {
			if (!p->regs && !who[g])
				continue;
			if (who[g] && who[g]->regs != p->regs) {
				const Part *o = who[g]->regs ? who[g] : p;
				const Part *q = o == p ? who[g] : p;
				diag_error(ctx, q->nspan, "partition '%s' shares "
					"warpgroup %d (warps %d..%d) with '%s', whose "
					"budget is regs=%d; setmaxnreg applies to whole "
					"warpgroups, so give it regs=%d too",
					budget_pname(ctx, q), g, 4 * g, 4 * g + 3,
					budget_pname(ctx, o), o->regs, o->regs);
				return;
			}
			if (p->regs)
				who[g] = p;
		}
	}
	/* a partition without regs in a warpgroup that has a budget */
	for (Part *p = k->parts; p; p = p->next)
		for (int g = p->warp_lo / 4; g <= p->warp_hi / 4; g++)
			if (!p->regs && who[g]) {
				diag_error(ctx, p->nspan, "partition '%s' shares "
					"warpgroup %d with '%s', whose budget is "
					"regs=%d; give it regs=%d too", budget_pname(ctx, p),
					g, budget_pname(ctx, who[g]), who[g]->regs,
					who[g]->regs);
				return;
			}
	bool any = false;
	for (int g = 0; g < nwg; g++)
		if (who[g]) {
			if (4 * g + 4 > k->threads / 32) {
				diag_error(ctx, who[g]->nspan, "'regs' needs a whole "
					"warpgroup, but the CTA's warps end at %d, "
					"inside warpgroup %d (threads=%d)",
					k->threads / 32 - 1, g, k->threads);
				return;
			}
			k->wg_regs[g] = who[g]->regs;
			any = true;
		}
	if (!any)
		return;
	/* the entry budget: what the launch can give every thread of each
	 * of the per_sm CTAs (max: 1, the budgets decide), within ptxas's
	 * 255 and a multiple of 8 like setmaxnreg's values */
	int nper = k->per_sm > 1 ? k->per_sm : 1;
	int64_t file = 65536 / nper;
	k->maxnreg = (int)(file / k->threads) & ~7;
	if (k->maxnreg > 248)
		k->maxnreg = 248;
	for (int g = 0; g < nwg; g++) {
		int warps = k->threads / 32 - 4 * g < 4 ? k->threads / 32 -
			4 * g : 4;
		total += (int64_t)warps * 32 * (k->wg_regs[g] ? k->wg_regs[g] :
			k->maxnreg);
	}
	if (total > file) {
		if (nper > 1)
			diag_error(ctx, k->span, "register budgets need %lld "
				"registers; each of per_sm=%d CTAs has %lld of the "
				"65536 of the register file", (long long)total, nper,
				(long long)file);
		else
			diag_error(ctx, k->span, "register budgets need %lld "
				"registers; the register file has 65536",
				(long long)total);
		for (int g = 0; g < nwg; g++)
			if (who[g])
				diag_note(ctx, who[g]->nspan, "warpgroup %d: 128 "
					"threads x %d ('%s')", g, k->wg_regs[g],
					budget_pname(ctx, who[g]));
	}
}

static void
check_nbars(Ctx *ctx, Kernel *k)
{
	int next = 1;  /* id 0 is the CTA-wide barrier of the prologue */

	for (Res *r = k->res; r; r = r->next) {
		if (r->kind != R_NBAR)
			continue;
		r->bar_id = next;
		next += r->count;
		if (r->threads > k->threads)
			diag_error(ctx, r->nspan, "named barrier '%s' waits for "
				"%lld threads; the CTA has %d", r->name,
				(long long)r->threads, k->threads);
	}
	if (next > 16)
		diag_error(ctx, k->span, "the named barriers need %d ids; "
			"there are 15 (ids 1..15; id 0 is reserved)", next - 1);
}

static void
check_tmem(Ctx *ctx, Kernel *k)
{
	for (Res *r = k->res; r; r = r->next) {
		if (r->kind != R_TMEM)
			continue;
		int64_t end = r->col + (r->count - 1) * r->threads + r->ncols;
		if (end > 512)
			diag_error(ctx, r->nspan, "region '%s' ends at column "
				"%lld; tensor memory has 512 columns", r->name,
				(long long)end);
		for (Res *q = k->res; q != r; q = q->next) {
			if (q->kind != R_TMEM || r->alias == q || q->alias == r ||
			    (r->alias && r->alias == q->alias))
				continue;
			for (int i = 0; i < r->count; i++)
				for (int j = 0; j < q->count; j++) {
					int64_t a = r->col + i * r->threads;
					int64_t b = q->col + j * q->threads;
					if (a < b + q->ncols && b < a + r->ncols)
						goto overlap;
				}
			continue;
overlap:
			diag_error(ctx, r->nspan, "region '%s' overlaps '%s' "
				"but is not declared as its alias", r->name,
				q->name);
			diag_note(ctx, q->nspan, "'%s' declared here; write "
				"'alias=%s' if the overlap is intended", q->name,
				q->name);
		}
	}
}

void
sema_budgets(Ctx *ctx, Kernel *k)
{
	check_warps(ctx, k);
	check_regs(ctx, k);
	check_nbars(ctx, k);
	check_tmem(ctx, k);
}
