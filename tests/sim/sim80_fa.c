/* sim80_fa.c: the FlashAttention-2 inner step of one warp with
 * mma.sync, ldmatrix and cp.async (the reference sheet's
 * fa_step_mma_sync.ptx, HW-checked on an H100 as sm_80 PTX, with
 * fg_smem for its .shared arrays and bfe spelled as shr and and) against
 * float64 attention (unit.sim80).
 *
 * 16 query rows, head dimension 16, KV blocks of 32 keys: S = Q K^T by
 * four mma.sync (Q by ldmatrix.x4, K by ldmatrix.x4 from [key][d]), the
 * online softmax over the quad (shfl.sync.bfly), P in bf16 straight from
 * the S registers, O += P V by four mma.sync (V by ldmatrix.x4.trans),
 * O / l at the end. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sim80.h"

static const char fa_body[] =
	"\tmov.u32 %r0, %laneid;\n"
	"\tand.b32 %r1, %r0, 7;\n"
	"\tshr.u32 %r2, %r0, 3;\n"
	"\tand.b32 %r2, %r2, 1;\n"
	"\tshr.u32 %r3, %r0, 4;\n"
	"\tld.param.f32 %f0, [p_scale_log2];\n"
	"\tld.param.u32 %r4, [p_nblk];\n"
	"\tld.param.u64 %rd0, [p_q];\n"
	"\tcvta.to.global.u64 %rd0, %rd0;\n"
	"\tld.param.u64 %rd1, [p_k];\n"
	"\tcvta.to.global.u64 %rd1, %rd1;\n"
	"\tld.param.u64 %rd2, [p_v];\n"
	"\tcvta.to.global.u64 %rd2, %rd2;\n"
	"\tshl.b32 %r5, %r0, 4;\n"
	"\tmov.u32 %r6, %r9;\n"
	"\tadd.u32 %r7, %r6, %r5;\n"
	"\tcvt.u64.u32 %rd3, %r5;\n"
	"\tadd.s64 %rd4, %rd0, %rd3;\n"
	"\tcp.async.cg.shared.global [%r7], [%rd4], 16;\n"
	"\tcp.async.commit_group;\n"
	"\tcp.async.wait_group 0;\n"
	"\tbar.sync 0;\n"
	"\tshl.b32 %r8, %r2, 3;\n"
	"\tadd.u32 %r61, %r1, %r8;\n"
	"\tshl.b32 %r10, %r61, 5;\n"
	"\tshl.b32 %r11, %r3, 4;\n"
	"\tadd.u32 %r12, %r10, %r11;\n"
	"\tadd.u32 %r13, %r6, %r12;\n"
	"\tldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r20, %r21, %r22,"
	" %r23}, [%r13];\n"
	"\tshl.b32 %r14, %r3, 3;\n"
	"\tadd.u32 %r15, %r1, %r14;\n"
	"\tshl.b32 %r15, %r15, 5;\n"
	"\tshl.b32 %r16, %r2, 4;\n"
	"\tadd.u32 %r17, %r15, %r16;\n"
	"\tadd.u32 %r18, %r10, %r11;\n"
	"\tmov.f32 %f1, 0fFF800000;\n"
	"\tmov.f32 %f2, 0fFF800000;\n"
	"\tmov.f32 %f3, 0f00000000;\n"
	"\tmov.f32 %f4, 0f00000000;\n"
	"\tmov.f32 %o0, 0f00000000;\n"
	"\tmov.f32 %o1, 0f00000000;\n"
	"\tmov.f32 %o2, 0f00000000;\n"
	"\tmov.f32 %o3, 0f00000000;\n"
	"\tmov.f32 %o4, 0f00000000;\n"
	"\tmov.f32 %o5, 0f00000000;\n"
	"\tmov.f32 %o6, 0f00000000;\n"
	"\tmov.f32 %o7, 0f00000000;\n"
	"\tmov.u32 %r19, 0;\n"
	"BLOCK:\n"
	"\tsetp.ge.u32 %p0, %r19, %r4;\n"
	"\t@%p0 bra FINISH;\n"
	"\tbar.sync 0;\n"
	"\tmul.wide.u32 %rd5, %r19, 1024;\n"
	"\tadd.s64 %rd6, %rd1, %rd5;\n"
	"\tadd.s64 %rd6, %rd6, %rd3;\n"
	"\tadd.s64 %rd7, %rd2, %rd5;\n"
	"\tadd.s64 %rd7, %rd7, %rd3;\n"
	"\tadd.u32 %r24, %r9, 512;\n"
	"\tadd.u32 %r25, %r24, %r5;\n"
	"\tadd.u32 %r26, %r9, 1536;\n"
	"\tadd.u32 %r27, %r26, %r5;\n"
	"\tcp.async.cg.shared.global [%r25], [%rd6], 16;\n"
	"\tcp.async.cg.shared.global [%r25+512], [%rd6+512], 16;\n"
	"\tcp.async.cg.shared.global [%r27], [%rd7], 16;\n"
	"\tcp.async.cg.shared.global [%r27+512], [%rd7+512], 16;\n"
	"\tcp.async.commit_group;\n"
	"\tcp.async.wait_group 0;\n"
	"\tbar.sync 0;\n"
	"\tadd.u32 %r28, %r24, %r17;\n"
	"\tldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r30, %r31, %r32,"
	" %r33}, [%r28];\n"
	"\tldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r34, %r35, %r36,"
	" %r37}, [%r28+512];\n"
	"\tmov.f32 %f5, 0f00000000;\n"
	"\tmma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%s0, %s1,"
	" %s2, %s3}, {%r20, %r21, %r22, %r23}, {%r30, %r31}, {%f5, %f5,"
	" %f5, %f5};\n"
	"\tmma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%s4, %s5,"
	" %s6, %s7}, {%r20, %r21, %r22, %r23}, {%r32, %r33}, {%f5, %f5,"
	" %f5, %f5};\n"
	"\tmma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%s8, %s9,"
	" %s10, %s11}, {%r20, %r21, %r22, %r23}, {%r34, %r35}, {%f5, %f5,"
	" %f5, %f5};\n"
	"\tmma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%s12,"
	" %s13, %s14, %s15}, {%r20, %r21, %r22, %r23}, {%r36, %r37}, {%f5,"
	" %f5, %f5, %f5};\n"
	"\tmax.f32 %f6, %s0, %s1;\n"
	"\tmax.f32 %f6, %f6, %s4;\n"
	"\tmax.f32 %f6, %f6, %s5;\n"
	"\tmax.f32 %f6, %f6, %s8;\n"
	"\tmax.f32 %f6, %f6, %s9;\n"
	"\tmax.f32 %f6, %f6, %s12;\n"
	"\tmax.f32 %f6, %f6, %s13;\n"
	"\tmax.f32 %f7, %s2, %s3;\n"
	"\tmax.f32 %f7, %f7, %s6;\n"
	"\tmax.f32 %f7, %f7, %s7;\n"
	"\tmax.f32 %f7, %f7, %s10;\n"
	"\tmax.f32 %f7, %f7, %s11;\n"
	"\tmax.f32 %f7, %f7, %s14;\n"
	"\tmax.f32 %f7, %f7, %s15;\n"
	"\tshfl.sync.bfly.b32 %f8, %f6, 1, 0x1f, 0xffffffff;\n"
	"\tmax.f32 %f6, %f6, %f8;\n"
	"\tshfl.sync.bfly.b32 %f8, %f6, 2, 0x1f, 0xffffffff;\n"
	"\tmax.f32 %f6, %f6, %f8;\n"
	"\tshfl.sync.bfly.b32 %f9, %f7, 1, 0x1f, 0xffffffff;\n"
	"\tmax.f32 %f7, %f7, %f9;\n"
	"\tshfl.sync.bfly.b32 %f9, %f7, 2, 0x1f, 0xffffffff;\n"
	"\tmax.f32 %f7, %f7, %f9;\n"
	"\tmul.f32 %f6, %f6, %f0;\n"
	"\tmul.f32 %f7, %f7, %f0;\n"
	"\tmax.f32 %f10, %f1, %f6;\n"
	"\tmax.f32 %f11, %f2, %f7;\n"
	"\tsub.f32 %f12, %f1, %f10;\n"
	"\tex2.approx.ftz.f32 %f12, %f12;\n"
	"\tsub.f32 %f13, %f2, %f11;\n"
	"\tex2.approx.ftz.f32 %f13, %f13;\n"
	"\tmov.f32 %f1, %f10;\n"
	"\tmov.f32 %f2, %f11;\n"
	"\tneg.f32 %f14, %f10;\n"
	"\tneg.f32 %f15, %f11;\n"
	"\tfma.rn.f32 %s0, %s0, %f0, %f14;\n"
	"\tex2.approx.ftz.f32 %s0, %s0;\n"
	"\tfma.rn.f32 %s1, %s1, %f0, %f14;\n"
	"\tex2.approx.ftz.f32 %s1, %s1;\n"
	"\tfma.rn.f32 %s2, %s2, %f0, %f15;\n"
	"\tex2.approx.ftz.f32 %s2, %s2;\n"
	"\tfma.rn.f32 %s3, %s3, %f0, %f15;\n"
	"\tex2.approx.ftz.f32 %s3, %s3;\n"
	"\tfma.rn.f32 %s4, %s4, %f0, %f14;\n"
	"\tex2.approx.ftz.f32 %s4, %s4;\n"
	"\tfma.rn.f32 %s5, %s5, %f0, %f14;\n"
	"\tex2.approx.ftz.f32 %s5, %s5;\n"
	"\tfma.rn.f32 %s6, %s6, %f0, %f15;\n"
	"\tex2.approx.ftz.f32 %s6, %s6;\n"
	"\tfma.rn.f32 %s7, %s7, %f0, %f15;\n"
	"\tex2.approx.ftz.f32 %s7, %s7;\n"
	"\tfma.rn.f32 %s8, %s8, %f0, %f14;\n"
	"\tex2.approx.ftz.f32 %s8, %s8;\n"
	"\tfma.rn.f32 %s9, %s9, %f0, %f14;\n"
	"\tex2.approx.ftz.f32 %s9, %s9;\n"
	"\tfma.rn.f32 %s10, %s10, %f0, %f15;\n"
	"\tex2.approx.ftz.f32 %s10, %s10;\n"
	"\tfma.rn.f32 %s11, %s11, %f0, %f15;\n"
	"\tex2.approx.ftz.f32 %s11, %s11;\n"
	"\tfma.rn.f32 %s12, %s12, %f0, %f14;\n"
	"\tex2.approx.ftz.f32 %s12, %s12;\n"
	"\tfma.rn.f32 %s13, %s13, %f0, %f14;\n"
	"\tex2.approx.ftz.f32 %s13, %s13;\n"
	"\tfma.rn.f32 %s14, %s14, %f0, %f15;\n"
	"\tex2.approx.ftz.f32 %s14, %s14;\n"
	"\tfma.rn.f32 %s15, %s15, %f0, %f15;\n"
	"\tex2.approx.ftz.f32 %s15, %s15;\n"
	"\tadd.f32 %f16, %s0, %s1;\n"
	"\tadd.f32 %f16, %f16, %s4;\n"
	"\tadd.f32 %f16, %f16, %s5;\n"
	"\tadd.f32 %f16, %f16, %s8;\n"
	"\tadd.f32 %f16, %f16, %s9;\n"
	"\tadd.f32 %f16, %f16, %s12;\n"
	"\tadd.f32 %f16, %f16, %s13;\n"
	"\tfma.rn.f32 %f3, %f3, %f12, %f16;\n"
	"\tadd.f32 %f17, %s2, %s3;\n"
	"\tadd.f32 %f17, %f17, %s6;\n"
	"\tadd.f32 %f17, %f17, %s7;\n"
	"\tadd.f32 %f17, %f17, %s10;\n"
	"\tadd.f32 %f17, %f17, %s11;\n"
	"\tadd.f32 %f17, %f17, %s14;\n"
	"\tadd.f32 %f17, %f17, %s15;\n"
	"\tfma.rn.f32 %f4, %f4, %f13, %f17;\n"
	"\tmul.f32 %o0, %o0, %f12;\n"
	"\tmul.f32 %o1, %o1, %f12;\n"
	"\tmul.f32 %o2, %o2, %f13;\n"
	"\tmul.f32 %o3, %o3, %f13;\n"
	"\tmul.f32 %o4, %o4, %f12;\n"
	"\tmul.f32 %o5, %o5, %f12;\n"
	"\tmul.f32 %o6, %o6, %f13;\n"
	"\tmul.f32 %o7, %o7, %f13;\n"
	"\tcvt.rn.bf16x2.f32 %r40, %s1, %s0;\n"
	"\tcvt.rn.bf16x2.f32 %r41, %s3, %s2;\n"
	"\tcvt.rn.bf16x2.f32 %r42, %s5, %s4;\n"
	"\tcvt.rn.bf16x2.f32 %r43, %s7, %s6;\n"
	"\tcvt.rn.bf16x2.f32 %r44, %s9, %s8;\n"
	"\tcvt.rn.bf16x2.f32 %r45, %s11, %s10;\n"
	"\tcvt.rn.bf16x2.f32 %r46, %s13, %s12;\n"
	"\tcvt.rn.bf16x2.f32 %r47, %s15, %s14;\n"
	"\tadd.u32 %r29, %r26, %r18;\n"
	"\tldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%r50, %r51,"
	" %r52, %r53}, [%r29];\n"
	"\tldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%r54, %r55,"
	" %r56, %r57}, [%r29+512];\n"
	"\tmma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%o0, %o1,"
	" %o2, %o3}, {%r40, %r41, %r42, %r43}, {%r50, %r51}, {%o0, %o1,"
	" %o2, %o3};\n"
	"\tmma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%o4, %o5,"
	" %o6, %o7}, {%r40, %r41, %r42, %r43}, {%r52, %r53}, {%o4, %o5,"
	" %o6, %o7};\n"
	"\tmma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%o0, %o1,"
	" %o2, %o3}, {%r44, %r45, %r46, %r47}, {%r54, %r55}, {%o0, %o1,"
	" %o2, %o3};\n"
	"\tmma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%o4, %o5,"
	" %o6, %o7}, {%r44, %r45, %r46, %r47}, {%r56, %r57}, {%o4, %o5,"
	" %o6, %o7};\n"
	"\tadd.u32 %r19, %r19, 1;\n"
	"\tbra BLOCK;\n"
	"FINISH:\n"
	"\tshfl.sync.bfly.b32 %f18, %f3, 1, 0x1f, 0xffffffff;\n"
	"\tadd.f32 %f3, %f3, %f18;\n"
	"\tshfl.sync.bfly.b32 %f18, %f3, 2, 0x1f, 0xffffffff;\n"
	"\tadd.f32 %f3, %f3, %f18;\n"
	"\tshfl.sync.bfly.b32 %f19, %f4, 1, 0x1f, 0xffffffff;\n"
	"\tadd.f32 %f4, %f4, %f19;\n"
	"\tshfl.sync.bfly.b32 %f19, %f4, 2, 0x1f, 0xffffffff;\n"
	"\tadd.f32 %f4, %f4, %f19;\n"
	"\trcp.approx.ftz.f32 %f20, %f3;\n"
	"\trcp.approx.ftz.f32 %f21, %f4;\n"
	"\tmul.f32 %o0, %o0, %f20;\n"
	"\tmul.f32 %o1, %o1, %f20;\n"
	"\tmul.f32 %o2, %o2, %f21;\n"
	"\tmul.f32 %o3, %o3, %f21;\n"
	"\tmul.f32 %o4, %o4, %f20;\n"
	"\tmul.f32 %o5, %o5, %f20;\n"
	"\tmul.f32 %o6, %o6, %f21;\n"
	"\tmul.f32 %o7, %o7, %f21;\n"
	"\tshr.u32 %r58, %r0, 2;\n"
	"\tand.b32 %r59, %r0, 3;\n"
	"\tshl.b32 %r59, %r59, 1;\n"
	"\tmad.lo.u32 %r60, %r58, 16, %r59;\n"
	"\tld.param.u64 %rd8, [p_o];\n"
	"\tcvta.to.global.u64 %rd8, %rd8;\n"
	"\tmul.wide.u32 %rd9, %r60, 4;\n"
	"\tadd.s64 %rd10, %rd8, %rd9;\n"
	"\tst.global.v2.f32 [%rd10], {%o0, %o1};\n"
	"\tst.global.v2.f32 [%rd10+512], {%o2, %o3};\n"
	"\tst.global.v2.f32 [%rd10+32], {%o4, %o5};\n"
	"\tst.global.v2.f32 [%rd10+544], {%o6, %o7};\n"
	"\tret;\n";

enum { MAXBLK = 3 };

void
fa_step_with_mma_sync_matches_float64(void **state)
{
	const double scale = 0.25;
	uint32_t seed = 4242;

	(void)state;
	for (int nblk = 2; nblk <= MAXBLK; nblk++) {
		int nk = 32 * nblk;
		float q[16][16], k[32 * MAXBLK][16], v[32 * MAXBLK][16];
		float o[16][16];
		uint16_t hq[16][16], hk[32 * MAXBLK][16], hv[32 * MAXBLK][16];
		double vmax = 0, err = 0;
		int bad = 0;
		double tol;
		for (int i = 0; i < 16; i++)
			for (int d = 0; d < 16; d++) {
				q[i][d] = sim80_val(&seed);
				hq[i][d] = sim80_half(q[i][d], true);
			}
		for (int j = 0; j < nk; j++)
			for (int d = 0; d < 16; d++) {
				k[j][d] = sim80_val(&seed);
				v[j][d] = sim80_val(&seed);
				hk[j][d] = sim80_half(k[j][d], true);
				hv[j][d] = sim80_half(v[j][d], true);
				vmax = fmax(vmax, fabs(v[j][d]));
			}
		/* P is rounded to bf16 before P V: each weight within
		 * 2^-9 of itself, so O within 2^-9 max |V| (with a margin
		 * for the f32 sums and ex2) */
		tol = 1.1 * vmax / 512;
		memset(o, 0xff, sizeof o);
		Arg args[] = {{"p_q", 0, sizeof hq, hq, 0, 0},
			{"p_k", 0, (size_t)nk * 32, hk, 0, 0},
			{"p_v", 0, (size_t)nk * 32, hv, 0, 0},
			{"p_nblk", "u32", 0, NULL, nblk, 0},
			{"p_scale_log2", "f32", 0, NULL, 0,
				scale * 1.4426950408889634},   /* log2(e) */
			{"p_o", 0, sizeof o, o, 0, 0}};
		int rc = sim80_run("sm_80", 32, 2560, args, 6, fa_body, false);
		if (rc)
			fprintf(stderr, "%s\n", sim80_err);
		assert_int_equal(rc, 0);
		for (int i = 0; i < 16; i++) {
			double s[32 * MAXBLK], m = -INFINITY, l = 0;
			for (int j = 0; j < nk; j++) {
				s[j] = 0;
				for (int d = 0; d < 16; d++)
					s[j] += (double)q[i][d] * k[j][d];
				s[j] *= scale;
				m = fmax(m, s[j]);
			}
			for (int j = 0; j < nk; j++)
				l += exp(s[j] - m);
			for (int d = 0; d < 16; d++) {
				double r = 0;
				for (int j = 0; j < nk; j++)
					r += exp(s[j] - m) / l * v[j][d];
				err = fmax(err, fabs(o[i][d] - r));
				if (!(fabs(o[i][d] - r) <= tol) &&
				    bad++ == 0)
					fprintf(stderr, "O[%d][%d] = %.7g, "
						"want %.7g\n", i, d, o[i][d], r);
			}
		}
		if (getenv("SIM80_VERBOSE"))
			fprintf(stderr, "fa step, %d blocks: max |O - float64| "
				"%.3g, max |V| %.3g\n", nblk, err, vmax);
		assert_int_equal(bad, 0);
	}
}
