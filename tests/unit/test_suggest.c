/* test_suggest.c: "did you mean" picks the closest name, only when it is
 * close for the name's length (issue #25). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fgc.h"
#include "testalloc.h"

static const char *
best(const char *name, const char *const *cands)
{
	Suggest s;

	diag_suggest_init(&s, name);
	for (; *cands; cands++)
		diag_suggest_add(&s, *cands);
	return s.best;
}

static void
one_extra_letter_is_suggested(void **state)
{
	const char *c[] = {"empty", "full", "done", NULL};

	(void)state;
	assert_string_equal(best("fulll", c), "full");
}

static void
the_closest_candidate_wins(void **state)
{
	const char *c[] = {"kv_full", "kv_fall", "q_full", NULL};

	(void)state;
	assert_string_equal(best("kv_fulx", c), "kv_full");
	assert_string_equal(best("q_fulll", c), "q_full");
}

static void
ties_go_to_the_first_offered(void **state)
{
	const char *c[] = {"abcd", "abce", NULL};

	(void)state;
	assert_string_equal(best("abcx", c), "abcd");
}

static void
short_names_get_no_guess(void **state)
{
	const char *c[] = {"a", "b", "s", "t", NULL};

	(void)state;
	assert_null(best("x", c));
	assert_null(best("tt", c));
}

static void
far_names_get_no_guess(void **state)
{
	const char *c[] = {"kv_empty", "scale", NULL};

	(void)state;
	assert_null(best("qfull", c));
	assert_null(best("scale_log2e", c));  /* distance 6 */
}

static void
the_name_itself_is_no_suggestion(void **state)
{
	const char *c[] = {"full", NULL};

	(void)state;
	assert_null(best("full", c));
}

static void
the_message_names_the_guess(void **state)
{
	TestAlloc ta = {0};
	jmp_buf jb;
	Ctx c;
	Suggest s;

	(void)state;
	ctx_init(&c, test_alloc, &ta, &jb);
	src_init(&c, "t.fa", "wait fulll, 0;", 14);
	diag_suggest_init(&s, "fulll");
	diag_suggest_add(&s, "full");
	diag_undeclared(&c, (Span){5, 10}, &s);
	diag_suggest_init(&s, "zzz");
	diag_suggest_add(&s, "full");
	diag_undeclared(&c, (Span){5, 10}, &s);
	assert_string_equal(c.diags->msg,
		"'fulll' is not declared; did you mean 'full'?");
	assert_string_equal(c.diags->next->msg, "'zzz' is not declared");
	ctx_free(&c);
	assert_int_equal(ta.live, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(one_extra_letter_is_suggested),
		cmocka_unit_test(the_closest_candidate_wins),
		cmocka_unit_test(ties_go_to_the_first_offered),
		cmocka_unit_test(short_names_get_no_guess),
		cmocka_unit_test(far_names_get_no_guess),
		cmocka_unit_test(the_name_itself_is_no_suggestion),
		cmocka_unit_test(the_message_names_the_guess),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
