/* ptxgen.c: SIR to PTX for sm_90a and sm_100a through the builder.
 * Requires: a SirMod after the pass pipeline, with no errors.  Ensures:
 * deterministic PTX text (module header, a metadata comment the runtime
 * reads, one .entry), or a diagnostic for an operation this backend does
 * not lower yet.  Target-specific instructions use the per-target rows of
 * ptxtab.c; structured control flow becomes labels and branches. */
#include <string.h>

#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"
#include "ptx/ptx.h"
#include "ptx/ptxgen.h"

static void gen_block(PG *, const SirBlock *);

PReg
pg_reg(PG *g, Ref r)
{
	const SirVal *v = &g->sp->vals[r];

	if (g->map[r].id == UINT32_MAX) {
		RKind k = v->ty == TY_BOOL ? RP : v->ty == TY_F32 ? RF32 :
			(v->ty == TY_I64 || v->ty == TY_U64) ? RB64 : RB32;
		g->map[r] = ptx_reg(g->f, k);
	}
	return g->map[r];
}

/* The PTX type suffix of a scalar for arithmetic and comparisons. */
static const char *
sfx(Ty t)
{
	switch (t) {
	case TY_I32: return "s32";
	case TY_U32: return "u32";
	case TY_I64: return "s64";
	case TY_U64: return "u64";
	case TY_F32: return "f32";
	case TY_BOOL: return "pred";
	default: return "b32";
	}
}

static const char *
bsfx(Ty t)
{
	return t == TY_I64 || t == TY_U64 ? "b64" : t == TY_BOOL ? "pred" :
		t == TY_F32 ? "f32" : "b32";
}

/* A value known to be a 32-bit integer, as a register. */
PReg
pg_u32(PG *g, Ref r)
{
	const SirVal *v = &g->sp->vals[r];
	PReg x = pg_reg(g, r);

	if (v->ty == TY_I64 || v->ty == TY_U64) {
		PReg y = ptx_reg(g->f, RB32);
		ptx_emit(g->f, "cvt.u32.u64 %R, %R;", y, x);
		return y;
	}
	if (v->ty == TY_BOOL) {
		PReg y = ptx_reg(g->f, RB32);
		ptx_emit(g->f, "selp.u32 %R, 1, 0, %R;", y, x);
		return y;
	}
	return x;
}

void
pg_unsupported(PG *g, const SirIns *in)
{
	diag_error(g->ctx, in->span, "'%s' is not lowered to PTX for %s yet",
		sir_ops[in->op].name, g->t->name);
	g->failed = true;
}

static void
gen_const(PG *g, const SirIns *in)
{
	PReg d = pg_reg(g, in->dst);
	const SirVal *v = &g->sp->vals[in->dst];

	if (in->op == SOP_const_f)
		ptx_emit(g->f, "mov.f32 %R, %F;", d, in->fimm);
	else if (v->ty == TY_BOOL)
		ptx_emit(g->f, "setp.ne.u32 %R, %I, 0;", d, (int64_t)in->imm);
	else if (v->ty == TY_F32)
		ptx_emit(g->f, "mov.f32 %R, %F;", d, (double)in->imm);
	else
		ptx_emit(g->f, "mov.%S %R, %I;", bsfx(v->ty), d, in->imm);
}

static void
gen_param(PG *g, const SirIns *in)
{
	PReg d = pg_reg(g, in->dst);
	const Res *r = in->r[0];

	if (r->ety == TY_BOOL) {
		PReg t = ptx_reg(g->f, RB32);
		ptx_emit(g->f, "ld.param.u32 %R, [%S];", t, r->name);
		ptx_emit(g->f, "setp.ne.u32 %R, %R, 0;", d, t);
		return;
	}
	ptx_emit(g->f, "ld.param.%S %R, [%S];", r->ety == TY_F32 ? "f32" :
		(r->ety == TY_I64 || r->ety == TY_U64) ? "u64" : "u32", d,
		r->name);
}

static void
gen_special(PG *g, const SirIns *in)
{
	PReg d = pg_reg(g, in->dst);
	int lo = g->sp->part->warp_lo;

	switch (in->imm) {
	case SP_TID:
		ptx_emit(g->f, "sub.s32 %R, %R, %I;", d, g->tid,
			(int64_t)lo * 32);
		break;
	case SP_WARP:
		ptx_emit(g->f, "sub.s32 %R, %R, %I;", d, g->warp, (int64_t)lo);
		break;
	case SP_LANE:
		ptx_emit(g->f, "mov.b32 %R, %R;", d, g->lane);
		break;
	case SP_CRANK:
		ptx_emit(g->f, "mov.u32 %R, %%cluster_ctarank;", d);
		break;
	case SP_CX: case SP_CY: case SP_CZ:
		ptx_emit(g->f, "mov.u32 %R, %%cluster_ctaid.%S;", d,
			in->imm == SP_CX ? "x" : in->imm == SP_CY ? "y" : "z");
		break;
	default:
		pg_unsupported(g, in);
	}
}

static void
gen_cvt(PG *g, const SirIns *in)
{
	const SirVal *dv = &g->sp->vals[in->dst], *sv = &g->sp->vals[in->a[0]];
	PReg d = pg_reg(g, in->dst), s = pg_reg(g, in->a[0]);

	if (dv->ty == TY_FRAG || sv->ty == TY_FRAG || sv->ty == TY_BOOL ||
	    dv->ty == TY_BOOL) {
		pg_unsupported(g, in);
		return;
	}
	if (dv->ty == sv->ty) {
		ptx_emit(g->f, "mov.%S %R, %R;", bsfx(dv->ty), d, s);
	} else if (dv->ty == TY_F32) {
		ptx_emit(g->f, "cvt.rn.f32.%S %R, %R;", sfx(sv->ty), d, s);
	} else if (sv->ty == TY_F32) {
		ptx_emit(g->f, "cvt.rzi.%S.f32 %R, %R;", sfx(dv->ty), d, s);
	} else {
		ptx_emit(g->f, "cvt.%S.%S %R, %R;", sfx(dv->ty), sfx(sv->ty),
			d, s);
	}
}

static void
gen_arith(PG *g, const SirIns *in)
{
	const SirVal *dv = &g->sp->vals[in->dst];
	const SirVal *av = &g->sp->vals[in->a[0]];
	Ty t = av->ty == TY_BOOL && in->op >= SOP_eq ? TY_BOOL : dv->ty;

	if (dv->ty == TY_FRAG || av->ty == TY_FRAG || (in->na > 1 &&
	    g->sp->vals[in->a[1]].ty == TY_FRAG)) {
		pg_unsupported(g, in);
		return;
	}
	PReg d = pg_reg(g, in->dst), a = pg_reg(g, in->a[0]);
	PReg b = in->na > 1 ? pg_reg(g, in->a[1]) : a;
	Ty ot = in->op >= SOP_eq && in->op <= SOP_ge ? av->ty : t;
	bool fl = ot == TY_F32, pr = ot == TY_BOOL;
	static const char *const cmp[] = {"eq", "ne", "lt", "le", "gt", "ge"};

	switch (in->op) {
	case SOP_add: case SOP_sub:
		ptx_emit(g->f, "%S.%S %R, %R, %R;", in->op == SOP_add ? "add" :
			"sub", sfx(ot), d, a, b);
		break;
	case SOP_mul:
		if (fl)
			ptx_emit(g->f, "mul.f32 %R, %R, %R;", d, a, b);
		else
			ptx_emit(g->f, "mul.lo.%S %R, %R, %R;", sfx(ot), d, a, b);
		break;
	case SOP_div:
		if (fl)
			ptx_emit(g->f, "div.rn.f32 %R, %R, %R;", d, a, b);
		else
			ptx_emit(g->f, "div.%S %R, %R, %R;", sfx(ot), d, a, b);
		break;
	case SOP_rem:
		ptx_emit(g->f, "rem.%S %R, %R, %R;", sfx(ot), d, a, b);
		break;
	case SOP_and: case SOP_or: case SOP_xor:
		ptx_emit(g->f, "%S.%S %R, %R, %R;", in->op == SOP_and ? "and" :
			in->op == SOP_or ? "or" : "xor", pr ? "pred" : bsfx(ot),
			d, a, b);
		break;
	case SOP_shl:
		ptx_emit(g->f, "shl.%S %R, %R, %R;", bsfx(ot), d, a,
			pg_u32(g, in->a[1]));
		break;
	case SOP_shr:
		ptx_emit(g->f, "shr.%S %R, %R, %R;", sfx(ot), d, a,
			pg_u32(g, in->a[1]));
		break;
	case SOP_min: case SOP_max:
		ptx_emit(g->f, "%S.%S %R, %R, %R;", in->op == SOP_min ? "min" :
			"max", sfx(ot), d, a, b);
		break;
	case SOP_eq: case SOP_ne: case SOP_lt: case SOP_le: case SOP_gt:
	case SOP_ge:
		if (pr && in->op != SOP_eq && in->op != SOP_ne) {
			pg_unsupported(g, in);
			break;
		}
		if (pr) {
			ptx_emit(g->f, "xor.pred %R, %R, %R;", d, a, b);
			if (in->op == SOP_eq)
				ptx_emit(g->f, "not.pred %R, %R;", d, d);
		} else
			ptx_emit(g->f, "setp.%S.%S %R, %R, %R;",
				cmp[in->op - SOP_eq], sfx(ot), d, a, b);
		break;
	case SOP_neg: case SOP_abs:
		ptx_emit(g->f, "%S.%S %R, %R;", in->op == SOP_neg ? "neg" : "abs",
			sfx(ot), d, a);
		break;
	case SOP_not:
		ptx_emit(g->f, "not.pred %R, %R;", d, a);
		break;
	case SOP_bnot:
		ptx_emit(g->f, "not.%S %R, %R;", bsfx(ot), d, a);
		break;
	case SOP_select:
		if (dv->ty == TY_BOOL) {  /* no selp for predicates */
			PReg t = ptx_reg(g->f, RP), u = ptx_reg(g->f, RP);

			ptx_emit(g->f, "and.pred %R, %R, %R;", t, a, b);
			ptx_emit(g->f, "not.pred %R, %R;", u, a);
			ptx_emit(g->f, "and.pred %R, %R, %R;", u, u,
				pg_reg(g, in->a[2]));
			ptx_emit(g->f, "or.pred %R, %R, %R;", d, t, u);
			break;
		}
		ptx_emit(g->f, "selp.%S %R, %R, %R, %R;", bsfx(dv->ty), d,
			pg_reg(g, in->a[1]), pg_reg(g, in->a[2]), a);
		break;
	case SOP_exp2: case SOP_log2: case SOP_rcp: case SOP_tanh:
	case SOP_sqrt: case SOP_rsqrt:
		if (!pg_row(g, in))
			pg_unsupported(g, in);
		break;
	default:
		fg_bug("gen_arith: %s", sir_ops[in->op].name);
	}
}

static void
gen_mov(PG *g, const SirIns *in)
{
	const SirVal *dv = &g->sp->vals[in->dst];

	if (dv->ty == TY_FRAG) {
		pg_unsupported(g, in);
		return;
	}
	ptx_emit(g->f, "mov.%S %R, %R;", bsfx(dv->ty), pg_reg(g, in->dst),
		pg_reg(g, in->a[0]));
}

/* The tile at work index i of a grouped walk: the (x, y) planes in
 * groups of G (the last one may be smaller), the groups one after the
 * other, and in each group z from last to first (lpt: the longest tiles
 * of a causal grid first) or first to last, with the planes fastest.
 * The K and V of a group's planes stay in L2 while its tiles run, and
 * lpt still starts every group with its longest tiles. */
static void
grouped(PG *g, PReg *tf, const PReg *dim, PReg grp, PReg i)
{
	PReg np = ptx_reg(g->f, RB32), sec = ptx_reg(g->f, RB32);
	PReg s = ptx_reg(g->f, RB32), r = ptx_reg(g->f, RB32);
	PReg gs = ptx_reg(g->f, RB32), zr = ptx_reg(g->f, RB32);
	PReg pl = ptx_reg(g->f, RB32);

	ptx_emit(g->f, "mul.lo.s32 %R, %R, %R;", np, dim[0], dim[1]);
	ptx_emit(g->f, "mul.lo.s32 %R, %R, %R;", sec, grp, dim[2]);
	ptx_emit(g->f, "div.u32 %R, %R, %R;", s, i, sec);
	ptx_emit(g->f, "mul.lo.s32 %R, %R, %R;", r, s, sec);
	ptx_emit(g->f, "sub.s32 %R, %R, %R;", r, i, r);
	ptx_emit(g->f, "mul.lo.s32 %R, %R, %R;", pl, s, grp);
	ptx_emit(g->f, "sub.s32 %R, %R, %R;", gs, np, pl);
	ptx_emit(g->f, "min.s32 %R, %R, %R;", gs, gs, grp);
	ptx_emit(g->f, "div.u32 %R, %R, %R;", zr, r, gs);
	ptx_emit(g->f, "mul.lo.s32 %R, %R, %R;", np, zr, gs);
	ptx_emit(g->f, "sub.s32 %R, %R, %R;", r, r, np);
	ptx_emit(g->f, "add.s32 %R, %R, %R;", pl, pl, r);
	if (g->k->order == ORD_LPT) {
		ptx_emit(g->f, "sub.s32 %R, %R, 1;", tf[2], dim[2]);
		ptx_emit(g->f, "sub.s32 %R, %R, %R;", tf[2], tf[2], zr);
	} else {
		ptx_emit(g->f, "mov.b32 %R, %R;", tf[2], zr);
	}
	ptx_emit(g->f, "rem.u32 %R, %R, %R;", tf[0], pl, dim[0]);
	ptx_emit(g->f, "div.u32 %R, %R, %R;", tf[1], pl, dim[0]);
}

/* for t in tiles: one tile per CTA, or a persistent loop over the
 * linearized grid (lpt: in reverse, longest tiles first). */
static void
gen_tile(PG *g, const SirIns *in)
{
	PReg *tf = g->tilef[in->dst % 8];
	int nd = in->na < 3 ? in->na : 3;
	PReg grp = {0};
	bool grouped_walk = in->na == 4;

	for (int k = 0; k < 4; k++)
		tf[k] = ptx_reg(g->f, RB32);
	g->tileref[in->dst % 8] = in->dst;
	if (g->k->order == ORD_SINGLE) {
		static const char *const c[] = {"x", "y", "z"};
		for (int k = 0; k < 3; k++)
			if (k < nd)
				ptx_emit(g->f, "mov.u32 %R, %%ctaid.%S;", tf[k],
					c[k]);
			else
				ptx_emit(g->f, "mov.u32 %R, 0;", tf[k]);
		ptx_emit(g->f, "mov.u32 %R, 0;", tf[3]);
		if (g->niters < 16)
			g->iters[g->niters++] = tf[3];
		gen_block(g, in->body);
		g->niters--;
		return;
	}
	PReg dim[3], total = ptx_reg(g->f, RB32), i = ptx_reg(g->f, RB32);
	PReg lin = ptx_reg(g->f, RB32), q = ptx_reg(g->f, RB32);
	PReg p = ptx_reg(g->f, RP), step = ptx_reg(g->f, RB32);
	for (int k = 0; k < 3; k++) {
		dim[k] = ptx_reg(g->f, RB32);
		if (k < nd)
			ptx_emit(g->f, "mov.b32 %R, %R;", dim[k],
				pg_u32(g, in->a[k]));
		else
			ptx_emit(g->f, "mov.b32 %R, 1;", dim[k]);
	}
	/* a cluster walks the grid in blocks of its own shape: dims in
	 * blocks, rounded up; its CTAs take the block's tiles (below) */
	const int *cl = g->k->cluster;
	bool clu = cl[0] * cl[1] * cl[2] > 1;
	for (int k = 0; k < 3 && clu; k++)
		if (cl[k] > 1) {
			ptx_emit(g->f, "add.s32 %R, %R, %I;", dim[k], dim[k],
				(int64_t)cl[k] - 1);
			ptx_emit(g->f, "div.u32 %R, %R, %I;", dim[k], dim[k],
				(int64_t)cl[k]);
		}
	ptx_emit(g->f, "mul.lo.s32 %R, %R, %R;", total, dim[0], dim[1]);
	if (in->na == 4) {
		/* the group, clamped to [1, x * y] once per kernel */
		grp = ptx_reg(g->f, RB32);
		ptx_emit(g->f, "max.s32 %R, %R, 1;", grp, pg_u32(g, in->a[3]));
		ptx_emit(g->f, "min.s32 %R, %R, %R;", grp, grp, total);
	}
	ptx_emit(g->f, "mul.lo.s32 %R, %R, %R;", total, total, dim[2]);
	ptx_emit(g->f, "mov.u32 %R, %%%S.x;", i, clu ? "clusterid" : "ctaid");
	ptx_emit(g->f, "mov.u32 %R, %%%S.x;", step, clu ? "nclusterid" :
		"nctaid");
	ptx_emit(g->f, "mov.u32 %R, 0;", tf[3]);
	int top = ptx_label(g->f), done = ptx_label(g->f);
	if (g->niters < 16)
		g->iters[g->niters++] = tf[3];
	ptx_place(g->f, top);
	ptx_emit(g->f, "setp.ge.s32 %R, %R, %R;", p, i, total);
	ptx_emit(g->f, "@%R bra %L;", p, done);
	if (grouped_walk) {
		grouped(g, tf, dim, grp, i);
	} else {
		if (g->k->order == ORD_LPT) {
			ptx_emit(g->f, "sub.s32 %R, %R, 1;", lin, total);
			ptx_emit(g->f, "sub.s32 %R, %R, %R;", lin, lin, i);
		} else {
			ptx_emit(g->f, "mov.b32 %R, %R;", lin, i);
		}
		ptx_emit(g->f, "rem.u32 %R, %R, %R;", tf[0], lin, dim[0]);
		ptx_emit(g->f, "div.u32 %R, %R, %R;", q, lin, dim[0]);
		ptx_emit(g->f, "rem.u32 %R, %R, %R;", tf[1], q, dim[1]);
		ptx_emit(g->f, "div.u32 %R, %R, %R;", tf[2], q, dim[1]);
	}
	for (int k = 0; k < 3 && clu; k++)
		if (cl[k] > 1) {
			static const char *const c[] = {"x", "y", "z"};
			PReg cc = ptx_reg(g->f, RB32);
			ptx_emit(g->f, "mov.u32 %R, %%cluster_ctaid.%S;", cc, c[k]);
			ptx_emit(g->f, "mad.lo.s32 %R, %R, %I, %R;", tf[k], tf[k],
				(int64_t)cl[k], cc);
		}
	gen_block(g, in->body);
	ptx_emit(g->f, "add.s32 %R, %R, %R;", i, i, step);
	ptx_emit(g->f, "add.s32 %R, %R, 1;", tf[3], tf[3]);
	ptx_emit(g->f, "bra.uni %L;", top);
	ptx_place(g->f, done);
	g->niters--;
}

static void
gen_tilefield(PG *g, const SirIns *in)
{
	int slot = (int)(in->a[0] % 8);

	if (g->tileref[slot] != in->a[0])
		fg_bug("tile field of an unknown tile");
	ptx_emit(g->f, "mov.b32 %R, %R;", pg_reg(g, in->dst),
		g->tilef[slot][in->imm]);
}

static void
gen_for(PG *g, const SirIns *in)
{
	PReg iv = pg_reg(g, in->dst), p = ptx_reg(g->f, RP);
	int top = ptx_label(g->f), done = ptx_label(g->f);

	ptx_emit(g->f, "mov.b32 %R, %R;", iv, pg_u32(g, in->a[0]));
	ptx_place(g->f, top);
	ptx_emit(g->f, "setp.ge.s32 %R, %R, %R;", p, iv, pg_u32(g, in->a[1]));
	ptx_emit(g->f, "@%R bra %L;", p, done);
	if (g->niters < 16)
		g->iters[g->niters++] = iv;
	gen_block(g, in->body);
	g->niters--;
	ptx_emit(g->f, "add.s32 %R, %R, %R;", iv, iv, pg_u32(g, in->a[2]));
	ptx_emit(g->f, "bra.uni %L;", top);
	ptx_place(g->f, done);
}

static void
gen_if(PG *g, const SirIns *in)
{
	int els = ptx_label(g->f), end = ptx_label(g->f);

	ptx_emit(g->f, "@!%R bra %L;", pg_reg(g, in->a[0]), els);
	gen_block(g, in->body);
	ptx_emit(g->f, "bra.uni %L;", end);
	ptx_place(g->f, els);
	gen_block(g, in->els);
	ptx_place(g->f, end);
}

/* elect: one lane of each warp (elect.sync; lane 0 on sm_80), and for
 * the one-thread form only in the partition's first warp.  The warp
 * re-converges after. */
static void
gen_elect(PG *g, const SirIns *in)
{
	PReg p = ptx_reg(g->f, RP);
	int skip = ptx_label(g->f);

	if (g->t->hopper)
		ptx_emit(g->f, "elect.sync _|%R, 0xffffffff;", p);
	else  /* sm_80 has no elect.sync: lane 0 */
		ptx_emit(g->f, "setp.eq.u32 %R, %R, 0;", p, g->lane);
	if (!in->imm && g->sp->part->warp_hi > g->sp->part->warp_lo) {
		PReg q = ptx_reg(g->f, RP);
		ptx_emit(g->f, "setp.eq.u32 %R, %R, %I;", q, g->warp,
			(int64_t)g->sp->part->warp_lo);
		ptx_emit(g->f, "and.pred %R, %R, %R;", p, p, q);
	}
	ptx_emit(g->f, "@!%R bra %L;", p, skip);
	g->in_elect++;
	gen_block(g, in->body);
	g->in_elect--;
	ptx_place(g->f, skip);
	ptx_emit(g->f, "bar.warp.sync 0xffffffff;");
}

/* all_eq: the thread's registers of the tile compared and and-ed in one
 * predicate, then a vote of the full warp (sirgen keeps it out of
 * 'elect'), so that every lane agrees and a branch on it is uniform. */
static void
gen_all_eq(PG *g, const SirIns *in)
{
	int n;
	PReg *x = pg_frag(g, in->a[0], &n), p = ptx_reg(g->f, RP);
	PReg v = pg_reg(g, in->a[1]);

	if (!x || n < 1) {
		pg_unsupported(g, in);
		return;
	}
	ptx_emit(g->f, "setp.eq.f32 %R, %R, %R;", p, x[0], v);
	for (int j = 1; j < n; j++)
		ptx_emit(g->f, "setp.eq.and.f32 %R, %R, %R, %R;", p, x[j], v,
			p);
	ptx_emit(g->f, "vote.sync.all.pred %R, %R, 0xffffffff;",
		pg_reg(g, in->dst), p);
}

static void
gen_ins(PG *g, const SirIns *in)
{
	if (g->failed || pg_tile_elem(g, in) || pg_blocked_op(g, in) ||
	    g->ops->tile_op(g, in))
		return;
	switch (in->op) {
	case SOP_const_i: case SOP_const_f: gen_const(g, in); break;
	case SOP_param: gen_param(g, in); break;
	case SOP_gstride:  /* the low word of NAME_st's i64 stride k */
		ptx_emit(g->f, "ld.param.u32 %R, [%S_st+%I];", pg_reg(g,
			in->dst), in->r[0]->name, in->imm * 8);
		break;
	case SOP_special: gen_special(g, in); break;
	case SOP_mov: gen_mov(g, in); break;
	case SOP_cvt: gen_cvt(g, in); break;
	case SOP_add: case SOP_sub: case SOP_mul: case SOP_div: case SOP_rem:
	case SOP_and: case SOP_or: case SOP_xor: case SOP_shl: case SOP_shr:
	case SOP_min: case SOP_max: case SOP_eq: case SOP_ne: case SOP_lt:
	case SOP_le: case SOP_gt: case SOP_ge: case SOP_neg: case SOP_not:
	case SOP_bnot: case SOP_select: case SOP_exp2: case SOP_log2:
	case SOP_rcp: case SOP_tanh: case SOP_sqrt: case SOP_rsqrt:
	case SOP_abs:
		gen_arith(g, in);
		break;
	case SOP_tile: gen_tile(g, in); break;
	case SOP_tilefield: gen_tilefield(g, in); break;
	case SOP_for: gen_for(g, in); break;
	case SOP_if: gen_if(g, in); break;
	case SOP_all_eq: gen_all_eq(g, in); break;
	case SOP_elect: gen_elect(g, in); break;
	case SOP_exit: ptx_emit(g->f, "bra.uni %L;", g->part_end); break;
	default:
		pg_sync(g, in);  /* barriers, TMA, MMA, memory: ptxsync.c */
	}
}

static void
gen_block(PG *g, const SirBlock *b)
{
	for (int i = 0; i < b->n && !g->failed; i++)
		gen_ins(g, &b->v[i]);
}

/* Expand a row's template: %= the result, %0..%2 operands, %i the
 * immediate; everything else is copied. */
bool
pg_row(PG *g, const SirIns *in)
{
	const PtxRow *rows = g->ops->rows;
	const PtxRow *r = NULL;
	char nm[16];
	Buf b;

	/* the variant: the read flag of tma_wait, else the immediate */
	int64_t key = in->op == SOP_tma_wait ? in->imm2 : in->imm;

	for (const PtxRow *p = rows; p->tmpl && !r; p++)
		if (p->op == in->op && (p->sub == ANY || p->sub == key))
			r = p;
	if (!r)
		return false;
	buf_init(&b, &g->ctx->scratch);
	for (const char *c = r->tmpl; *c; c++) {
		if (c[0] != '%' || !c[1]) {
			buf_putc(&b, *c);
			continue;
		}
		c++;
		if (*c == '=')
			buf_puts(&b, ptx_regname(g->f, pg_reg(g, in->dst), nm));
		else if (*c >= '0' && *c <= '2')
			buf_puts(&b, ptx_regname(g->f, pg_reg(g, in->a[*c - '0']),
				nm));
		else if (*c == 'i')
			buf_printf(&b, "%lld", (long long)in->imm);
		else
			fg_bug("bad row template '%s'", r->tmpl);
	}
	ptx_emit(g->f, "%S", b.p);
	return true;
}

void
pg_body(PG *g, const SirBlock *b)
{
	gen_block(g, b);
}
