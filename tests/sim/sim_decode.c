/* sim_decode.c: the decode kernels in the simulator (issue #18; meson
 * tests golden.sim.decode_*, combine_* and kv_append_*), bound as
 * runtime/front/decode_run.c binds them for fg_attention_decode.
 *
 *   sim_kernel decode PTX Z H G SQ D [splits=NS] [causal] [window=L,R]
 *                  [cap=C] [lens=S1,S2,..] [new=SN] [kc=N] [eager]
 *       fa_decode_sm90.fa or fa_decode_sm100.fa, then for a split
 *       variant fa_combine.fa (combine_<target>_d<D>_<type>.ptx beside
 *       PTX, or the closest shipped), against gpu_ref.h's float64
 *       attention of each sequence with the `fa` mode's tolerances.
 *       S1.. are the keys cached before the call (SEQ; default 0, 1,
 *       2 BN + 13, then random), SN those appended by it (the live keys
 *       are S + SN); kc is the capacity (cache_len, or at least
 *       max_pages * page size).  A paged cache's table is a shuffled
 *       permutation of the pages, the entries past a sequence's keys
 *       out of range (the kernel reads zeros there).
 *   sim_kernel combine PTX Z H SQ PK NS
 *       fa_combine.fa alone, on random partials (combine_only).
 *   sim_kernel append PTX Z HK SN D [lens=S1,..] [kc=N] [chunk=N]
 *       kv_append.fa: the new tokens at positions S .. S + SN - 1 of
 *       each sequence (through the page table when paged), in launches
 *       of chunk sequences as decode_append_bind cuts them; the caches
 *       compared bit for bit with the expected ones, so everything
 *       else must be unchanged.
 *
 * The variant's switches come from the PTX's metadata: PACK (Q's fourth
 * extent), PS (KC's second, with a global PT), SPLIT (OP), SEQLENS
 * (SEQ), WINDOW (WL), SOFTCAP (sc_in).  CAUSAL leaves no trace there,
 * so the command line says it.  This file has its own copy of
 * gpu_ref.h's generator, so its inputs do not depend on sim_kernel.c's
 * use of it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_kernel.h"
#include "../gpu/gpu_ref.h"

enum { MAXZ = 64 };

/* What a kernel was compiled with, as its metadata says. */
typedef struct Variant {
	int d, pack, ps;        /* ps 0: a contiguous cache */
	int bn;                 /* keys a block (the schedules' BN) */
	bool split, seqlens, window, softcap, f16, sm100;
} Variant;

/* The command line's options. */
typedef struct Opts {
	int ns, sn, kc, chunk, nlens;
	int lens[MAXZ];
	bool causal, window;
	int wl, wr;             /* window=L,R; -1: unbounded */
	double cap;
} Opts;

/* A decode problem and its buffers (host views). */
typedef struct Dec {
	Variant v;
	Opts o;
	int z, h, g, hk, sq, d, skc, mp, np;
	int32_t len[MAXZ];      /* live keys of each sequence */
	uint16_t *q, *kl, *vl;  /* q, and the cache as [Z, SKC, HK, D] */
	uint16_t *kc, *vc, *out;
	int32_t *pt, *seq;
	float *lse, *op, *lsep;
	bool of16;              /* O's type: the combine's, when split */
	Named a[32];
	int na;
} Dec;

static const SimArg *
arg_of(const SimMeta *mt, const char *name)
{
	for (int i = 0; i < mt->nargs; i++)
		if (!strcmp(mt->args[i].name, name))
			return &mt->args[i];
	return NULL;
}

/* Extent i of global name where it is a constant (a -D value), else -1. */
static int
extent(const SimMeta *mt, const char *name, int i)
{
	const SimArg *a = arg_of(mt, name);

	if (!a || i >= a->rank || a->dims[i].n != 1 ||
	    a->dims[i].t[0].op != SIM_RPN_INT)
		return -1;
	return (int)a->dims[i].t[0].v;
}

static Variant
variant(const char *path)
{
	const SimMeta *mt = sim_meta(mod);
	bool append = arg_of(mt, "KN") != NULL;
	Variant v = {
		.d = append ? extent(mt, "KN", 3) : extent(mt, "Q", 4),
		.pack = append ? 1 : extent(mt, "Q", 3),
		.ps = arg_of(mt, "PT") ? extent(mt, "KC", 1) : 0,
		.split = arg_of(mt, "OP") != NULL,
		.seqlens = arg_of(mt, "SEQ") != NULL,
		.window = arg_of(mt, "WL") != NULL,
		.softcap = arg_of(mt, "sc_in") != NULL,
		.f16 = !strstr(path, "bf16"),   /* the shipped names say */
		.sm100 = strstr(mt->target, "100") != NULL,
	};

	v.bn = v.d > 128 ? 64 : 128;
	return v;
}

static int
cdiv(int a, int b)
{
	return (a + b - 1) / b;
}

/* A random integer in 0 .. n - 1. */
static int
irand(int n)
{
	int i = (int)((urand() + 1) / 2 * n);

	return i < n ? i : n - 1;
}

static int
parse_list(const char *s, int *out, int max)
{
	char *x = (char *)s;
	int n = 0;

	while (*x && n < max) {
		out[n++] = (int)strtol(x, &x, 10);
		x += *x == ',';
	}
	return n;
}

static Opts
options(int argc, char **argv, int from)
{
	Opts o = {.ns = 0, .chunk = 0, .wl = -1, .wr = -1};

	for (int i = from; i < argc; i++) {
		const char *s = argv[i];
		if (!strncmp(s, "splits=", 7))
			o.ns = atoi(s + 7);
		else if (!strncmp(s, "new=", 4))
			o.sn = atoi(s + 4);
		else if (!strncmp(s, "kc=", 3))
			o.kc = atoi(s + 3);
		else if (!strncmp(s, "chunk=", 6))
			o.chunk = atoi(s + 6);
		else if (!strncmp(s, "lens=", 5))
			o.nlens = parse_list(s + 5, o.lens, MAXZ);
		else if (!strcmp(s, "causal"))
			o.causal = true;
		else if (!strncmp(s, "window=", 7)) {
			o.window = true;
			sscanf(s + 7, "%d,%d", &o.wl, &o.wr);
		} else if (!strncmp(s, "cap=", 4))
			o.cap = atof(s + 4);
	}
	return o;
}

static int
usage(const char *why)
{
	fprintf(stderr, "sim_kernel: %s (see sim_decode.c)\n", why);
	return 2;
}

/* A shuffled permutation of the np pages, the first z * mp of them the
 * table's entries. */
static void
shuffle_pages(int32_t *pt, int z, int mp, int np)
{
	int32_t *perm = malloc((size_t)np * sizeof *perm);

	for (int i = 0; i < np; i++)
		perm[i] = i;
	for (int i = np - 1; i > 0; i--) {
		int j = irand(i + 1);
		int32_t t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	memcpy(pt, perm, (size_t)(z * mp) * sizeof *pt);
	free(perm);
}

/* The keys cached before the call (SEQ): the given ones, else 0, 1, a
 * length past two blocks and not a multiple of a block or a page, then
 * random; each leaves room for the sn new keys within the capacity
 * (when it is given), as validate asks. */
static void
cached_lengths(const Dec *t, int32_t *seq)
{
	const Opts *o = &t->o;

	for (int b = 0; b < t->z; b++) {
		int s = b == 0 ? 0 : b == 1 ? 1 : b == 2 ? 2 * t->v.bn + 13 :
			2 + irand(2 * t->v.bn + 40);
		if (b < o->nlens)
			s = o->lens[b];
		if (o->kc && b >= o->nlens && s + o->sn > o->kc)
			s = o->kc - o->sn;
		seq[b] = s;
	}
}

/* SKC, and when paged MP and NP: the capacity holds every sequence's
 * keys (kc= at least), with room to spare past the longest. */
static void
capacity(Dec *t, const int32_t *seq)
{
	int most = 0;

	for (int b = 0; b < t->z; b++)
		most = seq[b] + t->o.sn > most ? seq[b] + t->o.sn : most;
	t->skc = t->o.kc ? t->o.kc : t->v.seqlens ? most + 19 : 200;
	if (t->v.ps) {
		t->mp = cdiv(t->o.kc ? t->o.kc : most + 1, t->v.ps);
		t->mp += !t->o.kc;
		t->skc = t->mp * t->v.ps;
		t->np = t->z * t->mp + 2;       /* two pages nothing uses */
	}
	for (int b = 0; b < t->z; b++) {
		/* fa_decode's seqk: clamped into the cache */
		int l = t->v.seqlens ? (seq[b] > 0 ? seq[b] : 0) + t->o.sn :
			t->skc;
		t->len[b] = l < t->skc ? l : t->skc;
	}
}

static void
add(Dec *t, const char *name, SimVal v)
{
	t->a[t->na++] = (Named){name, v};
}

/* The cache: random keys and values as [Z, SKC, HK, D] (kl, vl), then
 * written where the kernel reads them: as they are, or row j % PS of
 * page PT[z, j / PS].  Every element is finite, the unused pages too
 * (the kernels read rows past a sequence's keys with zero weight). */
static void
fill_cache(Dec *t)
{
	size_t row = (size_t)t->hk * t->d, nl = (size_t)t->z * t->skc * row;
	size_t nc = t->v.ps ? (size_t)t->np * t->v.ps * row : nl;
	bool f16 = t->v.f16;

	t->kl = malloc(nl * 2);
	t->vl = malloc(nl * 2);
	add(t, "KC", (SimVal){.ptr = buffer(nc * 2, 0, (void **)&t->kc)});
	add(t, "VC", (SimVal){.ptr = buffer(nc * 2, 0, (void **)&t->vc)});
	for (size_t i = 0; i < nl; i++) {
		t->kl[i] = to16(2 * urand(), f16);
		t->vl[i] = to16(urand(), f16);
	}
	if (!t->v.ps) {
		memcpy(t->kc, t->kl, nl * 2);
		memcpy(t->vc, t->vl, nl * 2);
		return;
	}
	for (size_t i = 0; i < nc; i++) {
		t->kc[i] = to16(2 * urand(), f16);
		t->vc[i] = to16(urand(), f16);
	}
	add(t, "PT", (SimVal){.ptr = buffer((size_t)(t->z * t->mp) * 4, 0,
		(void **)&t->pt)});
	shuffle_pages(t->pt, t->z, t->mp, t->np);
	for (int b = 0; b < t->z; b++)
		for (int j = cdiv(t->len[b], t->v.ps); j < t->mp; j++)
			t->pt[b * t->mp + j] = j % 2 ? -1 - j : t->np + j;
	for (int b = 0; b < t->z; b++)
		for (int j = 0; j < t->skc; j++) {
			int32_t p = t->pt[b * t->mp + j / t->v.ps];
			size_t from = ((size_t)b * t->skc + j) * row;
			size_t to = ((size_t)p * t->v.ps + j % t->v.ps) * row;
			if (p < 0 || p >= t->np)
				continue;
			memcpy(t->kc + to, t->kl + from, row * 2);
			memcpy(t->vc + to, t->vl + from, row * 2);
		}
}

/* The params as decode_bind sets them (scale 1/sqrt(D); WL clamped to
 * the capacity, WR to the larger of it and SQ, WR 0 for a causal
 * window). */
static void
params(Dec *t)
{
	const Opts *o = &t->o;
	double scale = 1 / sqrt((double)t->d), l2e = 1.4426950408889634;
	int wl = o->wl < 0 || o->wl > t->skc ? t->skc : o->wl;
	int rmax = t->skc > t->sq ? t->skc : t->sq;
	int wr = o->wr < 0 || o->wr > rmax ? rmax : o->wr;

	add(t, "Z", (SimVal){.i = t->z});
	add(t, "H", (SimVal){.i = t->h});
	add(t, "G", (SimVal){.i = t->g});
	add(t, "SQ", (SimVal){.i = t->sq});
	add(t, "SKC", (SimVal){.i = t->skc});
	add(t, "NS", (SimVal){.i = o->ns});
	add(t, "SN", (SimVal){.i = o->sn});
	add(t, "scale_log2", (SimVal){.f = (o->cap > 0 ? o->cap : scale) *
		l2e});
	add(t, "NP", (SimVal){.i = t->np});
	add(t, "MP", (SimVal){.i = t->mp});
	add(t, "WL", (SimVal){.i = wl});
	add(t, "WR", (SimVal){.i = o->causal ? 0 : wr});
	add(t, "sc_in", (SimVal){.f = o->cap > 0 ? scale / o->cap : 0});
}

/* The combine of the decode's target, D and type beside ptx, else the
 * closest shipped: the same type for the other target, then the other
 * type.  Its name in used. */
static SimMod *
combine_mod(const char *ptx, const Variant *v, char *used, size_t n)
{
	const char *slash = strrchr(ptx, '/');
	int dl = slash ? (int)(slash - ptx + 1) : 0;
	const char *tg[2] = {v->sm100 ? "sm100" : "sm90", v->sm100 ? "sm90" :
		"sm100"};

	for (int i = 0; i < 4; i++) {
		bool f16 = (i >= 2) != v->f16;
		snprintf(used, n, "%.*scombine_%s_d%d_%s.ptx", dl, ptx,
			tg[i % 2], v->d, f16 ? "f16" : "bf16");
		FILE *f = fopen(used, "rb");
		if (!f)
			continue;
		fclose(f);
		if (i)
			fprintf(stderr, "combine_%s_d%d_%s.ptx is not shipped: "
				"using %s\n", tg[0], v->d, v->f16 ? "f16" :
				"bf16", used + dl);
		return load_mod(used);
	}
	fprintf(stderr, "no combine_*_d%d_*.ptx beside %s\n", v->d, ptx);
	exit(1);
}

/* fa_combine.fa over the partials, bound as decode_combine_bind. */
static void
combine(Dec *t, const char *ptx, char *used, size_t n)
{
	SimMod *cm = combine_mod(ptx, &t->v, used, n);
	Named a[9] = {{"Z", {.i = t->z}}, {"H", {.i = t->h}},
		{"SQ", {.i = t->sq}}, {"PK", {.i = t->v.pack}},
		{"NS", {.i = t->o.ns}}};
	int na = 5;

	for (int i = 0; i < t->na; i++)
		if (!strcmp(t->a[i].name, "OP") || !strcmp(t->a[i].name,
		    "LSEP") || !strcmp(t->a[i].name, "O") ||
		    !strcmp(t->a[i].name, "LSE"))
			a[na++] = t->a[i];
	t->of16 = !strstr(used, "bf16");
	launch_named(cm, a, na);
	sim_mod_free(cm);
}

/* O and LSE of each sequence against float64; O read in the decode's
 * type (a combine of the other type rounded to it once more). */
static int
compare(const Dec *t, const char *what)
{
	size_t nqz = (size_t)t->sq * t->h * t->d, nq = nqz * t->z;
	size_t nkz = (size_t)t->skc * t->hk * t->d;
	uint16_t *o = malloc(nq * 2);
	RefErr e = {0};
	bool nan = false, f16 = t->v.f16;

	for (size_t i = 0; i < nq; i++) {
		double x = from16(t->out[i], t->of16);
		nan |= x != x;
		o[i] = t->of16 == f16 ? t->out[i] : to16(x, f16);
	}
	for (int b = 0; b < t->z; b++) {
		int64_t hd = (int64_t)t->h * t->d, kd = (int64_t)t->hk * t->d;
		int64_t qz = (int64_t)nqz, kz = (int64_t)nkz;
		RefProb p = {1, t->h, t->sq, t->len[b], t->d, t->o.causal, f16,
			{{qz, t->d, hd, 1}, {kz, t->d, kd, 1},
			{kz, t->d, kd, 1}, {qz, t->d, hd, 1}}, t->g,
			t->o.window, t->o.wl, t->o.wr, t->o.cap, NULL, NULL,
			NULL, 0};
		const float *lse = t->lse + (size_t)b * t->h * t->sq;
		RefErr eb = ref_compare(&p, t->q + b * nqz, t->kl + b * nkz,
			t->vl + b * nkz, o + b * nqz, lse);
		e.bad |= eb.bad;
		e.rel = eb.rel > e.rel ? eb.rel : e.rel;
		e.lerr = eb.lerr > e.lerr ? eb.lerr : e.lerr;
		e.rows += eb.rows;
	}
	free(o);
	printf("%s: rel err %.2e, LSE err %.1e over %ld rows%s -> %s\n", what,
		e.rel, e.lerr, e.rows, nan ? ", NaN in O" : "", e.bad || nan ?
		"FAIL" : "ok");
	return e.bad || nan;
}

/* The appended tokens where kv_append.fa's header puts them: token i of
 * sequence b at position p = SEQ[b] + i, through the page table when
 * paged; a position outside the cache or a page outside the pages
 * writes nothing.  kc, vc: the caches, updated. */
static int
expect_append(const Variant *v, int z, int hk, int sn, int skc, int np,
	int mp, const int32_t *seq, const int32_t *pt, const uint16_t *kn,
	const uint16_t *vn, uint16_t *kc, uint16_t *vc)
{
	size_t row = (size_t)hk * v->d;
	int n = 0;

	for (int b = 0; b < z; b++)
		for (int i = 0; i < sn; i++) {
			int p = seq[b] + i;
			size_t to = ((size_t)b * skc + p) * row;
			if (p < 0 || p >= skc)
				continue;
			if (v->ps) {
				int32_t pg = pt[b * mp + p / v->ps];
				if (pg < 0 || pg >= np)
					continue;
				to = ((size_t)pg * v->ps + p % v->ps) * row;
			}
			size_t from = ((size_t)b * sn + i) * row;
			memcpy(kc + to, kn + from, row * 2);
			memcpy(vc + to, vn + from, row * 2);
			n++;
		}
	return n;
}

/* The launches of decode_run.c's launch(): chunk sequences from z0 on,
 * each with decode_append_bind's arguments (pointers advanced past the
 * sequences before). */
static void
launch_append(const SimMod *m, int z, int hk, int sn, int skc, int np,
	int mp, int d, bool paged, int chunk, const uint64_t g[6])
{
	for (int z0 = 0; z0 < z; z0 += chunk) {
		int nz = z - z0 < chunk ? z - z0 : chunk;
		uint64_t row = (uint64_t)hk * d;
		uint64_t kn = (uint64_t)z0 * sn * row * 2;
		uint64_t kc = paged ? 0 : (uint64_t)z0 * skc * row * 2;
		Named a[12] = {{"Z", {.i = nz}}, {"HK", {.i = hk}},
			{"SN", {.i = sn}}, {"SKC", {.i = skc}},
			{"NP", {.i = np}}, {"MP", {.i = mp}},
			{"PT", {.ptr = g[0] + (uint64_t)z0 * mp * 4}},
			{"SEQ", {.ptr = g[1] + (uint64_t)z0 * 4}},
			{"KN", {.ptr = g[2] + kn}}, {"VN", {.ptr = g[3] + kn}},
			{"KC", {.ptr = g[4] + kc}}, {"VC", {.ptr = g[5] + kc}}};
		launch_named(m, a, 12);
	}
}

static uint64_t
addr_of(const Dec *t, const char *name)
{
	for (int i = 0; i < t->na; i++)
		if (!strcmp(t->a[i].name, name))
			return t->a[i].v.ptr;
	return 0;
}

/* new=SN: the SN new keys and values of each sequence (positions SEQ ..
 * SEQ + SN - 1 of kl and vl) written into the cache as the runtime
 * writes them, by kv_append.fa before the decode, where the variant of
 * the decode's target, D, type and page size is shipped beside ptx
 * (named in used; else written here, used empty).  The kernel's cache
 * holds NaN there until then, so a token it misplaces fails the
 * comparison. */
static void
append_new(Dec *t, const char *ptx, const int32_t *seq, char *used,
	size_t n)
{
	const char *slash = strrchr(ptx, '/');
	int dl = slash ? (int)(slash - ptx + 1) : 0, sn = t->o.sn;
	size_t row = (size_t)t->hk * t->d, nn = (size_t)t->z * sn * row;
	char ps[16] = "";
	uint16_t *kn, *vn;
	FILE *f;

	if (t->v.ps)
		snprintf(ps, sizeof ps, "_page%d", t->v.ps);
	snprintf(used, n, "%.*skv_append_%s_d%d_%s%s.ptx", dl, ptx,
		t->v.sm100 ? "sm100" : "sm90", t->d, t->v.f16 ? "f16" : "bf16",
		ps);
	if ((f = fopen(used, "rb")))
		fclose(f);
	else
		*used = 0;
	uint64_t g[6] = {addr_of(t, "PT"), addr_of(t, "SEQ"),
		buffer(nn * 2, 0, (void **)&kn),
		buffer(nn * 2, 0, (void **)&vn), addr_of(t, "KC"),
		addr_of(t, "VC")};
	for (int b = 0; b < t->z; b++)
		for (int i = 0; i < sn; i++) {
			int j = seq[b] + i;     /* tokens past SKC: none */
			size_t from = ((size_t)b * t->skc + j) * row;
			size_t to = ((size_t)b * sn + i) * row;
			if (j < 0 || j >= t->skc)
				continue;
			memcpy(kn + to, t->kl + from, row * 2);
			memcpy(vn + to, t->vl + from, row * 2);
		}
	/* NaN where the new tokens go, then the tokens */
	uint16_t *nan = malloc(nn * 2);
	memset(nan, 0xff, nn * 2);
	expect_append(&t->v, t->z, t->hk, sn, t->skc, t->np, t->mp, seq,
		t->pt, nan, nan, t->kc, t->vc);
	free(nan);
	if (!*used) {
		expect_append(&t->v, t->z, t->hk, sn, t->skc, t->np, t->mp, seq,
			t->pt, kn, vn, t->kc, t->vc);
		return;
	}
	SimMod *am = load_mod(used);
	launch_append(am, t->z, t->hk, sn, t->skc, t->np, t->mp, t->d,
		t->v.ps > 0, t->z, g);
	sim_mod_free(am);
}

/* What a problem's options must satisfy for the runtime to pick this
 * variant and bind it so; NULL if they do. */
static const char *
refuse(const Dec *t)
{
	const Variant *v = &t->v;
	int p = 64;

	while (t->g % p)
		p /= 2;
	if (v->d != t->d)
		return "D is not the kernel's head dimension";
	if (t->g < 1 || t->h % t->g)
		return "G does not divide H";
	if (p != v->pack)
		return "the runtime packs gcd(G, 64) query heads; the kernel's "
			"PACK differs";
	if (t->z > MAXZ || (t->o.nlens && t->o.nlens != t->z))
		return "lens= gives one length a sequence (at most 64)";
	if (v->split != (t->o.ns > 1))
		return "a split variant takes splits=2 or more, the others 1";
	if (!v->seqlens && (t->o.sn || t->o.nlens))
		return "without SEQLENS every sequence holds kc= keys (no "
			"new=, lens=)";
	if (v->window != t->o.window || v->softcap != (t->o.cap > 0))
		return "window= and cap= go with the WINDOW and SOFTCAP "
			"variants";
	if (t->o.causal && v->window && t->o.wr != -1 && t->o.wr != 0)
		return "a causal window's right side is 0";
	return NULL;
}

static const char *
base(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* The problem in words, and the other kernels that ran (their paths in
 * used and app, or empty). */
static void
describe(const Dec *t, const char *used, const char *app, char *w,
	size_t sz)
{
	const Opts *o = &t->o;
	int n = snprintf(w, sz, "decode Z=%d H=%d G=%d SQ=%d D=%d %s SKC=%d "
		"NS=%d SN=%d %s", t->z, t->h, t->g, t->sq, t->d, t->v.ps ?
		"paged" : "contiguous", t->skc, o->ns, o->sn, t->v.f16 ? "f16" :
		"bf16");

	if (t->v.ps)
		n += snprintf(w + n, sz - n, " PS=%d", t->v.ps);
	if (o->causal)
		n += snprintf(w + n, sz - n, " causal");
	if (o->window)
		n += snprintf(w + n, sz - n, " window=%d,%d", o->wl, o->wr);
	if (o->cap > 0)
		n += snprintf(w + n, sz - n, " cap=%g", o->cap);
	if (eager)
		n += snprintf(w + n, sz - n, " eager");
	if (*used)
		n += snprintf(w + n, sz - n, " + %s", base(used));
	if (o->sn)
		snprintf(w + n, sz - n, ", new keys by %s", *app ? base(app) :
			"the host");
}

int
decode(int argc, char **argv)
{
	if (argc < 8)
		return usage("decode PTX Z H G SQ D [options]");
	Dec *t = calloc(1, sizeof *t);
	t->v = variant(argv[2]);
	t->o = options(argc, argv, 8);
	t->z = atoi(argv[3]), t->h = atoi(argv[4]), t->g = atoi(argv[5]);
	t->sq = atoi(argv[6]), t->d = atoi(argv[7]);
	t->hk = t->h / (t->g > 0 ? t->g : 1);
	if (!t->o.ns)
		t->o.ns = t->v.split ? 3 : 1;
	const char *why = refuse(t);
	if (why)
		return usage(why);

	bool f16 = t->v.f16;
	size_t nq = (size_t)t->z * t->sq * t->h * t->d;
	size_t nl = (size_t)t->z * t->h * t->sq;
	int32_t seq[MAXZ];
	cached_lengths(t, seq);
	capacity(t, seq);
	params(t);
	fill_cache(t);
	add(t, "Q", (SimVal){.ptr = buffer(nq * 2, 0, (void **)&t->q)});
	for (size_t i = 0; i < nq; i++)
		t->q[i] = to16(2 * urand(), f16);
	add(t, "SEQ", (SimVal){.ptr = buffer((size_t)t->z * 4, 0,
		(void **)&t->seq)});
	memcpy(t->seq, seq, (size_t)t->z * 4);
	char app[1024] = "";
	if (t->o.sn)
		append_new(t, argv[2], seq, app, sizeof app);
	/* outputs and partials poisoned: what nothing writes is NaN */
	add(t, "O", (SimVal){.ptr = buffer(nq * 2, 0xff, (void **)&t->out)});
	add(t, "LSE", (SimVal){.ptr = buffer(nl * 4, 0xff,
		(void **)&t->lse)});
	if (t->v.split) {
		add(t, "OP", (SimVal){.ptr = buffer(t->o.ns * nq * 4, 0xff,
			(void **)&t->op)});
		add(t, "LSEP", (SimVal){.ptr = buffer(t->o.ns * nl * 4, 0xff,
			(void **)&t->lsep)});
	}
	t->of16 = f16;
	launch_named(mod, t->a, t->na);

	char used[1024] = "", what[1400];
	if (t->v.split)
		combine(t, argv[2], used, sizeof used);
	describe(t, used, app, what, sizeof what);
	int rc = compare(t, what);
	free(t->kl);
	free(t->vl);
	free(t);
	return rc;
}

/* The cached lengths before the append: the given ones, else 0, one
 * that crosses a page (or a few positions on), one at the cache's last
 * position (the tokens after it are dropped), then random ones that
 * fit. */
static void
append_lengths(const Opts *o, const Variant *v, int z, int sn, int skc,
	int32_t *seq)
{
	for (int b = 0; b < z; b++) {
		int s = b == 0 ? 0 : b == 1 ? (v->ps ? v->ps - 1 : 5) :
			b == 2 ? skc - 1 : irand(skc - sn + 1);
		seq[b] = b < o->nlens ? o->lens[b] : s;
	}
}

int
kv_append(int argc, char **argv)
{
	if (argc < 7)
		return usage("append PTX Z HK SN D [options]");
	Variant v = variant(argv[2]);
	Opts o = options(argc, argv, 7);
	int z = atoi(argv[3]), hk = atoi(argv[4]), sn = atoi(argv[5]);
	int d = atoi(argv[6]), np = 0, mp = 0;
	int skc = o.kc ? o.kc : v.ps ? 3 * v.ps : 40;

	if (d != v.d || z < 1 || z > MAXZ || sn < 1 || sn > skc)
		return usage("append: D is the kernel's, 1 <= Z <= 64, 1 <= SN "
			"<= the capacity");
	if (v.ps) {
		mp = cdiv(skc, v.ps);
		skc = mp * v.ps;
		np = z * mp + 1;        /* a page nothing uses */
	}
	size_t row = (size_t)hk * d, nn = (size_t)z * sn * row;
	size_t nc = v.ps ? (size_t)np * v.ps * row : (size_t)z * skc * row;
	uint16_t *kn, *vn, *kc, *vc;
	int32_t *seq, *pt = NULL;
	uint64_t g[6] = {0};

	if (v.ps)
		g[0] = buffer((size_t)(z * mp) * 4, 0, (void **)&pt);
	g[1] = buffer((size_t)z * 4, 0, (void **)&seq);
	g[2] = buffer(nn * 2, 0, (void **)&kn);
	g[3] = buffer(nn * 2, 0, (void **)&vn);
	g[4] = buffer(nc * 2, 0, (void **)&kc);
	g[5] = buffer(nc * 2, 0, (void **)&vc);
	append_lengths(&o, &v, z, sn, skc, seq);
	if (pt) {
		shuffle_pages(pt, z, mp, np);
		/* sequence 3's last new token goes to a page out of range */
		if (z > 3 && seq[3] + sn - 1 < skc && seq[3] + sn - 1 >= 0)
			pt[3 * mp + (seq[3] + sn - 1) / v.ps] = np + 3;
	}
	for (size_t i = 0; i < nn; i++) {
		kn[i] = to16(urand(), v.f16);
		vn[i] = to16(urand(), v.f16);
	}
	for (size_t i = 0; i < nc; i++) {
		kc[i] = to16(urand(), v.f16);
		vc[i] = to16(urand(), v.f16);
	}
	uint16_t *ke = malloc(nc * 2), *ve = malloc(nc * 2);
	memcpy(ke, kc, nc * 2);
	memcpy(ve, vc, nc * 2);
	int nw = expect_append(&v, z, hk, sn, skc, np, mp, seq, pt, kn, vn,
		ke, ve);
	int chunk = o.chunk > 0 ? o.chunk : z;
	launch_append(mod, z, hk, sn, skc, np, mp, d, v.ps > 0, chunk, g);

	size_t bad = 0;
	for (size_t i = 0; i < nc; i++)
		bad += (kc[i] != ke[i]) + (vc[i] != ve[i]);
	printf("kv_append Z=%d HK=%d SN=%d D=%d %s SKC=%d PS=%d chunk=%d %s: "
		"%d of %d tokens written, %zu of %zu cache elements differ -> "
		"%s\n", z, hk, sn, d, v.ps ? "paged" : "contiguous", skc, v.ps,
		chunk, v.f16 ? "f16" : "bf16", nw, z * sn, bad, 2 * nc, bad ?
		"FAIL" : "ok");
	free(ke);
	free(ve);
	return bad != 0;
}

/* fa_combine.fa alone: NS random partials of each row (some splits
 * empty, LSE -inf with O 0, and every split of a row's first head and
 * position empty), merged as its header says, against float64; row r =
 * ((z (H / PK) + hg) SQ + q) PK + g is query head hg PK + g at position
 * q of batch z.  O within a rounding to 16 bits, LSE within 1e-5. */
int
combine_only(int argc, char **argv)
{
	if (argc < 8)
		return usage("combine PTX Z H SQ PK NS");
	int z = atoi(argv[3]), h = atoi(argv[4]), sq = atoi(argv[5]);
	int pk = atoi(argv[6]), ns = atoi(argv[7]);
	int d = extent(sim_meta(mod), "OP", 2);
	bool f16 = !strstr(argv[2], "bf16");
	size_t r = (size_t)z * h * sq;
	float *op, *lsep, *lse;
	uint16_t *o;

	if (z < 1 || h < 1 || sq < 1 || pk < 1 || h % pk || ns < 1)
		return usage("combine: PK divides H, every size >= 1");
	Named a[9] = {{"Z", {.i = z}}, {"H", {.i = h}}, {"SQ", {.i = sq}},
		{"PK", {.i = pk}}, {"NS", {.i = ns}},
		{"OP", {.ptr = buffer(ns * r * d * 4, 0, (void **)&op)}},
		{"LSEP", {.ptr = buffer(ns * r * 4, 0, (void **)&lsep)}},
		{"O", {.ptr = buffer(r * d * 2, 0xff, (void **)&o)}},
		{"LSE", {.ptr = buffer(r * 4, 0xff, (void **)&lse)}}};
	for (size_t i = 0; i < ns * r; i++) {
		bool empty = irand(4) == 0 || i % r == 0;
		lsep[i] = empty ? -INFINITY : (float)(3 * urand());
		for (int c = 0; c < d; c++)
			op[i * d + c] = empty ? 0 : (float)urand();
	}
	launch_named(mod, a, 9);
	long bad = 0;
	double worst = 0;
	for (size_t i = 0; i < r; i++) {
		int g = (int)(i % pk), q = (int)(i / pk % sq);
		int hg = (int)(i / pk / sq % (h / pk));
		int b = (int)(i / pk / sq / (h / pk)), hh = hg * pk + g;
		double m = -INFINITY, den = 0;
		for (int sp = 0; sp < ns; sp++)
			m = fmax(m, lsep[sp * r + i]);
		for (int sp = 0; sp < ns; sp++)
			den += m == -INFINITY ? 0 : exp(lsep[sp * r + i] - m);
		double want = den > 0 ? m + log(den) : -INFINITY;
		float got = lse[((size_t)b * h + hh) * sq + q];
		bad += !(got == want || fabs(got - want) <= 1e-5);
		for (int c = 0; c < d; c++) {
			double x = 0;
			for (int sp = 0; den > 0 && sp < ns; sp++)
				x += exp(lsep[sp * r + i] - m) / den *
					op[(sp * r + i) * d + c];
			size_t at = (((size_t)b * sq + q) * h + hh) * d + c;
			double e = fabs(from16(o[at], f16) - x);
			worst = e > worst ? e : worst;
			bad += !(e <= fabs(x) * (f16 ? 0x1p-10 : 0x1p-8) +
				1e-6);
		}
	}
	printf("combine Z=%d H=%d SQ=%d PK=%d NS=%d D=%d %s%s: max abs err "
		"%.2e, %ld values differ -> %s\n", z, h, sq, pk, ns, d,
		f16 ? "f16" : "bf16", eager ? " eager" : "", worst, bad,
		bad ? "FAIL" : "ok");
	return bad != 0;
}
