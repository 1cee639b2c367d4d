/* consteval.c: compile-time evaluation of expressions over 'const'
 * declarations, literals, dtype names and enum words.  Used by sema for
 * declaration attributes and by sirgen for 'static if'/'static for' and
 * constant folding. */
#include <math.h>
#include <string.h>

#include "base/base.h"
#include "front/front.h"

static bool
isnum(const Val *v)
{
	return v->ty == TY_I64 || v->ty == TY_F64 || v->ty == TY_BOOL;
}

static double
asf(const Val *v)
{
	return v->ty == TY_F64 ? v->f : (double)v->i;
}

/* Integer operations with overflow checks (base.h's ck_*): a schedule's
 * constants are small, so an overflow is a mistake worth reporting. */
static bool
iop(Ctx *ctx, const Node *n, int op, int64_t a, int64_t b, int64_t *r)
{
	switch (op) {
	case '+':
		if (!ck_add(a, b, r))
			goto ovf;
		return true;
	case '-':
		if (!ck_sub(a, b, r))
			goto ovf;
		return true;
	case '*':
		if (!ck_mul(a, b, r))
			goto ovf;
		return true;
	case '/': case '%':
		if (b == 0) {
			diag_error(ctx, n->span, "division by zero in a "
				"constant expression");
			return false;
		}
		if (a == INT64_MIN && b == -1)
			goto ovf;
		*r = op == '/' ? a / b : a % b;
		return true;
	case '&': *r = a & b; return true;
	case '|': *r = a | b; return true;
	case '^': *r = a ^ b; return true;
	case B_SHL: case B_SHR:
		if (b < 0 || b > 62) {
			diag_error(ctx, n->span, "shift count %lld is out of "
				"range (0..62)", (long long)b);
			return false;
		}
		if (op == B_SHR) {
			*r = a >> b;
			return true;
		}
		if (!ck_shl(a, b, r))
			goto ovf;
		return true;
	case '<': *r = a < b; return true;
	case '>': *r = a > b; return true;
	case B_LE: *r = a <= b; return true;
	case B_GE: *r = a >= b; return true;
	case B_EQ: *r = a == b; return true;
	case B_NE: *r = a != b; return true;
	case B_ANDAND: *r = a && b; return true;
	case B_OROR: *r = a || b; return true;
	}
	return false;
ovf:
	diag_error(ctx, n->span, "integer overflow in a constant expression");
	return false;
}

bool
const_binary(Ctx *ctx, const Node *n, const Val *a, const Val *b,
	Val *out)
{
	int op = n->op;
	bool cmp = op == '<' || op == '>' || op == B_LE || op == B_GE ||
		op == B_EQ || op == B_NE;

	if ((a->ty == TY_DTYPE || a->ty == TY_WORD) && a->ty == b->ty &&
	    (op == B_EQ || op == B_NE)) {
		bool eq = a->ty == TY_DTYPE ? a->i == b->i : a->word == b->word;
		*out = (Val){.ty = TY_BOOL, .i = (op == B_EQ) == eq};
		return true;
	}
	if (!isnum(a) || !isnum(b)) {
		const Val *bad = isnum(a) ? b : a;
		diag_error(ctx, n->span, "operator needs numbers, found %s",
			bad->ty == TY_WORD ? "an unknown name" : ty_name(bad->ty));
		return false;
	}
	if (a->ty == TY_F64 || b->ty == TY_F64) {
		double x = asf(a), y = asf(b), r;
		switch (op) {
		case '+': r = x + y; break;
		case '-': r = x - y; break;
		case '*': r = x * y; break;
		case '/': r = x / y; break;
		default:
			if (!cmp) {
				diag_error(ctx, n->span, "operator is not "
					"defined on floating-point values");
				return false;
			}
			r = op == '<' ? x < y : op == '>' ? x > y :
				op == B_LE ? x <= y : op == B_GE ? x >= y :
				op == B_EQ ? x == y : x != y;
			*out = (Val){.ty = TY_BOOL, .i = (int64_t)r};
			return true;
		}
		*out = (Val){.ty = TY_F64, .f = r};
		return true;
	}
	int64_t r;
	if (!iop(ctx, n, op, a->i, b->i, &r))
		return false;
	bool logic = op == B_ANDAND || op == B_OROR;
	*out = (Val){.ty = (cmp || logic) ? TY_BOOL : TY_I64, .i = r};
	if (a->ty == TY_BOOL && b->ty == TY_BOOL && (op == '&' || op == '|' ||
	    op == '^'))
		out->ty = TY_BOOL;
	return true;
}

static bool
call(Ctx *ctx, const Kernel *k, const Node *n, Val *out)
{
	const char *f = n->a->kind == N_NAME ? n->a->name : NULL;
	Val v[2];
	int na = n->kids.n;

	if (!f)
		goto notconst;
	const Res *m = k ? kernel_find(k, f) : NULL;
	if (m && m->kind == R_MOD) {
		diag_error(ctx, n->span, "mod '%s' is inlined into partition "
			"bodies; a constant expression cannot call it", f);
		diag_note(ctx, m->nspan, "'%s' declared here", f);
		return false;
	}
	if (!strcmp(f, "sizeof") && na == 1) {
		if (!const_eval(ctx, k, n->kids.v[0], &v[0]))
			return false;
		if (v[0].ty != TY_DTYPE) {
			diag_error(ctx, n->kids.v[0]->span,
				"'sizeof' needs an element type such as 'bf16'");
			return false;
		}
		*out = (Val){.ty = TY_I64, .i = ty_bytes((Ty)v[0].i)};
		return true;
	}
	if ((!strcmp(f, "cdiv") || !strcmp(f, "min") || !strcmp(f, "max")) &&
	    na == 2) {
		for (int i = 0; i < 2; i++)
			if (!const_eval(ctx, k, n->kids.v[i], &v[i]))
				return false;
		if (v[0].ty != TY_I64 || v[1].ty != TY_I64) {
			diag_error(ctx, n->span, "'%s' needs two integers", f);
			return false;
		}
		if (f[0] == 'c') {
			if (v[1].i <= 0) {
				diag_error(ctx, n->span, "'cdiv' by %lld",
					(long long)v[1].i);
				return false;
			}
			*out = (Val){.ty = TY_I64,
				.i = v[0].i / v[1].i + (v[0].i % v[1].i > 0)};
		} else {
			bool mn = f[1] == 'i';
			int64_t r = (v[0].i < v[1].i) == mn ? v[0].i : v[1].i;
			*out = (Val){.ty = TY_I64, .i = r};
		}
		return true;
	}
	if (!strcmp(f, "arch") && na == 0) {
		/* the kernel's target, --arch applied: a word to compare */
		const Target *t = k ? target_get(k->target) : NULL;
		if (!t) {
			diag_error(ctx, n->span, "'arch()' needs the 'kernel' "
				"declaration before it");
			return false;
		}
		*out = (Val){.ty = TY_WORD, .word = intern_cstr(ctx->strs,
			t->name)};
		return true;
	}
	if (!strcmp(f, "log2") && na == 1) {
		if (!const_eval(ctx, k, n->kids.v[0], &v[0]))
			return false;
		if (v[0].ty == TY_F64 || v[0].ty == TY_I64) {
			double x = asf(&v[0]);
			*out = (Val){.ty = TY_F64, .f = log2(x)};
			return true;
		}
	}
notconst:
	diag_error(ctx, n->span, "expected a constant expression");
	return false;
}

bool
const_eval(Ctx *ctx, const Kernel *k, const Node *n, Val *out)
{
	Val a, b;

	*out = (Val){.ty = TY_ERR};
	switch (n->kind) {
	case N_INT:
		*out = (Val){.ty = TY_I64, .i = n->ival};
		return true;
	case N_FLOAT:
		*out = (Val){.ty = TY_F64, .f = n->fval};
		return true;
	case N_BOOL:
		*out = (Val){.ty = TY_BOOL, .i = n->ival};
		return true;
	case N_NAME: {
		Res *r = k ? kernel_find(k, n->name) : NULL;
		Ty t;
		if (r && r->kind == R_CONST) {
			*out = r->cval;
			return out->ty != TY_ERR;
		}
		if (r) {
			diag_error(ctx, n->span, "'%s' is not a constant",
				n->name);
			diag_note(ctx, r->nspan, "'%s' declared here", n->name);
			return false;
		}
		if (!strcmp(n->name, "inf")) {
			*out = (Val){.ty = TY_F64, .f = INFINITY};
			return true;
		}
		if ((t = ty_lookup(n->name)) != TY_ERR) {
			*out = (Val){.ty = TY_DTYPE, .i = t};
			return true;
		}
		*out = (Val){.ty = TY_WORD, .word = n->name};
		return true;
	}
	case N_UNARY:
		if (!const_eval(ctx, k, n->a, &a))
			return false;
		if (n->op == '!' && a.ty == TY_BOOL) {
			*out = (Val){.ty = TY_BOOL, .i = !a.i};
			return true;
		}
		if (n->op == '-' && a.ty == TY_F64) {
			*out = (Val){.ty = TY_F64, .f = -a.f};
			return true;
		}
		if (a.ty == TY_I64 && n->op != '!') {
			int64_t r = ~a.i;
			if (n->op == '-' && !ck_neg(a.i, &r)) {
				diag_error(ctx, n->span, "integer overflow in "
					"a constant expression");
				return false;
			}
			*out = (Val){.ty = TY_I64, .i = r};
			return true;
		}
		diag_error(ctx, n->span, "operator '%c' does not apply to %s",
			n->op, a.ty == TY_WORD ? "an unknown name" :
			ty_name(a.ty));
		return false;
	case N_BINARY:
		if (!const_eval(ctx, k, n->a, &a) ||
		    !const_eval(ctx, k, n->b, &b))
			return false;
		return const_binary(ctx, n, &a, &b, out);
	case N_TERNARY:
		if (!const_eval(ctx, k, n->a, &a))
			return false;
		if (a.ty != TY_BOOL && a.ty != TY_I64) {
			diag_error(ctx, n->a->span, "condition is not a "
				"boolean");
			return false;
		}
		return const_eval(ctx, k, a.i ? n->b : n->c, out);
	case N_TUPLE: {
		Val *e = NEWARR(&ctx->perm, Val, (size_t)n->kids.n);
		for (int i = 0; i < n->kids.n; i++)
			if (!const_eval(ctx, k, n->kids.v[i], &e[i]))
				return false;
		*out = (Val){.ty = TY_TUPLE, .elts = e, .n = n->kids.n};
		return true;
	}
	case N_CALL:
		return call(ctx, k, n, out);
	default:
		diag_error(ctx, n->span, "expected a constant expression");
		return false;
	}
}
