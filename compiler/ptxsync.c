/* ptxsync.c: barriers, fences, TMA, tensor-memory management and MMA
 * group operations to PTX.  One emit function per multi-instruction
 * feature (STYLE B6).  Shared-memory addresses are 32-bit .shared::cta
 * addresses; tensor maps are read from the .param space. */
#include <stdio.h>
#include <string.h>

#include "fgc.h"
#include "ptxgen.h"

/* smem + off + idx * stride: the address of element idx of a resource. */
static PReg
addr(PG *g, int64_t off, Ref idx, int64_t stride)
{
	PReg a = ptx_reg(g->f, RB32);

	if (!idx || g->sp->vals[idx].isconst) {
		int64_t i = idx ? g->sp->vals[idx].ci : 0;
		ptx_emit(g->f, "add.s32 %R, %R, %I;", a, g->smem,
			off + i * stride);
		return a;
	}
	ptx_emit(g->f, "mad.lo.s32 %R, %R, %I, %R;", a, pg_u32(g, idx),
		stride, g->smem);
	if (off)
		ptx_emit(g->f, "add.s32 %R, %R, %I;", a, a, off);
	return a;
}

static PReg
bar_addr(PG *g, const Res *r, Ref idx)
{
	return addr(g, r->off, idx, 8);
}

static void
emit_mbar_wait(PG *g, const SirIns *in)
{
	PReg a = bar_addr(g, in->r[0], in->ri[0]), p = ptx_reg(g->f, RP);
	PReg ph = ptx_reg(g->f, RB32);
	int top = ptx_label(g->f);

	ptx_emit(g->f, "and.b32 %R, %R, 1;", ph, pg_u32(g, in->a[0]));
	ptx_place(g->f, top);
	ptx_emit(g->f, "mbarrier.try_wait.parity.shared::cta.b64 %R, [%R], "
		"%R;", p, a, ph);
	ptx_emit(g->f, "@!%R bra %L;", p, top);
}

static void
emit_mbar_arrive(PG *g, const SirIns *in)
{
	PReg a = bar_addr(g, in->r[0], in->ri[0]);

	if (in->op == SOP_mbar_expect)
		ptx_emit(g->f, "mbarrier.arrive.expect_tx.shared::cta.b64 _, "
			"[%R], %R;", a, pg_u32(g, in->a[0]));
	else if (in->imm > 1)
		ptx_emit(g->f, "mbarrier.arrive.shared::cta.b64 _, [%R], %I;",
			a, in->imm);
	else
		ptx_emit(g->f, "mbarrier.arrive.shared::cta.b64 _, [%R];", a);
}

static void
emit_bar(PG *g, const SirIns *in)
{
	const Res *r = in->r[0];
	const char *op = in->op == SOP_bar_sync ? "barrier.sync.aligned" :
		"barrier.arrive.aligned";

	if (!in->ri[0] || g->sp->vals[in->ri[0]].isconst) {
		int64_t i = in->ri[0] ? g->sp->vals[in->ri[0]].ci : 0;
		ptx_emit(g->f, "%S %I, %I;", op, (int64_t)r->bar_id + i,
			r->threads);
		return;
	}
	PReg id = ptx_reg(g->f, RB32);
	ptx_emit(g->f, "add.s32 %R, %R, %I;", id, pg_u32(g, in->ri[0]),
		(int64_t)r->bar_id);
	ptx_emit(g->f, "%S %R, %I;", op, id, r->threads);
}

static PReg
tmap_addr(PG *g, const Res *v)
{
	PReg a = ptx_reg(g->f, RB64);

	ptx_emit(g->f, "mov.b64 %R, %S;", a, v->name);
	ptx_emit(g->f, "cvta.param.u64 %R, %R;", a, a);
	return a;
}

/* The TMA box of one instruction: a swizzled box wider than the swizzle
 * span is issued as span-wide column blocks, each its own rows x span
 * bytes in shared memory (the layout wgmma and tcgen05 descriptors
 * expect for 128B-swizzled K-major tiles). */
int
pg_tma_blocks(const Res *v, int64_t *inner, int64_t *blockbytes)
{
	int n = v->rank, esz = ty_bytes(v->ety);
	int64_t rows = 1;

	for (int i = 0; i < n - 1; i++)
		rows *= v->shape[i];
	*inner = v->shape[n - 1];
	if (v->swizzle && *inner * esz > v->swizzle)
		*inner = v->swizzle / esz;
	*blockbytes = rows * *inner * esz;
	return (int)(v->shape[n - 1] / *inner);
}

static void
emit_tma(PG *g, const SirIns *in)
{
	const Res *v = in->r[0], *b = in->r[1];
	bool load = in->op == SOP_tma_load;
	int64_t inner, bb;
	int nblk = pg_tma_blocks(v, &inner, &bb), n = v->rank;
	PReg map = tmap_addr(g, v);
	PReg base = addr(g, b->off, in->ri[1], b->bytes);
	PReg bar = load ? bar_addr(g, in->r[2], in->ri[2]) : (PReg){0};
	PReg c[5];

	for (int i = 0; i < n; i++)
		c[i] = pg_u32(g, in->a[i]);
	for (int k = 0; k < nblk; k++) {
		PReg dst = base, ci = c[n - 1];
		char crd[128];
		size_t len = 0;

		if (k) {
			dst = ptx_reg(g->f, RB32);
			ci = ptx_reg(g->f, RB32);
			ptx_emit(g->f, "add.s32 %R, %R, %I;", dst, base, k * bb);
			ptx_emit(g->f, "add.s32 %R, %R, %I;", ci, c[n - 1],
				k * inner);
		}
		/* coordinates innermost first: {%ci, c[n-2], ..., c[0]} */
		for (int i = n - 1; i >= 0; i--) {
			char nm[16];
			ptx_regname(g->f, i == n - 1 ? ci : c[i], nm);
			len += (size_t)snprintf(crd + len, sizeof crd - len,
				"%s%s", i == n - 1 ? "" : ", ", nm);
		}
		if (load)
			ptx_emit(g->f, "cp.async.bulk.tensor.%Id.shared::cluster."
				"global.mbarrier::complete_tx::bytes [%R], [%R, "
				"{%S}], [%R];", (int64_t)n, dst, map, crd, bar);
		else
			ptx_emit(g->f, "cp.async.bulk.tensor.%Id.global."
				"shared::cta.bulk_group [%R, {%S}], [%R];",
				(int64_t)n, map, crd, dst);
	}
}

static PReg
tmem_slot(PG *g)
{
	PReg a = ptx_reg(g->f, RB32);

	ptx_emit(g->f, "add.s32 %R, %R, %I;", a, g->smem,
		g->k->smem_bytes - 16);
	return a;
}

static void
emit_tmem(PG *g, const SirIns *in)
{
	PReg slot = tmem_slot(g);

	if (in->op == SOP_tmem_alloc) {
		ptx_emit(g->f, "tcgen05.alloc.cta_group::1.sync.aligned."
			"shared::cta.b32 [%R], %I;", slot, in->imm);
		ptx_emit(g->f, "tcgen05.relinquish_alloc_permit.cta_group::1."
			"sync.aligned;");
		return;
	}
	PReg t = ptx_reg(g->f, RB32);
	ptx_emit(g->f, "ld.shared.b32 %R, [%R];", t, slot);
	ptx_emit(g->f, "tcgen05.dealloc.cta_group::1.sync.aligned.b32 %R, %I;",
		t, (int64_t)(g->k->tmem_cols ? g->k->tmem_cols : 512));
}

void
pg_sync(PG *g, const SirIns *in)
{
	if (pg_row(g, in))  /* one instruction on this target */
		return;
	switch (in->op) {
	case SOP_mbar_wait:
		emit_mbar_wait(g, in);
		break;
	case SOP_mbar_arrive: case SOP_mbar_expect:
		emit_mbar_arrive(g, in);
		break;
	case SOP_bar_sync: case SOP_bar_arrive:
		emit_bar(g, in);
		break;
	case SOP_tma_load: case SOP_tma_store:
		emit_tma(g, in);
		break;
	case SOP_tc_commit:
		ptx_emit(g->f, "tcgen05.commit.cta_group::1.mbarrier::arrive::one."
			"shared::cluster.b64 [%R];", bar_addr(g, in->r[0],
			in->ri[0]));
		break;
	case SOP_tmem_alloc: case SOP_tmem_free:
		emit_tmem(g, in);
		break;
	default:
		/* wgmma and tcgen05.mma, tensor-memory loads and stores and
		 * register-tile math are lowered by the Hopper and Blackwell
		 * backends (issues #3 and #6) */
		pg_unsupported(g, in);
	}
}
