/* rt_jit.h: the runtime's compile, JIT and cache layer (runtime/jit/).
 *
 * Takes: runtime/driver (rt_driver.h) and runtime/base, and the compiler
 * core (fgc.h) for schedules to PTX.  Gives: fg_compile_*, fg_kernel_*,
 * fg_launch: schedules to programs, PTX metadata, argument binding, PTX
 * to cubins (nvJitLink, ptxas), CUDA C to cubins (nvrtc), the cubin
 * cache, kernels and their launches.  Layers above: runtime/front,
 * runtime/api.c. */
#ifndef RT_JIT_H
#define RT_JIT_H

#include "rt_driver.h"

/* ---------------------------------------------------------------- meta.c
 * The metadata comment at the top of fagen's PTX (LANGUAGE.md §17.1),
 * parsed once per kernel.  Sizes are postfix programs over the params. */
enum { RPN_INT, RPN_PARAM, RPN_ADD, RPN_SUB, RPN_MUL, RPN_DIV, RPN_MOD,
	RPN_MIN, RPN_MAX, RPN_CDIV };

typedef struct RpnTok {
	int op;
	int64_t v;           /* RPN_INT: value; RPN_PARAM: index in Meta.args */
} RpnTok;

typedef struct Rpn {
	RpnTok *t;
	int n;
} Rpn;

typedef enum { MA_GLOBAL = 1, MA_TMA, MA_PARAM, MA_STRIDES } MetaArgKind;

typedef struct MetaArg {
	MetaArgKind kind;
	const char *name;
	Ty ty;               /* element type (GLOBAL), value type (PARAM) */
	int rank;            /* GLOBAL, TMA */
	Rpn dims[FG_MAX_RANK];  /* GLOBAL: extents, outermost first */
	int of;              /* TMA, STRIDES: index of its GLOBAL */
	int64_t box[FG_MAX_RANK];  /* TMA: outermost first */
	int swizzle;         /* TMA: 0, 32, 64, 128 */
	bool oob_nan;        /* TMA */
	bool has_tma;        /* GLOBAL: a TMA view uses it */
	bool direct;         /* GLOBAL: addressed by ld/st as a dense tensor
			      * ('// fagen.direct NAME') */
	bool cpasync;        /* GLOBAL: read by cp_async in 16-byte chunks
			      * ('// fagen.cpasync NAME') */
	bool strided;        /* GLOBAL: ... or by its strides, which a
			      * STRIDES argument passes ('strided') */
	int user;            /* GLOBAL, PARAM: position among user args */
} MetaArg;

typedef struct Meta {
	const char *name, *target;
	TargetId tgt;
	int threads, cluster[3];
	int64_t smem;
	TileOrder order;
	int per_sm;          /* persistent CTAs per SM; 0: occupancy's */
	bool pdl;            /* 'pdl=1': launched with programmatic stream
			      * serialization (the kernel's grid_dep_wait
			      * orders it after the one before) */
	int tmem;
	int ntiles;
	Rpn grid[3];
	MetaArg *args;
	int nargs;
	int nuser;           /* globals and params */
	int *user;           /* user position -> index in args */
} Meta;

/* Parse len bytes of PTX into m, allocating in a; false with a message in
 * err (errlen bytes) when the metadata is missing or malformed. */
bool meta_parse(Arena *, const char *ptx, size_t len, Meta *m,
	char *err, size_t errlen);

/* Evaluate r with params vals (indexed like Meta.args).  false with a
 * message in err on overflow or division by zero. */
bool rpn_eval(const Meta *, const Rpn *, const int64_t *vals, int64_t *out,
	char *err, size_t errlen);
int ty_tma_code(Ty);  /* CUtensorMapDataType, or -1 */

/* ---------------------------------------------------------------- cache.c
 * Cubins by key: in memory per context, on disk under ctx->cache_dir.
 * An entry on disk is a header (magic, format, key, length, SHA-256 of the
 * payload) and the cubin; a file that does not match in every field is a
 * miss and is replaced, never loaded.  Writers write a temporary file and
 * rename it over the entry, so readers see a whole entry or none.  The
 * directory is used only when no one but the user (or root) can write
 * to it, and its entries only when they are the user's (API.md,
 * "Security"). */
typedef enum { CACHE_MISS, CACHE_HIT, CACHE_BAD } CacheResult;
enum { CACHE_HDR = 88, CACHE_MAXLEN = 1 << 28 };

/* key = SHA-256 over every input that decides the cubin. */
void cache_key(uint8_t key[32], const char *ptx, size_t len,
	const char *arch, const char *opts, const char *tool);
char *cache_default_dir(fg_ctx *);        /* from the environment */
CacheResult cache_get(fg_ctx *, const uint8_t key[32], void **data,
	size_t *len, fg_code_source *src);  /* data: rt_alloc'd */
void cache_put(fg_ctx *, const uint8_t key[32], const void *, size_t);
void cache_free(fg_ctx *);  /* the memory cache, the directory's fd */
/* The entry format, exposed for the tests. */
void cache_encode_hdr(uint8_t hdr[CACHE_HDR], const uint8_t key[32],
	const void *data, size_t len);
char *cache_path(fg_ctx *, const uint8_t key[32]);

/* ---------------------------------------------------------------- jit.c
 * PTX to cubin: nvJitLink in-process, else the ptxas executable.  The tool
 * string names the assembler and its version, for the cache key. */
typedef enum { JIT_OK, JIT_MISSING, JIT_FAILED } JitResult;

/* The assembler for ptx (FG_JIT_*) and its name and version: ptxas for
 * PTX that uses setmaxnreg or wgmma (whole-program assembly), else
 * nvJitLink, else whichever is available (ptx NULL: no preference); with
 * none, FG_JIT_DRIVER when allowed, else FG_ERR_JIT. */
fg_status jit_tool(fg_ctx *, const char *ptx, int *which,
	const char **tool);
/* Assemble, starting with which; *used gets the assembler that did. */
fg_status jit_run(fg_ctx *, int which, const char *ptx, size_t len,
	const char *arch, void **cubin, size_t *cubinlen, int *used);
void jit_free(fg_ctx *);

/* ---------------------------------------------------------------- kernel.c
 * A kernel: the PTX, its metadata, and once loaded its module. */
struct fg_kernel {
	fg_ctx *ctx;
	Arena arena;          /* the PTX copy and the metadata */
	char *ptx;
	size_t ptxlen;
	Meta meta;
	pthread_mutex_t mu;   /* guards assembly and loading */
	void *cubin;          /* rt_alloc'd; NULL with the driver JIT */
	size_t cubinlen;
	fg_code_source source;
	double assemble_ms;
	bool driver_jit;      /* no assembler: cuModuleLoadDataEx on PTX */
	atomic_bool loaded;
	atomic_int max_ctas;  /* persistent grid cap, 0: #SMs x per SM */
	int occupancy;        /* CTAs per SM that fit, once loaded */
	int max_clusters;     /* clusters that fit the device at once, once
			       * loaded (a cluster of several CTAs) */
	CUmodule mod;
	CUfunction fn;
};

/* ---------------------------------------------------------------- args.c
 * Binding the caller's arguments to the kernel's parameters. */
typedef struct Bound {
	const fg_arg *arg[64];   /* by index in Meta.args; NULL for TMA */
	int64_t val[64];         /* PARAM values, for the size programs */
	int64_t dims[64][FG_MAX_RANK];    /* GLOBAL: resolved extents */
	int64_t strides[64][FG_MAX_RANK]; /* GLOBAL: resolved, in elements */
	int64_t tiles[3];
} Bound;
enum { MAXARGS = 64 };

fg_status args_bind(fg_ctx *, const Meta *, const fg_arg *, int n, Bound *);

/* ---------------------------------------------------------------- launch.c */
fg_status launch_kernel(fg_kernel *, CUstream, const Bound *);
/* The CTAs a launch of k over tiles tiles (their product; with a
 * cluster, the grid's blocks of the cluster's shape times the cluster's
 * size) gets: the tiles for order=single; else min(tiles, the cap), the
 * cap fg_kernel_set_grid_limit's or #SMs x per_sm (k loaded where per_sm
 * is the occupancy's) and at most the clusters that fit at once, a
 * multiple of the cluster, at least one cluster. */
int64_t launch_ctas(const fg_kernel *k, const Driver *, int64_t tiles);

/* ---------------------------------------------------------------- nvrtc.c
 * CUDA C to a cubin for arch ("sm_90") with nvrtc, loaded with dlopen;
 * cached like the kernels' cubins.  *cubin is rt_alloc'd.  Needs no GPU;
 * FG_ERR_JIT without nvrtc or when it rejects the source. */
fg_status nvrtc_cubin(fg_ctx *, const char *fn, const char *src,
	const char *name, const char *arch, void **cubin, size_t *len);

#endif
