/* ptx_sm90.c: Hopper's instruction rows: SIR ops that are one PTX
 * instruction on sm_90a (STYLE B6, QBE's omap).  '%=' is the result,
 * '%0'..'%2' the operands, '%i' the instruction's immediate.  Rows are
 * keyed by op and, where the op has variants, by its immediate.
 * Multi-instruction features (wgmma, TMA, mbarrier waits) are emit_*
 * functions in ptxsync.c. */
#include "fgc.h"
#include "ptxgen.h"

const PtxRow sm90_rows[] = {
	{SOP_exp2, ANY, "ex2.approx.ftz.f32 %=, %0;"},
	{SOP_log2, ANY, "lg2.approx.ftz.f32 %=, %0;"},
	{SOP_rcp, ANY, "rcp.rn.f32 %=, %0;"},
	{SOP_fence, FENCE_ASYNC_SMEM, "fence.proxy.async.shared::cta;"},
	{SOP_fence, FENCE_MBAR_INIT, "fence.mbarrier_init.release.cluster;"},
	{SOP_fence, FENCE_ACQ_REL, "fence.acq_rel.cta;"},
	{SOP_tma_commit, ANY, "cp.async.bulk.commit_group;"},
	{SOP_tma_wait, 0, "cp.async.bulk.wait_group %i;"},
	{SOP_tma_wait, 1, "cp.async.bulk.wait_group.read %i;"},
	{SOP_wgmma_commit, ANY, "wgmma.commit_group.sync.aligned;"},
	{SOP_wgmma_wait, ANY, "wgmma.wait_group.sync.aligned %i;"},
	{0, 0, NULL},
};
