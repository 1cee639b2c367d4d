/* gpu_hang.c: the hang-diagnosis build on a GPU.  tests/gpu/hang_copy.fa
 * is the copy schedule with its stage release deleted, so the loader
 * waits forever once the ring is full.  The verifier must reject it;
 * compiled with the verifier off and --debug-hangs, the kernel must stop
 * by itself (a trap, not a hang) and print which partition waits on which
 * barrier, parity and source line.  Compiles and launches through
 * libfagen (fg_compile_options.no_verify and debug_hangs).  Exit 77
 * (SKIP) without a Hopper GPU; run it in its own process: the trap leaves
 * the context unusable. */
#include <stdbool.h>
#include <unistd.h>

#include "gpu_runtime.h"

int
main(void)
{
	const char *src = gpu_src("tests/gpu/hang_copy.fa");
	fg_options opts = {.cache_dir = ""};
	fg_compile_options o = {0};
	fg_program *prog;
	fg_kernel *k;
	fg_ctx *ctx;
	CUstream stream;

	setvbuf(stdout, NULL, _IONBF, 0);
	FG(ctx, fg_ctx_create(&ctx, &opts));
	/* 1. the verifier rejects the schedule */
	if (fg_compile_file(ctx, src, &o, &prog) != FG_ERR_COMPILE ||
	    !strstr(fg_program_diagnostics(prog), "empty")) {
		printf("FAIL: the verifier accepted the broken schedule\n%s",
			fg_program_diagnostics(prog));
		return 1;
	}
	printf("the verifier rejects it:\n%s", fg_program_diagnostics(prog));
	fg_program_free(prog);
	gpu_open();
	CK(cu.StreamCreate(&stream, CU_STREAM_NON_BLOCKING));
	/* 2. --no-verify --debug-hangs: it must trap, and say where */
	o.no_verify = o.debug_hangs = 1;
	FG(ctx, fg_compile_file(ctx, src, &o, &prog));
	FG(ctx, fg_kernel_create(ctx, fg_program_ptx(prog, NULL), 0, &k));
	FG(ctx, fg_kernel_set_grid_limit(k, 1));
	FG(ctx, fg_kernel_load(k));
	int M = 1024, N = 1024;
	size_t bytes = (size_t)M * N * 2;
	CUdeviceptr X, Y;
	CK(cu.MemAlloc(&X, bytes));
	CK(cu.MemAlloc(&Y, bytes));
	CK(cu.MemsetD8(X, 0x3c, bytes));
	fg_arg args[] = {FG_INT("M", M), FG_INT("N", N), FG_PTR("X", X),
		FG_PTR("Y", Y)};
	/* device printf reaches stdout at the synchronization: catch it */
	char tmpl[] = "/tmp/fagen-hang-XXXXXX";
	int fd = mkstemp(tmpl), saved = dup(1);
	fflush(stdout);
	dup2(fd, 1);
	double t0 = gpu_ms();
	fg_status st = fg_launch(k, stream, args, 4);
	CUresult r = st ? CUDA_ERROR_UNKNOWN : cu.StreamSynchronize(stream);
	double secs = (gpu_ms() - t0) / 1e3;
	fflush(stdout);
	dup2(saved, 1);
	char out[4096] = {0};
	lseek(fd, 0, SEEK_SET);
	ssize_t got = read(fd, out, sizeof out - 1);
	close(fd);
	unlink(tmpl);
	(void)got;
	const char *es = "?";
	cu.GetErrorString(r, &es);
	if (st)
		printf("fg_launch: %s\n", fg_errmsg(ctx));
	printf("the kernel stopped after %.1f s with '%s'; it printed:\n%s",
		secs, es, out);
	bool ok = !st && r != CUDA_SUCCESS && strstr(out, "--debug-hangs") &&
		strstr(out, "waits on 'empty[");
	printf("%s\n", ok ? "hang diagnosed: ok" : "FAIL: no diagnosis");
	return ok ? 0 : 1;   /* the context is unusable: no clean-up */
}
