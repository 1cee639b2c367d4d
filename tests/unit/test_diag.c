/* test_diag.c: line tables, diagnostic recording rules and GCC-style
 * rendering. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
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
ctx_with(void **state, const char *name, const char *text)
{
	Fix *f = *state;

	src_init(&f->c, name, text, strlen(text));
	return &f->c;
}

static const char *
render(const Ctx *c)
{
	Buf b;

	buf_init(&b, (Arena *)&c->scratch);
	diag_render(c, &b);
	return b.p;
}

static Span
span(uint32_t lo, uint32_t hi)
{
	return (Span){ lo, hi };
}

/* The span of the first occurrence of word in the source text. */
static Span
at(const Ctx *c, const char *word)
{
	const char *p = strstr(c->src.text, word);

	assert_non_null(p);
	return span((uint32_t)(p - c->src.text),
	    (uint32_t)(p - c->src.text + strlen(word)));
}

static void
assert_ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	assert_true(n >= k);
	assert_string_equal(s + n - k, suffix);
}

static void
check_linecol(const Ctx *c, uint32_t off, uint32_t line, uint32_t col)
{
	uint32_t l, k;

	src_linecol(&c->src, off, &l, &k);
	assert_int_equal(l, line);
	assert_int_equal(k, col);
}

/* ------------------------------------------------------------ line table */

static void
lines_and_columns_count_from_one(void **state)
{
	Ctx *c = ctx_with(state, "t.fa", "ab\ncd\n\nef");

	assert_int_equal(c->src.nlines, 4);
	check_linecol(c, 0, 1, 1);
	check_linecol(c, 1, 1, 2);
	check_linecol(c, 2, 1, 3);
	check_linecol(c, 3, 2, 1);
	check_linecol(c, 6, 3, 1);
	check_linecol(c, 8, 4, 2);
	check_linecol(c, 9, 4, 3);
}

static void
empty_text_has_one_line(void **state)
{
	Ctx *c = ctx_with(state, "t.fa", "");

	assert_int_equal(c->src.nlines, 1);
	check_linecol(c, 0, 1, 1);
	check_linecol(c, 5, 1, 1);
}

static void
final_newline_starts_no_line(void **state)
{
	Ctx *c = ctx_with(state, "t.fa", "ab\ncd\n");

	assert_int_equal(c->src.nlines, 2);
	/* End of file shows at the end of the last line. */
	check_linecol(c, 6, 2, 3);
}

static void
columns_count_code_points(void **state)
{
	/* "é" is 2 bytes, "→" 3, "😀" 4: each one column. */
	Ctx *c = ctx_with(state, "t.fa",
	    "\xc3\xa9\xe2\x86\x92\xf0\x9f\x98\x80x");

	check_linecol(c, 2, 1, 2);
	check_linecol(c, 5, 1, 3);
	check_linecol(c, 9, 1, 4);
}

static void
invalid_bytes_count_one_column_each(void **state)
{
	/* A lone continuation byte, a truncated sequence, an overlong '/'. */
	Ctx *c = ctx_with(state, "t.fa", "\x80\xe2\x86x\xc0\xafy");

	check_linecol(c, 3, 1, 4);
	check_linecol(c, 6, 1, 7);
}

static void
nul_bytes_do_not_end_the_text(void **state)
{
	Fix *f = *state;
	static const char text[] = "a\0b\nc\0d";

	src_init(&f->c, "t.fa", text, sizeof text - 1);
	assert_int_equal(f->c.src.nlines, 2);
	check_linecol(&f->c, 6, 2, 3);
	diag_error(&f->c, span(6, 7), "bad");
	assert_string_equal(render(&f->c),
	    "t.fa:2:3: error: bad\n"
	    "    2 | c?d\n"
	    "      |   ^\n"
	    "1 error\n");
}

/* ------------------------------------------------------------ rendering */

static const char attn[] =
    "// attn\n"
    "\n"
    "kernel attn {\n"
    "\n"
    "  // barriers\n"
    "  barrier kv_ready[2];\n"
    "\n"
    "  stage load {\n"
    "  }\n"
    "\n"
    "  stage mma {\n"
    "  }\n"
    "  phase 1 {\n"
    "    wait kv_ready, 1;\n"
    "  }\n"
    "}\n";

static void
error_renders_in_gcc_shape(void **state)
{
	Ctx *c = ctx_with(state, "schedules/attn.fa", attn);
	Span use = at(c, "kv_ready, 1");

	use.hi = use.lo + strlen("kv_ready");
	diag_error(c, use, "'%s' is waited on in phase %d but never armed",
	    "kv_ready", 1);
	diag_note(c, at(c, "barrier kv_ready[2]"), "'kv_ready' declared here");
	assert_string_equal(render(c),
	    "schedules/attn.fa:14:10: error: 'kv_ready' is waited on in "
	    "phase 1 but never armed\n"
	    "   14 |     wait kv_ready, 1;\n"
	    "      |          ^~~~~~~~\n"
	    "schedules/attn.fa:6:3: note: 'kv_ready' declared here\n"
	    "    6 |   barrier kv_ready[2];\n"
	    "      |   ^~~~~~~~~~~~~~~~~~~\n"
	    "1 error\n");
}

static void
caret_underlines_whole_span(void **state)
{
	Ctx *c = ctx_with(state, "t.fa", "let x = foo(bar);\n");

	diag_error(c, at(c, "foo(bar)"), "bad call");
	assert_string_equal(render(c),
	    "t.fa:1:9: error: bad call\n"
	    "    1 | let x = foo(bar);\n"
	    "      |         ^~~~~~~~\n"
	    "1 error\n");
}

static void
zero_width_span_is_single_caret(void **state)
{
	Ctx *c = ctx_with(state, "t.fa", "wait x 1;\n");

	diag_error(c, span(6, 6), "expected ','");
	assert_string_equal(render(c),
	    "t.fa:1:7: error: expected ','\n"
	    "    1 | wait x 1;\n"
	    "      |       ^\n"
	    "1 error\n");
}

static void
span_at_eof_is_single_caret_after_last_line(void **state)
{
	Ctx *c = ctx_with(state, "t.fa", "stage s {\n  x\n");

	diag_error(c, span(14, 14), "expected '}' at end of input");
	assert_string_equal(render(c),
	    "t.fa:2:4: error: expected '}' at end of input\n"
	    "    2 |   x\n"
	    "      |    ^\n"
	    "1 error\n");
}

static void
span_crossing_newline_stops_at_line_end(void **state)
{
	Ctx *c = ctx_with(state, "t.fa", "a = (b +\n  c);\n");

	diag_error(c, span(4, 13), "bad");
	assert_string_equal(render(c),
	    "t.fa:1:5: error: bad\n"
	    "    1 | a = (b +\n"
	    "      |     ^~~~\n"
	    "1 error\n");
}

static void
span_at_newline_shows_caret_after_text(void **state)
{
	Ctx *c = ctx_with(state, "t.fa", "wait x\nnext\n");

	diag_error(c, span(6, 7), "expected ';'");
	assert_string_equal(render(c),
	    "t.fa:1:7: error: expected ';'\n"
	    "    1 | wait x\n"
	    "      |       ^\n"
	    "1 error\n");
}

static void
empty_line_has_no_trailing_blank(void **state)
{
	Ctx *c = ctx_with(state, "t.fa", "a\n\nb\n");

	diag_error(c, span(2, 2), "empty");
	assert_string_equal(render(c),
	    "t.fa:2:1: error: empty\n"
	    "    2 |\n"
	    "      | ^\n"
	    "1 error\n");
}

static void
tabs_align_caret(void **state)
{
	Ctx *c = ctx_with(state, "t.fa", "\tstage\t\tmma {\n");

	diag_error(c, at(c, "mma"), "bad stage");
	assert_string_equal(render(c),
	    "t.fa:1:9: error: bad stage\n"
	    "    1 | \tstage\t\tmma {\n"
	    "      | \t     \t\t^~~\n"
	    "1 error\n");
}

static void
tab_inside_span_stays_a_tab(void **state)
{
	Ctx *c = ctx_with(state, "t.fa", "a\tb;\n");

	diag_error(c, span(0, 3), "bad");
	assert_string_equal(render(c),
	    "t.fa:1:1: error: bad\n"
	    "    1 | a\tb;\n"
	    "      | ^\t~\n"
	    "1 error\n");
}

static void
control_and_invalid_bytes_print_as_question_marks(void **state)
{
	Ctx *c = ctx_with(state, "t.fa", "a\x01\x7f\x80\xc2\x9b\xff b\r\n");

	diag_error(c, at(c, "b"), "bad");
	assert_string_equal(render(c),
	    "t.fa:1:8: error: bad\n"
	    "    1 | a????? b\n"
	    "      |        ^\n"
	    "1 error\n");
}

static void
utf8_is_echoed_and_counts_one_column(void **state)
{
	Ctx *c = ctx_with(state, "t.fa", "x = \"\xc3\xa9t\xc3\xa9\" + y;\n");

	diag_error(c, at(c, "\"\xc3\xa9t\xc3\xa9\""), "not a number");
	diag_error(c, at(c, "y"), "unknown");
	assert_string_equal(render(c),
	    "t.fa:1:5: error: not a number\n"
	    "    1 | x = \"\xc3\xa9t\xc3\xa9\" + y;\n"
	    "      |     ^~~~~\n"
	    "t.fa:1:13: error: unknown\n"
	    "    1 | x = \"\xc3\xa9t\xc3\xa9\" + y;\n"
	    "      |             ^\n"
	    "2 errors\n");
}

static void
crlf_line_is_echoed_without_cr(void **state)
{
	Ctx *c = ctx_with(state, "t.fa", "ab cd\r\nef\r\n");

	diag_error(c, at(c, "cd"), "bad");
	diag_error(c, span(11, 11), "eof");
	assert_string_equal(render(c),
	    "t.fa:1:4: error: bad\n"
	    "    1 | ab cd\n"
	    "      |    ^~\n"
	    "t.fa:2:3: error: eof\n"
	    "    2 | ef\n"
	    "      |   ^\n"
	    "2 errors\n");
}

/* Issue 29: a '\r' alone ends a line as "\r\n" and '\n' do. */
static void
cr_alone_ends_a_line_like_lf(void **state)
{
	Ctx *c = ctx_with(state, "t.fa", "a\rb\r\nc\rd\r");

	assert_int_equal(c->src.nlines, 4);
	check_linecol(c, 2, 2, 1);
	check_linecol(c, 5, 3, 1);
	check_linecol(c, 9, 4, 2);
	diag_error(c, span(7, 8), "bad");
	assert_string_equal(render(c),
	    "t.fa:4:1: error: bad\n    4 | d\n      | ^\n1 error\n");
}

/* Issue 29: line 1 starts after a byte-order mark. */
static void
bom_is_not_part_of_line_one(void **state)
{
	Ctx *c = ctx_with(state, "t.fa", "\xef\xbb\xbf" "ab cd\nef");

	diag_error(c, at(c, "cd"), "bad");
	assert_string_equal(render(c),
	    "t.fa:1:4: error: bad\n    1 | ab cd\n      |    ^~\n1 error\n");
}

/* Issue 29: -W names are checked; a name within 2 edits is offered. */
static void
unknown_warning_offers_a_near_name(void **state)
{
	const char *near;

	(void)state;
	assert_true(diag_warning_known("unused-warps", &near));
	assert_false(diag_warning_known("unsed-warp", &near));
	assert_string_equal(near, "unused-warps");
	assert_false(diag_warning_known("unsd-warp", &near));
	assert_null(near);
	assert_false(diag_warning_known("", &near));
	assert_null(near);
	assert_string_equal(diag_warning_name(0), "register-pressure");
	assert_null(diag_warning_name(4));
}

/* The echo and caret lines of a rendering with one located diagnostic. */
static void
two_lines(const char *out, const char **echo, const char **caret)
{
	*echo = strchr(out, '\n') + 1;
	*caret = strchr(*echo, '\n') + 1;
}

static void
long_line_is_windowed(void **state)
{
	Fix *f = *state;
	size_t n = 1 << 20, off = n / 2;
	const char *out, *echo, *caret, *word, *hat;
	char *text = malloc(n + 1);

	memset(text, 'x', n);
	memcpy(text + off, "needle", 6);
	text[n] = '\0';
	src_init(&f->c, "t.fa", text, n);
	diag_error(&f->c, span((uint32_t)off, (uint32_t)off + 6), "found");
	out = render(&f->c);
	assert_true(strlen(out) < 600);
	two_lines(out, &echo, &caret);
	assert_memory_equal(echo, "    1 | ...", 11);
	assert_memory_equal(caret, "      |    ", 11);
	word = strstr(echo, "needle");
	hat = strchr(caret, '^');
	assert_non_null(word);
	assert_int_equal(word - echo, hat - caret);
	assert_memory_equal(hat, "^~~~~~\n", 7);
	assert_non_null(strstr(echo, "x...\n"));
	free(text);
}

static void
long_line_window_starts_at_line_start_when_span_is_near(void **state)
{
	Fix *f = *state;
	const char *out, *echo, *caret;
	char text[1001];

	memset(text, 'y', 1000);
	memcpy(text + 10, "here", 4);
	text[1000] = '\0';
	src_init(&f->c, "t.fa", text, 1000);
	diag_error(&f->c, span(10, 14), "found");
	out = render(&f->c);
	two_lines(out, &echo, &caret);
	assert_memory_equal(echo, "    1 | yyyyyyyyyyhere", 22);
	assert_memory_equal(caret, "      |           ^~~~\n", 23);
	/* 200 columns of text, then the ellipsis. */
	assert_memory_equal(echo + 8 + 200, "...\n", 4);
}

static void
long_line_window_ends_at_line_end_when_span_is_near(void **state)
{
	Fix *f = *state;
	const char *out, *echo, *caret;
	char text[1001];

	memset(text, 'z', 1000);
	text[1000] = '\0';
	src_init(&f->c, "t.fa", text, 1000);
	diag_error(&f->c, span(1000, 1000), "end");
	out = render(&f->c);
	two_lines(out, &echo, &caret);
	assert_memory_equal(echo, "    1 | ...zzz", 14);
	assert_int_equal(strchr(echo, '\n') - echo, 8 + 3 + 200);
	assert_int_equal(strchr(caret, '^') - caret, 8 + 3 + 200);
}

static void
message_without_span_names_the_file(void **state)
{
	Ctx *c = ctx_with(state, "t.fa", "x\n");

	diag_plain(c, D_ERROR, "cannot write '%s'", "out.ptx");
	assert_string_equal(render(c),
	    "t.fa: error: cannot write 'out.ptx'\n"
	    "1 error\n");
}

static void
message_without_source_names_fagen(void **state)
{
	Fix *f = *state;

	diag_plain(&f->c, D_ERROR, "no input file");
	diag_plain(&f->c, D_NOTE, "run 'fagen --help'");
	diag_error(&f->c, span(0, 1), "located, but no text");
	assert_string_equal(render(&f->c),
	    "fagen: error: no input file\n"
	    "fagen: note: run 'fagen --help'\n"
	    "fagen: error: located, but no text\n"
	    "2 errors\n");
}

static void
no_diagnostics_render_nothing(void **state)
{
	Ctx *c = ctx_with(state, "t.fa", "x\n");

	assert_string_equal(render(c), "");
}

static void
summary_counts_errors_and_warnings(void **state)
{
	Ctx *c = ctx_with(state, "t.fa", "x\n");
	const char *out;

	diag_plain(c, D_ERROR, "one");
	diag_plain(c, D_WARNING, "two");
	diag_plain(c, D_ERROR, "three");
	out = render(c);
	assert_ends_with(out, "\n2 errors, 1 warning\n");
	assert_int_equal(c->nerr, 2);
	assert_int_equal(c->nwarn, 1);
}

static void
single_warning_summary_is_singular(void **state)
{
	Ctx *c = ctx_with(state, "t.fa", "unused\n");

	diag_warn(c, "unused-stage", at(c, "unused"), "stage '%s' is never "
	    "used", "s");
	assert_string_equal(render(c),
	    "t.fa:1:1: warning: stage 's' is never used [-Wunused-stage]\n"
	    "    1 | unused\n"
	    "      | ^~~~~~\n"
	    "1 warning\n");
}

/* ------------------------------------------------------------ rules */

static void
errors_after_the_limit_are_dropped(void **state)
{
	Ctx *c = ctx_with(state, "t.fa", "x\n");
	const char *out;
	int i;

	for (i = 0; i < MAXERRORS + 5; i++)
		diag_plain(c, D_ERROR, "error %d", i);
	diag_plain(c, D_WARNING, "late warning");
	assert_int_equal(c->nerr, MAXERRORS);
	assert_true(c->too_many);
	out = render(c);
	assert_non_null(strstr(out, "error: error 19\n"));
	assert_null(strstr(out, "error 20"));
	assert_null(strstr(out, "late warning"));
	assert_ends_with(out, "\ntoo many errors; stopping after 20\n"
	    "20 errors\n");
}

static void
limit_is_not_reported_when_reached_exactly(void **state)
{
	Ctx *c = ctx_with(state, "t.fa", "x\n");
	int i;

	for (i = 0; i < MAXERRORS; i++)
		diag_plain(c, D_ERROR, "error %d", i);
	assert_false(c->too_many);
	assert_null(strstr(render(c), "too many"));
}

static void
notes_of_dropped_error_are_dropped(void **state)
{
	Ctx *c = ctx_with(state, "t.fa", "x\n");
	const char *out;
	int i;

	for (i = 0; i < MAXERRORS; i++) {
		diag_error(c, span(0, 1), "error %d", i);
		diag_note(c, span(0, 1), "note %d", i);
	}
	diag_error(c, span(0, 1), "dropped");
	diag_note(c, span(0, 1), "note of dropped");
	diag_plain(c, D_NOTE, "plain note of dropped");
	out = render(c);
	assert_non_null(strstr(out, "note: note 19\n"));
	assert_null(strstr(out, "dropped"));
}

static void
notes_of_disabled_warning_are_dropped(void **state)
{
	Ctx *c = ctx_with(state, "t.fa", "x\n");

	diag_set_warning(c, "unused-stage", 0);
	diag_error(c, span(0, 1), "kept");
	diag_note(c, span(0, 1), "note of kept");
	diag_warn(c, "unused-stage", span(0, 1), "disabled");
	diag_note(c, span(0, 1), "note of disabled");
	diag_warn(c, "other", span(0, 1), "enabled");
	diag_note(c, span(0, 1), "note of enabled");
	assert_string_equal(render(c),
	    "t.fa:1:1: error: kept\n"
	    "    1 | x\n"
	    "      | ^\n"
	    "t.fa:1:1: note: note of kept\n"
	    "    1 | x\n"
	    "      | ^\n"
	    "t.fa:1:1: warning: enabled [-Wother]\n"
	    "    1 | x\n"
	    "      | ^\n"
	    "t.fa:1:1: note: note of enabled\n"
	    "    1 | x\n"
	    "      | ^\n"
	    "1 error, 1 warning\n");
}

static void
werror_makes_every_warning_an_error(void **state)
{
	Ctx *c = ctx_with(state, "t.fa", "x\n");

	c->werror = true;
	diag_warn(c, "unused-stage", span(0, 1), "stage 's' is never used");
	diag_plain(c, D_WARNING, "nameless");
	assert_int_equal(c->nerr, 2);
	assert_int_equal(c->nwarn, 0);
	assert_string_equal(render(c),
	    "t.fa:1:1: error: stage 's' is never used [-Werror=unused-stage]\n"
	    "    1 | x\n"
	    "      | ^\n"
	    "t.fa: error: nameless [-Werror]\n"
	    "2 errors\n");
}

static void
werror_name_upgrades_only_that_warning(void **state)
{
	Ctx *c = ctx_with(state, "t.fa", "x\n");
	const char *out;

	diag_set_warning(c, "unused-stage", 2);
	diag_plain(c, D_WARNING, "plain");
	diag_warn(c, "unused-stage", span(0, 1), "upgraded");
	diag_warn(c, "other", span(0, 1), "normal");
	assert_int_equal(c->nerr, 1);
	assert_int_equal(c->nwarn, 2);
	out = render(c);
	assert_non_null(strstr(out, "t.fa: warning: plain\n"));
	assert_non_null(strstr(out,
	    "error: upgraded [-Werror=unused-stage]\n"));
	assert_non_null(strstr(out, "warning: normal [-Wother]\n"));
	assert_non_null(strstr(out, "\n1 error, 2 warnings\n"));
}

static void
disabled_warning_stays_off_under_werror(void **state)
{
	Ctx *c = ctx_with(state, "t.fa", "x\n");

	c->werror = true;
	diag_set_warning(c, "unused-stage", 0);
	diag_warn(c, "unused-stage", span(0, 1), "off");
	assert_int_equal(c->nerr + c->nwarn, 0);
	assert_string_equal(render(c), "");
}

static void
last_warning_option_wins(void **state)
{
	Ctx *c = ctx_with(state, "t.fa", "x\n");

	diag_set_warning(c, "unused-stage", 0);
	diag_set_warning(c, "unused-stage", 1);
	diag_warn(c, "unused-stage", span(0, 1), "on again");
	assert_int_equal(c->nwarn, 1);
}

static void
upgraded_warnings_count_toward_the_limit(void **state)
{
	Ctx *c = ctx_with(state, "t.fa", "x\n");
	int i;

	c->werror = true;
	for (i = 0; i < MAXERRORS + 1; i++)
		diag_warn(c, "w", span(0, 1), "w%d", i);
	assert_int_equal(c->nerr, MAXERRORS);
	assert_true(c->too_many);
}

static void
diagnostics_are_kept_in_order(void **state)
{
	Ctx *c = ctx_with(state, "t.fa", "x\n");
	const Diag *d;

	diag_note(c, span(0, 0), "n");
	diag_error(c, span(0, 0), "e");
	diag_warn(c, "w", span(0, 0), "w");
	d = c->diags;
	assert_int_equal(d->kind, D_NOTE);
	assert_int_equal(d->next->kind, D_ERROR);
	assert_int_equal(d->next->next->kind, D_WARNING);
	assert_string_equal(d->next->next->wname, "w");
	assert_ptr_equal(d->next->next, c->dlast);
	assert_null(c->dlast->next);
}

/* ------------------------------------------------------------ sources */

/* A source added after the schedule (a --mod file) has its own offsets
 * past the schedule's: its diagnostics name it and count its lines. */
static void
added_source_names_its_own_file_and_lines(void **state)
{
	Ctx *c = ctx_with(state, "k.fa", "kernel k;\n");
	Src *m = src_add(c, "m.fa", "// x\nmod f() = y;\n", 18);

	assert_non_null(m);
	assert_int_equal(m->base, 11);  /* one past the schedule's end */
	assert_ptr_equal(ctx_src(c, 0), &c->src);
	assert_ptr_equal(ctx_src(c, 10), &c->src);
	assert_ptr_equal(ctx_src(c, 11), m);
	diag_error(c, span(m->base + 15, m->base + 16), "'y' is not declared");
	diag_note(c, span(7, 8), "in the schedule");
	assert_string_equal(render(c),
	    "m.fa:2:11: error: 'y' is not declared\n"
	    "    2 | mod f() = y;\n"
	    "      |           ^\n"
	    "k.fa:1:8: note: in the schedule\n"
	    "    1 | kernel k;\n"
	    "      |        ^\n"
	    "1 error\n");
}

static void
second_added_source_follows_the_first(void **state)
{
	Ctx *c = ctx_with(state, "k.fa", "abc");
	Src *a = src_add(c, "a.fa", "", 0), *b = src_add(c, "b.fa", "z", 1);
	uint32_t l, k;

	assert_int_equal(a->base, 4);
	assert_int_equal(b->base, 5);
	assert_ptr_equal(c->more, a);
	assert_ptr_equal(a->next, b);
	assert_ptr_equal(ctx_src(c, 4), a);
	assert_ptr_equal(ctx_src(c, 5), b);
	src_linecol(b, 5, &l, &k);
	assert_int_equal(l, 1);
	assert_int_equal(k, 1);
}

/* Inlined code: every error found in it gets the note, after its own
 * notes; those reported before the mark do not. */
static void
note_since_follows_each_later_error_and_its_notes(void **state)
{
	Ctx *c = ctx_with(state, "t.fa", "abc\n");
	const Diag *mark;
	const Diag *d;

	diag_error(c, span(0, 1), "before");
	mark = c->dlast;
	diag_error(c, span(1, 2), "one");
	diag_note(c, span(1, 2), "its note");
	diag_warn(c, "w", span(2, 3), "two");
	diag_note_since(c, mark, span(0, 3), "in %s", "here");
	d = c->diags;
	assert_string_equal(d->msg, "before");
	assert_string_equal(d->next->msg, "one");
	assert_string_equal(d->next->next->msg, "its note");
	assert_string_equal(d->next->next->next->msg, "in here");
	assert_string_equal(d->next->next->next->next->msg, "two");
	assert_string_equal(c->dlast->msg, "in here");
	assert_int_equal(c->dlast->kind, D_NOTE);
	assert_null(c->dlast->next);
	diag_note_since(c, c->dlast, span(0, 1), "nothing new");
	assert_string_equal(c->dlast->msg, "in here");
}

static void
bug_prints_internal_error_and_aborts(void **state)
{
	char msg[256] = "";
	int fds[2], st;
	size_t len;
	ssize_t n;
	pid_t pid;

	(void)state;
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		signal(SIGABRT, SIG_DFL); /* not CMocka's handler */
		dup2(fds[1], 2);
		fg_bug_at("../compiler/verify.c", 212, "%s is %d", "x", 3);
	}
	close(fds[1]);
	for (len = 0; len < sizeof msg - 1; len += (size_t)n)
		if ((n = read(fds[0], msg + len, sizeof msg - 1 - len)) <= 0)
			break;
	close(fds[0]);
	assert_true(len > 0);
	waitpid(pid, &st, 0);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	assert_string_equal(msg,
	    "fagen: internal error at verify.c:212: x is 3\n");
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(lines_and_columns_count_from_one),
		T(empty_text_has_one_line),
		T(final_newline_starts_no_line),
		T(columns_count_code_points),
		T(invalid_bytes_count_one_column_each),
		T(nul_bytes_do_not_end_the_text),
		T(error_renders_in_gcc_shape),
		T(caret_underlines_whole_span),
		T(zero_width_span_is_single_caret),
		T(span_at_eof_is_single_caret_after_last_line),
		T(span_crossing_newline_stops_at_line_end),
		T(span_at_newline_shows_caret_after_text),
		T(empty_line_has_no_trailing_blank),
		T(tabs_align_caret),
		T(tab_inside_span_stays_a_tab),
		T(control_and_invalid_bytes_print_as_question_marks),
		T(utf8_is_echoed_and_counts_one_column),
		T(crlf_line_is_echoed_without_cr),
		T(cr_alone_ends_a_line_like_lf),
		T(bom_is_not_part_of_line_one),
		T(unknown_warning_offers_a_near_name),
		T(long_line_is_windowed),
		T(long_line_window_starts_at_line_start_when_span_is_near),
		T(long_line_window_ends_at_line_end_when_span_is_near),
		T(message_without_span_names_the_file),
		T(message_without_source_names_fagen),
		T(no_diagnostics_render_nothing),
		T(summary_counts_errors_and_warnings),
		T(single_warning_summary_is_singular),
		T(errors_after_the_limit_are_dropped),
		T(limit_is_not_reported_when_reached_exactly),
		T(notes_of_dropped_error_are_dropped),
		T(notes_of_disabled_warning_are_dropped),
		T(werror_makes_every_warning_an_error),
		T(werror_name_upgrades_only_that_warning),
		T(disabled_warning_stays_off_under_werror),
		T(last_warning_option_wins),
		T(upgraded_warnings_count_toward_the_limit),
		T(diagnostics_are_kept_in_order),
		T(added_source_names_its_own_file_and_lines),
		T(second_added_source_follows_the_first),
		T(note_since_follows_each_later_error_and_its_notes),
		cmocka_unit_test(bug_prints_internal_error_and_aborts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
