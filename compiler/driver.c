/* driver.c: the phases of one compilation, stopping between phases when
 * there are errors: parse (the schedule, then the --mod files), sema,
 * sirgen, the pass pipeline, then PTX or the IR's text form.  Shared by
 * the CLI and the runtime library. */
#include <string.h>

#include "fgc.h"

enum { P_VERIFY = 1 };

typedef struct Pass {
	const char *name;
	PassFn *fn;
	int flags;
} Pass;

static const Pass passes[] = {
	{"layout", pass_layout, P_VERIFY},
	{"legalize", pass_legalize, P_VERIFY},
	{"regs", pass_regs, 0},        /* regs.c: tiles against budgets */
	{"verify", pass_verify, 0},    /* verify.c: protocol and deadlock */
	{0},
};


/* The items of every source after the schedule (the --mod files), in
 * order, as one module: ctx->mods, or NULL when there are none. */
static bool
parse_mods(Ctx *ctx)
{
	Node *all = NULL;

	for (const Src *s = ctx->more; s; s = s->next) {
		int nerr = ctx->nerr;
		Node *m = parse_src(ctx, s);
		arena_reset(&ctx->scratch);
		if (!m || ctx->nerr > nerr || !ast_check_depth(ctx, m))
			continue;
		arena_reset(&ctx->scratch);
		if (!all)
			all = node_new(ctx, N_MODULE, m->span);
		for (int i = 0; i < m->kids.n; i++)
			nodelist_push(ctx, &all->kids, m->kids.v[i]);
	}
	ctx->mods = all;
	return ctx->nerr == 0;
}

int
driver_compile(Ctx *ctx, EmitKind emit, bool check_only)
{
	Node *mod = parse_src(ctx, &ctx->src);

	arena_reset(&ctx->scratch);
	if (ctx->nerr || !mod)
		return ctx->nerr ? ctx->nerr : 1;
	if (!ast_check_depth(ctx, mod))
		return ctx->nerr;
	arena_reset(&ctx->scratch);
	if (!parse_mods(ctx))
		return ctx->nerr;
	if (emit == EMIT_AST) {
		ast_dump(mod, &ctx->out, 0);
		return 0;
	}
	ctx->mod = mod;
	Kernel *k = sema_kernel(ctx, mod);
	ctx->kern = k;
	if (ctx->nerr)
		return ctx->nerr;
	ctx->target = target_get(k->target);
	SirMod *m = sirgen(ctx, k);
	ctx->sir = m;
	arena_reset(&ctx->scratch);
	if (ctx->nerr)
		return ctx->nerr;
	if (ctx->dump_after && !strcmp(ctx->dump_after, "sirgen") && ctx->dump)
		sir_print(m, ctx->dump);
	if (!pass_run_all(ctx, m)) {
		/* the graph with the verifier's errors drawn in it */
		if (emit == EMIT_DOT && m->finds && !check_only)
			sir_dot(ctx, m, &ctx->out);
		return ctx->nerr;
	}
	if (check_only)
		return 0;
	if (emit == EMIT_IR)
		sir_print(m, &ctx->out);
	else if (emit == EMIT_DOT)
		sir_dot(ctx, m, &ctx->out);
	else if (!ptx_gen(ctx, m, &ctx->out))
		return ctx->nerr ? ctx->nerr : 1;
	return ctx->nerr;
}

bool
pass_run_all(Ctx *ctx, SirMod *m)
{
	if (ctx->verify_each)
		sir_verify(ctx, m);
	for (const Pass *p = passes; p->name; p++) {
		p->fn(ctx, m);
		arena_reset(&ctx->scratch);
		if (ctx->nerr)
			return false;
		if ((p->flags & P_VERIFY) && ctx->verify_each)
			sir_verify(ctx, m);
		if (ctx->dump_after && !strcmp(ctx->dump_after, p->name) &&
		    ctx->dump)
			sir_print(m, ctx->dump);
	}
	return true;
}

bool
pass_known(const char *name)
{
	for (const Pass *p = passes; p->name; p++)
		if (!strcmp(p->name, name))
			return true;
	return !strcmp(name, "sirgen");
}
