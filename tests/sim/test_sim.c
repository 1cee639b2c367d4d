/* test_sim.c: the simulator's instructions against hand-computed results
 * (issue #18; meson test unit.sim).  Each case is a small PTX kernel in
 * fagen's shape whose threads write one u32 each to OUT[tid]. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sim.h"

static char err[4096];

/* Runs BODY (result in %r1) with the given threads and shared memory;
 * OUT gets one u32 per thread.  Returns 0, or -1 with err set. */
static int
run(const char *body, int threads, int smem, uint32_t *out)
{
	char ptx[16384];
	Sim *s = sim_new();

	snprintf(ptx, sizeof ptx,
		"// fagen.kernel name=t target=sm_90a threads=%d "
		"cluster=1,1,1 smem=%d order=single tiles=0\n"
		"// fagen.arg 0 global OUT u32 rank=1 dims %d\n"
		".version 8.6\n.target sm_90a\n.address_size 64\n"
		".extern .shared .align 1024 .b8 fg_smem[];\n"
		".visible .entry t(.param .u64 OUT)\n{\n"
		"\t.reg .pred %%p<8>;\n\t.reg .b32 %%r<32>;\n"
		"\t.reg .b64 %%rd<8>;\n\t.reg .f32 %%f<8>;\n"
		"\tmov.u32 %%r0, %%tid.x;\n\tmov.u32 %%r9, fg_smem;\n"
		"%s"
		"\tld.param.u64 %%rd0, [OUT];\n"
		"\tmul.wide.u32 %%rd1, %%r0, 4;\n"
		"\tadd.s64 %%rd1, %%rd0, %%rd1;\n"
		"\tst.global.u32 [%%rd1], %%r1;\n\tret;\n}\n",
		threads, smem, threads, body);
	SimMod *m = sim_load(ptx, strlen(ptx), err, sizeof err);
	if (!m) {
		sim_free(s);
		return -1;
	}
	SimVal v = {.ptr = sim_alloc(s, (size_t)threads * 4)};
	int rc = sim_launch(s, m, &v, 1);
	if (rc)
		snprintf(err, sizeof err, "%s", sim_error(s));
	else
		memcpy(out, sim_host(s, v.ptr, (size_t)threads * 4),
			(size_t)threads * 4);
	sim_mod_free(m);
	sim_free(s);
	return rc;
}

static void
int_ops_wrap_at_their_width(void **state)
{
	uint32_t o[32];
	static const char *const body[] = {
		"\tmov.b32 %r2, 2147483647;\n\tadd.s32 %r1, %r2, 1;\n",
		"\tmov.b32 %r2, -7;\n\tdiv.s32 %r1, %r2, 2;\n",
		"\tmov.b32 %r2, -7;\n\trem.s32 %r1, %r2, 2;\n",
		"\tmov.b32 %r2, -8;\n\tshr.s32 %r1, %r2, 1;\n",
		"\tmov.b32 %r2, -8;\n\tshr.u32 %r1, %r2, 40;\n",
		"\tmov.b32 %r2, 65536;\n\tmul.hi.u32 %r1, %r2, %r2;\n",
		"\tmov.b32 %r2, -3;\n\tmul.wide.s32 %rd2, %r2, 4;\n"
			"\tshr.u64 %rd2, %rd2, 32;\n\tcvt.u32.u64 %r1, %rd2;\n",
		"\tmad.lo.s32 %r1, %r0, 3, 5;\n",
	};
	const uint32_t want[] = {0x80000000u, (uint32_t)-3, (uint32_t)-1,
		(uint32_t)-4, 0, 1, 0xffffffffu, 5};

	(void)state;
	for (size_t i = 0; i < sizeof want / 4; i++) {
		assert_int_equal(run(body[i], 32, 0, o), 0);
		assert_int_equal(o[0], want[i]);
	}
	assert_int_equal(o[7], 26);   /* mad: 7 * 3 + 5 */
}

static void
setp_compares_by_type(void **state)
{
	uint32_t o[32];

	(void)state;
	assert_int_equal(run("\tmov.b32 %r2, -1;\n"
		"\tsetp.lt.s32 %p1, %r2, 0;\n\tsetp.lt.u32 %p2, %r2, 0;\n"
		"\tselp.b32 %r3, 2, 0, %p1;\n\tselp.b32 %r4, 1, 0, %p2;\n"
		"\tor.b32 %r1, %r3, %r4;\n", 32, 0, o), 0);
	assert_int_equal(o[5], 2);
	/* an unordered compare: NaN is not != anything (setp.ne is ordered) */
	assert_int_equal(run("\tmov.f32 %f1, 0f7FC00000;\n"
		"\tsetp.ne.f32 %p1, %f1, %f1;\n\tselp.b32 %r1, 1, 0, %p1;\n", 32,
		0, o), 0);
	assert_int_equal(o[0], 0);
}

static void
cvt_rounds_to_nearest_even(void **state)
{
	uint32_t o[32];

	(void)state;
	/* bf16 ties: 1 + 2^-8 -> 1.0 (0x3f80), 1 + 3 * 2^-8 -> 0x3f82;
	 * the first source lands in the upper half */
	assert_int_equal(run("\tmov.f32 %f1, 0f3F808000;\n"
		"\tmov.f32 %f2, 0f3F818000;\n"
		"\tcvt.rn.bf16x2.f32 %r1, %f1, %f2;\n", 32, 0, o), 0);
	assert_int_equal(o[0], 0x3f803f82u);
	/* f16: 65520 rounds to inf, 1/3 to 0x3555 */
	assert_int_equal(run("\tmov.f32 %f1, 0f477FF000;\n"
		"\tmov.f32 %f2, 0f3EAAAAAB;\n"
		"\tcvt.rn.f16x2.f32 %r1, %f1, %f2;\n", 32, 0, o), 0);
	assert_int_equal(o[0], 0x7c003555u);
}

static void
cvt_rzi_truncates_and_saturates(void **state)
{
	uint32_t o[32];

	(void)state;
	assert_int_equal(run("\tmov.f32 %f1, 0fC02CCCCD;\n"
		"\tcvt.rzi.s32.f32 %r1, %f1;\n", 32, 0, o), 0);
	assert_int_equal(o[0], (uint32_t)-2);           /* -2.7 */
	assert_int_equal(run("\tmov.f32 %f1, 0f4F32D05E;\n"
		"\tcvt.rzi.s32.f32 %r1, %f1;\n", 32, 0, o), 0);
	assert_int_equal(o[0], 0x7fffffffu);            /* 3e9 */
	/* 1e19 is above 2^63: INT64_MAX, not a wrapped conversion */
	assert_int_equal(run("\tmov.f32 %f1, 0f5F0AC723;\n"
		"\tcvt.rzi.s64.f32 %rd2, %f1;\n\tshr.u64 %rd2, %rd2, 32;\n"
		"\tcvt.u32.u64 %r1, %rd2;\n", 32, 0, o), 0);
	assert_int_equal(o[0], 0x7fffffffu);
	assert_int_equal(run("\tmov.f32 %f1, 0f7FC00000;\n"
		"\tcvt.rzi.u32.f32 %r1, %f1;\n", 32, 0, o), 0);
	assert_int_equal(o[0], 0);                      /* NaN */
}

static void
approx_functions_are_the_rounded_exact_ones(void **state)
{
	uint32_t o[32];

	(void)state;
	/* ex2(0.5) = sqrt(2) = 0x3fb504f3 rounded; 2^-130 is subnormal and
	 * .ftz flushes it */
	assert_int_equal(run("\tmov.f32 %f1, 0f3F000000;\n"
		"\tex2.approx.ftz.f32 %f2, %f1;\n\tmov.b32 %r1, %f2;\n", 32, 0,
		o), 0);
	assert_int_equal(o[0], 0x3fb504f3u);
	assert_int_equal(run("\tmov.f32 %f1, 0fC3020000;\n"
		"\tex2.approx.ftz.f32 %f2, %f1;\n\tmov.b32 %r1, %f2;\n", 32, 0,
		o), 0);
	assert_int_equal(o[0], 0);
	assert_int_equal(run("\tmov.f32 %f1, 0f40000000;\n"
		"\trcp.approx.ftz.f32 %f2, %f1;\n\tlg2.approx.ftz.f32 %f3, %f2;\n"
		"\tmov.b32 %r1, %f3;\n", 32, 0, o), 0);
	assert_int_equal(o[0], 0xbf800000u);   /* log2(1/2) = -1 */
	/* sqrt(4) = 2, rsqrt(4) = 0.5, rsqrt(0) = +inf, sqrt(-1) NaN */
	assert_int_equal(run("\tmov.f32 %f1, 0f40800000;\n"
		"\tsqrt.approx.ftz.f32 %f2, %f1;\n\tmov.b32 %r1, %f2;\n", 32, 0,
		o), 0);
	assert_int_equal(o[0], 0x40000000u);
	assert_int_equal(run("\tmov.f32 %f1, 0f40800000;\n"
		"\trsqrt.approx.ftz.f32 %f2, %f1;\n\tmov.b32 %r1, %f2;\n", 32,
		0, o), 0);
	assert_int_equal(o[0], 0x3f000000u);
	assert_int_equal(run("\tmov.f32 %f1, 0f00000000;\n"
		"\trsqrt.approx.ftz.f32 %f2, %f1;\n\tmov.b32 %r1, %f2;\n", 32,
		0, o), 0);
	assert_int_equal(o[0], 0x7f800000u);
	assert_int_equal(run("\tmov.f32 %f1, 0fBF800000;\n"
		"\tsqrt.approx.ftz.f32 %f2, %f1;\n\tmov.b32 %r1, %f2;\n", 32, 0,
		o), 0);
	assert_true((o[0] & 0x7f800000u) == 0x7f800000u && (o[0] & 0x7fffffu));
}

static void
lanes_shuffle_vote_and_elect(void **state)
{
	uint32_t o[32];

	(void)state;
	assert_int_equal(run("\tshfl.sync.bfly.b32 %r1, %r0, 1, 31, "
		"0xffffffff;\n", 32, 0, o), 0);
	assert_int_equal(o[4], 5);
	assert_int_equal(o[5], 4);
	/* up by 2 within segments of 8 (c = 0x1800: mask 0x18, clamp 0) */
	assert_int_equal(run("\tshfl.sync.up.b32 %r1, %r0, 2, 0x1800, "
		"0xffffffff;\n", 32, 0, o), 0);
	assert_int_equal(o[9], 9);    /* below its segment: keeps its own */
	assert_int_equal(o[11], 9);
	assert_int_equal(run("\tand.b32 %r2, %r0, 1;\n"
		"\tsetp.ne.u32 %p1, %r2, 0;\n"
		"\tvote.sync.ballot.b32 %r1, %p1, 0xffffffff;\n", 32, 0, o), 0);
	assert_int_equal(o[0], 0xaaaaaaaau);
	/* elect among lanes 3..31: lane 3 */
	assert_int_equal(run("\tmov.b32 %r1, 0;\n"
		"\tsetp.lt.u32 %p1, %r0, 3;\n\t@%p1 bra $L1;\n"
		"\telect.sync %r2|%p2, 0xfffffff8;\n"
		"\tselp.b32 %r1, 1, 0, %p2;\n\tadd.s32 %r1, %r1, %r2;\n"
		"$L1:\n", 32, 0, o), 0);
	assert_int_equal(o[3], 4);
	assert_int_equal(o[4], 3);
	assert_int_equal(o[0], 0);
}

static void
divergent_lanes_reconverge(void **state)
{
	uint32_t o[32];

	(void)state;
	assert_int_equal(run("\tmov.b32 %r1, 0;\n"
		"\tsetp.lt.u32 %p1, %r0, 5;\n\t@%p1 bra $L1;\n"
		"\tadd.s32 %r1, %r1, 100;\n$L1:\n\tadd.s32 %r1, %r1, 1;\n"
		"\tshfl.sync.idx.b32 %r1, %r1, 31, 31, 0xffffffff;\n"
		"\tadd.s32 %r1, %r1, %r0;\n", 32, 0, o), 0);
	assert_int_equal(o[0], 101);    /* lane 31 took the long way */
	assert_int_equal(o[7], 108);
}

static void
bar_sync_orders_the_warps(void **state)
{
	uint32_t o[64];

	(void)state;
	/* warp 1 writes shared memory; warp 0 (run first) reads it after
	 * bar.sync, so it sees the value, not the 0xff fill */
	assert_int_equal(run("\tsetp.lt.u32 %p1, %r0, 32;\n"
		"\t@%p1 bra $L1;\n\tst.shared.u32 [%r9], 1234;\n$L1:\n"
		"\tbar.sync 0;\n\tld.shared.u32 %r1, [%r9];\n", 64, 16, o), 0);
	assert_int_equal(o[0], 1234);
	assert_int_equal(o[63], 1234);
}

static void
mbarrier_phases_follow_arrivals(void **state)
{
	uint32_t o[64];

	(void)state;
	/* count 32: parity 1 of a fresh barrier (the phase before the
	 * first) has completed; warp 0 (run first) then waits on parity 0
	 * until warp 1's 32 threads arrive.  Waiting on parity 1 after that
	 * would hang: it names the phase now in progress. */
	int rc = run("\tadd.s32 %r3, %r9, 8;\n\tmov.pred %p3, 0;\n"
		"\tsetp.ne.u32 %p1, %r0, 0;\n\t@%p1 bra $L0;\n"
		"\tmbarrier.init.shared::cta.b64 [%r3], 32;\n"
		"\tmbarrier.try_wait.parity.shared::cta.b64 %p3, [%r3], 1;\n"
		"$L0:\n"
		"\tbar.sync 0;\n\tsetp.lt.u32 %p1, %r0, 32;\n\t@%p1 bra $L1;\n"
		"\tst.shared.u32 [%r9], 77;\n"
		"\tmbarrier.arrive.shared::cta.b64 _, [%r3];\n"
		"\tbra.uni $L2;\n$L1:\n"
		"\tmbarrier.try_wait.parity.shared::cta.b64 %p2, [%r3], 0;\n"
		"\t@!%p2 bra $L1;\n$L2:\n"
		"\tld.shared.u32 %r1, [%r9];\n\tselp.b32 %r4, 1, 0, %p3;\n"
		"\tadd.s32 %r1, %r1, %r4;\n", 64, 16, o);
	if (rc)
		fprintf(stderr, "%s\n", err);
	assert_int_equal(rc, 0);
	assert_int_equal(o[0], 78);
	assert_int_equal(o[1], 77);
	assert_int_equal(o[40], 77);
}

static void
a_hang_names_every_warp(void **state)
{
	uint32_t o[64];

	(void)state;
	/* 16 transaction bytes are expected and nothing brings them */
	assert_int_equal(run("\tsetp.ne.u32 %p1, %r0, 0;\n\t@%p1 bra $L0;\n"
		"\tmbarrier.init.shared::cta.b64 [%r9], 1;\n"
		"\tmbarrier.arrive.expect_tx.shared::cta.b64 _, [%r9], 16;\n"
		"$L0:\n\tbar.sync 0;\n$L1:\n"
		"\tmbarrier.try_wait.parity.shared::cta.b64 %p2, [%r9], 0;\n"
		"\t@!%p2 bra $L1;\n\tmov.b32 %r1, 0;\n", 64, 16, o), -1);
	assert_non_null(strstr(err, "hang in CTA (0,0,0)"));
	assert_non_null(strstr(err, "warp 1: pc"));
	assert_non_null(strstr(err, "PTX line 22 'mbarrier.try_wait"));
	assert_non_null(strstr(err, "0 of 1 arrivals and 16 transaction "
		"bytes pending"));
}

static void
faults_and_unmodelled_opcodes_are_errors(void **state)
{
	uint32_t o[32];

	(void)state;
	assert_int_equal(run("\tpopc.b32 %r1, %r0;\n", 32, 0, o), -1);
	assert_string_equal(err, "line 15: instruction 'popc.b32' is not "
		"modelled by the simulator");
	assert_int_equal(run("\tld.shared.u32 %r1, [%r9+16];\n", 32, 16, o),
		-1);
	assert_non_null(strstr(err, "outside the kernel's shared memory"));
	assert_int_equal(run("\tld.shared.u32 %r1, [%r9+2];\n", 32, 16, o),
		-1);
	assert_non_null(strstr(err, "misaligned"));
	assert_int_equal(run("\tdiv.u32 %r1, %r0, 0;\n", 32, 0, o), -1);
	assert_non_null(strstr(err, "division by zero"));
}

/* A guarded load whose guard fails makes no access (issue #22's
 * gathers: 'mov 0', then '@p ld.global.nc' of an index that may be out
 * of bounds): the lanes that load read OUT's zeroed word, the others
 * keep 7, and no lane faults on the address 8; unguarded, they do. */
static void
guarded_off_load_makes_no_access(void **state)
{
	static const char load[] = "\tld.param.u64 %rd3, [OUT];\n"
		"\tcvta.to.global.u64 %rd3, %rd3;\n"
		"\tsetp.lt.u32 %p1, %r0, 16;\n\tmov.b32 %r1, 7;\n"
		"\t@%p1 ld.global.nc.u32 %r1, [%rd3];\n"
		"\tmov.b64 %rd4, 8;\n\tsetp.ne.u32 %p2, %r0, %r0;\n"
		"\t@%p2 ld.global.nc.u32 %r1, [%rd4];\n";
	char body[1024];
	uint32_t o[32];

	(void)state;
	assert_int_equal(run(load, 32, 0, o), 0);
	for (int t = 0; t < 32; t++)
		assert_int_equal(o[t], t < 16 ? 0 : 7);
	snprintf(body, sizeof body, "%s\t@!%%p1 ld.global.nc.u32 %%r2, "
		"[%%rd4];\n", load);
	assert_int_equal(run(body, 32, 0, o), -1);
	assert_non_null(strstr(err, "outside every buffer"));
}

/* A TMA load of an 8 x 64 bf16 box at row 2 of an 8-row tensor under
 * the 128B swizzle: 16-byte chunk c of box row r lands at chunk c ^ r,
 * and rows 8..9 are outside, so zero.  Thread t reads the word at
 * r * 128 + p * 16 (r = t / 4, p = t % 4): box row r, columns 8(p ^ r)
 * and + 1. */
static void
tma_load_swizzles_and_fills(void **state)
{
	static const char ptx[] =
		"// fagen.kernel name=t target=sm_90a threads=32 "
		"cluster=1,1,1 smem=2048 order=single tiles=0\n"
		"// fagen.arg 0 global OUT u32 rank=1 dims 32\n"
		"// fagen.arg 1 global X bf16 rank=2 dims 8 ; 64\n"
		"// fagen.arg 2 tma tx of=X box=8,64 swizzle=128 oob=zero\n"
		".version 8.6\n.target sm_90a\n.address_size 64\n"
		".extern .shared .align 1024 .b8 fg_smem[];\n"
		".visible .entry t(.param .u64 OUT, .param .u64 X,\n"
		"\t.param .align 64 .b8 tx[128])\n{\n"
		"\t.reg .pred %p<4>;\n\t.reg .b32 %r<16>;\n"
		"\t.reg .b64 %rd<4>;\n"
		"\tmov.u32 %r0, %tid.x;\n\tmov.u32 %r9, fg_smem;\n"
		"\tadd.s32 %r8, %r9, 1024;\n"
		"\tsetp.ne.u32 %p1, %r0, 0;\n\t@%p1 bra $L0;\n"
		"\tmbarrier.init.shared::cta.b64 [%r8], 1;\n"
		"\tmbarrier.arrive.expect_tx.shared::cta.b64 _, [%r8], 1024;\n"
		"\tmov.b64 %rd2, tx;\n\tcvta.param.u64 %rd2, %rd2;\n"
		"\tmov.b32 %r2, 0;\n\tmov.b32 %r3, 2;\n"
		"\tcp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::"
		"complete_tx::bytes [%r9], [%rd2, {%r2, %r3}], [%r8];\n"
		"$L0:\n\tbar.warp.sync 0xffffffff;\n$L1:\n"
		"\tmbarrier.try_wait.parity.shared::cta.b64 %p2, [%r8], 0;\n"
		"\t@!%p2 bra $L1;\n"
		"\tshr.u32 %r4, %r0, 2;\n\tand.b32 %r5, %r0, 3;\n"
		"\tshl.b32 %r6, %r4, 7;\n\tshl.b32 %r7, %r5, 4;\n"
		"\tadd.s32 %r6, %r6, %r7;\n\tadd.s32 %r6, %r6, %r9;\n"
		"\tld.shared.u32 %r1, [%r6];\n"
		"\tld.param.u64 %rd0, [OUT];\n"
		"\tmul.wide.u32 %rd1, %r0, 4;\n\tadd.s64 %rd1, %rd0, %rd1;\n"
		"\tst.global.u32 [%rd1], %r1;\n\tret;\n}\n";
	Sim *s = sim_new();
	SimMod *m = sim_load(ptx, strlen(ptx), err, sizeof err);
	SimVal v[2];

	(void)state;
	if (!m)
		fprintf(stderr, "%s\n", err);
	assert_non_null(m);
	v[0].ptr = sim_alloc(s, 128);
	v[1].ptr = sim_alloc(s, 8 * 64 * 2);
	uint16_t *x = sim_host(s, v[1].ptr, 8 * 64 * 2);
	for (int i = 0; i < 8 * 64; i++)
		x[i] = (uint16_t)i;   /* row * 64 + col */
	int rc = sim_launch(s, m, v, 2);
	if (rc)
		fprintf(stderr, "%s\n", sim_error(s));
	assert_int_equal(rc, 0);
	const uint32_t *o = sim_host(s, v[0].ptr, 128);
	for (int t = 0; t < 32; t++) {
		int r = t / 4, c = (t % 4) ^ r, row = 2 + r;
		uint32_t want = row < 8 ? (uint32_t)(row * 64 + 8 * c) |
			(uint32_t)(row * 64 + 8 * c + 1) << 16 : 0;
		assert_int_equal(o[t], want);
	}
	sim_mod_free(m);
	sim_free(s);
}

/* Vector movs split and join (they were once dropped silently), the
 * exact cvt.f32.bf16, and red.global.add.f32 from every lane. */
static void
vector_mov_cvt_and_red_add(void **state)
{
	static const char ptx[] =
		"// fagen.kernel name=t target=sm_90a threads=32 "
		"cluster=1,1,1 smem=0 order=single tiles=0\n"
		"// fagen.arg 0 global OUT u32 rank=1 dims 64\n"
		".version 8.6\n.target sm_90a\n.address_size 64\n"
		".visible .entry t(.param .u64 OUT)\n{\n"
		"\t.reg .b16 %h<4>;\n\t.reg .b32 %r<8>;\n"
		"\t.reg .f32 %f<4>;\n\t.reg .b64 %rd<4>;\n"
		"\tmov.u32 %r0, %tid.x;\n"
		"\tmov.b32 %r1, 0x40003f80;\n"      /* bf16 2.0 : 1.0 */
		"\tmov.b32 {%h0, %h1}, %r1;\n"
		"\tcvt.f32.bf16 %f0, %h0;\n\tcvt.f32.bf16 %f1, %h1;\n"
		"\tmov.b32 %r2, {%h1, %h0};\n"
		"\tld.param.u64 %rd0, [OUT];\n"
		"\tcvta.to.global.u64 %rd0, %rd0;\n"
		"\tmul.wide.u32 %rd1, %r0, 4;\n\tadd.s64 %rd1, %rd0, %rd1;\n"
		"\tst.global.u32 [%rd1], %r2;\n"
		"\tadd.s64 %rd2, %rd0, 128;\n"
		"\tred.global.add.f32 [%rd2], %f1;\n"
		"\tmov.b32 %r3, %f0;\n\tst.global.u32 [%rd2+4], %r3;\n"
		"\tret;\n}\n";
	Sim *s = sim_new();
	SimMod *m = sim_load(ptx, strlen(ptx), err, sizeof err);
	SimVal v;
	float f;

	(void)state;
	if (!m)
		fprintf(stderr, "%s\n", err);
	assert_non_null(m);
	v.ptr = sim_alloc(s, 64 * 4);
	memset(sim_host(s, v.ptr, 64 * 4), 0, 64 * 4);
	assert_int_equal(sim_launch(s, m, &v, 1), 0);
	const uint32_t *o = sim_host(s, v.ptr, 64 * 4);
	for (int t = 0; t < 32; t++)
		assert_int_equal(o[t], 0x3f804000u);   /* joined, swapped */
	memcpy(&f, &o[32], 4);
	assert_true(f == 64.0f);                    /* 32 lanes add 2.0 */
	memcpy(&f, &o[33], 4);
	assert_true(f == 1.0f);
	sim_mod_free(m);
	sim_free(s);
}

/* Tensor memory (sm_100a): an M = 128, N = 16 MMA of bf16 operands laid
 * out without swizzle (K-major core matrices: 16-byte rows, LBO 128,
 * SBO 256) into columns the warp allocated, twice (D = AB, then D += AB),
 * committed to an mbarrier, and read back with tcgen05.ld: A[m][k] is 1
 * where k = m % 16, B[n][k] = 16n + k, so D[m][n] = 2 (16n + m % 16);
 * thread t reads lane t, column 3. */
static const char tc_mma[] =
	"\t.reg .b16 %h<4>;\n"
	"\tmov.b32 %r2, 0;\n"
	"\tand.b32 %r3, %r0, 15;\n"
	"$LA:\n"
	"\tsetp.eq.s32 %p1, %r3, %r2;\n"
	"\tselp.f32 %f1, 0f3F800000, 0f00000000, %p1;\n"
	"\tcvt.rn.bf16.f32 %h1, %f1;\n"
	"\tand.b32 %r4, %r0, 7;\n\tshl.b32 %r4, %r4, 4;\n"
	"\tshr.u32 %r5, %r0, 3;\n\tshl.b32 %r5, %r5, 8;\n"
	"\tadd.s32 %r4, %r4, %r5;\n"
	"\tshr.u32 %r5, %r2, 3;\n\tshl.b32 %r5, %r5, 7;\n"
	"\tadd.s32 %r4, %r4, %r5;\n"
	"\tand.b32 %r5, %r2, 7;\n\tshl.b32 %r5, %r5, 1;\n"
	"\tadd.s32 %r4, %r4, %r5;\n\tadd.s32 %r4, %r4, %r9;\n"
	"\tst.shared.b16 [%r4], %h1;\n"
	"\tsetp.lt.u32 %p2, %r0, 16;\n"
	"\tmad.lo.s32 %r6, %r0, 16, %r2;\n"
	"\tcvt.rn.f32.s32 %f2, %r6;\n\tcvt.rn.bf16.f32 %h2, %f2;\n"
	"\tadd.s32 %r7, %r4, 4096;\n"
	"\t@%p2 st.shared.b16 [%r7], %h2;\n"
	"\tadd.s32 %r2, %r2, 1;\n"
	"\tsetp.lt.s32 %p3, %r2, 16;\n\t@%p3 bra $LA;\n"
	"\tshr.u32 %r10, %r0, 5;\n"
	"\tsetp.eq.u32 %p4, %r10, 0;\n"
	"\tadd.s32 %r11, %r9, 8200;\n\tadd.s32 %r12, %r9, 8192;\n"
	"\t@!%p4 bra $LB;\n"
	"\ttcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r11], 32;\n"
	"\ttcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;\n"
	"\tmbarrier.init.shared::cta.b64 [%r12], 1;\n"
	"$LB:\n"
	"\tbar.sync 0;\n"
	"\tld.shared.b32 %r13, [%r11];\n"
	"\tsetp.eq.u32 %p5, %r0, 0;\n"
	"\tshr.u32 %r14, %r9, 4;\n\tcvt.u64.u32 %rd2, %r14;\n"
	"\tor.b64 %rd2, %rd2, 0x0000401000080000;\n"
	"\tadd.s32 %r15, %r9, 4096;\n\tshr.u32 %r15, %r15, 4;\n"
	"\tcvt.u64.u32 %rd3, %r15;\n"
	"\tor.b64 %rd3, %rd3, 0x0000401000080000;\n"
	"\t@%p5 tcgen05.mma.cta_group::1.kind::f16 [%r13], %rd2, %rd3, "
	"0x8040490, 0;\n"
	"\t@%p5 tcgen05.mma.cta_group::1.kind::f16 [%r13], %rd2, %rd3, "
	"0x8040490, 1;\n"
	"\t@%p5 tcgen05.commit.cta_group::1.mbarrier::arrive::one."
	"shared::cluster.b64 [%r12];\n"
	"$LW:\n"
	"\tmbarrier.try_wait.parity.shared::cta.b64 %p6, [%r12], 0;\n"
	"\t@!%p6 bra $LW;\n"
	"\ttcgen05.fence::after_thread_sync;\n"
	"\tand.b32 %r16, %r10, 3;\n\tshl.b32 %r16, %r16, 21;\n"
	"\tadd.s32 %r16, %r16, %r13;\n\tadd.s32 %r16, %r16, 3;\n"
	"\ttcgen05.ld.sync.aligned.32x32b.x1.b32 {%r17}, [%r16];\n"
	"\ttcgen05.wait::ld.sync.aligned;\n"
	"\tmov.b32 %f3, %r17;\n\tcvt.rzi.u32.f32 %r1, %f3;\n"
	"\ttcgen05.fence::before_thread_sync;\n"
	"\tbar.sync 0;\n"
	"\t@%p4 tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r13, 32;\n";

static void
tcgen05_mma_into_tensor_memory(void **state)
{
	uint32_t o[128];

	(void)state;
	if (run(tc_mma, 128, 8208, o))
		fprintf(stderr, "%s\n", err);
	assert_int_equal(run(tc_mma, 128, 8208, o), 0);
	for (int t = 0; t < 128; t++)
		assert_int_equal(o[t], 2 * (48 + t % 16));
}

/* tcgen05.st then ld of two columns from each warp's own lanes; the
 * second allocation lands above the first; and the errors: a warp's
 * lanes, columns outside the allocation, a count not a power of two, an
 * exit without dealloc. */
static void
tcgen05_ld_st_and_allocation(void **state)
{
	static const char *const head =
		"\tshr.u32 %r10, %r0, 5;\n"
		"\tadd.s32 %r11, %r9, 16;\n\tadd.s32 %r12, %r9, 20;\n"
		"\tsetp.eq.u32 %p4, %r10, 0;\n\t@!%p4 bra $LB;\n"
		"\ttcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 "
		"[%r11], 32;\n"
		"\ttcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 "
		"[%r12], 64;\n"
		"$LB:\n\tbar.sync 0;\n"
		"\tld.shared.b32 %r13, [%r12];\n"
		"\tand.b32 %r16, %r10, 3;\n\tshl.b32 %r16, %r16, 21;\n"
		"\tadd.s32 %r16, %r16, %r13;\n"
		"\tmul.lo.s32 %r2, %r0, 3;\n";
	static const char *const tail[] = {
		/* fine */
		"\ttcgen05.st.sync.aligned.32x32b.x2.b32 [%r16+62], {%r0, %r2};\n"
		"\ttcgen05.ld.sync.aligned.32x32b.x1.b32 {%r1}, [%r16+63];\n"
		"\tadd.s32 %r1, %r1, %r13;\n",
		/* warps 1 to 3 at lane 0 */
		"\ttcgen05.st.sync.aligned.32x32b.x1.b32 [%r13], {%r0};\n",
		/* past the 64 columns */
		"\ttcgen05.st.sync.aligned.32x32b.x4.b32 [%r16+62], {%r0, %r0, "
		"%r0, %r0};\n",
	};
	static const char *const dealloc =
		"\tbar.sync 0;\n\t@!%p4 bra $LC;\n"
		"\tld.shared.b32 %r14, [%r11];\n"
		"\ttcgen05.dealloc.cta_group::1.sync.aligned.b32 %r14, 32;\n"
		"\ttcgen05.dealloc.cta_group::1.sync.aligned.b32 %r13, 64;\n"
		"$LC:\n";
	static const char *const why[] = {NULL, "tcgen05.st at lane 0: warp",
		"outside every tensor-memory allocation"};
	char body[4096];
	uint32_t o[128];

	(void)state;
	for (int i = 0; i < 3; i++) {
		snprintf(body, sizeof body, "%s%s%s", head, tail[i], dealloc);
		int rc = run(body, 128, 64, o);
		if (!why[i]) {
			if (rc)
				fprintf(stderr, "%s\n", err);
			assert_int_equal(rc, 0);
			for (int t = 0; t < 128; t++)   /* columns 64.. */
				assert_int_equal(o[t], 3 * (uint32_t)t + 64);
		} else {
			assert_int_equal(rc, -1);
			if (!strstr(err, why[i]))
				fprintf(stderr, "%s\n", err);
			assert_non_null(strstr(err, why[i]));
		}
	}
	snprintf(body, sizeof body, "%s", head);   /* no dealloc */
	assert_int_equal(run(body, 128, 64, o), -1);
	assert_non_null(strstr(err, "tensor-memory columns at 0x0 still "
		"allocated"));
	assert_int_equal(run("\ttcgen05.alloc.cta_group::1.sync.aligned."
		"shared::cta.b32 [%r9], 48;\n", 32, 16, o), -1);
	assert_non_null(strstr(err, "a power of two"));
}

/* A cluster of two CTAs (one warp each): each writes its rank + 10 into
 * the other's shared memory (mapa, st.shared::cluster), then the
 * cluster's barrier, then each reads what the other wrote; CTA 1 also
 * arrives on CTA 0's mbarrier, which CTA 0 waits for.  OUT[32 rank +
 * lane] = the other's rank + 10.  With CTA 1 exiting at once and CTA 0
 * still arriving on it, the arrival is an error. */
static int
cluster_run(const char *body1, uint32_t *out)
{
	char ptx[8192];
	Sim *s = sim_new();

	snprintf(ptx, sizeof ptx,
		"// fagen.kernel name=t target=sm_90a threads=32 "
		"cluster=2,1,1 smem=64 order=single tiles=0\n"
		"// fagen.arg 0 global OUT u32 rank=1 dims 64\n"
		".version 8.6\n.target sm_90a\n.address_size 64\n"
		".extern .shared .align 1024 .b8 fg_smem[];\n"
		".visible .entry t(.param .u64 OUT)\n{\n"
		"\t.reg .pred %%p<8>;\n\t.reg .b32 %%r<32>;\n"
		"\t.reg .b64 %%rd<8>;\n"
		"\tmov.u32 %%r0, %%tid.x;\n\tmov.u32 %%r9, fg_smem;\n"
		"\tmov.u32 %%r2, %%cluster_ctarank;\n"
		"\tadd.s32 %%r8, %%r9, 16;\n"
		"\tsetp.eq.u32 %%p1, %%r0, 0;\n"
		"\t@%%p1 mbarrier.init.shared::cta.b64 [%%r8], 1;\n"
		"\tbarrier.cluster.arrive.release.aligned;\n"
		"\tbarrier.cluster.wait.acquire.aligned;\n"
		"%s"
		"\txor.b32 %%r3, %%r2, 1;\n"
		"\tmapa.shared::cluster.u32 %%r4, %%r9, %%r3;\n"
		"\tadd.s32 %%r5, %%r2, 10;\n"
		"\t@%%p1 st.shared::cluster.u32 [%%r4], %%r5;\n"
		"\tbarrier.cluster.arrive.aligned;\n"
		"\tbarrier.cluster.wait.aligned;\n"
		"\tsetp.eq.u32 %%p2, %%r2, 1;\n"
		"\tand.pred %%p3, %%p1, %%p2;\n"
		"\tmapa.shared::cluster.u32 %%r6, %%r8, 0;\n"
		"\t@%%p3 mbarrier.arrive.shared::cluster.b64 _, [%%r6];\n"
		"\t@%%p2 bra $L1;\n"
		"$L0:\n"
		"\tmbarrier.try_wait.parity.shared::cta.b64 %%p4, [%%r8], 0;\n"
		"\t@!%%p4 bra $L0;\n"
		"$L1:\n"
		"\tld.shared.u32 %%r1, [%%r9];\n"
		"\tld.param.u64 %%rd0, [OUT];\n"
		"\tmad.lo.s32 %%r7, %%r2, 32, %%r0;\n"
		"\tmul.wide.u32 %%rd1, %%r7, 4;\n"
		"\tadd.s64 %%rd1, %%rd0, %%rd1;\n"
		"\tst.global.u32 [%%rd1], %%r1;\n\tret;\n}\n", body1);
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

static void
cluster_shared_memory_and_barriers(void **state)
{
	uint32_t o[64];

	(void)state;
	if (cluster_run("", o))
		fprintf(stderr, "%s\n", err);
	assert_int_equal(cluster_run("", o), 0);
	for (int t = 0; t < 64; t++)
		assert_int_equal(o[t], t < 32 ? 11 : 10);
	/* CTA 1 leaves before CTA 0 writes into it */
	assert_int_equal(cluster_run("\tsetp.eq.u32 %p5, %r2, 1;\n"
		"\t@%p5 ret;\n", o), -1);
	if (!strstr(err, "which has exited"))
		fprintf(stderr, "%s\n", err);
	assert_non_null(strstr(err, "which has exited"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(int_ops_wrap_at_their_width),
		cmocka_unit_test(setp_compares_by_type),
		cmocka_unit_test(cvt_rounds_to_nearest_even),
		cmocka_unit_test(cvt_rzi_truncates_and_saturates),
		cmocka_unit_test(approx_functions_are_the_rounded_exact_ones),
		cmocka_unit_test(lanes_shuffle_vote_and_elect),
		cmocka_unit_test(divergent_lanes_reconverge),
		cmocka_unit_test(bar_sync_orders_the_warps),
		cmocka_unit_test(mbarrier_phases_follow_arrivals),
		cmocka_unit_test(a_hang_names_every_warp),
		cmocka_unit_test(tma_load_swizzles_and_fills),
		cmocka_unit_test(faults_and_unmodelled_opcodes_are_errors),
		cmocka_unit_test(vector_mov_cvt_and_red_add),
		cmocka_unit_test(guarded_off_load_makes_no_access),
		cmocka_unit_test(tcgen05_mma_into_tensor_memory),
		cmocka_unit_test(tcgen05_ld_st_and_allocation),
		cmocka_unit_test(cluster_shared_memory_and_barriers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
