/* lexstate.h: state shared by the lexer and the parser driver. */
#ifndef LEXSTATE_H
#define LEXSTATE_H

struct LexState {
	Ctx *ctx;
	const Src *src;    /* the text being read */
	uint32_t off;      /* Span offset of the next token */
	uint32_t cstart;   /* where the open comment began */
	int depth;         /* bracket nesting */
	int nbad;          /* bad bytes reported */
	bool stop;         /* nesting limit hit: end the parse quietly */
};

#endif
