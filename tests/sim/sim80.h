/* sim80.h: the harness of unit.sim80, the simulator's sm_80 instructions
 * (tests/sim/test_sim80.c, sim80_async.c, sim80_fa.c). */
#ifndef SIM80_H
#define SIM80_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An argument of a test kernel: a global of `bytes` bytes, copied in
 * from host before the launch and back after it, or (bytes 0) a param
 * of type ty ("u32", "f32") with value i or f. */
typedef struct Arg {
	const char *name, *ty;
	size_t bytes;
	void *host;
	int64_t i;
	double f;
} Arg;

/* Runs body as the whole .entry of one CTA of `threads` threads with
 * `smem` bytes of dynamic shared memory, for .target tgt (.version 8.7
 * for sm_120a, 8.6 otherwise).  Before body: %r0 = %tid.x, %r9 =
 * fg_smem and %rd10 + i = the address of the i-th argument if it is a
 * global.  Registers: %p<16>, %h<16>, %r<80>, %rd<24>, %f<48>, %s<16>,
 * %o<8>.  0, or -1 with sim80_err holding the simulator's message. */
int sim80_run(const char *tgt, int threads, int smem, Arg *args, int nargs,
	const char *body, bool eager);
extern char sim80_err[8192];

/* A random value exact in bf16 and f16: sign, 7 bits, 2^-12 to 2. */
float sim80_val(uint32_t *seed);
uint32_t sim80_rand(uint32_t *seed);
/* x as bf16 (bf) or f16 bits; x must be exact in the type. */
uint16_t sim80_half(float x, bool bf);

void mma_sync_matches_a_double_matmul(void **state);
void ldmatrix_every_form_feeds_mma_sync(void **state);
void cp_async_lands_when_its_group_is_waited_for(void **state);
void cp_async_ring_waits_for_the_right_stage(void **state);
void cp_async_mbarrier_arrive_completes_a_phase(void **state);
void cp_async_faults_and_pending_copies_are_errors(void **state);
void a_test_wait_spin_that_never_completes_is_a_hang(void **state);
void named_barriers_hand_off_between_warps(void **state);
void fa_step_with_mma_sync_matches_float64(void **state);

#endif
