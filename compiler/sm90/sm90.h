/* sm90.h: private to the sm_90a target (sm90/): its instruction rows
 * (ptx_sm90.c) and wgmma (ptx_sm90.c), used by its register-tile lowering
 * (ptx_frag.c, which fills sm90_ops). */
#ifndef SM90_H
#define SM90_H

#include "ptx/ptxgen.h"

extern const PtxRow sm90_rows[];
void sm90_wgmma(PG *, const SirIns *);

#endif
