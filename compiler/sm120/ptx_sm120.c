/* ptx_sm120.c: the sm_120a target (consumer Blackwell: RTX 50-series,
 * RTX PRO 6000): Hopper's synchronization -- TMA with transaction bytes,
 * mbarrier try_wait, elect, clusters, setmaxnreg, the async proxy -- with
 * Ampere's MMA: mma.sync with ldmatrix (ptx/mmasync.c) into ptx/frag.c's
 * fragments; no wgmma, no tensor memory; 99 KB of shared memory a CTA.
 * Never run on hardware: ptxas and the simulator check it. */
#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"
#include "ptx/ptx.h"
#include "ptx/ptxgen.h"

static const PtxRow sm120_rows[] = {
	{SOP_exp2, ANY, "ex2.approx.ftz.f32 %=, %0;"},
	{SOP_log2, ANY, "lg2.approx.ftz.f32 %=, %0;"},
	{SOP_rcp, ANY, "rcp.approx.ftz.f32 %=, %0;"},
	{SOP_tanh, ANY, "tanh.approx.f32 %=, %0;"},
	{SOP_sqrt, ANY, "sqrt.approx.ftz.f32 %=, %0;"},
	{SOP_rsqrt, ANY, "rsqrt.approx.ftz.f32 %=, %0;"},
	{SOP_fence, FENCE_ASYNC_SMEM, "fence.proxy.async.shared::cta;"},
	{SOP_fence, FENCE_MBAR_INIT, "fence.mbarrier_init.release.cluster;"},
	{SOP_fence, FENCE_ACQ_REL, "fence.acq_rel.cta;"},
	{SOP_tma_commit, ANY, "cp.async.bulk.commit_group;"},
	{SOP_tma_wait, 0, "cp.async.bulk.wait_group %i;"},
	{SOP_tma_wait, 1, "cp.async.bulk.wait_group.read %i;"},
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

const TargetOps sm120_ops = {
	.id = TGT_SM120A,
	.rows = sm120_rows,
	.tile_regs = pg_frag_regs,
	.tile_op = tile_op,
	.elem_keys = pg_frag_keys,
};
