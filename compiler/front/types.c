/* types.c: element types: names, sizes and classes. */
#include <string.h>

#include "front/front.h"

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
