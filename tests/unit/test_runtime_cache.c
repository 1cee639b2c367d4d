/* test_runtime_cache.c: the kernel cache and the assemblers, without a
 * GPU.  SHA-256 against the FIPS vectors; cache keys that are stable and
 * separate every input; entries that round-trip through disk and memory;
 * every kind of damaged entry detected and rebuilt, never loaded; an
 * unwritable directory falling back to memory; 16 processes writing one
 * key at once; and, where nvJitLink or ptxas is installed, a real
 * PTX-to-cubin assembly that a second context finds on disk. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "rt_front.h"
#include "testalloc.h"

typedef struct Fix {
	char dir[256];        /* a fresh cache directory */
	TestAlloc ta;
	int warnings;
	char last[512];       /* the last warning */
	fg_ctx *ctx;
} Fix;

static void
count_warnings(void *ud, int level, const char *msg)
{
	if (level == FG_LOG_WARN) {
		((Fix *)ud)->warnings++;
		snprintf(((Fix *)ud)->last, sizeof ((Fix *)ud)->last, "%s",
			msg);
	}
}

static fg_ctx *
new_ctx(Fix *f, const char *dir, unsigned jit)
{
	fg_options o = {.alloc = test_alloc, .alloc_ud = &f->ta,
		.cache_dir = dir, .log = count_warnings, .log_ud = f,
		.log_level = FG_LOG_WARN, .jit = jit,
		.driver_lib = "/nonexistent/libcuda.so.1"};
	fg_ctx *c;

	assert_int_equal(fg_ctx_create(&c, &o), FG_OK);
	return c;
}

static int
setup(void **state)
{
	Fix *f = calloc(1, sizeof *f);
	const char *t = getenv("TMPDIR");

	snprintf(f->dir, sizeof f->dir, "%s/fagen-cache-test-XXXXXX",
		t && t[0] ? t : "/tmp");
	assert_non_null(mkdtemp(f->dir));
	f->ctx = new_ctx(f, f->dir, 0);
	*state = f;
	return 0;
}

static void
rm_tree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[512];

	while (d && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		if (unlink(p))
			rm_tree(p);
	}
	if (d)
		closedir(d);
	chmod(dir, 0700);
	rmdir(dir);
}

static int
teardown(void **state)
{
	Fix *f = *state;

	fg_ctx_destroy(f->ctx);
	assert_int_equal(f->ta.live, 0);
	assert_int_equal(f->ta.bytes, 0);
	rm_tree(f->dir);
	free(f);
	return 0;
}

static void
key_of(uint8_t key[32], const char *ptx)
{
	cache_key(key, ptx, strlen(ptx), "sm_90a", "-arch=sm_90a",
		"nvJitLink 13.0");
}

/* Fake cubin bytes: the cache never looks inside. */
static void
fake(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

/* A fresh context (no memory cache) reading key. */
static CacheResult
fresh_get(Fix *f, const uint8_t key[32], void **data, size_t *len,
	fg_code_source *src)
{
	fg_ctx *c = new_ctx(f, f->dir, 0);
	CacheResult r = cache_get(c, key, data, len, src);

	if (r == CACHE_HIT) {   /* hand the bytes to the caller's context */
		void *p = rt_alloc(f->ctx, *len);
		memcpy(p, *data, *len);
		rt_free(c, *data, *len);
		*data = p;
	}
	fg_ctx_destroy(c);
	return r;
}

/* ---------------------------------------------------------------- sha256 */

static void
sha256_matches_the_fips_vectors(void **state)
{
	static const struct {
		const char *msg, *hex;
	} v[] = {
		{"", "e3b0c44298fc1c149afbf4c8996fb924"
			"27ae41e4649b934ca495991b7852b855"},
		{"abc", "ba7816bf8f01cfea414140de5dae2223"
			"b00361a396177a9cb410ff61f20015ad"},
		{"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
			"248d6a61d20638b8e5c026930c3e6039"
			"a33ce45964ff2167f6ecedd419db06c1"},
	};
	uint8_t h[32];
	char hex[65];
	Sha256 s;

	(void)state;
	for (size_t i = 0; i < COUNT(v); i++) {
		sha256(v[i].msg, strlen(v[i].msg), h);
		hex32(h, hex);
		assert_string_equal(hex, v[i].hex);
	}
	/* a million 'a's in uneven pieces crosses every block boundary */
	char a[1000];
	memset(a, 'a', sizeof a);
	sha256_init(&s);
	for (size_t done = 0, k = 1; done < 1000000; done += k, k = k % 997 + 1)
		sha256_update(&s, a, done + k > 1000000 ? 1000000 - done : k);
	sha256_final(&s, h);
	hex32(h, hex);
	assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497"
		"200e046d39ccc7112cd0");
}

/* ---------------------------------------------------------------- keys */

/* key_of's key spelt out, for libfagen version ver: each field with its
 * length in front (u64 little-endian); the format name with its NUL. */
static void
hand_key(uint8_t key[32], const char *ver, const char *ptx)
{
	const char *f[] = {"fagen cubin cache, format 1", ver, "sm_90a",
		"-arch=sm_90a", "nvJitLink 13.0", ptx};
	Sha256 s;

	sha256_init(&s);
	for (size_t i = 0; i < COUNT(f); i++) {
		uint64_t n = strlen(f[i]) + (i == 0);
		uint8_t len[8];

		for (int j = 0; j < 8; j++)
			len[j] = (uint8_t)(n >> 8 * j);
		sha256_update(&s, len, 8);
		sha256_update(&s, f[i], n);
	}
	sha256_final(&s, key);
}

static void
cache_keys_are_stable_and_separate_every_input(void **state)
{
	uint8_t k[8][32];
	char hex[65];

	(void)state;
	key_of(k[0], ".version 8.6");
	/* libfagen's version is a field (issue #17): no release reads
	 * another's entries */
	hand_key(k[1], FAGEN_VERSION, ".version 8.6");
	assert_memory_equal(k[0], k[1], 32);
	hand_key(k[1], "0.1.0", ".version 8.6");
	hex32(k[1], hex);
	/* pinned: a change here orphans every cache entry in the field;
	 * bump the format in cache_key instead */
	assert_string_equal(hex, "0787c47d30527418498667de90289871"
		"1dcb1334fe0448c8a2ef71b7d5dfcf95");
	hand_key(k[1], "0.1.1", ".version 8.6");
	assert_memory_not_equal(k[0], k[1], 32);
	key_of(k[1], ".version 8.6");
	assert_memory_equal(k[0], k[1], 32);
	key_of(k[1], ".version 8.7");
	cache_key(k[2], ".version 8.6", 12, "sm_100a", "-arch=sm_90a",
		"nvJitLink 13.0");
	cache_key(k[3], ".version 8.6", 12, "sm_90a", "-arch=sm_90a -O1",
		"nvJitLink 13.0");
	cache_key(k[4], ".version 8.6", 12, "sm_90a", "-arch=sm_90a",
		"nvJitLink 13.1");
	/* field boundaries count: ("ab", "c") is not ("a", "bc") */
	cache_key(k[5], "x", 1, "ab", "c", "t");
	cache_key(k[6], "x", 1, "a", "bc", "t");
	cache_key(k[7], ".version 8.6", 11, "sm_90a", "-arch=sm_90a",
		"nvJitLink 13.0");
	for (int i = 0; i < 8; i++)
		for (int j = i + 1; j < 8; j++)
			if (!memcmp(k[i], k[j], 32))
				fail_msg("keys %d and %d collide", i, j);
}

/* ---------------------------------------------------------------- entries */

static void
entries_round_trip_through_disk_and_memory(void **state)
{
	Fix *f = *state;
	uint8_t key[32], data[5000];
	void *got;
	size_t len;
	fg_code_source src;

	key_of(key, "round trip");
	fake(data, sizeof data, 1);
	assert_int_equal(cache_get(f->ctx, key, &got, &len, &src), CACHE_MISS);
	cache_put(f->ctx, key, data, sizeof data);
	assert_int_equal(cache_get(f->ctx, key, &got, &len, &src), CACHE_HIT);
	assert_int_equal(src, FG_CODE_MEMORY);
	assert_int_equal(len, sizeof data);
	assert_memory_equal(got, data, len);
	rt_free(f->ctx, got, len);
	assert_int_equal(fresh_get(f, key, &got, &len, &src), CACHE_HIT);
	assert_int_equal(src, FG_CODE_DISK);
	assert_memory_equal(got, data, sizeof data);
	rt_free(f->ctx, got, len);
	char *path = cache_path(f->ctx, key);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, CACHE_HDR + sizeof data);
	assert_int_equal(st.st_mode & 0777, 0600);
	rt_strfree(f->ctx, path);
	assert_int_equal(f->warnings, 0);
}

/* Damage the entry at path: kind selects how. */
static void
damage(const char *path, int kind, const uint8_t *other_entry, size_t n)
{
	int fd;
	uint8_t b;

	switch (kind) {
	case 0: assert_int_equal(truncate(path, 40), 0); break;
	case 1: assert_int_equal(truncate(path, CACHE_HDR + 999), 0); break;
	case 2: assert_int_equal(truncate(path, 0), 0); break;
	case 3: case 4: case 5: case 6:
		/* a byte of the payload, the checksum, the magic, the length */
		fd = open(path, O_RDWR);
		off_t at = kind == 3 ? CACHE_HDR + 517 : kind == 4 ? 60 :
			kind == 5 ? 0 : 50;
		assert_int_equal(pread(fd, &b, 1, at), 1);
		b ^= 0x40;
		assert_int_equal(pwrite(fd, &b, 1, at), 1);
		close(fd);
		break;
	case 7:  /* a trailing byte */
		fd = open(path, O_WRONLY | O_APPEND);
		assert_int_equal(write(fd, "x", 1), 1);
		close(fd);
		break;
	case 8:  /* a whole, valid entry for another key */
		fd = open(path, O_WRONLY | O_TRUNC);
		assert_int_equal(write(fd, other_entry, n), (ssize_t)n);
		close(fd);
		break;
	default:  /* garbage */
		fd = open(path, O_WRONLY | O_TRUNC);
		for (int i = 0; i < 300; i++)
			assert_int_equal(write(fd, "garbage!", 8), 8);
		close(fd);
	}
}

static void
damaged_entries_are_rejected_and_rebuilt(void **state)
{
	Fix *f = *state;
	uint8_t key[32], okey[32], data[1000], odata[1000];
	uint8_t other[CACHE_HDR + sizeof odata];
	void *got;
	size_t len;
	fg_code_source src;

	key_of(key, "damaged");
	key_of(okey, "another kernel");
	fake(data, sizeof data, 2);
	fake(odata, sizeof odata, 3);
	cache_encode_hdr(other, okey, odata, sizeof odata);
	memcpy(other + CACHE_HDR, odata, sizeof odata);
	char *path = cache_path(f->ctx, key);
	for (int kind = 0; kind < 10; kind++) {
		cache_put(f->ctx, key, data, sizeof data);
		damage(path, kind, other, sizeof other);
		if (fresh_get(f, key, &got, &len, &src) != CACHE_BAD)
			fail_msg("damage %d was not detected", kind);
		assert_null(got);
		/* the rebuild replaces it */
		fg_ctx *c = new_ctx(f, f->dir, 0);
		cache_put(c, key, data, sizeof data);
		fg_ctx_destroy(c);
		assert_int_equal(fresh_get(f, key, &got, &len, &src),
			CACHE_HIT);
		assert_memory_equal(got, data, sizeof data);
		rt_free(f->ctx, got, len);
	}
	/* a directory where the entry should be */
	unlink(path);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(fresh_get(f, key, &got, &len, &src), CACHE_BAD);
	rmdir(path);
	rt_strfree(f->ctx, path);
	assert_int_equal(f->warnings, 11);  /* one per damaged entry */
}

static void
unwritable_directory_falls_back_to_memory(void **state)
{
	Fix *f = *state;
	char dir[400];
	uint8_t key[32], data[100];
	void *got;
	size_t len;
	fg_code_source src;

	/* below a regular file: no one can write there, root included */
	snprintf(dir, sizeof dir, "%s/file", f->dir);
	close(open(dir, O_WRONLY | O_CREAT, 0600));
	strcat(dir, "/cache");
	fg_ctx *c = new_ctx(f, dir, 0);
	key_of(key, "read-only");
	fake(data, sizeof data, 4);
	for (int i = 0; i < 3; i++)
		cache_put(c, key, data, sizeof data);
	assert_int_equal(f->warnings, 1);  /* said once */
	assert_int_equal(cache_get(c, key, &got, &len, &src), CACHE_HIT);
	assert_int_equal(src, FG_CODE_MEMORY);
	rt_free(c, got, len);
	fg_ctx_destroy(c);
	/* the directory is a regular file: say so, not "File exists" */
	snprintf(dir, sizeof dir, "%s/file", f->dir);
	c = new_ctx(f, dir, 0);
	cache_put(c, key, data, sizeof data);
	assert_int_equal(f->warnings, 2);
	if (!strstr(f->last, "Not a directory") || strstr(f->last, "exists"))
		fail_msg("warning: %s", f->last);
	fg_ctx_destroy(c);
	/* a read-only directory, where permissions bind (not root) */
	char probe_path[512];
	snprintf(dir, sizeof dir, "%s/ro", f->dir);
	snprintf(probe_path, sizeof probe_path, "%s/probe", dir);
	mkdir(dir, 0500);
	int probe = open(probe_path, O_WRONLY | O_CREAT, 0600);
	if (probe >= 0) {
		close(probe);
		return;  /* root: the directory is writable after all */
	}
	c = new_ctx(f, dir, 0);
	cache_put(c, key, data, sizeof data);
	assert_int_equal(f->warnings, 2);
	assert_int_equal(cache_get(c, key, &got, &len, &src), CACHE_HIT);
	rt_free(c, got, len);
	fg_ctx_destroy(c);
}

/* 16 processes write (and read) one 256 KB key at once, 10 times each.
 * A reader never sees a partial entry, and the survivor is whole. */
static void
concurrent_writers_leave_a_valid_entry(void **state)
{
	Fix *f = *state;
	enum { NPROC = 16, REPS = 10, SIZE = 256 << 10 };
	uint8_t key[32];
	uint8_t *data = malloc(SIZE);
	pid_t pids[NPROC];

	key_of(key, "contended");
	fake(data, SIZE, 5);
	for (int i = 0; i < NPROC; i++) {
		if ((pids[i] = fork()) == 0) {
			fg_options o = {.cache_dir = f->dir};
			int bad = 0;
			for (int rep = 0; rep < REPS; rep++) {
				fg_ctx *c;
				void *got;
				size_t len;
				fg_code_source src;
				fg_ctx_create(&c, &o);
				CacheResult r = cache_get(c, key, &got, &len,
					&src);
				bad += r == CACHE_BAD || (r == CACHE_HIT &&
					(len != SIZE ||
					memcmp(got, data, SIZE)));
				if (r == CACHE_HIT)
					rt_free(c, got, len);
				cache_put(c, key, data, SIZE);
				fg_ctx_destroy(c);
			}
			_exit(bad ? 1 : 0);
		}
		assert_true(pids[i] > 0);
	}
	for (int i = 0; i < NPROC; i++) {
		int st;
		assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			fail_msg("writer %d saw a partial or wrong entry", i);
	}
	void *got;
	size_t len;
	fg_code_source src;
	assert_int_equal(fresh_get(f, key, &got, &len, &src), CACHE_HIT);
	assert_int_equal(len, SIZE);
	assert_memory_equal(got, data, SIZE);
	rt_free(f->ctx, got, len);
	/* no temporary file is left behind */
	DIR *d = opendir(f->dir);
	struct dirent *e;
	int n = 0;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	assert_int_equal(n, 1);
	free(data);
}

/* ---------------------------------------------------------------- jit */

static char *
copy_ptx(Fix *f)
{
	fg_program *p;
	size_t n;

	assert_int_equal(fg_compile_file(f->ctx, FAGEN_SRCDIR
		"/schedules/copy_ws_sm90.fa", NULL, &p), FG_OK);
	const char *ptx = fg_program_ptx(p, &n);
	char *s = malloc(n + 1);
	memcpy(s, ptx, n + 1);
	fg_program_free(p);
	return s;
}

/* Skip unless the context has an assembler of kind which (0: any). */
static void
need(fg_ctx *c, int which)
{
	const char *tool;
	int w;

	if (jit_tool(c, NULL, &w, &tool) || w == FG_JIT_DRIVER ||
	    (which && w != which))
		skip();
}

/* Assemble ptx in context c; the kernel's info. */
static fg_kernel_info
assemble(fg_ctx *c, const char *ptx, fg_status want)
{
	fg_kernel *k;
	fg_kernel_info in;

	assert_int_equal(fg_kernel_create(c, ptx, 0, &k), FG_OK);
	fg_status st = fg_kernel_assemble(k);
	if (st != want)
		fail_msg("want %s, got %s: %s", fg_status_name(want),
			fg_status_name(st), fg_errmsg(c));
	fg_kernel_info_get(k, &in);
	size_t n;
	const uint8_t *cubin = fg_kernel_cubin(k, &n);
	if (in.source != FG_CODE_DRIVER && st == FG_OK)
		assert_true(n > 4 && !memcmp(cubin, "\x7f" "ELF", 4));
	fg_kernel_free(k);
	return in;
}

static void
assembled_code_is_cached_on_disk_and_in_memory(void **state)
{
	Fix *f = *state;
	char *ptx = copy_ptx(f);
	fg_kernel_info in;

	need(f->ctx, 0);
	in = assemble(f->ctx, ptx, FG_OK);
	assert_true(in.source == FG_CODE_NVJITLINK ||
		in.source == FG_CODE_PTXAS);
	in = assemble(f->ctx, ptx, FG_OK);
	assert_int_equal(in.source, FG_CODE_MEMORY);
	fg_ctx *c = new_ctx(f, f->dir, 0);
	in = assemble(c, ptx, FG_OK);
	assert_int_equal(in.source, FG_CODE_DISK);
	print_message("warm load from disk: %.3f ms\n", in.assemble_ms);
	fg_ctx_destroy(c);
	/* a damaged entry is rebuilt by assembling again */
	DIR *d = opendir(f->dir);
	struct dirent *e;
	char path[512] = "";
	while ((e = readdir(d)))
		if (strstr(e->d_name, ".cubin"))
			snprintf(path, sizeof path, "%s/%s", f->dir, e->d_name);
	closedir(d);
	assert_int_equal(truncate(path, CACHE_HDR + 100), 0);
	c = new_ctx(f, f->dir, 0);
	in = assemble(c, ptx, FG_OK);
	assert_true(in.source == FG_CODE_NVJITLINK ||
		in.source == FG_CODE_PTXAS);
	fg_ctx_destroy(c);
	c = new_ctx(f, f->dir, 0);
	assert_int_equal(assemble(c, ptx, FG_OK).source, FG_CODE_DISK);
	fg_ctx_destroy(c);
	free(ptx);
}

static void
ptxas_assembles_when_it_is_the_choice(void **state)
{
	Fix *f = *state;
	char *ptx = copy_ptx(f);
	fg_ctx *c = new_ctx(f, "", FG_JIT_PTXAS);

	need(c, FG_JIT_PTXAS);
	assert_int_equal(assemble(c, ptx, FG_OK).source, FG_CODE_PTXAS);
	fg_ctx_destroy(c);
	free(ptx);
}

static void
missing_nvjitlink_falls_back(void **state)
{
	Fix *f = *state;
	char *ptx = copy_ptx(f);
	fg_ctx *c;

	setenv("FAGEN_NVJITLINK_LIB", "/nonexistent/libnvJitLink.so", 1);
	c = new_ctx(f, "", FG_JIT_NVJITLINK);
	assemble(c, ptx, FG_ERR_JIT);
	assert_non_null(strstr(fg_errmsg(c), "no PTX assembler: nvJitLink: "
		"/nonexistent/libnvJitLink.so"));
	fg_ctx_destroy(c);
	/* the driver's JIT is left for load time, which needs a driver */
	c = new_ctx(f, "", FG_JIT_NVJITLINK | FG_JIT_DRIVER);
	fg_kernel *k;
	assert_int_equal(fg_kernel_create(c, ptx, 0, &k), FG_OK);
	assert_int_equal(fg_kernel_assemble(k), FG_OK);
	assert_null(fg_kernel_cubin(k, NULL));
	assert_int_equal(fg_kernel_load(k), FG_ERR_NO_DRIVER);
	fg_kernel_free(k);
	fg_ctx_destroy(c);
	c = new_ctx(f, "", FG_JIT_NVJITLINK | FG_JIT_PTXAS);
	need(c, FG_JIT_PTXAS);
	assert_int_equal(assemble(c, ptx, FG_OK).source, FG_CODE_PTXAS);
	fg_ctx_destroy(c);
	unsetenv("FAGEN_NVJITLINK_LIB");
	free(ptx);
}

static void
rejected_ptx_returns_the_assemblers_log(void **state)
{
	Fix *f = *state;
	static const char bad[] =
		"// fagen.kernel name=k target=sm_90a threads=32 order=single\n"
		".version 8.6\n.target sm_90a\n.address_size 64\n"
		".visible .entry k()\n{\n\tbogus.instruction %r1;\n}\n";

	need(f->ctx, 0);
	assemble(f->ctx, bad, FG_ERR_JIT);
	assert_non_null(strstr(fg_errmsg(f->ctx), "cannot assemble the PTX "
		"for sm_90a"));
	assert_non_null(strstr(fg_errmsg(f->ctx), "bogus"));
	DIR *d = opendir(f->dir);
	struct dirent *e;
	while ((e = readdir(d)))
		assert_true(e->d_name[0] == '.');  /* nothing was cached */
	closedir(d);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sha256_matches_the_fips_vectors),
		cmocka_unit_test(
			cache_keys_are_stable_and_separate_every_input),
		T(entries_round_trip_through_disk_and_memory),
		T(damaged_entries_are_rejected_and_rebuilt),
		T(unwritable_directory_falls_back_to_memory),
		T(concurrent_writers_leave_a_valid_entry),
		T(assembled_code_is_cached_on_disk_and_in_memory),
		T(ptxas_assembles_when_it_is_the_choice),
		T(missing_nvjitlink_falls_back),
		T(rejected_ptx_returns_the_assemblers_log),
	};

	setenv("FAGEN_CACHE_DIR", "/nonexistent/fagen-test-cache", 1);
	unsetenv("FAGEN_NVJITLINK_LIB");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
