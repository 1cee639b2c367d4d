/* verify_copy.c: the schedule verifier's execution of the
 * asynchronous copies (split out of verify_exec.c): TMA loads (multicast
 * into the CTAs of a mask) and stores with their bulk groups, bulk
 * copies into a peer's shared memory (bulk_copy), and cp.async with its
 * groups or mbarrier arrivals.  A copy's writes and reads are access
 * records (verify_vc.c) that complete with an event: a barrier phase, a
 * group's retirement.
 * Requires: verify_exec.c's helpers (verify.h).  Ensures: the process's
 * state as exec() leaves it; false when it blocks. */
#include <stdio.h>

#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"
#include "check/check.h"
#include "check/verify.h"

/* A pair's TMA load completes on a barrier of this CTA or of the other
 * CTA of its pair (ranks 2k, 2k + 1); false after a failure. */
static bool
pair_peer(Sim *s, Proc *p, const SirIns *in, int64_t c)
{
	if (c / 2 == p->cta / 2)
		return true;
	char w[300], a[64];
	Iter it;
	vf_iter(p, &it);
	snprintf(w, sizeof w, "%s completes a TMA load on a barrier of CTA "
		"%lld", vf_who(s, p, &it), (long long)c);
	snprintf(a, sizeof a, "CTAs %d and %d", p->cta & ~1, (p->cta & ~1) + 1);
	vf_fail(s, in->span, "cta-pair", "%s, outside its pair (%s): TMA's "
		".cta_group::2 reaches the barriers of this CTA or of the other "
		"CTA of its pair only", w, a);
	vf_note_traces(s, p);
	return false;
}

bool
vf_exec_copy(Sim *s, Proc *p, const SirIns *in)
{
	int b, self = (int)(p - s->p);
	int64_t lo, hi;

	switch (in->op) {
	case SOP_tma_load: {
		/* into this CTA, or (multicast) into each CTA of the mask,
		 * completing on the barrier at the same place in each */
		const Res *v = in->r[0], *x = in->r[1];
		int64_t mask = in->cta ? vf_val(p, in->cta) : 1ll << p->cta;
		int64_t r0 = in->row ? vf_val(p, in->row) : 0;
		int64_t r1 = in->row ? r0 + vf_tma_bytes(v) / (x->shape[x->rank - 1] *
			ty_bytes(x->ety)) : x->shape[0];
		if (in->cta && (mask < 1 || mask >= 1ll << s->ncta)) {
			vf_rank_ok(s, p, in, mask < 1 ? -1 : 63 - __builtin_clzll(
				(uint64_t)mask), "the multicast mask names");
			return true;
		}
		if (in->row && (r0 < 0 || r1 > x->shape[0] || r0 *
		    x->shape[x->rank - 1] * ty_bytes(x->ety) %
		    (x->lay->swizzle ? 1024 : 128))) {
			char w[300], a[200];
			Iter it;
			vf_iter(p, &it);
			snprintf(w, sizeof w, "%s: row=%lld of '%s'", vf_who(s, p,
				&it), (long long)r0, x->name);
			snprintf(a, sizeof a, "rows %lld..%lld of a %lld-row tile%s",
				(long long)r0, (long long)r1 - 1,
				(long long)x->shape[0], r0 >= 0 && r1 <= x->shape[0] ?
				", at a byte offset TMA cannot write to (1024-byte "
				"multiples swizzled, 128 plain)" : "");
			vf_fail(s, in->span, "index-range", "%s: the box would "
				"fill %s", w, a);
			return true;
		}
		/* a pair's load (cta=R): here, its bytes on CTA R's barrier */
		int64_t bc = in->peer ? vf_val(p, in->peer) : -1;
		if (in->peer && (!vf_rank_ok(s, p, in, bc, "completes a TMA "
		    "load on a barrier of") || !pair_peer(s, p, in, bc) ||
		    !vf_peer_alive(s, p, in, (int)bc, "completes a TMA load on "
		    "a barrier of")))
			return true;
		for (int c = 0; c < s->ncta && !s->failed; c++) {
			if (!(mask >> c & 1) || !vf_peer_alive(s, p, in, c,
			    "multicasts into"))
				continue;
			b = vf_mbar_in(s, p, in, in->r[2], vf_val(p, in->ri[2]),
				bc >= 0 ? (int)bc : c);
			if (b < 0)
				return true;
			vf_range_of(x, vf_val(p, in->ri[1]), &lo, &hi);
			lo += CTA_OFF(c);
			hi += CTA_OFF(c);
			Rec *w = vf_acc_write(s, p, in, lo, hi, true,
				vf_geometry(x), r0, r1);
			vf_emit_event(s, EV_TMA, self, b, vf_tma_bytes(v));
			if (s->nev)
				s->ev[s->nev - 1].rec = w ? (int)(w - s->rec) : -1;
		}
		return true;
	}
	case SOP_bulk_copy: {
		/* this CTA's tile into CTA c's, completing on c's barrier: a
		 * write there and a read here, both done when that barrier's
		 * phase completes (which the source learns only through the
		 * destination, e.g. its arrival back) */
		int64_t c = in->cta ? vf_val(p, in->cta) : p->cta, dlo, dhi;
		if (in->cta && (!vf_rank_ok(s, p, in, c, "copies into") ||
		    !vf_peer_alive(s, p, in, (int)c, "copies into")))
			return true;
		vf_srange(p, in->r[0], vf_val(p, in->ri[0]), &lo, &hi);
		Rec *rd = vf_acc_read(s, p, in, lo, hi, BULK_COPY_READ,
			vf_geometry(in->r[0]), 0, in->r[0]->shape[0]);
		int rdi = rd ? (int)(rd - s->rec) : -1;
		b = vf_mbar_in(s, p, in, in->r[2], vf_val(p, in->ri[2]), (int)c);
		if (b < 0 || s->failed)
			return true;
		vf_srange(p, in->r[1], vf_val(p, in->ri[1]), &dlo, &dhi);
		dlo += CTA_OFF(c) - CTA_OFF(p->cta);
		dhi += CTA_OFF(c) - CTA_OFF(p->cta);
		Rec *w = vf_acc_write(s, p, in, dlo, dhi, true,
			vf_geometry(in->r[1]), 0, in->r[1]->shape[0]);
		vf_emit_event(s, EV_TMA, self, b, in->imm);
		if (s->nev) {
			s->ev[s->nev - 1].rec = w ? (int)(w - s->rec) : -1;
			s->ev[s->nev - 1].rec2 = rdi;
		}
		return true;
	}
	case SOP_bulk_load: {
		/* a global's rows, a bulk copy each: row r when its index
		 * (a2 + r) is below the limit (a1), its columns from the last
		 * index (a4) to the last extent (a5), the tile's width at
		 * most; the bytes complete on the barrier */
		const Res *x = in->r[1];
		int64_t rows = x->shape[0], cols = x->shape[1];
		int64_t esz = ty_bytes(x->ety);
		int64_t nr = vf_val(p, in->a[1]) - vf_val(p, in->a[2]);
		int64_t w_ = vf_val(p, in->a[5]) - vf_val(p, in->a[4]);
		nr = nr < 0 ? 0 : nr > rows ? rows : nr;
		w_ = w_ < 0 ? 0 : w_ > cols ? cols : w_;
		if (nr && w_ * esz % 16) {
			char w[300], a[200];
			Iter it;
			vf_iter(p, &it);
			snprintf(w, sizeof w, "%s: a row of '%s'", vf_who(s, p,
				&it), in->r[0]->name);
			snprintf(a, sizeof a, "from column %lld is %lld elements, "
				"%lld bytes", (long long)vf_val(p, in->a[4]),
				(long long)w_, (long long)(w_ * esz));
			vf_fail(s, in->span, "index-range", "%s %s: cp.async.bulk "
				"moves multiples of 16 bytes", w, a);
			return true;
		}
		b = vf_mbar_at(s, p, in, in->r[2], vf_val(p, in->ri[2]));
		if (b < 0)
			return true;
		vf_srange(p, x, vf_val(p, in->ri[1]), &lo, &hi);
		Rec *wr = vf_acc_write(s, p, in, lo, hi, true, vf_geometry(x), 0,
			rows);
		vf_emit_event(s, EV_TMA, self, b, nr * w_ * esz);
		if (s->nev)
			s->ev[s->nev - 1].rec = wr ? (int)(wr - s->rec) : -1;
		return true;
	}
	case SOP_tma_store:
		vf_srange(p, in->r[1], vf_val(p, in->ri[1]), &lo, &hi);
		vf_acc_read(s, p, in, lo, hi, true, vf_geometry(in->r[1]), 0,
			in->r[1]->shape[0]);
		p->bulk_open++;
		return true;
	case SOP_tma_commit:
		if (p->bulk_open) {
			p->bulk_open = 0;
			p->bulk_groups++;
			p->bulk_seq++;
			p->bulk_unwaited++;
			p->bulk_unread++;
			p->bulk_last = in;
			vf_emit_event(s, EV_BULK, self, -1, 0);
		}
		return true;
	case SOP_tma_wait:
		if (p->bulk_groups > in->imm) {
			p->state = B_BULK;
			p->want = in->imm;
			p->at = in;
			return false;
		}
		vf_retire_reads(s, p, true, p->bulk_seq - p->bulk_groups);
		if (!in->imm2 && p->bulk_unwaited > in->imm)
			p->bulk_unwaited = (int)in->imm;
		if (p->bulk_unread > in->imm)
			p->bulk_unread = (int)in->imm;
		return true;
	case SOP_cp_async: {
		/* every thread its chunks of the tile: in flight until the
		 * group retires, or (with an mbarrier) until the arrival the
		 * copies make when they land */
		const Res *x = in->r[1];
		vf_srange(p, x, vf_val(p, in->ri[1]), &lo, &hi);
		if (!in->r[2]) {
			vf_acc_cpwrite(s, p, in, lo, hi, p->cp_seq + 1,
				vf_geometry(x));
			p->cp_open++;
			p->cp_last = in;
			return true;
		}
		b = vf_mbar_at(s, p, in, in->r[2], vf_val(p, in->ri[2]));
		if (b < 0)
			return true;
		Rec *w = vf_acc_write(s, p, in, lo, hi, true, vf_geometry(x), 0,
			x->shape[0]);
		if (w)
			w->bulk = CP_GROUP;
		vf_emit_event(s, EV_CPA, self, b, 0);
		if (s->nev)
			s->ev[s->nev - 1].rec = w ? (int)(w - s->rec) : -1;
		return true;
	}
	case SOP_cp_commit:  /* an empty group counts too */
		p->cp_open = 0;
		p->cp_seq++;
		return true;
	case SOP_cp_wait:  /* landing is not modelled apart: at once */
		if (p->cp_seq - in->imm > p->cp_done) {
			p->cp_done = (int)(p->cp_seq - in->imm);
			vf_retire_cp(s, p, p->cp_done);
		}
		return true;
	default:
		return true;
	}
}
