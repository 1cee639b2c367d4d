/* test_intern.c: interned strings are equal exactly when their bytes are. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "fgc.h"
#include "testalloc.h"

typedef struct Fix {
	TestAlloc ta;
	jmp_buf jb;
	Arena a;
	Intern *t;
} Fix;

static int
setup(void **state)
{
	Fix *f = calloc(1, sizeof *f);

	arena_init(&f->a, test_alloc, &f->ta, &f->jb);
	f->t = intern_new(&f->a);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	Fix *f = *state;

	arena_free(&f->a);
	assert_int_equal(f->ta.live, 0);
	free(f);
	return 0;
}

static void
same_bytes_give_same_pointer(void **state)
{
	Fix *f = *state;
	char a[] = "kv_ready", b[] = "kv_ready";

	assert_ptr_equal(intern_cstr(f->t, a), intern_cstr(f->t, b));
	assert_ptr_equal(intern(f->t, "kv_ready_x", 8), intern_cstr(f->t, a));
}

static void
different_bytes_give_different_pointers(void **state)
{
	Fix *f = *state;

	assert_ptr_not_equal(intern_cstr(f->t, "a"), intern_cstr(f->t, "b"));
	assert_ptr_not_equal(intern_cstr(f->t, "ab"), intern_cstr(f->t, "a"));
}

static void
embedded_nul_is_part_of_the_string(void **state)
{
	Fix *f = *state;
	const char *x = intern(f->t, "a\0b", 3);

	assert_ptr_not_equal(x, intern(f->t, "a", 1));
	assert_ptr_not_equal(x, intern(f->t, "a\0c", 3));
	assert_ptr_equal(x, intern(f->t, "a\0b", 3));
	assert_memory_equal(x, "a\0b", 4);
}

static void
result_is_a_terminated_copy(void **state)
{
	Fix *f = *state;
	char name[] = "stage_x";
	const char *s = intern(f->t, name, 5);

	assert_ptr_not_equal(s, name);
	name[0] = 'X';
	assert_string_equal(s, "stage");
}

static void
empty_string_interns(void **state)
{
	Fix *f = *state;
	const char *e = intern(f->t, NULL, 0);

	assert_string_equal(e, "");
	assert_ptr_equal(e, intern_cstr(f->t, ""));
	assert_ptr_equal(e, intern(f->t, "xyz", 0));
}

static void
table_grows_and_keeps_identity(void **state)
{
	Fix *f = *state;
	static const char *first[20000];
	char s[32];
	int i;

	for (i = 0; i < 20000; i++) {
		snprintf(s, sizeof s, "name%d", i);
		first[i] = intern_cstr(f->t, s);
	}
	for (i = 0; i < 20000; i++) {
		snprintf(s, sizeof s, "name%d", i);
		assert_ptr_equal(first[i], intern_cstr(f->t, s));
		assert_string_equal(first[i], s);
	}
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(same_bytes_give_same_pointer),
		T(different_bytes_give_different_pointers),
		T(embedded_nul_is_part_of_the_string),
		T(result_is_a_terminated_copy),
		T(empty_string_interns),
		T(table_grows_and_keeps_identity),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
