/* target.c: the targets' descriptions -- capabilities and limits -- by
 * id and by name.  The PTX stage adds each target's emitter
 * (ptx/target.h). */
#include <string.h>

#include "base/base.h"

/* 227 KB of dynamic shared memory per CTA on sm_90a and sm_100a
 * (cudaDevAttr MaxSharedMemoryPerBlockOptin), 99 KB on sm_80: what
 * sm_86 and sm_89 have (an A100 has 163 KB), so that one sm_80 module
 * serves all three.  PTX ISA 8.6 spells every construct we emit on
 * sm_90a, sm_100a and sm_80; sm_120a needs 8.7. */
static const Target targets[] = {
	{TGT_SM90A, "sm_90a", "8.6", 232448, T_SM90, false, true, false,
		true, false},
	{TGT_SM100A, "sm_100a", "8.6", 232448, T_SM100, true, false, true,
		true, false},
	{TGT_SM80, "sm_80", "8.6", 101376, T_SM80, false, false, false,
		false, true},
	/* sm_120a needs PTX 8.7; 99 KB of shared memory a CTA */
	{TGT_SM120A, "sm_120a", "8.7", 101376, T_SM120, false, false, false,
		true, true},
};

const Target *
target_get(TargetId id)
{
	for (size_t i = 0; i < COUNT(targets); i++)
		if (targets[i].id == id)
			return &targets[i];
	return NULL;
}

const Target *
target_lookup(const char *name)
{
	for (size_t i = 0; i < COUNT(targets); i++)
		if (!strcmp(targets[i].name, name))
			return &targets[i];
	return NULL;
}
