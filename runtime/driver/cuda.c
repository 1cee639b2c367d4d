/* cuda.c: the CUDA driver, loaded with dlopen when a context first needs
 * the GPU, so that a program linking libfagen starts on a machine without
 * one.  The library is $FAGEN_DRIVER_LIB, fg_options.driver_lib or
 * libcuda.so.1.  The first attempt's outcome is kept: a context without a
 * driver answers FG_ERR_NO_DRIVER at once afterwards.
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
		{(void **)&cu->LaunchKernelEx, "cuLaunchKernelEx"},
		{(void **)&cu->TensorMapEncodeTiled, "cuTensorMapEncodeTiled"},
		{(void **)&cu->GetErrorName, "cuGetErrorName"},
		{(void **)&cu->GetErrorString, "cuGetErrorString"},
		{(void **)&cu->MemPoolCreate, "cuMemPoolCreate"},
		{(void **)&cu->MemPoolDestroy, "cuMemPoolDestroy"},
		{(void **)&cu->MemPoolSetAttribute, "cuMemPoolSetAttribute"},
		{(void **)&cu->MemAllocFromPoolAsync,
			"cuMemAllocFromPoolAsync"},
		{(void **)&cu->MemFreeAsync, "cuMemFreeAsync"},
	};

	for (size_t i = 0; i < COUNT(tab); i++)
		if (!(*tab[i].fn = dlsym(d->lib, tab[i].name))) {
			snprintf(why, whylen, "the CUDA driver lacks %s (it "
				"is older than CUDA 12.0)", tab[i].name);
			return false;
		}
	return true;
}

static const char *
errname(const Driver *d, CUresult r, char *buf, size_t n)
{
	const char *name = NULL, *s = NULL;

	if (d->cu.GetErrorName)
		d->cu.GetErrorName(r, &name);
	if (d->cu.GetErrorString)
		d->cu.GetErrorString(r, &s);
	snprintf(buf, n, "%s: %s", name ? name : "CUDA error",
		s ? s : "unknown");
	return buf;
}

/* Open the device: cuInit, the device's limits, its primary context.
 * The status, with a message in why. */
static fg_status
open_device(fg_ctx *c, Driver *d, char *why, size_t whylen)
{
	CudaApi *cu = &d->cu;
	char e[256];
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

static fg_status
load(fg_ctx *c, Driver *d)
{
	const char *env = getenv("FAGEN_DRIVER_LIB");
	const char *lib = c->driver_lib ? c->driver_lib : env && env[0] ? env :
		"libcuda.so.1";
	char why[512];

	if (!(d->lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL))) {
		snprintf(why, sizeof why, "cannot load the CUDA driver (%s): "
			"%s", lib, dlerror());
		d->status = FG_ERR_NO_DRIVER;
	} else if (!syms(d, why, sizeof why)) {
		d->status = FG_ERR_NO_DRIVER;
	} else {
		d->status = open_device(c, d, why, sizeof why);
	}
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
	char e[256];

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
