/* ast.c: constructors and a debug dump for the generic AST of fgc.h. */
#include <string.h>

#include "base/base.h"
#include "front/front.h"

const char *const op_names[NOP] = {
	[OP_NONE] = "?",
#define X(e, s) [OP_##e] = s,
	OPS(X)
#undef X
};

const char *const decl_names[NDK] = {
	[DK_KERNEL] = "kernel", [DK_CONST] = "const", [DK_PARAM] = "param",
	[DK_GLOBAL] = "global", [DK_TMA] = "tma", [DK_CTA] = "cta",
	[DK_TILES] = "tiles", [DK_LAYOUT] = "layout", [DK_SMEM] = "smem",
	[DK_TMEM] = "tmem", [DK_MBAR] = "mbar", [DK_NBAR] = "nbar",
	[DK_PARTITION] = "partition", [DK_VERIFY] = "verify",
	[DK_MOD] = "mod",
};

static const char *const kind_names[NNODE] = {
	[N_INT] = "int", [N_FLOAT] = "float", [N_BOOL] = "bool",
	[N_NAME] = "name", [N_UNARY] = "unary", [N_BINARY] = "binary",
	[N_TERNARY] = "ternary", [N_CALL] = "call", [N_NAMEDARG] = "namedarg",
	[N_INDEX] = "index", [N_FIELD] = "field", [N_TUPLE] = "tuple",
	[N_RANGE] = "range", [N_ARROW] = "arrow", [N_TILES] = "tiles",
	[N_TYPE] = "type", [N_ATTR] = "attr", [N_DECL] = "decl",
	[N_SIF] = "static-if", [N_SASSERT] = "static-assert", [N_SFOR] = "static-for", [N_IF] = "if",
	[N_FOR] = "for", [N_LET] = "let", [N_VAR] = "var", [N_REG] = "reg",
	[N_ASSIGN] = "assign", [N_ELECT] = "elect", [N_MMA] = "mma",
	[N_OP] = "op", [N_EXPRSTMT] = "expr", [N_BLOCK] = "block",
	[N_MODULE] = "module",
};

Node *
node_new(Ctx *ctx, NodeKind k, Span sp)
{
	Node *n = NEW(&ctx->perm, Node);

	n->kind = (uint16_t)k;
	n->span = sp;
	n->nspan = sp;
	return n;
}

void
nodelist_push(Ctx *ctx, NodeList *l, Node *n)
{
	if (l->n == l->cap) {
		int cap = l->cap ? 2 * l->cap : 4;

		l->v = arena_realloc(&ctx->perm, l->v,
			(size_t)l->cap * sizeof *l->v, (size_t)cap * sizeof *l->v);
		l->cap = cap;
	}
	l->v[l->n++] = n;
}

Span
span_join(Span a, Span b)
{
	return (Span){a.lo < b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi};
}

const char *
node_kind_name(int k)
{
	if (k <= 0 || k >= NNODE || !kind_names[k])
		return "?";
	return kind_names[k];
}

static void
opname(Buf *b, int op)
{
	static const char *const two[] = {
		[B_EQ - B_EQ] = "==", [B_NE - B_EQ] = "!=", [B_LE - B_EQ] = "<=",
		[B_GE - B_EQ] = ">=", [B_SHL - B_EQ] = "<<", [B_SHR - B_EQ] = ">>",
		[B_ANDAND - B_EQ] = "&&", [B_OROR - B_EQ] = "||",
	};

	if (op >= B_EQ && op <= B_OROR)
		buf_puts(b, two[op - B_EQ]);
	else
		buf_putc(b, op);
}

void
ast_dump(const Node *n, Buf *b, int ind)
{
	if (!n) {
		buf_printf(b, "%*s-\n", ind, "");
		return;
	}
	buf_printf(b, "%*s%s", ind, "", node_kind_name(n->kind));
	switch (n->kind) {
	case N_INT:
		buf_printf(b, " %lld", (long long)n->ival);
		break;
	case N_FLOAT:
		buf_printf(b, " %g", n->fval);
		break;
	case N_BOOL:
		buf_puts(b, n->ival ? " true" : " false");
		break;
	case N_UNARY: case N_BINARY: case N_ASSIGN: case N_MMA:
		buf_putc(b, ' ');
		opname(b, n->op);
		break;
	case N_DECL:
		buf_printf(b, " %s", n->op < NDK && decl_names[n->op] ?
			decl_names[n->op] : "?");
		break;
	case N_OP:
		buf_printf(b, " %s", n->op < NOP ? op_names[n->op] : "?");
		break;
	case N_ELECT:
		buf_puts(b, n->op ? " warp" : "");
		break;
	}
	if (n->name)
		buf_printf(b, " '%s'", n->name);
	buf_putc(b, '\n');
	const Node *f[] = {n->a, n->b, n->c, n->d};
	for (size_t i = 0; i < COUNT(f); i++)
		if (f[i] && !(n->kind == N_DECL && i == 2 && f[i] == n->c &&
		    n->c->a == n->a && i == 0))
			ast_dump(f[i], b, ind + 2);
	for (int i = 0; i < n->attrs.n; i++)
		ast_dump(n->attrs.v[i], b, ind + 2);
	for (int i = 0; i < n->kids.n; i++)
		ast_dump(n->kids.v[i], b, ind + 2);
}

/* Reject trees deeper than MAXTREE before any recursive walk sees them:
 * left-associative chains ('a + a + ... ', 'x.f.f...') grow the tree
 * without growing bison's stack.  Iterative, with an explicit stack. */
bool
ast_check_depth(Ctx *ctx, const Node *root)
{
	typedef struct {
		const Node *n;
		int depth;
	} Item;
	size_t cap = 256, sp = 0;
	Item *st = NEWARR(&ctx->scratch, Item, cap);

	st[sp++] = (Item){root, 0};
	while (sp) {
		Item it = st[--sp];
		const Node *n = it.n;
		if (it.depth > MAXTREE) {
			diag_error(ctx, n->span, "the schedule is nested too "
				"deeply here (more than %d levels)", MAXTREE);
			return false;
		}
		const Node *f[] = {n->a, n->b, n->c, n->d};
		size_t need = sp + COUNT(f) + (size_t)n->kids.n +
			(size_t)n->attrs.n;
		if (need > cap) {
			size_t nc = need * 2;
			st = arena_realloc(&ctx->scratch, st, cap * sizeof *st,
				nc * sizeof *st);
			cap = nc;
		}
		for (size_t i = 0; i < COUNT(f); i++)
			if (f[i] && f[i] != n)
				st[sp++] = (Item){f[i], it.depth + 1};
		for (int i = 0; i < n->kids.n; i++)
			st[sp++] = (Item){n->kids.v[i], it.depth + 1};
		for (int i = 0; i < n->attrs.n; i++)
			st[sp++] = (Item){n->attrs.v[i], it.depth + 1};
	}
	return true;
}
