/* simbuf.h: host buffers for the runtime-on-the-simulator tests
 * (test_simdrv.c, test_simrand.c): 16-bit inputs drawn from gpu_ref.h's
 * generator, and outputs poisoned with NaN bytes so that an element
 * nothing writes fails.  Include cmocka.h and gpu_ref.h first. */
#ifndef SIMBUF_H
#define SIMBUF_H

/* n values uniform in [-1, 1), rounded to bf16 (or f16) */
__attribute__((unused)) static uint16_t *
random16_of(size_t n, bool f16)
{
	uint16_t *p = malloc(n * 2);

	assert_non_null(p);
	for (size_t i = 0; i < n; i++)
		p[i] = to16(urand(), f16);
	return p;
}

/* bytes of 0xff: NaN in every float type */
__attribute__((unused)) static void *
poisoned(size_t bytes)
{
	void *p = malloc(bytes);

	assert_non_null(p);
	memset(p, 0xff, bytes);
	return p;
}

#endif
