/* reference.c: fg_attention_reference, the unfused baseline that checks
 * fagen's kernels on the GPU: S = Q K^T * scale (with ALiBi's bias, and
 * masked when causal), P = softmax(S) with LSE (and the sinks, when
 * given), O = P V, three kernels in float32 written as CUDA C below and
 * compiled at run time by nvrtc (nvrtc.c) for the device's arch, once
 * per context.
 *
 * S lives in scratch memory taken stream-ordered from a pool of the
 * context's (cuMemAllocFromPoolAsync, freed with cuMemFreeAsync on the
 * same stream), at most REF_CHUNK bytes of it: the (batch, head) pairs
 * are done in chunks that fit, one head at least.  The pool keeps up to
 * REF_KEEP bytes reserved across calls (its release threshold), so
 * repeated calls do not go back to the driver for memory. */
#include <stdio.h>
#include <string.h>

#include "rt_front.h"

enum { TILE = 16 };
#define REF_CHUNK ((size_t)1 << 30)
#define REF_KEEP ((cuuint64_t)1 << 30)

/* The kernels' one parameter; the CUDA C struct P below matches it field
 * for field (pointers and int64 first, so there is no padding). */
typedef struct RefParams {
	uint64_t q, k, v, o, lse, s;
	uint64_t sinks;         /* f32 [h], or 0 */
	uint64_t alibi;         /* f32 [h]: ALiBi slopes, or 0 */
	uint64_t cuq, cuk;      /* varlen: i32 [batch + 1] offsets, or 0 */
	int64_t st[4][4];       /* q, k, v, o: (batch, head, seq, dim) */
	int32_t h, sq, sk, d, causal, bh0;  /* varlen: sq, sk the longest */
	float scale;
	int32_t g;            /* query heads per K/V head */
	int32_t window, wl, wr;  /* a window's sides (attn_window) */
	float softcap;        /* > 0: s -> softcap * tanh(s / softcap) */
	int32_t sqt, skt;     /* varlen: the rows of q and k in all */
	int32_t dv, pad;      /* V's and O's head dim */
} RefParams;
_Static_assert(sizeof(RefParams) == 272, "RefParams must match struct P");

static const char ref_src[] =
"typedef unsigned short u16;\n"
"typedef long long i64;\n"
"struct P {\n"
"	const u16 *q, *k, *v; u16 *o; float *lse, *s;\n"
"	const float *sinks;\n"
"	const float *alibi;\n"
"	const int *cuq, *cuk;\n"
"	i64 st[4][4];\n"
"	int h, sq, sk, d, causal, bh0;\n"
"	float scale;\n"
"	int g;\n"
"	int window, wl, wr;\n"
"	float softcap;\n"
"	int sqt, skt;\n"
"	int dv, pad;\n"
"};\n"
/* sequence b's first rows and lengths: varlen, from the offsets
 * (clamped into the rows there are, as fagen's kernels clamp them),
 * else 0 and the dense lengths; the batch stride only when dense */
"struct Seq { int q0, lq, k0, lk; i64 bq, bk, bv, bo; };\n"
"__device__ Seq seq(const P &p, int b) {\n"
"	Seq r;\n"
"	if (p.cuq) {\n"
"		int q1 = min(p.cuq[b + 1], p.sqt), k1 = min(p.cuk[b + 1], p.skt);\n"
"		r.q0 = min(max(p.cuq[b], 0), q1); r.lq = q1 - r.q0;\n"
"		r.k0 = min(max(p.cuk[b], 0), k1); r.lk = k1 - r.k0;\n"
"		r.lq = min(r.lq, p.sq); r.lk = min(r.lk, p.sk);\n"
"		r.bq = r.q0 * p.st[0][2]; r.bk = r.k0 * p.st[1][2];\n"
"		r.bv = r.k0 * p.st[2][2]; r.bo = r.q0 * p.st[3][2];\n"
"	} else {\n"
"		r.q0 = r.k0 = 0; r.lq = p.sq; r.lk = p.sk;\n"
"		r.bq = b * p.st[0][0]; r.bk = b * p.st[1][0];\n"
"		r.bv = b * p.st[2][0]; r.bo = b * p.st[3][0];\n"
"	}\n"
"	return r;\n"
"}\n"
"#define T 16\n"
"__device__ float ld_bf16(u16 x) { return __uint_as_float((unsigned)x << 16); }\n"
"__device__ float ld_f16(u16 x) {\n"
"	float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(x)); return f;\n"
"}\n"
"__device__ u16 st_bf16(float f) {\n"
"	u16 r; asm(\"cvt.rn.bf16.f32 %0, %1;\" : \"=h\"(r) : \"f\"(f)); return r;\n"
"}\n"
"__device__ u16 st_f16(float f) {\n"
"	u16 r; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(r) : \"f\"(f)); return r;\n"
"}\n"
/* S[z][i][j] = (Q[i] . K[j]) * scale (softcapped, less the ALiBi bias
 * slope[h] * |i + sk - sq - j|), -inf above the causal diagonal */
"#define SCORES(DT) \\\n"
"extern \"C\" __global__ void fgref_scores_##DT(P p) {\\\n"
"	__shared__ float qt[T][T + 1], kt[T][T + 1];\\\n"
"	int z = blockIdx.z, bh = p.bh0 + z, b = bh / p.h, h = bh % p.h;\\\n"
"	int tx = threadIdx.x, ty = threadIdx.y;\\\n"
"	int i = blockIdx.y * T + ty, j = blockIdx.x * T + tx;\\\n"
"	int kj = blockIdx.x * T + ty;\\\n"
"	Seq sb = seq(p, b);\\\n"
"	const u16 *q = p.q + sb.bq + h * p.st[0][1];\\\n"
"	const u16 *k = p.k + sb.bk + h / p.g * p.st[1][1];\\\n"
"	float acc = 0;\\\n"
"	for (int d0 = 0; d0 < p.d; d0 += T) {\\\n"
"		int d = d0 + tx;\\\n"
"		qt[ty][tx] = i < sb.lq && d < p.d ? ld_##DT(q[i * p.st[0][2] + d]) : 0.f;\\\n"
"		kt[ty][tx] = kj < sb.lk && d < p.d ? ld_##DT(k[kj * p.st[1][2] + d]) : 0.f;\\\n"
"		__syncthreads();\\\n"
"		for (int t = 0; t < T; t++)\\\n"
"			acc += qt[ty][t] * kt[tx][t];\\\n"
"		__syncthreads();\\\n"
"	}\\\n"
"	if (i < sb.lq && j < sb.lk) {\\\n"
"		float s = acc * p.scale;\\\n"
"		if (p.softcap > 0)\\\n"
"			s = p.softcap * tanhf(s / p.softcap);\\\n"
"		if (p.alibi)\\\n"
"			s -= p.alibi[h] * fabsf((float)(i + sb.lk - sb.lq - j));\\\n"
"		if (((p.causal || p.window) && j > i + sb.lk - sb.lq + p.wr) ||\\\n"
"		    (p.window && j < i + sb.lk - sb.lq - p.wl))\\\n"
"			s = -__int_as_float(0x7f800000);\\\n"
"		p.s[((i64)z * p.sq + i) * p.sk + j] = s;\\\n"
"	}\\\n"
"}\n"
/* O[i] = sum_j P[i][j] V[j] */
"#define PV(DT) \\\n"
"extern \"C\" __global__ void fgref_pv_##DT(P p) {\\\n"
"	__shared__ float pt[T][T + 1], vt[T][T + 1];\\\n"
"	int z = blockIdx.z, bh = p.bh0 + z, b = bh / p.h, h = bh % p.h;\\\n"
"	int tx = threadIdx.x, ty = threadIdx.y;\\\n"
"	int i = blockIdx.y * T + ty, d = blockIdx.x * T + tx;\\\n"
"	Seq sb = seq(p, b);\\\n"
"	const u16 *v = p.v + sb.bv + h / p.g * p.st[2][1];\\\n"
"	const float *s = p.s + (i64)z * p.sq * p.sk;\\\n"
"	float acc = 0;\\\n"
"	for (int j0 = 0; j0 < sb.lk; j0 += T) {\\\n"
"		int j = j0 + tx, vj = j0 + ty;\\\n"
"		pt[ty][tx] = i < sb.lq && j < sb.lk ? s[(i64)i * p.sk + j] : 0.f;\\\n"
"		vt[ty][tx] = vj < sb.lk && d < p.dv ? ld_##DT(v[vj * p.st[2][2] + d]) : 0.f;\\\n"
"		__syncthreads();\\\n"
"		for (int t = 0; t < T; t++)\\\n"
"			acc += pt[ty][t] * vt[t][tx];\\\n"
"		__syncthreads();\\\n"
"	}\\\n"
"	if (i < sb.lq && d < p.dv)\\\n"
"		p.o[sb.bo + h * p.st[3][1] + i * p.st[3][2] + d] = st_##DT(acc);\\\n"
"}\n"
"SCORES(bf16)\n"
"SCORES(f16)\n"
"PV(bf16)\n"
"PV(f16)\n"
/* one block of 256 threads per row: P = exp(S - m) / l in place, and
 * LSE = m + log(l); a row with no key gets P = 0, LSE = -inf.  A sink
 * logit (its head's, not scaled) joins the maximum and l, not P: a row
 * with no key then gets P = 0 and LSE = the sink */
"__device__ float block_reduce(float x, bool max, float *red) {\n"
"	for (int o = 16; o; o >>= 1) {\n"
"		float y = __shfl_xor_sync(0xffffffffu, x, o);\n"
"		x = max ? fmaxf(x, y) : x + y;\n"
"	}\n"
"	if (threadIdx.x % 32 == 0)\n"
"		red[threadIdx.x / 32] = x;\n"
"	__syncthreads();\n"
"	x = red[0];\n"
"	for (int w = 1; w < blockDim.x / 32; w++)\n"
"		x = max ? fmaxf(x, red[w]) : x + red[w];\n"
"	__syncthreads();\n"
"	return x;\n"
"}\n"
"extern \"C\" __global__ void fgref_softmax(P p) {\n"
"	__shared__ float red[32];\n"
"	int z = blockIdx.y, i = blockIdx.x, bh = p.bh0 + z;\n"
"	Seq sb = seq(p, bh / p.h);\n"
"	if (i >= sb.lq)\n"
"		return;\n"
"	float *s = p.s + ((i64)z * p.sq + i) * p.sk;\n"
"	float ninf = -__int_as_float(0x7f800000), m = ninf, l = 0;\n"
"	float sink = p.sinks ? p.sinks[bh % p.h] : ninf;\n"
"	for (int j = threadIdx.x; j < sb.lk; j += blockDim.x)\n"
"		m = fmaxf(m, s[j]);\n"
"	m = fmaxf(block_reduce(m, true, red), sink);\n"
"	for (int j = threadIdx.x; j < sb.lk && m != ninf; j += blockDim.x)\n"
"		l += expf(s[j] - m);\n"
"	l = block_reduce(l, false, red);\n"
"	if (sink != ninf)\n"
"		l += expf(sink - m);\n"
"	for (int j = threadIdx.x; j < sb.lk; j += blockDim.x)\n"
"		s[j] = m == ninf ? 0.f : expf(s[j] - m) / l;\n"
"	/* varlen: lse is [h, sqt], row q0 + i of head bh % h */\n"
"	i64 at = p.cuq ? (i64)(bh % p.h) * p.sqt + sb.q0 + i :\n"
"		(i64)bh * p.sq + i;\n"
"	if (threadIdx.x == 0)\n"
"		p.lse[at] = m == ninf ? ninf : m + logf(l);\n"
"}\n";

typedef struct RefModule {
	int cc;               /* compute capability it was built for */
	CUmodule mod;
	CUfunction scores[2], pv[2], softmax;  /* [0]: bf16, [1]: f16 */
	CUmemoryPool pool;
} RefModule;

const char *
ref_source(void)
{
	return ref_src;
}

/* Load the cubin and find the kernels; with the primary context
 * current. */
static fg_status
load(fg_ctx *c, const Driver *d, const void *cubin, RefModule *m)
{
	const CudaApi *cu = &d->cu;
	struct {
		CUfunction *fn;
		const char *name;
	} fns[] = {
		{&m->scores[0], "fgref_scores_bf16"},
		{&m->scores[1], "fgref_scores_f16"},
		{&m->pv[0], "fgref_pv_bf16"},
		{&m->pv[1], "fgref_pv_f16"},
		{&m->softmax, "fgref_softmax"},
	};
	CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
		.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE,
		.id = d->dev}};
	cuuint64_t keep = REF_KEEP;
	fg_status st;

	if ((st = cuda_check(c, d, cu->ModuleLoadDataEx(&m->mod, cubin, 0,
	    NULL, NULL), "cuModuleLoadData(reference)")))
		return st;
	for (size_t i = 0; i < COUNT(fns); i++)
		if ((st = cuda_check(c, d, cu->ModuleGetFunction(fns[i].fn,
		    m->mod, fns[i].name), "cuModuleGetFunction(reference)")))
			goto fail;
	if ((st = cuda_check(c, d, cu->MemPoolCreate(&m->pool, &props),
	    "cuMemPoolCreate")))
		goto fail;
	if ((st = cuda_check(c, d, cu->MemPoolSetAttribute(m->pool,
	    CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep),
	    "cuMemPoolSetAttribute(release threshold)"))) {
		cu->MemPoolDestroy(m->pool);
		goto fail;
	}
	return FG_OK;
fail:
	cu->ModuleUnload(m->mod);
	return st;
}

/* The context's reference module, compiled and loaded on first use. */
static fg_status
module(fg_ctx *c, const char *fn, const Driver *d, RefModule **out)
{
	char arch[16];
	void *cubin = NULL;
	size_t len = 0;
	CUcontext prev;
	fg_status st = FG_OK;
	RefModule *m;

	*out = NULL;
	if (c->sim > 0)
		return rt_err(c, FG_ERR_UNSUPPORTED, "%s runs CUDA C, which "
			"the simulator (FAGEN_SIM) does not: it runs fagen's "
			"kernels only", fn);
	pthread_mutex_lock(&c->attn_mu);
	if (!(m = c->ref)) {
		snprintf(arch, sizeof arch, "sm_%d%d", d->cc_major,
			d->cc_minor);
		if (!(m = rt_alloc(c, sizeof *m)))
			st = rt_err(c, FG_ERR_NOMEM, "out of memory");
		else if (!(st = nvrtc_cubin(c, fn, ref_src, "fagen_reference.cu",
		    arch, &cubin, &len)) && !(st = cuda_check(c, d,
		    d->cu.CtxPushCurrent(d->pctx), "cuCtxPushCurrent"))) {
			memset(m, 0, sizeof *m);
			st = load(c, d, cubin, m);
			d->cu.CtxPopCurrent(&prev);
		}
		rt_free(c, cubin, len);
		if (st) {
			rt_free(c, m, sizeof *m);
			m = NULL;
		}
		c->ref = m;
	}
	pthread_mutex_unlock(&c->attn_mu);
	*out = m;
	return st;
}

static fg_status
launch(fg_ctx *c, const Driver *d, CUfunction fn, CUstream s,
	const unsigned g[3], unsigned bx, unsigned by, RefParams *p)
{
	void *params[] = {p};
	CUlaunchConfig cfg = {
		.gridDimX = g[0], .gridDimY = g[1], .gridDimZ = g[2],
		.blockDimX = bx, .blockDimY = by, .blockDimZ = 1,
		.hStream = s,
	};

	return cuda_check(c, d, d->cu.LaunchKernelEx(&cfg, fn, params, NULL),
		"cuLaunchKernelEx(reference)");
}

/* The three kernels over each chunk of (batch, head) pairs, with the
 * primary context current. */
static fg_status
run(fg_ctx *c, const Driver *d, const RefModule *m, CUstream s,
	RefParams *p, int64_t nbh, int64_t chunk, bool f16)
{
	unsigned cq = (unsigned)((p->sq + TILE - 1) / TILE);
	fg_status st = FG_OK;

	for (int64_t bh = 0; bh < nbh && !st; bh += chunk) {
		unsigned n = (unsigned)(nbh - bh < chunk ? nbh - bh : chunk);
		unsigned gs[3] = {(unsigned)((p->sk + TILE - 1) / TILE), cq, n};
		unsigned gm[3] = {(unsigned)p->sq, n, 1};
		unsigned gp[3] = {(unsigned)((p->dv + TILE - 1) / TILE), cq, n};
		p->bh0 = (int32_t)bh;
		/* no key (sk 0): no scores; the softmax gives P = 0 and
		 * LSE = -inf (or the sink), P V gives O = 0 */
		if (!(st = p->sk ? launch(c, d, m->scores[f16], s, gs, TILE,
		    TILE, p) : FG_OK) &&
		    !(st = launch(c, d, m->softmax, s, gm, 256, 1, p)))
			st = launch(c, d, m->pv[f16], s, gp, TILE, TILE, p);
	}
	return st;
}

fg_status
fg_attention_reference(fg_ctx *c, const fg_attention_args *a, CUstream s)
{
	static const char fn[] = "fg_attention_reference";
	RefModule *m;
	Driver *d;
	Attn t;
	CUcontext prev;
	CUdeviceptr scratch;
	fg_status st;

	if (!c)
		return FG_ERR_INVALID;
	if (a && flex_any(a))
		return rt_err(c, FG_ERR_UNSUPPORTED, "%s: the reference has no "
			"mods or block masks (it would compute plain attention); "
			"compare with a reference that applies them", fn);
	if ((st = attn_check(c, fn, a, s, false, &t)) ||
	    (st = cuda_get(c, &d)) || (st = module(c, fn, d, &m)))
		return st;
	/* varlen: each (sequence, head) pair is one of the dense problem's
	 * (batch, head) pairs of max_seqlen_q x max_seqlen_k scores, its
	 * own lengths read from the offsets on the device */
	bool vl = attn_varlen(a);
	int64_t sq = vl ? a->max_seqlen_q : a->seq_q;
	int64_t sk = vl ? a->max_seqlen_k : a->seq_k;
	/* sizes fit 32 bits and seq_q 2^20 (attn_check): these hold */
	int64_t rowb, nbh;
	if (!ck_mul64(sq, sk, &rowb) || !ck_mul64(rowb, 4, &rowb) ||
	    !ck_mul64(a->batch, a->heads, &nbh))
		return rt_err(c, FG_ERR_INVALID, "%s: seq_q * seq_k * 4 bytes "
			"of scores, or batch * heads, overflows 64 bits", fn);
	if (sq == 0 || nbh == 0) {  /* no query row: nothing to write */
		rt_clear(c);
		return FG_OK;
	}
	size_t row = rowb ? (size_t)rowb : 4;
	int64_t chunk = (int64_t)(REF_CHUNK / row);
	chunk = chunk < 1 ? 1 : chunk > 65535 ? 65535 : chunk;
	chunk = chunk < nbh ? chunk : nbh;
	RefParams p = {.q = a->q, .k = a->k, .v = a->v, .o = a->o,
		.lse = a->lse, .sinks = a->sinks, .alibi = a->alibi_slopes,
		.cuq = vl ? a->cu_seqlens_q : 0, .cuk = vl ? a->cu_seqlens_k : 0,
		.sqt = (int32_t)a->seq_q, .skt = (int32_t)a->seq_k,
		.h = (int32_t)a->heads,
		.g = (int32_t)(a->heads / attn_heads_k(a)),
		.window = a->window != 0, .wl = (int32_t)t.wl,
		.wr = (int32_t)t.wr, .softcap = (float)a->softcap,
		.sq = (int32_t)sq, .sk = (int32_t)sk,
		.d = (int32_t)a->head_dim, .dv = (int32_t)attn_dv(a),
		.causal = a->causal != 0,
		.scale = (float)t.scale};
	memcpy(p.st, t.st, sizeof p.st);
	if ((st = cuda_check(c, d, d->cu.CtxPushCurrent(d->pctx),
	    "cuCtxPushCurrent")))
		return st;
	st = cuda_check(c, d, d->cu.MemAllocFromPoolAsync(&scratch,
		row * (size_t)chunk, m->pool, s), "cuMemAllocFromPoolAsync "
		"(the reference's scratch for S)");
	if (!st) {
		p.s = scratch;
		st = run(c, d, m, s, &p, nbh, chunk, a->dtype == FG_DTYPE_F16);
		fg_status fst = cuda_check(c, d, d->cu.MemFreeAsync(scratch, s),
			"cuMemFreeAsync");
		st = st ? st : fst;
	}
	d->cu.CtxPopCurrent(&prev);
	if (!st)
		rt_clear(c);
	return st;
}

void
ref_free(fg_ctx *c)
{
	RefModule *m = c->ref;
	Driver *d = c->drv;
	CUcontext prev;

	if (!m)
		return;
	if (d) {
		d->cu.CtxPushCurrent(d->pctx);
		d->cu.ModuleUnload(m->mod);
		d->cu.MemPoolDestroy(m->pool);
		d->cu.CtxPopCurrent(&prev);
	}
	rt_free(c, m, sizeof *m);
	c->ref = NULL;
}
