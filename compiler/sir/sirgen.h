/* sirgen.h: state shared by sirgen.c (expressions), sircall.c (built-in
 * functions), sirstmt.c (statements), sirops.c (operations) and
 * sirload.c (loads from global memory). */
#ifndef SIRGEN_H
#define SIRGEN_H

#define SG_NOTAN ((Ref)UINT32_MAX)

typedef struct Bind {
	const char *name;
	Ref ref;
	Span span;
	bool subst;          /* a mod's constant argument: each use is a new
			      * constant of ref's value, as where written */
	Ref dot;             /* dmod: the tangent of a mod's parameter, or
			      * SG_NOTAN for 0 (sirdiff.c) */
	struct Bind *next;   /* the scope, newest first */
	struct Bind *shadow; /* the binding of the same name this one hides */
} Bind;

/* The expansion budget (issue #29): statements expanded ('static for'
 * bodies once per iteration) plus SIR values created, over the whole
 * kernel.  The largest shipped schedule uses about 1,400. */
#define MAXEXPAND 131072

typedef struct Expand {
	int64_t stmts;       /* statements expanded so far */
	int64_t vals;        /* values of the partitions already done */
	bool blown;          /* reported: stop expanding */
} Expand;

/* A mod being inlined, and the one whose body called it (sircall.c). */
typedef struct ModCall {
	const Res *m;
	const struct ModCall *up;
} ModCall;

typedef struct G {
	Ctx *ctx;
	Kernel *k;
	SirPart *p;
	SirBlock *cur;
	Bind *scope;
	NameMap names;       /* the newest Bind of each name in scope */
	int in_elect;
	int loop_depth;
	Expand *exp;         /* shared by the partitions */
	const Node *sfor;    /* the innermost 'static for' unrolling */
	const ModCall *calls;/* the mods being inlined, innermost first */
	int depth;           /* sg_expr nesting, mods' bodies included */
	bool too_deep;       /* that nesting went past MAXTREE: reported */
	int ntmp;            /* dmod's temporaries named so far */
	/* dscatter (sirdiff.c): the gather of a global with 'grad=' whose
	 * tangent is 1 in this pass (dsel, counted in dseen), and what
	 * that gather left: its gradient's linear index and in-bounds
	 * tiles; dpass: a dscatter pass runs */
	bool dpass;
	int dsel, dseen;
	Ref dlin, dok;
	const Res *dgrad;
} G;

SirVal *sg_val(G *, Ref);
SirIns *sg_emit(G *, SirOp, Span);
Ref sg_err(G *);
Ref sg_const_i(G *, int64_t, Ty, Span);
Ref sg_const_f(G *, double, Span);
void sg_bind(G *, const char *, Ref, Span);
Bind *sg_lookup(G *, const char *);
void sg_unscope(G *, Bind *saved);  /* drops the bindings made since */
const char *sg_layname(const Layout *);
const char *sg_text(G *, Span, const char *dflt);  /* the source text */
bool sg_same_layout(const Layout *, const Layout *);
Ref sg_expr(G *, const Node *);
Ref sg_binop(G *, const Node *op, Ref, Ref);
Ref sg_coerce(G *, Ref, Ty, Span);  /* a constant adopts a type */
Ref sg_cond(G *, const Node *);     /* a runtime boolean */
bool sg_const_int(G *, Ref, int64_t *);
Ty sg_unify(G *, const Node *, Ref a, Ref b);  /* the common type, or error */
void sg_frag_like(G *, Ref dst, const SirVal *src);
Ref sg_frag_binary(G *, const Node *, SirOp, Ref a, Ref b);
Ref sg_fold(G *, const Node *, Ref a, Ref b);  /* constant operands */
Ref sg_unop(G *, SirOp, Ref a, Ty, Span);

bool sg_tile_types(G *, const Node *, SirOp, Ref *a, Ref *b, bool rowvec,
	Ty *ety);                                /* sirtile.c */
Ref sg_tile_call(G *, const Node *, const char *f);  /* 0: not one */
Ref sg_tile_stored(G *, const Node *, Ref);  /* f32 or 16-bit, or error */

Ref sg_call(G *, const Node *);               /* sircall.c */
Ref sg_dmod(G *, const Node *);               /* sirdiff.c */
void sg_dscatter(G *, const Node *);   /* a statement */
Ref sg_mod_call(G *, const Node *, const Res *mod);
/* Inlining a mod's body (sircall.c; also sirdiff.c's dmod): the checks
 * at a call with nargs arguments, and its hygienic scope. */
typedef struct ModScope {
	Bind *scope;
	NameMap names;
	ModCall call;
	const Diag *mark;    /* diagnostics before the body's */
} ModScope;
bool sg_mod_check(G *, const Node *call, const Res *mod, int nargs);
void sg_mod_enter(G *, ModScope *, const Res *mod);
void sg_mod_leave(G *, ModScope *, const Node *call, bool dmod);
Ref sg_convert(G *, const Node *);
Ref sg_cvt(G *, const Node *);

void sg_op(G *, const Node *);               /* sirops.c */
Res *sg_resource(G *, const Node *, ResKind want, const char *what, Ref *idx);
Ref sg_int_arg(G *, const Node *, const char *what);
void sg_int_check(G *, const Node *, Ref, const char *what);
bool sg_argc(G *, const Node *, int lo, int hi);
void sg_op_mem(G *, const Node *);           /* sirmem.c */
Ref sg_frag_var(G *, const Node *, const char *what);
void sg_op_gload(G *, const Node *);
void sg_op_cpasync(G *, const Node *);  /* cp_async and its groups */
void sg_op_bulk_copy(G *, const Node *);   /* buffer to a peer's */
void sg_elect_warn(G *, const Node *);  /* 'tma-outside-elect' */
bool sg_mma_opd(G *, const Node *, SirIns *, int slot, bool value_ok);
void sg_noattrs(G *, const Node *, const char *const *ok);
bool sg_need_target(G *, const Node *, int tgt, const char *what);
bool sg_const_arg(G *, const Node *, const char *what, int64_t lo, int64_t hi,
	int64_t *out);
const Node *sg_opattr(G *, const Node *, const char *name, bool flag);
bool sg_resource_tmem(G *, const Node *, Ref *idx);
const Layout *sg_layout_ref(G *, const Node *);
Ref sg_lin_index(G *, const Node *index, const Res *global, Ref *last);
Ref sg_gstride(G *, const Res *global, int k, Span);  /* 'strided' */
Ref sg_lin_index_at(G *, const Node *index, const Res *global, Ref *last,
	int k, Ref *ik);
Ref sg_lin_index_ix(G *, const Node *index, const Res *global, Ref *ix);
Ref sg_lin_index_all(G *, const Node *index, const Res *global, Ref *last,
	int k, Ref *ik, Ref *ix);
bool sg_rows_fit(const Layout *rows, const Layout *tile);

Ref sg_gload(G *, const Node *);              /* sirload.c */
Ref sg_gload_grad(G *, const Node *, Ref *dlin, Ref *dok);
bool sg_gather_index(G *, const Node *index, int k, const Ref *ix);
void sg_scatter(G *, const Node *store, Res *global, const Ref *ix, Ref lin);
void sg_check_loads(Ctx *, const SirMod *);

/* 'cta=R' (mask false: a cluster rank) or 'multicast=M' (a mask of
 * ranks): an integer, checked against the cluster when constant; 0
 * after a diagnostic (sirops.c). */
Ref sg_cluster_arg(G *g, const Node *e, bool mask);

#endif
