/* sirmem.c: the operations that move register tiles to and from memory:
 * tmem_load/tmem_store (tensor memory), smem_store/smem_load (shared
 * memory), store (scalars, row vectors and 2-D tiles to global memory,
 * reduce=add) and global_load (2-D tiles from global memory); sirops.c
 * dispatches to sg_op_mem and sg_op_gload. */
#include <string.h>

#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"
#include "sir/sirgen.h"

Ref
sg_frag_var(G *g, const Node *e, const char *what)
{
	Ref r = sg_expr(g, e);

	if (sg_val(g, r)->ty != TY_FRAG && sg_val(g, r)->ty != TY_ERR) {
		diag_error(g->ctx, e->span, "%s must be a register tile", what);
		return sg_err(g);
	}
	return sg_tile_stored(g, e, r);
}

/* A column slice of the memory side of a move: 'cols=(C, N)' (tmem_load,
 * tmem_store) or 'col=C' (smem_store), N the tile's width.  On success
 * *col0 is C and *cols the width of the memory the tile must match. */
static bool
slice(G *g, const Node *n, const char *name, int width, int64_t *col0,
	int64_t *cols)
{
	const Node *a = sg_opattr(g, n, name, false);
	int64_t w = width;

	if (!a || !a->a)
		return a == NULL;
	bool tmem = !strcmp(name, "cols");
	const Node *c = a->a;
	if (tmem && (c->kind != N_TUPLE || c->kids.n != 2)) {
		diag_error(g->ctx, a->span, "write 'cols=(C, N)': the first "
			"column and the number of columns");
		return false;
	}
	if (!sg_const_arg(g, tmem ? c->kids.v[0] : c, tmem ? "the first "
	    "column" : "'col'", 0, *cols - 1, col0) || (tmem &&
	    !sg_const_arg(g, c->kids.v[1], "the column count", 1, *cols, &w)))
		return false;
	if (*col0 + w > *cols) {
		diag_error(g->ctx, a->span, "columns %lld..%lld are past the "
			"%lld columns of the %s", (long long)*col0,
			(long long)(*col0 + w - 1), (long long)*cols, tmem ?
			"region" : "buffer");
		return false;
	}
	if (w != width) {
		diag_error(g->ctx, a->span, "the slice has %lld columns but the "
			"tile has %d", (long long)w, width);
		return false;
	}
	*cols = w;
	return true;
}

/* The rows of a 2-D tile moved to or from global r along dimension
 * rowdim ('rowdim=', rd; needed when r has more than 2 dimensions): the
 * row stride in elements, and the row limit ('limit=L', INT32_MAX
 * without one).  False after a diagnostic. */
static bool
tile_rows(G *g, const Node *n, const Res *r, int rowdim, const Node *rd,
	Ref *stride, Ref *lv)
{
	Node mul = {.kind = N_BINARY, .op = '*', .span = n->span};
	const Node *lim = sg_opattr(g, n, "limit", false);

	if (r->rank > 2 && !rd) {
		diag_error(g->ctx, n->span, "'%s' has %d dimensions: say which "
			"one the tile's rows run along with 'rowdim=K' (0 to "
			"%d; its columns run along the last)", r->name, r->rank,
			r->rank - 2);
		return false;
	}
	*stride = sg_const_i(g, 1, TY_I32, n->span);
	if (r->strided && rowdim < r->rank - 1)
		*stride = sg_gstride(g, r, rowdim, n->span);
	for (int k = rowdim + 1; !r->strided && k < r->rank; k++)
		*stride = sg_binop(g, &mul, *stride, sg_expr(g, r->dims[k]));
	*lv = lim && lim->a ? sg_int_arg(g, lim->a, "'limit'") :
		sg_const_i(g, INT32_MAX, TY_I32, n->span);
	return *lv && sg_val(g, *stride)->ty != TY_ERR;
}

/* 'width=W' of a blocked tile's (or column vector's) move to or from
 * global memory: columns >= W are not read (they read 0) or written.
 * *wv is INT32_MAX without one, 0 for a tile of another layout; false
 * after a diagnostic (also for 'width=' on a tile of another layout). */
static bool
width_of(G *g, const Node *n, const SirVal *v, Ref *wv)
{
	const Node *w = sg_opattr(g, n, "width", false);
	bool bl = v->lay && (v->lay->kind == LK_BLOCKED ||
		v->lay->kind == LK_COLS);
	/* the store of an MMA accumulator tile (wgmma_acc, mma_acc): its
	 * columns from W on are not written, W a runtime value */
	bool acc = w && n->op == OP_STORE && v->lay && v->lay->kind ==
		LK_WGMMA_ACC;

	*wv = 0;
	if (w && !bl && !acc) {
		diag_error(g->ctx, w->span, "'width' bounds the columns of a "
			"'blocked' tile, a column vector or a stored MMA "
			"accumulator; this is a tile of '%s'", sg_layname(v->lay));
		return false;
	}
	if (acc && w->a && sg_opattr(g, n, "reduce", false) && v->ety !=
	    TY_F32) {
		diag_error(g->ctx, w->span, "'width' with 'reduce=add' needs an "
			"f32 tile: a 16-bit pair at the edge would add half");
		return false;
	}
	if (!bl && !acc)
		return true;
	*wv = w && w->a ? sg_int_arg(g, w->a, "'width'") :
		sg_const_i(g, INT32_MAX, TY_I32, n->span);
	return *wv != 0;
}

/* store G[i0, ...], c [width=W] of a column vector: column j at the
 * indices with j added to the last one, each column by the thread that
 * holds it, so the layout may have one row group only (several would
 * each write their copy).  SIR: the blocked tile's gstore with a[0] the
 * linear index, a[1] the vector, a[5] the width (a[2..4] unused). */
static void
store_cols(G *g, const Node *n, Res *r, Ref lin, Ref v, const Node *red)
{
	const SirVal *sv = sg_val(g, v);
	const Layout *p = sv->lay->parent;
	Ref wv;

	if (red) {
		diag_error(g->ctx, red->span, "'reduce=add' adds a 2-D tile "
			"into global memory; this value is a column vector");
		return;
	}
	if (p->kind != LK_BLOCKED) {
		diag_error(g->ctx, n->kids.v[1]->span, "a column vector of an "
			"MMA accumulator is not stored: each of its columns is "
			"held by 32 threads of the warpgroup ('convert' it to a "
			"tile of '%s' and store a row of that)", sg_layname(p));
		return;
	}
	if (p->tpr != p->threads) {
		diag_error(g->ctx, n->kids.v[1]->span, "each of the %d row "
			"groups of '%s' holds every column of this vector, and "
			"would store its own copy: a column vector is stored from "
			"a layout of one row group, tpr equal to threads (here %d "
			"and %d)",
			p->threads / p->tpr, sg_layname(p), p->tpr, p->threads);
		return;
	}
	if (sv->ety != r->ety) {
		diag_error(g->ctx, n->kids.v[1]->span, "'%s' holds %s but the "
			"vector is %s; write 'cvt(%s, %s)'", r->name,
			ty_name(r->ety), ty_name(sv->ety), sg_text(g,
			n->kids.v[1]->span, "x"), ty_name(r->ety));
		return;
	}
	if (!width_of(g, n, sv, &wv))
		return;
	Ref one = sg_const_i(g, 1, TY_I32, n->span);
	SirIns *i = sg_emit(g, SOP_gstore, n->span);
	r->direct = true;
	i->a[0] = lin;
	i->a[1] = v;
	i->a[2] = i->a[3] = lin;
	i->a[4] = one;
	i->a[5] = wv;
	i->na = 6;
	i->r[0] = r;
}

/* store G[i0, ...], t [rowdim=K] [limit=L]: element (r, c) of a 2-D tile
 * goes to the indices given with r added to index K and c to the last;
 * rows whose index K is >= L are skipped; with width=W, columns >= W
 * too.  SIR: a[0] the linear index, a[1] the tile, a[2] the limit
 * (INT32_MAX without one), a[3] index K, a[4] the row stride in elements;
 * a blocked tile or width=, a[5] the width. */
static void
store_tile(G *g, const Node *n, Res *r, Ref lin, Ref rix, int rowdim,
	Ref v, const Node *rd)
{
	const SirVal *sv = sg_val(g, v);
	Ty vt = sv->ety;
	const Node *red = sg_opattr(g, n, "reduce", false);

	if (red && !red->a)
		return;
	if (sv->lay->kind == LK_COLS) {
		store_cols(g, n, r, lin, v, red);
		return;
	}
	if (red && (red->a->kind != N_NAME || strcmp(red->a->name, "add"))) {
		diag_error(g->ctx, red->span, "'reduce' takes 'add' (an atomic "
			"add of each element into global memory)");
		return;
	}
	if (sg_val(g, sg_tile_stored(g, n->kids.v[1], v))->ty == TY_ERR)
		return;
	/* new values may have moved the value table: sv again, and its
	 * layout (arena memory, which stays) before more are made */
	sv = sg_val(g, v);
	bool blocked = sv->lay->kind == LK_BLOCKED;
	if (vt != r->ety) {
		diag_error(g->ctx, n->kids.v[1]->span, "'%s' holds %s but the "
			"tile is %s; write 'cvt(%s, %s)'", r->name,
			ty_name(r->ety), ty_name(vt), sg_text(g,
			n->kids.v[1]->span, "x"), ty_name(r->ety));
		return;
	}
	if (r->rank < 2) {
		diag_error(g->ctx, n->kids.v[0]->span, "a 2-D tile goes to a "
			"global of 2 or more dimensions; '%s' has %d", r->name,
			r->rank);
		return;
	}
	Ref stride, lv, wv;
	if (!width_of(g, n, sv, &wv) || !tile_rows(g, n, r, rowdim, rd,
	    &stride, &lv))
		return;
	SirIns *i = sg_emit(g, SOP_gstore, n->span);
	r->direct = true;
	i->a[0] = lin;
	i->a[1] = v;
	i->a[2] = lv;
	i->a[3] = rix;
	i->a[4] = stride;
	i->na = 5;
	if (blocked || wv) {
		i->a[5] = wv;
		i->na = 6;
	}
	i->imm = red != NULL;  /* 1: reduce=add (red.global.add) */
	i->r[0] = r;
}

/* The limit of a row vector's load ('limit=L', INT32_MAX without one)
 * and its row stride, 1: row r is at the last index plus r.  0 after a
 * diagnostic. */
static Ref
rows_limit(G *g, const Node *n, Ref *stride)
{
	const Node *lim = sg_opattr(g, n, "limit", false);
	const Node *rd = sg_opattr(g, n, "rowdim", false);

	if (rd) {
		diag_error(g->ctx, rd->span, "'rowdim' places the rows of a 2-D "
			"tile; a row vector's rows run along the last index");
		return 0;
	}
	Ref lv = lim && lim->a ? sg_int_arg(g, lim->a, "'limit'") :
		sg_const_i(g, INT32_MAX, TY_I32, n->span);
	*stride = sg_const_i(g, 1, TY_I32, n->span);
	return lv;
}

/* global_load x, G[i0, ...] [rowdim=K] [limit=L]: a 2-D register tile
 * from global memory, element (r, c) from the indices given with r added
 * to index K (the first by default; needed for more than 2 dimensions)
 * and c to the last; a row whose index K is >= L reads 0.  A row vector
 * (a 'reg' of layout rows(P)) loads as a row vector stores: row r from
 * the indices with r added to the last one (K the last, stride 1).  SIR:
 * dst the tile, a[0] the linear index, a[1] the limit (INT32_MAX without
 * one), a[2] index K, a[3] the row stride in elements. */
void
sg_op_gload(G *g, const Node *n)
{
	Ref idx = 0;

	sg_noattrs(g, n, (const char *const[]){"limit", "rowdim", "width",
		NULL});
	if (!sg_argc(g, n, 2, 2))
		return;
	const Node *d = n->kids.v[1];
	if (d->kind != N_INDEX || d->a->kind != N_NAME) {
		diag_error(g->ctx, d->span, "write 'global_load x, G[i, ...]'");
		return;
	}
	Node base = *d->a;
	Res *r = sg_resource(g, &base, R_GLOBAL, "a global tensor", &idx);
	Ref x = sg_frag_var(g, n->kids.v[0], "the destination");
	if (!r || sg_val(g, x)->ty == TY_ERR)
		return;
	const SirVal xv = *sg_val(g, x);
	bool cv = xv.lay->kind == LK_COLS;
	bool rv = xv.lay->kind == LK_ROWS || cv;
	if (!xv.mut) {
		diag_error(g->ctx, n->kids.v[0]->span, "'global_load' writes a "
			"'reg' tile or row vector; '%s' is not a 'reg' variable",
			sg_text(g, n->kids.v[0]->span, "x"));
		return;
	}
	/* a 'reg' tile: f32, bf16 or f16 (i32 and bool tiles are values);
	 * a row vector: f32 */
	if (xv.ety != r->ety) {
		if (rv)
			diag_error(g->ctx, n->kids.v[0]->span, "'%s' holds %s "
				"but the row vector is %s", r->name,
				ty_name(r->ety), ty_name(xv.ety));
		else
			diag_error(g->ctx, n->kids.v[0]->span, "'%s' holds %s "
				"but the tile is %s; load into a %s tile and 'cvt' "
				"it", r->name, ty_name(r->ety), ty_name(xv.ety),
				ty_name(r->ety));
		return;
	}
	if (!rv && r->rank < 2) {
		diag_error(g->ctx, d->span, "a 2-D tile comes from a global of "
			"2 or more dimensions; '%s' has %d", r->name, r->rank);
		return;
	}
	const Node *rd = sg_opattr(g, n, "rowdim", false);
	int64_t rowdim = rv ? r->rank - 1 : 0;
	if (!rv && rd && rd->a && !sg_const_arg(g, rd->a, "'rowdim'", 0,
	    r->rank - 2, &rowdim))
		return;
	Ref last = 0, rix = 0, lin = sg_lin_index_at(g, d, r, &last,
		(int)rowdim, &rix), stride = 0, lv = 0;
	Ref wv = 0;
	if (!lin || !width_of(g, n, &xv, &wv) || (rv ? !(lv = rows_limit(g, n, &stride)) :
	    !tile_rows(g, n, r, (int)rowdim, rd, &stride, &lv)))
		return;
	SirIns *i = sg_emit(g, SOP_gtload, n->span);
	r->direct = true;
	i->dst = x;
	i->a[0] = lin;
	i->a[1] = lv;
	i->a[2] = rix;
	i->a[3] = stride;
	i->na = 4;
	if (cv || xv.lay->kind == LK_BLOCKED) {
		i->a[4] = wv;
		i->na = 5;
	}
	i->r[0] = r;
}

/* tmem_load x, R[i] [cols=(C, N)];   tmem_store R[i], x [cols=(C, N)];
 * smem_store B[s], x [row=R] [col=C];   store G[i0, ...], v [limit=L];
 * a row vector of a tmem_rows tile moves to and from one column. */
void
sg_op_mem(G *g, const Node *n)
{
	Ref idx = 0;

	bool smem = n->op == OP_SSTORE || n->op == OP_SLOAD;

	sg_noattrs(g, n, n->op == OP_STORE ? (const char *const[]){"limit",
		"rowdim", "reduce", "width", NULL} : smem ? (const char *const[]){"row",
		"col", "cta", "width", NULL} : (const char *const[]){"cols", NULL});
	if (!sg_argc(g, n, 2, 2))
		return;
	if (n->op == OP_STORE) {
		const Node *d = n->kids.v[0];
		SirIns tmp = {0};
		if (d->kind != N_INDEX || d->a->kind != N_NAME) {
			diag_error(g->ctx, d->span, "write 'store G[i, ...], v'");
			return;
		}
		Node base = *d->a;
		Res *r = sg_resource(g, &base, R_GLOBAL, "a global tensor", &idx);
		/* a 2-D tile: its rows run along dimension 'rowdim' (the
		 * first one by default), its columns along the last */
		const Node *rd = sg_opattr(g, n, "rowdim", false);
		int64_t rowdim = 0;
		if (r && rd && rd->a && !sg_const_arg(g, rd->a, "'rowdim'", 0,
		    r->rank - 2 < 0 ? 0 : r->rank - 2, &rowdim))
			return;
		Ref *ix = NEWARR(&g->ctx->scratch, Ref, (size_t)d->kids.n + 1);
		Ref last = 0, rix = 0, lin = r ? sg_lin_index_all(g, d, r,
			&last, (int)rowdim, &rix, ix) : 0;
		if (!lin)
			return;
		if (sg_val(g, lin)->ty == TY_FRAG) {  /* tile indices */
			sg_scatter(g, n, r, ix, lin);
			return;
		}
		tmp.a[tmp.na++] = lin;
		Ref v = sg_expr(g, n->kids.v[1]);
		SirVal *sv = sg_val(g, v);
		if (sv->ty == TY_ERR)
			return;
		if (sv->ty == TY_FRAG && sv->lay->kind != LK_ROWS) {
			store_tile(g, n, r, lin, rix, (int)rowdim, v, rd);
			return;
		}
		if (rd) {
			diag_error(g->ctx, rd->span, "'rowdim' places the rows "
				"of a 2-D tile; this value is %s", sv->ty ==
				TY_FRAG ? "a row vector (its rows run along the "
				"last index)" : "a scalar");
			return;
		}
		const Node *ra = sg_opattr(g, n, "reduce", false);
		if (ra) {
			diag_error(g->ctx, ra->span, "'reduce=add' adds a 2-D "
				"tile into global memory; this value is %s",
				sv->ty == TY_FRAG ? "a row vector" : "a scalar");
			return;
		}
		Ty vt = sv->ty == TY_FRAG ? sv->ety : sv->ty;
		if (sv->ty != TY_ERR && vt != r->ety && !(sv->isconst &&
		    r->ety == TY_F32)) {
			diag_error(g->ctx, n->kids.v[1]->span, "'%s' holds %s but "
				"the value is %s; write 'cvt(%s, %s)'", r->name,
				ty_name(r->ety), ty_name(vt),
				sg_text(g, n->kids.v[1]->span, "x"), ty_name(r->ety));
			return;
		}
		const Node *lim = sg_opattr(g, n, "limit", false);
		Ref lv = 0;
		if (lim && lim->a) {
			if (sv->ty != TY_FRAG) {
				diag_error(g->ctx, lim->span, "'limit' bounds the "
					"rows of a row vector; a scalar store has one");
				return;
			}
			lv = sg_int_arg(g, lim->a, "'limit'");
		}
		SirIns *i = sg_emit(g, SOP_gstore, n->span);
		r->direct = true;
		i->a[0] = tmp.a[0];
		i->a[1] = v;
		i->na = 2;
		if (lv) {  /* a[2] limit, a[3] the row index it bounds */
			i->a[2] = lv;
			i->a[3] = last;
			i->na = 4;
		}
		i->r[0] = r;
		return;
	}
	bool ld = n->op == OP_TLOAD || n->op == OP_SLOAD;
	const Node *re = ld ? n->kids.v[1] : n->kids.v[0];
	const Node *fe = ld ? n->kids.v[0] : n->kids.v[1];
	ResKind want = smem ? R_SMEM : R_TMEM;
	if (want == R_TMEM && !sg_need_target(g, n, T_SM100, ld ? "'tmem_load'" :
	    "'tmem_store'"))
		return;
	Res *r = sg_resource(g, re, want, want == R_SMEM ?
		"a shared-memory buffer" : "a tensor-memory region", &idx);
	Ref x = sg_frag_var(g, fe, ld ? "the destination" : "the value");
	if (!r || sg_val(g, x)->ty == TY_ERR)
		return;
	/* a copy: evaluating 'cols=' and 'row=' below adds values, and the
	 * value array may move (a use after free the fuzzer found) */
	const SirVal vcopy = *sg_val(g, x), *v = &vcopy;
	bool rowvec = v->lay->kind == LK_ROWS && v->lay->parent &&
		v->lay->parent->kind == LK_TMEM_ROWS;
	if (want == R_TMEM && v->lay->kind != LK_TMEM_ROWS && !rowvec) {
		diag_error(g->ctx, fe->span, "tensor memory moves to and from "
			"'tmem_rows' tiles and their row vectors; '%s' has layout "
			"'%s'", sg_text(g, fe->span, v->name ? v->name : "the tile"),
			sg_layname(v->lay));
		return;
	}
	int64_t rows = r->shape[0], cols = want == R_TMEM ? r->shape[1] :
		r->shape[r->rank - 1];
	int64_t col0 = 0;
	if (!slice(g, n, want == R_TMEM ? "cols" : "col", v->n, &col0, &cols))
		return;
	const Part *pt = g->p->part;
	int nw = pt->warp_hi - pt->warp_lo + 1;
	if (want == R_TMEM && (pt->warp_lo % 4 || nw * 32 != rows || nw > 4)) {
		diag_error(g->ctx, n->span, "warp w may only touch tensor-memory "
			"lanes 32*(w%%4)..+31: %lld lanes need %lld warps starting "
			"at a multiple of 4, but partition '%s' has warps %d..%d",
			(long long)rows, (long long)rows / 32, pt->name,
			pt->warp_lo, pt->warp_hi);
		return;
	}
	int64_t row0 = 0;
	const Node *ra = smem ? sg_opattr(g, n, "row", false) : NULL;
	if (ra && ra->a && !sg_const_arg(g, ra->a, "'row'", 0, rows - 1, &row0))
		return;
	if (v->m + row0 > rows || v->n != cols || (!ra && v->m != rows)) {
		diag_error(g->ctx, n->span, "the tile is [%d,%d] but '%s' is "
			"[%lld,%lld]%s", v->m, v->n, r->name, (long long)rows,
			(long long)cols, smem && v->n == cols ? ld ?
			"; load it from a row offset with 'row=R'" :
			"; store it at a row offset with 'row=R'" :
			want == R_TMEM && v->m == rows && v->n < cols ?
			"; move some of its columns with 'cols=(C, N)'" : "");
		return;
	}
	if (v->ety != r->ety && !(want == R_TMEM && r->packed &&
	    v->ety == TY_F32 && !rowvec)) {
		diag_error(g->ctx, fe->span, "'%s' holds %s but the tile is %s; "
			"write 'cvt(%s, %s)'", r->name, ty_name(r->ety),
			ty_name(v->ety), sg_text(g, fe->span, "x"),
			ty_name(r->ety));
		return;
	}
	if (ld && !v->mut) {
		diag_error(g->ctx, fe->span, "'%s' writes a 'reg' variable",
			op_names[n->op]);
		return;
	}
	/* smem_store/smem_load ... cta=R: CTA R's copy of the buffer, in
	 * its shared memory (distributed shared memory, issue #27) */
	const Node *cta = smem ? sg_opattr(g, n, "cta", false) : NULL;
	Ref peer = 0;
	if (cta && (!cta->a || !(peer = sg_cluster_arg(g, cta->a, false))))
		return;
	/* smem_load x, S width=W of a blocked tile: the chunks of columns
	 * >= W read 0 (a bulk_copy leaves those of a buffer row past the
	 * global's row as they were) */
	const Node *wa = smem ? sg_opattr(g, n, "width", false) : NULL;
	Ref wv = 0;
	if (wa && (!ld || v->lay->kind != LK_BLOCKED)) {
		diag_error(g->ctx, wa->span, "'width=' reads the columns of a "
			"'blocked' tile below W and zeros past it: it is for "
			"'smem_load' of a blocked tile");
		return;
	}
	if (wa && (!wa->a || !(wv = sg_int_arg(g, wa->a, "'width'"))))
		return;
	SirIns *i = sg_emit(g, n->op == OP_TLOAD ? SOP_tmem_load :
		n->op == OP_SLOAD ? SOP_smem_load : n->op == OP_TSTORE ?
		SOP_tmem_store : SOP_smem_store, n->span);
	i->cta = peer;
	i->r[0] = r;
	i->ri[0] = idx;
	i->roff[0] = row0;
	i->imm = col0;
	if (ld) {
		i->dst = x;
		if (wv) {
			i->a[0] = wv;
			i->na = 1;
		}
	} else {
		i->a[0] = x;
		i->na = 1;
	}
}

/* min(a, b) of two i32 scalars. */
static Ref
imin(G *g, Ref a, Ref b, Span sp)
{
	a = sg_coerce(g, a, TY_I32, sp);
	b = sg_coerce(g, b, TY_I32, sp);
	if (sg_val(g, a)->ty == TY_ERR || sg_val(g, b)->ty == TY_ERR)
		return 0;
	Ref r = sir_val(g->ctx, g->p, TY_I32, NULL);
	SirIns *i = sg_emit(g, SOP_min, sp);
	i->dst = r, i->a[0] = a, i->a[1] = b, i->na = 2;
	return r;
}

/* cp_async G[i0, ...] -> S[s] [, B[j]] [rowdim=K] [limit=L];
 * cp_async_commit;   cp_async_wait N;
 * A 2-D buffer tile [R, C] filled from global G, row r from index K plus
 * r and column c from the last index plus c, by every thread of the
 * partition in 16-byte chunks (cp.async.cg); rows at or past L or past
 * G's extent along K, and chunks past its last extent, read zeros (as
 * TMA's oob=zero).  With B the copies complete on the mbarrier: each
 * thread's one arrival when its chunks have landed
 * (cp.async.mbarrier.arrive.noinc); without, in the thread's current
 * group, which cp_async_commit closes and cp_async_wait N waits for
 * (at most N of the thread's newest groups still pending).  SIR: see
 * sir_ops.h. */
static void gcopy(G *, const Node *, bool bulk);

void
sg_op_cpasync(G *g, const Node *n)
{
	int64_t v;

	if (n->op == OP_CP_COMMIT || n->op == OP_CP_WAIT) {
		sg_noattrs(g, n, NULL);
		bool w = n->op == OP_CP_WAIT;
		if (!sg_argc(g, n, w, w) || (w && !sg_const_arg(g, n->kids.v[0],
		    "the number of pending groups", 0, 31, &v)))
			return;
		sg_emit(g, w ? SOP_cp_wait : SOP_cp_commit, n->span)->imm =
			w ? v : 0;
		return;
	}
	sg_noattrs(g, n, (const char *const[]){"limit", "rowdim", NULL});
	if (!sg_argc(g, n, 1, 2))
		return;
	const Node *arrow = n->kids.v[0];
	if (arrow->kind != N_ARROW || arrow->a->kind != N_INDEX ||
	    arrow->a->a->kind != N_NAME) {
		diag_error(g->ctx, arrow->span, "write 'cp_async G[i, ...] -> "
			"BUF[stage]' (and ', BAR[i]' to complete on an mbarrier)");
		return;
	}
	if (g->in_elect) {
		diag_error(g->ctx, n->span, "'cp_async' shares the tile among "
			"every thread of the partition, so it cannot be inside "
			"'elect'");
		return;
	}
	gcopy(g, n, false);
}

/* cp_async's and bulk_copy's G[i0, ...] -> S[s] [, B[j]] [rowdim=K]
 * [limit=L]: the SIR op (cp_async, or bulk_load: the tile's rows by the
 * bulk-copy engine, completing on B) with a0 the linear index, a1 the
 * row limit, a2 the row index, a3 the row stride, a4 the last index and
 * a5 the last extent. */
static void
gcopy(G *g, const Node *n, bool bulk)
{
	const Node *arrow = n->kids.v[0];
	const char *op = bulk ? "'bulk_copy'" : "'cp_async'";
	SirIns t = {0};
	Node base = *arrow->a->a;
	Res *r = sg_resource(g, &base, R_GLOBAL, "a global tensor", &t.ri[0]);
	Res *b = sg_resource(g, arrow->b, R_SMEM, "a shared-memory buffer",
		&t.ri[1]);
	Res *m = n->kids.n == 2 ? sg_resource(g, n->kids.v[1], R_MBAR,
		"an mbarrier", &t.ri[2]) : NULL;
	if (!r || !b || (n->kids.n == 2 && !m))
		return;
	int esz = ty_bytes(b->ety);
	int64_t rowbytes = b->shape[b->rank - 1] * esz;
	if (b->rank != 2 || r->rank < 2) {
		diag_error(g->ctx, arrow->span, "%s fills a 2-D buffer "
			"tile from a global of 2 or more dimensions; '%s' is %d-D "
			"and '%s' %d-D", op, b->name, b->rank, r->name, r->rank);
		return;
	}
	if (r->ety != b->ety) {
		diag_error(g->ctx, arrow->span, "'%s' holds %s but '%s' holds "
			"%s", r->name, ty_name(r->ety), b->name, ty_name(b->ety));
		return;
	}
	if (bulk && b->lay->swizzle) {
		diag_error(g->ctx, arrow->b->span, "'bulk_copy' from a global "
			"writes each row's bytes in order, so '%s' must not be "
			"swizzled (it is swizzle=%d); load swizzled tiles with "
			"'tma_load'", b->name, b->lay->swizzle);
		return;
	}
	if (rowbytes % 16 || (b->lay->swizzle && rowbytes % b->lay->swizzle)) {
		diag_error(g->ctx, arrow->b->span, "a row of '%s' is %lld bytes; "
			"%s moves 16-byte chunks%s", b->name, (long long)rowbytes,
			bulk ? "cp.async.bulk" : "cp.async", b->lay->swizzle ?
			", and the row must fill whole swizzle spans" : "");
		return;
	}
	const Node *rd = sg_opattr(g, n, "rowdim", false);
	int64_t rowdim = 0;
	if (rd && rd->a && !sg_const_arg(g, rd->a, "'rowdim'", 0, r->rank - 2,
	    &rowdim))
		return;
	Ref last = 0, rix = 0, lin = sg_lin_index_at(g, arrow->a, r, &last,
		(int)rowdim, &rix), stride = 0, lv = 0;
	if (!lin || !tile_rows(g, n, r, (int)rowdim, rd, &stride, &lv))
		return;
	lv = imin(g, lv, sg_expr(g, r->dims[rowdim]), n->span);
	Ref lastext = sg_coerce(g, sg_expr(g, r->dims[r->rank - 1]), TY_I32,
		n->span);
	last = sg_coerce(g, last, TY_I32, n->span);
	if (!lv || sg_val(g, lastext)->ty == TY_ERR ||
	    sg_val(g, last)->ty == TY_ERR)
		return;
	if (bulk)
		sg_elect_warn(g, n);
	SirIns *i = sg_emit(g, bulk ? SOP_bulk_load : SOP_cp_async, n->span);
	r->direct = true;
	r->cpasync = true;
	i->a[0] = lin;
	i->a[1] = lv;
	i->a[2] = rix;
	i->a[3] = stride;
	i->a[4] = last;
	i->a[5] = lastext;
	i->na = 6;
	i->r[0] = r;
	i->r[1] = b;
	i->ri[1] = t.ri[1];
	i->r[2] = m;
	i->ri[2] = t.ri[2];
}

/* bulk_copy SRC[s] -> DST[d], BAR[b] [cta=R]: the tile SRC[s] of this
 * CTA into DST[d] of CTA R (this CTA without cta=), by the bulk-copy
 * engine (cp.async.bulk.shared::cluster.shared::cta), its bytes
 * completing on BAR[b] of CTA R, which must expect them.  The tiles
 * hold the same elements in the same layout: it copies bytes. */
void
sg_op_bulk_copy(G *g, const Node *n)
{
	const Node *arrow = n->kids.n ? n->kids.v[0] : NULL;
	Ref si, di, bi;

	sg_noattrs(g, n, (const char *const[]){"cta", "limit", "rowdim",
		NULL});
	if (!sg_argc(g, n, 2, 2) || !sg_need_target(g, n, T_HOP,
	    "'bulk_copy' (cp.async.bulk)"))
		return;
	if (arrow->kind != N_ARROW) {
		diag_error(g->ctx, arrow->span, "write 'bulk_copy SRC[stage] -> "
			"DST[stage], BAR[i]', SRC and DST shared-memory buffers, "
			"or 'bulk_copy G[i, ...] -> DST[stage], BAR[i]' from a "
			"global");
		return;
	}
	const Res *src = arrow->a->kind == N_INDEX && arrow->a->a->kind ==
		N_NAME ? kernel_find(g->k, arrow->a->a->name) : NULL;
	if (src && src->kind == R_GLOBAL) {
		/* a global's rows (issue #26) */
		const Node *ca = sg_opattr(g, n, "cta", false);
		if (ca) {
			diag_error(g->ctx, ca->span, "'cta=' copies into a peer's "
				"shared memory from this CTA's; a global's rows "
				"load into this CTA's");
			return;
		}
		gcopy(g, n, true);
		return;
	}
	Res *s = sg_resource(g, arrow->a, R_SMEM, "a shared-memory buffer",
		&si);
	Res *d = sg_resource(g, arrow->b, R_SMEM, "a shared-memory buffer",
		&di);
	Res *m = sg_resource(g, n->kids.v[1], R_MBAR, "an mbarrier", &bi);
	if (!s || !d || !m)
		return;
	int64_t sb = ty_bytes(s->ety), db = ty_bytes(d->ety);
	for (int k = 0; k < s->rank; k++)
		sb *= s->shape[k];
	for (int k = 0; k < d->rank; k++)
		db *= d->shape[k];
	if (sb != db || s->ety != d->ety || (s->lay ? s->lay->swizzle : 0) !=
	    (d->lay ? d->lay->swizzle : 0)) {
		diag_error(g->ctx, arrow->span, "'bulk_copy' copies the bytes of "
			"a tile: '%s' (%s, %lld bytes%s) and '%s' (%s, %lld "
			"bytes%s) must hold the same elements in the same "
			"layout", s->name, ty_name(s->ety), (long long)sb,
			s->lay && s->lay->swizzle ? ", swizzled" : "", d->name,
			ty_name(d->ety), (long long)db, d->lay &&
			d->lay->swizzle ? ", swizzled" : "");
		return;
	}
	if (sb % 16) {
		diag_error(g->ctx, arrow->span, "'bulk_copy' moves multiples of "
			"16 bytes; a tile of '%s' is %lld", s->name,
			(long long)sb);
		return;
	}
	const Node *ca = sg_opattr(g, n, "cta", false);
	Ref peer = 0;
	if (ca && (!ca->a || !(peer = sg_cluster_arg(g, ca->a, false))))
		return;
	sg_elect_warn(g, n);
	SirIns *i = sg_emit(g, SOP_bulk_copy, n->span);
	i->r[0] = s;
	i->ri[0] = si;
	i->r[1] = d;
	i->ri[1] = di;
	i->r[2] = m;
	i->ri[2] = bi;
	i->imm = sb;
	i->cta = peer;
	if (peer)
		m->remote = true;  /* a peer's copy completes on it */
}
