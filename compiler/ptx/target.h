/* target.h: the PTX stage's target interface (QBE's Target).  A target is
 * one folder (sm90/, sm100/, sm80/, sm120/) that fills one TargetOps; ptxentry.c picks
 * it by the kernel's TargetId.  The target-neutral lowering (ptxgen.c:
 * values, arithmetic, control flow; ptxsync.c: barriers, TMA, memory)
 * calls a target only through these hooks, and a target calls back only
 * into the builder (ptx.h) and the shared helpers of ptxgen.h
 * (common.c: register tiles' storage, shared-memory stage bases,
 * K-major offsets, the exp2 polynomial).  Adding a target: a new folder
 * with its TargetOps, a row in base/target.c's descriptions, and one line
 * in ptxentry.c's table (docs/ARCHITECTURE.md). */
#ifndef PTX_TARGET_H
#define PTX_TARGET_H

#include "base/base.h"
#include "sir/sir.h"
#include "ptx/ptx.h"

typedef struct PG PG;

/* A per-target instruction row: op (and variant) -> template.  '%=' is
 * the result, '%0'..'%2' the operands, '%i' the instruction's immediate
 * (STYLE B6, QBE's omap). */
enum { ANY = -1 };
typedef struct PtxRow {
	uint16_t op;
	int16_t sub;        /* the instruction's immediate, or ANY */
	const char *tmpl;
} PtxRow;

typedef struct TargetOps {
	TargetId id;
	/* single-instruction ops, ended by a row with tmpl NULL */
	const PtxRow *rows;
	/* Registers per thread of a register-tile value in this target's
	 * register layouts, and their kind; -1 if the value's layout is not
	 * one of this target's. */
	int (*tile_regs)(const SirVal *, RKind *);
	/* Lower an op on register tiles, tensor memory or the tensor cores
	 * (mma): true when the target handled it, false to leave it to the
	 * target-neutral lowering. */
	bool (*tile_op)(PG *, const SirIns *);
	/* Register j of a tile of layout l with one register per element:
	 * keys of its row and its column among the thread's registers (two
	 * registers with one row key hold elements of one row, and so for
	 * columns); false for a layout without them.  A gather loads once
	 * per row or column when its index depends on rowid or colid only
	 * (ptx/ptxtile.c). */
	bool (*elem_keys)(const Layout *l, int j, int *row, int *col);
} TargetOps;

extern const TargetOps sm90_ops;   /* sm90/ */
extern const TargetOps sm100_ops;  /* sm100/ */
extern const TargetOps sm80_ops;   /* sm80/ */
extern const TargetOps sm120_ops;  /* sm120/ */

#endif
