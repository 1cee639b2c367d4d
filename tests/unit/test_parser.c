/* test_parser.c: the lexer and parser through parse_src: the AST's shape
 * (via ast_dump), spans, literals, limits, and how many errors a broken
 * source gives (recovery). */
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
	char *text;   /* a generated source, freed by teardown */
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
	free(f->text);
	free(f);
	return 0;
}

static Node *
parse_n(void **state, const char *src, size_t n)
{
	Fix *f = *state;
	Node *m;

	src_init(&f->c, "t.fa", src, n);
	m = parse_src(&f->c, &f->c.src);
	assert_non_null(m);
	assert_int_equal(m->kind, N_MODULE);
	return m;
}

static Node *
parse(void **state, const char *src)
{
	return parse_n(state, src, strlen(src));
}

static const char *
dump(void **state, const Node *n)
{
	Fix *f = *state;
	Buf b;

	buf_init(&b, &f->c.perm);
	ast_dump(n, &b, 0);
	return b.p;
}

static const char *
diags(void **state)
{
	Fix *f = *state;
	Buf b;

	buf_init(&b, &f->c.perm);
	diag_render(&f->c, &b);
	return b.p ? b.p : "";
}

static int
nerr(void **state)
{
	return ((Fix *)*state)->c.nerr;
}

static const char *
first_msg(void **state)
{
	const Diag *d = ((Fix *)*state)->c.diags;

	assert_non_null(d);
	return d->msg;
}

/* The span of the first occurrence of s in the source. */
static Span
at(void **state, const char *s)
{
	const char *text = ((Fix *)*state)->c.src.text;
	const char *p = strstr(text, s);

	assert_non_null(p);
	return (Span){(uint32_t)(p - text), (uint32_t)(p - text + strlen(s))};
}

static void
assert_span(Span got, Span want)
{
	assert_int_equal(got.lo, want.lo);
	assert_int_equal(got.hi, want.hi);
}

/* The text of 'const X = EXPR;' parsed, and its value expression. */
static const Node *
const_expr(void **state, const char *expr)
{
	char src[512];
	Node *m;

	snprintf(src, sizeof src, "const X = %s;", expr);
	((Fix *)*state)->text = strdup(src);
	m = parse(state, ((Fix *)*state)->text);
	assert_int_equal(nerr(state), 0);
	assert_int_equal(m->kids.n, 1);
	return m->kids.v[0]->d;
}

/* ------------------------------------------------------------ shape */

static void
empty_source_is_an_empty_module(void **state)
{
	Node *m = parse(state, "");

	assert_int_equal(m->kids.n, 0);
	assert_int_equal(nerr(state), 0);
}

static void
comments_and_blanks_are_skipped(void **state)
{
	Node *m = parse(state, "// a line\n/* a block\n * over lines */\n"
		"  \t\r\n\f\v");

	assert_int_equal(m->kids.n, 0);
	assert_int_equal(nerr(state), 0);
}

static void
declaration_keeps_name_array_size_and_attributes(void **state)
{
	Node *m = parse(state, "mbar full[4] count=1 tx=64 * 128;");

	assert_int_equal(nerr(state), 0);
	assert_string_equal(dump(state, m),
		"module\n"
		"  decl mbar 'full'\n"
		"    int 4\n"
		"    attr 'count'\n"
		"      int 1\n"
		"    attr 'tx'\n"
		"      binary *\n"
		"        int 64\n"
		"        int 128\n");
}

static void
flag_attribute_has_no_value(void **state)
{
	Node *m = parse(state, "tmem d : bf16[128, 64] col=0 packed;");
	const Node *d = m->kids.v[0];

	assert_int_equal(d->attrs.n, 2);
	assert_string_equal(d->attrs.v[1]->name, "packed");
	assert_null(d->attrs.v[1]->a);
}

static void
type_keeps_each_bracket_group(void **state)
{
	Node *m = parse(state, "smem buf : bf16[4][64, 32] swizzle=64;");
	const Node *t = m->kids.v[0]->b;

	assert_int_equal(t->kind, N_TYPE);
	assert_string_equal(t->name, "bf16");
	assert_int_equal(t->kids.n, 2);
	assert_int_equal(t->kids.v[0]->kids.n, 1);
	assert_int_equal(t->kids.v[1]->kids.n, 2);
}

static void
multiplication_binds_tighter_than_addition(void **state)
{
	assert_string_equal(dump(state, const_expr(state, "1 + 2 * 3")),
		"binary +\n"
		"  int 1\n"
		"  binary *\n"
		"    int 2\n"
		"    int 3\n");
}

static void
binary_operators_associate_left(void **state)
{
	assert_string_equal(dump(state, const_expr(state, "8 - 4 - 2")),
		"binary -\n"
		"  binary -\n"
		"    int 8\n"
		"    int 4\n"
		"  int 2\n");
}

static void
unary_minus_binds_tighter_than_multiplication(void **state)
{
	assert_string_equal(dump(state, const_expr(state, "-2 * 3")),
		"binary *\n"
		"  unary -\n"
		"    int 2\n"
		"  int 3\n");
}

static void
comparison_binds_looser_than_shift_and_tighter_than_and(void **state)
{
	assert_string_equal(dump(state,
		const_expr(state, "1 << 2 == 4 && x < 3")),
		"binary &&\n"
		"  binary ==\n"
		"    binary <<\n"
		"      int 1\n"
		"      int 2\n"
		"    int 4\n"
		"  binary <\n"
		"    name 'x'\n"
		"    int 3\n");
}

static void
bitwise_and_binds_tighter_than_xor(void **state)
{
	/* the schedules write '(it / S & 1) ^ 1' */
	assert_string_equal(dump(state, const_expr(state, "a / s & 1 ^ 1")),
		"binary ^\n"
		"  binary &\n"
		"    binary /\n"
		"      name 'a'\n"
		"      name 's'\n"
		"    int 1\n"
		"  int 1\n");
}

static void
ternary_nests_to_the_right(void **state)
{
	assert_string_equal(dump(state, const_expr(state, "a ? 1 : b ? 2 : 3")),
		"ternary\n"
		"  name 'a'\n"
		"  int 1\n"
		"  ternary\n"
		"    name 'b'\n"
		"    int 2\n"
		"    int 3\n");
}

static void
parentheses_group_and_commas_make_tuples(void **state)
{
	Node *m = parse(state, "const A = (7); const B = (7, 8, 9);");

	assert_int_equal(nerr(state), 0);
	assert_int_equal(m->kids.v[0]->d->kind, N_INT);
	assert_int_equal(m->kids.v[1]->d->kind, N_TUPLE);
	assert_int_equal(m->kids.v[1]->d->kids.n, 3);
}

static void
calls_take_named_arguments(void **state)
{
	Node *m = parse(state, "layout L = smem(swizzle=128, major=K);");

	assert_int_equal(nerr(state), 0);
	assert_string_equal(dump(state, m->kids.v[0]->d),
		"call\n"
		"  name 'smem'\n"
		"  namedarg 'swizzle'\n"
		"    int 128\n"
		"  namedarg 'major'\n"
		"    name 'K'\n");
}

static void
layout_attribute_is_a_name_not_a_keyword(void **state)
{
	/* 'layout' declares, but 'layout=L' is an attribute: a regression
	 * test for 'smem b : T layout=L;' and 'reg d : T layout = acc;' */
	Node *m = parse(state, "smem b : bf16[64, 64] layout=L;\n"
		"partition p warps=0..0 { reg d : f32[64, 64] layout = acc; }\n"
		"layout L2 = smem (swizzle=0);");

	assert_int_equal(nerr(state), 0);
	assert_string_equal(m->kids.v[0]->attrs.v[0]->name, "layout");
	assert_string_equal(m->kids.v[1]->kids.v[0]->attrs.v[0]->name,
		"layout");
	assert_int_equal(m->kids.v[2]->op, DK_LAYOUT);
	assert_string_equal(m->kids.v[2]->d->a->name, "smem");
}

static void
layout_compared_with_double_equals_stays_a_keyword(void **state)
{
	parse(state, "layout == 1;");
	assert_int_equal(nerr(state), 1);
	assert_string_equal(first_msg(state), "expected identifier, found '=='");
}

static void
partition_family_keeps_index_variable_and_bound(void **state)
{
	Node *m = parse(state,
		"partition wg[i < 2] warps=4*i..4*i+3 regs=232 { exit; }");
	const Node *d = m->kids.v[0];

	assert_int_equal(nerr(state), 0);
	assert_int_equal(d->op, DK_PARTITION);
	assert_non_null(d->c);
	assert_string_equal(d->c->name, "i");
	assert_int_equal(d->a->kind, N_INT);
	assert_int_equal(d->a->ival, 2);
	assert_int_equal(d->attrs.n, 2);
	assert_int_equal(d->attrs.v[0]->a->kind, N_RANGE);
	assert_int_equal(d->kids.n, 1);
	assert_int_equal(d->kids.v[0]->kind, N_OP);
	assert_int_equal(d->kids.v[0]->op, OP_EXIT);
}

static void
statements_have_their_kinds(void **state)
{
	Node *m = parse(state, "partition p warps=0..0 {\n"
		"	let a = 1;\n"
		"	var b : i32 = 2;\n"
		"	var c;\n"
		"	reg d : f32[64, 64] init=0;\n"
		"	b += a;\n"
		"	if a { } else if b { } else { }\n"
		"	for t in tiles { }\n"
		"	for k in 0..8 step 2 { }\n"
		"	static if X { } else { }\n"
		"	static for s in 0..4 { }\n"
		"	elect { }\n"
		"	elect warp { }\n"
		"	mma d += a @ b.T acc=z;\n"
		"	tma_commit;\n"
		"	{ }\n"
		"}\n");
	static const int kinds[] = {N_LET, N_VAR, N_VAR, N_REG, N_ASSIGN,
		N_IF, N_FOR, N_FOR, N_SIF, N_SFOR, N_ELECT, N_ELECT, N_MMA, N_OP,
		N_BLOCK};
	const Node *p = m->kids.v[0];

	assert_int_equal(nerr(state), 0);
	assert_int_equal(p->kids.n, (int)COUNT(kinds));
	for (size_t i = 0; i < COUNT(kinds); i++)
		assert_int_equal(p->kids.v[i]->kind, kinds[i]);
	assert_int_equal(p->kids.v[4]->op, '+');      /* b += a */
	assert_int_equal(p->kids.v[5]->c->kind, N_IF); /* else if */
	assert_int_equal(p->kids.v[6]->a->kind, N_TILES);
	assert_non_null(p->kids.v[7]->a->c);          /* step 2 */
	assert_int_equal(p->kids.v[10]->op, 0);       /* one thread */
	assert_int_equal(p->kids.v[11]->op, 1);       /* one per warp */
	assert_int_equal(p->kids.v[12]->op, '+');
	assert_int_equal(p->kids.v[12]->c->kind, N_FIELD);
	assert_int_equal(p->kids.v[13]->op, OP_TMA_COMMIT);
}

static void
operation_takes_operands_and_attributes(void **state)
{
	Node *m = parse(state, "partition p warps=0..0 {\n"
		"	tma_load tx[t.y * 64, 0] -> buf[s], full[s];\n"
		"	arrive empty[s] count=2;\n"
		"	tma_wait 0 read;\n"
		"}\n");
	const Node *ld = m->kids.v[0]->kids.v[0];
	const Node *ar = m->kids.v[0]->kids.v[1];
	const Node *tw = m->kids.v[0]->kids.v[2];

	assert_int_equal(nerr(state), 0);
	assert_int_equal(ld->op, OP_TMA_LOAD);
	assert_int_equal(ld->kids.n, 2);
	assert_int_equal(ld->kids.v[0]->kind, N_ARROW);
	assert_int_equal(ld->kids.v[0]->a->kind, N_INDEX);
	assert_int_equal(ld->kids.v[0]->a->kids.n, 2);
	assert_int_equal(ar->op, OP_ARRIVE);
	assert_int_equal(ar->attrs.n, 1);
	assert_string_equal(ar->attrs.v[0]->name, "count");
	assert_int_equal(tw->attrs.n, 1);
	assert_null(tw->attrs.v[0]->a);
}

static void
static_if_chains_at_top_level(void **state)
{
	Node *m = parse(state, "static if A { const X = 1; } "
		"else static if B { } else { const Y = 2; }");
	const Node *s = m->kids.v[0];

	assert_int_equal(nerr(state), 0);
	assert_int_equal(s->kind, N_SIF);
	assert_int_equal(s->b->kids.n, 1);
	assert_int_equal(s->c->kind, N_SIF);
	assert_int_equal(s->c->c->kind, N_BLOCK);
	assert_int_equal(s->c->c->kids.n, 1);
}

/* ------------------------------------------------------------ spans */

static void
declaration_span_covers_keyword_to_semicolon(void **state)
{
	Node *m = parse(state, "kernel k target=sm_90a;\n  mbar full[2] count=1;");
	const Node *d = m->kids.v[1];

	assert_span(d->span, at(state, "mbar full[2] count=1;"));
	assert_span(d->nspan, at(state, "full"));
	assert_span(d->attrs.v[0]->span, at(state, "count=1"));
	assert_span(d->attrs.v[0]->nspan, at(state, "count"));
}

static void
expression_spans_cover_their_operands(void **state)
{
	const Node *e = const_expr(state, "(a + b) * c");

	assert_span(e->span, at(state, "(a + b) * c"));
	assert_span(e->a->span, at(state, "a + b"));
	assert_int_equal(e->b->span.lo, at(state, "c;").lo);
	assert_int_equal(e->b->span.hi, at(state, "c;").lo + 1);
}

static void
partition_span_covers_its_body(void **state)
{
	Node *m = parse(state, "partition p warps=0..0 {\n\texit;\n}\n");
	const Node *d = m->kids.v[0];

	assert_span(d->span, at(state, "partition p warps=0..0 {\n\texit;\n}"));
	assert_span(d->kids.v[0]->span, at(state, "exit;"));
	assert_span(d->kids.v[0]->nspan, at(state, "exit"));
}

static void
syntax_error_points_at_the_unexpected_token(void **state)
{
	parse(state, "mbar full count=1\nmbar empty count=1;");
	assert_int_equal(nerr(state), 1);
	assert_int_equal(((Fix *)*state)->c.diags->span.lo,
		at(state, "mbar empty").lo);
	assert_int_equal(((Fix *)*state)->c.diags->span.hi -
		((Fix *)*state)->c.diags->span.lo, 4);
	assert_string_equal(first_msg(state),
		"expected identifier, ';' or '{', found 'mbar'");
}

/* ------------------------------------------------------------ literals */

static void
integer_literals_in_decimal_hex_and_with_separators(void **state)
{
	Node *m = parse(state, "const A = 1_000_000; const B = 0xff; "
		"const C = 0X1_0;");

	assert_int_equal(nerr(state), 0);
	assert_int_equal(m->kids.v[0]->d->ival, 1000000);
	assert_int_equal(m->kids.v[1]->d->ival, 255);
	assert_int_equal(m->kids.v[2]->d->ival, 16);
}

static void
largest_integer_literal_is_int64_max(void **state)
{
	assert_int_equal(const_expr(state, "9223372036854775807")->ival,
		INT64_MAX);
}

static void
integer_literal_past_int64_is_an_error(void **state)
{
	parse(state, "const A = 9223372036854775808;");
	assert_int_equal(nerr(state), 1);
	assert_string_equal(first_msg(state), "integer literal is too large "
		"(the largest is 9223372036854775807)");
}

static void
float_literals_with_and_without_exponent(void **state)
{
	Node *m = parse(state, "const A = 0.5; const B = 2e3; const C = 1.5E-2;");

	assert_int_equal(nerr(state), 0);
	assert_int_equal(m->kids.v[0]->d->kind, N_FLOAT);
	assert_true(m->kids.v[0]->d->fval == 0.5);
	assert_true(m->kids.v[1]->d->fval == 2000.0);
	assert_true(m->kids.v[2]->d->fval == 0.015);
}

static void
float_literal_out_of_range_is_an_error(void **state)
{
	parse(state, "const A = 1e999;");
	assert_int_equal(nerr(state), 1);
	assert_string_equal(first_msg(state),
		"floating-point literal is out of range");
}

static void
tiny_float_literal_underflows_quietly(void **state)
{
	parse(state, "const A = 1e-999;");
	assert_int_equal(nerr(state), 0);
}

static void
number_run_into_letters_is_one_error(void **state)
{
	parse(state, "mbar full count=12ab;\nconst B = 0x;");
	assert_int_equal(nerr(state), 2);
	assert_string_equal(first_msg(state), "invalid numeric literal '12ab'");
	assert_span(((Fix *)*state)->c.diags->span, at(state, "12ab"));
	assert_string_equal(((Fix *)*state)->c.diags->next->msg,
		"invalid numeric literal '0x'");
}

static void
keywords_are_not_names(void **state)
{
	parse(state, "mbar step count=1;");
	assert_int_equal(nerr(state), 1);
	assert_string_equal(first_msg(state), "expected identifier, found "
		"reserved word 'step'; rename it, e.g. 'step_p'");
}

/* ------------------------------------------------------------ bad bytes */

static void
stray_characters_are_reported_and_skipped(void **state)
{
	Node *m = parse(state, "const A = 1; $ const B = 2;");

	assert_int_equal(nerr(state), 1);
	assert_string_equal(first_msg(state), "stray '$' in the source");
	assert_int_equal(m->kids.n, 2);
}

static void
nul_byte_is_reported(void **state)
{
	static const char src[] = "const A = 1;\0const B = 2;";

	parse_n(state, src, sizeof src - 1);
	assert_int_equal(nerr(state), 1);
	assert_string_equal(first_msg(state), "stray NUL byte in the source");
	assert_int_equal(((Fix *)*state)->c.diags->span.lo, 12);
}

static void
one_run_of_garbage_reports_at_most_three_bytes(void **state)
{
	parse(state, "const A = 1; \x01\x02\x03\x04\x05\x06 const B = 2;");
	assert_int_equal(nerr(state), 3);
	assert_string_equal(first_msg(state), "stray control byte 0x01");
}

static void
utf8_outside_comments_is_reported_by_character(void **state)
{
	parse(state, "const A = 1; \xc2\xb5 const B = 2\xff;");
	assert_int_equal(nerr(state), 2);
	assert_string_equal(first_msg(state),
		"character '\xc2\xb5' is not allowed outside comments");
	assert_string_equal(((Fix *)*state)->c.diags->next->msg,
		"invalid UTF-8 byte 0xff");
}

static void
any_bytes_are_accepted_in_comments(void **state)
{
	static const char src[] = "// \xff\xfe \0 \xc3\x28\n"
		"/* \xed\xa0\x80 \xf8\x88 \0 */ const A = 1;";
	Node *m = parse_n(state, src, sizeof src - 1);

	assert_int_equal(nerr(state), 0);
	assert_int_equal(m->kids.n, 1);
}

static void
line_comment_ends_at_carriage_return(void **state)
{
	Node *m = parse(state, "// one\rconst A = 1;\r");

	assert_int_equal(nerr(state), 0);
	assert_int_equal(m->kids.n, 1);
}

static void
unterminated_comment_is_reported_where_it_starts(void **state)
{
	parse(state, "const A = 1;\n/* never\n closed");
	assert_int_equal(nerr(state), 1);
	assert_string_equal(first_msg(state), "unterminated comment");
	assert_span(((Fix *)*state)->c.diags->span, at(state, "/*"));
}

/* ------------------------------------------------------------ limits */

static char *
repeat(const char *pre, const char *unit, int n, const char *post)
{
	size_t lp = strlen(pre), lu = strlen(unit), lq = strlen(post);
	char *s = malloc(lp + lu * (size_t)n + lq + 1), *p = s;

	memcpy(p, pre, lp);
	p += lp;
	for (int i = 0; i < n; i++, p += lu)
		memcpy(p, unit, lu);
	memcpy(p, post, lq + 1);
	return s;
}

static void
brackets_nested_past_the_limit_give_one_error(void **state)
{
	Fix *f = *state;
	char *open = repeat("const A = ", "(", MAXDEPTH + 1, "1");

	f->text = repeat(open, ")", MAXDEPTH + 1, ";");
	free(open);
	parse(state, f->text);
	assert_int_equal(nerr(state), 1);
	assert_string_equal(first_msg(state),
		"brackets nested too deeply (the limit is 256)");
}

static void
brackets_nested_to_the_limit_are_fine(void **state)
{
	Fix *f = *state;
	char *open = repeat("const A = ", "(", MAXDEPTH, "1");

	f->text = repeat(open, ")", MAXDEPTH, ";");
	free(open);
	parse(state, f->text);
	assert_int_equal(nerr(state), 0);
}

static void
long_operator_chain_parses_but_is_too_deep(void **state)
{
	/* left-nested: bison's stack stays shallow while the tree grows
	 * 100k deep; ast_check_depth stops it before any recursive walk */
	Fix *f = *state;
	Node *m;

	f->text = repeat("const A = 1", " + 1", 100000, ";");
	m = parse(state, f->text);
	assert_int_equal(nerr(state), 0);
	assert_false(ast_check_depth(&f->c, m));
	assert_int_equal(nerr(state), 1);
	assert_string_equal(first_msg(state), "the schedule is nested too "
		"deeply here (more than 1000 levels)");
}

static void
operator_chain_of_a_thousand_levels_is_fine(void **state)
{
	Fix *f = *state;
	Node *m;

	f->text = repeat("const A = 1", " + 1", 990, ";");
	m = parse(state, f->text);
	assert_true(ast_check_depth(&f->c, m));
	assert_int_equal(nerr(state), 0);
}

static void
deep_unary_chain_gives_one_error(void **state)
{
	Fix *f = *state;

	f->text = repeat("const A = ", "-", 100000, "1;");
	parse(state, f->text);
	assert_int_equal(nerr(state), 1);
}

/* ------------------------------------------------------------ recovery */

static void
missing_semicolon_gives_one_error(void **state)
{
	Node *m = parse(state, "const A = 1\nconst B = 2;\nconst C = 3;");

	assert_int_equal(nerr(state), 1);
	assert_int_equal(m->kids.n, 1);  /* C survives */
	assert_string_equal(m->kids.v[0]->name, "C");
}

static void
missing_semicolon_before_brace_closes_the_block(void **state)
{
	Node *m = parse(state, "partition p warps=0..0 {\n"
		"	elect { arrive full }\n"
		"	wait full, 0;\n"
		"}\n"
		"const Z = 1;");

	assert_int_equal(nerr(state), 1);
	assert_string_equal(first_msg(state),
		"expected identifier or ';', found '}'");
	assert_int_equal(m->kids.n, 2);
	assert_int_equal(m->kids.v[0]->kids.n, 2);  /* elect, wait */
}

static void
each_broken_statement_is_reported_once(void **state)
{
	Node *m = parse(state, "partition p warps=0..0 {\n"
		"	let = 1;\n"
		"	var ok = 1;\n"
		"	wait full, ;\n"
		"	var ok2 = 2;\n"
		"	arrive +;\n"
		"	var ok3 = 3;\n"
		"}\n");

	assert_int_equal(nerr(state), 3);
	assert_int_equal(m->kids.n, 1);
	assert_int_equal(m->kids.v[0]->kids.n, 3);  /* the three vars */
}

static void
errors_stop_at_the_limit(void **state)
{
	Fix *f = *state;

	f->text = repeat("", "const = 1; const B = 2;\n", 40, "");
	parse(state, f->text);
	assert_int_equal(nerr(state), MAXERRORS);
	assert_true(f->c.too_many);
	assert_non_null(strstr(diags(state), "too many errors"));
}

static void
unclosed_brace_is_reported_at_end_of_file(void **state)
{
	parse(state, "partition p warps=0..0 {\n\texit;\n");
	assert_int_equal(nerr(state), 1);
	assert_string_equal(first_msg(state), "unexpected end of file");
}

/* ------------------------------------------------------------ memory */

/* Parse with allocation number fail failing; false when nothing failed.
 * Memory is all given back either way. */
/* A source added after the schedule (a --mod file) is parsed with its
 * own offsets: spans past the schedule's, a syntax error rendered with
 * its name and its own line, a byte-order mark at its start skipped. */
static void
added_source_parses_at_its_own_offsets(void **state)
{
	Fix *f = *state;
	static const char m[] = "\xEF\xBB\xBF" "param a : i32;\nparam b = ;\n";
	Buf b;

	parse(state, "kernel k target=sm_90a;\n");
	const Src *s = src_add(&f->c, "m.fa", m, sizeof m - 1);
	Node *n = parse_src(&f->c, s);
	assert_true(n->kids.n >= 1);
	assert_int_equal(n->kids.v[0]->nspan.lo, s->base + 9);
	assert_int_equal(f->c.nerr, 1);
	buf_init(&b, &f->c.scratch);
	diag_render(&f->c, &b);
	assert_string_equal(b.p, "m.fa:2:11: error: unexpected ';'\n"
		"    2 | param b = ;\n"
		"      |           ^\n"
		"1 error\n");
}

static bool
parse_failing_at(long fail)
{
	static const char src[] = "kernel k target=sm_90a;\n"
		"const S = 4;\nmbar full[S] count=1;\n"
		"partition p warps=0..0 { for t in tiles { wait full[0], 0; } }\n"
		"// a comment\n$";
	TestAlloc ta = {.failat = fail};
	jmp_buf jb;
	Ctx c;

	if (setjmp(jb)) {
		ctx_free(&c);
		assert_int_equal(ta.live, 0);
		assert_int_equal(ta.bytes, 0);
		return true;
	}
	ctx_init(&c, test_alloc, &ta, &jb);
	src_init(&c, "t.fa", src, sizeof src - 1);
	parse_src(&c, &c.src);
	ctx_free(&c);
	assert_int_equal(ta.live, 0);
	assert_int_equal(ta.bytes, 0);
	return false;
}

/* An allocation failure anywhere in the parse longjmps out of it, and the
 * context still frees everything: try each allocation in turn. */
static void
every_allocation_failure_is_survived(void **state)
{
	long fail = 1;

	(void)state;
	while (parse_failing_at(fail))
		assert_true(++fail < 10000);
	assert_true(fail > 1);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(empty_source_is_an_empty_module),
		T(comments_and_blanks_are_skipped),
		T(declaration_keeps_name_array_size_and_attributes),
		T(flag_attribute_has_no_value),
		T(type_keeps_each_bracket_group),
		T(multiplication_binds_tighter_than_addition),
		T(binary_operators_associate_left),
		T(unary_minus_binds_tighter_than_multiplication),
		T(comparison_binds_looser_than_shift_and_tighter_than_and),
		T(bitwise_and_binds_tighter_than_xor),
		T(ternary_nests_to_the_right),
		T(parentheses_group_and_commas_make_tuples),
		T(calls_take_named_arguments),
		T(layout_attribute_is_a_name_not_a_keyword),
		T(layout_compared_with_double_equals_stays_a_keyword),
		T(partition_family_keeps_index_variable_and_bound),
		T(statements_have_their_kinds),
		T(operation_takes_operands_and_attributes),
		T(static_if_chains_at_top_level),
		T(declaration_span_covers_keyword_to_semicolon),
		T(expression_spans_cover_their_operands),
		T(partition_span_covers_its_body),
		T(syntax_error_points_at_the_unexpected_token),
		T(integer_literals_in_decimal_hex_and_with_separators),
		T(largest_integer_literal_is_int64_max),
		T(integer_literal_past_int64_is_an_error),
		T(float_literals_with_and_without_exponent),
		T(float_literal_out_of_range_is_an_error),
		T(tiny_float_literal_underflows_quietly),
		T(number_run_into_letters_is_one_error),
		T(keywords_are_not_names),
		T(stray_characters_are_reported_and_skipped),
		T(nul_byte_is_reported),
		T(one_run_of_garbage_reports_at_most_three_bytes),
		T(utf8_outside_comments_is_reported_by_character),
		T(any_bytes_are_accepted_in_comments),
		T(line_comment_ends_at_carriage_return),
		T(unterminated_comment_is_reported_where_it_starts),
		T(brackets_nested_past_the_limit_give_one_error),
		T(brackets_nested_to_the_limit_are_fine),
		T(long_operator_chain_parses_but_is_too_deep),
		T(operator_chain_of_a_thousand_levels_is_fine),
		T(deep_unary_chain_gives_one_error),
		T(missing_semicolon_gives_one_error),
		T(missing_semicolon_before_brace_closes_the_block),
		T(each_broken_statement_is_reported_once),
		T(errors_stop_at_the_limit),
		T(unclosed_brace_is_reported_at_end_of_file),
		T(added_source_parses_at_its_own_offsets),
		cmocka_unit_test(every_allocation_failure_is_survived),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
