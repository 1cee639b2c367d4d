/* rt_front.h: the runtime's front ends (runtime/front/).
 *
 * Takes: runtime/jit (rt_jit.h) and the layers below it.  Gives:
 * fg_attention_forward and fg_attention_backward (backward.c) on the
 * shipped schedules and fg_attention_reference, the unfused baseline,
 * with their shared argument checks, and fg_rms_norm (norm.c).  Layer
 * above: runtime/api.c. */
#ifndef RT_FRONT_H
#define RT_FRONT_H

#include "rt_jit.h"

/* ---------------------------------------------------------------- attention.c
 * fg_attention_forward: argument checks, the schedule's variant for the
 * device, kernels cached per variant in the context. */
typedef struct Attn {
	int64_t st[4][4];     /* q, k, v, o strides, (batch, head, seq, dim) */
	double scale;         /* resolved: 1/sqrt(head_dim) when 0 */
	int64_t wl, wr;       /* the window's sides, 0 .. seq_k (attn_window) */
} Attn;

/* Check a for fn ("fg_attention_forward"); tma adds the fused kernel's
 * rules (head_dim 64 or 128, 16-byte alignment, strides of 16 bytes,
 * 32-bit LSE indexing). */
fg_status attn_check(fg_ctx *, const char *fn, const fg_attention_args *a,
	CUstream, bool tma, Attn *out);
/* The shipped schedules built into libfagen: the .fa files of
 * schedules/, written out as C by tools/embed-schedules.py when the
 * library is built.  The last row has a NULL name. */
typedef struct Shipped {
	const char *name;           /* the file name, "fa_fwd_sm90.fa" */
	const unsigned char *text;  /* its bytes, not NUL-terminated */
	size_t len;
} Shipped;
extern const Shipped attn_shipped[];

/* Where the shipped schedule file is: in the directory of
 * fg_options.schedule_dir, else of $FAGEN_SCHEDULE_DIR (path gets
 * DIR/file); else libfagen's built-in copy (*in gets its row, path
 * "<built-in>/file", the name its diagnostics use); else the installed
 * directory, else the source tree's.  *in is NULL unless the built-in
 * copy was taken.  FG_ERR_IO naming the places looked in. */
fg_status attn_schedule(fg_ctx *, const char *file, char *path, size_t n,
	const Shipped **in);
/* The kernel for a's variant on compute capability cc (90: sm_90a),
 * compiled on first use and kept in the context; FG_ERR_UNSUPPORTED for
 * an arch without a schedule. */
fg_status attn_variant(fg_ctx *, const char *fn, int cc,
	const fg_attention_args *a, fg_kernel **out);
/* The schedules' arguments for a checked problem: Z, H, G (query heads
 * per K/V head), SQ, SK, scale_log2, Q, K, V, O, LSE, then WL and WR
 * with a window, sc_in with a softcap, SINK with sinks and SLOPES with
 * ALiBi slopes (the variant's -D WINDOW, SOFTCAP, SINKS and ALIBI), then
 * varlen's; returns how many. */
enum { FLEX_NARGS = 16, ATTN_NARGS = 26 + FLEX_NARGS };
/* The query heads a forward packs into one tile's rows (1: none). */
int attn_pack(const fg_attention_args *a);
int attn_bind(const fg_attention_args *a, const Attn *,
	fg_arg args[ATTN_NARGS]);
/* The window's sides as the kernels take them: keys left (wl) and right
 * (wr) of the bottom-right diagonal, each clamped to 0 .. seq_k (seq_k
 * for unbounded, -1, or no window); a causal window has wr = 0. */
void attn_window(const fg_attention_args *a, int64_t *wl, int64_t *wr);
/* One tensor of a's problem (q_rows: q's extents, else k's) at ptr with
 * the caller's strides given (all 0: dense), checked and resolved into
 * st (batch, head, seq, dim). */
fg_status attn_tensor(fg_ctx *, const char *fn, const char *name,
	uint64_t ptr, const int64_t *given, bool q_rows,
	const fg_attention_args *a, bool tma, int64_t *st);
/* A shipped schedule's kernel for compute capability cc: file with -D D,
 * DT and CAUSAL, and WINDOW, SOFTCAP, SINKS, VARLEN, ALIBI=true as a asks
 * (plain: -D D and DT only), compiled on first use and kept in the
 * context; attn_variant picks the forward's file and calls it. */
fg_status attn_kernel(fg_ctx *, const char *fn, const char *file, int cc,
	const fg_attention_args *a, bool plain, fg_kernel **out);
int64_t attn_heads_k(const fg_attention_args *a);  /* heads_k, 0: heads */
bool attn_varlen(const fg_attention_args *a);  /* cu_seqlens given */
void attn_free(fg_ctx *);

/* ---------------------------------------------------------------- flex.c
 * Programmable attention's arguments: a mod file with score_mod and
 * mask_mod, its globals, and a block mask (issue #22). */
bool flex_any(const fg_attention_args *);  /* any of them given */
fg_status flex_check(fg_ctx *, const char *fn, const fg_attention_args *);
/* Append sm_scale (and set scale_log2 to log2(e)) with a score_mod, the
 * block mask's KNUM, KIDX, FNUM, FIDX, then mod_args, after attn_bind's
 * n arguments; returns the new count. */
int flex_bind(const fg_attention_args *, const Attn *, fg_arg *args, int n);

/* ---------------------------------------------------------------- backward.c
 * The context's stream-ordered scratch pool (cuMemAllocFromPoolAsync,
 * cuMemFreeAsync), made on first use; attn_free destroys it. */
fg_status attn_pool(fg_ctx *, const Driver *, CUmemoryPool *out);

/* ---------------------------------------------------------------- norm.c
 * fg_rms_norm on rmsnorm.fa (issue #26): argument checks, the
 * configuration for the row width and alignment, kernels cached per
 * configuration in the context. */
typedef struct NormCfg {
	fg_dtype dt;
	int n, vec, tpr, warps;  /* -D N (the layout's width), VEC, TPR,
				  * WARPS */
	bool weight, resid;      /* -D WEIGHT, RESID */
	bool whold;              /* -D WHOLD: W kept in registers */
} NormCfg;

typedef struct Norm {
	int64_t rows, n;     /* x's outer dims' product and its last dim */
	int esz;             /* bytes per element */
	int64_t chunk;       /* rows per launch: the kernel indexes a launch's
			      * elements in 32 bits */
	NormCfg cfg;         /* meaningful when rows * n > 0 */
} Norm;

enum { NORM_NARGS = 10 };

/* Check a for fn ("fg_rms_norm") and choose its configuration:
 * FG_ERR_INVALID naming the argument and the rule, FG_ERR_UNSUPPORTED for
 * rows too wide for one CTA; out->rows * out->n == 0 means nothing to
 * launch. */
fg_status norm_check(fg_ctx *, const char *fn, const fg_rmsnorm_args *a,
	CUstream, Norm *out);
/* rmsnorm.fa's kernel for cfg on compute capability cc (90: sm_90a, 100:
 * sm_100a), compiled on first use and kept in the context;
 * FG_ERR_UNSUPPORTED for another arch. */
fg_status norm_kernel(fg_ctx *, const char *fn, int cc, const NormCfg *cfg,
	fg_kernel **out);
/* The kernel's arguments for rows row0 .. row0 + m - 1 of a checked
 * problem, RSTD at rstd (a->rstd or scratch); returns how many. */
int norm_bind(const fg_rmsnorm_args *a, const Norm *, int64_t row0,
	int64_t m, uint64_t rstd, fg_arg args[NORM_NARGS]);
void norm_free(fg_ctx *);

/* ---------------------------------------------------------------- reference.c */
const char *ref_source(void);  /* the reference kernels' CUDA C */
void ref_free(fg_ctx *);

#endif
