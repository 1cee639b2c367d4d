/* sir.h: the schedule IR (SIR) -- built from a checked Kernel by
 * sirgen, printed by sir_print (docs/sir.txt), drawn by sir_dot, and
 * transformed by the IR passes (layout, legalize).  Takes ctx->kern and
 * gives ctx->sir; includes base/ and front/. */
#ifndef SIR_H
#define SIR_H

#include "base/base.h"
#include "front/front.h"

/* ---------------------------------------------------------------- sir.c
 * The schedule IR: one structured program per partition instance.
 * Values are 32-bit handles into the partition's value table (0 = none).
 * Control flow stays structured (tile loop, for, if, elect) so that the
 * verifier can run the partitions as state machines. */
enum { E_PURE, E_SYNC, E_ASYNC, E_CTRL, E_MEM };

typedef enum {
#define SOP(name, nargs, eff, tgt) SOP_##name,
#include "sir/sir_ops.h"
#undef SOP
	NSOP
} SirOp;

typedef struct SirOpInfo {
	const char *name;
	int nargs, eff, targets;
} SirOpInfo;
extern const SirOpInfo sir_ops[NSOP];

enum { SP_TID, SP_WARP, SP_LANE, SP_NWARPS, SP_NSM,  /* SOP_special */
	SP_CRANK, SP_CX, SP_CY, SP_CZ };  /* this CTA's rank and coordinates
					    * in its cluster */
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
	Ref cta;            /* mbar_arrive: the cluster rank of the CTA
			     * whose barrier it is (0: this CTA's);
			     * tma_load: the multicast mask (0: none) */
	Ref row;            /* tma_load: the buffer row the box starts at
			     * (0: row 0) */
	Ref peer;           /* tma_load in a CTA pair: the rank of the CTA
			     * whose barrier the bytes complete on (0:
			     * this CTA's) */
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

/* A schedule-verifier error, kept for --emit dot (check/verify.c writes
 * them, dot.c draws them): the partition that reports it, the other
 * access's partition and place, or the barrier a hang waits on. */
typedef struct SirFinding {
	const char *check;    /* "race", "deadlock", ... */
	const char *msg;      /* the diagnostic's text */
	const SirPart *part;  /* NULL: none (an asynchronous completion) */
	Span at;
	const SirPart *other; /* NULL: one place only */
	Span other_at;
	const Res *bar;       /* a hang: the barrier waited on, or NULL */
	struct SirFinding *next;
} SirFinding;

typedef struct SirMod {
	Kernel *k;
	SirPart **parts;
	int nparts;
	SirFinding *finds;  /* the verifier's errors, in order */
} SirMod;

Ref sir_val(Ctx *, SirPart *, Ty, const char *name);
SirIns *sir_push(Ctx *, SirBlock *, SirOp, Span);
SirBlock *sir_block(Ctx *);
void sir_print(const SirMod *, Buf *);
void sir_dot(Ctx *, const SirMod *, Buf *);   /* dot.c: --emit dot */
SirMod *sirgen(Ctx *, Kernel *);       /* sirgen.c: AST bodies -> SIR */
bool sir_verify(Ctx *, const SirMod *); /* structure and target rules */
/* sirload.c: what each tile's registers depend on (rowid, colid, more),
 * so that a gather loads once per row or column, and what that saves */
enum { SD_ROW = 1, SD_COL = 2, SD_ANY = 4 };
int *sir_elem_deps(Ctx *, const SirPart *);
int sir_elem_regs(const SirVal *, int deps, int size);

/* ---------------------------------------------------------------- passes
 * Every pass has one signature; pass.c runs them from one table. */
typedef void PassFn(Ctx *, SirMod *);
PassFn pass_layout, pass_legalize;  /* pass.c */

#endif
