/* tcgen05.c: Blackwell's tensor memory and tcgen05 (issue #18).
 *
 * Tensor memory is 128 lanes of 512 32-bit columns per CTA (PTX ISA
 * 9.7.16.2); an address is lane << 16 | column.  It starts filled with
 * 0xffffffff, a NaN in f32, as nothing clears it on the hardware.
 *
 * - tcgen05.alloc (a whole warp) takes a power of two of 32 to 512
 *   columns, the lowest free range aligned to its size, and writes its
 *   address (lane 0) to the shared-memory slot; with too few columns free
 *   it would wait for another CTA's dealloc, which never comes here (CTAs
 *   run one at a time), so it is an error.  dealloc must name an
 *   allocation exactly; a CTA that exits with columns allocated, or
 *   allocates after relinquish_alloc_permit, is an error.
 * - tcgen05.ld/st .32x32b.xN: warp w reaches lanes 32(w % 4) .. + 31 only,
 *   so the address's lane must be 32(w % 4); thread l moves lane
 *   32(w % 4) + l, register j column col + j.  They complete at issue
 *   (wait::ld and wait::st have nothing left to wait for).
 * - tcgen05.mma.cta_group::1.kind::f16 with M = 128 (lane m is row m of
 *   D) and N a multiple of 16 up to 256: D[m][col + n] = (enable ?
 *   D : 0) + sum over k < 16 of A[m][k] B[n][k], each K-step's dot
 *   products exact and rounded once into f32, as wgmma.c does.  A comes
 *   from shared memory or from tensor memory (16-bit pairs: column
 *   acol + k / 2, the even k in the low half); B from shared memory.  The
 *   instruction descriptor (CUTLASS UMMA::InstrDescriptor): D format in
 *   bits 4-5 (1: f32), A and B formats in 7-9 and 10-12 (0 f16, 1 bf16),
 *   negate A/B in 13/14, A/B MN-major in 15/16, N >> 3 in 17-22, M >> 4
 *   in 24-28; sparsity, saturation and shifts are errors.  The shared-
 *   memory descriptor (UMMA::SmemDescriptor): start, leading and stride
 *   byte offsets >> 4 in 0-13, 16-29, 32-45, version 1 in 46-47, base
 *   offset 49-51 and leading-offset mode 52 (both 0), layout in 61-63
 *   (0 none, 2 128-byte, 4 64-byte, 6 32-byte swizzle).
 * - An MMA is asynchronous: it waits in the CTA's queue with the TMA
 *   copies and reads its operands when it completes (or at issue with
 *   SIM_OPT_EAGER).  tcgen05.commit queues one arrival on its mbarrier
 *   behind them (in each CTA of its ctaMask with .multicast::cluster, at
 *   the same address); the queue completes in order, so the arrival
 *   follows every earlier MMA, of the issuing thread and of any other.
 * - The fences order nothing here: every tcgen05 operation but the MMA
 *   is complete when the next instruction runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simi.h"

enum { LANES = 128, COLS = 512 };

static uint32_t *
tmem_at(Cta *c, int lane, int col, int n, const char *what)
{
	if (!c->tmem) {
		sim_fail(c->sim, "%s: no tensor memory has been allocated",
			what);
		return NULL;
	}
	for (int i = 0; i < c->ntalloc; i++)
		if (col >= c->talloc[i].col && col + n <= c->talloc[i].col +
		    c->talloc[i].n && lane >= 0 && lane < LANES)
			return &c->tmem[(size_t)lane * COLS + (size_t)col];
	sim_fail(c->sim, "%s: lane %d, columns %d..%d are outside every "
		"tensor-memory allocation", what, lane, col, col + n - 1);
	return NULL;
}

static uint32_t
addr_of(const Cta *c, const Warp *w, const Opnd *o, int lane)
{
	if (o->k == OK_ADDR)
		return (uint32_t)((uint64_t)o->imm + (o->r >= 0 ?
			*reg_at(w, o->r, lane) : 0));
	return (uint32_t)opnd_u(c, w, o, lane);
}

/* The value of o in every lane of mask, which must agree. */
static bool
uniform(Cta *c, const Warp *w, const Opnd *o, uint32_t mask, uint32_t *v)
{
	int first = __builtin_ctz(mask);

	*v = addr_of(c, w, o, first);
	for (int l = first + 1; l < 32; l++)
		if (mask >> l & 1 && addr_of(c, w, o, l) != *v)
			return sim_fail(c->sim, "a tcgen05 operand differs "
				"between lanes (0x%x in lane %d, 0x%x in lane "
				"%d)", *v, first, addr_of(c, w, o, l), l), false;
	return true;
}

static int
alloc(Cta *c, Warp *w, const Ins *in)
{
	uint32_t slot, n;

	if (!uniform(c, w, &in->o[0], w->live, &slot) ||
	    !uniform(c, w, &in->o[1], w->live, &n))
		return ST_ERR;
	if (n < 32 || n > COLS || (n & (n - 1)))
		return sim_fail(c->sim, "tcgen05.alloc of %u columns (a power "
			"of two from 32 to 512)", n), ST_ERR;
	if (c->relinquished)
		return sim_fail(c->sim, "tcgen05.alloc after "
			"tcgen05.relinquish_alloc_permit"), ST_ERR;
	if (c->ntalloc == (int)COUNT(c->talloc))
		return sim_fail(c->sim, "more than %d tensor-memory "
			"allocations", (int)COUNT(c->talloc)), ST_ERR;
	uint8_t *p = smem_at(c, slot, 4, "tcgen05.alloc's address slot");
	if (!p)
		return ST_ERR;
	if (!c->tmem) {
		c->tmem = malloc((size_t)LANES * COLS * 4);
		if (!c->tmem)
			return sim_fail(c->sim, "out of memory"), ST_ERR;
		memset(c->tmem, 0xff, (size_t)LANES * COLS * 4);
	}
	for (int col = 0; col + (int)n <= COLS; col += (int)n) {
		bool fits = true;
		for (int i = 0; i < c->ntalloc; i++)
			fits &= col + (int)n <= c->talloc[i].col ||
				col >= c->talloc[i].col + c->talloc[i].n;
		if (!fits)
			continue;
		c->talloc[c->ntalloc].col = col;
		c->talloc[c->ntalloc++].n = (int)n;
		uint32_t a = (uint32_t)col;
		memcpy(p, &a, 4);
		return ST_OK;
	}
	return sim_fail(c->sim, "tcgen05.alloc of %u columns, more than this "
		"CTA has free: it would wait for a dealloc that never comes",
		n), ST_ERR;
}

static int
dealloc(Cta *c, Warp *w, const Ins *in)
{
	uint32_t a, n;

	if (!uniform(c, w, &in->o[0], w->live, &a) ||
	    !uniform(c, w, &in->o[1], w->live, &n))
		return ST_ERR;
	for (int i = 0; i < c->ntalloc; i++)
		if (c->talloc[i].col == (int)a && c->talloc[i].n == (int)n) {
			c->talloc[i] = c->talloc[--c->ntalloc];
			return ST_OK;
		}
	return sim_fail(c->sim, "tcgen05.dealloc of %u columns at 0x%x, "
		"which is not an allocation", n, a), ST_ERR;
}

bool
tc_exit(Cta *c)
{
	if (c->ntalloc)
		return sim_fail(c->sim, "CTA (%u,%u,%u) exited with %d "
			"tensor-memory columns at 0x%x still allocated",
			c->ctaid[0], c->ctaid[1], c->ctaid[2], c->talloc[0].n,
			c->talloc[0].col), false;
	return true;
}

/* tcgen05.ld/st .32x32b.xN. */
static int
move(Cta *c, Warp *w, const Ins *in, bool load)
{
	const Opnd *v = &in->o[load ? 0 : 1];
	uint32_t a;
	int n = in->aux, base = 32 * (w->id % 4);

	if (!uniform(c, w, &in->o[load ? 1 : 0], w->live, &a))
		return ST_ERR;
	if ((int)(a >> 16) != base)
		return sim_fail(c->sim, "%s at lane %u: warp %d reaches lanes "
			"%d..%d only", load ? "tcgen05.ld" : "tcgen05.st",
			a >> 16, w->id, base, base + 31), ST_ERR;
	for (int l = 0; l < 32; l++) {
		uint32_t *t = tmem_at(c, base + l, (int)(a & 0xffff), n,
			load ? "tcgen05.ld" : "tcgen05.st");
		if (!t)
			return ST_ERR;
		for (int j = 0; j < n; j++) {
			uint64_t *r = reg_at(w, v->v[j], l);
			if (load)
				*r = t[j];
			else
				t[j] = (uint32_t)*r;
		}
	}
	return ST_OK;
}

/* The fields of a shared-memory descriptor; false if not modelled. */
static bool
decode(Cta *c, uint64_t desc, SmemDesc *d)
{
	int layout = (int)(desc >> 61);

	*d = (SmemDesc){(uint32_t)(desc & 0x3fff) << 4,
		(uint32_t)(desc >> 16 & 0x3fff) << 4,
		(uint32_t)(desc >> 32 & 0x3fff) << 4,
		layout == 2 ? 128 : layout == 4 ? 64 : layout == 6 ? 32 : 0};
	if ((desc >> 46 & 3) != 1)
		return sim_fail(c->sim, "a tcgen05 matrix descriptor of version "
			"%d (1 expected)", (int)(desc >> 46 & 3)), false;
	if (desc >> 49 & 0xf)
		return sim_fail(c->sim, "a tcgen05 matrix descriptor with base "
			"offset %d or leading-offset mode %d is not modelled",
			(int)(desc >> 49 & 7), (int)(desc >> 52 & 1)), false;
	if (layout != 0 && layout != 2 && layout != 4 && layout != 6)
		return sim_fail(c->sim, "tcgen05 matrix layout %d is not "
			"modelled", layout), false;
	return true;
}

static bool
mma(Cta *c, const TcMma *op)
{
	uint32_t id = op->idesc;
	int n = (int)(id >> 17 & 0x3f) * 8, m = (int)(id >> 24 & 0x1f) * 16;
	int ta = (int)(id >> 7 & 7), tb = (int)(id >> 10 & 7);
	int ty = ta == 1 ? TY_BF16 : TY_F16;
	bool amn = id >> 15 & 1, bmn = id >> 16 & 1;
	double sign = ((id >> 13 & 1) ? -1 : 1) * ((id >> 14 & 1) ? -1 : 1);
	SmemDesc da, db;

	if ((id & 0xf) || (id >> 4 & 3) != 1 || ta > 1 || ta != tb ||
	    (id >> 23 & 1) || (id >> 29))
		return sim_fail(c->sim, "tcgen05 instruction descriptor 0x%x: "
			"only f32 += f16 or bf16, dense, without saturation or "
			"shift, is modelled", id), false;
	if (m != 128 || n < 16 || n > 256 || n % 16)
		return sim_fail(c->sim, "tcgen05.mma M = %d, N = %d: only M = "
			"128 with N a multiple of 16 up to 256 is modelled", m, n),
			false;
	if ((!op->a_tmem && !decode(c, op->da, &da)) || !decode(c, op->db,
	    &db))
		return false;
	if (op->d >> 16 || (op->a_tmem && op->a >> 16))
		return sim_fail(c->sim, "a cta_group::1 M = 128 tcgen05.mma "
			"starts at lane 0, not lane %u", op->d >> 16 ?
			op->d >> 16 : op->a >> 16), false;
	float (*A)[16] = malloc(sizeof(float[128][16]));
	float (*B)[256] = malloc(sizeof(float[16][256]));
	bool ok = A && B;
	if (!ok)
		sim_fail(c->sim, "out of memory");
	for (int r = 0; ok && r < m; r++) {
		const uint32_t *t = op->a_tmem ? tmem_at(c, r, (int)op->a, 8,
			"tcgen05.mma's A") : NULL;
		ok = !op->a_tmem || t;
		for (int k = 0; ok && k < 16; k++) {
			if (op->a_tmem)   /* 16-bit pairs, the even k low */
				A[r][k] = sim_half(t[k / 2], k % 2, ty);
			else
				ok = smem_operand(c, &da, amn, r, k, ty, &A[r][k]);
		}
	}
	for (int k = 0; ok && k < 16; k++)
		for (int j = 0; ok && j < n; j++)
			ok = smem_operand(c, &db, bmn, j, k, ty, &B[k][j]);
	for (int r = 0; ok && r < m; r++) {
		uint32_t *d = tmem_at(c, r, (int)op->d, n, "tcgen05.mma's D");
		if (!(ok = d != NULL))
			break;
		for (int j = 0; j < n; j++) {
			double s = 0;
			for (int k = 0; k < 16; k++)
				s += (double)A[r][k] * B[k][j];
			float acc = op->acc ? f32_of(d[j]) : 0.0f;
			d[j] = bits_of((float)((double)acc + sign * s));
		}
	}
	free(A);
	free(B);
	return ok;
}

bool
tc_complete(Cta *c, const Async *a)
{
	if (a->kind != AS_TC_COMMIT)
		return mma(c, &a->tc);
	for (int r = 0; r < c->cl->n; r++) {   /* one arrival in each */
		Cta *p = &c->cl->cta[r];
		if (!(a->ranks >> r & 1))
			continue;
		if (p->exited)
			return sim_fail(c->sim, "tcgen05.commit arrives in CTA "
				"rank %d of the cluster, which has exited", r),
				false;
		if (!mbar_arrive(p, a->mbar, 0))
			return false;
	}
	return true;
}

/* tcgen05.mma and tcgen05.commit: one per lane that runs them. */
static int
issue(Cta *c, Warp *w, const Ins *in, uint32_t mask)
{
	for (int l = 0; l < 32; l++) {
		if (!(mask >> l & 1))
			continue;
		Async a = {.kind = AS_TC_COMMIT, .warp = w->id, .line = in->line};
		if (in->op != OP_TC_MMA) {
			Cta *p = cluster_cta(c, addr_of(c, w, &in->o[0], l),
				&a.mbar, "tcgen05.commit");
			if (!p)
				return ST_ERR;
			if (a.mbar % 8)
				return sim_fail(c->sim, "tcgen05.commit to the "
					"misaligned mbarrier address 0x%x", a.mbar),
					ST_ERR;
			a.ranks = (uint16_t)(1u << p->rank);
			if (in->op == OP_TC_COMMIT_MC) {   /* ctaMask */
				uint64_t m = opnd_u(c, w, &in->o[1], l) & 0xffff;
				if (!m || m >> c->cl->n || p != c)
					return sim_fail(c->sim, "a multicast "
						"tcgen05.commit to CTAs 0x%llx of a "
						"cluster of %d", (unsigned long long)m,
						c->cl->n), ST_ERR;
				a.ranks = (uint16_t)m;
			}
		} else {
			const Opnd *o = in->o;
			a.kind = AS_TC_MMA;
			a.tc = (TcMma){.d = addr_of(c, w, &o[0], l),
				.a_tmem = o[1].k == OK_ADDR,
				.idesc = (uint32_t)o[3].imm,
				.db = opnd_u(c, w, &o[2], l),
				.acc = opnd_u(c, w, &o[4], l) & 1};
			if (a.tc.a_tmem)
				a.tc.a = addr_of(c, w, &o[1], l);
			else
				a.tc.da = opnd_u(c, w, &o[1], l);
		}
		if (c->sim->eager ? !tc_complete(c, &a) :
		    async_push(c, &a) != ST_OK)
			return ST_ERR;
	}
	return ST_OK;
}

int
tc_op(Cta *c, Warp *w, const Ins *in, uint32_t mask)
{
	bool aligned = in->op != OP_TC_MMA && in->op != OP_TC_COMMIT &&
		in->op != OP_TC_COMMIT_MC && in->op != OP_TC_FENCE_BEFORE &&
		in->op != OP_TC_FENCE_AFTER;

	if (aligned && mask != w->live)
		return sim_fail(c->sim, "a .sync.aligned tcgen05 instruction "
			"reached by lanes 0x%08x of live 0x%08x", mask, w->live),
			ST_ERR;
	switch (in->op) {
	case OP_TC_ALLOC:
		return alloc(c, w, in);
	case OP_TC_DEALLOC:
		return dealloc(c, w, in);
	case OP_TC_RELINQUISH:
		c->relinquished = true;
		return ST_OK;
	case OP_TC_LD: case OP_TC_ST:
		return move(c, w, in, in->op == OP_TC_LD);
	case OP_TC_MMA: case OP_TC_COMMIT: case OP_TC_COMMIT_MC:
		return issue(c, w, in, mask);
	default:   /* the fences, wait::ld, wait::st */
		return ST_OK;
	}
}
