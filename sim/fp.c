/* fp.c: 16-bit float conversions and the approximate functions.
 *
 * Conversions round to nearest even, as cvt.rn does; a NaN becomes the
 * canonical NaN (0x7fff), as the hardware writes it.  The .approx
 * functions are modelled by the exact function, computed in double and
 * rounded once to f32: the PTX ISA bounds the hardware's error (ex2: 2
 * ulp over the full range; lg2: 2^-22.6 absolute on [0.5, 2]; rcp: 1 ulp;
 * tanh: 2^-10.987 relative), so the simulator's results are within those
 * bounds of the GPU's, not bit-identical (docs/TARGETS.md).  .ftz
 * flushes subnormal inputs and results to sign-preserving zero. */
#include <math.h>
#include <string.h>

#include "simi.h"

float
f32_of(uint32_t bits)
{
	float f;

	memcpy(&f, &bits, 4);
	return f;
}

uint32_t
bits_of(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

float
ftz32(float x)
{
	return fpclassify(x) == FP_SUBNORMAL ? copysignf(0.0f, x) : x;
}

uint16_t
bf16_rn(float f)
{
	uint32_t u = bits_of(f);

	if ((u & 0x7fffffffu) > 0x7f800000u)
		return 0x7fff;
	u += 0x7fffu + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

float
bf16_to_f32(uint16_t h)
{
	return f32_of((uint32_t)h << 16);
}

uint16_t
f16_rn(float f)
{
	uint32_t u = bits_of(f), a = u & 0x7fffffffu;
	uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);

	if (a > 0x7f800000u)
		return 0x7fff;
	if (a >= 0x477ff000u)           /* 65520 and up round to inf */
		return sign | 0x7c00;
	if (a < 0x38800000u)            /* below 2^-14: subnormal half */
		return sign | (uint16_t)nearbyintf(f32_of(a) * 16777216.0f);
	uint32_t h = ((a >> 23) - 112) << 10 | (a & 0x7fffffu) >> 13;
	uint32_t rem = a & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
		h++;
	return sign | (uint16_t)h;
}

float
f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1f;
	uint32_t m = h & 0x3ffu;

	if (e == 0)     /* zero or subnormal: m * 2^-24 is exact */
		return copysignf((float)m / 16777216.0f, sign ? -1.0f : 1.0f);
	if (e == 31)
		return f32_of(sign | 0x7f800000u | m << 13);
	return f32_of(sign | (e + 112) << 23 | m << 13);
}

float
sim_ex2(float x, bool ftz)
{
	if (ftz)
		x = ftz32(x);
	float r = (float)exp2((double)x);
	return ftz ? ftz32(r) : r;
}

float
sim_lg2(float x)
{
	return ftz32((float)log2((double)ftz32(x)));
}

float
sim_rcp(float x)
{
	return ftz32((float)(1.0 / (double)ftz32(x)));
}

float
sim_tanh(float x)
{
	return (float)tanh((double)x);
}

/* sqrt.approx.ftz.f32 and rsqrt.approx.ftz.f32: within 2^-22.9 and
 * 2^-22.9 relative of the exact value (PTX ISA), so the exact value
 * rounded to f32 stands for them; subnormals flush to 0, sqrt of a
 * negative number is NaN, rsqrt of 0 is +inf. */
float
sim_sqrt(float x)
{
	return ftz32((float)sqrt((double)ftz32(x)));
}

float
sim_rsqrt(float x)
{
	return ftz32((float)(1.0 / sqrt((double)ftz32(x))));
}

float
sim_half(uint32_t r, int hi, int ty)
{
	uint16_t h = (uint16_t)(hi ? r >> 16 : r & 0xffff);

	return ty == TY_BF16 ? bf16_to_f32(h) : f16_to_f32(h);
}
