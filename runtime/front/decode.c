/* decode.c: fg_attention_decode's checks and plan (issue #16).
 *
 * Every argument of fg_decode_args is checked before anything needs the
 * GPU, as attention.c checks the forward's, and the variant of
 * fa_decode_sm90.fa is chosen: PACK = gcd(G, 64) query heads of a K/V
 * head share a tile (G = heads / heads_k), NW = 2 consumer warpgroups
 * (128-row tiles) when the tile's seq_q * PACK rows are more than 64,
 * SEQLENS with cache_seqlens, PS the page size of a paged cache, and
 * CAUSAL, WINDOW and SOFTCAP as attention.c maps them.  The plan then
 * splits the keys (num_splits, else FlashAttention's heuristic) and lays
 * out the workspace: the splits' partial O and LSE, then the LSE when
 * the caller wants none (the kernels always write one).
 *
 * The kernels index their direct tensors (the partials, the LSE, the
 * tables, kv_append.fa's cache and new tokens) in 32 bits, and keep key
 * and query positions in 32 bits: the checks keep every count within.
 * kv_append.fa's launches take as many sequences as fit (chunk);
 * decode_run.c launches several. */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rt_front.h"

#define FN "fg_attention_decode"

enum {
	ESZ = 2,                 /* bytes per element: bf16 and f16 */
	POS_MAX = (1 << 30) - 1, /* key and query positions, with room for
				  * the window's sides in 32 bits */
	GRID_MAX = 65535,        /* kv_append.fa's grid: y and z extents */
	HB = 8,                  /* kv_append.fa's heads a CTA */
	MAXSPLIT_H = 128,        /* the heuristic's most splits (FA's) */
};

static const char *const qdim[4] = {"batch", "seq", "head", "dim"};
static const char *const pdim[4] = {"page", "row", "head", "dim"};

fg_status
decode_bad(fg_ctx *c, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	int n = snprintf(msg, sizeof msg, FN ": ");

	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
	va_end(ap);
	return rt_err(c, FG_ERR_INVALID, "%s", msg);
}

static int64_t
cdiv(int64_t a, int64_t b)
{
	return (a + b - 1) / b;
}

/* batch, seq_q, heads, heads_k and head_dim. */
static fg_status
sizes(fg_ctx *c, const fg_decode_args *a, Decode *t)
{
	const struct {
		const char *name;
		int64_t v;
	} s[] = {
		{"batch", a->batch}, {"seq_q", a->seq_q}, {"heads", a->heads},
		{"head_dim", a->head_dim},
	};
	int64_t bh;

	for (size_t i = 0; i < COUNT(s); i++) {
		if (s[i].v <= 0)
			return decode_bad(c, "%s is %lld: sizes must be > 0",
				s[i].name, (long long)s[i].v);
		if (s[i].v > INT32_MAX)
			return decode_bad(c, "%s is %lld, which overflows 32-bit "
				"indexing (at most 2^31 - 1)", s[i].name,
				(long long)s[i].v);
	}
	if (a->head_dim != 64 && a->head_dim != 128 && a->head_dim != 256)
		return decode_bad(c, "head_dim is %lld; the decode kernel supports "
			"64, 128 and 256", (long long)a->head_dim);
	if (a->heads_k < 0 || a->heads_k > a->heads)
		return decode_bad(c, "heads_k is %lld: the K/V heads must be between "
			"1 and heads (%lld), or 0 for heads",
			(long long)a->heads_k, (long long)a->heads);
	t->hk = a->heads_k ? a->heads_k : a->heads;
	if (a->heads % t->hk)
		return decode_bad(c, "heads (%lld) is not a multiple of heads_k "
			"(%lld): grouped-query attention shares each K/V head "
			"among heads / heads_k query heads",
			(long long)a->heads, (long long)t->hk);
	t->g = a->heads / t->hk;
	if (a->seq_q > POS_MAX)
		return decode_bad(c, "seq_q is %lld: the kernel's 32-bit query "
			"positions take at most 2^30 - 1", (long long)a->seq_q);
	/* the kernels write the LSE with 32-bit indices */
	if (!ck_mul64(a->batch, a->heads, &bh) || bh > INT32_MAX / a->seq_q)
		return decode_bad(c, "batch * heads * seq_q = %lld * %lld * %lld LSE "
			"entries overflow the kernels' 32-bit indexing (at "
			"most 2^31 - 1)", (long long)a->batch,
			(long long)a->heads, (long long)a->seq_q);
	return FG_OK;
}

/* A paged cache's sizes and page size. */
static fg_status
pages(fg_ctx *c, const fg_decode_args *a, Decode *t)
{
	const struct {
		const char *name;
		int64_t v;
	} s[] = {
		{"num_pages", a->num_pages}, {"page_size", a->page_size},
		{"max_pages", a->max_pages},
	};
	int64_t ps = a->page_size, n;

	for (size_t i = 0; i < COUNT(s); i++)
		if (s[i].v <= 0 || s[i].v > INT32_MAX)
			return decode_bad(c, "%s is %lld: a paged cache (page_table "
				"given) needs it between 1 and 2^31 - 1",
				s[i].name, (long long)s[i].v);
	if (ps % 8 || (t->bn % ps && ps % t->bn))
		return decode_bad(c, "page_size is %lld: at head_dim %lld the kernel "
			"loads blocks of %lld keys, so pages hold a multiple "
			"of 8 keys that divides %lld or that %lld divides (%s)",
			(long long)ps, (long long)a->head_dim,
			(long long)t->bn, (long long)t->bn, (long long)t->bn,
			t->bn == 128 ? "8, 16, 32, 64, 128, 256, 384, ..." :
			"8, 16, 32, 64, 128, 192, ...");
	if (!ck_mul64(a->max_pages, ps, &t->cap) || t->cap > POS_MAX)
		return decode_bad(c, "max_pages * page_size = %lld * %lld keys a "
			"sequence overflow the kernel's 32-bit key positions "
			"(at most 2^30 - 1)", (long long)a->max_pages,
			(long long)ps);
	if (!ck_mul64(a->batch, a->max_pages, &n) || n > INT32_MAX)
		return decode_bad(c, "batch * max_pages = %lld * %lld page_table "
			"entries overflow the kernels' 32-bit indexing (at "
			"most 2^31 - 1)", (long long)a->batch,
			(long long)a->max_pages);
	t->cfg.ps = (int)ps;
	return FG_OK;
}

/* The cache: contiguous (cache_len keys a sequence) or paged; its
 * capacity, t->cap keys a sequence. */
static fg_status
cache(fg_ctx *c, const fg_decode_args *a, Decode *t)
{
	t->bn = a->head_dim > 128 ? 64 : 128;
	if (a->page_table)
		return pages(c, a, t);
	if (a->cache_len <= 0 || a->cache_len > POS_MAX)
		return decode_bad(c, "cache_len is %lld: a contiguous cache holds 1 "
			"to 2^30 - 1 keys a sequence (the kernel's 32-bit key "
			"positions)", (long long)a->cache_len);
	t->cap = a->cache_len;
	return FG_OK;
}

static fg_status
scalars(fg_ctx *c, const fg_decode_args *a, Decode *t)
{
	if (a->dtype != FG_DTYPE_BF16 && a->dtype != FG_DTYPE_F16)
		return decode_bad(c, "dtype is %d: use FG_DTYPE_BF16 or FG_DTYPE_F16",
			(int)a->dtype);
	if (!isfinite(a->scale) || a->scale < 0 || a->scale > FLT_MAX / 2)
		return decode_bad(c, "scale is %g: it must be finite and > 0 (0: "
			"1/sqrt(head_dim))", a->scale);
	t->scale = a->scale ? a->scale : 1 / sqrt((double)a->head_dim);
	if (!isfinite(a->softcap) || a->softcap < 0 ||
	    a->softcap > FLT_MAX / 2)
		return decode_bad(c, "softcap is %g: it must be finite and > 0 (0: "
			"none)", a->softcap);
	if (a->window && (a->window_left < -1 || a->window_right < -1))
		return decode_bad(c, "window is (%lld, %lld): each side is a number "
			"of keys >= 0, or -1 for unbounded",
			(long long)a->window_left, (long long)a->window_right);
	if (a->num_splits < 0 || a->num_splits > DEC_MAXSPLITS)
		return decode_bad(c, "num_splits is %d: give 1 to %d splits of the "
			"keys, or 0 for the heuristic", a->num_splits,
			DEC_MAXSPLITS);
	/* attn_window's mapping, over the cache's capacity: query i sees
	 * keys up to i + seqlen_k - seq_q + wr, so a right side of seq_q
	 * or more (not only the capacity: seq_q may exceed it) cuts no key
	 * off */
	int64_t rmax = t->cap > a->seq_q ? t->cap : a->seq_q;
	t->wl = !a->window || a->window_left < 0 || a->window_left > t->cap ?
		t->cap : a->window_left;
	t->wr = !a->window || a->window_right < 0 || a->window_right > rmax ?
		rmax : a->window_right;
	if (a->causal)
		t->wr = 0;
	return FG_OK;
}

/* A tensor that TMA reads, of extents n in its own dim order (names
 * dn): its address and the caller's strides (field sn; all 0: dense),
 * resolved into st. */
static fg_status
strided(fg_ctx *c, const char *name, uint64_t ptr, const char *sn,
	const int64_t *given, const int64_t n[4], const char *const dn[4],
	int64_t st[4])
{
	bool dense = !given[0] && !given[1] && !given[2] && !given[3];
	int64_t span = 0, x;

	if (!ptr)
		return decode_bad(c, "%s is NULL", name);
	if (ptr % 16)
		return decode_bad(c, "%s = 0x%llx is not 16-byte aligned, as TMA "
			"requires", name, (unsigned long long)ptr);
	st[3] = dense ? 1 : given[3];
	for (int i = 2; i >= 0; i--) {
		st[i] = given[i];
		if (dense && !ck_mul64(st[i + 1], n[i + 1], &st[i]))
			return decode_bad(c, "%s: its dense strides overflow 64-bit "
				"addressing", name);
	}
	if (st[3] != 1)
		return decode_bad(c, "%s[3] (dim) is %lld: the head dimension must be "
			"contiguous (stride 1)", sn, (long long)st[3]);
	for (int i = 0; i < 3; i++) {
		if (st[i] <= 0)
			return decode_bad(c, "%s[%d] (%s) is %lld: strides must be > "
				"0 (or all 0: dense)", sn, i, dn[i],
				(long long)st[i]);
		if (st[i] % 8 || st[i] >= (int64_t)1 << 39)
			return decode_bad(c, "%s[%d] (%s) is %lld elements; TMA "
				"needs a multiple of 8 (16 bytes) below 2^39 "
				"(2^40 bytes)", sn, i, dn[i], (long long)st[i]);
	}
	for (int i = 0; i < 4; i++)
		if (!ck_mul64(n[i] - 1, st[i], &x) ||
		    !ck_add64(span, x, &span) || span >= INT64_MAX / ESZ)
			return decode_bad(c, "%s: its strides overflow 64-bit "
				"addressing (its span through %s[%d], %s)",
				name, sn, i, dn[i]);
	return FG_OK;
}

/* q, the caches, o and the tables. */
static fg_status
tensors(fg_ctx *c, const fg_decode_args *a, Decode *t)
{
	const int64_t nq[4] = {a->batch, a->seq_q, a->heads, a->head_dim};
	int64_t nk[4] = {a->batch, t->cap, t->hk, a->head_dim};
	const char *const *kd = a->page_table ? pdim : qdim;
	fg_status st;

	if (a->page_table)
		nk[0] = a->num_pages, nk[1] = a->page_size;
	if ((st = strided(c, "q", a->q, "q_strides", a->q_strides, nq, qdim,
	    t->st[0])) ||
	    (st = strided(c, "k_cache", a->k_cache, "k_strides", a->k_strides,
	    nk, kd, t->st[1])) ||
	    (st = strided(c, "v_cache", a->v_cache, "v_strides", a->v_strides,
	    nk, kd, t->st[2])))
		return st;
	if (!a->o)
		return decode_bad(c, "o is NULL");
	if (a->o % 16)
		return decode_bad(c, "o = 0x%llx is not 16-byte aligned, as TMA "
			"requires", (unsigned long long)a->o);
	const struct {
		const char *name;
		uint64_t p;
		int align;
		const char *what;
	} al[] = {
		{"lse", a->lse, 4, "aligned to its f32 elements"},
		{"cache_seqlens", a->cache_seqlens, 4, "aligned to its int32 "
			"elements"},
		{"page_table", a->page_table, 4, "aligned to its int32 "
			"elements"},
		{"workspace", a->workspace, 16, "16-byte aligned"},
	};
	for (size_t i = 0; i < COUNT(al); i++)
		if (al[i].p % (uint64_t)al[i].align)
			return decode_bad(c, "%s = 0x%llx is not %s", al[i].name,
				(unsigned long long)al[i].p, al[i].what);
	return FG_OK;
}

/* A cache that kv_append.fa writes: dense (it addresses it so). */
static fg_status
dense_cache(fg_ctx *c, const char *name, const int64_t *st, const Decode *t,
	const fg_decode_args *a)
{
	int64_t row = t->hk * a->head_dim, want;

	if (!ck_mul64(a->page_table ? a->page_size : t->cap, row, &want))
		want = -1;      /* no stride matches */
	if (st[0] != want || st[1] != row || st[2] != a->head_dim)
		return decode_bad(c, "%s's strides are (%lld, %lld, %lld, 1), but "
			"kv_append.fa writes k_new and v_new into a dense "
			"cache: they must be (%lld, %lld, %lld, 1) (or all 0)",
			name, (long long)st[0], (long long)st[1],
			(long long)st[2], (long long)want, (long long)row,
			(long long)a->head_dim);
	return FG_OK;
}

/* k_new and v_new, and kv_append.fa's sequences a launch (t->chunk):
 * within its grid and its 32-bit indexing of the new tokens and of the
 * cache. */
static fg_status
append(fg_ctx *c, const fg_decode_args *a, Decode *t)
{
	int64_t row = t->hk * a->head_dim, seq, n, nz;  /* row < 2^39 */
	fg_status st;

	if (!a->k_new && !a->v_new) {
		if (a->seq_new)
			return decode_bad(c, "seq_new is %lld but k_new and v_new are "
				"NULL: give the new keys and values, or "
				"seq_new 0", (long long)a->seq_new);
		return FG_OK;
	}
	if (!a->k_new || !a->v_new)
		return decode_bad(c, "%s is NULL but %s is given: the new keys and "
			"values come together", a->k_new ? "v_new" : "k_new",
			a->k_new ? "k_new" : "v_new");
	if (a->k_new % 16 || a->v_new % 16)
		return decode_bad(c, "%s = 0x%llx is not 16-byte aligned: "
			"kv_append.fa reads it in 16-byte vectors",
			a->k_new % 16 ? "k_new" : "v_new",
			(unsigned long long)(a->k_new % 16 ? a->k_new :
			a->v_new));
	if (a->seq_new < 1 || a->seq_new > t->cap)
		return decode_bad(c, "seq_new is %lld: k_new and v_new hold 1 to %lld "
			"new tokens a sequence (the cache's capacity)",
			(long long)a->seq_new, (long long)t->cap);
	if (!a->cache_seqlens)
		return decode_bad(c, "k_new is given but cache_seqlens is NULL: the "
			"new tokens go after each sequence's cached keys, so "
			"give cache_seqlens (int32 [batch], the keys before "
			"them)");
	if ((st = dense_cache(c, "k_cache", t->st[1], t, a)) ||
	    (st = dense_cache(c, "v_cache", t->st[2], t, a)))
		return st;
	if (cdiv(t->hk, HB) > GRID_MAX)
		return decode_bad(c, "heads_k is %lld: kv_append.fa's grid takes at "
			"most %d K/V heads", (long long)t->hk, GRID_MAX * HB);
	if (!ck_mul64(a->seq_new, row, &seq) || seq > INT32_MAX)
		return decode_bad(c, "k_new: a sequence's seq_new * heads_k * "
			"head_dim = %lld * %lld * %lld elements overflow "
			"kv_append.fa's 32-bit indexing (at most 2^31 - 1)",
			(long long)a->seq_new, (long long)t->hk,
			(long long)a->head_dim);
	nz = INT32_MAX / seq;
	if (a->page_table && (!ck_mul64(a->num_pages * a->page_size, row,
	    &n) || n > INT32_MAX))
		return decode_bad(c, "k_cache: num_pages * page_size * heads_k * "
			"head_dim = %lld * %lld * %lld * %lld elements "
			"overflow kv_append.fa's 32-bit indexing (at most 2^31 "
			"- 1) when k_new is given", (long long)a->num_pages,
			(long long)a->page_size, (long long)t->hk,
			(long long)a->head_dim);
	if (!a->page_table && (!ck_mul64(t->cap, row, &n) || n > INT32_MAX))
		return decode_bad(c, "k_cache: a sequence's cache_len * heads_k * "
			"head_dim = %lld * %lld * %lld elements overflow "
			"kv_append.fa's 32-bit indexing (at most 2^31 - 1) "
			"when k_new is given", (long long)t->cap,
			(long long)t->hk, (long long)a->head_dim);
	if (!a->page_table && INT32_MAX / n < nz)
		nz = INT32_MAX / n;     /* n: a sequence's cache */
	nz = nz < GRID_MAX ? nz : GRID_MAX;
	t->chunk = nz < a->batch ? nz : a->batch;
	return FG_OK;
}

/* The greatest common divisor of g and 64: the query heads packed into
 * a tile (they divide 64, and G is a multiple of them). */
static int
pack(int64_t g)
{
	int p = 64;

	while (g % p)
		p /= 2;
	return p;
}

fg_status
decode_check(fg_ctx *c, const fg_decode_args *a, Decode *t)
{
	fg_status st;

	memset(t, 0, sizeof *t);
	if (!a)
		return decode_bad(c, "args is NULL");
	if ((st = sizes(c, a, t)) || (st = cache(c, a, t)) ||
	    (st = scalars(c, a, t)) || (st = tensors(c, a, t)) ||
	    (st = append(c, a, t)))
		return st;
	int p = pack(t->g), nw = a->seq_q * p > 64 ? 2 : 1;
	t->cfg = (DecCfg){.kind = DEC_ATTN, .dt = a->dtype,
		.d = (int)a->head_dim, .ps = t->cfg.ps, .pack = p, .nw = nw,
		.causal = a->causal && !a->window, .window = a->window != 0,
		.softcap = a->softcap > 0, .seqlens = a->cache_seqlens != 0};
	/* at most batch * heads * seq_q, which sizes bounded */
	t->tiles = a->batch * (a->heads / p) * cdiv(a->seq_q * p, 64 * nw);
	return FG_OK;
}

/* The tiles of device cc's schedule: fa_decode_sm90.fa's rows are 64 NW,
 * fa_decode_sm100.fa's 128 (tcgen05's M). */
void
decode_retile(const fg_decode_args *a, Decode *t, int cc)
{
	int p = t->cfg.pack;

	t->tiles = a->batch * (a->heads / p) * cdiv(a->seq_q * p, cc == 100 ?
		128 : 64 * t->cfg.nw);
}

/* Split s has blocks of its own: one more split that leaves the blocks
 * a split the same would only add an empty one. */
static bool
eligible(int64_t nblocks, int s)
{
	return s == 1 || cdiv(nblocks, s) != cdiv(nblocks, s - 1);
}

int
decode_splits(int64_t tiles, int64_t nblocks, int nsm)
{
	float eff[MAXSPLIT_H + 1], best = 0;
	int64_t most = MAXSPLIT_H;

	if (nsm < 1 || tiles >= 0.8f * (float)nsm)
		return 1;
	most = most < nsm ? most : nsm;
	most = most < nblocks ? most : nblocks;
	for (int s = 1; s <= most; s++) {
		float waves = (float)(tiles * s) / (float)nsm;
		eff[s] = eligible(nblocks, s) ? waves / ceilf(waves) : 0;
		best = eff[s] > best ? eff[s] : best;
	}
	for (int s = 1; s <= most; s++)
		if (eligible(nblocks, s) && eff[s] >= 0.85 * best)
			return s;
	return 1;
}

static size_t
align16(size_t n)
{
	return (n + 15) & ~(size_t)15;
}

fg_status
decode_plan(fg_ctx *c, const fg_decode_args *a, int nsm, Decode *t)
{
	/* sizes bounded r by 2^31, so rd fits easily */
	int64_t r = a->batch * a->heads * a->seq_q, rd = r * a->head_dim;
	int ns = a->num_splits ? a->num_splits :
		decode_splits(t->tiles, cdiv(t->cap, t->bn), nsm);
	size_t at = 0;

	/* the partials and fa_combine.fa's O are indexed in 32 bits */
	if (ns > 1 && (rd > INT32_MAX || ns > INT32_MAX / rd)) {
		if (a->num_splits)
			return decode_bad(c, "num_splits is %d: the partial results, "
				"num_splits * batch * heads * seq_q * head_dim "
				"= %d * %lld * %lld * %lld * %lld elements, "
				"overflow the kernels' 32-bit indexing (at "
				"most 2^31 - 1); use fewer splits", ns, ns,
				(long long)a->batch, (long long)a->heads,
				(long long)a->seq_q, (long long)a->head_dim);
		ns = rd > INT32_MAX ? 1 : (int)(INT32_MAX / rd);
	}
	t->ns = ns;
	t->cfg.split = ns > 1;
	if (ns > 1) {
		t->op = 0;
		t->lsep = align16((size_t)(ns * rd) * 4);
		at = t->lsep + (size_t)(ns * r) * 4;
	}
	if (!a->lse) {
		t->lse = align16(at);
		at = t->lse + (size_t)r * 4;
	}
	t->bytes = at;
	return FG_OK;
}
