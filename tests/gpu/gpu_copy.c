/* gpu_copy.c: runs schedules/copy_ws_sm90.fa on a Hopper GPU and checks
 * that Y is a bit-exact copy of X, for ragged shapes, both element types,
 * two ring depths and grids small enough that each CTA walks many tiles
 * (so every mbarrier goes through many phases).  Y is poisoned before each
 * run and every run is repeated to catch a moving result.  Exit 77 (SKIP)
 * without a GPU.  The driver is loaded with dlopen, as the runtime will. */
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

static void
tmap(CUtensorMap *m, CUdeviceptr p, int rows, int cols, int esz, bool f16)
{
	cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
	cuuint64_t strides[1] = {(cuuint64_t)cols * (cuuint64_t)esz};
	cuuint32_t box[2] = {64, 64}, es[2] = {1, 1};

	CK(cu.TensorMapEncodeTiled(m, f16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 :
		CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, (void *)p, dims, strides,
		box, es, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
		CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
		CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint16_t
rand16(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint16_t)(rng >> 24);
}

/* One configuration: returns the number of mismatching elements. */
static long
run(const char *src, const char *dt, const char *stages, int M, int N,
	int grid)
{
	char d1[32], d2[32];
	const char *defs[] = {d1, d2};
	int64_t smem;
	CUmodule mod;
	CUfunction fn;
	CUdeviceptr X, Y;
	CUtensorMap mx, my;
	size_t bytes = (size_t)M * N * 2;
	long bad = 0;

	snprintf(d1, sizeof d1, "DT=%s", dt);
	snprintf(d2, sizeof d2, "STAGES=%s", stages);
	char *ptx = compile(src, defs, 2, &smem);
	CK(cu.ModuleLoadDataEx(&mod, ptx, 0, NULL, NULL));
	CK(cu.ModuleGetFunction(&fn, mod, "copy_ws"));
	CK(cu.FuncSetAttribute(fn,
		CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem));
	uint16_t *hx = malloc(bytes), *hy = malloc(bytes);
	for (size_t i = 0; i < (size_t)M * N; i++)
		hx[i] = rand16();
	CK(cu.MemAlloc(&X, bytes));
	CK(cu.MemAlloc(&Y, bytes));
	CK(cu.MemcpyHtoD(X, hx, bytes));
	tmap(&mx, X, M, N, 2, dt[0] == 'f');
	tmap(&my, Y, M, N, 2, dt[0] == 'f');
	for (int rep = 0; rep < 2; rep++) {
		void *args[] = {&M, &N, &X, &Y, &mx, &my};
		CK(cu.MemsetD8(Y, 0xff, bytes));  /* poison */
		CK(cu.LaunchKernel(fn, (unsigned)grid, 1, 1, 64, 1, 1,
			(unsigned)smem, NULL, args, NULL));
		CK(cu.CtxSynchronize());
		CK(cu.MemcpyDtoH(hy, Y, bytes));
		long poison = 0, first = -1, nb = 0;
		for (size_t i = 0; i < (size_t)M * N; i++) {
			if (hx[i] == hy[i])
				continue;
			nb++;
			poison += hy[i] == 0xffff;
			if (first < 0)
				first = (long)i;
		}
		if (nb)
			printf("  run %d: %ld of %ld differ (%ld still poison); "
				"first at row %ld col %ld: want %04x got %04x\n",
				rep, nb, (long)M * N, poison, first / N, first % N,
				hx[first], hy[first]);
		bad += nb;
	}
	printf("copy_ws_sm90 DT=%s STAGES=%s M=%d N=%d grid=%d smem=%lld: "
		"%s\n", dt, stages, M, N, grid, (long long)smem,
		bad ? "MISMATCH" : "bit-exact");
	free(hx);
	free(hy);
	free(ptx);
	cu.MemFree(X);
	cu.MemFree(Y);
	return bad;
}

int
main(void)
{
	CUdevice dev;
	CUcontext ctx;
	char name[128];
	int major, nsm;
	long bad = 0;

	CUresult r;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (load_driver()) {
		puts("no CUDA driver: skipping");
		return SKIP;
	}
	if ((r = cu.Init(0)) != CUDA_SUCCESS) {
		printf("cuInit failed (%d): skipping\n", (int)r);
		return SKIP;
	}
	CK(cu.DeviceGet(&dev, 0));
	CK(cu.DeviceGetAttribute(&major,
		CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
	CK(cu.DeviceGetAttribute(&nsm,
		CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
	CK(cu.DeviceGetName(name, sizeof name, dev));
	if (major != 9) {
		printf("%s is not a Hopper GPU: skipping\n", name);
		return SKIP;
	}
	printf("device: %s (%d SMs)\n", name, nsm);
	CK(cu.DevicePrimaryCtxRetain(&ctx, dev));
	CK(cu.CtxSetCurrent(ctx));
	/* FAGEN_SRCDIR in the environment wins: the test may run in another
	 * checkout than the one it was built in */
	static char src[4096];
	const char *root = getenv("FAGEN_SRCDIR");
	snprintf(src, sizeof src, "%s/schedules/copy_ws_sm90.fa",
		root ? root : FAGEN_SRCDIR);
	bad += run(src, "bf16", "4", 1000, 1000, nsm);
	bad += run(src, "bf16", "4", 1000, 1000, 3);
	bad += run(src, "f16", "2", 777, 4096, 5);
	bad += run(src, "bf16", "2", 64, 64, 1);
	bad += run(src, "f16", "3", 4096, 8, nsm);
	bad += run(src, "bf16", "4", 8192, 8192, nsm);
	return bad ? 1 : 0;
}
