/* test_sim_pair.c: the simulator's CTA pair (Blackwell's .cta_group::2,
 * issue #27; meson test unit.sim_pair): a pair's collective allocation,
 * its M = 256 MMA over both CTAs' shared and tensor memory, its commits
 * and TMA loads completing on the leader's barrier, checked against
 * integer products, and the errors of a misused pair. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sim.h"

static char err[4096];

/* The CTA pair (.cta_group::2), as fagen's sm_100a kernels use it: a
 * cluster of two CTAs of 128 threads computes D = A B^T with M = 256,
 * N = 64, K = 64 (bf16, 128B swizzle, K-major).  Each CTA loads its 128
 * rows of A and 32 rows of B with TMA, the bytes counted on the leader's
 * barrier; the leader issues four K = 16 MMAs (idesc in a register or
 * immediate, enable-d immediate or a predicate) and commits to both
 * CTAs' barriers; each CTA reads its rows of D: OUT[128 rank + lane][n].
 * Filled in: the cluster, OUT's size, the leader's rank, a line before
 * the alloc, relinquish's cta_group and the rank of the TMA's barrier. */
static const char pair_ptx[] =
	"// fagen.kernel name=t target=sm_100a threads=128 "
	"cluster=%d,1,1 smem=20512 order=single tiles=0\n"
	"// fagen.arg 0 global OUT f32 rank=1 dims %d\n"
	"// fagen.arg 1 global A bf16 rank=2 dims 256 ; 64\n"
	"// fagen.arg 2 global B bf16 rank=2 dims 64 ; 64\n"
	"// fagen.arg 3 tma ta of=A box=128,64 swizzle=128 oob=zero\n"
	"// fagen.arg 4 tma tb of=B box=32,64 swizzle=128 oob=zero\n"
	".version 8.6\n.target sm_100a\n.address_size 64\n"
	".extern .shared .align 1024 .b8 fg_smem[];\n"
	".visible .entry t(.param .u64 OUT, .param .u64 A, .param .u64 B,\n"
	"\t.param .align 64 .b8 ta[128], .param .align 64 .b8 tb[128])\n{\n"
	"\t.reg .pred %%p<8>;\n\t.reg .b32 %%r<32>;\n\t.reg .b64 %%rd<8>;\n"
	"\tmov.u32 %%r0, %%tid.x;\n\tshr.u32 %%r1, %%r0, 5;\n"
	"\tmov.u32 %%r2, %%cluster_ctarank;\n\tmov.u32 %%r9, fg_smem;\n"
	"\tadd.s32 %%r10, %%r9, 16384;\n\tadd.s32 %%r5, %%r9, 20480;\n"
	"\tadd.s32 %%r6, %%r9, 20488;\n\tadd.s32 %%r7, %%r9, 20496;\n"
	"\tsetp.eq.u32 %%p0, %%r0, 0;\n\tsetp.eq.u32 %%p1, %%r2, %d;\n"
	"\tsetp.eq.u32 %%p2, %%r1, 0;\n\t@!%%p2 bra $LA;\n%s"
	"\ttcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32 [%%r7], 64;\n"
	"\ttcgen05.relinquish_alloc_permit.cta_group::%d.sync.aligned;\n"
	"$LA:\n\t@%%p0 mbarrier.init.shared::cta.b64 [%%r5], 1;\n"
	"\t@%%p0 mbarrier.init.shared::cta.b64 [%%r6], 1;\n"
	"\tbarrier.cluster.arrive.release.aligned;\n"
	"\tbarrier.cluster.wait.acquire.aligned;\n"
	"\tld.shared.b32 %%r8, [%%r7];\n"
	"\tmapa.shared::cluster.u32 %%r11, %%r5, %d;\n"
	"\tand.pred %%p3, %%p0, %%p1;\n"
	"\t@%%p3 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%%r5], 40960;\n"
	"\tmov.b64 %%rd0, ta;\n\tcvta.param.u64 %%rd0, %%rd0;\n"
	"\tmov.b64 %%rd1, tb;\n\tcvta.param.u64 %%rd1, %%rd1;\n"
	"\tmov.u32 %%r12, 0;\n\tshl.b32 %%r13, %%r2, 7;\n"
	"\tshl.b32 %%r14, %%r2, 5;\n"
	"\t@%%p0 cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::"
	"complete_tx::bytes.cta_group::2 [%%r9], [%%rd0, {%%r12, %%r13}], "
	"[%%r11];\n"
	"\t@%%p0 cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::"
	"complete_tx::bytes.cta_group::2 [%%r10], [%%rd1, {%%r12, %%r14}], "
	"[%%r11];\n"
	"\t@!%%p3 bra $LW;\n"
	"$LF:\n\tmbarrier.try_wait.parity.shared::cta.b64 %%p4, [%%r5], 0;\n"
	"\t@!%%p4 bra $LF;\n"
	"\tcvt.u64.u32 %%rd2, %%r9;\n\tshr.u64 %%rd2, %%rd2, 4;\n"
	"\tor.b64 %%rd2, %%rd2, 0x4000404000010000;\n"
	"\tcvt.u64.u32 %%rd3, %%r10;\n\tshr.u64 %%rd3, %%rd3, 4;\n"
	"\tor.b64 %%rd3, %%rd3, 0x4000404000010000;\n"
	"\tmov.u32 %%r15, 0x10100490;\n"
	"\ttcgen05.mma.cta_group::2.kind::f16 [%%r8], %%rd2, %%rd3, %%r15, 0;\n"
	"\tadd.s64 %%rd2, %%rd2, 2;\n\tadd.s64 %%rd3, %%rd3, 2;\n"
	"\ttcgen05.mma.cta_group::2.kind::f16 [%%r8], %%rd2, %%rd3, %%r15, "
	"%%p3;\n"
	"\tadd.s64 %%rd2, %%rd2, 2;\n\tadd.s64 %%rd3, %%rd3, 2;\n"
	"\ttcgen05.mma.cta_group::2.kind::f16 [%%r8], %%rd2, %%rd3, "
	"0x10100490, 1;\n"
	"\tadd.s64 %%rd2, %%rd2, 2;\n\tadd.s64 %%rd3, %%rd3, 2;\n"
	"\ttcgen05.mma.cta_group::2.kind::f16 [%%r8], %%rd2, %%rd3, %%r15, 1;\n"
	"\ttcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster."
	"multicast::cluster.b64 [%%r6], 3;\n"
	"$LW:\n\tmbarrier.try_wait.parity.shared::cta.b64 %%p6, [%%r6], 0;\n"
	"\t@!%%p6 bra $LW;\n"
	"\tand.b32 %%r16, %%r1, 3;\n\tshl.b32 %%r16, %%r16, 21;\n"
	"\tadd.s32 %%r16, %%r16, %%r8;\n\tld.param.u64 %%rd4, [OUT];\n"
	"\tmad.lo.s32 %%r17, %%r2, 128, %%r0;\n"
	"\tmul.wide.u32 %%rd5, %%r17, 256;\n\tadd.s64 %%rd4, %%rd4, %%rd5;\n"
	"\tmov.u32 %%r18, 0;\n"
	"$LL:\n\tadd.s32 %%r19, %%r16, %%r18;\n"
	"\ttcgen05.ld.sync.aligned.32x32b.x1.b32 {%%r20}, [%%r19];\n"
	"\ttcgen05.wait::ld.sync.aligned;\n"
	"\tmul.wide.u32 %%rd6, %%r18, 4;\n\tadd.s64 %%rd6, %%rd4, %%rd6;\n"
	"\tst.global.b32 [%%rd6], %%r20;\n\tadd.s32 %%r18, %%r18, 1;\n"
	"\tsetp.lt.u32 %%p7, %%r18, 64;\n\t@%%p7 bra $LL;\n"
	"\tbarrier.cluster.arrive.release.aligned;\n"
	"\tbarrier.cluster.wait.acquire.aligned;\n\t@!%%p2 bra $LD;\n"
	"\ttcgen05.dealloc.cta_group::2.sync.aligned.b32 %%r8, 64;\n"
	"$LD:\n\tret;\n}\n";

/* Small integers, exact in bf16 and in the f32 sums. */
static int pa(int m, int k) { return (m + 3 * k) % 7 - 3; }
static int pb(int n, int k) { return (2 * n + k) % 5 - 2; }

static uint16_t
bf16_of(int x)
{
	float f = (float)x;
	uint32_t u;

	memcpy(&u, &f, 4);
	return (uint16_t)(u >> 16);
}

static int
pair_run(int ncta, int lead, const char *skip, int rel, int bar, bool eager,
	float *out)
{
	static char ptx[8192];
	Sim *s = sim_new();
	SimVal v[3];
	int n = ncta * 128 * 64;

	snprintf(ptx, sizeof ptx, pair_ptx, ncta, n, lead, skip, rel, bar);
	SimMod *m = sim_load(ptx, strlen(ptx), err, sizeof err);
	if (!m) {
		sim_free(s);
		return -1;
	}
	sim_set(s, SIM_OPT_EAGER, eager);
	v[0].ptr = sim_alloc(s, (size_t)n * 4);
	v[1].ptr = sim_alloc(s, 256 * 64 * 2);
	v[2].ptr = sim_alloc(s, 64 * 64 * 2);
	uint16_t *a = sim_host(s, v[1].ptr, 256 * 64 * 2);
	uint16_t *b = sim_host(s, v[2].ptr, 64 * 64 * 2);
	for (int i = 0; i < 256 * 64; i++)
		a[i] = bf16_of(pa(i / 64, i % 64));
	for (int i = 0; i < 64 * 64; i++)
		b[i] = bf16_of(pb(i / 64, i % 64));
	int rc = sim_launch(s, m, v, 3);
	if (rc)
		snprintf(err, sizeof err, "%s", sim_error(s));
	else
		memcpy(out, sim_host(s, v[0].ptr, (size_t)n * 4), (size_t)n * 4);
	sim_mod_free(m);
	sim_free(s);
	return rc;
}

static void
tcgen05_cta_pair(void **state)
{
	static float o[4 * 128 * 64];
	static const struct {
		int ncta, lead;
		const char *skip;
		int rel, bar;
		const char *why;
	} bad[] = {
		{2, 1, "", 2, 1, "tcgen05.mma.cta_group::2 issued by CTA rank 1, "
			"not the pair's leader (even rank)"},
		{2, 0, "\t@!%p1 bra $LA;\n", 2, 0, "shared::cta.b32 [%r7], 64;': "
			"waits for the pair's tcgen05.alloc.cta_group::2 in CTA "
			"rank 1"},
		{1, 0, "", 2, 0, "needs a cluster of an even number of CTAs"},
		{4, 0, "", 2, 2, "CTA rank 2's mbarrier, outside the pair of CTA "
			"ranks 0 and 1"},
		{2, 0, "", 1, 0, "(ptxas rejects the mix)"},
	};

	(void)state;
	for (int e = 0; e < 2; e++) {
		int rc = pair_run(2, 0, "", 2, 0, e, o);
		if (rc)
			fprintf(stderr, "%s\n", err);
		assert_int_equal(rc, 0);
		for (int r = 0; r < 256; r++)
			for (int n = 0; n < 64; n++) {
				int want = 0;
				for (int k = 0; k < 64; k++)
					want += pa(r, k) * pb(n, k);
				if (o[r * 64 + n] != (float)want)
					fail_msg("D[%d][%d] = %g, not %d (eager %d)", r,
						n, (double)o[r * 64 + n], want, e);
			}
	}
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(pair_run(bad[i].ncta, bad[i].lead, bad[i].skip,
			bad[i].rel, bad[i].bar, false, o), -1);
		if (!strstr(err, bad[i].why))
			fprintf(stderr, "%s\n", err);
		assert_non_null(strstr(err, bad[i].why));
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tcgen05_cta_pair),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
