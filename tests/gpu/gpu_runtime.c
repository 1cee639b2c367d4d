/* gpu_runtime.c: libfagen on a Hopper GPU, beyond the copy sweep of
 * gpu_copy.c: the kernel cache (a cold load assembles, a warm load in a
 * fresh context reads the disk and runs bit-exact; both timed), launches
 * interleaved on two streams and from two threads at once, each assembler
 * path (nvJitLink or ptxas, ptxas alone, the driver's JIT), and the errors
 * a real device adds (a kernel for another arch).  Exit 77 (SKIP) without
 * a GPU; every failure prints what and where, and exits 1. */
#include <pthread.h>
#include <unistd.h>

#include "gpu_runtime.h"

#define FAIL(...) do {                                                  \
	fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                 \
	fprintf(stderr, __VA_ARGS__);                                   \
	fputc('\n', stderr);                                            \
	exit(1);                                                        \
} while (0)

static const char *const source_names[] = {"none", "memory cache",
	"disk cache", "nvJitLink", "ptxas", "driver JIT"};

/* A copy problem on the device, with X filled and Y poisoned. */
typedef struct Job {
	int M, N;
	CUdeviceptr X, Y;
	uint16_t *hx, *hy;
	CUstream stream;
} Job;

static void
job_init(Job *j, int M, int N)
{
	size_t n = (size_t)M * N;

	j->M = M;
	j->N = N;
	j->hx = malloc(n * 2);
	j->hy = malloc(n * 2);
	for (size_t i = 0; i < n; i++)
		j->hx[i] = gpu_rand16();
	CK(cu.MemAlloc(&j->X, n * 2));
	CK(cu.MemAlloc(&j->Y, n * 2));
	CK(cu.MemcpyHtoD(j->X, j->hx, n * 2));
	CK(cu.StreamCreate(&j->stream, CU_STREAM_NON_BLOCKING));
}

static void
job_free(Job *j)
{
	CK(cu.StreamDestroy(j->stream));
	CK(cu.MemFree(j->X));
	CK(cu.MemFree(j->Y));
	free(j->hx);
	free(j->hy);
}

/* Poison Y and launch, all on the job's stream. */
static void
job_launch(fg_ctx *ctx, fg_kernel *k, Job *j)
{
	fg_arg a[] = {FG_INT("M", j->M), FG_INT("N", j->N),
		FG_PTR("X", j->X), FG_PTR("Y", j->Y)};

	CK(cu.MemsetD8Async(j->Y, 0xff, (size_t)j->M * j->N * 2, j->stream));
	FG(ctx, fg_launch(k, j->stream, a, 4));
}

/* Wait for the job's stream; the number of elements that differ. */
static long
job_check(Job *j, const char *what)
{
	size_t n = (size_t)j->M * j->N;
	long bad = 0, first = -1;

	CK(cu.StreamSynchronize(j->stream));
	CK(cu.MemcpyDtoH(j->hy, j->Y, n * 2));
	for (size_t i = 0; i < n; i++)
		if (j->hx[i] != j->hy[i] && bad++ == 0)
			first = (long)i;
	if (bad)
		printf("  %s: %ld of %zu differ, first at %ld: want %04x got "
			"%04x\n", what, bad, n, first, j->hx[first],
			j->hy[first]);
	return bad;
}

static fg_kernel *
copy_kernel(fg_ctx *ctx, const char *file)
{
	fg_program *p;
	fg_kernel *k;

	FG(ctx, fg_compile_file(ctx, gpu_src(file), NULL, &p));
	FG(ctx, fg_kernel_create(ctx, fg_program_ptx(p, NULL), 0, &k));
	fg_program_free(p);
	return k;
}

/* Load a fresh copy kernel in ctx: the load's time, and where its code
 * came from. */
static double
timed_load(fg_ctx *ctx, fg_kernel **k, fg_kernel_info *info)
{
	*k = copy_kernel(ctx, "schedules/copy_ws_sm90.fa");
	double t0 = gpu_ms();
	FG(ctx, fg_kernel_load(*k));
	double t = gpu_ms() - t0;
	fg_kernel_info_get(*k, info);
	return t;
}

static long
cache_cold_and_warm(void)
{
	char dir[256];
	const char *t = getenv("TMPDIR");
	fg_kernel *k;
	fg_kernel_info in;
	fg_ctx *c1, *c2;
	Job j;
	long bad;

	snprintf(dir, sizeof dir, "%s/fagen-gpu-cache-XXXXXX",
		t && t[0] ? t : "/tmp");
	if (!mkdtemp(dir))
		FAIL("mkdtemp %s", dir);
	fg_options o = {.cache_dir = dir};
	FG(NULL, fg_ctx_create(&c1, &o));
	double cold = timed_load(c1, &k, &in);
	if (in.source != FG_CODE_NVJITLINK && in.source != FG_CODE_PTXAS)
		FAIL("cold load came from the %s", source_names[in.source]);
	printf("cold load: %.1f ms (%s %.1f ms)\n", cold,
		source_names[in.source], in.assemble_ms);
	fg_kernel_free(k);
	FG(NULL, fg_ctx_create(&c2, &o));
	double warm = timed_load(c2, &k, &in);
	if (in.source != FG_CODE_DISK)
		FAIL("warm load came from the %s, not the disk cache",
			source_names[in.source]);
	printf("warm load: %.2f ms (disk cache %.2f ms): %.0fx faster\n",
		warm, in.assemble_ms, cold / warm);
	job_init(&j, 1000, 1000);
	job_launch(c2, k, &j);
	bad = job_check(&j, "warm-cache kernel");
	printf("warm-cache kernel: %s\n", bad ? "MISMATCH" : "bit-exact");
	job_free(&j);
	fg_kernel_free(k);
	fg_ctx_destroy(c1);
	fg_ctx_destroy(c2);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd))
		printf("could not remove %s\n", dir);
	return bad;
}

/* Launches interleaved on two streams before either is waited for. */
static long
two_streams(fg_ctx *ctx, fg_kernel *k)
{
	Job a, b;
	long bad = 0;

	job_init(&a, 4096, 4096);
	job_init(&b, 1000, 3000);
	for (int rep = 0; rep < 5; rep++) {
		job_launch(ctx, k, &a);
		job_launch(ctx, k, &b);
		bad += job_check(&b, "stream 2");
		bad += job_check(&a, "stream 1");
	}
	printf("two streams, 5 rounds: %s\n", bad ? "MISMATCH" : "bit-exact");
	job_free(&a);
	job_free(&b);
	return bad;
}

typedef struct Thread {
	fg_ctx *ctx;
	fg_kernel *k;
	int M, N;
	long bad;
} Thread;

static void *
worker(void *p)
{
	Thread *t = p;
	Job j;

	CK(cu.CtxSetCurrent(gpu.ctx));  /* for this thread's own calls */
	job_init(&j, t->M, t->N);
	for (int rep = 0; rep < 20; rep++) {
		job_launch(t->ctx, t->k, &j);
		t->bad += job_check(&j, "thread");
	}
	job_free(&j);
	return NULL;
}

/* Two threads launch one kernel of one context, each on its stream; the
 * kernel is loaded by whichever launches first. */
static long
two_threads(fg_ctx *ctx)
{
	fg_kernel *k = copy_kernel(ctx, "schedules/copy_ws_sm90.fa");
	Thread t[2] = {{ctx, k, 2048, 2048, 0}, {ctx, k, 640, 4096, 0}};
	pthread_t th[2];

	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, worker, &t[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	printf("two threads, 20 launches each: %s\n", t[0].bad + t[1].bad ?
		"MISMATCH" : "bit-exact");
	fg_kernel_free(k);
	return t[0].bad + t[1].bad;
}

/* One assembler path (jit: an FG_JIT_* mask), then a bit-exact copy with
 * its code.  A path whose tool is not installed is skipped. */
static long
assembler(unsigned jit, fg_code_source want, fg_code_source also)
{
	fg_options o = {.cache_dir = "", .jit = jit};
	fg_kernel_info in;
	fg_kernel *k;
	fg_ctx *ctx;
	Job j;
	long bad;

	FG(NULL, fg_ctx_create(&ctx, &o));
	k = copy_kernel(ctx, "schedules/copy_ws_sm90.fa");
	double t0 = gpu_ms();
	fg_status st = fg_kernel_load(k);
	double t = gpu_ms() - t0;
	if (st == FG_ERR_JIT && strstr(fg_errmsg(ctx), "no PTX assembler")) {
		printf("jit mask %u: skipped: %s\n", jit, fg_errmsg(ctx));
		fg_kernel_free(k);
		fg_ctx_destroy(ctx);
		return 0;
	}
	FG(ctx, st);
	fg_kernel_info_get(k, &in);
	if (in.source != want && in.source != also)
		FAIL("jit mask %u: code from the %s, not the %s", jit,
			source_names[in.source], source_names[want]);
	job_init(&j, 777, 4096);
	job_launch(ctx, k, &j);
	bad = job_check(&j, source_names[in.source]);
	printf("%s: load %.1f ms, %s\n", source_names[in.source], t, bad ?
		"MISMATCH" : "bit-exact");
	job_free(&j);
	fg_kernel_free(k);
	fg_ctx_destroy(ctx);
	return bad;
}

static void
device_errors(fg_ctx *ctx, fg_kernel *k)
{
	fg_kernel *k100 = copy_kernel(ctx, "schedules/copy_ws_sm100.fa");
	fg_status st = fg_kernel_load(k100);

	if (st != FG_ERR_UNSUPPORTED || !strstr(fg_errmsg(ctx), "sm_100a"))
		FAIL("an sm_100a kernel on %s: %s: %s", gpu.name,
			fg_status_name(st), fg_errmsg(ctx));
	printf("sm_100a kernel refused: %s\n", fg_errmsg(ctx));
	fg_kernel_free(k100);
	fg_arg a[] = {FG_INT("M", 64), FG_INT("N", 64),
		FG_PTR("X", 0x10008), FG_PTR("Y", 0x20000)};
	CUstream s;
	CK(cu.StreamCreate(&s, CU_STREAM_NON_BLOCKING));
	if ((st = fg_launch(k, s, a, 4)) != FG_ERR_INVALID)
		FAIL("a misaligned X launched: %s", fg_status_name(st));
	if ((st = fg_launch(k, NULL, a, 4)) != FG_ERR_INVALID)
		FAIL("the legacy stream was taken: %s", fg_status_name(st));
	CK(cu.StreamDestroy(s));
	puts("misaligned tensor and legacy stream refused");
}

int
main(void)
{
	fg_options o = {.cache_dir = ""};
	fg_ctx *ctx;
	long bad = 0;

	gpu_open();
	bad += cache_cold_and_warm();
	FG(NULL, fg_ctx_create(&ctx, &o));
	fg_kernel *k = copy_kernel(ctx, "schedules/copy_ws_sm90.fa");
	bad += two_streams(ctx, k);
	bad += two_threads(ctx);
	device_errors(ctx, k);
	fg_kernel_free(k);
	fg_ctx_destroy(ctx);
	bad += assembler(0, FG_CODE_NVJITLINK, FG_CODE_PTXAS);
	bad += assembler(FG_JIT_PTXAS, FG_CODE_PTXAS, FG_CODE_PTXAS);
	bad += assembler(FG_JIT_DRIVER, FG_CODE_DRIVER, FG_CODE_DRIVER);
	printf("gpu_runtime: %s\n", bad ? "FAILED" : "all bit-exact");
	return bad ? 1 : 0;
}
