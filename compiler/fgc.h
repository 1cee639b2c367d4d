/* fgc.h: the compiler's one internal header, sectioned by module (QBE's
 * all.h).  Nothing here is public; include/fagen.h is the public API. */
#ifndef FGC_H
#define FGC_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdnoreturn.h>

#define FMT(a, b) __attribute__((format(printf, a, b)))
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define FAGEN_VERSION "0.1.0"  /* keep equal to meson.build's version */

typedef struct Ctx Ctx;

/* ---------------------------------------------------------------- arena.c
 * Bump allocation in chunks taken from a Lua-style allocator.  Memory is
 * zeroed and max_align_t aligned; an allocation never returns NULL: when the
 * allocator fails the arena longjmps to *oom (the only setjmp in the code
 * base sits in the public entry point). */
typedef void *(*AllocFn)(void *ud, void *p, size_t osize, size_t nsize);

typedef struct Chunk Chunk;
typedef struct Arena {
	AllocFn alloc;
	void *ud;
	jmp_buf *oom;   /* where to jump on allocation failure */
	Chunk *head;    /* newest chunk first */
	size_t total;   /* bytes requested from alloc, for tests */
} Arena;

void arena_init(Arena *, AllocFn, void *ud, jmp_buf *oom);
void *arena_alloc(Arena *, size_t);
void *arena_alloc_array(Arena *, size_t n, size_t size); /* checks n*size */
void *arena_realloc(Arena *, void *p, size_t osize, size_t nsize);
char *arena_strndup(Arena *, const char *, size_t);
void arena_reset(Arena *);  /* frees every chunk but the first, keeps it */
void arena_free(Arena *);   /* frees every chunk */
void *arena_default_alloc(void *ud, void *p, size_t osize, size_t nsize);
#define NEW(a, T) ((T *)arena_alloc((a), sizeof(T)))
#define NEWARR(a, T, n) ((T *)arena_alloc_array((a), (n), sizeof(T)))

/* ---------------------------------------------------------------- buf.c
 * A growable byte string in an arena; always NUL-terminated. */
typedef struct Buf {
	Arena *a;
	char *p;
	size_t len, cap;
} Buf;

void buf_init(Buf *, Arena *);
void buf_putc(Buf *, int);
void buf_puts(Buf *, const char *);
void buf_putn(Buf *, const char *, size_t);
void buf_printf(Buf *, const char *, ...) FMT(2, 3);
void buf_vprintf(Buf *, const char *, va_list);

/* ---------------------------------------------------------------- intern.c
 * Interned strings: equal names are equal pointers.  The table lives in
 * ctx->perm; iteration order is never used for output. */
typedef struct Intern Intern;
Intern *intern_new(Arena *);
const char *intern(Intern *, const char *s, size_t n);
const char *intern_cstr(Intern *, const char *s);

/* ---------------------------------------------------------------- diag.c
 * Span: byte offsets [lo, hi) into ctx->src.  Line and column are computed
 * only when printing, from a line table built once per file. */
typedef struct Span {
	uint32_t lo, hi;
} Span;

typedef struct Src {
	const char *name;   /* as given on the command line */
	const char *text;   /* not necessarily NUL-free */
	size_t len;
	uint32_t *lines;    /* byte offset of each line start */
	uint32_t nlines;
} Src;

typedef enum { D_ERROR, D_WARNING, D_NOTE } DiagKind;

typedef struct Diag Diag;
struct Diag {
	DiagKind kind;
	Span span;
	bool has_span;     /* false: message without a location */
	const char *wname; /* warning name, e.g. "unused-stage", or NULL */
	char *msg;
	Diag *next;
};

/* Warning control: -Wno-NAME, -Werror=NAME, -Werror. */
typedef struct WarnOpt {
	const char *name;
	int state;        /* 0 off, 1 on, 2 error */
	struct WarnOpt *next;
} WarnOpt;

void src_init(Ctx *, const char *name, const char *text, size_t len);
void src_linecol(const Src *, uint32_t off, uint32_t *line, uint32_t *col);
void diag_error(Ctx *, Span, const char *fmt, ...) FMT(3, 4);
void diag_warn(Ctx *, const char *wname, Span, const char *fmt, ...) FMT(4, 5);
void diag_note(Ctx *, Span, const char *fmt, ...) FMT(3, 4);
void diag_plain(Ctx *, DiagKind, const char *fmt, ...) FMT(3, 4);
void diag_set_warning(Ctx *, const char *name, int state); /* last wins */
void diag_render(const Ctx *, Buf *);  /* all diagnostics, GCC style */
noreturn void fg_bug_at(const char *file, int line, const char *fmt, ...)
	FMT(3, 4);
#define fg_bug(...) fg_bug_at(__FILE__, __LINE__, __VA_ARGS__)
#define MAXERRORS 20

/* ---------------------------------------------------------------- ctx
 * One compilation.  perm holds the AST, IR, interned strings and output
 * and dies with the compilation; scratch is reset after every pass. */
typedef struct Define {
	const char *name;   /* interned */
	const char *value;  /* text after '=' */
	bool used;
	struct Define *next;
} Define;

struct Ctx {
	Arena perm, scratch;
	jmp_buf *oom;
	Intern *strs;
	Src src;
	Diag *diags, *dlast;
	bool drop_notes;    /* the primary was suppressed: drop its notes */
	int nerr, nwarn;
	bool too_many;      /* MAXERRORS reached: later errors dropped */
	WarnOpt *wopts;
	bool werror;        /* -Werror: every warning is an error */
	Define *defines;    /* -D NAME=VALUE, in command-line order */
	const struct Target *target;
	int arch;           /* forced target (--arch), 0 = from the schedule */
	bool verify_each;   /* run sir_verify after every P_VERIFY pass */
	bool no_verify;     /* --no-verify: skip the schedule verifier */
	bool debug_hangs;   /* --debug-hangs: bounded waits that report */
	const char *dump_after; /* --dump-after=PASS */
	Buf *dump;          /* where --dump-after writes */
	struct Node *mod;   /* AST after parsing */
	struct Kernel *kern;/* checked kernel after sema */
	struct SirMod *sir; /* schedule IR */
	Buf out;            /* emitted text (PTX, IR, dot) */
};

void ctx_init(Ctx *, AllocFn, void *ud, jmp_buf *oom);
void ctx_free(Ctx *);

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
 *               attrs, kids = body statements (partition) 
 *   N_SIF       static if a { b } else c   (c: N_BLOCK, N_SIF or NULL)
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
	N_MODULE, NNODE
} NodeKind;

/* Binary operators spelled with two characters. */
enum {
	B_EQ = 256, B_NE, B_LE, B_GE, B_SHL, B_SHR, B_ANDAND, B_OROR
};

/* Declaration keywords. */
typedef enum {
	DK_KERNEL = 1, DK_CONST, DK_PARAM, DK_GLOBAL, DK_TMA, DK_CTA,
	DK_TILES, DK_LAYOUT, DK_SMEM, DK_TMEM, DK_MBAR, DK_NBAR,
	DK_PARTITION, DK_VERIFY, NDK
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
	X(STORE, "store") X(EXIT, "exit")
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
 * parses ctx->src into an N_MODULE, reporting syntax errors as
 * diagnostics.  Returns NULL only when nothing could be parsed. */
Node *parse_src(Ctx *);
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
typedef enum { TGT_NONE, TGT_SM90A, TGT_SM100A } TargetId;

typedef enum {
	LK_SMEM = 1,     /* smem(swizzle=, major=) */
	LK_WGMMA_ACC,    /* sm_90a accumulator fragment, m64nN */
	LK_WGMMA_A,      /* sm_90a 16-bit A-operand fragment */
	LK_TMEM_ROWS,    /* sm_100a tcgen05.ld 32x32b: one row per thread */
	LK_ROWS,         /* one value per row of a parent layout */
	LK_TMEM,         /* tensor-memory region: lane = row */
} LayoutKind;

struct Layout {
	LayoutKind kind;
	const char *name;     /* declared name, or NULL when inline */
	int swizzle;          /* LK_SMEM: 0, 32, 64, 128 (bytes) */
	bool mn_major;        /* LK_SMEM: MN-major, else K-major */
	int m, n;             /* fragment shape */
	const Layout *parent; /* LK_ROWS */
	Span span;
};

typedef enum {
	R_GLOBAL = 1, R_TMA, R_SMEM, R_TMEM, R_MBAR, R_NBAR, R_PARAM, R_CONST,
	R_LAYOUT, R_PART
} ResKind;

typedef struct Res Res;
struct Res {
	ResKind kind;
	const char *name;
	Span span;           /* the declaration */
	Span nspan;
	const Node *decl;
	int index;           /* position among resources of its kind */
	int count;           /* array length, 1 when not an array */
	bool is_array;
	Ty ety;              /* element type / param type */
	int rank;
	int64_t shape[4];    /* SMEM/TMEM/TMA box: compile-time shape */
	const Node *dims[5]; /* GLOBAL: runtime dims (AST) */
	int stages;          /* SMEM: ring depth (1 without a stage dim) */
	const Layout *lay;   /* SMEM/TMEM layout */
	Res *alias;          /* SMEM/TMEM: the region this one overlays */
	Res *of;             /* TMA: its global tensor */
	int swizzle;         /* TMA */
	bool oob_nan;        /* TMA: out-of-bounds fill is NaN, not zero */
	int64_t mcount;      /* MBAR arrival count */
	int64_t tx;          /* MBAR expected bytes per phase (0: none) */
	int64_t threads;     /* NBAR */
	int64_t col;         /* TMEM first column */
	int64_t ncols;       /* TMEM columns per element of the array */
	bool packed;         /* TMEM: 16-bit values two to a column */
	Val cval;            /* CONST */
	/* filled in by pass_layout */
	int64_t off;         /* smem byte offset (SMEM, MBAR) */
	int64_t bytes;       /* per stage (SMEM) */
	int bar_id;          /* NBAR: first hardware id */
	Res *next;           /* all resources in declaration order */
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
	int tmem_cols;       /* sm_100a allocation, 0 = none */
	const char *tmem_owner;
	int ntile_dims;
	const Node *tile_dims[3];
	const Node *tile_group;  /* 'group=G' of a persistent order, or NULL */
	TileOrder order;
	Span tiles_span;
	Res *res, *res_last; /* every declared resource, in order */
	int nres[R_PART + 1];
	Part *parts, *parts_last;
	int nparts;
	const Node *verify;  /* 'verify P=(v, ...) ...': shape classes */
	int64_t smem_bytes;  /* after pass_layout */
	int maxnreg;         /* entry register cap when setmaxnreg is used */
	int wg_regs[8];      /* setmaxnreg budget per warpgroup, 0 = none */
} Kernel;

Kernel *sema_kernel(Ctx *, const Node *module);
void sema_budgets(Ctx *, Kernel *);  /* budget.c */
const char *budget_pname(Ctx *, const Part *);  /* "p" or "p[i]" */
Res *kernel_find(const Kernel *, const char *name);
bool const_eval(Ctx *, const Kernel *, const Node *, Val *out);
bool const_binary(Ctx *, const Node *op, const Val *, const Val *, Val *);

/* ---------------------------------------------------------------- sir.c
 * The schedule IR: one structured program per partition instance.
 * Values are 32-bit handles into the partition's value table (0 = none).
 * Control flow stays structured (tile loop, for, if, elect) so that the
 * verifier can run the partitions as state machines. */
enum { E_PURE, E_SYNC, E_ASYNC, E_CTRL, E_MEM };
enum { T_SM90 = 1, T_SM100 = 2, T_ALL = 3 };

typedef enum {
#define SOP(name, nargs, eff, tgt) SOP_##name,
#include "sir_ops.h"
#undef SOP
	NSOP
} SirOp;

typedef struct SirOpInfo {
	const char *name;
	int nargs, eff, targets;
} SirOpInfo;
extern const SirOpInfo sir_ops[NSOP];

enum { SP_TID, SP_WARP, SP_LANE, SP_NWARPS, SP_NSM };  /* SOP_special */
enum {
	FENCE_ASYNC_SMEM, FENCE_MBAR_INIT, FENCE_TMEM_BEFORE,
	FENCE_TMEM_AFTER, FENCE_ACQ_REL, NFENCE
};
extern const char *const fence_names[NFENCE];

typedef uint32_t Ref;

typedef struct SirVal {
	Ty ty;              /* scalar type, or TY_FRAG, TY_TILE */
	const char *name;   /* source name, or NULL for temporaries */
	bool mut;           /* a 'var': assigned with mov */
	bool isconst;       /* defined by const_i/const_f */
	int64_t ci;
	double cf;
	Ty ety;             /* TY_FRAG: element type */
	const Layout *lay;  /* TY_FRAG: register layout */
	int m, n;           /* TY_FRAG: shape */
} SirVal;

typedef struct SirBlock SirBlock;
typedef struct SirIns {
	uint16_t op;        /* SirOp */
	Ref dst;
	Ref a[6];
	int na;
	int64_t imm, imm2;
	double fimm;
	Res *r[3];          /* resources: view/buffer/barrier/region */
	Ref ri[3];          /* their array or stage index (0: element 0) */
	bool trans[3];      /* mma: operand used transposed */
	int64_t roff[3];    /* mma: first row of the operand slice */
	Span span;
	SirBlock *body, *els;
} SirIns;

struct SirBlock {
	SirIns *v;
	int n, cap;
};

typedef struct SirPart {
	Part *part;
	SirVal *vals;       /* vals[0] is unused */
	uint32_t nvals, capvals;
	SirBlock body;
} SirPart;

typedef struct SirMod {
	Kernel *k;
	SirPart **parts;
	int nparts;
} SirMod;

Ref sir_val(Ctx *, SirPart *, Ty, const char *name);
SirIns *sir_push(Ctx *, SirBlock *, SirOp, Span);
SirBlock *sir_block(Ctx *);
void sir_print(const SirMod *, Buf *);
void sir_dot(Ctx *, const SirMod *, Buf *);   /* dot.c: --emit dot */
SirMod *sirgen(Ctx *, Kernel *);       /* sirgen.c: AST bodies -> SIR */
bool sir_verify(Ctx *, const SirMod *); /* structure and target rules */

/* ---------------------------------------------------------------- passes
 * Every pass has one signature; pass.c runs them from one table. */
typedef void PassFn(Ctx *, SirMod *);
PassFn pass_layout, pass_regs, pass_legalize, pass_verify;
bool pass_run_all(Ctx *, SirMod *);
bool pass_known(const char *name);  /* a --dump-after name */

/* ---------------------------------------------------------------- target
 * A target: capabilities, limits and the PTX emitter. */
typedef struct Target {
	TargetId id;
	const char *name;       /* "sm_90a" */
	const char *ptx_version;
	int smem_max;           /* bytes of dynamic shared memory per CTA */
	int tgt_bit;            /* T_SM90 or T_SM100 */
	bool has_tmem, has_wgmma, has_tcgen05;
} Target;

const Target *target_get(TargetId);
const Target *target_lookup(const char *name);
bool ptx_gen(Ctx *, const SirMod *, Buf *);  /* ptxentry.c */

/* ---------------------------------------------------------------- driver.c
 * One compilation from ctx->src to ctx->out.  Returns the number of
 * errors (diagnostics are in ctx->diags). */
typedef enum { EMIT_PTX, EMIT_IR, EMIT_AST, EMIT_DOT } EmitKind;
int driver_compile(Ctx *, EmitKind, bool check_only);

/* ---------------------------------------------------------------- ptx.c
 * The PTX builder.  Callers never spell register names: they ask for typed
 * virtual registers and pass them to templates.  Template directives:
 *   %R  a PReg            %I  an int64_t        %U  a uint64_t in hex
 *   %L  a label (int)     %S  a const char *    %F  a double as 0fXXXXXXXX
 *   %D  a double as 0dXXXXXXXXXXXXXXXX (f64)
 *   %%  a literal %
 * Output is deterministic: names come from per-kind counters. */
typedef enum {
	RP,    /* .pred  %p  */
	RB16,  /* .b16   %h  */
	RB32,  /* .b32   %r  */
	RB64,  /* .b64   %rd */
	RF32,  /* .f32   %f  */
	RF64,  /* .f64   %fd */
	NRKIND
} RKind;

typedef struct PReg {
	uint32_t id;   /* id within kind, from 0 */
	uint8_t kind;  /* RKind */
} PReg;

typedef struct PtxFn PtxFn;
PtxFn *ptx_new(Arena *, const char *name);
PReg ptx_reg(PtxFn *, RKind);
void ptx_param(PtxFn *, const char *decl);      /* ".param .u64 X" */
void ptx_directive(PtxFn *, const char *text);  /* ".maxntid 128, 1, 1" */
void ptx_emit(PtxFn *, const char *tmpl, ...);
void ptx_vemit(PtxFn *, const char *tmpl, va_list);
void ptx_comment(PtxFn *, const char *fmt, ...) FMT(2, 3);
int ptx_label(PtxFn *);
void ptx_place(PtxFn *, int label);
const char *ptx_regname(PtxFn *, PReg, char buf[16]);
void ptx_finish(PtxFn *, Buf *);  /* .entry header, .reg decls, body */

#endif
