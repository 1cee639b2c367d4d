/* mma_sync.c: ldmatrix and mma.sync m16n8k16, the warp-level tensor core
 * instructions of sm_80 and later (sm_120a's too).
 *
 * Both are .sync.aligned: every lane of the warp must be there, and the
 * instruction runs for the 32 lanes at once, reading every source before
 * writing any destination.
 *
 * ldmatrix.sync.aligned.m8n8.xN[.trans].shared.b16 (PTX ISA 9.7.14.5.15):
 * lanes 8q..8q+7 give the 16-byte aligned shared addresses of rows 0..7
 * of matrix q (N = 1: lanes 0-7 only, 2: lanes 0-15; the others'
 * addresses are not read); register q of lane l receives row l/4,
 * columns 2(l%4) (the low half) and 2(l%4) + 1 of matrix q, or with
 * .trans elements [2(l%4)][l/4] and [2(l%4) + 1][l/4].
 *
 * mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32
 * (PTX ISA 9.7.14.5.8, Figures 79/81/83): lane l, g = l >> 2,
 * t = l & 3, half h of a .b32 (h = 0 the low half, the first element):
 *   A 16 x 16, register j:  A[g + 8(j & 1)][2t + h + 8(j >> 1)]
 *   B 16 x 8,  register j:  B[k = 2t + h + 8j][n = g]
 *   C, D f32,  register i:  D[g + 8(i >> 1)][2t + (i & 1)]
 * Numerics as wgmma's k16 step (wgmma.c): the 16 products of a dot
 * product are summed exactly (double, in k order) and added to C with
 * one rounding to f32. */
#include <stdio.h>
#include <string.h>

#include "simi.h"

const char *
mma_sync_check(const Ins *in)
{
	const Opnd *o = in->o;

	if (in->op != OP_MMA_SYNC) {
		if (in->nopnd != 2 || o[0].k != OK_VEC || o[1].k != OK_ADDR ||
		    o[0].n != in->aux || (in->aux != 1 && in->aux != 2 &&
		    in->aux != 4))
			return "expected .xN (N 1, 2 or 4), N registers and "
				"[addr]";
		return NULL;
	}
	if (in->nty != 4 || in->ty[0] != TY_F32 || in->ty[3] != TY_F32 ||
	    in->ty[1] != in->ty[2] || (in->ty[1] != TY_BF16 &&
	    in->ty[1] != TY_F16))
		return "only mma.sync m16n8k16 .row.col with f32 += bf16 or "
			"f16 is modelled";
	if (in->nopnd != 4 || o[0].k != OK_VEC || o[0].n != 4 ||
	    o[1].k != OK_VEC || o[1].n != 4 || o[2].k != OK_VEC ||
	    o[2].n != 2 || o[3].k != OK_VEC || o[3].n != 4)
		return "expected {d0..d3}, {a0..a3}, {b0, b1}, {c0..c3}";
	return NULL;
}

static int
ldmatrix(Cta *c, Warp *w, const Ins *in)
{
	const Opnd *ad = &in->o[1];
	bool tr = in->op == OP_LDMATRIX_T;
	uint16_t m[4][8][8];

	for (int q = 0; q < in->aux; q++)
		for (int r = 0; r < 8; r++) {
			int l = 8 * q + r;
			uint64_t a = (uint64_t)ad->imm + (ad->r >= 0 ?
				*reg_at(w, ad->r, l) : 0);
			uint8_t *p = a >> 32 ? NULL : smem_at(c, (uint32_t)a,
				16, "an ldmatrix row");
			if (!p) {
				if (a >> 32)
					sim_fail(c->sim, "ldmatrix address 0x%llx "
						"is above 32 bits",
						(unsigned long long)a);
				sim_append(c->sim, " (lane %d: row %d of matrix "
					"%d)", l, r, q);
				return ST_ERR;
			}
			memcpy(m[q][r], p, 16);   /* little-endian */
		}
	for (int l = 0; l < 32; l++)
		for (int q = 0; q < in->aux; q++) {
			int i = l / 4, j = 2 * (l % 4);
			uint16_t lo = tr ? m[q][j][i] : m[q][i][j];
			uint16_t hi = tr ? m[q][j + 1][i] : m[q][i][j + 1];
			*reg_at(w, in->o[0].v[q], l) = (uint64_t)hi << 16 | lo;
		}
	return ST_OK;
}

static int
mma(Warp *w, const Ins *in)
{
	const Opnd *o = in->o;
	int ty = in->ty[1];
	float A[16][16], B[16][8], C[16][8], D[16][8];

	for (int l = 0; l < 32; l++) {
		int g = l >> 2, t = l & 3;
		for (int j = 0; j < 4; j++) {
			uint32_t ra = (uint32_t)*reg_at(w, o[1].v[j], l);
			uint32_t rc = (uint32_t)*reg_at(w, o[3].v[j], l);
			for (int h = 0; h < 2; h++)
				A[g + 8 * (j & 1)][2 * t + h + 8 * (j >> 1)] =
					sim_half(ra, h, ty);
			C[g + 8 * (j >> 1)][2 * t + (j & 1)] = f32_of(rc);
		}
		for (int j = 0; j < 2; j++) {
			uint32_t rb = (uint32_t)*reg_at(w, o[2].v[j], l);
			for (int h = 0; h < 2; h++)
				B[2 * t + h + 8 * j][g] = sim_half(rb, h, ty);
		}
	}
	for (int m = 0; m < 16; m++)
		for (int n = 0; n < 8; n++) {
			double s = 0;
			for (int k = 0; k < 16; k++)
				s += (double)A[m][k] * B[k][n];
			D[m][n] = (float)((double)C[m][n] + s);
		}
	for (int l = 0; l < 32; l++)
		for (int i = 0; i < 4; i++)
			*reg_at(w, o[0].v[i], l) = bits_of(D[(l >> 2) +
				8 * (i >> 1)][2 * (l & 3) + (i & 1)]);
	return ST_OK;
}

int
mma_sync_op(Cta *c, Warp *w, const Ins *in, uint32_t mask)
{
	if (mask != 0xffffffffu)
		return sim_fail(c->sim, "a .sync.aligned %s reached by lanes "
			"0x%08x, not the whole warp", in->op == OP_MMA_SYNC ?
			"mma.sync" : "ldmatrix", mask), ST_ERR;
	return in->op == OP_MMA_SYNC ? mma(w, in) : ldmatrix(c, w, in);
}
