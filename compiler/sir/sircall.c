/* sircall.c: the built-in functions of partition bodies -- rowmax,
 * rowsum, convert, cvt, exp2, log2, rcp, tanh, min, max, cdiv, mask_cols,
 * mask_causal, mask_below, all_eq, sizeof -- checked and lowered to schedule IR
 * (rowid, colid, select and abs are sirtile.c's), and calls of 'mod's,
 * inlined.  front/mod.c's builtin_names lists the built-ins.
 * Called by sirgen.c's expressions (sg_call). */
#include <math.h>
#include <string.h>

#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"
#include "sir/sirgen.h"

static bool
nargs(G *g, const Node *n, const char *f, int lo, int hi)
{
	if (n->kids.n >= lo && n->kids.n <= hi)
		return true;
	if (lo == hi)
		diag_error(g->ctx, n->span, "'%s' takes %d argument%s, found "
			"%d", f, lo, lo == 1 ? "" : "s", n->kids.n);
	else
		diag_error(g->ctx, n->span, "'%s' takes %d to %d arguments, "
			"found %d", f, lo, hi, n->kids.n);
	return false;
}

static const Layout *
rows_of(G *g, const Layout *l)
{
	Layout *r = NEW(&g->ctx->perm, Layout);

	*r = (Layout){.kind = LK_ROWS, .parent = l, .m = l->m, .n = 1};
	Buf b;
	buf_init(&b, &g->ctx->perm);
	buf_printf(&b, "rows(%s)", sg_layname(l));
	r->name = b.p;
	return r;
}

/* Split the named arguments 'via=B[s]', 'bar=NB' and 'cluster=B[s]' off
 * a reduction's call: *one keeps the positional ones.  False after a
 * diagnostic. */
static bool
via_args(G *g, const Node *n, Node *one, const Node **via, const Node **bar,
	const Node **cl, const Node **cb, const Node **ph)
{
	*one = *n;
	*via = *bar = *cl = *cb = *ph = NULL;
	for (int k = 0; k < n->kids.n; k++) {
		const Node *a = n->kids.v[k];
		if (a->kind != N_NAMEDARG) {
			if (*via || *bar || *cl || *cb || *ph) {
				diag_error(g->ctx, a->span, "'%s' takes its "
					"operands before 'via=', 'bar=' and "
					"'cluster='", n->a->name);
				return false;
			}
			continue;
		}
		if (!strcmp(a->name, "via") && !*via)
			*via = a;
		else if (!strcmp(a->name, "bar") && !*bar)
			*bar = a;
		else if (!strcmp(a->name, "cluster") && !*cl)
			*cl = a;
		else if (!strcmp(a->name, "cbar") && !*cb)
			*cb = a;
		else if (!strcmp(a->name, "phase") && !*ph)
			*ph = a;
		else {
			diag_error(g->ctx, a->span, "'%s' takes the named "
				"arguments 'via=BUF[s]' and 'bar=B' (a reduction "
				"across warps), 'cluster=BUF[s]' (across the CTAs of "
				"a cluster) and 'cbar=MB[s], phase=P' (its exchange "
				"on an mbarrier), each once", n->a->name);
			return false;
		}
		one->kids.n = k < one->kids.n ? k : one->kids.n;
	}
	if ((*cb || *ph) && (!*cb || !*ph || !*cl)) {
		diag_error(g->ctx, n->span, "an exchange of a cluster's partials "
			"on an mbarrier needs 'cluster=BUF[s]', 'cbar=MB[s]' and "
			"'phase=P' (the parity 'wait MB[s]' would take)");
		return false;
	}
	if (!*via != !*bar) {
		diag_error(g->ctx, n->span, "a reduction across warps needs "
			"both 'via=BUF[s]' (f32 shared memory for the warps' "
			"partial results) and 'bar=B' (a named barrier of the "
			"partition)");
		return false;
	}
	return true;
}

/* The rows of a blocked tile x span tpr / 32 warps: the warps' partial
 * results go through shared memory 'via' (stage idx), then a barrier,
 * then each thread reads its rows' partials.  SIR: rowred_put, bar_sync,
 * rowred_get, so the verifier sees the writes, the barrier and the
 * reads. */
static Ref
across_warps(G *g, const Node *n, SirOp op, Ref part, Ref init,
	const Node *via, const Node *bar)
{
	const SirVal *xv = sg_val(g, part);
	const Layout *bl = xv->lay->parent;
	Ref sidx = 0, bidx = 0;
	Res *b = sg_resource(g, via->a, R_SMEM, "a shared-memory buffer",
		&sidx);
	Res *nb = sg_resource(g, bar->a, R_NBAR, "a named barrier", &bidx);

	if (!b || !nb)
		return sg_err(g);
	int64_t need = (int64_t)bl->m * (bl->tpr / 32);
	int64_t have = 1;
	for (int k = 0; k < b->rank; k++)
		have *= b->shape[k];
	if (b->ety != TY_F32 || have < need) {
		diag_error(g->ctx, via->a->span, "'via=' needs f32 shared "
			"memory of at least %lld elements a stage, one per row and "
			"warp (%d row%s, %d warps a row); a stage of '%s' holds "
			"%lld %s", (long long)need, bl->m, bl->m == 1 ? "" : "s",
			bl->tpr / 32, b->name, (long long)have, ty_name(b->ety));
		return sg_err(g);
	}
	SirIns *i = sg_emit(g, SOP_rowred_put, n->span);
	i->a[0] = part;
	i->na = 1;
	i->r[0] = b;
	i->ri[0] = sidx;
	i = sg_emit(g, SOP_bar_sync, bar->span);
	i->r[0] = nb;
	i->ri[0] = bidx;
	Ref r = sir_val(g->ctx, g->p, TY_FRAG, NULL);
	sg_frag_like(g, r, sg_val(g, part));
	i = sg_emit(g, SOP_rowred_get, n->span);
	i->dst = r;
	i->a[0] = part;
	i->a[1] = init;
	i->na = init ? 2 : 1;
	i->imm = op == SOP_rowmax;
	i->r[0] = b;
	i->ri[0] = sidx;
	return r;
}

/* A row split across the CTAs of a cluster (each CTA a slice of its
 * columns): each CTA's partial, reduced across its warps, goes into
 * element row * C + rank of stage idx of 'cluster=' in every CTA
 * (C the cluster's size), then the cluster's barrier, then each thread
 * reads its rows' C partials, in rank order, so every CTA gets the same
 * bits.  SIR: clred_put, cl_sync, clred_get. */
static Ref
across_ctas(G *g, const Node *n, SirOp op, Ref part, Ref init,
	const Node *cl, const Node *cb, const Node *ph)
{
	const SirVal *xv = sg_val(g, part);
	const Layout *bl = xv->lay->parent;
	int64_t c = (int64_t)g->k->cluster[0] * g->k->cluster[1] *
		g->k->cluster[2], have = 1;
	Ref sidx = 0;

	if (c == 1) {
		diag_error(g->ctx, cl->span, "'cluster=' reduces across the "
			"CTAs of a cluster; declare one: 'cta threads=... "
			"cluster=(2)'");
		return sg_err(g);
	}
	Res *b = sg_resource(g, cl->a, R_SMEM, "a shared-memory buffer",
		&sidx);
	if (!b)
		return sg_err(g);
	for (int k = 0; k < b->rank; k++)
		have *= b->shape[k];
	if (b->ety != TY_F32 || have < bl->m * c) {
		diag_error(g->ctx, cl->a->span, "'cluster=' needs f32 shared "
			"memory of at least %lld elements a stage, one per row "
			"and CTA (%d row%s, %lld CTAs); a stage of '%s' holds "
			"%lld %s", (long long)(bl->m * c), bl->m, bl->m == 1 ?
			"" : "s", (long long)c, b->name, (long long)have,
			ty_name(b->ety));
		return sg_err(g);
	}
	/* cbar=MB[s], phase=P: the partials go by st.async, their bytes
	 * completing on MB[s] of each CTA, which each CTA expects and waits
	 * for (parity P): no barrier of the whole cluster */
	Res *mb = NULL;
	Ref midx = 0, par = 0;
	if (cb) {
		if (!cb->a || !(mb = sg_resource(g, cb->a, R_MBAR,
		    "an mbarrier", &midx)))
			return sg_err(g);
		if (mb->mcount != 1) {
			diag_error(g->ctx, cb->a->span, "'cbar=' takes an mbarrier "
				"of 'count=1' (one thread of each CTA expects the "
				"partials' bytes); '%s' has count=%lld", mb->name,
				(long long)mb->mcount);
			return sg_err(g);
		}
		par = sg_int_arg(g, ph->a, "the parity");
		if (sg_val(g, par)->ty == TY_ERR)
			return sg_err(g);
		mb->remote = true;
	}
	SirIns *i = sg_emit(g, SOP_clred_put, n->span);
	i->a[0] = part;
	i->na = 1;
	i->r[0] = b;
	i->ri[0] = sidx;
	i->r[1] = mb;
	i->ri[1] = midx;
	if (mb) {
		/* the wait acquires at cluster scope, the scope of the
		 * complete_tx's release by the peers' st.async */
		i = sg_emit(g, SOP_mbar_wait, cb->span);
		i->r[0] = mb;
		i->ri[0] = midx;
		i->a[0] = par;
		i->na = 1;
		i->imm2 = 1;
	} else {
		sg_emit(g, SOP_cl_sync, cl->span);
	}
	Ref r = sir_val(g->ctx, g->p, TY_FRAG, NULL);
	sg_frag_like(g, r, sg_val(g, part));
	i = sg_emit(g, SOP_clred_get, n->span);
	i->dst = r;
	i->a[0] = part;
	i->a[1] = init;
	i->na = init ? 2 : 1;
	i->imm = op == SOP_rowmax;
	i->r[0] = b;
	i->ri[0] = sidx;
	return r;
}

/* rowmax(x [, init] [, via=B[s], bar=NB] [, cluster=C[s]]) and
 * rowsum(...): reduce each row of a tile to a row vector whose layout is
 * rows(layout of x); with cluster=, the row is the CTAs' slices of it. */
static Ref
reduce(G *g, const Node *n, SirOp op)
{
	const char *f = sir_ops[op].name;
	Ref x, init = 0, r;
	Node one;
	const Node *via, *bar, *cl, *cb, *ph;

	if (!via_args(g, n, &one, &via, &bar, &cl, &cb, &ph))
		return sg_err(g);
	if (!nargs(g, &one, f, 1, 2))
		return sg_err(g);
	x = sg_expr(g, n->kids.v[0]);
	if (sg_val(g, x)->ty == TY_ERR)
		return x;
	if (sg_val(g, x)->ty != TY_FRAG || sg_val(g, x)->lay->kind == LK_ROWS ||
	    sg_val(g, x)->lay->kind == LK_COLS) {
		diag_error(g->ctx, n->kids.v[0]->span, "'%s' reduces the rows "
			"of a register tile", f);
		return sg_err(g);
	}
	if (sg_val(g, x)->ety != TY_F32) {
		diag_error(g->ctx, n->kids.v[0]->span, "'%s' reduces f32 "
			"tiles; this one holds '%s'", f,
			ty_name(sg_val(g, x)->ety));
		return sg_err(g);
	}
	const Layout *xl = sg_val(g, x)->lay;
	bool wide = xl->kind == LK_BLOCKED && xl->tpr > 32;
	if (via && !wide) {
		diag_error(g->ctx, via->span, "a row of '%s' lies in one warp: "
			"'%s' needs no 'via=' or 'bar='", sg_layname(xl), f);
		return sg_err(g);
	}
	if (wide && !via) {
		diag_error(g->ctx, n->span, "a row of '%s' spans %d warps: "
			"'%s' reduces across them through shared memory; give "
			"it 'via=BUF[s], bar=B'", sg_layname(xl), xl->tpr / 32,
			f);
		return sg_err(g);
	}
	const Layout *rl = rows_of(g, xl);
	if (one.kids.n == 2) {
		init = sg_expr(g, n->kids.v[1]);
		SirVal *iv = sg_val(g, init);
		if (iv->ty == TY_FRAG && !sg_same_layout(iv->lay, rl)) {
			diag_error(g->ctx, n->kids.v[1]->span, "the initial "
				"value has layout '%s'; '%s' needs '%s'",
				sg_layname(iv->lay), f, sg_layname(rl));
			return sg_err(g);
		}
		if (iv->ty != TY_FRAG && iv->ty != TY_F32 && !iv->isconst) {
			diag_error(g->ctx, n->kids.v[1]->span, "the initial "
				"value must be a row vector or an f32 scalar");
			return sg_err(g);
		}
	}
	r = sir_val(g->ctx, g->p, TY_FRAG, NULL);
	sg_val(g, r)->ety = TY_F32;
	sg_val(g, r)->lay = rl;
	sg_val(g, r)->m = sg_val(g, x)->m;
	sg_val(g, r)->n = 1;
	SirIns *i = sg_emit(g, op, n->span);
	i->dst = r;
	i->a[0] = x;
	/* the initial value joins once, at the last step */
	i->a[1] = wide || cl ? 0 : init;
	i->na = init && !wide && !cl ? 2 : 1;
	if (wide)
		r = across_warps(g, n, op, r, cl ? 0 : init, via, bar);
	if (cl && sg_val(g, r)->ty != TY_ERR) {
		if (xl->kind != LK_BLOCKED) {
			diag_error(g->ctx, cl->span, "'cluster=' reduces the "
				"rows of a 'blocked' tile");
			return sg_err(g);
		}
		r = across_ctas(g, n, op, r, init, cl, cb, ph);
	}
	return r;
}

/* colsum(x): the sums of a blocked tile's columns, a column vector
 * cols(L).  Each thread adds its rows; a tile spread over several row
 * groups would need their partials combined across threads, which the
 * language does not do yet: the layout must have one row group (tpr ==
 * threads). */
static Ref
colsum(G *g, const Node *n)
{
	if (!nargs(g, n, "colsum", 1, 1))
		return sg_err(g);
	Ref x = sg_expr(g, n->kids.v[0]);
	const SirVal *v = sg_val(g, x);
	if (v->ty == TY_ERR)
		return x;
	if (v->ty != TY_FRAG || v->lay->kind != LK_BLOCKED ||
	    v->ety != TY_F32) {
		diag_error(g->ctx, n->kids.v[0]->span, "'colsum' adds the "
			"columns of an f32 tile of a 'blocked' layout");
		return sg_err(g);
	}
	const Layout *l = v->lay;
	if (l->tpr != l->threads) {
		diag_error(g->ctx, n->span, "'colsum' of '%s' would add the "
			"partial sums of its %d row groups across threads, which "
			"it does not do: it needs one row group, tpr equal to "
			"threads (here %d and %d)", sg_layname(l), l->threads / l->tpr,
			l->tpr, l->threads);
		return sg_err(g);
	}
	Layout *cl = NEW(&g->ctx->perm, Layout);
	*cl = (Layout){.kind = LK_COLS, .parent = l, .m = l->m, .n = l->n};
	Buf b;
	buf_init(&b, &g->ctx->perm);
	buf_printf(&b, "cols(%s)", sg_layname(l));
	cl->name = b.p;
	Ref r = sir_val(g->ctx, g->p, TY_FRAG, NULL);
	SirVal *rv = sg_val(g, r);
	rv->ety = TY_F32;
	rv->lay = cl;
	rv->m = 1;
	rv->n = l->n;
	SirIns *i = sg_emit(g, SOP_colsum, n->span);
	i->dst = r;
	i->a[0] = x;
	i->na = 1;
	return r;
}

static const Layout *
layout_arg(G *g, const Node *e)
{
	Res *r = e->kind == N_NAME ? kernel_find(g->k, e->name) : NULL;

	if (!r || r->kind != R_LAYOUT) {
		diag_error(g->ctx, e->span, "expected the name of a 'layout'");
		return NULL;
	}
	return r->cval.lay;
}

Ref
sg_convert(G *g, const Node *n)
{
	Ref x;
	const Layout *l;

	if (!nargs(g, n, "convert", 2, 2))
		return sg_err(g);
	x = sg_expr(g, n->kids.v[0]);
	if (!(l = layout_arg(g, n->kids.v[1])) || sg_val(g, x)->ty == TY_ERR)
		return sg_err(g);
	SirVal *v = sg_val(g, x);
	if (v->ty != TY_FRAG || l->kind == LK_SMEM) {
		diag_error(g->ctx, n->span, "'convert' changes the layout of a "
			"register tile to another register layout");
		return sg_err(g);
	}
	/* a row or column vector of an MMA accumulator broadcast into a
	 * tile of its parent's layout */
	bool bcast = (v->lay->kind == LK_ROWS || v->lay->kind == LK_COLS) &&
		l->kind == LK_WGMMA_ACC && l->n && sg_rows_fit(v->lay, l);
	bool ok = bcast || sg_same_layout(v->lay, l) ||
		(v->lay->kind == LK_WGMMA_ACC && l->kind == LK_WGMMA_A &&
		ty_bytes(v->ety) == 2);
	if (!ok) {
		if (v->lay->kind == LK_WGMMA_ACC && l->kind == LK_WGMMA_A)
			diag_error(g->ctx, n->span, "'convert' to '%s' needs "
				"16-bit values; write 'convert(cvt(%s, bf16), %s)'",
				sg_layname(l), sg_text(g, n->kids.v[0]->span, "x"),
				sg_layname(l));
		else
			diag_error(g->ctx, n->span, "no conversion from layout "
				"'%s' to '%s' is available", sg_layname(v->lay),
				sg_layname(l));
		return sg_err(g);
	}
	Ref r = sg_unop(g, SOP_convert, x, TY_FRAG, n->span);
	sg_val(g, r)->lay = l;
	if (bcast) {
		sg_val(g, r)->m = l->m;
		sg_val(g, r)->n = l->n;
	}
	return r;
}

Ref
sg_cvt(G *g, const Node *n)
{
	Ref x;
	Val t;

	if (!nargs(g, n, "cvt", 2, 2))
		return sg_err(g);
	x = sg_expr(g, n->kids.v[0]);
	if (!const_eval(g->ctx, g->k, n->kids.v[1], &t) || sg_val(g, x)->ty ==
	    TY_ERR)
		return sg_err(g);
	if (t.ty != TY_DTYPE) {
		diag_error(g->ctx, n->kids.v[1]->span, "'cvt' needs a type such "
			"as 'f32' or 'bf16'");
		return sg_err(g);
	}
	SirVal *v = sg_val(g, x);
	if (v->ty == TY_FRAG && (v->ety == TY_I32 || v->ety == TY_BOOL)) {
		if (v->ety == TY_BOOL || (t.i != TY_F32 && t.i != TY_I32)) {
			diag_error(g->ctx, n->span, "a register tile of '%s' "
				"converts to 'f32'%s", ty_name(v->ety),
				v->ety == TY_BOOL ? " with 'select(p, 1.0, 0.0)', "
				"not 'cvt'" : "");
			return sg_err(g);
		}
		Ref r = sg_unop(g, SOP_cvt, x, TY_FRAG, n->span);
		sg_val(g, r)->ety = (Ty)t.i;
		return r;
	}
	if (v->ty == TY_FRAG) {
		if (t.i != TY_BF16 && t.i != TY_F16 && t.i != TY_F32) {
			diag_error(g->ctx, n->span, "a register tile converts to "
				"'f32', 'bf16' or 'f16'");
			return sg_err(g);
		}
		Ref r = sg_unop(g, SOP_cvt, x, TY_FRAG, n->span);
		sg_val(g, r)->ety = (Ty)t.i;
		return r;
	}
	if (v->isconst && ty_isint((Ty)t.i) && ty_isint(v->ty))
		return sg_const_i(g, v->ci, (Ty)t.i, n->span);
	if ((Ty)t.i == TY_BF16 || (Ty)t.i == TY_F16) {
		diag_error(g->ctx, n->span, "scalars convert to 'i32', 'u32', "
			"'i64', 'u64' or 'f32'");
		return sg_err(g);
	}
	return sg_unop(g, SOP_cvt, x, (Ty)t.i, n->span);
}

static Ref
math1(G *g, const Node *n, SirOp op)
{
	Ref x;

	if (!nargs(g, n, sir_ops[op].name, 1, 1))
		return sg_err(g);
	x = sg_expr(g, n->kids.v[0]);
	SirVal *v = sg_val(g, x);
	if (v->ty == TY_ERR)
		return x;
	if (v->ty == TY_FRAG && v->ety == TY_F32)
		return sg_unop(g, op, x, TY_FRAG, n->span);
	if (v->ty == TY_F32 || v->isconst) {
		if (v->isconst && !ty_isfloat(v->ty) && v->ty != TY_F32)
			x = sg_const_f(g, (double)v->ci, n->span);
		return sg_unop(g, op, x, TY_F32, n->span);
	}
	diag_error(g->ctx, n->span, "'%s' needs f32 values, found '%s'",
		sir_ops[op].name, v->ty == TY_FRAG ? ty_name(v->ety) :
		ty_name(v->ty));
	return sg_err(g);
}

static Ref
minmax_cdiv(G *g, const Node *n, const char *f)
{
	Ref a, b;

	if (!nargs(g, n, f, 2, 2))
		return sg_err(g);
	a = sg_expr(g, n->kids.v[0]);
	b = sg_expr(g, n->kids.v[1]);
	if (sg_val(g, a)->ty == TY_ERR || sg_val(g, b)->ty == TY_ERR)
		return sg_err(g);
	if (sg_val(g, a)->ty == TY_FRAG || sg_val(g, b)->ty == TY_FRAG)
		return sg_frag_binary(g, n, f[1] == 'i' ? SOP_min : SOP_max, a, b);
	Ty t = sg_unify(g, n, a, b);
	if (t == TY_ERR)
		return sg_err(g);
	a = sg_coerce(g, a, t, n->kids.v[0]->span);
	b = sg_coerce(g, b, t, n->kids.v[1]->span);
	if (f[0] == 'c') {  /* cdiv(a, b) = (a + b - 1) / b */
		if (!ty_isint(t)) {
			diag_error(g->ctx, n->span, "'cdiv' needs integers");
			return sg_err(g);
		}
		Node add = {.kind = N_BINARY, .op = '+', .span = n->span};
		Node sub = {.kind = N_BINARY, .op = '-', .span = n->span};
		Node dv = {.kind = N_BINARY, .op = '/', .span = n->span};
		if (sg_val(g, a)->isconst && sg_val(g, b)->isconst) {
			Ref s = sg_fold(g, &add, a, b);
			Ref s1 = sg_fold(g, &sub, s, sg_const_i(g, 1, t, n->span));
			return sg_fold(g, &dv, s1, b);
		}
		Ref r1 = sir_val(g->ctx, g->p, t, NULL), r2, r3;
		SirIns *i = sg_emit(g, SOP_add, n->span);
		i->dst = r1, i->a[0] = a, i->a[1] = b, i->na = 2;
		Ref one1 = sg_const_i(g, 1, t, n->span);  /* before the sub */
		r2 = sir_val(g->ctx, g->p, t, NULL);
		i = sg_emit(g, SOP_sub, n->span);
		i->dst = r2, i->a[0] = r1, i->a[1] = one1, i->na = 2;
		r3 = sir_val(g->ctx, g->p, t, NULL);
		i = sg_emit(g, SOP_div, n->span);
		i->dst = r3, i->a[0] = r2, i->a[1] = b, i->na = 2;
		return r3;
	}
	Ref r = sir_val(g->ctx, g->p, t, NULL);
	SirIns *i = sg_emit(g, f[1] == 'i' ? SOP_min : SOP_max, n->span);
	i->dst = r, i->a[0] = a, i->a[1] = b, i->na = 2;
	return r;
}

/* mask_cols(x, limit): columns >= limit become -inf.
 * mask_below(x, row0, col0): element (r, c) becomes -inf when
 * col0 + c < row0 + r (a sliding window's left edge).
 * mask_causal(x, row0, col0): element (r, c) becomes -inf when
 * col0 + c > row0 + r.  mask_below and mask_causal take a fourth
 * argument, P (a constant, default 1): P consecutive rows share one
 * position, row0 + r / P in place of row0 + r (packed GQA: the rows of
 * a tile are PACK query heads at each position). */
static Ref
mask(G *g, const Node *n, SirOp op)
{
	int na = op == SOP_mask_cols ? 2 : 3;
	int64_t per = 1;
	Ref a[3];

	if (!nargs(g, n, sir_ops[op].name, na, op == SOP_mask_cols ? na : 4))
		return sg_err(g);
	if (n->kids.n == 4 && !sg_const_arg(g, n->kids.v[3], "the rows per "
	    "position", 1, 64, &per))
		return sg_err(g);
	for (int k = 0; k < na; k++)
		a[k] = sg_expr(g, n->kids.v[k]);
	if (sg_val(g, a[0])->ty != TY_FRAG || sg_val(g, a[0])->lay->kind == LK_ROWS) {
		diag_error(g->ctx, n->kids.v[0]->span, "'%s' masks a register "
			"tile", sir_ops[op].name);
		return sg_err(g);
	}
	if (sg_val(g, a[0])->ety != TY_F32) {
		diag_error(g->ctx, n->kids.v[0]->span, "'%s' masks f32 tiles; "
			"this one holds '%s'", sir_ops[op].name,
			ty_name(sg_val(g, a[0])->ety));
		return sg_err(g);
	}
	for (int k = 1; k < na; k++)
		if (!ty_isint(sg_val(g, a[k])->ty)) {
			diag_error(g->ctx, n->kids.v[k]->span, "'%s' needs an "
				"integer here", sir_ops[op].name);
			return sg_err(g);
		}
	Ref r = sir_val(g->ctx, g->p, TY_FRAG, NULL);
	sg_frag_like(g, r, sg_val(g, a[0]));
	SirIns *i = sg_emit(g, op, n->span);
	i->dst = r;
	memcpy(i->a, a, sizeof a);
	i->na = na;
	i->imm = per;  /* rows per position; 1 (or 0) is one each */
	return r;
}

/* all_eq(x, v): whether every element of the f32 tile x that the lanes
 * of a warp hold equals v.  A warp vote: the same in the lanes of a warp,
 * not across the warps of a partition. */
static Ref
all_eq(G *g, const Node *n)
{
	Ref x, v;

	if (!nargs(g, n, "all_eq", 2, 2))
		return sg_err(g);
	if (g->in_elect) {
		diag_error(g->ctx, n->span, "'all_eq' is a vote of the whole "
			"warp; it cannot be inside 'elect'");
		return sg_err(g);
	}
	x = sg_expr(g, n->kids.v[0]);
	v = sg_expr(g, n->kids.v[1]);
	const SirVal *xv = sg_val(g, x), *vv = sg_val(g, v);
	if (xv->ty == TY_ERR || vv->ty == TY_ERR)
		return sg_err(g);
	if (xv->ty != TY_FRAG || xv->ety != TY_F32) {
		diag_error(g->ctx, n->kids.v[0]->span, "'all_eq' compares the "
			"elements of an f32 register tile, found %s '%s'",
			xv->ty == TY_FRAG ? "a tile of" : "a scalar",
			ty_name(xv->ty == TY_FRAG ? xv->ety : xv->ty));
		return sg_err(g);
	}
	if (vv->isconst && ty_isint(vv->ty))
		v = sg_const_f(g, (double)vv->ci, n->kids.v[1]->span);
	else if (vv->ty != TY_F32) {
		diag_error(g->ctx, n->kids.v[1]->span, "'all_eq' compares with "
			"an f32 scalar, found '%s'", vv->ty == TY_FRAG ?
			"a register tile" : ty_name(vv->ty));
		return sg_err(g);
	}
	Ref r = sir_val(g->ctx, g->p, TY_BOOL, NULL);
	SirIns *i = sg_emit(g, SOP_all_eq, n->span);
	i->dst = r;
	i->a[0] = x;
	i->a[1] = v;
	i->na = 2;
	return r;
}

/* exp2(x [, poly=N]): N of every 8 elements of a thread's f32 tile are
 * computed with an FMA polynomial instead of the MUFU (ptx/frag.c). */
static Ref
exp2_call(G *g, const Node *n)
{
	Node one = *n;
	int64_t poly = 0;

	if (n->kids.n == 2 && n->kids.v[1]->kind == N_NAMEDARG) {
		const Node *a = n->kids.v[1];
		Ref c = strcmp(a->name, "poly") ? 0 : sg_expr(g, a->a);
		if (!c || !sg_const_int(g, c, &poly) || poly < 0 || poly > 8) {
			diag_error(g->ctx, a->span, "'exp2' takes one named "
				"argument, 'poly=N' with N a constant in 0..8 "
				"(of every 8 elements of a tile, how many a "
				"polynomial computes)");
			return sg_err(g);
		}
		one.kids.n = 1;
	}
	for (int k = 0; k < one.kids.n; k++)
		if (one.kids.v[k]->kind == N_NAMEDARG) {
			diag_error(g->ctx, one.kids.v[k]->span, "'exp2' takes "
				"'poly=N' after its operand, and no other named "
				"argument");
			return sg_err(g);
		}
	Ref r = math1(g, &one, SOP_exp2);
	if (poly && sg_val(g, r)->ty != TY_ERR) {
		if (sg_val(g, r)->ty != TY_FRAG) {
			diag_error(g->ctx, n->kids.v[1]->span, "'poly' applies "
				"to a register tile; a scalar exp2 always uses "
				"the MUFU");
			return sg_err(g);
		}
		g->cur->v[g->cur->n - 1].imm = poly;
	}
	return r;
}

/* Whether inlining one more mod stays within the expansion budget
 * (sirgen.h): mods that call others twice double at each level. */
static bool
mod_budget(G *g, const Node *n, const Res *m)
{
	Expand *x = g->exp;

	if (x->blown)
		return false;
	if (x->stmts + x->vals + g->p->nvals <= MAXEXPAND)
		return true;
	x->blown = true;
	diag_error(g->ctx, n->span, "inlining mod '%s' takes the kernel past "
		"%d statements and values (the expansion limit)", m->name,
		MAXEXPAND);
	return false;
}

/* "'a' calls itself (through 'b', 'c')": the chain from m's active call
 * to the body calling it now, in the order of the calls. */
static bool
mod_cycle(G *g, const Node *n, const Res *m)
{
	const ModCall *c = g->calls;
	int len = 0;

	for (; c && c->m != m; c = c->up)
		len++;
	if (!c)
		return false;
	if (!len) {
		diag_error(g->ctx, n->span, "mod '%s' calls itself", m->name);
		return true;
	}
	const char **via = NEWARR(&g->ctx->scratch, const char *, len);
	for (c = g->calls; c->m != m; c = c->up)
		via[--len] = c->m->name;
	Buf b;
	buf_init(&b, &g->ctx->scratch);
	for (c = g->calls; c->m != m; c = c->up, len++)
		buf_printf(&b, "%s'%s'", len ? ", " : "", via[len]);
	diag_error(g->ctx, n->span, "mod '%s' calls itself (through %s)",
		m->name, b.p);
	return true;
}

/* NAME(a1, ..., an), NAME a mod: each argument is evaluated here, once,
 * and bound to its parameter; then the body is lowered in a scope of its
 * own, which holds the parameters and nothing of the call site's (its
 * 'let', 'var' and loop names stay hidden: hygiene), so that names in the
 * body mean the parameters or the kernel's declarations wherever it is
 * called.  An argument that is a constant leaves no code here: each use
 * in the body is that constant, as if written there, so a call and its
 * body written out give the same code.  An error in the body gets a note
 * at this call. */
/* Whether m may be inlined at call n with nargs arguments: the count,
 * no cycle, the expansion budget; each failure is reported. */
bool
sg_mod_check(G *g, const Node *n, const Res *m, int nargs)
{
	const Node *d = m->decl;

	if (nargs != d->kids.n) {
		diag_error(g->ctx, n->span, "mod '%s' takes %d argument%s, "
			"found %d", m->name, d->kids.n, d->kids.n == 1 ? "" :
			"s", nargs);
		diag_note(g->ctx, d->nspan, "'%s' declared here", m->name);
		return false;
	}
	return !mod_cycle(g, n, m) && mod_budget(g, n, m);
}

/* Enter m's body: a scope of its own, holding nothing of the call
 * site's (hygiene); the caller binds the parameters next. */
void
sg_mod_enter(G *g, ModScope *ms, const Res *m)
{
	ms->scope = g->scope;
	ms->names = g->names;
	ms->call = (ModCall){m, g->calls};
	ms->mark = g->ctx->dlast;
	g->scope = NULL;
	g->names = (NameMap){0};
	g->calls = &ms->call;
}

/* Back at the call site n: an error in the body gets a note there
 * (dmod: the derivative's). */
void
sg_mod_leave(G *g, ModScope *ms, const Node *n, bool dmod)
{
	g->calls = ms->call.up;
	g->scope = ms->scope;
	g->names = ms->names;
	diag_note_since(g->ctx, ms->mark, n->span, dmod ? "in 'dmod' of mod "
		"'%s' here" : "in mod '%s' called here", ms->call.m->name);
}

/* NAME(a1, ..., an), NAME a mod: each argument is evaluated here, once,
 * and bound to its parameter; then the body is lowered in a scope of its
 * own (sg_mod_enter), so that names in the body mean the parameters or
 * the kernel's declarations wherever it is called.  An argument that is
 * a constant leaves no code here: each use in the body is that constant,
 * as if written there, so a call and its body written out give the same
 * code. */
Ref
sg_mod_call(G *g, const Node *n, const Res *m)
{
	const Node *d = m->decl;
	Ref args[MAXMODPARAMS];
	bool subst[MAXMODPARAMS];
	ModScope ms;

	if (!sg_mod_check(g, n, m, n->kids.n))
		return sg_err(g);
	for (int k = 0; k < n->kids.n; k++) {
		int mark = g->cur->n;
		const SirVal *v = sg_val(g, args[k] = sg_expr(g,
			n->kids.v[k]));
		if (v->ty == TY_ERR)
			return args[k];
		subst[k] = v->isconst && (v->ty == TY_F32 || v->ty == TY_BOOL ||
			ty_isint(v->ty));
		for (int i = mark; subst[k] && i < g->cur->n; i++)
			subst[k] = g->cur->v[i].op == SOP_const_i ||
				g->cur->v[i].op == SOP_const_f;
		if (subst[k])  /* only constants were emitted: drop them */
			g->cur->n = mark;
	}
	sg_mod_enter(g, &ms, m);
	for (int k = 0; k < n->kids.n; k++) {
		sg_bind(g, d->kids.v[k]->name, args[k], d->kids.v[k]->span);
		g->scope->subst = subst[k];
	}
	Ref r = sg_expr(g, d->d);
	sg_mod_leave(g, &ms, n, false);
	return r;
}

Ref
sg_call(G *g, const Node *n)
{
	const char *f = n->a->kind == N_NAME ? n->a->name : "";
	const Res *m = *f ? kernel_find(g->k, f) : NULL;

	if (!strcmp(f, "exp2"))
		return exp2_call(g, n);
	if (!strcmp(f, "rowmax") || !strcmp(f, "rowsum"))
		return reduce(g, n, f[3] == 'm' ? SOP_rowmax : SOP_rowsum);
	for (int k = 0; k < n->kids.n; k++)
		if (n->kids.v[k]->kind == N_NAMEDARG) {
			diag_error(g->ctx, n->kids.v[k]->span, "'%s' takes no "
				"named arguments", f);
			return sg_err(g);
		}
	if (m && m->kind == R_MOD)
		return sg_mod_call(g, n, m);
	if (!strcmp(f, "dmod"))
		return sg_dmod(g, n);
	if (!strcmp(f, "dscatter")) {
		diag_error(g->ctx, n->span, "'dscatter' is a statement: it adds "
			"into gradients and has no value");
		return sg_err(g);
	}
	if (!builtin_known(f)) {
		Suggest sg;
		diag_suggest_init(&sg, f);
		for (const char *const *p = builtin_names; *p; p++)
			diag_suggest_add(&sg, *p);
		for (const Res *r = g->k->res; r; r = r->next)
			if (r->kind == R_MOD)
				diag_suggest_add(&sg, r->name);
		if (sg.best)
			diag_error(g->ctx, n->a->span, "unknown function '%s'; "
				"did you mean '%s'?", f, sg.best);
		else
			diag_error(g->ctx, n->a->span, "unknown function '%s'",
				f);
		return sg_err(g);
	}
	Ref t = sg_tile_call(g, n, f);  /* rowid colid select abs */
	if (t)
		return t;
	if (!strcmp(f, "rowmax"))
		return reduce(g, n, SOP_rowmax);
	if (!strcmp(f, "rowsum"))
		return reduce(g, n, SOP_rowsum);
	if (!strcmp(f, "colsum"))
		return colsum(g, n);
	if (!strcmp(f, "convert"))
		return sg_convert(g, n);
	if (!strcmp(f, "cvt"))
		return sg_cvt(g, n);
	if (!strcmp(f, "exp2"))
		return math1(g, n, SOP_exp2);
	if (!strcmp(f, "log2"))
		return math1(g, n, SOP_log2);
	if (!strcmp(f, "rcp"))
		return math1(g, n, SOP_rcp);
	if (!strcmp(f, "tanh"))
		return math1(g, n, SOP_tanh);
	if (!strcmp(f, "sqrt"))
		return math1(g, n, SOP_sqrt);
	if (!strcmp(f, "rsqrt"))
		return math1(g, n, SOP_rsqrt);
	if (!strcmp(f, "min") || !strcmp(f, "max") || !strcmp(f, "cdiv"))
		return minmax_cdiv(g, n, f);
	if (!strcmp(f, "mask_cols"))
		return mask(g, n, SOP_mask_cols);
	if (!strcmp(f, "all_eq"))
		return all_eq(g, n);
	if (!strcmp(f, "mask_causal"))
		return mask(g, n, SOP_mask_causal);
	if (!strcmp(f, "mask_below"))
		return mask(g, n, SOP_mask_below);
	if (!strcmp(f, "sizeof")) {
		Val v;
		if (!const_eval(g->ctx, g->k, n, &v))
			return sg_err(g);
		return sg_const_i(g, v.i, TY_I32, n->span);
	}
	fg_bug("built-in function '%s' is not lowered", f);
}
