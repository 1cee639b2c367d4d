/* cuda_dl.h: the CUDA driver calls the examples make (memory, copies,
 * streams, events), loaded with dlopen the way libfagen loads the driver:
 * $FAGEN_DRIVER_LIB, else libcuda.so.1.  So the examples link without
 * libcuda (-ldl suffices) and start on a machine without a driver, where
 * they stop with a message and exit status 1.  Header-only, one includer
 * per program; <cuda.h> gives the types only.
 *
 * The examples' exit status: 0 the results are right; 1 an error stopped
 * the run (no driver, no usable GPU, or a CUDA or libfagen call failed:
 * standard error says which, with libfagen's status name); 2 the run
 * finished but its results are wrong. */
#ifndef CUDA_DL_H
#define CUDA_DL_H

#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "fagen.h"

enum { EXIT_ERROR = 1, EXIT_WRONG = 2 };

static struct {
	CUresult (*Init)(unsigned);
	CUresult (*DeviceGet)(CUdevice *, int);
	CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*CtxSetCurrent)(CUcontext);
	CUresult (*CtxSynchronize)(void);
	CUresult (*StreamCreate)(CUstream *, unsigned);
	CUresult (*StreamSynchronize)(CUstream);
	CUresult (*StreamWaitEvent)(CUstream, CUevent, unsigned);
	CUresult (*MemAlloc)(CUdeviceptr *, size_t);
	CUresult (*MemHostAlloc)(void **, size_t, unsigned);
	CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);
	CUresult (*MemsetD16)(CUdeviceptr, unsigned short, size_t);
	CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
	CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
	CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t,
		CUstream);
	CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
	CUresult (*EventCreate)(CUevent *, unsigned);
	CUresult (*EventRecord)(CUevent, CUstream);
	CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
	CUresult (*GetErrorName)(CUresult, const char **);
} cu;

/* Say why a driver call failed, and exit 1. */
static void
cu_fail(const char *call, CUresult r)
{
	const char *name = NULL;

	if (!cu.GetErrorName || cu.GetErrorName(r, &name) != CUDA_SUCCESS)
		name = NULL;
	if (name)
		fprintf(stderr, "%s: %s\n", call, name);
	else
		fprintf(stderr, "%s: CUDA error %d\n", call, (int)r);
	exit(EXIT_ERROR);
}

/* A driver call that must succeed. */
#define CU(call) do {                                                   \
	CUresult r_ = (call);                                           \
	if (r_ != CUDA_SUCCESS)                                         \
		cu_fail(#call, r_);                                     \
} while (0)

/* A libfagen call that must succeed: its status and fg_errmsg. */
#define FG(ctx, call) do {                                              \
	fg_status s_ = (call);                                          \
	if (s_ != FG_OK) {                                              \
		fprintf(stderr, "%s: %s: %s\n", #call,                  \
			fg_status_name(s_), fg_errmsg(ctx));            \
		exit(EXIT_ERROR);                                       \
	}                                                               \
} while (0)

/* Ask libfagen to open ctx's device (fg_ctx_open: device 0 by default);
 * without a driver or a usable GPU print its status and message
 * ("FG_ERR_NO_DRIVER: ...", "FG_ERR_NO_DEVICE: ...") and exit 1.  Then
 * load the driver's functions for this program and make device 0's
 * primary context (the one libfagen works in) current. */
static void
cu_open(fg_ctx *ctx)
{
	const char *env = getenv("FAGEN_DRIVER_LIB");
	const char *lib = env && env[0] ? env : "libcuda.so.1";
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	const struct {
		void **fn;
		const char *name;
	} syms[] = {
		{(void **)&cu.Init, "cuInit"},
		{(void **)&cu.DeviceGet, "cuDeviceGet"},
		{(void **)&cu.DevicePrimaryCtxRetain,
			"cuDevicePrimaryCtxRetain"},
		{(void **)&cu.CtxSetCurrent, "cuCtxSetCurrent"},
		{(void **)&cu.CtxSynchronize, "cuCtxSynchronize"},
		{(void **)&cu.StreamCreate, "cuStreamCreate"},
		{(void **)&cu.StreamSynchronize, "cuStreamSynchronize"},
		{(void **)&cu.StreamWaitEvent, "cuStreamWaitEvent"},
		{(void **)&cu.MemAlloc, "cuMemAlloc_v2"},
		{(void **)&cu.MemHostAlloc, "cuMemHostAlloc"},
		{(void **)&cu.MemsetD8, "cuMemsetD8_v2"},
		{(void **)&cu.MemsetD16, "cuMemsetD16_v2"},
		{(void **)&cu.MemcpyHtoD, "cuMemcpyHtoD_v2"},
		{(void **)&cu.MemcpyDtoH, "cuMemcpyDtoH_v2"},
		{(void **)&cu.MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"},
		{(void **)&cu.MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"},
		{(void **)&cu.EventCreate, "cuEventCreate"},
		{(void **)&cu.EventRecord, "cuEventRecord"},
		{(void **)&cu.EventElapsedTime, "cuEventElapsedTime"},
		{(void **)&cu.GetErrorName, "cuGetErrorName"},
	};
	CUdevice dev;
	CUcontext pctx;
	CUresult r;
	fg_status st = fg_ctx_open(ctx);

	if (st != FG_OK) {
		fprintf(stderr, "%s: %s\n", fg_status_name(st), fg_errmsg(ctx));
		exit(EXIT_ERROR);
	}
	if (!h) {
		fprintf(stderr, "%s: cannot load the CUDA driver (%s): %s\n",
			fg_status_name(FG_ERR_NO_DRIVER), lib, dlerror());
		exit(EXIT_ERROR);
	}
	for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++)
		if (!(*syms[i].fn = dlsym(h, syms[i].name))) {
			fprintf(stderr, "%s: the CUDA driver (%s) lacks %s\n",
				fg_status_name(FG_ERR_NO_DRIVER), lib,
				syms[i].name);
			exit(EXIT_ERROR);
		}
	if ((r = cu.Init(0)) != CUDA_SUCCESS) {
		const char *name = NULL;

		if (cu.GetErrorName(r, &name) != CUDA_SUCCESS || !name)
			name = "unknown CUDA error";
		fprintf(stderr, "%s: no usable GPU: cuInit: %s (%d)\n",
			fg_status_name(FG_ERR_NO_DEVICE), name, (int)r);
		exit(EXIT_ERROR);
	}
	CU(cu.DeviceGet(&dev, 0));
	CU(cu.DevicePrimaryCtxRetain(&pctx, dev));
	CU(cu.CtxSetCurrent(pctx));
}

#endif
