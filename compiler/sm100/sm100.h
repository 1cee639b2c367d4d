/* sm100.h: private to the sm_100a target (sm100/): its instruction rows
 * and tcgen05.mma (ptx_sm100.c), used by its register-tile and tensor-
 * memory lowering (ptx_tmem.c, which fills sm100_ops). */
#ifndef SM100_H
#define SM100_H

#include "ptx/ptxgen.h"

extern const PtxRow sm100_rows[];
void sm100_tcmma(PG *, const SirIns *);
PReg sm100_tmem_addr(PG *, const Res *, Ref idx, int64_t col, bool quarter);

#endif
