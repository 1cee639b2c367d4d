/* gpu_sim_calib.c: the simulator calibrated on Hopper (issue #18, item 3).
 * Shipped sm_90a kernels (tests/shipped) run in libfgsim and on the GPU
 * through libfagen, from the same PTX file, on the same pseudo-random
 * inputs (gpu_ref.h's generator) and the same params, every output
 * poisoned with NaN bytes before each run.  Each output is then compared
 * simulator against GPU (bit-identical elements, distances in ulps of its
 * type, the largest differences) and each against the float64 references
 * and tolerances of tests/sim/sim_kernel.c.  Small shapes (a few tiles,
 * odd lengths, causal and not, SQ != SK): each case takes well under a
 * second in the simulator.
 *
 *   gpu_sim_calib [--sim-only] [CASE...]
 *
 * --sim-only runs the simulator alone (no GPU needed); CASE words pick
 * the cases whose names contain them.  Prints a row per output of each
 * case; exit 1 when a result misses float64's tolerance or the two miss
 * the calibration tolerance (docs/TARGETS.md, "Calibration on Hopper"),
 * 77 (SKIP) without a Hopper GPU unless --sim-only. */
#include "gpu_runtime.h"
#include "gpu_ref.h"
#include "gpu_ref_bwd.h"
#include "sim.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Persistent grids: CTAs in both runs (the sim's default, an H100's and
 * an H200's SM count); the results do not depend on it. */
enum { CTAS = 132 };

enum { E_U16, E_BF16, E_F16, E_F32 };          /* element types */
enum { I_DATA, I_ZERO, I_POISON };             /* contents at launch */
enum { K_COPY, K_GEMM, K_FA, K_BWD, K_RMSNORM, K_SOFTMAX, K_SOFTMAX_BWD };

/* A global buffer.  An output (out) has a float64 reference (ref, or
 * NULL: compared with the other run only) checked per element against
 * tol, or, tol NULL, by its relative RMS error against rms. */
typedef struct Buf {
	const char *name;
	size_t n;               /* elements */
	int et, init;
	void *data;             /* I_DATA: the contents */
	bool out;
	double *ref, *tol, rms;
	void *res[2];           /* read back: the simulator's, the GPU's */
	uint64_t sa;
	CUdeviceptr da;
} Buf;

typedef struct Arg {
	char kind;              /* 'i' integer, 'f' f32, 'b' buffer */
	int64_t i;
	double f;
	int b;
} Arg;

typedef struct Launch {
	char ptx[96];           /* a file of tests/shipped */
	int na;
	Arg a[SIM_MAXARGS];
} Launch;

typedef struct Run {
	int nb, nl;
	Buf b[12];
	Launch l[3];
	double sim_s;
	uint64_t steps;
} Run;

/* copy M N; gemm M N K; fa and bwd Z H SQ SK D; rows M NC */
typedef struct Case {
	const char *name, *ptx;
	int kind;
	bool f16, causal;
	long s[5];
} Case;

static bool sim_only;
static fg_ctx *ctx;
static CUstream stream;

static size_t
esize(int et)
{
	return et == E_F32 ? 4 : 2;
}

/* Element i as a double; f16's infinities and NaNs too. */
static double
value(int et, const void *p, size_t i)
{
	uint16_t h = et == E_F32 ? 0 : ((const uint16_t *)p)[i];
	float f;

	switch (et) {
	case E_U16:
		return h;
	case E_BF16:
		return from16(h, false);
	case E_F16:
		if ((h & 0x7c00) == 0x7c00)
			return h & 0x3ff ? NAN : h & 0x8000 ? -INFINITY :
				INFINITY;
		return from16(h, true);
	default:
		memcpy(&f, (const float *)p + i, 4);
		return f;
	}
}

/* Element i's bits as an integer ordered like its value, so that the
 * difference of two is their distance in ulps. */
static int64_t
okey(int et, const void *p, size_t i)
{
	uint32_t u, sign;

	if (et == E_F32) {
		memcpy(&u, (const float *)p + i, 4);
		sign = u >> 31;
		u &= 0x7fffffff;
	} else {
		u = ((const uint16_t *)p)[i];
		sign = et == E_U16 ? 0 : u >> 15;
		u &= et == E_U16 ? 0xffff : 0x7fff;
	}
	return sign ? -(int64_t)u : (int64_t)u;
}

/* The spacing of the type's values at |x| (fraction bits: bf16 7, f16
 * 10, f32 23), subnormals' below the smallest normal. */
static double
ulp(int et, double x)
{
	int p = et == E_BF16 ? 7 : et == E_F16 ? 10 : 23;
	int emin = et == E_F16 ? -14 : -126, e;

	frexp(x, &e);
	e = x != 0 && e - 1 > emin ? e - 1 : emin;
	return ldexp(1, e - p);
}

static int
add_buf(Run *r, const char *name, size_t n, int et, int init)
{
	Buf *b = &r->b[r->nb];

	*b = (Buf){.name = name, .n = n, .et = et, .init = init};
	if (init == I_DATA)
		b->data = calloc(n ? n : 1, esize(et));
	return r->nb++;
}

/* Marks buffer i an output with its reference (see Buf). */
static void
want(Run *r, int i, double *ref, double *tol, double rms)
{
	r->b[i].out = true;
	r->b[i].ref = ref;
	r->b[i].tol = tol;
	r->b[i].rms = rms;
}

static Launch *
add_launch(Run *r, const char *ptx)
{
	Launch *l = &r->l[r->nl++];

	snprintf(l->ptx, sizeof l->ptx, "%s", ptx);
	l->na = 0;
	return l;
}

static void
arg_i(Launch *l, int64_t v)
{
	l->a[l->na++] = (Arg){.kind = 'i', .i = v};
}

static void
arg_f(Launch *l, double v)
{
	l->a[l->na++] = (Arg){.kind = 'f', .f = v};
}

static void
arg_b(Launch *l, int b)
{
	l->a[l->na++] = (Arg){.kind = 'b', .b = b};
}

static double *
dalloc(size_t n)
{
	double *p = calloc(n ? n : 1, sizeof *p);

	if (!p) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	return p;
}

/* copy_ws: Y = X, bit for bit (any 16-bit pattern, NaNs included). */
static void
setup_copy(const Case *c, Run *r)
{
	long m = c->s[0], n = c->s[1];
	size_t ne = (size_t)(m * n);
	int x = add_buf(r, "X", ne, E_U16, I_DATA);
	int y = add_buf(r, "Y", ne, E_U16, I_POISON);
	uint16_t *hx = r->b[x].data;
	double *ref = dalloc(ne);

	for (size_t i = 0; i < ne; i++) {
		hx[i] = (uint16_t)(i * 7919 + 13);
		ref[i] = hx[i];
	}
	want(r, y, ref, dalloc(ne), 0);
	Launch *l = add_launch(r, c->ptx);
	arg_i(l, m), arg_i(l, n), arg_b(l, x), arg_b(l, y);
}

/* gemm_ws: C = A B^T, each element within one rounding to 16 bits plus
 * f32 accumulation of the products' magnitudes (sim_kernel.c). */
static void
setup_gemm(const Case *c, Run *r)
{
	long m = c->s[0], n = c->s[1], k = c->s[2];
	bool f = c->f16;
	int et = f ? E_F16 : E_BF16;
	int ia = add_buf(r, "A", (size_t)(m * k), et, I_DATA);
	int ib = add_buf(r, "B", (size_t)(n * k), et, I_DATA);
	int ic = add_buf(r, "C", (size_t)(m * n), et, I_POISON);
	uint16_t *a = r->b[ia].data, *b = r->b[ib].data;
	double *ref = dalloc((size_t)(m * n)), *tol = dalloc((size_t)(m * n));

	for (long i = 0; i < m * k; i++)
		a[i] = to16(urand(), f);
	for (long i = 0; i < n * k; i++)
		b[i] = to16(urand(), f);
	for (long i = 0; i < m; i++)
		for (long j = 0; j < n; j++) {
			double acc = 0, mag = 0;
			for (long t = 0; t < k; t++) {
				double p = from16(a[i * k + t], f) *
					from16(b[j * k + t], f);
				acc += p;
				mag += fabs(p);
			}
			ref[i * n + j] = acc;
			tol[i * n + j] = fabs(acc) * (f ? 0x1p-10 : 0x1p-7) +
				(mag + 1) * 0x1p-20;
		}
	want(r, ic, ref, tol, 0);
	Launch *l = add_launch(r, c->ptx);
	arg_i(l, m), arg_i(l, n), arg_i(l, k);
	arg_b(l, ia), arg_b(l, ib), arg_b(l, ic);
}

/* The [Z, S, H, D] layouts of Q, K, V and O, as gpu_fa.c's. */
static RefProb
attn_prob(const Case *c)
{
	int z = (int)c->s[0], h = (int)c->s[1], sq = (int)c->s[2];
	int sk = (int)c->s[3], d = (int)c->s[4];

	return (RefProb){z, h, sq, sk, d, c->causal, c->f16, {
		{(int64_t)sq * h * d, d, (int64_t)h * d, 1},
		{(int64_t)sk * h * d, d, (int64_t)h * d, 1},
		{(int64_t)sk * h * d, d, (int64_t)h * d, 1},
		{(int64_t)sq * h * d, d, (int64_t)h * d, 1},
	}, 1, false, -1, -1, 0, NULL, NULL, NULL, 0};
}

/* fa_fwd and fa_fwd_base: O within gpu_fa.c's relative RMS error, LSE
 * within 1e-3 (-inf where a causal row sees no key), every row. */
static void
setup_fa(const Case *c, Run *r)
{
	RefProb p = attn_prob(c);
	size_t nq = (size_t)p.z * p.sq * p.h * p.d;
	size_t nk = (size_t)p.z * p.sk * p.h * p.d;
	size_t nl = (size_t)p.z * p.h * p.sq;
	int et = p.f16 ? E_F16 : E_BF16;
	int iq = add_buf(r, "Q", nq, et, I_DATA);
	int ik = add_buf(r, "K", nk, et, I_DATA);
	int iv = add_buf(r, "V", nk, et, I_DATA);
	int io = add_buf(r, "O", nq, et, I_POISON);
	int il = add_buf(r, "LSE", nl, E_F32, I_POISON);
	uint16_t *q = r->b[iq].data, *k = r->b[ik].data, *v = r->b[iv].data;
	double *ro = dalloc(nq), *rl = dalloc(nl), *tl = dalloc(nl);
	double *sbuf = dalloc((size_t)p.sk);

	for (size_t i = 0; i < nq; i++)
		q[i] = to16(2 * urand(), p.f16);
	for (size_t i = 0; i < nk; i++) {
		k[i] = to16(2 * urand(), p.f16);
		v[i] = to16(urand(), p.f16);
	}
	for (size_t j = 0; j < nl; j++) {  /* LSE is [Z, H, SQ] */
		int z = (int)(j / ((size_t)p.h * p.sq));
		int h = (int)(j / (size_t)p.sq % (size_t)p.h);
		int i = (int)(j % (size_t)p.sq);
		ref_row(&p, q, k, v, z, h, i, ro + ref_at(p.st[3], z, h, i, 0),
			&rl[j], sbuf);
		tl[j] = 1e-3;
	}
	free(sbuf);
	want(r, io, ro, NULL, p.f16 ? 3e-3 : 1e-2);
	want(r, il, rl, tl, 0);
	Launch *l = add_launch(r, c->ptx);
	arg_i(l, p.z), arg_i(l, p.h), arg_i(l, 1), arg_i(l, p.sq);
	arg_i(l, p.sk), arg_f(l, 1.4426950408889634 / sqrt((double)p.d));
	arg_b(l, iq), arg_b(l, ik), arg_b(l, iv), arg_b(l, io), arg_b(l, il);
}

/* fa_bwd: pre (DELTA, DQACC cleared), the main loop, post (dQ), from a
 * float64 forward's O (rounded to 16 bits) and LSE (f32); dQ, dK and dV
 * within sim_kernel.c's relative RMS error, DELTA (the rows of O dO, in
 * f32) within 2^-20 of their products' magnitudes. */
static void
setup_bwd(const Case *c, Run *r)
{
	RefProb p = attn_prob(c);
	size_t nq = (size_t)p.z * p.sq * p.h * p.d;
	size_t nk = (size_t)p.z * p.sk * p.h * p.d;
	size_t nl = (size_t)p.z * p.h * p.sq;
	int et = p.f16 ? E_F16 : E_BF16;
	const char *ty = p.f16 ? "f16" : "bf16";
	double scale = 1 / sqrt((double)p.d), tol = p.f16 ? 4e-3 : 2e-2;
	int iq = add_buf(r, "Q", nq, et, I_DATA);
	int ik = add_buf(r, "K", nk, et, I_DATA);
	int iv = add_buf(r, "V", nk, et, I_DATA);
	int io = add_buf(r, "O", nq, et, I_DATA);
	int ig = add_buf(r, "dO", nq, et, I_DATA);
	int il = add_buf(r, "LSE", nl, E_F32, I_DATA);
	int idl = add_buf(r, "DELTA", nl, E_F32, I_POISON);
	int iacc = add_buf(r, "DQACC", nq, E_F32, I_POISON);
	int idq = add_buf(r, "dQ", nq, et, I_POISON);
	int idk = add_buf(r, "dK", nk, et, I_POISON);
	int idv = add_buf(r, "dV", nk, et, I_POISON);
	uint16_t *q = r->b[iq].data, *k = r->b[ik].data, *v = r->b[iv].data;
	uint16_t *o = r->b[io].data, *g = r->b[ig].data;
	float *lse = r->b[il].data;
	double *ro = dalloc(nq), *rl = dalloc(nl);
	double *rq = dalloc(nq), *rk = dalloc(nk), *rv = dalloc(nk);
	double *rd = dalloc(nl), *td = dalloc(nl);
	char name[96];

	for (size_t i = 0; i < nq; i++) {
		q[i] = to16(2 * urand(), p.f16);
		g[i] = to16(urand(), p.f16);
	}
	for (size_t i = 0; i < nk; i++) {
		k[i] = to16(2 * urand(), p.f16);
		v[i] = to16(urand(), p.f16);
	}
	ref_backward(&p, q, k, v, g, ro, rl, rq, rk, rv);
	for (size_t i = 0; i < nq; i++)
		o[i] = to16(ro[i], p.f16);
	for (size_t i = 0; i < nl; i++)
		lse[i] = (float)rl[i];
	for (int z = 0; z < p.z; z++)  /* DELTA: rows of O dO, [Z, H, SQ] */
		for (int h = 0; h < p.h; h++)
			for (int i = 0; i < p.sq; i++) {
				size_t at = ref_at(p.st[3], z, h, i, 0);
				size_t j = ((size_t)z * p.h + h) * p.sq + i;
				double mag = 0;
				for (int e = 0; e < p.d; e++) {
					double t = from16(o[at + e], p.f16) *
						from16(g[at + e], p.f16);
					rd[j] += t;
					mag += fabs(t);
				}
				td[j] = (mag + 1) * 0x1p-20;
			}
	free(ro), free(rl);
	want(r, idq, rq, NULL, tol);
	want(r, idk, rk, NULL, tol);
	want(r, idv, rv, NULL, tol);
	want(r, idl, rd, td, 0);
	snprintf(name, sizeof name, "fa_bwd_pre_sm90_d%d_%s.ptx", p.d, ty);
	Launch *l = add_launch(r, name);
	arg_i(l, p.z), arg_i(l, p.h), arg_i(l, p.sq);
	arg_b(l, io), arg_b(l, ig), arg_b(l, idl), arg_b(l, iacc);
	l = add_launch(r, c->ptx);
	arg_i(l, p.z), arg_i(l, p.h), arg_i(l, 1), arg_i(l, p.sq);
	arg_i(l, p.sk), arg_f(l, 1.4426950408889634 * scale), arg_f(l, scale);
	arg_b(l, iq), arg_b(l, ik), arg_b(l, iv), arg_b(l, ig), arg_b(l, il);
	arg_b(l, idl), arg_b(l, iacc), arg_b(l, idk), arg_b(l, idv);
	snprintf(name, sizeof name, "fa_bwd_post_sm90_d%d_%s.ptx", p.d, ty);
	l = add_launch(r, name);
	arg_i(l, p.z), arg_i(l, p.h), arg_i(l, p.sq), arg_f(l, scale);
	arg_b(l, iacc), arg_b(l, idq);
}

/* rmsnorm: Y = X rsqrt(mean(X^2) + eps) W within two roundings to 16
 * bits, RSTD within 2^-20 relative (sim_kernel.c). */
static void
setup_rmsnorm(const Case *c, Run *r)
{
	long m = c->s[0], nc = c->s[1];
	bool f = c->f16;
	int et = f ? E_F16 : E_BF16;
	double eps = 1e-5;
	int ix = add_buf(r, "X", (size_t)(m * nc), et, I_DATA);
	int iw = add_buf(r, "W", (size_t)nc, et, I_DATA);
	int iy = add_buf(r, "Y", (size_t)(m * nc), et, I_POISON);
	int is = add_buf(r, "RSTD", (size_t)m, E_F32, I_POISON);
	uint16_t *x = r->b[ix].data, *w = r->b[iw].data;
	double *ry = dalloc((size_t)(m * nc)), *ty = dalloc((size_t)(m * nc));
	double *rs = dalloc((size_t)m), *ts = dalloc((size_t)m);

	for (long i = 0; i < m * nc; i++)
		x[i] = to16(urand() * 3, f);
	for (long i = 0; i < nc; i++)
		w[i] = to16(urand() + 1.0, f);
	for (long i = 0; i < m; i++) {
		double ss = 0;
		for (long j = 0; j < nc; j++) {
			double t = from16(x[i * nc + j], f);
			ss += t * t;
		}
		rs[i] = 1 / sqrt(ss / (double)nc + eps);
		ts[i] = rs[i] * 0x1p-20;
		for (long j = 0; j < nc; j++) {
			double y = from16(x[i * nc + j], f) * rs[i] *
				from16(w[j], f);
			ry[i * nc + j] = y;
			ty[i * nc + j] = fabs(y) * (f ? 0x1p-10 : 0x1p-7) +
				1e-6;
		}
	}
	want(r, iy, ry, ty, 0);
	want(r, is, rs, ts, 0);
	Launch *l = add_launch(r, c->ptx);
	arg_i(l, m), arg_i(l, nc), arg_f(l, 1.0 / (double)nc), arg_f(l, eps);
	arg_b(l, ix), arg_b(l, iw), arg_b(l, iy), arg_b(l, is);
}

/* softmax: Y = softmax(X) per row, or (bwd) DX = Y (DY - sum(DY Y)),
 * within two roundings to 16 bits (relative to the row's largest value
 * too, for DX), as sim_kernel.c. */
static void
setup_softmax(const Case *c, Run *r)
{
	long m = c->s[0], nc = c->s[1];
	bool f = c->f16, bwd = c->kind == K_SOFTMAX_BWD;
	int et = f ? E_F16 : E_BF16;
	int ia = add_buf(r, bwd ? "Y" : "X", (size_t)(m * nc), et, I_DATA);
	int ib = add_buf(r, bwd ? "DY" : "Y", (size_t)(m * nc), et,
		bwd ? I_DATA : I_POISON);
	int io = bwd ? add_buf(r, "DX", (size_t)(m * nc), et, I_POISON) : ib;
	uint16_t *a = r->b[ia].data, *b = r->b[ib].data;
	double *ref = dalloc((size_t)(m * nc)), *tol = dalloc((size_t)(m * nc));

	for (long i = 0; i < m * nc; i++) {
		a[i] = to16(bwd ? (urand() + 1) / (double)nc : urand() * 8, f);
		if (bwd)
			b[i] = to16(urand(), f);
	}
	for (long i = 0; i < m; i++) {
		const uint16_t *x = a + i * nc, *d = bwd ? b + i * nc : NULL;
		double mx = -INFINITY, sum = 0, big = 0, *w = ref + i * nc;
		for (long j = 0; j < nc; j++) {
			double t = from16(x[j], f);
			mx = t > mx ? t : mx;
			sum += bwd ? t * from16(d[j], f) : 0;
		}
		for (long j = 0; !bwd && j < nc; j++)
			sum += exp(from16(x[j], f) - mx);
		for (long j = 0; j < nc; j++) {
			double t = from16(x[j], f);
			w[j] = bwd ? t * (from16(d[j], f) - sum) : exp(t - mx) /
				sum;
			big = fabs(w[j]) > big ? fabs(w[j]) : big;
		}
		for (long j = 0; j < nc; j++) {
			double t = fabs(w[j]) + (bwd ? big * 0x1p-8 : 0);
			tol[i * nc + j] = t * (f ? 0x1p-9 : 0x1p-7) + 1e-7;
		}
	}
	want(r, io, ref, tol, 0);
	Launch *l = add_launch(r, c->ptx);
	arg_i(l, m), arg_i(l, nc), arg_b(l, ia), arg_b(l, ib);
	if (bwd)
		arg_b(l, io);
}

static char *
read_ptx(const char *name, size_t *len)
{
	char rel[256];
	const char *path;
	FILE *f;
	char *s;
	long n;

	snprintf(rel, sizeof rel, "tests/shipped/%s", name);
	path = gpu_src(rel);
	if (!(f = fopen(path, "rb"))) {
		fprintf(stderr, "cannot open %s\n", path);
		exit(1);
	}
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	s = malloc((size_t)n + 1);
	if (!s || fread(s, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "cannot read %s\n", path);
		exit(1);
	}
	fclose(f);
	s[n] = 0;
	*len = (size_t)n;
	return s;
}

static SimMod *
load_sim(const char *name)
{
	char err[512];
	size_t len;
	char *ptx = read_ptx(name, &len);
	SimMod *m = sim_load(ptx, len, err, sizeof err);

	free(ptx);
	if (!m) {
		fprintf(stderr, "%s: %s\n", name, err);
		exit(1);
	}
	return m;
}

/* Runs the launches in the simulator; res[0] of every output.  -1 with
 * the simulator's error printed. */
static int
run_sim(Run *r)
{
	Sim *s = sim_new();
	double t0 = gpu_ms();
	int rc = 0;

	sim_set(s, SIM_OPT_MAX_CTAS, CTAS);
	for (int i = 0; i < r->nb; i++) {
		Buf *b = &r->b[i];
		size_t bytes = b->n * esize(b->et);
		b->sa = sim_alloc(s, bytes ? bytes : 1);
		void *h = sim_host(s, b->sa, bytes);
		if (b->init == I_DATA)
			memcpy(h, b->data, bytes);
		else
			memset(h, b->init == I_POISON ? 0xff : 0, bytes);
	}
	for (int i = 0; i < r->nl && !rc; i++) {
		const Launch *l = &r->l[i];
		SimMod *m = load_sim(l->ptx);
		SimVal v[SIM_MAXARGS] = {{0}};
		for (int j = 0; j < l->na; j++) {
			const Arg *a = &l->a[j];
			v[j].i = a->i;
			v[j].f = a->f;
			v[j].ptr = a->kind == 'b' ? r->b[a->b].sa : 0;
		}
		if (sim_launch(s, m, v, l->na)) {
			printf("simulator, %s: %s\n", l->ptx, sim_error(s));
			rc = -1;
		}
		sim_mod_free(m);
	}
	for (int i = 0; i < r->nb && !rc; i++) {
		Buf *b = &r->b[i];
		size_t bytes = b->n * esize(b->et);
		if (!b->out)
			continue;
		b->res[0] = malloc(bytes ? bytes : 1);
		memcpy(b->res[0], sim_host(s, b->sa, bytes), bytes);
	}
	r->steps = sim_stats(s).warp_steps;
	r->sim_s = (gpu_ms() - t0) / 1e3;
	sim_free(s);
	return rc;
}

/* One launch on the GPU through libfagen, its arguments named as the
 * simulator reads them from the same PTX's metadata. */
static void
launch_gpu(const Run *r, const Launch *l)
{
	size_t len;
	char *ptx = read_ptx(l->ptx, &len);
	SimMod *m = load_sim(l->ptx);
	const SimMeta *meta = sim_meta(m);
	const char *names[SIM_MAXARGS] = {0};
	fg_arg args[SIM_MAXARGS];
	fg_kernel *k;

	FG(ctx, fg_kernel_create(ctx, ptx, len, &k));
	for (int i = 0; i < meta->nargs; i++)
		if (meta->args[i].user >= 0 && meta->args[i].user < SIM_MAXARGS)
			names[meta->args[i].user] = meta->args[i].name;
	if (meta->nuser != l->na) {
		fprintf(stderr, "%s: %d arguments, the case gives %d\n",
			l->ptx, meta->nuser, l->na);
		exit(1);
	}
	for (int i = 0; i < l->na; i++) {
		const Arg *a = &l->a[i];
		fg_arg_info ai;
		FG(ctx, fg_kernel_arg(k, i, &ai));
		if (!names[i] || strcmp(names[i], ai.name)) {
			fprintf(stderr, "%s: argument %d is '%s' to libfagen, "
				"'%s' to the simulator\n", l->ptx, i, ai.name,
				names[i] ? names[i] : "?");
			exit(1);
		}
		if (a->kind == 'i')
			args[i] = FG_INT(ai.name, a->i);
		else if (a->kind == 'f')
			args[i] = FG_FLOAT(ai.name, a->f);
		else
			args[i] = FG_PTR(ai.name, r->b[a->b].da);
	}
	FG(ctx, fg_kernel_set_grid_limit(k, CTAS));
	FG(ctx, fg_launch(k, stream, args, l->na));
	CK(cu.StreamSynchronize(stream));
	fg_kernel_free(k);
	sim_mod_free(m);
	free(ptx);
}

/* Runs the launches on the GPU; res[1] of every output. */
static void
run_gpu(Run *r)
{
	for (int i = 0; i < r->nb; i++) {
		Buf *b = &r->b[i];
		size_t bytes = b->n * esize(b->et);
		CK(cu.MemAlloc(&b->da, bytes ? bytes : 1));
		if (b->init == I_DATA)
			CK(cu.MemcpyHtoD(b->da, b->data, bytes));
		else
			CK(cu.MemsetD8(b->da, b->init == I_POISON ? 0xff : 0,
				bytes));
	}
	CK(cu.CtxSynchronize());
	for (int i = 0; i < r->nl; i++)
		launch_gpu(r, &r->l[i]);
	for (int i = 0; i < r->nb; i++) {
		Buf *b = &r->b[i];
		size_t bytes = b->n * esize(b->et);
		if (b->out) {
			b->res[1] = malloc(bytes ? bytes : 1);
			CK(cu.MemcpyDtoH(b->res[1], b->da, bytes));
		}
		CK(cu.MemFree(b->da));
	}
}

/* A result against float64: the largest absolute error, the relative
 * RMS error, and whether it passes (see Buf). */
typedef struct F64 {
	double maxabs, rel;
	bool bad;
} F64;

static F64
check_f64(const Buf *b, const void *res)
{
	F64 e = {0};
	double err2 = 0, ref2 = 0;
	long over = 0;

	for (size_t i = 0; i < b->n; i++) {
		double x = value(b->et, res, i), w = b->ref[i], d;
		if (isinf(w) || isnan(x) || isinf(x))
			d = x == w ? 0 : INFINITY;
		else
			d = fabs(x - w);
		e.maxabs = d > e.maxabs ? d : e.maxabs;
		err2 += d * d;
		ref2 += isinf(w) ? 0 : w * w;
		over += b->tol && !(d <= b->tol[i]);
	}
	e.rel = ref2 > 0 ? sqrt(err2 / ref2) : sqrt(err2);
	e.bad = b->tol ? over > 0 : !(e.rel <= b->rms);
	return e;
}

/* The simulator's result against the GPU's.  The calibration tolerance
 * (docs/TARGETS.md): 16-bit values bit for bit (copies) or, floats,
 * every element within 2 ulps of itself plus one ulp of the tensor's
 * RMS, and 99% within 1 ulp; f32 values within 2^-16 (1 + |x|). */
typedef struct Cal {
	size_t same, ulp1, ulp2, over;
	uint64_t maxulp;
	double maxabs, maxrel;
	bool bad;
} Cal;

static Cal
check_cal(const Buf *b)
{
	Cal c = {0};
	double rms = 0, rt;
	size_t nf = 0;

	for (size_t i = 0; i < b->n; i++) {
		double x = value(b->et, b->res[0], i);
		if (isfinite(x))
			rms += x * x, nf++;
	}
	rms = nf ? sqrt(rms / (double)nf) : 0;
	rt = ulp(b->et, rms);
	for (size_t i = 0; i < b->n; i++) {
		double x = value(b->et, b->res[0], i);
		double y = value(b->et, b->res[1], i);
		int64_t kx = okey(b->et, b->res[0], i);
		int64_t ky = okey(b->et, b->res[1], i);
		uint64_t du = kx > ky ? (uint64_t)(kx - ky) :
			(uint64_t)(ky - kx);
		double big = fmax(fabs(x), fabs(y)), d = fabs(x - y), tol;
		if (kx == ky) {
			c.same++, c.ulp1++, c.ulp2++;
			continue;
		}
		if (!isfinite(x) || !isfinite(y))
			du = UINT64_MAX, d = INFINITY;
		c.ulp1 += du <= 1;
		c.ulp2 += du <= 2;
		c.maxulp = du > c.maxulp ? du : c.maxulp;
		c.maxabs = d > c.maxabs ? d : c.maxabs;
		c.maxrel = big > 0 && d / big > c.maxrel ? d / big : c.maxrel;
		if (b->et == E_U16)
			tol = 0;
		else if (b->et == E_F32)
			tol = 0x1p-16 * (1 + big);
		else
			tol = 2 * ulp(b->et, big) + rt;
		c.over += !(d <= tol);
	}
	c.bad = c.over > 0 || (b->et != E_F32 && b->et != E_U16 &&
		(double)c.ulp1 < 0.99 * (double)b->n);
	return c;
}

static const char *
pct(size_t k, size_t n)
{
	static char s[4][16];
	static int i;

	i = (i + 1) % 4;
	if (k == n)
		snprintf(s[i], sizeof s[i], "100%%");
	else
		snprintf(s[i], sizeof s[i], "%.2f%%", 100.0 * (double)k /
			(double)(n ? n : 1));
	return s[i];
}

/* The calibration columns of a row: "-" without the GPU. */
static bool
cal_cols(const Buf *b, char *out, size_t len)
{
	char same[32], mu[24] = "NaN";
	Cal k;

	if (sim_only) {
		snprintf(out, len, "%14s %8s %8s %8s %10s %9s", "-", "-", "-",
			"-", "-", "-");
		return false;
	}
	k = check_cal(b);
	snprintf(same, sizeof same, "%zu/%zu", k.same, b->n);
	if (k.maxulp != UINT64_MAX)
		snprintf(mu, sizeof mu, "%llu", (unsigned long long)k.maxulp);
	snprintf(out, len, "%14s %8s %8s %8s %10.2e %9.2e", same,
		pct(k.ulp1, b->n), pct(k.ulp2, b->n), mu, k.maxabs, k.maxrel);
	return k.bad;
}

/* One row per output; returns nonzero on a failure. */
static int
report(const Case *c, const Run *r)
{
	int bad = 0;
	bool first = true;

	for (int i = 0; i < r->nb; i++) {
		const Buf *b = &r->b[i];
		char ef[2][24] = {"-", "-"}, rel[2][24] = {"", ""}, rr[48];
		char cal[120], sim[32] = "";
		const char *why = "ok";
		if (!b->out)
			continue;
		for (int k = 0; k < (sim_only ? 1 : 2) && b->ref; k++) {
			F64 e = check_f64(b, b->res[k]);
			snprintf(ef[k], sizeof ef[k], "%.2e", e.maxabs);
			if (!b->tol)
				snprintf(rel[k], sizeof rel[k], "%.2e", e.rel);
			if (e.bad) {
				why = k ? "FAIL(GPU-f64)" : "FAIL(sim-f64)";
				bad = 1;
			}
		}
		snprintf(rr, sizeof rr, "%s%s%s", *rel[0] ? rel[0] : "-",
			*rel[1] ? "/" : "", rel[1]);
		if (cal_cols(b, cal, sizeof cal)) {
			why = strcmp(why, "ok") ? why : "FAIL(calib)";
			bad = 1;
		}
		if (first)
			snprintf(sim, sizeof sim, "%.2f/%.2f", r->sim_s,
				(double)r->steps / 1e6);
		printf("%-24s %-5s %s %9s %9s %17s %10s  %s\n", first ?
			c->name : "", b->name, cal, ef[0], ef[1], rr, sim, why);
		first = false;
	}
	return bad;
}

static void
run_free(Run *r)
{
	for (int i = 0; i < r->nb; i++) {
		Buf *b = &r->b[i];
		free(b->data), free(b->ref), free(b->tol);
		free(b->res[0]), free(b->res[1]);
	}
}

static int
run_case(const Case *c)
{
	static void (*const setup[])(const Case *, Run *) = {
		[K_COPY] = setup_copy, [K_GEMM] = setup_gemm,
		[K_FA] = setup_fa, [K_BWD] = setup_bwd,
		[K_RMSNORM] = setup_rmsnorm, [K_SOFTMAX] = setup_softmax,
		[K_SOFTMAX_BWD] = setup_softmax,
	};
	Run *r = calloc(1, sizeof *r);
	int bad;

	setup[c->kind](c, r);
	if (run_sim(r)) {
		printf("%-24s FAIL(simulator)\n", c->name);
		run_free(r);
		free(r);
		return 1;
	}
	if (!sim_only)
		run_gpu(r);
	bad = report(c, r);
	run_free(r);
	free(r);
	return bad;
}

int
main(int argc, char **argv)
{
	static const Case cases[] = {
		{"copy_300x72", "copy_ws_sm90.ptx", K_COPY, false, false,
			{300, 72}},
		{"gemm_bf16_129x136x200", "gemm_ws_sm90_bf16.ptx", K_GEMM,
			false, false, {129, 136, 200}},
		{"gemm_f16_129x136x200", "gemm_ws_sm90_f16.ptx", K_GEMM,
			true, false, {129, 136, 200}},
		{"fa_d64_bf16", "fa_sm90_d64_bf16.ptx", K_FA, false, false,
			{2, 2, 130, 333, 64}},
		{"fa_d128_f16_causal", "fa_sm90_d128_f16_causal.ptx", K_FA,
			true, true, {1, 2, 130, 333, 128}},
		{"fa_d256_bf16", "fa_sm90_d256_bf16.ptx", K_FA, false, false,
			{1, 1, 333, 130, 256}},
		{"fa_base_d128_bf16_causal",
			"fa_base_sm90_d128_bf16_causal.ptx", K_FA, false, true,
			{1, 2, 333, 130, 128}},
		{"rmsnorm_bf16_7x4000", "rmsnorm_sm90_bf16.ptx", K_RMSNORM,
			false, false, {7, 4000}},
		{"softmax_bf16_5x4000", "softmax_sm90_bf16.ptx", K_SOFTMAX,
			false, false, {5, 4000}},
		{"softmax_bwd_bf16_3x4000", "softmax_sm90_bf16_bwd.ptx",
			K_SOFTMAX_BWD, false, false, {3, 4000}},
		{"bwd_d64_bf16", "fa_bwd_sm90_d64_bf16.ptx", K_BWD, false,
			false, {1, 2, 130, 200, 64}},
		{"bwd_d128_bf16_causal", "fa_bwd_sm90_d128_bf16_causal.ptx",
			K_BWD, false, true, {1, 2, 130, 333, 128}},
	};
	const char *pick[16];
	int npick = 0, bad = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--sim-only"))
			sim_only = true;
		else if (npick < (int)COUNT(pick))
			pick[npick++] = argv[i];
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	if (!sim_only) {
		fg_options opts = {.cache_dir = ""};
		gpu_open();
		FG(ctx, fg_ctx_create(&ctx, &opts));
		CK(cu.StreamCreate(&stream, CU_STREAM_NON_BLOCKING));
	}
	printf("%-24s %-5s %14s %8s %8s %8s %10s %9s %9s %9s %17s %10s  %s\n",
		"case", "out", "sim=GPU", "<=1ulp", "<=2ulp", "maxulp",
		"max|diff|", "max rel", "sim-f64", "GPU-f64", "rel RMS sim/GPU",
		"sim s/Mi", "result");
	for (size_t i = 0; i < COUNT(cases); i++) {
		bool run = npick == 0;
		for (int j = 0; j < npick; j++)
			run |= strstr(cases[i].name, pick[j]) != NULL;
		if (run)
			bad |= run_case(&cases[i]);
	}
	if (!sim_only) {
		CK(cu.StreamDestroy(stream));
		fg_ctx_destroy(ctx);
	}
	printf("%s\n", bad ? "FAIL" : "ok");
	return bad ? 1 : 0;
}
