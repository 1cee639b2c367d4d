/* simi.h: the simulator's internal types, shared by its files (issue #18).
 *
 * read.c   PTX text -> SimMod (instructions with resolved operands)
 * exec.c   one instruction for the lanes of a warp at one PC (scalar ops,
 *          loads and stores, shuffles, votes)
 * sync.c   the CTA: warps, the scheduler, named barriers, mbarriers, the
 *          asynchronous queue and the hang report
 * tma.c    tensor maps, cp.async.bulk[.tensor] and st.async
 * wgmma.c  wgmma.mma_async and its shared-memory descriptors
 * tcgen05.c tensor memory and tcgen05 (alloc, ld/st, mma, commit),
 *          .cta_group::1 and the CTA pair's ::2
 * mma_sync.c ldmatrix and mma.sync (sm_80 and later)
 * cpasync.c cp.async, its groups and cp.async.mbarrier.arrive
 * fp.c     bf16/f16 conversions and the approximate functions */
#ifndef SIMI_H
#define SIMI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim.h"
#include "ops.h"

#define FMT(a, b) __attribute__((format(printf, a, b)))
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

enum {
#define X(name, key, types) OP_##name,
	SIM_OPS(X)
#undef X
	NOPS
};

/* Types, as PTX spells them. */
enum {
	TY_NONE, TY_PRED, TY_B8, TY_B16, TY_B32, TY_B64, TY_U8, TY_U16, TY_U32,
	TY_U64, TY_S8, TY_S16, TY_S32, TY_S64, TY_F16, TY_F16X2, TY_BF16,
	TY_BF16X2, TY_F32, TY_F64, NTY
};
#define TB(t) (1u << (t))
#define TM_PRED TB(TY_PRED)
#define TM_B32 TB(TY_B32)
#define TM_B64 TB(TY_B64)
#define TM_U32 TB(TY_U32)
#define TM_U64 TB(TY_U64)
#define TM_F32 TB(TY_F32)
#define TM_I16 (TB(TY_U16) | TB(TY_S16))
#define TM_I32 (TB(TY_U32) | TB(TY_S32))
#define TM_SINT (TB(TY_S16) | TB(TY_S32) | TB(TY_S64))
#define TM_BITS (TB(TY_B16) | TB(TY_B32) | TB(TY_B64))
#define TM_INT (TM_BITS | TM_SINT | TM_I16 | TM_I32 | TB(TY_U64) | \
	TB(TY_U8) | TB(TY_S8) | TB(TY_B8))
#define TM_ANY (~0u & ~1u)

int ty_bits(int t);
bool ty_signed(int t);
const char *sim_ty_name(int t);

/* Comparisons of setp. */
enum { CMP_EQ, CMP_NE, CMP_LT, CMP_LE, CMP_GT, CMP_GE, CMP_LO, CMP_LS,
	CMP_HI, CMP_HS };

/* Operand kinds. */
enum {
	OK_NONE, OK_REG, OK_IMM, OK_ADDR, OK_VEC, OK_SPECIAL, OK_SINK
};

/* Special registers. */
enum {
	SR_TID_X, SR_TID_Y, SR_TID_Z, SR_NTID_X, SR_NTID_Y, SR_NTID_Z,
	SR_CTAID_X, SR_CTAID_Y, SR_CTAID_Z, SR_NCTAID_X, SR_NCTAID_Y,
	SR_NCTAID_Z, SR_LANEID, SR_WARPID, SR_CLUSTER_CTARANK,
	SR_CLUSTER_NCTARANK, SR_CLUSTER_CTAID_X, SR_CLUSTER_CTAID_Y,
	SR_CLUSTER_CTAID_Z, SR_CLUSTER_NCTAID_X, SR_CLUSTER_NCTAID_Y,
	SR_CLUSTER_NCTAID_Z, SR_CLUSTERID_X, SR_CLUSTERID_Y, SR_CLUSTERID_Z,
	SR_NCLUSTERID_X, SR_NCLUSTERID_Y, SR_NCLUSTERID_Z
};

typedef struct Opnd {
	uint8_t k;
	uint8_t neg;      /* '!' before a predicate */
	uint16_t n;       /* OK_VEC: entries */
	int32_t r;        /* register slot; OK_ADDR: base slot or -1 */
	int64_t imm;      /* OK_IMM: the bits; OK_ADDR: the byte offset */
	int32_t *v;       /* OK_VEC: register slots */
} Opnd;

enum { MAXOPND = 9 };

typedef struct Ins {
	uint16_t op;
	uint8_t ty[4];    /* the opcode's types, in order */
	uint8_t nty;
	uint8_t cmp;      /* setp */
	uint8_t nopnd;
	uint8_t gneg;     /* guard is @!%p */
	int32_t guard;    /* guard predicate slot, or -1 */
	int32_t tgt;      /* bra: the target instruction */
	int32_t aux;      /* wgmma: N; cp.async.bulk.tensor: rank;
			   * ldmatrix: matrices (.xN) */
	int32_t line;     /* 1-based line in the PTX text */
	Opnd o[MAXOPND];
} Ins;

/* A kernel parameter of the .entry. */
typedef struct Param {
	const char *name;
	int ty;           /* scalar type, or TY_B8 for an array */
	int size, align, off;
} Param;

struct SimMod {
	char *text;       /* the PTX, NUL-terminated; names point into it */
	size_t len;
	int *line_at;     /* line -> byte offset of its start */
	int nlines;
	const char *entry;
	SimMeta meta;
	Param *params;
	int nparams, param_bytes;
	Ins *ins;
	int nins;
	int nslots;       /* registers per thread */
	struct RegDecl { const char *prefix; int ty, base, n; } *decls;
	int ndecls;
	char *strs;       /* names from the metadata, NUL-separated */
};

/* Addresses.  Global buffers live at (i + 1) << 36; the parameter buffer
 * is seen at PARAM_BASE; shared memory is a 32-bit window whose dynamic
 * part (fg_smem) starts at SMEM_BASE, 1024-aligned as the swizzles need. */
#define GBUF_SHIFT 36
#define PARAM_BASE 0x00f0000000000000ull
#define SMEM_BASE 0x400u

/* A tensor map as cuTensorMapEncodeTiled would record it: dimensions
 * innermost first, strides in bytes. */
typedef struct Tmap {
	uint64_t addr;
	int rank, esize, swizzle;       /* swizzle: 0, 32, 64, 128 bytes */
	int64_t dim[5], stride[5];      /* stride[0] is the element size */
	int box[5];
	bool oob_nan;
} Tmap;
#define TMAP_MAGIC 0x70616d74734d4946ull   /* "FIMstmap" */


/* Launch state. */
/* ST_BLOCK: blocked here, to re-execute when woken; ST_WAIT: done,
 * then blocked (bar.sync). */
enum { ST_OK, ST_BLOCK, ST_WAIT, ST_ERR };

/* What a blocked warp waits on. */
enum { WT_NONE, WT_MBAR, WT_BAR, WT_BULK, WT_CLUSTER, WT_PAIR };

typedef struct Wait {
	int kind;
	uint32_t addr;      /* WT_MBAR */
	int parity;         /* WT_MBAR */
	int id;             /* WT_BAR: barrier; WT_BULK: groups allowed */
	uint64_t gen;       /* WT_BAR, WT_CLUSTER, WT_PAIR: generation
			     * arrived in */
} Wait;

typedef struct Warp {
	int id;
	uint32_t live;      /* lanes that have not exited */
	int32_t pc[32];
	uint64_t *reg;      /* slot * 32 + lane */
	bool blocked;
	Wait wait;
	int bulk_open;      /* index of this warp's open bulk group */
	int wg_open;        /* index of this warp's open wgmma group */
	bool carrived;      /* arrived on the cluster's barrier, in cgen */
	uint64_t cgen;
	int cpa_open[32];   /* per lane: its open cp.async group's index */
} Warp;

typedef struct Mbar {
	uint32_t addr;
	int count, pending;
	int64_t tx;
	uint32_t phase;     /* completed phases */
} Mbar;

typedef struct NBar {
	int expected, arrived;
	uint64_t gen;
} NBar;

/* A pending asynchronous operation. */
enum { AS_TMA_LOAD, AS_TMA_STORE, AS_WGMMA, AS_TC_MMA, AS_TC_COMMIT,
	AS_CP_ARRIVE, AS_BULK_S2S, AS_BULK_G2S, AS_ST_ASYNC };

/* A tcgen05.mma, as issued (operands are read when it completes). */
typedef struct TcMma {
	uint32_t d, a;               /* tensor-memory addresses */
	uint32_t idesc;
	uint64_t da, db;             /* shared-memory descriptors */
	bool a_tmem, acc;            /* A in tensor memory; D += A B */
	bool pair;                   /* .cta_group::2: M = 256 over the
				      * issuing CTA and its peer */
} TcMma;
typedef struct Async {
	int kind, warp, group, line;
	bool reduce;                 /* AS_TMA_STORE: .add into global */
	int tmap;                    /* index into Cta.tmaps */
	int32_t coord[5];
	uint32_t smem, mbar;         /* mbar: also AS_TC_COMMIT's */
	uint16_t ranks;              /* TMA loads, commits: the CTAs of the
				      * cluster whose smem and mbar they
				      * reach (a multicast's mask) */
	int mcta;                    /* TMA loads with .cta_group::2: the
				      * mbarrier's CTA rank + 1 (0: each
				      * destination's own) */
	struct WgOp *wg;             /* AS_WGMMA */
	TcMma tc;                    /* AS_TC_MMA */
	int lane;                    /* AS_CP_ARRIVE: the thread's lane */
	uint64_t seq;                /* AS_CP_ARRIVE: its copies come
				      * before this one (CpCopy.seq) */
	uint32_t src, bytes;         /* AS_BULK_S2S: the source in the
				      * issuing CTA, into smem of rank
				      * ranks' CTA */
	uint64_t gsrc;               /* AS_BULK_G2S: the global source */
	uint32_t val[4];             /* AS_ST_ASYNC: the values (bytes / 4,
				      * read at issue), into smem of rank
				      * ranks' CTA */
} Async;

/* A cp.async copy that has not landed (cpasync.c). */
typedef struct CpCopy {
	int warp, lane, group, line;
	uint64_t seq;                /* the CTA's copies, in issue order */
	uint32_t dst;
	int n;                       /* cp-size: 4, 8 or 16 */
	uint8_t data[16];            /* read at issue, zero-filled */
} CpCopy;

struct Cluster;

typedef struct Cta {
	Sim *sim;
	const SimMod *m;
	uint8_t *smem;               /* the window [0, smem_end) */
	uint32_t smem_end;
	uint8_t *mbmark;             /* per 8 smem bytes: an mbarrier */
	const uint8_t *param;
	int nparam;
	const Tmap *tmaps;
	int ntmaps;
	unsigned ctaid[3], nctaid[3];
	Warp *w;
	int nw;
	Mbar *mb;
	int nmb, capmb;
	NBar bar[16];
	Async *q;
	int nq, capq;
	CpCopy *cp;                  /* cp.async copies not landed */
	int ncp, capcp;
	uint64_t cpseq;
	uint64_t steps;
	/* Tensor memory (sm_100a): 128 lanes of 512 32-bit columns, the
	 * allocations (start column, columns) and the permit. */
	uint32_t *tmem;
	struct { int col, n; } talloc[8];
	int ntalloc;
	bool relinquished;
	int tcgroup;                 /* its tcgen05 ops' .cta_group (0:
				      * none yet): 1 and 2 do not mix */
	/* A .cta_group::2 alloc or dealloc waiting for the pair's other
	 * CTA: its op (0: none), slot or address and columns; gen counts
	 * the completed ones. */
	struct { int op; uint32_t a, n; uint64_t gen; } pair;
	struct Cluster *cl;          /* the CTA's cluster (of one, without) */
	int rank;                    /* %cluster_ctarank */
	bool exited;                 /* every warp has exited */
} Cta;

/* The CTAs of one cluster, run together; barrier.cluster's state. */
typedef struct Cluster {
	Cta *cta;
	int n;
	unsigned dim[3];
	uint64_t gen;                /* the barrier's completed phases */
	int arrived;                 /* threads arrived in this phase */
} Cluster;

struct Sim {
	struct Gbuf { uint8_t *p; size_t n; } *buf;
	int nbuf;
	int64_t max_ctas, step_limit;
	bool eager;
	char *err;
	size_t errlen, errcap;
	SimStats stats;
	/* sim_map's host ranges, addressed by their host addresses */
	struct Gmap { uint64_t lo; size_t n; } *map;
	int nmap;
};

bool meta_read(SimMod *, char *err, size_t errlen);
bool sim_rpn_eval(const SimRpn *, const int64_t *pv, int64_t *out);
const char *op_check(const Ins *);     /* NULL, or why it is refused */
int opcode_of(const char *key);

/* exec.c */
uint64_t opnd_u(const Cta *, const Warp *, const Opnd *, int lane);
static inline uint64_t *
reg_at(const Warp *w, int slot, int lane)
{
	return &w->reg[(size_t)slot * 32 + (size_t)lane];
}
uint8_t *smem_at(Cta *, uint32_t addr, uint32_t n, const char *what);
int exec_scalar(Cta *, Warp *, const Ins *, uint32_t mask);
const char *op_name(int op);

/* sync.c */
int sync_op(Cta *, Warp *, const Ins *, uint32_t mask);
Mbar *mbar_find(Cta *, uint32_t addr);
bool mbar_complete_tx(Cta *, uint32_t addr, int64_t bytes);
int async_push(Cta *, const Async *);
/* A shared::cluster address (below 1 << 24 this CTA's own; else mapa's:
 * (rank + 1) << 24 | the shared::cta address): its CTA and address
 * there, or NULL after an error (no such rank, or it has exited). */
Cta *cluster_cta(Cta *, uint64_t addr, uint32_t *local, const char *what);
bool cluster_ready(Cluster *);   /* completes the barrier's phase */

/* run.c: the launch's clusters (of one CTA without), one after another;
 * grid in CTAs, whole clusters of dim. */
int run_grid(Sim *, const SimMod *, const uint8_t *pbuf, const Tmap *maps,
	const unsigned grid[3], const unsigned dim[3]);
bool mbar_arrive(Cta *, uint32_t addr, int64_t tx);

/* tma.c */
int tma_op(Cta *, Warp *, const Ins *, uint32_t mask);
bool tma_complete(Cta *, const Async *);
bool tmap_build(Sim *, const SimMeta *, int arg, const int64_t *pv,
	const SimVal *vals, Tmap *out);

/* wgmma.c */
int wgmma_op(Cta *, Warp *, const Ins *, uint32_t mask);
bool wgmma_complete(Cta *, const Async *);
void wgmma_free(Async *);
/* A shared-memory matrix operand: start, leading and stride byte
 * offsets, and the swizzle span (0: none, the 16-byte interleave). */
typedef struct SmemDesc {
	uint32_t start, lbo, sbo, span;
} SmemDesc;
bool smem_operand(Cta *, const SmemDesc *, bool mn_major, int mn, int k,
	int ty, float *out);

/* mma_sync.c */
const char *mma_sync_check(const Ins *);
int mma_sync_op(Cta *, Warp *, const Ins *, uint32_t mask);

/* cpasync.c */
const char *cpa_check(const Ins *);
int cpa_op(Cta *, Warp *, const Ins *, uint32_t mask);
bool cpa_complete(Cta *, const Async *);
bool cpa_exit(Cta *);   /* at the CTA's end: every copy has landed */

/* tcgen05.c */
int tc_op(Cta *, Warp *, const Ins *, uint32_t mask);
bool tc_complete(Cta *, const Async *);
bool tc_exit(Cta *);   /* at the CTA's end: every column deallocated */
/* The other CTA of c's pair (rank ^ 1) for a .cta_group::2 op, or NULL
 * after an error (a cluster of an odd number of CTAs). */
Cta *tc_peer(Cta *, const char *what);

int sim_fail(Sim *, const char *fmt, ...) FMT(2, 3);
void sim_append(Sim *, const char *fmt, ...) FMT(2, 3);  /* to the error */

/* Global memory (sync.c): a host pointer for [addr, addr + n), or NULL
 * after reporting an error. */
uint8_t *sim_gmem(Sim *, uint64_t addr, size_t n, const char *what);

/* fp.c */
float f32_of(uint32_t bits);
uint32_t bits_of(float f);
uint16_t bf16_rn(float f);
uint16_t f16_rn(float f);
float bf16_to_f32(uint16_t h);
float f16_to_f32(uint16_t h);
/* The low (hi 0) or high 16-bit half of r, of type ty (bf16 or f16). */
float sim_half(uint32_t r, int hi, int ty);
float sim_ex2(float x, bool ftz);
float sim_lg2(float x);
float sim_rcp(float x);
float sim_tanh(float x);
float sim_sqrt(float x);   /* sqrt.approx.ftz.f32 */
float sim_rsqrt(float x);  /* rsqrt.approx.ftz.f32 */
float ftz32(float x);

#endif
