/* verify.h: state shared by the schedule verifier's files (verify.c:
 * the runs, the scheduler and the shape classes; verify_step.c: a
 * process's steps; verify_exec.c: its instructions; verify_vc.c: vector clocks and the shared-memory race
 * checks; verify_skip.c: the pure instructions a run steps over;
 * verify_load.c: where values loaded from global memory may go). */
#ifndef VERIFY_H
#define VERIFY_H

#define MAXPROC 128        /* warps, over the CTAs of a cluster */
#define MAXCTA 8           /* CTAs of a cluster the verifier models */
#define NNB 24             /* named barriers of a CTA: 16, then 8
			    * warpgroup wgmma gates */
#define MAXBAR 512
#define MAXEV 4096
#define MAXSTEPS 2000000
#define MAXTOTAL 32000000   /* steps over all runs, about 2 s: 14 times the
			     * largest shipped schedule's */
#define NTRACE 4
#define MAXSEM 256         /* semaphore counters a run holds */
#define MAXSEMADD 64       /* adds a counter remembers, by tile */
#define MAXREC 2048
#define MAXTREC 64          /* tensor-memory access records, per
			     * bucket: a lane quarter's, or the MMAs' */
#define TQ_MMA 4
#define RECW (MAXREC / 64)  /* words of a Rec bitmap */
_Static_assert(MAXREC % 64 == 0 && MAXTREC == 64, "record bitmaps");

/* A set of processes: bit i is process i. */
typedef unsigned __int128 PMask;
#define PBIT(i) ((PMask)1 << (i))
static inline int
pm_ctz(PMask m)
{
	uint64_t lo = (uint64_t)m;

	return lo ? __builtin_ctzll(lo) : 64 + __builtin_ctzll((uint64_t)(m >>
		64));
}
static inline int
pm_popcount(PMask m)
{
	return __builtin_popcountll((uint64_t)m) +
		__builtin_popcountll((uint64_t)(m >> 64));
}

/* A vector clock entry.  Every increment takes a step of a run, so an
 * entry stays below MAXSTEPS. */
typedef int32_t Clk;
_Static_assert(MAXSTEPS < INT32_MAX / 2, "Clk holds a run's steps");

enum { B_RUN, B_MBAR, B_NBAR, B_WGMMA, B_BULK, B_SEM, B_DONE };
enum { EV_TMA, EV_BULK, EV_WGMMA, EV_TC, EV_CPA, NEV_KINDS };

typedef struct Mbar {
	const Res *r;
	int idx;
	int cta;              /* the CTA of the cluster that holds it */
	int64_t count, pending, tx, phase, bytes;  /* bytes: this phase's */
	const SirIns *last;   /* the last arrive by a process, or NULL */
	int last_proc;
} Mbar;

/* A counter of a semaphore global ('sem_wait', 'sem_add'): its value and
 * which tiles added what, to check that a wait needs only earlier tiles. */
typedef struct Sem {
	const Res *r;
	int64_t idx, val;
	int nadd;
	int64_t tile[MAXSEMADD], amt[MAXSEMADD];
} Sem;

typedef struct Nbar {
	int64_t count, arrived, gen;
	PMask who;            /* processes that arrived in this generation */
} Nbar;

typedef struct Frame {
	const SirBlock *b;
	int pc;
	const SirIns *loop;   /* the for/tile instruction, or NULL */
	int64_t i, hi, step;  /* for: induction; tile: k, total, stride */
	int64_t iter;
	Ref tile;
	bool elect;           /* in 'elect' or under a condition on lane or
			       * tid (some lanes): arrivals count one */
	const int *skip;      /* b's skip runs (vf_skips()) */
} Frame;

typedef struct Trace {
	Span span;
	const char *what;
	int64_t phase;
} Trace;

typedef struct Proc {
	const SirPart *sp;
	int warp, nwarps;     /* warp within the partition */
	int cta;              /* its CTA's rank in the cluster (the grid's
			       * CTA when the run is joint) */
	int64_t tileno;       /* the linear index of its tile (joint runs) */
	int64_t *v;           /* scalar values by Ref */
	int64_t tile[8][4];   /* x y z iter, by tile Ref % 8 */
	int depth;
	int state;
	int bar;              /* blocked on: mbar or nbar index */
	int64_t want;         /* parity, nbar generation, or group count */
	const SirIns *at;     /* the blocking instruction */
	int64_t *seen;        /* per mbar: last observed phase (-2: none) */
	int wg_open, wg_groups;   /* wgmma: uncommitted, committed groups */
	int bulk_open, bulk_groups, bulk_seq;
	int bulk_unwaited;    /* groups no 'tma_wait N' (without 'read')
			       * has waited for: their writes may be in
			       * flight */
	int bulk_unread;      /* groups no 'tma_wait' has waited for */
	const SirIns *bulk_last;  /* the last 'tma_commit' */
	int cp_open;          /* cp.async copies since the last commit */
	int cp_seq;           /* cp.async groups committed so far */
	int cp_done;          /* ... and retired by 'cp_async_wait' */
	const SirIns *cp_last;  /* the last group copy, or NULL */
	int tc_inflight;
	int wg_seq;           /* wgmma groups committed so far */
	int *inflight;        /* by Ref: wgmma group + 1 using it, or 0 */
	Ref *infl;            /* the Refs with inflight set, ninfl of them */
	int ninfl;
	bool *lanevar;        /* by Ref: the value differs between lanes */
	Clk *vc;              /* vector clock */
	Clk *tvc;             /* vc at its last 'fence tmem_after': what
			       * its tensor-memory accesses are after */
	int tc_commits;       /* tcgen05 commits issued so far */
	Trace tr[NTRACE];
	int ntr;
	long steps;
	const struct Sim *sim;
	Frame fr[48];         /* last: a new run clears what comes before */
} Proc;

typedef struct Ev {
	int kind, proc, bar;
	int64_t bytes;
	int rec;              /* EV_TMA: its access record */
	int rec2;             /* EV_TMA of a bulk_copy: its source's read */
	Clk *vc;              /* EV_TC commit: the issuer's clock */
	const SirIns *at;     /* EV_TC commit: the commit */
} Ev;

/* Where a process is: its tile iteration and innermost 'for' loop. */
typedef struct Iter {
	int32_t tile, i;      /* -1: not in one */
	const SirIns *loop;   /* the innermost 'for', or NULL */
} Iter;

/* An access to shared memory [lo, hi). */
enum { A_TMAW, A_GENW, A_READ };
typedef struct Rec {
	int kind, proc;
	int64_t lo, hi;
	int64_t clock;        /* A_GENW, retired A_READ: proc's clock */
	int bar;              /* A_TMAW: the mbarrier it completes on */
	int64_t tag;          /* A_TMAW: visible when vc[bar] >= tag */
	int group;            /* A_READ: pending until this group retires */
	int bulk;             /* A_READ: 1 bulk-store group, 0 wgmma,
			       * 2 tcgen05.mma: ordered once vc[TC(proc)]
			       * >= group (CLK_NEVER: no commit yet);
			       * A_GENW: CP_GROUP, a cp.async pending until
			       * 'cp_async_wait' retires its group */
	Iter it;              /* where the process was */
	bool pending, dirty, live;
	const SirIns *at;
	int64_t geo;          /* tile geometry (0: bytes only) ... */
	int64_t r0, r1;       /* ... and the rows [r0, r1) it touches */
} Rec;

/* An access to tensor memory: columns [c0, c1) of the lanes in 'lanes'
 * (bit q: lanes 32q..32q+31). */
enum { T_MMAW, T_MMAR, T_THRW, T_THRR };
typedef struct TRec {
	int kind, proc;
	int c0, c1;
	unsigned lanes;
	Clk clock;            /* T_THR*: ordered before q when q's tvc has
			       * it; CLK_NEVER until a 'fence tmem_before'.
			       * T_MMA*: the issuer's first commit after it
			       * (TC entry), CLK_NEVER until one is issued */
	Clk raw;              /* T_THR*: the process's clock at the access */
	bool live;
	const SirIns *at;
	Iter it;
} TRec;
#define CLK_NEVER INT32_MAX

/* The instructions of a block that a run may step over without executing
 * them: n[i] of them from instruction i (0: execute instruction i; -1:
 * execute it, one that vf_step may do itself, vf_quick_op). */
typedef struct Skip {
	const SirBlock *b;
	int *n;
} Skip;

/* A CTA's tensor memory: its access records and allocation. */
typedef struct TmState {
	TRec trec[TQ_MMA + 1][MAXTREC]; /* by bucket */
	int ntrec[TQ_MMA + 1];
	uint64_t tlive[TQ_MMA + 1];   /* bit i: trec[k][i].live */
	int tm_state;             /* 0 not allocated, 1 allocated, 2 freed */
	int tm_proc;              /* who allocated (freed) it */
	Clk tm_clock;             /* the allocating process's clock at its
				   * first 'fence tmem_before' after the
				   * alloc (CLK_NEVER: none yet) */
	Clk tm_raw;               /* ... and at the alloc */
	const SirIns *tm_at;      /* the tmem_alloc (tmem_free) */
} TmState;

typedef struct Sim {
	Ctx *ctx;
	const SirMod *m;
	const Kernel *k;
	int64_t params[64];   /* by param index */
	const Node **gdata;   /* by global index: this run's content from
			       * 'verify' (a tuple), or NULL: unknown */
	int64_t nctaid, ctaid;
	bool twotiles;        /* order=single run as two tiles of one CTA */
	bool joint;           /* the grid's first CTAs run together, each
			       * its own tiles (semaphores: 'sem_wait') */
	Sem sem[MAXSEM];
	int nsem;
	Proc p[MAXPROC];
	int np;
	Mbar mb[MAXBAR];
	int nmb;
	Nbar nb[NNB * MAXCTA + 1 + MAXCTA / 2];  /* by CTA: 0..15 named
				     * barriers, 16.. warpgroup wgmma; then
				     * the cluster's barrier (CLB), then each
				     * CTA pair's tmem_alloc (PAIRB) */
	int ncta;             /* CTAs modelled: the cluster's */
	int nmb1;             /* mbarrier elements of one CTA; CTA c's
			       * are mb[c * nmb1 ..] */
	Ev ev[MAXEV];
	int nev;
	int mode;             /* 0 procs first, 1 events first, 2 random */
	uint64_t rng;
	long steps;
	bool failed;
	char shape[320];
	Rec rec[MAXREC];
	int nrec;
	uint64_t rlive[RECW];     /* bit i: rec[i].live, so scans visit */
	uint64_t rwrite[RECW];    /* the live records only, in index order;
				   * rwrite: those of writes (A_TMAW, A_GENW) */
	uint64_t rpend[MAXPROC][RECW];  /* by process: its live pending reads */
	Clk *acc[MAXBAR];         /* clocks of this phase's arrivers */
	Clk *done[MAXBAR][2];     /* of the last completed phases */
	Clk *nbvc[NNB * MAXCTA + 1 + MAXCTA / 2][2];  /* named barriers:
					  * accumulating, released */
	bool capped;              /* a capacity limit was hit: warned */
	int nvc;                  /* clock entries: np processes, then the
				   * mbarriers' (VB) and tcgen05 commits'
				   * (TC) that are read */
	int *vbslot;              /* by mbarrier: VB entry, or -1 */
	int tcslot[MAXPROC];      /* by process: TC entry, or -1 */
	Clk *clocks;              /* every clock above, nclocks * nvc */
	int nclocks;
	Clk **vfree;              /* unused EV_TC clocks */
	int nvfree, vfcap;
	Skip *skip;               /* by block, open addressing */
	int skipmask;
	const SirIns **konst[64]; /* by partition: the constants set when a */
	int nkonst[64];           /* run starts (konsts()) */
	Ref *clr[64];             /* by partition: the values a new run */
	int nclr[64];             /* clears (vf_skips()) */
	PMask rdy;                /* processes that may move (vf_wake) */
	TmState tms[MAXCTA];      /* each CTA's tensor memory */
	TmState *tm;              /* the CTA's of the process that steps
				   * (vf_tmem, vf_tmem_fence, vf_tc_commit) */
	int *mbase;               /* by mbarrier Res index: its first
				   * element in mb */
	int nmbase;
	SirFinding **finds;       /* the module's list, for --emit dot */
	const Proc *cur;          /* the process stepping, or NULL */
	const Proc *other;        /* the next failure's other access, */
	const SirIns *other_at;   /* set just before vf_fail, or NULL */
	const Res *wait_bar;      /* the next failure's barrier (a hang) */
} Sim;

/* For each i with bit i set in the nw words of bm, in increasing order,
 * while cond holds (as a scan of the records by index visits the live
 * ones); each word is read once, when the loop reaches it. */
#define FOR_BITS(i, bm, nw, cond) \
	for (int w_ = 0, i = 0; w_ < (nw) && (cond); w_++) \
		for (uint64_t m_ = (bm)[w_]; m_ && (cond) && \
		    ((i = w_ * 64 + __builtin_ctzll(m_)), 1); m_ &= m_ - 1)

/* The clock entry of mbarrier b: how many of its phases were observed;
 * -1 when no TMA load completes on it (vf_clocks). */
#define VB(s, b) ((s)->vbslot[b])
/* The cluster's barrier (barrier.cluster), after the CTAs' named ones */
#define CLB(s) (NNB * (s)->ncta)
/* A CTA pair's collective tmem_alloc (cta 'pair'): the rendezvous of
 * its two allocating warps, one a CTA, CTA c's pair's */
#define PAIRB(s, c) (CLB(s) + 1 + (c) / 2)
/* The named barriers and rendezvous with clocks: CLB and PAIRB too */
#define NBVC(s) (NNB * (s)->ncta + 1 + (s)->ncta / 2)
/* CTA c's shared memory: its byte offsets, apart from every other's */
#define CTA_OFF(c) ((int64_t)(c) << 32)
/* The clock entry of process i's tcgen05 commits: how many of them are
 * known to have completed (so every MMA it issued before them); -1 when
 * it issues no MMA and no commit. */
#define TC(s, i) ((s)->tcslot[i])

/* Four clock entries; clocks are arena arrays of nvc entries, a multiple
 * of four, so 16-byte aligned. */
typedef Clk Clk4 __attribute__((vector_size(16)));


/* d = max(d, a) over the entries in use. */
static inline void
vf_join(const Sim *s, Clk *d, const Clk *a)
{
	Clk4 *x = (Clk4 *)d;
	const Clk4 *y = (const Clk4 *)a;

	for (int i = 0; i < s->nvc / 4; i++) {
		Clk4 gt = y[i] > x[i];
		x[i] = (y[i] & gt) | (x[i] & ~gt);
	}
}

static inline uint64_t
vf_rnd(Sim *s)
{
	s->rng ^= s->rng << 13;
	s->rng ^= s->rng >> 7;
	s->rng ^= s->rng << 17;
	return s->rng;
}

/* verify.c */
bool vf_run(Sim *);
const char *vf_last_error(Ctx *);
SirFinding *vf_find_add(Ctx *, SirFinding **, const char *check,
	const char *msg, const SirPart *, Span);
void vf_find(Sim *, Span, const char *check, const char *msg);
void vf_fail(Sim *, Span, const char *check, const char *fmt,
	const char *a, const char *b);
void vf_note_traces(Sim *, const Proc *);
/* verify_exec.c's helpers for the instructions verify_copy.c runs */
int64_t vf_val(Proc *, Ref);
/* verify_exec.c: scalar arithmetic as the kernel's types wrap it, and
 * one instruction of a process (false: it blocks there); verify_step.c
 * steps through a process's blocks with them */
int64_t vf_arith(int op, int64_t a, int64_t b, Ty);
int64_t vf_wrap(int64_t x, Ty);
bool vf_exec(Sim *, Proc *, const SirIns *, bool elect);
void vf_srange(const Proc *, const Res *, int64_t st, int64_t *lo,
	int64_t *hi);
bool vf_rank_ok(Sim *, Proc *, const SirIns *, int64_t r, const char *what);
bool vf_peer_alive(Sim *, Proc *, const SirIns *, int c, const char *what);
int vf_mbar_in(Sim *, Proc *, const SirIns *, const Res *, int64_t idx,
	int cta);
int vf_mbar_at(Sim *, Proc *, const SirIns *, const Res *, int64_t idx);
void vf_emit_event(Sim *, int kind, int proc, int bar, int64_t bytes);
int64_t vf_tma_bytes(const Res *);
/* verify_copy.c: TMA, bulk_copy, cp_async and their groups; false when
 * the process blocks */
bool vf_exec_copy(Sim *, Proc *, const SirIns *);
const char *vf_pname(Sim *, const Proc *);
void vf_mbar_complete(Sim *, int b);
void vf_mbar_arrive(Sim *, Proc *, const SirIns *, int b, int64_t n);

void vf_wake(Sim *, int proc);
bool vf_cta_gone(const Sim *, int cta);
void vf_cluster_bar(Sim *);
void vf_wake_bar(Sim *, int state, int bar);

/* verify_exec.c: vf_push; verify_step.c: vf_step */
bool vf_push(Proc *, const SirBlock *, const SirIns *loop);
void vf_step(Sim *, Proc *);

/* verify_vc.c */
void vf_clocks(Sim *);
void vf_vfree(Sim *, Clk *);
int64_t vf_geometry(const Res *);
void vf_range_of(const Res *, int64_t st, int64_t *lo, int64_t *hi);
Rec *vf_acc_read(Sim *, Proc *, const SirIns *, int64_t lo, int64_t hi,
	int bulk, int64_t geo, int64_t r0, int64_t r1);
void vf_acc_gread(Sim *, Proc *, const SirIns *, int64_t lo, int64_t hi,
	int64_t geo, int64_t r0, int64_t r1);
Rec *vf_acc_write(Sim *, Proc *, const SirIns *, int64_t lo, int64_t hi,
	bool tma, int64_t geo, int64_t r0, int64_t r1);
void vf_retire_reads(Sim *, Proc *, bool bulk, int upto);
/* cp.async: a write of [lo, hi) by threads, in flight until group
 * 'group' of the process retires (CP_GROUP records, vf_retire_cp). */
enum { CP_GROUP = 4 };
/* Rec.bulk of an A_READ by a bulk_copy: its source, read until the
 * destination's barrier phase completes (bar, tag, as an A_TMAW). */
enum { BULK_COPY_READ = 5 };
void vf_acc_cpwrite(Sim *, Proc *, const SirIns *, int64_t lo, int64_t hi,
	int group, int64_t geo);
void vf_retire_cp(Sim *, Proc *, int upto);

/* verify_tmem.c */
void vf_iter(const Proc *, Iter *);
const char *vf_iter_str(Sim *, const Iter *);
const char *vf_who(Sim *, const Proc *, const Iter *);
void vf_tmem(Sim *, Proc *, const SirIns *);
void vf_tmem_fence(Sim *, Proc *, bool before);
int vf_tc_commit(Sim *, Proc *);

/* verify_why.c */
void vf_why_deadlock(Sim *, const Proc *first);

/* The pure ops that only set a scalar or nothing in a run: vf_step
 * steps them without exec() when no wgmma is in flight. */
static inline bool
vf_quick_op(int op)
{
	switch (op) {
	case SOP_const_i: case SOP_param: case SOP_const_f: case SOP_exp2:
	case SOP_log2: case SOP_rcp: case SOP_tanh: case SOP_sqrt:
	case SOP_rsqrt: case SOP_rowmax:
	case SOP_rowsum: case SOP_convert: case SOP_mask_cols:
	case SOP_mask_causal: case SOP_mask_below: case SOP_fill:
	case SOP_gstore: case SOP_mov: case SOP_add: case SOP_sub:
	case SOP_mul: case SOP_div: case SOP_rem: case SOP_and: case SOP_or:
	case SOP_xor: case SOP_shl: case SOP_shr: case SOP_min: case SOP_max:
	case SOP_eq: case SOP_ne: case SOP_lt: case SOP_le: case SOP_gt:
	case SOP_ge:
		return true;
	}
	return false;
}

/* verify_skip.c */
void vf_skips(Sim *, const SirMod *);
Skip *vf_skip_slot(const Sim *, const SirBlock *);

/* verify.c */
bool vf_element(const Node *content, int64_t i, int64_t *v);

/* verify_load.c */
bool vf_loads(Ctx *, const SirMod *, SirFinding **);  /* loaded values
							 * steer nothing */

#endif
