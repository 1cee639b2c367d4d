/* sim_kernel.h: what the modes of sim_kernel share (sim_kernel.c,
 * sim_attn.c for attention, sim_decode.c for the decode kernels,
 * sim_rows.c for the row kernels):
 * the simulator of the run, the module under test, buffers and
 * launches.  A launch the simulator refuses prints its error and exits
 * 1, so a mode only checks results. */
#ifndef SIM_KERNEL_H
#define SIM_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim.h"

extern Sim *sim;        /* the run's simulator: one per process */
extern SimMod *mod;     /* the module under test (argv[2]) */
extern bool eager;      /* SIM_OPT_EAGER */
extern long ctas;       /* SIM_OPT_MAX_CTAS */

/* A value for one of a kernel's arguments, found by name. */
typedef struct Named {
	const char *name;
	SimVal v;
} Named;

/* The module at path; exits on a file it cannot read. */
SimMod *load_mod(const char *path);
/* A global of bytes filled with the byte fill; its host view in *host. */
uint64_t buffer(size_t bytes, int fill, void **host);
/* Runs mod with the values in the metadata's order. */
void launch(const SimVal *v, int n);
/* Runs m with each argument taken from nv by name (extra names are
 * ignored; one the kernel has and nv lacks exits 1). */
void launch_named(const SimMod *m, const Named *nv, int n);

/* sim_decode.c's modes: argv as main's; 0 on a match. */
int decode(int argc, char **argv);
int kv_append(int argc, char **argv);
int combine_only(int argc, char **argv);
/* sim_attn.c's modes (fa, bwd): argv as main's; 0 on a match, 2 for a
 * mode not among them. */
int attn_modes(int argc, char **argv);
/* sim_rows.c's modes (rmsnorm, rmsnorm_bwd, layernorm, xent, xent_bwd,
 * softmax): argv as main's; 0 on a match, 2 for a mode not among them. */
int row_modes(int argc, char **argv);

#endif
