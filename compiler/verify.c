/* verify.c: the schedule verifier.  It runs the partitions and the
 * asynchronous units (TMA loads, bulk-store groups, wgmma groups, the
 * tcgen05 queue) as communicating state machines, for every shape class
 * (each combination of the 'verify' values of the integer params) and for
 * one and two persistent CTAs, under several schedules: processes first,
 * asynchronous completions first, and seeded random interleavings.
 *
 * Each warp is a process (lanes are uniform except inside 'elect').  An
 * mbarrier has a phase count, pending arrivals and a transaction count; a
 * named barrier counts threads.  The checks, each with a stable name:
 *   deadlock      every process is blocked and nothing is in flight
 *   over-arrival  a phase receives more arrivals than its count
 *   tx-bytes      a phase completes with other bytes than 'tx=' declares
 *   phase-skip    a wait lets a process through two phases ahead
 *   phase-reuse   a wait observes the same phase as the previous one
 *   nbar-twice    a warp arrives twice on a named barrier before it
 *                 completes (an arrive where a sync was needed)
 *   exit-pending  a process ends with bulk stores still reading smem
 *   runaway       a run does not finish within the step budget
 *   index-range   a run indexes a barrier array outside its elements
 *   race          two accesses to overlapping shared memory, one a write,
 *                 not ordered by happens-before (vector clocks: program
 *                 order, mbarrier phases, named barriers; a TMA write is
 *                 visible once its mbarrier phase is observed; wgmma and
 *                 bulk-store reads last until their group retires)
 *   proxy-fence   a generic-proxy write read by TMA or wgmma without
 *                 'fence async_smem' by the writer
 *   wgmma-hazard  a register tile used while a wgmma that reads or
 *                 writes it is in flight
 * Requires: a SirMod after the pass pipeline.  Ensures: diagnostics. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "fgc.h"

#define MAXPROC 32
#define MAXBAR 512
#define MAXEV 4096
#define MAXSTEPS 2000000
#define MAXTOTAL 32000000   /* steps over all runs, about 2 s: 14 times the
			     * largest shipped schedule's */
#define NTRACE 4
#define MAXREC 256

/* A vector clock entry.  Every increment takes a step of a run, so an
 * entry stays below MAXSTEPS. */
typedef int32_t Clk;
_Static_assert(MAXSTEPS < INT32_MAX / 2, "Clk holds a run's steps");

enum { B_RUN, B_MBAR, B_NBAR, B_WGMMA, B_BULK, B_DONE };
enum { EV_TMA, EV_BULK, EV_WGMMA, EV_TC };

typedef struct Mbar {
	const Res *r;
	int idx;
	int64_t count, pending, tx, phase, bytes;  /* bytes: this phase's */
} Mbar;

typedef struct Nbar {
	int64_t count, arrived, gen;
	uint32_t who;         /* processes that arrived in this generation */
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
	const int *skip;      /* b's skip runs (skips()) */
} Frame;

typedef struct Trace {
	Span span;
	const char *what;
	int64_t phase;
} Trace;

typedef struct Proc {
	const SirPart *sp;
	int warp, nwarps;     /* warp within the partition */
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
	int tc_inflight;
	int wg_seq;           /* wgmma groups committed so far */
	int *inflight;        /* by Ref: wgmma group + 1 using it, or 0 */
	Ref *infl;            /* the Refs with inflight set, ninfl of them */
	int ninfl;
	bool *lanevar;        /* by Ref: the value differs between lanes */
	Clk *vc;              /* vector clock */
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
	Clk *vc;              /* EV_TC commit: the issuer's clock */
} Ev;

/* An access to shared memory [lo, hi). */
enum { A_TMAW, A_GENW, A_READ };
typedef struct Rec {
	int kind, proc;
	int64_t lo, hi;
	int64_t clock;        /* A_GENW, retired A_READ: proc's clock */
	int bar;              /* A_TMAW: the mbarrier it completes on */
	int64_t tag;          /* A_TMAW: visible when vc[bar] >= tag */
	int group;            /* A_READ: pending until this group retires */
	int bulk;             /* A_READ: 1 bulk-store group, 0 wgmma */
	bool pending, dirty, live;
	const SirIns *at;
	int64_t geo;          /* tile geometry (0: bytes only) ... */
	int64_t r0, r1;       /* ... and the rows [r0, r1) it touches */
} Rec;

/* The instructions of a block that a run may step over without executing
 * them: n[i] of them from instruction i (0: execute instruction i). */
typedef struct Skip {
	const SirBlock *b;
	int *n;
} Skip;

typedef struct Sim {
	Ctx *ctx;
	const SirMod *m;
	const Kernel *k;
	int64_t params[64];   /* by param index */
	int64_t nctaid, ctaid;
	Proc p[MAXPROC];
	int np;
	Mbar mb[MAXBAR];
	int nmb;
	Nbar nb[24];          /* 0..15 named barriers, 16.. warpgroup wgmma */
	Ev ev[MAXEV];
	int nev;
	int mode;             /* 0 procs first, 1 events first, 2 random */
	uint64_t rng;
	long steps;
	bool failed;
	char shape[160];
	Rec rec[MAXREC];
	int nrec;
	Clk *acc[MAXBAR];         /* clocks of this phase's arrivers */
	Clk *done[MAXBAR][2];     /* of the last completed phases */
	Clk *nbvc[24][2];         /* named barriers: accumulating, released */
	bool capped;              /* a capacity limit was hit: warned */
	int nvc;                  /* clock entries: np processes, then nmb
				   * mbarriers (VB) */
	Clk *clocks;              /* every clock above, nclocks * nvc */
	int nclocks;
	Clk **vfree;              /* unused EV_TC clocks */
	int nvfree, vfcap;
	Skip *skip;               /* by block, open addressing */
	int skipmask;
	const SirIns **konst[64]; /* by partition: the constants set when a */
	int nkonst[64];           /* run starts (konsts()) */
} Sim;

/* The clock entry of mbarrier b: how many of its phases were observed. */
#define VB(s, b) ((s)->np + (b))

/* Four clock entries; clocks are arena arrays of nvc entries, a multiple
 * of four, so 16-byte aligned. */
typedef Clk Clk4 __attribute__((vector_size(16)));

/* d = max(d, a) over the entries in use. */
static void
vc_join(const Sim *s, Clk *d, const Clk *a)
{
	Clk4 *x = (Clk4 *)d;
	const Clk4 *y = (const Clk4 *)a;

	for (int i = 0; i < s->nvc / 4; i++) {
		Clk4 gt = y[i] > x[i];
		x[i] = (y[i] & gt) | (x[i] & ~gt);
	}
}

static uint64_t
rnd(Sim *s)
{
	s->rng ^= s->rng << 13;
	s->rng ^= s->rng >> 7;
	s->rng ^= s->rng << 17;
	return s->rng;
}

static void fail(Sim *, Span, const char *, const char *, const char *,
	const char *);

static int
mbar_of(Sim *s, const Res *r, int64_t idx)
{
	for (int i = 0; i < s->nmb; i++)
		if (s->mb[i].r == r && s->mb[i].idx == idx)
			return i;
	return -1;
}

/* An mbarrier element by its index, or a failure when a run reaches an
 * index outside the array. */
static int
mbar_at(Sim *s, const SirIns *in, const Res *r, int64_t idx)
{
	int b = mbar_of(s, r, idx);

	if (b < 0) {
		char a[80], c[64];
		snprintf(a, sizeof a, "%s[%lld]", r->name, (long long)idx);
		snprintf(c, sizeof c, "%d elements", r->count);
		fail(s, in ? in->span : r->nspan, "index-range", "'%s' is "
			"outside the array: it has %s", a, c);
	}
	return b;
}

static const char *
bname(const Mbar *m)
{
	static _Thread_local char b[80];

	if (m->r->is_array)
		snprintf(b, sizeof b, "%s[%d]", m->r->name, m->idx);
	else
		snprintf(b, sizeof b, "%s", m->r->name);
	return b;
}

static void
note_traces(Sim *s, const Proc *p)
{
	for (int i = 0; i < p->ntr && i < NTRACE; i++) {
		const Trace *t = &p->tr[(p->ntr - 1 - i) % NTRACE];
		if (t->phase >= 0)
			diag_note(s->ctx, t->span, "before that it %s (phase %lld)",
				t->what, (long long)t->phase);
		else
			diag_note(s->ctx, t->span, "before that it %s", t->what);
	}
}

static const char *
pname(Sim *s, const Proc *p)
{
	Buf b;

	buf_init(&b, &s->ctx->perm);
	buf_puts(&b, p->sp->part->name);
	if (p->sp->part->index >= 0)
		buf_printf(&b, "[%d]", p->sp->part->index);
	if (p->nwarps > 1)
		buf_printf(&b, " warp %d", p->warp);
	return b.p;
}

static void
trace(Proc *p, Span sp, const char *what, int64_t phase)
{
	p->tr[p->ntr % NTRACE] = (Trace){sp, what, phase};
	p->ntr++;
}

static void
fail(Sim *s, Span sp, const char *check, const char *fmt, const char *a,
	const char *b)
{
	char msg[512];

	snprintf(msg, sizeof msg, fmt, a, b);
	if (s->shape[0])
		diag_error(s->ctx, sp, "%s [%s] (%s)", msg, check, s->shape);
	else
		diag_error(s->ctx, sp, "%s [%s]", msg, check);
	s->failed = true;
}

/* ------------------------------------------------------------ barriers */

static void
mbar_complete_if_done(Sim *s, int b)
{
	Mbar *m = &s->mb[b];

	if (m->pending != 0 || m->tx != 0)
		return;
	if (m->r->tx && m->bytes != m->r->tx) {
		char a[64], c[64];
		snprintf(a, sizeof a, "%s[%d]", m->r->name, m->idx);
		snprintf(c, sizeof c, "%lld bytes but declares tx=%lld",
			(long long)m->bytes, (long long)m->r->tx);
		fail(s, m->r->nspan, "tx-bytes", "a phase of '%s' received %s",
			a, c);
	}
	memcpy(s->done[b][m->phase & 1], s->acc[b], s->nvc * sizeof(Clk));
	memset(s->acc[b], 0, s->nvc * sizeof(Clk));
	m->phase++;
	m->pending = m->count;
	m->bytes = 0;
}

static void
mbar_arrive(Sim *s, Proc *p, const SirIns *in, int b, int64_t n)
{
	Mbar *m = &s->mb[b];

	if (p) {  /* a release: publish, then advance the own clock */
		vc_join(s, s->acc[b], p->vc);
		p->vc[p - s->p]++;
	}

	m->pending -= n;
	if (m->pending < 0) {
		char a[64];
		snprintf(a, sizeof a, "%s[%d]", m->r->name, m->idx);
		fail(s, in ? in->span : m->r->nspan, "over-arrival", "'%s' "
			"receives more "
			"arrivals in one phase than its count%s", a, "");
		diag_note(s->ctx, m->r->nspan, "'%s' declared with count=%lld",
			m->r->name, (long long)m->count);
		if (p)
			note_traces(s, p);
		m->pending = 0;
		return;
	}
	mbar_complete_if_done(s, b);
}

/* ------------------------------------------------------------ values */

static int64_t
val(Proc *p, Ref r)
{
	return r ? p->v[r] : 0;
}

static int64_t
arith(int op, int64_t a, int64_t b, Ty t)
{
	bool u = t == TY_U32 || t == TY_U64;

	switch (op) {
	case SOP_add: return a + b;
	case SOP_sub: return a - b;
	case SOP_mul: return a * b;
	case SOP_div: return b ? (u ? (int64_t)((uint64_t)a / (uint64_t)b) :
		a / b) : 0;
	case SOP_rem: return b ? (u ? (int64_t)((uint64_t)a % (uint64_t)b) :
		a % b) : 0;
	case SOP_and: return a & b;
	case SOP_or: return a | b;
	case SOP_xor: return a ^ b;
	case SOP_shl: return b >= 0 && b < 63 ? a << b : 0;
	case SOP_shr: return b >= 0 && b < 63 ? a >> b : 0;
	case SOP_min: return a < b ? a : b;
	case SOP_max: return a > b ? a : b;
	case SOP_eq: return a == b;
	case SOP_ne: return a != b;
	case SOP_lt: return a < b;
	case SOP_le: return a <= b;
	case SOP_gt: return a > b;
	case SOP_ge: return a >= b;
	}
	return 0;
}

static int64_t
wrap(int64_t x, Ty t)
{
	if (t == TY_I32)
		return (int32_t)x;
	if (t == TY_U32)
		return (uint32_t)x;
	return x;
}


/* ------------------------------------------------------------ races */

/* Accesses overlap when their bytes do, unless both name rows of tiles of
 * one geometry at one base: a warpgroup's rows of a 128-row tile
 * (arow=, row=) do not meet another warpgroup's, whatever the layout. */
static bool
overlaps(const Rec *r, int64_t lo, int64_t hi, int64_t geo, int64_t r0,
	int64_t r1)
{
	if (r->hi <= lo || hi <= r->lo)
		return false;
	if (geo && r->geo == geo && r->lo == lo)
		return r->r0 < r1 && r0 < r->r1;
	return true;
}

static int64_t
geometry(const Res *b)
{
	return (b->shape[0] << 24) ^ (b->shape[b->rank - 1] * ty_bytes(b->ety)
		<< 8) ^ b->lay->swizzle ^ 1;
}

static bool
ordered(const Sim *s, const Rec *r, const Proc *q)
{
	int qi = (int)(q - s->p);

	switch (r->kind) {
	case A_TMAW:
		return !r->pending && q->vc[VB(s, r->bar)] >= r->tag;
	case A_READ:
		return !r->pending && (r->proc == qi || q->vc[r->proc] >=
			r->clock);
	default:
		return r->proc == qi || q->vc[r->proc] >= r->clock;
	}
}

static void
race(Sim *s, Proc *q, const SirIns *in, const Rec *r, const char *what)
{
	static const char *const kinds[] = {"a TMA load writes",
		"threads write", "an asynchronous read (wgmma or TMA store) "
		"reads"};
	char a[200];

	snprintf(a, sizeof a, "%s shared memory that %s", what, kinds[r->kind]);
	fail(s, in->span, "race", "%s without an ordering barrier%s", a,
		r->pending ? " (it is still in flight)" : "");
	if (r->at)
		diag_note(s->ctx, r->at->span, "the other access, by '%s'",
			pname(s, &s->p[r->proc]));
	note_traces(s, q);
}

/* The byte range of buffer r, stage st. */
static void
range_of(const Res *r, int64_t st, int64_t *lo, int64_t *hi)
{
	*lo = r->off + st * r->bytes;
	*hi = *lo + r->bytes;
}

static Rec *
add_rec(Sim *s, int kind, Proc *p, int64_t lo, int64_t hi, const SirIns *at)
{
	for (int i = 0; i < s->nrec; i++)
		if (!s->rec[i].live) {
			s->rec[i] = (Rec){.kind = kind, .proc = (int)(p - s->p),
				.lo = lo, .hi = hi, .live = true, .at = at,
				.clock = p->vc[p - s->p]};
			return &s->rec[i];
		}
	if (s->nrec == MAXREC) {
		if (!s->capped)
			diag_warn(s->ctx, "verify-limit", s->k->span, "the "
				"verifier stopped tracking shared-memory accesses: "
				"more than %d at once (%s)", MAXREC, s->shape);
		s->capped = true;
		return NULL;
	}
	s->rec[s->nrec] = (Rec){.kind = kind, .proc = (int)(p - s->p),
		.lo = lo, .hi = hi, .live = true, .at = at,
		.clock = p->vc[p - s->p]};
	return &s->rec[s->nrec++];
}

/* An asynchronous read of [lo, hi) (wgmma operand, TMA store source):
 * every write to it must be visible, and generic writes fenced. */
static void
acc_read(Sim *s, Proc *p, const SirIns *in, int64_t lo, int64_t hi,
	bool bulk, int64_t geo, int64_t r0, int64_t r1)
{
	for (int i = 0; i < s->nrec && !s->failed; i++) {
		Rec *r = &s->rec[i];
		if (!r->live || r->kind == A_READ || !overlaps(r, lo, hi, geo,
		    r0, r1))
			continue;
		if (r->kind == A_GENW && r->dirty) {
			fail(s, in->span, "proxy-fence", "TMA or wgmma reads shared "
				"memory that '%s' wrote with ordinary stores and no "
				"'fence async_smem' after them%s",
				pname(s, &s->p[r->proc]), "");
			if (r->at)
				diag_note(s->ctx, r->at->span, "the write");
			return;
		}
		if (!ordered(s, r, p))
			race(s, p, in, r, "this reads");
	}
	Rec *r = add_rec(s, A_READ, p, lo, hi, in);
	if (r) {
		r->geo = geo;
		r->r0 = r0;
		r->r1 = r1;
		r->pending = true;
		r->bulk = bulk;
		r->group = bulk ? p->bulk_groups + 1 : p->wg_seq + 1;
	}
}

/* A write of [lo, hi): by TMA (tma) or by threads; earlier accesses must
 * be ordered before it.  It replaces the records it covers. */
static Rec *
acc_write(Sim *s, Proc *p, const SirIns *in, int64_t lo, int64_t hi,
	bool tma, int64_t geo, int64_t r0, int64_t r1)
{
	for (int i = 0; i < s->nrec && !s->failed; i++) {
		Rec *r = &s->rec[i];
		if (!r->live || !overlaps(r, lo, hi, geo, r0, r1))
			continue;
		/* threads write their own rows: generic writes do not
		 * conflict with each other at this granularity */
		if (!ordered(s, r, p) && !(r->kind == A_GENW && !tma))
			race(s, p, in, r, tma ? "a TMA load overwrites" :
				"this overwrites");
		if (r->lo >= lo && r->hi <= hi && (!geo || r->geo != geo ||
		    (r->r0 >= r0 && r->r1 <= r1)))
			r->live = false;
	}
	Rec *r = add_rec(s, tma ? A_TMAW : A_GENW, p, lo, hi, in);
	if (r) {
		r->geo = geo;
		r->r0 = r0;
		r->r1 = r1;
		r->pending = tma;
		r->dirty = !tma;
	}
	return r;
}

/* A wait retired groups: their reads are done, at the current clock. */
static void
retire_reads(Sim *s, Proc *p, bool bulk, int upto)
{
	for (int i = 0; i < s->nrec; i++) {
		Rec *r = &s->rec[i];
		if (r->live && r->kind == A_READ && r->pending && r->bulk == bulk
		    && r->proc == p - s->p && r->group <= upto) {
			r->pending = false;
			r->clock = p->vc[p - s->p];
		}
	}
}

/* Register tiles a wgmma in flight reads or writes. */
static void
hazard(Sim *s, Proc *p, const SirIns *in)
{
	Ref refs[8];
	int n = 0;

	if (!p->ninfl)
		return;
	if (in->dst)
		refs[n++] = in->dst;
	for (int k = 0; k < in->na; k++)
		refs[n++] = in->a[k];
	for (int k = 0; k < n && !s->failed; k++) {
		Ref r = refs[k];
		if (!r || !p->inflight[r])
			continue;
		if (in->op == SOP_wgmma && (r == in->dst || (k > 0 &&
		    r == in->a[1])))
			continue;  /* chained wgmmas keep their order */
		fail(s, in->span, "wgmma-hazard", "this uses '%s' while a wgmma "
			"that %s it is still in flight: retire it with "
			"'mma_commit' and 'mma_wait' first",
			p->sp->vals[r].name ? p->sp->vals[r].name : "a tile",
			"reads or writes");
		note_traces(s, p);
	}
}

/* ------------------------------------------------------------ skipping
 *
 * Most instructions a run steps through are pure: tile arithmetic that
 * the verifier does not model, and scalar arithmetic whose result reaches
 * nothing the verifier looks at (a mask bound, an output row).  A pure
 * instruction may be stepped over, counting its step, when
 *   - it does not draw from the random stream (all_eq does),
 *   - no wgmma may have its destination or operands in flight (the
 *     wgmma-hazard check could fire on it), and
 *   - its destination is not relevant: read, directly or through other
 *     pure instructions, by a control-flow, synchronizing, asynchronous
 *     or memory instruction.  Those read only scalars, so their register
 *     tile operands are not relevant, but every operand of a relevant
 *     pure instruction is.
 * Each process then has the same values, clocks and diagnostics at every
 * instruction it executes as when it executes them all. */

/* Ops whose value operands the verifier does not read: coordinates in
 * global memory, the accumulate flag. */
static bool
coords(int op)
{
	return op == SOP_tma_load || op == SOP_tma_store || op == SOP_gstore ||
		op == SOP_wgmma || op == SOP_tc_mma;
}

static void
mark_roots(const SirBlock *b, const SirPart *sp, bool *rel, bool *wg)
{
	for (int i = 0; i < b->n; i++) {
		const SirIns *in = &b->v[i];
		if (in->op == SOP_wgmma) {
			wg[in->dst] = true;
			wg[in->a[1]] = true;
		}
		if (sir_ops[in->op].eff != E_PURE && !coords(in->op))
			for (int k = 0; k < in->na; k++)
				if (sp->vals[in->a[k]].ty != TY_FRAG)
					rel[in->a[k]] = true;
		if (sir_ops[in->op].eff != E_PURE)
			for (int k = 0; k < 3; k++)
				rel[in->ri[k]] = true;
		if (in->body)
			mark_roots(in->body, sp, rel, wg);
		if (in->els)
			mark_roots(in->els, sp, rel, wg);
	}
}

/* Operands of relevant pure instructions become relevant; true when one
 * did. */
static bool
mark_uses(const SirBlock *b, bool *rel)
{
	bool grew = false;

	for (int i = 0; i < b->n; i++) {
		const SirIns *in = &b->v[i];
		if (sir_ops[in->op].eff == E_PURE && in->dst && rel[in->dst])
			for (int k = 0; k < in->na; k++)
				if (!rel[in->a[k]])
					grew = rel[in->a[k]] = true;
		if (in->body)
			grew |= mark_uses(in->body, rel);
		if (in->els)
			grew |= mark_uses(in->els, rel);
	}
	return grew;
}

/* A constant defined once, before every use of it (later in its block or
 * nested there), can be set when the run starts: no instruction could
 * have read the zero it held before.  Such a 'const' is stepped over. */
typedef struct Konst {
	const SirIns **def;   /* by Ref: the only definition, a const */
	const SirBlock **blk; /* and its block */
	int *at;              /* and index there */
	int *ndef;
	bool *bad;            /* a use it does not come before */
} Konst;

static void
konst_defs(const SirBlock *b, Konst *kc)
{
	for (int i = 0; i < b->n; i++) {
		const SirIns *in = &b->v[i];
		if (in->dst && kc->ndef[in->dst]++ == 0 && in->op == SOP_const_i) {
			kc->def[in->dst] = in;
			kc->blk[in->dst] = b;
			kc->at[in->dst] = i;
		}
		if (in->body)
			konst_defs(in->body, kc);
		if (in->els)
			konst_defs(in->els, kc);
	}
}

/* path[d], at[d]: the blocks enclosing b and the index in each. */
static void
konst_uses(const SirBlock *b, Konst *kc, const SirBlock **path, int *at,
	int d)
{
	path[d] = b;
	for (int i = 0; i < b->n; i++) {
		const SirIns *in = &b->v[i];
		Ref u[9];
		int nu = 0;
		at[d] = i;
		for (int k = 0; k < in->na && k < 6; k++)
			u[nu++] = in->a[k];
		for (int k = 0; k < 3; k++)
			u[nu++] = in->ri[k];
		for (int k = 0; k < nu; k++) {
			Ref r = u[k];
			if (!r || !kc->def[r] || kc->bad[r])
				continue;
			int e = d;
			while (e >= 0 && path[e] != kc->blk[r])
				e--;
			kc->bad[r] = e < 0 || at[e] <= kc->at[r];
		}
		if (in->body)
			konst_uses(in->body, kc, path, at, d + 1);
		if (in->els)
			konst_uses(in->els, kc, path, at, d + 1);
	}
}

static int
depth_of(const SirBlock *b)
{
	int d = 0;

	for (int i = 0; i < b->n; i++) {
		int e = 0;
		if (b->v[i].body && (e = depth_of(b->v[i].body)) > d)
			d = e;
		if (b->v[i].els && (e = depth_of(b->v[i].els)) > d)
			d = e;
	}
	return d + 1;
}

/* The constants of sp set up front (konst), marked in isk. */
static void
konsts(Sim *s, int pi, bool *isk)
{
	const SirPart *sp = s->m->parts[pi];
	Arena *a = &s->ctx->scratch;
	size_t n = sp->nvals + 1;
	Konst kc = {NEWARR(a, const SirIns *, n), NEWARR(a, const SirBlock *,
		n), NEWARR(a, int, n), NEWARR(a, int, n), NEWARR(a, bool, n)};
	int d = depth_of(&sp->body), nk = 0;

	konst_defs(&sp->body, &kc);
	konst_uses(&sp->body, &kc, NEWARR(a, const SirBlock *, d),
		NEWARR(a, int, d), 0);
	s->konst[pi] = NEWARR(a, const SirIns *, n);
	for (Ref r = 1; r < n; r++)
		if (kc.def[r] && kc.ndef[r] == 1 && !kc.bad[r]) {
			isk[r] = true;
			s->konst[pi][nk++] = kc.def[r];
		}
	s->nkonst[pi] = nk;
}

static bool
skippable(const SirIns *in, const bool *rel, const bool *wg,
	const bool *isk)
{
	if (in->op == SOP_const_i && isk[in->dst] && !wg[in->dst])
		return true;
	if (sir_ops[in->op].eff != E_PURE || in->op == SOP_all_eq ||
	    in->body || (in->dst && (rel[in->dst] || wg[in->dst])))
		return false;
	for (int k = 0; k < in->na; k++)
		if (wg[in->a[k]])
			return false;
	return true;
}

static Skip *
skip_slot(const Sim *s, const SirBlock *b)
{
	uint64_t h = (uint64_t)(uintptr_t)b * 0x9e3779b97f4a7c15ull;

	for (int i = (int)(h >> 40) & s->skipmask;; i = (i + 1) & s->skipmask)
		if (s->skip[i].b == b || !s->skip[i].b)
			return &s->skip[i];
}

static int
skip_blocks(Sim *s, const SirBlock *b, const bool *rel, const bool *wg,
	const bool *isk)
{
	Skip *k = skip_slot(s, b);
	int nb = 1;

	k->b = b;
	k->n = NEWARR(&s->ctx->scratch, int, b->n + 1);
	for (int i = b->n - 1; i >= 0; i--)
		k->n[i] = skippable(&b->v[i], rel, wg, isk) ? k->n[i + 1] + 1 :
			0;
	for (int i = 0; i < b->n; i++) {
		if (b->v[i].body)
			nb += skip_blocks(s, b->v[i].body, rel, wg, isk);
		if (b->v[i].els)
			nb += skip_blocks(s, b->v[i].els, rel, wg, isk);
	}
	return nb;
}

static int
count_blocks(const SirBlock *b)
{
	int n = 1;

	for (int i = 0; i < b->n; i++) {
		if (b->v[i].body)
			n += count_blocks(b->v[i].body);
		if (b->v[i].els)
			n += count_blocks(b->v[i].els);
	}
	return n;
}

/* The skip runs of every block of m. */
static void
skips(Sim *s, const SirMod *m)
{
	int nb = 0, cap = 16;

	for (int i = 0; i < m->nparts; i++)
		nb += count_blocks(&m->parts[i]->body);
	while (cap < 2 * nb)
		cap *= 2;
	s->skip = NEWARR(&s->ctx->scratch, Skip, cap);
	s->skipmask = cap - 1;
	for (int i = 0; i < m->nparts; i++) {
		const SirPart *sp = m->parts[i];
		bool *rel = NEWARR(&s->ctx->scratch, bool, sp->nvals + 1);
		bool *wg = NEWARR(&s->ctx->scratch, bool, sp->nvals + 1);
		bool *isk = NEWARR(&s->ctx->scratch, bool, sp->nvals + 1);
		mark_roots(&sp->body, sp, rel, wg);
		while (mark_uses(&sp->body, rel))
			;
		rel[0] = wg[0] = false;
		if (i < 64)
			konsts(s, i, isk);
		skip_blocks(s, &sp->body, rel, wg, isk);
	}
}

/* Push a block to run next; a loop frame re-enters its body. */
static bool
push(Proc *p, const SirBlock *b, const SirIns *loop)
{
	if (p->depth == (int)COUNT(p->fr))
		return false;  /* deeper than the verifier follows */
	bool el = (p->depth && p->fr[p->depth - 1].elect) || (loop &&
		loop->op == SOP_elect);
	p->fr[p->depth++] = (Frame){.b = b, .loop = loop, .elect = el,
		.skip = skip_slot(p->sim, b)->n};
	return true;
}

static void
emit_event(Sim *s, int kind, int proc, int bar, int64_t bytes)
{
	if (s->nev == MAXEV) {  /* stop this run rather than drop events */
		if (!s->capped)
			diag_warn(s->ctx, "verify-limit", s->k->span, "the "
				"verifier stopped following a run: more than %d "
				"asynchronous operations in flight (%s)", MAXEV,
				s->shape);
		s->capped = s->failed = true;
		return;
	}
	if (s->nev < MAXEV)
		s->ev[s->nev++] = (Ev){.kind = kind, .proc = proc, .bar = bar,
			.bytes = bytes, .rec = -1};
}

/* Threads an arrival stands for: one per warp lane outside 'elect'. */
static int64_t
arrivals(bool elect)
{
	return elect ? 1 : 32;
}

static int64_t
tma_bytes(const Res *v)
{
	int64_t n = ty_bytes(v->ety);

	for (int i = 0; i < v->rank; i++)
		n *= v->shape[i];
	return n;
}

/* Mark r used by the wgmma group being issued. */
static void
set_inflight(Proc *p, Ref r)
{
	if (!p->inflight[r])
		p->infl[p->ninfl++] = r;
	p->inflight[r] = p->wg_seq + 1;
}

/* Execute one instruction; returns false when the process blocks on it
 * (it is retried later). */
static bool
exec(Sim *s, Proc *p, const SirIns *in, bool elect)
{
	const SirVal *dv = in->dst ? &p->sp->vals[in->dst] : NULL;
	int b, self = (int)(p - s->p);
	int64_t lo, hi;

	if (in->op != SOP_wgmma_wait && in->op != SOP_wgmma_commit)
		hazard(s, p, in);

	switch (in->op) {
	case SOP_const_i:
		p->v[in->dst] = in->imm;
		return true;
	case SOP_smem_store: {
		const SirVal *x = &p->sp->vals[in->a[0]];
		range_of(in->r[0], val(p, in->ri[0]), &lo, &hi);
		acc_write(s, p, in, lo, hi, false, geometry(in->r[0]),
			in->roff[0], in->roff[0] + x->m);
		return true;
	}
	case SOP_const_f: case SOP_cvt: case SOP_exp2: case SOP_log2:
	case SOP_rcp: case SOP_rowmax: case SOP_rowsum: case SOP_convert:
	case SOP_mask_cols: case SOP_mask_causal: case SOP_fill:
	case SOP_gstore: case SOP_tmem_load:
	case SOP_tmem_store: case SOP_tmem_alloc: case SOP_tmem_free:
		if (in->op == SOP_cvt && dv && ty_isint(dv->ty))
			p->v[in->dst] = wrap(val(p, in->a[0]), dv->ty);
		return true;
	case SOP_param:
		p->v[in->dst] = s->params[in->r[0]->index];
		return true;
	case SOP_special:
		p->v[in->dst] = in->imm == SP_WARP ? p->warp : in->imm == SP_TID ?
			p->warp * 32 : 0;
		p->lanevar[in->dst] = in->imm == SP_LANE || in->imm == SP_TID;
		return true;
	case SOP_mov:
		if (dv->ty != TY_FRAG) {
			p->v[in->dst] = val(p, in->a[0]);
			p->lanevar[in->dst] = p->lanevar[in->a[0]];
		}
		return true;
	case SOP_neg:
		if (dv->ty != TY_FRAG)
			p->v[in->dst] = wrap(-val(p, in->a[0]), dv->ty);
		return true;
	case SOP_not:
		p->v[in->dst] = !val(p, in->a[0]);
		return true;
	case SOP_bnot:
		p->v[in->dst] = wrap(~val(p, in->a[0]), dv->ty);
		return true;
	case SOP_select:
		p->v[in->dst] = val(p, in->a[0]) ? val(p, in->a[1]) :
			val(p, in->a[2]);
		return true;
	case SOP_all_eq:
		/* data: random under random interleavings, else false (the
		 * body of 'if !all_eq(...)' runs) */
		p->v[in->dst] = s->mode == 2 && (rnd(s) & 1);
		return true;
	case SOP_tilefield: {
		int slot = (int)(in->a[0] % 8);
		p->v[in->dst] = p->tile[slot][in->imm];
		return true;
	}
	case SOP_mbar_wait: {
		b = mbar_at(s, in, in->r[0], val(p, in->ri[0]));
		if (b < 0)
			return true;
		int64_t par = val(p, in->a[0]) & 1;
		Mbar *m = &s->mb[b];
		if ((m->phase & 1) == par) {
			p->state = B_MBAR;
			p->bar = b;
			p->want = par;
			p->at = in;
			return false;
		}
		int64_t obs = m->phase - 1, last = p->seen[b];
		char a[64];
		if ((last == -2 ? obs > 0 : obs > last + 1) || (last != -2 &&
		    obs == last))
			snprintf(a, sizeof a, "%s[%d]", m->r->name, m->idx);
		if (last == -2 ? obs > 0 : obs > last + 1) {
			fail(s, in->span, "phase-skip", "this wait on '%s' passed "
				"%s: an arriver got two phases ahead of it", a,
				last == -2 ? "after the first two phases" :
				"two phases after the one it saw last");
			note_traces(s, p);
		} else if (last != -2 && obs == last) {
			fail(s, in->span, "phase-reuse", "this wait on '%s' passed "
				"on the phase it had already seen%s: its parity "
				"did not flip", a, "");
			note_traces(s, p);
		}
		p->seen[b] = obs;
		if (obs >= 0) {  /* acquire: what the phase's arrivers did */
			vc_join(s, p->vc, s->done[b][obs & 1]);
			if (p->vc[VB(s, b)] < obs + 1)
				p->vc[VB(s, b)] = obs + 1;
		}
		trace(p, in->span, "waited here", obs);
		return true;
	}
	case SOP_mbar_arrive: case SOP_mbar_expect:
		b = mbar_at(s, in, in->r[0], val(p, in->ri[0]));
		if (b < 0)
			return true;
		if (in->op == SOP_mbar_expect) {
			s->mb[b].tx += val(p, in->a[0]);
			mbar_arrive(s, p, in, b, 1 * (elect ? 1 : 32));
		} else {
			mbar_arrive(s, p, in, b, in->imm > 1 ? in->imm *
				arrivals(elect) : arrivals(elect));
		}
		trace(p, in->span, "arrived here", s->mb[b].phase);
		return true;
	case SOP_bar_sync: case SOP_bar_arrive: {
		int64_t ix = val(p, in->ri[0]);
		if (ix < 0 || ix >= in->r[0]->count) {
			char a[80], c[64];
			snprintf(a, sizeof a, "%s[%lld]", in->r[0]->name,
				(long long)ix);
			snprintf(c, sizeof c, "%d elements", in->r[0]->count);
			fail(s, in->span, "index-range", "'%s' is outside the "
				"array: it has %s", a, c);
			return true;
		}
		int id = (int)(in->r[0]->bar_id + ix);
		Nbar *n = &s->nb[id];
		if (n->who & (1u << self)) {
			fail(s, in->span, "nbar-twice", "'%s' arrives on named "
				"barrier '%s' a second time before it completes: an "
				"arrive where a sync was needed", pname(s, p),
				in->r[0]->name);
			note_traces(s, p);
			return true;
		}
		n->who |= 1u << self;
		n->arrived += 32;
		int64_t gen = n->gen;
		vc_join(s, s->nbvc[id][0], p->vc);
		p->vc[self]++;
		if (n->arrived >= n->count) {
			n->arrived = 0;
			n->who = 0;
			n->gen++;
			memcpy(s->nbvc[id][1], s->nbvc[id][0], s->nvc * sizeof(Clk));
			memset(s->nbvc[id][0], 0, s->nvc * sizeof(Clk));
			if (in->op == SOP_bar_sync)
				vc_join(s, p->vc, s->nbvc[id][1]);
		}
		trace(p, in->span, in->op == SOP_bar_sync ? "synced here" :
			"arrived here", -1);
		if (in->op == SOP_bar_sync && n->gen == gen) {
			p->state = B_NBAR;
			p->bar = id;
			p->want = gen;
			p->at = in;
		}
		return true;  /* the arrival happened; blocking is a state */
	}
	case SOP_tma_load: {
		b = mbar_at(s, in, in->r[2], val(p, in->ri[2]));
		if (b < 0)
			return true;
		range_of(in->r[1], val(p, in->ri[1]), &lo, &hi);
		Rec *w = acc_write(s, p, in, lo, hi, true, geometry(in->r[1]), 0,
			in->r[1]->shape[0]);
		emit_event(s, EV_TMA, self, b, tma_bytes(in->r[0]));
		s->ev[s->nev - 1].rec = w ? (int)(w - s->rec) : -1;
		return true;
	}
	case SOP_tma_store:
		range_of(in->r[1], val(p, in->ri[1]), &lo, &hi);
		acc_read(s, p, in, lo, hi, true, geometry(in->r[1]), 0,
			in->r[1]->shape[0]);
		p->bulk_open++;
		return true;
	case SOP_tma_commit:
		if (p->bulk_open) {
			p->bulk_open = 0;
			p->bulk_groups++;
			p->bulk_seq++;
			emit_event(s, EV_BULK, self, -1, 0);
		}
		return true;
	case SOP_tma_wait:
		if (p->bulk_groups > in->imm) {
			p->state = B_BULK;
			p->want = in->imm;
			p->at = in;
			return false;
		}
		retire_reads(s, p, true, p->bulk_seq - p->bulk_groups);
		return true;
	case SOP_wgmma: {
		int g = 16 + (p->sp->part->warp_lo + p->warp) / 4 % 8;
		Nbar *gate = &s->nb[g];
		int64_t ggen = gate->gen;
		vc_join(s, s->nbvc[g][0], p->vc);
		gate->arrived += 32;
		if (gate->arrived >= gate->count) {
			gate->arrived = 0;
			gate->gen++;
			memcpy(s->nbvc[g][1], s->nbvc[g][0], s->nvc * sizeof(Clk));
			memset(s->nbvc[g][0], 0, s->nvc * sizeof(Clk));
			vc_join(s, p->vc, s->nbvc[g][1]);
		} else {
			p->state = B_NBAR;
			p->bar = g;
			p->want = ggen;
			p->at = in;
		}
		/* one operation per warpgroup: its shared-memory reads belong
		 * to the warpgroup's first warp, retired by that warp's wait */
		for (int k = 1; k <= 2 && p->sp->part->warp_lo % 4 + p->warp %
		    4 == 0; k++)
			if (in->r[k]) {
				/* A with arow= reads the warpgroup's 64 rows */
				const Res *x = in->r[k];
				int64_t r0 = k == 1 ? in->roff[1] : 0;
				int64_t r1 = k == 1 && !in->trans[1] ? r0 + 64 :
					x->shape[0];
				range_of(x, val(p, in->ri[k]), &lo, &hi);
				acc_read(s, p, in, lo, hi, false, geometry(x), r0, r1);
			}
		set_inflight(p, in->dst);
		if (in->a[1])
			set_inflight(p, in->a[1]);
		p->wg_open++;
		return true;
	}
	case SOP_wgmma_commit:
		if (p->wg_open) {
			p->wg_open = 0;
			p->wg_groups++;
			p->wg_seq++;
			emit_event(s, EV_WGMMA, self, -1, 0);
		}
		return true;
	case SOP_wgmma_wait: {
		if (p->wg_groups > in->imm) {
			p->state = B_WGMMA;
			p->want = in->imm;
			p->at = in;
			return false;
		}
		int upto = p->wg_seq - p->wg_groups;
		retire_reads(s, p, false, upto);
		int n = 0;
		for (int i = 0; i < p->ninfl; i++)
			if (p->inflight[p->infl[i]] <= upto)
				p->inflight[p->infl[i]] = 0;
			else
				p->infl[n++] = p->infl[i];
		p->ninfl = n;
		return true;
	}
	case SOP_tc_mma:
		p->tc_inflight++;
		emit_event(s, EV_TC, (int)(p - s->p), -1, 0);
		return true;
	case SOP_tc_commit:
		b = mbar_at(s, in, in->r[0], val(p, in->ri[0]));
		if (b < 0)
			return true;
		emit_event(s, EV_TC, self, b, 0);
		s->ev[s->nev - 1].vc = s->nvfree ? s->vfree[--s->nvfree] :
			NEWARR(&s->ctx->scratch, Clk, s->nvc);
		memcpy(s->ev[s->nev - 1].vc, p->vc, s->nvc * sizeof(Clk));
		p->vc[self]++;
		return true;
	case SOP_fence:
		if (in->imm == FENCE_ASYNC_SMEM)
			for (int i = 0; i < s->nrec; i++)
				if (s->rec[i].live && s->rec[i].kind == A_GENW &&
				    s->rec[i].proc == self)
					s->rec[i].dirty = false;
		return true;
	default:
		if (dv && dv->ty != TY_FRAG && in->na == 2) {
			p->v[in->dst] = wrap(arith(in->op, val(p, in->a[0]),
				val(p, in->a[1]), p->sp->vals[in->a[0]].ty), dv->ty);
			p->lanevar[in->dst] = p->lanevar[in->a[0]] ||
				p->lanevar[in->a[1]];
		}
		return true;
	}
}

/* The coordinates of work index i of a tile loop over grid d (total
 * tiles), in the order ptxgen.c's gen_tile lowers: linear (lpt: from the
 * end), or grouped by (x, y) planes when the loop has a group operand. */
static void
tile_at(const Sim *s, Proc *p, const SirIns *in, const int64_t *d,
    int64_t total, int64_t i)
{
	int64_t *t = p->tile[in->dst % 8];
	bool lpt = s->k->order == ORD_LPT;

	if (in->na == 4) {
		int64_t np = d[0] * d[1], gr = val(p, in->a[3]);
		gr = gr < 1 ? 1 : gr > np ? np : gr;
		int64_t sec = i / (gr * d[2]), r = i - sec * gr * d[2];
		int64_t gs = np - sec * gr < gr ? np - sec * gr : gr;
		int64_t pl = sec * gr + r % gs;
		t[0] = pl % d[0];
		t[1] = pl / d[0];
		t[2] = lpt ? d[2] - 1 - r / gs : r / gs;
		return;
	}
	int64_t lin = lpt ? total - 1 - i : i;
	t[0] = lin % d[0];
	t[1] = lin / d[0] % d[1];
	t[2] = lin / d[0] / d[1];
}

/* Start a structured instruction: push its body (tile loop, for, if,
 * elect).  Returns true when it was one. */
static bool
enter(Sim *s, Proc *p, const SirIns *in)
{
	Frame *f;

	switch (in->op) {
	case SOP_if: {
		const SirBlock *b = val(p, in->a[0]) ? in->body : in->els;
		if (b && b->n && push(p, b, NULL) && p->lanevar[in->a[0]])
			/* a condition on lane or tid holds for some lanes: their
			 * arrivals count one each, as under 'elect' */
			p->fr[p->depth - 1].elect = true;
		return true;
	}
	case SOP_elect:
		/* the elected lane: one per partition, or one per warp */
		if (in->imm || p->warp == 0)
			push(p, in->body, in);
		return true;
	case SOP_for:
		if (val(p, in->a[0]) >= val(p, in->a[1]))
			return true;
		push(p, in->body, in);
		f = &p->fr[p->depth - 1];
		f->i = val(p, in->a[0]);
		f->hi = val(p, in->a[1]);
		f->step = val(p, in->a[2]);
		p->v[in->dst] = f->i;
		return true;
	case SOP_tile: {
		int64_t d[3] = {1, 1, 1}, total = 1;
		for (int k = 0; k < in->na && k < 3; k++)
			d[k] = val(p, in->a[k]);
		for (int k = 0; k < 3; k++)
			total *= d[k] > 0 ? d[k] : 0;
		/* ctaid -1: the last tile of a one-tile-per-CTA grid */
		int64_t first = s->ctaid < 0 ? total - 1 : s->ctaid;
		if (first >= total || first < 0)
			return true;
		push(p, in->body, in);
		f = &p->fr[p->depth - 1];
		f->i = first;
		f->hi = s->k->order == ORD_SINGLE ? first + 1 : total;
		f->step = s->k->order == ORD_SINGLE ? 1 : s->nctaid;
		f->iter = 0;
		tile_at(s, p, in, d, total, f->i);
		p->tile[in->dst % 8][3] = 0;
		return true;
	}
	case SOP_exit:
		p->depth = 0;
		return true;
	}
	return false;
}

/* The end of a loop body: next iteration or pop. */
static void
loop_end(Sim *s, Proc *p)
{
	Frame *f = &p->fr[p->depth - 1];
	const SirIns *in = f->loop;

	if (in && in->op == SOP_for) {
		f->i += f->step;
		if (f->i < f->hi) {
			p->v[in->dst] = f->i;
			f->pc = 0;
			return;
		}
	} else if (in && in->op == SOP_tile) {
		f->i += f->step;
		f->iter++;
		if (f->i < f->hi) {
			int64_t d[3] = {1, 1, 1}, total = f->hi;
			for (int k = 0; k < in->na && k < 3; k++)
				d[k] = val(p, in->a[k]);
			tile_at(s, p, in, d, total, f->i);
			p->tile[in->dst % 8][3] = f->iter;
			f->pc = 0;
			return;
		}
	}
	p->depth--;
}

/* Run one process until it blocks, finishes, or completes one
 * synchronizing instruction (an interleaving point). */
static void
step_proc(Sim *s, Proc *p)
{
	while (p->depth > 0) {
		Frame *f = &p->fr[p->depth - 1];
		if (f->pc >= f->b->n) {
			loop_end(s, p);
			continue;
		}
		int k = f->skip[f->pc];
		if (k && p->steps + k <= MAXSTEPS / 4 && s->steps + k <=
		    MAXSTEPS) {  /* as if stepped one by one */
			p->steps += k;
			s->steps += k;
			f->pc += k;
			continue;
		}
		const SirIns *in = &f->b->v[f->pc];
		if (++p->steps > MAXSTEPS / 4 || ++s->steps > MAXSTEPS) {
			fail(s, in->span, "runaway", "a run of the schedule did "
				"not finish%s%s", "", "");
			p->depth = 0;
			break;
		}
		if (in->body || in->op == SOP_exit) {
			f->pc++;
			enter(s, p, in);
			continue;
		}
		if (!exec(s, p, in, f->elect))
			return;  /* blocked: retried when it may pass */
		f->pc++;
		int eff = sir_ops[in->op].eff;
		if (eff == E_SYNC || eff == E_ASYNC || p->state != B_RUN)
			return;
	}
	p->state = B_DONE;
	if (p->bulk_groups || p->bulk_open) {
		fail(s, p->sp->part->nspan, "exit-pending", "partition '%s' "
			"ends with bulk stores still reading shared memory; "
			"end with 'tma_wait 0'%s", pname(s, p), "");
	}
}

/* A blocked process whose condition now holds becomes runnable. */
static bool
ready(Sim *s, Proc *p)
{
	switch (p->state) {
	case B_RUN:
		return true;
	case B_MBAR:
		return (s->mb[p->bar].phase & 1) != p->want;
	case B_NBAR:
		return s->nb[p->bar].gen != p->want;
	case B_WGMMA:
		return p->wg_groups <= p->want;
	case B_BULK:
		return p->bulk_groups <= p->want;
	default:
		return false;
	}
}


/* Return an EV_TC clock for reuse. */
static void
vfree(Sim *s, Clk *vc)
{
	if (s->nvfree == s->vfcap) {
		Clk **v = NEWARR(&s->ctx->scratch, Clk *, 2 * s->vfcap +
			16);
		if (s->nvfree)
			memcpy(v, s->vfree, s->nvfree * sizeof *v);
		s->vfree = v;
		s->vfcap = 2 * s->vfcap + 16;
	}
	s->vfree[s->nvfree++] = vc;
}

/* Complete event e (TMA data landing, a group retiring, a tcgen05
 * operation finishing in order). */
static void
complete(Sim *s, int e)
{
	Ev ev = s->ev[e];

	memmove(&s->ev[e], &s->ev[e + 1], (size_t)(s->nev - e - 1) *
		sizeof *s->ev);
	s->nev--;
	Proc *p = &s->p[ev.proc];
	switch (ev.kind) {
	case EV_TMA:
		if (ev.rec >= 0 && s->rec[ev.rec].live &&
		    s->rec[ev.rec].kind == A_TMAW && s->rec[ev.rec].pending) {
			s->rec[ev.rec].pending = false;
			s->rec[ev.rec].bar = ev.bar;
			s->rec[ev.rec].tag = s->mb[ev.bar].phase + 1;
		}
		s->mb[ev.bar].tx -= ev.bytes;
		s->mb[ev.bar].bytes += ev.bytes;
		mbar_complete_if_done(s, ev.bar);
		break;
	case EV_BULK:
		p->bulk_groups--;
		break;
	case EV_WGMMA:
		p->wg_groups--;
		break;
	case EV_TC:
		if (ev.bar >= 0) {
			if (ev.vc) {
				vc_join(s, s->acc[ev.bar], ev.vc);
				vfree(s, ev.vc);
			}
			mbar_arrive(s, NULL, NULL, ev.bar, 1);
		}
		else
			p->tc_inflight--;
		break;
	}
}

/* The deadlock report: one note per blocked partition (its first blocked
 * warp), at the wait, with what it waits for and its last sync steps. */
static void
deadlock(Sim *s)
{
	const Proc *first = NULL;

	for (int i = 0; i < s->np; i++)
		if (s->p[i].state != B_DONE && s->p[i].at) {
			first = &s->p[i];
			break;
		}
	if (!first)
		return;
	fail(s, first->at->span, "deadlock", "deadlock: every partition is "
		"blocked and nothing is in flight%s%s", "", "");
	const SirPart *shown[MAXPROC];
	int ns = 0;
	for (int i = 0; i < s->np; i++) {
		Proc *p = &s->p[i];
		bool dup = false;
		for (int k = 0; k < ns; k++)
			dup |= shown[k] == p->sp;
		if (p->state == B_DONE || dup || !p->at)
			continue;
		shown[ns++] = p->sp;
		if (p->state == B_MBAR) {
			const Mbar *m = &s->mb[p->bar];
			char what[96];
			if (m->tx >= 0)
				snprintf(what, sizeof what, "%lld arrival%s and %lld "
					"bytes missing", (long long)m->pending,
					m->pending == 1 ? "" : "s", (long long)m->tx);
			else
				snprintf(what, sizeof what, "%lld arrival%s missing, "
					"%lld bytes more than expected",
					(long long)m->pending, m->pending == 1 ? "" : "s",
					(long long)-m->tx);
			diag_note(s->ctx, p->at->span, "'%s' waits here on "
				"'%s' for parity %lld; it has completed %lld "
				"phase%s (%s)", pname(s, p), bname(m),
				(long long)p->want, (long long)m->phase,
				m->phase == 1 ? "" : "s", what);
		} else if (p->state == B_NBAR && p->bar >= 16) {
			diag_note(s->ctx, p->at->span, "'%s' waits here for the "
				"other warps of its warpgroup to issue this wgmma",
				pname(s, p));
		} else if (p->state == B_NBAR) {
			diag_note(s->ctx, p->at->span, "'%s' waits here on named "
				"barrier '%s' (%lld of %lld threads arrived)",
				pname(s, p), p->at->r[0]->name,
				(long long)s->nb[p->bar].arrived,
				(long long)s->nb[p->bar].count);
		} else {
			diag_note(s->ctx, p->at->span, "'%s' waits here for its "
				"own asynchronous operations", pname(s, p));
		}
		note_traces(s, p);
	}
}

/* The clocks of processes, mbarrier phases and named barriers, sized to
 * the processes and mbarriers in use (the same in every run). */
static void
clocks(Sim *s)
{
	Clk *c;

	s->nvc = (s->np + s->nmb + 3) & ~3;
	if (!s->clocks) {
		s->nclocks = s->np + 3 * s->nmb + 2 * 24;
		s->clocks = NEWARR(&s->ctx->scratch, Clk, (size_t)s->nclocks *
			s->nvc);
	}
	memset(s->clocks, 0, (size_t)s->nclocks * s->nvc * sizeof(Clk));
	c = s->clocks;
	for (int i = 0; i < s->np; i++, c += s->nvc)
		s->p[i].vc = c;
	for (int b = 0; b < s->nmb; b++) {
		s->acc[b] = c;
		s->done[b][0] = c + s->nvc;
		s->done[b][1] = c + 2 * s->nvc;
		c += 3 * s->nvc;
	}
	for (int i = 0; i < 24; i++, c += 2 * s->nvc) {
		s->nbvc[i][0] = c;
		s->nbvc[i][1] = c + s->nvc;
	}
	for (int e = 0; e < s->nev; e++)  /* left by a failed run */
		if (s->ev[e].vc)
			vfree(s, s->ev[e].vc);
}

static void
setup(Sim *s, const SirMod *m)
{
	s->np = 0;
	for (int i = 0; i < m->nparts; i++) {
		const SirPart *sp = m->parts[i];
		int nw = sp->part->warp_hi - sp->part->warp_lo + 1;
		for (int w = 0; w < nw && s->np < MAXPROC; w++) {
			Proc *p = &s->p[s->np++];
			int64_t *v = p->v, *seen = p->seen;
			int *inf = p->inflight;
			Ref *infl = p->infl;
			bool *lv = p->lanevar;
			memset(p, 0, offsetof(Proc, fr));  /* push sets a frame */
			p->sp = sp;
			p->warp = w;
			p->nwarps = nw;
			p->sim = s;
			p->inflight = inf && p->sp == sp ? inf :
				NEWARR(&s->ctx->scratch, int, sp->nvals + 1);
			memset(p->inflight, 0, (sp->nvals + 1) * sizeof(int));
			p->infl = infl ? infl : NEWARR(&s->ctx->scratch, Ref,
				sp->nvals + 1);
			p->lanevar = lv && p->sp == sp ? lv :
				NEWARR(&s->ctx->scratch, bool, sp->nvals + 1);
			memset(p->lanevar, 0, (sp->nvals + 1) * sizeof(bool));
			p->v = v ? v : NEWARR(&s->ctx->scratch, int64_t,
				sp->nvals + 1);
			memset(p->v, 0, (sp->nvals + 1) * sizeof *p->v);
			for (int k = 0; i < 64 && k < s->nkonst[i]; k++)
				p->v[s->konst[i][k]->dst] = s->konst[i][k]->imm;
			p->seen = seen ? seen : NEWARR(&s->ctx->scratch, int64_t,
				MAXBAR);
			push(p, &sp->body, NULL);
		}
	}
	s->nmb = 0;
	for (const Res *r = s->k->res; r; r = r->next) {
		if (r->kind == R_MBAR)
			for (int i = 0; i < r->count && s->nmb < MAXBAR; i++)
				s->mb[s->nmb++] = (Mbar){r, i, r->mcount, r->mcount,
					0, 0, 0};
		if (r->kind == R_NBAR)
			for (int i = 0; i < r->count && r->bar_id + i < 16; i++)
				s->nb[r->bar_id + i] = (Nbar){r->threads, 0, 0, 0};
	}
	for (int i = 0; i < s->np; i++)
		for (int b = 0; b < s->nmb; b++)
			s->p[i].seen[b] = -2;
	clocks(s);
	/* wgmma is warpgroup-collective: the operation starts when all the
	 * warpgroup's warps have issued it, a rendezvous like bar.sync */
	for (int g = 0; g < 8; g++)
		s->nb[16 + g] = (Nbar){0, 0, 0, 0};
	for (int i = 0; i < s->np; i++) {
		const Part *pt = s->p[i].sp->part;
		s->nb[16 + (pt->warp_lo + s->p[i].warp) / 4 % 8].count += 32;
	}
	s->nrec = 0;
	s->nev = 0;
	s->steps = 0;
}

/* The next move: a process, MAXPROC + an event, or -1 when none can
 * move.  The candidates are the ready processes, in order, then the events
 * their queues allow: bulk and wgmma groups and the tcgen05 queue complete
 * in order per process, TMA loads in any order.  Mode 0 takes the first
 * candidate, mode 1 the first event (event 0 is always allowed), mode 2 a
 * random one; modes 0 and 1 look no further than their pick. */
static int
next(Sim *s)
{
	int cand[MAXPROC + MAXEV], n = 0;
	uint32_t seen[4] = {0};  /* by event kind: processes queued */

	if (s->mode == 1 && s->nev)
		return MAXPROC;
	for (int i = 0; i < s->np; i++)
		if (s->p[i].state != B_DONE && ready(s, &s->p[i])) {
			if (s->mode < 2)
				return i;
			cand[n++] = i;
		}
	if (s->mode < 2)
		return s->nev ? MAXPROC : -1;
	for (int e = 0; e < s->nev; e++) {
		uint32_t bit = 1u << s->ev[e].proc;
		if (s->ev[e].kind == EV_TMA || !(seen[s->ev[e].kind] & bit))
			cand[n++] = MAXPROC + e;
		seen[s->ev[e].kind] |= bit;
	}
	return n ? cand[rnd(s) % (uint64_t)n] : -1;
}

/* One run under the current mode; false when it failed. */
static bool
run(Sim *s)
{
	setup(s, s->m);
	while (!s->failed) {
		int pick = next(s);
		if (pick < 0) {
			for (int i = 0; i < s->np; i++)
				if (s->p[i].state != B_DONE) {
					deadlock(s);
					return false;
				}
			return true;
		}
		if (pick < MAXPROC) {
			Proc *p = &s->p[pick];
			if (p->state == B_NBAR)
				vc_join(s, p->vc, s->nbvc[p->bar][1]);
			p->state = B_RUN;
			step_proc(s, p);
		} else {
			complete(s, pick - MAXPROC);
		}
	}
	return false;
}

/* Every mbarrier that is waited on must have a producer somewhere. */
static void
scan(const SirBlock *b, const Res *r, const SirIns **wait, bool *prod)
{
	for (int i = 0; i < b->n; i++) {
		const SirIns *in = &b->v[i];
		if (in->op == SOP_mbar_wait && in->r[0] == r && !*wait)
			*wait = in;
		if ((in->op == SOP_mbar_arrive || in->op == SOP_mbar_expect ||
		    in->op == SOP_tc_commit) && in->r[0] == r)
			*prod = true;
		if (in->op == SOP_tma_load && in->r[2] == r)
			*prod = true;
		if (in->body)
			scan(in->body, r, wait, prod);
		if (in->els)
			scan(in->els, r, wait, prod);
	}
}

static bool
producers(Ctx *ctx, const SirMod *m)
{
	bool ok = true;

	for (const Res *r = m->k->res; r; r = r->next) {
		const SirIns *w = NULL;
		bool prod = false;
		if (r->kind != R_MBAR)
			continue;
		for (int i = 0; i < m->nparts; i++)
			scan(&m->parts[i]->body, r, &w, &prod);
		if (w && !prod) {
			diag_error(ctx, w->span, "'%s' is waited on but nothing "
				"arrives on it: no arrive, expect, TMA or commit "
				"[no-producer]", r->name);
			diag_note(ctx, r->nspan, "'%s' declared here", r->name);
			ok = false;
		}
	}
	return ok;
}

/* The values to explore for each integer param: its 'verify' list, or
 * 1 and 2. */
static int
domain(const Kernel *k, const Res *p, int64_t *out)
{
	if (k->verify)
		for (int i = 0; i < k->verify->attrs.n; i++) {
			const Node *a = k->verify->attrs.v[i];
			if (a->name != p->name || !a->a)
				continue;
			int n = a->a->kind == N_TUPLE ? a->a->kids.n : 1;
			for (int j = 0; j < n && j < 16; j++) {
				const Node *e = a->a->kind == N_TUPLE ?
					a->a->kids.v[j] : a->a;
				out[j] = e->kind == N_INT ? e->ival : 1;
			}
			return n < 16 ? n : 16;
		}
	out[0] = 1;
	out[1] = 2;
	return 2;
}

void
pass_verify(Ctx *ctx, SirMod *m)
{
	Sim *s;
	const Res *ps[64];
	int64_t dom[64][16];
	int nd[64], np = 0;
	long combos = 1;

	if (ctx->no_verify || !producers(ctx, m))
		return;
	int nbar = 0;
	for (const Res *r = m->k->res; r; r = r->next)
		if (r->kind == R_MBAR)
			nbar += r->count;
	if (nbar > MAXBAR) {
		diag_warn(ctx, "verify-limit", m->k->span, "the verifier does not "
			"run: %d mbarrier elements, more than %d", nbar, MAXBAR);
		return;
	}
	s = NEW(&ctx->scratch, Sim);
	s->ctx = ctx;
	s->m = m;
	s->k = m->k;
	skips(s, m);
	for (const Res *r = m->k->res; r; r = r->next)
		if (r->kind == R_PARAM && np < 64) {
			ps[np] = r;
			nd[np] = ty_isint(r->ety) ? domain(m->k, r, dom[np]) : 1;
			if (!ty_isint(r->ety))
				dom[np][0] = 1;
			if (combos <= 512)  /* 64 params of 16 values overflow */
				combos *= nd[np];
			np++;
		}
	if (combos > 512)
		combos = 512;  /* beyond that, a deterministic sample */
	long total = 0;
	for (long c = 0; c < combos && !s->failed; c++) {
		if (total > MAXTOTAL) {  /* large 'verify' values */
			diag_warn(ctx, "verify-limit", m->k->span, "the verifier "
				"stopped after %ld of %ld shape classes: more than "
				"%d steps in all", c, combos, MAXTOTAL);
			break;
		}
		long rest = c * (combos == 512 ? 7919 : 1);
		size_t len = 0;
		for (int i = 0; i < np; i++) {
			int64_t v = dom[i][rest % nd[i]];
			rest /= nd[i];
			s->params[ps[i]->index] = v;
			if (ty_isint(ps[i]->ety) && len < sizeof s->shape - 32)
				len += (size_t)snprintf(s->shape + len,
					sizeof s->shape - len, "%s%s=%lld",
					len ? " " : "", ps[i]->name, (long long)v);
		}
		int64_t grids[][2] = {{1, 0}, {2, 0}, {2, 1}};
		for (size_t g = 0; g < COUNT(grids) && !s->failed; g++) {
			if (m->k->order == ORD_SINGLE && g == 1)
				continue;
			s->nctaid = grids[g][0];
			s->ctaid = grids[g][1];
			if (m->k->order == ORD_SINGLE)
				s->nctaid = 1, s->ctaid = g == 2 ? -1 : 0;
			char *tail = s->shape + len;
			if (m->k->order == ORD_SINGLE)
				snprintf(tail, sizeof s->shape - len, "%s%s tile",
					len ? ", " : "", g == 2 ? "the last" : "the first");
			else
				snprintf(tail, sizeof s->shape - len, "%s%lld CTA%s, "
					"CTA %lld", len ? ", " : "",
					(long long)s->nctaid, s->nctaid > 1 ? "s" : "",
					(long long)s->ctaid);
			for (int mode = 0; mode < 6 && !s->failed; mode++) {
				s->mode = mode < 2 ? mode : 2;
				s->rng = 0x9e3779b97f4a7c15ull * (uint64_t)(mode + 1) ^
					(uint64_t)c;
				run(s);
				total += s->steps;
			}
		}
	}
}
