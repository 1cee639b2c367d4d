/* sim_kernel.c: shipped kernels run in the simulator against the expected
 * result (issue #18; meson tests golden.sim.*).
 *
 *   sim_kernel copy PTX M N [eager] [ctas=N]   Y == X, bit for bit
 *   sim_kernel gemm PTX M N K [eager] [ctas=N] [scale=A] [bias] [gelu|silu]
 *                  [resid]                    C = A B^T (and the fused
 *                                             epilogue) against float64
 *   sim_kernel fa PTX Z H SQ SK D causal|full [eager] [g=G] [window=L,R]
 *                  [cap=C] [alibi] [sinks] [varlen=Q1,..:K1,..]
 *                  [bcast=B,H]                softmax(QK^T s) V, LSE
 *                                             (varlen: Z, SQ and SK are
 *                                             the lists' count and sums;
 *                                             a SCORE_MOD or BLOCKS
 *                                             variant, as its metadata
 *                                             says: sm_scale, and the
 *                                             block mask of bclass;
 *                                             bcast: the mask's B, H)
 *   sim_kernel bwd PTX Z H G SQ SK D causal|full [eager] [window=L,R] [dv=DV]
 *                  [cap=C] [alibi] [varlen=Q1,Q2,..:K1,K2,..] [scoremod]
 *                  (varlen: Z, SQ and SK are the lists' count and sums;
 *                  scoremod: a SCORE_MOD variant; BLOCKS from QLST)
 *                                             dQ, dK, dV against float64:
 *                                             PTX the main loop, with the
 *                                             pre and post kernels of the
 *                                             same D and type beside it
 *   sim_kernel dsmem PTX M                    tests/golden/ptx/dsmem.fa: a
 *                                             cluster's two CTAs write
 *                                             into each other's shared
 *                                             memory (M: 2 x its rows)
 *   sim_kernel gather PTX SQ L                tests/golden/ptx/gather.fa:
 *                                             gathers from T (i32) and B
 *                                             (bf16), some indices out of
 *                                             bounds, against C
 *   sim_kernel colvec PTX SQ N                tests/golden/ptx/colvec.fa:
 *                                             a column vector of an
 *                                             accumulator, loaded with a
 *                                             width and broadcast
 *   sim_kernel dscatter PTX SQ L              tests/golden/ptx/dscatter.fa:
 *                                             a mod's value and its
 *                                             gradients along gathers
 *   sim_kernel scatter PTX SQ L               tests/golden/ptx/scatter.fa:
 *                                             scatters into Y (f32), Z
 *                                             (bf16), A (reduce=add) and
 *                                             R (a row vector), against C
 *   sim_kernel affine PTX SQ P                tests/golden/ptx/affine_cvt.fa
 *                                             (and _sm100): cvt of an
 *                                             affine i32 tile, rounded
 *                                             as cvt.rn, bit for bit
 *
 *   sim_kernel rmsnorm|rmsnorm_bwd|layernorm|xent|softmax PTX M NC ..
 *                                             the row kernels of 16-bit
 *                                             and f32 rows: sim_rows.c
 *   sim_kernel decode PTX Z H G SQ D [...]    the decode kernels,
 *   sim_kernel combine PTX Z H SQ PK NS       fa_combine.fa and
 *   sim_kernel append PTX Z HK SN D [...]     kv_append.fa: sim_decode.c
 *
 * PTX is a file of tests/shipped (fagen's output for a shipped schedule,
 * kept byte-identical by golden.shipped.*).  Outputs are poisoned with
 * NaN bytes first, so an element nothing writes fails; inputs are
 * pseudo-random (gpu_ref.h's generator).  Prints one line; exit 0 on a
 * match, 1 on a mismatch or a simulator error (printed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_kernel.h"
#include "../gpu/gpu_ref.h"
#include "../gpu/gpu_ref_bwd.h"

Sim *sim;
SimMod *mod;
bool eager;
long ctas = 3;

SimMod *
load_mod(const char *path)
{
	FILE *f = fopen(path, "rb");
	static char buf[4 << 20];
	char err[512];
	size_t n;
	SimMod *m;

	if (!f) {
		fprintf(stderr, "cannot open %s\n", path);
		exit(1);
	}
	n = fread(buf, 1, sizeof buf, f);
	fclose(f);
	m = sim_load(buf, n, err, sizeof err);
	if (!m) {
		fprintf(stderr, "%s: %s\n", path, err);
		exit(1);
	}
	return m;
}

static void
load(const char *path)
{
	mod = load_mod(path);
	sim = sim_new();
	sim_set(sim, SIM_OPT_EAGER, eager);
	sim_set(sim, SIM_OPT_MAX_CTAS, ctas);
}

uint64_t
buffer(size_t bytes, int fill, void **host)
{
	uint64_t a = sim_alloc(sim, bytes);

	*host = sim_host(sim, a, bytes);
	memset(*host, fill, bytes);
	return a;
}

static void
launch_mod(const SimMod *m, const SimVal *v, int n)
{
	if (sim_launch(sim, m, v, n)) {
		printf("simulator: %s\n", sim_error(sim));
		exit(1);
	}
}

void
launch(const SimVal *v, int n)
{
	launch_mod(mod, v, n);
}

static int
copy(long m, long n)
{
	size_t bytes = (size_t)(m * n) * 2;
	uint16_t *x, *y;
	SimVal v[4] = {{.i = m}, {.i = n}};

	v[2].ptr = buffer(bytes, 0, (void **)&x);
	v[3].ptr = buffer(bytes, 0xff, (void **)&y);
	for (size_t i = 0; i < bytes / 2; i++)
		x[i] = (uint16_t)(i * 7919 + 13);
	launch(v, 4);
	size_t bad = 0;
	for (size_t i = 0; i < bytes / 2; i++)
		bad += x[i] != y[i];
	printf("copy M=%ld N=%ld%s: %zu of %zu elements differ -> %s\n", m, n,
		eager ? " eager" : "", bad, bytes / 2, bad ? "FAIL" : "ok");
	return bad != 0;
}

/* The fused epilogue of gemm_ws_sm90.fa and gemm_ws_sm100.fa. */
typedef struct Epi {
	bool scale, bias, resid;
	int act;          /* 0 none, 1 GELU (tanh form), 2 SiLU */
	double alpha;
} Epi;

static int
gemm(long m, long n, long k, bool f16, const Epi *ep)
{
	uint16_t *a, *b, *c, *bv = NULL, *r = NULL;
	SimVal v[9] = {{.i = m}, {.i = n}, {.i = k}};
	double worst = 0;
	long bad = 0;
	int nv = 3;

	if (ep->scale)
		v[nv++].f = ep->alpha;
	v[nv++].ptr = buffer((size_t)(m * k) * 2, 0, (void **)&a);
	v[nv++].ptr = buffer((size_t)(n * k) * 2, 0, (void **)&b);
	v[nv++].ptr = buffer((size_t)(m * n) * 2, 0xff, (void **)&c);
	if (ep->bias)
		v[nv++].ptr = buffer((size_t)n * 2, 0, (void **)&bv);
	if (ep->resid)
		v[nv++].ptr = buffer((size_t)(m * n) * 2, 0, (void **)&r);
	for (long i = 0; i < m * k; i++)
		a[i] = to16(urand(), f16);
	for (long i = 0; i < n * k; i++)
		b[i] = to16(urand(), f16);
	for (long i = 0; bv && i < n; i++)
		bv[i] = to16(urand(), f16);
	for (long i = 0; r && i < m * n; i++)
		r[i] = to16(urand(), f16);
	launch(v, nv);
	for (long i = 0; i < m; i++)
		for (long j = 0; j < n; j++) {
			double ref = 0, got = from16(c[i * n + j], f16), mag = 0;
			for (long t = 0; t < k; t++) {
				double p = from16(a[i * k + t], f16) *
					from16(b[j * k + t], f16);
				ref += p;
				mag += fabs(p);
			}
			if (ep->scale) {
				ref *= ep->alpha;
				mag *= fabs(ep->alpha);
			}
			if (bv) {
				ref += from16(bv[j], f16);
				mag += fabs(from16(bv[j], f16));
			}
			if (ep->act == 1)
				ref = 0.5 * ref * (1 + tanh(0.7978845608028654 *
					(ref + 0.044715 * ref * ref * ref)));
			if (ep->act == 2)
				ref = ref / (1 + exp(-ref));
			if (r) {
				ref += from16(r[i * n + j], f16);
				mag += fabs(from16(r[i * n + j], f16));
			}
			/* one rounding to 16 bits, f32 accumulation, and the
			 * MUFU's tanh and exp2 (2^-10 of the sum's size) */
			double tol = fabs(ref) * (f16 ? 0x1p-10 : 0x1p-7) +
				(mag + 1) * (ep->act ? 0x1p-10 : 0x1p-20);
			double e = fabs(got - ref);
			worst = e > worst ? e : worst;
			bad += !(e <= tol);
		}
	printf("gemm M=%ld N=%ld K=%ld %s%s%s%s%s%s: max abs err %.2e, %ld of "
		"%ld over tolerance -> %s\n", m, n, k, f16 ? "f16" : "bf16",
		ep->scale ? " scale" : "", ep->bias ? " bias" : "", ep->act ==
		1 ? " gelu" : ep->act == 2 ? " silu" : "", ep->resid ? " resid" :
		"", eager ? " eager" : "", worst, bad, m * n, bad ? "FAIL" :
		"ok");
	return bad != 0;
}

/* tests/golden/ptx/gather.fa (issue #22): Y[r, c] of tile x (rows
 * 64x..) is T[x - 1, r] * 1000 + T[1, c + 64x - 40] + B[r - c], each 0
 * where an index is outside its dimension; exact, as the kernel adds. */
/* tests/golden/ptx/scatter.fa: with r = 64x + row (every row of every
 * tile, past SQ too) and x = 100r + c, Y[r, 15 - c] = x for r < SQ;
 * Z[r / 2, r % 2] = bf16(100r) (column 0) for r / 2 < L; A[2c - 4] is
 * the sum of x over every r, for 2 <= c, 2c - 4 < L (the rest stays 0);
 * R[r % 2, r / 2] = 100r + 15 for r / 2 < L.  Exact: the sums are whole
 * numbers below 2^24.  Y and Z poisoned, A zero, R poisoned; elements
 * no scatter names must keep their poison. */
static int
scatter(int sq, int l)
{
	float *y, *a, *rr;
	uint16_t *z;
	SimVal v[6] = {{.i = sq}, {.i = l}};
	long bad = 0, rows = (sq + 63) / 64 * 64;

	v[2].ptr = buffer((size_t)sq * 16 * 4, 0xff, (void **)&y);
	v[3].ptr = buffer((size_t)l * 2 * 2, 0xff, (void **)&z);
	v[4].ptr = buffer((size_t)l * 4, 0, (void **)&a);
	v[5].ptr = buffer((size_t)l * 2 * 4, 0xff, (void **)&rr);
	launch(v, 6);
	for (int r = 0; r < sq; r++)
		for (int c = 0; c < 16; c++) {
			float want = (float)(100 * r + 15 - c);
			bad += memcmp(&want, &y[r * 16 + c], 4) != 0;
		}
	for (int i = 0; i < 2 * l; i++) {
		uint16_t want = i < rows ? to16(100.0f * (float)i, false) :
			0xffff;
		bad += z[i] != want;
	}
	for (int i = 0; i < l; i++) {
		int c = (i + 4) / 2;
		double sum = 0;
		if (i % 2 == 0 && c < 16)
			for (long r = 0; r < rows; r++)
				sum += 100.0 * (double)r + c;
		bad += a[i] != (float)sum;
	}
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < l; i++) {
			long r = 2L * i + k;
			uint32_t got, want = 0xffffffffu;
			float w = (float)(100 * r + 15);
			if (r < rows)
				memcpy(&want, &w, 4);
			memcpy(&got, &rr[k * l + i], 4);
			bad += got != want;
		}
	printf("scatter SQ=%d L=%d: %ld elements differ -> %s\n", sq, l, bad,
		bad ? "FAIL" : "ok");
	return bad != 0;
}

/* tests/golden/ptx/dscatter.fa: with r = 64x + row (every row of every
 * tile), c the column and x = (100r + c) / 1000 (f32), Y[r, c] = 2x +
 * B[1, r - c] x + B[0, c] for r < SQ (a gather out of bounds reads 0);
 * DB[1, k] is the sum of (x + 1) x over r - c = k, DB[0, c] of (x + 1)
 * over r, for k, c < L (float64 sums; the kernel adds atomically in f32,
 * in any order: within 1e-5 relative). */
static int
dscatter(int sq, int l)
{
	float *db, *b, *y;
	SimVal v[5] = {{.i = sq}, {.i = l}};
	long bad = 0, rows = (sq + 63) / 64 * 64;
	double *want = calloc((size_t)l * 2, sizeof(double));

	v[2].ptr = buffer((size_t)l * 2 * 4, 0, (void **)&db);
	v[3].ptr = buffer((size_t)l * 2 * 4, 0, (void **)&b);
	v[4].ptr = buffer((size_t)sq * 16 * 4, 0xff, (void **)&y);
	for (int i = 0; i < 2 * l; i++)
		b[i] = (float)urand();
	launch(v, 5);
	for (long r = 0; r < rows; r++)
		for (int c = 0; c < 16; c++) {
			float x = (float)(100 * r + c) * 0.001f;
			long k = r - c;
			float b1 = k >= 0 && k < l ? b[l + k] : 0.0f;
			float b0 = c < l ? b[c] : 0.0f;
			if (r < sq) {
				float w = x * 2.0f + b1 * x + b0;
				bad += fabsf(y[r * 16 + c] - w) > 1e-5f * (1 + fabsf(w));
			}
			if (k >= 0 && k < l)
				want[l + k] += ((double)x + 1) * x;
			if (c < l)
				want[c] += (double)x + 1;
		}
	for (int i = 0; i < 2 * l; i++)
		bad += fabs(db[i] - want[i]) > 1e-5 * (1 + fabs(want[i]));
	free(want);
	printf("dscatter SQ=%d L=%d: %ld values differ -> %s\n", sq, l, bad,
		bad ? "FAIL" : "ok");
	return bad != 0;
}

/* tests/golden/ptx/dsmem.fa (issue #27): each CTA of a cluster of two
 * wrote its rank + 1 into the other's buffer; Y's rows of CTA r (R of
 * them, from the metadata's global) hold r ^ 1 + 1. */
static int
dsmem(int m)
{
	float *y;
	SimVal v[2] = {{.i = m}};
	int rows = m / 2, bad = 0;

	v[1].ptr = buffer((size_t)m * 32 * 4, 0xff, (void **)&y);
	launch(v, 2);
	for (int i = 0; i < m * 32; i++)
		bad += y[i] != (float)((i / 32 / rows) ^ 1) + 1;
	printf("dsmem M=%d: %d of %d values differ -> %s\n", m, bad, m * 32,
		bad ? "FAIL" : "ok");
	return bad != 0;
}

/* tests/golden/ptx/affine_cvt.fa (issue #22): Y[r, c] = f32(r + P - 3c)
 * and W[r, c] = |Y[r, c]|, rounded once from the exact integer (double
 * holds it exactly), for r < SQ; both poisoned first. */
static int
affine(int sq, int p)
{
	float *y, *w;
	SimVal v[4] = {{.i = sq}, {.i = p}};
	long bad = 0;

	v[2].ptr = buffer((size_t)sq * 16 * 4, 0xff, (void **)&y);
	v[3].ptr = buffer((size_t)sq * 16 * 4, 0xff, (void **)&w);
	launch(v, 4);
	for (int r = 0; r < sq; r++)
		for (int c = 0; c < 16; c++) {
			float want = (float)((double)r + p - 3.0 * c);
			float wabs = fabsf(want);
			bad += memcmp(&want, &y[r * 16 + c], 4) != 0;
			bad += memcmp(&wabs, &w[r * 16 + c], 4) != 0;
		}
	printf("affine SQ=%d P=%d: %ld of %d values differ -> %s\n", sq, p,
		bad, sq * 32, bad ? "FAIL" : "ok");
	return bad != 0;
}

static int
gather(int sq, int l)
{
	int32_t *t;
	uint16_t *b;
	float *y;
	SimVal v[5] = {{.i = sq}, {.i = l}};
	long bad = 0;

	v[2].ptr = buffer((size_t)l * 8, 0, (void **)&t);
	v[3].ptr = buffer((size_t)l * 2, 0, (void **)&b);
	v[4].ptr = buffer((size_t)sq * 16 * 4, 0xff, (void **)&y);
	for (int i = 0; i < 2 * l; i++)
		t[i] = (i * 7919 + 13) % 1000;
	for (int i = 0; i < l; i++)
		b[i] = to16(urand(), false);
	launch(v, 5);
	for (int r = 0; r < sq; r++)
		for (int c = 0; c < 16; c++) {
			int x = r / 64, kc = c + 64 * x - 40, rc = r - c;
			int doc = x - 1 >= 0 && x - 1 < 2 && r < l ?
				t[(x - 1) * l + r] : 0;
			int key = kc >= 0 && kc < l ? t[l + kc] : 0;
			float rel = rc >= 0 && rc < l ? (float)from16(b[rc],
				false) : 0.0f;
			float want = (float)(doc * 1000 + key) + rel;
			float got = y[r * 16 + c];
			bad += memcmp(&want, &got, 4) != 0;
		}
	printf("gather SQ=%d L=%d: %ld of %d elements differ -> %s\n", sq, l,
		bad, sq * 16, bad ? "FAIL" : "ok");
	return bad != 0;
}

/* tests/golden/ptx/colvec.fa (issue #13): with l_c = L[30x + c] for
 * c < N - 30x (else 0) in tile x (rows 64x..), m_c = max(2 l_c, -3),
 * Y[r, c] = 3 X[r, c] - m_c and Z[r, c] = m_c + max_k X[r, k] for
 * r < SQ, and W = X through shared memory.  Whole
 * numbers: exact whatever the kernel fuses.  Y, Z poisoned. */
static int
colvec(int sq, int nl)
{
	float *x, *l, *y, *z, *w;
	SimVal v[7] = {{.i = sq}, {.i = nl}};
	long bad = 0;

	v[2].ptr = buffer((size_t)sq * 64 * 4, 0, (void **)&x);
	v[3].ptr = buffer((size_t)nl * 4, 0, (void **)&l);
	v[4].ptr = buffer((size_t)sq * 64 * 4, 0xff, (void **)&y);
	v[5].ptr = buffer((size_t)sq * 64 * 4, 0xff, (void **)&z);
	v[6].ptr = buffer((size_t)sq * 64 * 4, 0xff, (void **)&w);
	for (int i = 0; i < sq * 64; i++)
		x[i] = (float)(i * 7 % 13 - 6);
	for (int i = 0; i < nl; i++)
		l[i] = (float)(i * 5 % 11 - 5);
	launch(v, 7);
	for (int r = 0; r < sq; r++)
		for (int c = 0; c < 64; c++) {
			int t = r / 64;
			float lc = c < nl - 30 * t ? l[30 * t + c] : 0.0f;
			float m = 2.0f * lc > -3.0f ? 2.0f * lc : -3.0f;
			float wy = 3.0f * x[r * 64 + c] - m, mx = x[r * 64];
			for (int k = 1; k < 64; k++)
				mx = x[r * 64 + k] > mx ? x[r * 64 + k] : mx;
			float wz = m + mx;
			bad += memcmp(&wy, &y[r * 64 + c], 4) != 0;
			bad += memcmp(&wz, &z[r * 64 + c], 4) != 0;
			bad += memcmp(&x[r * 64 + c], &w[r * 64 + c], 4) != 0;
		}
	printf("colvec SQ=%d N=%d: %ld of %d elements differ -> %s\n", sq, nl,
		bad, 3 * sq * 64, bad ? "FAIL" : "ok");
	return bad != 0;
}

void
launch_named(const SimMod *m, const Named *nv, int n)
{
	const SimMeta *mt = sim_meta(m);
	SimVal v[SIM_MAXARGS];
	int nu = 0;

	for (int i = 0; i < mt->nargs; i++) {
		const SimArg *g = &mt->args[i];
		int j = 0;
		if (g->user < 0)
			continue;
		while (j < n && strcmp(nv[j].name, g->name))
			j++;
		if (j == n) {
			printf("sim_kernel: no value for the kernel's '%s'\n",
				g->name);
			exit(1);
		}
		v[g->user] = nv[j].v;
		nu++;
	}
	launch_mod(m, v, nu);
}

int
main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "eager"))
			eager = true;
		else if (!strncmp(argv[i], "ctas=", 5))
			ctas = atol(argv[i] + 5);
	}
	if (argc < 5) {
		fprintf(stderr, "usage: see sim_kernel.c\n");
		return 2;
	}
	load(argv[2]);
	bool f16 = !strstr(argv[2], "bf16");   /* the shipped names say */
	int rc = 2;
	if (!strcmp(argv[1], "copy"))
		rc = copy(atol(argv[3]), atol(argv[4]));
	else if (!strcmp(argv[1], "gemm") && argc > 5) {
		Epi ep = {.alpha = 1};
		for (int a = 6; a < argc; a++) {
			ep.bias |= !strcmp(argv[a], "bias");
			ep.resid |= !strcmp(argv[a], "resid");
			if (!strncmp(argv[a], "scale=", 6)) {
				ep.scale = true;
				ep.alpha = atof(argv[a] + 6);
			}
			if (!strcmp(argv[a], "gelu"))
				ep.act = 1;
			if (!strcmp(argv[a], "silu"))
				ep.act = 2;
		}
		rc = gemm(atol(argv[3]), atol(argv[4]), atol(argv[5]), f16, &ep);
	}
	else if (!strcmp(argv[1], "colvec"))
		rc = colvec(atoi(argv[3]), atoi(argv[4]));
	else if (!strcmp(argv[1], "gather"))
		rc = gather(atoi(argv[3]), atoi(argv[4]));
	else if (!strcmp(argv[1], "dsmem"))
		rc = dsmem(atoi(argv[3]));
	else if (!strcmp(argv[1], "scatter"))
		rc = scatter(atoi(argv[3]), atoi(argv[4]));
	else if (!strcmp(argv[1], "affine"))
		rc = affine(atoi(argv[3]), atoi(argv[4]));
	else if (!strcmp(argv[1], "dscatter"))
		rc = dscatter(atoi(argv[3]), atoi(argv[4]));
	else if (!strcmp(argv[1], "decode"))
		rc = decode(argc, argv);
	else if (!strcmp(argv[1], "append"))
		rc = kv_append(argc, argv);
	else if (!strcmp(argv[1], "combine"))
		rc = combine_only(argc, argv);
	else if ((rc = attn_modes(argc, argv)) == 2)  /* 2: no such mode */
		rc = row_modes(argc, argv);
	SimStats st = sim_stats(sim);
	fprintf(stderr, "%llu CTAs, %llu warp instructions\n",
		(unsigned long long)st.ctas, (unsigned long long)st.warp_steps);
	sim_mod_free(mod);
	sim_free(sim);
	return rc;
}
