/* rt.h: the runtime's internal header, sectioned by file like fgc.h.
 * Nothing here is public; include/fagen.h is the API.  <cuda.h> is used
 * for its types only: the driver is loaded with dlopen (cuda.c). */
#ifndef RT_H
#define RT_H

#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "fagen.h"
#include "fgc.h"

/* ---------------------------------------------------------------- sha256.c
 * SHA-256 (FIPS 180-4), for cache keys and entry checksums. */
typedef struct Sha256 {
	uint32_t h[8];
	uint64_t len;        /* bytes hashed so far */
	uint8_t buf[64];
	size_t nbuf;
} Sha256;

void sha256_init(Sha256 *);
void sha256_update(Sha256 *, const void *, size_t);
void sha256_final(Sha256 *, uint8_t out[32]);
void sha256(const void *, size_t, uint8_t out[32]);
void hex32(const uint8_t key[32], char out[65]);

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

typedef enum { MA_GLOBAL = 1, MA_TMA, MA_PARAM } MetaArgKind;

typedef struct MetaArg {
	MetaArgKind kind;
	const char *name;
	Ty ty;               /* element type (GLOBAL), value type (PARAM) */
	int rank;            /* GLOBAL, TMA */
	Rpn dims[FG_MAX_RANK];  /* GLOBAL: extents, outermost first */
	int of;              /* TMA: index of its GLOBAL */
	int64_t box[FG_MAX_RANK];  /* TMA: outermost first */
	int swizzle;         /* TMA: 0, 32, 64, 128 */
	bool oob_nan;        /* TMA */
	bool has_tma;        /* GLOBAL: a TMA view uses it */
	int user;            /* GLOBAL, PARAM: position among user args */
} MetaArg;

typedef struct Meta {
	const char *name, *target;
	TargetId tgt;
	int threads, cluster[3];
	int64_t smem;
	TileOrder order;
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

/* ---------------------------------------------------------------- api.c
 * The context: options, per-thread error messages, logging. */
typedef struct ErrSlot ErrSlot;
typedef struct MemEntry MemEntry;

typedef struct Driver Driver;
typedef struct Tools Tools;
typedef struct AttnVariant AttnVariant;
typedef struct RefModule RefModule;

struct fg_ctx {
	fg_alloc alloc;
	void *alloc_ud;
	fg_log_fn log;
	void *log_ud;
	int log_level;
	int device;
	unsigned jit;
	char *driver_lib;     /* NULL: $FAGEN_DRIVER_LIB or libcuda.so.1 */
	char *cache_dir;      /* NULL: memory only */
	atomic_bool disk_ok;  /* false once the directory proved unwritable */
	pthread_mutex_t mu;   /* guards errs, mem, drv and tools setup */
	ErrSlot *errs;
	MemEntry *mem;        /* the memory cache */
	Driver *drv;          /* loaded on first use */
	Tools *tools;         /* found on first use */
	char *schedule_dir;   /* NULL: $FAGEN_SCHEDULE_DIR or the defaults */
	pthread_mutex_t attn_mu;  /* guards attn; held while one compiles */
	AttnVariant *attn;    /* fg_attention_forward's kernels */
	RefModule *ref;       /* fg_attention_reference's, under attn_mu */
};

void *rt_alloc(fg_ctx *, size_t);          /* NULL on failure */
void *rt_realloc(fg_ctx *, void *, size_t osize, size_t nsize);
void rt_free(fg_ctx *, void *, size_t);
char *rt_strdup(fg_ctx *, const char *);   /* NULL on failure */
void rt_strfree(fg_ctx *, char *);
fg_status rt_err(fg_ctx *, fg_status, const char *fmt, ...) FMT(3, 4);
void rt_clear(fg_ctx *);                   /* a successful call */
void rt_log(fg_ctx *, int level, const char *fmt, ...) FMT(3, 4);
double rt_ms(void);                        /* a monotonic clock */

/* ---------------------------------------------------------------- cache.c
 * Cubins by key: in memory per context, on disk under ctx->cache_dir.
 * An entry on disk is a header (magic, format, key, length, SHA-256 of the
 * payload) and the cubin; a file that does not match in every field is a
 * miss and is replaced, never loaded.  Writers write a temporary file and
 * rename it over the entry, so readers see a whole entry or none. */
typedef enum { CACHE_MISS, CACHE_HIT, CACHE_BAD } CacheResult;
enum { CACHE_HDR = 88, CACHE_MAXLEN = 1 << 28 };

/* key = SHA-256 over every input that decides the cubin. */
void cache_key(uint8_t key[32], const char *ptx, size_t len,
	const char *arch, const char *opts, const char *tool);
char *cache_default_dir(fg_ctx *);        /* from the environment */
CacheResult cache_get(fg_ctx *, const uint8_t key[32], void **data,
	size_t *len, fg_code_source *src);  /* data: rt_alloc'd */
void cache_put(fg_ctx *, const uint8_t key[32], const void *, size_t);
void cache_mem_free(fg_ctx *);
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

/* ---------------------------------------------------------------- cuda.c
 * The driver API, loaded with dlopen on first use. */
typedef struct CudaApi {
	CUresult (*Init)(unsigned);
	CUresult (*DriverGetVersion)(int *);
	CUresult (*DeviceGetCount)(int *);
	CUresult (*DeviceGet)(CUdevice *, int);
	CUresult (*DeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
	CUresult (*DeviceGetName)(char *, int, CUdevice);
	CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*DevicePrimaryCtxRelease)(CUdevice);
	CUresult (*CtxPushCurrent)(CUcontext);
	CUresult (*CtxPopCurrent)(CUcontext *);
	CUresult (*ModuleLoadDataEx)(CUmodule *, const void *, unsigned,
		CUjit_option *, void **);
	CUresult (*ModuleUnload)(CUmodule);
	CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
	CUresult (*FuncSetAttribute)(CUfunction, CUfunction_attribute, int);
	CUresult (*LaunchKernelEx)(const CUlaunchConfig *, CUfunction, void **,
		void **);
	CUresult (*TensorMapEncodeTiled)(CUtensorMap *, CUtensorMapDataType,
		cuuint32_t, void *, const cuuint64_t *, const cuuint64_t *,
		const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
		CUtensorMapSwizzle, CUtensorMapL2promotion,
		CUtensorMapFloatOOBfill);
	CUresult (*GetErrorName)(CUresult, const char **);
	CUresult (*GetErrorString)(CUresult, const char **);
	/* stream-ordered scratch memory (reference.c) */
	CUresult (*MemPoolCreate)(CUmemoryPool *, const CUmemPoolProps *);
	CUresult (*MemPoolDestroy)(CUmemoryPool);
	CUresult (*MemPoolSetAttribute)(CUmemoryPool, CUmemPool_attribute,
		void *);
	CUresult (*MemAllocFromPoolAsync)(CUdeviceptr *, size_t,
		CUmemoryPool, CUstream);
	CUresult (*MemFreeAsync)(CUdeviceptr, CUstream);
} CudaApi;

struct Driver {
	void *lib;
	CudaApi cu;
	fg_status status;     /* of the first attempt: it is not retried */
	char *why;            /* its message when status != FG_OK */
	CUdevice dev;
	CUcontext pctx;       /* the device's primary context, retained */
	int cc_major, cc_minor, nsm;
	int smem_optin;       /* max dynamic shared memory per block */
	int version;          /* cuDriverGetVersion */
	char name[128];       /* the device's */
};

fg_status cuda_get(fg_ctx *, Driver **);  /* load on first use */
fg_status cuda_check(fg_ctx *, const Driver *, CUresult, const char *what);
void cuda_free(fg_ctx *);

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
	atomic_int max_ctas;  /* persistent grid cap, 0: #SMs */
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

/* ---------------------------------------------------------------- attention.c
 * fg_attention_forward: argument checks, the schedule's variant for the
 * device, kernels cached per variant in the context. */
typedef struct Attn {
	int64_t st[4][4];     /* q, k, v, o strides, (batch, head, seq, dim) */
	double scale;         /* resolved: 1/sqrt(head_dim) when 0 */
} Attn;

/* Check a for fn ("fg_attention_forward"); tma adds the fused kernel's
 * rules (head_dim 64 or 128, 16-byte alignment, strides of 16 bytes,
 * 32-bit LSE indexing). */
fg_status attn_check(fg_ctx *, const char *fn, const fg_attention_args *a,
	CUstream, bool tma, Attn *out);
/* The path of a shipped schedule: fg_options.schedule_dir, else
 * $FAGEN_SCHEDULE_DIR, else the installed directory, else the source
 * tree's; FG_ERR_IO naming the places looked in. */
fg_status attn_schedule(fg_ctx *, const char *file, char *path, size_t n);
/* The kernel for a's variant on compute capability cc (90: sm_90a),
 * compiled on first use and kept in the context; FG_ERR_UNSUPPORTED for
 * an arch without a schedule. */
fg_status attn_variant(fg_ctx *, const char *fn, int cc,
	const fg_attention_args *a, fg_kernel **out);
/* The kernel's arguments for a checked problem. */
void attn_bind(const fg_attention_args *a, const Attn *, fg_arg args[10]);
void attn_free(fg_ctx *);

/* ---------------------------------------------------------------- nvrtc.c
 * CUDA C to a cubin for arch ("sm_90") with nvrtc, loaded with dlopen;
 * cached like the kernels' cubins.  *cubin is rt_alloc'd.  Needs no GPU;
 * FG_ERR_JIT without nvrtc or when it rejects the source. */
fg_status nvrtc_cubin(fg_ctx *, const char *fn, const char *src,
	const char *name, const char *arch, void **cubin, size_t *len);

/* ---------------------------------------------------------------- reference.c */
const char *ref_source(void);  /* the reference kernels' CUDA C */
void ref_free(fg_ctx *);

#endif
