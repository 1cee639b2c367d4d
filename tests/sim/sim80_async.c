/* sim80_async.c: cp.async, its groups, cp.async.mbarrier.arrive,
 * mbarrier.test_wait and named barriers on sm_80 (unit.sim80).  The
 * simulator lands a copy when its thread's wait_group retires its group
 * or its cp.async.mbarrier.arrive fires, and at issue with
 * SIM_OPT_EAGER; the tests check the bytes in both modes and what a
 * read sees before the wait. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "sim80.h"

enum { CPT = 64, CPB = 96, CPO = 112 };   /* threads, bytes, out bytes */

/* Each thread fills its 96 bytes of shared memory with a pattern, then
 * copies into them in three groups: 16 bytes; 8 of 16 (zero-filled),
 * .ca 8 and .ca 4 of 4; src-size 0 from address 0 (16 zero bytes), an
 * ignore-src predicate that holds (zeros) and one that does not.  It
 * reads word 0 before any wait, words 0 and 4 after wait_group 2, word
 * 8 after wait_group 1; OUT: its 24 words after wait_all, then those 4
 * reads. */
static const char cp_body[] =
	"\tmul.lo.u32 %r2, %r0, 96;\n\tadd.u32 %r3, %r9, %r2;\n"
	"\tcvt.u64.u32 %rd1, %r2;\n\tadd.s64 %rd2, %rd10, %rd1;\n"
	"\tmov.u32 %r1, 0;\n$LP:\n"
	"\tshl.b32 %r5, %r0, 8;\n\tor.b32 %r5, %r5, %r1;\n"
	"\tor.b32 %r5, %r5, 0xa5000000;\n"
	"\tshl.b32 %r6, %r1, 2;\n\tadd.u32 %r6, %r6, %r3;\n"
	"\tst.shared.u32 [%r6], %r5;\n"
	"\tadd.u32 %r1, %r1, 1;\n\tsetp.lt.u32 %p1, %r1, 24;\n"
	"\t@%p1 bra $LP;\n"
	"\tmov.u32 %r4, 8;\n"
	"\tsetp.eq.u32 %p2, %r0, %r0;\n\tsetp.ne.u32 %p3, %r0, %r0;\n"
	"\tcp.async.cg.shared.global [%r3], [%rd2], 16;\n"
	"\tcp.async.commit_group;\n"
	"\tcp.async.cg.shared.global.L2::128B [%r3+16], [%rd2+16], 16, %r4;\n"
	"\tcp.async.ca.shared::cta.global [%r3+48], [%rd2+48], 8;\n"
	"\tcp.async.ca.shared.global [%r3+56], [%rd2+56], 4, 4;\n"
	"\tcp.async.commit_group;\n"
	"\tmov.b64 %rd3, 0;\n"
	"\tcp.async.cg.shared.global [%r3+32], [%rd3], 16, 0;\n"
	"\tcp.async.cg.shared.global [%r3+64], [%rd2+64], 16, %p2;\n"
	"\tcp.async.cg.shared.global [%r3+80], [%rd2+80], 16, %p3;\n"
	"\tcp.async.commit_group;\n"
	"\tld.shared.u32 %r10, [%r3];\n"
	"\tcp.async.wait_group 2;\n"
	"\tld.shared.u32 %r11, [%r3];\n\tld.shared.u32 %r12, [%r3+16];\n"
	"\tcp.async.wait_group 1;\n"
	"\tld.shared.u32 %r13, [%r3+32];\n"
	"\tcp.async.wait_all;\n"
	"\tmul.lo.u32 %r7, %r0, 112;\n\tcvt.u64.u32 %rd4, %r7;\n"
	"\tadd.s64 %rd4, %rd11, %rd4;\n"
	"\tmov.u32 %r1, 0;\n$LO:\n"
	"\tshl.b32 %r6, %r1, 2;\n\tadd.u32 %r8, %r6, %r3;\n"
	"\tld.shared.u32 %r5, [%r8];\n"
	"\tcvt.u64.u32 %rd5, %r6;\n\tadd.s64 %rd5, %rd4, %rd5;\n"
	"\tst.global.u32 [%rd5], %r5;\n"
	"\tadd.u32 %r1, %r1, 1;\n\tsetp.lt.u32 %p1, %r1, 24;\n"
	"\t@%p1 bra $LO;\n"
	"\tst.global.u32 [%rd4+96], %r10;\n\tst.global.u32 [%rd4+100], %r11;\n"
	"\tst.global.u32 [%rd4+104], %r12;\n\tst.global.u32 [%rd4+108], %r13;\n"
	"\tret;\n";

void
cp_async_lands_when_its_group_is_waited_for(void **state)
{
	static uint32_t src[CPT][CPB / 4], out[CPT][CPO / 4];
	uint32_t seed = 99;

	(void)state;
	for (int t = 0; t < CPT; t++)
		for (int w = 0; w < CPB / 4; w++)
			src[t][w] = sim80_rand(&seed);
	for (int eager = 0; eager < 2; eager++) {
		memset(out, 0xff, sizeof out);
		Arg args[] = {{"SRC", 0, sizeof src, src, 0, 0},
			{"OUT", 0, sizeof out, out, 0, 0}};
		int rc = sim80_run("sm_80", CPT, CPT * CPB, args, 2, cp_body,
			eager);
		if (rc)
			fprintf(stderr, "%s\n", sim80_err);
		assert_int_equal(rc, 0);
		for (int t = 0; t < CPT; t++) {
			uint32_t want[CPO / 4];
			for (int w = 0; w < CPB / 4; w++) {
				uint32_t pat = 0xa5000000u | (uint32_t)t << 8 |
					(uint32_t)w;
				bool zero = (w >= 6 && w < 12) ||
					(w >= 16 && w < 20);
				want[w] = zero ? 0 : w == 15 ? pat : src[t][w];
			}
			/* before the waits: the old bytes, or (eager) the new */
			uint32_t pat = 0xa5000000u | (uint32_t)t << 8;
			want[24] = eager ? src[t][0] : pat;
			want[25] = src[t][0];
			want[26] = eager ? src[t][4] : pat | 4;
			want[27] = eager ? 0 : pat | 8;
			for (int w = 0; w < CPO / 4; w++) {
				if (out[t][w] != want[w])
					fprintf(stderr, "eager %d thread %d word "
						"%d: 0x%08x, want 0x%08x\n", eager, t,
						w, out[t][w], want[w]);
				assert_int_equal(out[t][w], want[w]);
			}
		}
	}
}

/* The reference sheet's ring (cp_async_pipeline.ptx): 128 threads, 3
 * stages of 8 KiB, each thread copying 4 x 16 bytes of each tile and
 * summing one f32 of it; wait_group 1 means tile i has landed.  With
 * wait_group 2 (%s) the tile is read before it lands: NaN bytes. */
static const char ring_body[] =
	"\tld.param.u32 %%r1, [NT];\n\tmov.u32 %%r2, %%r9;\n"
	"\tshl.b32 %%r3, %%r0, 4;\n\tcvt.u64.u32 %%rd3, %%r3;\n"
	"\tmov.u32 %%r4, 0;\n"
	"PROLOGUE:\n"
	"\tsetp.ge.u32 %%p0, %%r4, 2;\n\t@%%p0 bra MAIN;\n"
	"\tmul.lo.u32 %%r5, %%r4, 8192;\n\tadd.u32 %%r6, %%r2, %%r5;\n"
	"\tadd.u32 %%r6, %%r6, %%r3;\n"
	"\tsub.u32 %%r18, %%r1, 1;\n\tmin.u32 %%r18, %%r4, %%r18;\n"
	"\tmul.wide.u32 %%rd1, %%r18, 8192;\n\tadd.s64 %%rd2, %%rd10, %%rd1;\n"
	"\tadd.s64 %%rd2, %%rd2, %%rd3;\n"
	"\tsetp.ge.u32 %%p1, %%r4, %%r1;\n"
	"\tcp.async.cg.shared.global [%%r6], [%%rd2], 16, %%p1;\n"
	"\tcp.async.cg.shared.global [%%r6+2048], [%%rd2+2048], 16, %%p1;\n"
	"\tcp.async.cg.shared.global [%%r6+4096], [%%rd2+4096], 16, %%p1;\n"
	"\tcp.async.cg.shared.global [%%r6+6144], [%%rd2+6144], 16, %%p1;\n"
	"\tcp.async.commit_group;\n"
	"\tadd.u32 %%r4, %%r4, 1;\n\tbra PROLOGUE;\n"
	"MAIN:\n"
	"\tmov.u32 %%r7, 0;\n\tmov.f32 %%f0, 0f00000000;\n"
	"LOOP:\n"
	"\tsetp.ge.u32 %%p2, %%r7, %%r1;\n\t@%%p2 bra EPILOGUE;\n"
	"\tcp.async.wait_group %s;\n\tbar.sync 0;\n"
	"\trem.u32 %%r8, %%r7, 3;\n\tmul.lo.u32 %%r10, %%r8, 8192;\n"
	"\tadd.u32 %%r10, %%r2, %%r10;\n\tadd.u32 %%r11, %%r10, %%r3;\n"
	"\tld.shared.f32 %%f1, [%%r11];\n\tadd.f32 %%f0, %%f0, %%f1;\n"
	"\tadd.u32 %%r12, %%r7, 2;\n\trem.u32 %%r13, %%r12, 3;\n"
	"\tmul.lo.u32 %%r14, %%r13, 8192;\n\tadd.u32 %%r15, %%r2, %%r14;\n"
	"\tadd.u32 %%r15, %%r15, %%r3;\n"
	"\tsub.u32 %%r16, %%r1, 1;\n\tmin.u32 %%r16, %%r12, %%r16;\n"
	"\tmul.wide.u32 %%rd4, %%r16, 8192;\n\tadd.s64 %%rd5, %%rd10, %%rd4;\n"
	"\tadd.s64 %%rd5, %%rd5, %%rd3;\n"
	"\tsetp.ge.u32 %%p3, %%r12, %%r1;\n"
	"\tcp.async.cg.shared.global [%%r15], [%%rd5], 16, %%p3;\n"
	"\tcp.async.cg.shared.global [%%r15+2048], [%%rd5+2048], 16, %%p3;\n"
	"\tcp.async.cg.shared.global [%%r15+4096], [%%rd5+4096], 16, %%p3;\n"
	"\tcp.async.cg.shared.global [%%r15+6144], [%%rd5+6144], 16, %%p3;\n"
	"\tcp.async.commit_group;\n"
	"\tadd.u32 %%r7, %%r7, 1;\n\tbra LOOP;\n"
	"EPILOGUE:\n"
	"\tcp.async.wait_all;\n"
	"\tmul.wide.u32 %%rd7, %%r0, 4;\n\tadd.s64 %%rd8, %%rd11, %%rd7;\n"
	"\tst.global.f32 [%%rd8], %%f0;\n\tret;\n";

void
cp_async_ring_waits_for_the_right_stage(void **state)
{
	enum { NT = 5, TW = 2048 };   /* tiles, f32 words of a tile */
	static float src[NT][TW];
	float out[128], want[128];
	uint32_t seed = 5;
	char body[8192];

	(void)state;
	for (int i = 0; i < NT; i++)
		for (int w = 0; w < TW; w++)   /* eighths: every sum exact */
			src[i][w] = (float)(sim80_rand(&seed) % 1000) / 8 - 60;
	for (int t = 0; t < 128; t++) {
		want[t] = 0;
		for (int i = 0; i < NT; i++)
			want[t] += src[i][4 * t];
	}
	for (int run = 0; run < 3; run++) {
		bool early = run == 2, eager = run == 1;
		memset(out, 0xff, sizeof out);
		snprintf(body, sizeof body, ring_body, early ? "2" : "1");
		Arg args[] = {{"SRC", 0, sizeof src, src, 0, 0},
			{"OUT", 0, sizeof out, out, 0, 0},
			{"NT", "u32", 0, NULL, NT, 0}};
		int rc = sim80_run("sm_80", 128, 3 * 8192, args, 3, body,
			eager);
		if (rc)
			fprintf(stderr, "%s\n", sim80_err);
		assert_int_equal(rc, 0);
		int same = 0;
		for (int t = 0; t < 128; t++)
			same += memcmp(&out[t], &want[t], 4) == 0;
		assert_int_equal(same, early ? 0 : 128);
	}
}

/* Two warps copy 16 bytes a thread into each of two buffers: buffer A's
 * copies arrive on barrier A (count 64) with .noinc; buffer B's with
 * cp.async.mbarrier.arrive (count 64 counting only the 64 explicit
 * arrivals, whose state the wait tests).  Each thread spins on
 * test_wait by state for B (counting its failed tests) and reads the
 * other warp's chunk of B, then by parity for A and reads A's:
 * OUT[t] = {A word, B word, failed tests, parity 1 of the fresh A}.
 * Without the pending count that cp.async.mbarrier.arrive adds, B's
 * phase would complete at the explicit arrivals, before the copies. */
static const char mb_body[] =
	"\tsetp.eq.u32 %p0, %r0, 0;\n"
	"\tadd.u32 %r1, %r9, 2048;\n\tadd.u32 %r2, %r9, 2056;\n"
	"\t@%p0 mbarrier.init.shared.b64 [%r1], 64;\n"
	"\t@%p0 mbarrier.init.shared.b64 [%r2], 64;\n"
	"\tbar.sync 0;\n"
	"\tmbarrier.test_wait.parity.shared.b64 %p5, [%r1], 1;\n"
	"\tshl.b32 %r4, %r0, 4;\n\tcvt.u64.u32 %rd1, %r4;\n"
	"\tadd.s64 %rd2, %rd10, %rd1;\n"
	"\tadd.u32 %r6, %r9, %r4;\n\tadd.u32 %r8, %r6, 1024;\n"
	"\tcp.async.cg.shared.global [%r6], [%rd2], 16;\n"
	"\tcp.async.mbarrier.arrive.noinc.shared.b64 [%r1];\n"
	"\tcp.async.cg.shared.global [%r8], [%rd2+1024], 16;\n"
	"\tcp.async.mbarrier.arrive.shared::cta.b64 [%r2];\n"
	"\tmbarrier.arrive.shared.b64 %rd3, [%r2];\n"
	"\tmov.u32 %r10, 0;\n\tmov.u32 %r12, 0;\n"
	"\txor.b32 %r13, %r4, 512;\n\tadd.u32 %r14, %r9, %r13;\n"
	"$WB:\n"
	"\tmbarrier.test_wait.shared::cta.b64 %p2, [%r2], %rd3;\n"
	"\t@!%p2 add.u32 %r10, %r10, 1;\n"
	"\t@!%p2 bra $WB;\n"
	"\tld.shared.u32 %r16, [%r14+1024];\n"
	"$WA:\n"
	"\tmbarrier.test_wait.parity.shared.b64 %p1, [%r1], %r12;\n"
	"\t@!%p1 bra $WA;\n"
	"\tld.shared.u32 %r15, [%r14];\n"
	"\tselp.u32 %r17, 1, 0, %p5;\n"
	"\tmul.wide.u32 %rd4, %r0, 16;\n\tadd.s64 %rd4, %rd11, %rd4;\n"
	"\tst.global.v4.b32 [%rd4], {%r15, %r16, %r10, %r17};\n"
	"\tret;\n";

void
cp_async_mbarrier_arrive_completes_a_phase(void **state)
{
	static uint32_t src[2][64][4], out[64][4];
	uint32_t seed = 31337;

	(void)state;
	for (int i = 0; i < 2 * 64 * 4; i++)
		(&src[0][0][0])[i] = sim80_rand(&seed);
	for (int eager = 0; eager < 2; eager++) {
		memset(out, 0xff, sizeof out);
		Arg args[] = {{"SRC", 0, sizeof src, src, 0, 0},
			{"OUT", 0, sizeof out, out, 0, 0}};
		int rc = sim80_run("sm_80", 64, 2064, args, 2, mb_body, eager);
		if (rc)
			fprintf(stderr, "%s\n", sim80_err);
		assert_int_equal(rc, 0);
		for (int t = 0; t < 64; t++) {
			assert_int_equal(out[t][0], src[0][t ^ 32][0]);
			assert_int_equal(out[t][1], src[1][t ^ 32][0]);
			assert_int_equal(out[t][3], 1);
			/* the arrivals fire when every warp waits: each thread
			 * saw its test fail at least once */
			if (!eager)
				assert_true(out[t][2] >= 1 && out[t][2] < 100);
		}
	}
}

void
cp_async_faults_and_pending_copies_are_errors(void **state)
{
	static const char *const body[] = {
		/* never waited for */
		"\tcp.async.cg.shared.global [%r9], [%rd10], 16;\n\tret;\n",
		/* wait_group retires committed groups only */
		"\tcp.async.cg.shared.global [%r9], [%rd10], 16;\n"
		"\tcp.async.wait_group 0;\n\tret;\n",
		/* a source outside every buffer (src-size 0 would read none) */
		"\tmov.b64 %rd3, 64;\n"
		"\tcp.async.cg.shared.global [%r9], [%rd3], 16, 1;\n"
		"\tcp.async.wait_all;\n\tret;\n",
		"\tcp.async.cg.shared.global [%r9+8], [%rd10], 16;\n"
		"\tcp.async.wait_all;\n\tret;\n",
		"\tcp.async.cg.shared.global [%r9], [%rd10], 16, 17;\n"
		"\tcp.async.wait_all;\n\tret;\n",
		"\tcp.async.mbarrier.arrive.noinc.shared.b64 [%r9];\n\tret;\n",
		"\tcp.async.cg.shared.global [%r9], [%rd10], 8;\n\tret;\n",
		/* an mbarrier placed over a copy before it lands */
		"\tcp.async.cg.shared.global [%r9], [%rd10], 16;\n"
		"\tmbarrier.init.shared.b64 [%r9+8], 1;\n"
		"\tcp.async.wait_all;\n\tret;\n",
	};
	static const char *const why[] = {
		"exited with 32 cp.async copies that never landed",
		"exited with 32 cp.async copies that never landed",
		"a cp.async read of 1 bytes at global address 0x40 is outside",
		"misaligned",
		"a cp.async of 16 bytes with src-size 17",
		"where no mbarrier was initialized",
		"cp-size must be 16 (.cg)",
		"writes over the mbarrier at 0x408",
	};
	uint8_t src[64] = {0};

	(void)state;
	for (size_t i = 0; i < sizeof why / sizeof *why; i++) {
		Arg args[] = {{"SRC", 0, sizeof src, src, 0, 0}};
		assert_int_equal(sim80_run("sm_80", 32, 128, args, 1, body[i],
			false), -1);
		if (!strstr(sim80_err, why[i]))
			fprintf(stderr, "case %zu: %s\n", i, sim80_err);
		assert_non_null(strstr(sim80_err, why[i]));
	}
}

/* Spinning on test_wait yields: with no arrival the launch is a hang
 * naming the barrier, not an endless loop; with one it completes. */
void
a_test_wait_spin_that_never_completes_is_a_hang(void **state)
{
	static const char body[] =
		"\tsetp.eq.u32 %%p0, %%r0, 0;\n"
		"\t@%%p0 mbarrier.init.shared.b64 [%%r9], 1;\n"
		"\tbar.sync 0;\n%s"
		"\tmov.u32 %%r1, 0;\n"
		"$L:\n"
		"\tmbarrier.test_wait.parity.shared.b64 %%p1, [%%r9], %%r1;\n"
		"\t@!%%p1 bra $L;\n\tret;\n";
	char b[1024];

	(void)state;
	snprintf(b, sizeof b, body, "");
	assert_int_equal(sim80_run("sm_80", 64, 16, NULL, 0, b, false), -1);
	if (!strstr(sim80_err, "hang in CTA (0,0,0)"))
		fprintf(stderr, "%s\n", sim80_err);
	assert_non_null(strstr(sim80_err, "hang in CTA (0,0,0)"));
	assert_non_null(strstr(sim80_err, "warp 1: pc"));
	assert_non_null(strstr(sim80_err, "waits on the mbarrier at shared "
		"0x400 (fg_smem+0) for the phase of parity 0"));
	snprintf(b, sizeof b, body, "\tsetp.eq.u32 %p2, %r0, 40;\n"
		"\t@%p2 mbarrier.arrive.shared.b64 _, [%r9];\n");
	if (sim80_run("sm_80", 64, 16, NULL, 0, b, false))
		fprintf(stderr, "%s\n", sim80_err);
	assert_int_equal(sim80_run("sm_80", 64, 16, NULL, 0, b, false), 0);
}

/* The reference sheet's named_barriers_sm80.ptx: warp 0 produces 4
 * rounds into 2 slots (bar.arrive "full", bar.sync "empty", one id per
 * slot), warp 1 consumes them; then barrier.sync with register operands
 * and bar.sync 0.  OUT[t]: the consumer's sum, 0 for the producer. */
static const char nb_body[] =
	"\tshr.u32 %r1, %r0, 5;\n\tand.b32 %r2, %r0, 31;\n"
	"\tshl.b32 %r3, %r2, 2;\n\tmov.u32 %r4, %r9;\n"
	"\tmov.u32 %r5, 0;\n\tmov.u32 %r6, 0;\n"
	"\tsetp.eq.u32 %p0, %r1, 0;\n\t@!%p0 bra CONSUMER;\n"
	"PRODUCER:\n"
	"\tsetp.ge.u32 %p1, %r5, 4;\n\t@%p1 bra DONE;\n"
	"\tand.b32 %r7, %r5, 1;\n\tadd.u32 %r14, %r7, 1;\n"
	"\tadd.u32 %r15, %r7, 3;\n\tsetp.lt.u32 %p2, %r5, 2;\n"
	"\t@!%p2 bar.sync %r15, 64;\n"
	"\tshl.b32 %r8, %r7, 7;\n\tadd.u32 %r10, %r4, %r8;\n"
	"\tadd.u32 %r10, %r10, %r3;\n\tmad.lo.u32 %r11, %r5, 100, %r2;\n"
	"\tst.shared.u32 [%r10], %r11;\n\tbar.arrive %r14, 64;\n"
	"\tadd.u32 %r5, %r5, 1;\n\tbra PRODUCER;\n"
	"CONSUMER:\n"
	"\tsetp.ge.u32 %p1, %r5, 4;\n\t@%p1 bra DONE;\n"
	"\tand.b32 %r7, %r5, 1;\n\tadd.u32 %r14, %r7, 1;\n"
	"\tadd.u32 %r15, %r7, 3;\n\tbar.sync %r14, 64;\n"
	"\tshl.b32 %r8, %r7, 7;\n\tadd.u32 %r10, %r4, %r8;\n"
	"\tadd.u32 %r10, %r10, %r3;\n\tld.shared.u32 %r11, [%r10];\n"
	"\tadd.u32 %r6, %r6, %r11;\n\tsetp.lt.u32 %p3, %r5, 2;\n"
	"\t@%p3 bar.arrive %r15, 64;\n"
	"\tadd.u32 %r5, %r5, 1;\n\tbra CONSUMER;\n"
	"DONE:\n"
	"\tmov.u32 %r12, 5;\n\tmov.u32 %r13, 64;\n"
	"\tbarrier.sync %r12, %r13;\n\tbar.sync 0;\n"
	"\tmul.wide.u32 %rd1, %r0, 4;\n\tadd.s64 %rd2, %rd10, %rd1;\n"
	"\tst.global.u32 [%rd2], %r6;\n\tret;\n";

void
named_barriers_hand_off_between_warps(void **state)
{
	uint32_t out[64];

	(void)state;
	memset(out, 0xff, sizeof out);
	Arg args[] = {{"OUT", 0, sizeof out, out, 0, 0}};
	int rc = sim80_run("sm_80", 64, 256, args, 1, nb_body, false);
	if (rc)
		fprintf(stderr, "%s\n", sim80_err);
	assert_int_equal(rc, 0);
	for (int t = 0; t < 64; t++) {
		uint32_t want = 0;
		for (uint32_t r = 0; t >= 32 && r < 4; r++)
			want += 100 * r + (uint32_t)(t % 32);
		assert_int_equal(out[t], want);
	}
}
