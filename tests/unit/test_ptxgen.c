/* test_ptxgen.c: whole compilations from source to PTX or IR through
 * driver_compile, checking what the generator emits for each feature, that
 * output is deterministic, and that every allocation failure is survived
 * (the compile longjmps to its setjmp and frees everything). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "fgc.h"
#include "testalloc.h"

static const char copy_src[] =
"kernel k target=sm_90a;\n"
"const S = 3;\n"
"param M : i32;\n"
"global X : bf16[M, 64];\n"
"tma tx = X box=(64, 64) swizzle=128;\n"
"cta threads=256;\n"
"tiles grid=(cdiv(M, 64)) order=persistent;\n"
"smem buf : bf16[S][64, 64] swizzle=128;\n"
"mbar full[S] count=1 tx=8192;\n"
"mbar empty[S] count=128;\n"
"nbar sync[2] threads=128;\n"
"partition p warps=0..3 regs=40 {\n"
"	var it = 0;\n"
"	for t in tiles {\n"
"		let s = it % S;\n"
"		wait empty[s], (it / S & 1) ^ 1;\n"
"		elect { expect full[s], 8192; tma_load tx[t.x * 64, 0] -> buf[s], full[s]; }\n"
"		it += 1;\n"
"	}\n"
"}\n"
"partition c[i < 1] warps=4..7 regs=232 {\n"
"	var it = 0;\n"
"	for t in tiles {\n"
"		wait full[it % S], it / S & 1;\n"
"		bsync sync[1];\n"
"		fence async_smem;\n"
"		arrive empty[it % S];\n"
"		it += 1;\n"
"	}\n"
"}\n";

typedef struct Out {
	char text[65536];
	int nerr;
	char diags[4096];
} Out;

static void
compile(const char *src, EmitKind emit, Out *o, AllocFn fn, void *ud)
{
	jmp_buf oom;
	Ctx ctx;

	memset(o, 0, sizeof *o);
	if (setjmp(oom)) {
		o->nerr = -1;  /* out of memory */
		ctx_free(&ctx);
		return;
	}
	ctx_init(&ctx, fn, ud, &oom);
	ctx.verify_each = true;
	src_init(&ctx, "t.fa", src, strlen(src));
	o->nerr = driver_compile(&ctx, emit, false);
	if (ctx.out.p)
		snprintf(o->text, sizeof o->text, "%s", ctx.out.p);
	Buf b;
	buf_init(&b, &ctx.perm);
	diag_render(&ctx, &b);
	snprintf(o->diags, sizeof o->diags, "%s", b.p ? b.p : "");
	ctx_free(&ctx);
}

static Out o1, o2;

static void
setmaxnreg_follows_budgets(void **state)
{
	(void)state;
	compile(copy_src, EMIT_PTX, &o1, arena_default_alloc, NULL);
	assert_int_equal(o1.nerr, 0);
	/* 256 threads: entry cap min(65536/256, 248) = 248 */
	assert_non_null(strstr(o1.text, ".maxnreg 248"));
	assert_non_null(strstr(o1.text, "setmaxnreg.dec.sync.aligned.u32 40;"));
	assert_non_null(strstr(o1.text, "setmaxnreg.dec.sync.aligned.u32 232;"));
}

static void
named_barrier_ids_start_at_one(void **state)
{
	(void)state;
	compile(copy_src, EMIT_PTX, &o1, arena_default_alloc, NULL);
	/* sync[1] is id 2: id 0 is the prologue's, sync[0] is 1 */
	assert_non_null(strstr(o1.text, "barrier.sync.aligned 2, 128;"));
}

static void
mbarriers_are_initialised_with_counts(void **state)
{
	(void)state;
	compile(copy_src, EMIT_PTX, &o1, arena_default_alloc, NULL);
	assert_non_null(strstr(o1.text, "mbarrier.init.shared::cta.b64 [%r"));
	assert_non_null(strstr(o1.text, "], 128;"));
	assert_non_null(strstr(o1.text, "fence.mbarrier_init.release.cluster;"));
	assert_non_null(strstr(o1.text, "fence.proxy.async.shared::cta;"));
}

static void
output_is_deterministic(void **state)
{
	(void)state;
	compile(copy_src, EMIT_PTX, &o1, arena_default_alloc, NULL);
	compile(copy_src, EMIT_PTX, &o2, arena_default_alloc, NULL);
	assert_string_equal(o1.text, o2.text);
	compile(copy_src, EMIT_IR, &o1, arena_default_alloc, NULL);
	compile(copy_src, EMIT_IR, &o2, arena_default_alloc, NULL);
	assert_string_equal(o1.text, o2.text);
}

static void
metadata_lists_arguments_in_order(void **state)
{
	(void)state;
	compile(copy_src, EMIT_PTX, &o1, arena_default_alloc, NULL);
	const char *a = strstr(o1.text, "// fagen.arg 0 param M i32");
	const char *b = strstr(o1.text, "// fagen.arg 1 global X bf16 rank=2");
	const char *c = strstr(o1.text, "// fagen.arg 2 tma tx of=X box=64,64");
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(c);
	assert_true(a < b && b < c);
}

static void
wide_swizzled_box_is_split_into_spans(void **state)
{
	static const char src[] =
		"kernel k target=sm_90a;\n"
		"global X : bf16[128, 128];\n"
		"tma tx = X box=(64, 128) swizzle=128;\n"
		"cta threads=32;\n"
		"tiles grid=(1);\n"
		"smem b : bf16[64, 128] swizzle=128;\n"
		"mbar f count=1;\n"
		"partition p warps=0..0 {\n"
		"	for t in tiles { elect { expect f, 16384;\n"
		"		tma_load tx[0, 0] -> b, f; } wait f, 0; }\n"
		"}\n";
	(void)state;
	compile(src, EMIT_PTX, &o1, arena_default_alloc, NULL);
	assert_int_equal(o1.nerr, 0);
	/* two 64-column boxes, the second 64*128 bytes further on */
	assert_non_null(strstr(o1.text, "box=64,64"));
	const char *first = strstr(o1.text, "cp.async.bulk.tensor.2d");
	assert_non_null(first);
	assert_non_null(strstr(first + 1, "cp.async.bulk.tensor.2d"));
	assert_non_null(strstr(o1.text, ", 8192;"));
}

/* Issue #6: tcgen05.ld takes .x1 .. .x128 (powers of two), so a 96-column
 * row is two loads and one wait; the address carries the warp's lane
 * quarter, and a row reduction uses no shuffles. */
static void
tmem_load_splits_into_power_of_two_shapes(void **state)
{
	static const char src[] =
		"kernel k target=sm_100a;\n"
		"layout r = tmem_rows(n=96);\n"
		"cta threads=160;\n"
		"tiles grid=(1);\n"
		"tmem s : f32[128, 96] col=32;\n"
		"nbar b threads=160;\n"
		"partition p warps=0..3 {\n"
		"	reg x : f32[128, 96] layout=r;\n"
		"	bsync b;\n"
		"	fence tmem_after;\n"
		"	tmem_load x, s;\n"
		"	let m = rowmax(x);\n"
		"	fence tmem_before;\n"
		"	bsync b;\n"
		"}\n"
		"partition o warps=4 { tmem_alloc 128; fence tmem_before; "
		"bsync b; bsync b; fence tmem_after; tmem_free; }\n";
	(void)state;
	compile(src, EMIT_PTX, &o1, arena_default_alloc, NULL);
	assert_int_equal(o1.nerr, 0);
	assert_non_null(strstr(o1.text, "tcgen05.ld.sync.aligned.32x32b.x64.b32"));
	assert_non_null(strstr(o1.text, "tcgen05.ld.sync.aligned.32x32b.x32.b32"));
	const char *w = strstr(o1.text, "tcgen05.wait::ld.sync.aligned;");
	assert_non_null(w);
	assert_null(strstr(w + 1, "tcgen05.wait::ld.sync.aligned;"));
	assert_non_null(strstr(o1.text, ", 21;"));  /* (warp%4) << 21 */
	assert_null(strstr(o1.text, "shfl"));
}

static void
unlowered_op_is_a_diagnostic_not_a_crash(void **state)
{
	/* conversions from bool are checked but not lowered yet */
	static const char src[] =
		"kernel k target=sm_100a;\n"
		"cta threads=32;\n"
		"tiles grid=(1);\n"
		"partition p warps=0 {\n"
		"	var b = true;\n"
		"	var x = cvt(b, i32);\n"
		"}\n";
	(void)state;
	compile(src, EMIT_IR, &o1, arena_default_alloc, NULL);
	assert_int_equal(o1.nerr, 0);
	assert_non_null(strstr(o1.text, "cvt"));
	compile(src, EMIT_PTX, &o1, arena_default_alloc, NULL);
	assert_int_equal(o1.nerr, 1);
	assert_non_null(strstr(o1.diags, "is not lowered to PTX for sm_100a"));
}

/* Fail the Nth allocation for every N the compile reaches: each run must
 * end in a clean out-of-memory return with nothing leaked. */
static void
every_allocation_failure_is_survived(void **state)
{
	TestAlloc t = {0};
	long n;

	(void)state;
	compile(copy_src, EMIT_PTX, &o1, test_alloc, &t);
	assert_int_equal(o1.nerr, 0);
	assert_int_equal(t.live, 0);
	n = t.calls;
	assert_true(n > 3);
	for (long k = 1; k <= n; k++) {
		t = (TestAlloc){.failat = k};
		compile(copy_src, EMIT_PTX, &o1, test_alloc, &t);
		assert_int_equal(o1.nerr, -1);
		assert_int_equal(t.live, 0);
	}
}

/* A broken IR invariant is a bug: fg_bug aborts with a message. */
static void
operand_before_definition_is_a_bug(void **state)
{
	jmp_buf oom;
	Ctx ctx;
	pid_t pid;
	int st;

	(void)state;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		freopen("/dev/null", "w", stderr);
		ctx_init(&ctx, arena_default_alloc, NULL, &oom);
		Kernel k = {.name = "k"};
		Part pt = {.name = "p"};
		SirPart sp = {.part = &pt};
		SirPart *parts[] = {&sp};
		SirMod m = {.k = &k, .parts = parts, .nparts = 1};
		Ref a = sir_val(&ctx, &sp, TY_I32, NULL);
		Ref b = sir_val(&ctx, &sp, TY_I32, NULL);
		SirIns *i = sir_push(&ctx, &sp.body, SOP_neg, (Span){0, 0});
		i->dst = b;
		i->a[0] = a;  /* a is never defined */
		i->na = 1;
		sir_verify(&ctx, &m);
		_exit(0);
	}
	waitpid(pid, &st, 0);
	assert_true(WIFSIGNALED(st));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(setmaxnreg_follows_budgets),
		cmocka_unit_test(named_barrier_ids_start_at_one),
		cmocka_unit_test(mbarriers_are_initialised_with_counts),
		cmocka_unit_test(output_is_deterministic),
		cmocka_unit_test(metadata_lists_arguments_in_order),
		cmocka_unit_test(wide_swizzled_box_is_split_into_spans),
		cmocka_unit_test(tmem_load_splits_into_power_of_two_shapes),
		cmocka_unit_test(unlowered_op_is_a_diagnostic_not_a_crash),
		cmocka_unit_test(every_allocation_failure_is_survived),
		cmocka_unit_test(operand_before_definition_is_a_bug),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
