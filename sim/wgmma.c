/* wgmma.c: wgmma.mma_async m64nNk16, f32 += bf16/f16 (issue #18).
 *
 * A warpgroup's 64 x N accumulator is spread over its four warps: warp
 * q = warpid % 4 holds rows 16q..16q+15, each lane four values per n8
 * column block j (registers 4j..4j+3: row l/4 and l/4 + 8, columns
 * 8j + 2(l%4) and + 1; PTX ISA 9.7.15.5.1).  Each warp's rows need only
 * its own rows of A, so each warp computes its quarter when its
 * instruction completes: no rendezvous of the four warps is needed.
 * An A from registers is the m16k16 fragment of the warp's rows (a0..a7
 * in four .b32: rows l/4, l/4 + 8 by k pairs 2(l%4), then k + 8).
 *
 * A shared-memory matrix descriptor (PTX ISA 9.7.15.5.1.1, the 64-bit
 * GmmaDescriptor of CUTLASS): start address >> 4 in bits 0-13, leading
 * byte offset >> 4 in 16-29, stride byte offset >> 4 in 32-45, base
 * offset in 49-51, layout in 62-63 (0 interleave, 1 128B, 2 64B, 3 32B
 * swizzle).  The canonical layouts, in bytes, for 16-bit elements and a
 * swizzle span W (CUTLASS make_gmma_desc):
 *   K-major, swizzled:   (mn%8)*W + (mn/8)*SBO + (k/8)*16 + (k%8)*2
 *   K-major, interleave: (mn%8)*16 + (mn/8)*SBO + (k/8)*LBO + (k%8)*2
 *   MN-major, swizzled:  (mn%(W/2))*2 + (mn/(W/2))*LBO + (k%8)*W
 *                        + (k/8)*SBO
 *   MN-major, interleave: (mn%8)*2 + (mn/8)*SBO + (k%8)*16 + (k/8)*LBO
 * and the swizzle XORs the address as TMA does (tma.c).  A non-zero base
 * offset is not modelled (an error).
 *
 * Numerics: each k16 step's dot products are exact (double) and added to
 * the f32 accumulator with one rounding; the tensor cores' internal
 * order and precision differ by a few ulps (docs/TARGETS.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simi.h"

typedef struct WgOp {
	int n, ty, q;
	bool areg, scale_d;
	int neg_a, neg_b, ta, tb;
	uint64_t da, db;
	uint32_t a[32][4];
	const int32_t *d;   /* the accumulator's register slots */
} WgOp;

static uint32_t
swz(uint32_t a, uint32_t span)
{
	int bits = span == 128 ? 3 : span == 64 ? 2 : span == 32 ? 1 : 0;

	return a ^ ((a >> 7) & ((1u << bits) - 1)) << 4;
}

/* Element (mn, k) of a 16-bit operand laid out as d says. */
bool
smem_operand(Cta *c, const SmemDesc *d, bool mn_major, int mn, int k,
	int ty, float *out)
{
	uint32_t w = d->span, off;

	if (w == 0 && !mn_major)
		off = (uint32_t)(mn % 8) * 16 + (uint32_t)(mn / 8) * d->sbo +
			(uint32_t)(k / 8) * d->lbo + (uint32_t)(k % 8) * 2;
	else if (w == 0)
		off = (uint32_t)(mn % 8) * 2 + (uint32_t)(mn / 8) * d->sbo +
			(uint32_t)(k % 8) * 16 + (uint32_t)(k / 8) * d->lbo;
	else if (!mn_major)
		off = (uint32_t)(mn % 8) * w + (uint32_t)(mn / 8) * d->sbo +
			(uint32_t)(k / 8) * 16 + (uint32_t)(k % 8) * 2;
	else
		off = (uint32_t)(mn % (int)(w / 2)) * 2 +
			(uint32_t)(mn / (int)(w / 2)) * d->lbo +
			(uint32_t)(k % 8) * w + (uint32_t)(k / 8) * d->sbo;
	uint8_t *p = smem_at(c, swz(d->start + off, w), 2,
		"a matrix operand read");
	uint16_t h;
	if (!p)
		return false;
	memcpy(&h, p, 2);
	*out = ty == TY_BF16 ? bf16_to_f32(h) : f16_to_f32(h);
	return true;
}

/* A wgmma descriptor's fields; false for a base offset (not modelled). */
static bool
decode(Cta *c, uint64_t desc, SmemDesc *d)
{
	int layout = (int)(desc >> 62), base = (int)(desc >> 49 & 7);

	*d = (SmemDesc){(uint32_t)(desc & 0x3fff) << 4,
		(uint32_t)(desc >> 16 & 0x3fff) << 4,
		(uint32_t)(desc >> 32 & 0x3fff) << 4,
		layout == 1 ? 128 : layout == 2 ? 64 : layout == 3 ? 32 : 0};
	if (base)
		return sim_fail(c->sim, "a matrix descriptor with base offset "
			"%d is not modelled", base), false;
	return true;
}

/* Element (mn, k) of a 16-bit operand described by desc. */
static bool
elem(Cta *c, uint64_t desc, bool mn_major, int mn, int k, float *out,
	int ty)
{
	SmemDesc d;

	return decode(c, desc, &d) && smem_operand(c, &d, mn_major, mn, k,
		ty, out);
}

static bool
compute(Cta *c, const WgOp *op)
{
	Warp *w = &c->w[op->q];   /* op->q: the warp's index */
	float A[16][16], (*B)[256] = malloc(sizeof(float[16][256]));
	int q = w->id % 4;

	if (!B)
		return sim_fail(c->sim, "out of memory"), false;
	for (int r = 0; r < 16; r++)
		for (int k = 0; k < 16; k++) {
			if (op->areg) {
				int l = (r % 8) * 4 + (k % 8) / 2;
				int reg = (r / 8) + 2 * (k / 8);
				A[r][k] = sim_half(op->a[l][reg], k % 2, op->ty);
			} else if (!elem(c, op->da, op->ta, 16 * q + r, k, &A[r][k],
			    op->ty)) {
				free(B);
				return false;
			}
		}
	for (int k = 0; k < 16; k++)
		for (int n = 0; n < op->n; n++)
			if (!elem(c, op->db, op->tb, n, k, &B[k][n], op->ty)) {
				free(B);
				return false;
			}
	for (int l = 0; l < 32; l++)
		for (int j = 0; j < op->n / 2; j++) {
			int row = l / 4 + 8 * (j % 4 / 2);
			int col = 8 * (j / 4) + 2 * (l % 4) + j % 2;
			double s = 0;
			for (int k = 0; k < 16; k++)
				s += (double)A[row][k] * B[k][col];
			s *= op->neg_a * op->neg_b;
			uint64_t *d = reg_at(w, op->d[j], l);
			float acc = op->scale_d ? f32_of((uint32_t)*d) : 0.0f;
			*d = bits_of((float)((double)acc + s));
		}
	free(B);
	return true;
}

bool
wgmma_complete(Cta *c, const Async *a)
{
	return compute(c, a->wg);
}

void
wgmma_free(Async *a)
{
	if (a->kind == AS_WGMMA)
		free(a->wg);
	a->wg = NULL;
}

static int
uniform(Cta *c, const Warp *w, const Opnd *o, uint64_t *v)
{
	*v = opnd_u(c, w, o, 0);
	for (int l = 1; l < 32; l++)
		if (opnd_u(c, w, o, l) != *v)
			return sim_fail(c->sim, "a wgmma operand differs "
				"between lanes"), ST_ERR;
	return ST_OK;
}

static int
issue(Cta *c, Warp *w, const Ins *in)
{
	const Opnd *o = in->o;
	WgOp *op = calloc(1, sizeof *op);
	uint64_t sd, sa, sb, ta = 0, tb;

	if (!op)
		return sim_fail(c->sim, "out of memory"), ST_ERR;
	op->n = in->aux;
	op->ty = in->ty[1];
	op->q = w->id;
	op->areg = o[1].k == OK_VEC;
	op->d = o[0].v;
	int i = op->areg ? 6 : 7;
	if (uniform(c, w, &o[2], &op->db) || uniform(c, w, &o[3], &sd) ||
	    uniform(c, w, &o[4], &sa) || uniform(c, w, &o[5], &sb) ||
	    (!op->areg && (uniform(c, w, &o[1], &op->da) ||
	    uniform(c, w, &o[6], &ta))) || uniform(c, w, &o[i], &tb)) {
		free(op);
		return ST_ERR;
	}
	op->scale_d = sd & 1;
	op->neg_a = (int64_t)sa == -1 ? -1 : 1;
	op->neg_b = (int64_t)sb == -1 ? -1 : 1;
	op->ta = (int)ta;
	op->tb = (int)tb;
	if (op->areg)
		for (int l = 0; l < 32; l++)
			for (int r = 0; r < 4; r++)
				op->a[l][r] = (uint32_t)*reg_at(w, o[1].v[r], l);
	if (c->sim->eager) {
		bool ok = compute(c, op);
		free(op);
		return ok ? ST_OK : ST_ERR;
	}
	Async a = {.kind = AS_WGMMA, .warp = w->id, .group = w->wg_open,
		.line = in->line, .wg = op};
	if (async_push(c, &a) != ST_OK) {
		free(op);
		return ST_ERR;
	}
	return ST_OK;
}

/* wgmma.wait_group N: this warp's groups but the newest N complete. */
static int
wait_group(Cta *c, Warp *w, int n)
{
	int k = 0;

	for (int i = 0; i < c->nq; i++) {
		Async *a = &c->q[i];
		if (a->kind == AS_WGMMA && a->warp == w->id &&
		    a->group < w->wg_open - n) {
			if (!compute(c, a->wg))
				return ST_ERR;
			wgmma_free(a);
			continue;
		}
		c->q[k++] = *a;
	}
	c->nq = k;
	return ST_OK;
}

int
wgmma_op(Cta *c, Warp *w, const Ins *in, uint32_t mask)
{
	if (mask != 0xffffffffu)
		return sim_fail(c->sim, "a .sync.aligned wgmma instruction "
			"reached by lanes 0x%08x, not the whole warp", mask),
			ST_ERR;
	switch (in->op) {
	case OP_WG_FENCE:
		return ST_OK;
	case OP_WG_COMMIT:
		w->wg_open++;
		return ST_OK;
	case OP_WG_WAIT:
		return wait_group(c, w, (int)opnd_u(c, w, &in->o[0], 0));
	default:
		return issue(c, w, in);
	}
}
