/* sim_rows.c: the row kernels in the simulator (issue #26; meson tests
 * golden.sim.rmsnorm_*, layernorm_*, xent_* and softmax_*), bound as
 * runtime/front/rows_run.c binds them, in bf16, f16 and f32 (the element
 * type of X, W, B, Y, R, XO, DY, DX: "f32" in the file name means f32,
 * else "bf16" bf16, else f16; the statistics and partials are f32 in
 * every variant).
 *
 *   sim_kernel rmsnorm PTX M NC [resid] [noweight]
 *                                             schedules/rmsnorm.fa: Y,
 *                                             RSTD (and XO)
 *   sim_kernel rmsnorm_bwd PTX M NC [noweight] schedules/rmsnorm_bwd.fa:
 *                                             DX and the sum of the DW
 *                                             partials
 *   sim_kernel layernorm PTX M NC [resid] [noweight]
 *                                             schedules/layernorm.fa: Y,
 *                                             MEAN, RSTD (and XO)
 *   sim_kernel xent PTX M NC                  schedules/cross_entropy.fa:
 *                                             LOSS and LSE (some targets
 *                                             out of range)
 *   sim_kernel softmax PTX M NC [bwd]         schedules/softmax.fa: Y (or,
 *                                             bwd, DX from Y and DY)
 *
 * all against float64.  16-bit outputs are judged within a rounding or
 * two to their type.  f32 ones within u = 2^-24 times the roundings of
 * their computation (ulps), counted from the schedules: a row's sums
 * take depth(NC) roundings (below), each elementwise operation one,
 * rsqrt.approx 2^-22.9 and ex2.approx 2 ulp (the PTX ISA's bounds, as
 * the simulator's sim/fp.c), relative to the magnitudes summed; so an
 * element dropped or counted twice (1 / NC of a sum) is far outside.
 * This file has its own copy of gpu_ref.h's generator. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_kernel.h"
#include "../gpu/gpu_ref.h"

/* The element type of a row kernel's tensors. */
typedef enum Elt { E_BF16, E_F16, E_F32 } Elt;

#define U32 0x1p-24     /* f32's unit roundoff */

static size_t
esize(Elt t)
{
	return t == E_F32 ? 4 : 2;
}

/* Element i of an array of t. */
static double
get(const void *p, long i, Elt t)
{
	if (t == E_F32)
		return ((const float *)p)[i];
	return from16(((const uint16_t *)p)[i], t == E_F16);
}

/* x rounded to t into element i. */
static void
put(void *p, long i, double x, Elt t)
{
	if (t == E_F32)
		((float *)p)[i] = (float)x;
	else
		((uint16_t *)p)[i] = to16(x, t == E_F16);
}

/* Whether element i holds exactly the bits of x rounded to t. */
static bool
same(const void *p, long i, double x, Elt t)
{
	unsigned char want[4];

	put(want, 0, x, t);
	return !memcmp((const char *)p + (size_t)i * esize(t), want,
		esize(t));
}

/* A global of n elements of t filled with the byte fill. */
static uint64_t
tbuf(long n, Elt t, int fill, void **host)
{
	return buffer((size_t)n * esize(t), fill, host);
}

/* The roundings in an f32 row sum of nc terms, as the kernels add: each
 * thread its own elements in turn, nc / 256 at most (every f32 variant
 * has 256 or more threads per row), then a tree across the row's
 * threads, warps and CTAs, 16 levels at most; cross_entropy.fa's online
 * merge of 4096-column chunks adds two per chunk, within the slack. */
static double
depth(long nc)
{
	return (double)(nc / 256) + 16;
}

static const char *
ename(Elt t)
{
	return t == E_F32 ? " f32" : "";
}

/* schedules/rmsnorm.fa: Y = X rsqrt(mean(X^2) + eps) W (X + R with
 * resid, also written to XO), RSTD per row; 16-bit Y within two
 * roundings, RSTD within 2^-20; f32: the sum of squares is positive,
 * so RSTD is within half its depth(NC) plus the rsqrt's and the scaling's
 * roundings (6 ulp), Y within two more. */
static int
rmsnorm(long m, long nc, bool resid, bool weight, Elt et)
{
	void *x, *w, *y, *r = NULL, *xo = NULL;
	float *rs;
	double eps = 1e-5, worst = 0;
	SimVal v[10] = {{.i = m}, {.i = nc}, {.f = 1.0 / (double)nc},
		{.f = eps}};
	bool f32 = et == E_F32;
	double trs = f32 ? (depth(nc) / 2 + 6) * U32 : 0x1p-20;
	double ty = f32 ? (depth(nc) / 2 + 8) * U32 : et == E_F16 ?
		0x1p-10 : 0x1p-7;
	long bad = 0;
	int nv = 8;

	v[4].ptr = tbuf(m * nc, et, 0, &x);
	v[5].ptr = tbuf(nc, et, 0, &w);
	v[6].ptr = tbuf(m * nc, et, 0xff, &y);
	v[7].ptr = buffer((size_t)m * 4, 0xff, (void **)&rs);
	if (resid) {
		v[8].ptr = tbuf(m * nc, et, 0, &r);
		v[9].ptr = tbuf(m * nc, et, 0xff, &xo);
		nv = 10;
	}
	for (long i = 0; i < m * nc; i++) {
		put(x, i, urand() * 3, et);
		if (r)
			put(r, i, urand(), et);
	}
	for (long i = 0; i < nc; i++)
		put(w, i, urand() + 1.0, et);
	launch(v, nv);
	for (long i = 0; i < m; i++) {
		double ss = 0;
		for (long j = 0; j < nc; j++) {
			double a = get(x, i * nc + j, et);
			if (r) {
				/* the sum is rounded to the type for XO,
				 * and the norm reads the f32 sum */
				float t = (float)a + (float)get(r, i * nc + j,
					et);
				bad += !same(xo, i * nc + j, t, et);
				a = t;
			}
			ss += a * a;
		}
		double rstd = 1 / sqrt(ss / (double)nc + eps);
		double e = fabs(rs[i] - rstd) / rstd;
		worst = e > worst ? e : worst;
		bad += !(e <= trs);
		for (long j = 0; j < nc; j++) {
			double a = get(x, i * nc + j, et);
			if (r)
				a = (float)a + (float)get(r, i * nc + j, et);
			double want = a * rstd * (weight ? get(w, j, et) : 1.0);
			double got = get(y, i * nc + j, et);
			double tol = fabs(want) * ty + (f32 ? 1e-30 : 1e-6);
			bad += !(fabs(got - want) <= tol);
		}
	}
	printf("rmsnorm M=%ld NC=%ld%s%s%s: rstd rel err %.2e, %ld values "
		"differ -> %s\n", m, nc, ename(et), resid ? " resid" : "",
		weight ? "" : " noweight", worst, bad, bad ? "FAIL" : "ok");
	return bad != 0;
}

/* schedules/rmsnorm_bwd.fa: DX = rstd (g - x rstd^2 mean(g x)), g = dy
 * w, and DW = sum over rows of dy x rstd (the sum of the CTAs' DWP
 * rows, zeroed first), with RSTD the forward's (in f32).  16-bit DX
 * within 2^-7 (bf16) or 2^-10 (f16) of the row's scale, DW within 2^-20
 * of its terms' magnitude; f32 DX within depth(NC) + 8 ulp of the
 * magnitude of its two terms, rstd |g| and rstd^3 |x| mean(|g x|)
 * (they cancel). */
static int
rmsnorm_bwd(long m, long nc, bool weight, Elt et)
{
	void *x, *w, *dy, *dx;
	float *rs, *dwp;
	long bad = 0, p = m;
	double worst = 0, wdx = 0;
	SimVal v[10] = {{.i = m}, {.i = nc}, {.f = 1.0 / (double)nc},
		{.i = p}};
	bool f32 = et == E_F32;

	v[4].ptr = tbuf(m * nc, et, 0, &x);
	v[5].ptr = tbuf(nc, et, 0, &w);
	v[6].ptr = tbuf(m * nc, et, 0, &dy);
	v[7].ptr = buffer((size_t)m * 4, 0, (void **)&rs);
	v[8].ptr = tbuf(m * nc, et, 0xff, &dx);
	v[9].ptr = buffer((size_t)(p * nc) * 4, 0, (void **)&dwp);
	for (long i = 0; i < m * nc; i++) {
		put(x, i, urand() * 3, et);
		put(dy, i, urand(), et);
	}
	for (long j = 0; j < nc; j++)
		put(w, j, urand() + 1.0, et);
	for (long i = 0; i < m; i++) {
		double ss = 0;
		for (long j = 0; j < nc; j++)
			ss += get(x, i * nc + j, et) * get(x, i * nc + j, et);
		rs[i] = (float)(1 / sqrt(ss / (double)nc + 1e-5));
	}
	launch(v, 10);
	double tol = f32 ? (depth(nc) + 8) * U32 : et == E_F16 ? 0x1p-10 :
		0x1p-7;
	for (long i = 0; i < m; i++) {
		double gx = 0, agx = 0, big = 0;
		for (long j = 0; j < nc; j++) {
			double g = get(dy, i * nc + j, et) * (weight ? get(w, j,
				et) : 1);
			gx += g * get(x, i * nc + j, et);
			agx += fabs(g * get(x, i * nc + j, et));
		}
		for (long j = 0; j < nc; j++) {
			double g = get(dy, i * nc + j, et) * (weight ? get(w, j,
				et) : 1);
			double xj = get(x, i * nc + j, et);
			double want = rs[i] * (g - xj * rs[i] * rs[i] * gx /
				(double)nc);
			double mag = rs[i] * (fabs(g) + fabs(xj) * rs[i] *
				rs[i] * agx / (double)nc);
			big = fmax(big, fabs(want));
			double e = fabs(get(dx, i * nc + j, et) - want);
			if (f32) {
				wdx = fmax(wdx, e / (mag * tol));
				bad += !(e <= mag * tol);
			} else {
				bad += !(e <= (fabs(want) + 0.01 * big + 1e-3) *
					tol);
			}
		}
	}
	for (long j = 0; weight && j < nc; j++) {
		double want = 0, mag = 0, got = 0;
		for (long i = 0; i < m; i++) {
			double t = get(dy, i * nc + j, et) * get(x, i * nc + j,
				et) * rs[i];
			want += t;
			mag += fabs(t);
		}
		for (long i = 0; i < p; i++)
			got += dwp[i * nc + j];
		double e = fabs(got - want);
		worst = e > worst ? e : worst;
		bad += !(e <= mag * 0x1p-20 + 1e-6);
	}
	printf("rmsnorm_bwd M=%ld NC=%ld%s%s: ", m, nc, ename(et), weight ?
		"" : " noweight");
	if (f32)
		printf("dx err/tol %.2e, ", wdx);
	printf("dw max abs err %.2e, %ld values differ -> %s\n", worst, bad,
		bad ? "FAIL" : "ok");
	return bad != 0;
}

/* schedules/layernorm.fa: Y = (X - mean) rstd W + B (X + R with resid,
 * also written to XO; noweight: neither W nor B), MEAN and RSTD per row.
 * 16-bit Y within two roundings of the row's scale, MEAN and RSTD
 * within 2^-18.  f32: MEAN within depth(NC) + 2 ulp of mean(|X|), RSTD
 * within half the depth plus 6 ulp (the variance sums squares, and
 * MEAN's error moves it only to second order), Y within RSTD's error
 * plus two roundings of |Y - B| + |B|, plus MEAN's error times rstd |W|. */
static int
layernorm(long m, long nc, bool resid, bool weight, Elt et)
{
	void *x, *w, *bb, *y, *r = NULL, *xo = NULL;
	float *mean, *rs;
	double eps = 1e-5, worst = 0;
	SimVal v[12] = {{.i = m}, {.i = nc}, {.f = 1.0 / (double)nc},
		{.f = eps}};
	bool f32 = et == E_F32;
	long bad = 0;
	int nv = 10;

	v[4].ptr = tbuf(m * nc, et, 0, &x);
	v[5].ptr = tbuf(nc, et, 0, &w);
	v[6].ptr = tbuf(nc, et, 0, &bb);
	v[7].ptr = tbuf(m * nc, et, 0xff, &y);
	v[8].ptr = buffer((size_t)m * 4, 0xff, (void **)&mean);
	v[9].ptr = buffer((size_t)m * 4, 0xff, (void **)&rs);
	if (resid) {
		v[10].ptr = tbuf(m * nc, et, 0, &r);
		v[11].ptr = tbuf(m * nc, et, 0xff, &xo);
		nv = 12;
	}
	for (long i = 0; i < m * nc; i++) {
		put(x, i, urand() * 3 + 1, et);
		if (r)
			put(r, i, urand(), et);
	}
	for (long i = 0; i < nc; i++) {
		put(w, i, urand() + 1.0, et);
		put(bb, i, urand(), et);
	}
	launch(v, nv);
	double *s = malloc((size_t)nc * sizeof *s);
	for (long i = 0; i < m; i++) {
		double mu = 0, amu = 0, var = 0;
		for (long j = 0; j < nc; j++) {
			double a = get(x, i * nc + j, et);
			if (r) {
				float t = (float)a + (float)get(r, i * nc + j,
					et);
				bad += !same(xo, i * nc + j, t, et);
				a = t;
			}
			s[j] = a;
			mu += a;
			amu += fabs(a);
		}
		mu /= (double)nc;
		amu /= (double)nc;
		for (long j = 0; j < nc; j++)
			var += (s[j] - mu) * (s[j] - mu);
		double rstd = 1 / sqrt(var / (double)nc + eps);
		double er = fabs(rs[i] - rstd) / rstd, em = fabs(mean[i] - mu);
		if (f32) {
			double e = fmax(er / (depth(nc) / 2 + 6), em / amu /
				(depth(nc) + 2)) * 0x1p24;
			worst = e > worst ? e : worst;
			bad += !(e <= 1);
		} else {
			double e = er + em / (fabs(mu) + 1e-3);
			worst = e > worst ? e : worst;
			bad += !(e <= 0x1p-18);
		}
		for (long j = 0; j < nc; j++) {
			double n = (s[j] - mu) * rstd, wj = weight ? get(w, j,
				et) : 1, bj = weight ? get(bb, j, et) : 0;
			double want = n * wj + bj;
			double got = get(y, i * nc + j, et);
			double tol = (fabs(want) + 2) * (et == E_F16 ? 0x1p-10 :
				0x1p-7);
			if (f32)
				tol = ((depth(nc) / 2 + 8) * (fabs(n * wj) +
					fabs(bj)) + (depth(nc) + 2) * amu *
					rstd * fabs(wj)) * U32;
			bad += !(fabs(got - want) <= tol);
		}
	}
	free(s);
	printf("layernorm M=%ld NC=%ld%s%s%s: mean/rstd %s %.2e, %ld "
		"values differ -> %s\n", m, nc, ename(et), resid ? " resid" :
		"", weight ? "" : " noweight", f32 ? "err/tol" : "rel err",
		worst, bad, bad ? "FAIL" : "ok");
	return bad != 0;
}

/* schedules/cross_entropy.fa: LSE = logsumexp(X) and LOSS = LSE -
 * X[target] per row (0 where the target is -100 or past NC).  16-bit
 * logits: within 2^-12 of the row's LSE magnitude.  f32: LSE = m +
 * log(sum): each exponential's argument (x - m) log2(e) is off by
 * 2 ulp of its 2 max |x| log2(e), the ex2 by 2 ulp, the positive sum by
 * depth(NC); lg2 2^-22.6 absolute; the adds and LOSS's subtraction a
 * rounding each of |LSE| and |X[target]|. */
static int
xent(long m, long nc, Elt et)
{
	void *x;
	int32_t *tg;
	float *loss, *lse;
	long bad = 0;
	double worst = 0;
	SimVal v[6] = {{.i = m}, {.i = nc}};
	bool f32 = et == E_F32;

	v[2].ptr = tbuf(m * nc, et, 0, &x);
	v[3].ptr = buffer((size_t)m * 4, 0, (void **)&tg);
	v[4].ptr = buffer((size_t)m * 4, 0xff, (void **)&loss);
	v[5].ptr = buffer((size_t)m * 4, 0xff, (void **)&lse);
	for (long i = 0; i < m * nc; i++)
		put(x, i, urand() * 6, et);
	for (long i = 0; i < m; i++)
		tg[i] = i % 5 == 3 ? -100 : i % 7 == 6 ? (int32_t)nc :
			(int32_t)((i * 7919) % nc);
	launch(v, 6);
	for (long i = 0; i < m; i++) {
		double mx = -INFINITY, big = 0, sum = 0;
		for (long j = 0; j < nc; j++) {
			mx = fmax(mx, get(x, i * nc + j, et));
			big = fmax(big, fabs(get(x, i * nc + j, et)));
		}
		for (long j = 0; j < nc; j++)
			sum += exp(get(x, i * nc + j, et) - mx);
		double l = mx + log(sum);
		bool ok = tg[i] >= 0 && tg[i] < nc;
		double xt = ok ? get(x, i * nc + tg[i], et) : 0;
		double want = ok ? l - xt : 0;
		double e = fabs(lse[i] - l) + fabs(loss[i] - want);
		double tol = f32 ? (4 * big + depth(nc) + 8 + 2 * fabs(l) +
			fabs(xt)) * U32 : (fabs(l) + 1) * 0x1p-12;
		e = f32 ? e / tol : e;
		worst = e > worst ? e : worst;
		bad += !(f32 ? e <= 1 : e <= tol);
	}
	if (!f32)  /* the 16-bit line as before: the largest error */
		printf("xent M=%ld NC=%ld: max abs err ", m, nc);
	else
		printf("xent M=%ld NC=%ld f32: max err/tol ", m, nc);
	printf("%.2e, %ld rows differ -> %s\n", worst, bad, bad ? "FAIL" :
		"ok");
	return bad != 0;
}

/* schedules/cross_entropy_bwd.fa: DX = (exp(X - LSE) - onehot(TGT))
 * DLOSS per row, 0 where the target is -100 or past NC, from an LSE in
 * f32.  16-bit: a rounding of DX (and of P, within it).  f32: the
 * exponent (x - LSE) log2(e) is off by 2 ulp of it, the ex2 by 2 ulp,
 * then a subtraction and a product: within (|x - LSE| 3 + 8) ulp of
 * |DLOSS| (P <= 1). */
static int
xent_bwd(long m, long nc, Elt et)
{
	void *x, *dx;
	int32_t *tg;
	float *lse, *dl;
	long bad = 0;
	double worst = 0;
	SimVal v[7] = {{.i = m}, {.i = nc}};
	bool f32 = et == E_F32;

	v[2].ptr = tbuf(m * nc, et, 0, &x);
	v[3].ptr = buffer((size_t)m * 4, 0, (void **)&tg);
	v[4].ptr = buffer((size_t)m * 4, 0, (void **)&lse);
	v[5].ptr = buffer((size_t)m * 4, 0, (void **)&dl);
	v[6].ptr = tbuf(m * nc, et, 0xff, &dx);
	for (long i = 0; i < m * nc; i++)
		put(x, i, urand() * 6, et);
	for (long i = 0; i < m; i++) {
		double mx = -INFINITY, sum = 0;
		tg[i] = i % 5 == 3 ? -100 : i % 7 == 6 ? (int32_t)nc :
			(int32_t)((i * 7919) % nc);
		dl[i] = (float)(urand() * 2);
		for (long j = 0; j < nc; j++)
			mx = fmax(mx, get(x, i * nc + j, et));
		for (long j = 0; j < nc; j++)
			sum += exp(get(x, i * nc + j, et) - mx);
		lse[i] = (float)(mx + log(sum));
	}
	launch(v, 7);
	for (long i = 0; i < m; i++) {
		bool ok = tg[i] >= 0 && tg[i] < nc;
		for (long j = 0; j < nc; j++) {
			double a = get(x, i * nc + j, et), p = exp(a - lse[i]);
			double want = ok ? (p - (j == tg[i])) * dl[i] : 0;
			double e = fabs(get(dx, i * nc + j, et) - want);
			double tol = f32 ? (fabs(a - lse[i]) * 3 + 8) * U32 *
				fabs(dl[i]) : fabs(want) * (et == E_F16 ? 0x1p-10 :
				0x1p-7) + 1e-7;
			worst = e / (tol + 1e-30) > worst ? e / (tol + 1e-30) :
				worst;
			bad += !(e <= tol);
		}
	}
	printf("xent_bwd M=%ld NC=%ld%s: max err/tol %.2e, %ld values differ "
		"-> %s\n", m, nc, f32 ? " f32" : "", worst, bad, bad ? "FAIL" :
		"ok");
	return bad != 0;
}

/* schedules/softmax.fa: Y = softmax(X) per row, or with bwd DX = Y (DY -
 * sum(DY Y)) from Y and DY.  16-bit: within two roundings (relative to
 * the row's largest value, for DX).  f32: Y's exponent (x - max)
 * log2(e) is off by 3 ulp of it, so e^(x - max) by 3 |x - max| ulp,
 * then the ex2's 2, the sum's depth(NC) (of terms each off by as much,
 * 3 r for r the row's largest |x - max|), the division's 2; DX within
 * depth(NC) + 8 ulp of Y (|DY| + sum(|DY Y|)), as the sum cancels. */
static int
softmax(long m, long nc, bool bwd, Elt et)
{
	void *a, *b, *o;
	long bad = 0;
	double worst = 0;
	SimVal v[5] = {{.i = m}, {.i = nc}};
	bool f32 = et == E_F32, f16 = et == E_F16;

	v[2].ptr = tbuf(m * nc, et, 0, &a);
	v[3].ptr = tbuf(m * nc, et, 0xff, &b);
	if (bwd)
		v[4].ptr = tbuf(m * nc, et, 0xff, &o);
	else
		o = b;
	for (long i = 0; i < m * nc; i++) {
		put(a, i, bwd ? (urand() + 1) / (double)nc : urand() * 8, et);
		if (bwd)
			put(b, i, urand(), et);
	}
	launch(v, bwd ? 5 : 4);
	double *want = malloc((size_t)nc * sizeof *want);
	for (long i = 0; i < m; i++) {
		long r0 = i * nc;
		double mx = -INFINITY, mn = INFINITY, sum = 0, asum = 0;
		double big = 0;
		for (long j = 0; j < nc; j++) {
			double t = get(a, r0 + j, et);
			mx = t > mx ? t : mx;
			mn = t < mn ? t : mn;
			sum += bwd ? t * get(b, r0 + j, et) : 0;
			asum += bwd ? fabs(t * get(b, r0 + j, et)) : 0;
		}
		if (!bwd)
			for (long j = 0; j < nc; j++)
				sum += exp(get(a, r0 + j, et) - mx);
		for (long j = 0; j < nc; j++) {
			double t = get(a, r0 + j, et);
			want[j] = bwd ? t * (get(b, r0 + j, et) - sum) :
				exp(t - mx) / sum;
			big = fabs(want[j]) > big ? fabs(want[j]) : big;
		}
		for (long j = 0; j < nc; j++) {
			double got = get(o, r0 + j, et), t = get(a, r0 + j, et);
			double e = fabs(got - want[j]), tol;
			if (f32 && bwd)
				tol = (depth(nc) + 8) * U32 * t *
					(fabs(get(b, r0 + j, et)) + asum);
			else if (f32)
				tol = (3 * (mx - t) + 3 * (mx - mn) +
					depth(nc) + 8) * U32 * fabs(want[j]);
			else
				tol = (fabs(want[j]) + (bwd ? big * 0x1p-8 :
					0)) * (f16 ? 0x1p-9 : 0x1p-7) + 1e-7;
			if (f32)
				worst = e / tol > worst ? e / tol : worst;
			else
				worst = e / (fabs(want[j]) + 1e-3) > worst ? e /
					(fabs(want[j]) + 1e-3) : worst;
			bad += !(e <= tol);
		}
	}
	free(want);
	printf("softmax%s M=%ld NC=%ld%s: max %s %.2e, %ld values differ -> "
		"%s\n", bwd ? " bwd" : "", m, nc, ename(et), f32 ? "err/tol" :
		"rel err", worst, bad, bad ? "FAIL" : "ok");
	return bad != 0;
}

/* The row modes: argv as main's; 0 on a match, 2 for a mode not here. */
int
row_modes(int argc, char **argv)
{
	const char *md = argv[1], *base = strrchr(argv[2], '/');
	base = base ? base + 1 : argv[2];   /* not the directories' names */
	Elt et = strstr(base, "f32") ? E_F32 : strstr(base, "bf16") ? E_BF16 :
		E_F16;   /* the shipped names say */
	long m = atol(argv[3]), nc = atol(argv[4]);
	bool resid = false, weight = true, bwd = false;

	for (int a = 5; a < argc; a++) {
		resid |= !strcmp(argv[a], "resid");
		weight &= strcmp(argv[a], "noweight") != 0;
		bwd |= !strcmp(argv[a], "bwd");
	}
	if (!strcmp(md, "rmsnorm"))
		return rmsnorm(m, nc, resid, weight, et);
	if (!strcmp(md, "rmsnorm_bwd"))
		return rmsnorm_bwd(m, nc, weight, et);
	if (!strcmp(md, "layernorm"))
		return layernorm(m, nc, resid, weight, et);
	if (!strcmp(md, "xent"))
		return xent(m, nc, et);
	if (!strcmp(md, "xent_bwd"))
		return xent_bwd(m, nc, et);
	if (!strcmp(md, "softmax"))
		return softmax(m, nc, bwd, et);
	return 2;
}
