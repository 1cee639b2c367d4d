/* gpu_test.h: what the GPU test programs share until they move onto
 * libfagen: the driver loaded with dlopen, a CHECK macro, and an
 * in-process compile with -D overrides.  Header-only; one includer per
 * program. */
#ifndef GPU_TEST_H
#define GPU_TEST_H

#include <cuda.h>
#include <dlfcn.h>
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
		fputs(b.p, stderr);
		exit(1);
	}
	*smem = ctx.kern->smem_bytes;
	char *ptx = strdup(ctx.out.p);
	ctx_free(&ctx);
	return ptx;
}


#endif
