/* test_sim80.c: the simulator's sm_80 instructions (meson test
 * unit.sim80) against references the tests compute themselves; the
 * harness (sim80.h), mma.sync and ldmatrix.  Inputs are random, outputs
 * start as NaN bytes.  The kernels follow the forms of the project's PTX
 * reference sheet for the Ampere path (section 14), which ran them on
 * hardware. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sim.h"
#include "sim80.h"

char sim80_err[8192];

int
sim80_run(const char *tgt, int threads, int smem, Arg *args, int nargs,
	const char *body, bool eager)
{
	size_t cap = strlen(body) + 4096, n = 0;
	char *ptx = malloc(cap);
	Sim *s = sim_new();
	SimVal v[16];
	int rc = -1;

	assert_non_null(ptx);
	assert_true(nargs <= 16);
	n += (size_t)snprintf(ptx + n, cap - n, "// fagen.kernel name=t "
		"target=%s threads=%d cluster=1,1,1 smem=%d order=single "
		"tiles=0\n", tgt, threads, smem);
	for (int i = 0; i < nargs; i++)
		n += (size_t)(args[i].bytes ? snprintf(ptx + n, cap - n,
			"// fagen.arg %d global %s u8 rank=1 dims %zu\n", i,
			args[i].name, args[i].bytes) : snprintf(ptx + n, cap - n,
			"// fagen.arg %d param %s %s\n", i, args[i].name,
			args[i].ty));
	n += (size_t)snprintf(ptx + n, cap - n, ".version %s\n.target %s\n"
		".address_size 64\n.extern .shared .align 1024 .b8 fg_smem[];\n"
		".visible .entry t(", strcmp(tgt, "sm_120a") ? "8.6" : "8.7",
		tgt);
	for (int i = 0; i < nargs; i++)
		n += (size_t)snprintf(ptx + n, cap - n, "%s.param .%s %s",
			i ? ", " : "", args[i].bytes ? "u64" : args[i].ty,
			args[i].name);
	n += (size_t)snprintf(ptx + n, cap - n, ")\n{\n\t.reg .pred %%p<16>;\n"
		"\t.reg .b16 %%h<16>;\n\t.reg .b32 %%r<80>;\n"
		"\t.reg .b64 %%rd<24>;\n\t.reg .f32 %%f<48>;\n"
		"\t.reg .f32 %%s<16>;\n\t.reg .f32 %%o<8>;\n"
		"\tmov.u32 %%r0, %%tid.x;\n\tmov.u32 %%r9, fg_smem;\n");
	for (int i = 0; i < nargs; i++)
		if (args[i].bytes)
			n += (size_t)snprintf(ptx + n, cap - n,
				"\tld.param.u64 %%rd%d, [%s];\n", 10 + i,
				args[i].name);
	n += (size_t)snprintf(ptx + n, cap - n, "%s}\n", body);
	assert_true(n < cap);
	SimMod *m = sim_load(ptx, n, sim80_err, sizeof sim80_err);
	if (!m)
		goto out;
	sim_set(s, SIM_OPT_EAGER, eager);
	for (int i = 0; i < nargs; i++) {
		v[i] = (SimVal){.i = args[i].i, .f = args[i].f};
		if (!args[i].bytes)
			continue;
		v[i].ptr = sim_alloc(s, args[i].bytes);
		memcpy(sim_host(s, v[i].ptr, args[i].bytes), args[i].host,
			args[i].bytes);
	}
	rc = sim_launch(s, m, v, nargs);
	if (rc)
		snprintf(sim80_err, sizeof sim80_err, "%s", sim_error(s));
	for (int i = 0; !rc && i < nargs; i++)
		if (args[i].bytes)
			memcpy(args[i].host, sim_host(s, v[i].ptr,
				args[i].bytes), args[i].bytes);
	sim_mod_free(m);
out:
	sim_free(s);
	free(ptx);
	return rc;
}

uint32_t
sim80_rand(uint32_t *seed)
{
	*seed ^= *seed << 13;
	*seed ^= *seed >> 17;
	*seed ^= *seed << 5;
	return *seed;
}

float
sim80_val(uint32_t *seed)
{
	uint32_t r = sim80_rand(seed);
	float x = ldexpf((float)(r & 127), -6 - (int)(r >> 7 & 7) % 7);

	return r >> 31 ? -x : x;
}

uint16_t
sim80_half(float x, bool bf)
{
	uint32_t u;

	memcpy(&u, &x, 4);
	if (bf || x == 0)
		return bf ? (uint16_t)(u >> 16) : (uint16_t)(u >> 16 & 0x8000);
	int e = (int)(u >> 23 & 0xff) - 127 + 15;
	return (uint16_t)((u >> 16 & 0x8000) | (uint32_t)e << 10 |
		(u >> 13 & 0x3ff));
}

/* got against ref within rel of mag (the sum of the terms' magnitudes);
 * the first miss is printed. */
static int
misses(const float *got, const double *ref, const double *mag, int n,
	double rel, const char *what)
{
	int bad = 0;

	for (int i = 0; i < n; i++)
		if (!(fabs(got[i] - ref[i]) <= rel * mag[i] + 1e-30) &&
		    bad++ == 0)
			fprintf(stderr, "%s: element %d is %.9g, want %.9g\n",
				what, i, got[i], ref[i]);
	return bad;
}

/* One warp: A (16 x 16, row-major), B stored [n][k] (8 x 16), C and D
 * (16 x 8 f32) loaded and stored with the fragment formulas; D = AB + C,
 * then E = AB + D in place (the destination is also C). */
static const char mma_body[] =
	"\tshr.u32 %%r1, %%r0, 2;\n\tand.b32 %%r2, %%r0, 3;\n"
	"\tshl.b32 %%r3, %%r2, 1;\n"
	"\tmad.lo.u32 %%r4, %%r1, 16, %%r3;\n"     /* g * 16 + 2t */
	"\tmul.wide.u32 %%rd1, %%r4, 2;\n"
	"\tadd.s64 %%rd2, %%rd10, %%rd1;\n"
	"\tld.global.u32 %%r10, [%%rd2];\n"        /* A[g][2t] */
	"\tld.global.u32 %%r11, [%%rd2+256];\n"    /* A[g + 8][2t] */
	"\tld.global.u32 %%r12, [%%rd2+16];\n"     /* A[g][2t + 8] */
	"\tld.global.u32 %%r13, [%%rd2+272];\n"
	"\tadd.s64 %%rd3, %%rd11, %%rd1;\n"
	"\tld.global.u32 %%r14, [%%rd3];\n"        /* B[2t][g] (Bt[g][2t]) */
	"\tld.global.u32 %%r15, [%%rd3+16];\n"     /* B[2t + 8][g] */
	"\tmad.lo.u32 %%r5, %%r1, 8, %%r3;\n"      /* g * 8 + 2t */
	"\tmul.wide.u32 %%rd4, %%r5, 4;\n"
	"\tadd.s64 %%rd5, %%rd12, %%rd4;\n"
	"\tld.global.f32 %%f0, [%%rd5];\n\tld.global.f32 %%f1, [%%rd5+4];\n"
	"\tld.global.f32 %%f2, [%%rd5+256];\n"
	"\tld.global.f32 %%f3, [%%rd5+260];\n"
	"\tmma.sync.aligned.m16n8k16.row.col.f32.%s.%s.f32 "
	"{%%f4, %%f5, %%f6, %%f7}, {%%r10, %%r11, %%r12, %%r13}, "
	"{%%r14, %%r15}, {%%f0, %%f1, %%f2, %%f3};\n"
	"\tadd.s64 %%rd6, %%rd13, %%rd4;\n"
	"\tst.global.v2.f32 [%%rd6], {%%f4, %%f5};\n"
	"\tst.global.v2.f32 [%%rd6+256], {%%f6, %%f7};\n"
	"\tmma.sync.aligned.m16n8k16.row.col.f32.%s.%s.f32 "
	"{%%f4, %%f5, %%f6, %%f7}, {%%r10, %%r11, %%r12, %%r13}, "
	"{%%r14, %%r15}, {%%f4, %%f5, %%f6, %%f7};\n"
	"\tst.global.v2.f32 [%%rd6+512], {%%f4, %%f5};\n"
	"\tst.global.v2.f32 [%%rd6+768], {%%f6, %%f7};\n"
	"\tret;\n";

/* bf16 and f16, on sm_80 and sm_120a: D and E within a few f32 ulps of
 * the double products (the products are exact, the sum rounded once
 * into f32). */
void
mma_sync_matches_a_double_matmul(void **state)
{
	static const char *const tgts[] = {"sm_80", "sm_120a"};
	uint32_t seed = 12345;

	(void)state;
	for (int it = 0; it < 4; it++) {
		bool bf = it % 2 == 0;
		float a[16][16], b[16][8], c[16][8], d[2][16][8];
		uint16_t ha[16][16], hbt[8][16];
		double ref[2][16][8], mag[2][16][8];
		char body[4096];
		for (int m = 0; m < 16; m++)
			for (int k = 0; k < 16; k++) {
				a[m][k] = sim80_val(&seed);
				ha[m][k] = sim80_half(a[m][k], bf);
			}
		for (int k = 0; k < 16; k++)
			for (int n = 0; n < 8; n++) {
				b[k][n] = sim80_val(&seed);
				hbt[n][k] = sim80_half(b[k][n], bf);
			}
		for (int m = 0; m < 16; m++)
			for (int n = 0; n < 8; n++) {
				double s = 0, sa = 0;
				c[m][n] = (float)(sim80_rand(&seed) % 2001) / 500 -
					2;
				for (int k = 0; k < 16; k++) {
					s += (double)a[m][k] * b[k][n];
					sa += fabs((double)a[m][k] * b[k][n]);
				}
				ref[0][m][n] = c[m][n] + s;
				ref[1][m][n] = c[m][n] + 2 * s;
				mag[0][m][n] = fabs(c[m][n]) + sa;
				mag[1][m][n] = fabs(c[m][n]) + 2 * sa;
			}
		memset(d, 0xff, sizeof d);
		Arg args[] = {{"A", 0, sizeof ha, ha, 0, 0},
			{"B", 0, sizeof hbt, hbt, 0, 0},
			{"C", 0, sizeof c, c, 0, 0},
			{"D", 0, sizeof d, d, 0, 0}};
		const char *ty = bf ? "bf16" : "f16";
		snprintf(body, sizeof body, mma_body, ty, ty, ty, ty);
		int rc = sim80_run(tgts[it / 2], 32, 0, args, 4, body, false);
		if (rc)
			fprintf(stderr, "%s\n", sim80_err);
		assert_int_equal(rc, 0);
		assert_int_equal(misses(&d[0][0][0], &ref[0][0][0],
			&mag[0][0][0], 128, 1e-6, ty), 0);
		assert_int_equal(misses(&d[1][0][0], &ref[1][0][0],
			&mag[1][0][0], 128, 2e-6, ty), 0);
	}
}

/* ldmatrix: shared memory holds A, A transposed, B stored [n][k] and B
 * stored [k][n] (16 x 16 each, 32-byte rows); four ways of loading the
 * fragments of D = A B (two n-tiles of B) give four copies of D:
 *   0: A .x4;            B [n][k] .x4 (both n-tiles)
 *   1: A^T .x1.trans x4; B [k][n] .x2.trans per n-tile
 *   2: A .x2 x2;         B [k][n] .x4.trans (both n-tiles)
 *   3: A .x1 x4;         B [n][k] .x1 per n-tile and k half */
static const char ldm_body[] =
	"\tmov.u32 %%r1, 0;\n$LC:\n"                  /* X -> fg_smem */
	"\tshl.b32 %%r2, %%r1, 5;\n\tadd.u32 %%r2, %%r2, %%r0;\n"
	"\tshl.b32 %%r3, %%r2, 2;\n\tcvt.u64.u32 %%rd1, %%r3;\n"
	"\tadd.s64 %%rd1, %%rd10, %%rd1;\n\tld.global.u32 %%r4, [%%rd1];\n"
	"\tadd.u32 %%r5, %%r9, %%r3;\n\tst.shared.u32 [%%r5], %%r4;\n"
	"\tadd.u32 %%r1, %%r1, 1;\n\tsetp.lt.u32 %%p1, %%r1, 16;\n"
	"\t@%%p1 bra $LC;\n\tbar.sync 0;\n"
	"\tand.b32 %%r20, %%r0, 7;\n"                  /* l & 7 */
	"\tshr.u32 %%r21, %%r0, 3;\n\tand.b32 %%r21, %%r21, 1;\n"
	"\tshr.u32 %%r22, %%r0, 4;\n"                  /* l >> 4 */
	"\tshl.b32 %%r24, %%r21, 3;\n\tadd.u32 %%r24, %%r24, %%r20;\n"
	"\tshl.b32 %%r25, %%r24, 5;\n"                 /* row * 32 */
	"\tshl.b32 %%r26, %%r22, 4;\n"
	"\tadd.u32 %%r27, %%r25, %%r26;\n"             /* + 16 (l >> 4) */
	"\tshl.b32 %%r29, %%r22, 3;\n\tadd.u32 %%r29, %%r29, %%r20;\n"
	"\tshl.b32 %%r29, %%r29, 5;\n\tshl.b32 %%r30, %%r21, 4;\n"
	"\tadd.u32 %%r31, %%r29, %%r30;\n"             /* Bt, .x4 */
	"\tshl.b32 %%r34, %%r20, 5;\n\tadd.u32 %%r34, %%r34, %%r9;\n"
	"\tadd.u32 %%r35, %%r9, %%r25;\n\tadd.u32 %%r36, %%r9, %%r27;\n"
	"\tmov.f32 %%f40, 0f00000000;\n"
	"\tshr.u32 %%r1, %%r0, 2;\n\tand.b32 %%r2, %%r0, 3;\n"
	"\tshl.b32 %%r3, %%r2, 1;\n\tmad.lo.u32 %%r4, %%r1, 16, %%r3;\n"
	"\tmul.wide.u32 %%rd2, %%r4, 4;\n\tadd.s64 %%rd2, %%rd11, %%rd2;\n"
	/* 0 */
	"\tadd.u32 %%r28, %%r9, %%r27;\n"
	"\tldmatrix.sync.aligned.m8n8.x4.shared.b16 "
	"{%%r40, %%r41, %%r42, %%r43}, [%%r28];\n"
	"\tadd.u32 %%r32, %%r9, %%r31;\n"
	"\tldmatrix.sync.aligned.m8n8.x4.shared::cta.b16 "
	"{%%r44, %%r45, %%r46, %%r47}, [%%r32+1024];\n"
	"%s"
	/* 1 */
	"\tldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%%r40}, "
	"[%%r34+512];\n"
	"\tldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%%r41}, "
	"[%%r34+528];\n"
	"\tldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%%r42}, "
	"[%%r34+768];\n"
	"\tldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%%r43}, "
	"[%%r34+784];\n"
	"\tldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%%r44, %%r45}, "
	"[%%r35+1536];\n"
	"\tldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%%r46, %%r47}, "
	"[%%r35+1552];\n"
	"\tadd.s64 %%rd2, %%rd2, 1024;\n%s"
	/* 2 */
	"\tldmatrix.sync.aligned.m8n8.x2.shared.b16 {%%r40, %%r41}, "
	"[%%r35];\n"
	"\tldmatrix.sync.aligned.m8n8.x2.shared.b16 {%%r42, %%r43}, "
	"[%%r35+16];\n"
	"\tldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 "
	"{%%r44, %%r45, %%r46, %%r47}, [%%r36+1536];\n"
	"\tadd.s64 %%rd2, %%rd2, 1024;\n%s"
	/* 3 */
	"\tldmatrix.sync.aligned.m8n8.x1.shared.b16 {%%r40}, [%%r34];\n"
	"\tldmatrix.sync.aligned.m8n8.x1.shared.b16 {%%r41}, [%%r34+256];\n"
	"\tldmatrix.sync.aligned.m8n8.x1.shared.b16 {%%r42}, [%%r34+16];\n"
	"\tldmatrix.sync.aligned.m8n8.x1.shared.b16 {%%r43}, [%%r34+272];\n"
	"\tldmatrix.sync.aligned.m8n8.x1.shared.b16 {%%r44}, [%%r34+1024];\n"
	"\tldmatrix.sync.aligned.m8n8.x1.shared.b16 {%%r45}, [%%r34+1040];\n"
	"\tldmatrix.sync.aligned.m8n8.x1.shared.b16 {%%r46}, [%%r34+1280];\n"
	"\tldmatrix.sync.aligned.m8n8.x1.shared.b16 {%%r47}, [%%r34+1296];\n"
	"\tadd.s64 %%rd2, %%rd2, 1024;\n%s"
	"\tret;\n";

/* Both n-tiles of D = A B from {r40..r43} and {r44, r45}, {r46, r47},
 * stored at rd2: D[g][2t] and on, rows of 16 f32. */
static const char ldm_mma[] =
	"\tmma.sync.aligned.m16n8k16.row.col.f32.%s.%s.f32 "
	"{%%f0, %%f1, %%f2, %%f3}, {%%r40, %%r41, %%r42, %%r43}, "
	"{%%r44, %%r45}, {%%f40, %%f40, %%f40, %%f40};\n"
	"\tmma.sync.aligned.m16n8k16.row.col.f32.%s.%s.f32 "
	"{%%f4, %%f5, %%f6, %%f7}, {%%r40, %%r41, %%r42, %%r43}, "
	"{%%r46, %%r47}, {%%f40, %%f40, %%f40, %%f40};\n"
	"\tst.global.v2.f32 [%%rd2], {%%f0, %%f1};\n"
	"\tst.global.v2.f32 [%%rd2+512], {%%f2, %%f3};\n"
	"\tst.global.v2.f32 [%%rd2+32], {%%f4, %%f5};\n"
	"\tst.global.v2.f32 [%%rd2+544], {%%f6, %%f7};\n";

void
ldmatrix_every_form_feeds_mma_sync(void **state)
{
	uint32_t seed = 777;

	(void)state;
	for (int it = 0; it < 2; it++) {
		bool bf = it == 0;
		const char *ty = bf ? "bf16" : "f16";
		float a[16][16], b[16][16], out[4][16][16];
		uint16_t x[4][16][16];   /* A, A^T, B [n][k], B [k][n] */
		double ref[4][16][16], mag[4][16][16];
		char mm[1024], body[8192];
		for (int i = 0; i < 16; i++)
			for (int j = 0; j < 16; j++) {
				a[i][j] = sim80_val(&seed);
				b[i][j] = sim80_val(&seed);
				x[0][i][j] = x[1][j][i] = sim80_half(a[i][j], bf);
				x[3][i][j] = x[2][j][i] = sim80_half(b[i][j], bf);
			}
		for (int m = 0; m < 16; m++)
			for (int n = 0; n < 16; n++) {
				double s = 0, sa = 0;
				for (int k = 0; k < 16; k++) {
					s += (double)a[m][k] * b[k][n];
					sa += fabs((double)a[m][k] * b[k][n]);
				}
				for (int v = 0; v < 4; v++) {
					ref[v][m][n] = s;
					mag[v][m][n] = sa;
				}
			}
		memset(out, 0xff, sizeof out);
		snprintf(mm, sizeof mm, ldm_mma, ty, ty, ty, ty);
		snprintf(body, sizeof body, ldm_body, mm, mm, mm, mm);
		Arg args[] = {{"X", 0, sizeof x, x, 0, 0},
			{"OUT", 0, sizeof out, out, 0, 0}};
		int rc = sim80_run("sm_80", 32, 2048, args, 2, body, false);
		if (rc)
			fprintf(stderr, "%s\n", sim80_err);
		assert_int_equal(rc, 0);
		for (int v = 0; v < 4; v++) {
			char what[32];
			snprintf(what, sizeof what, "%s, way %d", ty, v);
			assert_int_equal(misses(&out[v][0][0], &ref[v][0][0],
				&mag[v][0][0], 256, 1e-6, what), 0);
		}
	}
}

/* An ldmatrix row address that is not 16-byte aligned, and one reached
 * by half a warp, are errors. */
static void
ldmatrix_and_mma_sync_need_the_whole_warp(void **state)
{
	static const char *const body[] = {
		"\tshl.b32 %r1, %r0, 4;\n\tadd.u32 %r1, %r1, %r9;\n"
		"\tldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r2}, [%r1+8];\n"
		"\tret;\n",
		"\tshl.b32 %r1, %r0, 4;\n\tadd.u32 %r1, %r1, %r9;\n"
		"\tsetp.lt.u32 %p1, %r0, 16;\n\t@%p1 bra $L1;\n"
		"\tldmatrix.sync.aligned.m8n8.x4.shared.b16 "
		"{%r2, %r3, %r4, %r5}, [%r1];\n$L1:\n\tret;\n",
		"\tmma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 "
		"{%r2, %r3}, {%r4, %r5, %r6, %r7}, {%r8, %r10}, {%r2, %r3};\n"
		"\tret;\n",
	};
	static const char *const why[] = {"misaligned",
		"not the whole warp", "only mma.sync m16n8k16 .row.col with "
		"f32 += bf16 or f16"};

	(void)state;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(sim80_run("sm_80", 32, 1024, NULL, 0, body[i],
			false), -1);
		if (!strstr(sim80_err, why[i]))
			fprintf(stderr, "%s\n", sim80_err);
		assert_non_null(strstr(sim80_err, why[i]));
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(mma_sync_matches_a_double_matmul),
		cmocka_unit_test(ldmatrix_every_form_feeds_mma_sync),
		cmocka_unit_test(ldmatrix_and_mma_sync_need_the_whole_warp),
		cmocka_unit_test(fa_step_with_mma_sync_matches_float64),
		cmocka_unit_test(cp_async_lands_when_its_group_is_waited_for),
		cmocka_unit_test(cp_async_ring_waits_for_the_right_stage),
		cmocka_unit_test(cp_async_mbarrier_arrive_completes_a_phase),
		cmocka_unit_test(cp_async_faults_and_pending_copies_are_errors),
		cmocka_unit_test(a_test_wait_spin_that_never_completes_is_a_hang),
		cmocka_unit_test(named_barriers_hand_off_between_warps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
