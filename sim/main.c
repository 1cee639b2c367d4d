/* main.c: fagen-sim, the simulator's command line (issue #18).
 *
 *   fagen-sim KERNEL.ptx [NAME=VALUE ...] [--eager] [--ctas N] [--seed S]
 *
 * Runs one launch of the kernel on the CPU with every param given by name
 * and every global filled with pseudo-random values of its type in
 * [-1, 1) (integers: 0..7), and prints what it ran, or the error or hang
 * report.  Exit status: 0 ran, 1 the kernel failed (fault, hang, an
 * instruction not modelled), 2 usage or I/O. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "simi.h"

static char *
slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0;

	*n = 0;
	if (!f)
		return NULL;
	for (;;) {
		if (*n == cap) {
			char *p = realloc(buf, cap = cap ? 2 * cap : 65536);
			if (!p)
				break;
			buf = p;
		}
		size_t k = fread(buf + *n, 1, cap - *n, f);
		if (k == 0)
			break;
		*n += k;
	}
	fclose(f);
	return buf;
}

static uint32_t
rnd(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(*s >> 33);
}

static void
fill(uint8_t *p, size_t bytes, int ty, uint64_t *seed)
{
	int e = ty_bits(ty) / 8;

	for (size_t i = 0; i + (size_t)e <= bytes; i += (size_t)e) {
		float f = (float)(rnd(seed) % 2048) / 1024.0f - 1.0f;
		uint32_t v = ty == TY_F32 ? bits_of(f) : ty == TY_BF16 ?
			bf16_rn(f) : ty == TY_F16 ? f16_rn(f) : rnd(seed) % 8;
		memcpy(p + i, &v, (size_t)e);
	}
}

static int
usage(void)
{
	fprintf(stderr, "usage: fagen-sim KERNEL.ptx [NAME=VALUE ...] "
		"[--eager] [--ctas N] [--seed S]\n");
	return 2;
}

int
main(int argc, char **argv)
{
	const char *path = NULL;
	char err[512];
	uint64_t seed = 1;
	int64_t pv[SIM_MAXARGS] = {0};
	SimVal v[SIM_MAXARGS] = {{0}};
	size_t n;
	Sim *s = sim_new();

	if (!s)
		return 2;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--eager"))
			sim_set(s, SIM_OPT_EAGER, 1);
		else if (!strcmp(argv[i], "--ctas") && i + 1 < argc)
			sim_set(s, SIM_OPT_MAX_CTAS, atoll(argv[++i]));
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 10);
		else if (!path && !strchr(argv[i], '='))
			path = argv[i];
		else if (!strchr(argv[i], '='))
			return usage();
	}
	if (!path)
		return usage();
	char *text = slurp(path, &n);
	if (!text) {
		fprintf(stderr, "fagen-sim: cannot read '%s'\n", path);
		return 2;
	}
	SimMod *m = sim_load(text, n, err, sizeof err);
	free(text);
	if (!m) {
		fprintf(stderr, "fagen-sim: %s: %s\n", path, err);
		return 1;
	}
	const SimMeta *mt = sim_meta(m);
	for (int i = 0; i < mt->nargs; i++) {
		const SimArg *a = &mt->args[i];
		size_t len = strlen(a->name);
		bool given = false;
		for (int j = 1; j < argc && a->kind == SIM_ARG_PARAM; j++)
			if (!strncmp(argv[j], a->name, len) &&
			    argv[j][len] == '=') {
				v[a->user].i = atoll(argv[j] + len + 1);
				v[a->user].f = atof(argv[j] + len + 1);
				pv[i] = v[a->user].i;
				given = true;
			}
		if (a->kind == SIM_ARG_PARAM && !given) {
			fprintf(stderr, "fagen-sim: give %s=VALUE\n", a->name);
			return 2;
		}
	}
	for (int i = 0; i < mt->nargs; i++) {
		const SimArg *a = &mt->args[i];
		int64_t bytes = ty_bits(a->ty) / 8, d;
		if (a->kind != SIM_ARG_GLOBAL)
			continue;
		for (int k = 0; k < a->rank; k++)
			if (sim_rpn_eval(&a->dims[k], pv, &d) && d > 0)
				bytes *= d;
		v[a->user].ptr = sim_alloc(s, (size_t)bytes);
		if (!v[a->user].ptr) {
			fprintf(stderr, "fagen-sim: cannot allocate '%s'\n",
				a->name);
			return 2;
		}
		fill(sim_host(s, v[a->user].ptr, (size_t)bytes), (size_t)bytes,
			a->ty, &seed);
	}
	clock_t t0 = clock();
	int rc = sim_launch(s, m, v, mt->nuser);
	double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
	SimStats st = sim_stats(s);
	if (rc)
		fprintf(stderr, "fagen-sim: %s\n", sim_error(s));
	else
		printf("%s: %llu CTAs, %llu warp instructions, %.2f s\n",
			mt->name, (unsigned long long)st.ctas,
			(unsigned long long)st.warp_steps, secs);
	sim_mod_free(m);
	sim_free(s);
	return rc ? 1 : 0;
}
