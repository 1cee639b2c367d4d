/* sm100.h: private to the sm_100a target (sm100/): its instruction rows
 * and tcgen05.mma (ptx_sm100.c), used by its register-tile and tensor-
 * memory lowering (ptx_tmem.c, which fills sm100_ops). */
#ifndef SM100_H
#define SM100_H

#include "ptx/ptxgen.h"

extern const PtxRow sm100_rows[];
void sm100_tcmma(PG *, const SirIns *);
PReg sm100_tmem_addr(PG *, const Res *, Ref idx, int64_t col, bool quarter);

/* The constants tcgen05.mma is emitted with, for the encoding oracle
 * (tests/oracle): the shared-memory descriptor of K-chunk kk of swizzled
 * operand x at shared address addr, used MN-major or not, and the
 * kind::f16 instruction descriptor. */
uint64_t sm100_smem_desc(uint32_t addr, const Res *x, bool mn, int kk);
uint32_t sm100_idesc(Ty ety, bool amn, bool bmn, int64_t m, int64_t n);

#endif
