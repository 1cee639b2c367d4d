/* check.h: the checks over the schedule IR -- the register estimate
 * (regs.c: live register tiles per partition against regs=) and the
 * schedule verifier (verify*.c: runs every partition as a state machine
 * over mbarriers, named barriers, async copies and tensor memory, and
 * reports hangs and races).  Both are passes: they take a SirMod that
 * passed sir_verify and change nothing but diagnostics.  Includes base/,
 * front/ and sir/. */
#ifndef CHECK_H
#define CHECK_H

#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"

PassFn pass_regs;    /* regs.c */
PassFn pass_verify;  /* verify.c */

#endif
