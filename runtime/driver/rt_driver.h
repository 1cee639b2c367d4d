/* rt_driver.h: the runtime's driver layer (runtime/driver/).
 *
 * Takes: runtime/base (rt_base.h) and the CUDA toolkit's <cuda.h>, for its
 * types only.  Gives: the CUDA driver API, loaded with dlopen on a
 * context's first use, the device's limits, and CUresult to messages.
 * Layers above: runtime/jit, runtime/front, runtime/api.c. */
#ifndef RT_DRIVER_H
#define RT_DRIVER_H

#include <cuda.h>

#include "rt_base.h"

/* ---------------------------------------------------------------- cuda.c
 * The driver API, loaded with dlopen on first use. */
typedef struct CudaApi {
	CUresult (*Init)(unsigned);
	CUresult (*DriverGetVersion)(int *);
	CUresult (*DeviceGetCount)(int *);
	CUresult (*DeviceGet)(CUdevice *, int);
	CUresult (*DeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
	CUresult (*DeviceGetName)(char *, int, CUdevice);
	CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*DevicePrimaryCtxRelease)(CUdevice);
	CUresult (*CtxPushCurrent)(CUcontext);
	CUresult (*CtxPopCurrent)(CUcontext *);
	CUresult (*ModuleLoadDataEx)(CUmodule *, const void *, unsigned,
		CUjit_option *, void **);
	CUresult (*ModuleUnload)(CUmodule);
	CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
	CUresult (*FuncSetAttribute)(CUfunction, CUfunction_attribute, int);
	CUresult (*OccupancyMaxActiveBlocksPerMultiprocessor)(int *,
		CUfunction, int, size_t);
	CUresult (*LaunchKernelEx)(const CUlaunchConfig *, CUfunction, void **,
		void **);
	CUresult (*OccupancyMaxActiveClusters)(int *, CUfunction,
		const CUlaunchConfig *);
	CUresult (*TensorMapEncodeTiled)(CUtensorMap *, CUtensorMapDataType,
		cuuint32_t, void *, const cuuint64_t *, const cuuint64_t *,
		const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
		CUtensorMapSwizzle, CUtensorMapL2promotion,
		CUtensorMapFloatOOBfill);
	CUresult (*GetErrorName)(CUresult, const char **);
	CUresult (*GetErrorString)(CUresult, const char **);
	/* stream-ordered scratch memory (reference.c) */
	CUresult (*MemPoolCreate)(CUmemoryPool *, const CUmemPoolProps *);
	CUresult (*MemPoolDestroy)(CUmemoryPool);
	CUresult (*MemPoolSetAttribute)(CUmemoryPool, CUmemPool_attribute,
		void *);
	CUresult (*MemAllocFromPoolAsync)(CUdeviceptr *, size_t,
		CUmemoryPool, CUstream);
	CUresult (*MemFreeAsync)(CUdeviceptr, CUstream);
	/* zeroing the rows of partial sums no CTA writes (rows.c), and the
	 * backward's DQSEM counters (backward.c) */
	CUresult (*MemsetD32Async)(CUdeviceptr, unsigned, size_t, CUstream);
	/* fg_attention_decode's validate: its tables read on the host, and
	 * refused under graph capture (decode_run.c) */
	CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
	CUresult (*StreamSynchronize)(CUstream);
	CUresult (*StreamIsCapturing)(CUstream, CUstreamCaptureStatus *);
} CudaApi;

struct Driver {
	void *lib;
	CudaApi cu;
	fg_status status;     /* of the first attempt: it is not retried */
	char *why;            /* its message when status != FG_OK */
	CUdevice dev;
	CUcontext pctx;       /* the device's primary context, retained */
	int cc_major, cc_minor, nsm;
	int tcc;              /* the target the schedules are built for, as
			       * a compute capability: 80 (any 8.x device,
			       * or sm_80 asked for), 90, 100, else the
			       * device's own (which no schedule has) */
	int smem_optin;       /* max dynamic shared memory per block */
	int version;          /* cuDriverGetVersion */
	char name[128];       /* the device's */
};

fg_status cuda_get(fg_ctx *, Driver **);  /* load on first use */
/* FG_OK for CUDA_SUCCESS, else FG_ERR_CUDA with "what: CUDA_ERROR_X
 * (its text)" and a hint for the errors of a missing GPU, an old driver
 * or the toolkit's stub library; "CUDA error N" for a code the driver
 * does not name. */
fg_status cuda_check(fg_ctx *, const Driver *, CUresult, const char *what);
void cuda_free(fg_ctx *);

/* ---------------------------------------------------------------- sim.c
 * The same table backed by libfgsim: a simulated device of compute
 * capability cc / 10 (90: sm_90a, 100: sm_100a) whose memory is the
 * host's, for a context with fg_ctx.sim set. */
void simdrv_api(CudaApi *, int cc);

#endif
