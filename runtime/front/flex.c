/* flex.c: programmable attention's arguments (issue #22): FlexAttention's
 * score_mod and mask_mod, given as a mod file that replaces the shipped
 * schedule's hooks (-D SCORE_MOD, MASK_MOD), with the globals it reads,
 * and its BlockMask as four int32 tensors (-D BLOCKS).  Checked here
 * before anything needs the GPU; bound after the schedule's own
 * arguments. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rt_front.h"

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

bool
flex_any(const fg_attention_args *a)
{
	return a->mods || a->score_mod || a->mask_mod || a->nmod_args ||
		a->mod_args || a->block_kv_num || a->block_kv_idx ||
		a->block_full_num || a->block_full_idx;
}

static fg_status
blocks(fg_ctx *c, const char *fn, const fg_attention_args *a)
{
	const struct {
		const char *name;
		uint64_t p;
	} t[] = {
		{"block_kv_num", a->block_kv_num},
		{"block_kv_idx", a->block_kv_idx},
		{"block_full_num", a->block_full_num},
		{"block_full_idx", a->block_full_idx},
	};
	int64_t nq = (a->seq_q + 127) / 128, nk = (a->seq_k + 127) / 128, x;

	for (size_t i = 0; i < COUNT(t); i++) {
		if (!t[i].p)
			return bad(c, fn, "%s is NULL, but not all of the "
				"block mask is: it gives all four of block_kv_num, "
				"block_kv_idx, block_full_num and block_full_idx",
				t[i].name);
		if (t[i].p % 4)
			return bad(c, fn, "%s = 0x%llx is not aligned to its "
				"int32 elements", t[i].name,
				(unsigned long long)t[i].p);
	}
	if ((a->block_batch && a->block_batch != 1 &&
	    a->block_batch != a->batch) || (a->block_heads &&
	    a->block_heads != 1 && a->block_heads != a->heads))
		return bad(c, fn, "the block mask's block_batch = %lld, "
			"block_heads = %lld: each is 0, 1 or the query's (batch "
			"%lld, heads %lld)", (long long)a->block_batch,
			(long long)a->block_heads, (long long)a->batch,
			(long long)a->heads);
	if (a->causal || a->window)
		return bad(c, fn, "a block mask with %s: write the %s as the "
			"mask_mod (and its blocks in the block mask)",
			a->causal ? "causal" : "a window", a->causal ?
			"causal mask" : "window");
	if (a->head_dim > 128)
		return rt_err(c, FG_ERR_UNSUPPORTED, "%s: block masks need "
			"head_dim 64 or 128 (128 x 128 blocks); head_dim is "
			"%lld", fn, (long long)a->head_dim);
	/* the kernel indexes block_kv_idx with 32-bit arithmetic */
	if (!ck_mul64(a->batch * a->heads, nq, &x) || !ck_mul64(x, nk, &x) ||
	    x > INT32_MAX)
		return bad(c, fn, "batch * heads * cdiv(seq_q, 128) * "
			"cdiv(seq_k, 128) block-mask entries overflow the "
			"kernel's 32-bit indexing");
	return FG_OK;
}

fg_status
flex_check(fg_ctx *c, const char *fn, const fg_attention_args *a)
{
	fg_status st;

	if (!flex_any(a))
		return FG_OK;
	if (attn_varlen(a))
		return rt_err(c, FG_ERR_UNSUPPORTED, "%s: mods and block masks "
			"are not supported with variable-length batches yet",
			fn);
	if ((a->score_mod || a->mask_mod) && !a->mods)
		return bad(c, fn, "%s is set but mods is NULL: the mod file "
			"defines the hooks", a->score_mod ? "score_mod" :
			"mask_mod");
	if (a->mods && !a->score_mod && !a->mask_mod)
		return bad(c, fn, "mods is given but neither score_mod nor "
			"mask_mod is set: say which hooks it defines");
	if (a->score_mod && (a->softcap > 0 || a->alibi_slopes))
		return bad(c, fn, "a score_mod with %s: write the %s in the "
			"score_mod", a->softcap > 0 ? "a softcap" : "ALiBi",
			a->softcap > 0 ? "softcap" : "bias");
	if (a->nmod_args < 0 || a->nmod_args > FLEX_NARGS ||
	    (a->nmod_args && !a->mod_args))
		return bad(c, fn, "nmod_args is %d with mod_args %s: give 0 "
			"to %d arguments", a->nmod_args, a->mod_args ? "set" :
			"NULL", FLEX_NARGS);
	for (int i = 0; i < a->nmod_args; i++)
		if (!a->mod_args[i].name)
			return bad(c, fn, "mod_args[%d] has no name: the mods' "
				"globals are bound by name", i);
	if (a->nmod_args && !a->mods)
		return bad(c, fn, "mod_args are given but mods is NULL");
	if ((a->block_kv_num || a->block_kv_idx || a->block_full_num ||
	    a->block_full_idx) && (st = blocks(c, fn, a)))
		return st;
	return FG_OK;
}

int
flex_bind(const fg_attention_args *a, const Attn *t, fg_arg *args, int n)
{
	if (a->mods && a->score_mod) {
		/* the hook sees s * scale; the softmax's exp2 then takes
		 * log2(e) */
		args[4] = FG_FLOAT("scale_log2", 1.4426950408889634);
		args[n++] = FG_FLOAT("sm_scale", t->scale);
	}
	if (a->block_kv_num) {
		/* the lists a batch and a head step over: none where one
		 * mask serves all */
		int64_t nq = (a->seq_q + 127) / 128;
		int64_t bh = a->block_heads ? a->block_heads : a->heads;
		int64_t lh = bh == 1 ? 0 : nq;
		int64_t lz = (a->block_batch ? a->block_batch : a->batch) ==
			1 ? 0 : bh * nq;

		args[n++] = FG_INT("LZ", (int32_t)lz);
		args[n++] = FG_INT("LH", (int32_t)lh);
		args[n++] = FG_PTR("KNUM", a->block_kv_num);
		args[n++] = FG_PTR("KIDX", a->block_kv_idx);
		args[n++] = FG_PTR("FNUM", a->block_full_num);
		args[n++] = FG_PTR("FIDX", a->block_full_idx);
	}
	for (int i = 0; a->mods && i < a->nmod_args; i++)
		args[n++] = a->mod_args[i];
	return n;
}
