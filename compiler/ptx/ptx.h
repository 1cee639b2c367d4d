/* ptx.h: the PTX stage's public face -- the register and instruction
 * builder (ptx.c) and ptx_gen, which lowers a verified SirMod to a PTX
 * module through the target's hooks (ptx/target.h).  Includes base/,
 * front/ and sir/. */
#ifndef PTX_H
#define PTX_H

#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"

bool ptx_gen(Ctx *, const SirMod *, Buf *);  /* ptxentry.c */

/* ---------------------------------------------------------------- ptx.c
 * The PTX builder.  Callers never spell register names: they ask for typed
 * virtual registers and pass them to templates.  Template directives:
 *   %R  a PReg            %I  an int64_t        %U  a uint64_t in hex
 *   %L  a label (int)     %S  a const char *    %F  a double as 0fXXXXXXXX
 *   %D  a double as 0dXXXXXXXXXXXXXXXX (f64)
 *   %%  a literal %
 * Output is deterministic: names come from per-kind counters. */
typedef enum {
	RP,    /* .pred  %p  */
	RB16,  /* .b16   %h  */
	RB32,  /* .b32   %r  */
	RB64,  /* .b64   %rd */
	RF32,  /* .f32   %f  */
	RF64,  /* .f64   %fd */
	NRKIND
} RKind;

typedef struct PReg {
	uint32_t id;   /* id within kind, from 0 */
	uint8_t kind;  /* RKind */
} PReg;

typedef struct PtxFn PtxFn;
PtxFn *ptx_new(Arena *, const char *name);
PReg ptx_reg(PtxFn *, RKind);
void ptx_param(PtxFn *, const char *decl);      /* ".param .u64 X" */
void ptx_directive(PtxFn *, const char *text);  /* ".maxntid 128, 1, 1" */
void ptx_emit(PtxFn *, const char *tmpl, ...);
void ptx_vemit(PtxFn *, const char *tmpl, va_list);
void ptx_comment(PtxFn *, const char *fmt, ...) FMT(2, 3);
int ptx_label(PtxFn *);
void ptx_place(PtxFn *, int label);
const char *ptx_regname(PtxFn *, PReg, char buf[16]);
void ptx_finish(PtxFn *, Buf *);  /* .entry header, .reg decls, body */

#endif
