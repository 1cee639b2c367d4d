/* ptxsync.c: barriers, fences, TMA, tensor-memory management, MMA
 * group operations and loads from global memory to PTX.  One emit
 * function per multi-instruction feature (STYLE B6).  Shared-memory
 * addresses are 32-bit .shared::cta addresses; tensor maps are read
 * from the .param space. */
#include <stdio.h>
#include <string.h>


#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"
#include "ptx/ptx.h"
#include "ptx/ptxgen.h"

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

PReg
pg_bar_addr(PG *g, const Res *r, Ref idx)
{
	return bar_addr(g, r, idx);
}

/* The parity test of a wait loop: try_wait (which may suspend the
 * thread a while) from sm_90 on, test_wait on sm_80. */
static const char *
wait_insn(const PG *g, bool cluster)
{
	return cluster ? "mbarrier.try_wait.parity.acquire.cluster.shared::"
		"cta.b64" : g->t->hopper ? "mbarrier.try_wait.parity.shared::"
		"cta.b64" : "mbarrier.test_wait.parity.shared.b64";
}

#define HANG_NS 2000000000ull  /* --debug-hangs: 2 s of waiting */

/* The message a stuck wait prints, as a module-scope string. */
static int
hang_message(PG *g, const SirIns *in)
{
	const Part *pt = g->sp->part;
	const Src *src = ctx_src(g->ctx, in->span.lo);
	uint32_t line, col;
	char msg[512];

	src_linecol(src, in->span.lo, &line, &col);
	int n = snprintf(msg, sizeof msg, "fagen --debug-hangs: CTA %%d, "
		"partition '%s", pt->name);
	if (pt->index >= 0)
		n += snprintf(msg + n, sizeof msg - (size_t)n, "[%d]", pt->index);
	snprintf(msg + n, sizeof msg - (size_t)n, "' (warp %%d) waits on "
		"'%s[%%d]' for parity %%d at %s:%u:%u, tile iteration %%d, loop "
		"index %%d; trapping\n", in->r[0]->name, src->name, line,
		col);
	int id = g->nmsg++;
	buf_printf(g->globals, ".global .align 1 .b8 fg_hang%d[%zu] = {", id,
		strlen(msg) + 1);
	for (size_t i = 0; msg[i]; i++)
		buf_printf(g->globals, "%d, ", (unsigned char)msg[i]);
	buf_puts(g->globals, "0};\n");
	return id;
}

/* --debug-hangs: the wait gives up after HANG_NS of %globaltimer; lane 0
 * of the warp prints where it is stuck and every lane traps. */
static void
hang_wait(PG *g, const SirIns *in, PReg a, PReg ph, PReg idx)
{
	PReg p = ptx_reg(g->f, RP), t0 = ptx_reg(g->f, RB64);
	PReg t = ptx_reg(g->f, RB64), fmt = ptx_reg(g->f, RB64);
	PReg args = ptx_reg(g->f, RB64), v = ptx_reg(g->f, RB32);
	int top = ptx_label(g->f), done = ptx_label(g->f);
	int quiet = ptx_label(g->f), id = hang_message(g, in);

	ptx_emit(g->f, "mov.u64 %R, %%globaltimer;", t0);
	ptx_place(g->f, top);
	ptx_emit(g->f, "%S %R, [%R], %R;", wait_insn(g, in->imm2), p, a, ph);
	ptx_emit(g->f, "@%R bra %L;", p, done);
	ptx_emit(g->f, "mov.u64 %R, %%globaltimer;", t);
	ptx_emit(g->f, "sub.u64 %R, %R, %R;", t, t, t0);
	ptx_emit(g->f, "setp.lt.u64 %R, %R, %U;", p, t, (uint64_t)HANG_NS);
	ptx_emit(g->f, "@%R bra %L;", p, top);
	ptx_emit(g->f, "setp.ne.u32 %R, %R, 0;", p, g->lane);
	ptx_emit(g->f, "@%R bra %L;", p, quiet);
	ptx_emit(g->f, "{\n.local .align 8 .b8 fg_args[24];\n"
		".param .b64 fg_p0;\n.param .b64 fg_p1;\n"
		".param .b32 fg_rv;");
	ptx_emit(g->f, "mov.u32 %R, %%ctaid.x;", v);
	ptx_emit(g->f, "st.local.u32 [fg_args], %R;", v);
	ptx_emit(g->f, "sub.s32 %R, %R, %I;", v, g->warp,
		(int64_t)g->sp->part->warp_lo);
	ptx_emit(g->f, "st.local.u32 [fg_args+4], %R;", v);
	ptx_emit(g->f, "st.local.u32 [fg_args+8], %R;", idx);
	ptx_emit(g->f, "st.local.u32 [fg_args+12], %R;", ph);
	ptx_emit(g->f, "mov.u32 %R, %I;", v, (int64_t)-1);
	ptx_emit(g->f, "st.local.u32 [fg_args+16], %R;", g->niters ?
		g->iters[0] : v);
	ptx_emit(g->f, "st.local.u32 [fg_args+20], %R;", g->niters > 1 ?
		g->iters[g->niters - 1] : v);
	char sym[32];
	snprintf(sym, sizeof sym, "fg_hang%d", id);
	ptx_emit(g->f, "mov.u64 %R, %S;", fmt, sym);
	ptx_emit(g->f, "cvta.global.u64 %R, %R;", fmt, fmt);
	ptx_emit(g->f, "mov.u64 %R, fg_args;", args);
	ptx_emit(g->f, "cvta.local.u64 %R, %R;", args, args);
	ptx_emit(g->f, "st.param.b64 [fg_p0], %R;", fmt);
	ptx_emit(g->f, "st.param.b64 [fg_p1], %R;", args);
	ptx_emit(g->f, "call.uni (fg_rv), vprintf, (fg_p0, fg_p1);\n}");
	ptx_place(g->f, quiet);
	ptx_emit(g->f, "trap;");
	ptx_place(g->f, done);
}

static void
emit_mbar_wait(PG *g, const SirIns *in)
{
	PReg a = bar_addr(g, in->r[0], in->ri[0]), p = ptx_reg(g->f, RP);
	PReg ph = ptx_reg(g->f, RB32);
	int top = ptx_label(g->f);

	ptx_emit(g->f, "and.b32 %R, %R, 1;", ph, pg_u32(g, in->a[0]));
	if (g->ctx->debug_hangs) {
		hang_wait(g, in, a, ph, pg_u32(g, in->ri[0]));
		return;
	}
	ptx_place(g->f, top);
	ptx_emit(g->f, "%S %R, [%R], %R;", wait_insn(g, in->imm2), p, a, ph);
	ptx_emit(g->f, "@!%R bra %L;", p, top);
}

static void
emit_mbar_arrive(PG *g, const SirIns *in)
{
	PReg a = bar_addr(g, in->r[0], in->ri[0]);

	if (in->cta) {
		/* a peer's barrier: the same offset in CTA 'cta' of the
		 * cluster.  The default semantics (release, CTA scope), as
		 * CUTLASS's cluster pipelines: what it releases is a buffer
		 * this CTA has finished reading (a wgmma retired), which
		 * needs no ordering at cluster scope; '.release.cluster'
		 * costs a GPU-scope MEMBAR per arriving thread */
		PReg ra = ptx_reg(g->f, RB32);
		ptx_emit(g->f, "mapa.shared::cluster.u32 %R, %R, %R;", ra, a,
			pg_u32(g, in->cta));
		if (in->imm > 1)
			ptx_emit(g->f, "mbarrier.arrive.shared::cluster.b64 _, "
				"[%R], %I;", ra, in->imm);
		else
			ptx_emit(g->f, "mbarrier.arrive.shared::cluster.b64 _, "
				"[%R];", ra);
		return;
	}
	if (in->op == SOP_mbar_expect)
		ptx_emit(g->f, "mbarrier.arrive.expect_tx.shared::cta.b64 _, "
			"[%R], %R;", a, pg_u32(g, in->a[0]));
	else if (in->imm > 1 && !g->t->hopper) {
		/* sm_80 counts only with .noComplete: N - 1 arrivals that
		 * cannot complete the phase (N fit in it: the verifier checks
		 * that no phase overflows), then one that may */
		ptx_emit(g->f, "mbarrier.arrive.noComplete.shared.b64 _, [%R], "
			"%I;", a, in->imm - 1);
		ptx_emit(g->f, "mbarrier.arrive.shared.b64 _, [%R];", a);
	} else if (in->imm > 1)
		ptx_emit(g->f, "mbarrier.arrive.shared::cta.b64 _, [%R], %I;",
			a, in->imm);
	else
		ptx_emit(g->f, "mbarrier.arrive.%S.b64 _, [%R];", g->t->hopper ?
			"shared::cta" : "shared", a);
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

static int64_t
box_rows(const Res *v)
{
	int64_t rows = 1;

	for (int i = 0; i < v->rank - 1; i++)
		rows *= v->shape[i];
	return rows;
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
	PReg c[5], mask = {0};
	/* row=: the box fills the tile's rows from 'row' on; each column
	 * block of the buffer holds all its rows */
	int64_t rb = bb / box_rows(v), colstride = bb;

	if (in->row) {
		colstride = b->shape[0] * rb;
		PReg rbase = ptx_reg(g->f, RB32);
		ptx_emit(g->f, "mad.lo.s32 %R, %R, %I, %R;", rbase,
			pg_u32(g, in->row), rb, base);
		base = rbase;
	}
	if (in->cta) {  /* multicast: ctaMask is 16 bits */
		mask = ptx_reg(g->f, RB16);
		ptx_emit(g->f, "cvt.u16.u32 %R, %R;", mask, pg_u32(g, in->cta));
	}
	if (in->peer) {  /* a pair's load: the bytes complete on CTA R's */
		PReg pb = ptx_reg(g->f, RB32);
		ptx_emit(g->f, "mapa.shared::cluster.u32 %R, %R, %R;", pb, bar,
			pg_u32(g, in->peer));
		bar = pb;
	}
	for (int i = 0; i < n; i++)
		c[i] = pg_u32(g, in->a[i]);
	for (int k = 0; k < nblk; k++) {
		PReg dst = base, ci = c[n - 1];
		char crd[128];
		size_t len = 0;

		if (k) {
			dst = ptx_reg(g->f, RB32);
			ci = ptx_reg(g->f, RB32);
			ptx_emit(g->f, "add.s32 %R, %R, %I;", dst, base,
				k * colstride);
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
		if (load && in->cta)
			ptx_emit(g->f, "cp.async.bulk.tensor.%Id.shared::cluster."
				"global.mbarrier::complete_tx::bytes.multicast::"
				"cluster [%R], [%R, {%S}], [%R], %R;", (int64_t)n,
				dst, map, crd, bar, mask);
		else if (load)
			ptx_emit(g->f, "cp.async.bulk.tensor.%Id.shared::cluster."
				"global.mbarrier::complete_tx::bytes%S [%R], [%R, "
				"{%S}], [%R];", (int64_t)n, in->peer ?
				".cta_group::2" : "", dst, map, crd, bar);
		else if (in->imm)  /* reduce=add */
			ptx_emit(g->f, "cp.reduce.async.bulk.tensor.%Id.global."
				"shared::cta.add.tile.bulk_group [%R, {%S}], [%R];",
				(int64_t)n, map, crd, dst);
		else
			ptx_emit(g->f, "cp.async.bulk.tensor.%Id.global."
				"shared::cta.bulk_group [%R, {%S}], [%R];",
				(int64_t)n, map, crd, dst);
	}
}

/* bulk_copy: this CTA's tile into CTA 'cta's buffer (mapa'd with its
 * barrier; without cta= this CTA's own addresses, which are shared::
 * cluster addresses too), completing its bytes on that barrier. */
static void
emit_bulk_copy(PG *g, const SirIns *in)
{
	PReg src = addr(g, in->r[0]->off, in->ri[0], in->r[0]->bytes);
	PReg dst = addr(g, in->r[1]->off, in->ri[1], in->r[1]->bytes);
	PReg bar = bar_addr(g, in->r[2], in->ri[2]);

	if (in->cta) {
		PReg r = pg_u32(g, in->cta), d = ptx_reg(g->f, RB32),
			b = ptx_reg(g->f, RB32);
		ptx_emit(g->f, "mapa.shared::cluster.u32 %R, %R, %R;", d, dst, r);
		ptx_emit(g->f, "mapa.shared::cluster.u32 %R, %R, %R;", b, bar, r);
		dst = d;
		bar = b;
	}
	ptx_emit(g->f, "cp.async.bulk.shared::cluster.shared::cta.mbarrier::"
		"complete_tx::bytes [%R], [%R], %I, [%R];", dst, src, in->imm,
		bar);
}

/* bulk_copy G[...] -> S[s], B (issue #26): the tile's R rows, row r one
 * bulk copy of min(last extent - last index, C) elements from the
 * global's row of index K + r into row r of the unswizzled buffer,
 * skipped when K + r is at or past the limit or the row is empty; each
 * completes its bytes on B.  Issued by the threads that run it (in
 * 'elect', one). */
static void
emit_bulk_load(PG *g, const SirIns *in)
{
	const Res *gl = in->r[0], *b = in->r[1];
	int esz = ty_bytes(b->ety);
	int64_t R = b->shape[0], C = b->shape[1], rowbytes = C * esz;
	PReg base = addr(g, b->off, in->ri[1], b->bytes);
	PReg bar = bar_addr(g, in->r[2], in->ri[2]);
	PReg ptr = ptx_reg(g->f, RB64), src = ptx_reg(g->f, RB64);
	PReg step = ptx_reg(g->f, RB64), nb = ptx_reg(g->f, RB32);
	PReg lim = ptx_reg(g->f, RB32), p = ptx_reg(g->f, RP);
	PReg q = ptx_reg(g->f, RP);

	ptx_emit(g->f, "ld.param.u64 %R, [%S];", ptr, gl->name);
	ptx_emit(g->f, "cvta.to.global.u64 %R, %R;", ptr, ptr);
	/* a row's bytes, and whether it is empty */
	ptx_emit(g->f, "sub.s32 %R, %R, %R;", nb, pg_u32(g, in->a[5]),
		pg_u32(g, in->a[4]));
	ptx_emit(g->f, "max.s32 %R, %R, 0;", nb, nb);
	ptx_emit(g->f, "min.s32 %R, %R, %I;", nb, nb, C);
	ptx_emit(g->f, "mul.lo.s32 %R, %R, %I;", nb, nb, (int64_t)esz);
	ptx_emit(g->f, "setp.eq.s32 %R, %R, 0;", q, nb);
	/* rows r < lim = limit - K are in */
	ptx_emit(g->f, "sub.s32 %R, %R, %R;", lim, pg_u32(g, in->a[1]),
		pg_u32(g, in->a[2]));
	ptx_emit(g->f, "mad.wide.s32 %R, %R, %I, %R;", src, pg_u32(g, in->a[0]),
		(int64_t)esz, ptr);
	if (R > 1)
		ptx_emit(g->f, "mul.wide.s32 %R, %R, %I;", step,
			pg_u32(g, in->a[3]), (int64_t)esz);
	for (int64_t r = 0; r < R; r++) {
		ptx_emit(g->f, "setp.le.s32 %R, %R, %I;", p, lim, r);
		ptx_emit(g->f, "or.pred %R, %R, %R;", p, p, q);
		ptx_emit(g->f, "@!%R cp.async.bulk.shared::cluster.global.mbarrier::"
			"complete_tx::bytes [%R+%I], [%R], %R, [%R];", p, base,
			r * rowbytes, src, nb, bar);
		if (r + 1 < R)
			ptx_emit(g->f, "add.s64 %R, %R, %R;", src, src, step);
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

	/* a CTA pair allocates and frees together: one warp of each CTA */
	const char *grp = g->k->pair ? "2" : "1";

	if (in->op == SOP_tmem_alloc) {
		ptx_emit(g->f, "tcgen05.alloc.cta_group::%S.sync.aligned."
			"shared::cta.b32 [%R], %I;", grp, slot, in->imm);
		ptx_emit(g->f, "tcgen05.relinquish_alloc_permit.cta_group::%S."
			"sync.aligned;", grp);
		return;
	}
	PReg t = ptx_reg(g->f, RB32);
	ptx_emit(g->f, "ld.shared.b32 %R, [%R];", t, slot);
	ptx_emit(g->f, "tcgen05.dealloc.cta_group::%S.sync.aligned.b32 %R, "
		"%I;", grp, t, (int64_t)(g->k->tmem_cols ? g->k->tmem_cols :
		512));
}

/* G[i...] as a value: the element at the row-major linear index, read
 * through the non-coherent path (a kernel never writes a global it
 * loads: sir/sirload.c); 16-bit floats widen to f32. */
static void
emit_gload(PG *g, const SirIns *in)
{
	const Res *r = in->r[0];
	PReg ptr = ptx_reg(g->f, RB64), d = pg_reg(g, in->dst);
	int esz = ty_bytes(r->ety);

	ptx_emit(g->f, "ld.param.u64 %R, [%S];", ptr, r->name);
	ptx_emit(g->f, "cvta.to.global.u64 %R, %R;", ptr, ptr);
	ptx_emit(g->f, "mad.wide.s32 %R, %R, %I, %R;", ptr,
		pg_u32(g, in->a[0]), (int64_t)esz, ptr);
	if (esz == 2) {
		PReg h = ptx_reg(g->f, RB16);
		ptx_emit(g->f, "ld.global.nc.b16 %R, [%R];", h, ptr);
		ptx_emit(g->f, "cvt.f32.%S %R, %R;", r->ety == TY_BF16 ?
			"bf16" : "f16", d, h);
		return;
	}
	ptx_emit(g->f, "ld.global.nc.%S %R, [%R];", r->ety == TY_F32 ? "f32" :
		esz == 8 ? "b64" : "b32", d, ptr);
}

/* sem_wait: spin on the counter with an acquiring load at GPU scope until
 * it holds at least the value; sem_add: add with release at GPU scope.
 * The proxy fences order the thread's bulk (TMA) copies, which run in
 * the async proxy, after the wait and before the add: a TMA reduce into
 * global memory between them is what the counter orders (issue #13).
 * sm_80 has no async proxy. */
static void
emit_sem(PG *g, const SirIns *in)
{
	const Res *r = in->r[0];
	PReg ptr = ptx_reg(g->f, RB64);
	bool proxy = g->ops->id != TGT_SM80;

	ptx_emit(g->f, "ld.param.u64 %R, [%S];", ptr, r->name);
	ptx_emit(g->f, "cvta.to.global.u64 %R, %R;", ptr, ptr);
	ptx_emit(g->f, "mad.wide.s32 %R, %R, 4, %R;", ptr, pg_u32(g, in->a[0]),
		ptr);
	if (in->op == SOP_sem_add) {
		if (proxy)
			ptx_emit(g->f, "fence.proxy.async.global;");
		ptx_emit(g->f, "red.release.gpu.global.add.s32 [%R], %R;", ptr,
			pg_u32(g, in->a[1]));
		return;
	}
	PReg v = ptx_reg(g->f, RB32), p = ptx_reg(g->f, RP);
	int top = ptx_label(g->f);
	ptx_place(g->f, top);
	ptx_emit(g->f, "ld.acquire.gpu.global.b32 %R, [%R];", v, ptr);
	ptx_emit(g->f, "setp.lt.s32 %R, %R, %R;", p, v, pg_u32(g, in->a[1]));
	ptx_emit(g->f, "@%R bra %L;", p, top);
	if (proxy)
		ptx_emit(g->f, "fence.proxy.async.global;");
}

/* The byte offset in a TMA-style tile of chunk (row r, 16-byte column c):
 * (c*16 / span)*R*span + r*span + c*16 % span, its 16-byte chunk XORed
 * with the row's swizzle bits. */
static void
chunk_off(PG *g, PReg lin, PReg r, PReg c, int64_t R, int64_t span, int sw)
{
	PReg u = ptx_reg(g->f, RB32);

	ptx_emit(g->f, "shl.b32 %R, %R, 4;", u, c);
	ptx_emit(g->f, "div.u32 %R, %R, %I;", lin, u, span);
	ptx_emit(g->f, "mul.lo.s32 %R, %R, %I;", lin, lin, R * span);
	ptx_emit(g->f, "rem.u32 %R, %R, %I;", u, u, span);
	ptx_emit(g->f, "add.s32 %R, %R, %R;", lin, lin, u);
	ptx_emit(g->f, "mad.lo.s32 %R, %R, %I, %R;", lin, r, span, lin);
	if (sw) {
		ptx_emit(g->f, "shr.u32 %R, %R, 7;", u, lin);
		ptx_emit(g->f, "and.b32 %R, %R, %I;", u, u, (int64_t)(sw / 16 - 1));
		ptx_emit(g->f, "shl.b32 %R, %R, 4;", u, u);
		ptx_emit(g->f, "xor.b32 %R, %R, %R;", lin, lin, u);
	}
}

/* The bytes of the 16-byte chunk at column c (in chunks) that lie inside
 * the global's last extent, 0 to 16 (csz), and whether there are any
 * (q): a chunk that straddles the edge copies its first bytes and
 * zero-fills the rest. */
static void
col_bytes(PG *g, PReg csz, PReg q, PReg c, const SirIns *in, int esz)
{
	PReg u = ptx_reg(g->f, RB32);

	ptx_emit(g->f, "mad.lo.s32 %R, %R, %I, %R;", u, c, (int64_t)(16 / esz),
		pg_u32(g, in->a[4]));
	ptx_emit(g->f, "sub.s32 %R, %R, %R;", u, pg_u32(g, in->a[5]), u);
	ptx_emit(g->f, "mul.lo.s32 %R, %R, %I;", u, u, (int64_t)esz);
	ptx_emit(g->f, "max.s32 %R, %R, 0;", u, u);
	ptx_emit(g->f, "min.s32 %R, %R, 16;", csz, u);
	ptx_emit(g->f, "setp.gt.s32 %R, %R, 0;", q, csz);
}

/* The swizzle's XOR of a row (bits 4.. of its offset) for a tile of
 * span-byte rows: what chunk_off XORs for row r at column block 0. */
static int64_t
row_xor(int64_t r, int64_t span, int sw)
{
	return sw ? (r * span >> 7 & (sw / 16 - 1)) << 4 : 0;
}

/* cp_async G[...] -> S[s] [, B]: the partition's T threads copy the
 * R x C tile in 16-byte chunks, chunk q = (row q / cpr, 16-byte column
 * q % cpr) by thread q % T, into the layout a TMA box has in shared
 * memory (span-wide column blocks, the swizzle's XOR of the chunk with
 * the row), so MMAs read it the same way.  A chunk whose row index K is
 * at or past the limit, or whose columns all pass G's last extent,
 * copies 0 bytes: 16 zeros (cp.async's src-size), from G's base; one
 * that straddles the last extent copies the bytes inside it.  With B,
 * one cp.async.mbarrier.arrive.noinc per thread.
 *
 * When T is a multiple of cpr (every round moves whole rows: rs = T /
 * cpr of them) a thread's chunks are its first one's rows plus k rs,
 * the same column: its shared offset, source address, row limit and
 * column check are computed once, and each chunk adds constants -- the
 * swizzle's XOR of row r0 + k rs is r0's XORed with k rs's, their bits
 * disjoint (r0 < rs, a power of two below 8, or rs a multiple of 8) --
 * so a chunk costs a compare, two selects and the copy. */
static void
emit_cpasync(PG *g, const SirIns *in)
{
	const Res *gl = in->r[0], *b = in->r[1];
	const Part *pt = g->sp->part;
	int esz = ty_bytes(b->ety), sw = b->lay->swizzle;
	int64_t R = b->shape[0], rowbytes = b->shape[1] * esz;
	int64_t span = sw ? sw : rowbytes, cpr = rowbytes / 16, nch = R * cpr;
	int64_t T = (int64_t)(pt->warp_hi - pt->warp_lo + 1) * 32;
	int64_t rs = T / cpr;
	bool even = T % cpr == 0 && (rs % 8 == 0 || (8 % rs == 0 &&
		R % rs == 0));
	PReg base = addr(g, b->off, in->ri[1], b->bytes);
	PReg ptr = ptx_reg(g->f, RB64), t = ptx_reg(g->f, RB32);
	PReg r = ptx_reg(g->f, RB32), c = ptx_reg(g->f, RB32);
	PReg lin = ptx_reg(g->f, RB32), u = ptx_reg(g->f, RB32);
	PReg dst = ptx_reg(g->f, RB32), src = ptx_reg(g->f, RB64);
	PReg sz = ptx_reg(g->f, RB32), p = ptx_reg(g->f, RP);
	PReg q = ptx_reg(g->f, RP), pe = ptx_reg(g->f, RP);
	PReg lim = ptx_reg(g->f, RB32), step = ptx_reg(g->f, RB64);
	PReg sel = ptx_reg(g->f, RB64), csz = ptx_reg(g->f, RB32);

	ptx_emit(g->f, "ld.param.u64 %R, [%S];", ptr, gl->name);
	ptx_emit(g->f, "cvta.to.global.u64 %R, %R;", ptr, ptr);
	ptx_emit(g->f, "sub.s32 %R, %R, %I;", t, g->tid,
		(int64_t)pt->warp_lo * 32);
	if (even) {
		/* the first chunk's row and column, once */
		ptx_emit(g->f, "div.u32 %R, %R, %I;", r, t, cpr);
		ptx_emit(g->f, "rem.u32 %R, %R, %I;", c, t, cpr);
		chunk_off(g, lin, r, c, R, span, sw);
		ptx_emit(g->f, "add.s32 %R, %R, %R;", lin, lin, base);
		/* rows below lim (= limit - K - r0) are in; the columns */
		ptx_emit(g->f, "add.s32 %R, %R, %R;", u, r, pg_u32(g, in->a[2]));
		ptx_emit(g->f, "sub.s32 %R, %R, %R;", lim, pg_u32(g, in->a[1]), u);
		col_bytes(g, csz, q, c, in, esz);
		/* the source of the first chunk, and a round's step */
		ptx_emit(g->f, "mad.lo.s32 %R, %R, %R, %R;", u, r,
			pg_u32(g, in->a[3]), pg_u32(g, in->a[0]));
		ptx_emit(g->f, "mad.lo.s32 %R, %R, %I, %R;", u, c,
			(int64_t)(16 / esz), u);
		ptx_emit(g->f, "mad.wide.s32 %R, %R, %I, %R;", src, u,
			(int64_t)esz, ptr);
		ptx_emit(g->f, "mul.wide.s32 %R, %R, %I;", step,
			pg_u32(g, in->a[3]), rs * esz);
	}
	for (int64_t k = 0; k * T < nch; k++) {
		int skip = ptx_label(g->f);
		if ((k + 1) * T > nch) {  /* the last round: chunks < nch */
			ptx_emit(g->f, "setp.ge.u32 %R, %R, %I;", pe, t,
				nch - k * T);
			ptx_emit(g->f, "@%R bra %L;", pe, skip);
		}
		if (even) {
			int64_t x = row_xor(k * rs, span, sw);
			PReg d = lin;
			if (x) {
				ptx_emit(g->f, "xor.b32 %R, %R, %I;", dst, lin, x);
				d = dst;
			}
			ptx_emit(g->f, "setp.gt.s32 %R, %R, %I;", p, lim, k * rs);
			ptx_emit(g->f, "and.pred %R, %R, %R;", p, p, q);
			ptx_emit(g->f, "selp.b64 %R, %R, %R, %R;", sel, src, ptr, p);
			ptx_emit(g->f, "selp.b32 %R, %R, 0, %R;", sz, csz, p);
			ptx_emit(g->f, "cp.async.cg.shared.global [%R+%I], [%R], 16, "
				"%R;", d, k * rs * span, sel, sz);
			ptx_place(g->f, skip);
			if ((k + 1) * T < nch)
				ptx_emit(g->f, "add.s64 %R, %R, %R;", src, src, step);
			continue;
		}
		ptx_emit(g->f, "add.s32 %R, %R, %I;", u, t, k * T);
		ptx_emit(g->f, "div.u32 %R, %R, %I;", r, u, cpr);
		ptx_emit(g->f, "rem.u32 %R, %R, %I;", c, u, cpr);
		chunk_off(g, lin, r, c, R, span, sw);
		ptx_emit(g->f, "add.s32 %R, %R, %R;", dst, base, lin);
		/* global: element lin + r * stride + c * 16 / esz, the row
		 * index K + r below the limit, the columns inside */
		ptx_emit(g->f, "add.s32 %R, %R, %R;", u, r, pg_u32(g, in->a[2]));
		ptx_emit(g->f, "setp.lt.s32 %R, %R, %R;", p, u,
			pg_u32(g, in->a[1]));
		col_bytes(g, csz, q, c, in, esz);
		ptx_emit(g->f, "and.pred %R, %R, %R;", p, p, q);
		ptx_emit(g->f, "mad.lo.s32 %R, %R, %R, %R;", u, r,
			pg_u32(g, in->a[3]), pg_u32(g, in->a[0]));
		ptx_emit(g->f, "mad.lo.s32 %R, %R, %I, %R;", u, c,
			(int64_t)(16 / esz), u);
		ptx_emit(g->f, "mad.wide.s32 %R, %R, %I, %R;", src, u,
			(int64_t)esz, ptr);
		ptx_emit(g->f, "selp.b64 %R, %R, %R, %R;", src, src, ptr, p);
		ptx_emit(g->f, "selp.b32 %R, %R, 0, %R;", sz, csz, p);
		ptx_emit(g->f, "cp.async.cg.shared.global [%R], [%R], 16, %R;",
			dst, src, sz);
		ptx_place(g->f, skip);
	}
	if (in->r[2])
		ptx_emit(g->f, "cp.async.mbarrier.arrive.noinc.shared.b64 [%R];",
			bar_addr(g, in->r[2], in->ri[2]));
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
	case SOP_grid_wait:
		ptx_emit(g->f, "griddepcontrol.wait;");
		break;
	case SOP_grid_launch:
		ptx_emit(g->f, "griddepcontrol.launch_dependents;");
		break;
	case SOP_cl_sync:
		/* every thread of the cluster; the statement releases what
		 * each thread did, a reduction's (imm 0) writers fenced
		 * theirs (clred_put: fence.acq_rel.cluster), so it arrives
		 * relaxed; the wait acquires */
		ptx_emit(g->f, "barrier.cluster.arrive.%S.aligned;", in->imm ?
			"release" : "relaxed");
		ptx_emit(g->f, "barrier.cluster.wait.acquire.aligned;");
		break;
	case SOP_tma_load: case SOP_tma_store:
		emit_tma(g, in);
		break;
	case SOP_bulk_copy:
		emit_bulk_copy(g, in);
		break;
	case SOP_bulk_load:
		emit_bulk_load(g, in);
		break;
	case SOP_tc_commit:
		if (in->cta) {  /* to the barrier in each CTA of the mask */
			PReg m = ptx_reg(g->f, RB16), a = bar_addr(g, in->r[0],
				in->ri[0]);
			ptx_emit(g->f, "cvt.u16.u32 %R, %R;", m, pg_u32(g, in->cta));
			ptx_emit(g->f, "tcgen05.commit.cta_group::%S.mbarrier::"
				"arrive::one.shared::cluster.multicast::cluster.b64 "
				"[%R], %R;", g->k->pair ? "2" : "1", a, m);
			break;
		}
		ptx_emit(g->f, "tcgen05.commit.cta_group::%S.mbarrier::arrive::"
			"one.shared::cluster.b64 [%R];", g->k->pair ? "2" : "1",
			bar_addr(g, in->r[0], in->ri[0]));
		break;
	case SOP_tmem_alloc: case SOP_tmem_free:
		emit_tmem(g, in);
		break;
	case SOP_gload:
		emit_gload(g, in);
		break;
	case SOP_sem_wait: case SOP_sem_add:
		emit_sem(g, in);
		break;
	case SOP_cp_async:
		emit_cpasync(g, in);
		break;
	case SOP_cp_commit:
		ptx_emit(g->f, "cp.async.commit_group;");
		break;
	case SOP_cp_wait:
		ptx_emit(g->f, "cp.async.wait_group %I;", in->imm);
		break;
	default:
		/* wgmma and tcgen05.mma, tensor-memory loads and stores and
		 * register-tile math are lowered by the Hopper and Blackwell
		 * backends (issues #3 and #6) */
		pg_unsupported(g, in);
	}
}
