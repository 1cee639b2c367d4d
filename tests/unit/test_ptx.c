/* test_ptx.c: the PTX builder: register and label naming, operand
 * formatting, the .entry layout, and (when ptxas is installed) that a
 * built kernel assembles. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fgc.h"

/* Every test gets a fresh arena; an out-of-memory jump fails the test. */
#define ARENA(a) \
	Arena a; \
	jmp_buf a##_oom; \
	if (setjmp(a##_oom)) \
		fail_msg("arena out of memory"); \
	arena_init(&a, arena_default_alloc, NULL, &a##_oom)

static const char *
finish(PtxFn *f, Arena *a)
{
	Buf b;

	buf_init(&b, a);
	ptx_finish(f, &b);
	return b.p;
}

/* Runs fn in a child process and reports whether it died instead of
 * returning: fg_bug aborts. */
static bool
dies(void (*fn)(Arena *))
{
	pid_t pid;
	int st;

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		ARENA(a);
		if (!freopen("/dev/null", "w", stderr))
			_exit(2);
		fn(&a);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void
registers_are_numbered_per_kind(void **state)
{
	ARENA(a);
	PtxFn *f = ptx_new(&a, "k");
	PReg r0 = ptx_reg(f, RB32), f0 = ptx_reg(f, RF32);
	PReg r1 = ptx_reg(f, RB32), d0 = ptx_reg(f, RB64);
	PReg p0 = ptx_reg(f, RP), h0 = ptx_reg(f, RB16);
	PReg fd0 = ptx_reg(f, RF64), fd1 = ptx_reg(f, RF64);
	char n[16];

	(void)state;
	assert_string_equal(ptx_regname(f, r0, n), "%r0");
	assert_string_equal(ptx_regname(f, f0, n), "%f0");
	assert_string_equal(ptx_regname(f, r1, n), "%r1");
	assert_string_equal(ptx_regname(f, d0, n), "%rd0");
	assert_string_equal(ptx_regname(f, p0, n), "%p0");
	assert_string_equal(ptx_regname(f, h0, n), "%h0");
	assert_string_equal(ptx_regname(f, fd1, n), "%fd1");
	ptx_emit(f, "add.s32 %R, %R, %R;", r1, r0, r0);
	ptx_emit(f, "cvt.f64.f32 %R, %R;", fd0, f0);
	assert_non_null(strstr(finish(f, &a),
	    "\tadd.s32 %r1, %r0, %r0;\n\tcvt.f64.f32 %fd0, %f0;\n"));
	arena_free(&a);
}

static void
reg_decls_only_for_used_kinds(void **state)
{
	ARENA(a);
	PtxFn *f = ptx_new(&a, "k");
	const char *s;

	(void)state;
	ptx_reg(f, RF32);
	ptx_reg(f, RP);
	ptx_reg(f, RF32);
	s = finish(f, &a);
	assert_string_equal(s, ".visible .entry k()\n{\n"
	    "\t.reg .pred \t%p<1>;\n"
	    "\t.reg .f32 \t%f<2>;\n"
	    "\n}\n");
	arena_free(&a);
}

static void
entry_lists_params_and_directives_in_order(void **state)
{
	ARENA(a);
	PtxFn *f = ptx_new(&a, "attn_fwd");
	PReg rd = ptx_reg(f, RB64);

	(void)state;
	ptx_param(f, ".param .u64 q");
	ptx_param(f, ".param .align 64 .b8 tmap[128]");
	ptx_directive(f, ".maxntid 384, 1, 1");
	ptx_directive(f, ".minnctapersm 1");
	ptx_emit(f, "ld.param.u64 %R, [q];", rd);
	ptx_emit(f, "ret;");
	assert_string_equal(finish(f, &a),
	    ".visible .entry attn_fwd(\n"
	    "\t.param .u64 q,\n"
	    "\t.param .align 64 .b8 tmap[128]\n"
	    ")\n"
	    ".maxntid 384, 1, 1\n"
	    ".minnctapersm 1\n"
	    "{\n"
	    "\t.reg .b64 \t%rd<1>;\n"
	    "\n"
	    "\tld.param.u64 %rd0, [q];\n"
	    "\tret;\n"
	    "}\n");
	arena_free(&a);
}

static void
empty_entry_has_empty_param_list(void **state)
{
	ARENA(a);
	PtxFn *f = ptx_new(&a, "nop");

	(void)state;
	assert_string_equal(finish(f, &a), ".visible .entry nop()\n{\n}\n");
	arena_free(&a);
}

static void
f32_literal_is_hex_bits(void **state)
{
	ARENA(a);
	PtxFn *f = ptx_new(&a, "k");

	(void)state;
	ptx_emit(f, "%F %F %F %F", 1.0, -2.5, 0.1, -0.0);
	ptx_emit(f, "%F %F %F %F", (double)INFINITY, -(double)INFINITY,
	    (double)NAN, 1e300);
	assert_non_null(strstr(finish(f, &a),
	    "\t0f3F800000 0fC0200000 0f3DCCCCCD 0f80000000\n"
	    "\t0f7F800000 0fFF800000 0f7FFFFFFF 0f7F800000\n"));
	arena_free(&a);
}

static void
f64_literal_is_hex_bits(void **state)
{
	ARENA(a);
	PtxFn *f = ptx_new(&a, "k");

	(void)state;
	ptx_emit(f, "%D %D %D %D", 1.0, 0.1, -(double)INFINITY, (double)NAN);
	assert_non_null(strstr(finish(f, &a),
	    "\t0d3FF0000000000000 0d3FB999999999999A "
	    "0dFFF0000000000000 0d7FFFFFFFFFFFFFFF\n"));
	arena_free(&a);
}

static void
integer_operands_are_decimal_or_hex(void **state)
{
	ARENA(a);
	PtxFn *f = ptx_new(&a, "k");

	(void)state;
	ptx_emit(f, "%I %I %I %U %U %U %S 100%%", (int64_t)0, (int64_t)-7,
	    (int64_t)INT64_MIN, (uint64_t)0, (uint64_t)0xDEADBEEF,
	    (uint64_t)UINT64_MAX, "[smem+16]");
	assert_non_null(strstr(finish(f, &a),
	    "\t0 -7 -9223372036854775808 0x0 0xdeadbeef "
	    "0xffffffffffffffff [smem+16] 100%\n"));
	arena_free(&a);
}

static void
multi_line_template_indents_each_line(void **state)
{
	ARENA(a);
	PtxFn *f = ptx_new(&a, "k");
	PReg x = ptx_reg(f, RB32), y = ptx_reg(f, RB32);

	(void)state;
	ptx_emit(f, "{\n"
	    "\t.reg .b32 t;\n"
	    "    add.s32 t, %R, %I;\n"
	    "\n"
	    "mov.b32 %R, t;\n"
	    "}\n", x, (int64_t)1, y);
	assert_non_null(strstr(finish(f, &a), "\n\n"
	    "\t{\n"
	    "\t.reg .b32 t;\n"
	    "\tadd.s32 t, %r0, 1;\n"
	    "\tmov.b32 %r1, t;\n"
	    "\t}\n"
	    "}\n"));
	arena_free(&a);
}

static void
labels_are_numbered_from_zero_at_column_0(void **state)
{
	ARENA(a);
	PtxFn *f = ptx_new(&a, "k");
	PReg p = ptx_reg(f, RP);
	int l0 = ptx_label(f), l1 = ptx_label(f);

	(void)state;
	assert_int_equal(l0, 0);
	assert_int_equal(l1, 1);
	ptx_place(f, l0);
	ptx_emit(f, "@%R bra %L;", p, l1);
	ptx_emit(f, "bra.uni %L;\n%L:", l0, l1);
	assert_non_null(strstr(finish(f, &a),
	    "\n$L0:\n\t@%p0 bra $L1;\n\tbra.uni $L0;\n$L1:\n}\n"));
	arena_free(&a);
}

static void
comments_are_indented_per_line(void **state)
{
	ARENA(a);
	PtxFn *f = ptx_new(&a, "k");

	(void)state;
	ptx_comment(f, "stage %d of %s", 2, "kv");
	ptx_comment(f, "two\n\nlines\n");
	assert_string_equal(finish(f, &a), ".visible .entry k()\n{\n"
	    "\t// stage 2 of kv\n"
	    "\t// two\n"
	    "\t//\n"
	    "\t// lines\n"
	    "}\n");
	arena_free(&a);
}

static void
build(Arena *a, Buf *out)
{
	PtxFn *f = ptx_new(a, "k");
	PReg r[3];
	int i, l = ptx_label(f);

	ptx_param(f, ".param .u32 n");
	for (i = 0; i < 3; i++)
		r[i] = ptx_reg(f, i == 1 ? RF32 : RB32);
	ptx_emit(f, "mov.f32 %R, %F;", r[1], 0.5);
	ptx_emit(f, "add.s32 %R, %R, %I;\n%L:", r[2], r[0], (int64_t)3, l);
	ptx_finish(f, out);
	ptx_finish(f, out);
}

static void
finish_is_deterministic(void **state)
{
	ARENA(a);
	ARENA(b);
	Buf x, y;

	(void)state;
	buf_init(&x, &a);
	buf_init(&y, &b);
	build(&a, &x);
	build(&b, &y);
	assert_int_equal(x.len, y.len);
	assert_memory_equal(x.p, y.p, x.len);
	/* finishing twice writes the same function twice */
	assert_int_equal(x.len % 2, 0);
	assert_memory_equal(x.p, x.p + x.len / 2, x.len / 2);
	arena_free(&a);
	arena_free(&b);
}

static void
large_bodies_are_kept_whole(void **state)
{
	ARENA(a);
	PtxFn *f = ptx_new(&a, "k");
	PReg r = ptx_reg(f, RB32);
	Buf b;
	int64_t i, n = 100000;
	char line[64];

	(void)state;
	for (i = 0; i < n; i++)
		ptx_emit(f, "add.s32 %R, %R, %I;", r, r, i);
	buf_init(&b, &a);
	ptx_finish(f, &b);
	snprintf(line, sizeof line, "\tadd.s32 %%r0, %%r0, %lld;\n}\n",
	    (long long)(n - 1));
	assert_true(b.len > (size_t)n * 20);
	assert_string_equal(b.p + b.len - strlen(line), line);
	arena_free(&a);
}

static void
place_twice(Arena *a)
{
	PtxFn *f = ptx_new(a, "k");
	int l = ptx_label(f);

	ptx_place(f, l);
	ptx_emit(f, "%L:", l);
}

static void
label_placed_twice_is_bug(void **state)
{
	(void)state;
	assert_true(dies(place_twice));
}

static void
use_unplaced(Arena *a)
{
	PtxFn *f = ptx_new(a, "k");
	Buf b;

	ptx_emit(f, "bra.uni %L;", ptx_label(f));
	buf_init(&b, a);
	ptx_finish(f, &b);
}

static void
used_label_never_placed_is_bug(void **state)
{
	(void)state;
	assert_true(dies(use_unplaced));
}

static void
bad_directive(Arena *a)
{
	ptx_emit(ptx_new(a, "k"), "mov.b32 %x, 1;");
}

static void
unknown_template_directive_is_bug(void **state)
{
	(void)state;
	assert_true(dies(bad_directive));
}

static void
foreign_reg(Arena *a)
{
	PtxFn *f = ptx_new(a, "k"), *g = ptx_new(a, "g");

	ptx_reg(f, RB32);
	ptx_emit(g, "mov.b32 %R, 0;", ptx_reg(f, RB32));
}

static void
register_from_another_function_is_bug(void **state)
{
	(void)state;
	assert_true(dies(foreign_reg));
}

/* ptxas from $CUDA_HOME/bin, else /usr/local/cuda/bin, else NULL. */
static const char *
find_ptxas(char *buf, size_t n)
{
	const char *home = getenv("CUDA_HOME");

	if (home && *home) {
		snprintf(buf, n, "%s/bin/ptxas", home);
		if (access(buf, X_OK) == 0)
			return buf;
	}
	if (access("/usr/local/cuda/bin/ptxas", X_OK) == 0)
		return "/usr/local/cuda/bin/ptxas";
	return NULL;
}

static int
run_ptxas(const char *ptxas, const char *in, const char *out)
{
	pid_t pid;
	int st;

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		execl(ptxas, ptxas, "-arch=sm_90a", "-o", out, in,
		    (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* out[i] = a + b, 0.5 as f16 and f64 beside it, skipped when a + b == 0;
 * every register kind, a label, a scoped block and module-scope smem. */
static void
tiny_kernel(Arena *a, Buf *out)
{
	PtxFn *f = ptx_new(a, "add2");
	PReg x = ptx_reg(f, RB32), y = ptx_reg(f, RB32), s = ptx_reg(f, RB32);
	PReg p = ptx_reg(f, RP), h = ptx_reg(f, RB16), v = ptx_reg(f, RF32);
	PReg d = ptx_reg(f, RF64), o = ptx_reg(f, RB64), g = ptx_reg(f, RB64);
	int done = ptx_label(f);

	buf_puts(out, ".version 8.6\n.target sm_90a\n.address_size 64\n\n"
	    ".extern .shared .align 1024 .b8 smem[];\n\n");
	ptx_param(f, ".param .u32 a");
	ptx_param(f, ".param .u32 b");
	ptx_param(f, ".param .u64 out");
	ptx_directive(f, ".maxntid 64, 1, 1");
	ptx_comment(f, "s = a + b");
	ptx_emit(f, "ld.param.u32 %R, [a];\nld.param.u32 %R, [b];", x, y);
	ptx_emit(f, "add.s32 %R, %R, %R;", s, x, y);
	ptx_emit(f, "ld.param.u64 %R, [out];\ncvta.to.global.u64 %R, %R;",
	    o, g, o);
	ptx_emit(f, "setp.eq.s32 %R, %R, %I;\n@%R bra %L;", p, s, (int64_t)0,
	    p, done);
	ptx_emit(f, "st.global.u32 [%R], %R;", g, s);
	ptx_emit(f, "mov.f32 %R, %F;\ncvt.rn.f16.f32 %R, %R;", v, 0.5, h, v);
	ptx_emit(f, "st.global.b16 [%R+%I], %R;", g, (int64_t)4, h);
	ptx_emit(f, "{\n.reg .b32 t;\nmov.u32 t, smem;\n"
	    "st.shared.u32 [t], %R;\n}", s);
	ptx_emit(f, "mov.f64 %R, %D;\nst.global.f64 [%R+%I], %R;",
	    d, -1.5, g, (int64_t)8, d);
	ptx_emit(f, "mov.b64 %R, %U;", o, (uint64_t)0xff);
	ptx_place(f, done);
	ptx_emit(f, "ret;");
	ptx_finish(f, out);
}

static void
tiny_kernel_assembles_with_ptxas(void **state)
{
	char pbuf[4096], dir[] = "/tmp/test_ptx.XXXXXX", in[64], out[64];
	const char *ptxas = find_ptxas(pbuf, sizeof pbuf);
	ARENA(a);
	Buf b;
	FILE *fp;
	int rc;

	(void)state;
	if (!ptxas) {
		arena_free(&a);
		skip();
	}
	buf_init(&b, &a);
	tiny_kernel(&a, &b);
	assert_non_null(mkdtemp(dir));
	snprintf(in, sizeof in, "%s/k.ptx", dir);
	snprintf(out, sizeof out, "%s/k.cubin", dir);
	assert_non_null(fp = fopen(in, "w"));
	assert_int_equal(fwrite(b.p, 1, b.len, fp), b.len);
	assert_int_equal(fclose(fp), 0);
	rc = run_ptxas(ptxas, in, out);
	if (rc != 0)
		fprintf(stderr, "ptxas rejected:\n%s", b.p);
	remove(out);
	remove(in);
	rmdir(dir);
	arena_free(&a);
	assert_int_equal(rc, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(registers_are_numbered_per_kind),
		cmocka_unit_test(reg_decls_only_for_used_kinds),
		cmocka_unit_test(entry_lists_params_and_directives_in_order),
		cmocka_unit_test(empty_entry_has_empty_param_list),
		cmocka_unit_test(f32_literal_is_hex_bits),
		cmocka_unit_test(f64_literal_is_hex_bits),
		cmocka_unit_test(integer_operands_are_decimal_or_hex),
		cmocka_unit_test(multi_line_template_indents_each_line),
		cmocka_unit_test(labels_are_numbered_from_zero_at_column_0),
		cmocka_unit_test(comments_are_indented_per_line),
		cmocka_unit_test(finish_is_deterministic),
		cmocka_unit_test(large_bodies_are_kept_whole),
		cmocka_unit_test(label_placed_twice_is_bug),
		cmocka_unit_test(used_label_never_placed_is_bug),
		cmocka_unit_test(unknown_template_directive_is_bug),
		cmocka_unit_test(register_from_another_function_is_bug),
		cmocka_unit_test(tiny_kernel_assembles_with_ptxas),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
