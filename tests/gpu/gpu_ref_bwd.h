/* gpu_ref_bwd.h: a float64 reference for the attention backward pass
 * (issue #13), over gpu_ref.h's problems: from Q, K, V and the output's
 * gradient dO (16-bit, laid out as O by st[3]), the forward's O and LSE
 * and the gradients dQ (laid out as Q), dK and dV (as K and V), all in
 * float64.  Every row of every head, so for small problems only.  GQA:
 * dK and dV of a K/V head sum over its group.  Causal, windows and
 * softcaps as gpu_ref.h's forward (a softcap's derivative 1 - t^2, t =
 * tanh(s / cap), joins dS), and ALiBi (no gradient of its own); no
 * sinks.  V's head dim may differ from Q's (c->dv): V, dV, O and dO have
 * it.
 * Include gpu_ref.h first. */
#ifndef GPU_REF_BWD_H
#define GPU_REF_BWD_H

/* O (as st[3]) and lse ([z, h, sq]) may be NULL. */
__attribute__((unused)) static void
ref_backward(const RefProb *c, const uint16_t *q, const uint16_t *k,
	const uint16_t *v, const uint16_t *dout, double *o, double *lse,
	double *dq, double *dk, double *dv)
{
	double scale = 1 / sqrt((double)c->d);
	int dvd = ref_dv(c);
	size_t nq = (size_t)c->z * c->sq * c->h * c->d;
	int g = c->g > 1 ? c->g : 1;
	size_t nk = (size_t)c->z * c->sk * (c->h / g) * c->d;
	size_t nkv = (size_t)c->z * c->sk * (c->h / g) * dvd;
	double *ro = malloc((size_t)dvd * 8), *s = malloc((size_t)c->sk * 8);

	memset(dq, 0, nq * 8);
	memset(dk, 0, nk * 8);
	memset(dv, 0, nkv * 8);
	for (int zz = 0; zz < c->z; zz++)
		for (int hh = 0; hh < c->h; hh++)
			for (int r = 0; r < c->sq; r++) {
				double rl, delta = 0;
				int hk = hh / g;
				ref_row(c, q, k, v, zz, hh, r, ro, &rl, s);
				const uint16_t *gr = dout + ref_at(c->st[3], zz,
					hh, r, 0);
				const uint16_t *qr = q + ref_at(c->st[0], zz, hh,
					r, 0);
				for (int d = 0; d < dvd; d++) {
					delta += from16(gr[d], c->f16) * ro[d];
					if (o)
						o[ref_at(c->st[3], zz, hh, r, d)] =
							ro[d];
				}
				if (lse)
					lse[((size_t)zz * c->h + hh) * c->sq + r] =
						rl;
				if (rl == -INFINITY)
					continue;
				double *dqr = dq + ref_at(c->st[0], zz, hh, r, 0);
				for (int j = 0; j < c->sk; j++) {
					if (s[j] == -INFINITY)
						continue;
					double p = exp(s[j] - rl), dp = 0;
					const uint16_t *kr = k + ref_at(c->st[1], zz,
						hk, j, 0);
					const uint16_t *vr = v + ref_at(c->st[2], zz,
						hk, j, 0);
					for (int d = 0; d < dvd; d++)
						dp += from16(gr[d], c->f16) *
							from16(vr[d], c->f16);
					double ds = p * (dp - delta) * scale;
					if (c->cap > 0) {  /* t: the score without
							    * the ALiBi bias */
						double t = (s[j] + (c->alibi ?
							c->alibi[hh] * fabs((double)(r +
							c->sk - c->sq - j)) : 0)) /
							c->cap;
						ds *= 1 - t * t;
					}
					double *dkr = dk + ref_at(c->st[1], zz, hk, j,
						0);
					double *dvr = dv + ref_at(c->st[2], zz, hk, j,
						0);
					for (int d = 0; d < c->d; d++) {
						dqr[d] += ds * from16(kr[d], c->f16);
						dkr[d] += ds * from16(qr[d], c->f16);
					}
					for (int d = 0; d < dvd; d++)
						dvr[d] += p * from16(gr[d], c->f16);
				}
			}
	free(ro);
	free(s);
}

/* The relative RMS error of n 16-bit values against float64 ones. */
__attribute__((unused)) static double
ref_rel16(const uint16_t *x, const double *ref, size_t n, bool f16,
	bool *nan)
{
	double err = 0, ref2 = 0;

	for (size_t i = 0; i < n; i++) {
		double a = from16(x[i], f16);
		if (a != a)
			*nan = true;
		err += (a - ref[i]) * (a - ref[i]);
		ref2 += ref[i] * ref[i];
	}
	return ref2 > 0 ? sqrt(err / ref2) : sqrt(err);
}

#endif
