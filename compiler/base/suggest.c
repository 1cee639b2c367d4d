/* suggest.c: "did you mean" for an unknown name.  A lookup site feeds
 * the names in scope to a Suggest one by one; the closest by edit
 * distance, if close enough, is named in the error.  Requires nothing;
 * ensures the first of equally close candidates wins, so the message
 * depends only on the order the caller offers them in. */
#include <string.h>

#include "base/base.h"

/* Levenshtein distance of a and b, or limit + 1 when it exceeds limit
 * (names are short; longer ones are never close). */
static int
distance(const char *a, const char *b, int limit)
{
	int la = (int)strlen(a), lb = (int)strlen(b);
	int row[65];

	if (la > 64 || lb > 64 || la - lb > limit || lb - la > limit)
		return limit + 1;
	for (int j = 0; j <= lb; j++)
		row[j] = j;
	for (int i = 1; i <= la; i++) {
		int diag = row[0], best;
		row[0] = best = i;
		for (int j = 1; j <= lb; j++) {
			int up = row[j];
			int d = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < d)
				d = up + 1;
			if (row[j - 1] + 1 < d)
				d = row[j - 1] + 1;
			row[j] = d;
			diag = up;
			if (d < best)
				best = d;
		}
		if (best > limit)
			return limit + 1;
	}
	return row[lb];
}

void
diag_suggest_init(Suggest *s, const char *name)
{
	int n = (int)strlen(name);

	/* a third of the name, at most 2: 'fulll' -> 'full', not 'a' -> 'b' */
	*s = (Suggest){name, NULL, n / 3 < 2 ? n / 3 : 2, 0};
}

void
diag_suggest_add(Suggest *s, const char *cand)
{
	if (!cand || !s->limit || !strcmp(cand, s->name))
		return;
	int d = distance(s->name, cand, s->limit);
	if (d <= s->limit && (!s->best || d < s->dist)) {
		s->best = cand;
		s->dist = d;
	}
}

void
diag_undeclared(Ctx *c, Span sp, const Suggest *s)
{
	if (s->best)
		diag_error(c, sp, "'%s' is not declared; did you mean '%s'?",
			s->name, s->best);
	else
		diag_error(c, sp, "'%s' is not declared", s->name);
}
