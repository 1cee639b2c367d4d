/* dot.c: the schedule as a Graphviz graph (--emit dot): partitions
 * (boxes), mbarriers (ellipses), named barriers (diamonds) and shared
 * memory buffers (cylinders), with an edge for each kind of use: a
 * partition arrives on, expects, commits to or waits on a barrier; TMA
 * writes a buffer and completes on a barrier; wgmma and TMA stores read
 * buffers.  Edges are deduplicated and printed in a fixed order.  The
 * schedule verifier's errors (SirMod.finds), when it refused the
 * schedule, follow in red. */
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"

typedef struct Edge {
	const char *from, *to, *label;
} Edge;

typedef struct D {
	Ctx *ctx;
	Edge *e;
	int n, cap;
} D;

static void
edge(D *d, const char *from, const char *to, const char *label)
{
	for (int i = 0; i < d->n; i++)
		if (!strcmp(d->e[i].from, from) && !strcmp(d->e[i].to, to) &&
		    !strcmp(d->e[i].label, label))
			return;
	if (d->n == d->cap) {
		int cap = d->cap ? 2 * d->cap : 32;
		d->e = arena_realloc(&d->ctx->scratch, d->e,
			(size_t)d->cap * sizeof *d->e, (size_t)cap * sizeof *d->e);
		d->cap = cap;
	}
	d->e[d->n++] = (Edge){from, to, label};
}

static const char *
node(D *d, const char *kind, const char *name)
{
	Buf b;

	buf_init(&b, &d->ctx->scratch);
	buf_printf(&b, "%s_%s", kind, name);
	return b.p;
}

static void
walk(D *d, const char *p, const SirBlock *b)
{
	for (int i = 0; i < b->n; i++) {
		const SirIns *in = &b->v[i];
		const Res *r0 = in->r[0];
		switch (in->op) {
		case SOP_mbar_wait:
			edge(d, node(d, "b", r0->name), p, "wait");
			break;
		case SOP_mbar_arrive:
			edge(d, p, node(d, "b", r0->name), "arrive");
			break;
		case SOP_mbar_expect:
			edge(d, p, node(d, "b", r0->name), "expect");
			break;
		case SOP_tc_commit:
			edge(d, p, node(d, "b", r0->name), "commit");
			break;
		case SOP_bar_sync:
			edge(d, p, node(d, "n", r0->name), "sync");
			break;
		case SOP_bar_arrive:
			edge(d, p, node(d, "n", r0->name), "arrive");
			break;
		case SOP_tma_load:
			edge(d, p, node(d, "s", in->r[1]->name), "tma load");
			edge(d, node(d, "s", in->r[1]->name),
				node(d, "b", in->r[2]->name), "complete_tx");
			break;
		case SOP_tma_store:
			edge(d, node(d, "s", in->r[1]->name), p, "tma store");
			break;
		case SOP_cp_async:
			edge(d, p, node(d, "s", in->r[1]->name), "cp.async");
			if (in->r[2])
				edge(d, node(d, "s", in->r[1]->name),
					node(d, "b", in->r[2]->name), "arrive");
			break;
		case SOP_bulk_load:
			edge(d, p, node(d, "s", in->r[1]->name), "bulk copy");
			edge(d, node(d, "s", in->r[1]->name),
				node(d, "b", in->r[2]->name), "complete_tx");
			break;
		case SOP_bulk_copy:
			edge(d, node(d, "s", r0->name), node(d, "s",
				in->r[1]->name), "bulk copy");
			edge(d, node(d, "s", in->r[1]->name),
				node(d, "b", in->r[2]->name), "complete_tx");
			break;
		case SOP_smem_store:
			edge(d, p, node(d, "s", r0->name), "store");
			break;
		case SOP_smem_load:
			edge(d, node(d, "s", r0->name), p, "load");
			break;
		case SOP_wgmma: case SOP_tc_mma: case SOP_mma_sync:
			for (int k = 1; k <= 2; k++)
				if (in->r[k] && in->r[k]->kind == R_SMEM)
					edge(d, node(d, "s", in->r[k]->name), p, "mma");
			break;
		}
		if (in->body)
			walk(d, p, in->body);
		if (in->els)
			walk(d, p, in->els);
	}
}

static const char *
part_node(D *d, const SirPart *sp)
{
	const Part *pt = sp->part;
	char nm[64];

	if (pt->index >= 0)
		snprintf(nm, sizeof nm, "%s_%d", pt->name, pt->index);
	else
		snprintf(nm, sizeof nm, "%s", pt->name);
	return node(d, "p", nm);
}

/* s into a quoted label, escaped. */
static void
label_puts(Buf *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			buf_putc(out, '\\');
		buf_putc(out, *s);
	}
}

static void
label_at(D *d, Buf *out, const char *what, Span sp)
{
	const Src *src = ctx_src(d->ctx, sp.lo);
	uint32_t line, col;

	src_linecol(src, sp.lo, &line, &col);
	buf_puts(out, "\\n");
	buf_puts(out, what);
	buf_puts(out, " ");
	label_puts(out, src->name);
	buf_printf(out, ":%u:%u", line, col);
}

/* A verifier error, in red: an edge from the other access's partition
 * (or from the barrier a hang waits on) to the partition that reports
 * it, labelled with the diagnostic and both places; an error with
 * neither is a red note tied to what it names. */
static void
finding(D *d, Buf *out, const SirFinding *f, int n)
{
	const char *to = f->part ? part_node(d, f->part) : NULL;
	const char *bar = f->bar ? node(d, f->bar->kind == R_NBAR ? "n" : "b",
		f->bar->name) : NULL;
	const char *from = f->other ? part_node(d, f->other) : bar;

	if (!to || !from) {
		to = node(d, "err", "");
		buf_printf(out, "\t%s%d [shape=note, color=red, fontcolor=red, "
			"label=\"", to, n);
	} else {
		buf_printf(out, "\t%s -> %s [color=red, fontcolor=red, "
			"penwidth=2, label=\"", from, to);
	}
	buf_printf(out, "%s: ", f->check);
	label_puts(out, f->msg);
	if (f->part)
		label_at(d, out, f->other ? "this access" : "at", f->at);
	if (f->other)
		label_at(d, out, "the other access", f->other_at);
	buf_puts(out, "\"];\n");
	if (f->part && from)
		return;
	/* the note: edges from what it names */
	const char *names[] = {f->part ? part_node(d, f->part) : NULL,
		f->other ? part_node(d, f->other) : NULL, bar};
	for (size_t i = 0; i < COUNT(names); i++)
		if (names[i])
			buf_printf(out, "\t%s -> %s%d [color=red];\n", names[i],
				to, n);
}

void
sir_dot(Ctx *ctx, const SirMod *m, Buf *out)
{
	D d = {.ctx = ctx};

	buf_printf(out, "digraph \"%s\" {\n\trankdir=LR;\n"
		"\tnode [fontname=\"Helvetica\", fontsize=10];\n"
		"\tedge [fontname=\"Helvetica\", fontsize=9];\n", m->k->name);
	for (int i = 0; i < m->nparts; i++) {
		const Part *pt = m->parts[i]->part;
		const char *id = part_node(&d, m->parts[i]);
		buf_printf(out, "\t%s [shape=box, style=filled, "
			"fillcolor=\"#dde8f5\", label=\"%s%s\\nwarps %d..%d",
			id, pt->name, pt->index >= 0 ? "[i]" : "", pt->warp_lo,
			pt->warp_hi);
		if (pt->index >= 0)
			buf_printf(out, " (i=%d)", pt->index);
		if (pt->regs)
			buf_printf(out, "\\nregs %d", pt->regs);
		buf_puts(out, "\"];\n");
		walk(&d, id, &m->parts[i]->body);
	}
	for (const Res *r = m->k->res; r; r = r->next) {
		if (r->kind == R_MBAR)
			buf_printf(out, "\tb_%s [shape=ellipse, label=\"%s[%d]\\n"
				"count %lld%s\"];\n", r->name, r->name, r->count,
				(long long)r->mcount, r->tx ? ", tx" : "");
		else if (r->kind == R_NBAR)
			buf_printf(out, "\tn_%s [shape=diamond, label=\"%s\\n%lld "
				"threads\"];\n", r->name, r->name,
				(long long)r->threads);
		else if (r->kind == R_SMEM)
			buf_printf(out, "\ts_%s [shape=cylinder, label=\"%s\\n%s"
				"[%d][%lld,%lld]\"];\n", r->name, r->name,
				ty_name(r->ety), r->stages, (long long)r->shape[0],
				(long long)r->shape[r->rank - 1]);
	}
	for (int i = 0; i < d.n; i++)
		buf_printf(out, "\t%s -> %s [label=\"%s\"];\n", d.e[i].from,
			d.e[i].to, d.e[i].label);
	int n = 0;
	for (const SirFinding *f = m->finds; f; f = f->next)
		finding(&d, out, f, n++);
	buf_puts(out, "}\n");
}
