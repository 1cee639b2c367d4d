/* sir.c: building schedule-IR programs and printing their text form. */
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"

const SirOpInfo sir_ops[NSOP] = {
#define SOP(n, na, e, t) [SOP_##n] = {#n, na, e, t},
#include "sir/sir_ops.h"
#undef SOP
};

const char *const fence_names[NFENCE] = {
	[FENCE_ASYNC_SMEM] = "async_smem", [FENCE_MBAR_INIT] = "mbar_init",
	[FENCE_TMEM_BEFORE] = "tmem_before", [FENCE_TMEM_AFTER] = "tmem_after",
	[FENCE_ACQ_REL] = "acq_rel",
};

Ref
sir_val(Ctx *ctx, SirPart *p, Ty ty, const char *name)
{
	if (p->nvals == 0)
		p->nvals = 1;  /* Ref 0 means "none" */
	if (p->nvals >= p->capvals) {
		uint32_t cap = p->capvals ? 2 * p->capvals : 64;
		p->vals = arena_realloc(&ctx->perm, p->vals,
			p->capvals * sizeof *p->vals, cap * sizeof *p->vals);
		p->capvals = cap;
	}
	p->vals[p->nvals] = (SirVal){.ty = ty, .name = name};
	return p->nvals++;
}

SirBlock *
sir_block(Ctx *ctx)
{
	return NEW(&ctx->perm, SirBlock);
}

SirIns *
sir_push(Ctx *ctx, SirBlock *b, SirOp op, Span sp)
{
	if (b->n == b->cap) {
		int cap = b->cap ? 2 * b->cap : 8;
		b->v = arena_realloc(&ctx->perm, b->v,
			(size_t)b->cap * sizeof *b->v, (size_t)cap * sizeof *b->v);
		b->cap = cap;
	}
	SirIns *i = &b->v[b->n++];
	*i = (SirIns){.op = (uint16_t)op, .span = sp};
	return i;
}

static const char *
tyname(const SirVal *v, char *buf, size_t n)
{
	if (v->ty != TY_FRAG)
		return ty_name(v->ty);
	snprintf(buf, n, "%s[%d,%d]:%s", ty_name(v->ety), v->m, v->n,
		v->lay && v->lay->name ? v->lay->name : "?");
	return buf;
}

static void
ref(Buf *b, const SirPart *p, Ref r)
{
	const SirVal *v = &p->vals[r];

	if (v->isconst && v->ty == TY_F32)
		buf_printf(b, "%g", v->cf);
	else if (v->isconst)
		buf_printf(b, "%lld", (long long)v->ci);
	else if (v->name)
		buf_printf(b, "%%%s.%u", v->name, r);
	else
		buf_printf(b, "%%%u", r);
}

static void
resref(Buf *b, const SirPart *p, const Res *r, Ref idx, bool trans,
	int64_t roff)
{
	buf_printf(b, "@%s", r->name);
	if (idx) {
		buf_putc(b, '[');
		ref(b, p, idx);
		buf_putc(b, ']');
	}
	if (roff)
		buf_printf(b, "+row%lld", (long long)roff);
	if (trans)
		buf_puts(b, ".T");
}

static void block(Buf *, const SirPart *, const SirBlock *, int);

static void
ins(Buf *b, const SirPart *p, const SirIns *i, int ind)
{
	char tb[64];
	bool first = true;

	if (i->op == SOP_const_i || i->op == SOP_const_f)
		return;  /* constants print inline */
	buf_printf(b, "%*s", ind, "");
	if (i->dst) {
		ref(b, p, i->dst);
		buf_printf(b, ":%s = ", tyname(&p->vals[i->dst], tb,
			sizeof tb));
	}
	buf_puts(b, sir_ops[i->op].name);
	for (int k = 0; k < 3; k++) {
		if (!i->r[k])
			continue;
		buf_puts(b, first ? " " : ", ");
		first = false;
		resref(b, p, i->r[k], i->ri[k], i->trans[k], i->roff[k]);
	}
	for (int k = 0; k < i->na; k++) {
		buf_puts(b, first ? " " : ", ");
		first = false;
		if (i->a[k])
			ref(b, p, i->a[k]);
		else
			buf_putc(b, '_');
	}
	switch (i->op) {
	case SOP_special: {
		static const char *const sp[] = {"tid", "warp", "lane",
			"nwarps", "nsm", "cluster_rank", "cluster_x",
			"cluster_y", "cluster_z"};
		buf_printf(b, " %s", sp[i->imm]);
		break;
	}
	case SOP_tilefield: {
		static const char *const f[] = {"x", "y", "z", "iter"};
		buf_printf(b, " .%s", f[i->imm]);
		break;
	}
	case SOP_fence:
		buf_printf(b, " %s", fence_names[i->imm]);
		break;
	case SOP_tma_wait:
		buf_printf(b, " %lld%s", (long long)i->imm,
			i->imm2 ? " read" : "");
		break;
	case SOP_elect:
		buf_puts(b, i->imm ? " warp" : "");
		break;
	case SOP_wgmma_wait: case SOP_tmem_alloc: case SOP_mbar_arrive:
	case SOP_cp_wait:
		if (i->imm)
			buf_printf(b, " %lld", (long long)i->imm);
		break;
	case SOP_wgmma: case SOP_tc_mma: case SOP_mma_sync:
		buf_puts(b, i->imm ? " acc" : " zero");
		break;
	case SOP_exp2:
		if (i->imm)  /* of every 8 elements, by polynomial */
			buf_printf(b, " poly=%lld", (long long)i->imm);
		break;
	case SOP_tmem_load: case SOP_tmem_store: case SOP_smem_store:
	case SOP_smem_load:
		if (i->imm)  /* the first column of a slice */
			buf_printf(b, " col=%lld", (long long)i->imm);
		break;
	}
	if (i->cta) {  /* a peer's barrier, or a multicast mask */
		buf_puts(b, i->op == SOP_tma_load ? " multicast=" : " cta=");
		ref(b, p, i->cta);
	}
	if (i->row) {
		buf_puts(b, " row=");
		ref(b, p, i->row);
	}
	if (i->peer) {  /* a pair's TMA: the barrier's CTA */
		buf_puts(b, " cta=");
		ref(b, p, i->peer);
	}
	if (i->body) {
		buf_puts(b, " {\n");
		block(b, p, i->body, ind + 2);
		buf_printf(b, "%*s}", ind, "");
		if (i->els && i->els->n) {
			buf_puts(b, " else {\n");
			block(b, p, i->els, ind + 2);
			buf_printf(b, "%*s}", ind, "");
		}
	}
	buf_putc(b, '\n');
}

static void
block(Buf *b, const SirPart *p, const SirBlock *bl, int ind)
{
	for (int i = 0; i < bl->n; i++)
		ins(b, p, &bl->v[i], ind);
}

static void
resdecl(Buf *b, const Res *r)
{
	switch (r->kind) {
	case R_PARAM:
		buf_printf(b, "param $%s %s\n", r->name, ty_name(r->ety));
		break;
	case R_GLOBAL:
		buf_printf(b, "global $%s %s rank=%d\n", r->name,
			ty_name(r->ety), r->rank);
		break;
	case R_TMA:
		buf_printf(b, "tma $%s of $%s box=(", r->name, r->of->name);
		for (int i = 0; i < r->rank; i++)
			buf_printf(b, "%s%lld", i ? "," : "",
				(long long)r->shape[i]);
		buf_printf(b, ") swizzle=%d oob=%s\n", r->swizzle,
			r->oob_nan ? "nan" : "zero");
		break;
	case R_SMEM:
		buf_printf(b, "smem @%s %s[%d][", r->name, ty_name(r->ety),
			r->stages);
		for (int i = 0; i < r->rank; i++)
			buf_printf(b, "%s%lld", i ? "," : "",
				(long long)r->shape[i]);
		buf_printf(b, "] swizzle=%d major=%s offset=%lld bytes=%lld",
			r->lay->swizzle, r->lay->mn_major ? "MN" : "K",
			(long long)r->off, (long long)r->bytes);
		if (r->alias)
			buf_printf(b, " alias=@%s", r->alias->name);
		buf_putc(b, '\n');
		break;
	case R_TMEM:
		buf_printf(b, "tmem @%s[%d] %s[%lld,%lld] col=%lld stride=%lld%s",
			r->name, r->count, ty_name(r->ety),
			(long long)r->shape[0], (long long)r->shape[1],
			(long long)r->col, (long long)r->threads,
			r->packed ? " packed" : "");
		if (r->alias)
			buf_printf(b, " alias=@%s", r->alias->name);
		buf_putc(b, '\n');
		break;
	case R_MBAR:
		buf_printf(b, "mbar @%s[%d] count=%lld tx=%lld offset=%lld\n",
			r->name, r->count, (long long)r->mcount,
			(long long)r->tx, (long long)r->off);
		break;
	case R_NBAR:
		buf_printf(b, "nbar @%s[%d] threads=%lld id=%d\n", r->name,
			r->count, (long long)r->threads, r->bar_id);
		break;
	default:
		break;
	}
}

void
sir_print(const SirMod *m, Buf *b)
{
	static const char *const ord[] = {"?", "single", "persistent", "lpt"};
	const Kernel *k = m->k;

	buf_printf(b, "kernel %s %s threads=%d cluster=(%d,%d,%d) "
		"tiles=%s smem=%lld", k->name, target_get(k->target)->name,
		k->threads, k->cluster[0], k->cluster[1], k->cluster[2],
		ord[k->order], (long long)k->smem_bytes);
	if (k->maxnreg)
		buf_printf(b, " maxnreg=%d", k->maxnreg);
	buf_putc(b, '\n');
	for (const Res *r = k->res; r; r = r->next)
		resdecl(b, r);
	for (int i = 0; i < m->nparts; i++) {
		const SirPart *p = m->parts[i];
		const Part *pt = p->part;
		buf_printf(b, "\npartition @%s", pt->name);
		if (pt->index >= 0)
			buf_printf(b, "[%d]", pt->index);
		buf_printf(b, " warps=%d..%d", pt->warp_lo, pt->warp_hi);
		if (pt->regs)
			buf_printf(b, " regs=%d", pt->regs);
		buf_puts(b, " {\n");
		block(b, p, &p->body, 2);
		buf_puts(b, "}\n");
	}
}
