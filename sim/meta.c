/* meta.c: the simulator's reading of fagen's PTX metadata comment
 * (docs/LANGUAGE.md §17.1), the same lines runtime/jit/meta.c reads:
 *
 *	// fagen.kernel name=K target=sm_90a threads=64 cluster=1,1,1 ...
 *	// fagen.grid $N 64 cdiv ; $M 64 cdiv
 *	// fagen.arg 0 param M i32
 *	// fagen.arg 2 global X bf16 rank=2 dims $M ; $N
 *	// fagen.arg 4 tma tx of=X box=64,64 swizzle=128 oob=zero
 *
 * The simulator keeps its own reader so that sim/ depends on nothing in
 * runtime/ (which needs cuda.h); it is strict in the same places. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simi.h"

typedef struct Toks {
	char *t[128];
	int n;
} Toks;

/* Splits one line (copied into buf) at blanks. */
static void
split(char *buf, Toks *tk)
{
	char *save, *s;

	tk->n = 0;
	for (s = strtok_r(buf, " \t\r", &save); s && tk->n < 128;
	    s = strtok_r(NULL, " \t\r", &save))
		tk->t[tk->n++] = s;
}

static const char *
val(const char *tok, const char *key)
{
	size_t n = strlen(key);

	return !strncmp(tok, key, n) && tok[n] == '=' ? tok + n + 1 : NULL;
}

static int
ty_lookup(const char *s)
{
	static const char *const alias[][2] = {{"i32", "s32"}, {"i64", "s64"},
		{"bool", "pred"}};

	for (size_t i = 0; i < COUNT(alias); i++)
		if (!strcmp(s, alias[i][0]))
			s = alias[i][1];
	for (int t = 1; t < NTY; t++)
		if (!strcmp(s, sim_ty_name(t)))
			return t;
	return TY_NONE;
}

/* Interns a name into the module's string pool. */
static const char *
keep(SimMod *m, size_t *used, const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = m->strs + *used;

	memcpy(d, s, n);
	*used += n;
	return d;
}

static int
list(const char *s, int *v, int max)
{
	int n = 0;

	while (*s && n < max) {
		char *end;
		v[n++] = (int)strtol(s, &end, 10);
		if (end == s)
			return -1;
		s = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return -1;
	}
	return *s ? -1 : n;
}

static int
param_index(const SimMeta *m, const char *name)
{
	for (int i = 0; i < m->nargs; i++)
		if (m->args[i].kind == SIM_ARG_PARAM &&
		    !strcmp(m->args[i].name, name))
			return i;
	return -1;
}

/* Programs separated by ';' in tk[from..]: exactly n of them. */
static bool
rpn(const SimMeta *m, const Toks *tk, int from, SimRpn *out, int n)
{
	static const char *const ops[] = {"+", "-", "*", "/", "%", "min",
		"max", "cdiv"};
	int k = 0;

	if (n == 0)
		return from >= tk->n;
	out[0].n = 0;
	for (int i = from; i < tk->n; i++) {
		const char *s = tk->t[i];
		if (!strcmp(s, ";")) {
			if (++k == n)
				return false;
			out[k].n = 0;
			continue;
		}
		SimRpn *r = &out[k];
		if (r->n == SIM_MAXRPN)
			return false;
		r->t[r->n].op = -1;
		for (size_t j = 0; j < COUNT(ops); j++)
			if (!strcmp(s, ops[j]))
				r->t[r->n].op = SIM_RPN_ADD + (int)j;
		if (r->t[r->n].op < 0 && s[0] == '$') {
			r->t[r->n].op = SIM_RPN_PARAM;
			r->t[r->n].v = param_index(m, s + 1);
			if (r->t[r->n].v < 0)
				return false;
		} else if (r->t[r->n].op < 0) {
			char *end;
			r->t[r->n].op = SIM_RPN_INT;
			r->t[r->n].v = strtoll(s, &end, 10);
			if (*end)
				return false;
		}
		r->n++;
	}
	return k == n - 1;
}

static bool
kernel_line(SimMod *mod, size_t *used, const Toks *tk)
{
	static const char *const ords[] = {"single", "persistent", "lpt"};
	SimMeta *m = &mod->meta;
	const char *s;

	m->order = -1;
	m->cluster[0] = m->cluster[1] = m->cluster[2] = 1;
	for (int i = 1; i < tk->n; i++) {
		const char *t = tk->t[i];
		if ((s = val(t, "name")))
			m->name = keep(mod, used, s);
		else if ((s = val(t, "target")))
			m->target = keep(mod, used, s);
		else if ((s = val(t, "threads")))
			m->threads = atoi(s);
		else if ((s = val(t, "smem")))
			m->smem = atoi(s);
		else if ((s = val(t, "tiles")))
			m->ntiles = atoi(s);
		else if ((s = val(t, "cluster")) && list(s, m->cluster, 3) != 3)
			return false;
		else if ((s = val(t, "order")))
			for (int j = 0; j < 3; j++)
				if (!strcmp(s, ords[j]))
					m->order = j;
	}
	return m->name && m->target && m->threads > 0 &&
		m->threads <= 1024 && m->threads % 32 == 0 && m->order >= 0 &&
		m->smem >= 0 && m->ntiles >= 0 && m->ntiles <= 3;
}

static bool
arg_line(SimMod *mod, size_t *used, const Toks *tk, const char **dimsrc)
{
	SimMeta *m = &mod->meta;
	const char *s;

	if (tk->n < 4 || atoi(tk->t[1]) != m->nargs || m->nargs == SIM_MAXARGS)
		return false;
	SimArg *a = &m->args[m->nargs];
	a->name = keep(mod, used, tk->t[3]);
	a->of = -1;
	if (!strcmp(tk->t[2], "param")) {
		a->kind = SIM_ARG_PARAM;
		a->ty = tk->n == 5 ? ty_lookup(tk->t[4]) : TY_NONE;
	} else if (!strcmp(tk->t[2], "global")) {
		a->kind = SIM_ARG_GLOBAL;
		a->ty = tk->n > 6 ? ty_lookup(tk->t[4]) : TY_NONE;
		if (a->ty == TY_NONE || !(s = val(tk->t[5], "rank")) ||
		    (a->rank = atoi(s)) < 1 || a->rank > SIM_MAXRANK ||
		    strcmp(tk->t[6], "dims"))
			return false;
		*dimsrc = "";  /* read once every param is known */
	} else if (!strcmp(tk->t[2], "strides")) {
		a->kind = SIM_ARG_STRIDES;
		for (int i = 4; i < tk->n; i++)
			if ((s = val(tk->t[i], "of")))
				for (int j = 0; j < m->nargs; j++)
					if (!strcmp(m->args[j].name, s))
						a->of = j;
		if (a->of < 0 || m->args[a->of].kind != SIM_ARG_GLOBAL)
			return false;
		a->rank = m->args[a->of].rank;
		a->ty = ty_lookup("i64");
	} else if (!strcmp(tk->t[2], "tma")) {
		a->kind = SIM_ARG_TMA;
		for (int i = 4; i < tk->n; i++) {
			if ((s = val(tk->t[i], "of")))
				for (int j = 0; j < m->nargs; j++)
					if (!strcmp(m->args[j].name, s))
						a->of = j;
			if ((s = val(tk->t[i], "box")))
				a->rank = list(s, a->box, SIM_MAXRANK);
			if ((s = val(tk->t[i], "swizzle")))
				a->swizzle = atoi(s);
			if ((s = val(tk->t[i], "oob")))
				a->oob_nan = !strcmp(s, "nan");
		}
		if (a->of < 0 || m->args[a->of].kind != SIM_ARG_GLOBAL ||
		    a->rank < 1 || a->rank > m->args[a->of].rank)
			return false;
		a->ty = m->args[a->of].ty;
	} else {
		return false;
	}
	if (a->ty == TY_NONE)
		return false;
	m->nargs++;
	return true;
}

/* Reads the metadata lines of mod->text; false with a message. */
bool
meta_read(SimMod *mod, char *err, size_t errlen)
{
	SimMeta *m = &mod->meta;
	char *lines[SIM_MAXARGS + 2] = {0};
	char *grid = NULL, *buf;
	const char *s = mod->text;
	size_t used = 0;
	int line = 0;
	bool kernel = false;

	mod->strs = calloc(1, mod->len + 1);
	if (!mod->strs)
		return snprintf(err, errlen, "out of memory"), false;
	for (; *s; s = strchr(s, '\n') ? strchr(s, '\n') + 1 : s + strlen(s)) {
		const char *e = strchr(s, '\n');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		Toks tk;
		line++;
		if (s[0] == '.')
			break;
		if (n < 10 || strncmp(s, "// fagen.", 9))
			continue;
		buf = strndup(s + 3, n - 3);
		if (!buf)
			return snprintf(err, errlen, "out of memory"), false;
		char *copy = strdup(buf);
		split(buf, &tk);
		bool ok = true;
		const char *dims = NULL;
		if (!strcmp(tk.t[0], "fagen.kernel")) {
			ok = !kernel && kernel_line(mod, &used, &tk);
			kernel = true;
		} else if (!strcmp(tk.t[0], "fagen.grid")) {
			free(grid);
			grid = copy, copy = NULL;
		} else if (!strcmp(tk.t[0], "fagen.arg")) {
			ok = arg_line(mod, &used, &tk, &dims);
			if (ok && dims)
				lines[m->nargs - 1] = copy, copy = NULL;
		}
		free(buf);
		free(copy);
		if (!ok) {
			snprintf(err, errlen, "line %d: cannot read this fagen "
				"metadata line", line);
			goto fail;
		}
	}
	if (!kernel) {
		snprintf(err, errlen, "no '// fagen.kernel' line: not PTX "
			"written by fagen");
		goto fail;
	}
	if (grid) {
		Toks tk;
		split(grid, &tk);
		if (!rpn(m, &tk, 1, m->grid, m->ntiles)) {
			snprintf(err, errlen, "cannot read the fagen.grid line");
			goto fail;
		}
	} else if (m->ntiles) {
		snprintf(err, errlen, "no '// fagen.grid' line");
		goto fail;
	}
	for (int i = 0; i < m->nargs; i++) {
		SimArg *a = &m->args[i];
		a->user = a->kind == SIM_ARG_TMA || a->kind ==
			SIM_ARG_STRIDES ? -1 : m->nuser++;
		if (!lines[i])
			continue;
		Toks tk;
		split(lines[i], &tk);
		if (!rpn(m, &tk, 7, a->dims, a->rank)) {
			snprintf(err, errlen, "cannot read the dims of '%s'",
				a->name);
			goto fail;
		}
	}
	for (int i = 0; i < SIM_MAXARGS + 2; i++)
		free(lines[i]);
	free(grid);
	return true;
fail:
	for (int i = 0; i < SIM_MAXARGS + 2; i++)
		free(lines[i]);
	free(grid);
	return false;
}

/* Evaluates a size program over the param values; false on overflow,
 * division by zero or a malformed program. */
bool
sim_rpn_eval(const SimRpn *r, const int64_t *pv, int64_t *out)
{
	int64_t st[SIM_MAXRPN];
	int sp = 0;

	for (int i = 0; i < r->n; i++) {
		int op = r->t[i].op;
		if (op == SIM_RPN_INT || op == SIM_RPN_PARAM) {
			st[sp++] = op == SIM_RPN_INT ? r->t[i].v : pv[r->t[i].v];
			continue;
		}
		if (sp < 2)
			return false;
		int64_t y = st[--sp], x = st[--sp], z;
		switch (op) {
		case SIM_RPN_ADD: if (__builtin_add_overflow(x, y, &z))
				return false;
			break;
		case SIM_RPN_SUB: if (__builtin_sub_overflow(x, y, &z))
				return false;
			break;
		case SIM_RPN_MUL: if (__builtin_mul_overflow(x, y, &z))
				return false;
			break;
		case SIM_RPN_MIN: z = x < y ? x : y; break;
		case SIM_RPN_MAX: z = x > y ? x : y; break;
		default:
			if (y == 0 || (x == INT64_MIN && y == -1))
				return false;
			z = op == SIM_RPN_DIV ? x / y : op == SIM_RPN_MOD ?
				x % y : x / y + (x % y != 0 && (x < 0) == (y < 0));
		}
		st[sp++] = z;
	}
	if (sp != 1)
		return false;
	*out = st[0];
	return true;
}
