/* sim_kernel.c: shipped kernels run in the simulator against the expected
 * result (issue #18; meson tests golden.sim.*).
 *
 *   sim_kernel copy PTX M N [eager] [ctas=N]   Y == X, bit for bit
 *   sim_kernel gemm PTX M N K [eager] [ctas=N] C = A B^T against float64
 *   sim_kernel fa PTX Z H SQ SK D causal|full [eager]
 *                                             softmax(QK^T s) V, LSE
 *
 * PTX is a file of tests/shipped (fagen's output for a shipped schedule,
 * kept byte-identical by golden.shipped.*).  Outputs are poisoned with
 * NaN bytes first, so an element nothing writes fails; inputs are
 * pseudo-random (gpu_ref.h's generator).  Prints one line; exit 0 on a
 * match, 1 on a mismatch or a simulator error (printed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "../gpu/gpu_ref.h"

static Sim *sim;
static SimMod *mod;
static bool eager;
static long ctas = 3;

static void
load(const char *path)
{
	FILE *f = fopen(path, "rb");
	static char buf[4 << 20];
	char err[512];
	size_t n;

	if (!f) {
		fprintf(stderr, "cannot open %s\n", path);
		exit(1);
	}
	n = fread(buf, 1, sizeof buf, f);
	fclose(f);
	mod = sim_load(buf, n, err, sizeof err);
	if (!mod) {
		fprintf(stderr, "%s: %s\n", path, err);
		exit(1);
	}
	sim = sim_new();
	sim_set(sim, SIM_OPT_EAGER, eager);
	sim_set(sim, SIM_OPT_MAX_CTAS, ctas);
}

static uint64_t
buffer(size_t bytes, int fill, void **host)
{
	uint64_t a = sim_alloc(sim, bytes);

	*host = sim_host(sim, a, bytes);
	memset(*host, fill, bytes);
	return a;
}

static void
launch(const SimVal *v, int n)
{
	if (sim_launch(sim, mod, v, n)) {
		printf("simulator: %s\n", sim_error(sim));
		exit(1);
	}
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

static int
gemm(long m, long n, long k, bool f16)
{
	uint16_t *a, *b, *c;
	SimVal v[6] = {{.i = m}, {.i = n}, {.i = k}};
	double worst = 0;
	long bad = 0;

	v[3].ptr = buffer((size_t)(m * k) * 2, 0, (void **)&a);
	v[4].ptr = buffer((size_t)(n * k) * 2, 0, (void **)&b);
	v[5].ptr = buffer((size_t)(m * n) * 2, 0xff, (void **)&c);
	for (long i = 0; i < m * k; i++)
		a[i] = to16(urand(), f16);
	for (long i = 0; i < n * k; i++)
		b[i] = to16(urand(), f16);
	launch(v, 6);
	for (long i = 0; i < m; i++)
		for (long j = 0; j < n; j++) {
			double ref = 0, got = from16(c[i * n + j], f16);
			for (long t = 0; t < k; t++)
				ref += from16(a[i * k + t], f16) *
					from16(b[j * k + t], f16);
			/* one rounding to 16 bits, plus f32 accumulation */
			double tol = fabs(ref) * (f16 ? 0x1p-10 : 0x1p-7) + 1e-5;
			double e = fabs(got - ref);
			worst = e > worst ? e : worst;
			bad += !(e <= tol);
		}
	printf("gemm M=%ld N=%ld K=%ld %s%s: max abs err %.2e, %ld of %ld "
		"over tolerance -> %s\n", m, n, k, f16 ? "f16" : "bf16",
		eager ? " eager" : "", worst, bad, m * n, bad ? "FAIL" : "ok");
	return bad != 0;
}

static int
fa(int z, int h, int sq, int sk, int d, bool causal, bool f16)
{
	size_t nq = (size_t)z * sq * h * d, nk = (size_t)z * sk * h * d;
	size_t nl = (size_t)z * h * sq;
	uint16_t *q, *k, *v, *o;
	float *lse;
	RefProb p = {z, h, sq, sk, d, causal, f16, {
		{(int64_t)sq * h * d, d, (int64_t)h * d, 1},
		{(int64_t)sk * h * d, d, (int64_t)h * d, 1},
		{(int64_t)sk * h * d, d, (int64_t)h * d, 1},
		{(int64_t)sq * h * d, d, (int64_t)h * d, 1},
	}, 1, false, -1, -1, 0, NULL};
	SimVal a[11] = {{.i = z}, {.i = h}, {.i = 1}, {.i = sq}, {.i = sk},
		{.f = 1.4426950408889634 / sqrt((double)d)}};

	a[6].ptr = buffer(nq * 2, 0, (void **)&q);
	a[7].ptr = buffer(nk * 2, 0, (void **)&k);
	a[8].ptr = buffer(nk * 2, 0, (void **)&v);
	a[9].ptr = buffer(nq * 2, 0xff, (void **)&o);
	a[10].ptr = buffer(nl * 4, 0xff, (void **)&lse);
	for (size_t i = 0; i < nq; i++)
		q[i] = to16(2 * urand(), f16);
	for (size_t i = 0; i < nk; i++) {
		k[i] = to16(2 * urand(), f16);
		v[i] = to16(urand(), f16);
	}
	launch(a, 11);
	int nan = 0;
	for (size_t i = 0; i < nq; i++)
		nan |= from16(o[i], f16) != from16(o[i], f16);
	RefErr e = ref_compare(&p, q, k, v, o, lse);
	printf("fa Z=%d H=%d SQ=%d SK=%d D=%d %s %s%s: rel err %.2e, LSE err "
		"%.1e over %ld rows%s -> %s\n", z, h, sq, sk, d, causal ?
		"causal" : "full", f16 ? "f16" : "bf16", eager ? " eager" : "",
		e.rel, e.lerr, e.rows, nan ? ", NaN in O" : "",
		e.bad || nan ? "FAIL" : "ok");
	return e.bad || nan;
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
	else if (!strcmp(argv[1], "gemm") && argc > 5)
		rc = gemm(atol(argv[3]), atol(argv[4]), atol(argv[5]), f16);
	else if (!strcmp(argv[1], "fa") && argc > 8)
		rc = fa(atoi(argv[3]), atoi(argv[4]), atoi(argv[5]),
			atoi(argv[6]), atoi(argv[7]), !strcmp(argv[8], "causal"),
			f16);
	SimStats st = sim_stats(sim);
	fprintf(stderr, "%llu CTAs, %llu warp instructions\n",
		(unsigned long long)st.ctas, (unsigned long long)st.warp_steps);
	sim_mod_free(mod);
	sim_free(sim);
	return rc;
}
