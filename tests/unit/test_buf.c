/* test_buf.c: growable strings in an arena. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "fgc.h"
#include "testalloc.h"

typedef struct Fix {
	TestAlloc ta;
	jmp_buf jb;
	Arena a;
	Buf b;
} Fix;

static int
setup(void **state)
{
	Fix *f = calloc(1, sizeof *f);

	arena_init(&f->a, test_alloc, &f->ta, &f->jb);
	buf_init(&f->b, &f->a);
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
new_buf_is_empty_string(void **state)
{
	Fix *f = *state;

	assert_int_equal(f->b.len, 0);
	assert_non_null(f->b.p);
	assert_string_equal(f->b.p, "");
}

static void
put_functions_append(void **state)
{
	Fix *f = *state;

	buf_putc(&f->b, 'a');
	buf_puts(&f->b, "bcd");
	buf_putn(&f->b, "efgh", 2);
	buf_puts(&f->b, "");
	buf_putn(&f->b, NULL, 0);
	assert_string_equal(f->b.p, "abcdef");
	assert_int_equal(f->b.len, 6);
}

static void
putn_keeps_embedded_nul(void **state)
{
	Fix *f = *state;

	buf_putn(&f->b, "a\0b", 3);
	assert_int_equal(f->b.len, 3);
	assert_memory_equal(f->b.p, "a\0b", 4);
}

static void
printf_formats(void **state)
{
	Fix *f = *state;

	buf_printf(&f->b, "%s:%d:%u: %5d|", "x.fa", 14, 10u, 7);
	assert_string_equal(f->b.p, "x.fa:14:10:     7|");
	assert_int_equal(f->b.len, strlen(f->b.p));
}

static void
printf_longer_than_capacity_grows(void **state)
{
	Fix *f = *state;
	char big[10001];

	memset(big, 'x', 10000);
	big[10000] = '\0';
	buf_puts(&f->b, "<");
	buf_printf(&f->b, "%s>%d", big, 42);
	assert_int_equal(f->b.len, 10004);
	assert_int_equal(f->b.p[0], '<');
	assert_string_equal(f->b.p + 10001, ">42");
	assert_true(f->b.cap > f->b.len);
}

static void
text_stays_terminated_while_growing(void **state)
{
	Fix *f = *state;
	size_t i;

	for (i = 0; i < 100000; i++) {
		buf_putc(&f->b, 'a' + (int)(i % 26));
		assert_int_equal(f->b.p[f->b.len], '\0');
	}
	assert_int_equal(f->b.len, 100000);
	for (i = 0; i < 100000; i++)
		assert_int_equal(f->b.p[i], 'a' + (int)(i % 26));
}

static void
growth_after_other_allocations_keeps_text(void **state)
{
	Fix *f = *state;
	char *other;
	int i;

	buf_puts(&f->b, "hello");
	other = arena_alloc(&f->a, 32);
	memset(other, 'z', 31);
	for (i = 0; i < 100; i++)
		buf_puts(&f->b, " world");
	assert_memory_equal(f->b.p, "hello world world", 17);
	assert_int_equal(f->b.len, 5 + 600);
	assert_int_equal(other[0], 'z');
	assert_int_equal(other[31], '\0');
}

static void
growth_failure_longjmps(void **state)
{
	Fix *f = *state;
	volatile int jumped = 0;
	char big[100000];

	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	buf_puts(&f->b, "keep");
	f->ta.failat = f->ta.calls + 1;
	if (setjmp(f->jb) == 0)
		buf_printf(&f->b, "%s", big);
	else
		jumped = 1;
	assert_true(jumped);
	assert_string_equal(f->b.p, "keep");
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(new_buf_is_empty_string),
		T(put_functions_append),
		T(putn_keeps_embedded_nul),
		T(printf_formats),
		T(printf_longer_than_capacity_grows),
		T(text_stays_terminated_while_growing),
		T(growth_after_other_allocations_keeps_text),
		T(growth_failure_longjmps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
