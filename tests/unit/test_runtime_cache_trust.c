/* test_runtime_cache_trust.c: the disk cache as a trust boundary (issue
 * 20), without a GPU.  A directory that others may write to, a directory
 * that is a symbolic link or someone else's, an entry that is a link, is
 * someone else's or is writable by others: each is refused with its
 * warning, and nothing is loaded from it.  The user's own directory, a
 * default one and root's read-only system cache still work, and 16
 * processes sharing keys never load a corrupt entry.  The tests that need
 * another uid run only as root. */
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

enum { OTHER_UID = 4242, LEN = 3000 };

typedef struct Fix {
	char dir[256];        /* a fresh directory for the test's caches */
	TestAlloc ta;
	int warnings;
	char last[512];       /* the last warning */
} Fix;

static const char refused[] = ": caching in memory only; "
	"FAGEN_CACHE_TRUST_ANY=1 accepts it";

static void
count_warnings(void *ud, int level, const char *msg)
{
	Fix *f = ud;

	if (level == FG_LOG_WARN) {
		f->warnings++;
		snprintf(f->last, sizeof f->last, "%s", msg);
	}
}

static fg_ctx *
new_ctx(Fix *f, const char *dir)
{
	fg_options o = {.alloc = test_alloc, .alloc_ud = &f->ta,
		.cache_dir = dir, .log = count_warnings, .log_ud = f,
		.log_level = FG_LOG_WARN,
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

	snprintf(f->dir, sizeof f->dir, "%s/fagen-trust-test-XXXXXX",
		t && t[0] ? t : "/tmp");
	assert_non_null(mkdtemp(f->dir));
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
	rmdir(dir);
}

static int
teardown(void **state)
{
	Fix *f = *state;

	assert_int_equal(f->ta.live, 0);
	rm_tree(f->dir);
	free(f);
	return 0;
}

static void
key_of(uint8_t key[32], const char *name)
{
	cache_key(key, name, strlen(name), "sm_90a", "-arch=sm_90a", "test");
}

/* Fake cubin bytes for seed: the cache never looks inside. */
static void
fake(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

/* <f->dir>/<name>, made with mode, in out. */
static char *
sub(Fix *f, const char *name, mode_t mode, char out[400])
{
	snprintf(out, 400, "%s/%s", f->dir, name);
	assert_int_equal(mkdir(out, 0700), 0);
	assert_int_equal(chmod(out, mode), 0);
	return out;
}

/* A valid entry for key (payload of seed) in dir, mode 0600; its path. */
static char *
plant(const char *dir, const uint8_t key[32], unsigned seed, char out[512])
{
	uint8_t e[CACHE_HDR + LEN];
	char hex[65];
	int fd;

	fake(e + CACHE_HDR, LEN, seed);
	cache_encode_hdr(e, key, e + CACHE_HDR, LEN);
	hex32(key, hex);
	snprintf(out, 512, "%s/%s.cubin", dir, hex);
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, e, sizeof e), (ssize_t)sizeof e);
	close(fd);
	return out;
}

/* A fresh context on dir looks key up; a hit must be seed's payload, and
 * anything else must leave no data. */
static CacheResult
load(Fix *f, const char *dir, const uint8_t key[32], unsigned seed,
	fg_code_source *src)
{
	fg_ctx *c = new_ctx(f, dir);
	uint8_t want[LEN];
	void *data;
	size_t len;
	CacheResult r = cache_get(c, key, &data, &len, src);

	if (r == CACHE_HIT) {
		fake(want, LEN, seed);
		assert_int_equal(len, LEN);
		assert_memory_equal(data, want, LEN);
		rt_free(c, data, len);
	} else {
		assert_null(data);
	}
	fg_ctx_destroy(c);
	return r;
}

static int
count_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* The warning for a refused directory, whole. */
static void
assert_refused(const Fix *f, const char *dir, const char *why)
{
	char want[800];

	snprintf(want, sizeof want, "cache directory %s is refused (%s)%s",
		dir, why, refused);
	assert_string_equal(f->last, want);
}

/* ---------------------------------------------------------------- dirs */

/* A directory others may write to: the planted entry is not loaded,
 * nothing is written there, the context caches in memory, and the
 * warning comes once. */
static void
world_writable_directory_is_refused(void **state)
{
	Fix *f = *state;
	uint8_t key[32], key2[32], data[LEN];
	char dir[400], path[512];
	fg_code_source src;
	void *got;
	size_t len;

	key_of(key, "planted");
	key_of(key2, "new");
	plant(sub(f, "shared", 0777, dir), key, 1, path);
	fg_ctx *c = new_ctx(f, dir);
	assert_int_equal(cache_get(c, key, &got, &len, &src), CACHE_MISS);
	assert_null(got);
	assert_int_equal(f->warnings, 1);
	assert_refused(f, dir, "its mode 0777 lets others write to it");
	fake(data, LEN, 2);
	cache_put(c, key2, data, LEN);
	assert_int_equal(count_files(dir), 1);   /* only the planted one */
	assert_int_equal(cache_get(c, key2, &got, &len, &src), CACHE_HIT);
	assert_int_equal(src, FG_CODE_MEMORY);
	rt_free(c, got, len);
	assert_int_equal(cache_get(c, key, &got, &len, &src), CACHE_MISS);
	assert_int_equal(f->warnings, 1);        /* said once */
	fg_ctx_destroy(c);
	/* group write is refused the same way */
	assert_int_equal(chmod(dir, 0770), 0);
	assert_int_equal(load(f, dir, key, 1, &src), CACHE_MISS);
	assert_int_equal(f->warnings, 2);
	assert_refused(f, dir, "its mode 0770 lets its group write to it");
}

/* A link to a good directory is refused, whether the context's first
 * use reads or writes (which makes missing directories first). */
static void
symlinked_directory_is_refused(void **state)
{
	Fix *f = *state;
	uint8_t key[32], data[LEN];
	char real[400], link[400], path[512];
	fg_code_source src;

	key_of(key, "planted");
	plant(sub(f, "real", 0700, real), key, 1, path);
	snprintf(link, sizeof link, "%s/link", f->dir);
	assert_int_equal(symlink(real, link), 0);
	assert_int_equal(load(f, link, key, 1, &src), CACHE_MISS);
	assert_int_equal(f->warnings, 1);
	assert_refused(f, link, "it is a symbolic link");
	fg_ctx *c = new_ctx(f, link);
	fake(data, LEN, 2);
	cache_put(c, key, data, LEN);
	fg_ctx_destroy(c);
	assert_int_equal(f->warnings, 2);
	assert_refused(f, link, "it is a symbolic link");
	/* the planted entry is as it was: nothing was written through */
	assert_int_equal(count_files(real), 1);
	assert_int_equal(load(f, real, key, 1, &src), CACHE_HIT);
	assert_int_equal(src, FG_CODE_DISK);
}

static void
directory_owned_by_another_user_is_refused(void **state)
{
	Fix *f = *state;
	uint8_t key[32];
	char dir[400], path[512], why[200];
	fg_code_source src;

	if (geteuid() != 0)
		skip();  /* making one needs chown */
	key_of(key, "planted");
	plant(sub(f, "theirs", 0700, dir), key, 1, path);
	assert_int_equal(chown(dir, OTHER_UID, OTHER_UID), 0);
	assert_int_equal(load(f, dir, key, 1, &src), CACHE_MISS);
	assert_int_equal(f->warnings, 1);
	snprintf(why, sizeof why, "it is owned by uid %d, not by this user "
		"(uid 0) or root", OTHER_UID);
	assert_refused(f, dir, why);
}

/* ---------------------------------------------------------------- entries */

/* An entry that links to a valid entry elsewhere is not followed; the
 * rebuild replaces the link, not what it points to. */
static void
symlinked_entry_is_refused(void **state)
{
	Fix *f = *state;
	uint8_t key[32], data[LEN];
	char a[400], b[400], target[512], path[512], want[700];
	fg_code_source src;
	struct stat st;

	key_of(key, "linked");
	plant(sub(f, "a", 0700, a), key, 1, target);
	plant(sub(f, "b", 0700, b), key, 1, path);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(symlink(target, path), 0);
	assert_int_equal(load(f, b, key, 1, &src), CACHE_BAD);
	assert_int_equal(f->warnings, 1);
	snprintf(want, sizeof want, "cache entry %s is a symbolic link: "
		"rebuilding it", path);
	assert_string_equal(f->last, want);
	fg_ctx *c = new_ctx(f, b);
	fake(data, LEN, 2);
	cache_put(c, key, data, LEN);
	fg_ctx_destroy(c);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(load(f, b, key, 2, &src), CACHE_HIT);
	assert_int_equal(load(f, a, key, 1, &src), CACHE_HIT);
	assert_int_equal(f->warnings, 1);
}

static void
entry_owned_by_another_user_is_refused(void **state)
{
	Fix *f = *state;
	uint8_t key[32], data[LEN];
	char dir[400], path[512], want[700];
	fg_code_source src;

	if (geteuid() != 0)
		skip();  /* making one needs chown */
	key_of(key, "theirs");
	plant(sub(f, "mine", 0700, dir), key, 1, path);
	assert_int_equal(chown(path, OTHER_UID, OTHER_UID), 0);
	assert_int_equal(load(f, dir, key, 1, &src), CACHE_BAD);
	assert_int_equal(f->warnings, 1);
	snprintf(want, sizeof want, "cache entry %s is owned by another "
		"user: rebuilding it", path);
	assert_string_equal(f->last, want);
	/* the rebuilt entry is the user's, and loads */
	fg_ctx *c = new_ctx(f, dir);
	fake(data, LEN, 2);
	cache_put(c, key, data, LEN);
	fg_ctx_destroy(c);
	assert_int_equal(load(f, dir, key, 2, &src), CACHE_HIT);
	assert_int_equal(src, FG_CODE_DISK);
	assert_int_equal(f->warnings, 1);
}

static void
entry_writable_by_others_is_refused(void **state)
{
	Fix *f = *state;
	uint8_t key[32];
	char dir[400], path[512], want[700];
	fg_code_source src;

	key_of(key, "open");
	plant(sub(f, "mine", 0755, dir), key, 1, path);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(chmod(path, i ? 0620 : 0606), 0);
		assert_int_equal(load(f, dir, key, 1, &src), CACHE_BAD);
		assert_int_equal(f->warnings, i + 1);
		snprintf(want, sizeof want, "cache entry %s is writable by "
			"others: rebuilding it", path);
		assert_string_equal(f->last, want);
	}
}

/* ---------------------------------------------------------------- trusted */

/* The user's own directories, 0700 or 0755, made or found, and the
 * default one: entries go to disk and come back from it, unwarned. */
static void
the_users_own_directory_still_hits(void **state)
{
	Fix *f = *state;
	uint8_t key[32], data[LEN];
	char dir[480], xdg[400];
	const char *made[] = {"/new", "/new/deep", "/new/deep/cache"};
	const char *dirs[] = {"0700", "0755", "new/deep/cache", NULL};
	fg_code_source src;
	struct stat st;

	key_of(key, "mine");
	fake(data, LEN, 1);
	sub(f, "0700", 0700, dir);
	sub(f, "0755", 0755, dir);
	for (int i = 0; i < 4; i++) {
		fg_ctx *c;
		if (dirs[i]) {
			snprintf(dir, sizeof dir, "%s/%s", f->dir, dirs[i]);
			c = new_ctx(f, dir);
		} else {  /* the default: $XDG_CACHE_HOME/fagen, made */
			snprintf(xdg, sizeof xdg, "%s/xdg", f->dir);
			setenv("XDG_CACHE_HOME", xdg, 1);
			unsetenv("FAGEN_CACHE_DIR");
			c = new_ctx(f, NULL);
			snprintf(dir, sizeof dir, "%s/fagen", xdg);
			assert_string_equal(c->cache_dir, dir);
		}
		cache_put(c, key, data, LEN);
		fg_ctx_destroy(c);
		assert_int_equal(load(f, dir, key, 1, &src), CACHE_HIT);
		assert_int_equal(src, FG_CODE_DISK);
	}
	assert_int_equal(f->warnings, 0);
	/* what the cache made, it made 0700 */
	for (size_t i = 0; i < COUNT(made); i++) {
		snprintf(dir, sizeof dir, "%s%s", f->dir, made[i]);
		assert_int_equal(stat(dir, &st), 0);
		assert_int_equal(st.st_mode & 07777, 0700);
	}
	assert_int_equal(stat(xdg, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	setenv("FAGEN_CACHE_DIR", "/nonexistent/fagen-test-cache", 1);
	unsetenv("XDG_CACHE_HOME");
}

/* Root's cache, 0755 with 0644 entries, serves another user, who neither
 * writes to it nor hears a warning. */
static void
roots_cache_is_read_only_for_other_users(void **state)
{
	Fix *f = *state;
	uint8_t key[32], key2[32];
	char dir[400], path[512];
	int st;
	pid_t pid;

	if (geteuid() != 0)
		skip();  /* being another user needs setuid */
	key_of(key, "system");
	key_of(key2, "new");
	assert_int_equal(chmod(f->dir, 0755), 0);
	plant(sub(f, "system", 0755, dir), key, 1, path);
	assert_int_equal(chmod(path, 0644), 0);
	if ((pid = fork()) == 0) {
		uint8_t data[LEN];
		fg_code_source src;
		fg_ctx *c;
		void *got;
		size_t len;
		if (setgid(OTHER_UID) || setuid(OTHER_UID))
			_exit(3);
		fg_options o = {.cache_dir = dir, .log = count_warnings,
			.log_ud = f, .log_level = FG_LOG_WARN};
		if (fg_ctx_create(&c, &o))
			_exit(4);
		if (cache_get(c, key, &got, &len, &src) != CACHE_HIT ||
		    src != FG_CODE_DISK)
			_exit(5);
		free(got);
		fake(data, LEN, 2);
		cache_put(c, key2, data, LEN);
		fg_ctx_destroy(c);
		_exit(f->warnings ? 6 : 0);
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(count_files(dir), 1);
}

/* The administrator's opt-out: "1" accepts a shared directory and a link
 * to one; any other value does not. */
static void
trust_any_accepts_a_refused_directory(void **state)
{
	Fix *f = *state;
	uint8_t key[32];
	char dir[400], link[400], path[512];
	fg_code_source src;

	key_of(key, "shared");
	plant(sub(f, "shared", 0777, dir), key, 1, path);
	snprintf(link, sizeof link, "%s/link", f->dir);
	assert_int_equal(symlink(dir, link), 0);
	setenv("FAGEN_CACHE_TRUST_ANY", "1", 1);
	assert_int_equal(load(f, dir, key, 1, &src), CACHE_HIT);
	assert_int_equal(src, FG_CODE_DISK);
	assert_int_equal(load(f, link, key, 1, &src), CACHE_HIT);
	assert_int_equal(f->warnings, 0);
	setenv("FAGEN_CACHE_TRUST_ANY", "yes", 1);
	assert_int_equal(load(f, dir, key, 1, &src), CACHE_MISS);
	assert_int_equal(f->warnings, 1);
	unsetenv("FAGEN_CACHE_TRUST_ANY");
}

/* 16 processes, 4 keys, 20 rounds each: every read after a process's own
 * first write is a disk hit, none is corrupt, no temporary file stays. */
static void
sixteen_processes_sharing_keys_load_nothing_corrupt(void **state)
{
	Fix *f = *state;
	enum { NPROC = 16, REPS = 20, NKEYS = 4 };
	uint8_t key[NKEYS][32], data[LEN];
	pid_t pids[NPROC];
	char name[16];

	for (int k = 0; k < NKEYS; k++) {
		snprintf(name, sizeof name, "key %d", k);
		key_of(key[k], name);
	}
	for (int i = 0; i < NPROC; i++) {
		if ((pids[i] = fork()) == 0) {
			fg_options o = {.cache_dir = f->dir};
			int bad = 0, hits = 0;
			for (int rep = 0; rep < REPS; rep++) {
				fg_ctx *c;
				if (fg_ctx_create(&c, &o))
					_exit(3);
				for (int k = 0; k < NKEYS; k++) {
					void *got;
					size_t len;
					fg_code_source src;
					fake(data, LEN, (unsigned)k);
					CacheResult r = cache_get(c, key[k],
						&got, &len, &src);
					bad += r == CACHE_BAD;
					if (r == CACHE_HIT) {
						hits++;
						bad += len != LEN ||
							memcmp(got, data, LEN);
						free(got);
					}
					cache_put(c, key[k], data, LEN);
				}
				fg_ctx_destroy(c);
			}
			_exit(bad ? 1 : hits < (REPS - 1) * NKEYS ? 2 : 0);
		}
		assert_true(pids[i] > 0);
	}
	for (int i = 0; i < NPROC; i++) {
		int st;
		assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			fail_msg("process %d: %s", i, WIFEXITED(st) &&
				WEXITSTATUS(st) == 1 ? "a corrupt load" :
				"too few hits, or it failed");
	}
	for (int k = 0; k < NKEYS; k++) {
		fg_code_source src;
		assert_int_equal(load(f, f->dir, key[k], (unsigned)k, &src),
			CACHE_HIT);
	}
	assert_int_equal(count_files(f->dir), NKEYS);
	assert_int_equal(f->warnings, 0);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(world_writable_directory_is_refused),
		T(symlinked_directory_is_refused),
		T(directory_owned_by_another_user_is_refused),
		T(symlinked_entry_is_refused),
		T(entry_owned_by_another_user_is_refused),
		T(entry_writable_by_others_is_refused),
		T(the_users_own_directory_still_hits),
		T(roots_cache_is_read_only_for_other_users),
		T(trust_any_accepts_a_refused_directory),
		T(sixteen_processes_sharing_keys_load_nothing_corrupt),
	};

	setenv("FAGEN_CACHE_DIR", "/nonexistent/fagen-test-cache", 1);
	unsetenv("FAGEN_CACHE_TRUST_ANY");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
