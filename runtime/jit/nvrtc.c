/* nvrtc.c: CUDA C to a cubin at run time with nvrtc, for the reference
 * kernels (reference.c).  libnvrtc is opened with dlopen when first
 * needed ($FAGEN_NVRTC_LIB, else libnvrtc.so.13, .so.12, .so, then lib64/
 * and lib/ of $CUDA_HOME, $CUDA_PATH and /usr/local/cuda), so a program
 * linking libfagen runs without it until it asks for the reference.
 * Cubins are cached like the kernels' (cache.c), keyed by the source,
 * the arch, the options and nvrtc's version: a warm call compiles
 * nothing.  Needs no GPU.
 *
 * Once it has served a call, libnvrtc is never dlclose'd (like libcuda
 * and nvJitLink): it keeps allocations in its globals, which would
 * otherwise be unmapped and reported as leaks by LeakSanitizer, and a
 * second dlopen of a mapped library costs nothing. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_jit.h"

typedef int NvrtcRes;         /* nvrtcResult: 0 is success */
typedef struct NvrtcApi {
	NvrtcRes (*Version)(int *, int *);
	NvrtcRes (*CreateProgram)(void **, const char *, const char *, int,
		const char *const *, const char *const *);
	NvrtcRes (*CompileProgram)(void *, int, const char *const *);
	NvrtcRes (*GetProgramLogSize)(void *, size_t *);
	NvrtcRes (*GetProgramLog)(void *, char *);
	NvrtcRes (*GetCUBINSize)(void *, size_t *);
	NvrtcRes (*GetCUBIN)(void *, char *);
	NvrtcRes (*DestroyProgram)(void **);
	const char *(*GetErrorString)(NvrtcRes);
} NvrtcApi;

static void *
try_open(const char *path, NvrtcApi *api, char *why, size_t n)
{
	struct {
		void **fn;
		const char *name;
	} syms[] = {
		{(void **)&api->Version, "nvrtcVersion"},
		{(void **)&api->CreateProgram, "nvrtcCreateProgram"},
		{(void **)&api->CompileProgram, "nvrtcCompileProgram"},
		{(void **)&api->GetProgramLogSize, "nvrtcGetProgramLogSize"},
		{(void **)&api->GetProgramLog, "nvrtcGetProgramLog"},
		{(void **)&api->GetCUBINSize, "nvrtcGetCUBINSize"},
		{(void **)&api->GetCUBIN, "nvrtcGetCUBIN"},
		{(void **)&api->DestroyProgram, "nvrtcDestroyProgram"},
		{(void **)&api->GetErrorString, "nvrtcGetErrorString"},
	};
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		snprintf(why, n, "%s", dlerror());
		return NULL;
	}
	for (size_t i = 0; i < COUNT(syms); i++)
		if (!(*syms[i].fn = dlsym(h, syms[i].name))) {
			snprintf(why, n, "%s lacks %s", path, syms[i].name);
			dlclose(h);
			return NULL;
		}
	return h;
}

/* libnvrtc, or NULL with the first failure's reason in why. */
static void *
nvrtc_open(NvrtcApi *api, char *why, size_t n)
{
	const char *env = getenv("FAGEN_NVRTC_LIB");
	const char *names[] = {"libnvrtc.so.13", "libnvrtc.so.12",
		"libnvrtc.so"};
	const char *homes[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"),
		"/usr/local/cuda"};
	char path[4096], first[512] = "";
	void *h;

	if (env && env[0])
		return try_open(env, api, why, n);
	for (size_t i = 0; i < COUNT(names); i++) {
		if ((h = try_open(names[i], api, why, n)))
			return h;
		if (!first[0])
			snprintf(first, sizeof first, "%s", why);
	}
	for (size_t i = 0; i < COUNT(homes); i++)
		for (int lib = 0; lib < 2 && homes[i] && homes[i][0]; lib++) {
			snprintf(path, sizeof path, "%s/%s/libnvrtc.so",
				homes[i], lib ? "lib" : "lib64");
			if ((h = try_open(path, api, why, n)))
				return h;
		}
	snprintf(why, n, "%s", first);
	return NULL;
}

/* Compile with the library open; the cubin in *out (rt_alloc'd). */
static fg_status
compile(fg_ctx *c, const char *fn, const NvrtcApi *api, const char *src,
	const char *name, const char *arch, void **out, size_t *len)
{
	char opt[64];
	const char *opts[] = {opt, "--std=c++17"};
	void *prog = NULL;
	size_t n = 0;
	char *log = NULL;
	fg_status st = FG_OK;
	NvrtcRes r;

	snprintf(opt, sizeof opt, "--gpu-architecture=%s", arch);
	if ((r = api->CreateProgram(&prog, src, name, 0, NULL, NULL)))
		return rt_err(c, FG_ERR_JIT, "%s: nvrtcCreateProgram: %s", fn,
			api->GetErrorString(r));
	if ((r = api->CompileProgram(prog, (int)COUNT(opts), opts))) {
		api->GetProgramLogSize(prog, &n);
		if ((log = rt_alloc(c, n + 1)) && !api->GetProgramLog(prog,
		    log))
			log[n] = '\0';
		st = rt_err(c, FG_ERR_JIT, "%s: nvrtc could not compile %s "
			"for %s (%s):\n%s", fn, name, arch,
			api->GetErrorString(r), log ? log : "(no log)");
		rt_free(c, log, n + 1);
	} else if ((r = api->GetCUBINSize(prog, len)) || !(*out = rt_alloc(c,
	    *len)) || (r = api->GetCUBIN(prog, *out))) {
		if (!r) {
			st = rt_err(c, FG_ERR_NOMEM, "out of memory");
		} else {
			rt_free(c, *out, *len);
			*out = NULL;
			st = rt_err(c, FG_ERR_JIT, "%s: nvrtcGetCUBIN: %s", fn,
				api->GetErrorString(r));
		}
	}
	api->DestroyProgram(&prog);
	return st;
}

fg_status
nvrtc_cubin(fg_ctx *c, const char *fn, const char *src, const char *name,
	const char *arch, void **out, size_t *len)
{
	NvrtcApi api;
	char why[512], tool[64], opts[80];
	uint8_t key[32];
	fg_code_source from;
	int major, minor;
	void *h = nvrtc_open(&api, why, sizeof why);
	fg_status st;

	*out = NULL;
	*len = 0;
	if (!h)
		return rt_err(c, FG_ERR_JIT, "%s: cannot load nvrtc, which "
			"compiles the reference kernels: %s; install the CUDA "
			"toolkit's nvrtc or set FAGEN_NVRTC_LIB", fn, why);
	if (api.Version(&major, &minor))
		return rt_err(c, FG_ERR_JIT, "%s: nvrtcVersion failed", fn);
	snprintf(tool, sizeof tool, "nvrtc %d.%d", major, minor);
	snprintf(opts, sizeof opts, "--gpu-architecture=%s --std=c++17", arch);
	cache_key(key, src, strlen(src), arch, opts, tool);
	if (cache_get(c, key, out, len, &from) == CACHE_HIT)
		return FG_OK;
	double t0 = rt_ms();
	if ((st = compile(c, fn, &api, src, name, arch, out, len)) == FG_OK) {
		cache_put(c, key, *out, *len);
		rt_log(c, FG_LOG_INFO, "%s: %s compiled for %s by %s in %.0f "
			"ms", fn, name, arch, tool, rt_ms() - t0);
	}
	return st;
}
