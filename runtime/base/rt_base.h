/* rt_base.h: the runtime's bottom layer (runtime/base/).
 *
 * The runtime is layered one way, each layer including only its own
 * header and those below (tests/arch/check-runtime-layers.sh checks it):
 *
 *	runtime/api.c    the context's creation and teardown
 *	runtime/front/   fg_attention_forward, fg_attention_reference,
 *	                 the row kernels (fg_rms_norm, fg_softmax, ...)
 *	runtime/jit/     compile, metadata, arguments, assembly, cache,
 *	                 kernels and launches
 *	runtime/driver/  the CUDA driver, loaded with dlopen
 *	runtime/base/    this: the context, allocation, errors, logging,
 *	                 the clock, SHA-256
 *
 * Takes: the public API's types (fagen.h) and the compiler core's
 * helpers (fgc.h).  Gives: struct fg_ctx, whose slots for the layers
 * above are pointers to types that only those layers define and free,
 * and the helpers every layer uses.  Nothing here is public. */
#ifndef RT_BASE_H
#define RT_BASE_H

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

/* ---------------------------------------------------------------- rt.c
 * The context: options, per-thread error messages, logging. */
typedef struct ErrSlot ErrSlot;
typedef struct MemEntry MemEntry;       /* jit/cache.c */
typedef struct CacheDir CacheDir;       /* jit/cache.c */
typedef struct Driver Driver;           /* driver/cuda.c */
typedef struct Tools Tools;             /* jit/jit.c */
typedef struct AttnVariant AttnVariant; /* front/attention.c */
typedef struct RefModule RefModule;     /* front/reference.c */
typedef struct FrontVariant FrontVariant; /* front/variants.c */

struct fg_ctx {
	fg_alloc alloc;
	void *alloc_ud;
	bool malloc_alloc;      /* alloc is malloc's (no fg_options.alloc) */
	fg_log_fn log;
	void *log_ud;
	int log_level;
	int device;
	int sim;              /* 0: the GPU; 90 or 100: the simulator's
			       * sm_90a or sm_100a (fg_options.sim,
			       * $FAGEN_SIM); -1: a $FAGEN_SIM it does not
			       * know, an error on the driver's first use */
	char *sim_bad;        /* that $FAGEN_SIM, for the message */
	int target;           /* the schedules' target: 80, 90 or 100 (0:
			       * the device's own; fg_options.target,
			       * $FAGEN_TARGET); -1: a $FAGEN_TARGET it does
			       * not know, an error on the driver's first
			       * use */
	char *target_bad;     /* that $FAGEN_TARGET, for the message */
	bool no_pdl;          /* $FAGEN_NO_PDL set (not "0"): kernels with
			       * grid_dep_wait launch without programmatic
			       * dependent launch (to measure it) */
	unsigned jit;
	char *driver_lib;     /* NULL: $FAGEN_DRIVER_LIB or libcuda.so.1 */
	char *cache_dir;      /* NULL: memory only */
	atomic_bool disk_ok;  /* false once the directory proved unwritable */
	pthread_mutex_t mu;   /* guards errs, mem, dir, drv and tools setup */
	ErrSlot *errs;
	MemEntry *mem;        /* the memory cache */
	CacheDir *dir;        /* cache_dir, opened and checked on first use */
	Driver *drv;          /* loaded on first use */
	Tools *tools;         /* found on first use */
	char *schedule_dir;   /* NULL: $FAGEN_SCHEDULE_DIR or the defaults */
	pthread_mutex_t attn_mu;  /* guards attn, variants and ref; held
				   * while one compiles */
	AttnVariant *attn;    /* fg_attention_forward's kernels */
	FrontVariant *variants; /* the row kernels', fg_linear's and
			       * fg_attention_decode's, under attn_mu */
	RefModule *ref;       /* fg_attention_reference's, under attn_mu */
	/* the scratch pool of fg_attention_backward and the row kernels,
	 * under attn_mu; NULL until first used */
	struct CUmemPoolHandle_st *bwd_pool;
};

void *rt_alloc(fg_ctx *, size_t);          /* NULL on failure */
void *rt_realloc(fg_ctx *, void *, size_t osize, size_t nsize);
void rt_free(fg_ctx *, void *, size_t);
char *rt_strdup(fg_ctx *, const char *);   /* NULL on failure */
void rt_strfree(fg_ctx *, char *);
fg_status rt_err(fg_ctx *, fg_status, const char *fmt, ...) FMT(3, 4);
void rt_clear(fg_ctx *);                   /* a successful call */
void rt_errs_free(fg_ctx *);               /* every thread's message */
void rt_log(fg_ctx *, int level, const char *fmt, ...) FMT(3, 4);
double rt_ms(void);                        /* a monotonic clock */

/* Checked arithmetic, for every place where the runtime combines
 * dimensions, strides and constants: *r = a op b and true, or false when
 * the result does not fit 64 bits (*r is then not to be used).  Callers
 * name the culprit in their message ("heads * seq_k * head_dim ..."). */
static inline bool
ck_add64(int64_t a, int64_t b, int64_t *r)
{
	return !__builtin_add_overflow(a, b, r);
}

static inline bool
ck_sub64(int64_t a, int64_t b, int64_t *r)
{
	return !__builtin_sub_overflow(a, b, r);
}

static inline bool
ck_mul64(int64_t a, int64_t b, int64_t *r)
{
	return !__builtin_mul_overflow(a, b, r);
}

#endif
