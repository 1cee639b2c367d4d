/* regs.c: the regs pass, a static estimate of each partition's register
 * pressure, so that a schedule whose register tiles cannot fit its budget
 * is reported before ptxas spills them to local memory.
 * Requires a SirMod that passed sir_verify (after layout and legalize).
 * Ensures: in every partition the register tiles live at once, plus the
 * calibrated overhead below, fit the partition's budget (its warpgroup's
 * 'regs', else what the entry gives a thread); otherwise a warning
 * (-Wregister-pressure), or an error when the tiles alone cannot fit.
 * The IR is not changed.
 *
 * The estimate is a liveness analysis over the structured program (loops
 * to a fixed point), counting per-thread registers of live values:
 * - a tile takes elements x bytes / 4 / the threads that hold it, from
 *   its layout (tile_regs); a scalar one register (two for 64-bit);
 * - an elementwise result may reuse the registers of an operand that dies
 *   there, so an instruction costs max(live before, live after);
 * - a wgmma's accumulator and register A operand stay live until the
 *   wgmma_wait that retires its group: the tensor cores own them;
 * - a row reduction that keeps its operand live holds a quarter of the
 *   operand's registers as temporaries (its tree's first levels);
 * - ptxas hoists a tmem_load above the code since the previous tmem_load
 *   of the same straight-line block (to hide the tensor-memory latency),
 *   so its registers are live from there: chunked loops of
 *   'tmem_load x; tmem_store f(x)' hold two chunks, not one (a quarter
 *   of the second under a setmaxnreg budget, where ptxas hoists less);
 * - a tile made of one fill value takes one register, and one made only
 *   for the store after it (cvt before smem_store) none; so do element
 *   index tiles (rowid, colid: a base register plus immediates) and pure
 *   arithmetic on them, which ptxas computes element by element where
 *   they are used (an ALiBi bias, issue #22);
 * - an elementwise result or a gather used once, by the elementwise
 *   operation after it, takes none: ptxas computes such a subexpression element by
 *   element where it is used (a score modifier's 'exp2(s) + log2(s)');
 * - a bool tile (a mask) takes a register per 32 elements a thread holds:
 *   ptxas evaluates comparisons and logic where a select consumes them,
 *   or keeps predicates packed (a mask_mod of issue #22);
 * - a gather whose index depends on rowid alone (colid alone) loads once
 *   per row (column) of the thread's and copies (ptx/ptxtile.c), so it,
 *   and what is computed from it alone, takes a register per row
 *   (column) a thread holds (sir_elem_deps);
 * - addresses, loop counters, predicates and the like that the IR does
 *   not show: OVERHEAD registers.
 * OVERHEAD and the rules above are calibrated against ptxas 13.0 on the
 * -D space of the shipped schedules (tests/sweep): every variant it
 * accepts unflagged assembles without spills, and it flags those that
 * spilled.  The error needs no calibration: the tiles of the first rule
 * alone, with results reusing dying operands, already exceed the budget. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"
#include "check/check.h"

enum {
	OVERHEAD = 8,   /* registers the IR does not show */
	NSHOW = 4,      /* tiles named in the message */
	MAXFLIGHT = 64, /* wgmmas followed in flight; more are not tracked */
};

typedef struct Retire {
	const SirIns *wait;  /* the wgmma_wait */
	Ref r;               /* a tile it releases */
} Retire;

/* A set of values, with the registers of its tiles and of its scalars
 * kept up to date as it changes: an instruction costs O(1), not a scan
 * of every value (that made long bodies quadratic, issue #29).  Every
 * change is logged (value << 1 | was it in), so that a branch or a loop
 * body can be walked on the set itself and undone, in time proportional
 * to what it changed rather than to the size of the set. */
typedef struct Set {
	uint64_t *w;
	int regs[2];         /* [0] scalars, [1] tiles */
	uint32_t *log;
	int nlog, caplog;
} Set;

/* Where report() wants the live set: measure() only remembers the
 * instruction, and a second walk copies the set there. */
typedef struct Capture {
	const SirIns *at;
	bool after;          /* the set after the instruction, not before */
	Set *out;
} Capture;

typedef struct Est {
	Ctx *ctx;
	const SirPart *sp;
	int words;           /* uint64_t words of a value set */
	int *size;           /* registers per thread, per value */
	bool *istile;
	bool *uniform;       /* a tile of one value (find_defs) */
	bool budgeted;       /* the partition has a setmaxnreg budget */
	const SirIns **def;  /* the first definition of each value */
	Retire *ret;         /* sorted by wait for the lookup */
	int nret, capret;
	uint32_t *rm, *seen; /* join(): stamps, one epoch per walk */
	uint32_t epoch;
	uint32_t *adds;      /* split(): value << 1 | removed, a stack */
	int nadds, capadds;
	Capture cap[2];      /* report()'s second walk: tiles, est */
	/* wgmma groups open and committed, for the retire walk */
	const SirIns **open, **queue;
	int nopen, nqueue, *qgroup, ngroups;
	/* the result */
	int tiles;           /* tiles alone, the error's lower bound */
	int est;             /* tiles, temporaries, hoists and scalars */
	int at_tiles;        /* tiles and temporaries at the peak */
	int temps;           /* of which temporaries */
	const SirIns *at;    /* where est peaks */
	bool at_after;       /* at the set after it, not before */
	const SirIns *tiles_at;  /* where the tiles alone peak */
	bool tiles_after;
} Est;

/* Registers per thread of a register tile: elements x bytes / 4 / the
 * threads holding it.  A wgmma fragment is spread over the 128 threads
 * of a warpgroup; tmem_rows gives a thread one row; a row vector of a
 * wgmma fragment keeps a thread's two rows, of tmem_rows its one row.
 * This agrees with ptx/frag.c's frag_shape. */
static int
tile_regs(const SirVal *v)
{
	const Layout *l = v->lay;
	int64_t bytes = ty_bytes(v->ety) ? ty_bytes(v->ety) : 4;

	switch (l ? l->kind : 0) {
	case LK_WGMMA_ACC:
	case LK_WGMMA_A:
		return (int)((64 * (int64_t)v->n * bytes + 511) / 512);
	case LK_TMEM_ROWS:
		return (int)(((int64_t)v->n * bytes + 3) / 4);
	case LK_ROWS:
		if (l->parent && l->parent->kind == LK_BLOCKED)
			return l->parent->m * l->parent->tpr /
				l->parent->threads;
		return l->parent && l->parent->kind == LK_WGMMA_ACC ? 2 : 1;
	case LK_BLOCKED:  /* m x n over 'threads' threads */
		return (int)(((int64_t)l->m * l->n / l->threads * bytes + 3) /
			4);
	case LK_COLS:     /* n over a row's tpr threads; of a fragment,
			   * a quarter of its columns */
		if (l->parent->kind == LK_WGMMA_ACC)
			return l->n / 4;
		return (int)(((int64_t)l->n / l->parent->tpr * bytes + 3) / 4);
	default:
		return 0;
	}
}

static int
val_regs(const SirVal *v)
{
	if (v->isconst)
		return 0;  /* an immediate */
	switch (v->ty) {
	case TY_FRAG:
		return tile_regs(v);
	case TY_I32: case TY_U32: case TY_F32:
		return 1;
	case TY_I64: case TY_U64: case TY_TILE:
		return 2;
	default:
		return 0;  /* predicates have their own file */
	}
}

static Set *
set_new(Est *e)
{
	Set *s = NEW(&e->ctx->scratch, Set);

	s->w = NEWARR(&e->ctx->scratch, uint64_t, (size_t)e->words);
	return s;
}

static void
set_copy(const Est *e, Set *d, const Set *s)
{
	memcpy(d->w, s->w, (size_t)e->words * sizeof *d->w);
	d->regs[0] = s->regs[0];
	d->regs[1] = s->regs[1];
}

static bool
set_has(const Set *s, Ref r)
{
	return s->w[r / 64] >> (r % 64) & 1;
}

static void
set_flip(const Est *e, Set *s, Ref r, bool was)
{
	if (s->nlog == s->caplog) {
		int cap = s->caplog ? 2 * s->caplog : 256;
		s->log = arena_realloc(&e->ctx->scratch, s->log,
			(size_t)s->caplog * sizeof *s->log, (size_t)cap *
			sizeof *s->log);
		s->caplog = cap;
	}
	s->log[s->nlog++] = r << 1 | was;
	s->w[r / 64] ^= (uint64_t)1 << (r % 64);
	s->regs[e->istile[r]] += was ? -e->size[r] : e->size[r];
}

static void
set_add(const Est *e, Set *s, Ref r)
{
	if (r && !set_has(s, r))
		set_flip(e, s, r, false);
}

static void
set_del(const Est *e, Set *s, Ref r)
{
	if (set_has(s, r))
		set_flip(e, s, r, true);
}

/* Undoes the changes logged since mark. */
static void
set_undo(const Est *e, Set *s, int mark)
{
	while (s->nlog > mark) {
		uint32_t x = s->log[--s->nlog];
		Ref r = x >> 1;
		s->w[r / 64] ^= (uint64_t)1 << (r % 64);
		s->regs[e->istile[r]] += x & 1 ? e->size[r] : -e->size[r];
	}
}

static void
set_clear(const Est *e, Set *s)
{
	for (int i = 0; i < e->words; i++)
		for (uint64_t w = s->w[i]; w; w &= w - 1)
			set_flip(e, s, (Ref)(i * 64 + __builtin_ctzll(w)), true);
}

static void
push_add(Est *e, uint32_t r)
{
	if (e->nadds == e->capadds) {
		int cap = e->capadds ? 2 * e->capadds : 64;
		e->adds = arena_realloc(&e->ctx->scratch, e->adds,
			(size_t)e->capadds * sizeof *e->adds, (size_t)cap *
			sizeof *e->adds);
		e->capadds = cap;
	}
	e->adds[e->nadds++] = r;
}

/* After a walk from set L to set T logged since mark: pushes onto
 * e->adds the values of T that L lacks but 'skip' (value << 1) and those
 * L had and T lost (value << 1 | 1), and undoes the walk.  Returns the
 * stack height before the pushes; a nested walk leaves the stack as it
 * found it. */
static int
split(Est *e, Set *s, int mark, Ref skip)
{
	uint32_t ep = ++e->epoch;
	int base = e->nadds;

	for (int k = mark; k < s->nlog; k++) {
		Ref r = s->log[k] >> 1;
		if (e->seen[r] == ep)
			continue;
		e->seen[r] = ep;  /* the first change: L's state */
		if (set_has(s, r) && !(s->log[k] & 1) && r != skip)
			push_add(e, r << 1);
		else if (!set_has(s, r) && (s->log[k] & 1))
			push_add(e, r << 1 | 1);
	}
	set_undo(e, s, mark);
	return base;
}

/* Adds the values split() and join() pushed since base. */
static void
add_back(Est *e, Set *live, int base)
{
	while (e->nadds > base) {
		uint32_t x = e->adds[--e->nadds];
		if (!(x & 1))
			set_add(e, live, x >> 1);
	}
}

static int
retire_cmp(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)((const Retire *)a)->wait;
	uintptr_t y = (uintptr_t)((const Retire *)b)->wait;

	return x < y ? -1 : x > y;
}

/* The first of the tiles 'in' retires, in e->ret sorted by wait. */
static int
retire_find(const Est *e, const SirIns *in)
{
	int lo = 0, hi = e->nret;

	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if ((uintptr_t)e->ret[mid].wait < (uintptr_t)in)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void
retire_add(Est *e, const SirIns *wait, Ref r)
{
	if (!r || !e->istile[r])
		return;
	if (e->nret == e->capret) {
		int cap = e->capret ? 2 * e->capret : 16;
		e->ret = arena_realloc(&e->ctx->scratch, e->ret,
			(size_t)e->capret * sizeof *e->ret, (size_t)cap *
			sizeof *e->ret);
		e->capret = cap;
	}
	e->ret[e->nret++] = (Retire){wait, r};
}

/* Which wgmma_wait retires each wgmma, in program order: a commit closes
 * the open group, 'wgmma_wait N' retires all but the N newest.  Loop
 * bodies are walked once; what a loop leaves in flight is retired by a
 * later wait, which keeps its tiles live across the loop. */
static void
retire_walk(Est *e, const SirBlock *b)
{
	for (int i = 0; i < b->n; i++) {
		const SirIns *in = &b->v[i];
		switch (in->op) {
		case SOP_wgmma:
			if (e->nopen + e->nqueue < MAXFLIGHT)
				e->open[e->nopen++] = in;
			break;
		case SOP_wgmma_commit:
			for (int k = 0; k < e->nopen; k++) {
				e->qgroup[e->nqueue] = e->ngroups;
				e->queue[e->nqueue++] = e->open[k];
			}
			e->nopen = 0;
			e->ngroups++;
			break;
		case SOP_wgmma_wait: {
			int keep = e->ngroups - (int)in->imm, n = 0;
			if (keep <= 0)
				break;
			for (int k = 0; k < e->nqueue; k++) {
				const SirIns *w = e->queue[k];
				if (e->qgroup[k] >= keep) {
					e->qgroup[n] = e->qgroup[k] - keep;
					e->queue[n++] = w;
					continue;
				}
				retire_add(e, in, w->dst);
				retire_add(e, in, w->a[1]);
			}
			e->nqueue = n;
			e->ngroups -= keep;
			break;
		}
		default:
			break;
		}
		if (in->body)
			retire_walk(e, in->body);
		if (in->els)
			retire_walk(e, in->els);
	}
}

/* A tile every definition of which is a fill, or pure arithmetic on such
 * tiles, holds one value: ptxas keeps it in one register.  An index tile
 * (rowid, colid) is one register plus immediates, and counts the same. */
static bool
varies(const Est *e, const SirIns *in)
{
	if (in->op == SOP_fill || in->op == SOP_rowid || in->op == SOP_colid)
		return false;
	if (sir_ops[in->op].eff != E_PURE)
		return true;
	for (int k = 0; k < in->na; k++)
		if (in->a[k] && e->istile[in->a[k]] && !e->uniform[in->a[k]])
			return true;
	return false;
}

static bool
find_defs(Est *e, const SirBlock *b)  /* a tile stopped being uniform? */
{
	bool ch = false;

	for (int i = 0; i < b->n; i++) {
		const SirIns *in = &b->v[i];
		if (in->dst && !e->def[in->dst])
			e->def[in->dst] = in;
		if (in->dst && e->uniform[in->dst] && varies(e, in)) {
			e->uniform[in->dst] = false;
			ch = true;
		}
		if (in->body)
			ch |= find_defs(e, in->body);
		if (in->els)
			ch |= find_defs(e, in->els);
	}
	return ch;
}

static void
count_uses(const SirBlock *b, int *uses)
{
	for (int i = 0; i < b->n; i++) {
		for (int k = 0; k < b->v[i].na; k++)
			uses[b->v[i].a[k]]++;
		if (b->v[i].body)
			count_uses(b->v[i].body, uses);
		if (b->v[i].els)
			count_uses(b->v[i].els, uses);
	}
}

/* A tile made only for the store that follows it ('smem_store B,
 * cvt(x, bf16)') is converted and stored piece by piece: it takes no
 * registers of its own. */
static void
streamed(Est *e, const SirBlock *b, const int *uses)
{
	const SirIns *nx = NULL;  /* the next instruction but constants */

	for (int i = b->n - 1; i >= 0; i--) {
		const SirIns *in = &b->v[i];
		if (i + 1 < b->n && b->v[i + 1].op != SOP_const_i &&
		    b->v[i + 1].op != SOP_const_f)
			nx = &b->v[i + 1];  /* constants print inline */
		if (in->dst && e->istile[in->dst] && uses[in->dst] == 1 && nx &&
		    sir_ops[in->op].eff == E_PURE && (nx->op == SOP_smem_store ||
		    nx->op == SOP_tmem_store || nx->op == SOP_gstore ||
		    nx->op == SOP_gscatter))
			for (int k = 0; k < nx->na; k++)
				if (nx->a[k] == in->dst)
					e->size[in->dst] = 0;
		if (in->body)
			streamed(e, in->body, uses);
		if (in->els)
			streamed(e, in->els, uses);
	}
}

/* Elementwise operations on whole tiles, which ptxas evaluates element
 * by element. */
static bool
elementwise(SirOp op)
{
	switch (op) {
	case SOP_add: case SOP_sub: case SOP_mul: case SOP_div: case SOP_rem:
	case SOP_min: case SOP_max: case SOP_eq: case SOP_ne: case SOP_lt: case SOP_le:
	case SOP_gt: case SOP_ge: case SOP_and: case SOP_or: case SOP_neg:
	case SOP_not: case SOP_select: case SOP_exp2: case SOP_log2:
	case SOP_rcp: case SOP_tanh: case SOP_sqrt: case SOP_rsqrt:
	case SOP_abs:
		return true;
	default:
		return false;
	}
}

/* A tile made by an elementwise operation or a gather for the one
 * elementwise operation after it in the same block (a subexpression of
 * a score modifier: 'exp2(s * c) + log2(s)', 'DOC[q] == DOC[k]'), or
 * for the row reduction of a blocked tile after it, is computed element
 * by element where it is used: it takes no registers of its own.  Only the
 * expression's result, and the tiles it reads, are live. */
static void
fused(Est *e, const SirPart *sp, const SirBlock *b, const int *uses)
{
	for (int i = 0; i < b->n; i++) {
		const SirIns *in = &b->v[i];
		if (in->body)
			fused(e, sp, in->body, uses);
		if (in->els)
			fused(e, sp, in->els, uses);
		if (!in->dst || !e->istile[in->dst] || uses[in->dst] != 1 ||
		    !(elementwise(in->op) || in->op == SOP_gload ||
		    (in->op == SOP_cvt && sp->vals[in->dst].lay &&
		    (sp->vals[in->dst].lay->kind == LK_BLOCKED ||
		    sp->vals[in->dst].lay->kind == LK_COLS))) ||
		    (sp->vals[in->dst].lay &&
		    sp->vals[in->dst].lay->kind == LK_ROWS))
			continue;
		for (int j = i + 1; j < b->n; j++) {
			const SirIns *u = &b->v[j];
			bool reads = false;
			for (int k = 0; k < u->na; k++)
				reads |= u->a[k] == in->dst;
			if (!reads)
				continue;
			if (elementwise(u->op) && u->dst && e->istile[u->dst])
				e->size[in->dst] = 0;
			/* a blocked tile's row reduction reads each element
			 * once, in order (ptx/ptxblock.c): 'rowsum(x * x)' */
			if ((u->op == SOP_rowsum || u->op == SOP_rowmax ||
			    u->op == SOP_colsum) &&
			    u->a[0] == in->dst && sp->vals[in->dst].lay &&
			    sp->vals[in->dst].lay->kind == LK_BLOCKED)
				e->size[in->dst] = 0;
			break;
		}
	}
}

static void block(Est *, const SirBlock *, Set *, bool);

/* Registers held beyond the live values at an instruction: reduction
 * temporaries. */
static int
temps_at(const Est *e, const SirIns *in, const Set *out)
{
	if ((in->op == SOP_rowmax || in->op == SOP_rowsum) &&
	    set_has(out, in->a[0]))
		return e->size[in->a[0]] / 4;
	return 0;
}

/* before: the live set before 'in'; ta, sa: the tile and scalar
 * registers live after it; tmp: its temporaries. */
static void
measure(Est *e, const SirIns *in, const Set *before, int ta, int sa,
	int tmp, int hoist)
{
	int tb = before->regs[1], sb = before->regs[0];
	int t = tb > ta ? tb : ta;
	int est = t + tmp + hoist + (sb > sa ? sb : sa);

	if (t > e->tiles) {
		e->tiles = t;
		e->tiles_at = in;
		e->tiles_after = !(tb > ta);
	}
	if (est <= e->est)
		return;
	e->est = est;
	e->at = in;
	e->at_after = !(tb > ta);
	e->at_tiles = t + tmp + hoist;
	e->temps = tmp + hoist;
}

static void
capture(Est *e, const SirIns *in, const Set *live, bool after)
{
	for (int k = 0; k < 2; k++)
		if (e->cap[k].at == in && e->cap[k].after == after)
			set_copy(e, e->cap[k].out, live);
}

/* live := then(live) | els(live), where els is the identity when there
 * is no else block, walked in place: then's changes are split off and
 * undone, els runs on live, and then's values are added back, with
 * those els removed but then kept. */
static void
join(Est *e, const SirBlock *then, const SirBlock *els, Set *live,
	bool meas)
{
	int mark = live->nlog, base, top;

	block(e, then, live, meas);
	base = split(e, live, mark, 0);
	if (els) {
		mark = live->nlog;
		block(e, els, live, meas);
		/* stamped only now: the walk of els stamps with its own */
		uint32_t rm = ++e->epoch, ep = ++e->epoch;
		top = e->nadds;
		for (int k = base; k < top; k++)
			if (e->adds[k] & 1)
				e->rm[e->adds[k] >> 1] = rm;
		for (int k = mark; k < live->nlog; k++) {
			Ref r = live->log[k] >> 1;
			if (e->seen[r] == ep)
				continue;
			e->seen[r] = ep;  /* the first change: L's state */
			if ((live->log[k] & 1) && !set_has(live, r) &&
			    e->rm[r] != rm)
				push_add(e, r << 1);  /* then kept it */
		}
	}
	add_back(e, live, base);
}

/* Liveness is a gen/kill problem, so a loop's fixed point is reached in
 * one walk: head = live | (body(live) - dst).  The measuring walk, from
 * head, is undone. */
static void
loop(Est *e, const SirIns *in, Set *live, bool meas)
{
	int mark = live->nlog, base;

	block(e, in->body, live, false);
	base = split(e, live, mark, in->dst);
	add_back(e, live, base);
	if (meas) {
		mark = live->nlog;
		block(e, in->body, live, true);
		set_undo(e, live, mark);
	}
	set_del(e, live, in->dst);
}

static void
uses(const Est *e, Set *live, const SirIns *in)
{
	for (int k = 0; k < in->na; k++)
		set_add(e, live, in->a[k]);
	for (int k = 0; k < 3; k++)
		set_add(e, live, in->ri[k]);
}

/* live: what is live after 'in' on entry, before it on return. */
static void
ins(Est *e, const SirIns *in, Set *live, bool meas, int hoist)
{
	switch (in->op) {
	case SOP_if:
		join(e, in->body, in->els ? in->els : NULL, live, meas);
		break;
	case SOP_elect:
		join(e, in->body, NULL, live, meas);
		break;
	case SOP_for:
	case SOP_tile:
		loop(e, in, live, meas);
		break;
	case SOP_exit:
		set_clear(e, live);
		return;
	default: {
		int ta = live->regs[1], sa = live->regs[0];
		int tmp = meas ? temps_at(e, in, live) : 0;
		if (meas)
			capture(e, in, live, true);
		/* an accumulating wgmma reads its accumulator */
		bool acc = (in->op == SOP_wgmma || in->op == SOP_mma_sync) &&
			in->imm;
		if (in->dst && !acc)
			set_del(e, live, in->dst);
		if (acc)
			set_add(e, live, in->dst);
		for (int k = retire_find(e, in); k < e->nret &&
		    e->ret[k].wait == in; k++)
			set_add(e, live, e->ret[k].r);
		uses(e, live, in);
		if (meas) {
			measure(e, in, live, ta, sa, tmp, hoist);
			capture(e, in, live, false);
		}
		return;
	}
	}
	uses(e, live, in);
}

/* Code ptxas cannot move a tensor-memory load across: barriers, fences,
 * branches. */
static bool
fixed(const SirIns *in)
{
	int eff = sir_ops[in->op].eff;

	return eff == E_SYNC || eff == E_CTRL || in->body;
}

static void
block(Est *e, const SirBlock *b, Set *live, bool meas)
{
	int *hoist = NULL;

	if (meas) {
		/* the registers of a hoisted tmem_load, at each instruction
		 * it is hoisted over */
		hoist = NEWARR(&e->ctx->scratch, int, (size_t)b->n + 1);
		for (int i = 0, last = -1; i < b->n; i++) {
			const SirIns *in = &b->v[i];
			if (fixed(in))
				last = -1;
			if (in->op != SOP_tmem_load)
				continue;
			int h = e->budgeted ? e->size[in->dst] / 4 :
				e->size[in->dst];
			for (int k = last + 1; last >= 0 && k < i; k++)
				hoist[k] += h;
			last = i;
		}
	}
	for (int i = b->n - 1; i >= 0; i--)
		ins(e, &b->v[i], live, meas, meas ? hoist[i] : 0);
}

/* The budget of a partition, and how to say where it comes from. */
static int
budget(const Kernel *k, const Part *p, char *why, size_t n)
{
	int lim = (65536 / k->threads) & ~7;

	if (p->regs) {
		snprintf(why, n, "regs=%d", p->regs);
		return p->regs;
	}
	if (k->maxnreg) {
		snprintf(why, n, "the entry's .maxnreg %d", k->maxnreg);
		return k->maxnreg;
	}
	if (lim > 255) {
		snprintf(why, n, "255, the most a thread can have");
		return 255;
	}
	snprintf(why, n, "%d, what threads=%d leaves a thread", lim,
		k->threads);
	return lim;
}

/* "'s' f32[64,256] 128": a live tile in the message. */
static void
show(const Est *e, Buf *b, Ref r)
{
	const SirVal *v = &e->sp->vals[r];
	const SirIns *d = e->def[r];

	if (v->name)
		buf_printf(b, "'%s' ", v->name);
	else
		buf_printf(b, "a '%s' result ", d ? sir_ops[d->op].name : "?");
	if (v->lay && v->lay->kind == LK_ROWS)
		buf_printf(b, "%s[%d] %d", ty_name(v->ety), v->m, e->size[r]);
	else
		buf_printf(b, "%s[%d,%d] %d", ty_name(v->ety), v->m, v->n,
			e->size[r]);
}

/* The live tiles of set s, largest first (ties in handle order, so the
 * text is deterministic). */
static int
biggest(const Est *e, const Set *s, Ref *out, int max)
{
	int n = 0;

	for (uint32_t r = 1; r < e->sp->nvals; r++) {
		if (!set_has(s, r) || !e->istile[r] || !e->size[r])
			continue;
		int i = n < max ? n++ : max - 1;
		if (n == max && i == max - 1 && out[i] &&
		    e->size[out[i]] >= e->size[r])
			continue;
		while (i > 0 && e->size[out[i - 1]] < e->size[r]) {
			out[i] = out[i - 1];
			i--;
		}
		out[i] = r;
	}
	return n;
}

static void
report(Est *e, const Part *p, int lim, const char *why)
{
	Ctx *ctx = e->ctx;
	bool err = e->tiles > lim;
	const Set *s = e->cap[err ? 0 : 1].out;
	int total = err ? e->tiles : e->at_tiles - e->temps;
	Ref top[NSHOW] = {0};
	int n = biggest(e, s, top, NSHOW), shown = 0;
	Buf b;

	buf_init(&b, &ctx->scratch);
	for (int i = 0; i < n; i++) {
		buf_puts(&b, i ? ", " : "");
		show(e, &b, top[i]);
		shown += e->size[top[i]];
	}
	if (total > shown)
		buf_printf(&b, ", others %d", total - shown);
	if (!err && e->temps)
		buf_printf(&b, ", temporaries %d", e->temps);
	if (err)
		diag_error(ctx, p->nspan, "partition '%s' keeps at least %d "
			"registers per thread of tiles live at once (%s); its "
			"budget is %s", budget_pname(ctx, p), e->tiles, b.p, why);
	else
		diag_warn(ctx, "register-pressure", p->nspan, "partition '%s' "
			"keeps about %d registers per thread of tiles live at "
			"once (%s) plus about %d for addresses and counters; its "
			"budget is %s", budget_pname(ctx, p), e->at_tiles, b.p,
			e->est + OVERHEAD - e->at_tiles, why);
	diag_note(ctx, (err ? e->tiles_at : e->at)->span, "the most are "
		"live here");
	for (int i = 0; i < n; i++) {
		const SirVal *v = &e->sp->vals[top[i]];
		const SirIns *d = e->def[top[i]];
		if (v->name && d && e->size[top[i]] * 4 >= lim)
			diag_note(ctx, d->span, "'%s' takes %d registers per "
				"thread", v->name, e->size[top[i]]);
	}
}

static void
estimate(Ctx *ctx, const Kernel *k, const SirPart *sp)
{
	Est e = {.ctx = ctx, .sp = sp};
	uint32_t nv = sp->nvals ? sp->nvals : 1;
	char why[64];
	int lim = budget(k, sp->part, why, sizeof why);

	e.words = (int)(nv + 63) / 64;
	e.size = NEWARR(&ctx->scratch, int, nv);
	e.istile = NEWARR(&ctx->scratch, bool, nv);
	e.def = NEWARR(&ctx->scratch, const SirIns *, nv);
	e.open = NEWARR(&ctx->scratch, const SirIns *, MAXFLIGHT);
	e.queue = NEWARR(&ctx->scratch, const SirIns *, MAXFLIGHT);
	e.qgroup = NEWARR(&ctx->scratch, int, MAXFLIGHT);
	for (uint32_t r = 1; r < sp->nvals; r++) {
		e.istile[r] = sp->vals[r].ty == TY_FRAG;
		e.size[r] = val_regs(&sp->vals[r]);
	}
	e.uniform = NEWARR(&ctx->scratch, bool, nv);
	e.rm = NEWARR(&ctx->scratch, uint32_t, nv);
	e.seen = NEWARR(&ctx->scratch, uint32_t, nv);
	for (uint32_t r = 1; r < sp->nvals; r++)
		e.uniform[r] = e.istile[r];
	while (find_defs(&e, &sp->body))
		;
	const int *dep = sir_elem_deps(ctx, sp);
	for (uint32_t r = 1; r < sp->nvals; r++) {
		if (e.uniform[r] && e.size[r] > 1)
			e.size[r] = 1;
		else if (e.istile[r] && dep[r] != SD_ANY)
			e.size[r] = sir_elem_regs(&sp->vals[r], dep[r], e.size[r]);
		/* a bool tile (a mask's comparisons and logic) is one
		 * predicate per element, which ptxas computes where a select
		 * uses it or packs 32 to a register */
		if (e.istile[r] && sp->vals[r].ety == TY_BOOL && e.size[r] > 1)
			e.size[r] = (e.size[r] + 31) / 32;
	}
	e.budgeted = sp->part->regs || k->maxnreg;
	int *uses = NEWARR(&ctx->scratch, int, nv);
	count_uses(&sp->body, uses);
	streamed(&e, &sp->body, uses);
	fused(&e, sp, &sp->body, uses);
	if (k->target == TGT_SM90A)
		retire_walk(&e, &sp->body);
	if (e.nret)
		qsort(e.ret, (size_t)e.nret, sizeof *e.ret, retire_cmp);
	Set *live = set_new(&e);
	block(&e, &sp->body, live, true);
	if (!e.tiles || !e.at || (e.tiles <= lim && e.est + OVERHEAD <= lim))
		return;
	/* walk again to copy the live sets at the peaks for the message */
	e.cap[0] = (Capture){e.tiles_at, e.tiles_after, set_new(&e)};
	e.cap[1] = (Capture){e.at, e.at_after, set_new(&e)};
	set_clear(&e, live);
	block(&e, &sp->body, live, true);
	report(&e, sp->part, lim, why);
}

void
pass_regs(Ctx *ctx, SirMod *m)
{
	const Node *done[64];
	int ndone = 0;

	for (int i = 0; i < m->nparts; i++) {
		const SirPart *sp = m->parts[i];
		int before = ctx->nerr + ctx->nwarn;
		bool seen = false;
		for (int j = 0; j < ndone; j++)
			seen |= done[j] == sp->part->decl;
		if (seen)
			continue;  /* a family reports its first instance */
		estimate(ctx, m->k, sp);
		if (ctx->nerr + ctx->nwarn > before && ndone < (int)COUNT(done))
			done[ndone++] = sp->part->decl;
	}
}
