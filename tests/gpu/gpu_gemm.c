/* gpu_gemm.c: schedules/gemm_ws_sm90.fa on a Hopper GPU, C = A B^T,
 * against a float64 host reference at ragged sizes, C poisoned before
 * each run and each run repeated.  Exit 77 (SKIP) without a Hopper GPU. */
#include "gpu_test.h"

static int nsm;

static void
tmap2(CUtensorMap *m, CUdeviceptr p, int rows, int cols, int brows,
	int bcols, bool f16)
{
	cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
	cuuint64_t str[1] = {(cuuint64_t)cols * 2};
	cuuint32_t box[2] = {(cuuint32_t)bcols, (cuuint32_t)brows};
	cuuint32_t es[2] = {1, 1};

	CK(cu.TensorMapEncodeTiled(m, f16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 :
		CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, (void *)p, dims, str, box,
		es, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
		CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
		CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
}

static int
run(const char *src, int M, int N, int K, bool f16, int grid)
{
	char d1[32];
	const char *defs[] = {d1};
	int64_t smem;
	CUmodule mod;
	CUfunction fn;
	size_t na = (size_t)M * K, nb = (size_t)N * K, nc = (size_t)M * N;
	int bad = 0;

	snprintf(d1, sizeof d1, "DT=%s", f16 ? "f16" : "bf16");
	char *ptx = compile(src, defs, 1, &smem);
	CK(cu.ModuleLoadDataEx(&mod, ptx, 0, NULL, NULL));
	CK(cu.ModuleGetFunction(&fn, mod, "gemm_ws"));
	CK(cu.FuncSetAttribute(fn,
		CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem));
	uint16_t *a = malloc(na * 2), *b = malloc(nb * 2);
	uint16_t *c = malloc(nc * 2), *c2 = malloc(nc * 2);
	for (size_t i = 0; i < na; i++)
		a[i] = to16(urand(), f16);
	for (size_t i = 0; i < nb; i++)
		b[i] = to16(urand(), f16);
	CUdeviceptr A, B, C;
	CK(cu.MemAlloc(&A, na * 2));
	CK(cu.MemAlloc(&B, nb * 2));
	CK(cu.MemAlloc(&C, nc * 2));
	CK(cu.MemcpyHtoD(A, a, na * 2));
	CK(cu.MemcpyHtoD(B, b, nb * 2));
	CUtensorMap ta, tb, tc;
	tmap2(&ta, A, M, K, 128, 64, f16);
	tmap2(&tb, B, N, K, 128, 64, f16);
	tmap2(&tc, C, M, N, 128, 64, f16);
	int tiles = (M + 127) / 128 * ((N + 127) / 128);
	if (grid > tiles)
		grid = tiles;
	for (int rep = 0; rep < 2; rep++) {
		void *args[] = {&M, &N, &K, &A, &B, &C, &ta, &tb, &tc};
		CK(cu.MemsetD8(C, 0xff, nc * 2));
		CK(cu.LaunchKernel(fn, (unsigned)grid, 1, 1, 384, 1, 1,
			(unsigned)smem, NULL, args, NULL));
		CK(cu.CtxSynchronize());
		CK(cu.MemcpyDtoH(rep ? c2 : c, C, nc * 2));
	}
	if (memcmp(c, c2, nc * 2))
		bad |= 4;
	double err = 0, ref2 = 0;
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++) {
			double acc = 0, x = from16(c[(size_t)i * N + j], f16);
			for (int k = 0; k < K; k++)
				acc += from16(a[(size_t)i * K + k], f16) *
					from16(b[(size_t)j * K + k], f16);
			if (x != x)
				bad |= 1;
			err += (x - acc) * (x - acc);
			ref2 += acc * acc;
		}
	double rel = sqrt(err / ref2), tol = f16 ? 3e-3 : 1e-2;
	if (rel > tol)
		bad |= 8;
	printf("gemm_ws_sm90 M=%d N=%d K=%d %s grid=%d: rel err %.2e (tol "
		"%.0e)%s%s -> %s\n", M, N, K, f16 ? "f16" : "bf16", grid, rel,
		tol, bad & 1 ? ", NaN in C" : "", bad & 4 ? ", runs differ" : "",
		bad ? "FAIL" : "ok");
	free(a), free(b), free(c), free(c2), free(ptx);
	cu.MemFree(A), cu.MemFree(B), cu.MemFree(C);
	return bad;
}

int
main(void)
{
	CUdevice dev;
	CUcontext ctx;
	char name[128], src[4096];
	int major, bad = 0;
	const char *root = getenv("FAGEN_SRCDIR");

	setvbuf(stdout, NULL, _IONBF, 0);
	if (load_driver() || cu.Init(0) != CUDA_SUCCESS) {
		puts("no CUDA driver or device: skipping");
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
	snprintf(src, sizeof src, "%s/schedules/gemm_ws_sm90.fa",
		root ? root : FAGEN_SRCDIR);
	bad |= run(src, 1000, 1000, 1000, false, nsm);
	bad |= run(src, 17, 136, 72, false, nsm);
	bad |= run(src, 4097, 520, 264, true, nsm);
	bad |= run(src, 1000, 1000, 1000, false, 3);
	bad |= run(src, 256, 256, 8, true, 2);
	return bad ? 1 : 0;
}
