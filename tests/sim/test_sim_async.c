/* test_sim_async.c: st.async (PTX ISA 9.7.8.12) in the simulator
 * (meson test unit.sim_async): a cluster of two CTAs exchanging values
 * through each other's shared memory, completing on the receiver's
 * mbarrier (queued, and with SIM_OPT_EAGER at issue), and the errors it
 * must report. */
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
static bool eager;   /* SIM_OPT_EAGER: the stores land at issue */

#define OP "st.async.shared::cluster.mbarrier::complete_tx::bytes"

/* A cluster of two CTAs of one warp each.  Thread 0 of each initializes
 * the mbarrier at fg_smem+16 (count 1); the cluster's barrier orders
 * that before use; PRE runs; thread 0 arrives with expect_tx TX bytes;
 * then STORE runs, with %r4 the peer's fg_smem (mapa), %r6 the peer's
 * mbarrier, %r8 this CTA's, %r10 the peer's slot tid (fg_smem + 4 tid),
 * %r5 = rank * 100 + tid and %p2 = tid < 2.  Each CTA then waits for
 * phase 0 of its own mbarrier and thread t writes slot t % 4 of its
 * fg_smem to OUT[32 rank + t].  Returns 0, or -1 with err set. */
static int
pair_run(const char *pre, int tx, const char *store, uint32_t *out)
{
	char ptx[8192];
	Sim *s = sim_new();

	sim_set(s, SIM_OPT_EAGER, eager);
	snprintf(ptx, sizeof ptx,
		"// fagen.kernel name=t target=sm_90a threads=32 "
		"cluster=2,1,1 smem=64 order=single tiles=0\n"
		"// fagen.arg 0 global OUT u32 rank=1 dims 64\n"
		".version 8.6\n.target sm_90a\n.address_size 64\n"
		".extern .shared .align 1024 .b8 fg_smem[];\n"
		".visible .entry t(.param .u64 OUT)\n{\n"
		"\t.reg .pred %%p<8>;\n\t.reg .b32 %%r<32>;\n"
		"\t.reg .b64 %%rd<8>;\n\t.reg .f32 %%f<8>;\n"
		"\tmov.u32 %%r0, %%tid.x;\n\tmov.u32 %%r9, fg_smem;\n"
		"\tmov.u32 %%r2, %%cluster_ctarank;\n"
		"\tadd.s32 %%r8, %%r9, 16;\n"
		"\tsetp.eq.u32 %%p1, %%r0, 0;\n"
		"\t@%%p1 mbarrier.init.shared::cta.b64 [%%r8], 1;\n"
		"\tbarrier.cluster.arrive.release.aligned;\n"
		"\tbarrier.cluster.wait.acquire.aligned;\n"
		"%s"
		"\t@%%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%%r8], "
		"%d;\n"
		"\txor.b32 %%r3, %%r2, 1;\n"
		"\tmapa.shared::cluster.u32 %%r4, %%r9, %%r3;\n"
		"\tmapa.shared::cluster.u32 %%r6, %%r8, %%r3;\n"
		"\tmad.lo.s32 %%r5, %%r2, 100, %%r0;\n"
		"\tshl.b32 %%r7, %%r0, 2;\n"
		"\tadd.s32 %%r10, %%r4, %%r7;\n"
		"\tsetp.lt.u32 %%p2, %%r0, 2;\n"
		"%s"
		"$L0:\n"
		"\tmbarrier.try_wait.parity.shared::cta.b64 %%p4, [%%r8], 0;\n"
		"\t@!%%p4 bra $L0;\n"
		"\tand.b32 %%r11, %%r0, 3;\n"
		"\tshl.b32 %%r11, %%r11, 2;\n"
		"\tadd.s32 %%r11, %%r9, %%r11;\n"
		"\tld.shared.u32 %%r1, [%%r11];\n"
		"\tld.param.u64 %%rd0, [OUT];\n"
		"\tmad.lo.s32 %%r12, %%r2, 32, %%r0;\n"
		"\tmul.wide.u32 %%rd1, %%r12, 4;\n"
		"\tadd.s64 %%rd1, %%rd0, %%rd1;\n"
		"\tst.global.u32 [%%rd1], %%r1;\n\tret;\n}\n", pre, tx, store);
	SimMod *m = sim_load(ptx, strlen(ptx), err, sizeof err);
	if (!m) {
		sim_free(s);
		return -1;
	}
	SimVal v = {.ptr = sim_alloc(s, 64 * 4)};
	int rc = sim_launch(s, m, &v, 1);
	if (rc)
		snprintf(err, sizeof err, "%s", sim_error(s));
	else
		memcpy(out, sim_host(s, v.ptr, 64 * 4), 64 * 4);
	sim_mod_free(m);
	sim_free(s);
	return rc;
}

/* OUT[32 rank + t] for t < slots: the other CTA's rank * 100 + t. */
static void
check_exchange(const uint32_t *o, int slots)
{
	for (int r = 0; r < 2; r++)
		for (int t = 0; t < 32; t++)
			if (t % 4 < slots)
				assert_int_equal(o[32 * r + t],
					(uint32_t)((r ^ 1) * 100 + t % 4));
}

static void
st_async_exchanges_between_ctas(void **state)
{
	uint32_t o[64];
	int rc;

	(void)state;
	/* threads 0 and 1: 4 bytes each into the peer's slot tid, 8 in all */
	rc = pair_run("", 8, "\t@%p2 " OP ".b32 [%r10], %r5, [%r6];\n", o);
	if (rc)
		fprintf(stderr, "%s\n", err);
	assert_int_equal(rc, 0);
	check_exchange(o, 2);
	/* the same, landing at issue (before the receiver's expect_tx) */
	eager = true;
	rc = pair_run("", 8, "\t@%p2 " OP ".b32 [%r10], %r5, [%r6];\n", o);
	eager = false;
	if (rc)
		fprintf(stderr, "%s\n", err);
	assert_int_equal(rc, 0);
	check_exchange(o, 2);
	/* three lanes, .f32: 12 bytes complete */
	rc = pair_run("", 12, "\tsetp.lt.u32 %p3, %r0, 3;\n"
		"\tmov.b32 %f1, %r5;\n"
		"\t@%p3 " OP ".f32 [%r10], %f1, [%r6];\n", o);
	if (rc)
		fprintf(stderr, "%s\n", err);
	assert_int_equal(rc, 0);
	check_exchange(o, 3);
	/* thread 0: one .v4.b32 of rank * 100 + 0..3 into slots 0..3 */
	rc = pair_run("", 16, "\tadd.s32 %r13, %r5, 1;\n"
		"\tadd.s32 %r14, %r5, 2;\n\tadd.s32 %r15, %r5, 3;\n"
		"\t@%p1 " OP ".v4.b32 [%r4], {%r5, %r13, %r14, %r15}, "
		"[%r6];\n", o);
	if (rc)
		fprintf(stderr, "%s\n", err);
	assert_int_equal(rc, 0);
	check_exchange(o, 4);
	/* threads 0 and 1 (@!p): a .v2.f32 each into slots 2 tid, 2 tid + 1 */
	rc = pair_run("", 16, "\tsetp.ge.u32 %p3, %r0, 2;\n"
		"\tadd.s32 %r13, %r5, %r0;\n\tadd.s32 %r14, %r13, 1;\n"
		"\tmov.b32 %f1, %r13;\n\tmov.b32 %f2, %r14;\n"
		"\tadd.s32 %r15, %r10, %r7;\n"
		"\t@!%p3 " OP ".v2.f32 [%r15], {%f1, %f2}, [%r6];\n", o);
	if (rc)
		fprintf(stderr, "%s\n", err);
	assert_int_equal(rc, 0);
	check_exchange(o, 4);
	/* into this CTA's own shared memory, by its plain address */
	rc = pair_run("", 8, "\tmul.lo.s32 %r13, %r3, 100;\n"
		"\tadd.s32 %r13, %r13, %r0;\n\tadd.s32 %r14, %r9, %r7;\n"
		"\t@%p2 " OP ".b32 [%r14], %r13, [%r8];\n", o);
	if (rc)
		fprintf(stderr, "%s\n", err);
	assert_int_equal(rc, 0);
	check_exchange(o, 2);
}

static void
expect_error(int rc, const char *what)
{
	if (rc != -1 || !strstr(err, what))
		fprintf(stderr, "expected '%s': %s\n", what, err);
	assert_int_equal(rc, -1);
	assert_non_null(strstr(err, what));
}

static void
st_async_errors(void **state)
{
	uint32_t o[64];

	(void)state;
	/* the mbarrier in this CTA, the bytes into the peer */
	expect_error(pair_run("", 8, "\t@%p2 " OP ".b32 [%r10], %r5, "
		"[%r8];\n", o), "must be in the destination's CTA");
	/* CTA 1 has exited when CTA 0 stores into it */
	expect_error(pair_run("\tsetp.eq.u32 %p5, %r2, 1;\n\t@%p5 ret;\n",
		8, "\t@%p2 " OP ".b32 [%r10], %r5, [%r6];\n", o),
		"st.async reaches CTA rank 1 of the cluster, which has exited");
	/* CTA 1 exits after CTA 0 issued its store, before it lands */
	expect_error(pair_run("", 8, "\tsetp.eq.u32 %p5, %r2, 0;\n"
		"\tand.pred %p5, %p5, %p2;\n"
		"\t@%p5 " OP ".b32 [%r10], %r5, [%r6];\n"
		"\tbarrier.cluster.arrive.aligned;\n"
		"\tbarrier.cluster.wait.aligned;\n"
		"\tsetp.eq.u32 %p6, %r2, 1;\n\t@%p6 ret;\n", o),
		"st.async into CTA rank 1, which has exited");
	/* misaligned: 4 bytes at +2, 16 bytes at +8 (CTA 1 stores first) */
	expect_error(pair_run("", 8, "\t@%p2 " OP ".b32 [%r10+2], %r5, "
		"[%r6];\n", o), "st.async of 4 bytes at shared address 0x402 "
		"(CTA rank 0) is misaligned");
	expect_error(pair_run("", 16, "\t@%p1 " OP ".v4.b32 [%r4+8], "
		"{%r5, %r5, %r5, %r5}, [%r6];\n", o), "st.async of 16 bytes "
		"at shared address 0x408 (CTA rank 0) is misaligned");
	/* over the peer's mbarrier (fg_smem+16) */
	expect_error(pair_run("", 8, "\t@%p1 " OP ".b32 [%r6], %r5, "
		"[%r6];\n", o), "st.async writes over the mbarrier at 0x410");
	/* no mbarrier at the address */
	expect_error(pair_run("", 8, "\t@%p2 " OP ".b32 [%r10], %r5, "
		"[%r4];\n", o), "where no mbarrier was initialized");
	/* only .b32 and .f32 elements */
	expect_error(pair_run("", 8, "\t@%p2 " OP ".b64 [%r10], %rd1, "
		"[%r6];\n", o), "type .b64 is not modelled");
	expect_error(pair_run("", 8, "\t@%p2 " OP ".v2.b32 [%r10], %r5, "
		"[%r6];\n", o), "expected [addr], {a, b}, [mbar]");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(st_async_exchanges_between_ctas),
		cmocka_unit_test(st_async_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
