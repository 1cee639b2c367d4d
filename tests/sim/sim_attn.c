/* sim_attn.c: sim_kernel's attention modes (sim_kernel.c says how they
 * are called): the forward ('fa') and the backward ('bwd') of the shipped
 * attention schedules against float64 (gpu_ref.h, gpu_ref_bwd.h), with
 * their options (window=, cap=, alibi, sinks, g=, dv=, varlen=,
 * scoremod) and the block mask of the BLOCKS variants (bcast=B,H: the
 * forward's mask has that batch and heads, 1 for one mask for all). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_kernel.h"
#include "../gpu/gpu_ref.h"
#include "../gpu/gpu_ref_bwd.h"

/* The forward's options (also the backward's: window=, cap=, alibi,
 * varlen=), and for the forward g=G (query heads per K/V head) and sinks. */
static int win_l = -2, win_r = -2;   /* window=L,R (-1: unbounded) */
static double cap;                   /* cap=C */
static bool alibi;                   /* alibi: slopes 0.05 (h + 1) */
static bool sinks;                   /* sinks: per-head logits */
static int groups = 1;               /* g=G */
static int dval;                     /* dv=DV: V's and O's head dim (0: D) */
static int nvl, vlq[16], vlk[16];     /* varlen=Q1,..:K1,.. lengths */
static int bcb, bch;                 /* bcast=B,H: the block mask's
				      * batch and heads (1: one mask for
				      * all; 0: the problem's) */
static bool smod;                    /* scoremod: the backward's
				      * SCORE_MOD (the forward's metadata
				      * says, with its param sm_scale) */

/* Whether m has an argument of that name. */
static bool
has_arg(const SimMod *m, const char *name)
{
	const SimMeta *mt = sim_meta(m);

	for (int i = 0; i < mt->nargs; i++)
		if (!strcmp(mt->args[i].name, name))
			return true;
	return false;
}

/* The block mask of the BLOCKS variants (FlexAttention's, 128 x 128
 * blocks): the class of block (m, n) of head h, batch z, as the
 * backward's lists say it: 0 skipped, 1 masked (by the mask_mod), 2
 * whole.
 * Query block 1 of head 0 sees no key; elsewhere a mix of the three. */
static int
bclass(int z, int h, int m, int n)
{
	if (h == 0 && m == 1)
		return 0;
	return ((5 * m + 3 * n + 7 * h + z) % 5 + 1) / 2;
}

/* bclass of the mask bcast= gives: batch and head 0 for all where it
 * has one. */
static int
bclass_of(int z, int h, int m, int n)
{
	return bclass(bcb == 1 ? 0 : z, bch == 1 ? 0 : h, m, n);
}

/* bclass's mask for gpu_ref.h (RefProb.blk): 1 where not skipped. */
static uint8_t *
block_seen(int z, int h, int sq, int sk)
{
	int nm = (sq + 127) / 128, nn = (sk + 127) / 128;
	uint8_t *b = malloc((size_t)z * h * nm * nn + 1);

	for (int i = 0; i < z * h * nm * nn; i++)
		b[i] = bclass_of(i / nn / nm / h, i / nn / nm % h, i / nn %
			nm, i % nn) != 0;
	return b;
}

/* The forward's lists of bclass (KNUM masked blocks in KIDX, FNUM whole
 * ones in FIDX, as runtime/front/flex.c binds them, with LZ and LH), the
 * masked ones in falling order for odd query blocks; the entries past a
 * count are 0, which the kernel must not read.  With bcast=, the lists
 * of the mask's own batch and heads only. */
static void
block_lists(int z, int h, int sq, int sk, Named *a, int *na)
{
	int nm = (sq + 127) / 128, nn = (sk + 127) / 128;
	int mb = bcb ? bcb : z, mh = bch ? bch : h;
	size_t nb = (size_t)mb * mh * nm;
	int32_t *kn, *ki, *fn, *fi;

	a[(*na)++] = (Named){"LZ", {.i = mb == 1 ? 0 : mh * nm}};
	a[(*na)++] = (Named){"LH", {.i = mh == 1 ? 0 : nm}};
	z = mb, h = mh;
	a[(*na)++] = (Named){"KNUM", {.ptr = buffer(nb * 4, 0,
		(void **)&kn)}};
	a[(*na)++] = (Named){"KIDX", {.ptr = buffer(nb * nn * 4, 0,
		(void **)&ki)}};
	a[(*na)++] = (Named){"FNUM", {.ptr = buffer(nb * 4, 0,
		(void **)&fn)}};
	a[(*na)++] = (Named){"FIDX", {.ptr = buffer(nb * nn * 4, 0,
		(void **)&fi)}};
	for (size_t q = 0; q < nb; q++) {
		int m = (int)(q % (size_t)nm), hh = (int)(q / nm % h);
		int zz = (int)(q / nm / h);
		for (int t = 0; t < nn; t++) {
			int n = m % 2 ? nn - 1 - t : t;
			int c = bclass(zz, hh, m, n);
			if (c == 1)
				ki[q * nn + kn[q]++] = n;
			if (c == 2)
				fi[q * nn + fn[q]++] = n;
		}
	}
}

/* The backward's bclass as QLST [z, h / g, n, 2 g nm + 1]: the count of
 * the blocks not skipped by a head of the group, then each as the pair
 * hh, 2 m + w (head k * g + hh; w 1 where whole), head by head; the
 * entries past the count are -1, which the kernel must not read. */
static void
block_qlists(int z, int h, int g, int sq, int sk, Named *a, int *na)
{
	int nm = (sq + 127) / 128, nn = (sk + 127) / 128, hk = h / g;
	int nl = 2 * g * nm + 1;
	int32_t *ql;

	a[(*na)++] = (Named){"QLST", {.ptr = buffer((size_t)z * hk * nn * nl *
		4, 0xff, (void **)&ql)}};
	for (int i = 0; i < z * hk * nn; i++) {
		int zz = i / nn / hk, k = i / nn % hk, n = i % nn;
		int32_t *l = ql + (size_t)i * nl;
		l[0] = 0;
		for (int hh = 0; hh < g; hh++)
			for (int m = 0; m < nm; m++) {
				int c = bclass(zz, k * g + hh, m, n);
				if (c) {
					l[1 + 2 * l[0]] = hh;
					l[2 + 2 * l[0]++] = 2 * m + (c == 2);
				}
			}
	}
}

/* softmax(Q K^T s) V and LSE against float64 (gpu_ref.h), with the
 * options above; varlen: Z sequences of the given lengths packed in one
 * batch (SQ and SK their sums), each compared as its own problem. */
static int
fa(int z, int h, int sq, int sk, int d, bool causal, bool f16)
{
	int hk = h / groups, zt = nvl ? 1 : z, dv = dval ? dval : d;
	size_t nq = (size_t)zt * sq * h * d, nk = (size_t)zt * sk * hk * d;
	size_t no = (size_t)zt * sq * h * dv, nv = (size_t)zt * sk * hk * dv;
	size_t nl = (size_t)zt * h * sq;
	uint16_t *q, *k, *v, *o;
	float *lse, *sink = NULL, *slopes = NULL;
	int32_t *cuq = NULL, *cuk = NULL;
	double scale = 1 / sqrt((double)d);
	RefProb p = {zt, h, sq, sk, d, causal, f16, {
		{(int64_t)sq * h * d, d, (int64_t)h * d, 1},
		{(int64_t)sk * hk * d, d, (int64_t)hk * d, 1},
		{(int64_t)sk * hk * dv, dv, (int64_t)hk * dv, 1},
		{(int64_t)sq * h * dv, dv, (int64_t)h * dv, 1},
	}, groups, win_l > -2, win_l, win_r, cap, NULL, NULL, NULL, dv};
	/* SCORE_MOD: the hook sees s * sm_scale, the softmax log2(e), as
	 * runtime/front/flex.c binds them */
	bool blocks = has_arg(mod, "KNUM");

	smod = has_arg(mod, "sm_scale");
	Named a[34] = {{"Z", {.i = z}}, {"H", {.i = h}}, {"G", {.i = groups}},
		{"SQ", {.i = sq}}, {"SK", {.i = sk}},
		{"scale_log2", {.f = 1.4426950408889634 * (smod ? 1 : cap > 0 ?
		cap : scale)}}, {"sc_in", {.f = scale / (cap > 0 ? cap : 1)}},
		{"sm_scale", {.f = scale}},
		/* as the runtime's attn_window: -1 is seq_k on the left,
		 * seq_q on the right */
		{"WL", {.i = win_l < 0 || win_l > sk ? sk : win_l}},
		{"WR", {.i = causal ? 0 : win_r < 0 || win_r > sq ? sq :
		win_r}}};
	int na = 10;

	a[na++] = (Named){"Q", {.ptr = buffer(nq * 2, 0, (void **)&q)}};
	a[na++] = (Named){"K", {.ptr = buffer(nk * 2, 0, (void **)&k)}};
	a[na++] = (Named){"V", {.ptr = buffer(nv * 2, 0, (void **)&v)}};
	a[na++] = (Named){"O", {.ptr = buffer(no * 2, 0xff, (void **)&o)}};
	a[na++] = (Named){"LSE", {.ptr = buffer(nl * 4, 0xff,
		(void **)&lse)}};
	a[na++] = (Named){"SINK", {.ptr = buffer((size_t)h * 4, 0,
		(void **)&sink)}};
	a[na++] = (Named){"SLOPES", {.ptr = buffer((size_t)h * 4, 0,
		(void **)&slopes)}};
	a[na++] = (Named){"CUQ", {.ptr = buffer((size_t)(nvl + 1) * 4, 0,
		(void **)&cuq)}};
	a[na++] = (Named){"CUK", {.ptr = buffer((size_t)(nvl + 1) * 4, 0,
		(void **)&cuk)}};
	int mq = 0, mk = 0;
	for (int b = 0; b < nvl; b++) {
		cuq[b + 1] = cuq[b] + vlq[b];
		cuk[b + 1] = cuk[b] + vlk[b];
		mq = vlq[b] > mq ? vlq[b] : mq;
		mk = vlk[b] > mk ? vlk[b] : mk;
	}
	a[na++] = (Named){"MQ", {.i = mq}};
	a[na++] = (Named){"MK", {.i = mk}};
	if (blocks) {
		block_lists(z, h, sq, sk, a, &na);
		p.blk = block_seen(z, h, sq, sk);
	}
	for (int i = 0; i < h; i++) {
		sink[i] = (float)urand();
		slopes[i] = 0.05f * (float)(i + 1);
	}
	p.sinks = sinks ? sink : NULL;
	p.alibi = alibi ? slopes : NULL;
	for (size_t i = 0; i < nq; i++)
		q[i] = to16(2 * urand(), f16);
	for (size_t i = 0; i < nk; i++)
		k[i] = to16(2 * urand(), f16);
	for (size_t i = 0; i < nv; i++)
		v[i] = to16(urand(), f16);
	launch_named(mod, a, na);
	int nan = 0;
	for (size_t i = 0; i < no; i++)
		nan |= from16(o[i], f16) != from16(o[i], f16);
	RefErr e = {0};
	if (!nvl)
		e = ref_compare(&p, q, k, v, o, lse);
	for (int b = 0; b < nvl; b++) {
		RefProb pb = p;
		float *lb = malloc((size_t)h * (size_t)(vlq[b] + 1) * 4);
		size_t oq = (size_t)cuq[b] * h * d, ok = (size_t)cuk[b] * hk * d;
		size_t oo = (size_t)cuq[b] * h * dv, ov = (size_t)cuk[b] * hk * dv;
		pb.z = 1, pb.sq = vlq[b], pb.sk = vlk[b];
		for (int hh = 0; hh < h; hh++)
			for (int r = 0; r < vlq[b]; r++)
				lb[(size_t)hh * vlq[b] + r] = lse[(size_t)hh * sq +
					cuq[b] + r];
		RefErr eb = vlq[b] ? ref_compare(&pb, q + oq, k + ok, v + ov,
			o + oo, lb) : (RefErr){0};
		e.bad |= eb.bad;
		e.rel = eb.rel > e.rel ? eb.rel : e.rel;
		e.lerr = eb.lerr > e.lerr ? eb.lerr : e.lerr;
		e.rows += eb.rows;
		free(lb);
	}
	free((void *)p.blk);
	printf("fa Z=%d H=%d G=%d SQ=%d SK=%d D=%d DV=%d %s %s%s%s%s%s%s%s%s%s: "
		"rel err %.2e, LSE err %.1e over %ld rows%s -> %s\n", z, h,
		groups, sq, sk, d, dv, causal ? "causal" : "full", f16 ? "f16" : "bf16",
		win_l > -2 ? " window" : "", cap > 0 ? " softcap" : "", alibi ?
		" alibi" : "", sinks ? " sinks" : "", nvl ? " varlen" : "",
		smod ? " score_mod" : "", blocks ? " blocks" : "",
		eager ? " eager" : "", e.rel, e.lerr, e.rows, nan ?
		", NaN in O" : "", e.bad || nan ? "FAIL" : "ok");
	return e.bad || nan;
}

/* The backward pass: pre (DELTA, DQACC cleared), the main loop, post
 * (dQ), from a float64 forward's O (rounded to 16 bits) and LSE (f32). */
static int
bwd(const char *main_ptx, int z, int h, int g, int sq, int sk, int d,
	bool causal, bool f16)
{
	char pre_p[1024], post_p[1024];
	const char *dir_end = strrchr(main_ptx, '/');
	int dl = dir_end ? (int)(dir_end - main_ptx + 1) : 0;
	int hk = h / g, zt = nvl ? 1 : z;   /* varlen: one packed batch */
	int dv_ = dval ? dval : d;          /* V's, O's head dim (dv=) */
	size_t nq = (size_t)zt * sq * h * d, nk = (size_t)zt * sk * hk * d;
	size_t nqv = (size_t)zt * sq * h * dv_;
	size_t nkv = (size_t)zt * sk * hk * dv_;
	size_t nl = (size_t)zt * h * sq;
	uint16_t *q, *k, *v, *o, *dout, *dq, *dk, *dv;
	float *lse, *delta, *dqacc;
	RefProb p = {zt, h, sq, sk, d, causal, f16, {
		{(int64_t)sq * h * d, d, (int64_t)h * d, 1},
		{(int64_t)sk * hk * d, d, (int64_t)hk * d, 1},
		{(int64_t)sk * hk * dv_, dv_, (int64_t)hk * dv_, 1},
		{(int64_t)sq * h * dv_, dv_, (int64_t)h * dv_, 1},
	}, g, win_l > -2, win_l, win_r, cap, NULL, NULL, NULL, dv_};
	double scale = 1 / sqrt((double)d);
	float *slopes = NULL;
	uint64_t asl = 0;

	bool blocks = has_arg(mod, "QLST");

	if (blocks)
		p.blk = block_seen(z, h, sq, sk);
	if (alibi) {
		asl = buffer((size_t)h * 4, 0, (void **)&slopes);
		for (int i = 0; i < h; i++)
			slopes[i] = 0.05f * (float)(i + 1);
		p.alibi = slopes;
	}
	/* the pre and post kernels compiled for the main loop's target */
	const char *arch = strstr(main_ptx + dl, "sm100") ? "sm100" : "sm90";
	/* the pre kernel reads O and dO: V's head dim, when it differs */
	char dvs[16] = "";
	if (dv_ != d)
		snprintf(dvs, sizeof dvs, "_dv%d", dv_);
	if (dv_ != d && nvl) {
		printf("bwd: dv= with varlen= is not in this harness\n");
		return 1;
	}
	snprintf(pre_p, sizeof pre_p, "%.*sfa_bwd_pre_%s_d%d%s_%s.ptx", dl,
		main_ptx, arch, d, dvs, f16 ? "f16" : "bf16");
	snprintf(post_p, sizeof post_p, "%.*sfa_bwd_post_%s_d%d_%s.ptx", dl,
		main_ptx, arch, d, f16 ? "f16" : "bf16");
	SimMod *pre = load_mod(pre_p), *post = load_mod(post_p);
	uint64_t aq = buffer(nq * 2, 0, (void **)&q);
	uint64_t ak = buffer(nk * 2, 0, (void **)&k);
	uint64_t av = buffer(nkv * 2, 0, (void **)&v);
	uint64_t ao = buffer(nqv * 2, 0, (void **)&o);
	uint64_t ag = buffer(nqv * 2, 0, (void **)&dout);
	uint64_t al = buffer(nl * 4, 0, (void **)&lse);
	uint64_t adl = buffer(nl * 4, 0xff, (void **)&delta);
	uint64_t aacc = buffer(nq * 4, 0xff, (void **)&dqacc);
	uint64_t adq = buffer(nq * 2, 0xff, (void **)&dq);
	uint64_t adk = buffer(nk * 2, 0xff, (void **)&dk);
	uint64_t adv = buffer(nkv * 2, 0xff, (void **)&dv);
	for (size_t i = 0; i < nq; i++)
		q[i] = to16(2 * urand(), f16);
	for (size_t i = 0; i < nqv; i++)
		dout[i] = to16(urand(), f16);
	for (size_t i = 0; i < nk; i++)
		k[i] = to16(2 * urand(), f16);
	for (size_t i = 0; i < nkv; i++)
		v[i] = to16(urand(), f16);
	double *ro = malloc(nqv * 8), *rl = malloc(nl * 8);
	double *rq = malloc(nq * 8), *rk = malloc(nk * 8), *rv = malloc(nkv * 8);
	int32_t *cuq = NULL, *cuk = NULL;
	uint64_t acuq = 0, acuk = 0, mk = 0;
	if (!nvl) {
		ref_backward(&p, q, k, v, dout, ro, rl, rq, rk, rv);
	} else {  /* one batch of packed sequences, each its own problem */
		acuq = buffer((size_t)(nvl + 1) * 4, 0, (void **)&cuq);
		acuk = buffer((size_t)(nvl + 1) * 4, 0, (void **)&cuk);
		double *l1 = malloc((size_t)h * (size_t)(sq + 1) * 8);
		for (int b = 0; b < nvl; b++) {
			cuq[b + 1] = cuq[b] + vlq[b];
			cuk[b + 1] = cuk[b] + vlk[b];
			mk = (uint64_t)vlk[b] > mk ? (uint64_t)vlk[b] : mk;
			RefProb pb = p;
			pb.z = 1, pb.sq = vlq[b], pb.sk = vlk[b];
			size_t oq = (size_t)cuq[b] * h * d;
			size_t ok = (size_t)cuk[b] * hk * d;
			ref_backward(&pb, q + oq, k + ok, v + ok, dout + oq, ro + oq,
				l1, rq + oq, rk + ok, rv + ok);
			for (int hh = 0; hh < h; hh++)
				for (int r = 0; r < vlq[b]; r++)
					rl[(size_t)hh * sq + cuq[b] + r] =
						l1[(size_t)hh * vlq[b] + r];
		}
		free(l1);
	}
	for (size_t i = 0; i < nqv; i++)
		o[i] = to16(ro[i], f16);
	for (size_t i = 0; i < nl; i++)
		lse[i] = (float)rl[i];
	SimVal a1[7] = {{.i = nvl ? 1 : z}, {.i = h}, {.i = sq}};
	a1[3].ptr = ao;
	a1[4].ptr = ag;
	a1[5].ptr = adl;
	a1[6].ptr = aacc;
	if (sim_launch(sim, pre, a1, 7))
		goto fail;
	/* bound by name, as runtime/front/backward.c binds them (window:
	 * -1 is seq_k on the left and seq_q on the right, as attn_window);
	 * SCORE_MOD: the hook sees s *
	 * scale, the softmax log2(e) */
	Named a2[32] = {{"Z", {.i = z}}, {"H", {.i = h}}, {"G", {.i = g}},
		{"SQ", {.i = sq}}, {"SK", {.i = sk}},
		{"scale_log2", {.f = 1.4426950408889634 * (smod ? 1 : cap > 0 ?
		cap : scale)}}, {"scale", {.f = scale}},
		{"WL", {.i = win_l < 0 || win_l > sk ? sk : win_l}},
		{"WR", {.i = causal ? 0 : win_r < 0 || win_r > sq ? sq :
		win_r}},
		{"sc_in", {.f = scale / (cap > 0 ? cap : 1)}},
		{"MK", {.i = (int64_t)mk}}, {"SLOPES", {.ptr = asl}},
		{"Q", {.ptr = aq}}, {"K", {.ptr = ak}}, {"V", {.ptr = av}},
		{"DO", {.ptr = ag}}, {"LSE", {.ptr = al}},
		{"DELTA", {.ptr = adl}}, {"DQACC", {.ptr = aacc}},
		{"GK", {.ptr = adk}}, {"GV", {.ptr = adv}},
		{"CUQ", {.ptr = acuq}}, {"CUK", {.ptr = acuk}}};
	int na = 23;
	if (blocks)
		block_qlists(z, h, g, sq, sk, a2, &na);
	/* DETERMINISTIC: the dQ adds' counters, zero at the start */
	int32_t *sem = NULL;
	if (has_arg(mod, "DQSEM"))
		a2[na++] = (Named){"DQSEM", {.ptr = buffer((size_t)z * h *
			(size_t)((sq + 63) / 64) * 4, 0, (void **)&sem)}};
	launch_named(mod, a2, na);
	SimVal a3[6] = {{.i = nvl ? 1 : z}, {.i = h}, {.i = sq}, {.f = scale}};
	a3[4].ptr = aacc;
	a3[5].ptr = adq;
	if (sim_launch(sim, post, a3, 6))
		goto fail;
	bool nan = false;
	double eq = ref_rel16(dq, rq, nq, f16, &nan);
	double ek = ref_rel16(dk, rk, nk, f16, &nan);
	double ev = ref_rel16(dv, rv, nkv, f16, &nan);
	double tol = f16 ? 4e-3 : 2e-2;
	bool bad = nan || !(eq <= tol && ek <= tol && ev <= tol);
	printf("bwd Z=%d H=%d G=%d SQ=%d SK=%d D=%d DV=%d %s %s%s%s%s: rel err "
		"dQ %.2e dK %.2e dV %.2e%s -> %s\n", z, h, g, sq, sk, d, dv_, causal ?
		"causal" : "full", f16 ? "f16" : "bf16", smod ? " score_mod" :
		"", blocks ? " blocks" : "", eager ? " eager" : "",
		eq, ek, ev, nan ? ", NaN" : "", bad ? "FAIL" : "ok");
	free(ro), free(rl), free(rq), free(rk), free(rv);
	free((void *)p.blk);
	sim_mod_free(pre);
	sim_mod_free(post);
	return bad;
fail:
	printf("simulator: %s\n", sim_error(sim));
	exit(1);
}

/* The attention modes: argv as main's; 0 on a match, 1 on a mismatch, 2
 * for a mode not here (or a bad option). */
int
attn_modes(int argc, char **argv)
{
	bool f16 = !strstr(argv[2], "bf16");   /* the shipped names say */

	if (strcmp(argv[1], "fa") && strcmp(argv[1], "bwd"))
		return 2;
	for (int i = 3; i < argc; i++) {
		if (!strncmp(argv[i], "window=", 7))
			sscanf(argv[i] + 7, "%d,%d", &win_l, &win_r);
		else if (!strncmp(argv[i], "cap=", 4))
			cap = atof(argv[i] + 4);
		else if (!strcmp(argv[i], "alibi"))
			alibi = true;
		else if (!strcmp(argv[i], "sinks"))
			sinks = true;
		else if (!strcmp(argv[i], "scoremod"))
			smod = true;
		else if (!strncmp(argv[i], "bcast=", 6))
			sscanf(argv[i] + 6, "%d,%d", &bcb, &bch);
		else if (!strncmp(argv[i], "g=", 2))
			groups = atoi(argv[i] + 2);
		else if (!strncmp(argv[i], "dv=", 3))
			dval = atoi(argv[i] + 3);
		else if (!strncmp(argv[i], "varlen=", 7)) {
			char *x = argv[i] + 7;
			int nk = 0;
			while (*x && *x != ':' && nvl < 16) {
				vlq[nvl++] = (int)strtol(x, &x, 10);
				x += *x == ',';
			}
			x += *x == ':';
			while (*x && nk < 16) {
				vlk[nk++] = (int)strtol(x, &x, 10);
				x += *x == ',';
			}
			if (nk != nvl) {
				fprintf(stderr, "varlen: %d query and %d key "
					"lengths\n", nvl, nk);
				return 2;
			}
		}
	}
	if (!strcmp(argv[1], "fa") && argc > 8)
		return fa(atoi(argv[3]), atoi(argv[4]), atoi(argv[5]),
			atoi(argv[6]), atoi(argv[7]), !strcmp(argv[8], "causal"),
			f16);
	if (!strcmp(argv[1], "bwd") && argc > 9)
		return bwd(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]),
			atoi(argv[6]), atoi(argv[7]), atoi(argv[8]),
			!strcmp(argv[9], "causal"), f16);
	return 2;
}
