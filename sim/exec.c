/* exec.c: one scalar instruction for the lanes of a warp (issue #18).
 *
 * Requires: `mask`, the lanes at this instruction whose guard holds.
 * Ensures: each such lane's destination is written as the PTX ISA
 * defines the instruction (integers wrap at their width, f32 arithmetic
 * rounds to nearest even and is not fused; the .approx functions are
 * fp.c's); loads and stores are checked against the memory they address
 * (bounds, alignment, an mbarrier's word); a fault is ST_ERR with a
 * message.  Shuffles, votes and elect need every lane their member mask
 * names to be here. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "simi.h"

static const char *const opnames[NOPS] = {
#define X(name, key, types) [OP_##name] = key,
	SIM_OPS(X)
#undef X
};

const char *
op_name(int op)
{
	return op >= 0 && op < NOPS ? opnames[op] : "?";
}

int
opcode_of(const char *key)
{
	for (int i = 0; i < NOPS; i++)
		if (!strcmp(key, opnames[i]))
			return i;
	return -1;
}

static uint64_t
zx(uint64_t v, int bits)
{
	return bits >= 64 ? v : v & ((1ull << bits) - 1);
}

static int64_t
sx(uint64_t v, int bits)
{
	if (bits >= 64)
		return (int64_t)v;
	uint64_t m = 1ull << (bits - 1);
	v = zx(v, bits);
	return (int64_t)((v ^ m) - m);
}

uint64_t
opnd_u(const Cta *c, const Warp *w, const Opnd *o, int lane)
{
	uint64_t v = 0;

	switch (o->k) {
	case OK_REG:
		v = *reg_at(w, o->r, lane);
		break;
	case OK_IMM:
		v = (uint64_t)o->imm;
		break;
	case OK_SPECIAL:
		switch (o->r) {
		case SR_TID_X: v = (uint64_t)(w->id * 32 + lane); break;
		case SR_NTID_X: v = (uint64_t)c->m->meta.threads; break;
		case SR_NTID_Y: case SR_NTID_Z: v = 1; break;
		case SR_CTAID_X: case SR_CTAID_Y: case SR_CTAID_Z:
			v = c->ctaid[o->r - SR_CTAID_X];
			break;
		case SR_NCTAID_X: case SR_NCTAID_Y: case SR_NCTAID_Z:
			v = c->nctaid[o->r - SR_NCTAID_X];
			break;
		case SR_LANEID: v = (uint64_t)lane; break;
		case SR_WARPID: v = (uint64_t)w->id; break;
		case SR_CLUSTER_CTARANK: v = (uint64_t)c->rank; break;
		case SR_CLUSTER_NCTARANK: v = (uint64_t)c->cl->n; break;
		case SR_CLUSTER_CTAID_X: case SR_CLUSTER_CTAID_Y:
		case SR_CLUSTER_CTAID_Z:
			v = c->ctaid[o->r - SR_CLUSTER_CTAID_X] %
				c->cl->dim[o->r - SR_CLUSTER_CTAID_X];
			break;
		case SR_CLUSTER_NCTAID_X: case SR_CLUSTER_NCTAID_Y:
		case SR_CLUSTER_NCTAID_Z:
			v = c->cl->dim[o->r - SR_CLUSTER_NCTAID_X];
			break;
		case SR_CLUSTERID_X: case SR_CLUSTERID_Y: case SR_CLUSTERID_Z:
			v = c->ctaid[o->r - SR_CLUSTERID_X] /
				c->cl->dim[o->r - SR_CLUSTERID_X];
			break;
		case SR_NCLUSTERID_X: case SR_NCLUSTERID_Y:
		case SR_NCLUSTERID_Z:
			v = c->nctaid[o->r - SR_NCLUSTERID_X] /
				c->cl->dim[o->r - SR_NCLUSTERID_X];
			break;
		default: v = 0;   /* %tid.y, %tid.z: the CTA is 1-D */
		}
		break;
	}
	return o->neg ? v ^ 1 : v;
}

static void
put(Warp *w, const Opnd *d, int lane, uint64_t v)
{
	if (d->k == OK_REG)
		*reg_at(w, d->r, lane) = v;
}

uint8_t *
smem_at(Cta *c, uint32_t addr, uint32_t n, const char *what)
{
	if (addr < SMEM_BASE || addr > c->smem_end || n > c->smem_end - addr) {
		sim_fail(c->sim, "%s of %u bytes at shared address 0x%x is "
			"outside the kernel's shared memory [0x%x, 0x%x)", what,
			n, addr, SMEM_BASE, c->smem_end);
		return NULL;
	}
	if (n && addr % (n > 16 ? 16 : n)) {
		sim_fail(c->sim, "%s of %u bytes at shared address 0x%x is "
			"misaligned", what, n, addr);
		return NULL;
	}
	return c->smem + addr;
}

/* The bytes at a generic or state-space address. */
static uint8_t *
mem_at(Cta *c, int op, uint64_t a, uint32_t n)
{
	if (op == OP_LD_SHARED_CL || op == OP_ST_SHARED_CL) {
		uint32_t local;
		bool st = op == OP_ST_SHARED_CL;
		Cta *p = cluster_cta(c, a, &local, st ? "a store" : "a load");
		return p ? mem_at(p, st ? OP_ST_SHARED : OP_LD_SHARED, local,
			n) : NULL;
	}
	if (op == OP_LD_SHARED || op == OP_ST_SHARED) {
		if (a >> 32) {
			sim_fail(c->sim, "shared address 0x%llx is above 32 bits",
				(unsigned long long)a);
			return NULL;
		}
		uint8_t *p = smem_at(c, (uint32_t)a, n, op == OP_LD_SHARED ?
			"a load" : "a store");
		for (uint32_t b = (uint32_t)a / 8; p && op == OP_ST_SHARED &&
		    b <= ((uint32_t)a + n - 1) / 8; b++)
			if (c->mbmark[b]) {
				sim_fail(c->sim, "a store at shared address 0x%x "
					"writes over an mbarrier", (unsigned)a);
				return NULL;
			}
		return p;
	}
	if (op == OP_LD_PARAM) {
		uint64_t off = a - PARAM_BASE;
		if (a < PARAM_BASE || off + n > (uint64_t)c->nparam || off % n) {
			sim_fail(c->sim, "a parameter load of %u bytes at offset "
				"%lld is outside the parameters or misaligned", n,
				(long long)(a - PARAM_BASE));
			return NULL;
		}
		return (uint8_t *)c->param + off;
	}
	if (a % n) {
		sim_fail(c->sim, "a global access of %u bytes at 0x%llx is "
			"misaligned", n, (unsigned long long)a);
		return NULL;
	}
	return sim_gmem(c->sim, a, n, op == OP_ST_GLOBAL ? "a store" :
		op == OP_RED_GLOBAL_ADD || op == OP_RED_REL_ADD ?
		"an atomic add" : "a load");
}

/* A vector access (ld.global.nc.v4.b32 {a, b, c, d}, [x]; the shared
 * forms alike): each of the
 * vector's registers in turn, from consecutive elements; the address
 * aligned to the whole vector, as the hardware requires. */
static int
ldst_vec(Cta *c, Warp *w, const Ins *in, uint32_t mask)
{
	int op = in->op;
	bool cl = op == OP_LD_SHARED_CL_V4 || op == OP_ST_SHARED_CL_V4 ||
		op == OP_LD_SHARED_CL_V2 || op == OP_ST_SHARED_CL_V2;
	bool st = op == OP_ST_GLOBAL_V2 || op == OP_ST_GLOBAL_V4 ||
		op == OP_ST_SHARED_V2 || op == OP_ST_SHARED_V4 ||
		op == OP_ST_SHARED_CL_V4 || op == OP_ST_SHARED_CL_V2;
	bool sh = op == OP_LD_SHARED_V2 || op == OP_LD_SHARED_V4 ||
		op == OP_ST_SHARED_V2 || op == OP_ST_SHARED_V4;
	int nv = op == OP_LD_GLOBAL_NC_V2 || op == OP_ST_GLOBAL_V2 ||
		op == OP_LD_SHARED_V2 || op == OP_ST_SHARED_V2 ||
		op == OP_LD_SHARED_CL_V2 || op == OP_ST_SHARED_CL_V2 ? 2 : 4;
	int base = cl ? (st ? OP_ST_SHARED_CL : OP_LD_SHARED_CL) :
		sh ? (st ? OP_ST_SHARED : OP_LD_SHARED) :
		st ? OP_ST_GLOBAL : OP_LD_GLOBAL_NC;
	const Opnd *ad = &in->o[st ? 0 : 1], *v = &in->o[st ? 1 : 0];
	uint32_t n = (uint32_t)ty_bits(in->ty[0]) / 8;

	if (n == 0 || v->k != OK_VEC || v->n != nv)
		return sim_fail(c->sim, "a vector access needs %d registers of "
			"a sized type", nv), ST_ERR;
	for (int l = 0; l < 32; l++) {
		if (!(mask >> l & 1))
			continue;
		uint64_t a = (uint64_t)ad->imm;
		if (ad->r >= 0)
			a += *reg_at(w, ad->r, l);
		uint8_t *p = mem_at(c, base, a, n * (uint32_t)nv);
		if (!p)
			return ST_ERR;
		for (int q = 0; q < nv; q++) {
			uint64_t x = 0;
			if (st) {
				x = *reg_at(w, v->v[q], l);
				memcpy(p + q * n, &x, n);
			} else {
				memcpy(&x, p + q * n, n);
				*reg_at(w, v->v[q], l) = x;
			}
		}
	}
	return ST_OK;
}

/* mapa.shared::cluster d, a, r: CTA r's address of this CTA's a, in
 * cluster_cta's encoding. */
static int
mapa(Cta *c, Warp *w, const Ins *in, uint32_t mask)
{
	for (int l = 0; l < 32; l++) {
		if (!(mask >> l & 1))
			continue;
		uint64_t a = opnd_u(c, w, &in->o[1], l);
		uint64_t r = opnd_u(c, w, &in->o[2], l) & 0xffffffffu;
		if (a >> 24 || r >= (uint64_t)c->cl->n)
			return sim_fail(c->sim, "mapa of shared address 0x%llx "
				"to rank %llu of a cluster of %d CTAs",
				(unsigned long long)a, (unsigned long long)r,
				c->cl->n), ST_ERR;
		put(w, &in->o[0], l, (r + 1) << 24 | a);
	}
	return ST_OK;
}

static int
ldst(Cta *c, Warp *w, const Ins *in, uint32_t mask)
{
	/* f32 (s32 with release): one lane at a time */
	bool red = in->op == OP_RED_GLOBAL_ADD || in->op == OP_RED_REL_ADD;
	bool st = in->op == OP_ST_GLOBAL || in->op == OP_ST_SHARED ||
		in->op == OP_ST_SHARED_CL || red;
	const Opnd *ad = &in->o[st ? 0 : 1], *v = &in->o[st ? 1 : 0];
	uint32_t n = (uint32_t)ty_bits(in->ty[0]) / 8;

	if (n == 0)
		return sim_fail(c->sim, "a load or store of predicates"), ST_ERR;
	for (int l = 0; l < 32; l++) {
		if (!(mask >> l & 1))
			continue;
		uint64_t a = (uint64_t)ad->imm;
		if (ad->r >= 0)
			a += *reg_at(w, ad->r, l);
		uint8_t *p = mem_at(c, in->op, a, n);
		if (!p)
			return ST_ERR;
		uint64_t x = 0;
		if (red && in->op == OP_RED_REL_ADD) {
			uint32_t u;
			memcpy(&u, p, 4);
			u += (uint32_t)opnd_u(c, w, v, l);
			memcpy(p, &u, 4);
		} else if (red) {
			float f;
			memcpy(&f, p, 4);
			f += f32_of((uint32_t)opnd_u(c, w, v, l));
			memcpy(p, &f, 4);
		} else if (st) {
			x = opnd_u(c, w, v, l);
			memcpy(p, &x, n);   /* little-endian, as the GPU */
		} else {
			memcpy(&x, p, n);
			if (ty_signed(in->ty[0]))
				x = (uint64_t)sx(x, (int)n * 8);
			put(w, v, l, x);
		}
	}
	return ST_OK;
}

static bool
compare(int cmp, int ty, uint64_t a, uint64_t b)
{
	int bits = ty_bits(ty);

	if (ty == TY_F32) {
		float x = f32_of((uint32_t)a), y = f32_of((uint32_t)b);
		switch (cmp) {
		case CMP_EQ: return x == y;
		case CMP_NE: return x < y || x > y;   /* ordered */
		case CMP_LT: case CMP_LO: return x < y;
		case CMP_LE: case CMP_LS: return x <= y;
		case CMP_GT: case CMP_HI: return x > y;
		default: return x >= y;
		}
	}
	if (ty_signed(ty) && cmp >= CMP_LT && cmp <= CMP_GE) {
		int64_t x = sx(a, bits), y = sx(b, bits);
		return cmp == CMP_LT ? x < y : cmp == CMP_LE ? x <= y :
			cmp == CMP_GT ? x > y : x >= y;
	}
	a = zx(a, bits);
	b = zx(b, bits);
	switch (cmp) {
	case CMP_EQ: return a == b;
	case CMP_NE: return a != b;
	case CMP_LT: case CMP_LO: return a < b;
	case CMP_LE: case CMP_LS: return a <= b;
	case CMP_GT: case CMP_HI: return a > b;
	default: return a >= b;
	}
}

static float
fminmax(float x, float y, bool max)
{
	if (isnan(x))
		return y;
	if (isnan(y))
		return x;
	if (x == y)   /* -0 < +0 */
		return max ? (signbit(x) ? y : x) : (signbit(x) ? x : y);
	return max ? (x > y ? x : y) : (x < y ? x : y);
}

/* Integer arithmetic at `bits` wide; false on division by zero. */
static bool
intop(int op, int ty, uint64_t a, uint64_t b, uint64_t cc, uint64_t *r)
{
	int bits = ty_bits(ty);
	bool s = ty_signed(ty);
	int64_t x = sx(a, bits), y = sx(b, bits);
	uint64_t ua = zx(a, bits), ub = zx(b, bits);

	switch (op) {
	case OP_ADD: *r = ua + ub; break;
	case OP_SUB: *r = ua - ub; break;
	case OP_MUL_LO: *r = ua * ub; break;
	case OP_MAD_LO: *r = ua * ub + cc; break;
	case OP_MUL_HI:
		*r = s ? (uint64_t)((__int128)x * y >> bits) :
			(uint64_t)((unsigned __int128)ua * ub >> bits);
		break;
	case OP_MUL_WIDE: case OP_MAD_WIDE:
		*r = s ? (uint64_t)(x * y) : ua * ub;
		if (op == OP_MAD_WIDE)
			*r += cc;
		bits *= 2;
		break;
	case OP_DIV: case OP_REM:
		if (ub == 0)
			return false;
		if (s && y == -1)   /* no trap on INT_MIN / -1 */
			*r = op == OP_DIV ? (uint64_t)0 - (uint64_t)x : 0;
		else if (s)
			*r = (uint64_t)(op == OP_DIV ? x / y : x % y);
		else
			*r = op == OP_DIV ? ua / ub : ua % ub;
		break;
	case OP_MIN: *r = s ? (uint64_t)(x < y ? x : y) : ua < ub ? ua : ub;
		break;
	case OP_MAX: *r = s ? (uint64_t)(x > y ? x : y) : ua > ub ? ua : ub;
		break;
	case OP_AND: *r = ua & ub; break;
	case OP_OR: *r = ua | ub; break;
	case OP_XOR: *r = ua ^ ub; break;
	case OP_NOT: *r = ~ua; break;
	case OP_NEG: *r = (uint64_t)0 - ua; break;
	case OP_ABS: *r = x < 0 ? (uint64_t)0 - ua : ua; break;
	case OP_SHL: *r = zx(b, 32) >= (uint64_t)bits ? 0 : ua << zx(b, 32);
		break;
	case OP_SHR:
		if (zx(b, 32) >= (uint64_t)bits)
			*r = s && x < 0 ? ~0ull : 0;
		else
			*r = s ? (uint64_t)(x >> zx(b, 32)) : ua >> zx(b, 32);
		break;
	default: return false;
	}
	*r = zx(*r, bits);
	return true;
}

static float
fltop(int op, float x, float y, float z)
{
	switch (op) {
	case OP_ADD: return x + y;
	case OP_SUB: return x - y;
	case OP_MUL: return x * y;
	case OP_FMA_RN: return fmaf(x, y, z);
	case OP_DIV_RN: return x / y;
	case OP_MIN: return fminmax(x, y, false);
	case OP_MAX: return fminmax(x, y, true);
	case OP_NEG: return -x;
	case OP_ABS: return fabsf(x);
	case OP_EX2: return sim_ex2(x, true);
	case OP_EX2_NOFTZ: return sim_ex2(x, false);
	case OP_LG2: return sim_lg2(x);
	case OP_RCP: return sim_rcp(x);
	case OP_SQRT: return sim_sqrt(x);
	case OP_RSQRT: return sim_rsqrt(x);
	default: return sim_tanh(x);
	}
}

/* cvt: integer <-> integer, 16-bit float -> f32, f32 -> 16-bit (pairs),
 * integer -> f32 (rn), f32 -> integer (rzi). */
static uint64_t
convert(const Ins *in, uint64_t a, uint64_t b)
{
	int d = in->ty[0], s = in->ty[1];
	float f = f32_of((uint32_t)a);

	if (in->op == OP_CVT_RN && (d == TY_BF16X2 || d == TY_F16X2)) {
		float g = f32_of((uint32_t)b);
		uint16_t hi = d == TY_BF16X2 ? bf16_rn(f) : f16_rn(f);
		uint16_t lo = d == TY_BF16X2 ? bf16_rn(g) : f16_rn(g);
		return (uint64_t)hi << 16 | lo;
	}
	if (d == TY_BF16 && s == TY_F32)
		return bf16_rn(f);
	if (d == TY_F16 && s == TY_F32)
		return f16_rn(f);
	if (d == TY_F32 && s == TY_BF16)
		return bits_of(bf16_to_f32((uint16_t)a));
	if (d == TY_F32 && s == TY_F16)
		return bits_of(f16_to_f32((uint16_t)a));
	if (d == TY_F32)   /* from an integer, rounded to nearest */
		return bits_of(ty_signed(s) ? (float)sx(a, ty_bits(s)) :
			(float)zx(a, ty_bits(s)));
	if (s == TY_F32) {   /* rzi: truncate, saturate, NaN -> 0 */
		double t = isnan(f) ? 0 : trunc((double)f);
		int bits = ty_bits(d);
		bool sg = ty_signed(d);
		/* the bounds are powers of two, exact in double */
		double lo = sg ? -ldexp(1, bits - 1) : 0;
		double top = sg ? ldexp(1, bits - 1) : ldexp(1, bits);
		if (t >= top)   /* saturate without converting out of range */
			return zx(sg ? (1ull << (bits - 1)) - 1 : ~0ull, bits);
		t = t < lo ? lo : t;
		return zx(sg ? (uint64_t)(int64_t)t : (uint64_t)t, bits);
	}
	uint64_t v = ty_signed(s) ? (uint64_t)sx(a, ty_bits(s)) :
		zx(a, ty_bits(s));
	return zx(v, ty_bits(d));
}

const char *
op_check(const Ins *in)
{
	int d = in->ty[0], s = in->ty[1];
	bool di = ty_bits(d) && d < TY_F16, si = ty_bits(s) && s < TY_F16;

	switch (in->op) {
	case OP_CVT:
		if ((di && si) || (d == TY_F32 && (s == TY_BF16 ||
		    s == TY_F16)))
			return NULL;
		return "this cvt needs a rounding modifier or is not modelled";
	case OP_CVT_RN:
		if (((d == TY_BF16X2 || d == TY_F16X2 || d == TY_BF16 ||
		    d == TY_F16) && s == TY_F32) || (d == TY_F32 && si))
			return NULL;
		return "this cvt.rn is not modelled";
	case OP_CVT_RZI:
		return di && s == TY_F32 ? NULL : "this cvt.rzi is not modelled";
	case OP_WG_MMA:
		if (in->nopnd < 7 || in->o[0].k != OK_VEC ||
		    in->o[0].n != in->aux / 2 || (in->o[1].k == OK_VEC ?
		    in->o[1].n != 4 || in->nopnd != 7 : in->nopnd != 8))
			return "the operands do not match m64nNk16 (N/2 "
				"accumulators; an A descriptor or 4 registers)";
		if (d == TY_F32 && s == in->ty[2] && (s == TY_BF16 ||
		    s == TY_F16) && in->aux % 8 == 0 && in->aux >= 8 &&
		    in->aux <= 256)
			return NULL;
		return "only wgmma m64nNk16 with f32 += bf16 or f16 is modelled";
	case OP_TMA_LOAD: case OP_TMA_LOAD_MC: case OP_TMA_LOAD2:
		if (in->nopnd != (in->op == OP_TMA_LOAD_MC ? 5 : 4) ||
		    in->o[0].k != OK_ADDR || in->o[1].k != OK_ADDR ||
		    in->o[2].k != OK_VEC || in->o[3].k != OK_ADDR)
			return "expected [smem], [tmap, {coords}], [mbar] (and "
				"a ctaMask for .multicast::cluster)";
		return NULL;
	case OP_BULK_S2S: case OP_BULK_G2S:
		if (in->nopnd != 4 || in->o[0].k != OK_ADDR ||
		    in->o[1].k != OK_ADDR || in->o[3].k != OK_ADDR)
			return "expected [dstMem], [srcMem], size, [mbar]";
		return NULL;
	case OP_ST_ASYNC: case OP_ST_ASYNC_V2: case OP_ST_ASYNC_V4: {
		int nv = in->op == OP_ST_ASYNC ? 1 : in->op == OP_ST_ASYNC_V2 ?
			2 : 4;
		if (in->nopnd != 3 || in->o[0].k != OK_ADDR ||
		    in->o[2].k != OK_ADDR || (nv == 1 ? in->o[1].k != OK_REG &&
		    in->o[1].k != OK_IMM : in->o[1].k != OK_VEC ||
		    in->o[1].n != nv))
			return nv == 1 ? "expected [addr], value, [mbar]" :
				nv == 2 ? "expected [addr], {a, b}, [mbar]" :
				"expected [addr], {a, b, c, d}, [mbar]";
		return NULL;
	}
	case OP_TMA_STORE: case OP_TMA_REDUCE:
		if (in->nopnd != 3 || in->o[0].k != OK_ADDR ||
		    in->o[1].k != OK_VEC || in->o[2].k != OK_ADDR)
			return "expected [tmap, {coords}], [smem]";
		return NULL;
	case OP_SETP:
		return in->nopnd == 3 ? NULL : "setp with two results is not "
			"modelled";
	case OP_LDMATRIX: case OP_LDMATRIX_T: case OP_MMA_SYNC:
		return mma_sync_check(in);
	case OP_CPA_CA: case OP_CPA_CG: case OP_CPA_WAIT: case OP_CPA_ARRIVE:
	case OP_CPA_ARRIVE_NOINC:
		return cpa_check(in);
	case OP_MBAR_TEST: case OP_MBAR_TEST_PAR:
		return in->nopnd == 3 && in->o[0].k == OK_REG &&
			in->o[1].k == OK_ADDR ? NULL : "expected p, [bar], "
			"parity or state";
	case OP_TC_LD: case OP_TC_ST: {
		int v = in->op == OP_TC_LD ? 0 : 1;
		if (in->nopnd != 2 || in->o[v].k != OK_VEC ||
		    in->o[v].n != in->aux || in->o[1 - v].k != OK_ADDR ||
		    in->aux < 1 || in->aux > 128 || (in->aux & (in->aux - 1)))
			return "expected .xN (N a power of two to 128), N "
				"registers and [taddr]";
		return NULL;
	}
	case OP_TC_MMA: case OP_TC_MMA2:
		if (in->nopnd != 5 || in->o[0].k != OK_ADDR ||
		    in->o[2].k != OK_REG || (in->o[3].k != OK_IMM &&
		    in->o[3].k != OK_REG) ||
		    (in->o[1].k != OK_ADDR && in->o[1].k != OK_REG))
			return "expected [d], a-desc or [a], b-desc, idesc, "
				"enable-input-d (no scale or disable masks)";
		return NULL;
	case OP_TC_ALLOC: case OP_TC_DEALLOC: case OP_TC_COMMIT:
	case OP_TC_COMMIT_MC: case OP_TC_ALLOC2: case OP_TC_DEALLOC2:
	case OP_TC_COMMIT2: case OP_TC_COMMIT2_MC: {
		bool al = in->op == OP_TC_ALLOC || in->op == OP_TC_ALLOC2;
		bool de = in->op == OP_TC_DEALLOC || in->op == OP_TC_DEALLOC2;
		if (in->nopnd != (in->op == OP_TC_COMMIT ||
		    in->op == OP_TC_COMMIT2 ? 1 : 2) ||
		    in->o[0].k != (de ? OK_REG : OK_ADDR))
			return al ? "expected [slot], ncols" :
				de ? "expected taddr, ncols" :
				"expected [mbar] (and a ctaMask with "
				".multicast::cluster)";
		return NULL;
	}
	default:
		return NULL;
	}
}

/* shfl.sync, vote.sync, elect.sync, bar.warp.sync: the member mask
 * must name exactly the live lanes that are here. */
static bool
members(Cta *c, const Warp *w, uint32_t mask, uint32_t member)
{
	if ((member & w->live) == mask)
		return true;
	sim_fail(c->sim, "member mask 0x%08x, but the live lanes here are "
		"0x%08x (of live 0x%08x): divergent or partial warp", member,
		mask, w->live);
	return false;
}

static int
lanes(Cta *c, Warp *w, const Ins *in, uint32_t mask)
{
	const Opnd *o = in->o;
	uint64_t tmp[32];

	switch (in->op) {
	case OP_BAR_WARP_SYNC:
		return members(c, w, mask, (uint32_t)opnd_u(c, w, &o[0], 0)) ?
			ST_OK : ST_ERR;
	case OP_ELECT: {
		if (!members(c, w, mask, (uint32_t)opnd_u(c, w, &o[2], 0)))
			return ST_ERR;
		int lead = __builtin_ctz(mask);
		for (int l = 0; l < 32; l++)
			if (mask >> l & 1) {
				put(w, &o[0], l, (uint64_t)lead);
				put(w, &o[1], l, l == lead);
			}
		return ST_OK;
	}
	case OP_VOTE_ANY: case OP_VOTE_ALL: case OP_VOTE_BALLOT: {
		uint32_t ball = 0;
		if (!members(c, w, mask, (uint32_t)opnd_u(c, w, &o[2], 0)))
			return ST_ERR;
		for (int l = 0; l < 32; l++)
			if (mask >> l & 1 && opnd_u(c, w, &o[1], l) & 1)
				ball |= 1u << l;
		uint64_t r = in->op == OP_VOTE_BALLOT ? ball :
			in->op == OP_VOTE_ANY ? ball != 0 : ball == mask;
		for (int l = 0; l < 32; l++)
			if (mask >> l & 1)
				put(w, &o[0], l, r);
		return ST_OK;
	}
	default:
		break;
	}
	/* shfl.sync d, a, b, c, membermask (PTX ISA 9.7.8.6) */
	if (in->nopnd != 5)
		return sim_fail(c->sim, "shfl.sync with a predicate result is "
			"not modelled"), ST_ERR;
	if (!members(c, w, mask, (uint32_t)opnd_u(c, w, &o[4], 0)))
		return ST_ERR;
	for (int l = 0; l < 32; l++)
		tmp[l] = *reg_at(w, o[1].r, l);
	for (int l = 0; l < 32; l++) {
		if (!(mask >> l & 1))
			continue;
		int b = (int)(opnd_u(c, w, &o[2], l) & 31);
		uint32_t cc = (uint32_t)opnd_u(c, w, &o[3], l);
		int seg = (int)(cc >> 8 & 31), cv = (int)(cc & 31);
		int maxl = (l & seg) | (cv & ~seg), minl = l & seg, j;
		bool ok;
		switch (in->op) {
		case OP_SHFL_UP: j = l - b; ok = j >= maxl; break;
		case OP_SHFL_DOWN: j = l + b; ok = j <= maxl; break;
		case OP_SHFL_BFLY: j = l ^ b; ok = j <= maxl; break;
		default: j = minl | (b & ~seg); ok = j <= maxl; break;
		}
		if (!ok)
			j = l;
		if (!(mask >> j & 1))
			return sim_fail(c->sim, "lane %d reads lane %d, which is "
				"not in the shuffle", l, j), ST_ERR;
		put(w, &o[0], l, zx(tmp[j], 32));
	}
	return ST_OK;
}

int
exec_scalar(Cta *c, Warp *w, const Ins *in, uint32_t mask)
{
	const Opnd *o = in->o;
	int ty = in->ty[0], op = in->op;

	switch (op) {
	case OP_LD_PARAM: case OP_LD_GLOBAL: case OP_LD_GLOBAL_NC:
	case OP_LD_SHARED: case OP_ST_GLOBAL: case OP_ST_SHARED:
	case OP_RED_GLOBAL_ADD: case OP_LD_SHARED_CL: case OP_ST_SHARED_CL:
	/* the grid's CTAs run one after another, in order, so the memory
	 * orders of a semaphore (sem_wait, sem_add) have nothing to order */
	case OP_LD_ACQ_GLOBAL: case OP_RED_REL_ADD:
		return ldst(c, w, in, mask);
	case OP_MAPA:
		return mapa(c, w, in, mask);
	case OP_LD_GLOBAL_NC_V2: case OP_LD_GLOBAL_NC_V4:
	case OP_ST_GLOBAL_V2: case OP_ST_GLOBAL_V4:
	case OP_LD_SHARED_V2: case OP_LD_SHARED_V4:
	case OP_ST_SHARED_V2: case OP_ST_SHARED_V4:
	case OP_LD_SHARED_CL_V4: case OP_ST_SHARED_CL_V4:
	case OP_LD_SHARED_CL_V2: case OP_ST_SHARED_CL_V2:
		return ldst_vec(c, w, in, mask);
	case OP_ELECT: case OP_VOTE_ANY: case OP_VOTE_ALL: case OP_VOTE_BALLOT:
	case OP_SHFL_BFLY: case OP_SHFL_IDX: case OP_SHFL_UP:
	case OP_SHFL_DOWN: case OP_BAR_WARP_SYNC:
		return lanes(c, w, in, mask);
	case OP_SETMAXNREG_INC: case OP_SETMAXNREG_DEC:
	case OP_FENCE_MBAR: case OP_FENCE_PROXY: case OP_PREFETCH_TMAP:
	case OP_FENCE_PROXY_G:
	case OP_FENCE_CL:
	/* launches run one after another: the grid before has ended */
	case OP_GDC_WAIT: case OP_GDC_LAUNCH:
		return ST_OK;   /* no functional effect */
	default:
		break;
	}
	if (op == OP_MOV && (o[0].k == OK_VEC || o[1].k == OK_VEC)) {
		/* mov.bN {a, b, ...}, x splits x into equal parts, low first;
		 * mov.bN x, {a, b, ...} joins them */
		bool split = o[0].k == OK_VEC;
		const Opnd *vo = split ? &o[0] : &o[1];
		int part = ty_bits(ty) / (vo->n ? vo->n : 1);
		if (in->nopnd != 2 || (o[0].k == OK_VEC) == (o[1].k == OK_VEC) ||
		    part < 8 || part * vo->n != ty_bits(ty))
			return sim_fail(c->sim, "a vector mov must split or join "
				"one %d-bit value", ty_bits(ty)), ST_ERR;
		for (int l = 0; l < 32; l++) {
			if (!(mask >> l & 1))
				continue;
			uint64_t x = split ? opnd_u(c, w, &o[1], l) : 0;
			for (int e = 0; e < vo->n; e++) {
				uint64_t *rg = reg_at(w, vo->v[e], l);
				if (split)
					*rg = zx(x >> (e * part), part);
				else
					x |= zx(*rg, part) << (e * part);
			}
			if (!split)
				put(w, &o[0], l, x);
		}
		return ST_OK;
	}
	for (int l = 0; l < 32; l++) {
		if (!(mask >> l & 1))
			continue;
		uint64_t a = in->nopnd > 1 ? opnd_u(c, w, &o[1], l) : 0;
		uint64_t b = in->nopnd > 2 ? opnd_u(c, w, &o[2], l) : 0;
		uint64_t cc = in->nopnd > 3 ? opnd_u(c, w, &o[3], l) : 0, r;
		switch (op) {
		case OP_MOV: case OP_CVTA_PARAM: case OP_CVTA_GLOBAL:
			r = ty == TY_PRED ? a & 1 : zx(a, ty_bits(ty));
			break;
		case OP_SETP:
			r = compare(in->cmp, ty, a, b);
			break;
		case OP_SELP:
			r = cc & 1 ? a : b;
			break;
		case OP_CVT: case OP_CVT_RN: case OP_CVT_RZI:
			r = convert(in, a, b);
			break;
		default:
			if (ty == TY_PRED) {
				r = op == OP_AND ? a & b : op == OP_OR ? a | b :
					op == OP_XOR ? a ^ b : !(a & 1);
				r &= 1;
			} else if (ty == TY_F32) {
				r = bits_of(fltop(op, f32_of((uint32_t)a),
					f32_of((uint32_t)b), f32_of((uint32_t)cc)));
			} else if (!intop(op, ty, a, b, cc, &r)) {
				return sim_fail(c->sim, "integer division by zero"),
					ST_ERR;
			}
		}
		put(w, &o[0], l, r);
	}
	return ST_OK;
}
