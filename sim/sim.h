/* sim.h: libfgsim, a CPU simulator for the PTX fagen emits (issue #18).
 *
 * It reads one PTX module written by fagen (the .entry and the metadata
 * comment above it, docs/LANGUAGE.md §17.1), builds the parameter buffer
 * and tensor maps the runtime would build (runtime/jit/launch.c), and runs
 * the launch functionally on the CPU: one CTA after another, each CTA's
 * warps scheduled round robin, each warp run until it blocks.  Global
 * memory is the simulator's own buffers (sim_alloc), so every access is
 * checked against them.  See docs/TARGETS.md, "The simulator". */
#ifndef SIM_H
#define SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct SimMod SimMod;
typedef struct Sim Sim;

enum { SIM_MAXARGS = 32, SIM_MAXRANK = 5, SIM_MAXRPN = 24 };

enum { SIM_ARG_PARAM, SIM_ARG_GLOBAL, SIM_ARG_TMA, SIM_ARG_STRIDES };
enum { SIM_ORD_SINGLE, SIM_ORD_PERSISTENT, SIM_ORD_LPT };
enum { SIM_RPN_INT, SIM_RPN_PARAM, SIM_RPN_ADD, SIM_RPN_SUB, SIM_RPN_MUL,
	SIM_RPN_DIV, SIM_RPN_MOD, SIM_RPN_MIN, SIM_RPN_MAX, SIM_RPN_CDIV };

/* A size program of the metadata: postfix, over the params. */
typedef struct SimRpn {
	int n;
	struct { int op; int64_t v; } t[SIM_MAXRPN];
} SimRpn;

typedef struct SimArg {
	int kind;
	const char *name;
	int ty;                    /* an element or param type (simi.h TY_) */
	int rank;                  /* global: dims; tma: box entries */
	SimRpn dims[SIM_MAXRANK];  /* global, outermost first */
	int of;                    /* tma: the global it views; strides:
				    * the 'strided' global whose strides
				    * (i64 elements) it passes */
	int box[SIM_MAXRANK];      /* tma, outermost first */
	int swizzle;               /* tma: 0, 32, 64 or 128 */
	bool oob_nan;
	int user;                  /* position in the caller's list, or -1 */
} SimArg;

typedef struct SimMeta {
	const char *name, *target;
	int threads, cluster[3], smem, order, ntiles;
	SimRpn grid[3];
	int nargs, nuser;
	SimArg args[SIM_MAXARGS];
} SimMeta;

/* A value for one of the caller's arguments (params and globals, in the
 * metadata's order): i for integer params, f for f32 params, ptr (from
 * sim_alloc) for globals.  Strides are dense, as the runtime's default. */
typedef struct SimVal {
	int64_t i;
	double f;
	uint64_t ptr;
} SimVal;

/* Options (sim_set). */
enum {
	SIM_OPT_MAX_CTAS,   /* persistent grids: CTAs launched (default 132) */
	SIM_OPT_EAGER,      /* 1: async copies and wgmma complete at issue;
			     * 0 (default): only when every warp is blocked */
	SIM_OPT_STEP_LIMIT, /* instructions per CTA before giving up */
};

typedef struct SimStats {
	uint64_t warp_steps;      /* warp instructions executed */
	uint64_t ctas;
} SimStats;

/* Reads PTX text; NULL with a message in err ("line N: ...") on a form it
 * does not model or cannot read. */
SimMod *sim_load(const char *ptx, size_t len, char *err, size_t errlen);
void sim_mod_free(SimMod *);
const SimMeta *sim_meta(const SimMod *);

Sim *sim_new(void);
void sim_free(Sim *);
void sim_set(Sim *, int opt, int64_t v);
/* A zeroed global buffer of n bytes (256-byte aligned); its address. */
uint64_t sim_alloc(Sim *, size_t n);
/* The host view of [addr, addr + n), or NULL if outside every buffer. */
void *sim_host(Sim *, uint64_t addr, size_t n);
/* Runs one launch; 0 on success, -1 with sim_error() set (a hang report
 * names every warp's PC, PTX line and what it waits on). */
int sim_launch(Sim *, const SimMod *, const SimVal *args, int nargs);
const char *sim_error(const Sim *);
SimStats sim_stats(const Sim *);

/* ---- the runtime's simulated device (FAGEN_SIM, runtime/driver/sim.c)
 * There the device's memory is the host's, and the driver's calls arrive
 * with raw parameters rather than the metadata's arguments. */

/* Host memory as a global buffer: [host, host + n) is reachable at the
 * address (uint64_t)host itself, checked like sim_alloc's buffers; the
 * address, or 0 when it cannot be registered.  Not copied or freed. */
uint64_t sim_map(Sim *, void *host, size_t n);
void sim_unmap(Sim *, uint64_t addr);   /* a range sim_map returned */

enum { SIM_TMAP_BYTES = 128 };  /* a CUtensorMap */

/* What cuTensorMapEncodeTiled records, into map's SIM_TMAP_BYTES bytes:
 * rank 1 to SIM_MAXRANK, dimensions innermost first, stride[i] the byte
 * stride of dimension i + 1 (rank - 1 of them), box extents 1 to 256,
 * swizzle 0, 32, 64 or 128 bytes.  false when a field is out of range. */
bool sim_tmap_encode(void *map, uint64_t addr, int rank, int esize,
	const uint64_t *dim, const uint64_t *stride, const uint32_t *box,
	int swizzle, bool oob_nan);

/* Runs one launch as cuLaunchKernelEx receives it: params[i] points at
 * the value of the .entry's parameter i (a tensor map: sim_tmap_encode's
 * record), the grid in CTAs, block threads (the metadata's), cluster
 * (1, 1, 1 only) and smem bytes of dynamic shared memory.  Each global
 * argument is reached over its extent from the metadata (dense; a
 * global with tensor maps over the maps' extents) and whatever sim_map
 * or sim_alloc provide; every other access is out of bounds.  0, or -1
 * with sim_error() set. */
int sim_launch_raw(Sim *, const SimMod *, void *const *params,
	const unsigned grid[3], unsigned block, const unsigned cluster[3],
	unsigned smem);

#endif
