/* parser.y: .fa schedules to the generic AST of fgc.h.  No semantics here:
 * sema.c gives meaning to declarations, attributes and operations. */
%define api.pure full
%define api.prefix {fg_yy}
%define api.location.type {Span}
%define parse.error custom
%locations
%parse-param {struct LexState *ls} {void *scanner} {Node **root}
%lex-param {void *scanner}
%expect 0

%code requires {
#include "front/front.h"
struct LexState;
}

%code {
#include <string.h>
#include "lexstate.h"

#define YYLLOC_DEFAULT(Cur, Rhs, N) do {                                 \
	if (N) {                                                        \
		(Cur).lo = YYRHSLOC(Rhs, 1).lo;                          \
		(Cur).hi = YYRHSLOC(Rhs, N).hi;                          \
	} else {                                                        \
		(Cur).lo = (Cur).hi = YYRHSLOC(Rhs, 0).hi;               \
	}                                                               \
} while (0)
#define YYMAXDEPTH 4000
#define YYLOCATION_PRINT(f, l) ((void)0)

int fg_yylex(FG_YYSTYPE *, Span *, void *);
static void fg_yyerror(Span *, struct LexState *, void *, Node **,
	const char *);

#define CTX (ls->ctx)
#define MK(k, sp) node_new(CTX, (k), (sp))

static Node *
bin(struct LexState *ls, int op, Node *a, Node *b, Span sp)
{
	Node *n = MK(N_BINARY, sp);

	n->op = (uint16_t)op;
	n->a = a;
	n->b = b;
	return n;
}

static Node *
un(struct LexState *ls, int op, Node *a, Span sp)
{
	Node *n = MK(N_UNARY, sp);

	n->op = (uint16_t)op;
	n->a = a;
	return n;
}

static Node *
listnode(struct LexState *ls, NodeKind k, NodeList l, Span sp)
{
	Node *n = MK(k, sp);

	n->kids = l;
	return n;
}

static NodeList
one(struct LexState *ls, Node *x)
{
	NodeList l = {0};

	nodelist_push(CTX, &l, x);
	return l;
}
}

%union {
	Node *node;
	NodeList list;
	const char *name;
	int64_t ival;
	double fval;
	int op;
}

%token <name> IDENT "identifier"
%token <ival> INTLIT "integer"
%token <fval> FLOATLIT "number"
%token <op> BOOLLIT "boolean"
%token <op> DECLKW "declaration"
%token <op> DECLKW0 "'cta'"
%token <op> OPWORD "operation"
%token <op> OPASSIGN "compound assignment"
%token <op> TILES "'tiles'"
%token STATIC "'static'" IF "'if'" ELSE "'else'" FOR "'for'" IN "'in'"
%token ASSERT "'assert'"
%token STEP "'step'" LET "'let'" VAR "'var'" REG "'reg'"
%token ELECT "'elect'" WARP "'warp'" MMA "'mma'" MOD "'mod'"
%token ARROW "'->'" DOTDOT "'..'"
%token T_EQ "'=='" T_NE "'!='" T_LE "'<='" T_GE "'>='"
%token T_SHL "'<<'" T_SHR "'>>'" T_ANDAND "'&&'" T_OROR "'||'"

%right '?' ':'
%left T_OROR
%left T_ANDAND
%left '|'
%left '^'
%left '&'
%left T_EQ T_NE
%left '<' '>' T_LE T_GE
%left T_SHL T_SHR
%left '+' '-'
%left '*' '/' '%'
%precedence UNARY

%type <node> item decl sif_item sif_else stmt block opt_else sif_selse
%type <node> expr bexpr postfix primary callarg attr type opt_type opt_init
%type <node> declhead stmt_if
%type <list> items stmts attrs exprlist callargs dims modparams

%%

module
	: items		{ *root = listnode(ls, N_MODULE, $1, @$); }
	;

items
	: %empty		{ $$ = (NodeList){0}; }
	| items item	{ $$ = $1; if ($2) nodelist_push(CTX, &$$, $2); }
	;

item
	: decl
	| sif_item
	| error ';'	{ $$ = NULL; }
	;

decl
	: DECLKW declhead opt_type opt_init attrs ';' {
		$$ = $2;
		$$->op = (uint16_t)$1;
		$$->span = @$;
		$$->b = $3;
		$$->d = $4;
		$$->attrs = $5;
	}
	| DECLKW declhead opt_type opt_init attrs block {
		$$ = $2;
		$$->op = (uint16_t)$1;
		$$->span = @$;
		$$->b = $3;
		$$->d = $4;
		$$->attrs = $5;
		$$->kids = $6->kids;
	}
	| DECLKW0 attrs ';' {
		$$ = MK(N_DECL, @$);
		$$->op = (uint16_t)$1;
		$$->nspan = @1;
		$$->attrs = $2;
	}
	| TILES attrs ';' {
		$$ = MK(N_DECL, @$);
		$$->op = DK_TILES;
		$$->nspan = @1;
		$$->attrs = $2;
	}
	| MOD IDENT '(' ')' '=' expr ';' {
		$$ = MK(N_DECL, @$);
		$$->op = DK_MOD;
		$$->name = $2;
		$$->nspan = @2;
		$$->d = $6;
	}
	| MOD IDENT '(' modparams ')' '=' expr ';' {
		$$ = MK(N_DECL, @$);
		$$->op = DK_MOD;
		$$->name = $2;
		$$->nspan = @2;
		$$->kids = $4;
		$$->d = $7;
	}
	;

/* a mod's parameters: names, as N_NAME nodes */
modparams
	: IDENT {
		Node *p = MK(N_NAME, @1);
		p->name = $1;
		$$ = one(ls, p);
	}
	| modparams ',' IDENT {
		Node *p = MK(N_NAME, @3);
		p->name = $3;
		$$ = $1;
		nodelist_push(CTX, &$$, p);
	}
	;

/* 'name', 'name[N]' or 'name[i < N]' (a family of N instances) */
declhead
	: IDENT {
		$$ = MK(N_DECL, @1);
		$$->name = $1;
		$$->nspan = @1;
	}
	| IDENT '[' expr ']' {
		$$ = MK(N_DECL, @$);
		$$->name = $1;
		$$->nspan = @1;
		if ($3->kind == N_BINARY && $3->op == '<' &&
		    $3->a->kind == N_NAME) {
			$$->c = $3->a;
			$$->c->a = $3->b;
			$$->a = $3->b;
		} else {
			$$->a = $3;
		}
	}
	;

opt_type
	: %empty	{ $$ = NULL; }
	| ':' type	{ $$ = $2; }
	;

type
	: IDENT dims {
		$$ = MK(N_TYPE, @$);
		$$->name = $1;
		$$->nspan = @1;
		$$->kids = $2;
	}
	;

dims
	: %empty	{ $$ = (NodeList){0}; }
	| dims '[' exprlist ']' {
		$$ = $1;
		nodelist_push(CTX, &$$, listnode(ls, N_TUPLE, $3,
			span_join(@2, @4)));
	}
	;

opt_init
	: %empty	{ $$ = NULL; }
	| '=' expr	{ $$ = $2; }
	;

attrs
	: %empty		{ $$ = (NodeList){0}; }
	| attrs attr	{ $$ = $1; nodelist_push(CTX, &$$, $2); }
	;

attr
	: IDENT {
		$$ = MK(N_ATTR, @$);
		$$->name = $1;
		$$->nspan = @1;
	}
	| IDENT '=' expr {
		$$ = MK(N_ATTR, @$);
		$$->name = $1;
		$$->nspan = @1;
		$$->a = $3;
	}
	| DECLKW0 '=' expr {  /* 'arrive B cta=R': a keyword as a name */
		$$ = MK(N_ATTR, @$);
		$$->name = $1 == DK_CTA ? "cta" : "verify";
		$$->nspan = @1;
		$$->a = $3;
	}
	;

sif_item
	: STATIC IF bexpr '{' items '}' sif_else {
		$$ = MK(N_SIF, @$);
		$$->a = $3;
		$$->b = listnode(ls, N_BLOCK, $5, span_join(@4, @6));
		$$->c = $7;
	}
	| STATIC ASSERT bexpr ';' {
		$$ = MK(N_SASSERT, @$);
		$$->a = $3;
	}
	;

sif_else
	: %empty	{ $$ = NULL; }
	| ELSE '{' items '}' { $$ = listnode(ls, N_BLOCK, $3, @$); }
	| ELSE sif_item	{ $$ = $2; }
	;

/* 'error }' closes a block whose last statement lacks its ';', so that
 * the braces stay balanced and one mistake gives one error */
block
	: '{' stmts '}'	{ $$ = listnode(ls, N_BLOCK, $2, @$); }
	| '{' stmts error '}' { $$ = listnode(ls, N_BLOCK, $2, @$); }
	;

stmts
	: %empty		{ $$ = (NodeList){0}; }
	| stmts stmt	{ $$ = $1; if ($2) nodelist_push(CTX, &$$, $2); }
	;

stmt
	: LET IDENT opt_type '=' expr ';' {
		$$ = MK(N_LET, @$);
		$$->name = $2;
		$$->nspan = @2;
		$$->b = $3;
		$$->a = $5;
	}
	| VAR IDENT opt_type opt_init ';' {
		$$ = MK(N_VAR, @$);
		$$->name = $2;
		$$->nspan = @2;
		$$->b = $3;
		$$->a = $4;
	}
	| REG IDENT ':' type attrs ';' {
		$$ = MK(N_REG, @$);
		$$->name = $2;
		$$->nspan = @2;
		$$->b = $4;
		$$->attrs = $5;
	}
	| postfix '=' expr ';' {
		$$ = MK(N_ASSIGN, @$);
		$$->op = '=';
		$$->a = $1;
		$$->b = $3;
	}
	| postfix OPASSIGN expr ';' {
		$$ = MK(N_ASSIGN, @$);
		$$->op = (uint16_t)$2;
		$$->a = $1;
		$$->b = $3;
	}
	| IF bexpr block opt_else {
		$$ = MK(N_IF, @$);
		$$->a = $2;
		$$->b = $3;
		$$->c = $4;
	}
	| FOR IDENT IN expr block {
		$$ = MK(N_FOR, @$);
		$$->name = $2;
		$$->nspan = @2;
		$$->a = $4;
		$$->b = $5;
	}
	| STATIC IF bexpr block sif_selse {
		$$ = MK(N_SIF, @$);
		$$->a = $3;
		$$->b = $4;
		$$->c = $5;
	}
	| STATIC FOR IDENT IN expr block {
		$$ = MK(N_SFOR, @$);
		$$->name = $3;
		$$->nspan = @3;
		$$->a = $5;
		$$->b = $6;
	}
	| ELECT block {
		$$ = MK(N_ELECT, @$);
		$$->a = $2;
	}
	| ELECT WARP block {
		$$ = MK(N_ELECT, @$);
		$$->op = 1;
		$$->a = $3;
	}
	| MMA postfix '=' postfix '@' postfix attrs ';' {
		$$ = MK(N_MMA, @$);
		$$->op = '=';
		$$->a = $2;
		$$->b = $4;
		$$->c = $6;
		$$->attrs = $7;
	}
	| MMA postfix OPASSIGN postfix '@' postfix attrs ';' {
		$$ = MK(N_MMA, @$);
		$$->op = (uint16_t)$3;
		$$->a = $2;
		$$->b = $4;
		$$->c = $6;
		$$->attrs = $7;
	}
	| OPWORD ';' {
		$$ = MK(N_OP, @$);
		$$->op = (uint16_t)$1;
		$$->nspan = @1;
	}
	| OPWORD exprlist attrs ';' {
		$$ = MK(N_OP, @$);
		$$->op = (uint16_t)$1;
		$$->nspan = @1;
		$$->kids = $2;
		$$->attrs = $3;
	}
	| expr ';' {
		$$ = MK(N_EXPRSTMT, @$);
		$$->a = $1;
	}
	| block
	| error ';'	{ $$ = NULL; }
	;

opt_else
	: %empty		{ $$ = NULL; }
	| ELSE block	{ $$ = $2; }
	| ELSE stmt_if	{ $$ = $2; }
	;

stmt_if
	: IF bexpr block opt_else {
		$$ = MK(N_IF, @$);
		$$->a = $2;
		$$->b = $3;
		$$->c = $4;
	}
	;

sif_selse
	: %empty		{ $$ = NULL; }
	| ELSE block	{ $$ = $2; }
	| ELSE STATIC IF bexpr block sif_selse {
		$$ = MK(N_SIF, span_join(@2, @6));
		$$->a = $4;
		$$->b = $5;
		$$->c = $6;
	}
	;

expr
	: bexpr
	| bexpr DOTDOT bexpr {
		$$ = MK(N_RANGE, @$);
		$$->a = $1;
		$$->b = $3;
	}
	| bexpr DOTDOT bexpr STEP bexpr {
		$$ = MK(N_RANGE, @$);
		$$->a = $1;
		$$->b = $3;
		$$->c = $5;
	}
	| bexpr ARROW bexpr {
		$$ = MK(N_ARROW, @$);
		$$->a = $1;
		$$->b = $3;
	}
	;

bexpr
	: postfix
	| '-' bexpr %prec UNARY	{ $$ = un(ls, '-', $2, @$); }
	| '!' bexpr %prec UNARY	{ $$ = un(ls, '!', $2, @$); }
	| '~' bexpr %prec UNARY	{ $$ = un(ls, '~', $2, @$); }
	| bexpr '+' bexpr		{ $$ = bin(ls, '+', $1, $3, @$); }
	| bexpr '-' bexpr		{ $$ = bin(ls, '-', $1, $3, @$); }
	| bexpr '*' bexpr		{ $$ = bin(ls, '*', $1, $3, @$); }
	| bexpr '/' bexpr		{ $$ = bin(ls, '/', $1, $3, @$); }
	| bexpr '%' bexpr		{ $$ = bin(ls, '%', $1, $3, @$); }
	| bexpr '&' bexpr		{ $$ = bin(ls, '&', $1, $3, @$); }
	| bexpr '|' bexpr		{ $$ = bin(ls, '|', $1, $3, @$); }
	| bexpr '^' bexpr		{ $$ = bin(ls, '^', $1, $3, @$); }
	| bexpr '<' bexpr		{ $$ = bin(ls, '<', $1, $3, @$); }
	| bexpr '>' bexpr		{ $$ = bin(ls, '>', $1, $3, @$); }
	| bexpr T_LE bexpr		{ $$ = bin(ls, B_LE, $1, $3, @$); }
	| bexpr T_GE bexpr		{ $$ = bin(ls, B_GE, $1, $3, @$); }
	| bexpr T_EQ bexpr		{ $$ = bin(ls, B_EQ, $1, $3, @$); }
	| bexpr T_NE bexpr		{ $$ = bin(ls, B_NE, $1, $3, @$); }
	| bexpr T_SHL bexpr		{ $$ = bin(ls, B_SHL, $1, $3, @$); }
	| bexpr T_SHR bexpr		{ $$ = bin(ls, B_SHR, $1, $3, @$); }
	| bexpr T_ANDAND bexpr	{ $$ = bin(ls, B_ANDAND, $1, $3, @$); }
	| bexpr T_OROR bexpr		{ $$ = bin(ls, B_OROR, $1, $3, @$); }
	| bexpr '?' bexpr ':' bexpr {
		$$ = MK(N_TERNARY, @$);
		$$->a = $1;
		$$->b = $3;
		$$->c = $5;
	}
	;

postfix
	: primary
	| postfix '[' exprlist ']' {
		$$ = MK(N_INDEX, @$);
		$$->a = $1;
		$$->kids = $3;
	}
	| postfix '.' IDENT {
		$$ = MK(N_FIELD, @$);
		$$->a = $1;
		$$->name = $3;
		$$->nspan = @3;
	}
	| postfix '(' ')' {
		$$ = MK(N_CALL, @$);
		$$->a = $1;
	}
	| postfix '(' callargs ')' {
		$$ = MK(N_CALL, @$);
		$$->a = $1;
		$$->kids = $3;
	}
	;

primary
	: INTLIT	{ $$ = MK(N_INT, @$); $$->ival = $1; }
	| FLOATLIT	{ $$ = MK(N_FLOAT, @$); $$->fval = $1; }
	| BOOLLIT	{ $$ = MK(N_BOOL, @$); $$->ival = $1; }
	| IDENT	{ $$ = MK(N_NAME, @$); $$->name = $1; $$->nspan = @$; }
	| WARP {
		$$ = MK(N_NAME, @$);
		$$->name = intern_cstr(CTX->strs, "warp");
		$$->nspan = @$;
	}
	| TILES	{ $$ = MK(N_TILES, @$); }
	| '(' exprlist ')' {
		if ($2.n == 1) {
			$$ = $2.v[0];
		} else {
			$$ = listnode(ls, N_TUPLE, $2, @$);
		}
	}
	| '[' exprlist ']'	{ $$ = listnode(ls, N_TUPLE, $2, @$); }
	;

exprlist
	: expr		{ $$ = one(ls, $1); }
	| exprlist ',' expr	{ $$ = $1; nodelist_push(CTX, &$$, $3); }
	;

callargs
	: callarg		{ $$ = one(ls, $1); }
	| callargs ',' callarg { $$ = $1; nodelist_push(CTX, &$$, $3); }
	;

callarg
	: expr
	| IDENT '=' expr {
		$$ = MK(N_NAMEDARG, @$);
		$$->name = $1;
		$$->nspan = @1;
		$$->a = $3;
	}
	;

%%

static void
tokname(Buf *b, const char *name)
{
	size_t n = strlen(name);

	if (n >= 2 && name[0] == '"' && name[n - 1] == '"')
		buf_putn(b, name + 1, n - 2);
	else
		buf_puts(b, name);
}

/* A keyword where a name is expected: the token is a word of the
 * language (a declaration, statement or operation keyword). */
static bool
reserved_word(yysymbol_kind_t la, const char *t, uint32_t len)
{
	if (la == YYSYMBOL_IDENT || la == YYSYMBOL_YYEOF || !len || len > 24)
		return false;
	if (!(t[0] == '_' || (t[0] >= 'a' && t[0] <= 'z') ||
	    (t[0] >= 'A' && t[0] <= 'Z')))
		return false;
	for (uint32_t i = 1; i < len; i++)
		if (!(t[i] == '_' || (t[i] >= 'a' && t[i] <= 'z') ||
		    (t[i] >= 'A' && t[i] <= 'Z') || (t[i] >= '0' && t[i] <= '9')))
			return false;
	return true;
}

static int
yyreport_syntax_error(const yypcontext_t *pc, struct LexState *ls,
	void *scanner, Node **root)
{
	yysymbol_kind_t exp[7];
	yysymbol_kind_t la = yypcontext_token(pc);
	Span sp = *yypcontext_location(pc);
	int n = yypcontext_expected_tokens(pc, exp, COUNT(exp));
	Buf b;

	(void)scanner;
	(void)root;
	if (ls->stop)
		return 0;
	buf_init(&b, &ls->ctx->scratch);
	/* 'cta' is also an attribute's name ('arrive B cta=R'): where any
	 * attribute may come, 'identifier' says it */
	int has_id = 0;
	for (int i = 0; i < n; i++)
		has_id |= exp[i] == YYSYMBOL_IDENT;
	if (has_id) {
		int k = 0;
		for (int i = 0; i < n; i++)
			if (exp[i] != YYSYMBOL_DECLKW0)
				exp[k++] = exp[i];
		n = k;
	}
	/* only a name would do: a keyword there is a name misspelt as one
	 * (with other choices, a missing ';' before a keyword is likelier) */
	if (n == 1 && exp[0] == YYSYMBOL_IDENT &&
	    reserved_word(la, ls->src->text + (sp.lo - ls->src->base),
	    sp.hi - sp.lo)) {
		int len = (int)(sp.hi - sp.lo);
		const char *t = ls->src->text + (sp.lo - ls->src->base);
		diag_error(ls->ctx, sp, "expected identifier, found reserved "
			"word '%.*s'; rename it, e.g. '%.*s_p'", len, t, len, t);
		return 0;
	}
	if (n > 0 && n <= 6) {
		buf_puts(&b, "expected ");
		for (int i = 0; i < n; i++) {
			if (i)
				buf_puts(&b, i == n - 1 ? " or " : ", ");
			tokname(&b, yysymbol_name(exp[i]));
		}
		buf_puts(&b, ", found ");
	} else {
		buf_puts(&b, "unexpected ");
	}
	if (la == YYSYMBOL_YYEOF) {
		buf_puts(&b, "end of file");
	} else {
		uint32_t len = sp.hi - sp.lo;
		const char *t = ls->src->text + (sp.lo - ls->src->base);
		bool printable = true;

		for (uint32_t i = 0; i < len && i < 24; i++)
			if ((unsigned char)t[i] < 0x20 || t[i] == 0x7f)
				printable = false;
		if (printable && len <= 24)
			buf_printf(&b, "'%.*s'", (int)len, t);
		else
			tokname(&b, yysymbol_name(la));
	}
	diag_error(ls->ctx, sp, "%s", b.p);
	return 0;
}

static void
fg_yyerror(Span *sp, struct LexState *ls, void *scanner, Node **root,
	const char *msg)
{
	(void)scanner;
	(void)root;
	if (ls->stop)
		return;
	if (!strcmp(msg, "memory exhausted"))
		diag_error(ls->ctx, *sp, "the schedule is nested too deeply");
	else
		diag_error(ls->ctx, *sp, "%s", msg);
}

/* The lexer's entry points (from the generated lexer.h, which only this
 * file's neighbour may include). */
int fg_yylex_init_extra(struct LexState *, void **);
void *fg_yy_scan_bytes(const char *, int, void *);
int fg_yylex_destroy(void *);

Node *
parse_src(Ctx *ctx, const Src *src)
{
	struct LexState ls = {.ctx = ctx, .src = src, .off = src->base};
	void *scanner = NULL;
	Node *root = NULL;

	if (src->len > (size_t)INT32_MAX / 2) {
		diag_plain(ctx, D_ERROR, "the schedule is too large");
		return NULL;
	}
	fg_yylex_init_extra(&ls, &scanner);
	fg_yy_scan_bytes(src->text, (int)src->len, scanner);
	fg_yyparse(&ls, scanner, &root);
	fg_yylex_destroy(scanner);
	if (!root)
		root = node_new(ctx, N_MODULE, (Span){src->base, src->base});
	return root;
}
