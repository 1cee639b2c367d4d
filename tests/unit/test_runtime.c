/* test_runtime.c: the runtime's API without a GPU: contexts and their
 * errors, compiles, the PTX metadata and its size programs, argument
 * validation, and the no-driver path.  Every context uses a counting
 * allocator and must give back every byte.  The cache, SHA-256 and the
 * assemblers are in test_runtime_cache.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <cmocka.h>

#include "rt_front.h"
#include "testalloc.h"

/* The copy kernel's metadata, as fagen writes it (LANGUAGE.md §17.1),
 * so that these tests do not depend on the compiler. */
static const char copy_meta[] =
"// fagen 0.1.0: kernel 'copy_ws' for sm_90a. Generated; do not edit.\n"
"// fagen.kernel name=copy_ws target=sm_90a threads=64 cluster=1,1,1 "
"smem=32832 order=persistent tiles=2\n"
"// fagen.grid $N 64 cdiv ; $M 64 cdiv\n"
"// fagen.arg 0 param M i32\n"
"// fagen.arg 1 param N i32\n"
"// fagen.arg 2 global X bf16 rank=2 dims $M ; $N\n"
"// fagen.arg 3 global Y bf16 rank=2 dims $M ; $N\n"
"// fagen.arg 4 tma tx of=X box=64,64 swizzle=128 oob=zero\n"
"// fagen.arg 5 tma ty of=Y box=64,64 swizzle=128 oob=zero\n"
"\n.version 8.6\n.target sm_90a\n";

#define X0 0x7f0000000000ull   /* a 16-byte aligned device address */
#define FAKE_STREAM ((struct CUstream_st *)0x1234)

typedef struct Fix {
	TestAlloc ta;
	fg_ctx *ctx;
	fg_kernel *k;
} Fix;

static int
setup(void **state)
{
	Fix *f = calloc(1, sizeof *f);
	fg_options o = {.alloc = test_alloc, .alloc_ud = &f->ta,
		.cache_dir = "", .driver_lib = "/nonexistent/libcuda.so.1"};

	assert_int_equal(fg_ctx_create(&f->ctx, &o), FG_OK);
	assert_int_equal(fg_kernel_create(f->ctx, copy_meta, 0, &f->k),
		FG_OK);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	Fix *f = *state;

	fg_kernel_free(f->k);
	fg_ctx_destroy(f->ctx);
	assert_int_equal(f->ta.live, 0);
	assert_int_equal(f->ta.bytes, 0);
	free(f);
	return 0;
}

/* Valid arguments for M x N, by name. */
static void
copy_args(fg_arg a[4], int64_t m, int64_t n)
{
	a[0] = FG_INT("M", m);
	a[1] = FG_INT("N", n);
	a[2] = FG_PTR("X", X0);
	a[3] = FG_PTR("Y", X0 + 0x100000000ull);
}

/* check() fails with FG_ERR_INVALID and a message containing want. */
static void
invalid(Fix *f, const fg_arg *a, int n, const char *want)
{
	fg_status st = fg_kernel_check(f->k, a, n, NULL);

	if (st != FG_ERR_INVALID || !strstr(fg_errmsg(f->ctx), want))
		fail_msg("want FG_ERR_INVALID with '%s', got %s: %s", want,
			fg_status_name(st), fg_errmsg(f->ctx));
}

/* ---------------------------------------------------------------- meta */

static void
metadata_describes_the_kernel(void **state)
{
	Fix *f = *state;
	fg_kernel_info in;
	fg_arg_info ai;

	fg_kernel_info_get(f->k, &in);
	assert_string_equal(in.name, "copy_ws");
	assert_string_equal(in.target, "sm_90a");
	assert_string_equal(in.order, "persistent");
	assert_int_equal(in.threads, 64);
	assert_int_equal(in.smem, 32832);
	assert_int_equal(in.tile_dims, 2);
	assert_int_equal(in.nargs, 4);
	assert_int_equal(in.source, FG_CODE_NONE);
	assert_int_equal(fg_kernel_arg(f->k, 0, &ai), FG_OK);
	assert_string_equal(ai.name, "M");
	assert_int_equal(ai.kind, FG_ARG_INT);
	assert_int_equal(fg_kernel_arg(f->k, 2, &ai), FG_OK);
	assert_string_equal(ai.name, "X");
	assert_int_equal(ai.kind, FG_ARG_TENSOR);
	assert_string_equal(ai.type, "bf16");
	assert_int_equal(ai.rank, 2);
	assert_true(ai.tma);
	assert_int_equal(fg_kernel_arg(f->k, 4, &ai), FG_ERR_INVALID);
	assert_non_null(strstr(fg_errmsg(f->ctx), "takes 4 arguments"));
}

static const struct {
	const char *meta, *want;
} bad_meta[] = {
	{".version 8.6\n", "no '// fagen.kernel' line"},
	{"// fagen.kernel name=k target=sm_70 threads=64 order=single\n",
		"needs name, target"},
	{"// fagen.kernel name=k target=sm_90a threads=2000 order=single\n",
		"bad value in 'threads=2000'"},
	{"// fagen.kernel name=k target=sm_90a threads=64 order=single "
		"tiles=1\n", "no '// fagen.grid' line"},
	{"// fagen.kernel name=k target=sm_90a threads=64 order=single "
		"tiles=1\n// fagen.grid $Q 2 +\n", "'$Q' names no param"},
	{"// fagen.kernel name=k target=sm_90a threads=64 order=single "
		"tiles=1\n// fagen.grid 1 2\n", "leaves 2 values"},
	{"// fagen.kernel name=k target=sm_90a threads=64 order=single "
		"tiles=1\n// fagen.grid 1 +\n", "'+' needs two operands"},
	{"// fagen.kernel name=k target=sm_90a threads=64 order=single "
		"tiles=2\n// fagen.grid 1\n", "has 1 sizes, not 2"},
	{"// fagen.kernel name=k target=sm_90a threads=64 order=single\n"
		"// fagen.arg 1 param M i32\n", "numbered 0, 1"},
	{"// fagen.kernel name=k target=sm_90a threads=64 order=single\n"
		"// fagen.arg 0 param M f16\n", "no supported type"},
	{"// fagen.kernel name=k target=sm_90a threads=64 order=single\n"
		"// fagen.arg 0 tma t of=X box=64 swizzle=0 oob=zero\n",
		"views no global"},
	{"// fagen.kernel name=k target=sm_90a threads=64 order=single\n"
		"// fagen.arg 0 global X f32 rank=1 dims 4\n"
		"// fagen.arg 1 tma t of=X box=8 swizzle=16 oob=zero\n",
		"swizzle=0, 32, 64 or 128"},
	{"// fagen.kernel name=k target=sm_90a threads=64 order=single\n"
		"// fagen.arg 0 global X f32 rank=1 dims 4\n"
		"// fagen.arg 1 tma t of=X box=8,8 swizzle=0 oob=zero\n",
		"box of 1 to 1 extents"},
	{"// fagen.kernel name=k target=sm_90a threads=64 order=single\n"
		"// fagen.arg 0 global X f32 rank=2 dims 4\n", "has 1 sizes, "
		"not 2"},
	{"// fagen.kernel name=k target=sm_90a threads=64 order=single\n"
		"// fagen.arg 0 param M i32\n// fagen.arg 1 param M i32\n",
		"two arguments are named 'M'"},
	{"// fagen.kernel name=k target=sm_80 threads=64 order=single\n"
		"// fagen.arg 0 strides X_st of=X\n", "are of no global"},
};

static void
malformed_metadata_is_rejected(void **state)
{
	Fix *f = *state;
	fg_kernel *k;

	for (size_t i = 0; i < COUNT(bad_meta); i++) {
		fg_status st = fg_kernel_create(f->ctx, bad_meta[i].meta, 0,
			&k);
		if (st != FG_ERR_INVALID || k ||
		    !strstr(fg_errmsg(f->ctx), bad_meta[i].want))
			fail_msg("case %zu: want '%s', got %s: %s", i,
				bad_meta[i].want, fg_status_name(st),
				fg_errmsg(f->ctx));
	}
}

/* The size programs: every operator, with C's truncating division. */
static void
grid_programs_evaluate_over_params(void **state)
{
	Fix *f = *state;
	static const char meta[] =
		"// fagen.kernel name=g target=sm_90a threads=32 order=single "
		"tiles=3\n"
		"// fagen.grid $A 64 cdiv $B max ; "
		"$A $B - 7 % 0 $B - / $B min ; 10 $A 3 * + 4 / 1 max\n"
		"// fagen.arg 0 param A i32\n// fagen.arg 1 param B i64\n";
	fg_kernel *k;
	int64_t t[3];

	assert_int_equal(fg_kernel_create(f->ctx, meta, 0, &k), FG_OK);
	Fix g = {.ctx = f->ctx, .k = k};
	fg_arg a[] = {FG_INT("A", -4), FG_INT("B", 2)};
	assert_int_equal(fg_kernel_check(k, a, 2, t), FG_OK);
	assert_int_equal(t[0], 2);   /* max(cdiv(-4, 64) = 0, 2) */
	assert_int_equal(t[1], 2);   /* min(-6 % 7 / -2 = 3, 2) */
	assert_int_equal(t[2], 1);   /* max((10 - 12) / 4 = 0, 1) */
	a[0] = FG_INT("A", 1000);
	a[1] = FG_INT("B", 3);
	invalid(&g, a, 2, "dimension 1 has extent -1");
	a[1] = FG_INT("B", 0);
	invalid(&g, a, 2, "division by zero");
	fg_kernel_free(k);
}

/* A global cp_async reads ('// fagen.cpasync') in 16-byte chunks needs
 * a 16-byte-aligned address and row strides of 16-byte multiples (an
 * extent-1 dimension's stride does not matter): a misaligned chunk
 * would fault on the GPU, so the runtime refuses it first. */
static void
cpasync_globals_need_16_byte_rows(void **state)
{
	Fix *f = *state;
	static const char meta[] =
		"// fagen.kernel name=g target=sm_80 threads=32 order=single "
		"tiles=1\n// fagen.grid 1\n"
		"// fagen.arg 0 param S i32\n"
		"// fagen.arg 1 param D i32\n"
		"// fagen.arg 2 global X bf16 rank=2 dims $S ; $D\n"
		"// fagen.arg 3 strides X_st of=X\n"
		"// fagen.cpasync X\n";
	fg_kernel *k;

	assert_int_equal(fg_kernel_create(f->ctx, meta, 0, &k), FG_OK);
	Fix g = {.ctx = f->ctx, .k = k};
	fg_arg a[] = {FG_INT("S", 4), FG_INT("D", 64), {.name = "X",
		.kind = FG_ARG_TENSOR, .t = {.ptr = X0, .strides = {64, 1}}}};
	assert_int_equal(fg_kernel_check(k, a, 3, NULL), FG_OK);
	a[2].t.ptr = X0 + 8;
	invalid(&g, a, 3, "tensor 'X': address 0x7f0000000008 is not 16-byte "
		"aligned, as cp_async's 16-byte copies require");
	a[2].t.ptr = X0;
	a[2].t.strides[0] = 68;   /* rows of 136 bytes */
	invalid(&g, a, 3, "tensor 'X': strides[0] is 68 elements (136 "
		"bytes); cp_async copies 16-byte chunks, so it must be a "
		"multiple of 16 bytes");
	a[2].t.strides[0] = 72;
	assert_int_equal(fg_kernel_check(k, a, 3, NULL), FG_OK);
	a[0] = FG_INT("S", 1);    /* one row: its stride is unused */
	a[2].t.strides[0] = 68;
	assert_int_equal(fg_kernel_check(k, a, 3, NULL), FG_OK);
	fg_kernel_free(k);
}

/* A global read or written with ld/st ('// fagen.direct') is addressed
 * densely by the kernel: other strides are refused, naming the rule; a
 * stride of an extent-1 dimension does not matter. */
static void
direct_globals_need_dense_strides(void **state)
{
	Fix *f = *state;
	static const char meta[] =
		"// fagen.kernel name=g target=sm_90a threads=32 order=single "
		"tiles=1\n// fagen.grid $Z\n"
		"// fagen.arg 0 param Z i32\n"
		"// fagen.arg 1 global Y f32 rank=3 dims $Z ; 4 ; 8\n"
		"// fagen.direct Y\n";
	static const char nodirect[] =
		"// fagen.kernel name=g target=sm_90a threads=32 order=single "
		"tiles=1\n// fagen.grid $Z\n// fagen.arg 0 param Z i32\n"
		"// fagen.direct Y\n";
	fg_kernel *k;

	assert_int_equal(fg_kernel_create(f->ctx, meta, 0, &k), FG_OK);
	Fix g = {.ctx = f->ctx, .k = k};
	fg_arg a[] = {FG_INT("Z", 2), {.name = "Y", .kind = FG_ARG_TENSOR,
		.t = {.ptr = X0, .strides = {32, 8, 1}}}};
	assert_int_equal(fg_kernel_check(k, a, 2, NULL), FG_OK);
	a[1].t.strides[0] = 64;   /* a B,H,S,D view of [Z, 8, 4, ...] */
	invalid(&g, a, 2, "tensor 'Y': strides[0] is 64, but the kernel "
		"reads or writes 'Y' with ordinary loads and stores");
	a[1].t.strides[0] = 32;
	a[1].t.strides[1] = 9;
	invalid(&g, a, 2, "strides[1] must be 8");
	a[0] = FG_INT("Z", 1);    /* the batch stride is then unused */
	a[1].t.strides[0] = 12345;
	a[1].t.strides[1] = 8;
	assert_int_equal(fg_kernel_check(k, a, 2, NULL), FG_OK);
	fg_kernel_free(k);
	assert_int_equal(fg_kernel_create(f->ctx, nodirect, 0, &k),
		FG_ERR_INVALID);
	assert_non_null(strstr(fg_errmsg(f->ctx), "fagen.direct names no "
		"global"));
}

static void
grid_overflow_is_reported(void **state)
{
	Fix *f = *state;
	static const char meta[] =
		"// fagen.kernel name=g target=sm_90a threads=32 order=single "
		"tiles=1\n// fagen.grid $A $A * $A *\n"
		"// fagen.arg 0 param A i64\n";
	fg_kernel *k;

	assert_int_equal(fg_kernel_create(f->ctx, meta, 0, &k), FG_OK);
	fg_arg a[] = {FG_INT("A", (int64_t)1 << 30)};
	invalid(&(Fix){.ctx = f->ctx, .k = k}, a, 1, "64-bit overflow");
	a[0] = FG_INT("A", 2000);
	invalid(&(Fix){.ctx = f->ctx, .k = k}, a, 1, "overflows 32-bit");
	a[0] = FG_INT("A", 1000);
	int64_t t[3];
	assert_int_equal(fg_kernel_check(k, a, 1, t), FG_OK);
	assert_int_equal(t[0], 1000000000);
	assert_int_equal(t[1], 1);
	fg_kernel_free(k);
}

static void
unlaunchable_grids_are_rejected(void **state)
{
	Fix *f = *state;
	static const char single[] =
		"// fagen.kernel name=s target=sm_90a threads=32 order=single "
		"tiles=2 cluster=2,1,1\n// fagen.grid $A ; $B\n"
		"// fagen.arg 0 param A i32\n// fagen.arg 1 param B i32\n";
	static const char pers[] =
		"// fagen.kernel name=p target=sm_90a threads=32 order=lpt "
		"tiles=1 cluster=1,2,1\n// fagen.grid 8\n";
	fg_kernel *k;

	assert_int_equal(fg_kernel_create(f->ctx, single, 0, &k), FG_OK);
	Fix g = {.ctx = f->ctx, .k = k};
	fg_arg a[] = {FG_INT("A", 4), FG_INT("B", 65535)};
	assert_int_equal(fg_kernel_check(k, a, 2, NULL), FG_OK);
	/* a grid that is not a multiple of the cluster is rounded up */
	a[0] = FG_INT("A", 3);
	assert_int_equal(fg_kernel_check(k, a, 2, NULL), FG_OK);
	a[0] = FG_INT("A", INT32_MAX);
	a[1] = FG_INT("B", 1);
	invalid(&g, a, 2, "grid dimension 0 is 2147483648 (rounded up to "
		"whole clusters), above CUDA's limit");
	a[0] = FG_INT("A", 4);
	a[1] = FG_INT("B", 65536);
	invalid(&g, a, 2, "grid dimension 1 is 65536, above CUDA's limit");
	fg_kernel_free(k);
	/* a persistent grid takes any cluster shape: (clusters x X, Y, Z) */
	assert_int_equal(fg_kernel_create(f->ctx, pers, 0, &k), FG_OK);
	assert_int_equal(fg_kernel_check(k, NULL, 0, NULL), FG_OK);
	fg_kernel_free(k);
}

/* ---------------------------------------------------------------- args */

static void
valid_arguments_pass_by_name_and_position(void **state)
{
	Fix *f = *state;
	fg_arg a[4];
	int64_t t[3];

	copy_args(a, 1000, 1000);
	assert_int_equal(fg_kernel_check(f->k, a, 4, t), FG_OK);
	assert_int_equal(t[0], 16);
	assert_int_equal(t[1], 16);
	assert_int_equal(t[2], 1);
	assert_string_equal(fg_errmsg(f->ctx), "");
	for (int i = 0; i < 4; i++)
		a[i].name = NULL;
	assert_int_equal(fg_kernel_check(f->k, a, 4, t), FG_OK);
	/* named in another order, explicit dims and dense strides */
	fg_arg b[] = {a[3], a[2], a[1], a[0]};
	b[0].name = "Y", b[1].name = "X", b[2].name = "N", b[3].name = "M";
	b[0].t = (fg_tensor){.ptr = X0, .rank = 2, .dims = {1000, 1000},
		.strides = {1000, 1}};
	assert_int_equal(fg_kernel_check(f->k, b, 4, t), FG_OK);
	/* a padded row pitch that keeps 16-byte rows */
	b[0].t.strides[0] = 1024;
	assert_int_equal(fg_kernel_check(f->k, b, 4, t), FG_OK);
}

static void
argument_set_errors_are_named(void **state)
{
	Fix *f = *state;
	fg_arg a[5];

	copy_args(a, 64, 64);
	invalid(f, a, 3, "argument 'Y' (tensor of bf16) is missing");
	a[3] = FG_INT("M", 3);
	invalid(f, a, 4, "argument 'M' is given twice");
	copy_args(a, 64, 64);
	a[1].name = "K";
	invalid(f, a, 4, "no argument is named 'K' (it takes M, N, X, Y)");
	copy_args(a, 64, 64);
	a[4] = FG_INT(NULL, 1);
	invalid(f, a, 5, "argument 4 is one too many: it takes 4");
	invalid(f, NULL, 2, "2 arguments at NULL");
	invalid(f, a, -1, "-1 arguments");
}

static void
scalar_errors_are_named(void **state)
{
	Fix *f = *state;
	fg_arg a[4];

	copy_args(a, 64, 64);
	a[0] = FG_FLOAT("M", 64);
	invalid(f, a, 4, "'M' is an i32 param: pass FG_ARG_INT");
	a[0] = FG_INT("M", (int64_t)INT32_MAX + 1);
	invalid(f, a, 4, "'M' = 2147483648 is out of range for i32");
	a[0] = FG_INT("M", -64);
	invalid(f, a, 4, "dimension 0 has extent -64 from the params: sizes "
		"must be > 0");
	a[0] = FG_INT("M", 0);
	invalid(f, a, 4, "extent 0");
	a[0] = FG_PTR("M", X0);
	invalid(f, a, 4, "pass FG_ARG_INT");
	copy_args(a, 64, 64);
	a[2] = FG_INT("X", 5);
	invalid(f, a, 4, "'X' is a tensor: pass FG_ARG_TENSOR");
}

static void
tensor_errors_are_named(void **state)
{
	Fix *f = *state;
	fg_arg a[4];

	copy_args(a, 1000, 1000);
	a[2].t.ptr = 0;
	invalid(f, a, 4, "tensor 'X': the address is NULL");
	a[2].t.ptr = X0 + 1;
	invalid(f, a, 4, "is not aligned to its bf16 elements");
	a[2].t.ptr = X0 + 8;
	invalid(f, a, 4, "address 0x7f0000000008 is not 16-byte aligned");
	a[2].t.ptr = X0;
	a[2].t.rank = 3;
	invalid(f, a, 4, "rank is 3 but the schedule declares 2");
	a[2].t.rank = 2;
	a[2].t.dims[0] = 1000;
	invalid(f, a, 4, "give all 2 dims or none");
	a[2].t.dims[1] = 999;
	invalid(f, a, 4, "dims[1] is 999 but the schedule's extent from the "
		"params is 1000");
	a[2].t.dims[1] = 1000;
	assert_int_equal(fg_kernel_check(f->k, a, 4, NULL), FG_OK);
	a[2].t.strides[0] = 1000;
	a[2].t.strides[1] = 2;
	invalid(f, a, 4, "the innermost stride is 2; TMA needs 1");
	a[2].t.strides[0] = 1001;
	a[2].t.strides[1] = 1;
	invalid(f, a, 4, "strides[0] is 1001 elements (2002 bytes); TMA "
		"needs a multiple of 16 bytes");
	a[2].t.strides[0] = -1000;
	invalid(f, a, 4, "strides[0] is -1000: strides must be > 0");
	a[2].t.strides[0] = (int64_t)1 << 40;
	invalid(f, a, 4, "below 2^40");
	a[2].t.strides[0] = INT64_MAX / 4;
	invalid(f, a, 4, "its strides overflow 64-bit addressing");
}

static void
sizes_beyond_32_bit_indexing_are_rejected(void **state)
{
	Fix *f = *state;
	fg_arg a[4];

	copy_args(a, INT32_MAX, 64);
	assert_int_equal(fg_kernel_check(f->k, a, 4, NULL), FG_OK);
	copy_args(a, INT32_MAX - 63, INT32_MAX - 63);  /* 16-byte rows */
	invalid(f, a, 4, "more than 2^31 - 1 tiles");
	copy_args(a, 64, 64);
	a[2].t.dims[0] = (int64_t)1 << 32;
	a[2].t.dims[1] = 64;
	invalid(f, a, 4, "is 4294967296 but the schedule's extent");
}

/* Dense strides of a rank-4 tensor whose extents are each below 2^31
 * overflowed int64 (UBSan, found by tests/fuzz/fuzz_meta.c). */
static void
dense_strides_that_overflow_are_rejected(void **state)
{
	Fix *f = *state;
	static const char meta[] =
		"// fagen.kernel name=b target=sm_90a threads=32 order=single\n"
		"// fagen.arg 0 param N i32\n"
		"// fagen.arg 1 global X bf16 rank=4 dims $N ; $N ; $N ; 64\n";
	fg_kernel *k;

	assert_int_equal(fg_kernel_create(f->ctx, meta, 0, &k), FG_OK);
	fg_arg a[] = {FG_INT("N", INT32_MAX), FG_PTR("X", X0)};
	Fix g = {.ctx = f->ctx, .k = k};
	invalid(&g, a, 2, "tensor 'X': its dense strides overflow 64-bit "
		"addressing");
	a[0].i = 1 << 12;  /* 2^42 elements: no overflow */
	assert_int_equal(fg_kernel_check(k, a, 2, NULL), FG_OK);
	fg_kernel_free(k);
}

static void
tma_box_rules_are_checked(void **state)
{
	Fix *f = *state;
	static const char meta[] =
		"// fagen.kernel name=b target=sm_90a threads=32 order=single\n"
		"// fagen.arg 0 global X bf16 rank=1 dims 4096\n"
		"// fagen.arg 1 tma t of=X box=128 swizzle=128 oob=zero\n"
		"// fagen.arg 2 global Y bf16 rank=1 dims 4096\n"
		"// fagen.arg 3 tma u of=Y box=4 swizzle=0 oob=nan\n";
	fg_kernel *k;

	assert_int_equal(fg_kernel_create(f->ctx, meta, 0, &k), FG_OK);
	fg_arg a[] = {FG_PTR("X", X0), FG_PTR("Y", X0)};
	Fix g = {.ctx = f->ctx, .k = k};
	invalid(&g, a, 2, "tma 't': the inner box is 256 bytes, more than its "
		"128-byte swizzle span");
	fg_kernel_free(k);
	static const char meta2[] =
		"// fagen.kernel name=b target=sm_90a threads=32 order=single\n"
		"// fagen.arg 0 global Y bf16 rank=1 dims 4096\n"
		"// fagen.arg 1 tma u of=Y box=4 swizzle=0 oob=nan\n";
	assert_int_equal(fg_kernel_create(f->ctx, meta2, 0, &k), FG_OK);
	g.k = k;
	invalid(&g, a + 1, 1, "tma 'u': the inner box is 8 bytes; TMA needs a "
		"multiple of 16");
	fg_kernel_free(k);
}

static void
legacy_default_stream_is_refused(void **state)
{
	Fix *f = *state;
	fg_arg a[4];

	copy_args(a, 64, 64);
	assert_int_equal(fg_launch(f->k, NULL, a, 4), FG_ERR_INVALID);
	assert_non_null(strstr(fg_errmsg(f->ctx), "legacy default stream "
		"(NULL)"));
	assert_int_equal(fg_launch(f->k, (struct CUstream_st *)0x1, a, 4),
		FG_ERR_INVALID);
	assert_non_null(strstr(fg_errmsg(f->ctx), "CU_STREAM_LEGACY"));
}

static void
grid_limit_must_not_be_negative(void **state)
{
	Fix *f = *state;

	assert_int_equal(fg_kernel_set_grid_limit(f->k, 3), FG_OK);
	assert_int_equal(fg_kernel_set_grid_limit(f->k, 0), FG_OK);
	assert_int_equal(fg_kernel_set_grid_limit(f->k, -1), FG_ERR_INVALID);
	assert_non_null(strstr(fg_errmsg(f->ctx), "a grid limit of -1 CTAs"));
	assert_int_equal(fg_kernel_set_grid_limit(NULL, 1), FG_ERR_INVALID);
}

/* ---------------------------------------------------------------- driver */

static void
bad_arguments_fail_before_the_driver_is_needed(void **state)
{
	Fix *f = *state;
	fg_arg a[4];

	copy_args(a, 64, 64);
	a[2].t.ptr = X0 + 4;
	assert_int_equal(fg_launch(f->k, FAKE_STREAM, a, 4), FG_ERR_INVALID);
}

static void
missing_driver_is_a_clear_error(void **state)
{
	Fix *f = *state;
	fg_arg a[4];

	copy_args(a, 64, 64);
	for (int rep = 0; rep < 2; rep++) {  /* the first answer is kept */
		assert_int_equal(fg_launch(f->k, FAKE_STREAM, a, 4),
			FG_ERR_NO_DRIVER);
		assert_non_null(strstr(fg_errmsg(f->ctx), "cannot load the "
			"CUDA driver (/nonexistent/libcuda.so.1)"));
	}
	assert_int_equal(fg_kernel_load(f->k), FG_ERR_NO_DRIVER);
}

static void
driver_library_comes_from_the_environment(void **state)
{
	TestAlloc ta = {0};
	fg_options o = {.alloc = test_alloc, .alloc_ud = &ta, .cache_dir = ""};
	fg_ctx *c;
	fg_kernel *k;

	(void)state;
	setenv("FAGEN_DRIVER_LIB", "/nonexistent/env/libcuda.so", 1);
	assert_int_equal(fg_ctx_create(&c, &o), FG_OK);
	assert_int_equal(fg_kernel_create(c, copy_meta, 0, &k), FG_OK);
	assert_int_equal(fg_kernel_load(k), FG_ERR_NO_DRIVER);
	assert_non_null(strstr(fg_errmsg(c), "/nonexistent/env/libcuda.so"));
	unsetenv("FAGEN_DRIVER_LIB");
	fg_kernel_free(k);
	fg_ctx_destroy(c);
	assert_int_equal(ta.live, 0);
}

/* fg_ctx_open answers whether the driver and device are there before a
 * program's own driver calls, with the runtime's message, and again the
 * same on a second call. */
static void
ctx_open_says_why_there_is_no_driver(void **state)
{
	fg_options o = {.cache_dir = "",
		.driver_lib = "/nonexistent/libcuda.so.1"};
	fg_ctx *c;

	(void)state;
	assert_int_equal(fg_ctx_open(NULL), FG_ERR_INVALID);
	assert_int_equal(fg_ctx_create(&c, &o), FG_OK);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(fg_ctx_open(c), FG_ERR_NO_DRIVER);
		assert_non_null(strstr(fg_errmsg(c), "/nonexistent/libcuda.so.1"));
	}
	fg_ctx_destroy(c);
}

/* ---------------------------------------------------------------- ctx */

typedef struct Racer {
	fg_ctx *ctx;
	fg_kernel *k;
	pthread_barrier_t *bar;
	int64_t m;
	char msg[256];
} Racer;

static void *
race(void *p)
{
	Racer *r = p;
	fg_arg a[4];

	copy_args(a, r->m, 64);
	for (int i = 0; i < 200; i++) {
		fg_kernel_check(r->k, a, 4, NULL);
		pthread_barrier_wait(r->bar);
		snprintf(r->msg, sizeof r->msg, "%s", fg_errmsg(r->ctx));
		if (!strstr(r->msg, r->m < 0 ? "-1" : "= 2147483648"))
			return r->msg;
		pthread_barrier_wait(r->bar);
	}
	return NULL;
}

/* Two threads fail differently on one context, in lock step: each reads
 * its own message. */
static void
error_messages_are_per_thread(void **state)
{
	Fix *f = *state;
	pthread_barrier_t bar;
	pthread_t t[2];
	Racer r[2] = {
		{.ctx = f->ctx, .k = f->k, .bar = &bar, .m = -1},
		{.ctx = f->ctx, .k = f->k, .bar = &bar, .m = (int64_t)1 << 31},
	};
	void *res;

	pthread_barrier_init(&bar, NULL, 2);
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, race, &r[i]);
	for (int i = 0; i < 2; i++) {
		pthread_join(t[i], &res);
		if (res)
			fail_msg("thread %d read another's message: %s", i,
				(char *)res);
	}
	pthread_barrier_destroy(&bar);
	assert_string_equal(fg_errmsg(f->ctx), "");  /* this thread's */
}

static void
bad_options_are_rejected(void **state)
{
	fg_ctx *c = (fg_ctx *)1;
	fg_options o = {.log_level = 9};

	(void)state;
	assert_int_equal(fg_ctx_create(&c, &o), FG_ERR_INVALID);
	assert_null(c);
	o = (fg_options){.jit = 64};
	assert_int_equal(fg_ctx_create(&c, &o), FG_ERR_INVALID);
	assert_int_equal(fg_ctx_create(NULL, NULL), FG_ERR_INVALID);
	assert_non_null(strstr(fg_errmsg(NULL), "no context"));
	assert_string_equal(fg_status_name(FG_ERR_NO_DRIVER),
		"FG_ERR_NO_DRIVER");
	assert_string_equal(fg_status_name((fg_status)99), "FG_ERR_UNKNOWN");
	assert_string_equal(fg_version(), "0.1.0");
}

/* ---------------------------------------------------------------- compile */

static const char tiny[] =
"kernel k target=sm_90a;\n"
"const W = 2;\n"
"param M : i32;\n"
"global X : bf16[M, 64];\n"
"tma tx = X box=(64, 64) swizzle=128;\n"
"cta threads=64;\n"
"tiles grid=(cdiv(M, 64)) order=persistent;\n"
"smem buf : bf16[64, 64] swizzle=128;\n"
"mbar full count=1 tx=8192;\n"
"partition p warps=0..W - 1 {\n"
"	for t in tiles {\n"
"		elect {\n"
"			expect full, 8192;\n"
"			tma_load tx[t.x * 64, 0] -> buf, full;\n"
"		}\n"
"		wait full, 0;\n"
"	}\n"
"}\n";

static void
compile_string_gives_ptx_and_a_report(void **state)
{
	Fix *f = *state;
	fg_program *p;
	fg_kernel *k;
	size_t n;

	assert_int_equal(fg_compile_string(f->ctx, "tiny.fa", tiny,
		sizeof tiny - 1, NULL, &p), FG_OK);
	const char *ptx = fg_program_ptx(p, &n);
	assert_non_null(ptx);
	assert_int_equal(n, strlen(ptx));
	assert_non_null(strstr(ptx, "// fagen.kernel name=k target=sm_90a"));
	assert_string_equal(fg_program_diagnostics(p), "");
	assert_non_null(strstr(fg_program_report(p), "partition p: warps "
		"0..1"));
	assert_non_null(strstr(fg_program_report(p), "the barrier protocol, "
		"by the schedule verifier"));
	/* the compiler's metadata is what the runtime reads */
	assert_int_equal(fg_kernel_create(f->ctx, ptx, n, &k), FG_OK);
	fg_arg a[] = {FG_INT("M", 100), FG_PTR("X", X0)};
	int64_t t[3];
	assert_int_equal(fg_kernel_check(k, a, 2, t), FG_OK);
	assert_int_equal(t[0], 2);
	fg_kernel_free(k);
	fg_program_free(p);
}

static void
compile_errors_come_back_as_diagnostics(void **state)
{
	Fix *f = *state;
	static const char bad[] = "kernel k target=sm_90a;\nparam M : i32\n";
	fg_program *p;

	assert_int_equal(fg_compile_string(f->ctx, "bad.fa", bad,
		sizeof bad - 1, NULL, &p), FG_ERR_COMPILE);
	assert_non_null(p);
	assert_null(fg_program_ptx(p, NULL));
	assert_non_null(strstr(fg_program_diagnostics(p), "bad.fa:"));
	assert_non_null(strstr(fg_program_diagnostics(p), "1 error"));
	assert_string_equal(fg_errmsg(f->ctx), fg_program_diagnostics(p));
	fg_program_free(p);
}

static void
defines_and_arch_are_applied_and_checked(void **state)
{
	Fix *f = *state;
	const char *defs[] = {"W=1", "UNUSED_IS_FINE=3"};
	fg_compile_options o = {.defines = defs, .ndefines = 1};
	fg_program *p;

	assert_int_equal(fg_compile_string(f->ctx, "t.fa", tiny,
		sizeof tiny - 1, &o, &p), FG_OK);
	assert_non_null(strstr(fg_program_report(p), "warps 0..0"));
	fg_program_free(p);
	const char *bad[] = {"1W=2", "W", "W=1", "=3"};
	for (int i = 0; i < 4; i++) {
		const char *two[] = {"W=1", bad[i]};
		o = (fg_compile_options){.defines = two, .ndefines = 2};
		assert_int_equal(fg_compile_string(f->ctx, "t.fa", tiny,
			sizeof tiny - 1, &o, &p), FG_ERR_INVALID);
		assert_null(p);
	}
	assert_non_null(strstr(fg_errmsg(f->ctx), "is not NAME=VALUE"));
	o = (fg_compile_options){.arch = "sm_70"};
	assert_int_equal(fg_compile_string(f->ctx, "t.fa", tiny,
		sizeof tiny - 1, &o, &p), FG_ERR_INVALID);
	assert_non_null(strstr(fg_errmsg(f->ctx), "unknown arch 'sm_70'"));
	o = (fg_compile_options){.ndefines = 1};
	assert_int_equal(fg_compile_string(f->ctx, "t.fa", tiny,
		sizeof tiny - 1, &o, &p), FG_ERR_INVALID);
}

/* fg_compile_options.mods (issue #22): the text replaces the schedule's
 * mod of the same name; its diagnostics carry mods_name.  The kernel
 * cache (cache.c) is keyed by the PTX, which is the only way the mods
 * reach a cubin: two compiles that differ only in their mods get
 * different PTX and so different keys, and the same mods again the same
 * key. */
static const char hooked[] =
"kernel k target=sm_90a;\n"
"param M : i32;\n"
"global Y : i32[4];\n"
"cta threads=32;\n"
"tiles grid=(1);\n"
"mod hook(x) = x;\n"
"partition p warps=0 {\n"
"	store Y[0], hook(M);\n"
"}\n";

static void
key_of_mods(fg_ctx *c, const char *mods, uint8_t key[32])
{
	fg_compile_options o = {.mods = mods, .mods_name = "hooks.fa"};
	fg_program *p;
	size_t n;

	assert_int_equal(fg_compile_string(c, "h.fa", hooked,
		sizeof hooked - 1, &o, &p), FG_OK);
	const char *ptx = fg_program_ptx(p, &n);
	cache_key(key, ptx, n, "sm_90a", "-arch=sm_90a", "ptxas");
	fg_program_free(p);
}

static void
mods_replace_a_default_and_separate_cache_keys(void **state)
{
	Fix *f = *state;
	uint8_t k[4][32];
	fg_compile_options o = {.mods = "mod hook(x) = x +;\n"};
	fg_program *p;

	key_of_mods(f->ctx, NULL, k[0]);
	key_of_mods(f->ctx, "mod hook(x) = x + 1;\n", k[1]);
	key_of_mods(f->ctx, "mod hook(x) = x * 2;\n", k[2]);
	key_of_mods(f->ctx, "mod hook(x) = x + 1;\n", k[3]);
	assert_memory_not_equal(k[0], k[1], 32);
	assert_memory_not_equal(k[0], k[2], 32);
	assert_memory_not_equal(k[1], k[2], 32);
	assert_memory_equal(k[1], k[3], 32);
	/* diagnostics in the mods name them: mods_name, else "<mods>" */
	assert_int_equal(fg_compile_string(f->ctx, "h.fa", hooked,
		sizeof hooked - 1, &o, &p), FG_ERR_COMPILE);
	assert_non_null(strstr(fg_program_diagnostics(p), "<mods>:1:18: "
		"error: unexpected ';'"));
	fg_program_free(p);
	o = (fg_compile_options){.mods = "mod hok(x) = x;", .mods_name =
		"hooks.fa"};
	assert_int_equal(fg_compile_string(f->ctx, "h.fa", hooked,
		sizeof hooked - 1, &o, &p), FG_ERR_COMPILE);
	assert_non_null(strstr(fg_program_diagnostics(p), "hooks.fa:1:5: "
		"error: --mod: 'hok' is not a mod of kernel 'k'; its mods: "
		"hook; did you mean 'hook'?"));
	fg_program_free(p);
}

static void
compile_file_reads_the_shipped_copy_schedule(void **state)
{
	Fix *f = *state;
	const char *defs[] = {"DT=f16", "STAGES=2"};
	fg_compile_options o = {.defines = defs, .ndefines = 2};
	fg_program *p;
	fg_kernel *k;
	fg_arg_info ai;

	assert_int_equal(fg_compile_file(f->ctx, FAGEN_SRCDIR
		"/schedules/copy_ws_sm90.fa", &o, &p), FG_OK);
	assert_int_equal(fg_kernel_create(f->ctx, fg_program_ptx(p, NULL), 0,
		&k), FG_OK);
	assert_int_equal(fg_kernel_arg(k, 2, &ai), FG_OK);
	assert_string_equal(ai.type, "f16");
	fg_arg a[4];
	copy_args(a, 1000, 1000);
	assert_int_equal(fg_kernel_check(k, a, 4, NULL), FG_OK);
	fg_kernel_free(k);
	fg_program_free(p);
	assert_int_equal(fg_compile_file(f->ctx, "/nonexistent.fa", NULL, &p),
		FG_ERR_IO);
	assert_null(p);
	assert_non_null(strstr(fg_errmsg(f->ctx), "cannot open "
		"'/nonexistent.fa'"));
}

/* tests/gpu/hang_copy.fa lacks a stage release: the verifier rejects
 * it; no_verify lets it through, and debug_hangs bounds its waits. */
static void
verifier_and_hang_options_reach_the_compiler(void **state)
{
	Fix *f = *state;
	const char *path = FAGEN_SRCDIR "/tests/gpu/hang_copy.fa";
	fg_compile_options o = {0};
	fg_program *p;

	assert_int_equal(fg_compile_file(f->ctx, path, &o, &p),
		FG_ERR_COMPILE);
	assert_non_null(strstr(fg_program_diagnostics(p), "empty"));
	fg_program_free(p);
	o.no_verify = 1;
	assert_int_equal(fg_compile_file(f->ctx, path, &o, &p), FG_OK);
	assert_non_null(strstr(fg_program_report(p), "not checked: the "
		"barrier protocol (no_verify"));
	assert_null(strstr(fg_program_ptx(p, NULL), "globaltimer"));
	fg_program_free(p);
	o.debug_hangs = 1;
	assert_int_equal(fg_compile_file(f->ctx, path, &o, &p), FG_OK);
	assert_non_null(strstr(fg_program_ptx(p, NULL), "%globaltimer"));
	assert_non_null(strstr(fg_program_report(p), "debug_hangs: every "
		"mbarrier wait gives up"));
	fg_program_free(p);
}

/* Lua's failnext: fail the Nth allocation for every N until a run gets
 * through; each run either succeeds or says FG_ERR_NOMEM, and gives back
 * every byte. */
static void
every_allocation_failure_is_survived(void **state)
{
	bool done = false;

	(void)state;
	for (long n = 1; !done; n++) {
		TestAlloc ta = {.failat = n};
		fg_options o = {.alloc = test_alloc, .alloc_ud = &ta,
			.cache_dir = ""};
		fg_ctx *c;
		fg_program *p = NULL;
		fg_kernel *k = NULL;
		fg_status st = fg_ctx_create(&c, &o);
		if (st == FG_OK) {
			st = fg_compile_string(c, "t.fa", tiny, sizeof tiny - 1,
				NULL, &p);
			if (st == FG_OK)
				st = fg_kernel_create(c,
					fg_program_ptx(p, NULL), 0, &k);
			if (st == FG_OK) {
				fg_arg a[] = {FG_INT("M", 1), FG_PTR("X", X0)};
				fg_kernel_check(k, a, 2, NULL);
				done = ta.calls < n;  /* nothing failed */
			}
			if (st != FG_OK && st != FG_ERR_NOMEM)
				fail_msg("failing allocation %ld: %s: %s", n,
					fg_status_name(st), fg_errmsg(c));
			fg_kernel_free(k);
			fg_program_free(p);
			fg_ctx_destroy(c);
		} else {
			assert_int_equal(st, FG_ERR_NOMEM);
		}
		if (ta.live || ta.bytes)
			fail_msg("failing allocation %ld leaks %ld blocks", n,
				ta.live);
	}
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(metadata_describes_the_kernel),
		T(malformed_metadata_is_rejected),
		T(grid_programs_evaluate_over_params),
		T(grid_overflow_is_reported),
		T(cpasync_globals_need_16_byte_rows),
		T(direct_globals_need_dense_strides),
		T(unlaunchable_grids_are_rejected),
		T(valid_arguments_pass_by_name_and_position),
		T(argument_set_errors_are_named),
		T(scalar_errors_are_named),
		T(tensor_errors_are_named),
		T(sizes_beyond_32_bit_indexing_are_rejected),
		T(dense_strides_that_overflow_are_rejected),
		T(tma_box_rules_are_checked),
		T(legacy_default_stream_is_refused),
		T(grid_limit_must_not_be_negative),
		T(bad_arguments_fail_before_the_driver_is_needed),
		T(missing_driver_is_a_clear_error),
		cmocka_unit_test(driver_library_comes_from_the_environment),
		cmocka_unit_test(ctx_open_says_why_there_is_no_driver),
		T(error_messages_are_per_thread),
		cmocka_unit_test(bad_options_are_rejected),
		T(compile_string_gives_ptx_and_a_report),
		T(compile_errors_come_back_as_diagnostics),
		T(defines_and_arch_are_applied_and_checked),
		T(compile_file_reads_the_shipped_copy_schedule),
		T(mods_replace_a_default_and_separate_cache_keys),
		T(verifier_and_hang_options_reach_the_compiler),
		cmocka_unit_test(every_allocation_failure_is_survived),
	};

	/* never the user's cache, never a real driver */
	setenv("FAGEN_CACHE_DIR", "/nonexistent/fagen-test-cache", 1);
	unsetenv("FAGEN_DRIVER_LIB");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
