/* main.c: the fagen command line.  Exit status: 0 success, 1 errors in the
 * input, 2 usage errors, I/O errors and internal errors. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fgc.h"

#define MAXSRC (64u << 20)  /* a schedule is small; refuse huge inputs */

static const char usage[] =
"usage: fagen FILE.fa [-o OUT] [options]\n"
"\n"
"Compiles a warp-specialized attention schedule to PTX.\n"
"\n"
"  -o OUT             write the output to OUT ('-': standard output,\n"
"                     the default); written to a temporary file and\n"
"                     renamed, so OUT is never left half-written\n"
"  --arch ARCH        sm_90a, sm_100a, sm_80 or sm_120a (default: the\n"
"                     schedule's 'target')\n"
"  -D NAME=VALUE      override 'const NAME' (a number, true/false, an\n"
"                     element type such as bf16, or a word); repeatable\n"
"  --mod FILE         read 'mod', 'param' and 'global' declarations\n"
"                     from FILE: each mod replaces the schedule's mod\n"
"                     of its name, the params and globals are added;\n"
"                     repeatable\n"
"  --emit KIND        ptx (default), ir (the schedule IR's text form),\n"
"                     dot (partitions, barriers and buffers for\n"
"                     Graphviz; a schedule the verifier refuses is\n"
"                     drawn with its errors in red, exit status 1)\n"
"                     or ast (the syntax tree)\n"
"  --check            run every check, write nothing\n"
"  --dump-after PASS  print the IR after PASS (sirgen, layout,\n"
"                     legalize, verify) to standard error\n"
"  --verify-each      check the IR's invariants after every pass\n"
"  --no-verify        skip the schedule verifier (barrier protocol,\n"
"                     deadlocks); for debugging a hang on the GPU\n"
"  --debug-hangs      bounded waits: an mbarrier wait that has not\n"
"                     passed after 2 s prints the CTA, partition, warp,\n"
"                     barrier, parity, source line and tile and loop\n"
"                     iteration, then traps\n"
"  -Wno-NAME          turn warning NAME off (e.g. -Wno-unused-warps)\n"
"  -Werror=NAME       make warning NAME an error\n"
"  -Werror            make every warning an error\n"
"  -h, --help         print this help\n"
"  --version          print the version\n"
"\n"
"FILE may be '-' for standard input.  Exit status: 0 success, 1 errors\n"
"in the schedule, 2 usage, I/O or internal errors.\n";

#define MAXMODFILES 64

typedef struct Opts {
	const char *in, *out;
	EmitKind emit;
	bool check;
	const char *mods[MAXMODFILES];  /* --mod FILE, in order */
	int nmods;
} Opts;

static noreturn void die(const char *fmt, ...) FMT(1, 2);

static noreturn void
die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fagen: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	exit(2);
}

/* Read all of path ('-': standard input), at most MAXSRC bytes: one byte
 * more is read only to see that there is more, and then the input is
 * refused without reading the rest. */
static char *
slurp(const char *path, size_t *len)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	const char *shown = f == stdin ? "<stdin>" : path;
	size_t cap = 1 << 16, n = 0, r;
	char *p, *q;
	int err;

	if (!f)
		die("cannot open '%s': %s", path, strerror(errno));
	p = malloc(cap);
	if (!p)
		die("out of memory reading '%s'", shown);
	do {
		if (n == cap) {
			cap = cap > MAXSRC / 2 ? (size_t)MAXSRC + 1 : cap * 2;
			q = realloc(p, cap);
			if (!q) {
				free(p);
				die("out of memory reading '%s'", shown);
			}
			p = q;
		}
		r = fread(p + n, 1, cap - n, f);
		n += r;
	} while (r > 0 && n <= MAXSRC);
	err = ferror(f) ? (errno ? errno : EIO) : 0;
	if (f != stdin)
		fclose(f);
	if (err || n > MAXSRC)
		free(p);
	if (err)
		die("cannot read '%s': %s", shown, strerror(err));
	if (n > MAXSRC)
		die("'%s' is larger than %u MiB (%u bytes), the most fagen "
		    "reads", shown, MAXSRC >> 20, MAXSRC);
	*len = n;
	return p;
}

/* Write n bytes of s to f and close f (NULL: its open failed, errno
 * says why).  Returns 0 or the errno of the first failure. */
static int
put_close(FILE *f, const char *s, size_t n)
{
	int err = 0;

	if (!f)
		return errno ? errno : EIO;
	if (fwrite(s, 1, n, f) != n)
		err = errno ? errno : EIO;
	errno = 0;
	if (fclose(f) && !err)
		err = errno ? errno : EIO;
	return err;
}

/* Write to OUT.tmpXXXXXX beside OUT, then rename over it.  An OUT that
 * exists and is not a regular file (/dev/null, a FIFO, a terminal) is
 * written in place: renaming over it would replace the device, which
 * root may do. */
static void
write_out(const char *path, const char *s, size_t n)
{
	struct stat st;
	int err;

	if (!strcmp(path, "-")) {
		errno = 0;
		if (fwrite(s, 1, n, stdout) != n || fflush(stdout))
			die("cannot write to standard output: %s",
			    strerror(errno ? errno : EIO));
		return;
	}
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode) &&
	    !S_ISDIR(st.st_mode)) {
		errno = 0;
		err = put_close(fopen(path, "wb"), s, n);
		if (err)
			die("cannot write '%s': %s", path, strerror(err));
		return;
	}
	size_t pl = strlen(path);
	char *tmp = malloc(pl + 16);
	if (!tmp)
		die("out of memory%s", "");
	snprintf(tmp, pl + 16, "%s.tmpXXXXXX", path);
	int fd = mkstemp(tmp);
	if (fd < 0) {
		err = errno;
		free(tmp);
		die("cannot create a file beside '%s': %s", path,
		    strerror(err));
	}
	/* mkstemp makes it 0600: give OUT the mode a plain create would */
	mode_t mask = umask(0);
	umask(mask);
	errno = 0;
	if (fchmod(fd, 0666 & ~mask)) {
		err = errno;
		close(fd);
	} else {
		err = put_close(fdopen(fd, "wb"), s, n);
	}
	if (!err && rename(tmp, path))
		err = errno;
	if (err) {
		unlink(tmp);
		free(tmp);
		die("cannot write '%s': %s", path, strerror(err));
	}
	free(tmp);
}

static void
add_define(Ctx *ctx, const char *arg)
{
	const char *eq = strchr(arg, '=');
	const char *name;

	if (!eq || eq == arg)
		die("-D needs NAME=VALUE, found '%s'", arg);
	for (const char *p = arg; p < eq; p++)
		if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' &&
		    *p <= 'Z') || (p > arg && *p >= '0' && *p <= '9')))
			die("-D %s: NAME must be an identifier", arg);
	name = intern(ctx->strs, arg, (size_t)(eq - arg));
	if (!ctx_define(ctx, name, eq + 1))
		die("-D %s is given twice", name);
}

static const char *
optarg_of(int argc, char **argv, int *i, const char *flag)
{
	size_t n = strlen(flag);

	if (strncmp(argv[*i], flag, n))
		return NULL;
	if (argv[*i][n] == '=')
		return argv[*i] + n + 1;
	if (argv[*i][n])
		return NULL;
	if (*i + 1 >= argc)
		die("%s needs a value", flag);
	return argv[++*i];
}

/* The warning name of option opt, which starts at name: a usage error
 * unless it is a known warning's. */
static const char *
warning_of(const char *opt, const char *name)
{
	char known[256];
	const char *near, *w;
	size_t n = 0;

	if (diag_warning_known(name, &near))
		return name;
	if (near)
		die("%s: unknown warning '%s'; did you mean '%s'?", opt, name,
		    near);
	for (size_t i = 0; (w = diag_warning_name(i)); i++)
		n += (size_t)snprintf(known + n, sizeof known - n, "%s%s",
		    i ? ", " : "", w);
	if (!*name)
		die("%s needs a warning name (%s)", opt, known);
	die("%s: unknown warning '%s' (the warnings are %s)", opt, name,
	    known);
}

static void
parse_args(Ctx *ctx, Opts *o, int argc, char **argv)
{
	const char *v;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage, stdout);
			exit(0);
		} else if (!strcmp(a, "--version")) {
			printf("fagen %s\n", FAGEN_VERSION);
			exit(0);
		} else if (!strcmp(a, "-o")) {
			if (i + 1 >= argc)
				die("-o needs a file name%s", "");
			o->out = argv[++i];
		} else if ((v = optarg_of(argc, argv, &i, "--arch"))) {
			const Target *t = target_lookup(v);
			if (!t)
				die("--arch: unknown target '%s' (sm_90a, "
					"sm_100a, sm_80 or sm_120a)", v);
			ctx->arch = t->id;
		} else if (!strncmp(a, "-D", 2)) {
			if (!a[2] && i + 1 >= argc)
				die("-D needs NAME=VALUE%s", "");
			add_define(ctx, a[2] ? a + 2 : argv[++i]);
		} else if ((v = optarg_of(argc, argv, &i, "--mod"))) {
			if (o->nmods == MAXMODFILES)
				die("--mod: at most %d files", MAXMODFILES);
			o->mods[o->nmods++] = v;
		} else if ((v = optarg_of(argc, argv, &i, "--emit"))) {
			if (!strcmp(v, "ptx"))
				o->emit = EMIT_PTX;
			else if (!strcmp(v, "ir"))
				o->emit = EMIT_IR;
			else if (!strcmp(v, "ast"))
				o->emit = EMIT_AST;
			else if (!strcmp(v, "dot"))
				o->emit = EMIT_DOT;
			else
				die("--emit: unknown kind '%s' (ptx, ir, dot or "
					"ast)", v);
		} else if (!strcmp(a, "--check")) {
			o->check = true;
		} else if ((v = optarg_of(argc, argv, &i, "--dump-after"))) {
			if (!pass_known(v))
				die("--dump-after: unknown pass '%s' (sirgen, "
					"layout, legalize, verify)", v);
			ctx->dump_after = v;
		} else if (!strcmp(a, "--debug-hangs")) {
			ctx->debug_hangs = true;
		} else if (!strcmp(a, "--no-verify")) {
			ctx->no_verify = true;
		} else if (!strcmp(a, "--verify-each")) {
			ctx->verify_each = true;
		} else if (!strcmp(a, "-Werror")) {
			ctx->werror = true;
		} else if (!strncmp(a, "-Werror=", 8)) {
			diag_set_warning(ctx, warning_of(a, a + 8), 2);
		} else if (!strncmp(a, "-Wno-", 5)) {
			diag_set_warning(ctx, warning_of(a, a + 5), 0);
		} else if (!strncmp(a, "-W", 2) && a[2]) {
			diag_set_warning(ctx, warning_of(a, a + 2), 1);
		} else if (a[0] == '-' && a[1]) {
			die("unknown option '%s' (see --help)", a);
		} else if (o->in) {
			die("one input file at a time; found a second: '%s'", a);
		} else {
			o->in = a;
		}
	}
	if (!o->in)
		die("no input file (see --help)%s", "");
}

int
main(int argc, char **argv)
{
	jmp_buf oom;
	Ctx ctx;
	Opts o = {.out = "-"};
	Buf dump;
	size_t len;
	int nerr;

	if (setjmp(oom)) {
		fputs("fagen: out of memory\n", stderr);
		return 2;
	}
	ctx_init(&ctx, arena_default_alloc, NULL, &oom);
	ctx.verify_each = getenv("FAGEN_VERIFY_EACH") != NULL;
	ctx.verify_threads = true;
	parse_args(&ctx, &o, argc, argv);
	char *text = slurp(o.in, &len), *mtext[MAXMODFILES];
	src_init(&ctx, strcmp(o.in, "-") ? o.in : "<stdin>", text, len);
	for (int i = 0; i < o.nmods; i++) {
		if (!strcmp(o.mods[i], "-") && !strcmp(o.in, "-"))
			die("--mod -: standard input is the schedule already%s",
			    "");
		mtext[i] = slurp(o.mods[i], &len);
		src_add(&ctx, strcmp(o.mods[i], "-") ? o.mods[i] : "<stdin>",
		    mtext[i], len);
	}
	buf_init(&dump, &ctx.perm);
	ctx.dump = &dump;
	nerr = driver_compile(&ctx, o.emit, o.check);
	if (dump.len)
		fwrite(dump.p, 1, dump.len, stderr);
	Buf diags;
	buf_init(&diags, &ctx.perm);
	diag_render(&ctx, &diags);
	fwrite(diags.p, 1, diags.len, stderr);
	/* --emit dot also writes the graph of a schedule the verifier
	 * refuses, its errors drawn in red */
	if ((nerr == 0 || (o.emit == EMIT_DOT && ctx.out.len)) && !o.check)
		write_out(o.out, ctx.out.p ? ctx.out.p : "", ctx.out.len);
	free(text);
	for (int i = 0; i < o.nmods; i++)
		free(mtext[i]);
	ctx_free(&ctx);
	return nerr ? 1 : 0;
}
