/* sm90.h: private to the sm_90a target (sm90/): its instruction rows
 * (ptx_sm90.c) and wgmma (ptx_sm90.c), used by its register-tile lowering
 * and sm90_ops (ptx/frag.c holds the register tiles), and its
 * descriptor encoder. */
#ifndef SM90_H
#define SM90_H

#include "ptx/ptxgen.h"

extern const PtxRow sm90_rows[];
void sm90_wgmma(PG *, const SirIns *);

/* The shared-memory descriptor of K-chunk kk of swizzled operand x at
 * shared address addr, used MN-major or not, as wgmma is emitted with
 * it; for the encoding oracle (tests/oracle). */
uint64_t sm90_smem_desc(uint32_t addr, const Res *x, bool mn, int kk);

#endif
