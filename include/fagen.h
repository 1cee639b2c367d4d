/* fagen.h: the fagen runtime's public API, and nothing else public.
 *
 * A program embeds fagen in four steps: create a context, compile a
 * schedule (.fa) to a program holding PTX, make a kernel from the PTX, and
 * launch it on a CUDA stream of its own:
 *
 *	fg_ctx *ctx;
 *	fg_program *prog;
 *	fg_kernel *k;
 *	fg_ctx_create(&ctx, NULL);
 *	fg_compile_file(ctx, "copy_ws_sm90.fa", NULL, &prog);
 *	fg_kernel_create(ctx, fg_program_ptx(prog, NULL), 0, &k);
 *	fg_arg args[] = {
 *		FG_INT("M", 1000), FG_INT("N", 1000),
 *		FG_PTR("X", x), FG_PTR("Y", y),
 *	};
 *	if (fg_launch(k, stream, args, 4) != FG_OK)
 *		fprintf(stderr, "%s\n", fg_errmsg(ctx));
 *
 * Every function that can fail returns an fg_status; fg_errmsg(ctx) then
 * says what went wrong.  The library never prints.  The CUDA driver is
 * loaded with dlopen when a function first needs the GPU, so a program
 * linking libfagen starts on a machine without a driver and gets
 * FG_ERR_NO_DRIVER only from the calls that need one.  The header does not
 * need <cuda.h>: streams are CUstream (struct CUstream_st *) and device
 * addresses are CUdeviceptr values passed as uint64_t.
 *
 * Threads: a context may be used from several threads at once; compiles,
 * loads and launches are safe concurrently.  Programs and kernels belong to
 * the context that made them and must be freed before it is destroyed. */
#ifndef FAGEN_H
#define FAGEN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define FG_API __attribute__((visibility("default")))
#else
#define FG_API
#endif

#define FG_VERSION_MAJOR 0
#define FG_VERSION_MINOR 1
#define FG_VERSION_PATCH 0
#define FG_VERSION_NUM \
	(FG_VERSION_MAJOR * 10000 + FG_VERSION_MINOR * 100 + FG_VERSION_PATCH)

#define FG_MAX_RANK 5   /* the most dimensions of a global tensor */

struct CUstream_st;     /* CUstream, from <cuda.h> */

typedef enum fg_status {
	FG_OK = 0,
	FG_ERR_INVALID,     /* a bad argument; fg_errmsg names it */
	FG_ERR_NOMEM,       /* the allocator failed */
	FG_ERR_IO,          /* a file could not be read */
	FG_ERR_COMPILE,     /* errors in the schedule: see the diagnostics */
	FG_ERR_NO_DRIVER,   /* the CUDA driver library could not be loaded */
	FG_ERR_NO_DEVICE,   /* cuInit failed, or there is no such device */
	FG_ERR_UNSUPPORTED, /* the kernel's target does not run on this GPU */
	FG_ERR_JIT,         /* PTX to machine code failed; fg_errmsg: the log */
	FG_ERR_CUDA,        /* a CUDA driver call failed */
} fg_status;

/* Log levels: a message is passed to fg_options.log when its level is at
 * or below fg_options.log_level. */
enum { FG_LOG_OFF, FG_LOG_ERROR, FG_LOG_WARN, FG_LOG_INFO, FG_LOG_DEBUG };

/* PTX assemblers, in the order they are tried; a mask of them in
 * fg_options.jit limits the choice (0: all).  A later one is only tried
 * when an earlier one is missing, never after it rejected the PTX. */
enum {
	FG_JIT_NVJITLINK = 1,   /* libnvJitLink, in-process */
	FG_JIT_PTXAS = 2,       /* the ptxas executable */
	FG_JIT_DRIVER = 4,      /* the driver's own JIT, at load (no cache) */
};

/* A Lua-style allocator: nsize 0 frees p (osize bytes) and returns NULL;
 * otherwise it returns a block of nsize bytes holding the first
 * min(osize, nsize) bytes of p (p NULL: a new block), or NULL. */
typedef void *(*fg_alloc)(void *ud, void *p, size_t osize, size_t nsize);
typedef void (*fg_log_fn)(void *ud, int level, const char *msg);

/* Context options.  An all-zero fg_options (or NULL) gives the defaults. */
typedef struct fg_options {
	fg_alloc alloc;         /* NULL: malloc, realloc and free */
	void *alloc_ud;
	const char *cache_dir;  /* NULL: $FAGEN_CACHE_DIR, else
				 * $XDG_CACHE_HOME/fagen, else ~/.cache/fagen;
				 * "": cache in memory only.  Used only when
				 * the user (or root) owns it and no one else
				 * may write to it (API.md, "Security") */
	int log_level;          /* FG_LOG_*; 0: no messages */
	fg_log_fn log;          /* receives the messages; NULL: none */
	void *log_ud;
	int device;             /* CUDA device ordinal */
	unsigned jit;           /* FG_JIT_* mask; 0: all of them */
	const char *driver_lib; /* NULL: $FAGEN_DRIVER_LIB, else
				 * libcuda.so.1 */
	const char *schedule_dir; /* schedules to use instead of the
				 * shipped ones built into libfagen, for
				 * fg_attention_* and the row kernels
				 * (fg_rms_norm, ...); NULL:
				 * $FAGEN_SCHEDULE_DIR, else the built-in
				 * copy */
	const char *sim;        /* run kernels on the CPU simulator instead
				 * of the GPU: "sm_90a" or "sm_100a"
				 * ("1" is sm_90a), with host pointers as
				 * device pointers (docs/TARGETS.md, "The
				 * simulator"); NULL: $FAGEN_SIM; "" or
				 * "0": the GPU.  Appended: zeroed callers
				 * keep the GPU */
	const char *target;     /* the PTX target of the schedules the
				 * fg_attention_* and row kernels use:
				 * "sm_80", "sm_90a" or "sm_100a"; NULL:
				 * $FAGEN_TARGET, else the device's own
				 * (compute capability 8.x: sm_80, 9.0:
				 * sm_90a, 10.0: sm_100a).  sm_80 runs on
				 * any device from 8.0 on (its PTX is JIT-
				 * compiled); the others on their own
				 * only.  Appended: zeroed callers keep the
				 * device's */
} fg_options;

typedef struct fg_ctx fg_ctx;
typedef struct fg_program fg_program;
typedef struct fg_kernel fg_kernel;

/* The library's version, "MAJOR.MINOR.PATCH". */
FG_API const char *fg_version(void);

/* The enumerator's name, e.g. "FG_ERR_INVALID"; never NULL. */
FG_API const char *fg_status_name(fg_status);

/* Make a context with opts (NULL: defaults) in *out; touches no GPU. */
FG_API fg_status fg_ctx_create(fg_ctx **out, const fg_options *opts);

/* Free the context, its caches in memory and its hold on the device;
 * NULL is a no-op. */
FG_API void fg_ctx_destroy(fg_ctx *);

/* Load the CUDA driver and open the context's device now, as the calls
 * that need a GPU do on first use: FG_OK, or FG_ERR_NO_DRIVER /
 * FG_ERR_NO_DEVICE with fg_errmsg saying why (the error's name and a
 * hint).  For programs that want that answer before their own driver
 * calls. */
FG_API fg_status fg_ctx_open(fg_ctx *);

/* What the calling thread's last failed call on ctx went wrong with; ""
 * when there was none.  Valid until that thread's next call on ctx. */
FG_API const char *fg_errmsg(const fg_ctx *ctx);

/* ---------------------------------------------------------------- compile */

typedef struct fg_compile_options {
	const char *const *defines; /* "NAME=VALUE": overrides 'const NAME' */
	int ndefines;
	const char *arch;           /* "sm_90a", "sm_100a", "sm_80";
				     * NULL: the schedule's 'target' */
	int werror;                 /* nonzero: every warning is an error */
	int no_verify;              /* nonzero: skip the schedule verifier
				     * (fagen --no-verify) */
	int debug_hangs;            /* nonzero: every mbarrier wait gives up
				     * after 2 s, prints where it waits and
				     * traps (fagen --debug-hangs) */
	const char *mods;           /* NUL-terminated text of 'mod', 'param'
				     * and 'global' declarations, as a
				     * fagen --mod file; NULL: none */
	const char *mods_name;      /* mods' name in diagnostics; NULL:
				     * "<mods>" */
} fg_compile_options;

/* Compile the schedule in the file at path (opts may be NULL).  FG_OK or
 * FG_ERR_COMPILE leave a program in *out, which the caller frees; on
 * FG_ERR_COMPILE it has diagnostics and no PTX.  Otherwise *out is NULL. */
FG_API fg_status fg_compile_file(fg_ctx *, const char *path,
	const fg_compile_options *opts, fg_program **out);

/* Compile len bytes of schedule text; name is used in diagnostics.  As
 * fg_compile_file otherwise. */
FG_API fg_status fg_compile_string(fg_ctx *, const char *name,
	const char *text, size_t len, const fg_compile_options *opts,
	fg_program **out);

/* The PTX (NUL-terminated), or NULL when the compile failed; *len gets
 * its length when len is not NULL. */
FG_API const char *fg_program_ptx(const fg_program *, size_t *len);

/* Every diagnostic in the GCC/Clang shape, with a summary line; "" when
 * there were none. */
FG_API const char *fg_program_diagnostics(const fg_program *);

/* The verifier's report: the kernel, its resources and partitions, and
 * what was checked; "" when the compile failed before the verifier. */
FG_API const char *fg_program_report(const fg_program *);

/* Free a program; NULL is a no-op. */
FG_API void fg_program_free(fg_program *);

/* ---------------------------------------------------------------- kernels */

typedef enum fg_code_source {
	FG_CODE_NONE,           /* not assembled yet */
	FG_CODE_MEMORY,         /* found in the context's memory cache */
	FG_CODE_DISK,           /* found in the on-disk cache */
	FG_CODE_NVJITLINK,      /* assembled by nvJitLink */
	FG_CODE_PTXAS,          /* assembled by ptxas */
	FG_CODE_DRIVER,         /* left to the driver's JIT at load */
	FG_CODE_SIM,            /* PTX for the simulator (fg_options.sim) */
} fg_code_source;

typedef struct fg_kernel_info {
	const char *name;       /* the .entry */
	const char *target;     /* "sm_90a" or "sm_100a" */
	const char *order;      /* "single", "persistent" or "lpt" */
	int threads;            /* block size */
	int cluster[3];
	int64_t smem;           /* dynamic shared memory, bytes */
	int tmem;               /* tensor-memory columns, 0: none */
	int tile_dims;          /* dimensions of the tile grid */
	int nargs;              /* arguments the caller passes */
	fg_code_source source;  /* where the loaded code came from */
	double assemble_ms;     /* time spent obtaining the code */
} fg_kernel_info;

typedef enum fg_arg_kind {
	FG_ARG_INT = 1,         /* an integer or bool param */
	FG_ARG_FLOAT,           /* an f32 param */
	FG_ARG_TENSOR,          /* a global tensor */
} fg_arg_kind;

typedef struct fg_arg_info {
	const char *name;
	fg_arg_kind kind;
	const char *type;       /* "i32", "bf16", ...: the element type */
	int rank;               /* tensors: dimensions; else 0 */
	int tma;                /* tensors: nonzero when a TMA view reads or
				 * writes it (16-byte rules apply) */
} fg_arg_info;

/* Make a kernel from PTX written by fagen (len 0: strlen), reading its
 * metadata comment; touches no GPU. */
FG_API fg_status fg_kernel_create(fg_ctx *, const char *ptx, size_t len,
	fg_kernel **out);

/* Obtain machine code for the kernel's PTX: from the memory or disk cache,
 * else by assembling it (and caching the result).  Needs no GPU; with only
 * FG_JIT_DRIVER available it leaves the PTX to fg_kernel_load. */
FG_API fg_status fg_kernel_assemble(fg_kernel *);

/* Assemble if needed and load the code on the context's device.  Repeat
 * calls return at once. */
FG_API fg_status fg_kernel_load(fg_kernel *);

/* Free a kernel and unload its module; NULL is a no-op. */
FG_API void fg_kernel_free(fg_kernel *);

/* Fill *info; the strings live as long as the kernel. */
FG_API void fg_kernel_info_get(const fg_kernel *, fg_kernel_info *info);

/* Describe the i-th argument the caller passes (globals and params, in
 * declaration order; tensor maps are built by the runtime). */
FG_API fg_status fg_kernel_arg(const fg_kernel *, int i, fg_arg_info *);

/* The assembled machine code, or NULL before assembly or when the driver
 * JIT is used; *len gets its size. */
FG_API const void *fg_kernel_cubin(const fg_kernel *, size_t *len);

/* Cap the CTAs of a persistent or lpt kernel's grid (0, the default: the
 * schedule's 'per_sm' per SM, one unless it says otherwise); the CTAs
 * share the tiles whatever their number.  Launching fewer leaves SMs to
 * other streams' work.  No effect on order=single. */
FG_API fg_status fg_kernel_set_grid_limit(fg_kernel *, int max_ctas);

/* ---------------------------------------------------------------- launch */

/* A global tensor: a device address, and its extents and strides, both
 * outermost first.  rank 0 means the schedule's rank; all-zero dims are
 * taken from the schedule's extents over the params; all-zero strides mean
 * dense row-major.  Strides are in elements, and the innermost must be 1
 * for a tensor that TMA reads or writes. */
typedef struct fg_tensor {
	uint64_t ptr;
	int rank;
	int64_t dims[FG_MAX_RANK];
	int64_t strides[FG_MAX_RANK];
} fg_tensor;

/* One argument.  name NULL: positional (the i-th of fg_kernel_arg's
 * list); otherwise matched by name. */
typedef struct fg_arg {
	const char *name;
	fg_arg_kind kind;
	int64_t i;              /* FG_ARG_INT: range-checked for the type */
	double f;               /* FG_ARG_FLOAT */
	fg_tensor t;            /* FG_ARG_TENSOR */
} fg_arg;

#define FG_INT(nm, v) \
	((fg_arg){.name = (nm), .kind = FG_ARG_INT, .i = (int64_t)(v)})
#define FG_FLOAT(nm, v) \
	((fg_arg){.name = (nm), .kind = FG_ARG_FLOAT, .f = (double)(v)})
#define FG_PTR(nm, p) ((fg_arg){.name = (nm), .kind = FG_ARG_TENSOR, \
	.t = {.ptr = (uint64_t)(p)}})

/* Validate args against the kernel without launching: every argument is
 * given exactly once and has the right kind and range, tensors' extents
 * match the schedule's, and TMA's alignment, stride and size rules hold.
 * tiles (may be NULL) gets the tile grid's extents (1 beyond tile_dims).
 * Needs no GPU. */
FG_API fg_status fg_kernel_check(const fg_kernel *, const fg_arg *args,
	int nargs, int64_t tiles[3]);

/* Check args, load the kernel if needed, build its tensor maps and launch
 * it asynchronously on stream, which must be a stream the caller created
 * on the context's device (NULL and CU_STREAM_LEGACY, the legacy default
 * stream, are rejected; CU_STREAM_PER_THREAD is accepted). */
FG_API fg_status fg_launch(fg_kernel *, struct CUstream_st *stream,
	const fg_arg *args, int nargs);

/* ---------------------------------------------------------------- attention */

typedef enum fg_dtype {
	FG_DTYPE_BF16 = 1,
	FG_DTYPE_F16,
	FG_DTYPE_F32,           /* the row kernels only (fg_rms_norm,
				 * fg_layer_norm, fg_softmax*,
				 * fg_cross_entropy; not fg_linear) */
} fg_dtype;

/* One attention problem: O = softmax(Q K^T * scale) V and, per query row,
 * LSE = log(sum(exp(Q K^T * scale))), the natural log.  Q and O hold
 * batch x heads x seq_q x head_dim elements, K and V batch x heads x seq_k
 * x head_dim, laid out by their strides: in elements, indexed (batch,
 * head, seq, dim), so both the B,H,S,D and the B,S,H,D layouts (and
 * padded or sliced views of them) are described; all four zero means dense
 * B,H,S,D.  The dim stride must be 1.  LSE is f32, dense [batch, heads,
 * seq_q].  Causal attention is aligned to the bottom right: query i sees
 * keys j <= i + seq_k - seq_q; a row that sees no key gets O = 0 and
 * LSE = -inf. */
typedef struct fg_attention_args {
	uint64_t q, k, v;         /* inputs: CUdeviceptr */
	uint64_t o;               /* output, like q */
	uint64_t lse;             /* output: f32 [batch, heads, seq_q] */
	int64_t q_strides[4];     /* (batch, head, seq, dim); 0: dense */
	int64_t k_strides[4];
	int64_t v_strides[4];
	int64_t o_strides[4];
	int64_t batch, heads, seq_q, seq_k, head_dim;
	fg_dtype dtype;
	int causal;               /* nonzero: causal, bottom-right */
	double scale;             /* 0: 1 / sqrt(head_dim) */
	const char *schedule;     /* NULL: the fastest shipped schedule for
				   * the device and head dim (sm_90: the
				   * baseline at 64, fa_fwd_sm90.fa at
				   * 128; sm_100: fa_fwd_sm100.fa, its
				   * baseline for ALiBi or mods); else the
				   * file name of another
				   * shipped attention schedule taking the
				   * same parameters, e.g.
				   * "fa_fwd_baseline_sm90.fa" */
	int64_t heads_k;          /* K/V heads (k and v are [batch, heads_k,
				   * seq_k, head_dim]): each is shared by
				   * heads / heads_k query heads, query head
				   * h reading K/V head h / (heads /
				   * heads_k); 1 is MQA; 0 means heads */
	int window;               /* nonzero: sliding-window (local)
				   * attention: query i sees keys j with
				   * i' - window_left <= j <= i' +
				   * window_right, i' = i + seq_k - seq_q
				   * (bottom right, as causal); with causal,
				   * window_right is 0 */
	int64_t window_left;      /* keys left of the diagonal; -1: all */
	int64_t window_right;     /* keys right of it; -1: all */
	double softcap;           /* > 0: each score s = (q.k) * scale
				   * becomes softcap * tanh(s / softcap)
				   * (Gemma 2); 0: none */
	uint64_t sinks;           /* f32 [heads]: a sink logit per head
				   * (gpt-oss), in the scaled scores' units,
				   * joining each row's softmax denominator;
				   * 0: none */
	uint64_t cu_seqlens_q;    /* nonzero: a variable-length batch
				   * (flash_attn_varlen_func): int32 [batch
				   * + 1] on the device, sequence b's queries
				   * are rows cu_seqlens_q[b] ..
				   * cu_seqlens_q[b + 1] - 1 of q and o,
				   * which are then [seq_q, heads, head_dim]
				   * with seq_q the total tokens (strides:
				   * q_strides[1] head, [2] token, [0] unused;
				   * o dense); lse is f32 [heads, seq_q]; the
				   * offsets must be non-decreasing from 0,
				   * up to seq_q (the kernel clamps others
				   * into bounds, so no access strays, but
				   * the result is then undefined) */
	uint64_t cu_seqlens_k;    /* the same for k, v: [seq_k, heads_k,
				   * head_dim]; given with cu_seqlens_q */
	int64_t max_seqlen_q;     /* varlen: no sequence has more queries
				   * (rows beyond are not computed) */
	int64_t max_seqlen_k;     /* varlen: nor more keys (L2 grouping and
				   * window bounds) */
	uint64_t alibi_slopes;    /* f32 [heads]: ALiBi, FlashAttention's
				   * definition: -alibi_slopes[h] * |i +
				   * seq_k - seq_q - j| joins the scaled
				   * (and softcapped) score of query i and
				   * key j (per sequence when varlen), and
				   * the lse; 0: none */
	/* Programmable attention (FlexAttention's score_mod, mask_mod and
	 * BlockMask; docs/API.md).  Not with varlen; a score_mod not with
	 * softcap or ALiBi (write them in it); a block mask not with causal
	 * or a window (write them as the mask_mod). */
	const char *mods;         /* a mod file (docs/LANGUAGE.md, 'mod'):
				   * 'mod score_mod(s, b, h, q, k)' maps
				   * the score s = (q.k) * scale of query q
				   * and key k (i32 tiles of indices within
				   * the sequence) of batch b and query head
				   * h to the logit; 'mod mask_mod(b, h, q,
				   * k)' is true where q sees k; it declares
				   * the globals they read; NULL: none */
	int score_mod, mask_mod;  /* nonzero: mods defines that hook */
	const fg_arg *mod_args;   /* the mods' globals (and params), by
				   * name: at most 16 */
	int nmod_args;
	uint64_t block_kv_num;    /* nonzero: block sparsity, 128 x 128
				   * blocks (head_dim 64, 128): int32
				   * [batch, heads, cdiv(seq_q, 128)] (or
				   * block_batch, block_heads below), key
				   * blocks query block m must mask */
	uint64_t block_kv_idx;    /* int32 [batch, heads, cdiv(seq_q, 128),
				   * cdiv(seq_k, 128)]: their indices */
	uint64_t block_full_num;  /* the same for blocks it sees whole (no
				   * mask_mod; a block holding the last key
				   * must be masked if seq_k % 128) */
	uint64_t block_full_idx;  /* (the kernel clamps counts and indices
				   * into range; blocks in neither list are
				   * skipped) */
	int pack_gqa;             /* GQA packing (FA3's pack_gqa): the
				   * heads / heads_k query heads of one K/V
				   * head share the rows of one 128-row tile,
				   * so K and V are read once for them; only
				   * with fa_fwd_sm90.fa, when heads /
				   * heads_k divides 128, not with varlen or
				   * a block mask.  0: when it fills the
				   * tiles better (short seq_q: decode); 1:
				   * whenever it can; -1: never */
	int64_t head_dim_v;       /* V's and O's head dim (v is [batch,
				   * heads_k, seq_k, head_dim_v], o [batch,
				   * heads, seq_q, head_dim_v]); 0: head_dim.
				   * The fused kernels take head_dim_v =
				   * head_dim, or 128 with head_dim 192
				   * (DeepSeek's MLA prefill shape); the
				   * reference any up to 512 */
	int64_t block_batch;      /* the block mask's batch: batch, or 1
				   * (one mask for every batch, as a
				   * FlexAttention BlockMask made with B =
				   * None); 0: batch */
	int64_t block_heads;      /* its heads: heads, or 1 (one for every
				   * head); 0: heads.  The four tensors are
				   * [block_batch, block_heads, ...] */
} fg_attention_args;

/* Validate *a, pick the shipped schedule for the device (sm_90a:
 * fa_fwd_sm90.fa), compile and load it on first use (kept in ctx), and
 * launch it asynchronously on stream (not the legacy default stream). */
FG_API fg_status fg_attention_forward(fg_ctx *, const fg_attention_args *a,
	struct CUstream_st *stream);

/* The same result by the unfused baseline (S = Q K^T * scale, softmax,
 * P V, all in float32): CUDA C compiled at run time with nvrtc, once per
 * context, a reference for fagen's kernels.  Takes fg_attention_forward's
 * arguments, with any head_dim up to 512, 2-byte alignment and any
 * positive strides (dim stride 1), and variable-length batches (each
 * sequence alone, its lengths read from the offsets on the device); S
 * lives in scratch memory taken from a stream-ordered pool and freed on
 * stream. */
FG_API fg_status fg_attention_reference(fg_ctx *, const fg_attention_args *a,
	struct CUstream_st *stream);

/* The backward pass of fg_attention_forward (issue #13): from the
 * forward's inputs, its outputs o and lse, and the gradient of o, the
 * gradients of q, k and v.  fwd holds the forward call's arguments as
 * they were (o and lse are read here, not written); dq, dk and dv are
 * laid out like q, k and v (their own strides; all 0: dense B,H,S,D).
 * With grouped-query attention (fwd.heads_k), dk and dv of a K/V head
 * sum over the query heads sharing it.  Supported: sm_90a, head_dim 64,
 * 96 and 128 (head_dim_v the same), bf16 and f16, causal or not, GQA/MQA, sliding windows,
 * softcaps, ALiBi (no gradient for the slopes), variable-length
 * batches (dk, dv dense then) and mods (score_mod's derivative is
 * derived from its body; no gradient for the mods' globals) with the
 * forward's block mask given as block_qlist, and sinks (the sinks'
 * own gradient is not computed: it is -sum over rows of exp(sinks[h] -
 * lse) * rowsum(dout * o)); head_dim 192 and 256 give FG_ERR_UNSUPPORTED.
 * The kernels are fa_bwd_pre_sm90.fa (DELTA = rowsum(dO * O)),
 * fa_bwd_sm90.fa (dK, dV; dQ added up in f32 by TMA reduce-adds; or the
 * simpler fa_bwd_baseline_sm90.fa, with atomic adds) and
 * fa_bwd_post_sm90.fa (dQ), launched on stream with 4 * batch * heads *
 * seq_q * (head_dim + 1) bytes of f32 scratch from a stream-ordered
 * pool, freed on stream (deterministic adds 4 * batch * heads *
 * cdiv(seq_q, 64) bytes of counters, zeroed on stream).  dQ is summed
 * with atomic adds, so it may differ in the last bits from run to run
 * unless deterministic is set; dK and dV do not. */
typedef struct fg_attention_bwd_args {
	fg_attention_args fwd;    /* the forward's problem and tensors */
	uint64_t dout;            /* input: the gradient of o, like o */
	int64_t dout_strides[4];  /* (batch, head, seq, dim); 0: dense */
	uint64_t dq, dk, dv;      /* outputs: like q, k, v */
	int64_t dq_strides[4];
	int64_t dk_strides[4];
	int64_t dv_strides[4];
	const char *schedule;     /* NULL: fa_bwd_sm90.fa (warp-specialized;
				   * sm_100: fa_bwd_sm100.fa);
				   * or "fa_bwd_baseline_sm90.fa" */
	uint64_t block_qlist;     /* with the forward's block mask: int32
				   * [batch, heads_k, cdiv(seq_k, 128), 2 * g
				   * * cdiv(seq_q, 128) + 1], g = heads /
				   * heads_k: per K/V head hk and key block
				   * n, the count c of the 128 x 128 blocks
				   * (m, n) of a query head of hk that the
				   * mask's lists hold, then c pairs i, 2 * m
				   * + w (query head hk * g + i, query block
				   * m; w = 1 where the block is in
				   * block_full_idx, whole, 0 where in
				   * block_kv_idx, masked): the
				   * blocks the backward visits, in that
				   * order (counts and entries clamped into
				   * range); else 0 */
	int deterministic;        /* 0: fast, dQ summed in a varying order;
				   * nonzero: dQ's partial sums added in a
				   * fixed order, bitwise repeatable, slower
				   * (fa_bwd_sm90.fa only: not with the
				   * baseline, a block mask or on sm_100) */
} fg_attention_bwd_args;

FG_API fg_status fg_attention_backward(fg_ctx *,
	const fg_attention_bwd_args *a, struct CUstream_st *stream);

/* ---------------------------------------------------------------- decode */

/* Attention of a few new query tokens against a KV cache (issue #16), as
 * flash_attn_with_kvcache: O = softmax(Q K^T * scale) V over each
 * sequence's cached keys, with the new keys and values first appended to
 * the cache when k_new and v_new are given.  Tensors are in their own
 * dim order (FlashAttention's B,S,H,D, not fg_attention_args's), strides
 * in elements indexed that way (batch|page, seq|row, head, dim), the dim
 * stride 1; all four 0: dense.  Sequence b holds L_b = cache_seqlens[b] +
 * seq_new keys after the append (every sequence cache_len without
 * cache_seqlens); causal and window are aligned to the bottom right, query
 * i at position L_b - seq_q + i; a row that sees no key gets O = 0 and
 * LSE = -inf.  The keys are cut into num_splits parts attended in
 * parallel and merged (split-KV); the query heads of a K/V head share a
 * tile (packed GQA).  sm_90a (sm_100a: compiled, never run here). */
typedef struct fg_decode_args {
	uint64_t q;               /* [batch, seq_q, heads, head_dim] */
	uint64_t k_cache, v_cache; /* contiguous: [batch, cache_len, heads_k,
				   * head_dim]; paged: [num_pages, page_size,
				   * heads_k, head_dim] */
	uint64_t k_new, v_new;    /* 0, or [batch, seq_new, heads_k,
				   * head_dim], dense: written into the
				   * cache at cache_seqlens[b] before the
				   * attention; needs cache_seqlens and
				   * dense caches */
	uint64_t cache_seqlens;   /* int32 [batch] on the device: keys in
				   * each sequence's cache before the
				   * append; 0: every sequence holds
				   * cache_len keys (then no k_new) */
	uint64_t page_table;      /* int32 [batch, max_pages], dense (FA's
				   * block_table): sequence b's key j is row
				   * j % page_size of page
				   * page_table[b][j / page_size]; 0: a
				   * contiguous cache */
	uint64_t o;               /* output [batch, seq_q, heads, head_dim],
				   * dense */
	uint64_t lse;             /* output f32 [batch, heads, seq_q], dense;
				   * 0: not wanted (then workspace) */
	int64_t q_strides[4];     /* (batch, seq, head, dim); 0: dense */
	int64_t k_strides[4];     /* (batch | page, seq | row, head, dim) */
	int64_t v_strides[4];
	int64_t batch, seq_q, heads, heads_k, head_dim; /* heads_k 0: heads */
	int64_t cache_len;        /* contiguous: the cache's seq extent;
				   * paged: ignored (max_pages * page_size) */
	int64_t num_pages, page_size, max_pages; /* paged; else ignored */
	int64_t seq_new;          /* tokens in k_new and v_new; 0: none */
	fg_dtype dtype;           /* FG_DTYPE_BF16 or _F16 */
	int causal;               /* nonzero: causal, bottom-right */
	int window;               /* nonzero: sliding window, as
				   * fg_attention_args's */
	int64_t window_left, window_right; /* -1: unbounded */
	double softcap;           /* > 0: s -> softcap * tanh(s / softcap) */
	double scale;             /* 0: 1 / sqrt(head_dim) */
	int num_splits;           /* 0: the heuristic (docs/API.md); else
				   * 1 .. 256 */
	uint64_t workspace;       /* 16-byte aligned scratch of at least
				   * fg_attention_decode_workspace's bytes;
				   * 0: taken stream-ordered from the
				   * context's pool */
	size_t workspace_bytes;
	int validate;             /* nonzero: read cache_seqlens and
				   * page_table on the host first (this
				   * synchronizes the stream; refused
				   * during graph capture) and refuse
				   * lengths past the cache and page
				   * numbers out of range */
} fg_decode_args;

/* Validate *a, append k_new and v_new (kv_append.fa), then attend
 * (fa_decode_sm90.fa, fa_decode_sm100.fa on sm_100a, and fa_combine.fa
 * with splits), each compiled on
 * first use and kept in ctx, asynchronously on stream (not the legacy
 * default stream). */
FG_API fg_status fg_attention_decode(fg_ctx *, const fg_decode_args *a,
	struct CUstream_st *stream);

/* The bytes of workspace fg_attention_decode(ctx, a, ...) needs, into
 * *bytes: the splits' partial results, and the LSE when a->lse is 0 (0
 * with one split and an lse); a is checked as the call checks it, but
 * for workspace and workspace_bytes.  Needs the driver only when
 * num_splits is 0 (the heuristic counts the device's SMs). */
FG_API fg_status fg_attention_decode_workspace(fg_ctx *,
	const fg_decode_args *a, size_t *bytes);

/* ---------------------------------------------------------------- rows */

/* RMSNorm (issue #26), with the residual add of pre-norm transformers
 * fused in: per row i of x, y_i = s_i * rstd_i * weight with s_i = x_i
 * (+ residual_i) and rstd_i = 1 / sqrt(mean(s_i^2) + eps), computed in
 * f32.  x is [..., n], its outer dimensions flattened into rows; out,
 * residual and residual_out have x's shape, weight is [n]; all are of
 * dtype, dense and row-major (strides all 0, or those of a dense tensor).
 * A tensor's rank 0 with all dims 0 means the shape it must have (x's;
 * weight: [n]).  Outputs may not overlap the inputs or each other. */
typedef struct fg_rmsnorm_args {
	fg_tensor x;              /* input: rank 1 to FG_MAX_RANK */
	fg_tensor weight;         /* [n]; ptr 0: none (y = s * rstd) */
	fg_tensor residual;       /* like x; ptr 0: none */
	fg_tensor out;            /* output y, like x */
	fg_tensor residual_out;   /* output s = x + residual rounded to
				   * dtype, like x; given iff residual is */
	uint64_t rstd;            /* output: f32 [rows], dense; 0: not
				   * wanted (the kernel then writes scratch
				   * memory from a stream-ordered pool) */
	fg_dtype dtype;           /* FG_DTYPE_BF16, _F16 or _F32 */
	double eps;               /* finite, >= 0 */
} fg_rmsnorm_args;

/* Validate *a, pick rmsnorm.fa's configuration for the row width and
 * alignment (docs/API.md), compile and load it on first use (kept in
 * ctx), and launch it asynchronously on stream (not the legacy default
 * stream).  Empty tensors launch nothing.  Rows wider than one CTA takes
 * are shared by a cluster's CTAs; FG_ERR_UNSUPPORTED for rows wider than
 * a cluster of 8 takes (262144 16-bit elements; docs/API.md). */
FG_API fg_status fg_rms_norm(fg_ctx *, const fg_rmsnorm_args *a,
	struct CUstream_st *stream);

/* RMSNorm's backward (issue #26), from the forward's s and rstd: per row
 * i, in f32, with g_i = dy_i * weight (dy_i without a weight), dx_i =
 * rstd_i * (g_i - s_i * rstd_i^2 * mean(g_i * s_i)), the gradient of s_i
 * (with a fused residual, of x and of the residual both, once the
 * gradient of residual_out is added); and the weight's gradient dW = the
 * sum over rows of dy_i * s_i * rstd_i, as partial sums, a row of
 * dw_partial per CTA, that the caller adds up (no launch of fagen's sums
 * them).  x, dy and dx have x's shape and weight is [n], all of dtype,
 * dense and row-major, as fg_rmsnorm_args's; rstd and dw_partial are
 * f32 and dense.  Outputs may not overlap the inputs or each other. */
typedef struct fg_rmsnorm_bwd_args {
	fg_tensor x;              /* input: the forward's s, its x (its
				   * residual_out with a residual): rank 1
				   * to FG_MAX_RANK */
	fg_tensor weight;         /* [n]; ptr 0: none (the forward had
				   * none) */
	fg_tensor dy;             /* input: the gradient of y, like x */
	uint64_t rstd;            /* input: the forward's rstd, f32 [rows],
				   * dense; required */
	fg_tensor dx;             /* output: the gradient of s, like x */
	uint64_t dw_partial;      /* output: f32 [dw_partial_rows, n],
				   * dense: dW's partial sums, their rows
				   * past those written zeroed; 0: dW not
				   * wanted (scratch memory).  Only with a
				   * weight */
	int64_t dw_partial_rows;  /* at least what
				   * fg_rms_norm_backward_partials says */
	fg_dtype dtype;           /* FG_DTYPE_BF16, _F16 or _F32 */
} fg_rmsnorm_bwd_args;

/* Validate *a and launch schedules/rmsnorm_bwd.fa as fg_rms_norm
 * launches rmsnorm.fa (one row a CTA); dw_partial's rows are zeroed
 * first where no CTA writes them, so dW is the sum of all its
 * dw_partial_rows rows.  FG_ERR_UNSUPPORTED for rows wider than 8192
 * elements. */
FG_API fg_status fg_rms_norm_backward(fg_ctx *,
	const fg_rmsnorm_bwd_args *a, struct CUstream_st *stream);

/* The rows of dw_partial that fg_rms_norm_backward(ctx, a, ...) writes
 * on ctx's device, into *rows: a row per CTA of its launches, about
 * min(rows, 2 x the device's SMs); 0 without a weight or for an empty
 * problem.  a is checked as fg_rms_norm_backward checks it, but for
 * dw_partial and dw_partial_rows, which are not looked at.  Needs the
 * driver (but for an empty problem) and compiles the kernel on first
 * use, as the launch would. */
FG_API fg_status fg_rms_norm_backward_partials(fg_ctx *,
	const fg_rmsnorm_bwd_args *a, int64_t *rows);

/* LayerNorm (issue #26), fg_rms_norm's rules and fused residual add: per
 * row i, in f32, mean_i = mean(s_i), rstd_i = 1 / sqrt(mean((s_i -
 * mean_i)^2) + eps) and y_i = (s_i - mean_i) * rstd_i * weight + bias,
 * s_i = x_i (+ residual_i).  weight and bias are [n], each optional. */
typedef struct fg_layernorm_args {
	fg_tensor x;              /* input: rank 1 to FG_MAX_RANK */
	fg_tensor weight;         /* [n]; ptr 0: none (* 1) */
	fg_tensor bias;           /* [n]; ptr 0: none (+ 0) */
	fg_tensor residual;       /* like x; ptr 0: none */
	fg_tensor out;            /* output y, like x */
	fg_tensor residual_out;   /* output s = x + residual rounded to
				   * dtype, like x; given iff residual is */
	uint64_t mean;            /* output: f32 [rows], dense; 0: not
				   * wanted (then scratch, as rstd's) */
	uint64_t rstd;            /* output: f32 [rows], dense; 0: not
				   * wanted */
	fg_dtype dtype;           /* FG_DTYPE_BF16, _F16 or _F32 */
	double eps;               /* finite, >= 0 */
} fg_layernorm_args;

/* Validate *a and launch layernorm.fa as fg_rms_norm launches rmsnorm.fa
 * (the same configurations, rules and errors). */
FG_API fg_status fg_layer_norm(fg_ctx *, const fg_layernorm_args *a,
	struct CUstream_st *stream);

/* Softmax over the last dimension (issue #26): per row i of x, in f32,
 * y_i = exp(x_i - max(x_i)) / sum(exp(x_i - max(x_i))).  x and out are
 * [..., n] of dtype, dense and row-major, as fg_rmsnorm_args's x and
 * out; out may not overlap x. */
typedef struct fg_softmax_args {
	fg_tensor x;              /* input: rank 1 to FG_MAX_RANK */
	fg_tensor out;            /* output y, like x */
	fg_dtype dtype;           /* FG_DTYPE_BF16, _F16 or _F32 */
} fg_softmax_args;

/* Validate *a and launch softmax.fa as fg_rms_norm launches rmsnorm.fa
 * (the same configurations, rules and errors). */
FG_API fg_status fg_softmax(fg_ctx *, const fg_softmax_args *a,
	struct CUstream_st *stream);

/* Softmax's backward: per row i, in f32, dx_i = y_i * (dy_i - sum(dy_i *
 * y_i)), y the forward's output.  All three of y's shape and dtype; dx
 * may not overlap y or dy. */
typedef struct fg_softmax_bwd_args {
	fg_tensor y;              /* input, the forward's out: rank 1 to
				   * FG_MAX_RANK */
	fg_tensor dy;             /* input, the gradient of y, like y */
	fg_tensor dx;             /* output, the gradient of x, like y */
	fg_dtype dtype;           /* FG_DTYPE_BF16, _F16 or _F32 */
} fg_softmax_bwd_args;

/* Validate *a and launch softmax.fa -D BWD=true as fg_softmax does. */
FG_API fg_status fg_softmax_backward(fg_ctx *, const fg_softmax_bwd_args *a,
	struct CUstream_st *stream);

/* Cross-entropy of each row of logits against its target class: per row
 * i, in f32, lse_i = log(sum(exp(logits_i))) and loss_i = lse_i -
 * logits_i[target_i], or loss_i = 0 where target_i is not in [0, n)
 * (PyTorch's ignore_index -100).  logits is [..., n] of dtype, dense and
 * row-major, as fg_rmsnorm_args's x; target is int32 of logits' outer
 * shape [...] (rank 0 with all dims 0: that shape); loss and lse are f32
 * [rows], dense, and may not overlap the inputs or each other.  Rows of
 * any width: the kernel walks them in chunks. */
typedef struct fg_cross_entropy_args {
	fg_tensor logits;         /* input: rank 1 to FG_MAX_RANK */
	fg_tensor target;         /* input: int32 class indices, one a row */
	uint64_t loss;            /* output: f32 [rows], dense */
	uint64_t lse;             /* output: f32 [rows], dense; 0: not
				   * wanted (then scratch, as fg_rms_norm's
				   * rstd) */
	fg_dtype dtype;           /* of logits: FG_DTYPE_BF16, _F16 or _F32 */
} fg_cross_entropy_args;

/* Validate *a and launch cross_entropy.fa as fg_rms_norm launches
 * rmsnorm.fa (the same rules and errors), its chunk at most 16384
 * columns wide; FG_ERR_UNSUPPORTED only for rows too wide for 32-bit
 * element indices (about 2^30 elements). */
FG_API fg_status fg_cross_entropy(fg_ctx *, const fg_cross_entropy_args *a,
	struct CUstream_st *stream);

typedef struct fg_cross_entropy_bwd_args {
	fg_tensor logits;         /* input: as fg_cross_entropy's */
	fg_tensor target;         /* input: int32 class indices, one a row;
				   * a row whose target is not in [0, C)
				   * (ignore_index: pass -1) gets 0 */
	uint64_t lse;             /* input: f32 [rows], fg_cross_entropy's */
	uint64_t dloss;           /* input: f32 [rows], the gradient of each
				   * row's loss (a mean's 1 / count folded
				   * in) */
	fg_tensor dlogits;        /* output: logits' shape and dtype */
	fg_dtype dtype;           /* of logits and dlogits */
} fg_cross_entropy_bwd_args;

/* dlogits = (exp(logits - lse) - onehot(target)) * dloss per row, by
 * cross_entropy_bwd.fa, validated as fg_cross_entropy (the same rules
 * and errors; lse and dloss required, dlogits not overlapping the
 * inputs). */
FG_API fg_status fg_cross_entropy_backward(fg_ctx *,
	const fg_cross_entropy_bwd_args *a, struct CUstream_st *stream);

/* ---------------------------------------------------------------- linear */

/* The activations of fg_linear's epilogue. */
typedef enum fg_activation {
	FG_ACT_NONE = 0,
	FG_ACT_GELU_TANH = 1,     /* 0.5 z (1 + tanh(sqrt(2/pi) (z + 0.044715
				   * z^3))): PyTorch's approximate="tanh" */
	FG_ACT_SILU = 2,          /* z / (1 + exp(-z)) */
} fg_activation;

/* nn.Linear with a fused epilogue (issue #26): out = act(alpha * x W^T +
 * bias) + residual, computed in f32 in that order (the product
 * accumulated in f32 by the tensor cores) and rounded once to dtype.  x
 * is [..., K], its outer dims flattened into M rows; weight is [N, K]
 * (nn.Linear's); bias [N]; residual and out [..., N] with x's outer dims;
 * all of dtype (16-bit), dense and row-major (strides all 0, or those of
 * a dense tensor).  out's, weight's and x's addresses are 16-byte aligned
 * and K and N multiples of 8 (TMA's 16-byte rows).  out may not overlap
 * an input.  A tensor's rank 0 with all dims 0 means the shape it must
 * have, but for weight's, which gives N. */
typedef struct fg_linear_args {
	fg_tensor x;              /* input [..., K]: rank 1 to FG_MAX_RANK */
	fg_tensor weight;         /* input [N, K], rank 2 */
	fg_tensor bias;           /* [N]; ptr 0: none */
	fg_tensor residual;       /* [..., N], like out; ptr 0: none */
	fg_tensor out;            /* output [..., N]: x's outer dims, N */
	fg_dtype dtype;           /* FG_DTYPE_BF16 or _F16 */
	double alpha;             /* scale of x W^T before the bias; 1: none.
				   * Finite, fitting f32 */
	fg_activation act;
} fg_linear_args;

/* Validate *a, compile schedules/gemm_ws_sm90.fa (sm_100a:
 * gemm_ws_sm100.fa) with the epilogue's switches on first use (kept in
 * ctx), and launch it asynchronously on stream (not the legacy default
 * stream).  M or N 0 launches nothing; K 0 is FG_ERR_UNSUPPORTED (the
 * GEMM needs K >= 8), as is FG_DTYPE_F32. */
FG_API fg_status fg_linear(fg_ctx *, const fg_linear_args *a,
	struct CUstream_st *stream);

#ifdef __cplusplus
}
#endif

#endif
