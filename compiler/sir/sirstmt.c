/* sirstmt.c: statements of partition programs to SIR (the driver of
 * sirgen): bindings, assignments, structured control flow, compile-time
 * 'static if'/'static for', 'elect' and 'mma'. */
#include <string.h>

#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"
#include "sir/sirgen.h"

static void stmts(G *, const NodeList *);
static void block(G *, const Node *);

static bool
wg_aligned(const Part *p)
{
	return p->warp_lo % 4 == 0 && (p->warp_hi + 1) % 4 == 0;
}

/* The shapes each target's MMA accepts (PTX ISA: wgmma m64nNk16;
 * tcgen05.mma kind::f16, cta_group::1). */
static bool
mma_shape(G *g, const Node *n, int64_t m, int64_t nn, int64_t k)
{
	const Target *tg = target_get(g->k->target);
	bool sm90 = !tg->has_tcgen05;  /* wgmma or mma.sync: m64 fragments */

	if (k % 16) {
		diag_error(g->ctx, n->span, "the MMA's K is %lld; it must be a "
			"multiple of 16 for 16-bit inputs", (long long)k);
		return false;
	}
	/* A CTA pair's MMA (cta 'pair', tcgen05.mma.cta_group::2): M =
	 * 256 rows, A's 128 from each CTA's buffer and D's 128 into each
	 * CTA's tensor memory; N columns, B's first half from the leader's
	 * buffer and the second from the other CTA's (both at the same
	 * offset).  So this CTA's A is [128, K] and its B [N / 2, K]. */
	if (g->k->pair && (m != 128 || nn % 16 || nn < 16 || nn > 128)) {
		diag_error(g->ctx, n->span, "a CTA pair's tcgen05.mma is M = "
			"256 by N: each CTA holds 128 rows of A and N / 2 of B's "
			"columns (a multiple of 16 in 16..128); this CTA's part "
			"is A %lld rows, B %lld columns", (long long)m,
			(long long)nn);
		return false;
	}
	if (g->k->pair)
		return true;
	if (sm90 && (m != 64 || nn % 8 || nn < 8 || nn > 256)) {
		diag_error(g->ctx, n->span, tg->mma_sync ? "mma.sync computes "
			"m16n8k16 per warp, four warps an m64nN tile with N a "
			"multiple of 8 in 8..256; this MMA is %lldx%lld" :
			"wgmma computes m64nNk16 per warpgroup with N a multiple "
			"of 8 in 8..256; this MMA is %lldx%lld", (long long)m,
			(long long)nn);
		return false;
	}
	if (!sm90 && ((m != 64 && m != 128) || nn < 8 || nn > 256 || nn % 8 ||
	    (m == 128 && nn % 16))) {
		diag_error(g->ctx, n->span, "tcgen05.mma needs M = 64 or 128 "
			"and N in 8..256 (a multiple of 16 when M = 128); this "
			"MMA is %lldx%lld", (long long)m, (long long)nn);
		return false;
	}
	return true;
}

/* B is [K, N]: 'X.T' with X [N, K] K-major, or 'X' with X [K, N] MN-major.
 * A is [M, K]: X K-major, or a register/TMEM tile. */
static bool
mma_dims(G *g, const Node *n, SirIns *i, int64_t *m, int64_t *nn,
	int64_t *k, Ty *ety)
{
	const Res *b = i->r[2];

	if (b->rank != 2 || (i->r[1] && i->r[1]->rank != 2)) {
		diag_error(g->ctx, n->span, "MMA operands are 2-D tiles");
		return false;
	}
	bool mn = b->lay->mn_major;
	if (i->trans[2] == mn) {
		diag_error(g->ctx, n->c->span, "'%s' is declared major=%s, so "
			"it is used as %s; write '%s%s'", b->name, mn ? "MN" : "K",
			mn ? "[K, N] directly" : "[N, K] transposed", b->name,
			mn ? "" : ".T");
		return false;
	}
	*k = i->trans[2] ? b->shape[1] : b->shape[0];
	*nn = i->trans[2] ? b->shape[0] : b->shape[1];
	*ety = b->ety;
	if (i->r[1]) {
		const Res *a = i->r[1];
		int64_t ak = a->kind == R_TMEM ? a->shape[1] : a->shape[1];
		if (a->kind == R_SMEM && a->lay->mn_major != i->trans[1]) {
			diag_error(g->ctx, n->b->span, "'%s' is declared major=%s; "
				"use it as %s", a->name, a->lay->mn_major ? "MN" :
				"K", a->lay->mn_major ? "'X.T'" : "'X'");
			return false;
		}
		if (a->kind == R_SMEM && i->trans[1])
			ak = a->shape[0];
		/* an MN-major A ('X.T') is [K, M]: its rows are X's columns */
		int64_t arows = (a->kind == R_SMEM && i->trans[1]) ?
			a->shape[1] : a->shape[0];
		*m = !target_get(g->k->target)->has_tcgen05 ? 64 : arows -
			i->roff[1];
		if (i->roff[1] + *m > arows) {
			diag_error(g->ctx, n->b->span, "rows %lld..%lld of '%s' "
				"are past its %lld rows", (long long)i->roff[1],
				(long long)(i->roff[1] + *m - 1), a->name,
				(long long)arows);
			return false;
		}
		if (ak != *k || a->ety != b->ety) {
			diag_error(g->ctx, n->span, "A is %s[%lld, %lld] but B "
				"needs K = %lld of %s", ty_name(a->ety),
				(long long)*m, (long long)ak, (long long)*k,
				ty_name(b->ety));
			return false;
		}
		if (a->kind == R_TMEM && !a->packed) {
			diag_error(g->ctx, n->b->span, "an A operand in tensor "
				"memory holds 16-bit values two to a column: "
				"declare '%s' 'packed'", a->name);
			return false;
		}
	} else {
		const SirVal *a = sg_val(g, i->a[1]);
		if (a->lay->kind != LK_WGMMA_A) {
			const char *al = target_get(g->k->target)->mma_sync ?
				"mma_a" : "wgmma_a";
			diag_error(g->ctx, n->b->span, "a register A operand "
				"needs layout '%s'; '%s' has '%s': write "
				"'convert(cvt(%s, %s), <a %s layout>)'", al,
				sg_text(g, n->b->span, a->name ? a->name :
				"the tile"), sg_layname(a->lay),
				sg_text(g, n->b->span, "x"), ty_name(b->ety), al);
			return false;
		}
		if (a->n != *k || a->ety != b->ety) {
			diag_error(g->ctx, n->span, "A is %s[%d, %d] but B needs "
				"K = %lld of %s", ty_name(a->ety), a->m, a->n,
				(long long)*k, ty_name(b->ety));
			return false;
		}
		*m = a->m;
	}
	if (*ety != TY_BF16 && *ety != TY_F16) {
		diag_error(g->ctx, n->span, "MMA inputs are bf16 or f16, found "
			"%s", ty_name(*ety));
		return false;
	}
	return true;
}

static void
mma(G *g, const Node *n)
{
	const Target *tg = target_get(g->k->target);
	bool sm90 = !tg->has_tcgen05;  /* into registers: wgmma, mma.sync */
	SirIns t = {.op = tg->mma_sync ? SOP_mma_sync : sm90 ? SOP_wgmma :
		SOP_tc_mma, .span = n->span};
	int64_t m, nn, k, arow = 0;
	Ty ety;

	sg_noattrs(g, n, (const char *const[]){"acc", "arow", NULL});
	if (n->op != '=' && n->op != '+') {
		diag_error(g->ctx, n->span, "write 'mma D = A @ B' or 'mma D += "
			"A @ B'");
		return;
	}
	t.imm = n->op == '+';
	t.na = 2;  /* a[0]: acc predicate, a[1]: register A */
	const Node *acc = sg_opattr(g, n, "acc", false);
	if (acc && acc->a) {
		t.a[0] = sg_cond(g, acc->a);
		t.imm = 1;
	}
	const Node *ar = sg_opattr(g, n, "arow", false);
	if (ar && ar->a && !sg_const_arg(g, ar->a, "'arow'", 0, 1024, &arow))
		return;
	t.roff[1] = arow;
	/* D */
	if (sm90) {
		Ref d = sg_expr(g, n->a);
		SirVal *dv = sg_val(g, d);
		if (dv->ty == TY_ERR)
			return;
		if (dv->ty != TY_FRAG || !dv->mut || dv->lay->kind !=
		    LK_WGMMA_ACC || dv->ety != TY_F32) {
			diag_error(g->ctx, n->a->span, "on %s the MMA "
				"accumulates into a 'reg' f32 tile with a '%s' "
				"layout", tg->name, tg->mma_sync ? "mma_acc" :
				"wgmma_acc");
			return;
		}
		t.dst = d;
	} else {
		Ref idx;
		const Node *b = n->a->kind == N_INDEX ? n->a->a : n->a;
		Res *r = b->kind == N_NAME ? kernel_find(g->k, b->name) : NULL;
		if (!r || r->kind != R_TMEM) {
			diag_error(g->ctx, n->a->span, "on sm_100a the MMA "
				"accumulates into a tensor-memory region");
			return;
		}
		if (!sg_resource_tmem(g, n->a, &idx))
			return;
		t.r[0] = r;
		t.ri[0] = idx;
	}
	if (!sg_mma_opd(g, n->b, &t, 1, sm90) ||
	    !sg_mma_opd(g, n->c, &t, 2, false))
		return;
	if (ar && !t.r[1]) {
		diag_error(g->ctx, ar->span, "'arow' selects rows of a buffer; "
			"a register A operand has no rows to select");
		return;
	}
	if (t.r[1] && t.r[1]->kind == R_TMEM && sm90)
		return;
	if (tg->mma_sync && t.roff[1] % 16) {
		diag_error(g->ctx, ar->span, "on %s 'arow' is a multiple of 16 "
			"(mma.sync reads A in 16-row blocks), found %lld",
			tg->name, (long long)t.roff[1]);
		return;
	}
	if (!t.r[2] || t.r[2]->kind != R_SMEM) {
		diag_error(g->ctx, n->c->span, "operand B comes from shared "
			"memory");
		return;
	}
	if (!mma_dims(g, n, &t, &m, &nn, &k, &ety) || !mma_shape(g, n, m, nn,
	    k))
		return;
	if (g->k->pair)  /* N: both CTAs' halves of B */
		nn *= 2;
	if (sm90) {
		SirVal *dv = sg_val(g, t.dst);
		if (dv->n != nn) {
			diag_error(g->ctx, n->a->span, "the accumulator is "
				"[%d,%d] but A @ B is [%lld,%lld]", dv->m, dv->n,
				(long long)m, (long long)nn);
			return;
		}
		if (!wg_aligned(g->p->part) || g->in_elect) {
			diag_error(g->ctx, n->span, tg->mma_sync ? "the m64 "
				"mma.sync tile is four warps' (16 rows each, by "
				"warp %% 4): run it in a partition of 4k aligned "
				"warps, outside 'elect'" : "wgmma is issued by whole "
				"warpgroups: run it in a partition of 4k aligned "
				"warps, outside 'elect'");
			return;
		}
	} else {
		const Res *d = t.r[0];
		if (d->shape[0] != m || d->shape[1] != nn || d->ety != TY_F32) {
			diag_error(g->ctx, n->a->span, g->k->pair ? "'%s' is "
				"%s[%lld,%lld] but this CTA's rows of the pair's A "
				"@ B are f32[%lld,%lld]" : "'%s' is %s[%lld,%lld] "
				"but A @ B is f32[%lld,%lld]", d->name,
				ty_name(d->ety), (long long)d->shape[0],
				(long long)d->shape[1], (long long)m,
				(long long)nn);
			return;
		}
		if (!g->in_elect) {
			diag_error(g->ctx, n->span, "tcgen05.mma is issued by "
				"one thread: put it inside 'elect { }'");
			return;
		}
	}
	*sg_emit(g, t.op, n->span) = t;
}

/* A declaration that failed its checks still binds its name, to an
 * error value that later uses pass over silently: one mistake, one
 * error (no "'c' is not declared" after a rejected 'reg c'). */
static void
bind_err(G *g, const Node *n)
{
	sg_bind(g, n->name, sg_err(g), n->nspan);
}

static void
let(G *g, const Node *n)
{
	Ref r = n->a ? sg_expr(g, n->a) : 0;

	if (n->kind == N_LET) {
		if (n->b) {
			Val tv;
			Node tn = *n->b;
			tn.kind = N_NAME;
			if (n->b->kids.n || !const_eval(g->ctx, g->k, &tn, &tv) ||
			    tv.ty != TY_DTYPE) {
				diag_error(g->ctx, n->b->span, "'%s' is not a "
					"scalar type", n->b->name);
				bind_err(g, n);
				return;
			}
			SirVal *v = sg_val(g, r);
			if (v->ty != (Ty)tv.i && v->ty != TY_ERR &&
			    !(v->isconst && ty_isint(v->ty) &&
			    (ty_isint((Ty)tv.i) || tv.i == TY_F32))) {
				diag_error(g->ctx, n->a->span, "'%s' is %s but its "
					"value is %s", n->name, ty_name((Ty)tv.i),
					v->ty == TY_FRAG ? "a register tile" :
					ty_name(v->ty));
				bind_err(g, n);
				return;
			}
			r = sg_coerce(g, r, (Ty)tv.i, n->a->span);
		}
		sg_bind(g, n->name, r, n->nspan);
		if (!sg_val(g, r)->name)
			sg_val(g, r)->name = n->name;
		return;
	}
	Ty t = TY_I32;
	if (n->b) {
		Val v;
		Node tn = *n->b;
		tn.kind = N_NAME;
		if (n->b->kids.n || !const_eval(g->ctx, g->k, &tn, &v) ||
		    v.ty != TY_DTYPE || !(ty_isint((Ty)v.i) || v.i == TY_F32 ||
		    v.i == TY_BOOL)) {
			diag_error(g->ctx, n->b->span, "a 'var' is a scalar: "
				"'i32', 'u32', 'i64', 'u64', 'f32' or 'bool'");
			bind_err(g, n);
			return;
		}
		t = (Ty)v.i;
	} else if (r) {
		t = sg_val(g, r)->ty;
		if (t == TY_FRAG || t == TY_TILE) {
			diag_error(g->ctx, n->span, "a 'var' is a scalar; "
				"declare register tiles with 'reg'");
			bind_err(g, n);
			return;
		}
	}
	if (r && sg_val(g, r)->ty != TY_ERR && sg_val(g, r)->ty != t) {
		SirVal *iv = sg_val(g, r);
		bool ok = iv->isconst && ty_isint(iv->ty) && (ty_isint(t) ||
			t == TY_F32);
		if (!ok) {
			diag_error(g->ctx, n->a->span, "'%s' is %s but its "
				"initial value is %s", n->name, ty_name(t),
				iv->ty == TY_FRAG ? "a register tile" :
				ty_name(iv->ty));
			bind_err(g, n);
			return;
		}
		r = sg_coerce(g, r, t, n->a->span);
	}
	Ref d = sir_val(g->ctx, g->p, t, n->name);
	sg_val(g, d)->mut = true;
	if (!r)
		r = t == TY_F32 ? sg_const_f(g, 0, n->span) : sg_const_i(g, 0, t,
			n->span);
	SirIns *i = sg_emit(g, SOP_mov, n->span);
	i->dst = d;
	i->a[0] = r;
	i->na = 1;
	sg_bind(g, n->name, d, n->nspan);
}

static void
reg(G *g, const Node *n)
{
	const Node *la = NULL, *init = NULL;
	const Layout *l = NULL;

	sg_noattrs(g, n, (const char *const[]){"layout", "init", NULL});
	for (int i = 0; i < n->attrs.n; i++) {
		if (!strcmp(n->attrs.v[i]->name, "layout"))
			la = n->attrs.v[i]->a;
		if (!strcmp(n->attrs.v[i]->name, "init"))
			init = n->attrs.v[i]->a;
	}
	if (!la) {
		diag_error(g->ctx, n->nspan, "a 'reg' tile needs 'layout=L'");
		bind_err(g, n);
		return;
	}
	l = sg_layout_ref(g, la);
	if (!l) {
		bind_err(g, n);
		return;
	}
	Ty ety = TY_ERR;
	Val v;
	Node tn = *n->b;
	tn.kind = N_NAME;
	if (const_eval(g->ctx, g->k, &tn, &v) && v.ty == TY_DTYPE)
		ety = (Ty)v.i;
	if (ety != TY_F32 && ety != TY_BF16 && ety != TY_F16) {
		diag_error(g->ctx, n->b->span, "a register tile holds f32, bf16 "
			"or f16");
		bind_err(g, n);
		return;
	}
	bool cols = l->kind == LK_COLS;
	int want = l->kind == LK_ROWS || cols ? 1 : 2;
	bool wide = cols || l->kind == LK_BLOCKED;
	if (n->b->kids.n != 1 || n->b->kids.v[0]->kids.n != want) {
		diag_error(g->ctx, n->b->span, "a tile with layout '%s' has %d "
			"dimension%s, e.g. '%s'", sg_layname(l), want,
			want == 1 ? "" : "s", want == 1 ? "f32[64]" :
			"f32[64, 128]");
		bind_err(g, n);
		return;
	}
	int64_t sh[2] = {0, 1};
	for (int i = 0; i < want; i++)
		if (!sg_const_arg(g, n->b->kids.v[0]->kids.v[i], "a tile extent", 1,
		    wide ? 1 << 18 : 512, &sh[i])) {
			bind_err(g, n);
			return;
		}
	if (cols && l->parent->kind == LK_WGMMA_ACC && ety != TY_F32) {
		diag_error(g->ctx, n->b->span, "a column vector of an MMA "
			"accumulator holds f32");
		bind_err(g, n);
		return;
	}
	if (cols) {  /* a column vector: 1 x n */
		if (sh[0] != l->n) {
			diag_error(g->ctx, n->b->span, "layout '%s' has %d "
				"columns but the vector has %lld",
				sg_layname(l), l->n, (long long)sh[0]);
			bind_err(g, n);
			return;
		}
		sh[1] = sh[0];
		sh[0] = 1;
	}
	if (l->kind != LK_ROWS && !cols && (l->m != sh[0] ||
	    (l->n && l->n != sh[1]))) {
		diag_error(g->ctx, n->b->span, "layout '%s' is %dx%d but the "
			"tile is %lldx%lld", sg_layname(l), l->m, l->n,
			(long long)sh[0], (long long)sh[1]);
		bind_err(g, n);
		return;
	}
	const Layout *bl = cols ? l->parent : l;
	const Layout *blk = l->kind == LK_ROWS ? l->parent : bl;
	int pthreads = 32 * (g->p->part->warp_hi - g->p->part->warp_lo + 1);
	if (blk && blk->kind == LK_BLOCKED && blk->threads != pthreads) {
		diag_error(g->ctx, la->span, "layout '%s' spreads a tile over "
			"'threads=%d', but partition '%s' has %d threads: each "
			"of them must hold its part", sg_layname(blk),
			blk->threads, g->p->part->name, pthreads);
		bind_err(g, n);
		return;
	}
	if (wide && ty_bytes(ety) == 2 && bl->tpr && (cols ? bl->n /
	    bl->tpr : (int64_t)bl->m * bl->n / bl->threads) % 2) {
		diag_error(g->ctx, n->b->span, "a 16-bit tile of '%s' needs "
			"an even count of elements per thread", sg_layname(l));
		bind_err(g, n);
		return;
	}
	Ref d = sir_val(g->ctx, g->p, TY_FRAG, n->name);
	SirVal *dv = sg_val(g, d);
	*dv = (SirVal){.ty = TY_FRAG, .name = n->name, .mut = true, .ety = ety,
		.lay = l, .m = (int)sh[0], .n = (int)sh[1]};
	Ref iv = init ? sg_expr(g, init) : sg_const_f(g, 0, n->span);
	if (sg_val(g, iv)->ty != TY_F32 && !(sg_val(g, iv)->isconst) &&
	    sg_val(g, iv)->ty != TY_ERR)
		diag_error(g->ctx, init->span, "'init' is an f32 scalar");
	SirIns *i = sg_emit(g, SOP_fill, n->span);
	i->dst = d;
	i->a[0] = iv;
	i->na = 1;
	sg_bind(g, n->name, d, n->nspan);
}

/* An assignment to an unknown name: the closest 'var' or 'reg'. */
static void
undeclared_var(G *g, const Node *n)
{
	Suggest s;

	diag_suggest_init(&s, n->name);
	for (const Bind *b = g->scope; b; b = b->next)
		if (sg_val(g, b->ref)->mut)
			diag_suggest_add(&s, b->name);
	diag_undeclared(g->ctx, n->span, &s);
}

static void
assign(G *g, const Node *n)
{
	Bind *b = n->a->kind == N_NAME ? sg_lookup(g, n->a->name) : NULL;
	Ref r;

	if (b && sg_val(g, b->ref)->ty == TY_ERR) {  /* reported already */
		sg_expr(g, n->b);
		return;
	}
	if (!b || !sg_val(g, b->ref)->mut) {
		if (n->a->kind == N_NAME && !b && !kernel_find(g->k,
		    n->a->name))
			undeclared_var(g, n->a);
		else
			diag_error(g->ctx, n->a->span, "only 'var' and 'reg' "
				"variables can be assigned");
		sg_expr(g, n->b);
		return;
	}
	if (n->op == '=') {
		r = sg_expr(g, n->b);
	} else {
		Node bin = {.kind = N_BINARY, .op = n->op, .span = n->span,
			.a = n->a, .b = n->b};
		r = sg_expr(g, &bin);
	}
	SirVal *d = sg_val(g, b->ref), *s = sg_val(g, r);
	if (s->ty == TY_ERR)
		return;
	if (d->ty == TY_FRAG) {
		if (s->ty == TY_FRAG && !sg_same_layout(d->lay, s->lay)) {
			diag_error(g->ctx, n->span, "'%s' has layout '%s' but "
				"the value has '%s'; write 'convert(..., %s)'",
				d->name, sg_layname(d->lay), sg_layname(s->lay),
				sg_layname(d->lay));
			return;
		}
		if (s->ty == TY_FRAG && (s->m != d->m || s->n != d->n ||
		    s->ety != d->ety)) {
			diag_error(g->ctx, n->span, "'%s' is %s[%d,%d] but the "
				"value is %s[%d,%d]", d->name, ty_name(d->ety),
				d->m, d->n, ty_name(s->ety), s->m, s->n);
			return;
		}
		if (s->ty != TY_FRAG) {
			SirIns *i = sg_emit(g, SOP_fill, n->span);
			i->dst = b->ref, i->a[0] = r, i->na = 1;
			return;
		}
	} else if (d->ty != s->ty && !(s->isconst && ty_isint(s->ty) &&
	    (ty_isint(d->ty) || d->ty == TY_F32))) {
		diag_error(g->ctx, n->span, "'%s' is %s but the value is %s",
			d->name, ty_name(d->ty), s->ty == TY_FRAG ?
			"a register tile" : ty_name(s->ty));
		return;
	} else if (d->ty != s->ty) {
		r = sg_coerce(g, r, d->ty, n->b->span);
	}
	SirIns *i = sg_emit(g, SOP_mov, n->span);
	i->dst = b->ref;
	i->a[0] = r;
	i->na = 1;
}

static SirBlock *
sub(G *g, const Node *body)
{
	SirBlock *saved = g->cur, *nb = sir_block(g->ctx);

	g->cur = nb;
	if (body)
		block(g, body);
	g->cur = saved;
	return nb;
}

static void
if_stmt(G *g, const Node *n)
{
	Ref c = sg_cond(g, n->a);
	int64_t cv;

	if (sg_const_int(g, c, &cv)) {
		if (cv)
			block(g, n->b);
		else if (n->c)
			n->c->kind == N_IF ? if_stmt(g, n->c) : block(g, n->c);
		return;
	}
	SirIns tmp = {.op = SOP_if, .span = n->span, .a = {c}, .na = 1};
	tmp.body = sub(g, n->b);
	tmp.els = sir_block(g->ctx);
	if (n->c) {
		SirBlock *saved = g->cur;
		g->cur = tmp.els;
		n->c->kind == N_IF ? if_stmt(g, n->c) : block(g, n->c);
		g->cur = saved;
	}
	*sg_emit(g, SOP_if, n->span) = tmp;
}

static void
for_stmt(G *g, const Node *n)
{
	Bind *saved = g->scope;

	if (n->a->kind == N_TILES) {
		if (g->p->part && g->loop_depth) {
			diag_error(g->ctx, n->span, "'for %s in tiles' must not "
				"be nested in another loop", n->name);
			return;
		}
		SirIns tmp = {.op = SOP_tile, .span = n->span};
		for (int k = 0; k < g->k->ntile_dims; k++) {
			tmp.a[k] = sg_expr(g, g->k->tile_dims[k]);
			if (!ty_isint(sg_val(g, tmp.a[k])->ty))
				diag_error(g->ctx, g->k->tile_dims[k]->span, "a "
					"tile-grid extent must be an integer");
		}
		tmp.na = g->k->ntile_dims;
		if (g->k->tile_group) {
			/* operands x, y, z, group: a grouped walk (ptxgen.c's
			 * gen_tile, verify.c's tile_at) */
			for (int k = tmp.na; k < 3; k++)
				tmp.a[k] = sg_const_i(g, 1, TY_I32, n->span);
			tmp.a[3] = sg_expr(g, g->k->tile_group);
			if (!ty_isint(sg_val(g, tmp.a[3])->ty))
				diag_error(g->ctx, g->k->tile_group->span, "a "
					"tile group must be an integer");
			tmp.na = 4;
		}
		Ref t = sir_val(g->ctx, g->p, TY_TILE, n->name);
		tmp.dst = t;
		sg_bind(g, n->name, t, n->nspan);
		g->loop_depth++;
		tmp.body = sub(g, n->b);
		*sg_emit(g, SOP_tile, n->span) = tmp;
		g->loop_depth--;
		sg_unscope(g, saved);
		return;
	}
	if (n->a->kind != N_RANGE) {
		diag_error(g->ctx, n->a->span, "a loop runs over 'A..B [step "
			"S]' or 'tiles'");
		return;
	}
	Ref lo = sg_expr(g, n->a->a), hi = sg_expr(g, n->a->b);
	Ref st = n->a->c ? sg_expr(g, n->a->c) : sg_const_i(g, 1, TY_I32, n->span);
	int64_t sv;
	if (!sg_const_int(g, st, &sv) || sv <= 0) {
		diag_error(g->ctx, n->a->c ? n->a->c->span : n->span, "a loop "
			"step is a positive constant");
		return;
	}
	for (int k = 0; k < 2; k++) {
		Ref x = k ? hi : lo;
		if (!ty_isint(sg_val(g, x)->ty) && sg_val(g, x)->ty != TY_ERR)
			diag_error(g->ctx, (k ? n->a->b : n->a->a)->span, "loop "
				"bounds are integers");
	}
	Ref iv = sir_val(g->ctx, g->p, TY_I32, n->name);
	sg_bind(g, n->name, iv, n->nspan);
	g->loop_depth++;
	SirIns tmp = {.op = SOP_for, .dst = iv, .span = n->span,
		.a = {lo, hi, st}, .na = 3};
	tmp.body = sub(g, n->b);
	*sg_emit(g, SOP_for, n->span) = tmp;
	g->loop_depth--;
	sg_unscope(g, saved);
}

static void
static_stmt(G *g, const Node *n)
{
	if (n->kind == N_SIF) {
		int mark = g->cur->n;
		Ref c = sg_cond(g, n->a);
		int64_t cv;
		if (sg_val(g, c)->ty == TY_ERR)
			return;
		if (!sg_const_int(g, c, &cv)) {
			diag_error(g->ctx, n->a->span, "'static if' needs a "
				"constant condition; use 'if' for a runtime one");
			return;
		}
		/* a constant condition leaves only dead constants behind */
		g->cur->n = mark;
		/* compile-time selection adds no scope: names the chosen
		 * branch binds stay visible after it, as if written there */
		if (cv)
			stmts(g, &n->b->kids);
		else if (n->c)
			n->c->kind == N_SIF ? static_stmt(g, n->c) :
				stmts(g, &n->c->kids);
		return;
	}
	int64_t lo, hi, st = 1;
	if (n->a->kind != N_RANGE || !sg_const_arg(g, n->a->a, "a 'static for' "
	    "bound", -65536, 65536, &lo) || !sg_const_arg(g, n->a->b,
	    "a 'static for' bound", -65536, 65536, &hi) || (n->a->c &&
	    !sg_const_arg(g, n->a->c, "a 'static for' step", 1, 65536, &st))) {
		if (n->a->kind != N_RANGE)
			diag_error(g->ctx, n->a->span, "'static for' runs over "
				"constant 'A..B [step S]'");
		return;
	}
	if ((hi - lo) / st > 4096) {
		diag_error(g->ctx, n->a->span, "'static for' unrolls at most "
			"4096 iterations");
		return;
	}
	const Node *outer = g->sfor;
	g->sfor = n;
	for (int64_t i = lo; i < hi && !g->exp->blown; i += st) {
		Bind *saved = g->scope;
		sg_bind(g, n->name, sg_const_i(g, i, TY_I32, n->span), n->nspan);
		block(g, n->b);
		sg_unscope(g, saved);
	}
	g->sfor = outer;
}

/* Counts a statement against MAXEXPAND; past it, reports once, at the
 * innermost 'static for' that is unrolling (else the statement), and
 * stops the expansion: checked as it grows, so a program too large to
 * build is never built. */
static bool
expand_ok(G *g, const Node *n)
{
	Expand *x = g->exp;
	int64_t size = ++x->stmts + x->vals + g->p->nvals;

	if (x->blown)
		return false;
	if (size <= MAXEXPAND)
		return true;
	x->blown = true;
	if (g->sfor)
		diag_error(g->ctx, (Span){g->sfor->span.lo, g->sfor->a->span.hi},
			"unrolling this 'static for' takes the kernel past %d "
			"statements and values (the expansion limit)", MAXEXPAND);
	else
		diag_error(g->ctx, n->span, "the kernel has more than %d "
			"statements and values (the expansion limit)",
			MAXEXPAND);
	return false;
}

static void
elect(G *g, const Node *n)
{
	if (g->in_elect) {
		diag_error(g->ctx, n->span, "'elect' inside 'elect'");
		return;
	}
	g->in_elect++;
	SirIns tmp = {.op = SOP_elect, .span = n->span, .imm = n->op};
	tmp.body = sub(g, n->a);
	g->in_elect--;
	*sg_emit(g, SOP_elect, n->span) = tmp;
}

static void
stmt(G *g, const Node *n)
{
	if (g->ctx->too_many || !expand_ok(g, n))
		return;
	switch (n->kind) {
	case N_LET: case N_VAR: let(g, n); break;
	case N_REG: reg(g, n); break;
	case N_ASSIGN: assign(g, n); break;
	case N_IF: if_stmt(g, n); break;
	case N_FOR: for_stmt(g, n); break;
	case N_SIF: case N_SFOR: static_stmt(g, n); break;
	case N_ELECT: elect(g, n); break;
	case N_MMA: mma(g, n); break;
	case N_OP:
		if (n->op == OP_EXIT && g->in_elect) {
			diag_error(g->ctx, n->span, "'exit' inside 'elect' leaves "
				"one lane while its warp waits to re-converge");
			break;
		}
		sg_op(g, n);
		break;
	case N_BLOCK: block(g, n); break;
	case N_EXPRSTMT:
		/* a call that stores: dscatter (its value is 0) */
		if (n->a && n->a->kind == N_CALL && n->a->a->kind == N_NAME &&
		    !strcmp(n->a->a->name, "dscatter")) {
			sg_dscatter(g, n->a);
			break;
		}
		diag_error(g->ctx, n->span, "this expression does nothing; "
			"assign it to a variable");
		break;
	default:
		fg_bug("statement kind %d", n->kind);
	}
}

static void
stmts(G *g, const NodeList *l)
{
	for (int i = 0; i < l->n; i++)
		stmt(g, l->v[i]);
}

static void
block(G *g, const Node *b)
{
	Bind *saved = g->scope;

	stmts(g, &b->kids);
	sg_unscope(g, saved);
}

SirMod *
sirgen(Ctx *ctx, Kernel *k)
{
	SirMod *m = NEW(&ctx->perm, SirMod);
	Expand x = {0};
	int i = 0;

	m->k = k;
	m->parts = NEWARR(&ctx->perm, SirPart *, (size_t)k->nparts);
	for (Part *p = k->parts; p; p = p->next) {
		SirPart *sp = NEW(&ctx->perm, SirPart);
		G g = {.ctx = ctx, .k = k, .p = sp, .cur = &sp->body, .exp = &x};

		sp->part = p;
		if (p->ivar)
			sg_bind(&g, p->ivar, sg_const_i(&g, p->index, TY_I32,
				p->nspan), p->nspan);
		stmts(&g, &p->decl->kids);
		x.vals += sp->nvals;
		p->sir = sp;
		m->parts[i++] = sp;
	}
	m->nparts = i;
	sg_check_loads(ctx, m);
	return m;
}
