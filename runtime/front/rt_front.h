/* rt_front.h: the runtime's front ends (runtime/front/).
 *
 * Takes: runtime/jit (rt_jit.h) and the layers below it.  Gives:
 * fg_attention_forward and fg_attention_backward (backward.c) on the
 * shipped schedules and fg_attention_reference, the unfused baseline,
 * with their shared argument checks, and the row kernels (rows.c):
 * fg_rms_norm, fg_rms_norm_backward, fg_layer_norm, fg_softmax,
 * fg_softmax_backward and fg_cross_entropy (norm.c), and fg_linear on
 * the shipped GEMM (linear.c), and fg_attention_decode on a KV cache
 * (decode.c, decode_run.c).  Layer above: runtime/api.c. */
#ifndef RT_FRONT_H
#define RT_FRONT_H

#include "rt_jit.h"

/* ---------------------------------------------------------------- attention.c
 * fg_attention_forward: argument checks, the schedule's variant for the
 * device, kernels cached per variant in the context. */
typedef struct Attn {
	int64_t st[4][4];     /* q, k, v, o strides, (batch, head, seq, dim) */
	double scale;         /* resolved: 1/sqrt(head_dim) when 0 */
	int64_t wl, wr;       /* the window's sides: 0 .. seq_k, 0 .. seq_q (attn_window) */
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
/* Compile the shipped schedule file with the nd -D definitions defs (and
 * the mod text mods, or NULL) for compute capability cc (100: sm_100a,
 * else the file's target) and create its kernel in *out; a compile
 * error names fn, the file and the definitions.  The fronts' variants
 * call it with c->attn_mu held. */
fg_status front_build(fg_ctx *, const char *fn, int cc, const char *file,
	const char *const *defs, int nd, const char *mods, fg_kernel **out);
/* The kernel of file with the -D list defs for cc, built on first use
 * and kept in the context (variants.c), into *out. */
fg_status front_kernel(fg_ctx *, const char *fn, int cc, const char *file,
	const char *const *defs, int nd, fg_kernel **out);
/* Frees front_kernel's kernels (fg_ctx_destroy). */
void front_free(fg_ctx *);
/* The kernel for a's variant on compute capability cc (90: sm_90a, 100:
 * sm_100a), compiled on first use and kept in the context, and (pack, if
 * not NULL) the query heads it packs into a tile's rows;
 * FG_ERR_UNSUPPORTED for an arch or problem without a schedule. */
fg_status attn_variant(fg_ctx *, const char *fn, int cc,
	const fg_attention_args *a, fg_kernel **out, int *pack);
/* The schedules' arguments for a checked problem: Z, H, G (query heads
 * per K/V head), SQ, SK, scale_log2, Q, K, V, O, LSE, then WL and WR
 * with a window, sc_in with a softcap, SINK with sinks and SLOPES with
 * ALiBi slopes (the variant's -D WINDOW, SOFTCAP, SINKS and ALIBI), then
 * varlen's; returns how many. */
enum { FLEX_NARGS = 16, ATTN_NARGS = 26 + FLEX_NARGS };
/* The query heads a forward on compute capability cc packs into one
 * tile's rows (1: none), for a schedule file that has -D PACK. */
int attn_pack(const fg_attention_args *a, int cc);
bool attn_packs(const char *file);
int attn_bind(const fg_attention_args *a, const Attn *, int pack,
	fg_arg args[ATTN_NARGS]);
/* The window's sides as the kernels take them: keys left (wl) and right
 * (wr) of the bottom-right diagonal, each clamped to 0 .. seq_k (seq_k
 * for unbounded, -1, or no window); a causal window has wr = 0. */
void attn_window(const fg_attention_args *a, int64_t *wl, int64_t *wr);
/* One tensor of a's problem (q_rows: q's extents, else k's; vd: V's
 * head dim, else Q's) at ptr with the caller's strides given (all 0:
 * dense), checked and resolved into st (batch, head, seq, dim). */
fg_status attn_tensor(fg_ctx *, const char *fn, const char *name,
	uint64_t ptr, const int64_t *given, bool q_rows, bool vd,
	const fg_attention_args *a, bool tma, int64_t *st);
/* V's and O's head dim: head_dim_v, or head_dim when 0. */
int64_t attn_dv(const fg_attention_args *a);
/* Whether the forward runs fa_fwd_sm90.fa's causal grid a CTA a tile
 * (-D PERSIST=false) for this call on compute capability cc, with the
 * schedule file and the packing chosen. */
bool attn_single(const fg_attention_args *a, int cc, const char *file,
	int pack);
/* Whether it runs fa_fwd_sm90.fa with three consumer warpgroups (-D
 * NC=3): head dim 64, long and without a mask or feature. */
bool attn_nc3(const fg_attention_args *a, int cc, const char *file,
	int pack);
/* A shipped schedule's kernel for compute capability cc: file with -D D,
 * DT and CAUSAL, and WINDOW, SOFTCAP, SINKS, VARLEN, ALIBI=true as a asks
 * (how: 0, or AK_ flags), compiled on first use and kept in the context
 * per variant, the flags included; attn_variant picks the forward's
 * file and calls it. */
enum {
	AK_PLAIN = 1,           /* -D D and DT only (the backward's pre and
				 * post kernels) */
	AK_DETERMINISTIC = 2,   /* and -D DETERMINISTIC=true (the
				 * backward's main kernel: its DQSEM) */
};
fg_status attn_kernel(fg_ctx *, const char *fn, const char *file, int cc,
	const fg_attention_args *a, unsigned how, fg_kernel **out);
int64_t attn_heads_k(const fg_attention_args *a);  /* heads_k, 0: heads */
bool attn_varlen(const fg_attention_args *a);  /* cu_seqlens given */
void attn_free(fg_ctx *);

/* ---------------------------------------------------------------- flex.c
 * Programmable attention's arguments: a mod file with score_mod and
 * mask_mod, its globals, and a block mask (issue #22). */
bool flex_any(const fg_attention_args *);  /* any of them given */
fg_status flex_check(fg_ctx *, const char *fn, const fg_attention_args *);
/* Append sm_scale (and set scale_log2 to log2(e)) with a score_mod, the
 * block mask's LZ, LH, KNUM, KIDX, FNUM, FIDX, then mod_args, after
 * attn_bind's n arguments; returns the new count. */
int flex_bind(const fg_attention_args *, const Attn *, fg_arg *args, int n);

/* ---------------------------------------------------------------- backward.c
 * The context's stream-ordered scratch pool (cuMemAllocFromPoolAsync,
 * cuMemFreeAsync), made on first use; attn_free destroys it. */
fg_status attn_pool(fg_ctx *, const Driver *, CUmemoryPool *out);

/* ---------------------------------------------------------------- rows.c
 * The row kernels (issue #26): rmsnorm.fa, rmsnorm_bwd.fa, layernorm.fa,
 * softmax.fa and cross_entropy.fa take dense [rows, n] tensors a row per
 * TPR threads, and share their argument checks, the configuration for
 * the row width and alignment, kernels cached per configuration in the
 * context, binding and launches.  norm.c's public calls describe their
 * arguments as a RowArgs. */
typedef enum RowKind {
	ROW_RMS,          /* fg_rms_norm: rmsnorm.fa */
	ROW_RMS_BWD,      /* fg_rms_norm_backward: rmsnorm_bwd.fa, a row a
			   * CTA, dW in partial sums */
	ROW_LAYER,        /* fg_layer_norm: layernorm.fa */
	ROW_SOFTMAX,      /* fg_softmax: softmax.fa */
	ROW_SOFTMAX_BWD,  /* fg_softmax_backward: softmax.fa -D BWD=true */
	ROW_XENT,         /* fg_cross_entropy: cross_entropy.fa, a row in
			   * chunks of N columns */
	ROW_XENT_BWD,     /* fg_cross_entropy_backward: cross_entropy_bwd
			   * .fa, as cross_entropy.fa */
	NROWKIND
} RowKind;

/* The schedules' switches, each a -D NAME=true|false. */
enum {
	RF_WEIGHT = 1,    /* the tensors that set a bit are given */
	RF_BIAS = 2,
	RF_RESID = 4,
	RF_WHOLD = 8,     /* weight and bias kept in registers across rows */
	RF_BWD = 16,      /* softmax's backward */
};

/* The shape a tensor of a row problem must have. */
typedef enum RowShape {
	RS_X,             /* t[0]'s, [..., n] */
	RS_N,             /* [n] (weight, bias) */
	RS_OUTER,         /* t[0]'s outer dims, [...]: a value per row
			   * (cross-entropy's target) */
} RowShape;

/* A tensor of a row problem: of the problem's shape, [n] or a value per
 * row. */
typedef struct RowTensor {
	const char *name;      /* the argument's, "residual_out" */
	const char *glob;      /* the schedule's global, "XO" */
	const fg_tensor *t;
	bool out;              /* written by the kernel */
	RowShape shape;
	int esz;               /* bytes per element: 0, dtype's; else an
				* element type of its own (4: the target's
				* int32), never read in VEC accesses */
	unsigned flag;         /* 0: required; else optional, and this RF_
				* bit is on when it is given.  Tensors of
				* one bit come together */
} RowTensor;

/* An f32 [rows] output, a norm's rstd or mean, cross-entropy's loss and
 * lse; or an input, the backward's rstd. */
typedef struct RowStat {
	const char *name, *glob;
	uint64_t ptr;          /* 0: not wanted (the kernel writes scratch) */
	bool required;         /* 0 is an error (cross-entropy's loss, the
				* backward's rstd) */
	bool in;               /* read, not written (then required) */
} RowStat;

/* Partial sums of an f32 [n] result, a row of f32 [rows, n] per CTA
 * (RMSNorm's backward's dW, the global DWP, its rows the param P).  A
 * launch's CTAs write its rows in turn, CTA b its row b (the launches
 * of a problem one after the other); rows past them are zeroed, so the
 * caller adds up all of them. */
typedef struct RowPart {
	const char *name, *glob;   /* "dw_partial", "DWP" */
	const char *param;         /* "P", the global's rows */
	const char *rows_name;     /* "dw_partial_rows" */
	uint64_t ptr;              /* 0: not wanted (then scratch) */
	int64_t rows;              /* given: at least the CTAs' count */
	unsigned flag;             /* written when this RF_ bit is on; given
				    * only then */
} RowPart;

enum {
	ROW_MAXT = 6, ROW_MAXSTAT = 2,
	/* M, NC, inv_n, eps or P, the tensors, the stats, the partials */
	ROW_NARGS = 4 + ROW_MAXT + ROW_MAXSTAT + 1,
};

typedef struct RowArgs {
	RowKind kind;
	fg_dtype dtype;
	double eps;                 /* the norms' */
	int nt, nstat;
	RowTensor t[ROW_MAXT];      /* t[0]: the input that gives the shape */
	RowStat stat[ROW_MAXSTAT];
	RowPart part;               /* glob NULL: none */
} RowArgs;

typedef struct RowCfg {
	RowKind kind;
	fg_dtype dt;
	int n, vec, tpr, warps;  /* -D N (the layout's width), VEC, TPR,
				  * WARPS */
	int cl;                  /* -D CL: CTAs of a cluster sharing a row,
				  * each N of its columns (1: none) */
	int st;                  /* -D WS=true -D ST: the warp-specialized
				  * form's stages (0: not it) */
	unsigned flags;          /* the RF_ switches on */
} RowCfg;

typedef struct Rows {
	int64_t rows, n;     /* t[0]'s outer dims' product and its last dim */
	int esz;             /* bytes per element of dtype */
	int64_t chunk;       /* rows per launch: the kernel indexes a launch's
			      * elements in 32 bits */
	RowCfg cfg;          /* meaningful when rows * n > 0 */
} Rows;

/* Check a for fn ("fg_rms_norm") and choose its configuration:
 * FG_ERR_INVALID naming the argument and the rule, FG_ERR_UNSUPPORTED for
 * rows too wide for one CTA (the backward: for its registers;
 * cross-entropy: for 32-bit indices); out->rows * out->n == 0 means
 * nothing to launch. */
fg_status rows_check(fg_ctx *, const char *fn, const RowArgs *a, CUstream,
	Rows *out);
/* cfg's kernel on compute capability cc (90: sm_90a, 100: sm_100a),
 * compiled on first use and kept in the context, known by its schedule
 * and its whole -D list; FG_ERR_UNSUPPORTED for another arch. */
fg_status rows_kernel(fg_ctx *, const char *fn, int cc, const RowCfg *cfg,
	fg_kernel **out);
/* One launch of a checked problem. */
typedef struct RowLaunch {
	int64_t row0, m;     /* its rows, row0 .. row0 + m - 1 */
	uint64_t scratch;    /* the stats not wanted, in turn (rows f32
			      * each), then, 16-byte aligned, the partials
			      * not wanted */
	int64_t part0;       /* the partials: its CTAs write rows part0 .. */
	int64_t parts;       /* part0 + parts - 1, parts its CTAs */
} RowLaunch;

/* The kernel's arguments for launch l of a checked problem; returns how
 * many. */
int rows_bind(const RowArgs *a, const Rows *, const RowLaunch *l,
	fg_arg args[ROW_NARGS]);
/* Check a, compile its kernel on first use and launch it on the stream,
 * as fg_rms_norm and the others do; a NULL a is "args is NULL". */
fg_status rows_run(fg_ctx *, const char *fn, const RowArgs *a, CUstream);
/* The rows of partials a's launches write on the context's device, the
 * CTAs of its launches (0 without partials or for an empty problem),
 * into *out: a checked as rows_run checks it, a->part not looked at. */
fg_status rows_parts(fg_ctx *, const char *fn, const RowArgs *a,
	int64_t *out);

/* ---------------------------------------------------------------- norm.c
 * fg_rms_norm, fg_rms_norm_backward, fg_layer_norm, fg_softmax,
 * fg_softmax_backward and fg_cross_entropy: each public struct described
 * as a RowArgs (into *out, which is returned). */
const RowArgs *norm_rms(const fg_rmsnorm_args *, RowArgs *out);
const RowArgs *norm_rms_bwd(const fg_rmsnorm_bwd_args *, RowArgs *out);
const RowArgs *norm_layer(const fg_layernorm_args *, RowArgs *out);
const RowArgs *norm_softmax(const fg_softmax_args *, RowArgs *out);
const RowArgs *norm_softmax_bwd(const fg_softmax_bwd_args *, RowArgs *out);
const RowArgs *norm_xent(const fg_cross_entropy_args *, RowArgs *out);
const RowArgs *norm_xent_bwd(const fg_cross_entropy_bwd_args *,
	RowArgs *out);

/* ---------------------------------------------------------------- linear.c
 * fg_linear (issue #26): x W^T on gemm_ws_sm90.fa (sm_100a:
 * gemm_ws_sm100.fa, the same interface) with its fused epilogue. */

/* A variant: the schedule's -D switches. */
typedef struct LinCfg {
	fg_dtype dt;           /* -D DT */
	bool scale;            /* -D SCALE: alpha != 1 */
	bool bias, resid;      /* -D BIAS, RESID: those tensors are given */
	int act;               /* -D ACT, an fg_activation */
} LinCfg;

typedef struct Linear {
	int64_t m, n, k;       /* x's rows (its outer dims' product), weight's
				* rows, x's last dim */
	int64_t chunk;         /* rows per launch: the tile count, M and R's
				* 32-bit element indices fit */
	LinCfg cfg;
} Linear;

enum { LIN_NARGS = 9 };    /* M, N, K, A, B, C, alpha, BV, R */

/* Check a for fg_linear and choose its variant: FG_ERR_INVALID naming
 * the argument and the rule, FG_ERR_UNSUPPORTED for FG_DTYPE_F32 and for
 * K 0; out->m * out->n == 0 means nothing to launch. */
fg_status linear_check(fg_ctx *, const fg_linear_args *a, CUstream,
	Linear *out);
/* cfg's kernel on compute capability cc (90: gemm_ws_sm90.fa, 100:
 * gemm_ws_sm100.fa), compiled on first use and kept in the context;
 * FG_ERR_UNSUPPORTED for another arch. */
fg_status linear_kernel(fg_ctx *, int cc, const LinCfg *cfg,
	fg_kernel **out);
/* The kernel's arguments for rows row0 .. row0 + m - 1 of a checked
 * problem (one launch); returns how many. */
int linear_bind(const fg_linear_args *a, const Linear *, int64_t row0,
	int64_t m, fg_arg args[LIN_NARGS]);

/* ---------------------------------------------------------------- decode.c
 * fg_attention_decode (issue #16): kv_append.fa appends new keys and
 * values to a KV cache, fa_decode_sm90.fa attends over it in splits and
 * fa_combine.fa merges them.  decode.c checks the arguments and plans
 * the splits and the workspace; decode_run.c compiles, binds and
 * launches. */

/* The three schedules. */
typedef enum DecKind { DEC_ATTN, DEC_COMBINE, DEC_APPEND } DecKind;

/* A variant: the schedule's -D consts (those its kind has; the others
 * 0). */
typedef struct DecCfg {
	DecKind kind;
	fg_dtype dt;           /* -D DT */
	int d;                 /* -D D: the head dim */
	int ps;                /* -D PS: the page size; 0 a contiguous cache */
	int pack, nw;          /* -D PACK (query heads a tile), NW */
	bool causal, window, softcap; /* -D CAUSAL, WINDOW, SOFTCAP */
	bool seqlens, split;   /* -D SEQLENS (cache_seqlens given), SPLIT */
} DecCfg;

typedef struct Decode {
	DecCfg cfg;            /* fa_decode_sm90.fa's variant */
	int64_t hk, g;         /* K/V heads; query heads per K/V head */
	int64_t cap;           /* keys a sequence's cache holds: the SKC
				* param (max_pages * page_size paged) */
	int64_t bn;            /* keys a block: 128, 64 at head dim 256 */
	int64_t tiles;         /* the decode's tiles a split */
	int64_t st[3][4];      /* q, k_cache, v_cache strides (resolved) */
	double scale;          /* resolved: 1/sqrt(head_dim) when 0 */
	int64_t wl, wr;        /* the window's sides, 0 .. cap */
	int64_t chunk;         /* kv_append.fa's sequences a launch */
	int ns;                /* splits; 0 until decode_plan */
	size_t op, lsep, lse;  /* the workspace: offsets of the partial O
				* and LSE (ns > 1) and of the LSE (a->lse
				* 0) */
	size_t bytes;          /* its size (0: none needed) */
} Decode;

enum {
	DEC_NARGS = 20,        /* fa_decode_sm90.fa's arguments, at most */
	DEC_MAXSPLITS = 256,   /* num_splits' bound */
};

/* Check a for fg_attention_decode, all but the stream and the
 * workspace, and choose the variant: FG_ERR_INVALID naming the argument
 * and the rule. */
fg_status decode_check(fg_ctx *, const fg_decode_args *a, Decode *out);
/* FlashAttention's num_splits_heuristic: the splits of tiles tiles over
 * nblocks key blocks on nsm SMs (docs/API.md). */
int decode_splits(int64_t tiles, int64_t nblocks, int nsm);
/* The splits of a checked problem (a->num_splits, else the heuristic on
 * nsm SMs) and the workspace they need; FG_ERR_INVALID when the
 * partial results a->num_splits asks for overflow the kernels' 32-bit
 * indexing. */
/* FG_ERR_INVALID with "fg_attention_decode: " and the message. */
fg_status decode_bad(fg_ctx *, const char *fmt, ...) FMT(2, 3);
void decode_retile(const fg_decode_args *a, Decode *t, int cc);
fg_status decode_plan(fg_ctx *, const fg_decode_args *a, int nsm,
	Decode *t);
/* cfg's kernel on compute capability cc (90 only), compiled on first
 * use and kept in the context; FG_ERR_UNSUPPORTED for another arch. */
fg_status decode_kernel(fg_ctx *, int cc, const DecCfg *cfg,
	fg_kernel **out);
/* The arguments of a planned problem's launches, ws the workspace's
 * address; each returns how many.  decode_append_bind: sequences z0 ..
 * z0 + nz - 1 (a launch takes t->chunk at most). */
int decode_bind(const fg_decode_args *a, const Decode *t, uint64_t ws,
	fg_arg args[DEC_NARGS]);
int decode_combine_bind(const fg_decode_args *a, const Decode *t,
	uint64_t ws, fg_arg args[DEC_NARGS]);
int decode_append_bind(const fg_decode_args *a, const Decode *t,
	int64_t z0, int64_t nz, fg_arg args[DEC_NARGS]);
/* validate's checks of the tables as read on the host (len: NULL
 * without cache_seqlens, pt without page_table): each length 0 ..
 * cap - seq_new, and the page numbers a sequence's keys use 0 ..
 * num_pages - 1; FG_ERR_INVALID naming the first entry that is not. */
fg_status decode_tables(fg_ctx *, const fg_decode_args *a, const Decode *t,
	const int32_t *len, const int32_t *pt);
/* The variant of kind for a planned problem: t->cfg (DEC_ATTN), or
 * fa_combine.fa's (D, DT) or kv_append.fa's (D, DT, PS). */
DecCfg decode_cfg(const Decode *t, DecKind kind);

/* ---------------------------------------------------------------- reference.c */
const char *ref_source(void);  /* the reference kernels' CUDA C */
void ref_free(fg_ctx *);

#endif
