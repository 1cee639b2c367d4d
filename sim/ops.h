/* ops.h: the opcode table of the simulator (issue #18).
 *
 * One row per instruction form the simulator models.  The reader turns an
 * opcode such as "setp.ge.s32" or "cp.async.bulk.tensor.2d.shared::cluster
 * .global.mbarrier::complete_tx::bytes" into a key by replacing each type
 * suffix with "T", a setp comparison with "C", a wgmma or mma shape
 * (m64n128k16, m16n8k16) with "S", a tensor rank (2d) with "D" and a
 * repeat count (tcgen05.ld/st x16, ldmatrix x4) with "X", drops a
 * prefetch-size hint (.L2::128B), and looks the key up here, as spelled
 * or with .shared and .shared::cta (synonyms) swapped; the
 * types it replaced must be in the row's mask.  A form not in the table is
 * an error at load time naming it and its line: nothing is skipped.
 *
 * Adding an instruction: a row here, its case in the executor that owns
 * it (exec.c scalar, sync.c barriers, tma.c bulk copies and st.async,
 * cpasync.c cp.async, wgmma.c, tcgen05.c and mma_sync.c tensor cores),
 * and a unit test in tests/sim/.
 *
 *   name            key                                         types */
#define SIM_OPS(X) \
	X(MOV,           "mov.T",                                    TM_ANY) \
	X(ADD,           "add.T",                                    TM_INT | TM_F32) \
	X(SUB,           "sub.T",                                    TM_INT | TM_F32) \
	X(MUL,           "mul.T",                                    TM_F32) \
	X(MUL_LO,        "mul.lo.T",                                 TM_INT) \
	X(MUL_HI,        "mul.hi.T",                                 TM_INT) \
	X(MUL_WIDE,      "mul.wide.T",                               TM_I16 | TM_I32) \
	X(MAD_LO,        "mad.lo.T",                                 TM_INT) \
	X(MAD_WIDE,      "mad.wide.T",                               TM_I16 | TM_I32) \
	X(FMA_RN,        "fma.rn.T",                                 TM_F32) \
	X(DIV,           "div.T",                                    TM_INT) \
	X(DIV_RN,        "div.rn.T",                                 TM_F32) \
	X(REM,           "rem.T",                                    TM_INT) \
	X(MIN,           "min.T",                                    TM_INT | TM_F32) \
	X(MAX,           "max.T",                                    TM_INT | TM_F32) \
	X(NEG,           "neg.T",                                    TM_SINT | TM_F32) \
	X(ABS,           "abs.T",                                    TM_SINT | TM_F32) \
	X(AND,           "and.T",                                    TM_BITS | TM_PRED) \
	X(OR,            "or.T",                                     TM_BITS | TM_PRED) \
	X(XOR,           "xor.T",                                    TM_BITS | TM_PRED) \
	X(NOT,           "not.T",                                    TM_BITS | TM_PRED) \
	X(SHL,           "shl.T",                                    TM_BITS) \
	X(SHR,           "shr.T",                                    TM_INT) \
	X(SETP,          "setp.C.T",                                 TM_INT | TM_F32) \
	X(SELP,          "selp.T",                                   TM_INT | TM_F32) \
	X(CVT,           "cvt.T.T",                                  TM_ANY) \
	X(CVT_RN,        "cvt.rn.T.T",                               TM_ANY) \
	X(CVT_RZI,       "cvt.rzi.T.T",                              TM_INT) \
	X(EX2,           "ex2.approx.ftz.T",                         TM_F32) \
	X(EX2_NOFTZ,     "ex2.approx.T",                             TM_F32) \
	X(LG2,           "lg2.approx.ftz.T",                         TM_F32) \
	X(RCP,           "rcp.approx.ftz.T",                         TM_F32) \
	X(TANH,          "tanh.approx.T",                            TM_F32) \
	X(SQRT,          "sqrt.approx.ftz.T",                        TM_F32) \
	X(RSQRT,         "rsqrt.approx.ftz.T",                       TM_F32) \
	X(CVTA_PARAM,    "cvta.param.T",                             TM_U64) \
	X(CVTA_GLOBAL,   "cvta.to.global.T",                         TM_U64) \
	X(LD_PARAM,      "ld.param.T",                               TM_ANY) \
	X(LD_GLOBAL,     "ld.global.T",                              TM_ANY) \
	X(LD_GLOBAL_NC,  "ld.global.nc.T",                           TM_ANY) \
	X(LD_SHARED,     "ld.shared.T",                              TM_ANY) \
	X(ST_GLOBAL,     "st.global.T",                              TM_ANY) \
	X(ST_SHARED,     "st.shared.T",                              TM_ANY) \
	X(LD_SHARED_CL,  "ld.shared::cluster.T",                     TM_ANY) \
	X(ST_SHARED_CL,  "st.shared::cluster.T",                     TM_ANY) \
	X(LD_SHARED_CL_V2, "ld.shared::cluster.v2.T",                TM_BITS | TM_F32) \
	X(ST_SHARED_CL_V2, "st.shared::cluster.v2.T",                TM_BITS | TM_F32) \
	X(LD_SHARED_CL_V4, "ld.shared::cluster.v4.T",                TM_BITS | TM_F32) \
	X(ST_SHARED_CL_V4, "st.shared::cluster.v4.T",                TM_BITS | TM_F32) \
	X(MAPA,          "mapa.shared::cluster.T",                   TM_U32) \
	X(RED_GLOBAL_ADD, "red.global.add.T",                        TM_F32) \
	X(LD_ACQ_GLOBAL, "ld.acquire.gpu.global.T",                  TM_ANY) \
	X(RED_REL_ADD,   "red.release.gpu.global.add.T",             TM_I32) \
	X(LD_GLOBAL_NC_V2, "ld.global.nc.v2.T",                      TM_BITS | TM_F32) \
	X(LD_GLOBAL_NC_V4, "ld.global.nc.v4.T",                      TM_BITS | TM_F32) \
	X(ST_GLOBAL_V2,  "st.global.v2.T",                           TM_BITS | TM_F32) \
	X(ST_GLOBAL_V4,  "st.global.v4.T",                           TM_BITS | TM_F32) \
	X(LD_SHARED_V2,  "ld.shared.v2.T",                           TM_BITS | TM_F32) \
	X(LD_SHARED_V4,  "ld.shared.v4.T",                           TM_BITS | TM_F32) \
	X(ST_SHARED_V2,  "st.shared.v2.T",                           TM_BITS | TM_F32) \
	X(ST_SHARED_V4,  "st.shared.v4.T",                           TM_BITS | TM_F32) \
	X(BRA,           "bra",                                      0) \
	X(BRA_UNI,       "bra.uni",                                  0) \
	X(RET,           "ret",                                      0) \
	X(EXIT,          "exit",                                     0) \
	X(BAR_SYNC,      "bar.sync",                                 0) \
	X(BAR_ARRIVE,    "bar.arrive",                               0) \
	X(BARRIER_SYNC,  "barrier.sync.aligned",                     0) \
	X(BARRIER_ARRIVE, "barrier.arrive.aligned",                  0) \
	X(BARRIER_SYNC_U, "barrier.sync",                            0) \
	X(BARRIER_ARRIVE_U, "barrier.arrive",                        0) \
	X(BAR_WARP_SYNC, "bar.warp.sync",                            0) \
	X(ELECT,         "elect.sync",                               0) \
	X(SHFL_BFLY,     "shfl.sync.bfly.T",                         TM_B32) \
	X(SHFL_IDX,      "shfl.sync.idx.T",                          TM_B32) \
	X(SHFL_UP,       "shfl.sync.up.T",                           TM_B32) \
	X(SHFL_DOWN,     "shfl.sync.down.T",                         TM_B32) \
	X(VOTE_ANY,      "vote.sync.any.T",                          TM_PRED) \
	X(VOTE_ALL,      "vote.sync.all.T",                          TM_PRED) \
	X(VOTE_BALLOT,   "vote.sync.ballot.T",                       TM_B32) \
	X(MBAR_INIT,     "mbarrier.init.shared::cta.T",              TM_B64) \
	X(MBAR_ARRIVE,   "mbarrier.arrive.shared::cta.T",            TM_B64) \
	X(MBAR_ARRIVE_TX, "mbarrier.arrive.expect_tx.shared::cta.T", TM_B64) \
	X(MBAR_TRY_WAIT, "mbarrier.try_wait.parity.shared::cta.T",   TM_B64) \
	X(MBAR_TRY_WAIT_CL, "mbarrier.try_wait.parity.acquire.cluster.shared::cta.T", TM_B64) \
	X(MBAR_TEST_PAR, "mbarrier.test_wait.parity.shared::cta.T",  TM_B64) \
	X(MBAR_TEST,     "mbarrier.test_wait.shared::cta.T",         TM_B64) \
	X(MBAR_ARRIVE_CL, "mbarrier.arrive.shared::cluster.T",       TM_B64) \
	X(CL_ARRIVE,     "barrier.cluster.arrive.aligned",           0) \
	X(CL_ARRIVE_REL, "barrier.cluster.arrive.release.aligned",   0) \
	X(CL_ARRIVE_RLX, "barrier.cluster.arrive.relaxed.aligned",   0) \
	X(CL_WAIT,       "barrier.cluster.wait.aligned",             0) \
	X(CL_WAIT_ACQ,   "barrier.cluster.wait.acquire.aligned",     0) \
	X(FENCE_CL,      "fence.acq_rel.cluster",                    0) \
	X(GDC_WAIT,      "griddepcontrol.wait",                      0) \
	X(GDC_LAUNCH,    "griddepcontrol.launch_dependents",         0) \
	X(FENCE_MBAR,    "fence.mbarrier_init.release.cluster",      0) \
	X(FENCE_PROXY,   "fence.proxy.async.shared::cta",            0) \
	X(FENCE_PROXY_G, "fence.proxy.async.global",                 0) \
	X(PREFETCH_TMAP, "prefetch.tensormap",                       0) \
	X(SETMAXNREG_INC, "setmaxnreg.inc.sync.aligned.T",           TM_U32) \
	X(SETMAXNREG_DEC, "setmaxnreg.dec.sync.aligned.T",           TM_U32) \
	X(TMA_LOAD,      "cp.async.bulk.tensor.D.shared::cluster.global.mbarrier::complete_tx::bytes", 0) \
	X(TMA_LOAD2,     "cp.async.bulk.tensor.D.shared::cluster.global.mbarrier::complete_tx::bytes.cta_group::2", 0) \
	X(TMA_LOAD_MC,   "cp.async.bulk.tensor.D.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster", 0) \
	X(TMA_STORE,     "cp.async.bulk.tensor.D.global.shared::cta.bulk_group", 0) \
	X(TMA_REDUCE,    "cp.reduce.async.bulk.tensor.D.global.shared::cta.add.tile.bulk_group", 0) \
	X(BULK_S2S,      "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes", 0) \
	X(BULK_G2S,      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes", 0) \
	X(ST_ASYNC,      "st.async.shared::cluster.mbarrier::complete_tx::bytes.T", TM_B32 | TM_F32) \
	X(ST_ASYNC_V2,   "st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.T", TM_B32 | TM_F32) \
	X(ST_ASYNC_V4,   "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.T", TM_B32 | TM_F32) \
	X(BULK_COMMIT,   "cp.async.bulk.commit_group",               0) \
	X(BULK_WAIT,     "cp.async.bulk.wait_group",                 0) \
	X(BULK_WAIT_RD,  "cp.async.bulk.wait_group.read",            0) \
	X(CPA_CA,        "cp.async.ca.shared.global",                0) \
	X(CPA_CG,        "cp.async.cg.shared.global",                0) \
	X(CPA_COMMIT,    "cp.async.commit_group",                    0) \
	X(CPA_WAIT,      "cp.async.wait_group",                      0) \
	X(CPA_WAIT_ALL,  "cp.async.wait_all",                        0) \
	X(CPA_ARRIVE,    "cp.async.mbarrier.arrive.shared.T",        TM_B64) \
	X(CPA_ARRIVE_NOINC, "cp.async.mbarrier.arrive.noinc.shared.T", TM_B64) \
	X(LDMATRIX,      "ldmatrix.sync.aligned.m8n8.X.shared.T",    TB(TY_B16)) \
	X(LDMATRIX_T,    "ldmatrix.sync.aligned.m8n8.X.trans.shared.T", TB(TY_B16)) \
	X(MMA_SYNC,      "mma.sync.aligned.S.row.col.T.T.T.T",       TM_F32) \
	X(WG_FENCE,      "wgmma.fence.sync.aligned",                 0) \
	X(WG_COMMIT,     "wgmma.commit_group.sync.aligned",          0) \
	X(WG_WAIT,       "wgmma.wait_group.sync.aligned",            0) \
	X(WG_MMA,        "wgmma.mma_async.sync.aligned.S.T.T.T",     TM_F32) \
	X(TC_ALLOC,      "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.T", TM_B32) \
	X(TC_DEALLOC,    "tcgen05.dealloc.cta_group::1.sync.aligned.T", TM_B32) \
	X(TC_RELINQUISH, "tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned", 0) \
	X(TC_FENCE_BEFORE, "tcgen05.fence::before_thread_sync",      0) \
	X(TC_FENCE_AFTER, "tcgen05.fence::after_thread_sync",        0) \
	X(TC_LD,         "tcgen05.ld.sync.aligned.32x32b.X.T",       TM_B32) \
	X(TC_ST,         "tcgen05.st.sync.aligned.32x32b.X.T",       TM_B32) \
	X(TC_WAIT_LD,    "tcgen05.wait::ld.sync.aligned",            0) \
	X(TC_WAIT_ST,    "tcgen05.wait::st.sync.aligned",            0) \
	X(TC_MMA,        "tcgen05.mma.cta_group::1.kind::f16",       0) \
	X(TC_COMMIT,     "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.T", TM_B64) \
	X(TC_COMMIT_MC,  "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.multicast::cluster.T", TM_B64) \
	X(TC_ALLOC2,     "tcgen05.alloc.cta_group::2.sync.aligned.shared::cta.T", TM_B32) \
	X(TC_DEALLOC2,   "tcgen05.dealloc.cta_group::2.sync.aligned.T", TM_B32) \
	X(TC_RELINQUISH2, "tcgen05.relinquish_alloc_permit.cta_group::2.sync.aligned", 0) \
	X(TC_MMA2,       "tcgen05.mma.cta_group::2.kind::f16",       0) \
	X(TC_COMMIT2,    "tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.T", TM_B64) \
	X(TC_COMMIT2_MC, "tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster.T", TM_B64)
