/* gpu_runtime.h: what the GPU tests written on libfagen share.  libfagen
 * compiles, assembles and launches; the tests need only memory, streams
 * and events of their own, from the driver loaded with dlopen (as the
 * library loads it).  Header-only; one includer per program.  gpu_open
 * exits 77 (SKIP) where there is no Hopper GPU. */
#ifndef GPU_RUNTIME_H
#define GPU_RUNTIME_H

#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fagen.h"

#define SKIP 77

static struct {
	CUresult (*Init)(unsigned);
	CUresult (*DeviceGet)(CUdevice *, int);
	CUresult (*DeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
	CUresult (*DeviceGetName)(char *, int, CUdevice);
	CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*CtxSetCurrent)(CUcontext);
	CUresult (*CtxSynchronize)(void);
	CUresult (*MemAlloc)(CUdeviceptr *, size_t);
	CUresult (*MemFree)(CUdeviceptr);
	CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
	CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
	CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);
	CUresult (*MemsetD8Async)(CUdeviceptr, unsigned char, size_t,
		CUstream);
	CUresult (*StreamCreate)(CUstream *, unsigned);
	CUresult (*StreamDestroy)(CUstream);
	CUresult (*StreamSynchronize)(CUstream);
	CUresult (*EventCreate)(CUevent *, unsigned);
	CUresult (*EventDestroy)(CUevent);
	CUresult (*EventRecord)(CUevent, CUstream);
	CUresult (*EventSynchronize)(CUevent);
	CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
	CUresult (*GetErrorString)(CUresult, const char **);
} cu;

/* A driver call that must succeed. */
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

/* A libfagen call that must succeed. */
#define FG(ctx, call) do {                                              \
	fg_status s_ = (call);                                          \
	if (s_ != FG_OK) {                                              \
		fprintf(stderr, "%s:%d: %s: %s: %s\n", __FILE__,        \
			__LINE__, #call, fg_status_name(s_),            \
			fg_errmsg(ctx));                                \
		exit(1);                                                \
	}                                                               \
} while (0)

static struct {
	int nsm;
	char name[128];
	CUcontext ctx;        /* device 0's primary context */
} gpu;

/* Load the driver, open device 0 and make its primary context (the one
 * libfagen works in) current; SKIP without a Hopper GPU.  Another thread
 * makes gpu.ctx current itself before its own driver calls. */
static inline void
gpu_open(void)
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
		{(void **)&cu.DevicePrimaryCtxRetain,
			"cuDevicePrimaryCtxRetain"},
		{(void **)&cu.CtxSetCurrent, "cuCtxSetCurrent"},
		{(void **)&cu.CtxSynchronize, "cuCtxSynchronize"},
		{(void **)&cu.MemAlloc, "cuMemAlloc_v2"},
		{(void **)&cu.MemFree, "cuMemFree_v2"},
		{(void **)&cu.MemcpyHtoD, "cuMemcpyHtoD_v2"},
		{(void **)&cu.MemcpyDtoH, "cuMemcpyDtoH_v2"},
		{(void **)&cu.MemsetD8, "cuMemsetD8_v2"},
		{(void **)&cu.MemsetD8Async, "cuMemsetD8Async"},
		{(void **)&cu.StreamCreate, "cuStreamCreate"},
		{(void **)&cu.StreamDestroy, "cuStreamDestroy_v2"},
		{(void **)&cu.StreamSynchronize, "cuStreamSynchronize"},
		{(void **)&cu.EventCreate, "cuEventCreate"},
		{(void **)&cu.EventDestroy, "cuEventDestroy_v2"},
		{(void **)&cu.EventRecord, "cuEventRecord"},
		{(void **)&cu.EventSynchronize, "cuEventSynchronize"},
		{(void **)&cu.EventElapsedTime, "cuEventElapsedTime_v2"},
		{(void **)&cu.GetErrorString, "cuGetErrorString"},
	};
	CUdevice dev;
	int major;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (!h) {
		printf("no CUDA driver (%s): skipping\n", dlerror());
		exit(SKIP);
	}
	for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++)
		if (!(*syms[i].fn = dlsym(h, syms[i].name))) {
			fprintf(stderr, "libcuda lacks %s\n", syms[i].name);
			exit(1);
		}
	if (cu.Init(0) != CUDA_SUCCESS) {
		puts("cuInit failed: skipping");
		exit(SKIP);
	}
	CK(cu.DeviceGet(&dev, 0));
	CK(cu.DeviceGetAttribute(&major,
		CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
	CK(cu.DeviceGetAttribute(&gpu.nsm,
		CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
	CK(cu.DeviceGetName(gpu.name, sizeof gpu.name, dev));
	if (major != 9) {
		printf("%s is not a Hopper GPU: skipping\n", gpu.name);
		exit(SKIP);
	}
	printf("device: %s (%d SMs)\n", gpu.name, gpu.nsm);
	CK(cu.DevicePrimaryCtxRetain(&gpu.ctx, dev));
	CK(cu.CtxSetCurrent(gpu.ctx));
}

/* A schedule of the source tree; $FAGEN_SRCDIR wins, since the test may
 * run in another checkout than the one it was built in. */
static inline const char *
gpu_src(const char *rel)
{
	static char path[4096];
	const char *root = getenv("FAGEN_SRCDIR");

	snprintf(path, sizeof path, "%s/%s", root ? root : FAGEN_SRCDIR, rel);
	return path;
}

static inline double
gpu_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static uint64_t gpu_rng = 0x9e3779b97f4a7c15ull;

static inline uint16_t
gpu_rand16(void)
{
	gpu_rng ^= gpu_rng << 13;
	gpu_rng ^= gpu_rng >> 7;
	gpu_rng ^= gpu_rng << 17;
	return (uint16_t)(gpu_rng >> 24);
}

#endif
