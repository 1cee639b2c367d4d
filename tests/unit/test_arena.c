/* test_arena.c: arena allocation, growth, OOM recovery and chunk
 * accounting. */
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
	Arena a;
} Fix;

static int
setup(void **state)
{
	Fix *f = calloc(1, sizeof *f);

	arena_init(&f->a, test_alloc, &f->ta, &f->jb);
	*state = f;
	return 0;
}

/* Every test ends with all chunks given back. */
static int
teardown(void **state)
{
	Fix *f = *state;

	arena_free(&f->a);
	assert_int_equal(f->ta.live, 0);
	assert_int_equal(f->ta.bytes, 0);
	assert_int_equal(f->a.total, 0);
	free(f);
	return 0;
}

static bool
all_zero(const void *p, size_t n)
{
	const unsigned char *s = p;

	while (n--)
		if (*s++)
			return false;
	return true;
}

static void
alloc_is_zeroed(void **state)
{
	Fix *f = *state;
	char *p;
	int i;

	for (i = 1; i < 5000; i += 37) {
		p = arena_alloc(&f->a, (size_t)i);
		assert_true(all_zero(p, (size_t)i));
		memset(p, 0xa5, (size_t)i);
	}
	arena_reset(&f->a);
	for (i = 1; i < 5000; i += 37)
		assert_true(all_zero(arena_alloc(&f->a, (size_t)i), (size_t)i));
}

static void
alloc_is_max_aligned(void **state)
{
	Fix *f = *state;
	size_t n;

	for (n = 0; n < 200; n++) {
		uintptr_t p = (uintptr_t)arena_alloc(&f->a, n);

		assert_int_equal(p % _Alignof(max_align_t), 0);
	}
	assert_int_equal((uintptr_t)arena_alloc(&f->a, 100000) %
	    _Alignof(max_align_t), 0);
}

static void
zero_size_alloc_is_distinct_and_not_null(void **state)
{
	Fix *f = *state;
	void *p = arena_alloc(&f->a, 0), *q = arena_alloc(&f->a, 0);

	assert_non_null(p);
	assert_non_null(q);
	assert_ptr_not_equal(p, q);
}

static void
allocations_do_not_overlap(void **state)
{
	Fix *f = *state;
	unsigned char *p[300];
	size_t n[300];
	int i;

	for (i = 0; i < 300; i++) {
		n[i] = (size_t)(i * 97 % 7000) + 1;
		p[i] = arena_alloc(&f->a, n[i]);
		memset(p[i], i & 0xff, n[i]);
	}
	for (i = 0; i < 300; i++)
		for (size_t j = 0; j < n[i]; j++)
			assert_int_equal(p[i][j], i & 0xff);
}

static void
new_macros_allocate_typed_memory(void **state)
{
	Fix *f = *state;
	Span *s = NEW(&f->a, Span);
	uint64_t *v = NEWARR(&f->a, uint64_t, 1000);

	assert_int_equal(s->lo + s->hi, 0);
	assert_true(all_zero(v, 1000 * sizeof *v));
	v[999] = 1;
}

static void
large_request_gets_own_chunk(void **state)
{
	Fix *f = *state;
	char *a, *b;
	size_t before;

	a = arena_alloc(&f->a, 16);
	before = f->a.total;
	arena_alloc(&f->a, 1 << 20);
	assert_int_equal(f->ta.live, 2);
	assert_true(f->a.total - before >= 1 << 20);
	assert_true(f->a.total - before < (1 << 20) + 256);
	/* The head chunk still serves small requests. */
	b = arena_alloc(&f->a, 16);
	assert_ptr_equal(b, a + 16);
}

static void
failing_allocator_longjmps(void **state)
{
	Fix *f = *state;
	volatile int jumped = 0;

	f->ta.failat = 1;
	if (setjmp(f->jb) == 0)
		arena_alloc(&f->a, 8);
	else
		jumped = 1;
	assert_true(jumped);
	assert_int_equal(f->ta.live, 0);
}

static void
failure_on_nth_chunk_leaves_arena_freeable(void **state)
{
	Fix *f = *state;
	volatile int n = 0;

	f->ta.failat = 4;
	if (setjmp(f->jb) == 0) {
		for (;;) {
			arena_alloc(&f->a, 1000);
			n++;
		}
	}
	assert_true(n > 3);
	assert_int_equal(f->ta.live, 3);
	/* teardown checks that arena_free returns all three */
}

static void
array_size_overflow_longjmps(void **state)
{
	Fix *f = *state;
	volatile int jumped = 0;

	if (setjmp(f->jb) == 0)
		arena_alloc_array(&f->a, SIZE_MAX / 4 + 2, 8);
	else
		jumped = 1;
	assert_true(jumped);
	assert_int_equal(f->ta.calls, 0);
}

static void
huge_request_longjmps(void **state)
{
	Fix *f = *state;
	volatile int jumped = 0;

	if (setjmp(f->jb) == 0)
		arena_alloc(&f->a, SIZE_MAX - 8);
	else
		jumped = 1;
	assert_true(jumped);
}

static void
realloc_extends_newest_allocation_in_place(void **state)
{
	Fix *f = *state;
	char *p, *q;

	p = arena_alloc(&f->a, 16);
	memcpy(p, "0123456789abcde", 16);
	q = arena_realloc(&f->a, p, 16, 200);
	assert_ptr_equal(p, q);
	assert_string_equal(q, "0123456789abcde");
	assert_true(all_zero(q + 16, 184));
}

static void
realloc_copies_when_not_newest(void **state)
{
	Fix *f = *state;
	char *p, *q;

	p = arena_alloc(&f->a, 16);
	memcpy(p, "0123456789abcde", 16);
	arena_alloc(&f->a, 16);
	q = arena_realloc(&f->a, p, 16, 64);
	assert_ptr_not_equal(p, q);
	assert_string_equal(q, "0123456789abcde");
	assert_true(all_zero(q + 16, 48));
}

static void
realloc_regrowth_after_shrink_is_zeroed(void **state)
{
	Fix *f = *state;
	char *p;

	p = arena_alloc(&f->a, 64);
	memset(p, 0xff, 64);
	p = arena_realloc(&f->a, p, 64, 16);
	p = arena_realloc(&f->a, p, 16, 64);
	assert_true(all_zero(p + 16, 48));
	assert_int_equal((unsigned char)p[15], 0xff);
}

static void
realloc_of_large_request_resizes_its_chunk(void **state)
{
	Fix *f = *state;
	unsigned char *p;
	size_t n = 10000, i;

	arena_alloc(&f->a, 8);
	p = arena_alloc(&f->a, n);
	for (i = 0; i < n; i++)
		p[i] = (unsigned char)i;
	while (n < (1u << 22)) {
		p = arena_realloc(&f->a, p, n, n * 2);
		assert_true(all_zero(p + n, n));
		n *= 2;
	}
	for (i = 0; i < 10000; i++)
		assert_int_equal(p[i], (unsigned char)i);
	assert_int_equal(f->ta.live, 2);
}

static void
realloc_null_allocates(void **state)
{
	Fix *f = *state;
	char *p = arena_realloc(&f->a, NULL, 0, 32);

	assert_non_null(p);
	assert_true(all_zero(p, 32));
}

static void
strndup_copies_and_terminates(void **state)
{
	Fix *f = *state;
	char *s = arena_strndup(&f->a, "ab\0cdef", 5);

	assert_memory_equal(s, "ab\0cd", 5);
	assert_int_equal(s[5], '\0');
	assert_string_equal(arena_strndup(&f->a, "", 0), "");
}

static void
reset_keeps_one_chunk(void **state)
{
	Fix *f = *state;
	int i;

	for (i = 0; i < 100; i++)
		arena_alloc(&f->a, 1000);
	arena_alloc(&f->a, 1 << 20);
	assert_true(f->ta.live > 5);
	arena_reset(&f->a);
	assert_int_equal(f->ta.live, 1);
	assert_int_equal(f->a.total, (size_t)f->ta.bytes);
	/* The kept chunk serves new requests without asking for more. */
	i = (int)f->ta.calls;
	arena_alloc(&f->a, 1000);
	assert_int_equal(f->ta.calls, i);
}

static void
free_returns_every_chunk(void **state)
{
	Fix *f = *state;
	int i;

	for (i = 0; i < 50; i++)
		arena_alloc(&f->a, (size_t)(i * 1000));
	assert_int_equal(f->a.total, (size_t)f->ta.bytes);
	arena_free(&f->a);
	assert_int_equal(f->ta.live, 0);
	assert_int_equal(f->a.total, 0);
	/* A freed arena can be used again. */
	arena_alloc(&f->a, 10);
	assert_int_equal(f->ta.live, 1);
}

static void
default_allocator_is_used_when_none_given(void **state)
{
	Arena a;
	char *p;

	(void)state;
	arena_init(&a, NULL, NULL, NULL);
	p = arena_alloc(&a, 100);
	memset(p, 1, 100);
	assert_true(a.total >= 100);
	arena_free(&a);
	assert_null(arena_default_alloc(NULL, NULL, 0, 0));
}

static void
oom_without_recovery_point_is_internal_error(void **state)
{
	TestAlloc ta = { .failat = 1 };
	char msg[256] = "";
	int fds[2], st;
	size_t len;
	ssize_t n;
	pid_t pid;
	Arena a;

	(void)state;
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		signal(SIGABRT, SIG_DFL); /* not CMocka's handler */
		dup2(fds[1], 2);
		arena_init(&a, test_alloc, &ta, NULL);
		arena_alloc(&a, 1);
		_exit(0);
	}
	close(fds[1]);
	for (len = 0; len < sizeof msg - 1; len += (size_t)n)
		if ((n = read(fds[0], msg + len, sizeof msg - 1 - len)) <= 0)
			break;
	close(fds[0]);
	assert_true(len > 0);
	waitpid(pid, &st, 0);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	assert_non_null(strstr(msg, "fagen: internal error at arena.c:"));
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(alloc_is_zeroed),
		T(alloc_is_max_aligned),
		T(zero_size_alloc_is_distinct_and_not_null),
		T(allocations_do_not_overlap),
		T(new_macros_allocate_typed_memory),
		T(large_request_gets_own_chunk),
		T(failing_allocator_longjmps),
		T(failure_on_nth_chunk_leaves_arena_freeable),
		T(array_size_overflow_longjmps),
		T(huge_request_longjmps),
		T(realloc_extends_newest_allocation_in_place),
		T(realloc_copies_when_not_newest),
		T(realloc_regrowth_after_shrink_is_zeroed),
		T(realloc_of_large_request_resizes_its_chunk),
		T(realloc_null_allocates),
		T(strndup_copies_and_terminates),
		T(reset_keeps_one_chunk),
		T(free_returns_every_chunk),
		cmocka_unit_test(default_allocator_is_used_when_none_given),
		cmocka_unit_test(oom_without_recovery_point_is_internal_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
