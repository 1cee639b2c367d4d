/* front.h: the front end -- source text to a checked Kernel.  The
 * grammar (grammar/parser.y, lexer.l) builds the AST; sema.c, decl.c,
 * scope.c, consteval.c and budget.c check it and fold constants into a
 * Kernel of declarations and partition instances.  Takes ctx->src and
 * gives ctx->kern; includes only base/. */
#ifndef FRONT_H
#define FRONT_H

#include "base/base.h"

/* ---------------------------------------------------------------- ast.c
 * The AST is one generic node type; each kind documents which fields it
 * uses.  Nodes live in ctx->perm and carry the Span of their source text.
 *
 *   N_INT       ival                      N_FLOAT   fval
 *   N_BOOL      ival (0/1)                N_NAME    name
 *   N_UNARY     op ('-' '!' '~'), a       N_BINARY  op (T_* or char), a, b
 *   N_TERNARY   a ? b : c                 N_CALL    a callee, kids args
 *   N_NAMEDARG  name = a (call argument)  N_INDEX   a base, kids indices
 *   N_FIELD     a.name                    N_TUPLE   kids
 *   N_RANGE     a .. b [step c]           N_ARROW   a -> b
 *   N_TILES     the word 'tiles' in 'for t in tiles'
 *   N_TYPE      name element type; kids: one N_TUPLE per [...] group
 *   N_ATTR      name [= a]   (a is NULL for a flag such as 'packed')
 *   N_DECL      op = DK_*, name/nspan, a = array size, c = family index
 *               (N_NAME, with a = its bound), b = type, d = '= init',
 *               attrs, kids = body statements (partition); a 'mod':
 *               kids = its parameters (N_NAME), d = its body
 *   N_SIF       static if a { b } else c   (c: N_BLOCK, N_SIF or NULL)
 *   N_SASSERT   static assert a;
 *   N_SFOR      static for name in a { b }
 *   N_IF        if a { b } else c          N_FOR  for name in a { b }
 *   N_LET       let name [: b] = a         N_VAR  var name [: b] [= a]
 *   N_REG       reg name : b attrs        (a register tile)
 *   N_ASSIGN    a op= b  (op '=' or the binary operator)
 *   N_ELECT     elect [warp] { a }  (op 0: one thread, 1: one per warp)
 *   N_MMA       mma a (= | +=) b @ c attrs  (op '=' or '+')
 *   N_OP        an operation statement: op = OP_*, kids args, attrs
 *   N_EXPRSTMT  a ;                        N_BLOCK  kids
 *   N_MODULE    kids = top-level items
 */
typedef enum {
	N_INT = 1, N_FLOAT, N_BOOL, N_NAME, N_UNARY, N_BINARY, N_TERNARY,
	N_CALL, N_NAMEDARG, N_INDEX, N_FIELD, N_TUPLE, N_RANGE, N_ARROW,
	N_TILES, N_TYPE, N_ATTR, N_DECL, N_SIF, N_SFOR, N_IF, N_FOR, N_LET,
	N_VAR, N_REG, N_ASSIGN, N_ELECT, N_MMA, N_OP, N_EXPRSTMT, N_BLOCK,
	N_MODULE, N_SASSERT, NNODE
} NodeKind;

/* Binary operators spelled with two characters. */
enum {
	B_EQ = 256, B_NE, B_LE, B_GE, B_SHL, B_SHR, B_ANDAND, B_OROR
};

/* Declaration keywords. */
typedef enum {
	DK_KERNEL = 1, DK_CONST, DK_PARAM, DK_GLOBAL, DK_TMA, DK_CTA,
	DK_TILES, DK_LAYOUT, DK_SMEM, DK_TMEM, DK_MBAR, DK_NBAR,
	DK_PARTITION, DK_VERIFY, DK_MOD, NDK
} DeclKind;

/* Operation statements: 'wait full[s], ph;' and friends. */
#define OPS(X) \
	X(WAIT, "wait") X(ARRIVE, "arrive") X(EXPECT, "expect") \
	X(TMA_LOAD, "tma_load") X(TMA_STORE, "tma_store") \
	X(TMA_COMMIT, "tma_commit") X(TMA_WAIT, "tma_wait") \
	X(FENCE, "fence") X(BSYNC, "bsync") X(BARRIVE, "barrive") \
	X(MMA_COMMIT, "mma_commit") X(MMA_WAIT, "mma_wait") \
	X(COMMIT, "commit") X(TMEM_ALLOC, "tmem_alloc") \
	X(TMEM_FREE, "tmem_free") X(TLOAD, "tmem_load") \
	X(TSTORE, "tmem_store") X(SSTORE, "smem_store") \
	X(SLOAD, "smem_load") \
	X(STORE, "store") X(GLOAD, "global_load") X(EXIT, "exit") \
	X(CLUSTER_SYNC, "cluster_sync") \
	X(GRID_DEP_WAIT, "grid_dep_wait") X(GRID_DEP_LAUNCH, "grid_dep_launch") \
	X(CP_ASYNC, "cp_async") X(CP_COMMIT, "cp_async_commit") \
	X(CP_WAIT, "cp_async_wait") X(BULK_COPY, "bulk_copy") \
	X(SEM_WAIT, "sem_wait") X(SEM_ADD, "sem_add")
typedef enum {
	OP_NONE,
#define X(e, s) OP_##e,
	OPS(X)
#undef X
	NOP
} OpKind;
extern const char *const op_names[NOP];
extern const char *const decl_names[NDK];

typedef struct Node Node;
typedef struct NodeList {
	Node **v;
	int n, cap;
} NodeList;

struct Node {
	uint16_t kind;      /* NodeKind */
	uint16_t op;        /* operator, DeclKind or OpKind */
	Span span;          /* the whole construct */
	Span nspan;         /* the name, where there is one */
	const char *name;   /* interned */
	int64_t ival;
	double fval;
	Node *a, *b, *c, *d;
	NodeList kids;
	NodeList attrs;
};

Node *node_new(Ctx *, NodeKind, Span);
void nodelist_push(Ctx *, NodeList *, Node *);
Span span_join(Span, Span);
const char *node_kind_name(int kind);
void ast_dump(const Node *, Buf *, int indent);   /* for tests */
bool ast_check_depth(Ctx *, const Node *);        /* depth <= MAXTREE */
#define MAXTREE 1000

/* ---------------------------------------------------------------- parse.h
 * The hand-written boundary around the generated parser (jq's jq_parse):
 * parses one source of ctx (ctx->src, or one of ctx->more) into an
 * N_MODULE, reporting syntax errors as diagnostics.  Returns NULL only
 * when nothing could be parsed. */
Node *parse_src(Ctx *, const Src *);
#define MAXDEPTH 256   /* bracket nesting limit */

/* ---------------------------------------------------------------- types
 * Scalar and element types, and compile-time values. */
typedef enum {
	TY_ERR = 0,  /* the type of an erroneous expression: no cascades */
	TY_VOID, TY_BOOL, TY_I32, TY_U32, TY_I64, TY_U64, TY_F32, TY_F16,
	TY_BF16, TY_F64, TY_DTYPE,   /* the type of 'bf16' used as a value */
	TY_WORD,     /* an enum word such as 'K' or 'persistent' */
	TY_TUPLE, TY_LAYOUT, TY_TILE, /* 't' in 'for t in tiles' */
	TY_FRAG,     /* a register tile; see Frag */
	TY_RES,      /* a declared resource (buffer, barrier, view) */
	NTY
} Ty;

const char *ty_name(Ty);
int ty_bytes(Ty);          /* element size, 0 for non-data types */
bool ty_isint(Ty);
bool ty_isfloat(Ty);
Ty ty_lookup(const char *); /* "bf16" -> TY_BF16, or TY_ERR */

typedef struct Layout Layout;
typedef struct Val {
	Ty ty;           /* TY_ERR: unknown (an error was reported) */
	int64_t i;       /* ints, bools, dtype (a Ty), index of a word */
	double f;
	const char *word;
	const Layout *lay;
	struct Val *elts; /* TY_TUPLE */
	int n;
} Val;

/* ---------------------------------------------------------------- sema.c
 * The checked kernel: declarations with constant attributes folded, and
 * partition instances.  Runtime expressions stay as AST until sirgen. */
typedef enum {
	LK_SMEM = 1,     /* smem(swizzle=, major=) */
	LK_WGMMA_ACC,    /* sm_90a accumulator fragment, m64nN */
	LK_WGMMA_A,      /* sm_90a 16-bit A-operand fragment */
	LK_TMEM_ROWS,    /* sm_100a tcgen05.ld 32x32b: one row per thread */
	LK_ROWS,         /* one value per row of a parent layout */
	LK_TMEM,         /* tensor-memory region: lane = row */
	LK_BLOCKED,      /* blocked(m, n, threads, tpr, vec): any target */
	LK_COLS,         /* one value per column of a blocked layout */
} LayoutKind;

struct Layout {
	LayoutKind kind;
	const char *name;     /* declared name, or NULL when inline */
	int swizzle;          /* LK_SMEM: 0, 32, 64, 128 (bytes) */
	bool mn_major;        /* LK_SMEM: MN-major, else K-major */
	int m, n;             /* fragment shape */
	int threads;          /* LK_BLOCKED: threads holding the tile */
	int tpr;              /* LK_BLOCKED: threads per row */
	int vec;              /* LK_BLOCKED: consecutive elements per chunk */
	const Layout *parent; /* LK_ROWS, LK_COLS */
	Span span;
};

typedef enum {
	R_GLOBAL = 1, R_TMA, R_SMEM, R_TMEM, R_MBAR, R_NBAR, R_PARAM, R_CONST,
	R_LAYOUT, R_PART, R_MOD
} ResKind;

#define MAXVFY 64      /* values of one global's content in 'verify' */

typedef struct Res Res;
struct Res {
	ResKind kind;
	const char *name;
	Span span;           /* the declaration */
	Span nspan;
	const Node *decl;    /* MOD: the one in effect, maybe a --mod file's */
	int index;           /* position among resources of its kind */
	int count;           /* array length, 1 when not an array */
	bool is_array;
	Ty ety;              /* element type / param type */
	int rank;
	int64_t shape[5];    /* SMEM/TMEM/TMA box (5-D): compile-time shape */
	const Node *dims[5]; /* GLOBAL: runtime dims (AST) */
	int stages;          /* SMEM: ring depth (1 without a stage dim) */
	bool staged;         /* SMEM: declared with a stage dim ('[1]' too),
			      * so its uses take an index */
	const Layout *lay;   /* SMEM/TMEM layout */
	Res *alias;          /* SMEM/TMEM: the region this one overlays */
	Res *of;             /* TMA: its global tensor */
	Res *grad;           /* GLOBAL: 'grad=DG', the f32 global of its
			      * gradient (dscatter adds into), or NULL */
	int swizzle;         /* TMA */
	bool oob_nan;        /* TMA: out-of-bounds fill is NaN, not zero */
	bool direct;         /* GLOBAL: read or written by ld/st (G[i],
			      * store, global_load, cp_async), which
			      * address it densely, or by its strides;
			      * set by sirgen */
	bool sem;            /* GLOBAL: counters of 'sem_wait' and
			      * 'sem_add', which nothing else may access;
			      * set by sirgen */
	bool cpasync;        /* GLOBAL: read by cp_async, in 16-byte chunks
			      * (its address and row strides must be
			      * 16-byte multiples); set by sirgen */
	bool strided;        /* GLOBAL: 'strided': its strides (elements,
			      * outermost first) are a hidden kernel
			      * argument, NAME_st, which ld/st address it
			      * by */
	bool remote;         /* MBAR: other CTAs of the cluster arrive on it
			      * ('arrive B cta=R' or multicast loads):
			      * waits acquire at cluster scope; sirgen */
	int64_t mcount;      /* MBAR arrival count */
	int64_t tx;          /* MBAR expected bytes per phase (0: none) */
	int64_t threads;     /* NBAR */
	int64_t col;         /* TMEM first column */
	int64_t ncols;       /* TMEM columns per element of the array */
	bool packed;         /* TMEM: 16-bit values two to a column */
	Val cval;            /* CONST */
	const Node *vfy;     /* GLOBAL: its contents in 'verify', a tuple of
			      * tuples of integers; PARAM: its values, an
			      * integer or a tuple of them; folded (N_INT
			      * nodes), or NULL */
	/* filled in by pass_layout */
	int64_t off;         /* smem byte offset (SMEM, MBAR) */
	int64_t bytes;       /* per stage (SMEM) */
	int bar_id;          /* NBAR: first hardware id */
	Res *next;           /* all resources in declaration order */
	Res *shadow;         /* scope.c: the binding this one hides */
};

typedef enum { ORD_SINGLE = 1, ORD_PERSISTENT, ORD_LPT } TileOrder;

typedef struct Part {
	const char *name;    /* 'wg' */
	int index;           /* family index, -1 when not a family */
	const char *ivar;    /* family variable name */
	Span span, nspan;
	const Node *decl;
	int warp_lo, warp_hi;/* inclusive */
	int regs;            /* setmaxnreg budget, 0 = none */
	struct SirPart *sir;
	struct Part *next;
} Part;

typedef struct Kernel {
	const char *name;
	Span span;
	TargetId target;
	int threads;
	int cluster[3];
	bool pair;           /* 'cta ... pair' (sm_100a): the cluster's CTAs
			      * work in pairs (ranks 2k, 2k + 1) on the
			      * tensor cores, every tcgen05 op cta_group::2 */
	int tmem_cols;       /* sm_100a allocation, 0 = none */
	const char *tmem_owner;
	int ntile_dims;
	const Node *tile_dims[3];
	const Node *tile_group;  /* 'group=G' of a persistent order, or NULL */
	TileOrder order;
	bool pdl;                /* has grid_dep_wait: launched with
				  * programmatic dependent launch */
	int per_sm;              /* 'per_sm=': CTAs of a persistent grid per
				  * SM, 0: as many as fit (occupancy) */
	Span tiles_span;
	Res *res, *res_last; /* every declared resource, in order */
	NameMap scope;       /* the same by name (scope.c) */
	int nres[R_MOD + 1];
	Part *parts, *parts_last;
	int nparts;
	const Node *verify;  /* 'verify P=(v, ...) ...': shape classes */
	int64_t smem_bytes;  /* after pass_layout */
	int maxnreg;         /* entry register cap when setmaxnreg is used */
	int wg_regs[8];      /* setmaxnreg budget per warpgroup, 0 = none */
} Kernel;

Kernel *sema_kernel(Ctx *, const Node *module);  /* + ctx->mods */
void sema_budgets(Ctx *, Kernel *);  /* budget.c */
const char *budget_pname(Ctx *, const Part *);  /* "p" or "p[i]" */
Res *kernel_find(const Kernel *, const char *name);
void kernel_suggest(const Kernel *, Suggest *, int kind);  /* 0: any */
void kernel_undeclared(Ctx *, const Kernel *, Span, const char *name,
	int kind);
void kernel_bind(Ctx *, Kernel *, Res *);  /* hides a binding of its name */
void kernel_unbind(Ctx *, Kernel *, Res *); /* shows the hidden one again */
bool const_eval(Ctx *, const Kernel *, const Node *, Val *out);

/* ---------------------------------------------------------------- mod.c
 * The built-in functions of expressions, by name: the calls sircall.c
 * lowers, which no 'mod' may be named like.  NULL-terminated. */
extern const char *const builtin_names[];
bool builtin_known(const char *name);
#define MAXMODPARAMS 16
bool const_binary(Ctx *, const Node *op, const Val *, const Val *, Val *);

#endif
