/* compile.c: schedules to programs, in-process, through the compiler
 * core's driver_compile (the CLI's path).  A program owns copies of the
 * PTX, the rendered diagnostics and the verifier's report, made with the
 * context's allocator; the compilation's arenas die before the call
 * returns.  Out of memory in an arena longjmps to the setjmp in compile(),
 * the public entry point's only one. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "rt_jit.h"

#define MAXSRC (64u << 20)  /* as the CLI: a schedule is small */

struct fg_program {
	fg_ctx *ctx;
	char *ptx;            /* NULL when the compile failed */
	size_t ptxlen;
	char *diags;
	char *report;
};

/* Check "NAME=VALUE" the way the CLI does and add it to ctx->defines in
 * order; NULL, or a message in err. */
static bool
add_define(Ctx *cc, const char *arg, char *err, size_t errlen)
{
	const char *eq = arg ? strchr(arg, '=') : NULL;
	const char *name;

	if (!eq || eq == arg) {
		snprintf(err, errlen, "define '%s' is not NAME=VALUE",
			arg ? arg : "(null)");
		return false;
	}
	for (const char *p = arg; p < eq; p++)
		if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' &&
		    *p <= 'Z') || (p > arg && *p >= '0' && *p <= '9'))) {
			snprintf(err, errlen, "define '%s': NAME must be an "
				"identifier", arg);
			return false;
		}
	name = intern(cc->strs, arg, (size_t)(eq - arg));
	if (!ctx_define(cc, name, arena_strndup(&cc->perm, eq + 1,
	    strlen(eq + 1)))) {
		snprintf(err, errlen, "define '%s' is given twice", name);
		return false;
	}
	return true;
}

/* What was checked, in words: the kernel's resources and partitions,
 * and whether the schedule verifier (compiler/check/verify.c) ran. */
static void
report(const Ctx *cc, Buf *b)
{
	const Kernel *k = cc->kern;

	buf_printf(b, "kernel %s for %s: %d threads, cluster %dx%dx%d, "
		"%lld bytes of shared memory", k->name,
		target_get(k->target)->name, k->threads, k->cluster[0],
		k->cluster[1], k->cluster[2], (long long)k->smem_bytes);
	if (k->tmem_cols)
		buf_printf(b, ", %d tensor-memory columns", k->tmem_cols);
	buf_putc(b, '\n');
	for (const Part *p = k->parts; p; p = p->next) {
		buf_printf(b, "partition %s", p->name);
		if (p->index >= 0)
			buf_printf(b, "[%d]", p->index);
		buf_printf(b, ": warps %d..%d", p->warp_lo, p->warp_hi);
		if (p->regs)
			buf_printf(b, ", %d registers", p->regs);
		buf_putc(b, '\n');
	}
	buf_puts(b, "checked: names, types, layouts, target rules, MMA and "
		"TMA shapes, shared-memory, register, named-barrier and "
		"tensor-memory budgets; schedule IR verified after every pass");
	if (cc->no_verify)
		buf_puts(b, "\nnot checked: the barrier protocol (no_verify: "
			"the schedule verifier did not run)\n");
	else
		buf_puts(b, "; the barrier protocol, by the schedule verifier "
			"(deadlocks, races, barrier misuse)\n");
	if (cc->debug_hangs)
		buf_puts(b, "debug_hangs: every mbarrier wait gives up after "
			"2 s, prints where it waits and traps\n");
}

static char *
dup_n(fg_ctx *c, const char *s, size_t n)
{
	char *p = rt_alloc(c, n + 1);

	if (p) {
		memcpy(p, s, n);
		p[n] = '\0';
	}
	return p;
}

void
fg_program_free(fg_program *p)
{
	if (!p)
		return;
	if (p->ptx)
		rt_free(p->ctx, p->ptx, p->ptxlen + 1);
	rt_strfree(p->ctx, p->diags);
	rt_strfree(p->ctx, p->report);
	rt_free(p->ctx, p, sizeof *p);
}

/* Copy the results out of the compilation into a new program.  The arena
 * work (which may longjmp) comes before the first rt_alloc. */
static fg_status
finish(fg_ctx *c, Ctx *cc, int nerr, fg_program **out)
{
	fg_program *p;
	Buf d, r;

	buf_init(&d, &cc->perm);
	buf_init(&r, &cc->perm);
	diag_render(cc, &d);
	if (cc->kern && cc->sir)
		report(cc, &r);
	if (!(p = rt_alloc(c, sizeof *p)))
		return FG_ERR_NOMEM;
	memset(p, 0, sizeof *p);
	p->ctx = c;
	p->diags = dup_n(c, d.p, d.len);
	p->report = dup_n(c, r.p, r.len);
	if (!nerr) {
		p->ptxlen = cc->out.len;
		p->ptx = dup_n(c, cc->out.p, cc->out.len);
	}
	if (!p->diags || !p->report || (!nerr && !p->ptx)) {
		fg_program_free(p);
		return FG_ERR_NOMEM;
	}
	*out = p;
	if (nerr)
		return rt_err(c, FG_ERR_COMPILE, "%s", p->diags);
	rt_clear(c);
	return FG_OK;
}

/* The compilation proper, with the entry point's setjmp: nothing here is
 * changed after setjmp, so nothing is clobbered by the longjmp. */
static fg_status
compile_jmp(fg_ctx *c, const char *name, const char *text, size_t len,
	const fg_compile_options *o, const Target *t, fg_program **out)
{
	char err[256];
	jmp_buf oom;
	Ctx cc;
	fg_status st;

	memset(&cc, 0, sizeof cc);  /* ctx_init itself may run out */
	if (setjmp(oom)) {
		ctx_free(&cc);
		return rt_err(c, FG_ERR_NOMEM, "out of memory compiling %s",
			name);
	}
	ctx_init(&cc, c->alloc, c->alloc_ud, &oom);
	cc.arch = t ? (int)t->id : 0;
	cc.werror = o->werror != 0;
	cc.no_verify = o->no_verify != 0;
	cc.verify_threads = c->malloc_alloc;
	cc.debug_hangs = o->debug_hangs != 0;
	cc.verify_each = true;
	for (int i = 0; i < o->ndefines; i++)
		if (!add_define(&cc, o->defines[i], err, sizeof err)) {
			ctx_free(&cc);
			return rt_err(c, FG_ERR_INVALID, "%s", err);
		}
	src_init(&cc, name, text, len);
	if (o->mods)
		src_add(&cc, o->mods_name ? o->mods_name : "<mods>", o->mods,
			strlen(o->mods));
	int nerr = driver_compile(&cc, EMIT_PTX, false);
	st = finish(c, &cc, nerr, out);
	ctx_free(&cc);
	if (st == FG_ERR_NOMEM)
		return rt_err(c, st, "out of memory compiling %s", name);
	return st;
}

static fg_status
compile(fg_ctx *c, const char *name, const char *text, size_t len,
	const fg_compile_options *o, fg_program **out)
{
	static const fg_compile_options none;
	const fg_compile_options *opt = o ? o : &none;
	const Target *t = opt->arch ? target_lookup(opt->arch) : NULL;

	if (opt->ndefines < 0 || (opt->ndefines && !opt->defines))
		return rt_err(c, FG_ERR_INVALID, "ndefines is %d but defines "
			"is %s", opt->ndefines, opt->defines ? "set" : "NULL");
	if (opt->arch && !t)
		return rt_err(c, FG_ERR_INVALID, "unknown arch '%s' (sm_90a, "
			"sm_100a or sm_80)", opt->arch);
	if (opt->mods && strnlen(opt->mods, MAXSRC + 1) > MAXSRC)
		return rt_err(c, FG_ERR_INVALID, "mods is larger than %u bytes",
			MAXSRC);
	return compile_jmp(c, name, text, len, opt, t, out);
}

fg_status
fg_compile_string(fg_ctx *c, const char *name, const char *text,
	size_t len, const fg_compile_options *o, fg_program **out)
{
	if (!c || !out)
		return c ? rt_err(c, FG_ERR_INVALID, "out is NULL") :
			FG_ERR_INVALID;
	*out = NULL;
	if (!text && len)
		return rt_err(c, FG_ERR_INVALID, "text is NULL");
	if (len > MAXSRC)
		return rt_err(c, FG_ERR_INVALID, "the schedule is larger than "
			"%u bytes", MAXSRC);
	return compile(c, name ? name : "<string>", text ? text : "", len, o,
		out);
}

/* Read the whole stream into *text (rt_alloc'd, *cap bytes). */
static fg_status
slurp(fg_ctx *c, FILE *f, const char *path, char **text, size_t *len,
	size_t *cap)
{
	size_t n = 0, sz = 1 << 16, r;
	char *p = rt_alloc(c, sz), *q;

	for (; p; p = q, sz *= 2) {
		while ((r = fread(p + n, 1, sz - n, f)) > 0)
			n += r;
		if (n < sz || n > MAXSRC)
			break;
		if (!(q = rt_realloc(c, p, sz, sz * 2)))
			rt_free(c, p, sz);
	}
	if (!p)
		return rt_err(c, FG_ERR_NOMEM, "out of memory reading '%s'",
			path);
	*text = p;
	*len = n;
	*cap = sz;
	if (ferror(f))
		return rt_err(c, FG_ERR_IO, "cannot read '%s'", path);
	if (n > MAXSRC)
		return rt_err(c, FG_ERR_INVALID, "'%s' is larger than %u "
			"bytes", path, MAXSRC);
	return FG_OK;
}

fg_status
fg_compile_file(fg_ctx *c, const char *path, const fg_compile_options *o,
	fg_program **out)
{
	char *text = NULL;
	size_t n = 0, cap = 0;
	FILE *f;
	fg_status st;

	if (!c || !out || !path)
		return c ? rt_err(c, FG_ERR_INVALID, "%s is NULL", path ?
			"out" : "path") : FG_ERR_INVALID;
	*out = NULL;
	if (!(f = fopen(path, "rb")))
		return rt_err(c, FG_ERR_IO, "cannot open '%s': %s", path,
			strerror(errno));
	st = slurp(c, f, path, &text, &n, &cap);
	fclose(f);
	if (st == FG_OK)
		st = compile(c, path, text, n, o, out);
	rt_free(c, text, cap);
	return st;
}

const char *
fg_program_ptx(const fg_program *p, size_t *len)
{
	if (len)
		*len = p && p->ptx ? p->ptxlen : 0;
	return p ? p->ptx : NULL;
}

const char *
fg_program_diagnostics(const fg_program *p)
{
	return p ? p->diags : "";
}

const char *
fg_program_report(const fg_program *p)
{
	return p ? p->report : "";
}
