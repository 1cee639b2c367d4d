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
 * - The CTA pair (.cta_group::2, PTX ISA 9.7.16.5): cluster ranks 2k
 *   and 2k + 1, the even one the leader, so the cluster must have an
 *   even number of CTAs; a CTA's tcgen05 ops are all ::1 or all ::2
 *   (ptxas rejects the mix).  alloc and dealloc ::2 are collective: one
 *   warp in each CTA of the pair runs them, the first waits until the
 *   other comes (a hang names the pair), then the same columns, the
 *   lowest range aligned to the count free in both, are allocated in
 *   both, each CTA's slot getting the address (dealloc frees them in
 *   both); the counts, and dealloc's addresses, must agree.
 *   relinquish_alloc_permit ::2 is per CTA, as ::1.  mma ::2 is issued
 *   by one thread of the leader with M = 256: rows 0..127 of A and D in
 *   the leader (A from its shared memory at the descriptor's address or
 *   from its tensor memory at [a], D at [d], lane m row m), rows
 *   128..255 in the peer at the same addresses (lane m - 128); B's
 *   columns n < N/2 from the leader's shared memory, the others from
 *   the peer's, each half laid out as an N/2-wide ::1 B (n mod N/2).
 *   It waits in the leader's queue and reaches both CTAs when it
 *   completes.  commit ::2, with or without .multicast::cluster, is
 *   ::1's: its arrival follows the issuing CTA's queue.  The
 *   instruction descriptor may be an immediate or a register.
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

/* An alloc of n columns into slot in c, checked: the slot's bytes, or
 * NULL after an error. */
static uint8_t *
alloc_check(Cta *c, uint32_t slot, uint32_t n)
{
	if (n < 32 || n > COLS || (n & (n - 1)))
		return sim_fail(c->sim, "tcgen05.alloc of %u columns (a power "
			"of two from 32 to 512)", n), NULL;
	if (c->relinquished)
		return sim_fail(c->sim, "tcgen05.alloc after "
			"tcgen05.relinquish_alloc_permit"), NULL;
	if (c->ntalloc == (int)COUNT(c->talloc))
		return sim_fail(c->sim, "more than %d tensor-memory "
			"allocations", (int)COUNT(c->talloc)), NULL;
	uint8_t *p = smem_at(c, slot, 4, "tcgen05.alloc's address slot");
	if (p && !c->tmem) {
		c->tmem = malloc((size_t)LANES * COLS * 4);
		if (!c->tmem)
			return sim_fail(c->sim, "out of memory"), NULL;
		memset(c->tmem, 0xff, (size_t)LANES * COLS * 4);
	}
	return p;
}

/* The lowest n columns aligned to n free in c and in p (c itself, or
 * its pair's other CTA): the first, or -1. */
static int
free_cols(const Cta *c, const Cta *p, int n)
{
	for (int col = 0; col + n <= COLS; col += n) {
		bool fits = true;
		for (int k = 0; k < 2; k++) {
			const Cta *x = k ? p : c;
			for (int i = 0; i < x->ntalloc; i++)
				fits &= col + n <= x->talloc[i].col || col >=
					x->talloc[i].col + x->talloc[i].n;
		}
		if (fits)
			return col;
	}
	return -1;
}

static void
take(Cta *c, uint8_t *slot, int col, int n)
{
	uint32_t a = (uint32_t)col;

	c->talloc[c->ntalloc].col = col;
	c->talloc[c->ntalloc++].n = n;
	memcpy(slot, &a, 4);
}

/* The allocation of n columns at a in c: its index, or -1. */
static int
find(const Cta *c, uint32_t a, uint32_t n)
{
	for (int i = 0; i < c->ntalloc; i++)
		if (c->talloc[i].col == (int)a && c->talloc[i].n == (int)n)
			return i;
	return -1;
}

static int
alloc(Cta *c, Warp *w, const Ins *in)
{
	uint32_t slot, n;
	uint8_t *p;

	if (!uniform(c, w, &in->o[0], w->live, &slot) ||
	    !uniform(c, w, &in->o[1], w->live, &n) ||
	    !(p = alloc_check(c, slot, n)))
		return ST_ERR;
	int col = free_cols(c, c, (int)n);
	if (col < 0)
		return sim_fail(c->sim, "tcgen05.alloc of %u columns, more "
			"than this CTA has free: it would wait for a dealloc that "
			"never comes", n), ST_ERR;
	take(c, p, col, (int)n);
	return ST_OK;
}

static int
dealloc(Cta *c, Warp *w, const Ins *in)
{
	uint32_t a, n;

	if (!uniform(c, w, &in->o[0], w->live, &a) ||
	    !uniform(c, w, &in->o[1], w->live, &n))
		return ST_ERR;
	int i = find(c, a, n);
	if (i < 0)
		return sim_fail(c->sim, "tcgen05.dealloc of %u columns at 0x%x, "
			"which is not an allocation", n, a), ST_ERR;
	c->talloc[i] = c->talloc[--c->ntalloc];
	return ST_OK;
}

Cta *
tc_peer(Cta *c, const char *what)
{
	if (c->cl->n % 2)
		return sim_fail(c->sim, "%s needs a cluster of an even number "
			"of CTAs (a pair is ranks 2k and 2k + 1), not a cluster "
			"of %d", what, c->cl->n), NULL;
	return &c->cl->cta[c->rank ^ 1];
}

/* alloc and dealloc .cta_group::2: the first of the pair's two warps
 * waits (ST_WAIT: done once the other comes); the second does the work
 * of both. */
static int
collective(Cta *c, Warp *w, const Ins *in)
{
	bool al = in->op == OP_TC_ALLOC2;
	const char *what = al ? "tcgen05.alloc.cta_group::2" :
		"tcgen05.dealloc.cta_group::2";
	Cta *p = tc_peer(c, what);
	uint32_t a, n;
	uint8_t *s = NULL, *ps;

	if (!p || !uniform(c, w, &in->o[0], w->live, &a) ||
	    !uniform(c, w, &in->o[1], w->live, &n))
		return ST_ERR;
	if (c->pair.op)
		return sim_fail(c->sim, "a second .cta_group::2 alloc or dealloc "
			"in CTA rank %d before CTA rank %d has joined the first "
			"(not modelled)", c->rank, p->rank), ST_ERR;
	if (p->exited)
		return sim_fail(c->sim, "%s: the pair's CTA rank %d has exited",
			what, p->rank), ST_ERR;
	if (al && !(s = alloc_check(c, a, n)))
		return ST_ERR;
	if (!p->pair.op) {   /* the first: wait for the other */
		c->pair.op = in->op;
		c->pair.a = a;
		c->pair.n = n;
		w->wait = (Wait){WT_PAIR, 0, 0, p->rank, c->pair.gen};
		return ST_WAIT;
	}
	if (p->pair.op != in->op)
		return sim_fail(c->sim, "%s in CTA rank %d meets a tcgen05.%s in "
			"CTA rank %d", what, c->rank, al ? "dealloc" : "alloc",
			p->rank), ST_ERR;
	if (p->pair.n != n)
		return sim_fail(c->sim, "%s of %u columns in CTA rank %d, of %u "
			"in CTA rank %d: the pair's must agree", what, n, c->rank,
			p->pair.n, p->rank), ST_ERR;
	if (!al && p->pair.a != a)
		return sim_fail(c->sim, "%s at 0x%x in CTA rank %d, at 0x%x in "
			"CTA rank %d: the pair's must agree", what, a, c->rank,
			p->pair.a, p->rank), ST_ERR;
	if (al) {
		int col = free_cols(c, p, (int)n);
		if (!(ps = alloc_check(p, p->pair.a, n)))
			return ST_ERR;
		if (col < 0)
			return sim_fail(c->sim, "%s of %u columns, more than CTA "
				"ranks %d and %d have free in common: it would wait "
				"for a dealloc that never comes", what, n, c->rank,
				p->rank), ST_ERR;
		take(c, s, col, (int)n);
		take(p, ps, col, (int)n);
	} else {
		int i = find(c, a, n), j = find(p, a, n);
		if (i < 0 || j < 0)
			return sim_fail(c->sim, "%s of %u columns at 0x%x, which is "
				"not an allocation of CTA rank %d", what, n, a,
				i < 0 ? c->rank : p->rank), ST_ERR;
		c->talloc[i] = c->talloc[--c->ntalloc];
		p->talloc[j] = p->talloc[--p->ntalloc];
	}
	p->pair.op = 0;
	p->pair.gen++;
	return ST_OK;
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
	int half = op->pair ? n / 2 : n, want = op->pair ? 256 : 128;
	const char *g = op->pair ? ".cta_group::2" : "";
	Cta *peer = op->pair ? &c->cl->cta[c->rank + 1] : c;
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
	if (m != want || n < 16 || n > 256 || n % 16)
		return sim_fail(c->sim, "tcgen05.mma%s M = %d, N = %d: only M = "
			"%d with N a multiple of 16 up to 256 is modelled", g, m, n,
			want), false;
	if (peer->exited)
		return sim_fail(c->sim, "tcgen05.mma.cta_group::2 reaches the "
			"pair's CTA rank %d, which has exited", peer->rank), false;
	if ((!op->a_tmem && !decode(c, op->da, &da)) || !decode(c, op->db,
	    &db))
		return false;
	if (op->d >> 16 || (op->a_tmem && op->a >> 16))
		return sim_fail(c->sim, "a cta_group::%d M = %d tcgen05.mma "
			"starts at lane 0, not lane %u", op->pair ? 2 : 1, want,
			op->d >> 16 ? op->d >> 16 : op->a >> 16), false;
	float (*A)[16] = malloc(sizeof(float[256][16]));
	float (*B)[256] = malloc(sizeof(float[16][256]));
	bool ok = A && B;
	if (!ok)
		sim_fail(c->sim, "out of memory");
	/* rows 128.. (A, D) and columns half.. (B) are the peer's */
	for (int r = 0; ok && r < m; r++) {
		Cta *x = r < 128 ? c : peer;
		const uint32_t *t = op->a_tmem ? tmem_at(x, r % 128, (int)op->a,
			8, x == c ? "tcgen05.mma's A" : "tcgen05.mma's A in the "
			"pair's peer") : NULL;
		ok = !op->a_tmem || t;
		for (int k = 0; ok && k < 16; k++) {
			if (op->a_tmem)   /* 16-bit pairs, the even k low */
				A[r][k] = sim_half(t[k / 2], k % 2, ty);
			else
				ok = smem_operand(x, &da, amn, r % 128, k, ty,
					&A[r][k]);
		}
	}
	for (int k = 0; ok && k < 16; k++)
		for (int j = 0; ok && j < n; j++)
			ok = smem_operand(j < half ? c : peer, &db, bmn, j % half,
				k, ty, &B[k][j]);
	for (int r = 0; ok && r < m; r++) {
		Cta *x = r < 128 ? c : peer;
		uint32_t *d = tmem_at(x, r % 128, (int)op->d, n, x == c ?
			"tcgen05.mma's D" : "tcgen05.mma's D in the pair's peer");
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
	bool mma_op = in->op == OP_TC_MMA || in->op == OP_TC_MMA2;

	if (in->op == OP_TC_MMA2 && c->rank % 2)
		return sim_fail(c->sim, "tcgen05.mma.cta_group::2 issued by CTA "
			"rank %d, not the pair's leader (even rank)", c->rank),
			ST_ERR;
	for (int l = 0; l < 32; l++) {
		if (!(mask >> l & 1))
			continue;
		Async a = {.kind = AS_TC_COMMIT, .warp = w->id, .line = in->line};
		if (!mma_op) {
			Cta *p = cluster_cta(c, addr_of(c, w, &in->o[0], l),
				&a.mbar, "tcgen05.commit");
			if (!p)
				return ST_ERR;
			if (a.mbar % 8)
				return sim_fail(c->sim, "tcgen05.commit to the "
					"misaligned mbarrier address 0x%x", a.mbar),
					ST_ERR;
			a.ranks = (uint16_t)(1u << p->rank);
			if (in->op == OP_TC_COMMIT_MC ||
			    in->op == OP_TC_COMMIT2_MC) {   /* ctaMask */
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
				.idesc = (uint32_t)opnd_u(c, w, &o[3], l),
				.db = opnd_u(c, w, &o[2], l),
				.acc = opnd_u(c, w, &o[4], l) & 1,
				.pair = in->op == OP_TC_MMA2};
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

/* The .cta_group of a tcgen05 op: 1, 2, or 0 (ld/st, waits, fences). */
static int
group_of(int op)
{
	switch (op) {
	case OP_TC_ALLOC: case OP_TC_DEALLOC: case OP_TC_RELINQUISH:
	case OP_TC_MMA: case OP_TC_COMMIT: case OP_TC_COMMIT_MC:
		return 1;
	case OP_TC_ALLOC2: case OP_TC_DEALLOC2: case OP_TC_RELINQUISH2:
	case OP_TC_MMA2: case OP_TC_COMMIT2: case OP_TC_COMMIT2_MC:
		return 2;
	default:
		return 0;
	}
}

int
tc_op(Cta *c, Warp *w, const Ins *in, uint32_t mask)
{
	int g = group_of(in->op);
	bool aligned = in->op != OP_TC_MMA && in->op != OP_TC_MMA2 &&
		in->op != OP_TC_COMMIT && in->op != OP_TC_COMMIT_MC &&
		in->op != OP_TC_COMMIT2 && in->op != OP_TC_COMMIT2_MC &&
		in->op != OP_TC_FENCE_BEFORE && in->op != OP_TC_FENCE_AFTER;

	if (aligned && mask != w->live)
		return sim_fail(c->sim, "a .sync.aligned tcgen05 instruction "
			"reached by lanes 0x%08x of live 0x%08x", mask, w->live),
			ST_ERR;
	if (g && c->tcgroup && g != c->tcgroup)
		return sim_fail(c->sim, "tcgen05 .cta_group::%d after "
			".cta_group::%d: a kernel's tcgen05 ops use one (ptxas "
			"rejects the mix)", g, c->tcgroup), ST_ERR;
	if (g)
		c->tcgroup = g;
	if (g == 2 && !tc_peer(c, "tcgen05 .cta_group::2"))
		return ST_ERR;
	switch (in->op) {
	case OP_TC_ALLOC:
		return alloc(c, w, in);
	case OP_TC_DEALLOC:
		return dealloc(c, w, in);
	case OP_TC_ALLOC2: case OP_TC_DEALLOC2:
		return collective(c, w, in);
	case OP_TC_RELINQUISH: case OP_TC_RELINQUISH2:
		c->relinquished = true;
		return ST_OK;
	case OP_TC_LD: case OP_TC_ST:
		return move(c, w, in, in->op == OP_TC_LD);
	case OP_TC_MMA: case OP_TC_COMMIT: case OP_TC_COMMIT_MC:
	case OP_TC_MMA2: case OP_TC_COMMIT2: case OP_TC_COMMIT2_MC:
		return issue(c, w, in, mask);
	default:   /* the fences, wait::ld, wait::st */
		return ST_OK;
	}
}
