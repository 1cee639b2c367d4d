/* sim.c: the driver table (CudaApi) backed by libfgsim, for a context in
 * simulator mode (FAGEN_SIM, fg_options.sim; docs/TARGETS.md, "The
 * simulator"): a user without the GPU runs any fagen kernel on the CPU
 * to debug its numerics and hangs.
 *
 * The simulated device is an sm_90a (compute capability 9.0, 132 SMs) or
 * sm_100a (10.0, 148 SMs) whose memory is the host's: a device pointer
 * is a host pointer, pool allocations are aligned malloc, memset and
 * memcpy act on host memory, and streams are synchronous, so a launch
 * has finished when cuLaunchKernelEx returns.  Modules take fagen's PTX
 * only (kernel.c hands it over unassembled).  Each launch gets a Sim of
 * its own that reaches the extents the kernel's metadata declares for
 * its globals and tensor maps (sim_launch_raw), so an access outside
 * them is an error, not a stray write into the process.
 *
 * Which device: the CUdevice is the compute capability times ten, set by
 * the DeviceGet of the target's table, so the table needs no state.  A
 * failure's text (a hang report, an access out of bounds, an instruction
 * not modelled) is kept per thread, as the driver keeps its errors, and
 * cuGetErrorString returns it, so cuda_check's message carries it. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_driver.h"
#include "sim.h"

enum { MSG = 16384 };

/* The calling thread's last failure, for cuGetErrorString. */
static _Thread_local char last[MSG];

/* A module: one kernel. */
typedef struct SimFn {
	SimMod *m;
} SimFn;

static CUresult
fail(CUresult r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static CUresult
fail(CUresult r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last, sizeof last, fmt, ap);
	va_end(ap);
	return r;
}

static CUresult
init(unsigned flags)
{
	(void)flags;
	return CUDA_SUCCESS;
}

static CUresult
driver_version(int *v)
{
	*v = 12080;  /* the version whose PTX 8.6 fagen writes */
	return CUDA_SUCCESS;
}

static CUresult
device_count(int *n)
{
	*n = 1;
	return CUDA_SUCCESS;
}

static CUresult
device_get90(CUdevice *d, int ordinal)
{
	*d = 90;
	return ordinal == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

static CUresult
device_get100(CUdevice *d, int ordinal)
{
	*d = 100;
	return ordinal == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

static CUresult
device_get120(CUdevice *d, int ordinal)
{
	*d = 120;
	return ordinal == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

static CUresult
device_attribute(int *v, CUdevice_attribute a, CUdevice d)
{
	switch (a) {
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
		*v = d / 10;
		break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
		*v = d % 10;
		break;
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
		/* B200, RTX PRO 6000, H100 SXM */
		*v = d == 100 ? 148 : d == 120 ? 188 : 132;
		break;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
		*v = d == 120 ? 99 * 1024 : 227 * 1024;
		break;
	default:
		return fail(CUDA_ERROR_NOT_SUPPORTED, "the simulator does not "
			"answer device attribute %d", (int)a);
	}
	return CUDA_SUCCESS;
}

static CUresult
device_name(char *name, int n, CUdevice d)
{
	snprintf(name, (size_t)n, "fagen simulator (sm_%da)", d);
	return CUDA_SUCCESS;
}

/* One primary context, never current in any sense that matters: every
 * call below finds what it needs in its arguments. */
static CUresult
ctx_retain(CUcontext *c, CUdevice d)
{
	static const char primary;

	(void)d;
	*c = (CUcontext)(uintptr_t)&primary;
	return CUDA_SUCCESS;
}

static CUresult
ctx_release(CUdevice d)
{
	(void)d;
	return CUDA_SUCCESS;
}

static CUresult
ctx_push(CUcontext c)
{
	(void)c;
	return CUDA_SUCCESS;
}

static CUresult
ctx_pop(CUcontext *c)
{
	if (c)
		*c = NULL;
	return CUDA_SUCCESS;
}

/* The error log option of the driver's JIT, where kernel.c looks. */
static void
jit_log(unsigned n, const CUjit_option *o, void **v, const char *msg)
{
	char *buf = NULL;
	size_t len = 0;

	for (unsigned i = 0; i < n; i++)
		if (o[i] == CU_JIT_ERROR_LOG_BUFFER)
			buf = v[i];
		else if (o[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
			len = (size_t)(uintptr_t)v[i];
	if (buf && len)
		snprintf(buf, len, "%s", msg);
}

static CUresult
module_load(CUmodule *mod, const void *image, unsigned n, CUjit_option *o,
	void **v)
{
	const char *ptx = image;
	char err[1024];
	SimFn *f;

	if (!memcmp(ptx, "\177ELF", 4)) {
		jit_log(n, o, v, "the simulator runs PTX, not a cubin");
		return fail(CUDA_ERROR_INVALID_IMAGE, "the simulator runs "
			"fagen's PTX, not a cubin");
	}
	if (!(f = calloc(1, sizeof *f)))
		return fail(CUDA_ERROR_OUT_OF_MEMORY, "out of memory");
	if (!(f->m = sim_load(ptx, strlen(ptx), err, sizeof err))) {
		free(f);
		jit_log(n, o, v, err);
		return fail(CUDA_ERROR_INVALID_PTX, "%s", err);
	}
	*mod = (CUmodule)f;
	return CUDA_SUCCESS;
}

static CUresult
module_unload(CUmodule mod)
{
	SimFn *f = (SimFn *)mod;

	if (f) {
		sim_mod_free(f->m);
		free(f);
	}
	return CUDA_SUCCESS;
}

static CUresult
module_function(CUfunction *fn, CUmodule mod, const char *name)
{
	SimFn *f = (SimFn *)mod;

	if (strcmp(sim_meta(f->m)->name, name))
		return fail(CUDA_ERROR_NOT_FOUND, "the module's kernel is "
			"'%s', not '%s'", sim_meta(f->m)->name, name);
	*fn = (CUfunction)f;
	return CUDA_SUCCESS;
}

static CUresult
func_attribute(CUfunction fn, CUfunction_attribute a, int v)
{
	(void)fn;
	(void)a;
	(void)v;
	return CUDA_SUCCESS;
}

/* The simulator runs CTAs one after another: one resident per SM is
 * all a kernel may count on there. */
static CUresult
occupancy(int *n, CUfunction fn, int threads, size_t smem)
{
	(void)fn;
	(void)threads;
	(void)smem;
	*n = 1;
	return CUDA_SUCCESS;
}

/* The simulator runs a cluster at a time: one fits. */
static CUresult
occupancy_clusters(int *n, CUfunction fn, const CUlaunchConfig *cfg)
{
	(void)fn;
	(void)cfg;
	*n = 1;
	return CUDA_SUCCESS;
}

/* After a failed launch: what to do about it. */
static const char *
hint(const char *msg)
{
	if (strstr(msg, "hang in"))
		return "the schedule waits on a barrier that nothing "
			"completes; the report names each warp's wait";
	if (strstr(msg, "outside every buffer"))
		return "an access outside the extents the kernel's metadata "
			"declares for its globals and tensor maps";
	if (strstr(msg, "not modelled"))
		return "the simulator does not model it yet; run the kernel on "
			"a GPU";
	return "docs/TARGETS.md, \"The simulator\"";
}

static CUresult
launch(const CUlaunchConfig *cfg, CUfunction fn, void **params,
	void **extra)
{
	const SimFn *f = (const SimFn *)fn;
	unsigned grid[3] = {cfg->gridDimX, cfg->gridDimY, cfg->gridDimZ};
	unsigned cluster[3] = {1, 1, 1};
	Sim *s;

	if (extra)
		return fail(CUDA_ERROR_NOT_SUPPORTED, "the simulator takes "
			"kernel parameters, not 'extra'");
	if (cfg->blockDimY != 1 || cfg->blockDimZ != 1)
		return fail(CUDA_ERROR_NOT_SUPPORTED, "the simulator runs "
			"blocks of (threads, 1, 1)");
	for (unsigned i = 0; i < cfg->numAttrs; i++)
		if (cfg->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
			cluster[0] = cfg->attrs[i].value.clusterDim.x;
			cluster[1] = cfg->attrs[i].value.clusterDim.y;
			cluster[2] = cfg->attrs[i].value.clusterDim.z;
		}
	if (!(s = sim_new()))
		return fail(CUDA_ERROR_OUT_OF_MEMORY, "out of memory");
	int rc = sim_launch_raw(s, f->m, params, grid, cfg->blockDimX,
		cluster, cfg->sharedMemBytes);
	const char *e = sim_error(s);
	int n = (int)strlen(e);
	while (n > 0 && e[n - 1] == '\n')   /* a hang report's last line */
		n--;
	CUresult r = rc ? fail(CUDA_ERROR_LAUNCH_FAILED, "the simulator: "
		"%.*s\nhint: %s", n, e, hint(e)) : CUDA_SUCCESS;
	sim_free(s);
	return r;
}

static int
dtype_bytes(CUtensorMapDataType t)
{
	switch (t) {
	case CU_TENSOR_MAP_DATA_TYPE_UINT8:
		return 1;
	case CU_TENSOR_MAP_DATA_TYPE_UINT16:
	case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
	case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16:
		return 2;
	case CU_TENSOR_MAP_DATA_TYPE_UINT32:
	case CU_TENSOR_MAP_DATA_TYPE_INT32:
	case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
	case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ:
		return 4;
	case CU_TENSOR_MAP_DATA_TYPE_UINT64:
	case CU_TENSOR_MAP_DATA_TYPE_INT64:
	case CU_TENSOR_MAP_DATA_TYPE_FLOAT64:
		return 8;
	default:
		return 0;
	}
}

static CUresult
tmap_encode(CUtensorMap *map, CUtensorMapDataType dt, cuuint32_t rank,
	void *addr, const cuuint64_t *dim, const cuuint64_t *stride,
	const cuuint32_t *box, const cuuint32_t *estride,
	CUtensorMapInterleave il, CUtensorMapSwizzle sw,
	CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob)
{
	static const int swz[] = {
		[CU_TENSOR_MAP_SWIZZLE_NONE] = 0,
		[CU_TENSOR_MAP_SWIZZLE_32B] = 32,
		[CU_TENSOR_MAP_SWIZZLE_64B] = 64,
		[CU_TENSOR_MAP_SWIZZLE_128B] = 128,
	};
	uint64_t d[SIM_MAXRANK], st[SIM_MAXRANK];
	uint32_t b[SIM_MAXRANK];

	(void)l2;
	if (rank < 1 || rank > SIM_MAXRANK || il !=
	    CU_TENSOR_MAP_INTERLEAVE_NONE || (unsigned)sw >= 4)
		return fail(CUDA_ERROR_INVALID_VALUE, "a tensor map of rank "
			"%u, interleave %d, swizzle %d is not modelled", rank,
			(int)il, (int)sw);
	for (cuuint32_t i = 0; i < rank; i++) {
		if (estride[i] != 1)
			return fail(CUDA_ERROR_INVALID_VALUE, "element strides "
				"other than 1 are not modelled");
		d[i] = dim[i];
		b[i] = box[i];
		if (i + 1 < rank)
			st[i] = stride[i];
	}
	if (!sim_tmap_encode(map, (uint64_t)(uintptr_t)addr, (int)rank,
	    dtype_bytes(dt), d, st, b, swz[sw],
	    oob == CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA))
		return fail(CUDA_ERROR_INVALID_VALUE, "cuTensorMapEncodeTiled: "
			"a field out of range (address and strides 16-byte "
			"multiples, box extents 1 to 256)");
	return CUDA_SUCCESS;
}

static const struct {
	CUresult r;
	const char *name;
} names[] = {
	{CUDA_SUCCESS, "CUDA_SUCCESS"},
	{CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE"},
	{CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY"},
	{CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE"},
	{CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE"},
	{CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX"},
	{CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND"},
	{CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED"},
	{CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED"},
};

static CUresult
error_name(CUresult r, const char **s)
{
	for (size_t i = 0; i < COUNT(names); i++)
		if (names[i].r == r) {
			*s = names[i].name;
			return CUDA_SUCCESS;
		}
	return CUDA_ERROR_INVALID_VALUE;
}

/* The text of the calling thread's last failure: the simulator's. */
static CUresult
error_string(CUresult r, const char **s)
{
	const char *n;

	if (r == CUDA_SUCCESS)
		*s = "no error";
	else if (error_name(r, &n) == CUDA_SUCCESS)
		*s = last[0] ? last : "the simulator failed";
	else
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

static CUresult
pool_create(CUmemoryPool *p, const CUmemPoolProps *props)
{
	(void)props;
	*p = calloc(1, 64);
	return *p ? CUDA_SUCCESS : fail(CUDA_ERROR_OUT_OF_MEMORY, "out of "
		"memory");
}

static CUresult
pool_destroy(CUmemoryPool p)
{
	free(p);
	return CUDA_SUCCESS;
}

static CUresult
pool_attribute(CUmemoryPool p, CUmemPool_attribute a, void *v)
{
	(void)p;
	(void)a;
	(void)v;
	return CUDA_SUCCESS;
}

/* Scratch starts as NaN bytes, as the simulator's shared memory does,
 * so a read of what no kernel wrote shows. */
static CUresult
mem_alloc(CUdeviceptr *ptr, size_t n, CUmemoryPool p, CUstream s)
{
	size_t r = (n + 255) & ~(size_t)255;
	void *q = r >= n ? aligned_alloc(256, r ? r : 256) : NULL;

	(void)p;
	(void)s;
	if (!q)
		return fail(CUDA_ERROR_OUT_OF_MEMORY, "cannot allocate %zu "
			"bytes", n);
	memset(q, 0xff, r);
	*ptr = (CUdeviceptr)(uintptr_t)q;
	return CUDA_SUCCESS;
}

static CUresult
mem_free(CUdeviceptr p, CUstream s)
{
	(void)s;
	free((void *)(uintptr_t)p);
	return CUDA_SUCCESS;
}

static CUresult
memset32(CUdeviceptr p, unsigned v, size_t n, CUstream s)
{
	uint32_t *q = (uint32_t *)(uintptr_t)p;

	(void)s;
	for (size_t i = 0; i < n; i++)
		q[i] = v;
	return CUDA_SUCCESS;
}

static CUresult
memcpy_dtoh(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
	(void)s;
	memcpy(dst, (const void *)(uintptr_t)src, n);
	return CUDA_SUCCESS;
}

static CUresult
stream_sync(CUstream s)
{
	(void)s;
	return CUDA_SUCCESS;
}

static CUresult
stream_capturing(CUstream s, CUstreamCaptureStatus *st)
{
	(void)s;
	*st = CU_STREAM_CAPTURE_STATUS_NONE;
	return CUDA_SUCCESS;
}

void
simdrv_api(CudaApi *cu, int cc)
{
	*cu = (CudaApi){
		.Init = init,
		.DriverGetVersion = driver_version,
		.DeviceGetCount = device_count,
		.DeviceGet = cc == 100 ? device_get100 : cc == 120 ?
			device_get120 : device_get90,
		.DeviceGetAttribute = device_attribute,
		.DeviceGetName = device_name,
		.DevicePrimaryCtxRetain = ctx_retain,
		.DevicePrimaryCtxRelease = ctx_release,
		.CtxPushCurrent = ctx_push,
		.CtxPopCurrent = ctx_pop,
		.ModuleLoadDataEx = module_load,
		.ModuleUnload = module_unload,
		.ModuleGetFunction = module_function,
		.FuncSetAttribute = func_attribute,
		.OccupancyMaxActiveBlocksPerMultiprocessor = occupancy,
		.LaunchKernelEx = launch,
		.OccupancyMaxActiveClusters = occupancy_clusters,
		.TensorMapEncodeTiled = tmap_encode,
		.GetErrorName = error_name,
		.GetErrorString = error_string,
		.MemPoolCreate = pool_create,
		.MemPoolDestroy = pool_destroy,
		.MemPoolSetAttribute = pool_attribute,
		.MemAllocFromPoolAsync = mem_alloc,
		.MemFreeAsync = mem_free,
		.MemsetD32Async = memset32,
		.MemcpyDtoHAsync = memcpy_dtoh,
		.StreamSynchronize = stream_sync,
		.StreamIsCapturing = stream_capturing,
	};
}
