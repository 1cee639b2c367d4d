/* gpu_hang.c: the hang-diagnosis build on a GPU.  tests/gpu/hang_copy.fa
 * is the copy schedule with its stage release deleted, so the loader
 * waits forever once the ring is full.  The verifier must reject it;
 * compiled with the verifier off and --debug-hangs, the kernel must stop
 * by itself (a trap, not a hang) and print which partition waits on which
 * barrier, parity and source line.  Exit 77 (SKIP) without a Hopper GPU;
 * run it in its own process: the trap leaves the context unusable. */
#include <time.h>
#include <unistd.h>

#include "gpu_test.h"

int
main(void)
{
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	char name[128], src[4096];
	int major;
	int64_t smem;
	const char *root = getenv("FAGEN_SRCDIR");

	setvbuf(stdout, NULL, _IONBF, 0);
	snprintf(src, sizeof src, "%s/tests/gpu/hang_copy.fa",
		root ? root : FAGEN_SRCDIR);
	/* 1. the verifier rejects the schedule */
	compile_soft = true;
	if (compile(src, NULL, 0, &smem) || !strstr(compile_diags,
	    "empty")) {
		printf("FAIL: the verifier accepted the broken schedule\n%s",
			compile_diags);
		return 1;
	}
	printf("the verifier rejects it:\n%s", compile_diags);
	if (load_driver() || cu.Init(0) != CUDA_SUCCESS) {
		puts("no CUDA driver or device: skipping the GPU half");
		return SKIP;
	}
	CK(cu.DeviceGet(&dev, 0));
	CK(cu.DeviceGetAttribute(&major,
		CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
	CK(cu.DeviceGetName(name, sizeof name, dev));
	if (major != 9) {
		printf("%s is not a Hopper GPU: skipping\n", name);
		return SKIP;
	}
	printf("device: %s\n", name);
	CK(cu.DevicePrimaryCtxRetain(&ctx, dev));
	CK(cu.CtxSetCurrent(ctx));
	/* 2. --no-verify --debug-hangs: it must trap, and say where */
	compile_soft = false;
	compile_no_verify = compile_debug_hangs = true;
	char *ptx = compile(src, NULL, 0, &smem);
	CK(cu.ModuleLoadDataEx(&mod, ptx, 0, NULL, NULL));
	CK(cu.ModuleGetFunction(&fn, mod, "copy_ws"));
	int M = 1024, N = 1024;
	size_t bytes = (size_t)M * N * 2;
	CUdeviceptr X, Y;
	CK(cu.MemAlloc(&X, bytes));
	CK(cu.MemAlloc(&Y, bytes));
	CK(cu.MemsetD8(X, 0x3c, bytes));
	CUtensorMap mx, my;
	cuuint64_t dims[2] = {(cuuint64_t)N, (cuuint64_t)M};
	cuuint64_t str[1] = {(cuuint64_t)N * 2};
	cuuint32_t box[2] = {64, 64}, es[2] = {1, 1};
	CK(cu.TensorMapEncodeTiled(&mx, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2,
		(void *)X, dims, str, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
		CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
		CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
	CK(cu.TensorMapEncodeTiled(&my, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2,
		(void *)Y, dims, str, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
		CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
		CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
	/* device printf reaches stdout at the synchronization: catch it */
	char tmpl[] = "/tmp/fagen-hang-XXXXXX";
	int fd = mkstemp(tmpl), saved = dup(1);
	fflush(stdout);
	dup2(fd, 1);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	void *args[] = {&M, &N, &X, &Y, &mx, &my};
	CUresult r = cu.LaunchKernel(fn, 1, 1, 1, 64, 1, 1, (unsigned)smem,
		NULL, args, NULL);
	if (r == CUDA_SUCCESS)
		r = cu.CtxSynchronize();
	clock_gettime(CLOCK_MONOTONIC, &t1);
	fflush(stdout);
	dup2(saved, 1);
	char out[4096] = {0};
	lseek(fd, 0, SEEK_SET);
	ssize_t got = read(fd, out, sizeof out - 1);
	close(fd);
	unlink(tmpl);
	(void)got;
	const char *es_ = "?";
	cu.GetErrorString(r, &es_);
	double secs = (double)(t1.tv_sec - t0.tv_sec) +
		(double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("the kernel stopped after %.1f s with '%s'; it printed:\n%s",
		secs, es_, out);
	bool ok = r != CUDA_SUCCESS && strstr(out, "--debug-hangs") &&
		strstr(out, "waits on 'empty[");
	printf("%s\n", ok ? "hang diagnosed: ok" : "FAIL: no diagnosis");
	return ok ? 0 : 1;
}
