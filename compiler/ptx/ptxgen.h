/* ptxgen.h: state shared by the PTX generator's files (ptxgen.c: values,
 * arithmetic and control flow; ptxsync.c: barriers, TMA and memory;
 * ptxentry.c: the module and the entry's prologue; common.c: helpers the
 * targets share) and by the targets that plug into it (target.h:
 * sm90/ tiles and wgmma, sm100/ tiles, tensor memory and tcgen05.mma). */
#ifndef PTXGEN_H
#define PTXGEN_H

#include "ptx/target.h"

struct PG {
	Ctx *ctx;
	const SirMod *m;
	const Kernel *k;
	const Target *t;
	const TargetOps *ops; /* the target's hooks (target.h) */
	PtxFn *f;
	const SirPart *sp;   /* the partition being generated */
	PReg *map;           /* Ref -> register, id UINT32_MAX = none yet */
	PReg **frag;         /* Ref -> a register tile's registers */
	int64_t **aff;       /* Ref -> an i32 tile's offsets: register j is
				register 0 plus aff[j] (ptxtile.c), or NULL */
	Ref *absof;          /* Ref -> the affine tile it is abs of, or 0 */
	PReg tid, warp, lane, smem;  /* CTA-wide */
	PReg tmap[16];       /* generic addresses of the tensor maps */
	bool has_tmap[16];
	PReg tilef[8][4];    /* fields of the open tile loops, by Ref % 8 */
	Ref tileref[8];
	int part_end;        /* label after the partition's code */
	PReg iters[16];      /* --debug-hangs: tile iteration, loop indices */
	int niters;
	Buf *globals;        /* module-scope declarations (hang messages) */
	int nmsg;
	int in_elect;
	bool failed;
};

bool pg_row(PG *, const SirIns *);  /* false: no row for this op */

PReg pg_reg(PG *, Ref);
PReg pg_u32(PG *, Ref);
void pg_unsupported(PG *, const SirIns *);
void pg_body(PG *, const SirBlock *);
void pg_sync(PG *, const SirIns *);   /* ptxsync.c */
int pg_tma_blocks(const Res *view, int64_t *inner, int64_t *blockbytes);

bool pg_tile_elem(PG *, const SirIns *);  /* ptxtile.c: i32, bool tiles */
/* ptxtile.c: index tile dst's register j is register 0 plus off[j]
 * (rowid, colid: the targets' and blocked layouts' index_tile) */
void pg_affine(PG *, Ref dst, const int64_t *off, int n);

/* ptxblock.c: blocked tiles, the same on every target */
int pg_blocked_regs(const SirVal *, RKind *);  /* -1: not blocked */
bool pg_blocked_keys(const Layout *, int j, int *row, int *col);
bool pg_blocked_op(PG *, const SirIns *);

/* frag.c: register tiles in the m64 fragment layouts (wgmma_acc,
 * wgmma_a and their rows) that wgmma and four warps' mma.sync share */
int pg_frag_regs(const SirVal *, RKind *);
bool pg_frag_op(PG *, const SirIns *);   /* every tile op but the MMA */
bool pg_frag_keys(const Layout *, int j, int *row, int *col);
/* mmasync.c: the MMA as ldmatrix and mma.sync (sm_80, sm_120a) */
void pg_mma_sync(PG *, const SirIns *);
/* common.c: helpers shared by the targets */
PReg *pg_frag(PG *, Ref, int *n);  /* a tile's registers (ops->tile_regs) */
void pg_exp2_poly(PG *, PReg d, PReg x);  /* exp2(x, poly=N) */
PReg pg_stage_base(PG *, const Res *, Ref stage);
/* ptxsync.c: the shared-memory address of mbarrier element idx of r */
PReg pg_bar_addr(PG *, const Res *, Ref idx);
PReg pg_smem_base(PG *, const SirIns *, PReg base, const char **space);
int64_t pg_kmajor_off(const Res *, int kk);
void pg_desc_offs(const Res *, bool mn, int64_t *lbo, int64_t *sbo);
int64_t pg_desc_koff(const Res *, bool mn, int kk);
/* Operand r's register for register j of an elementwise result, by the
 * target's broadcast rule; ctx: what the rule needs of the result. */
typedef PReg (*PgElem)(PG *, Ref r, int j, int ctx);
bool pg_all_f32(PG *, const SirIns *);
void pg_elementwise(PG *, const SirIns *, PgElem, int ctx);

#endif
