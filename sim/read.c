/* read.c: PTX text -> SimMod, for the subset fagen emits (issue #18).
 *
 * Requires: one .visible .entry, its parameters, .reg declarations of
 * the form `.reg .b32 %r<N>;` (or one register), labels `$Ln:` and
 * instructions `[@[!]%p] opcode operands;`.  Ensures: every instruction's
 * opcode is a row of ops.h with its types allowed, every register
 * operand is a declared register (resolved to a slot), every symbol is a
 * parameter or the shared-memory base, every branch target a label.
 * Anything else is an error naming the line. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simi.h"

static const struct {
	const char *key;
	unsigned types;
} optab[NOPS] = {
#define X(name, key, types) [OP_##name] = {key, types},
	SIM_OPS(X)
#undef X
};

static const char *const tynames[NTY] = {
	"", "pred", "b8", "b16", "b32", "b64", "u8", "u16", "u32", "u64",
	"s8", "s16", "s32", "s64", "f16", "f16x2", "bf16", "bf16x2", "f32",
	"f64",
};

const char *
sim_ty_name(int t)
{
	return t > 0 && t < NTY ? tynames[t] : "?";
}

int
ty_bits(int t)
{
	static const int bits[NTY] = {0, 1, 8, 16, 32, 64, 8, 16, 32, 64, 8,
		16, 32, 64, 16, 32, 16, 32, 32, 64};
	return t > 0 && t < NTY ? bits[t] : 0;
}

bool
ty_signed(int t)
{
	return t >= TY_S8 && t <= TY_S64;
}

typedef struct R {
	SimMod *m;
	const char *p;      /* the cursor */
	int line;
	char *err;
	size_t errlen;
	bool failed;
	int smem_sym;       /* has the .extern .shared been seen */
	const char *smem_name;
	size_t smem_len;
	struct Lab { const char *s; int n, ins; } *labs;
	int nlabs, caplabs;
	struct Fix { int ins, line; const char *s; int n; } *fix;
	int nfix, capfix;
	int capins;
} R;

static bool FMT(2, 3)
fail(R *r, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (r->failed)
		return false;
	r->failed = true;
	n = snprintf(r->err, r->errlen, "line %d: ", r->line);
	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < r->errlen)
		vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return false;
}

static void
skip(R *r)
{
	for (;;) {
		while (*r->p == ' ' || *r->p == '\t' || *r->p == '\r' ||
		    *r->p == '\n')
			r->line += *r->p++ == '\n';
		if (r->p[0] == '/' && r->p[1] == '/') {
			while (*r->p && *r->p != '\n')
				r->p++;
		} else if (r->p[0] == '/' && r->p[1] == '*') {
			const char *e = strstr(r->p + 2, "*/");
			for (const char *q = r->p; q < (e ? e : r->p); q++)
				r->line += *q == '\n';
			r->p = e ? e + 2 : r->p + strlen(r->p);
		} else {
			return;
		}
	}
}

static bool
wordch(int c)
{
	return isalnum(c) || c == '_' || c == '$' || c == '%' || c == '.' ||
		c == ':';
}

/* The next word (identifier, opcode, register, number); its length. */
static int
word(R *r, const char **s)
{
	skip(r);
	*s = r->p;
	while (wordch((unsigned char)*r->p))
		r->p++;
	return (int)(r->p - *s);
}

static bool
eat(R *r, char c)
{
	skip(r);
	if (*r->p != c)
		return false;
	r->p++;
	return true;
}

static bool
is(const char *s, int n, const char *lit)
{
	return (int)strlen(lit) == n && !strncmp(s, lit, (size_t)n);
}

static int
tyof(const char *s, int n)
{
	for (int t = 1; t < NTY; t++)
		if (is(s, n, tynames[t]))
			return t;
	return TY_NONE;
}

/* Skips to the end of the current line (directives without ';'). */
static void
eol(R *r)
{
	while (*r->p && *r->p != '\n')
		r->p++;
}

static bool number(const char *s, int n, int64_t *v);

static bool
param_decl(R *r)
{
	SimMod *m = r->m;
	const char *s;
	int n, ty = TY_NONE, align = 0, size = 0;

	while ((n = word(r, &s)) > 0 && s[0] == '.') {
		if (is(s, n, ".param"))
			continue;
		if (is(s, n, ".align")) {
			const char *v;
			int k = word(r, &v);
			int64_t x;
			if (!number(v, k, &x) || x <= 0 || x > 4096)
				return fail(r, "bad .align");
			align = (int)x;
			continue;
		}
		ty = tyof(s + 1, n - 1);
		if (!ty)
			return fail(r, "unknown parameter qualifier '%.*s'", n,
				s);
	}
	if (n == 0 || ty == TY_NONE)
		return fail(r, "a parameter needs a type and a name");
	size = ty_bits(ty) / 8;
	if (eat(r, '[')) {
		const char *v;
		int k = word(r, &v);
		int64_t cnt;
		if (!number(v, k, &cnt) || !eat(r, ']') || cnt <= 0 ||
		    cnt > 4096)
			return fail(r, "bad parameter array");
		size *= (int)cnt;
	}
	if (!align)
		align = size;
	if (m->nparams % 16 == 0) {
		Param *p = realloc(m->params, (size_t)(m->nparams + 16) *
			sizeof *p);
		if (!p)
			return fail(r, "out of memory");
		m->params = p;
	}
	Param *p = &m->params[m->nparams++];
	p->name = strndup(s, (size_t)n);
	p->ty = ty;
	p->size = size;
	p->align = align;
	p->off = (m->param_bytes + align - 1) / align * align;
	m->param_bytes = p->off + size;
	return true;
}

static bool
reg_decl(R *r)
{
	SimMod *m = r->m;
	const char *s, *name;
	int n, ty, count = 0;

	n = word(r, &s);
	if (n < 2 || s[0] != '.' || !(ty = tyof(s + 1, n - 1)))
		return fail(r, "a .reg declaration needs a type");
	int k = word(r, &name);
	if (k < 2 || name[0] != '%')
		return fail(r, "a .reg declaration needs a %%name");
	if (eat(r, '<')) {
		const char *v;
		int vn = word(r, &v);
		char buf[32];
		snprintf(buf, sizeof buf, "%.*s", vn, v);
		count = atoi(buf);
		if (!eat(r, '>') || count <= 0 || count > 1 << 20)
			return fail(r, "bad register count in .reg");
	}
	if (!eat(r, ';'))
		return fail(r, "expected ';' after .reg");
	if (m->ndecls % 8 == 0) {
		void *p = realloc(m->decls, (size_t)(m->ndecls + 8) *
			sizeof *m->decls);
		if (!p)
			return fail(r, "out of memory");
		m->decls = p;
	}
	/* n == 0: one register declared alone, named exactly */
	m->decls[m->ndecls++] = (struct RegDecl){strndup(name, (size_t)k), ty,
		m->nslots, count};
	m->nslots += count ? count : 1;
	return true;
}

/* %r12 -> its slot, with the declared type; -1 if undeclared. */
static int
reg_slot(const SimMod *m, const char *s, int n, int *ty)
{
	int i = n;

	while (i > 0 && isdigit((unsigned char)s[i - 1]))
		i--;
	for (int d = 0; d < m->ndecls; d++) {
		const struct RegDecl *rd = &m->decls[d];
		if (rd->n == 0 && (int)strlen(rd->prefix) == n &&
		    !strncmp(rd->prefix, s, (size_t)n)) {
			*ty = rd->ty;
			return rd->base;   /* a register declared alone */
		}
		if (rd->n == 0 || (int)strlen(rd->prefix) != i ||
		    strncmp(rd->prefix, s, (size_t)i) || i == n)
			continue;
		long k = strtol(s + i, NULL, 10);
		if (k < 0 || k >= rd->n)
			return -1;
		*ty = rd->ty;
		return rd->base + (int)k;
	}
	return -1;
}

static const struct {
	const char *name;
	int sr;
} specials[] = {
	{"%tid.x", SR_TID_X}, {"%tid.y", SR_TID_Y}, {"%tid.z", SR_TID_Z},
	{"%ntid.x", SR_NTID_X}, {"%ntid.y", SR_NTID_Y},
	{"%ntid.z", SR_NTID_Z}, {"%ctaid.x", SR_CTAID_X},
	{"%ctaid.y", SR_CTAID_Y}, {"%ctaid.z", SR_CTAID_Z},
	{"%nctaid.x", SR_NCTAID_X}, {"%nctaid.y", SR_NCTAID_Y},
	{"%nctaid.z", SR_NCTAID_Z}, {"%laneid", SR_LANEID},
	{"%warpid", SR_WARPID}, {"%cluster_ctarank", SR_CLUSTER_CTARANK},
	{"%cluster_nctarank", SR_CLUSTER_NCTARANK},
	{"%cluster_ctaid.x", SR_CLUSTER_CTAID_X},
	{"%cluster_ctaid.y", SR_CLUSTER_CTAID_Y},
	{"%cluster_ctaid.z", SR_CLUSTER_CTAID_Z},
	{"%cluster_nctaid.x", SR_CLUSTER_NCTAID_X},
	{"%cluster_nctaid.y", SR_CLUSTER_NCTAID_Y},
	{"%cluster_nctaid.z", SR_CLUSTER_NCTAID_Z},
	{"%clusterid.x", SR_CLUSTERID_X}, {"%clusterid.y", SR_CLUSTERID_Y},
	{"%clusterid.z", SR_CLUSTERID_Z}, {"%nclusterid.x", SR_NCLUSTERID_X},
	{"%nclusterid.y", SR_NCLUSTERID_Y}, {"%nclusterid.z", SR_NCLUSTERID_Z},
};

/* A number: decimal, 0x hex, 0f float bits, 0d double bits. */
static bool
number(const char *s, int n, int64_t *v)
{
	char buf[40];
	char *end;

	if (n <= 0 || n >= (int)sizeof buf)
		return false;
	snprintf(buf, sizeof buf, "%.*s", n, s);
	if ((buf[0] == '0') && (buf[1] == 'f' || buf[1] == 'F' ||
	    buf[1] == 'd' || buf[1] == 'D')) {
		*v = (int64_t)strtoull(buf + 2, &end, 16);
		return *end == 0 && end > buf + 2;
	}
	if (buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X')) {
		*v = (int64_t)strtoull(buf + 2, &end, 16);
		return *end == 0 && end > buf + 2;
	}
	*v = strtoll(buf, &end, 10);
	return *end == 0 && isdigit((unsigned char)buf[0]);
}

static int
param_find(const SimMod *m, const char *s, int n)
{
	for (int i = 0; i < m->nparams; i++)
		if (is(s, n, m->params[i].name))
			return i;
	return -1;
}

/* A register, special register, number, symbol or sink. */
static bool
scalar(R *r, Opnd *o)
{
	const char *s;
	int n, ty, p;
	bool neg = false;

	if (eat(r, '!'))
		o->neg = 1;
	if (eat(r, '-'))
		neg = true;
	n = word(r, &s);
	if (n == 0)
		return fail(r, "expected an operand, found '%c'", *r->p ?
			*r->p : '?');
	if (is(s, n, "_")) {
		o->k = OK_SINK;
		return true;
	}
	if (s[0] == '%') {
		for (size_t i = 0; i < COUNT(specials); i++)
			if (is(s, n, specials[i].name)) {
				o->k = OK_SPECIAL;
				o->r = specials[i].sr;
				return true;
			}
		o->k = OK_REG;
		o->r = reg_slot(r->m, s, n, &ty);
		if (o->r < 0)
			return fail(r, "'%.*s' is no declared register", n, s);
		return true;
	}
	if (number(s, n, &o->imm)) {
		o->k = OK_IMM;
		if (neg)
			o->imm = -o->imm;
		return true;
	}
	if (r->smem_name && is(s, n, r->smem_name)) {
		o->k = OK_IMM;
		o->imm = SMEM_BASE;
		return true;
	}
	if ((p = param_find(r->m, s, n)) >= 0) {
		o->k = OK_IMM;
		o->imm = (int64_t)(PARAM_BASE + (uint64_t)r->m->params[p].off);
		return true;
	}
	return fail(r, "unknown operand '%.*s'", n, s);
}

/* [base], [base+off], [sym], [sym+off]; or [tmap, {c0, c1}] (op->k
 * becomes OK_ADDR and the coordinates follow as another operand). */
static bool
address(R *r, Opnd *o)
{
	Opnd b = {0};

	if (!scalar(r, &b))
		return false;
	o->k = OK_ADDR;
	o->r = -1;
	if (b.k == OK_REG)
		o->r = b.r;
	else if (b.k == OK_IMM)
		o->imm = b.imm;
	else
		return fail(r, "bad address");
	if (eat(r, '+')) {
		Opnd off = {0};
		if (!scalar(r, &off) || off.k != OK_IMM)
			return fail(r, "an address offset must be a number");
		o->imm += off.imm;
	}
	return true;
}

static bool
vec(R *r, Opnd *o)
{
	int cap = 8;

	o->k = OK_VEC;
	o->v = malloc((size_t)cap * sizeof *o->v);
	if (!o->v)
		return fail(r, "out of memory");
	do {
		Opnd e = {0};
		if (!scalar(r, &e) || e.k != OK_REG)
			return fail(r, "a vector operand holds registers only");
		if (o->n == cap) {
			int32_t *v = realloc(o->v, (size_t)(cap *= 2) *
				sizeof *v);
			if (!v)
				return fail(r, "out of memory");
			o->v = v;
		}
		o->v[o->n++] = e.r;
	} while (eat(r, ','));
	return eat(r, '}') || fail(r, "expected '}'");
}

/* Builds the table key of an opcode: types -> T, setp's comparison -> C,
 * an MMA shape -> S, a tensor rank -> D, a repeat count (x16) -> X; a
 * prefetch-size hint (.L2::128B) is dropped.  alt: the key with .shared
 * and .shared::cta swapped, tried when the key is not in the table. */
static bool
opcode(R *r, const char *s, int n, Ins *in)
{
	static const char *const cmps[] = {"eq", "ne", "lt", "le", "gt", "ge",
		"lo", "ls", "hi", "hs"};
	char key[160], alt[160];
	size_t k = 0, ka = 0;
	bool setp = n > 5 && !strncmp(s, "setp.", 5);
	const char *e = s + n;

	for (const char *t = s; t < e;) {
		const char *d = memchr(t, '.', (size_t)(e - t));
		int tn = (int)((d ? d : e) - t), ty, a, b, c;
		const char *rep = NULL;
		char tok[48];
		snprintf(tok, sizeof tok, "%.*s", tn, t);
		if (t != s && (ty = tyof(t, tn))) {
			if (in->nty == 4)
				return fail(r, "too many types in '%.*s'", n, s);
			in->ty[in->nty++] = (uint8_t)ty;
			rep = "T";
		} else if (setp && t != s) {
			for (size_t i = 0; i < COUNT(cmps); i++)
				if (!strcmp(tok, cmps[i])) {
					in->cmp = (uint8_t)i;
					rep = "C";
				}
		}
		if (!rep && sscanf(tok, "m%dn%dk%d", &a, &b, &c) == 3) {
			bool mma = !strncmp(s, "mma.", 4);
			if (mma && (a != 16 || b != 8 || c != 16))
				return fail(r, "mma shape '%s' is not modelled "
					"(only m16n8k16)", tok);
			if (!mma && (a != 64 || c != 16))
				return fail(r, "wgmma shape '%s' is not modelled "
					"(only m64nNk16)", tok);
			in->aux = b;
			rep = "S";
		} else if (!rep && tn == 2 && tok[1] == 'd' && tok[0] >= '1' &&
		    tok[0] <= '5') {
			in->aux = tok[0] - '0';
			rep = "D";
		} else if (!rep && tok[0] == 'x' && sscanf(tok + 1, "%d%n", &a,
		    &b) == 1 && b == tn - 1) {
			in->aux = a;
			rep = "X";
		}
		t = d ? d + 1 : e;
		if (!rep && !strncmp(tok, "L2::", 4) &&
		    isdigit((unsigned char)tok[4]))
			continue;
		const char *sw = !strcmp(tok, "shared") ? "shared::cta" :
			!strcmp(tok, "shared::cta") ? "shared" : rep ? rep : tok;
		k += (size_t)snprintf(key + k, sizeof key - k, "%s%s",
			k ? "." : "", rep ? rep : tok);
		ka += (size_t)snprintf(alt + ka, sizeof alt - ka, "%s%s",
			ka ? "." : "", sw);
		if (k >= sizeof key || ka >= sizeof alt)
			return fail(r, "opcode too long");
	}
	for (int i = 0; i < 2 * NOPS; i++) {
		if (strcmp(i < NOPS ? key : alt, optab[i % NOPS].key))
			continue;
		i %= NOPS;
		for (int j = 0; j < in->nty; j++)
			if (!(optab[i].types & TB(in->ty[j])) && i != OP_WG_MMA &&
			    i != OP_MMA_SYNC &&
			    !(j > 0 && (i == OP_CVT || i == OP_CVT_RN ||
			    i == OP_CVT_RZI)))
				return fail(r, "'%.*s': type .%s is not modelled "
					"for this instruction", n, s,
					sim_ty_name(in->ty[j]));
		/* a wait that acquires at cluster scope waits the same here
		 * (every write is visible at once) */
		in->op = (uint16_t)(i == OP_MBAR_TRY_WAIT_CL ? OP_MBAR_TRY_WAIT :
			i);
		return true;
	}
	return fail(r, "instruction '%.*s' is not modelled by the simulator",
		n, s);
}

static Ins *
new_ins(R *r)
{
	SimMod *m = r->m;

	if (m->nins == r->capins) {
		r->capins = r->capins ? 2 * r->capins : 256;
		Ins *p = realloc(m->ins, (size_t)r->capins * sizeof *p);
		if (!p)
			return NULL;
		m->ins = p;
	}
	Ins *in = &m->ins[m->nins++];
	memset(in, 0, sizeof *in);
	in->guard = -1;
	in->tgt = -1;
	in->line = r->line;
	return in;
}

static bool
instruction(R *r, const char *s, int n)
{
	Ins *in = new_ins(r);
	int ty;

	if (!in)
		return fail(r, "out of memory");
	if (s[0] == '@') {
		r->p = s + 1;
		in->gneg = eat(r, '!');
		n = word(r, &s);
		in->guard = reg_slot(r->m, s, n, &ty);
		if (in->guard < 0 || ty != TY_PRED)
			return fail(r, "a guard must be a predicate register");
		n = word(r, &s);
	}
	if (!opcode(r, s, n, in))
		return false;
	skip(r);
	if (in->op == OP_BRA || in->op == OP_BRA_UNI) {
		const char *l;
		int ln = word(r, &l);
		if (r->nfix == r->capfix) {
			r->capfix = r->capfix ? 2 * r->capfix : 64;
			void *p = realloc(r->fix, (size_t)r->capfix *
				sizeof *r->fix);
			if (!p)
				return fail(r, "out of memory");
			r->fix = p;
		}
		r->fix[r->nfix++] = (struct Fix){(int)(in - r->m->ins),
			r->line, l, ln};
		return eat(r, ';') || fail(r, "expected ';'");
	}
	while (*r->p != ';') {
		if (in->nopnd == MAXOPND)
			return fail(r, "too many operands");
		Opnd *o = &in->o[in->nopnd++];
		if (eat(r, '[')) {
			if (!address(r, o))
				return false;
			if (eat(r, ',')) {   /* [tmap, {coords}] */
				if (!eat(r, '{') || in->nopnd == MAXOPND ||
				    !vec(r, &in->o[in->nopnd++]))
					return fail(r, "bad tensor operand");
			}
			if (!eat(r, ']'))
				return fail(r, "expected ']'");
		} else if (eat(r, '{')) {
			if (!vec(r, o))
				return false;
		} else if (!scalar(r, o)) {
			return false;
		}
		if (eat(r, '|')) {   /* elect.sync _|%p: the predicate */
			if (in->nopnd == MAXOPND ||
			    !scalar(r, &in->o[in->nopnd++]))
				return fail(r, "bad '|' operand");
		}
		skip(r);
		if (*r->p == ',')
			r->p++;
		else if (*r->p != ';')
			return fail(r, "expected ',' or ';' in operands");
		skip(r);
	}
	r->p++;
	const char *why = op_check(in);
	return !why || fail(r, "'%s': %s", op_name(in->op), why);
}

static bool
label(R *r, const char *s, int n)
{
	if (r->nlabs == r->caplabs) {
		r->caplabs = r->caplabs ? 2 * r->caplabs : 64;
		void *p = realloc(r->labs, (size_t)r->caplabs * sizeof *r->labs);
		if (!p)
			return fail(r, "out of memory");
		r->labs = p;
	}
	r->labs[r->nlabs++] = (struct Lab){s, n - 1, r->m->nins};
	return true;
}

static bool
body(R *r)
{
	const char *s;
	int n;

	for (;;) {
		skip(r);
		if (eat(r, '}'))
			return true;
		if (!*r->p)
			return fail(r, "the .entry body has no '}'");
		if (*r->p == '@') {
			if (!instruction(r, r->p, 1))
				return false;
			continue;
		}
		n = word(r, &s);
		if (n == 0)
			return fail(r, "unexpected '%c'", *r->p);
		if (is(s, n, ".reg")) {
			if (!reg_decl(r))
				return false;
		} else if (s[0] == '.') {
			return fail(r, "directive '%.*s' in a body is not "
				"modelled", n, s);
		} else if (s[n - 1] == ':') {
			if (!label(r, s, n))
				return false;
		} else if (!instruction(r, s, n)) {
			return false;
		}
	}
}

static bool
entry(R *r)
{
	const char *s;
	int n = word(r, &s);

	r->m->entry = strndup(s, (size_t)n);
	if (!eat(r, '('))
		return fail(r, "expected '(' after the entry name");
	if (!eat(r, ')')) {
		do {
			if (!param_decl(r))
				return false;
		} while (eat(r, ','));
		if (!eat(r, ')'))
			return fail(r, "expected ')' after the parameters");
	}
	/* .maxntid, .maxnreg, ...: performance directives */
	while (skip(r), *r->p == '.') {
		word(r, &s);
		eol(r);
	}
	if (!eat(r, '{'))
		return fail(r, "expected '{'");
	return body(r);
}

static bool
module(R *r)
{
	const char *s;
	int n;

	for (;;) {
		skip(r);
		if (!*r->p)
			break;
		n = word(r, &s);
		if (is(s, n, ".version") || is(s, n, ".target") ||
		    is(s, n, ".address_size")) {
			eol(r);
		} else if (is(s, n, ".extern")) {
			const char *nm = NULL;
			int nn = 0;
			while ((n = word(r, &s)) > 0) {
				if (s[0] != '.' && !isdigit((unsigned char)s[0]))
					nm = s, nn = n;
			}
			if (!nm || !eat(r, '[') || !eat(r, ']') || !eat(r, ';'))
				return fail(r, "expected '.extern .shared ... "
					"name[];'");
			r->smem_name = strndup(nm, (size_t)nn);
		} else if (is(s, n, ".visible") || is(s, n, ".entry")) {
			if (is(s, n, ".visible") && (n = word(r, &s), !is(s, n,
			    ".entry")))
				return fail(r, "expected .entry");
			if (r->m->entry)
				return fail(r, "more than one .entry");
			if (!entry(r))
				return false;
		} else {
			return fail(r, "'%.*s' at the top level is not modelled",
				n ? n : 1, n ? s : r->p);
		}
	}
	if (!r->m->entry)
		return fail(r, "no .entry");
	for (int i = 0; i < r->nfix; i++) {
		struct Fix *f = &r->fix[i];
		for (int j = 0; j < r->nlabs; j++)
			if (r->labs[j].n == f->n && !strncmp(r->labs[j].s, f->s,
			    (size_t)f->n))
				r->m->ins[f->ins].tgt = r->labs[j].ins;
		r->line = f->line;
		if (r->m->ins[f->ins].tgt < 0)
			return fail(r, "branch to unknown label '%.*s'", f->n,
				f->s);
	}
	return true;
}

bool meta_read(SimMod *mod, char *err, size_t errlen);

SimMod *
sim_load(const char *ptx, size_t len, char *err, size_t errlen)
{
	SimMod *m = calloc(1, sizeof *m);
	R r = {.m = m, .line = 1, .err = err, .errlen = errlen};

	if (!m || !(m->text = malloc(len + 1))) {
		free(m);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	memcpy(m->text, ptx, len);
	m->text[len] = 0;
	m->len = len;
	if (strlen(m->text) != len) {
		snprintf(err, errlen, "the PTX text holds a NUL byte");
		sim_mod_free(m);
		return NULL;
	}
	r.p = m->text;
	bool ok = meta_read(m, err, errlen) && module(&r);
	free(r.labs);
	free(r.fix);
	free((void *)r.smem_name);
	if (!ok) {
		sim_mod_free(m);
		return NULL;
	}
	m->nlines = 1;
	for (const char *q = m->text; *q; q++)
		m->nlines += *q == '\n';
	m->line_at = malloc((size_t)(m->nlines + 1) * sizeof *m->line_at);
	if (!m->line_at) {
		snprintf(err, errlen, "out of memory");
		sim_mod_free(m);
		return NULL;
	}
	m->line_at[1] = 0;
	for (int i = 0, l = 1; m->text[i]; i++)
		if (m->text[i] == '\n')
			m->line_at[++l] = i + 1;
	return m;
}

void
sim_mod_free(SimMod *m)
{
	if (!m)
		return;
	for (int i = 0; i < m->nins; i++)
		for (int j = 0; j < m->ins[i].nopnd; j++)
			free(m->ins[i].o[j].v);
	for (int i = 0; i < m->nparams; i++)
		free((void *)m->params[i].name);
	for (int i = 0; i < m->ndecls; i++)
		free((void *)m->decls[i].prefix);
	free((void *)m->entry);
	free(m->params);
	free(m->decls);
	free(m->ins);
	free(m->line_at);
	free(m->strs);
	free(m->text);
	free(m);
}

const SimMeta *
sim_meta(const SimMod *m)
{
	return &m->meta;
}
