/* gpu_ref.h: inputs and a float64 reference for the attention tests:
 * random numbers, 16-bit floats, and softmax(Q K^T * scale) V with its
 * LSE for one query row, over tensors laid out by (batch, head, seq, dim)
 * element strides.  Causal attention is aligned to the bottom right, as
 * in the schedules; optional attention sinks (gpt-oss) join each row's
 * denominator, and block masks.  Header-only; one includer per program. */
#ifndef GPU_REF_H
#define GPU_REF_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x243f6a8885a308d3ull;

__attribute__((unused)) static double
urand(void)  /* uniform in [-1, 1) */
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double)(rng >> 11) / 4503599627370496.0 - 1.0;
}

__attribute__((unused)) static uint16_t
to16(double x, bool f16)  /* round to nearest even */
{
	float f = (float)x;
	uint32_t u;
	memcpy(&u, &f, 4);
	if (!f16)
		return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
	/* f16: inputs here are small normals */
	int e = (int)((u >> 23) & 0xff) - 127 + 15;
	uint32_t m = u & 0x7fffff, s = (u >> 16) & 0x8000;
	if (e <= 0)
		return (uint16_t)s;
	uint32_t r = (m >> 13) + (((m >> 12) & 1) && ((m & 0x2fff) ||
		((m >> 13) & 1)));
	return (uint16_t)(s | (((uint32_t)e << 10) + r));
}

__attribute__((unused)) static double
from16(uint16_t h, bool f16)
{
	if (!f16) {
		uint32_t u = (uint32_t)h << 16;
		float f;
		memcpy(&f, &u, 4);
		return f;
	}
	int e = (h >> 10) & 0x1f;
	double m = h & 0x3ff;
	double v = e ? ldexp(1 + m / 1024, e - 15) : ldexp(m / 1024, -14);
	return h & 0x8000 ? -v : v;
}

/* A problem: sizes and the strides of Q, K, V, O, in elements, indexed
 * (batch, head, seq, dim).  g query heads share each K/V head (GQA; 0 or
 * 1: one K/V head per query head): query head h reads K/V head h / g.
 * sinks: NULL, or a logit per query head (in the units of the scaled
 * scores) that joins the softmax's denominator: a row then has
 * O = sum_j e^(s_j - m) V_j / (sum_j e^(s_j - m) + e^(sink - m)) and
 * LSE = log(sum_j e^s_j + e^sink); with no key, O = 0 and LSE = sink. */
typedef struct RefProb {
	int z, h, sq, sk, d;
	bool causal, f16;
	int64_t st[4][4];
	int g;
	bool window;     /* keys i' - wl .. i' + wr, i' = i + sk - sq */
	int wl, wr;      /* -1: unbounded */
	double cap;      /* > 0: s -> cap * tanh(s / cap) */
	const float *sinks;
	const float *alibi;  /* NULL, or per-head slopes: FlashAttention's
			      * ALiBi, -alibi[h] * |i + sk - sq - j| added to
			      * the scaled (softcapped) score */
	const uint8_t *blk;  /* NULL, or a block mask (FlexAttention's, in
			      * 128 x 128 blocks): [z, h, cdiv(sq, 128),
			      * cdiv(sk, 128)], 0 where query block i / 128
			      * of (batch, head) does not see key block
			      * j / 128 */
	int dv;              /* V's and O's head dim; 0: d */
} RefProb;

/* V's and O's head dim. */
static inline int
ref_dv(const RefProb *c)
{
	return c->dv > 0 ? c->dv : c->d;
}

static inline size_t
ref_at(const int64_t *st, int b, int h, int s, int d)
{
	return (size_t)(b * st[0] + h * st[1] + s * st[2] + d);
}

/* The float64 reference for query row r of (z, hh): o gets dv values;
 * sbuf holds sk scores. */
__attribute__((unused)) static void
ref_row(const RefProb *c, const uint16_t *q, const uint16_t *k,
	const uint16_t *v, int z, int hh, int r, double *o, double *lse,
	double *sbuf)
{
	double scale = 1 / sqrt((double)c->d), m = -INFINITY, l = 0;
	double sink = c->sinks ? c->sinks[hh] : -INFINITY;
	int lim = c->causal ? r + c->sk - c->sq : c->sk - 1;
	int lo = 0;      /* keys lo .. lim */
	int hk = hh / (c->g > 1 ? c->g : 1);  /* the K/V head */
	int nkb = (c->sk + 127) / 128;
	const uint8_t *bl = c->blk ? c->blk + (((size_t)z * c->h + hh) *
		(size_t)((c->sq + 127) / 128) + (size_t)(r / 128)) * nkb : NULL;

	if (c->window && c->wr >= 0 && !c->causal)
		lim = r + c->sk - c->sq + c->wr;
	if (c->window && c->wl >= 0)
		lo = r + c->sk - c->sq - c->wl;
	lim = lim < c->sk - 1 ? lim : c->sk - 1;

	for (int j = 0; j < c->sk; j++) {
		double acc = 0;
		if (j > lim || j < lo || (bl && !bl[j / 128])) {
			sbuf[j] = -INFINITY;
			continue;
		}
		const uint16_t *qr = q + ref_at(c->st[0], z, hh, r, 0);
		const uint16_t *kr = k + ref_at(c->st[1], z, hk, j, 0);
		for (int d = 0; d < c->d; d++)
			acc += from16(qr[d], c->f16) * from16(kr[d], c->f16);
		sbuf[j] = acc * scale;
		if (c->cap > 0)
			sbuf[j] = c->cap * tanh(sbuf[j] / c->cap);
		if (c->alibi)
			sbuf[j] -= c->alibi[hh] * fabs((double)(r + c->sk - c->sq -
				j));
		m = fmax(m, sbuf[j]);
	}
	for (int d = 0; d < ref_dv(c); d++)
		o[d] = 0;
	m = fmax(m, sink);
	if (m == -INFINITY) {
		*lse = -INFINITY;
		return;
	}
	l = exp(sink - m);  /* 0 without a sink */
	for (int j = lo > 0 ? lo : 0; j <= lim && j < c->sk; j++) {
		double p = exp(sbuf[j] - m);
		const uint16_t *vr = v + ref_at(c->st[2], z, hk, j, 0);
		l += p;
		for (int d = 0; d < ref_dv(c); d++)
			o[d] += p * from16(vr[d], c->f16);
	}
	for (int d = 0; d < ref_dv(c); d++)
		o[d] /= l;
	*lse = m + log(l);
}

/* What a comparison found: relative RMS error of O, the largest LSE
 * error, rows compared, and bad: 2 NaN in LSE, 8 over tolerance. */
typedef struct RefErr {
	double rel, lerr;
	long rows;
	int bad;
} RefErr;

/* Compare O (laid out by st[3]) and LSE (dense [z, h, sq]) with the
 * reference: every row of a small problem or of one with a block mask,
 * 48 rows per (batch, head) of a large one (the first 8, the last 8 and
 * 32 at random). */
__attribute__((unused)) static RefErr
ref_compare(const RefProb *c, const uint16_t *q, const uint16_t *k,
	const uint16_t *v, const uint16_t *o, const float *lse)
{
	RefErr e = {0};
	double err = 0, ref2 = 0, rl;
	double *ro = malloc((size_t)ref_dv(c) * 8), *sbuf = malloc((size_t)c->sk * 8);
	bool all = c->sq <= 128 || c->blk;

	for (int zz = 0; zz < c->z; zz++)
		for (int hh = 0; hh < c->h; hh++)
			for (int t = 0; t < (all ? c->sq : 48); t++) {
				int r = all ? t : t < 8 ? t : t < 16 ?
					c->sq - 16 + t : (int)((urand() + 1) / 2 *
					c->sq) % c->sq;
				ref_row(c, q, k, v, zz, hh, r, ro, &rl, sbuf);
				const uint16_t *orow = o + ref_at(c->st[3], zz, hh,
					r, 0);
				for (int d = 0; d < ref_dv(c); d++) {
					double x = from16(orow[d], c->f16);
					err += (x - ro[d]) * (x - ro[d]);
					ref2 += ro[d] * ro[d];
				}
				float g = lse[((size_t)zz * c->h + hh) * c->sq + r];
				if (g != g)
					e.bad |= 2;
				else if (rl == -INFINITY ? g != -INFINITY :
				    fabs(g - rl) > e.lerr)
					e.lerr = rl == -INFINITY ? 1e9 :
						fabs(g - rl);
				e.rows++;
			}
	e.rel = ref2 > 0 ? sqrt(err / ref2) : sqrt(err);
	if (e.rel > (c->f16 ? 3e-3 : 1e-2) || e.lerr > 1e-3)
		e.bad |= 8;
	free(ro);
	free(sbuf);
	return e;
}

#endif
