/* ptx_sm100.c: Blackwell's instruction rows (see ptx_sm90.c for the
 * template language).  sm_100a has no wgmma; it has tcgen05 and tensor
 * memory, whose fences are single instructions.  Validated by ptxas only:
 * no Blackwell GPU has run this output. */
#include "fgc.h"
#include "ptxgen.h"

const PtxRow sm100_rows[] = {
	{SOP_exp2, ANY, "ex2.approx.ftz.f32 %=, %0;"},
	{SOP_log2, ANY, "lg2.approx.ftz.f32 %=, %0;"},
	{SOP_rcp, ANY, "rcp.rn.f32 %=, %0;"},
	{SOP_fence, FENCE_ASYNC_SMEM, "fence.proxy.async.shared::cta;"},
	{SOP_fence, FENCE_MBAR_INIT, "fence.mbarrier_init.release.cluster;"},
	{SOP_fence, FENCE_ACQ_REL, "fence.acq_rel.cta;"},
	{SOP_fence, FENCE_TMEM_BEFORE, "tcgen05.fence::before_thread_sync;"},
	{SOP_fence, FENCE_TMEM_AFTER, "tcgen05.fence::after_thread_sync;"},
	{SOP_tma_commit, ANY, "cp.async.bulk.commit_group;"},
	{SOP_tma_wait, 0, "cp.async.bulk.wait_group %i;"},
	{SOP_tma_wait, 1, "cp.async.bulk.wait_group.read %i;"},
	{0, 0, NULL},
};
