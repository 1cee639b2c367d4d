/* rows.h: what rows.c (the row kernels' checks and configuration) and
 * rows_run.c (their variants, bindings and launches) share; private to
 * the two (rt_front.h is the front's interface). */
#ifndef ROWS_H
#define ROWS_H

#include "rt_front.h"

enum {
	MAXDEFS = 12,   /* N, DT, VEC, TPR, WARPS, CL or WS and ST, and
			 * the switches */
};

/* A kind's schedule and what it takes beyond N, DT, VEC, TPR, WARPS. */
typedef struct RowKindInfo {
	const char *file;
	const char *what;      /* in messages: "fagen's RMSNorm" */
	const char *inplace;   /* "no in-place normalization" */
	unsigned defs;         /* the RF_ switches it takes */
	unsigned fixed;        /* those always on */
	bool inv_n;            /* param inv_n */
	bool eps;              /* param eps */
	bool online;           /* walks a row in chunks of N: any width */
	bool onerow;           /* a row a CTA of ONETPR threads or more */
	int clhold;            /* rows wider than a CTA: bytes of a row a
				* thread of a cluster's CTA holds at most (0:
				* no clusters) */
	bool ws;               /* takes the warp-specialized form (WSLO <
				* row bytes <= WSHI) */
} RowKindInfo;

/* A switch, in the order of the -D list. */
typedef struct RowSwitch {
	unsigned bit;
	const char *def;
	const char *why;       /* its tensors come together: why */
} RowSwitch;

extern const RowKindInfo row_kinds[];   /* by RowKind */
extern const RowSwitch row_switches[];
extern const int row_nswitches;

/* FG_ERR_INVALID with "FN: " and the message. */
fg_status rows_bad(fg_ctx *, const char *fn, const char *fmt, ...)
	FMT(3, 4);
const char *rows_dt_name(fg_dtype);
/* Bytes per element of a tensor of the problem. */
int rows_esz(const RowTensor *, const Rows *);

#endif
