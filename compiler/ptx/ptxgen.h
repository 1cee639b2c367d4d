/* ptxgen.h: state shared by the PTX generator's files (ptxgen.c: values,
 * arithmetic and control flow; ptxsync.c: barriers, TMA, tensor cores and
 * memory; ptxentry.c: the module and the entry's prologue; ptx_frag.c and
 * ptx_sm90.c: sm_90a tiles and wgmma; ptx_tmem.c and ptx_sm100.c: sm_100a
 * tiles, tensor memory and tcgen05.mma). */
#ifndef PTXGEN_H
#define PTXGEN_H

typedef struct PG {
	Ctx *ctx;
	const SirMod *m;
	const Kernel *k;
	const Target *t;
	PtxFn *f;
	const SirPart *sp;   /* the partition being generated */
	PReg *map;           /* Ref -> register, id UINT32_MAX = none yet */
	PReg **frag;         /* Ref -> a register tile's registers */
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
} PG;

/* A per-target instruction row: op (and variant) -> template. */
enum { ANY = -1 };
typedef struct PtxRow {
	uint16_t op;
	int16_t sub;        /* the instruction's immediate, or ANY */
	const char *tmpl;
} PtxRow;
extern const PtxRow sm90_rows[], sm100_rows[];
bool pg_row(PG *, const SirIns *);  /* false: no row for this op */

PReg pg_reg(PG *, Ref);
PReg pg_u32(PG *, Ref);
void pg_unsupported(PG *, const SirIns *);
void pg_body(PG *, const SirBlock *);
void pg_sync(PG *, const SirIns *);   /* ptxsync.c */
bool pg_frag_op(PG *, const SirIns *);  /* ptx_frag.c: sm_90a tiles */
PReg *pg_frag(PG *, Ref, int *n);
void pg_exp2_poly(PG *, PReg d, PReg x);  /* exp2(x, poly=N) */
PReg pg_stage_base(PG *, const Res *, Ref stage);
void pg_wgmma(PG *, const SirIns *);     /* ptx_sm90.c */
int64_t pg_kmajor_off(const Res *, int kk);
bool pg_tmem_op(PG *, const SirIns *);  /* ptx_tmem.c: sm_100a tiles */
PReg pg_tmem_addr(PG *, const Res *, Ref idx, int64_t col, bool quarter);
void pg_tcmma(PG *, const SirIns *);     /* ptx_sm100.c */
int pg_tma_blocks(const Res *view, int64_t *inner, int64_t *blockbytes);

#endif
