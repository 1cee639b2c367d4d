/* ptx_sm80.c: the sm_80 target (Ampere; also sm_86 and sm_89, which run
 * sm_80 PTX): its instruction rows and its TargetOps.  Register tiles are
 * ptx/frag.c's, the MMA ptx/mmasync.c's (ldmatrix, mma.sync).  No TMA,
 * wgmma, tensor memory, clusters or transaction bytes: sema refuses them,
 * and tiles come into shared memory by cp_async (ptx/ptxsync.c). */
#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"
#include "ptx/ptx.h"
#include "ptx/ptxgen.h"

static const PtxRow sm80_rows[] = {
	{SOP_exp2, ANY, "ex2.approx.ftz.f32 %=, %0;"},
	{SOP_log2, ANY, "lg2.approx.ftz.f32 %=, %0;"},
	{SOP_rcp, ANY, "rcp.approx.ftz.f32 %=, %0;"},
	{SOP_tanh, ANY, "tanh.approx.f32 %=, %0;"},
	{SOP_sqrt, ANY, "sqrt.approx.ftz.f32 %=, %0;"},
	{SOP_rsqrt, ANY, "rsqrt.approx.ftz.f32 %=, %0;"},
	{SOP_fence, FENCE_ACQ_REL, "fence.acq_rel.cta;"},
	{0, 0, NULL},
};

static bool
tile_op(PG *g, const SirIns *in)
{
	if (in->op == SOP_mma_sync) {
		pg_mma_sync(g, in);
		return true;
	}
	return pg_frag_op(g, in);
}

const TargetOps sm80_ops = {
	.id = TGT_SM80,
	.rows = sm80_rows,
	.tile_regs = pg_frag_regs,
	.tile_op = tile_op,
	.elem_keys = pg_frag_keys,
};
