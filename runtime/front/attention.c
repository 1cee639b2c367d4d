/* attention.c: fg_attention_forward, attention on the shipped schedules.
 *
 * The caller describes the problem (fg_attention_args); this file checks
 * every argument before anything needs the GPU, picks the schedule for
 * the device (sm_90a: fa_fwd_sm90.fa with -D D, DT and CAUSAL, and
 * SINKS=true when sinks are given, ALIBI=true with ALiBi slopes; no
 * other arch has one yet), compiles
 * and creates its kernel on first use, keeps it in the context per
 * variant, and launches it through fg_launch with the caller's strides
 * mapped onto the schedule's [Z, S, H, D] tensors.
 *
 * Variants are compiled under ctx->attn_mu, so two threads asking for the
 * same one compile it once; loading and launching need no lock of ours
 * (fg_kernel_load has its own).  A failed compile is not remembered: the
 * next call tries again. */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt_front.h"

#ifndef FG_INSTALL_SCHEDULES
#define FG_INSTALL_SCHEDULES "/usr/local/share/fagen/schedules"
#endif

struct AttnVariant {
	int cc, d, causal;    /* compute capability: 90 */
	int dv;               /* -D DV (V's head dim) when not d */
	bool window, softcap; /* -D WINDOW=true, -D SOFTCAP=true */
	bool sinks;           /* -D SINKS=true */
	bool alibi;           /* -D ALIBI=true */
	bool varlen;          /* -D VARLEN=true */
	bool score_mod, mask_mod, blocks; /* -D SCORE_MOD, MASK_MOD, BLOCKS */
	int pack;             /* -D PACK=N (1: none) */
	bool single;          /* -D PERSIST=false: a CTA a causal tile */
	bool nc3;             /* -D NC=3: three consumers, 192-row tiles
			       * (at d = 96 with P through shared memory,
			       * -D PVS=true) */
	char *mods;           /* the mod file (owned), or NULL */
	bool plain;           /* only -D D and DT (the backward's pre and
			       * post kernels) */
	bool det;             /* -D DETERMINISTIC=true (the backward's
			       * main kernel: dQ added in a fixed order) */
	fg_dtype dt;
	char file[64];        /* the schedule's file name */
	fg_kernel *k;
	AttnVariant *next;
};

static const char *const dimname[4] = {"batch", "heads", "seq", "head_dim"};

static fg_status FMT(3, 4)
bad(fg_ctx *c, const char *fn, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	int n = snprintf(msg, sizeof msg, "%s: ", fn);

	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
	va_end(ap);
	return rt_err(c, FG_ERR_INVALID, "%s", msg);
}

static fg_status
sizes(fg_ctx *c, const char *fn, const fg_attention_args *a, bool tma)
{
	const struct {
		const char *name;
		int64_t v;
	} s[] = {
		{"batch", a->batch}, {"heads", a->heads}, {"seq_q", a->seq_q},
		{"seq_k", a->seq_k}, {"head_dim", a->head_dim},
	};

	for (size_t i = 0; i < COUNT(s); i++) {
		if (s[i].v <= 0)
			return bad(c, fn, "%s is %lld: sizes must be > 0",
				s[i].name, (long long)s[i].v);
		if (s[i].v > INT32_MAX)
			return bad(c, fn, "%s is %lld, which overflows 32-bit "
				"indexing (at most 2^31 - 1)", s[i].name,
				(long long)s[i].v);
	}
	if (a->heads_k < 0 || a->heads_k > a->heads)
		return bad(c, fn, "heads_k is %lld: the K/V heads must be "
			"between 1 and heads (%lld), or 0 for heads",
			(long long)a->heads_k, (long long)a->heads);
	if (a->heads_k && a->heads % a->heads_k)
		return bad(c, fn, "heads (%lld) is not a multiple of heads_k "
			"(%lld): grouped-query attention shares each K/V head "
			"among heads / heads_k query heads",
			(long long)a->heads, (long long)a->heads_k);
	if (a->head_dim_v < 0 || a->head_dim_v > INT32_MAX)
		return bad(c, fn, "head_dim_v is %lld: V's head dim must be > 0 "
			"(0: head_dim)", (long long)a->head_dim_v);
	int64_t d = a->head_dim, dv = attn_dv(a);
	if (tma && d != 64 && d != 96 && d != 128 && d != 192 && d != 256)
		return bad(c, fn, "head_dim is %lld; the fused kernels "
			"support 64, 96, 128, 192 and 256", (long long)d);
	if (tma && dv != d && !(d == 192 && dv == 128))
		return bad(c, fn, "head_dim_v is %lld with head_dim %lld; the "
			"fused kernels take head_dim_v = head_dim, or 128 with "
			"head_dim 192", (long long)dv, (long long)d);
	if (!tma && (d > 512 || dv > 512))
		return bad(c, fn, "%s is %lld; the reference supports up to "
			"512", d > 512 ? "head_dim" : "head_dim_v",
			(long long)(d > 512 ? d : dv));
	if (!tma && a->seq_q > 65535 * 16)  /* its grids' y extent */
		return bad(c, fn, "seq_q is %lld; the reference supports up "
			"to %d", (long long)a->seq_q, 65535 * 16);
	if (attn_varlen(a)) {
		if (!a->cu_seqlens_q || !a->cu_seqlens_k)
			return bad(c, fn, "cu_seqlens_%s is NULL: a "
				"variable-length batch gives both cu_seqlens_q "
				"and cu_seqlens_k", a->cu_seqlens_q ? "k" : "q");
		if (a->cu_seqlens_q % 4 || a->cu_seqlens_k % 4)
			return bad(c, fn, "cu_seqlens_%s = 0x%llx is not aligned "
				"to its int32 elements", a->cu_seqlens_q % 4 ?
				"q" : "k", (unsigned long long)(a->cu_seqlens_q %
				4 ? a->cu_seqlens_q : a->cu_seqlens_k));
		if (a->batch >= INT32_MAX)
			return bad(c, fn, "batch is %lld: cu_seqlens has batch "
				"+ 1 int32 entries", (long long)a->batch);
		if (a->max_seqlen_q < 1 || a->max_seqlen_q > a->seq_q)
			return bad(c, fn, "max_seqlen_q is %lld: a variable-"
				"length batch needs 1 .. seq_q (%lld, the total "
				"query tokens)", (long long)a->max_seqlen_q,
				(long long)a->seq_q);
		if (a->max_seqlen_k < 0 || a->max_seqlen_k > a->seq_k)
			return bad(c, fn, "max_seqlen_k is %lld: a variable-"
				"length batch needs 0 .. seq_k (%lld, the total "
				"key tokens)", (long long)a->max_seqlen_k,
				(long long)a->seq_k);
	}
	/* the kernel indexes LSE with 32-bit arithmetic */
	int64_t bh;
	if (tma && (!ck_mul64(attn_varlen(a) ? 1 : a->batch, a->heads, &bh) ||
	    bh > INT32_MAX / a->seq_q))
		return bad(c, fn, "batch * heads * seq_q = %lld * %lld * %lld "
			"LSE entries overflow the kernel's 32-bit indexing (at "
			"most 2^31 - 1)", (long long)a->batch,
			(long long)a->heads, (long long)a->seq_q);
	return FG_OK;
}

static fg_status
scalars(fg_ctx *c, const char *fn, const fg_attention_args *a, Attn *out)
{
	if (a->dtype != FG_DTYPE_BF16 && a->dtype != FG_DTYPE_F16)
		return bad(c, fn, "dtype is %d: use FG_DTYPE_BF16 or "
			"FG_DTYPE_F16", (int)a->dtype);
	if (!isfinite(a->scale) || a->scale < 0 || a->scale > FLT_MAX / 2)
		return bad(c, fn, "scale is %g: it must be finite and > 0 "
			"(0: 1/sqrt(head_dim))", a->scale);
	out->scale = a->scale ? a->scale : 1 / sqrt((double)a->head_dim);
	if (!isfinite(a->softcap) || a->softcap < 0 ||
	    a->softcap > FLT_MAX / 2)
		return bad(c, fn, "softcap is %g: it must be finite and > 0 "
			"(0: none)", a->softcap);
	if (a->window && (a->window_left < -1 || a->window_right < -1))
		return bad(c, fn, "window is (%lld, %lld): each side is a "
			"number of keys >= 0, or -1 for unbounded",
			(long long)a->window_left, (long long)a->window_right);
	/* the kernels add seq_k and the window's sides in 32 bits */
	if (a->window && (a->seq_k >= (int64_t)1 << 30 ||
	    a->seq_q >= (int64_t)1 << 30))
		return bad(c, fn, "%s is %lld: a window needs seq_q and seq_k "
			"below 2^30", a->seq_k >= (int64_t)1 << 30 ? "seq_k" :
			"seq_q", (long long)(a->seq_k >= (int64_t)1 << 30 ?
			a->seq_k : a->seq_q));
	attn_window(a, &out->wl, &out->wr);
	return FG_OK;
}

void
attn_window(const fg_attention_args *a, int64_t *wl, int64_t *wr)
{
	/* Query i sees keys i + seq_k - seq_q - wl .. i + seq_k - seq_q +
	 * wr: a left side of seq_k or more, and a right side of seq_q or
	 * more (not seq_k: with seq_q > seq_k the first rows would lose
	 * keys), leave no key out, and are what -1 (unbounded) becomes.
	 * Varlen: seq_q and seq_k are the totals, at least any sequence's. */
	int64_t sq = a->seq_q, sk = a->seq_k;

	*wl = !a->window || a->window_left < 0 || a->window_left > sk ? sk :
		a->window_left;
	*wr = !a->window || a->window_right < 0 || a->window_right > sq ?
		sq : a->window_right;
	if (a->causal)
		*wr = 0;
}

/* Dense strides for extents n (batch, heads, seq, head_dim), innermost
 * 1; FG_ERR_INVALID naming the extents whose product overflows. */
static fg_status
dense(fg_ctx *c, const char *fn, const char *name, const char *heads,
	const char *seq, const int64_t n[4], int64_t *st)
{
	const char *dn[4] = {"batch", heads, seq, "head_dim"};

	st[3] = 1;
	for (int i = 2; i >= 0; i--)
		if (!ck_mul64(st[i + 1], n[i + 1], &st[i]))
			/* only i = 0 can: each extent is below 2^31 */
			return bad(c, fn, "%s: its dense strides overflow "
				"64-bit addressing: %s * %s * %s = %lld * %lld "
				"* %lld elements", name, dn[1], dn[2], dn[3],
				(long long)n[1], (long long)n[2],
				(long long)n[3]);
	return FG_OK;
}

/* One tensor: its address and strides (resolved into st); vd: its last
 * extent is V's head dim (v, o and their gradients), else Q's. */
fg_status
attn_tensor(fg_ctx *c, const char *fn, const char *name, uint64_t ptr,
	const int64_t *given, bool q_rows, bool vd, const fg_attention_args *a,
	bool tma, int64_t *st)
{
	/* varlen: one batch of every sequence's rows; the batch stride is
	 * unused (given[0] is ignored and taken as the token stride) */
	const int64_t n[4] = {attn_varlen(a) ? 1 : a->batch, q_rows ?
		a->heads : attn_heads_k(a), q_rows ? a->seq_q : a->seq_k,
		vd ? attn_dv(a) : a->head_dim};
	int64_t span = 0, x;
	bool isdense = (!given[0] || attn_varlen(a)) && !given[1] &&
		!given[2] && !given[3];
	fg_status rs;

	if (!ptr)
		return bad(c, fn, "%s is NULL", name);
	if (ptr % (tma ? 16 : 2))
		return bad(c, fn, "%s = 0x%llx is not %d-byte aligned%s", name,
			(unsigned long long)ptr, tma ? 16 : 2, tma ?
			", as TMA requires" : "");
	if (isdense && attn_varlen(a)) {
		/* packed [tokens, heads, head_dim] (each extent < 2^31) */
		st[3] = 1;
		st[1] = n[3];
		st[0] = st[2] = n[1] * n[3];
	} else if (isdense && (rs = dense(c, fn, name, q_rows || !a->heads_k ?
	    "heads" : "heads_k", q_rows ? "seq_q" : "seq_k", n, st))) {
		return rs;
	}
	for (int i = 0; i < 4 && !isdense; i++)
		st[i] = given[i];
	if (!isdense && attn_varlen(a))
		st[0] = st[2];
	if (st[3] != 1)
		return bad(c, fn, "%s_strides[3] (head_dim) is %lld: the head "
			"dimension must be contiguous (stride 1)", name,
			(long long)st[3]);
	for (int i = 0; i < 3; i++) {
		if (st[i] <= 0)
			return bad(c, fn, "%s_strides[%d] (%s) is %lld: strides "
				"must be > 0 (or all 0: dense B,H,S,D)", name,
				i, dimname[i], (long long)st[i]);
		if (tma && (st[i] % 8 || st[i] >= (int64_t)1 << 39))
			return bad(c, fn, "%s_strides[%d] (%s) is %lld "
				"elements; TMA needs a multiple of 8 (16 "
				"bytes) below 2^39 (2^40 bytes)", name, i,
				dimname[i], (long long)st[i]);
	}
	/* the span in bytes (2 per element) must fit too */
	for (int i = 0; i < 4; i++) {
		if (!ck_mul64(n[i] - 1, st[i], &x))
			return bad(c, fn, "%s: its strides overflow 64-bit "
				"addressing: (%s - 1) * %s_strides[%d] is "
				"%lld * %lld", name, dimname[i], name, i,
				(long long)(n[i] - 1), (long long)st[i]);
		if (!ck_add64(span, x, &span) || span >= INT64_MAX / 2)
			return bad(c, fn, "%s: its strides overflow 64-bit "
				"addressing: its span through %s_strides[%d] "
				"(%s) is above 2^62 elements", name, name, i,
				dimname[i]);
	}
	return FG_OK;
}

fg_status
attn_check(fg_ctx *c, const char *fn, const fg_attention_args *a,
	CUstream stream, bool tma, Attn *out)
{
	fg_status st;

	if (!a)
		return bad(c, fn, "args is NULL");
	if (stream == NULL || stream == CU_STREAM_LEGACY)
		return bad(c, fn, "fagen does not launch on the legacy default "
			"stream (%s); pass a stream you created (cuStreamCreate, "
			"best with CU_STREAM_NON_BLOCKING) or "
			"CU_STREAM_PER_THREAD", stream ? "CU_STREAM_LEGACY" :
			"NULL");
	if ((st = sizes(c, fn, a, tma)) || (st = scalars(c, fn, a, out)) ||
	    (st = attn_tensor(c, fn, "q", a->q, a->q_strides, true, false, a,
	    tma, out->st[0])) ||
	    (st = attn_tensor(c, fn, "k", a->k, a->k_strides, false, false, a,
	    tma, out->st[1])) ||
	    (st = attn_tensor(c, fn, "v", a->v, a->v_strides, false, true, a,
	    tma, out->st[2])) ||
	    (st = attn_tensor(c, fn, "o", a->o, a->o_strides, true, true, a,
	    tma, out->st[3])))
		return st;
	if (attn_varlen(a) && (out->st[3][1] != attn_dv(a) || out->st[3][2] !=
	    a->heads * attn_dv(a)))
		return bad(c, fn, "o_strides are (head %lld, token %lld): a "
			"variable-length batch writes o from registers as a dense "
			"[seq_q, heads, head_dim_v] tensor; pass 0 strides and a "
			"contiguous o", (long long)out->st[3][1],
			(long long)out->st[3][2]);
	if (!a->lse)
		return bad(c, fn, "lse is NULL");
	if (a->lse % 4)
		return bad(c, fn, "lse = 0x%llx is not aligned to its f32 "
			"elements", (unsigned long long)a->lse);
	if (a->sinks % 4)
		return bad(c, fn, "sinks = 0x%llx is not aligned to its f32 "
			"elements", (unsigned long long)a->sinks);
	if (a->alibi_slopes % 4)
		return bad(c, fn, "alibi_slopes = 0x%llx is not aligned to its "
			"f32 elements", (unsigned long long)a->alibi_slopes);
	return FG_OK;
}

/* dir/file in path[n], when it fits and is readable.  (Built with
 * strlen and memcpy: GCC 12's -Wformat-truncation under UBSan took
 * snprintf's destination for a null pointer.) */
static bool
readable(char *path, size_t n, const char *dir, const char *file)
{
	size_t a = strlen(dir), b = strlen(file);

	if (a + b + 2 > n)
		return false;
	memcpy(path, dir, a);
	path[a] = '/';
	memcpy(path + a + 1, file, b + 1);
	return access(path, R_OK) == 0;
}

/* The built-in copy of the shipped schedule file, or NULL. */
static const Shipped *
built_in(const char *file)
{
	for (const Shipped *s = attn_shipped; s->name; s++)
		if (!strcmp(s->name, file))
			return s;
	return NULL;
}

fg_status
attn_schedule(fg_ctx *c, const char *file, char *path, size_t n,
	const Shipped **in)
{
	const char *env = getenv("FAGEN_SCHEDULE_DIR");
	const char *dir = c->schedule_dir ? c->schedule_dir : env && env[0] ?
		env : NULL;

	*in = NULL;
	if (dir) {
		if (readable(path, n, dir, file))
			return FG_OK;
		return rt_err(c, FG_ERR_IO, "cannot read the schedule '%s' in "
			"%s (from %s)", file, dir, c->schedule_dir ?
			"fg_options.schedule_dir" : "$FAGEN_SCHEDULE_DIR");
	}
	if ((*in = built_in(file))) {
		snprintf(path, n, "<built-in>/%s", file);
		return FG_OK;
	}
	if (readable(path, n, FG_INSTALL_SCHEDULES, file))
		return FG_OK;
#ifdef FG_SOURCE_SCHEDULES
	if (readable(path, n, FG_SOURCE_SCHEDULES, file))
		return FG_OK;
#define ALSO " or " FG_SOURCE_SCHEDULES
#else
#define ALSO ""
#endif
	return rt_err(c, FG_ERR_IO, "cannot find the schedule '%s' among "
		"libfagen's built-in schedules nor in %s%s; set "
		"FAGEN_SCHEDULE_DIR or fg_options.schedule_dir to the "
		"directory of fagen's schedules", file, FG_INSTALL_SCHEDULES,
		ALSO);
#undef ALSO
}

/* Whether the caller's schedule is a plain shipped file name. */
static fg_status
schedule_name(fg_ctx *c, const char *fn, const char *asked)
{
	size_t n = asked ? strnlen(asked, 64) : 0;

	if (asked && (n < 4 || n >= sizeof ((AttnVariant *)0)->file ||
	    strcmp(asked + n - 3, ".fa") || strchr(asked, '/') ||
	    asked[0] == '.'))
		return bad(c, fn, "schedule is '%.64s': give the file name of "
			"a shipped schedule (no directory, ending in .fa, "
			"under 64 bytes), e.g. fa_fwd_baseline_sm90.fa", asked);
	return FG_OK;
}

/* The schedule for compute capability cc and the call a (a->schedule:
 * the caller's choice or NULL): FG_OK with its file, or why not.  On
 * sm_90 at d = 64 (but for long grids without a mask, attn_nc3: the
 * warp-specialized one with three consumers) the non-specialized
 * schedule, three 64-row CTAs per
 * SM, measured 10 to 29 % faster than the warp-specialized one on an
 * H200 at every point of docs/PERF.md's grid; at d = 128 and 256 the
 * warp-specialized one is 1.3x to 1.7x the other.  Variable-length
 * batches take the same schedules (both have -D VARLEN=true).  Packed
 * GQA (pack) takes the warp-specialized one at every head dim.  On
 * sm_100 (never run on hardware: checked by ptxas, the verifier and the
 * simulator, docs/TARGETS.md) FA4's organization, fa_fwd_sm100.fa, and
 * the baseline for what only it has (ALiBi, score and mask mods) and
 * for head dim 192; no head dim 256, no block mask.  On sm_80 (any 8.x
 * device, or asked
 * for: fg_options.target) fa_fwd_sm80.fa, every variant but block
 * masks and packed GQA. */
static fg_status
pick(fg_ctx *c, const char *fn, int cc, const fg_attention_args *a,
	const char **file)
{
	int d = (int)a->head_dim;
	bool pack = attn_pack(a, cc) > 1;

	if (cc == 90) {
		*file = a->schedule ? a->schedule : d == 64 && !pack &&
			!attn_nc3(a, cc, "fa_fwd_sm90.fa", 1) ?
			"fa_fwd_baseline_sm90.fa" : "fa_fwd_sm90.fa";
		return FG_OK;
	}
	if (cc == 120) {
		/* the Hopper baseline as it is: TMA and mbarriers as
		 * Hopper's, its MMA mma.sync, half the key block */
		*file = a->schedule ? a->schedule : "fa_fwd_baseline_sm90.fa";
		return FG_OK;
	}
	if (cc == 80) {
		if (a->block_kv_num && !a->schedule)
			return rt_err(c, FG_ERR_UNSUPPORTED, "%s: block masks on "
				"sm_80: fagen's sm_80 attention schedule has none "
				"yet", fn);
		*file = a->schedule ? a->schedule : "fa_fwd_sm80.fa";
		return FG_OK;
	}
	if (cc != 100)
		return rt_err(c, FG_ERR_UNSUPPORTED, "%s: device %d is sm_%d; "
			"fagen's attention runs on sm_80 (A100 and later, as "
			"PTX), sm_90a (H100, H200), sm_100a (B200) and sm_120a "
			"(RTX 50, RTX PRO 6000) only", fn,
			c->device, cc);
	if (a->schedule) {
		*file = a->schedule;
		return FG_OK;
	}
	if (d == 256)
		return rt_err(c, FG_ERR_UNSUPPORTED, "%s: head_dim %d on sm_100: "
			"fagen's sm_100a attention schedules take head_dim 64, "
			"96, 128 and 192", fn, d);
	if (a->block_kv_num)
		return rt_err(c, FG_ERR_UNSUPPORTED, "%s: block masks on "
			"sm_100: fagen's sm_100a attention schedules have none "
			"yet", fn);
	/* head dim 192: the warp-specialized one's two Q subtiles and K/V
	 * ring do not fit 227 KB */
	*file = a->alibi_slopes || a->mods || d == 192 ?
		"fa_fwd_baseline_sm100.fa" : "fa_fwd_sm100.fa";
	return FG_OK;
}

/* Compile the variant's kernel; called with c->attn_mu held. */
static fg_status
build(fg_ctx *c, const char *fn, const char *file, const AttnVariant *v,
	fg_kernel **out)
{
	char d1[16], d2[16], d3[16], d4[16], d5[16];
	const char *defs[16] = {d1, d2, d3};
	int nd = v->plain ? 2 : 3;

	snprintf(d1, sizeof d1, "D=%d", v->d);
	snprintf(d2, sizeof d2, "DT=%s", v->dt == FG_DTYPE_F16 ? "f16" :
		"bf16");
	snprintf(d3, sizeof d3, "CAUSAL=%s", v->causal ? "true" : "false");
	/* each only when asked: a schedule without it stays valid */
	if (v->window)
		defs[nd++] = "WINDOW=true";
	if (v->softcap)
		defs[nd++] = "SOFTCAP=true";
	if (v->sinks)
		defs[nd++] = "SINKS=true";
	if (v->varlen)
		defs[nd++] = "VARLEN=true";
	if (v->alibi)
		defs[nd++] = "ALIBI=true";
	if (v->score_mod)
		defs[nd++] = "SCORE_MOD=true";
	if (v->mask_mod)
		defs[nd++] = "MASK_MOD=true";
	if (v->blocks)
		defs[nd++] = "BLOCKS=true";
	if (v->det)
		defs[nd++] = "DETERMINISTIC=true";
	if (v->pack > 1) {
		snprintf(d4, sizeof d4, "PACK=%d", v->pack);
		defs[nd++] = d4;
	}
	if (v->dv != v->d) {
		snprintf(d5, sizeof d5, "DV=%d", v->dv);
		defs[nd++] = d5;
	}
	if (v->single)
		defs[nd++] = "PERSIST=false";
	if (v->nc3)     /* d = 64: its register estimate warns; ptxas fits */
		defs[nd++] = "NC=3";
	if (v->nc3 && v->d == 96)
		defs[nd++] = "PVS=true";
	return front_build(c, fn, v->cc, file, defs, nd, v->mods, out);
}

fg_status
front_build(fg_ctx *c, const char *fn, int cc, const char *file,
	const char *const *defs, int nd, const char *mods, fg_kernel **out)
{
	char path[4096], list[512] = "";
	/* a schedule that declares sm_90a compiles for sm_100a as it is */
	fg_compile_options o = {.defines = (const char **)defs, .ndefines =
		nd, .arch = cc == 100 ? "sm_100a" : cc == 120 ? "sm_120a" : NULL,
		.mods = mods,
		.mods_name = mods ? "<mods>" : NULL};
	const Shipped *in;
	fg_program *p;
	fg_status st;
	size_t at = 0;

	if ((st = attn_schedule(c, file, path, sizeof path, &in)))
		return st;
	st = in ? fg_compile_string(c, path, (const char *)in->text, in->len,
		&o, &p) : fg_compile_file(c, path, &o, &p);
	if (st == FG_OK) {
		st = fg_kernel_create(c, fg_program_ptx(p, NULL), 0, out);
	} else if (st == FG_ERR_COMPILE) {
		for (int i = 0; i < nd && at < sizeof list; i++)
			at += (size_t)snprintf(list + at, sizeof list - at,
				"%s-D %s", i ? " " : "", defs[i]);
		st = rt_err(c, st, "%s: the schedule %s (%s%s%s%s) does not "
			"compile:\n%s", fn, path, list, o.arch ? " for " : "",
			o.arch ? o.arch : "", mods ? " with the mods given" : "",
			fg_program_diagnostics(p));
	}
	fg_program_free(p);
	return st;
}

static bool
same_mods(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

fg_status
attn_kernel(fg_ctx *c, const char *fn, const char *file, int cc,
	const fg_attention_args *a, unsigned how, fg_kernel **out)
{
	bool plain = how & AK_PLAIN;
	/* a window makes causal its right side (WR = 0): one variant */
	AttnVariant want = {.cc = cc, .d = (int)a->head_dim, .dv =
		(int)attn_dv(a), .dt = a->dtype, .plain = plain}, *v;
	fg_status st = FG_OK;

	if (!plain) {
		want.det = how & AK_DETERMINISTIC;
		want.causal = a->causal && !a->window;
		want.window = a->window != 0;
		want.softcap = a->softcap > 0;
		want.sinks = a->sinks != 0;
		want.varlen = attn_varlen(a);
		want.alibi = a->alibi_slopes != 0;
		want.score_mod = a->mods && a->score_mod;
		want.mask_mod = a->mods && a->mask_mod;
		want.blocks = a->block_kv_num != 0;
		want.mods = (char *)(a->mods ? a->mods : NULL);
	}
	want.pack = !plain && attn_packs(file) ? attn_pack(a, cc) : 1;
	want.single = !plain && attn_single(a, cc, file, want.pack);
	want.nc3 = !plain && !(how & AK_DETERMINISTIC) && attn_nc3(a, cc, file,
		want.pack);
	snprintf(want.file, sizeof want.file, "%s", file);
	pthread_mutex_lock(&c->attn_mu);
	for (v = c->attn; v; v = v->next)
		if (v->cc == want.cc && v->d == want.d && v->dv == want.dv &&
		    v->dt == want.dt &&
		    v->causal == want.causal && v->window == want.window &&
		    v->softcap == want.softcap && v->sinks == want.sinks &&
		    v->varlen == want.varlen && v->alibi == want.alibi &&
		    v->score_mod == want.score_mod &&
		    v->mask_mod == want.mask_mod && v->blocks == want.blocks &&
		    v->pack == want.pack && v->det == want.det &&
		    v->single == want.single && v->nc3 == want.nc3 &&
		    same_mods(v->mods, want.mods) &&
		    v->plain == want.plain && !strcmp(v->file, want.file))
			break;
	if (!v && !(st = build(c, fn, file, &want, &want.k))) {
		char *mods = want.mods ? rt_strdup(c, want.mods) : NULL;

		if ((!want.mods || mods) && (v = rt_alloc(c, sizeof *v))) {
			*v = want;
			v->mods = mods;
			v->next = c->attn;
			c->attn = v;
		} else {
			rt_strfree(c, mods);
			fg_kernel_free(want.k);
			st = rt_err(c, FG_ERR_NOMEM, "out of memory");
		}
	}
	pthread_mutex_unlock(&c->attn_mu);
	if (v)
		*out = v->k;
	return st;
}

fg_status
attn_variant(fg_ctx *c, const char *fn, int cc, const fg_attention_args *a,
	fg_kernel **out, int *pack)
{
	const char *file = NULL;
	fg_status st;

	if ((st = pick(c, fn, cc, a, &file)))
		return st;
	if (pack)
		*pack = attn_packs(file) ? attn_pack(a, cc) : 1;
	return attn_kernel(c, fn, file, cc, a, 0, out);
}

int64_t
attn_dv(const fg_attention_args *a)
{
	return a->head_dim_v ? a->head_dim_v : a->head_dim;
}

int64_t
attn_heads_k(const fg_attention_args *a)
{
	return a->heads_k ? a->heads_k : a->heads;
}

bool
attn_varlen(const fg_attention_args *a)
{
	return a->cu_seqlens_q || a->cu_seqlens_k;
}

/* Whether fa_fwd_sm90.fa on sm_90 runs a causal grid a CTA a tile (-D
 * PERSIST=false), which the hardware launches longest tiles first, as
 * FlashAttention-4 does, instead of persistent CTAs taking the tiles in
 * lpt order.  On an H200 (docs/PERF.md) that measured 4 % (D = 128) and
 * 18 % (D = 256) faster at seq_q 4k with every head its own K/V, 14 and
 * 24 % at 16k, and 1 % at 16k with GQA 32/8; slower at 1k (8 to 13 %)
 * and at 4k with GQA (4 %).  A block mask's grid (visited in the same
 * order) likewise: at 16k, 16 heads, 9 to 14 % faster for causal,
 * prefix-LM and window-4k masks, equal for document and window-1k
 * masks.  Not with a window (CAUSAL is false there), varlen or packed
 * GQA. */
bool
attn_single(const fg_attention_args *a, int cc, const char *file, int pack)
{
	if (cc != 90 || strcmp(file, "fa_fwd_sm90.fa") || !(a->causal ||
	    a->block_kv_num) || a->window || attn_varlen(a) || pack > 1)
		return false;
	return a->seq_q >= 16384 || (a->seq_q >= 4096 &&
		attn_heads_k(a) == a->heads);
}

/* Whether fa_fwd_sm90.fa on sm_90 runs three consumer warpgroups and
 * 192-row tiles (-D NC=3, FA3's shape at head dims 64 and 96; at 96 with
 * P V reading P from shared memory, -D PVS=true, as FA3's) for this
 * call: at head dim 64 from seq_q 8192, at 96 from 2048 (V's head dim
 * the same), not causal (at 96 causal too, as below), with no window, softcap, sinks, varlen, ALiBi,
 * mods, block mask or packing (the variants the simulator checks).  On
 * an H200 (docs/PERF.md) it ran 7 % faster than fa_fwd_baseline_sm90.fa,
 * the schedule otherwise taken at 64, at 8k and 16k (3 % slower at 2k),
 * and 11 to 13 % faster than the two-consumer schedule at 96 from 2k to
 * 16k (equal at 1k).  Causal grids at 96 take it where they run a CTA a
 * tile (attn_single): 14 % faster at 16k, 2 % at 4k; at 64 they gained
 * 2 % at most and keep the baseline. */
bool
attn_nc3(const fg_attention_args *a, int cc, const char *file, int pack)
{
	int64_t d = a->head_dim;

	if (cc != 90 || strcmp(file, "fa_fwd_sm90.fa") || pack != 1 ||
	    (d != 64 && d != 96) || attn_dv(a) != d || a->window ||
	    a->softcap > 0 || a->sinks || attn_varlen(a) || a->alibi_slopes ||
	    a->mods || a->block_kv_num)
		return false;
	if (a->causal)  /* d = 96, with the grid a CTA a tile */
		return d == 96 && attn_single(a, cc, file, pack);
	return a->seq_q >= (d == 64 ? 8192 : 2048);
}

/* Whether the forward schedule file has -D PACK. */
bool
attn_packs(const char *file)
{
	return !strcmp(file, "fa_fwd_sm90.fa") || !strcmp(file,
		"fa_fwd_sm100.fa") || !strcmp(file, "fa_fwd_baseline_sm100.fa");
}

/* The query heads packed into one tile's rows (-D PACK; 1: none): G =
 * heads / heads_k, for fa_fwd_sm90.fa and, on sm_100 (cc), fa_fwd_sm100
 * .fa and fa_fwd_baseline_sm100.fa (128-row tiles, so G divides 128),
 * not with varlen or a block mask.  With pack_gqa 0, FA3's rule: when
 * the packed rows fill their tiles better (seq_q short of a tile, as in
 * decoding), packing; tiles of a long seq_q are full either way. */
int
attn_pack(const fg_attention_args *a, int cc)
{
	int64_t g = a->heads / attn_heads_k(a), bm = 128;

	if (a->pack_gqa < 0 || g < 2 || bm % g || attn_varlen(a) ||
	    a->block_kv_num || (a->schedule && (!attn_packs(a->schedule) ||
	    (cc == 100) != !!strstr(a->schedule, "sm100"))) || a->seq_q < 1)
		return 1;
	if (a->pack_gqa > 0)
		return (int)g;
	double sq = (double)a->seq_q;
	double plain = sq / (double)((a->seq_q + bm - 1) / bm * bm);
	double packed = sq * (double)g / (double)((a->seq_q * g + bm - 1) /
		bm * bm);
	return plain < 0.9 * packed ? (int)g : 1;
}

int
attn_bind(const fg_attention_args *a, const Attn *t, int pack,
	fg_arg args[ATTN_NARGS])
{
	int n = 11;
	double l2e = 1.4426950408889634;

	static const char *const names[] = {"Q", "K", "V", "O"};
	const uint64_t ptrs[] = {a->q, a->k, a->v, a->o};

	args[0] = FG_INT("Z", a->batch);
	args[1] = FG_INT("H", a->heads);
	args[2] = FG_INT("SQ", a->seq_q);
	args[3] = FG_INT("SK", a->seq_k);
	/* softcap: s -> cap * tanh(s * scale / cap), then the softmax in
	 * base 2 of that */
	args[4] = a->softcap > 0 ? FG_FLOAT("scale_log2", a->softcap * l2e) :
		FG_FLOAT("scale_log2", t->scale * l2e);
	/* the schedule's tensors are [Z, S, H, D]: (batch, seq, head, dim) */
	for (int i = 0; i < 4; i++)
		args[5 + i] = (fg_arg){.name = names[i], .kind = FG_ARG_TENSOR,
			.t = {.ptr = ptrs[i], .strides = {t->st[i][0],
			t->st[i][2], t->st[i][1], 1}}};
	/* packed: Q and O as [Z, S, H / G, G, D], query head hk * G + g */
	for (int i = 0; i < 4 && pack > 1; i += 3)
		args[5 + i].t = (fg_tensor){.ptr = ptrs[i], .strides = {
			t->st[i][0], t->st[i][2], pack * t->st[i][1], t->st[i][1],
			1}};
	args[9] = FG_PTR("LSE", a->lse);
	args[10] = FG_INT("G", a->heads / attn_heads_k(a));
	if (a->window) {
		args[n++] = FG_INT("WL", t->wl);
		args[n++] = FG_INT("WR", t->wr);
	}
	if (a->softcap > 0)
		args[n++] = FG_FLOAT("sc_in", t->scale / a->softcap);
	if (a->sinks)
		args[n++] = FG_PTR("SINK", a->sinks);  /* f32 [heads] */
	if (a->alibi_slopes)
		args[n++] = FG_PTR("SLOPES", a->alibi_slopes);  /* f32 [heads] */
	if (attn_varlen(a)) {
		args[n++] = FG_INT("MQ", a->max_seqlen_q);
		args[n++] = FG_INT("MK", a->max_seqlen_k);
		args[n++] = FG_PTR("CUQ", a->cu_seqlens_q);  /* i32 [Z + 1] */
		args[n++] = FG_PTR("CUK", a->cu_seqlens_k);
	}
	return flex_bind(a, t, args, n);
}

fg_status
fg_attention_forward(fg_ctx *c, const fg_attention_args *a, CUstream stream)
{
	static const char fn[] = "fg_attention_forward";
	fg_arg args[ATTN_NARGS];
	fg_kernel *k;
	Driver *d;
	Attn t;
	fg_status st;
	int pack = 1;

	if (!c)
		return FG_ERR_INVALID;
	if ((st = attn_check(c, fn, a, stream, true, &t)) ||
	    (st = flex_check(c, fn, a)) ||
	    (st = schedule_name(c, fn, a->schedule)) ||
	    (st = cuda_get(c, &d)) ||
	    (st = attn_variant(c, fn, d->tcc, a, &k,
	    &pack)))
		return st;
	return fg_launch(k, stream, args, attn_bind(a, &t, pack, args));
}

void
attn_free(fg_ctx *c)
{
	AttnVariant *v, *next;

	if (c->bwd_pool && c->drv) {
		CUcontext prev;
		c->drv->cu.CtxPushCurrent(c->drv->pctx);
		c->drv->cu.MemPoolDestroy(c->bwd_pool);
		c->drv->cu.CtxPopCurrent(&prev);
	}
	c->bwd_pool = NULL;

	for (v = c->attn; v; v = next) {
		next = v->next;
		fg_kernel_free(v->k);
		rt_strfree(c, v->mods);
		rt_free(c, v, sizeof *v);
	}
	c->attn = NULL;
}
