/* fgc.h: every stage's header, for the compiler's users outside it (the
 * runtime library, the tests, the benchmarks).  Nothing here is public;
 * include/fagen.h is the public API.  Files inside compiler/ include the
 * headers of their own stage and the stages below it instead
 * (docs/ARCHITECTURE.md; tests/arch/check-dag.sh keeps that a DAG). */
#ifndef FGC_H
#define FGC_H

#include "base/base.h"
#include "front/front.h"
#include "sir/sir.h"
#include "check/check.h"
#include "ptx/ptx.h"
#include "driver.h"

#endif
