/* sirops.c: operation statements (wait, arrive, tma_load, ...) to SIR,
 * with their operand checks. */
#include <string.h>

#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"
#include "sir/sirgen.h"

static const char *
rkind(ResKind k)
{
	static const char *const n[] = {"?", "a global tensor", "a TMA view",
		"a shared-memory buffer", "a tensor-memory region", "an mbarrier",
		"a named barrier", "a parameter", "a constant", "a layout",
		"a partition"};
	return n[k];
}

/* A resource operand: NAME or NAME[index].  Returns the resource and the
 * index value (0 when there is none: element 0). */
Res *
sg_resource(G *g, const Node *e, ResKind want, const char *what, Ref *idx)
{
	const Node *base = e->kind == N_INDEX ? e->a : e;
	Res *r;

	*idx = 0;
	if (base->kind != N_NAME) {
		diag_error(g->ctx, e->span, "expected %s", what);
		return NULL;
	}
	if (!(r = kernel_find(g->k, base->name))) {
		kernel_undeclared(g->ctx, g->k, base->span, base->name,
			(int)want);
		return NULL;
	}
	if (r->kind != want) {
		diag_error(g->ctx, base->span, "'%s' is %s; expected %s",
			r->name, rkind(r->kind), what);
		diag_note(g->ctx, r->nspan, "'%s' declared here", r->name);
		return NULL;
	}
	bool staged = want == R_SMEM && (r->stages > 1 || r->staged);
	if (e->kind == N_INDEX) {
		int64_t v;
		if (!r->is_array && !staged) {
			diag_error(g->ctx, e->span, "'%s' is not an array",
				r->name);
			return NULL;
		}
		if (e->kids.n != 1) {
			diag_error(g->ctx, e->span, "'%s' takes one index",
				r->name);
			return NULL;
		}
		*idx = sg_expr(g, e->kids.v[0]);
		if (!ty_isint(sg_val(g, *idx)->ty) && sg_val(g, *idx)->ty != TY_ERR) {
			diag_error(g->ctx, e->kids.v[0]->span, "an index must "
				"be an integer");
			return NULL;
		}
		int64_t n = staged ? r->stages : r->count;
		if (sg_const_int(g, *idx, &v) && (v < 0 || v >= n)) {
			diag_error(g->ctx, e->kids.v[0]->span, "index %lld is "
				"out of range for '%s' (0..%lld)", (long long)v,
				r->name, (long long)n - 1);
			return NULL;
		}
	} else if (r->is_array || staged) {
		diag_error(g->ctx, e->span, "'%s' has %d %s; say which one, "
			"e.g. '%s[0]'", r->name, staged ? r->stages : r->count,
			staged ? (r->stages == 1 ? "stage" : "stages") :
			r->count == 1 ? "element" : "elements", r->name);
		return NULL;
	}
	return r;
}

Ref
sg_int_arg(G *g, const Node *e, const char *what)
{
	Ref r = sg_expr(g, e);

	sg_int_check(g, e, r, what);
	return r;
}

/* r, the value of e, is an integer: else a diagnostic. */
void
sg_int_check(G *g, const Node *e, Ref r, const char *what)
{
	Ty t = sg_val(g, r)->ty;

	if (t != TY_ERR && !ty_isint(t) && !(t == TY_BOOL && sg_val(g, r)->isconst))
		diag_error(g->ctx, e->span, "%s must be an integer, found '%s'",
			what, t == TY_FRAG ? "register tile" : ty_name(t));
}

/* The row-major linear index of G[i0, i1, ...], ((i0*d1 + i1)*d2 + ...),
 * so that a store or load needs no extents; *last is the last index.
 * 0 after a diagnostic: a count of indices other than G's rank, or one
 * that is not an integer. */
Ref
sg_lin_index(G *g, const Node *d, const Res *r, Ref *last)
{
	return sg_lin_index_at(g, d, r, last, -1, NULL);
}

/* Stride k of 'strided' global r (elements): the hidden argument's. */
Ref
sg_gstride(G *g, const Res *r, int k, Span sp)
{
	Ref v = sir_val(g->ctx, g->p, TY_I32, NULL);
	SirIns *i = sg_emit(g, SOP_gstride, sp);

	i->dst = v;
	i->r[0] = (Res *)r;
	i->imm = k;
	return v;
}

/* sg_lin_index_at; with ix, the indices of a load that may be i32
 * register tiles (a gather: sirload.c checks them), each in ix[k].  A
 * 'strided' global's index is the sum of each index times its stride
 * (the last is 1: the runtime checks it). */
static Ref
lin_index(G *g, const Node *d, const Res *r, Ref *last, int k0, Ref *ik0,
	Ref *ix)
{
	Ref lin = 0;

	if (d->kids.n != r->rank) {
		diag_error(g->ctx, d->span, "'%s' has %d dimensions; "
			"give %d indices", r->name, r->rank, r->rank);
		return 0;
	}
	for (int k = 0; k < d->kids.n; k++) {
		Ref ik = ix ? sg_expr(g, d->kids.v[k]) :
			sg_int_arg(g, d->kids.v[k], "an index");
		Ty t = sg_val(g, ik)->ty;
		if (ix) {
			ix[k] = ik;
			if (!sg_gather_index(g, d, k, ix))
				return 0;
		} else if (!ty_isint(t) && !(t == TY_BOOL &&
		    sg_val(g, ik)->isconst)) {
			return 0;
		}
		*last = ik;
		if (k == k0)
			*ik0 = ik;
		if (!lin) {
			lin = ik;
			continue;
		}
		/* operands with d's span: tile indices' messages quote them */
		Node o = {.span = d->span};
		Node mul = {.kind = N_BINARY, .op = '*', .span = d->span,
			.a = &o, .b = &o};
		Node add = {.kind = N_BINARY, .op = '+', .span = d->span,
			.a = &o, .b = &o};
		if (r->strided) {
			if (k == 1)
				lin = sg_binop(g, &mul, lin, sg_gstride(g, r, 0,
					d->span));
			Ref t = k == r->rank - 1 ? ik : sg_binop(g, &mul, ik,
				sg_gstride(g, r, k, d->span));
			lin = sg_binop(g, &add, lin, t);
			continue;
		}
		lin = sg_binop(g, &mul, lin, sg_expr(g, r->dims[k]));
		lin = sg_binop(g, &add, lin, ik);
	}
	if (r->strided && r->rank == 1 && lin)
		return lin;  /* stride 1 */
	return sg_val(g, lin)->ty == TY_ERR ? 0 : lin;
}

/* sg_lin_index, and also index k (0-based; k < 0: none) in *ik. */
Ref
sg_lin_index_at(G *g, const Node *d, const Res *r, Ref *last, int k0,
	Ref *ik0)
{
	return lin_index(g, d, r, last, k0, ik0, NULL);
}

/* sg_lin_index_at whose indices may be i32 register tiles (a gather or
 * a scatter), each index in ix[k]. */
Ref
sg_lin_index_all(G *g, const Node *d, const Res *r, Ref *last, int k0,
	Ref *ik0, Ref *ix)
{
	return lin_index(g, d, r, last, k0, ik0, ix);
}

/* The linear index of a load G[i0, ...] whose indices may be i32
 * register tiles, each index in ix[k] (r->rank of them). */
Ref
sg_lin_index_ix(G *g, const Node *d, const Res *r, Ref *ix)
{
	Ref last = 0;

	return lin_index(g, d, r, &last, -1, NULL, ix);
}

bool
sg_const_arg(G *g, const Node *e, const char *what, int64_t lo, int64_t hi,
	int64_t *out)
{
	Ref r = sg_expr(g, e);

	if (!sg_const_int(g, r, out)) {
		if (sg_val(g, r)->ty != TY_ERR)
			diag_error(g->ctx, e->span, "%s must be a constant",
				what);
		return false;
	}
	if (*out < lo || *out > hi) {
		diag_error(g->ctx, e->span, "%s must be in %lld..%lld, found "
			"%lld", what, (long long)lo, (long long)hi,
			(long long)*out);
		return false;
	}
	return true;
}

bool
sg_argc(G *g, const Node *n, int lo, int hi)
{
	const char *op = op_names[n->op];

	if (n->kids.n >= lo && n->kids.n <= hi)
		return true;
	if (lo == hi)
		diag_error(g->ctx, n->span, "'%s' takes %d operand%s, found %d",
			op, lo, lo == 1 ? "" : "s", n->kids.n);
	else
		diag_error(g->ctx, n->span, "'%s' takes %d to %d operands, "
			"found %d", op, lo, hi, n->kids.n);
	return false;
}

const Node *
sg_opattr(G *g, const Node *n, const char *name, bool flag)
{
	for (int i = 0; i < n->attrs.n; i++) {
		const Node *a = n->attrs.v[i];
		if (strcmp(a->name, name))
			continue;
		if (flag && a->a)
			diag_error(g->ctx, a->span, "'%s' is a flag and takes no "
				"value", name);
		if (!flag && !a->a)
			diag_error(g->ctx, a->span, "'%s' needs a value: "
				"'%s=...'", name, name);
		return a;
	}
	return NULL;
}

void
sg_noattrs(G *g, const Node *n, const char *const *ok)
{
	for (int i = 0; i < n->attrs.n; i++) {
		bool found = false;
		for (const char *const *p = ok; p && *p; p++)
			found |= !strcmp(*p, n->attrs.v[i]->name);
		if (!found)
			diag_error(g->ctx, n->attrs.v[i]->nspan, "'%s' takes no "
				"attribute '%s'", n->kind == N_MMA ? "mma" :
				op_names[n->op], n->attrs.v[i]->name);
	}
}

bool
sg_need_target(G *g, const Node *n, int tgt, const char *what)
{
	const Target *t = target_get(g->k->target);

	if (t->tgt_bit & tgt)
		return true;
	diag_error(g->ctx, n->span, "%s is not available on %s%s", what,
		t->name, tgt == T_SM90 ? " (it is a Hopper instruction)" :
		tgt == T_HOP ? " (it needs sm_90a or later)" :
		" (it needs Blackwell's tcgen05)");
	return false;
}

/* The smem tile a TMA view's box fills: the box without its 1s, or,
 * for a 2-D tile [R, C], a box whose last extent is C and whose other
 * extents multiply to R (TMA lays a box out innermost first, so its
 * outer extents flatten into rows: a box (1, 32, 1, 4, D) of a
 * [Z, S, H / 4, 4, D] view fills a [128, D] tile, row 4s + g). */
static bool
box_matches(G *g, const Node *at, const Res *v, const Res *b, bool part)
{
	/* the box's extents other than 1, in order, are the tile's: a box
	 * (1, BM, 1, D) on a [Z, S, H, D] tensor fills a [BM, D] tile */
	int64_t ext[5];
	int n = 0;
	for (int i = 0; i < v->rank; i++)
		if (v->shape[i] != 1 || (i == v->rank - 1 && n == 0))
			ext[n++] = v->shape[i];
	int bn = 0;
	int64_t bext[5];
	for (int i = 0; i < b->rank; i++)
		if (b->shape[i] != 1 || (i == b->rank - 1 && bn == 0))
			bext[bn++] = b->shape[i];
	bool ok = n == bn;
	for (int i = 0; ok && i < n; i++)
		ok = ext[i] == bext[i];
	if (!ok && bn == 2 && n >= 2 && ext[n - 1] == bext[1]) {
		int64_t rows = 1;
		for (int i = 0; i < n - 1; i++)
			rows *= ext[i];
		/* row=: the box fills some of the tile's rows */
		ok = part ? rows <= bext[0] : rows == bext[0];
	}
	if (!ok) {
		Buf bs, ts;
		buf_init(&bs, &g->ctx->scratch);
		buf_init(&ts, &g->ctx->scratch);
		for (int i = 0; i < v->rank; i++)
			buf_printf(&bs, "%s%lld", i ? ", " : "(",
				(long long)v->shape[i]);
		for (int i = 0; i < b->rank; i++)
			buf_printf(&ts, "%s%lld", i ? ", " : "[",
				(long long)b->shape[i]);
		diag_error(g->ctx, at->span, "the box of '%s' is %s) but the "
			"tile of '%s' is %s]", v->name, bs.p, b->name, ts.p);
		diag_note(g->ctx, v->nspan, "'%s' declared here", v->name);
		diag_note(g->ctx, b->nspan, "'%s' declared here", b->name);
		return false;
	}
	if (v->ety != b->ety) {
		diag_error(g->ctx, at->span, "'%s' holds %s but '%s' holds %s",
			v->name, ty_name(v->ety), b->name, ty_name(b->ety));
		return false;
	}
	if (v->swizzle != b->lay->swizzle) {
		diag_error(g->ctx, at->span, "'%s' swizzles %d bytes but the "
			"layout of '%s' swizzles %d; they must agree", v->name,
			v->swizzle, b->name, b->lay->swizzle);
		diag_note(g->ctx, b->nspan, "'%s' declared here", b->name);
		return false;
	}
	return true;
}

/* 'V[c0, c1, ...]': a TMA view and its coordinates. */
static Res *
view_coords(G *g, const Node *e, SirIns *i)
{
	Ref dummy;

	if (e->kind != N_INDEX) {
		diag_error(g->ctx, e->span, "expected a TMA view with "
			"coordinates, e.g. 'tx[row, col]'");
		return NULL;
	}
	Node base = *e;
	base.kind = N_NAME;
	base.name = e->a->kind == N_NAME ? e->a->name : NULL;
	base.span = e->a->span;
	if (!base.name) {
		diag_error(g->ctx, e->span, "expected a TMA view");
		return NULL;
	}
	Res *v = sg_resource(g, &base, R_TMA, "a TMA view", &dummy);
	if (!v)
		return NULL;
	if (e->kids.n != v->rank) {
		diag_error(g->ctx, e->span, "'%s' has %d dimensions; give %d "
			"coordinates, found %d", v->name, v->rank, v->rank,
			e->kids.n);
		return NULL;
	}
	for (int k = 0; k < e->kids.n; k++)
		i->a[i->na++] = sg_int_arg(g, e->kids.v[k], "a coordinate");
	return v;
}

/* The cluster's size (cta cluster=). */
static int64_t
csize(const G *g)
{
	return (int64_t)g->k->cluster[0] * g->k->cluster[1] * g->k->cluster[2];
}

/* 'cta=R' (mask false: a cluster rank) or 'multicast=M' (a mask of
 * ranks): an integer, checked against the cluster when constant; 0
 * after a diagnostic. */
Ref
sg_cluster_arg(G *g, const Node *e, bool mask)
{
	int64_t n = csize(g), v;

	if (n == 1) {
		diag_error(g->ctx, e->span, "'%s' needs a cluster of several "
			"CTAs: declare 'cta threads=... cluster=(2)'", mask ?
			"multicast" : "cta");
		return 0;
	}
	Ref r = sg_int_arg(g, e, mask ? "a multicast mask" : "a cluster rank");
	if (sg_val(g, r)->ty == TY_ERR || !ty_isint(sg_val(g, r)->ty))
		return 0;
	if (sg_const_int(g, r, &v) && (mask ? v < 1 || v >= (1 << n) :
	    v < 0 || v >= n)) {
		if (mask)
			diag_error(g->ctx, e->span, "multicast mask %lld names "
				"no CTA or one outside the cluster of %lld (bits "
				"0..%lld)", (long long)v, (long long)n,
				(long long)n - 1);
		else
			diag_error(g->ctx, e->span, "cluster rank %lld is "
				"outside the cluster of %lld CTAs (0..%lld)",
				(long long)v, (long long)n, (long long)n - 1);
		return 0;
	}
	return r;
}

/* The box's rows (all but its last extent, multiplied). */
static int64_t
box_rows(const Res *v)
{
	int64_t rows = 1;

	for (int i = 0; i < v->rank - 1; i++)
		rows *= v->shape[i];
	return rows;
}

/* 'row=R' of a tma_load: the first buffer row the box fills.  A
 * constant is checked here, against the tile's rows and the alignment
 * TMA needs of a destination (1024 bytes swizzled, 128 plain); the
 * verifier checks the values a run computes.  0 after a diagnostic. */
static Ref
tma_row(G *g, const Node *e, const Res *v, const Res *b)
{
	int64_t r0, rows = box_rows(v), rb = b->shape[b->rank - 1] *
		ty_bytes(b->ety), al = b->lay->swizzle ? 1024 : 128;
	Ref r = sg_int_arg(g, e, "a row");

	if (sg_val(g, r)->ty == TY_ERR || !ty_isint(sg_val(g, r)->ty))
		return 0;
	if (b->rank != 2) {
		diag_error(g->ctx, e->span, "'row=' needs a 2-D buffer tile; "
			"the tile of '%s' is %d-D", b->name, b->rank);
		return 0;
	}
	if (sg_const_int(g, r, &r0) && (r0 < 0 || r0 + rows > b->shape[0] ||
	    r0 * rb % al)) {
		diag_error(g->ctx, e->span, r0 * rb % al && r0 >= 0 &&
			r0 + rows <= b->shape[0] ? "row %lld of '%s' starts at "
			"byte %lld, not a multiple of the %lld bytes TMA needs" :
			"rows %lld.. of '%s' are outside its tile of %lld rows",
			(long long)r0, b->name, (long long)(r0 * rb % al ? r0 *
			rb : b->shape[0]), (long long)al);
		return 0;
	}
	return r;
}

/* A copy issued by one thread (TMA, bulk_copy) belongs in 'elect':
 * outside it every thread of the partition issues it. */
void
sg_elect_warn(G *g, const Node *n)
{
	if (g->in_elect == 0)
		diag_warn(g->ctx, "tma-outside-elect", n->span, "'%s' outside "
			"'elect' is issued by every thread of the partition",
			op_names[n->op]);
}

static void
op_tma(G *g, const Node *n, bool load)
{
	const Node *arrow = n->kids.n ? n->kids.v[0] : NULL;
	SirIns tmp = {0};

	sg_noattrs(g, n, load ? (const char *const[]){"multicast", "row",
		"cta", NULL} : (const char *const[]){"reduce", NULL});
	if (!sg_argc(g, n, load ? 2 : 1, load ? 2 : 1) ||
	    !sg_need_target(g, n, T_HOP, load ? "'tma_load' (TMA)" :
	    "'tma_store' (TMA)"))
		return;
	/* tma_store ... reduce=add: cp.reduce.async.bulk.tensor's add, an
	 * element-wise f32/f16/bf16 atomic add into global memory */
	const Node *red = load ? NULL : sg_opattr(g, n, "reduce", false);
	if (red && !red->a)
		return;
	if (red && (red->a->kind != N_NAME || strcmp(red->a->name, "add"))) {
		diag_error(g->ctx, red->span, "'reduce' takes 'add' (TMA "
			"reduce-add into global memory)");
		return;
	}
	if (arrow->kind != N_ARROW) {
		diag_error(g->ctx, arrow->span, load ? "write 'tma_load "
			"VIEW[coords] -> BUF[stage], BAR[i]'" : "write 'tma_store "
			"BUF[stage] -> VIEW[coords]'");
		return;
	}
	const Node *vn = load ? arrow->a : arrow->b;
	const Node *bn = load ? arrow->b : arrow->a;
	Res *v = view_coords(g, vn, &tmp);
	Res *b = sg_resource(g, bn, R_SMEM, "a shared-memory buffer", &tmp.ri[1]);
	Res *m = NULL;
	if (load)
		m = sg_resource(g, n->kids.v[1], R_MBAR, "an mbarrier", &tmp.ri[2]);
	const Node *rowa = load ? sg_opattr(g, n, "row", false) : NULL;
	const Node *mca = load ? sg_opattr(g, n, "multicast", false) : NULL;
	const Node *pca = load ? sg_opattr(g, n, "cta", false) : NULL;
	if (!v || !b || (load && !m) || !box_matches(g, n, v, b, rowa))
		return;
	Ref row = 0, mask = 0, peer = 0;
	if (rowa && (!rowa->a || !(row = tma_row(g, rowa->a, v, b))))
		return;
	if (mca && (!mca->a || !(mask = sg_cluster_arg(g, mca->a, true))))
		return;
	/* cta=R in a CTA pair: the box lands here, its bytes complete on
	 * BAR of CTA R, this CTA or its pair's other (TMA .cta_group::2) */
	if (pca && !g->k->pair) {
		diag_error(g->ctx, pca->span, "'tma_load ... cta=' completes "
			"the bytes on a barrier of the other CTA of a pair: it "
			"needs 'cta ... pair' (sm_100a); a load into several "
			"CTAs is 'multicast='");
		return;
	}
	if (pca && mca) {
		diag_error(g->ctx, pca->span, "'cta=' and 'multicast=' do not "
			"go together on one 'tma_load'");
		return;
	}
	if (pca && (!pca->a || !(peer = sg_cluster_arg(g, pca->a, false))))
		return;
	sg_elect_warn(g, n);
	SirIns *i = sg_emit(g, load ? SOP_tma_load : SOP_tma_store, n->span);
	memcpy(i->a, tmp.a, sizeof i->a);
	i->na = tmp.na;
	i->imm = red != NULL;  /* tma_store: 1 reduce=add */
	i->r[0] = v;
	i->r[1] = b;
	i->ri[1] = tmp.ri[1];
	i->r[2] = m;
	i->ri[2] = tmp.ri[2];
	i->row = row;
	i->cta = mask;
	i->peer = peer;
	if (mask || peer)
		m->remote = true;  /* peers' loads complete on it */
}

static void
op_mbar(G *g, const Node *n)
{
	Ref idx;
	int want = n->op == OP_ARRIVE ? 1 : 2;

	sg_noattrs(g, n, (const char *const[]){"count", "cta", NULL});
	if (!sg_argc(g, n, want, want) || (n->op == OP_EXPECT &&
	    !sg_need_target(g, n, T_HOP, "'expect' (transaction bytes)")))
		return;
	Res *r = sg_resource(g, n->kids.v[0], R_MBAR, "an mbarrier", &idx);
	const Node *cta = sg_opattr(g, n, "cta", false);
	Ref peer = 0;
	if (cta && n->op != OP_ARRIVE) {
		diag_error(g->ctx, cta->span, "only 'arrive' takes 'cta=': a "
			"CTA waits on its own barriers only");
		return;
	}
	if (cta && (!cta->a || !(peer = sg_cluster_arg(g, cta->a, false))))
		return;
	if (!r)
		return;
	SirOp op = n->op == OP_WAIT ? SOP_mbar_wait : n->op == OP_ARRIVE ?
		SOP_mbar_arrive : SOP_mbar_expect;
	Ref a = want == 2 ? sg_int_arg(g, n->kids.v[1], n->op == OP_WAIT ?
		"the parity" : "the byte count") : 0;
	int64_t cnt = 0;
	const Node *ca = sg_opattr(g, n, "count", false);
	if (ca && ca->a && op == SOP_mbar_arrive && !sg_const_arg(g, ca->a,
	    "'count'", 1, r->mcount, &cnt))
		return;
	if (ca && op != SOP_mbar_arrive)
		diag_error(g->ctx, ca->span, "only 'arrive' takes 'count='");
	SirIns *i = sg_emit(g, op, n->span);
	i->r[0] = r;
	i->ri[0] = idx;
	i->imm = cnt;
	i->cta = peer;
	if (peer)
		r->remote = true;
	if (a) {
		i->a[0] = a;
		i->na = 1;
	}
}

static void
op_simple(G *g, const Node *n)
{
	static const char *const fences[] = {"async_smem", "mbar_init",
		"tmem_before", "tmem_after", "acq_rel", NULL};
	Ref idx;
	int64_t v = 0;

	switch (n->op) {
	case OP_TMA_COMMIT:
		if (sg_argc(g, n, 0, 0) && sg_need_target(g, n, T_HOP,
		    "'tma_commit' (cp.async.bulk.commit_group)"))
			sg_emit(g, SOP_tma_commit, n->span);
		return;
	case OP_TMA_WAIT: {
		sg_noattrs(g, n, (const char *const[]){"read", NULL});
		if (!sg_argc(g, n, 1, 1) || !sg_need_target(g, n, T_HOP,
		    "'tma_wait' (cp.async.bulk.wait_group)") ||
		    !sg_const_arg(g, n->kids.v[0],
		    "the number of pending groups", 0, 63, &v))
			return;
		SirIns *i = sg_emit(g, SOP_tma_wait, n->span);
		i->imm = v;
		i->imm2 = sg_opattr(g, n, "read", true) != NULL;
		return;
	}
	case OP_FENCE: {
		const Node *a = n->kids.n ? n->kids.v[0] : NULL;
		int f = -1;
		if (!sg_argc(g, n, 1, 1))
			return;
		for (int k = 0; a->kind == N_NAME && fences[k]; k++)
			if (!strcmp(fences[k], a->name))
				f = k;
		if (f < 0) {
			diag_error(g->ctx, a->span, "'fence' takes one of "
				"'async_smem', 'mbar_init', 'tmem_before', "
				"'tmem_after' or 'acq_rel'");
			return;
		}
		if ((f == FENCE_TMEM_BEFORE || f == FENCE_TMEM_AFTER) &&
		    !sg_need_target(g, n, T_SM100, "a tensor-memory fence"))
			return;
		if ((f == FENCE_ASYNC_SMEM || f == FENCE_MBAR_INIT) &&
		    !sg_need_target(g, n, T_HOP, f == FENCE_MBAR_INIT ?
		    "'fence mbar_init' (fence.mbarrier_init)" :
		    "'fence async_smem' (the async "
		    "proxy)"))
			return;
		sg_emit(g, SOP_fence, n->span)->imm = f;
		return;
	}
	case OP_BSYNC: case OP_BARRIVE: {
		if (!sg_argc(g, n, 1, 1))
			return;
		Res *r = sg_resource(g, n->kids.v[0], R_NBAR, "a named barrier",
			&idx);
		if (!r)
			return;
		SirIns *i = sg_emit(g, n->op == OP_BSYNC ? SOP_bar_sync :
			SOP_bar_arrive, n->span);
		i->r[0] = r;
		i->ri[0] = idx;
		return;
	}
	case OP_MMA_COMMIT:
		if (sg_argc(g, n, 0, 0) && sg_need_target(g, n, T_SM90,
		    "'mma_commit' (wgmma.commit_group)"))
			sg_emit(g, SOP_wgmma_commit, n->span);
		return;
	case OP_MMA_WAIT:
		if (sg_argc(g, n, 1, 1) && sg_need_target(g, n, T_SM90,
		    "'mma_wait' (wgmma.wait_group)") && sg_const_arg(g,
		    n->kids.v[0], "the number of pending groups", 0, 7, &v))
			sg_emit(g, SOP_wgmma_wait, n->span)->imm = v;
		return;
	case OP_COMMIT: {
		/* multicast=M: the arrival reaches B in each CTA of M */
		sg_noattrs(g, n, (const char *const[]){"multicast", NULL});
		if (!sg_argc(g, n, 1, 1) || !sg_need_target(g, n, T_SM100,
		    "'commit' (tcgen05.commit)"))
			return;
		Res *r = sg_resource(g, n->kids.v[0], R_MBAR, "an mbarrier", &idx);
		const Node *mca = sg_opattr(g, n, "multicast", false);
		Ref mask = 0;
		if (!r || (mca && (!mca->a || !(mask = sg_cluster_arg(g, mca->a,
		    true)))))
			return;
		SirIns *i = sg_emit(g, SOP_tc_commit, n->span);
		i->r[0] = r;
		i->ri[0] = idx;
		i->cta = mask;
		if (mask)
			r->remote = true;
		return;
	}
	case OP_TMEM_ALLOC:
		if (!sg_argc(g, n, 1, 1) || !sg_need_target(g, n, T_SM100,
		    "'tmem_alloc'") || !sg_const_arg(g, n->kids.v[0],
		    "the column count", 32, 512, &v))
			return;
		if (g->p->part->warp_hi != g->p->part->warp_lo) {
			diag_error(g->ctx, n->span, "'tmem_alloc' is run by one "
				"whole warp; partition '%s' has %d", g->p->part->name,
				g->p->part->warp_hi - g->p->part->warp_lo + 1);
			return;
		}
		if (v & (v - 1)) {
			diag_error(g->ctx, n->kids.v[0]->span, "tensor memory is "
				"allocated in powers of two from 32 to 512 "
				"columns, found %lld", (long long)v);
			return;
		}
		if (g->k->tmem_cols && g->k->tmem_cols != v)
			diag_error(g->ctx, n->span, "tensor memory is allocated "
				"once per kernel; an earlier 'tmem_alloc' took %d "
				"columns", g->k->tmem_cols);
		g->k->tmem_cols = (int)v;
		sg_emit(g, SOP_tmem_alloc, n->span)->imm = v;
		return;
	case OP_TMEM_FREE:
		if (sg_argc(g, n, 0, 0) && sg_need_target(g, n, T_SM100,
		    "'tmem_free'"))
			sg_emit(g, SOP_tmem_free, n->span);
		return;
	case OP_EXIT:
		if (sg_argc(g, n, 0, 0))
			sg_emit(g, SOP_exit, n->span);
		return;
	case OP_GRID_DEP_WAIT:
		/* programmatic dependent launch: each thread waits for the
		 * grids before this one in the stream to complete and their
		 * memory to be visible; a thread that reads what they wrote
		 * must wait itself, so never one elected thread */
		if (!sg_argc(g, n, 0, 0) || !sg_need_target(g, n, T_HOP,
		    "'grid_dep_wait' (griddepcontrol)"))
			return;
		if (g->in_elect) {
			diag_error(g->ctx, n->span, "'grid_dep_wait' orders the "
				"previous kernel's writes before the reads of the "
				"thread that waits: every thread that reads them must "
				"wait, so it cannot be inside 'elect'");
			return;
		}
		g->k->pdl = true;
		sg_emit(g, SOP_grid_wait, n->span);
		return;
	case OP_GRID_DEP_LAUNCH:
		/* lets the next kernel in the stream launch before this one
		 * ends (it still waits for it in its grid_dep_wait) */
		if (sg_argc(g, n, 0, 0) && sg_need_target(g, n, T_HOP,
		    "'grid_dep_launch' (griddepcontrol)"))
			sg_emit(g, SOP_grid_launch, n->span);
		return;
	case OP_CLUSTER_SYNC:
		/* barrier.cluster: every thread of the cluster that has not
		 * exited, aligned (a warp's threads together) */
		if (!sg_argc(g, n, 0, 0))
			return;
		if (csize(g) == 1) {
			diag_error(g->ctx, n->span, "'cluster_sync' needs a "
				"cluster of several CTAs: declare 'cta threads=... "
				"cluster=(2)'");
			return;
		}
		if (g->in_elect) {
			diag_error(g->ctx, n->span, "'cluster_sync' is a barrier "
				"of every thread of the cluster; it cannot be inside "
				"'elect'");
			return;
		}
		sg_emit(g, SOP_cl_sync, n->span)->imm = 1;  /* release */
		return;
	}
}


/* sem_wait G[i, ...], v;  sem_add G[i, ...] [, n];  an i32 counter in
 * global memory: the wait spins until it holds at least v (acquire at
 * GPU scope), the add adds n, 1 by default (release at GPU scope).  CTAs
 * order their work by them (the backward's deterministic dQ, issue
 * #13); nothing else may read or write the global (sg_check_loads). */
static void
op_sem(G *g, const Node *n)
{
	bool wait = n->op == OP_SEM_WAIT;
	const char *nm = wait ? "sem_wait" : "sem_add";
	Ref idx = 0;

	sg_noattrs(g, n, NULL);
	if (!sg_argc(g, n, wait ? 2 : 1, 2))
		return;
	const Node *d = n->kids.v[0];
	if (d->kind != N_INDEX || d->a->kind != N_NAME) {
		diag_error(g->ctx, d->span, "write '%s G[i, ...]%s', G a "
			"global of i32 counters", nm, wait ? ", v" : " [, n]");
		return;
	}
	Node base = *d->a;
	Res *r = sg_resource(g, &base, R_GLOBAL, "a global tensor", &idx);
	if (!r)
		return;
	if (r->ety != TY_I32) {
		diag_error(g->ctx, d->a->span, "'%s' counts in a global of i32; "
			"'%s' holds %s", nm, r->name, ty_name(r->ety));
		return;
	}
	Ref last = 0, lin = sg_lin_index(g, d, r, &last);
	if (!lin)   /* register-tile indices are refused there */
		return;
	Ref v = n->kids.n > 1 ? sg_int_arg(g, n->kids.v[1], wait ?
		"the value 'sem_wait' waits for" : "what 'sem_add' adds") :
		sg_const_i(g, 1, TY_I32, n->span);
	if (sg_val(g, v)->ty == TY_ERR)
		return;
	SirIns *i = sg_emit(g, wait ? SOP_sem_wait : SOP_sem_add, n->span);
	r->direct = true;
	r->sem = true;
	i->a[0] = lin;
	i->a[1] = v;
	i->na = 2;
	i->r[0] = r;
}

void
sg_op(G *g, const Node *n)
{
	switch (n->op) {
	case OP_WAIT: case OP_ARRIVE: case OP_EXPECT:
		op_mbar(g, n);
		return;
	case OP_TMA_LOAD: case OP_TMA_STORE:
		op_tma(g, n, n->op == OP_TMA_LOAD);
		return;
	case OP_TLOAD: case OP_TSTORE: case OP_SSTORE: case OP_STORE:
	case OP_SLOAD:
		sg_op_mem(g, n);
		return;
	case OP_GLOAD:
		sg_op_gload(g, n);
		return;
	case OP_CP_ASYNC: case OP_CP_COMMIT: case OP_CP_WAIT:
		sg_op_cpasync(g, n);
		return;
	case OP_BULK_COPY:
		sg_op_bulk_copy(g, n);
		return;
	case OP_SEM_WAIT: case OP_SEM_ADD:
		op_sem(g, n);
		return;
	}
	if (n->op != OP_TMA_WAIT && n->op != OP_COMMIT)
		sg_noattrs(g, n, NULL);
	op_simple(g, n);
}

/* One MMA operand: a buffer (B[s], B.T, B[s].T), a TMEM region, or a
 * register tile.  Fills slot k of the instruction. */
bool
sg_mma_opd(G *g, const Node *e, SirIns *i, int k, bool value_ok)
{
	if (e->kind == N_FIELD && !strcmp(e->name, "T")) {
		i->trans[k] = true;
		e = e->a;
	}
	const Node *base = e->kind == N_INDEX ? e->a : e;
	Res *r = base->kind == N_NAME ? kernel_find(g->k, base->name) : NULL;
	if (r && (r->kind == R_SMEM || r->kind == R_TMEM)) {
		i->r[k] = sg_resource(g, e, r->kind, "an MMA operand", &i->ri[k]);
		return i->r[k] != NULL;
	}
	if (!value_ok || i->trans[k]) {
		diag_error(g->ctx, e->span, "expected a buffer%s", value_ok ?
			"" : " or a tensor-memory region");
		return false;
	}
	i->a[1] = sg_frag_var(g, e, "this operand");  /* a[1]: register A */
	return sg_val(g, i->a[1])->ty != TY_ERR;
}


bool
sg_resource_tmem(G *g, const Node *e, Ref *idx)
{
	return sg_resource(g, e, R_TMEM, "a tensor-memory region", idx) != NULL;
}

/* A layout in a 'reg' declaration: a declared name or 'rows(NAME)'. */
const Layout *
sg_layout_ref(G *g, const Node *e)
{
	bool cols = e->kind == N_CALL && e->a->kind == N_NAME &&
		!strcmp(e->a->name, "cols") && e->kids.n == 1;
	if (e->kind == N_CALL && e->a->kind == N_NAME && (cols ||
	    !strcmp(e->a->name, "rows")) && e->kids.n == 1) {
		const Layout *p = sg_layout_ref(g, e->kids.v[0]);
		if (!p)
			return NULL;
		if (cols && p->kind != LK_BLOCKED && p->kind != LK_WGMMA_ACC) {
			diag_error(g->ctx, e->span, "'cols' needs a 'blocked' "
				"layout or an MMA accumulator ('wgmma_acc', "
				"'mma_acc'); '%s' is neither", sg_layname(p));
			return NULL;
		}
		Layout *r = NEW(&g->ctx->perm, Layout);
		Buf b;
		*r = (Layout){.kind = cols ? LK_COLS : LK_ROWS, .parent = p,
			.m = p->m, .n = cols ? p->n : 1};
		buf_init(&b, &g->ctx->perm);
		buf_printf(&b, "%s(%s)", cols ? "cols" : "rows", sg_layname(p));
		r->name = b.p;
		return r;
	}
	Res *r = e->kind == N_NAME ? kernel_find(g->k, e->name) : NULL;
	if (!r || r->kind != R_LAYOUT) {
		diag_error(g->ctx, e->span, "expected the name of a 'layout', "
			"'rows(NAME)' or 'cols(NAME)'");
		return NULL;
	}
	if (r->cval.lay && r->cval.lay->kind == LK_SMEM) {
		diag_error(g->ctx, e->span, "'%s' is a shared-memory layout; a "
			"register tile needs a register layout", r->name);
		return NULL;
	}
	return r->cval.lay;
}
