/* base.h: the bottom stage -- arena memory, byte buffers, interned
 * strings, diagnostics, the compilation context and the targets'
 * descriptions (capabilities and limits).  Every stage may include it; it
 * includes no other stage. */
#ifndef BASE_H
#define BASE_H


#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdnoreturn.h>

#define FMT(a, b) __attribute__((format(printf, a, b)))
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
/* The version of the CLI, libfagen and the Python package: meson.build's
 * project version, passed by the build as -DFAGEN_VERSION (issue #17). */
#ifndef FAGEN_VERSION
#error "FAGEN_VERSION is not defined: build with meson (meson.build passes it)"
#endif

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

/* A map keyed by an interned name's address, for scopes: open addressing
 * in an arena, grown by doubling; constant-time get and put.  A zeroed
 * NameMap is empty.  namemap_put returns the value it replaces (NULL when
 * none); putting NULL back unbinds the name. */
typedef struct NameSlot {
	const char *name;   /* NULL: empty */
	void *val;
} NameSlot;

typedef struct NameMap {
	NameSlot *tab;
	uint32_t size, count;
} NameMap;

void *namemap_get(const NameMap *, const char *name);
void *namemap_put(Arena *, NameMap *, const char *name, void *val);

/* ---------------------------------------------------------------- ckint
 * Checked 64-bit integer arithmetic, the one way constants, extents and
 * sizes are combined (consteval, sirgen's folding, declaration extents,
 * layout byte sizes).  Each returns false on overflow, leaving *r
 * unspecified; the caller reports an error at the operation. */
static inline bool
ck_add(int64_t a, int64_t b, int64_t *r)
{
	return !__builtin_add_overflow(a, b, r);
}

static inline bool
ck_sub(int64_t a, int64_t b, int64_t *r)
{
	return !__builtin_sub_overflow(a, b, r);
}

static inline bool
ck_mul(int64_t a, int64_t b, int64_t *r)
{
	return !__builtin_mul_overflow(a, b, r);
}

static inline bool
ck_neg(int64_t a, int64_t *r)
{
	return !__builtin_sub_overflow((int64_t)0, a, r);
}

/* a << b as multiplication by 2^b: the bits shifted out, and the sign,
 * must survive the trip back.  b must be in 0..63. */
static inline bool
ck_shl(int64_t a, int64_t b, int64_t *r)
{
	if (b < 0 || b > 63)
		return false;
	*r = (int64_t)((uint64_t)a << b);
	return *r >> b == a;
}

/* ---------------------------------------------------------------- diag.c
 * Span: byte offsets [lo, hi) into the compilation's sources.  The sources
 * share one offset space: ctx->src (the schedule) starts at 0, and each
 * source added after it (a --mod file) starts one past the end of the one
 * before, so a Span alone says which file it is in (ctx_src).  Line and
 * column are computed only when printing, from a line table built once
 * per file. */
typedef struct Span {
	uint32_t lo, hi;
} Span;

typedef struct Src {
	const char *name;   /* as given on the command line */
	const char *text;   /* not necessarily NUL-free */
	size_t len;
	uint32_t base;      /* the Span offset of text[0] */
	uint32_t *lines;    /* byte offset of each line start, in text */
	uint32_t nlines;
	struct Src *next;   /* the next source added (ctx->more) */
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
/* Another source after ctx->src and those added before it (src_init
 * first); NULL, with an error, when the offset space is full. */
Src *src_add(Ctx *, const char *name, const char *text, size_t len);
const Src *ctx_src(const Ctx *, uint32_t off);  /* the source holding off */
/* off is a Span offset into s (s->base included) */
void src_linecol(const Src *, uint32_t off, uint32_t *line, uint32_t *col);
void diag_error(Ctx *, Span, const char *fmt, ...) FMT(3, 4);
void diag_warn(Ctx *, const char *wname, Span, const char *fmt, ...) FMT(4, 5);
void diag_note(Ctx *, Span, const char *fmt, ...) FMT(3, 4);
/* The same note after each error or warning kept since mark (the value
 * of ctx->dlast before; NULL: since the first), below the notes it has:
 * where code that was inlined into another place came from. */
void diag_note_since(Ctx *, const Diag *mark, Span, const char *fmt, ...)
	FMT(4, 5);
void diag_plain(Ctx *, DiagKind, const char *fmt, ...) FMT(3, 4);
void diag_set_warning(Ctx *, const char *name, int state); /* last wins */
/* Whether name is a warning's name; if not, *near is a known name within
 * 2 edits of it, or NULL.  diag_warning_name(i) is the i-th known name,
 * NULL past the last. */
bool diag_warning_known(const char *name, const char **near);
const char *diag_warning_name(size_t i);
void diag_render(const Ctx *, Buf *);  /* all diagnostics, GCC style */
noreturn void fg_bug_at(const char *file, int line, const char *fmt, ...)
	FMT(3, 4);
#define fg_bug(...) fg_bug_at(__FILE__, __LINE__, __VA_ARGS__)
#define MAXERRORS 20

/* suggest.c: "'fulll' is not declared; did you mean 'full'?" */
typedef struct Suggest {
	const char *name;   /* the unknown name */
	const char *best;   /* the closest candidate so far, or NULL */
	int limit, dist;    /* the largest distance taken; best's */
} Suggest;
void diag_suggest_init(Suggest *, const char *name);
void diag_suggest_add(Suggest *, const char *cand);
void diag_undeclared(Ctx *, Span, const Suggest *);

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
	Src src;            /* the schedule: Span offsets from 0 */
	Src *more;          /* sources added after it (src_add), in order */
	Diag *diags, *dlast;
	bool drop_notes;    /* the primary was suppressed: drop its notes */
	int nerr, nwarn;
	bool too_many;      /* MAXERRORS reached: later errors dropped */
	WarnOpt *wopts;
	bool werror;        /* -Werror: every warning is an error */
	Define *defines;    /* -D NAME=VALUE, in command-line order */
	Define **deftail;   /* where the next one goes (ctx_define) */
	NameMap defmap;     /* name -> Define */
	const struct Target *target;
	int arch;           /* forced target (--arch), 0 = from the schedule */
	bool verify_each;   /* run sir_verify after every P_VERIFY pass */
	bool no_verify;     /* --no-verify: skip the schedule verifier */
	bool verify_threads;/* the verifier may run on threads of its own
			     * (the allocator is malloc's) */
	bool debug_hangs;   /* --debug-hangs: bounded waits that report */
	const char *dump_after; /* --dump-after=PASS */
	Buf *dump;          /* where --dump-after writes */
	struct Node *mod;   /* AST after parsing */
	struct Node *mods;  /* the --mod files' items (one module), or NULL */
	struct Kernel *kern;/* checked kernel after sema */
	struct SirMod *sir; /* schedule IR */
	Buf out;            /* emitted text (PTX, IR, dot) */
};

/* -D NAME=VALUE (name interned, value kept as given): appended to
 * ctx->defines in order; false, adding nothing, when NAME is already
 * defined.  ctx_find_define: NAME's Define or NULL.  Both take constant
 * time, so a command line of many -D stays linear. */
bool ctx_define(Ctx *, const char *name, const char *value);
Define *ctx_find_define(const Ctx *, const char *name);
void ctx_init(Ctx *, AllocFn, void *ud, jmp_buf *oom);
void ctx_free(Ctx *);

/* ---------------------------------------------------------------- target.c
 * A target's description: capabilities and limits, read by every stage.
 * How a target emits PTX is the PTX stage's business (ptx/target.h). */
typedef enum { TGT_NONE, TGT_SM90A, TGT_SM100A, TGT_SM80, TGT_SM120A }
	TargetId;
/* SirOpInfo.targets bits.  T_HOP: what every target from Hopper on has
 * (TMA, transaction bytes, try_wait, elect, clusters, setmaxnreg);
 * T_MMASYNC: the targets whose MMA is mma.sync */
enum { T_SM90 = 1, T_SM100 = 2, T_SM80 = 4, T_SM120 = 8,
	T_HOP = T_SM90 | T_SM100 | T_SM120, T_MMASYNC = T_SM80 | T_SM120,
	T_ALL = 15 };

typedef struct Target {
	TargetId id;
	const char *name;       /* "sm_90a" */
	const char *ptx_version;
	int smem_max;           /* bytes of dynamic shared memory per CTA */
	int tgt_bit;            /* T_SM90, T_SM100, T_SM80 or T_SM120 */
	bool has_tmem, has_wgmma, has_tcgen05;
	bool hopper;            /* the T_HOP features */
	bool mma_sync;          /* the MMA is four warps' mma.sync */
} Target;

const Target *target_get(TargetId);
const Target *target_lookup(const char *name);

#endif
