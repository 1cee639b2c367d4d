/* sim80_async.c: mbarrier.test_wait and named barriers on sm_80
 * (unit.sim80). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "sim80.h"

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
