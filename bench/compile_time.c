/* compile_time.c: how long fagen takes to turn a schedule into a kernel.
 *
 * For each shipped schedule variant it times, on the host clock:
 *   compile  parse, check, verify and lower to PTX (fg_compile_file), the
 *            median of many runs;
 *   lower    the same without the schedule verifier (no_verify);
 *   cold     the first fg_kernel_load in a new context over an empty disk
 *            cache: assembly (ptxas or nvJitLink) plus the module load;
 *   warm     the same in another new context over the cache cold left:
 *            a disk-cache read plus the module load.
 * Without a GPU, cold and warm time fg_kernel_assemble instead (no load),
 * and the table says so.
 *
 * usage: bench_compile [SCHEDULE_DIR]   (default: the source tree's)
 * Prints one line per variant; the targets of issue 7 are compile
 * <= 20 ms, cold <= 1.5 s, warm <= 5 ms. */
#define _GNU_SOURCE
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fagen.h"

#ifndef FG_SOURCE_SCHEDULES
#define FG_SOURCE_SCHEDULES "schedules"
#endif

enum { RUNS = 21 };

typedef struct {
	const char *file;
	const char *defs[3];
} Variant;

static const Variant variants[] = {
	{"fa_fwd_sm90.fa", {"D=128", "DT=bf16", "CAUSAL=false"}},
	{"fa_fwd_sm90.fa", {"D=128", "DT=bf16", "CAUSAL=true"}},
	{"fa_fwd_sm90.fa", {"D=64", "DT=bf16", "CAUSAL=false"}},
	{"fa_fwd_sm90.fa", {"D=64", "DT=f16", "CAUSAL=true"}},
	{"fa_fwd_baseline_sm90.fa", {"D=128", "DT=bf16", "CAUSAL=false"}},
	{"fa_fwd_baseline_sm90.fa", {"D=64", "DT=bf16", "CAUSAL=true"}},
	{"gemm_ws_sm90.fa", {NULL}},
	{"copy_ws_sm90.fa", {NULL}},
	{"fa_fwd_sm100.fa", {"D=128", "DT=bf16", "CAUSAL=false"}},
	{"fa_fwd_baseline_sm100.fa", {"D=128", "DT=bf16", "CAUSAL=false"}},
	{"gemm_ws_sm100.fa", {NULL}},
};

static double
now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static int
cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int
rm1(const char *path, const struct stat *sb, int flag, struct FTW *f)
{
	(void)sb, (void)flag, (void)f;
	return remove(path);
}

/* One context over cache directory dir; NULL when that fails. */
static fg_ctx *
context(const char *dir)
{
	fg_options o = {.cache_dir = dir};
	fg_ctx *c;

	return fg_ctx_create(&c, &o) ? NULL : c;
}

/* Median seconds of RUNS fg_compile_file calls with o; *out: the last
 * program (NULL on failure, reported). */
static double
compile(fg_ctx *c, const char *path, const fg_compile_options *o,
	const char *what, fg_program **out)
{
	double ts[RUNS];

	*out = NULL;
	for (int r = 0; r < RUNS; r++) {
		fg_program_free(*out);
		*out = NULL;
		ts[r] = now();
		fg_status st = fg_compile_file(c, path, o, out);
		ts[r] = now() - ts[r];
		if (st) {
			fprintf(stderr, "%s: %s: %s%s\n", what,
				fg_status_name(st), fg_errmsg(c),
				*out ? fg_program_diagnostics(*out) : "");
			fg_program_free(*out);
			*out = NULL;
			return -1;
		}
	}
	qsort(ts, RUNS, sizeof *ts, cmp);
	return ts[RUNS / 2];
}

/* Create and load (gpu) or assemble the kernel of ptx in a new context
 * over dir; seconds, or -1 with the error printed. */
static double
jit(const char *dir, const char *ptx, int gpu, const char *what)
{
	fg_ctx *c = context(dir);
	fg_kernel *k = NULL;
	fg_status st;
	double t;

	if (!c)
		return -1;
	t = now();
	st = fg_kernel_create(c, ptx, 0, &k);
	if (!st)
		st = gpu ? fg_kernel_load(k) : fg_kernel_assemble(k);
	t = now() - t;
	if (st)
		fprintf(stderr, "%s: %s: %s\n", what, fg_status_name(st),
			fg_errmsg(c));
	fg_kernel_free(k);
	fg_ctx_destroy(c);
	return st ? -1 : t;
}

int
main(int argc, char **argv)
{
	const char *sdir = argc > 1 ? argv[1] : FG_SOURCE_SCHEDULES;
	char tmpl[] = "/tmp/fagen-bench-XXXXXX", path[4096];
	double geo = 0;
	int gpu = -1, n = 0, bad = 0;
	fg_ctx *hold = NULL;

	if (!mkdtemp(tmpl)) {
		perror("mkdtemp");
		return 1;
	}
	printf("%-24s %-30s %9s %9s %9s %9s\n", "schedule", "defines",
		"compile", "lower", "cold", "warm");
	for (size_t i = 0; i < sizeof variants / sizeof *variants; i++) {
		const Variant *v = &variants[i];
		fg_compile_options o = {.defines = v->defs};
		double tc = -1, tl = -1, cold, warm;
		char dir[4200], defs[128] = "";
		fg_program *p = NULL;
		fg_ctx *c = context("");

		while (o.ndefines < 3 && v->defs[o.ndefines])
			o.ndefines++;
		for (int j = 0; j < o.ndefines; j++)
			snprintf(defs + strlen(defs), sizeof defs - strlen(defs),
				"%s%s", j ? " " : "", v->defs[j]);
		snprintf(path, sizeof path, "%s/%s", sdir, v->file);
		if (c) {
			fg_compile_options nv = o;
			nv.no_verify = 1;
			tl = compile(c, path, &nv, v->file, &p);
			fg_program_free(p);
			tc = compile(c, path, &o, v->file, &p);
		}
		if (!p) {
			bad = 1;
			fg_ctx_destroy(c);
			continue;
		}
		snprintf(dir, sizeof dir, "%s/%zu", tmpl, i);
		if (gpu < 0) {  /* is there a device to load on? */
			fg_kernel *k = NULL;

			/* hold keeps the device's primary context alive, so
			 * that cold and warm time the kernel, not the
			 * driver's context creation (about 0.1 s) */
			hold = context("");
			gpu = hold && !fg_kernel_create(hold,
				fg_program_ptx(p, NULL), 0, &k) &&
				!fg_kernel_load(k);
			fg_kernel_free(k);
		}
		if (gpu > 0 && strstr(v->file, "sm100")) {
			/* no sm_100 device here: time the assembly */
			cold = jit(dir, fg_program_ptx(p, NULL), 0, v->file);
			warm = jit(dir, fg_program_ptx(p, NULL), 0, v->file);
			printf("%-24s %-30s %7.2fms %7.2fms %8.3fs %7.2fms "
				"(assembly only)\n", v->file, defs, tc * 1e3,
				tl * 1e3, cold, warm * 1e3);
			geo += tc;
			n++;
			fg_program_free(p);
			fg_ctx_destroy(c);
			continue;
		}
		cold = jit(dir, fg_program_ptx(p, NULL), gpu, v->file);
		warm = jit(dir, fg_program_ptx(p, NULL), gpu, v->file);
		printf("%-24s %-30s %7.2fms %7.2fms %8.3fs %7.2fms\n",
			v->file, defs, tc * 1e3, tl * 1e3, cold, warm * 1e3);
		if (cold < 0 || warm < 0)
			bad = 1;
		geo += tc;
		n++;
		fg_program_free(p);
		fg_ctx_destroy(c);
	}
	printf("%d variants; compile: median of %d runs (mean of medians "
		"%.2f ms); cold/warm: %s\n", n, RUNS, n ? geo / n * 1e3 : 0.0,
		gpu > 0 ? "fg_kernel_load on the GPU (assembly + module load)" :
		"fg_kernel_assemble only: no GPU here");
	fg_ctx_destroy(hold);
	nftw(tmpl, rm1, 16, FTW_DEPTH | FTW_PHYS);
	return bad;
}
