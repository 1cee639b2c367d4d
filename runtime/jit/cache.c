/* cache.c: cubins by key, in memory per context and on disk.
 *
 * The key is SHA-256 over every input that decides the cubin: the PTX,
 * the arch, the assembler's options and the assembler's name and version
 * (cache_key).  An entry on disk is <dir>/<hex key>.cubin:
 *
 *	0   "FGCUBIN\0"        8 bytes
 *	8   format, 1          u32 little-endian
 *	12  header size, 88    u32
 *	16  key                32 bytes
 *	48  payload length     u64
 *	56  SHA-256(payload)   32 bytes
 *	88  payload: the cubin
 *
 * A file that differs from this in any field, or is shorter or longer,
 * is CACHE_BAD: it is never loaded, and the rebuilt entry replaces it.
 * Writers write a temporary file beside the entry and rename it over the
 * entry, so a reader sees a whole entry or none, however many processes
 * write the same key at once.  When the directory cannot be written (read-
 * only, permissions, no space) the context stops trying and keeps entries
 * in memory only; it still reads entries that are there.
 *
 * The checksum is not a signature: whoever can write into the directory
 * can plant a cubin that this process would run (issue 20).  So the
 * directory is opened once per context without following a link, and
 * trusted only when its owner is the user (or root: a system cache) and
 * no one else may write to it; every entry is opened relative to that
 * descriptor, never by path, and must be a regular file of the user's (or
 * the directory owner's) that no one else may write.  A directory that
 * fails is said once and not used at all; FAGEN_CACHE_TRUST_ANY=1 skips
 * the owner and mode checks. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_jit.h"

#define MAGIC "FGCUBIN"   /* with its NUL, 8 bytes */
enum { FORMAT = 1 };

struct CacheDir {
	int fd;              /* O_DIRECTORY, checked; -1: refused */
	uid_t owner;         /* the user, or root for a system cache */
	bool any;            /* FAGEN_CACHE_TRUST_ANY=1: no owner/mode checks */
};

struct MemEntry {
	uint8_t key[32];
	void *data;
	size_t len;
	MemEntry *next;
};

static void
put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> 8 * i);
}

static void
put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> 8 * i);
}

static uint64_t
get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Each field with its length in front, so no two field lists hash the
 * same bytes. */
static void
field(Sha256 *s, const void *p, size_t n)
{
	uint8_t len[8];

	put64(len, n);
	sha256_update(s, len, 8);
	sha256_update(s, p, n);
}

void
cache_key(uint8_t key[32], const char *ptx, size_t len, const char *arch,
	const char *opts, const char *tool)
{
	static const char what[] = "fagen cubin cache, format 1";
	Sha256 s;

	sha256_init(&s);
	field(&s, what, sizeof what);
	/* libfagen's: no release reads another's entries (issue #17) */
	field(&s, FAGEN_VERSION, strlen(FAGEN_VERSION));
	field(&s, arch, strlen(arch));
	field(&s, opts, strlen(opts));
	field(&s, tool, strlen(tool));
	field(&s, ptx, len);
	sha256_final(&s, key);
}

char *
cache_default_dir(fg_ctx *c)
{
	const char *d = getenv("FAGEN_CACHE_DIR"), *x, *h;
	char buf[PATH_MAX];
	int n = -1;

	if (d && d[0])
		n = snprintf(buf, sizeof buf, "%s", d);
	else if ((x = getenv("XDG_CACHE_HOME")) && x[0] == '/')
		n = snprintf(buf, sizeof buf, "%s/fagen", x);
	else if ((h = getenv("HOME")) && h[0])
		n = snprintf(buf, sizeof buf, "%s/.cache/fagen", h);
	if (n <= 0 || n >= (int)sizeof buf)
		return NULL;
	return rt_strdup(c, buf);
}

char *
cache_path(fg_ctx *c, const uint8_t key[32])
{
	char hex[65], buf[PATH_MAX];
	int n;

	if (!c->cache_dir)
		return NULL;
	hex32(key, hex);
	n = snprintf(buf, sizeof buf, "%s/%s.cubin", c->cache_dir, hex);
	return n > 0 && n < (int)sizeof buf ? rt_strdup(c, buf) : NULL;
}

void
cache_encode_hdr(uint8_t hdr[CACHE_HDR], const uint8_t key[32],
	const void *data, size_t len)
{
	memcpy(hdr, MAGIC, 8);
	put32(hdr + 8, FORMAT);
	put32(hdr + 12, CACHE_HDR);
	memcpy(hdr + 16, key, 32);
	put64(hdr + 48, len);
	sha256(data, len, hdr + 56);
}

/* ---------------------------------------------------------------- memory */

static bool
mem_get(fg_ctx *c, const uint8_t key[32], void **data, size_t *len)
{
	bool hit = false;

	pthread_mutex_lock(&c->mu);
	for (MemEntry *e = c->mem; e; e = e->next) {
		if (memcmp(e->key, key, 32))
			continue;
		if ((*data = rt_alloc(c, e->len))) {
			memcpy(*data, e->data, e->len);
			*len = e->len;
			hit = true;
		}
		break;
	}
	pthread_mutex_unlock(&c->mu);
	return hit;
}

static void
mem_put(fg_ctx *c, const uint8_t key[32], const void *data, size_t len)
{
	MemEntry *e;

	pthread_mutex_lock(&c->mu);
	for (e = c->mem; e; e = e->next)
		if (!memcmp(e->key, key, 32))
			break;
	if (!e && (e = rt_alloc(c, sizeof *e))) {
		if ((e->data = rt_alloc(c, len))) {
			memcpy(e->key, key, 32);
			memcpy(e->data, data, len);
			e->len = len;
			e->next = c->mem;
			c->mem = e;
		} else {
			rt_free(c, e, sizeof *e);  /* only a missed hit later */
		}
	}
	pthread_mutex_unlock(&c->mu);
}

void
cache_free(fg_ctx *c)
{
	MemEntry *e, *next;

	for (e = c->mem; e; e = next) {
		next = e->next;
		rt_free(c, e->data, e->len);
		rt_free(c, e, sizeof *e);
	}
	c->mem = NULL;
	if (c->dir) {
		if (c->dir->fd >= 0)
			close(c->dir->fd);
		rt_free(c, c->dir, sizeof *c->dir);
		c->dir = NULL;
	}
}

/* ---------------------------------------------------------------- disk */

static bool
read_full(int fd, void *p, size_t n)
{
	while (n) {
		ssize_t r = read(fd, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		p = (char *)p + r;
		n -= (size_t)r;
	}
	return true;
}

static bool
write_full(int fd, const void *p, size_t n)
{
	while (n) {
		ssize_t r = write(fd, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		p = (const char *)p + r;
		n -= (size_t)r;
	}
	return true;
}

/* mkdir -p, 0700 for what it creates.  What it finds there is checked
 * afterwards, on the opened directory (dir_open). */
static bool
make_dirs(const char *dir)
{
	char buf[PATH_MAX];
	size_t n = strlen(dir);

	if (n == 0 || n >= sizeof buf)
		return false;
	memcpy(buf, dir, n + 1);
	for (char *p = buf + 1; ; p++) {
		if (*p != '/' && *p)
			continue;
		char ch = *p;
		*p = '\0';
		if (mkdir(buf, 0700) && errno != EEXIST)
			return false;
		if (!(*p = ch))
			break;
	}
	struct stat st;
	if (stat(dir, &st))
		return false;
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;  /* not mkdir's EEXIST, "File exists" */
		return false;
	}
	return true;
}

static bool
trust_any(void)
{
	const char *e = getenv("FAGEN_CACHE_TRUST_ANY");

	return e && !strcmp(e, "1");
}

/* Why a directory with status st may hold code that someone other than
 * the user (or root) wrote, in why; nothing when it may not.  Group write
 * covers ACLs too: with an ACL, those bits are its mask. */
static void
dir_distrust(const struct stat *st, char *why, size_t n)
{
	uid_t me = geteuid();

	if (st->st_uid != me && st->st_uid != 0)
		snprintf(why, n, "it is owned by uid %u, not by this user "
			"(uid %u) or root", (unsigned)st->st_uid, (unsigned)me);
	else if (st->st_mode & (S_IWGRP | S_IWOTH))
		snprintf(why, n, "its mode %04o lets %s write to it",
			(unsigned)st->st_mode & 07777,
			st->st_mode & S_IWOTH ? "others" : "its group");
}

/* Open c->cache_dir (made first, with create) as *out: 0, or an errno
 * when it cannot be opened now.  A directory that fails the checks is an
 * answer too: *out has fd -1, and why says what failed.  Checked on the
 * descriptor, so nothing can swap the directory between check and use. */
static int
dir_open(fg_ctx *c, bool create, CacheDir **out, char *why, size_t n)
{
	const char *path = c->cache_dir;
	bool any = trust_any();
	struct stat st;
	CacheDir *d;
	int fd;

	if (create && !make_dirs(path))
		return errno;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC |
		(any ? 0 : O_NOFOLLOW));
	/* a link: ELOOP, or with O_DIRECTORY ENOTDIR */
	if (fd < 0 && (errno == ELOOP || errno == ENOTDIR) &&
	    !lstat(path, &st) && S_ISLNK(st.st_mode))
		snprintf(why, n, "it is a symbolic link");
	else if (fd < 0)
		return errno;
	else if (fstat(fd, &st)) {
		int err = errno;
		close(fd);
		return err;
	} else if (!any) {
		dir_distrust(&st, why, n);
	}
	if (fd >= 0 && why[0]) {
		close(fd);
		fd = -1;
	}
	if (!(d = rt_alloc(c, sizeof *d))) {
		if (fd >= 0)
			close(fd);
		why[0] = '\0';
		return ENOMEM;
	}
	d->fd = fd;
	d->owner = st.st_uid;
	d->any = any;
	*out = d;
	return 0;
}

/* The context's checked cache directory, opened on first use; NULL when
 * there is none to use: no directory, one refused (said once), or one
 * that cannot be opened now (made, with create), its errno in *err. */
static const CacheDir *
dir_get(fg_ctx *c, bool create, int *err)
{
	char why[160] = "";
	bool opened = false;
	CacheDir *d;

	*err = 0;
	pthread_mutex_lock(&c->mu);
	if (!(d = c->dir) && c->cache_dir &&
	    !(*err = dir_open(c, create, &d, why, sizeof why))) {
		c->dir = d;
		opened = true;
	}
	pthread_mutex_unlock(&c->mu);
	if (why[0])
		rt_log(c, FG_LOG_WARN, "cache directory %s is refused (%s): "
			"caching in memory only; FAGEN_CACHE_TRUST_ANY=1 "
			"accepts it", c->cache_dir, why);
	if (!d || d->fd < 0)
		return NULL;
	if (opened && !d->any && d->owner != geteuid()) {
		/* root's system cache: read it, never try to write it */
		atomic_store(&c->disk_ok, false);
		rt_log(c, FG_LOG_INFO, "cache directory %s is root's: "
			"reading its entries only", c->cache_dir);
	}
	return d;
}

/* "<hex key>.cubin" */
static void
entry_name(const uint8_t key[32], char name[72])
{
	hex32(key, name);
	memcpy(name + 64, ".cubin", 7);
}

/* Why the entry is not valid, or NULL; *data is set only when valid. */
static const char *
disk_read(fg_ctx *c, const CacheDir *d, int fd, const uint8_t key[32],
	void **data, size_t *len)
{
	uint8_t hdr[CACHE_HDR], want[CACHE_HDR];
	struct stat st;
	void *p;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		return "not a regular file";
	if (!d->any && st.st_uid != geteuid() && st.st_uid != d->owner)
		return "owned by another user";
	if (!d->any && st.st_mode & (S_IWGRP | S_IWOTH))
		return "writable by others";
	if (st.st_size < CACHE_HDR || !read_full(fd, hdr, CACHE_HDR))
		return "shorter than its header";
	if (memcmp(hdr, MAGIC, 8) || get64(hdr + 8) != (FORMAT |
	    (uint64_t)CACHE_HDR << 32))
		return "bad magic or format";
	if (memcmp(hdr + 16, key, 32))
		return "written for another key";
	uint64_t n = get64(hdr + 48);
	if (n == 0 || n > CACHE_MAXLEN || (uint64_t)st.st_size != CACHE_HDR + n)
		return "truncated, or its length does not match its header";
	if (!(p = rt_alloc(c, (size_t)n)))
		return "out of memory";
	if (!read_full(fd, p, (size_t)n)) {
		rt_free(c, p, (size_t)n);
		return "unreadable";
	}
	cache_encode_hdr(want, key, p, (size_t)n);
	if (memcmp(hdr + 56, want + 56, 32)) {
		rt_free(c, p, (size_t)n);
		return "checksum mismatch";
	}
	*data = p;
	*len = (size_t)n;
	return NULL;
}

CacheResult
cache_get(fg_ctx *c, const uint8_t key[32], void **data, size_t *len,
	fg_code_source *src)
{
	const CacheDir *d;
	const char *why;
	char name[72], *path;
	int fd, err;

	*data = NULL;
	if (mem_get(c, key, data, len)) {
		*src = FG_CODE_MEMORY;
		return CACHE_HIT;
	}
	if (!(d = dir_get(c, false, &err)) || !(path = cache_path(c, key)))
		return CACHE_MISS;
	entry_name(key, name);
	/* O_NONBLOCK: opening a FIFO must not wait for a writer;
	 * O_NOFOLLOW: a link is not an entry; disk_read's fstat then
	 * refuses anything but a regular file */
	fd = openat(d->fd, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK |
		O_NOFOLLOW);
	if (fd < 0 && errno == ELOOP) {
		why = "a symbolic link";
	} else if (fd < 0) {
		rt_strfree(c, path);
		return CACHE_MISS;
	} else {
		why = disk_read(c, d, fd, key, data, len);
		close(fd);
	}
	if (why) {
		rt_log(c, FG_LOG_WARN, "cache entry %s is %s: rebuilding it",
			path, why);
		rt_strfree(c, path);
		return CACHE_BAD;
	}
	rt_log(c, FG_LOG_DEBUG, "cache hit: %s", path);
	rt_strfree(c, path);
	mem_put(c, key, *data, *len);
	*src = FG_CODE_DISK;
	return CACHE_HIT;
}

/* A fresh temporary name for the entry name, in out (96 bytes). */
static void
tmp_name(const char *name, char out[96])
{
	uint8_t r[8];

	if (getrandom(r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
		put64(r, (uint64_t)getpid() << 40 ^ (uint64_t)(rt_ms() * 1e6));
	snprintf(out, 96, "%s.tmp%016llx", name,
		(unsigned long long)get64(r));
}

/* Write the entry as a new 0600 file beside its final name, then rename
 * it into place: both inside the checked directory. */
static const char *
disk_write(const CacheDir *d, const uint8_t key[32], const void *data,
	size_t len)
{
	uint8_t hdr[CACHE_HDR];
	char name[72], tmp[96];
	int fd = -1;

	entry_name(key, name);
	for (int i = 0; i < 8 && fd < 0; i++) {
		tmp_name(name, tmp);
		fd = openat(d->fd, tmp, O_WRONLY | O_CREAT | O_EXCL |
			O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 && errno != EEXIST)
			return strerror(errno);
	}
	if (fd < 0)
		return strerror(EEXIST);
	cache_encode_hdr(hdr, key, data, len);
	bool ok = write_full(fd, hdr, sizeof hdr) && write_full(fd, data, len);
	int err = errno;
	ok = !close(fd) && ok;
	if (ok && !renameat(d->fd, tmp, d->fd, name))
		return NULL;
	err = ok ? errno : err;
	unlinkat(d->fd, tmp, 0);
	return strerror(err ? err : EIO);
}

void
cache_put(fg_ctx *c, const uint8_t key[32], const void *data, size_t len)
{
	const CacheDir *d;
	const char *why = NULL;
	int err;

	mem_put(c, key, data, len);
	if (!atomic_load(&c->disk_ok) || len == 0 || len > CACHE_MAXLEN)
		return;
	if (!(d = dir_get(c, true, &err)))
		why = err ? strerror(err) : NULL;  /* NULL: refused, said */
	else if (atomic_load(&c->disk_ok))     /* not root's cache */
		why = disk_write(d, key, data, len);
	if (why) {
		/* one warning, then memory only for this context */
		if (atomic_exchange(&c->disk_ok, false))
			rt_log(c, FG_LOG_WARN, "cannot write the cache "
				"directory %s (%s): caching in memory only",
				c->cache_dir, why);
	}
}
