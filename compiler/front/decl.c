/* decl.c: the declarations of a kernel's resources -- TMA views, the CTA,
 * the tile grid, layouts, shared-memory buffers, tensor memory, mbarriers,
 * named barriers, partitions and verify classes -- checked and folded into
 * Res and Part records.  Called by sema.c's walk over the items. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "front/front.h"
#include "front/sema.h"

static int
swizzle_of(S *s, const Node *d)
{
	int64_t sw = 0;

	if (attr(d, "swizzle") && attr_int(s, d, "swizzle", false, 0, 128,
	    &sw) && sw != 0 && sw != 32 && sw != 64 && sw != 128) {
		diag_error(s->ctx, attr(d, "swizzle")->a->span, "'swizzle' "
			"must be 0, 32, 64 or 128 (bytes), found %lld",
			(long long)sw);
		return 0;
	}
	return (int)sw;
}

/* Hopper's synchronization features, which sm_80 lacks: an error naming
 * the target and what to use instead. */
static bool
need_hopper(S *s, Span sp, const char *what, const char *instead)
{
	const Target *t = target_get(s->k->target);

	if (!t || t->hopper)
		return true;
	diag_error(s->ctx, sp, "%s is not available on %s%s", what, t->name,
		instead);
	return false;
}

void
decl_tma(S *s, const Node *d)
{
	static const char *const ok[] = {"box", "swizzle", "oob", NULL};
	static const char *const oob[] = {"zero", "nan", NULL};
	Res *r = declare(s, R_TMA, d);
	const Node *box;

	attrs_allowed(s, d, ok);
	if (!r || !need_hopper(s, d->nspan, "TMA ('tma')", "; load tiles with "
	    "'cp_async'"))
		return;
	if (!d->d) {
		diag_error(s->ctx, d->nspan, "'tma %s' needs the tensor it "
			"views: 'tma %s = X box=(...);'", d->name, d->name);
		return;
	}
	if (!(r->of = want_res(s, d->d, R_GLOBAL, "a 'global' tensor")))
		return;
	r->ety = r->of->ety;
	r->swizzle = swizzle_of(s, d);
	r->oob_nan = attr_word(s, d, "oob", oob, 0) == 1;
	if (!(box = attr(d, "box")) || !box->a) {
		diag_error(s->ctx, d->nspan, "'tma' needs 'box=(...)', one "
			"extent per dimension of '%s'", r->of->name);
		return;
	}
	const Node *b = box->a;
	int n = b->kind == N_TUPLE ? b->kids.n : 1;
	if (n != r->of->rank) {
		diag_error(s->ctx, b->span, "the box has %d extents but '%s' "
			"has %d dimensions", n, r->of->name, r->of->rank);
		diag_note(s->ctx, r->of->nspan, "'%s' declared here",
			r->of->name);
		return;
	}
	r->rank = n;
	for (int i = 0; i < n; i++) {
		const Node *e = b->kind == N_TUPLE ? b->kids.v[i] : b;
		want_int(s, e, "a box extent", 1, 256, &r->shape[i]);
	}
	int64_t inner = r->shape[n - 1] * ty_bytes(r->ety);
	if (inner % 16)
		diag_error(s->ctx, b->span, "the box's inner extent is %lld "
			"bytes; TMA needs a multiple of 16",
			(long long)inner);
	else if (r->swizzle && inner % r->swizzle)
		diag_error(s->ctx, b->span, "the box's inner extent (%lld "
			"bytes) must be a multiple of the %d-byte swizzle span",
			(long long)inner, r->swizzle);
}

void
decl_cta(S *s, const Node *d)
{
	static const char *const ok[] = {"threads", "cluster", "pair", NULL};
	const Node *c = attr(d, "cluster"), *pr = attr(d, "pair");
	int64_t t = 0, prod = 1;

	attrs_allowed(s, d, ok);
	if (s->k->threads) {
		diag_error(s->ctx, d->nspan, "'cta' is given twice");
		return;
	}
	if (attr_int(s, d, "threads", true, 32, 1024, &t) && t % 32)
		diag_error(s->ctx, attr(d, "threads")->a->span, "'threads' "
			"must be a multiple of 32, found %lld", (long long)t);
	s->k->threads = (int)(t / 32 * 32);
	s->k->cluster[0] = s->k->cluster[1] = s->k->cluster[2] = 1;
	if (c && c->a) {
		int n = c->a->kind == N_TUPLE ? c->a->kids.n : 1;
		int64_t v;
		if (n > 3)
			diag_error(s->ctx, c->a->span, "'cluster' has at most "
				"3 extents");
		for (int i = 0; i < n && i < 3; i++) {
			const Node *e = c->a->kind == N_TUPLE ?
				c->a->kids.v[i] : c->a;
			if (want_int(s, e, "a cluster extent", 1, 16, &v)) {
				s->k->cluster[i] = (int)v;
				prod *= v;
			}
		}
		if (prod > 16)
			diag_error(s->ctx, c->a->span, "a cluster has at most "
				"16 CTAs, found %lld", (long long)prod);
		else if (prod > 8 && s->k->target == TGT_SM120A)
			diag_error(s->ctx, c->a->span, "a cluster on sm_120a has "
				"at most 8 CTAs, found %lld", (long long)prod);
		else if (prod > 1)
			need_hopper(s, c->a->span, "a thread block cluster", "");
	}
	/* pair: Blackwell's CTA pair (tcgen05 .cta_group::2), ranks 2k and
	 * 2k + 1 of the cluster; the even one is the pair's leader */
	if (!pr)
		return;
	if (pr->a)
		diag_error(s->ctx, pr->span, "'pair' is a flag; it takes no "
			"value");
	else if (s->k->target != TGT_SM100A)
		diag_error(s->ctx, pr->span, "'pair' (the CTA pair of the "
			"tensor cores, tcgen05 .cta_group::2) needs "
			"target=sm_100a; this kernel is for %s",
			target_get(s->k->target) ?
			target_get(s->k->target)->name : "another target");
	else if (prod % 2)
		diag_error(s->ctx, pr->span, "'pair' needs a cluster of an "
			"even number of CTAs (the pairs are ranks 2k and 2k + "
			"1), found %lld: declare 'cluster=(2)'", (long long)prod);
	else
		s->k->pair = true;
}

void
decl_tiles(S *s, const Node *d)
{
	static const char *const ok[] = {"grid", "order", "group", "per_sm",
		NULL};
	static const char *const ord[] = {"single", "persistent", "lpt", NULL};
	const Node *g = attr(d, "grid"), *grp = attr(d, "group");
	const Node *ps = attr(d, "per_sm");

	attrs_allowed(s, d, ok);
	if (s->k->ntile_dims) {
		diag_error(s->ctx, d->nspan, "'tiles' is given twice");
		return;
	}
	s->k->tiles_span = d->nspan;
	int o = attr_word(s, d, "order", ord, 0);
	s->k->order = o < 0 ? ORD_SINGLE : (TileOrder)(o + 1);
	s->k->per_sm = 1;
	if (ps && ps->a) {
		int64_t v = 0;
		if (s->k->order == ORD_SINGLE)
			diag_error(s->ctx, ps->span, "'per_sm' sizes a persistent "
				"grid ('order=persistent' or 'order=lpt'); with "
				"one tile per CTA the grid is the tiles'");
		else if (ps->a->kind == N_NAME && !strcmp(ps->a->name, "max"))
			s->k->per_sm = 0;
		else if (want_int(s, ps->a, "'per_sm' (or 'max')", 1, 32, &v))
			s->k->per_sm = (int)v;
	}
	if (!g || !g->a) {
		diag_error(s->ctx, d->nspan, "'tiles' needs 'grid=(...)': the "
			"number of tiles along x, y and z");
		return;
	}
	int n = g->a->kind == N_TUPLE ? g->a->kids.n : 1;
	if (n > 3) {
		diag_error(s->ctx, g->a->span, "'grid' has at most 3 extents");
		n = 3;
	}
	for (int i = 0; i < n; i++) {
		s->k->tile_dims[i] = g->a->kind == N_TUPLE ? g->a->kids.v[i] :
			g->a;
		runtime_names(s, s->k->tile_dims[i]);
	}
	s->k->ntile_dims = n;
	if (grp && grp->a) {
		if (s->k->order == ORD_SINGLE)
			diag_error(s->ctx, grp->span, "'group' needs a persistent "
				"order ('order=persistent' or 'order=lpt'): with "
				"one tile per CTA the hardware picks the order");
		else if (n < 3)
			diag_error(s->ctx, grp->span, "'group' needs a 3-D grid: "
				"it groups the (x, y) planes and walks z within "
				"each group; this grid has %d extent%s", n,
				n == 1 ? "" : "s");
		runtime_names(s, grp->a);
		s->k->tile_group = grp->a;
	}
}

/* blocked(m=M, n=N, threads=P, tpr=T, vec=V): the geometry a blocked
 * layout must have (docs/LANGUAGE.md 8.1). */
static void
blocked_check(S *s, const Node *e, Layout *l)
{
	int p = l->threads, t = l->tpr, v = l->vec;

	if (!l->m || !l->n || !p || !t || !v) {
		diag_error(s->ctx, e->span, "'blocked' needs 'm=', 'n=', "
			"'threads=', 'tpr=' and 'vec=', e.g. 'blocked(m=1, "
			"n=4096, threads=256, tpr=256, vec=8)'");
		return;
	}
	if (p % 32 || p > 1024)
		diag_error(s->ctx, e->span, "'threads=%d' must be a multiple of "
			"32 up to 1024: the warps that hold the tile", p);
	else if (t & (t - 1) || p % t)
		diag_error(s->ctx, e->span, "'tpr=%d' (threads per row) must be "
			"a power of 2 that divides 'threads=%d'", t, p);
	else if (v & (v - 1) || v > 8)
		diag_error(s->ctx, e->span, "'vec=%d' must be 1, 2, 4 or 8", v);
	else if (l->m % (p / t))
		diag_error(s->ctx, e->span, "'m=%d' is not a multiple of %d, "
			"the rows the %d threads hold at once (threads / tpr)",
			l->m, p / t, p);
	else if (l->n % (t * v))
		diag_error(s->ctx, e->span, "'n=%d' is not a multiple of %d, "
			"the columns a row's threads hold at once (tpr * vec)",
			l->n, t * v);
	else if ((int64_t)l->m * l->n / p > 256)
		diag_error(s->ctx, e->span, "each thread would hold %lld "
			"elements of a %dx%d tile; at most 256 fit its registers",
			(long long)l->m * l->n / p, l->m, l->n);
}

/* layout NAME = smem(...) | wgmma_acc(...) | wgmma_a(...) | tmem_rows(...)
 * | blocked(...) | rows(L) | cols(L) */
static const Layout *
layout_expr(S *s, const Node *e)
{
	static const char *const kinds[] = {"smem", "wgmma_acc", "wgmma_a",
		"tmem_rows", "rows", "blocked", "cols", "mma_acc", "mma_a", NULL};
	/* mma_acc, mma_a: wgmma's m64 fragments, which four warps' mma.sync
	 * m16n8k16 also hold (sm_80, and sm_90a as a synonym) */
	static const LayoutKind lk[] = {LK_SMEM, LK_WGMMA_ACC, LK_WGMMA_A,
		LK_TMEM_ROWS, LK_ROWS, LK_BLOCKED, LK_COLS, LK_WGMMA_ACC,
		LK_WGMMA_A};
	Layout *l = NEW(&s->ctx->perm, Layout);
	int kind = -1;

	l->span = e->span;
	if (e->kind == N_NAME) {
		Res *r = want_res(s, e, R_LAYOUT, "a layout");
		return r ? r->cval.lay : NULL;
	}
	if (e->kind == N_CALL && e->a->kind == N_NAME)
		for (int i = 0; kinds[i]; i++)
			if (!strcmp(kinds[i], e->a->name))
				kind = i;
	if (kind < 0) {
		diag_error(s->ctx, e->span, "expected a layout: 'smem(...)', "
			"'wgmma_acc(n=...)', 'wgmma_a(n=...)', 'mma_acc(n=...)', "
			"'mma_a(n=...)', 'tmem_rows(n=...)', 'blocked(...)', "
			"'rows(L)' or 'cols(L)'");
		return NULL;
	}
	l->kind = lk[kind];
	l->m = l->kind == LK_TMEM_ROWS ? 128 : l->kind == LK_BLOCKED ? 0 : 64;
	bool vec = l->kind == LK_ROWS || l->kind == LK_COLS;
	for (int i = 0; i < e->kids.n; i++) {
		const Node *a = e->kids.v[i];
		int64_t v;
		if (vec && a->kind != N_NAMEDARG) {
			l->parent = layout_expr(s, a);
			continue;
		}
		if (a->kind != N_NAMEDARG) {
			diag_error(s->ctx, a->span, "layout arguments are "
				"named, e.g. 'swizzle=128'");
			continue;
		}
		if (l->kind == LK_SMEM && !strcmp(a->name, "swizzle")) {
			if (want_int(s, a->a, "'swizzle'", 0, 128, &v) &&
			    v != 0 && v != 32 && v != 64 && v != 128)
				diag_error(s->ctx, a->a->span, "'swizzle' must be "
					"0, 32, 64 or 128 (bytes)");
			l->swizzle = (int)v;
		} else if (l->kind == LK_SMEM && !strcmp(a->name, "major")) {
			if (a->a->kind == N_NAME && (!strcmp(a->a->name, "K") ||
			    !strcmp(a->a->name, "MN")))
				l->mn_major = a->a->name[0] == 'M';
			else
				diag_error(s->ctx, a->a->span, "'major' must be "
					"'K' or 'MN'");
		} else if (l->kind == LK_BLOCKED && (!strcmp(a->name, "m") ||
		    !strcmp(a->name, "n") || !strcmp(a->name, "threads") ||
		    !strcmp(a->name, "tpr") || !strcmp(a->name, "vec"))) {
			int *f = a->name[0] == 'm' ? &l->m : a->name[0] == 'n' ?
				&l->n : a->name[0] == 't' && a->name[1] == 'h' ?
				&l->threads : a->name[0] == 't' ? &l->tpr : &l->vec;
			if (want_int(s, a->a, "a 'blocked' argument", 1, 1 << 18,
			    &v))
				*f = (int)v;
		} else if (l->kind != LK_SMEM && !vec && l->kind != LK_BLOCKED &&
		    (!strcmp(a->name, "n") || !strcmp(a->name, "m"))) {
			if (want_int(s, a->a, "a fragment extent", 8, 256, &v))
				*(a->name[0] == 'n' ? &l->n : &l->m) = (int)v;
		} else {
			diag_error(s->ctx, a->nspan, "'%s' takes no argument "
				"'%s'", kinds[kind], a->name);
		}
	}
	if (vec && !l->parent) {
		diag_error(s->ctx, e->span, "'%s' needs the layout whose %s it "
			"holds, e.g. '%s(acc)'", kinds[kind], kinds[kind],
			kinds[kind]);
		return NULL;
	}
	if (l->kind == LK_COLS && l->parent->kind != LK_BLOCKED &&
	    l->parent->kind != LK_WGMMA_ACC) {
		diag_error(s->ctx, e->span, "'cols' needs a 'blocked' layout "
			"or an MMA accumulator ('wgmma_acc', 'mma_acc'); '%s' is "
			"neither", l->parent->name ? l->parent->name : "?");
		return NULL;
	}
	if (vec)  /* one value per row (column) of the parent's */
		l->m = l->parent->m;
	if (l->kind == LK_COLS)
		l->n = l->parent->n;
	if (l->kind == LK_BLOCKED)
		blocked_check(s, e, l);
	const Target *tg = target_get(s->k->target);
	bool frag = l->kind == LK_WGMMA_ACC || l->kind == LK_WGMMA_A;
	if (tg && !tg->has_tmem && l->kind == LK_TMEM_ROWS)
		diag_error(s->ctx, e->span, "'tmem_rows' is a tensor-memory "
			"layout; %s has no tensor memory", tg->name);
	if (tg && tg->has_tcgen05 && frag)
		diag_error(s->ctx, e->span, "'%s' is a register-fragment MMA "
			"layout; %s has no wgmma or mma.sync path (use "
			"'tmem_rows')", kinds[kind], tg->name);
	else if (tg && tg->mma_sync && frag && kind < 7)
		diag_error(s->ctx, e->span, "'%s' is a wgmma layout; %s has no "
			"wgmma (use '%s', the same fragments from mma.sync)",
			kinds[kind], tg->name, kind == 1 ? "mma_acc" : "mma_a");
	if (l->kind == LK_WGMMA_ACC && (l->n == 0 || l->n % 8))
		diag_error(s->ctx, e->span, "'%s' needs 'n=N' with N a "
			"multiple of 8 in 8..256", kinds[kind]);
	return l;
}

void
decl_layout(S *s, const Node *d)
{
	Res *r = declare(s, R_LAYOUT, d);

	attrs_allowed(s, d, (const char *const[]){NULL});
	if (!r)
		return;
	if (!d->d) {
		diag_error(s->ctx, d->nspan, "'layout %s' needs a value, e.g. "
			"'= smem(swizzle=128, major=K)'", d->name);
		return;
	}
	Layout *l = (Layout *)layout_expr(s, d->d);
	if (l && !l->name) {
		l->name = d->name;
		r->cval = (Val){.ty = TY_LAYOUT, .lay = l};
	} else if (l) {
		r->cval = (Val){.ty = TY_LAYOUT, .lay = l};
	}
}


void
decl_smem(S *s, const Node *d)
{
	static const char *const ok[] = {"layout", "swizzle", "major", "alias",
		NULL};
	Res *r = declare(s, R_SMEM, d);
	const Node *la = attr(d, "layout"), *al = attr(d, "alias");

	attrs_allowed(s, d, ok);
	if (!r)
		return;
	if (!d->b || d->b->kids.n < 1 || d->b->kids.n > 2) {
		diag_error(s->ctx, d->nspan, "'smem %s' needs a type such as "
			"'bf16[STAGES][R, C]' or 'f32[R, C]'", d->name);
		return;
	}
	r->ety = elem_type(s, d->b, false, true);
	r->stages = 1;
	const Node *shape = d->b->kids.v[d->b->kids.n - 1];
	if (d->b->kids.n == 2) {
		const Node *st = d->b->kids.v[0];
		int64_t v = 1;
		if (st->kids.n != 1)
			diag_error(s->ctx, st->span, "the stage count is one "
				"extent, e.g. '[STAGES]'");
		else if (want_int(s, st->kids.v[0], "the stage count", 1, 64,
		    &v))
			r->stages = (int)v;
		r->staged = true;
	}
	if (shape->kids.n > 2) {
		diag_error(s->ctx, shape->span, "a shared-memory tile has 1 or "
			"2 dimensions, found %d", shape->kids.n);
		return;
	}
	r->rank = shape->kids.n;
	for (int i = 0; i < r->rank; i++)
		want_int(s, shape->kids.v[i], "a tile extent", 1, 1 << 16,
			&r->shape[i]);
	if (la && (attr(d, "swizzle") || attr(d, "major")))
		diag_error(s->ctx, la->span, "give either 'layout=' or "
			"'swizzle='/'major=', not both");
	if (la && la->a) {
		r->lay = layout_expr(s, la->a);
		if (r->lay && r->lay->kind != LK_SMEM) {
			diag_error(s->ctx, la->a->span, "a shared-memory buffer "
				"needs an 'smem(...)' layout");
			r->lay = NULL;
		}
	}
	if (!r->lay) {
		Layout *l = NEW(&s->ctx->perm, Layout);
		l->kind = LK_SMEM;
		l->span = d->nspan;
		l->swizzle = swizzle_of(s, d);
		const Node *mj = attr(d, "major");
		bool word = mj && mj->a && mj->a->kind == N_NAME;
		if (word && !strcmp(mj->a->name, "MN"))
			l->mn_major = true;
		else if (mj && !(word && !strcmp(mj->a->name, "K")))
			diag_error(s->ctx, mj->span, "'major' must be 'K' or "
				"'MN'");
		r->lay = l;
	}
	int64_t row = r->shape[r->rank - 1] * ty_bytes(r->ety);
	if (r->lay->swizzle && row % r->lay->swizzle)
		diag_error(s->ctx, shape->span, "rows of '%s' are %lld bytes; "
			"a %d-byte swizzle needs a multiple of %d", d->name,
			(long long)row, r->lay->swizzle, r->lay->swizzle);
	if (al && al->a && (r->alias = want_res(s, al->a, R_SMEM,
	    "a shared-memory buffer")) && r->alias->alias)
		diag_error(s->ctx, al->a->span, "'%s' is itself an alias; "
			"alias the buffer it overlays", r->alias->name);
}

void
decl_tmem(S *s, const Node *d)
{
	static const char *const ok[] = {"col", "stride", "packed", "alias",
		NULL};
	Res *r = declare(s, R_TMEM, d);
	const Node *al = attr(d, "alias");
	int64_t v;

	attrs_allowed(s, d, ok);
	if (!r)
		return;
	if (s->k->target && !target_get(s->k->target)->has_tmem) {
		diag_error(s->ctx, d->nspan, "tensor memory ('tmem') is not "
			"available on %s", target_get(s->k->target)->name);
		return;
	}
	if (!d->b || d->b->kids.n != 1 || d->b->kids.v[0]->kids.n != 2) {
		diag_error(s->ctx, d->nspan, "'tmem %s' needs a type such as "
			"'f32[128, 128]' (lanes, columns)", d->name);
		return;
	}
	r->ety = elem_type(s, d->b, false, true);
	r->rank = 2;
	const Node *sh = d->b->kids.v[0];
	want_int(s, sh->kids.v[0], "the lane count", 32, 128, &r->shape[0]);
	want_int(s, sh->kids.v[1], "the column count", 1, 512, &r->shape[1]);
	r->packed = attr(d, "packed") != NULL;
	if (r->packed && ty_bytes(r->ety) != 2)
		diag_error(s->ctx, attr(d, "packed")->span, "'packed' holds two "
			"16-bit values per column; '%s' is %s", d->name,
			ty_name(r->ety));
	r->ncols = r->packed ? (r->shape[1] + 1) / 2 : r->shape[1];
	if (attr_int(s, d, "col", true, 0, 511, &v))
		r->col = v;
	r->threads = r->ncols;  /* stride between array elements */
	if (attr(d, "stride") && attr_int(s, d, "stride", false, 1, 512, &v))
		r->threads = v;
	if (al && al->a)
		r->alias = want_res(s, al->a, R_TMEM, "a tensor-memory region");
}

void
decl_mbar(S *s, const Node *d)
{
	static const char *const ok[] = {"count", "tx", NULL};
	Res *r = declare(s, R_MBAR, d);
	int64_t v;

	attrs_allowed(s, d, ok);
	if (!r)
		return;
	if (d->b)
		diag_error(s->ctx, d->b->span, "an 'mbar' has no type");
	r->mcount = 1;
	if (attr_int(s, d, "count", true, 1, (1 << 20) - 1, &v))
		r->mcount = v;
	if (attr(d, "tx") && attr_int(s, d, "tx", false, 0, (1 << 20) - 1,
	    &v) && need_hopper(s, attr(d, "tx")->span, "an mbarrier with "
	    "transaction bytes ('tx=')", ": its mbarriers count arrivals "
	    "only"))
		r->tx = v;
}

void
decl_nbar(S *s, const Node *d)
{
	static const char *const ok[] = {"threads", NULL};
	Res *r = declare(s, R_NBAR, d);
	int64_t v;

	attrs_allowed(s, d, ok);
	if (!r)
		return;
	if (attr_int(s, d, "threads", true, 32, 1024, &v)) {
		if (v % 32)
			diag_error(s->ctx, attr(d, "threads")->a->span, "a named "
				"barrier counts whole warps: 'threads' must be a "
				"multiple of 32, found %lld", (long long)v);
		r->threads = v;
	}
}

/* A family index is a constant while its instance's attributes are
 * evaluated: a temporary const binding that hides its name. */
static Res *
push_index(S *s, const char *name, int64_t i)
{
	Res *r = NEW(&s->ctx->perm, Res);

	r->kind = R_CONST;
	r->name = name;
	r->cval = (Val){.ty = TY_I64, .i = i};
	kernel_bind(s->ctx, s->k, r);
	return r;
}

static void
pop_index(S *s, Res *r)
{
	kernel_unbind(s->ctx, s->k, r);
}

void
decl_partition(S *s, const Node *d)
{
	static const char *const ok[] = {"warps", "regs", NULL};
	const Node *w = attr(d, "warps");
	int64_t n = 1;

	attrs_allowed(s, d, ok);
	if (!declare(s, R_PART, d))
		return;
	if (d->c && !want_int(s, d->a, "the family size", 1, 32, &n))
		return;
	if (!d->c && d->a) {
		diag_error(s->ctx, d->a->span, "a partition family is written "
			"'%s[i < N]'", d->name);
		return;
	}
	if (!w || !w->a) {
		diag_error(s->ctx, d->nspan, "'partition' needs 'warps=A..B'");
		return;
	}
	for (int64_t i = 0; i < n; i++) {
		Res *ix = d->c ? push_index(s, d->c->name, i) : NULL;
		Part *p = NEW(&s->ctx->perm, Part);
		int64_t lo = 0, hi = 0, regs = 0;
		bool ok_w;

		p->name = d->name;
		p->index = d->c ? (int)i : -1;
		p->ivar = d->c ? d->c->name : NULL;
		p->span = d->span;
		p->nspan = d->nspan;
		p->decl = d;
		if (w->a->kind == N_RANGE && !w->a->c)
			ok_w = want_int(s, w->a->a, "a warp index", 0, 31, &lo)
				&& want_int(s, w->a->b, "a warp index", 0, 31,
				&hi);
		else
			ok_w = want_int(s, w->a, "a warp index", 0, 31, &lo) &&
				(hi = lo, true);
		if (ok_w && hi < lo) {
			diag_error(s->ctx, w->a->span, "the warp range %lld..%lld "
				"is empty", (long long)lo, (long long)hi);
			ok_w = false;
		}
		/* regs=0: no budget, as without the attribute (so that a
		 * '-D' constant can leave it out) */
		if (attr(d, "regs") && attr_int(s, d, "regs", false, 0, 256,
		    &regs) && regs && (regs < 24 || regs % 8)) {
			diag_error(s->ctx, attr(d, "regs")->a->span, regs < 24 ?
				"'regs' must be 0 (no budget) or in 24..256, found "
				"%lld" : "'regs' must be a multiple of 8 "
				"(setmaxnreg), found %lld", (long long)regs);
			regs = 0;
		}
		if (regs && !need_hopper(s, attr(d, "regs")->span, "a register "
		    "budget ('regs=', setmaxnreg)", ": every warp keeps the "
		    "registers ptxas gives the kernel"))
			regs = 0;
		if (ix)
			pop_index(s, ix);
		if (!ok_w)
			continue;
		p->warp_lo = (int)lo;
		p->warp_hi = (int)hi;
		p->regs = (int)regs;
		if (s->k->parts_last)
			s->k->parts_last->next = p;
		else
			s->k->parts = p;
		s->k->parts_last = p;
		s->k->nparts++;
	}
}

/* The values of e (a value or a tuple of them: constant expressions,
 * 'PACK + 1'), folded into a node of the same shape whose values are
 * N_INT, for the verifier to read; at most max of them. */
static Node *
fold_values(S *s, const Node *e, int max, const char *what, int64_t lo,
	int64_t hi)
{
	int n = e->kind == N_TUPLE ? e->kids.n : 1;
	Node *t = e->kind == N_TUPLE ? node_new(s->ctx, N_TUPLE, e->span) :
		NULL;

	for (int k = 0; k < n && k < max; k++) {
		const Node *x = e->kind == N_TUPLE ? e->kids.v[k] : e;
		Node *f = node_new(s->ctx, N_INT, x->span);
		int64_t v = 0;
		want_int(s, x, what, lo, hi, &v);
		f->ival = v;
		if (!t)
			return f;
		nodelist_push(s->ctx, &t->kids, f);
	}
	return t ? t : node_new(s->ctx, N_INT, e->span);
}

/* One content of an integer global in 'verify': a list of at most
 * MAXVFY integers, folded. */
static Node *
verify_content(S *s, const Node *e)
{
	int n = e->kind == N_TUPLE ? e->kids.n : 1;

	if (n > MAXVFY)
		diag_error(s->ctx, e->span, "at most %d values per content",
			MAXVFY);
	return fold_values(s, e, MAXVFY, "a verified element", -(1 << 20),
		1 << 20);
}

/* verify P=(v, ...) G=([x, ...], ...) ...: the values of integer params
 * and the contents of integer globals the verifier explores (each
 * combination is one shape class). */
void
decl_verify(S *s, const Node *d)
{
	if (s->k->verify) {
		diag_error(s->ctx, d->nspan, "'verify' is given twice");
		return;
	}
	s->k->verify = d;
	for (int i = 0; i < d->attrs.n; i++) {
		const Node *a = d->attrs.v[i];
		Res *p = kernel_find(s->k, a->name);
		bool glob = p && p->kind == R_GLOBAL && ty_isint(p->ety);
		if (!p || (p->kind != R_PARAM && !glob) || !ty_isint(p->ety)) {
			diag_error(s->ctx, a->nspan, "'verify' gives values of "
				"integer params and contents of integer globals; "
				"'%s' is neither", a->name);
			continue;
		}
		if (!a->a) {
			diag_error(s->ctx, a->span, glob ? "write '%s=([v, "
				"...], ...)'" : "write '%s=(v, ...)'", a->name);
			continue;
		}
		int n = a->a->kind == N_TUPLE ? a->a->kids.n : 1;
		if (glob) {
			/* a list of lists: several contents; else one */
			bool many = n > 0 && a->a->kind == N_TUPLE &&
				a->a->kids.v[0]->kind == N_TUPLE;
			if (p->vfy)
				diag_error(s->ctx, a->nspan, "'%s' is given "
					"twice", a->name);
			if (!many) {
				p->vfy = verify_content(s, a->a);
				continue;
			}
			if (n > 16)
				diag_error(s->ctx, a->a->span, "at most 16 "
					"contents per global");
			Node *all = node_new(s->ctx, N_TUPLE, a->a->span);
			for (int k = 0; k < n && k < 16; k++)
				if (a->a->kids.v[k]->kind != N_TUPLE)
					diag_error(s->ctx, a->a->kids.v[k]->span,
						"write each content of '%s' as "
						"a list '[v, ...]'", a->name);
				else
					nodelist_push(s->ctx, &all->kids,
						verify_content(s, a->a->kids.v[k]));
			p->vfy = all;
			continue;
		}
		if (n > 16)
			diag_error(s->ctx, a->a->span, "at most 16 values per "
				"param");
		if (p->vfy)
			diag_error(s->ctx, a->nspan, "'%s' is given twice",
				a->name);
		p->vfy = fold_values(s, a->a, 16, "a verified value", 0,
			1 << 20);
	}
}
