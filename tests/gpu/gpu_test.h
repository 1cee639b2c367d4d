/* gpu_test.h: what the GPU test programs share until they move onto
 * libfagen: the driver loaded with dlopen, a CHECK macro, and an
 * in-process compile with -D overrides.  Header-only; one includer per
 * program. */
#ifndef GPU_TEST_H
#define GPU_TEST_H

#include <cuda.h>
#include <dlfcn.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fgc.h"

#define SKIP 77

typedef CUresult (*InitFn)(unsigned);
static struct {
	CUresult (*Init)(unsigned);
	CUresult (*DeviceGet)(CUdevice *, int);
	CUresult (*DeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
	CUresult (*DeviceGetName)(char *, int, CUdevice);
	CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*CtxSetCurrent)(CUcontext);
	CUresult (*ModuleLoadDataEx)(CUmodule *, const void *, unsigned,
		CUjit_option *, void **);
	CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
	CUresult (*FuncSetAttribute)(CUfunction, CUfunction_attribute, int);
	CUresult (*MemAlloc)(CUdeviceptr *, size_t);
	CUresult (*MemFree)(CUdeviceptr);
	CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
	CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
	CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);
	CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned,
		unsigned, unsigned, unsigned, unsigned, CUstream, void **,
		void **);
	CUresult (*CtxSynchronize)(void);
	CUresult (*TensorMapEncodeTiled)(CUtensorMap *, CUtensorMapDataType,
		cuuint32_t, void *, const cuuint64_t *, const cuuint64_t *,
		const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
		CUtensorMapSwizzle, CUtensorMapL2promotion,
		CUtensorMapFloatOOBfill);
	CUresult (*GetErrorString)(CUresult, const char **);
	CUresult (*EventCreate)(CUevent *, unsigned);
	CUresult (*EventRecord)(CUevent, CUstream);
	CUresult (*EventSynchronize)(CUevent);
	CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
} cu;

#define CK(call) do {                                                   \
	CUresult r_ = (call);                                           \
	if (r_ != CUDA_SUCCESS) {                                       \
		const char *s_ = "?";                                   \
		cu.GetErrorString(r_, &s_);                             \
		fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__,  \
			#call, s_);                                     \
		exit(1);                                                \
	}                                                               \
} while (0)

static int
load_driver(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW);
	struct {
		void **fn;
		const char *name;
	} syms[] = {
		{(void **)&cu.Init, "cuInit"},
		{(void **)&cu.DeviceGet, "cuDeviceGet"},
		{(void **)&cu.DeviceGetAttribute, "cuDeviceGetAttribute"},
		{(void **)&cu.DeviceGetName, "cuDeviceGetName"},
		{(void **)&cu.DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"},
		{(void **)&cu.CtxSetCurrent, "cuCtxSetCurrent"},
		{(void **)&cu.ModuleLoadDataEx, "cuModuleLoadDataEx"},
		{(void **)&cu.ModuleGetFunction, "cuModuleGetFunction"},
		{(void **)&cu.FuncSetAttribute, "cuFuncSetAttribute"},
		{(void **)&cu.MemAlloc, "cuMemAlloc_v2"},
		{(void **)&cu.MemFree, "cuMemFree_v2"},
		{(void **)&cu.MemcpyHtoD, "cuMemcpyHtoD_v2"},
		{(void **)&cu.MemcpyDtoH, "cuMemcpyDtoH_v2"},
		{(void **)&cu.MemsetD8, "cuMemsetD8_v2"},
		{(void **)&cu.LaunchKernel, "cuLaunchKernel"},
		{(void **)&cu.CtxSynchronize, "cuCtxSynchronize"},
		{(void **)&cu.TensorMapEncodeTiled, "cuTensorMapEncodeTiled"},
		{(void **)&cu.GetErrorString, "cuGetErrorString"},
		{(void **)&cu.EventCreate, "cuEventCreate"},
		{(void **)&cu.EventRecord, "cuEventRecord"},
		{(void **)&cu.EventSynchronize, "cuEventSynchronize"},
		{(void **)&cu.EventElapsedTime, "cuEventElapsedTime_v2"},
	};

	if (!h) {
		printf("dlopen libcuda.so.1: %s\n", dlerror());
		return -1;
	}
	for (size_t i = 0; i < COUNT(syms); i++)
		if (!(*syms[i].fn = dlsym(h, syms[i].name))) {
			fprintf(stderr, "libcuda lacks %s\n", syms[i].name);
			return -1;
		}
	return 0;
}

/* Compile options for the next compile() (gpu_hang turns the verifier
 * off and the hang diagnosis on); diagnostics land in compile_diags, and
 * compile_soft makes a failed compile return NULL instead of exiting. */
static bool compile_no_verify, compile_debug_hangs, compile_soft;
static char compile_diags[8192];

/* Compile the schedule in-process with -D overrides. */
static char *
compile(const char *path, const char *const *defs, int ndefs,
	int64_t *smem)
{
	static jmp_buf oom;
	Ctx ctx;
	FILE *f = fopen(path, "rb");
	static char text[1 << 16];
	size_t n;

	if (!f || (n = fread(text, 1, sizeof text, f)) == 0) {
		fprintf(stderr, "cannot read %s\n", path);
		exit(1);
	}
	fclose(f);
	if (setjmp(oom))
		exit(1);
	ctx_init(&ctx, arena_default_alloc, NULL, &oom);
	ctx.no_verify = compile_no_verify;
	ctx.debug_hangs = compile_debug_hangs;
	src_init(&ctx, path, text, n);
	for (int i = 0; i < ndefs; i++) {
		Define *d = NEW(&ctx.perm, Define);
		const char *eq = strchr(defs[i], '=');
		d->name = intern(ctx.strs, defs[i], (size_t)(eq - defs[i]));
		d->value = eq + 1;
		d->next = ctx.defines;
		ctx.defines = d;
	}
	if (driver_compile(&ctx, EMIT_PTX, false)) {
		Buf b;
		buf_init(&b, &ctx.perm);
		diag_render(&ctx, &b);
		snprintf(compile_diags, sizeof compile_diags, "%s", b.p);
		if (compile_soft) {
			ctx_free(&ctx);
			return NULL;
		}
		fputs(b.p, stderr);
		exit(1);
	}
	*smem = ctx.kern->smem_bytes;
	char *ptx = strdup(ctx.out.p);
	ctx_free(&ctx);
	return ptx;
}


/* Random numbers and 16-bit floats for inputs and references. */
static uint64_t rng = 0x243f6a8885a308d3ull;

__attribute__((unused)) static double
urand(void)  /* uniform in [-1, 1) */
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double)(rng >> 11) / 4503599627370496.0 - 1.0;
}

__attribute__((unused)) static uint16_t
to16(double x, bool f16)  /* round to nearest even */
{
	float f = (float)x;
	uint32_t u;
	memcpy(&u, &f, 4);
	if (!f16)
		return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
	/* f16: inputs here are small normals */
	int e = (int)((u >> 23) & 0xff) - 127 + 15;
	uint32_t m = u & 0x7fffff, s = (u >> 16) & 0x8000;
	if (e <= 0)
		return (uint16_t)s;
	uint32_t r = (m >> 13) + (((m >> 12) & 1) && ((m & 0x2fff) ||
		((m >> 13) & 1)));
	return (uint16_t)(s | (((uint32_t)e << 10) + r));
}

__attribute__((unused)) static double
from16(uint16_t h, bool f16)
{
	if (!f16) {
		uint32_t u = (uint32_t)h << 16;
		float f;
		memcpy(&f, &u, 4);
		return f;
	}
	int e = (h >> 10) & 0x1f;
	double m = h & 0x3ff;
	double v = e ? ldexp(1 + m / 1024, e - 15) : ldexp(m / 1024, -14);
	return h & 0x8000 ? -v : v;
}

#endif
