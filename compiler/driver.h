/* driver.h: the top of the compiler -- one compilation from ctx->src to
 * ctx->out through every stage (front, sir, check, ptx), and the pass
 * table.  Used by the CLI (main.c) and the runtime library. */
#ifndef DRIVER_H
#define DRIVER_H

#include "base/base.h"

/* Returns the number of errors (diagnostics are in ctx->diags). */
typedef enum { EMIT_PTX, EMIT_IR, EMIT_AST, EMIT_DOT } EmitKind;
int driver_compile(Ctx *, EmitKind, bool check_only);

struct SirMod;
bool pass_run_all(Ctx *, struct SirMod *);  /* the pass table, in order */
bool pass_known(const char *name);  /* a --dump-after name */

#endif
