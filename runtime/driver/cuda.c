/* cuda.c: the CUDA driver, loaded with dlopen when a context first needs
 * the GPU, so that a program linking libfagen starts on a machine without
 * one.  The library is $FAGEN_DRIVER_LIB, fg_options.driver_lib or
 * libcuda.so.1.  The first attempt's outcome is kept: a context without a
 * driver answers FG_ERR_NO_DRIVER at once afterwards.  A context in
 * simulator mode (fg_ctx.sim) takes sim.c's table instead and opens its
 * device through it the same way.
 *
 * A context works in its device's primary context, which it retains; the
 * calls that need it push it and pop it again, so the caller's current
 * context is left as it was.  libcuda is never dlclose'd: the driver's
 * own threads may still run its code. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_driver.h"

static bool
syms(Driver *d, char *why, size_t whylen)
{
	CudaApi *cu = &d->cu;
	struct {
		void **fn;
		const char *name;
	} tab[] = {
		{(void **)&cu->Init, "cuInit"},
		{(void **)&cu->DriverGetVersion, "cuDriverGetVersion"},
		{(void **)&cu->DeviceGetCount, "cuDeviceGetCount"},
		{(void **)&cu->DeviceGet, "cuDeviceGet"},
		{(void **)&cu->DeviceGetAttribute, "cuDeviceGetAttribute"},
		{(void **)&cu->DeviceGetName, "cuDeviceGetName"},
		{(void **)&cu->DevicePrimaryCtxRetain,
			"cuDevicePrimaryCtxRetain"},
		{(void **)&cu->DevicePrimaryCtxRelease,
			"cuDevicePrimaryCtxRelease_v2"},
		{(void **)&cu->CtxPushCurrent, "cuCtxPushCurrent_v2"},
		{(void **)&cu->CtxPopCurrent, "cuCtxPopCurrent_v2"},
		{(void **)&cu->ModuleLoadDataEx, "cuModuleLoadDataEx"},
		{(void **)&cu->ModuleUnload, "cuModuleUnload"},
		{(void **)&cu->ModuleGetFunction, "cuModuleGetFunction"},
		{(void **)&cu->FuncSetAttribute, "cuFuncSetAttribute"},
		{(void **)&cu->OccupancyMaxActiveBlocksPerMultiprocessor,
			"cuOccupancyMaxActiveBlocksPerMultiprocessor"},
		{(void **)&cu->LaunchKernelEx, "cuLaunchKernelEx"},
		{(void **)&cu->OccupancyMaxActiveClusters,
			"cuOccupancyMaxActiveClusters"},
		{(void **)&cu->TensorMapEncodeTiled, "cuTensorMapEncodeTiled"},
		{(void **)&cu->GetErrorName, "cuGetErrorName"},
		{(void **)&cu->GetErrorString, "cuGetErrorString"},
		{(void **)&cu->MemPoolCreate, "cuMemPoolCreate"},
		{(void **)&cu->MemPoolDestroy, "cuMemPoolDestroy"},
		{(void **)&cu->MemPoolSetAttribute, "cuMemPoolSetAttribute"},
		{(void **)&cu->MemAllocFromPoolAsync,
			"cuMemAllocFromPoolAsync"},
		{(void **)&cu->MemFreeAsync, "cuMemFreeAsync"},
		{(void **)&cu->MemsetD32Async, "cuMemsetD32Async"},
		{(void **)&cu->MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"},
		{(void **)&cu->StreamSynchronize, "cuStreamSynchronize"},
		{(void **)&cu->StreamIsCapturing, "cuStreamIsCapturing"},
	};

	for (size_t i = 0; i < COUNT(tab); i++)
		if (!(*tab[i].fn = dlsym(d->lib, tab[i].name))) {
			snprintf(why, whylen, "the CUDA driver lacks %s (it "
				"is older than CUDA 12.0)", tab[i].name);
			return false;
		}
	return true;
}

/* The errors a caller meets first, for drivers whose cuGetErrorName does
 * not know them (the toolkit's stub answers every call with 34), and a
 * hint at what to do about each. */
static const struct {
	CUresult r;
	const char *name, *text, *hint;
} known[] = {
	{CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable "
		"device is detected", "no GPU is visible to this process "
		"(check nvidia-smi and CUDA_VISIBLE_DEVICES)"},
	/* 35: drivers before CUDA 13 answer it; cuda.h 13 no longer
	 * names it */
	{(CUresult)35, "CUDA_ERROR_INSUFFICIENT_DRIVER",
		"CUDA driver version is insufficient for CUDA runtime version",
		"the driver is older than the CUDA toolkit: update the "
		"driver"},
	{CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE,
		"CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", "forward "
		"compatibility was attempted on non supported HW", "the "
		"driver is older than the CUDA toolkit and this GPU cannot "
		"use the forward-compatibility package: update the driver"},
	{CUDA_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a "
		"stub library", "libcuda.so.1 is the toolkit's stub library, "
		"not a driver: point FAGEN_DRIVER_LIB, fg_options.driver_lib "
		"or LD_LIBRARY_PATH at the driver's libcuda.so.1, not at "
		"lib64/stubs"},
};

/* "what: CUDA_ERROR_X (text); hint" into buf; the name and text from the
 * driver when it knows them, else from known[], else the number. */
static const char *
errname(const Driver *d, CUresult r, char *buf, size_t n)
{
	const char *name = NULL, *text = NULL, *hint = NULL;

	if (d->cu.GetErrorName && d->cu.GetErrorName(r, &name))
		name = NULL;
	if (d->cu.GetErrorString && d->cu.GetErrorString(r, &text))
		text = NULL;
	for (size_t i = 0; i < COUNT(known); i++)
		if (known[i].r == r) {
			name = name ? name : known[i].name;
			text = text ? text : known[i].text;
			hint = known[i].hint;
		}
	if (name)
		snprintf(buf, n, "%s%s%s%s%s%s", name, text ? " (" : "",
			text ? text : "", text ? ")" : "", hint ? "; " : "",
			hint ? hint : "");
	else
		snprintf(buf, n, "CUDA error %d%s%s%s", (int)r, text ? " (" :
			"", text ? text : "", text ? ")" : "");
	return buf;
}

/* Open the device: cuInit, the device's limits, its primary context.
 * The status, with a message in why. */
static fg_status
open_device(fg_ctx *c, Driver *d, char *why, size_t whylen)
{
	CudaApi *cu = &d->cu;
	char e[512];
	int n = 0;
	CUresult r;

	if ((r = cu->Init(0)) || (r = cu->DeviceGetCount(&n)) || n == 0) {
		snprintf(why, whylen, "no usable GPU: cuInit: %s", r ?
			errname(d, r, e, sizeof e) : "no devices");
		return FG_ERR_NO_DEVICE;
	}
	if (c->device >= n) {
		snprintf(why, whylen, "device %d does not exist: there %s %d",
			c->device, n == 1 ? "is" : "are", n);
		return FG_ERR_NO_DEVICE;
	}
	const struct {
		int *dst;
		CUdevice_attribute a;
	} attrs[] = {
		{&d->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR},
		{&d->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR},
		{&d->nsm, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT},
		{&d->smem_optin,
			CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN},
	};
	if ((r = cu->DeviceGet(&d->dev, c->device)))
		goto fail;
	for (size_t i = 0; i < COUNT(attrs); i++)
		if ((r = cu->DeviceGetAttribute(attrs[i].dst, attrs[i].a,
		    d->dev)))
			goto fail;
	if ((r = cu->DriverGetVersion(&d->version)) ||
	    (r = cu->DevicePrimaryCtxRetain(&d->pctx, d->dev)))
		goto fail;
	cu->DeviceGetName(d->name, sizeof d->name, d->dev);
	rt_log(c, FG_LOG_INFO, "device %d: %s, sm_%d%d, %d SMs, driver %d",
		c->device, d->name, d->cc_major, d->cc_minor, d->nsm,
		d->version);
	return FG_OK;
fail:
	d->pctx = NULL;
	snprintf(why, whylen, "device %d: %s", c->device,
		errname(d, r, e, sizeof e));
	return FG_ERR_NO_DEVICE;
}

/* d->tcc: the device's own target (8.x runs sm_80 PTX), or the one the
 * context asks for, which the device must be able to run: sm_80 from
 * 8.0 on (the driver JIT-compiles its PTX), sm_90a, sm_100a and sm_120a
 * on 9.0, 10.0 and 12.0 only. */
static fg_status
target_of(fg_ctx *c, Driver *d, char *why, size_t whylen)
{
	int cc = d->cc_major * 10 + d->cc_minor;

	d->tcc = d->cc_major == 8 ? 80 : cc;
	if (c->target < 0) {
		snprintf(why, whylen, "FAGEN_TARGET=%s: expected sm_80, sm_90a, "
			"sm_100a or sm_120a (or nothing for the device's own)",
			c->target_bad);
		return FG_ERR_INVALID;
	}
	if (!c->target)
		return FG_OK;
	if (c->target == 80 ? cc < 80 : cc != c->target) {
		snprintf(why, whylen, "target sm_%d%s asked for, but device %d "
			"(%s) is sm_%d%d and cannot run it", c->target,
			c->target == 80 ? "" : "a", c->device, d->name,
			d->cc_major, d->cc_minor);
		return FG_ERR_UNSUPPORTED;
	}
	d->tcc = c->target;
	return FG_OK;
}

static fg_status
load(fg_ctx *c, Driver *d)
{
	const char *env = getenv("FAGEN_DRIVER_LIB");
	const char *lib = c->driver_lib ? c->driver_lib : env && env[0] ? env :
		"libcuda.so.1";
	char why[768];

	if (c->sim > 0) {
		simdrv_api(&d->cu, c->sim);
		d->status = open_device(c, d, why, sizeof why);
	} else if (c->sim < 0) {
		snprintf(why, sizeof why, "FAGEN_SIM=%s: expected 1, sm_90a, "
			"sm_100a or sm_120a (or 0 or nothing for the GPU)",
			c->sim_bad);
		d->status = FG_ERR_NO_DEVICE;
	} else if (!(d->lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL))) {
		snprintf(why, sizeof why, "cannot load the CUDA driver (%s): "
			"%s", lib, dlerror());
		d->status = FG_ERR_NO_DRIVER;
	} else if (!syms(d, why, sizeof why)) {
		d->status = FG_ERR_NO_DRIVER;
	} else {
		d->status = open_device(c, d, why, sizeof why);
	}
	if (d->status == FG_OK)
		d->status = target_of(c, d, why, sizeof why);
	if (d->status != FG_OK && !(d->why = rt_strdup(c, why)))
		d->why = NULL;  /* the status alone will do */
	return d->status;
}

fg_status
cuda_get(fg_ctx *c, Driver **out)
{
	fg_status st;
	Driver *d;

	pthread_mutex_lock(&c->mu);
	if (!(d = c->drv) && (d = rt_alloc(c, sizeof *d))) {
		memset(d, 0, sizeof *d);
		load(c, d);
		c->drv = d;
	}
	pthread_mutex_unlock(&c->mu);
	if (!d)
		return rt_err(c, FG_ERR_NOMEM, "out of memory");
	if ((st = d->status) != FG_OK)
		return rt_err(c, st, "%s", d->why ? d->why :
			fg_status_name(st));
	*out = d;
	return FG_OK;
}

fg_status
cuda_check(fg_ctx *c, const Driver *d, CUresult r, const char *what)
{
	char e[16384];   /* the simulator's hang reports name every warp */

	if (r == CUDA_SUCCESS)
		return FG_OK;
	return rt_err(c, FG_ERR_CUDA, "%s: %s", what, errname(d, r, e,
		sizeof e));
}

void
cuda_free(fg_ctx *c)
{
	Driver *d = c->drv;

	if (!d)
		return;
	if (d->pctx)
		d->cu.DevicePrimaryCtxRelease(d->dev);
	rt_strfree(c, d->why);
	rt_free(c, d, sizeof *d);
	c->drv = NULL;
}
