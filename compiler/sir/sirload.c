/* sirload.c: reading global tensors as values: one element,
 * 'G[i, ...]' with scalar indices (the gload op), or a gather, the same
 * with i32 register tiles among the indices (issue #22): a tile of their
 * layout and shape whose element (r, c) is G at the indices' elements
 * (r, c), 0 where an index is outside its dimension.  And the rule that
 * makes such reads sound: a kernel never both loads and writes a global.
 * Nothing in the language orders a write to global memory (a 'store' or
 * a 'tma_store') before another thread's load of it: no barrier or fence
 * of the language covers global memory, within a CTA or across CTAs.  So
 * a global a kernel loads is an input for its whole life, and the loads
 * take the read-only path (ld.global.nc).
 * Requires: a Kernel from sema.  Ensures: gload instructions with a
 * scalar result (f32 for f32, bf16 and f16 elements, else the integer
 * element type) from a linear index, or with a tile result (f32 or i32)
 * from a linear index tile and an in-bounds predicate tile; or
 * diagnostics.  Also what each tile's registers depend on
 * (sir_elem_deps), for the lowering and the register estimate of
 * gathers. */
#include <string.h>

#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"
#include "sir/sirgen.h"

/* Index k of a load (ix[0..k] lowered, d the N_INDEX) may join a gather:
 * a tile index is an i32 tile, 2-D, of the layout and shape of the
 * earlier tile indices; once a tile is among them, every scalar index
 * is an i32 (or a constant).  False after a diagnostic (or on an error
 * value). */
bool
sg_gather_index(G *g, const Node *d, int k, const Ref *ix)
{
	const SirVal *v = sg_val(g, ix[k]), *first = NULL;
	const Node *e = d->kids.v[k];
	int kt = -1;

	if (v->ty == TY_ERR)
		return false;
	for (int j = 0; j < k && kt < 0; j++)
		if (sg_val(g, ix[j])->ty == TY_FRAG)
			kt = j, first = sg_val(g, ix[j]);
	if (v->ty != TY_FRAG) {
		sg_int_check(g, e, ix[k], "an index");
		if (!ty_isint(v->ty) && !(v->ty == TY_BOOL && v->isconst))
			return false;
		if (first && v->ty != TY_I32 && !v->isconst) {
			diag_error(g->ctx, e->span, "an index beside a register "
				"tile must be 'i32', found '%s'", ty_name(v->ty));
			return false;
		}
		return true;
	}
	if (v->ety != TY_I32 || v->lay->kind == LK_ROWS) {
		diag_error(g->ctx, e->span, "an index must be 'i32' or a "
			"register tile of 'i32', found %s%s%s",
			v->lay->kind == LK_ROWS ? "a row vector" : "a tile of '",
			v->lay->kind == LK_ROWS ? "" : ty_name(v->ety),
			v->lay->kind == LK_ROWS ? "" : "'");
		return false;
	}
	if (first && (!sg_same_layout(first->lay, v->lay) ||
	    first->m != v->m || first->n != v->n)) {
		diag_error(g->ctx, e->span, "the index tiles of a gather have "
			"one layout and shape: this is '%s' [%d,%d], index %d "
			"'%s' [%d,%d]", sg_layname(v->lay), v->m, v->n, kt,
			sg_layname(first->lay), first->m, first->n);
		return false;
	}
	for (int j = 0; j < k && !first; j++) {
		const SirVal *s = sg_val(g, ix[j]);
		if (s->ty != TY_I32 && !s->isconst) {
			diag_error(g->ctx, d->kids.v[j]->span, "an index beside "
				"a register tile must be 'i32', found '%s'",
				ty_name(s->ty));
			return false;
		}
	}
	return true;
}

/* The in-bounds predicate of a gather: every index i_k in [0, d_k), as a
 * bool tile; the scalar indices' part is computed once, as a scalar. */
static Ref
in_bounds(G *g, const Node *d, const Res *r, const Ref *ix)
{
	Ref tok = 0, sok = 0;

	for (int pass = 0; pass < 2; pass++)
		for (int k = 0; k < r->rank; k++) {
			bool tile = sg_val(g, ix[k])->ty == TY_FRAG;
			if (tile != (pass == 1))
				continue;
			Span sp = d->kids.v[k]->span;
			Node o = {.span = sp};
			Node ge = {.kind = N_BINARY, .op = B_GE, .span = sp,
				.a = &o, .b = &o};
			Node lt = {.kind = N_BINARY, .op = '<', .span = sp,
				.a = &o, .b = &o};
			Node and = {.kind = N_BINARY, .op = B_ANDAND, .span = sp,
				.a = &o, .b = &o};
			Ref lo = sg_binop(g, &ge, ix[k], sg_const_i(g, 0, TY_I32,
				sp));
			Ref hi = sg_binop(g, &lt, ix[k], sg_expr(g, r->dims[k]));
			Ref ok = sg_binop(g, &and, lo, hi);
			Ref *acc = tile ? &tok : &sok;
			*acc = *acc ? sg_binop(g, &and, *acc, ok) : ok;
		}
	const SirVal *s = sok ? sg_val(g, sok) : NULL;
	if (s && s->isconst && s->ci)  /* constant indices in bounds */
		return tok;
	Node o = {.span = d->span};
	Node and = {.kind = N_BINARY, .op = B_ANDAND, .span = d->span,
		.a = &o, .b = &o};
	return s ? sg_binop(g, &and, tok, sok) : tok;
}

/* G[i0, ...] with tile indices (ix, lin their linear index): a gather,
 * f32 from f32, bf16 and f16 elements, i32 from i32 ones. */
static Ref
gather(G *g, const Node *n, Res *r, const Ref *ix, Ref lin)
{
	if (r->ety != TY_F32 && r->ety != TY_BF16 && r->ety != TY_F16 &&
	    r->ety != TY_I32) {
		diag_error(g->ctx, n->span, "a gather loads 'f32', 'bf16', "
			"'f16' or 'i32' elements into a register tile; '%s' "
			"holds '%s'", r->name, ty_name(r->ety));
		diag_note(g->ctx, r->nspan, "'%s' declared here", r->name);
		return sg_err(g);
	}
	Ref ok = in_bounds(g, n, r, ix);
	if (sg_val(g, ok)->ty == TY_ERR)
		return ok;
	const SirVal lv = *sg_val(g, lin);  /* sir_val may move the table */
	Ref d = sir_val(g->ctx, g->p, TY_FRAG, NULL);
	sg_frag_like(g, d, &lv);
	sg_val(g, d)->ety = r->ety == TY_I32 ? TY_I32 : TY_F32;
	SirIns *i = sg_emit(g, SOP_gload, n->span);
	r->direct = true;
	i->dst = d;
	i->a[0] = lin;
	i->a[1] = ok;
	i->na = 2;
	i->r[0] = r;
	return d;
}

/* store G[i0, ...], v [reduce=add] with tile indices (ix, lin their
 * linear index; n the store): a scatter.  v is a tile of the indices'
 * layout and shape, or a row vector that fits it (broadcast across
 * columns, as in arithmetic): element (r, c) goes to G at the indices'
 * (r, c), where they are all in bounds; f32 into f32, bf16 and f16
 * elements (rounded), i32 into i32; reduce=add adds f32 into f32. */
void
sg_scatter(G *g, const Node *n, Res *r, const Ref *ix, Ref lin)
{
	const Node *d = n->kids.v[0], *ve = n->kids.v[1];
	const Node *red = sg_opattr(g, n, "reduce", false);

	for (int k = 0; k < n->attrs.n; k++)
		if (strcmp(n->attrs.v[k]->name, "reduce")) {
			diag_error(g->ctx, n->attrs.v[k]->span, "'%s' does not "
				"apply to a scatter (a store whose indices are "
				"tiles): it stores where they say and skips the "
				"elements out of bounds", n->attrs.v[k]->name);
			return;
		}
	if (red && (!red->a || red->a->kind != N_NAME ||
	    strcmp(red->a->name, "add"))) {
		if (red->a)
			diag_error(g->ctx, red->span, "'reduce' takes 'add' (an "
				"atomic add of each element into global memory)");
		return;
	}
	Ref v = sg_expr(g, ve);
	const SirVal *sv = sg_val(g, v), *lv = sg_val(g, lin);
	if (sv->ty == TY_ERR)
		return;
	if (sv->ty != TY_FRAG) {
		diag_error(g->ctx, ve->span, "a scatter (a store whose indices "
			"are tiles) stores a register tile or row vector, not "
			"'%s'", ty_name(sv->ty));
		return;
	}
	bool rowvec = sv->lay->kind == LK_ROWS;
	if (rowvec ? !sg_rows_fit(sv->lay, lv->lay) : !sg_same_layout(sv->lay,
	    lv->lay) || sv->m != lv->m || sv->n != lv->n) {
		diag_error(g->ctx, ve->span, "the value of a scatter has the "
			"layout and shape of its index tiles ('%s' [%d,%d]) or "
			"is a row vector that fits them; this is '%s' [%d,%d]",
			sg_layname(lv->lay), lv->m, lv->n, sg_layname(sv->lay),
			sv->m, sv->n);
		return;
	}
	Ty want = r->ety == TY_I32 ? TY_I32 : TY_F32;
	if ((r->ety != TY_F32 && r->ety != TY_BF16 && r->ety != TY_F16 &&
	    r->ety != TY_I32) || sv->ety != want) {
		diag_error(g->ctx, ve->span, "a scatter stores 'f32' tiles into "
			"'f32', 'bf16' or 'f16' elements and 'i32' tiles into "
			"'i32'; '%s' holds '%s' and the value is '%s'", r->name,
			ty_name(r->ety), ty_name(sv->ety));
		diag_note(g->ctx, r->nspan, "'%s' declared here", r->name);
		return;
	}
	if (red && r->ety != TY_F32) {
		diag_error(g->ctx, red->span, "'reduce=add' adds into 'f32' "
			"elements; '%s' holds '%s'", r->name, ty_name(r->ety));
		return;
	}
	if (!rowvec && sv->ety == TY_F32)
		v = sg_tile_stored(g, ve, v);
	Ref ok = in_bounds(g, d, r, ix);
	if (sg_val(g, v)->ty == TY_ERR || sg_val(g, ok)->ty == TY_ERR)
		return;
	SirIns *i = sg_emit(g, SOP_gscatter, n->span);
	r->direct = true;
	i->a[0] = lin;
	i->a[1] = v;
	i->a[2] = ok;
	i->na = 3;
	i->imm = red != NULL;  /* 1: reduce=add (red.global.add) */
	i->r[0] = r;
}

/* G[i0, ...], G a global with 'grad=DG', read in a dscatter pass: a
 * gather (tile indices), whose value it gives, with DG's linear index
 * and in-bounds tiles at the same indices in *dlin, *dok (by DG's own
 * dimensions).  An error for scalar indices: only a gather has a
 * gradient tile to scatter. */
Ref
sg_gload_grad(G *g, const Node *n, Ref *dlin, Ref *dok)
{
	Res *r = kernel_find(g->k, n->a->name);
	const Res *dg = r->grad;
	Ref *ix = NEWARR(&g->ctx->scratch, Ref, (size_t)n->kids.n + 1);
	Ref lin = sg_lin_index_ix(g, n, r, ix);

	if (!lin)
		return sg_err(g);
	if (sg_val(g, lin)->ty != TY_FRAG) {
		diag_error(g->ctx, n->span, "'dscatter': '%s' has a gradient "
			"('grad=%s') but this load's indices are scalars; only a "
			"gather (i32 tile indices) gives a gradient tile to add",
			r->name, dg->name);
		return sg_err(g);
	}
	if (dg->strided) {
		diag_error(g->ctx, n->span, "'dscatter' adds into '%s' as a "
			"dense tensor; declare it without 'strided'", dg->name);
		return sg_err(g);
	}
	Node o = {.span = n->span};
	Node mul = {.kind = N_BINARY, .op = '*', .span = n->span, .a = &o,
		.b = &o};
	Node add = {.kind = N_BINARY, .op = '+', .span = n->span, .a = &o,
		.b = &o};
	*dlin = ix[0];
	for (int k = 1; k < dg->rank; k++)
		*dlin = sg_binop(g, &add, sg_binop(g, &mul, *dlin,
			sg_expr(g, dg->dims[k])), ix[k]);
	*dok = in_bounds(g, n, dg, ix);
	return gather(g, n, r, ix, lin);
}

/* n: N_INDEX, a name and one index per dimension; a gather when one
 * of them is a register tile. */
Ref
sg_gload(G *g, const Node *n)
{
	Res *r = n->a->kind == N_NAME ? kernel_find(g->k, n->a->name) : NULL;
	Ref lin;

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
	Ref *ix = NEWARR(&g->ctx->scratch, Ref, (size_t)n->kids.n + 1);
	if (!(lin = sg_lin_index_ix(g, n, r, ix)))
		return sg_err(g);
	if (sg_val(g, lin)->ty == TY_FRAG)
		return gather(g, n, r, ix, lin);
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
	if (in->op == SOP_gstore || in->op == SOP_gscatter)
		return in->r[0];
	if (in->op == SOP_tma_store)  /* r[0]: the view */
		return in->r[0]->of;
	return NULL;
}

/* What the registers of tile value v, defined by in, depend on besides
 * scalars, from its operands' (dep). */
static int
dep_of(const SirPart *sp, const SirIns *in, const SirVal *v, const int *dep)
{
	int d = 0;

	if (v->mut || v->lay->kind == LK_ROWS || ty_bytes(v->ety) == 2)
		return SD_ANY;
	switch (in->op) {
	case SOP_rowid:
		return SD_ROW;
	case SOP_colid:
		return SD_COL;
	case SOP_add: case SOP_sub: case SOP_mul: case SOP_div: case SOP_rem:
	case SOP_min: case SOP_max: case SOP_neg: case SOP_abs: case SOP_eq: case SOP_ne: case SOP_lt:
	case SOP_le: case SOP_gt: case SOP_ge: case SOP_and: case SOP_or:
	case SOP_not: case SOP_select: case SOP_fill: case SOP_gload:
		for (int k = 0; k < in->na; k++)
			if (sp->vals[in->a[k]].ty == TY_FRAG)
				d |= dep[in->a[k]];
		return d;
	default:
		return SD_ANY;
	}
}

static void
dep_walk(const SirPart *sp, const SirBlock *b, int *dep)
{
	for (int i = 0; b && i < b->n; i++) {
		const SirIns *in = &b->v[i];
		/* no value: sp->vals may be NULL, where &vals[0] is UB */
		const SirVal *v = in->dst ? &sp->vals[in->dst] : NULL;
		if (v && v->ty == TY_FRAG)
			dep[in->dst] |= dep_of(sp, in, v, dep);
		dep_walk(sp, in->body, dep);
		dep_walk(sp, in->els, dep);
	}
}

/* For every value of sp, what its registers depend on besides scalars
 * (issue #22): SD_ROW (rowid), SD_COL (colid), both, or SD_ANY
 * (anything else: a tile assigned more than once, an operation that is
 * not elementwise, a row vector, 16-bit registers that pack two
 * elements); 0 for scalars.  One walk in program order, where every
 * value but a 'reg' or 'var' is defined once, before its uses.  With
 * SD_ROW alone (SD_COL alone, none), a thread's registers of one row
 * (column, all) hold one value: a gather loads once per row (column),
 * ptx/ptxtile.c, and what is computed from it repeats too. */
int *
sir_elem_deps(Ctx *ctx, const SirPart *sp)
{
	int *dep = NEWARR(&ctx->scratch, int, (size_t)sp->nvals + 1);

	for (uint32_t r = 1; r < sp->nvals; r++)
		if (sp->vals[r].ty == TY_FRAG && sp->vals[r].mut)
			dep[r] = SD_ANY;
	dep_walk(sp, &sp->body, dep);
	return dep;
}

/* The registers per thread that tile v takes (size: one per element)
 * when its registers depend on d (sir_elem_deps): one per row or column
 * the thread holds for SD_ROW or SD_COL alone (2 rows and n/4 columns of
 * a wgmma_acc tile, 1 row and n columns of a tmem_rows one), else size. */
int
sir_elem_regs(const SirVal *v, int d, int size)
{
	bool acc = v->lay->kind == LK_WGMMA_ACC;
	int n = size;

	if (d == 0)
		n = 1;
	else if (d == SD_ROW)
		n = acc ? 2 : 1;
	else if (d == SD_COL)
		n = acc ? v->n / 4 : v->n;
	return n < size ? n : size;
}

/* The global an instruction reads other than as a semaphore, or NULL. */
static const Res *
read_of(const SirIns *in)
{
	if (in->op == SOP_gload || in->op == SOP_gtload || in->op ==
	    SOP_cp_async || in->op == SOP_bulk_load)
		return in->r[0];
	if (in->op == SOP_tma_load)
		return in->r[0]->of;
	return NULL;
}

/* The first load (ld or ld.global.nc), the first write, the first
 * other access (sm[n + i]: those and TMA and cp.async reads) and the
 * first semaphore operation (sm[i]) of each global, by Res index. */
static void
scan(const SirBlock *b, const SirIns **ld, const SirIns **wr,
	const SirIns **sm, int n)
{
	for (int i = 0; i < b->n; i++) {
		const SirIns *in = &b->v[i];
		const Res *w = written(in), *l = read_of(in);
		if ((in->op == SOP_gload || in->op == SOP_gtload) &&
		    in->r[0]->index < n && !ld[in->r[0]->index])
			ld[in->r[0]->index] = in;
		if (w && w->index < n && !wr[w->index])
			wr[w->index] = in;
		if (!l)
			l = w;
		if (l && l->index < n && !sm[n + l->index])
			sm[n + l->index] = in;
		if ((in->op == SOP_sem_wait || in->op == SOP_sem_add) &&
		    in->r[0]->index < n && !sm[in->r[0]->index])
			sm[in->r[0]->index] = in;
		if (in->body)
			scan(in->body, ld, wr, sm, n);
		if (in->els)
			scan(in->els, ld, wr, sm, n);
	}
}

void
sg_check_loads(Ctx *ctx, const SirMod *m)
{
	int n = m->k->nres[R_GLOBAL];
	const SirIns **ld = NEWARR(&ctx->scratch, const SirIns *, n + 1);
	const SirIns **wr = NEWARR(&ctx->scratch, const SirIns *, n + 1);
	const SirIns **sm = NEWARR(&ctx->scratch, const SirIns *, 2 * n + 1);

	for (int i = 0; i < m->nparts; i++)
		scan(&m->parts[i]->body, ld, wr, sm, n);
	for (const Res *r = m->k->res; r; r = r->next) {
		if (r->kind != R_GLOBAL || r->index >= n)
			continue;
		const SirIns *o = sm[n + r->index];
		if (sm[r->index] && o) {
			/* a counter read or written behind the semaphore's
			 * back: the verifier's model of the counts would not
			 * hold, nor would the ordering the acquire gives */
			diag_error(ctx, o->span, "'%s' is a semaphore ('sem_wait', "
				"'sem_add'): nothing else may read or write it",
				r->name);
			diag_note(ctx, sm[r->index]->span, "'%s' is a semaphore "
				"here", r->name);
			continue;
		}
		if (!ld[r->index] || !wr[r->index])
			continue;
		diag_error(ctx, ld[r->index]->span, "this kernel loads '%s' "
			"and also writes it: nothing orders a write to global "
			"memory before another thread's load, so a global the "
			"kernel loads must be read-only", r->name);
		diag_note(ctx, wr[r->index]->span, "'%s' is written here",
			r->name);
	}
}
