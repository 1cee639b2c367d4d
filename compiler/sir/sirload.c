/* sirload.c: reading one element of a global tensor as a value,
 * 'G[i, ...]' (the gload op), and the rule that makes such reads sound:
 * a kernel never both loads and writes a global.  Nothing in the
 * language orders a write to global memory (a 'store' or a 'tma_store')
 * before another thread's load of it: no barrier or fence of the
 * language covers global memory, within a CTA or across CTAs.  So a
 * global a kernel loads is an input for its whole life, and the loads
 * take the read-only path (ld.global.nc).
 * Requires: a Kernel from sema.  Ensures: gload instructions with a
 * scalar result (f32 for f32, bf16 and f16 elements, else the integer
 * element type), or diagnostics. */
#include <string.h>

#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"
#include "sir/sirgen.h"

/* n: N_INDEX, a name and one index per dimension. */
Ref
sg_gload(G *g, const Node *n)
{
	Res *r = n->a->kind == N_NAME ? kernel_find(g->k, n->a->name) : NULL;
	Ref last = 0, lin;

	if (!r || r->kind != R_GLOBAL) {
		if (r && (r->kind == R_PARAM || r->kind == R_CONST))
			diag_error(g->ctx, n->span, "'%s' is a scalar; only a "
				"'global' tensor is indexed", r->name);
		else if (r)
			diag_error(g->ctx, n->span, "'%s' is not a global "
				"tensor: only a 'global' is read as a value, "
				"'G[i, ...]'; other resources are operands of "
				"operations such as 'wait' or 'tma_load'",
				r->name);
		else
			diag_error(g->ctx, n->span, "only a 'global' tensor is "
				"indexed in an expression");
		if (r)
			diag_note(g->ctx, r->nspan, "'%s' declared here",
				r->name);
		return sg_err(g);
	}
	if (!(lin = sg_lin_index(g, n, r, &last)))
		return sg_err(g);
	Ty t = r->ety == TY_BF16 || r->ety == TY_F16 ? TY_F32 : r->ety;
	Ref d = sir_val(g->ctx, g->p, t, NULL);
	SirIns *i = sg_emit(g, SOP_gload, n->span);
	r->direct = true;
	i->dst = d;
	i->a[0] = lin;
	i->na = 1;
	i->r[0] = r;
	return d;
}

/* The global an instruction writes, or NULL. */
static const Res *
written(const SirIns *in)
{
	if (in->op == SOP_gstore)
		return in->r[0];
	if (in->op == SOP_tma_store)  /* r[0]: the view */
		return in->r[0]->of;
	return NULL;
}

/* The first load and the first write of each global, by Res index. */
static void
scan(const SirBlock *b, const SirIns **ld, const SirIns **wr, int n)
{
	for (int i = 0; i < b->n; i++) {
		const SirIns *in = &b->v[i];
		const Res *w = written(in);
		if ((in->op == SOP_gload || in->op == SOP_gtload) &&
		    in->r[0]->index < n &&
		    !ld[in->r[0]->index])
			ld[in->r[0]->index] = in;
		if (w && w->index < n && !wr[w->index])
			wr[w->index] = in;
		if (in->body)
			scan(in->body, ld, wr, n);
		if (in->els)
			scan(in->els, ld, wr, n);
	}
}

void
sg_check_loads(Ctx *ctx, const SirMod *m)
{
	int n = m->k->nres[R_GLOBAL];
	const SirIns **ld = NEWARR(&ctx->scratch, const SirIns *, n + 1);
	const SirIns **wr = NEWARR(&ctx->scratch, const SirIns *, n + 1);

	for (int i = 0; i < m->nparts; i++)
		scan(&m->parts[i]->body, ld, wr, n);
	for (const Res *r = m->k->res; r; r = r->next) {
		if (r->kind != R_GLOBAL || r->index >= n || !ld[r->index] ||
		    !wr[r->index])
			continue;
		diag_error(ctx, ld[r->index]->span, "this kernel loads '%s' "
			"and also writes it: nothing orders a write to global "
			"memory before another thread's load, so a global the "
			"kernel loads must be read-only", r->name);
		diag_note(ctx, wr[r->index]->span, "'%s' is written here",
			r->name);
	}
}
