/* test_sema.c: declarations to a checked Kernel through sema_kernel:
 * attribute folding, -D overrides (ctx->defines), partition families,
 * named-barrier ids and register caps (budget.c), and shared-memory
 * offsets after pass_layout (through driver_compile --check). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fgc.h"
#include "testalloc.h"

typedef struct Fix {
	TestAlloc ta;
	jmp_buf jb;
	Ctx c;
} Fix;

static int
setup(void **state)
{
	Fix *f = calloc(1, sizeof *f);

	ctx_init(&f->c, test_alloc, &f->ta, &f->jb);
	*state = f;
	return 0;
}

/* Every test ends with all memory given back. */
static int
teardown(void **state)
{
	Fix *f = *state;

	ctx_free(&f->c);
	assert_int_equal(f->ta.live, 0);
	assert_int_equal(f->ta.bytes, 0);
	free(f);
	return 0;
}

static Ctx *
ctx_of(void **state)
{
	return &((Fix *)*state)->c;
}

/* -D NAME=VALUE, as the command line adds it: in order. */
static void
define(void **state, const char *name, const char *value)
{
	Ctx *c = ctx_of(state);

	assert_true(ctx_define(c, intern_cstr(c->strs, name), value));
}

/* Parse and check declarations only. */
static Kernel *
sema(void **state, const char *src)
{
	Ctx *c = ctx_of(state);
	Node *m;

	src_init(c, "t.fa", src, strlen(src));
	m = parse_src(c, &c->src);
	assert_int_equal(c->nerr, 0);
	return sema_kernel(c, m);
}

/* The whole pipeline up to the passes (pass_layout included), no output. */
static Kernel *
check(void **state, const char *src)
{
	Ctx *c = ctx_of(state);

	src_init(c, "t.fa", src, strlen(src));
	driver_compile(c, EMIT_IR, true);
	return c->kern;
}

static Res *
res(const Kernel *k, const char *name)
{
	for (Res *r = k->res; r; r = r->next)
		if (!strcmp(r->name, name))
			return r;
	fail_msg("no resource '%s'", name);
	return NULL;
}

static const char *
first_msg(void **state)
{
	const Diag *d = ctx_of(state)->diags;

	assert_non_null(d);
	return d->msg;
}

#define HEAD "kernel k target=sm_90a;\n"
#define TAIL \
	"cta threads=128;\n" \
	"tiles grid=(4, 2) order=persistent;\n" \
	"partition p warps=0..3 { exit; }\n"

/* ------------------------------------------------------------ folding */

static void
constants_fold_arithmetic_and_builtins(void **state)
{
	Kernel *k = sema(state, HEAD
		"const A = cdiv(100, 32);\n"
		"const B = min(3, 7) + max(1, 2) * 10;\n"
		"const C = (1 << 4) | 1;\n"
		"const D = sizeof(bf16) * sizeof(f32);\n"
		"const E = A > 3 && !false;\n"
		"const F = 2.5 * 2;\n"
		"const G = E ? 1 : 2;\n"
		TAIL);

	assert_int_equal(ctx_of(state)->nerr, 0);
	assert_int_equal(res(k, "A")->cval.ty, TY_I64);
	assert_int_equal(res(k, "A")->cval.i, 4);
	assert_int_equal(res(k, "B")->cval.i, 23);
	assert_int_equal(res(k, "C")->cval.i, 17);
	assert_int_equal(res(k, "D")->cval.i, 8);
	assert_int_equal(res(k, "E")->cval.ty, TY_BOOL);
	assert_int_equal(res(k, "E")->cval.i, 1);
	assert_int_equal(res(k, "F")->cval.ty, TY_F64);
	assert_true(res(k, "F")->cval.f == 5.0);
	assert_int_equal(res(k, "G")->cval.i, 1);
}

static void
element_type_constant_is_a_dtype(void **state)
{
	Kernel *k = sema(state, HEAD "const DT = f16;\n"
		"param M : i32;\nglobal X : DT[M, 64];\n" TAIL);

	assert_int_equal(res(k, "DT")->cval.ty, TY_DTYPE);
	assert_int_equal(res(k, "X")->ety, TY_F16);
	assert_int_equal(res(k, "X")->rank, 2);
}

static void
attributes_fold_through_constants(void **state)
{
	Kernel *k = sema(state, HEAD "const S = 3;\nconst TM = 64;\n"
		"mbar full[S] count=2 * S tx=TM * 32 * sizeof(bf16);\n"
		"smem buf : bf16[S][TM, TM / 2] swizzle=64 major=MN;\n" TAIL);
	Res *m = res(k, "full"), *b = res(k, "buf");

	assert_int_equal(ctx_of(state)->nerr, 0);
	assert_true(m->is_array);
	assert_int_equal(m->count, 3);
	assert_int_equal(m->mcount, 6);
	assert_int_equal(m->tx, 4096);
	assert_int_equal(b->stages, 3);
	assert_int_equal(b->rank, 2);
	assert_int_equal(b->shape[0], 64);
	assert_int_equal(b->shape[1], 32);
	assert_int_equal(b->lay->swizzle, 64);
	assert_true(b->lay->mn_major);
}

static void
tma_view_takes_box_swizzle_and_fill(void **state)
{
	Kernel *k = sema(state, HEAD "param M : i32;\n"
		"global X : bf16[M, 8, 128];\n"
		"tma tx = X box=(1, 8, 64) swizzle=128 oob=nan;\n" TAIL);
	Res *t = res(k, "tx");

	assert_int_equal(ctx_of(state)->nerr, 0);
	assert_ptr_equal(t->of, res(k, "X"));
	assert_int_equal(t->rank, 3);
	assert_int_equal(t->shape[0], 1);
	assert_int_equal(t->shape[2], 64);
	assert_int_equal(t->swizzle, 128);
	assert_true(t->oob_nan);
	assert_int_equal(t->ety, TY_BF16);
}

static void
cta_tiles_and_kernel_attributes(void **state)
{
	Kernel *k = sema(state, HEAD "param M : i32;\n"
		"cta threads=256 cluster=(2, 1);\n"
		"tiles grid=(cdiv(M, 64), 3, 2) order=lpt;\n"
		"partition p warps=0..7 { exit; }\n");

	assert_int_equal(ctx_of(state)->nerr, 0);
	assert_string_equal(k->name, "k");
	assert_int_equal(k->target, TGT_SM90A);
	assert_int_equal(k->threads, 256);
	assert_int_equal(k->cluster[0], 2);
	assert_int_equal(k->cluster[1], 1);
	assert_int_equal(k->cluster[2], 1);
	assert_int_equal(k->ntile_dims, 3);
	assert_int_equal(k->order, ORD_LPT);
}

static void
arch_option_overrides_the_schedule_target(void **state)
{
	Kernel *k;

	ctx_of(state)->arch = TGT_SM100A;
	k = sema(state, HEAD TAIL);
	assert_int_equal(k->target, TGT_SM100A);
}

static void
tensor_memory_regions_count_columns(void **state)
{
	Kernel *k = sema(state, "kernel k target=sm_100a;\n"
		"tmem acc[2] : f32[128, 64] col=0;\n"
		"tmem pk : bf16[128, 64] col=128 packed;\n"
		"tmem q : f32[128, 32] col=128 alias=pk;\n" TAIL);
	Res *a = res(k, "acc"), *p = res(k, "pk");

	assert_int_equal(ctx_of(state)->nerr, 0);
	assert_int_equal(a->count, 2);
	assert_int_equal(a->ncols, 64);
	assert_int_equal(a->col, 0);
	assert_true(p->packed);
	assert_int_equal(p->ncols, 32);
	assert_ptr_equal(res(k, "q")->alias, p);
}

static void
static_if_selects_declarations(void **state)
{
	Kernel *k = sema(state, HEAD "const BIG = false;\n"
		"static if BIG { const S = 8; }\n"
		"else static if !BIG { const S = 2; }\n"
		"else { const S = 1; }\n" TAIL);

	assert_int_equal(ctx_of(state)->nerr, 0);
	assert_int_equal(res(k, "S")->cval.i, 2);
}

/* ------------------------------------------------------------ -D */

static void
define_overrides_a_const_and_what_follows_from_it(void **state)
{
	Kernel *k;

	define(state, "STAGES", "2");
	k = sema(state, HEAD "const STAGES = 4;\n"
		"smem buf : bf16[STAGES][64, 64] swizzle=128;\n"
		"mbar full[STAGES] count=1;\n" TAIL);
	assert_int_equal(ctx_of(state)->nerr, 0);
	assert_int_equal(res(k, "STAGES")->cval.i, 2);
	assert_int_equal(res(k, "buf")->stages, 2);
	assert_int_equal(res(k, "full")->count, 2);
	assert_true(ctx_of(state)->defines->used);
}

static void
define_gives_types_booleans_words_and_hex(void **state)
{
	Kernel *k;

	define(state, "DT", "f16");
	define(state, "ON", "false");
	define(state, "ORD", "lpt");
	define(state, "N", "0x40");
	k = sema(state, HEAD "const DT = bf16;\nconst ON = true;\n"
		"const ORD = persistent;\nconst N = 1;\n"
		"cta threads=128;\ntiles grid=(N) order=ORD;\n"
		"partition p warps=0..3 { exit; }\n");
	assert_int_equal(ctx_of(state)->nerr, 0);
	assert_int_equal(res(k, "DT")->cval.ty, TY_DTYPE);
	assert_int_equal(res(k, "DT")->cval.i, TY_F16);
	assert_int_equal(res(k, "ON")->cval.ty, TY_BOOL);
	assert_int_equal(res(k, "ON")->cval.i, 0);
	assert_int_equal(k->order, ORD_LPT);
	assert_int_equal(res(k, "N")->cval.i, 64);
}

static void
integer_define_for_a_float_const_becomes_a_float(void **state)
{
	Kernel *k;

	define(state, "SCALE", "2");
	k = sema(state, HEAD "const SCALE = 0.125;\n" TAIL);
	assert_int_equal(ctx_of(state)->nerr, 0);
	assert_int_equal(res(k, "SCALE")->cval.ty, TY_F64);
	assert_true(res(k, "SCALE")->cval.f == 2.0);
}

static void
define_for_a_missing_const_is_error(void **state)
{
	define(state, "NOPE", "1");
	sema(state, HEAD TAIL);
	assert_int_equal(ctx_of(state)->nerr, 1);
	assert_string_equal(first_msg(state),
		"-D NOPE: the schedule has no 'const NOPE'");
	assert_false(ctx_of(state)->diags->has_span);
}

static void
define_of_another_kind_is_error(void **state)
{
	define(state, "S", "bf16");
	sema(state, HEAD "const S = 4;\n" TAIL);
	assert_int_equal(ctx_of(state)->nerr, 1);
	assert_non_null(strstr(first_msg(state), "-D S=bf16 gives"));
}

static void
define_that_is_not_a_value_is_error(void **state)
{
	define(state, "S", "4 + 1");
	sema(state, HEAD "const S = 4;\n" TAIL);
	assert_int_equal(ctx_of(state)->nerr, 1);
	assert_string_equal(first_msg(state), "-D S=4 + 1: the value is not a "
		"number, a boolean or a name");
}

/* ------------------------------------------------------------ names */

static void
duplicate_decl_is_error_with_a_note(void **state)
{
	const Diag *d;

	sema(state, HEAD "mbar full count=1;\nconst full = 2;\n" TAIL);
	assert_int_equal(ctx_of(state)->nerr, 1);
	d = ctx_of(state)->diags;
	assert_int_equal(d->kind, D_ERROR);
	assert_string_equal(d->msg, "'full' is already declared");
	assert_non_null(d->next);
	assert_int_equal(d->next->kind, D_NOTE);
	assert_string_equal(d->next->msg, "previous declaration of 'full'");
	assert_true(d->next->span.lo < d->span.lo);
}

static void
resources_keep_declaration_order_and_kind_indices(void **state)
{
	Kernel *k = sema(state, HEAD "param M : i32;\nmbar a count=1;\n"
		"param N : i32;\nmbar b[2] count=1;\n" TAIL);

	assert_int_equal(res(k, "M")->index, 0);
	assert_int_equal(res(k, "N")->index, 1);
	assert_int_equal(res(k, "a")->index, 0);
	assert_int_equal(res(k, "b")->index, 1);
	assert_ptr_equal(k->res, res(k, "M"));
	assert_int_equal(k->nres[R_MBAR], 2);
}

static void
undeclared_name_in_a_dimension_is_error(void **state)
{
	sema(state, HEAD "global X : bf16[M, 64];\n" TAIL);
	assert_int_equal(ctx_of(state)->nerr, 1);
	assert_string_equal(first_msg(state), "'M' is not declared");
}

static void
errors_skip_the_budget_checks(void **state)
{
	/* threads=64 and warps=0..3 would also be a budget error; sema stops
	 * before budgets once a declaration is wrong */
	sema(state, HEAD "mbar full;\ncta threads=64;\n"
		"tiles grid=(1);\npartition p warps=0..3 { exit; }\n");
	assert_int_equal(ctx_of(state)->nerr, 1);
	assert_string_equal(first_msg(state), "'mbar' needs 'count=...'");
}

/* ------------------------------------------------------------ partitions */

static void
partition_family_makes_one_instance_per_index(void **state)
{
	Kernel *k = sema(state, HEAD "cta threads=384;\n"
		"tiles grid=(1);\n"
		"partition wg[i < 3] warps=4*i..4*i+3 regs=160 - 8 * i { exit; }\n");
	const Part *p = k->parts;

	assert_int_equal(ctx_of(state)->nerr, 0);
	assert_int_equal(k->nparts, 3);
	for (int i = 0; i < 3; i++, p = p->next) {
		assert_string_equal(p->name, "wg");
		assert_int_equal(p->index, i);
		assert_string_equal(p->ivar, "i");
		assert_int_equal(p->warp_lo, 4 * i);
		assert_int_equal(p->warp_hi, 4 * i + 3);
		assert_int_equal(p->regs, 160 - 8 * i);
	}
	assert_null(p);
	/* the family index is only a constant inside its declaration */
	assert_null(kernel_find(k, intern_cstr(ctx_of(state)->strs, "i")));
}

static void
single_warp_partition_takes_one_index(void **state)
{
	Kernel *k = sema(state, HEAD "cta threads=64;\ntiles grid=(1);\n"
		"partition a warps=1 { exit; }\npartition b warps=0..0 { exit; }\n");

	assert_int_equal(ctx_of(state)->nerr, 0);
	assert_int_equal(k->parts->warp_lo, 1);
	assert_int_equal(k->parts->warp_hi, 1);
	assert_int_equal(k->parts->index, -1);
}

static void
unused_warps_warning_is_named_and_controllable(void **state)
{
	Ctx *c = ctx_of(state);
	static const char src[] = HEAD "cta threads=128;\ntiles grid=(1);\n"
		"partition p warps=1..1 { exit; }\n";

	sema(state, src);
	assert_int_equal(c->nerr, 0);
	assert_int_equal(c->nwarn, 2);  /* warp 0, warps 2..3 */
	assert_string_equal(c->diags->wname, "unused-warps");
	assert_string_equal(c->diags->msg,
		"warp 0 has no partition; it exits at once");
	assert_string_equal(c->diags->next->msg,
		"warps 2..3 have no partition; they exit at once");
}

static void
unused_warps_warning_can_be_turned_off(void **state)
{
	diag_set_warning(ctx_of(state), "unused-warps", 0);
	sema(state, HEAD "cta threads=128;\ntiles grid=(1);\n"
		"partition p warps=1..1 { exit; }\n");
	assert_int_equal(ctx_of(state)->nwarn, 0);
	assert_int_equal(ctx_of(state)->nerr, 0);
}

static void
unused_warps_warning_can_be_an_error(void **state)
{
	diag_set_warning(ctx_of(state), "unused-warps", 2);
	sema(state, HEAD "cta threads=128;\ntiles grid=(1);\n"
		"partition p warps=0..2 { exit; }\n");
	assert_int_equal(ctx_of(state)->nerr, 1);
	assert_int_equal(ctx_of(state)->diags->kind, D_ERROR);
}

/* ------------------------------------------------------------ budgets */

static void
named_barrier_ids_start_at_one_and_count_array_elements(void **state)
{
	Kernel *k = sema(state, HEAD "nbar a threads=128;\n"
		"nbar b[3] threads=64;\nnbar c threads=32;\n" TAIL);

	assert_int_equal(ctx_of(state)->nerr, 0);
	assert_int_equal(res(k, "a")->bar_id, 1);
	assert_int_equal(res(k, "b")->bar_id, 2);
	assert_int_equal(res(k, "c")->bar_id, 5);
}

static void
fifteen_named_barrier_ids_fit(void **state)
{
	sema(state, HEAD "nbar a[8] threads=32;\nnbar b[7] threads=32;\n" TAIL);
	assert_int_equal(ctx_of(state)->nerr, 0);
}

static void
sixteen_named_barrier_ids_are_error(void **state)
{
	sema(state, HEAD "nbar a[8] threads=32;\nnbar b[8] threads=32;\n" TAIL);
	assert_int_equal(ctx_of(state)->nerr, 1);
	assert_string_equal(first_msg(state), "the named barriers need 16 ids; "
		"there are 15 (ids 1..15; id 0 is reserved)");
}

static void
maxnreg_divides_the_register_file_by_threads(void **state)
{
	Kernel *k = sema(state, HEAD "cta threads=384;\ntiles grid=(1);\n"
		"partition p warps=0..3 regs=40 { exit; }\n"
		"partition c[i < 2] warps=4+4*i..7+4*i regs=232 { exit; }\n");

	assert_int_equal(ctx_of(state)->nerr, 0);
	assert_int_equal(k->maxnreg, 168);  /* 65536 / 384 = 170, down to 8k */
}

static void
maxnreg_is_at_most_248(void **state)
{
	Kernel *k = sema(state, HEAD "cta threads=128;\ntiles grid=(1);\n"
		"partition p warps=0..3 regs=232 { exit; }\n");

	assert_int_equal(k->maxnreg, 248);  /* 65536 / 128 = 512, ptxas's cap */
}

static void
maxnreg_is_zero_without_register_budgets(void **state)
{
	Kernel *k = sema(state, HEAD TAIL);

	assert_int_equal(k->maxnreg, 0);
}

static void
register_budgets_that_fill_the_file_exactly_fit(void **state)
{
	sema(state, HEAD "cta threads=256;\ntiles grid=(1);\n"
		"partition p warps=0..3 regs=256 { exit; }\n"
		"partition q warps=4..7 regs=256 { exit; }\n");
	assert_int_equal(ctx_of(state)->nerr, 0);
}

static void
register_budgets_over_the_file_are_error(void **state)
{
	/* 2 x 128 x 256 with budgets, 128 x 168 (the cap) without */
	sema(state, HEAD "cta threads=384;\ntiles grid=(1);\n"
		"partition p warps=0..3 regs=256 { exit; }\n"
		"partition q warps=4..7 regs=256 { exit; }\n"
		"partition r warps=8..11 { exit; }\n");
	assert_int_equal(ctx_of(state)->nerr, 1);
	assert_string_equal(first_msg(state), "register budgets need 87040 "
		"registers; the register file has 65536");
}

static void
regs_on_a_partial_warpgroup_is_error(void **state)
{
	sema(state, HEAD "cta threads=128;\ntiles grid=(1);\n"
		"partition p warps=0..1 regs=96 { exit; }\n"
		"partition q warps=2..3 { exit; }\n");
	assert_int_equal(ctx_of(state)->nerr, 1);
	assert_non_null(strstr(first_msg(state), "warpgroup"));
}

/* ------------------------------------------------------------ layout */

static void
smem_offsets_follow_swizzle_alignment(void **state)
{
	Kernel *k = check(state, HEAD
		"smem small : f32[4, 8];\n"            /* 128 bytes, align 128 */
		"smem wide : bf16[2][64, 64] swizzle=128;\n" /* align 1024 */
		"smem mid : bf16[16, 32] swizzle=64;\n"       /* align 512 */
		"mbar full[3] count=1;\n"
		"mbar one count=1;\n" TAIL);

	assert_int_equal(ctx_of(state)->nerr, 0);
	assert_int_equal(res(k, "small")->off, 0);
	assert_int_equal(res(k, "small")->bytes, 128);
	assert_int_equal(res(k, "wide")->off, 1024);
	assert_int_equal(res(k, "wide")->bytes, 8192);
	assert_int_equal(res(k, "mid")->off, 1024 + 2 * 8192);
	assert_int_equal(res(k, "mid")->bytes, 1024);
	assert_int_equal(res(k, "full")->off, 1024 + 2 * 8192 + 1024);
	assert_int_equal(res(k, "one")->off, res(k, "full")->off + 24);
	assert_int_equal(k->smem_bytes, res(k, "one")->off + 8);
}

static void
alias_shares_the_offset_of_its_buffer(void **state)
{
	Kernel *k = check(state, HEAD
		"smem a : f32[4, 32];\n"
		"smem b : bf16[2][64, 64] swizzle=128;\n"
		"smem c : f32[2][32, 64] swizzle=128 alias=b;\n"
		"mbar m count=1;\n" TAIL);

	assert_int_equal(ctx_of(state)->nerr, 0);
	assert_int_equal(res(k, "b")->off, 1024);
	assert_int_equal(res(k, "c")->off, 1024);
	assert_int_equal(res(k, "m")->off, 1024 + 2 * 8192);
}

static void
sm100_reserves_the_tensor_memory_address_slot(void **state)
{
	Kernel *k = check(state, "kernel k target=sm_100a;\n"
		"smem a : bf16[64, 64] swizzle=128;\nmbar m count=1;\n" TAIL);

	assert_int_equal(ctx_of(state)->nerr, 0);
	assert_int_equal(res(k, "m")->off, 8192);
	assert_int_equal(k->smem_bytes, 8192 + 8 + 16);
}

static void
smem_past_the_target_limit_is_error(void **state)
{
	check(state, HEAD "smem a : f32[2][256, 256];\n" TAIL);
	assert_int_equal(ctx_of(state)->nerr, 1);
	assert_string_equal(first_msg(state), "kernel 'k' needs 524288 bytes of "
		"shared memory; sm_90a allows 232448 per CTA");
}

/* ------------------------------------------------------------ mods */

/* Compile src (and mods, when not NULL, as a --mod file) in a context of
 * its own; the first diagnostic's message, or "" when there is none. */
static const char *
first_of(void **state, const char *src, const char *mods, char *buf,
	size_t len)
{
	Fix *f = *state;
	jmp_buf jb;
	Ctx c;

	ctx_init(&c, test_alloc, &f->ta, &jb);
	src_init(&c, "t.fa", src, strlen(src));
	if (mods)
		assert_non_null(src_add(&c, "m.fa", mods, strlen(mods)));
	driver_compile(&c, EMIT_IR, true);
	snprintf(buf, len, "%s", c.diags ? c.diags->msg : "");
	ctx_free(&c);
	return buf;
}

/* front/mod.c's list and sircall.c's lowering agree: every name on the
 * list is a built-in sirgen lowers (a call with no argument is that
 * built-in's own error, not an unknown function or an internal error),
 * and no mod may take it. */
static void
every_builtin_is_lowered_and_no_mod_may_take_its_name(void **state)
{
	char src[512], msg[512];

	for (const char *const *b = builtin_names; *b; b++) {
		snprintf(src, sizeof src, HEAD "cta threads=128;\n"
			"tiles grid=(1);\npartition p warps=0..3 {\n"
			"\tvar v = %s();\n}\n", *b);
		first_of(state, src, NULL, msg, sizeof msg);
		if (!*msg || strstr(msg, "unknown function"))
			fail_msg("'%s()': '%s'", *b, msg);
		snprintf(src, sizeof src, HEAD "mod %s(x) = x;\n" TAIL, *b);
		first_of(state, src, NULL, msg, sizeof msg);
		assert_non_null(strstr(msg, "is a built-in function"));
	}
	assert_false(builtin_known("score_mod"));
	assert_true(builtin_known("select"));
}

/* A --mod file's mod is the one in effect; the schedule's stays the
 * declaration (its place among the kernel's names). */
static void
file_mod_replaces_the_schedules(void **state)
{
	Ctx *c = ctx_of(state);
	static const char src[] = HEAD "mod hook(x) = x;\n" TAIL;
	static const char mods[] = "mod hook(y) = y + 1;\nparam extra : i32;\n";

	src_init(c, "t.fa", src, strlen(src));
	const Src *m = src_add(c, "m.fa", mods, strlen(mods));
	driver_compile(c, EMIT_IR, true);
	assert_int_equal(c->nerr, 0);
	Res *h = res(c->kern, "hook");
	assert_int_equal(h->kind, R_MOD);
	assert_true(h->nspan.lo < c->src.len);
	assert_true(h->decl->span.lo >= m->base);
	assert_string_equal(h->decl->kids.v[0]->name, "y");
	assert_int_equal(res(c->kern, "extra")->kind, R_PARAM);
	assert_ptr_equal(c->kern->res_last, res(c->kern, "extra"));
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(constants_fold_arithmetic_and_builtins),
		T(element_type_constant_is_a_dtype),
		T(attributes_fold_through_constants),
		T(tma_view_takes_box_swizzle_and_fill),
		T(cta_tiles_and_kernel_attributes),
		T(arch_option_overrides_the_schedule_target),
		T(tensor_memory_regions_count_columns),
		T(static_if_selects_declarations),
		T(define_overrides_a_const_and_what_follows_from_it),
		T(define_gives_types_booleans_words_and_hex),
		T(integer_define_for_a_float_const_becomes_a_float),
		T(define_for_a_missing_const_is_error),
		T(define_of_another_kind_is_error),
		T(define_that_is_not_a_value_is_error),
		T(duplicate_decl_is_error_with_a_note),
		T(resources_keep_declaration_order_and_kind_indices),
		T(undeclared_name_in_a_dimension_is_error),
		T(errors_skip_the_budget_checks),
		T(partition_family_makes_one_instance_per_index),
		T(single_warp_partition_takes_one_index),
		T(unused_warps_warning_is_named_and_controllable),
		T(unused_warps_warning_can_be_turned_off),
		T(unused_warps_warning_can_be_an_error),
		T(named_barrier_ids_start_at_one_and_count_array_elements),
		T(fifteen_named_barrier_ids_fit),
		T(sixteen_named_barrier_ids_are_error),
		T(maxnreg_divides_the_register_file_by_threads),
		T(maxnreg_is_at_most_248),
		T(maxnreg_is_zero_without_register_budgets),
		T(register_budgets_that_fill_the_file_exactly_fit),
		T(register_budgets_over_the_file_are_error),
		T(regs_on_a_partial_warpgroup_is_error),
		T(smem_offsets_follow_swizzle_alignment),
		T(alias_shares_the_offset_of_its_buffer),
		T(sm100_reserves_the_tensor_memory_address_slot),
		T(smem_past_the_target_limit_is_error),
		T(every_builtin_is_lowered_and_no_mod_may_take_its_name),
		T(file_mod_replaces_the_schedules),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
