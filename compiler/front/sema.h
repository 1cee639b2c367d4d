/* sema.h: private to the front end's declaration checks: sema.c (the
 * walk over top-level items, constants, params, globals and the shared
 * attribute helpers) and decl.c (buffers, views, barriers, tensor memory,
 * layouts, tiles and partitions). */
#ifndef SEMA_H
#define SEMA_H

#include "front/front.h"

typedef struct {
	Ctx *ctx;
	Kernel *k;
	bool no_kernel;  /* 'kernel' missing at the top: reported once */
	NameMap over;    /* mod.c: the --mod files' mods by name (FileMod) */
} S;

/* sema.c: attribute and operand helpers; each reports its own error */
Res *declare(S *s, ResKind kind, const Node *d);
const Node *attr(const Node *d, const char *name);
void attrs_allowed(S *s, const Node *d, const char *const *ok);
bool want_int(S *s, const Node *e, const char *what, int64_t lo,
	int64_t hi, int64_t *out);
bool attr_int(S *s, const Node *d, const char *name, bool required,
	int64_t lo, int64_t hi, int64_t *out);
int attr_word(S *s, const Node *d, const char *name,
	const char *const *words, int dflt);
Ty elem_type(S *s, const Node *t, bool scalar_ok, bool data_ok);
void runtime_names(S *s, const Node *e);
Res *want_res(S *s, const Node *e, ResKind kind, const char *what);

/* decl.c: one function per declaration keyword */
void decl_tma(S *s, const Node *d);
void decl_cta(S *s, const Node *d);
void decl_tiles(S *s, const Node *d);
void decl_layout(S *s, const Node *d);
void decl_smem(S *s, const Node *d);
void decl_tmem(S *s, const Node *d);
void decl_mbar(S *s, const Node *d);
void decl_nbar(S *s, const Node *d);
void decl_partition(S *s, const Node *d);
void decl_verify(S *s, const Node *d);

/* mod.c: mods, and the --mod files' items around the schedule's */
void decl_mod(S *s, const Node *d);
void mods_collect(S *s, const Node *files);  /* before the schedule */
void mods_private(S *s, const Node *files);  /* after it: _helpers */
void mods_unused(S *s, const Node *files);   /* then the rest */

#endif
