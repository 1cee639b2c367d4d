/* sirgen.h: state shared by sirgen.c (expressions) and sirstmt.c
 * (statements and operations). */
#ifndef SIRGEN_H
#define SIRGEN_H

typedef struct Bind {
	const char *name;
	Ref ref;
	Span span;
	struct Bind *next;
} Bind;

typedef struct G {
	Ctx *ctx;
	Kernel *k;
	SirPart *p;
	SirBlock *cur;
	Bind *scope;
	int in_elect;
	int loop_depth;
} G;

SirVal *V(G *, Ref);
SirIns *emit(G *, SirOp, Span);
Ref errval(G *);
Ref const_i(G *, int64_t, Ty, Span);
Ref const_f(G *, double, Span);
void bind(G *, const char *, Ref, Span);
Bind *lookup(G *, const char *);
const char *layname(const Layout *);
bool same_layout(const Layout *, const Layout *);
Ref expr(G *, const Node *);
Ref cond_expr(G *, const Node *);     /* a runtime boolean */
bool is_const_int(G *, Ref, int64_t *);

void sg_op(G *, const Node *);               /* sirops.c */
bool sg_mma_opd(G *, const Node *, SirIns *, int slot, bool value_ok);
void noattrs(G *, const Node *, const char *const *ok);
bool need_target(G *, const Node *, int tgt, const char *what);
bool const_arg(G *, const Node *, const char *what, int64_t lo, int64_t hi,
	int64_t *out);
const Node *opattr(G *, const Node *, const char *name, bool flag);
bool sg_resource_tmem(G *, const Node *, Ref *idx);
const Layout *sg_layout_ref(G *, const Node *);

#endif
