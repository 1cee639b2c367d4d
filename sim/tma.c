/* tma.c: tensor maps and cp.async.bulk.tensor (issue #18).
 *
 * A tensor map is what cuTensorMapEncodeTiled would record from the
 * metadata (runtime/jit/launch.c's tmap): dimensions innermost first,
 * dense strides, the box (a box of lower rank covers the innermost
 * dimensions), the swizzle and the out-of-bounds fill.  The parameter
 * buffer holds a magic number and the map's index where the GPU would
 * hold the opaque 128 bytes, so the kernel's `mov.b64 %rd, tmap;
 * cvta.param.u64` address finds it.
 *
 * A box lands in shared memory row by row, densely (element (i0, i1, ..)
 * at ((.. * b1 + i1) * b0 + i0) * esize from the destination), and the
 * swizzle permutes 16-byte chunks by the address bits above them, as the
 * hardware does on the shared address itself: 128B swaps bits [4,7) with
 * [7,10) by XOR, 64B bits [4,6) with [7,9), 32B bit 4 with bit 7 (the
 * CUDA programming guide's TMA swizzle patterns; CUTLASS Swizzle<3,4,3>,
 * <2,4,3>, <1,4,3>).  The destination must be aligned to the pattern's
 * repeat (1024, 512, 256 bytes; 128 without a swizzle).  Elements outside
 * the tensor read as zero (NaN with oob=nan) and still count towards the
 * transaction bytes; a store skips them.
 *
 * A load with .cta_group::2 (the CTA pair, tcgen05.c) lands in the
 * issuing CTA's own shared memory and completes its bytes on [mbar] in
 * that CTA or in the other of its pair (mapa's address of the leader's
 * barrier, as the pair's loads are counted there); a barrier outside
 * the pair is an error.  .multicast::cluster with .cta_group::2 is not
 * modelled (a load-time error: no such row in ops.h).
 *
 * st.async.shared::cluster.mbarrier::complete_tx::bytes[.v2|.v4].{b32,
 * f32} [addr], value or {values}, [mbar] (PTX ISA 9.7.8.12): each active
 * lane stores its 4, 8 or 16 bytes at [addr] in the CTA of the cluster
 * that the shared::cluster address names (mapa's, or this CTA's own) and
 * completes that many transaction bytes on [mbar], which must be in the
 * same CTA (PTX requires it).  It is modelled as cp.async.bulk.shared::
 * cluster.shared::cta is: one entry per lane in the issuing CTA's
 * asynchronous queue, the values read from the registers at issue, the
 * bytes landing and the complete_tx when the queue drains (every warp of
 * the cluster blocked; at issue with SIM_OPT_EAGER), so a read before
 * the mbarrier's phase completes sees the old bytes.  Errors at issue:
 * an address outside shared memory or not aligned to the access size,
 * [mbar] not 8-byte aligned, in another CTA than [addr] or not
 * initialized, a destination CTA that has exited; when it lands: the
 * destination CTA has exited since, or the bytes cover an mbarrier.  As
 * for every queued operation, the issuing CTA may not exit before its
 * queue drains (run.c). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "simi.h"

bool
tmap_build(Sim *s, const SimMeta *mt, int a, const int64_t *pv,
	const SimVal *vals, Tmap *t)
{
	const SimArg *v = &mt->args[a], *g = &mt->args[v->of];
	int r = g->rank;

	memset(t, 0, sizeof *t);
	t->addr = vals[g->user].ptr;
	t->rank = r;
	t->esize = ty_bits(g->ty) / 8;
	t->swizzle = v->swizzle;
	t->oob_nan = v->oob_nan;
	for (int i = 0; i < r; i++) {
		if (!sim_rpn_eval(&g->dims[r - 1 - i], pv, &t->dim[i]))
			return sim_fail(s, "tma '%s': bad dims", v->name), false;
		t->stride[i] = i ? t->stride[i - 1] * t->dim[i - 1] : t->esize;
		int bi = v->rank - 1 - i;
		t->box[i] = bi >= 0 ? v->box[bi] : 1;
		if (t->box[i] < 1 || t->box[i] > 256)
			return sim_fail(s, "tma '%s': box extent %d (1 to 256)",
				v->name, t->box[i]), false;
	}
	int inner = t->box[0] * t->esize;
	if (t->addr % 16 || inner % 16)
		return sim_fail(s, "tma '%s': the address and the inner box "
			"(%d bytes) must be 16-byte multiples", v->name, inner),
			false;
	if (t->swizzle && inner != t->swizzle)
		return sim_fail(s, "tma '%s': an inner box of %d bytes under a "
			"%d-byte swizzle is not modelled (only equal spans)",
			v->name, inner, t->swizzle), false;
	return true;
}

/* The swizzled shared address of byte address a. */
static uint32_t
swz(uint32_t a, int sw)
{
	int bits = sw == 128 ? 3 : sw == 64 ? 2 : sw == 32 ? 1 : 0;

	return a ^ ((a >> 7) & ((1u << bits) - 1)) << 4;
}

static const Tmap *
tmap_at(Cta *c, uint64_t a)
{
	uint64_t off = a - PARAM_BASE, magic, idx;

	if (a < PARAM_BASE || off % 64 || off + 16 > (uint64_t)c->nparam)
		return sim_fail(c->sim, "tensor map address 0x%llx is not a "
			"64-byte aligned kernel parameter (tensor maps in global "
			"memory are not modelled)", (unsigned long long)a), NULL;
	memcpy(&magic, c->param + off, 8);
	memcpy(&idx, c->param + off + 8, 8);
	if (magic != TMAP_MAGIC || idx >= (uint64_t)c->ntmaps)
		return sim_fail(c->sim, "the parameter at 0x%llx holds no "
			"tensor map", (unsigned long long)a), NULL;
	return &c->tmaps[idx];
}

static int64_t
box_bytes(const Tmap *t)
{
	int64_t n = t->esize;

	for (int i = 0; i < t->rank; i++)
		n *= t->box[i];
	return n;
}

/* Copies one box between global and shared memory; red: a store adds
 * (f32 elements only) instead of overwriting. */
static bool
copy_box(Cta *c, const Tmap *t, const int32_t *co, uint32_t sa, bool load,
	bool red)
{
	int64_t n = box_bytes(t) / t->esize;
	int e = t->esize;

	if (!smem_at(c, sa, (uint32_t)box_bytes(t), load ? "a TMA load" :
	    "a TMA store"))
		return false;
	for (int64_t lin = 0; lin < n; lin++) {
		int64_t rest = lin, off = 0;
		bool in = true;
		for (int i = 0; i < t->rank; i++) {
			int64_t x = (int64_t)co[i] + rest % t->box[i];
			rest /= t->box[i];
			in = in && x >= 0 && x < t->dim[i];
			off += x * t->stride[i];
		}
		uint32_t s = swz(sa + (uint32_t)(lin * e), t->swizzle);
		uint8_t *sp = c->smem + s;
		if (load && c->mbmark[s / 8])
			return sim_fail(c->sim, "a TMA load writes over the "
				"mbarrier at 0x%x", s & ~7u), false;
		if (!in) {
			if (load && t->oob_nan)
				memset(sp, 0xff, (size_t)e);
			else if (load)
				memset(sp, 0, (size_t)e);
			continue;
		}
		uint8_t *gp = sim_gmem(c->sim, t->addr + (uint64_t)off,
			(size_t)e, load ? "a TMA load" : "a TMA store");
		if (!gp)
			return false;
		if (red) {
			float x, y;
			memcpy(&x, gp, 4);
			memcpy(&y, sp, 4);
			x += y;
			memcpy(gp, &x, 4);
		} else {
			memcpy(load ? sp : gp, load ? gp : sp, (size_t)e);
		}
	}
	return true;
}

/* A load lands in each CTA of a->ranks (one, or a multicast's), at the
 * same shared address and completing on the same mbarrier in each. */
bool
tma_complete(Cta *c, const Async *a)
{
	if (a->kind == AS_BULK_S2S || a->kind == AS_BULK_G2S) {
		/* shared::cta (or global) into shared::cluster */
		bool g = a->kind == AS_BULK_G2S;
		Cta *p = &c->cl->cta[__builtin_ctz(a->ranks)];
		if (p->exited || (!g && c->exited))
			return sim_fail(c->sim, g ? "a bulk copy into CTA rank %d, "
				"which has exited" : "a bulk copy from CTA rank %d "
				"into CTA rank %d, one of which has exited", g ?
				p->rank : c->rank, p->rank), false;
		uint8_t *from = g ? sim_gmem(c->sim, a->gsrc, a->bytes, "a bulk "
			"copy's source") : smem_at(c, a->src, a->bytes, "a bulk "
			"copy's source"), *to = smem_at(p, a->smem, a->bytes,
			"a bulk copy's destination");
		if (!from || !to)
			return false;
		for (uint32_t i = 0; i < a->bytes; i += 8)
			if (p->mbmark[(a->smem + i) / 8])
				return sim_fail(c->sim, "a bulk copy writes over the "
					"mbarrier at 0x%x", (a->smem + i) & ~7u), false;
		memmove(to, from, a->bytes);
		return mbar_complete_tx(p, a->mbar, a->bytes);
	}
	if (a->kind == AS_ST_ASYNC) {
		Cta *p = &c->cl->cta[__builtin_ctz(a->ranks)];
		if (p->exited)
			return sim_fail(c->sim, "st.async into CTA rank %d, which "
				"has exited", p->rank), false;
		uint8_t *to = smem_at(p, a->smem, a->bytes, "st.async");
		if (!to)
			return false;
		for (uint32_t i = 0; i < a->bytes; i += 8)
			if (p->mbmark[(a->smem + i) / 8])
				return sim_fail(c->sim, "st.async writes over the "
					"mbarrier at 0x%x in CTA rank %d",
					(a->smem + i) & ~7u, p->rank), false;
		memcpy(to, a->val, a->bytes);   /* little-endian, as the GPU */
		return mbar_complete_tx(p, a->mbar, a->bytes);
	}
	const Tmap *t = &c->tmaps[a->tmap];
	if (a->kind == AS_TMA_STORE)
		return copy_box(c, t, a->coord, a->smem, false, a->reduce);
	for (int r = 0; r < c->cl->n; r++) {
		Cta *p = &c->cl->cta[r];
		if (!(a->ranks >> r & 1))
			continue;
		if (p->exited)
			return sim_fail(c->sim, "a TMA load into CTA rank %d of "
				"the cluster, which has exited", r), false;
		Cta *q = a->mcta ? &c->cl->cta[a->mcta - 1] : p;
		if (q->exited)
			return sim_fail(c->sim, "a TMA load completes on CTA rank "
				"%d's mbarrier, which has exited", q->rank), false;
		if (!copy_box(p, t, a->coord, a->smem, true, false) ||
		    !mbar_complete_tx(q, a->mbar, box_bytes(t)))
			return false;
	}
	return true;
}

/* [reg+imm] of lane l. */
static uint64_t
addr(const Warp *w, const Opnd *o, int l)
{
	return (uint64_t)o->imm + (o->r >= 0 ? *reg_at(w, o->r, l) : 0);
}

/* An asynchronous operation a's issue: completed at once (eager mode),
 * else queued to complete later, as the hardware may. */
static int
issue(Cta *c, const Async *a)
{
	if (c->sim->eager)
		return tma_complete(c, a) ? ST_OK : ST_ERR;
	return async_push(c, a);
}

/* cp.async.bulk.shared::cluster.shared::cta: [dst] in a CTA of the
 * cluster, [src] in this one, size bytes, completing on [mbar] in the
 * destination's CTA; with .global (issue #26) [src] a global address. */
static int
bulk_s2s(Cta *c, Warp *w, const Ins *in, uint32_t mask)
{
	const Opnd *o = in->o;

	for (int l = 0; l < 32; l++) {
		if (!(mask >> l & 1))
			continue;
		bool g2s = in->op == OP_BULK_G2S;
		Async a = {.kind = g2s ? AS_BULK_G2S : AS_BULK_S2S, .warp = w->id,
			.line = in->line};
		uint64_t src = addr(w, &o[1], l), n = opnd_u(c, w, &o[2], l);
		uint32_t mb;
		Cta *p = cluster_cta(c, addr(w, &o[0], l), &a.smem,
			"a bulk copy"), *q;
		if (!p || !(q = cluster_cta(c, addr(w, &o[3], l), &mb,
		    "a bulk copy's mbarrier")))
			return ST_ERR;
		if (q != p)
			return sim_fail(c->sim, "a bulk copy into CTA rank %d "
				"completing on CTA rank %d's mbarrier", p->rank,
				q->rank), ST_ERR;
		if ((!g2s && src >> 24) || src % 16 || a.smem % 16 || n % 16 ||
		    !n || n >> 24)
			return sim_fail(c->sim, "a bulk copy of %llu bytes from "
				"0x%llx to 0x%x: the addresses and the size must be "
				"multiples of 16", (unsigned long long)n,
				(unsigned long long)src, a.smem), ST_ERR;
		if (!mbar_find(p, mb))
			return sim_fail(c->sim, "a bulk copy completes on 0x%x in "
				"CTA rank %d, where no mbarrier was initialized",
				mb, p->rank), ST_ERR;
		a.src = (uint32_t)src;
		a.gsrc = src;
		a.bytes = (uint32_t)n;
		a.mbar = mb;
		a.ranks = (uint16_t)(1u << p->rank);
		if (issue(c, &a) != ST_OK)
			return ST_ERR;
	}
	return ST_OK;
}

/* st.async[.v2|.v4].{b32,f32} [addr], value(s), [mbar]: see the top. */
static int
st_async(Cta *c, Warp *w, const Ins *in, uint32_t mask)
{
	const Opnd *o = in->o;
	int nv = in->op == OP_ST_ASYNC ? 1 : in->op == OP_ST_ASYNC_V2 ? 2 : 4;
	uint32_t n = 4u * (uint32_t)nv;

	for (int l = 0; l < 32; l++) {
		if (!(mask >> l & 1))
			continue;
		Async a = {.kind = AS_ST_ASYNC, .warp = w->id, .line = in->line,
			.bytes = n};
		uint64_t da = addr(w, &o[0], l), ma = addr(w, &o[2], l);
		uint32_t mb;
		Cta *p = cluster_cta(c, da, &a.smem, "st.async"), *q;
		if (!p || !(q = cluster_cta(c, ma, &mb, "st.async's mbarrier")))
			return ST_ERR;
		if (q != p)
			return sim_fail(c->sim, "st.async into CTA rank %d "
				"completes on CTA rank %d's mbarrier: the mbarrier "
				"must be in the destination's CTA", p->rank,
				q->rank), ST_ERR;
		if (a.smem % n)
			return sim_fail(c->sim, "st.async of %u bytes at shared "
				"address 0x%x (CTA rank %d) is misaligned", n, a.smem,
				p->rank), ST_ERR;
		if (!smem_at(p, a.smem, n, "st.async"))
			return ST_ERR;
		if (mb % 8 || !mbar_find(p, mb))
			return sim_fail(c->sim, "st.async completes on 0x%x in "
				"CTA rank %d, where no mbarrier was initialized%s",
				mb, p->rank, mb % 8 ? " (not 8-byte aligned)" : ""),
				ST_ERR;
		for (int e = 0; e < nv; e++)
			a.val[e] = (uint32_t)(nv == 1 ? opnd_u(c, w, &o[1], l) :
				*reg_at(w, o[1].v[e], l));
		a.mbar = mb;
		a.ranks = (uint16_t)(1u << p->rank);
		if (issue(c, &a) != ST_OK)
			return ST_ERR;
	}
	return ST_OK;
}

/* A .cta_group::2 load from c into p's shared memory, completing on
 * [mb] in q: p must be c, and q c or its peer. */
static bool
pair_bar(Cta *c, const Cta *p, Cta *q, const Cta *peer, uint32_t mb)
{
	if (p != c)
		return sim_fail(c->sim, "a .cta_group::2 TMA load into CTA rank "
			"%d's shared memory from CTA rank %d: only into the "
			"issuing CTA's is modelled", p->rank, c->rank), false;
	if (q != c && q != peer)
		return sim_fail(c->sim, "a .cta_group::2 TMA load completes on "
			"CTA rank %d's mbarrier, outside the pair of CTA ranks %d "
			"and %d", q->rank, c->rank & ~1, c->rank | 1), false;
	if (!mbar_find(q, mb))
		return sim_fail(c->sim, "TMA load completes on 0x%x in CTA rank "
			"%d, where no mbarrier was initialized", mb, q->rank),
			false;
	return true;
}

int
tma_op(Cta *c, Warp *w, const Ins *in, uint32_t mask)
{
	const Opnd *o = in->o;
	bool mc = in->op == OP_TMA_LOAD_MC, pair = in->op == OP_TMA_LOAD2;
	bool load = in->op == OP_TMA_LOAD || mc || pair;
	Cta *peer = NULL;

	if (in->op == OP_BULK_COMMIT) {
		w->bulk_open++;
		return ST_OK;
	}
	if (in->op == OP_BULK_S2S || in->op == OP_BULK_G2S)
		return bulk_s2s(c, w, in, mask);
	if (in->op == OP_ST_ASYNC || in->op == OP_ST_ASYNC_V2 ||
	    in->op == OP_ST_ASYNC_V4)
		return st_async(c, w, in, mask);
	if (pair && !(peer = tc_peer(c, "a .cta_group::2 TMA load")))
		return ST_ERR;
	for (int l = 0; l < 32; l++) {
		if (!(mask >> l & 1))
			continue;
		const Opnd *tm = &o[load ? 1 : 0], *co = &o[load ? 2 : 1];
		const Opnd *sm = &o[load ? 0 : 2];
		const Tmap *t = tmap_at(c, addr(w, tm, l));
		Async a = {.kind = load ? AS_TMA_LOAD : AS_TMA_STORE,
			.warp = w->id, .group = w->bulk_open, .line = in->line,
			.reduce = in->op == OP_TMA_REDUCE};
		if (!t)
			return ST_ERR;
		if (a.reduce && t->esize != 4)
			return sim_fail(c->sim, "a TMA reduce-add of %d-byte "
				"elements (only f32 is modelled)", t->esize),
				ST_ERR;
		a.tmap = (int)(t - c->tmaps);
		if (co->k != OK_VEC || co->n != t->rank || co->n != in->aux)
			return sim_fail(c->sim, "a %dd copy through a tensor map "
				"of rank %d", in->aux, t->rank), ST_ERR;
		for (int i = 0; i < t->rank; i++)
			a.coord[i] = (int32_t)*reg_at(w, co->v[i], l);
		uint64_t sa = addr(w, sm, l);
		uint32_t align = t->swizzle ? (uint32_t)t->swizzle * 8 : 128;
		Cta *p = c;
		if (load && !(p = cluster_cta(c, sa, &a.smem, "a TMA load")))
			return ST_ERR;
		if (!load)
			a.smem = (uint32_t)sa;
		if (sa >> 32 || a.smem % align)
			return sim_fail(c->sim, "shared address 0x%llx of a TMA "
				"copy is not %u-byte aligned",
				(unsigned long long)sa, align), ST_ERR;
		a.ranks = (uint16_t)(1u << p->rank);
		if (mc) {   /* ctaMask: the same offsets in each CTA */
			uint64_t m = opnd_u(c, w, &o[4], l) & 0xffff;
			if (!m || m >> c->cl->n || p != c)
				return sim_fail(c->sim, "a multicast TMA load to "
					"CTAs 0x%llx of a cluster of %d",
					(unsigned long long)m, c->cl->n), ST_ERR;
			a.ranks = (uint16_t)m;
		}
		if (load) {
			uint32_t mb;
			Cta *q = cluster_cta(c, addr(w, &o[3], l), &mb,
				"a TMA load's mbarrier");
			if (!q || (pair && !pair_bar(c, p, q, peer, mb)))
				return ST_ERR;
			if (pair)
				a.mcta = q->rank + 1;
			else if (q != p)
				return sim_fail(c->sim, "a TMA load into CTA rank %d "
					"completing on CTA rank %d's mbarrier", p->rank,
					q->rank), ST_ERR;
			for (int r = 0; !pair && r < c->cl->n; r++)
				if (a.ranks >> r & 1 && !mbar_find(&c->cl->cta[r],
				    mb))
					return sim_fail(c->sim, "TMA load completes "
						"on 0x%x in CTA rank %d, where no "
						"mbarrier was initialized", mb, r),
						ST_ERR;
			a.mbar = mb;
		}
		if (issue(c, &a) != ST_OK)
			return ST_ERR;
	}
	return ST_OK;
}
