/* fuzz_compile.c: a libFuzzer target over the whole compile, from bytes to
 * PTX: the lexer and parser, sema, sirgen, the pass pipeline with the
 * schedule verifier and --verify-each on, and the PTX emitter.  Each input
 * is compiled twice: once to PTX as the CLI would, then once more in a mode
 * picked from a hash of the input, so that one corpus reaches the other
 * paths too: --emit ir, --emit dot, --check with --debug-hangs and
 * --dump-after, the other target, and -D overrides of the schedule's own
 * 'const' names with values that are in and out of range.
 *
 * Checks beyond the sanitizers: a compile that reports no error has
 * output, one that fails has an error diagnostic, and the diagnostics
 * render.  An internal error (fg_bug) aborts, which libFuzzer reports as a
 * crash.  Built and run by tests/fuzz/run.sh. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fgc.h"

enum { M_IR, M_DOT, M_DEFINES, M_CHECK, NMODE };

/* Values a -D may carry: the documented ones and the hostile ones. */
static const char *const values[] = {
	"0", "1", "-1", "2", "3", "4", "7", "8", "16", "32", "48", "64",
	"96", "100", "128", "192", "256", "512", "4096", "65536",
	"2147483647", "2147483648", "-2147483649", "4294967296",
	"9223372036854775807", "99999999999999999999", "0x10", "1.5", "1e9",
	"true", "false", "bf16", "f16", "f32", "i32", "u64", "persistent",
	"lpt", "K", "", "=", "-", "a b",
};

static uint32_t
hash(const uint8_t *p, size_t n)
{
	uint32_t h = 2166136261u;

	while (n--)
		h = (h ^ *p++) * 16777619u;
	return h;
}

static bool
identch(int c, bool first)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		(!first && c >= '0' && c <= '9');
}

/* Adds -D NAME=VALUE unless NAME is defined already (the CLI refuses a
 * name given twice before it compiles). */
static void
add_define(Ctx *ctx, const char *name, size_t n, const char *value)
{
	ctx_define(ctx, intern(ctx->strs, name, n), value);
}

/* -D overrides for up to two of the input's 'const NAME' declarations,
 * and now and then one for a name the schedule does not declare. */
static void
derive_defines(Ctx *ctx, const uint8_t *p, size_t n, uint32_t h)
{
	int ndef = 0;

	for (size_t i = 0; i + 6 < n && ndef < 2; i++) {
		if (memcmp(p + i, "const", 5) || (i && identch(p[i - 1], false)))
			continue;
		size_t j = i + 5, k;
		while (j < n && (p[j] == ' ' || p[j] == '\t'))
			j++;
		if (j == i + 5 || j >= n || !identch(p[j], true))
			continue;
		for (k = j; k < n && identch(p[k], false); k++)
			;
		if ((h >> (3 * ndef + 4)) & 1) {  /* this one or the next */
			h = h * 2654435761u + 1;
			continue;
		}
		add_define(ctx, (const char *)p + j, k - j,
			values[(h >> 8) % COUNT(values)]);
		h = h * 2654435761u + 1;
		ndef++;
	}
	if ((h & 0x70) == 0x70)
		add_define(ctx, "NO_SUCH_CONST", 13, "1");
}

static void
compile(const uint8_t *data, size_t size, int mode, uint32_t h)
{
	jmp_buf oom;
	Ctx ctx;
	Buf dump, diags;
	EmitKind emit = EMIT_PTX;
	bool check = false;
	int nerr;

	if (setjmp(oom)) {  /* the default allocator failed: not a bug here */
		ctx_free(&ctx);
		return;
	}
	ctx_init(&ctx, arena_default_alloc, NULL, &oom);
	ctx.verify_each = true;
	src_init(&ctx, "fuzz.fa", (const char *)data, size);
	buf_init(&dump, &ctx.perm);
	ctx.dump = &dump;
	switch (mode) {
	case M_IR:
		emit = EMIT_IR;
		break;
	case M_DOT:
		emit = EMIT_DOT;
		break;
	case M_DEFINES:
		derive_defines(&ctx, data, size, h);
		if (h & 0x8000)
			ctx.arch = (h & 0x10000) ? TGT_SM100A : TGT_SM90A;
		break;
	case M_CHECK:
		check = true;
		ctx.debug_hangs = true;
		ctx.dump_after = (h & 0x8000) ? "verify" : "sirgen";
		ctx.werror = (h & 0x10000) != 0;
		break;
	}
	nerr = driver_compile(&ctx, emit, check);
	buf_init(&diags, &ctx.perm);
	diag_render(&ctx, &diags);
	if (nerr < 0)
		fg_bug("driver_compile returned %d", nerr);
	if (nerr > 0 && ctx.nerr == 0)
		fg_bug("%d errors reported, none recorded", nerr);
	if (nerr > 0 && diags.len == 0)
		fg_bug("a failed compile rendered no diagnostic");
	if (nerr == 0 && !check && ctx.out.len == 0)
		fg_bug("a compile without errors produced no output");
	ctx_free(&ctx);
}

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t h = hash(data, size);

	compile(data, size, -1, h);
	compile(data, size, (int)(h % NMODE), h);
	return 0;
}
