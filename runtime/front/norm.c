/* norm.c: fg_rms_norm, fg_rms_norm_backward, fg_layer_norm, fg_softmax,
 * fg_softmax_backward, fg_cross_entropy and fg_cross_entropy_backward
 * (issue #26), on the shipped schedules rmsnorm.fa, rmsnorm_bwd.fa,
 * layernorm.fa, softmax.fa, cross_entropy.fa and cross_entropy_bwd.fa.  Each describes its public struct as a RowArgs: the
 * tensors in the order they are checked, with the global each binds,
 * whether it is written, its shape (x's, [n] or a value per row) and the
 * -D switch that says it is given, the f32 [rows] stats, and the
 * backward's partial sums; then rows.c checks, configures, compiles and
 * launches, the same for all six. */
#include "rt_front.h"

/* A required tensor of x's shape. */
#define ROWT(nm, g, tp, o) \
	((RowTensor){.name = (nm), .glob = (g), .t = (tp), .out = (o)})
/* An optional one, of x's shape (RS_X) or [n] (RS_N), its -D switch
 * flag. */
#define OPTT(nm, g, tp, o, sh, fl) ((RowTensor){.name = (nm), .glob = (g), \
	.t = (tp), .out = (o), .shape = (sh), .flag = (fl)})

const RowArgs *
norm_rms(const fg_rmsnorm_args *a, RowArgs *r)
{
	*r = (RowArgs){.kind = ROW_RMS, .dtype = a->dtype, .eps = a->eps,
		.nt = 5, .nstat = 1};
	r->t[0] = ROWT("x", "X", &a->x, false);
	r->t[1] = OPTT("weight", "W", &a->weight, false, RS_N, RF_WEIGHT);
	r->t[2] = OPTT("residual", "R", &a->residual, false, RS_X, RF_RESID);
	r->t[3] = ROWT("out", "Y", &a->out, true);
	r->t[4] = OPTT("residual_out", "XO", &a->residual_out, true, RS_X,
		RF_RESID);
	r->stat[0] = (RowStat){"rstd", "RSTD", a->rstd, false, false};
	return r;
}

const RowArgs *
norm_rms_bwd(const fg_rmsnorm_bwd_args *a, RowArgs *r)
{
	*r = (RowArgs){.kind = ROW_RMS_BWD, .dtype = a->dtype, .nt = 4,
		.nstat = 1};
	r->t[0] = ROWT("x", "X", &a->x, false);
	r->t[1] = OPTT("weight", "W", &a->weight, false, RS_N, RF_WEIGHT);
	r->t[2] = ROWT("dy", "DY", &a->dy, false);
	r->t[3] = ROWT("dx", "DX", &a->dx, true);
	r->stat[0] = (RowStat){"rstd", "RSTD", a->rstd, true, true};
	r->part = (RowPart){"dw_partial", "DWP", "P", "dw_partial_rows",
		a->dw_partial, a->dw_partial_rows, RF_WEIGHT};
	return r;
}

const RowArgs *
norm_layer(const fg_layernorm_args *a, RowArgs *r)
{
	*r = (RowArgs){.kind = ROW_LAYER, .dtype = a->dtype, .eps = a->eps,
		.nt = 6, .nstat = 2};
	r->t[0] = ROWT("x", "X", &a->x, false);
	r->t[1] = OPTT("weight", "W", &a->weight, false, RS_N, RF_WEIGHT);
	r->t[2] = OPTT("bias", "B", &a->bias, false, RS_N, RF_BIAS);
	r->t[3] = OPTT("residual", "R", &a->residual, false, RS_X, RF_RESID);
	r->t[4] = ROWT("out", "Y", &a->out, true);
	r->t[5] = OPTT("residual_out", "XO", &a->residual_out, true, RS_X,
		RF_RESID);
	r->stat[0] = (RowStat){"mean", "MEAN", a->mean, false, false};
	r->stat[1] = (RowStat){"rstd", "RSTD", a->rstd, false, false};
	return r;
}

const RowArgs *
norm_softmax(const fg_softmax_args *a, RowArgs *r)
{
	*r = (RowArgs){.kind = ROW_SOFTMAX, .dtype = a->dtype, .nt = 2};
	r->t[0] = ROWT("x", "X", &a->x, false);
	r->t[1] = ROWT("out", "Y", &a->out, true);
	return r;
}

const RowArgs *
norm_softmax_bwd(const fg_softmax_bwd_args *a, RowArgs *r)
{
	*r = (RowArgs){.kind = ROW_SOFTMAX_BWD, .dtype = a->dtype, .nt = 3};
	r->t[0] = ROWT("y", "Y", &a->y, false);
	r->t[1] = ROWT("dy", "DY", &a->dy, false);
	r->t[2] = ROWT("dx", "DX", &a->dx, true);
	return r;
}

const RowArgs *
norm_xent(const fg_cross_entropy_args *a, RowArgs *r)
{
	*r = (RowArgs){.kind = ROW_XENT, .dtype = a->dtype, .nt = 2,
		.nstat = 2};
	r->t[0] = ROWT("logits", "X", &a->logits, false);
	r->t[1] = (RowTensor){.name = "target", .glob = "TGT",
		.t = &a->target, .shape = RS_OUTER, .esz = 4};
	r->stat[0] = (RowStat){"loss", "LOSS", a->loss, true, false};
	r->stat[1] = (RowStat){"lse", "LSE", a->lse, false, false};
	return r;
}

const RowArgs *
norm_xent_bwd(const fg_cross_entropy_bwd_args *a, RowArgs *r)
{
	*r = (RowArgs){.kind = ROW_XENT_BWD, .dtype = a->dtype, .nt = 3,
		.nstat = 2};
	r->t[0] = ROWT("logits", "X", &a->logits, false);
	r->t[1] = (RowTensor){.name = "target", .glob = "TGT",
		.t = &a->target, .shape = RS_OUTER, .esz = 4};
	r->t[2] = ROWT("dlogits", "DX", &a->dlogits, true);
	r->stat[0] = (RowStat){"lse", "LSE", a->lse, true, true};
	r->stat[1] = (RowStat){"dloss", "DLOSS", a->dloss, true, true};
	return r;
}

fg_status
fg_rms_norm(fg_ctx *c, const fg_rmsnorm_args *a, CUstream s)
{
	RowArgs r;

	return rows_run(c, "fg_rms_norm", a ? norm_rms(a, &r) : NULL, s);
}

fg_status
fg_rms_norm_backward(fg_ctx *c, const fg_rmsnorm_bwd_args *a, CUstream s)
{
	RowArgs r;

	return rows_run(c, "fg_rms_norm_backward", a ? norm_rms_bwd(a, &r) :
		NULL, s);
}

fg_status
fg_rms_norm_backward_partials(fg_ctx *c, const fg_rmsnorm_bwd_args *a,
	int64_t *rows)
{
	static const char fn[] = "fg_rms_norm_backward_partials";
	RowArgs r;

	if (!c)
		return FG_ERR_INVALID;
	if (!rows)
		return rt_err(c, FG_ERR_INVALID, "%s: rows is NULL", fn);
	return rows_parts(c, fn, a ? norm_rms_bwd(a, &r) : NULL, rows);
}

fg_status
fg_layer_norm(fg_ctx *c, const fg_layernorm_args *a, CUstream s)
{
	RowArgs r;

	return rows_run(c, "fg_layer_norm", a ? norm_layer(a, &r) : NULL, s);
}

fg_status
fg_softmax(fg_ctx *c, const fg_softmax_args *a, CUstream s)
{
	RowArgs r;

	return rows_run(c, "fg_softmax", a ? norm_softmax(a, &r) : NULL, s);
}

fg_status
fg_softmax_backward(fg_ctx *c, const fg_softmax_bwd_args *a, CUstream s)
{
	RowArgs r;

	return rows_run(c, "fg_softmax_backward", a ? norm_softmax_bwd(a, &r) :
		NULL, s);
}

fg_status
fg_cross_entropy(fg_ctx *c, const fg_cross_entropy_args *a, CUstream s)
{
	RowArgs r;

	return rows_run(c, "fg_cross_entropy", a ? norm_xent(a, &r) : NULL, s);
}

fg_status
fg_cross_entropy_backward(fg_ctx *c, const fg_cross_entropy_bwd_args *a,
	CUstream s)
{
	RowArgs r;

	return rows_run(c, "fg_cross_entropy_backward", a ? norm_xent_bwd(a,
		&r) : NULL, s);
}
