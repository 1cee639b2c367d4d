/* types.c: element types, targets and small tables shared by the passes. */
#include <string.h>

#include "fgc.h"

static const struct {
	const char *name;
	int bytes;
} tys[NTY] = {
	[TY_ERR] = {"<error>", 0}, [TY_VOID] = {"void", 0},
	[TY_BOOL] = {"bool", 0}, [TY_I32] = {"i32", 4}, [TY_U32] = {"u32", 4},
	[TY_I64] = {"i64", 8}, [TY_U64] = {"u64", 8}, [TY_F32] = {"f32", 4},
	[TY_F16] = {"f16", 2}, [TY_BF16] = {"bf16", 2}, [TY_F64] = {"f64", 8},
	[TY_DTYPE] = {"dtype", 0}, [TY_WORD] = {"word", 0},
	[TY_TUPLE] = {"tuple", 0}, [TY_LAYOUT] = {"layout", 0},
	[TY_TILE] = {"tile", 0}, [TY_FRAG] = {"register tile", 0},
	[TY_RES] = {"resource", 0},
};

const char *
ty_name(Ty t)
{
	return t < NTY ? tys[t].name : "?";
}

int
ty_bytes(Ty t)
{
	return t < NTY ? tys[t].bytes : 0;
}

bool
ty_isint(Ty t)
{
	return t == TY_I32 || t == TY_U32 || t == TY_I64 || t == TY_U64;
}

bool
ty_isfloat(Ty t)
{
	return t == TY_F32 || t == TY_F16 || t == TY_BF16 || t == TY_F64;
}

Ty
ty_lookup(const char *s)
{
	for (int t = TY_BOOL; t <= TY_F64; t++)
		if (!strcmp(tys[t].name, s))
			return (Ty)t;
	return TY_ERR;
}

const SirOpInfo sir_ops[NSOP] = {
#define SOP(n, na, e, t) [SOP_##n] = {#n, na, e, t},
#include "sir_ops.h"
#undef SOP
};

const char *const fence_names[NFENCE] = {
	[FENCE_ASYNC_SMEM] = "async_smem", [FENCE_MBAR_INIT] = "mbar_init",
	[FENCE_TMEM_BEFORE] = "tmem_before", [FENCE_TMEM_AFTER] = "tmem_after",
	[FENCE_ACQ_REL] = "acq_rel",
};

/* 227 KB of dynamic shared memory per CTA on both (cudaDevAttr
 * MaxSharedMemoryPerBlockOptin); PTX ISA 8.6 spells every construct we
 * emit on both targets. */
static const Target targets[] = {
	{TGT_SM90A, "sm_90a", "8.6", 232448, T_SM90, false, true, false},
	{TGT_SM100A, "sm_100a", "8.6", 232448, T_SM100, true, false, true},
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
