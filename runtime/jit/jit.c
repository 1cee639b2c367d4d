/* jit.c: PTX to cubin, with no GPU needed.
 *
 * Two assemblers, tried in order: nvJitLink in-process (dlopen
 * libnvJitLink.so.13, .so.12 or .so, or $FAGEN_NVJITLINK_LIB), then the
 * ptxas executable ($FAGEN_PTXAS, $CUDA_HOME/bin, $CUDA_PATH/bin, PATH,
 * /usr/local/cuda/bin).  Each is looked for once per context.  When one
 * rejects the PTX the next is tried too (an older nvJitLink may not know
 * the PTX version that a newer ptxas does); when all fail, the error has
 * every log.  The driver's own JIT, the last resort, happens at load
 * (kernel.c), since it yields a module rather than a cubin.
 *
 * nvJitLink is a linker: it assembles PTX as relocatable code, where
 * ptxas ignores setmaxnreg ("to maintain compatibility across compilation
 * units"), serializes wgmma around calls (such as rcp.rn.f32's slow path)
 * and spills around them: fa_fwd_sm90 ran at half speed that way (347
 * against 699 TFLOP/s on an H200).  So PTX that uses setmaxnreg or wgmma
 * goes to ptxas first, which assembles it as the whole program it is;
 * nvJitLink remains its fallback, and first choice for other PTX.
 *
 * jit_tool names the first assembler available, with its version: that
 * string goes into the cache key, so a warm lookup costs one dlopen and
 * no assembly.
 *
 * ptxas runs in a process group of its own under a time limit
 * ($FAGEN_PTXAS_TIMEOUT seconds, default 60, 0: none), so a wedged or
 * fake assembler cannot hang the caller: on expiry the whole group is
 * killed and reaped, and the run fails naming the tool and the limit. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rt_jit.h"

extern char **environ;

typedef int NvjRes;  /* nvJitLinkResult: 0 is success */
typedef struct NvjApi {
	NvjRes (*Create)(void **, uint32_t, const char *const *);
	NvjRes (*Destroy)(void **);
	NvjRes (*AddData)(void *, int, const void *, size_t, const char *);
	NvjRes (*Complete)(void *);
	NvjRes (*GetLinkedCubinSize)(void *, size_t *);
	NvjRes (*GetLinkedCubin)(void *, void *);
	NvjRes (*GetErrorLogSize)(void *, size_t *);
	NvjRes (*GetErrorLog)(void *, char *);
	NvjRes (*Version)(unsigned *, unsigned *);
} NvjApi;
enum { NVJ_INPUT_PTX = 2 };

struct Tools {
	bool probed;
	void *nvj;             /* NULL: not available */
	NvjApi api;
	char nvj_tool[64];
	char nvj_why[256];
	char ptxas[4096];      /* "": not available */
	double ptxas_limit;    /* seconds a run may take; 0: no limit */
	char ptxas_tool[4400];
	char ptxas_why[256];
};

static bool
nvj_open(Tools *t, const char *path)
{
	struct {
		void **fn;
		const char *name;
	} syms[] = {
		{(void **)&t->api.Create, "nvJitLinkCreate"},
		{(void **)&t->api.Destroy, "nvJitLinkDestroy"},
		{(void **)&t->api.AddData, "nvJitLinkAddData"},
		{(void **)&t->api.Complete, "nvJitLinkComplete"},
		{(void **)&t->api.GetLinkedCubinSize,
			"nvJitLinkGetLinkedCubinSize"},
		{(void **)&t->api.GetLinkedCubin, "nvJitLinkGetLinkedCubin"},
		{(void **)&t->api.GetErrorLogSize, "nvJitLinkGetErrorLogSize"},
		{(void **)&t->api.GetErrorLog, "nvJitLinkGetErrorLog"},
		{(void **)&t->api.Version, "nvJitLinkVersion"},
	};
	unsigned major, minor;
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		snprintf(t->nvj_why, sizeof t->nvj_why, "%s", dlerror());
		return false;
	}
	for (size_t i = 0; i < COUNT(syms); i++)
		if (!(*syms[i].fn = dlsym(h, syms[i].name))) {
			snprintf(t->nvj_why, sizeof t->nvj_why, "%s lacks %s",
				path, syms[i].name);
			dlclose(h);
			return false;
		}
	if (t->api.Version(&major, &minor)) {
		snprintf(t->nvj_why, sizeof t->nvj_why, "%s: nvJitLinkVersion "
			"failed", path);
		dlclose(h);
		return false;
	}
	snprintf(t->nvj_tool, sizeof t->nvj_tool, "nvJitLink %u.%u", major,
		minor);
	t->nvj = h;
	return true;
}

static void
find_nvjitlink(Tools *t)
{
	const char *env = getenv("FAGEN_NVJITLINK_LIB");
	const char *names[] = {"libnvJitLink.so.13", "libnvJitLink.so.12",
		"libnvJitLink.so"};
	const char *homes[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"),
		"/usr/local/cuda"};
	char path[4096];

	if (env && env[0]) {
		nvj_open(t, env);
		return;
	}
	for (size_t i = 0; i < COUNT(names); i++)
		if (nvj_open(t, names[i]))
			return;
	for (size_t i = 0; i < COUNT(homes); i++) {
		if (!homes[i] || !homes[i][0])
			continue;
		snprintf(path, sizeof path, "%s/lib64/libnvJitLink.so",
			homes[i]);
		if (nvj_open(t, path))
			return;
	}
}

/* ---------------------------------------------------------------- ptxas */

enum { PTXAS_LIMIT = 60 };  /* seconds, unless $FAGEN_PTXAS_TIMEOUT */

/* $FAGEN_PTXAS_TIMEOUT, or the default with a warning when it is not a
 * number of seconds >= 0. */
static double
ptxas_limit(fg_ctx *c)
{
	const char *env = getenv("FAGEN_PTXAS_TIMEOUT");
	char *end;
	double v;

	if (!env || !env[0])
		return PTXAS_LIMIT;
	v = strtod(env, &end);
	if (*end || !isfinite(v) || v < 0 || v > 1e9) {
		rt_log(c, FG_LOG_WARN, "FAGEN_PTXAS_TIMEOUT is '%.64s', not a "
			"number of seconds >= 0: using %d", env, PTXAS_LIMIT);
		return PTXAS_LIMIT;
	}
	return v;
}

/* Wait for pid for at most limit seconds (0: no limit); on expiry kill
 * its process group and reap it.  waitpid's answer, with *timed_out. */
static pid_t
wait_limited(pid_t pid, int *st, double limit, bool *timed_out)
{
	double end = rt_ms() + limit * 1e3, step = 1;
	pid_t r;

	*timed_out = false;
	for (;;) {
		r = waitpid(pid, st, limit > 0 ? WNOHANG : 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r != 0)
			return r;
		double left = end - rt_ms();
		if (left <= 0)
			break;
		step = step < 20 ? step * 2 : 20;  /* ms: short runs stay short */
		double ms = step < left ? step : left;
		struct timespec ts = {.tv_sec = (time_t)(ms / 1e3),
			.tv_nsec = (long)(fmod(ms, 1e3) * 1e6)};
		nanosleep(&ts, NULL);
	}
	*timed_out = true;
	kill(-pid, SIGKILL);  /* its group: a script's children too */
	kill(pid, SIGKILL);
	while ((r = waitpid(pid, st, 0)) < 0 && errno == EINTR)
		;
	return r;
}

/* Run argv with stdout and stderr into logpath, in a process group of
 * its own, for at most limit seconds (0: no limit); its exit status, or
 * -1 (with *timed_out when the limit ran out). */
static int
run(char *const argv[], const char *logpath, double limit, bool *timed_out)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	pid_t pid;
	int st, r;

	*timed_out = false;
	if (posix_spawn_file_actions_init(&fa))
		return -1;
	if (posix_spawnattr_init(&at)) {
		posix_spawn_file_actions_destroy(&fa);
		return -1;
	}
	posix_spawn_file_actions_addopen(&fa, 1, logpath,
		O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
	posix_spawnattr_setpgroup(&at, 0);
	r = posix_spawn(&pid, argv[0], &fa, &at, argv, environ);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	if (r)
		return -1;
	r = wait_limited(pid, &st, limit, timed_out);
	if (*timed_out)
		return -1;
	if (r < 0)
		return errno == ECHILD ? 0 : -1;  /* SIGCHLD ignored: trust the
						    * output files */
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The whole file in rt_alloc'd memory of *len + extra bytes, the extra
 * ones zero (extra 1: a C string). */
static char *
slurp(fg_ctx *c, const char *path, size_t *len, size_t extra)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	char *p = NULL;

	if (fd < 0)
		return NULL;
	if (!fstat(fd, &st) && st.st_size > 0 && st.st_size < (1 << 30) &&
	    (p = rt_alloc(c, (size_t)st.st_size + extra))) {
		ssize_t n = read(fd, p, (size_t)st.st_size);
		if (n != st.st_size) {
			rt_free(c, p, (size_t)st.st_size + extra);
			p = NULL;
		} else {
			memset(p + n, 0, extra);
			*len = (size_t)n;
		}
	}
	close(fd);
	return p;
}

/* A private directory under $TMPDIR for one ptxas run. */
static bool
tmpdir(char dir[4096])
{
	const char *t = getenv("TMPDIR");

	snprintf(dir, 4096, "%s/fagen-XXXXXX", t && t[0] ? t : "/tmp");
	return mkdtemp(dir) != NULL;
}

static void
rmtmp(const char *dir)
{
	static const char *const files[] = {"in.ptx", "out.cubin", "log"};
	char p[4200];

	for (size_t i = 0; i < COUNT(files); i++) {
		snprintf(p, sizeof p, "%s/%s", dir, files[i]);
		unlink(p);
	}
	rmdir(dir);
}

static void
find_ptxas(fg_ctx *c, Tools *t)
{
	const char *homes[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH")};
	const char *env = getenv("FAGEN_PTXAS"), *path = getenv("PATH");
	char dir[4096], log[4200], *out;
	size_t n, size;

	if (env && env[0]) {
		snprintf(t->ptxas, sizeof t->ptxas, "%s", env);
	} else {
		for (size_t i = 0; i < COUNT(homes) && !t->ptxas[0]; i++)
			if (homes[i] && homes[i][0])
				snprintf(t->ptxas, sizeof t->ptxas,
					"%s/bin/ptxas", homes[i]);
		if (t->ptxas[0] && access(t->ptxas, X_OK))
			t->ptxas[0] = '\0';
		for (const char *p = path; p && *p && !t->ptxas[0];) {
			const char *e = strchr(p, ':');
			int len = e ? (int)(e - p) : (int)strlen(p);
			snprintf(t->ptxas, sizeof t->ptxas, "%.*s/ptxas", len,
				p);
			if (len == 0 || access(t->ptxas, X_OK))
				t->ptxas[0] = '\0';
			p = e ? e + 1 : "";
		}
		if (!t->ptxas[0])
			snprintf(t->ptxas, sizeof t->ptxas,
				"/usr/local/cuda/bin/ptxas");
	}
	char *argv[] = {t->ptxas, "--version", NULL};
	bool late;
	t->ptxas_limit = ptxas_limit(c);
	if (access(t->ptxas, X_OK) || !tmpdir(dir)) {
		snprintf(t->ptxas_why, sizeof t->ptxas_why, "no ptxas (tried "
			"$FAGEN_PTXAS, $CUDA_HOME, $CUDA_PATH, PATH, "
			"/usr/local/cuda)");
		t->ptxas[0] = '\0';
		return;
	}
	snprintf(log, sizeof log, "%s/log", dir);
	if (run(argv, log, t->ptxas_limit, &late) || !(out = slurp(c, log, &n,
	    1))) {
		if (late)
			snprintf(t->ptxas_why, sizeof t->ptxas_why, "%.160s "
				"--version did not finish within %g s "
				"($FAGEN_PTXAS_TIMEOUT): killed", t->ptxas,
				t->ptxas_limit);
		else
			snprintf(t->ptxas_why, sizeof t->ptxas_why, "%.200s "
				"--version failed", t->ptxas);
		t->ptxas[0] = '\0';
		rmtmp(dir);
		return;
	}
	size = n + 1;
	while (n && (out[n - 1] == '\n' || out[n - 1] == '\r'))
		out[--n] = '\0';
	const char *last = strrchr(out, '\n');
	snprintf(t->ptxas_tool, sizeof t->ptxas_tool, "ptxas %s (%s)",
		t->ptxas, last ? last + 1 : out);
	rt_free(c, out, size);
	rmtmp(dir);
}

/* Assemble with ptxas in a private temporary directory. */
static JitResult
ptxas_run(fg_ctx *c, const Tools *t, const char *ptx, size_t len,
	const char *arch, void **cubin, size_t *cubinlen, Buf *log)
{
	char dir[4096], in[4200], out[4200], lp[4200], opt[64];
	char *argv[] = {(char *)t->ptxas, opt, "-o", out, in, NULL};
	char *text;
	size_t n;
	int st;
	bool late = false;

	if (!tmpdir(dir)) {
		buf_printf(log, "ptxas: cannot make a temporary directory: "
			"%s\n", strerror(errno));
		return JIT_MISSING;
	}
	snprintf(in, sizeof in, "%s/in.ptx", dir);
	snprintf(out, sizeof out, "%s/out.cubin", dir);
	snprintf(lp, sizeof lp, "%s/log", dir);
	snprintf(opt, sizeof opt, "-arch=%s", arch);
	FILE *f = fopen(in, "wb");
	bool ok = f && fwrite(ptx, 1, len, f) == len;
	ok = f && !fclose(f) && ok;
	st = ok ? run(argv, lp, t->ptxas_limit, &late) : -1;
	if ((text = slurp(c, lp, &n, 1))) {
		buf_printf(log, "ptxas %s:\n%s", opt, text);
		rt_free(c, text, n + 1);
	}
	if (st == 0 && (*cubin = slurp(c, out, cubinlen, 0))) {
		rmtmp(dir);
		return JIT_OK;
	}
	if (late)
		buf_printf(log, "ptxas %s did not finish within %g s "
			"($FAGEN_PTXAS_TIMEOUT): killed\n", opt,
			t->ptxas_limit);
	else
		buf_printf(log, "ptxas %s %s\n", opt, !ok ? "could not be "
			"given its input" : st ? "failed" : "wrote no cubin");
	rmtmp(dir);
	return JIT_FAILED;
}

static JitResult
nvj_run(fg_ctx *c, const Tools *t, const char *ptx, size_t len,
	const char *arch, void **cubin, size_t *cubinlen, Buf *log)
{
	char opt[64];
	const char *opts[] = {opt};
	void *h = NULL;
	size_t n = 0;
	NvjRes r;

	snprintf(opt, sizeof opt, "-arch=%s", arch);
	if ((r = t->api.Create(&h, 1, opts))) {
		buf_printf(log, "nvJitLinkCreate(%s) failed: error %d\n", opt,
			r);
		return JIT_FAILED;
	}
	if (!(r = t->api.AddData(h, NVJ_INPUT_PTX, ptx, len, "fagen.ptx")) &&
	    !(r = t->api.Complete(h)) &&
	    !(r = t->api.GetLinkedCubinSize(h, &n)) && n &&
	    (*cubin = rt_alloc(c, n)) && !(r = t->api.GetLinkedCubin(h,
	    *cubin))) {
		*cubinlen = n;
		t->api.Destroy(&h);
		return JIT_OK;
	}
	if (*cubin)
		rt_free(c, *cubin, n);
	*cubin = NULL;
	size_t ln = 0;
	char *text;
	if (!t->api.GetErrorLogSize(h, &ln) && ln && (text = rt_alloc(c, ln +
	    1))) {
		text[0] = '\0';
		t->api.GetErrorLog(h, text);
		text[ln] = '\0';
		buf_printf(log, "nvJitLink %s:\n%s", opt, text);
		rt_free(c, text, ln + 1);
	}
	buf_printf(log, "nvJitLink %s failed: error %d\n", opt, r ? r : -1);
	t->api.Destroy(&h);
	return JIT_FAILED;
}

static Tools *
tools(fg_ctx *c)
{
	Tools *t;

	pthread_mutex_lock(&c->mu);
	if (!c->tools && (c->tools = rt_alloc(c, sizeof *c->tools)))
		memset(c->tools, 0, sizeof *c->tools);
	if ((t = c->tools) && !t->probed) {
		if (c->jit & FG_JIT_NVJITLINK)
			find_nvjitlink(t);
		if (c->jit & FG_JIT_PTXAS)
			find_ptxas(c, t);
		t->probed = true;
	}
	pthread_mutex_unlock(&c->mu);
	return t;
}

/* PTX that relocatable assembly slows down (see the top). */
static bool
whole_program(const char *ptx)
{
	return ptx && (strstr(ptx, "setmaxnreg") || strstr(ptx, "wgmma"));
}

fg_status
jit_tool(fg_ctx *c, const char *ptx, int *which, const char **tool)
{
	Tools *t = tools(c);

	if (!t)
		return rt_err(c, FG_ERR_NOMEM, "out of memory");
	if (t->ptxas[0] && (!t->nvj || whole_program(ptx))) {
		*which = FG_JIT_PTXAS;
		*tool = t->ptxas_tool;
	} else if (t->nvj) {
		*which = FG_JIT_NVJITLINK;
		*tool = t->nvj_tool;
	} else if (t->ptxas[0]) {
		*which = FG_JIT_PTXAS;
		*tool = t->ptxas_tool;
	} else if (c->jit & FG_JIT_DRIVER) {
		*which = FG_JIT_DRIVER;
		*tool = "driver";
	} else {
		return rt_err(c, FG_ERR_JIT, "no PTX assembler: nvJitLink: %s; "
			"ptxas: %s", c->jit & FG_JIT_NVJITLINK ? t->nvj_why :
			"not allowed", c->jit & FG_JIT_PTXAS ? t->ptxas_why :
			"not allowed");
	}
	return FG_OK;
}

fg_status
jit_run(fg_ctx *c, int which, const char *ptx, size_t len,
	const char *arch, void **cubin, size_t *cubinlen, int *used)
{
	Tools *t = tools(c);
	jmp_buf oom;
	Arena a;
	Buf log;
	JitResult r = JIT_MISSING;

	*cubin = NULL;
	if (!t)
		return rt_err(c, FG_ERR_NOMEM, "out of memory");
	arena_init(&a, c->alloc, c->alloc_ud, &oom);
	if (setjmp(oom)) {
		arena_free(&a);
		return rt_err(c, FG_ERR_NOMEM, "out of memory assembling");
	}
	buf_init(&log, &a);
	/* which first, then the other one */
	for (int i = 0; i < 2 && r != JIT_OK; i++) {
		bool nvj = (which == FG_JIT_NVJITLINK) == (i == 0);
		if (nvj && t->nvj) {
			*used = FG_JIT_NVJITLINK;
			r = nvj_run(c, t, ptx, len, arch, cubin, cubinlen, &log);
		} else if (!nvj && t->ptxas[0]) {
			*used = FG_JIT_PTXAS;
			r = ptxas_run(c, t, ptx, len, arch, cubin, cubinlen,
				&log);
		}
	}
	fg_status st = FG_OK;
	if (r != JIT_OK)
		st = rt_err(c, FG_ERR_JIT, "cannot assemble the PTX for "
			"%s:\n%s", arch, log.len ? log.p :
			"no assembler was found\n");
	arena_free(&a);
	return st;
}

/* nvJitLink is not dlclose'd: like libcuda it stays mapped for the
 * process (it keeps allocations of its own runtime in its globals, which
 * would turn into leaks), and the next context's dlopen finds it. */
void
jit_free(fg_ctx *c)
{
	if (!c->tools)
		return;
	rt_free(c, c->tools, sizeof *c->tools);
	c->tools = NULL;
}
