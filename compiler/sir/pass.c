/* pass.c: the small IR passes (driver.c runs them from its table):
 *   layout    assigns shared-memory offsets to buffers, aliases and
 *             mbarriers and checks the CTA's shared-memory budget;
 *   legalize  checks that every operation exists on the target;
 * Each pass requires a SirMod that passed sir_verify and ensures the same. */
#include <string.h>

#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"

static int64_t
swz_align(int swizzle)
{
	/* a swizzle pattern repeats every 8 rows of its span; tiles start on
	 * that boundary so that MMA descriptors need no base offset */
	return swizzle ? 8 * swizzle : 128;
}

static int64_t
roundup(int64_t x, int64_t a)
{
	return (x + a - 1) / a * a;
}

void
pass_layout(Ctx *ctx, SirMod *m)
{
	Kernel *k = m->k;
	int64_t off = 0;

	for (Res *r = k->res; r; r = r->next) {
		if (r->kind != R_SMEM)
			continue;
		int64_t a = swz_align(r->lay->swizzle), n = ty_bytes(r->ety);
		int64_t all = 0, start = 0, end = 0;
		bool ok = true;
		for (int i = 0; i < r->rank; i++)
			ok &= ck_mul(n, r->shape[i], &n);
		ok = ok && ck_add(n, a - 1, &n);
		r->bytes = n / a * a;
		ok = ok && ck_mul(r->bytes, r->stages, &all);
		if (ok && !r->alias)
			ok = ck_add(off, a - 1, &start) &&
				ck_add(start / a * a, all, &end);
		if (!ok) {
			diag_error(ctx, r->nspan, "the shared-memory offset of '%s' "
				"overflows a 64-bit integer", r->name);
			return;
		}
		if (r->alias)
			continue;
		r->off = start / a * a;
		off = end;
	}
	for (Res *r = k->res; r; r = r->next) {
		if (r->kind != R_SMEM || !r->alias)
			continue;
		Res *t = r->alias;
		r->off = t->off;
		if (r->bytes * r->stages > t->bytes * t->stages) {
			diag_error(ctx, r->nspan, "'%s' needs %lld bytes but the "
				"buffer it overlays has %lld", r->name,
				(long long)(r->bytes * r->stages),
				(long long)(t->bytes * t->stages));
			diag_note(ctx, t->nspan, "'%s' declared here", t->name);
		}
		if (r->off % swz_align(r->lay->swizzle))
			diag_error(ctx, r->nspan, "'%s' overlays '%s' at a "
				"misaligned offset", r->name, t->name);
	}
	for (Res *r = k->res; r; r = r->next) {
		if (r->kind != R_TMEM)
			continue;
		int64_t end = r->col + (r->count - 1) * r->threads + r->ncols;
		if (!k->tmem_cols)
			diag_error(ctx, r->nspan, "region '%s' is declared but no "
				"partition runs 'tmem_alloc'", r->name);
		else if (end > k->tmem_cols)
			diag_error(ctx, r->nspan, "region '%s' ends at column %lld "
				"but 'tmem_alloc' takes %d columns", r->name,
				(long long)end, k->tmem_cols);
	}
	off = roundup(off, 8);
	for (Res *r = k->res; r; r = r->next) {
		if (r->kind != R_MBAR)
			continue;
		r->off = off;
		off += 8 * r->count;
	}
	if (k->target == TGT_SM100A)
		off += 16;  /* the slot tcgen05.alloc writes the address to */
	k->smem_bytes = off;
	if (off > ctx->target->smem_max) {
		diag_error(ctx, k->span, "kernel '%s' needs %lld bytes of shared "
			"memory; %s allows %d per CTA", k->name, (long long)off,
			ctx->target->name, ctx->target->smem_max);
		for (Res *r = k->res; r; r = r->next)
			if (r->kind == R_SMEM && !r->alias)
				diag_note(ctx, r->nspan, "'%s' takes %lld bytes "
					"(%d x %lld)", r->name,
					(long long)(r->bytes * r->stages),
					r->stages, (long long)r->bytes);
	}
}

static void
legal_block(Ctx *ctx, const SirBlock *b)
{
	for (int i = 0; i < b->n; i++) {
		const SirIns *in = &b->v[i];
		if (!(sir_ops[in->op].targets & ctx->target->tgt_bit))
			diag_error(ctx, in->span, "'%s' is not available on %s",
				sir_ops[in->op].name, ctx->target->name);
		if (in->body)
			legal_block(ctx, in->body);
		if (in->els)
			legal_block(ctx, in->els);
	}
}

void
pass_legalize(Ctx *ctx, SirMod *m)
{
	for (int i = 0; i < m->nparts; i++)
		legal_block(ctx, &m->parts[i]->body);
}

/* Structural invariants of SIR.  A failure is a compiler bug.  'def'
 * marks the values defined so far in program order: every operand must be
 * defined before the instruction that reads it. */
static bool
verify_block(const SirPart *p, const SirBlock *b, uint8_t *def,
	const char **why)
{
	for (int i = 0; i < b->n; i++) {
		const SirIns *in = &b->v[i];
		if (in->op >= NSOP) {
			*why = "unknown op";
			return false;
		}
		if (in->dst && in->dst >= p->nvals) {
			*why = "result out of range";
			return false;
		}
		for (int k = 0; k < in->na; k++) {
			if (in->a[k] >= p->nvals) {
				*why = "operand out of range";
				return false;
			}
			if (in->a[k] && !def[in->a[k]]) {
				*why = "operand used before its definition";
				return false;
			}
		}
		for (int k = 0; k < 3; k++)
			if (in->ri[k] && (in->ri[k] >= p->nvals ||
			    !def[in->ri[k]])) {
				*why = "resource index used before its definition";
				return false;
			}
		if (in->dst)
			def[in->dst] = 1;
		int na = sir_ops[in->op].nargs;
		if (na >= 0 && in->na != na && !(in->op == SOP_mbar_arrive) &&
		    !(in->op == SOP_wgmma || in->op == SOP_tc_mma ||
		    in->op == SOP_mma_sync) &&
		    !(in->op == SOP_tile)) {
			*why = "wrong operand count";
			return false;
		}
		if (in->op == SOP_gload && in->na != (in->dst &&
		    p->vals[in->dst].ty == TY_FRAG ? 2 : 1)) {
			*why = "a gload's operands do not fit its result";
			return false;
		}
		bool ctrl = in->op == SOP_tile || in->op == SOP_for ||
			in->op == SOP_if || in->op == SOP_elect;
		if (ctrl != (in->body != NULL)) {
			*why = "control op without body, or body elsewhere";
			return false;
		}
		if (in->body && !verify_block(p, in->body, def, why))
			return false;
		if (in->els && !verify_block(p, in->els, def, why))
			return false;
	}
	return true;
}

bool
sir_verify(Ctx *ctx, const SirMod *m)
{
	const char *why = NULL;

	for (int i = 0; i < m->nparts; i++) {
		const SirPart *p = m->parts[i];
		uint8_t *def = arena_alloc(&ctx->scratch, p->nvals + 1);
		if (!verify_block(p, &p->body, def, &why))
			fg_bug("sir_verify: %s in partition '%s'", why,
				p->part->name);
	}
	return true;
}
