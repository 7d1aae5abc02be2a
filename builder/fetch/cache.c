/*
 * @where the content-addressed cache (`sha256/ab/...`, `tmp/`, `quarantine/`,
 *   `refs/`, `locks/`, flock)
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "fetch/cache.h"
#include "lib/buf.h"
#include "lib/fs.h"
#include "lib/hex.h"
#include "lib/json.h"
#include "lib/strlist.h"
#include "trust/digest.h"

/* a ref keeps every file that verified its entry (each capped by its
 * method, trust/method.h) */
#define REF_MAX (16 << 20)

char *cache_default_dir(const char *opt, struct wb_err *e)
{
	const char *v;

	if (opt && *opt)
		return xstrdup(opt);
	v = getenv("WINBUILD_CACHE");
	if (v && *v)
		return xstrdup(v);
	v = getenv("XDG_CACHE_HOME");
	if (v && *v == '/')
		return fs_join(v, "winbuild");
	v = getenv("HOME");
	if (v && *v)
		return xasprintf("%s/.cache/winbuild", v);
	wb_error(e, WB_EUSAGE, "no cache directory: set --cache, WINBUILD_CACHE or HOME");
	return NULL;
}

int cache_is_key(const char *s)
{
	/* a file name: one spelling per digest, the one digest_hex writes */
	return hex_is(s, 64, HEX_LOWER);
}

/*
 * The cache is untrusted storage: whoever can write its directory may make
 * winbuild download again, nothing else. So every file below the root is
 * opened relative to a directory descriptor, one component at a time with
 * O_NOFOLLOW (a planted symlink is never followed, neither as a file nor as
 * a directory), with O_NONBLOCK (a planted FIFO never blocks), and checked
 * to be a regular file; the files winbuild writes have private names
 * (O_EXCL) and are never opened again by name once verified: an entry is
 * linked into place from the very descriptor that was written and hashed.
 */

static const char *const subdir_names[CACHE_NDIRS] = {
	"sha256", "tmp", "quarantine", "refs", "locks"
};

/* Open the directory NAME of DFD without following a symlink; a symlink,
 * a file or anything else that is not a directory is removed (it is junk
 * someone planted) and the directory made anew when CREATE. */
static int open_dir_at(int dfd, const char *name, int create)
{
	for (int tries = 0; tries < 3; tries++) {
		int fd;

		if (create && mkdirat(dfd, name, 0755) < 0 && errno != EEXIST)
			return -1;
		fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0 || !create)
			return fd;
		if (errno != ELOOP && errno != ENOTDIR)
			return -1;
		if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT)
			return -1;
	}
	errno = ELOOP;
	return -1;
}

/* Open (creating it when absent) the file NAME of DFD that winbuild writes
 * or locks: a regular file with one link, never through a symlink. Anything
 * else at NAME is removed and the file made anew (a planted link must not
 * make winbuild truncate, write or lock a file elsewhere). */
static int open_private_at(int dfd, const char *name)
{
	for (int tries = 0; tries < 3; tries++) {
		struct stat st;
		int fd = openat(dfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK |
				O_CLOEXEC, 0644);

		if (fd < 0 && errno != ELOOP && errno != ENXIO && errno != EISDIR &&
		    errno != ENOTDIR)
			return -1;
		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		    st.st_nlink == 1)
			return fd;
		if (fd >= 0)
			close(fd);
		if (unlinkat(dfd, name, 0) < 0 && errno == EISDIR)
			unlinkat(dfd, name, AT_REMOVEDIR);
	}
	errno = ELOOP;
	return -1;
}

/* Open the existing file NAME of DFD for reading: 1 with *FD open and *ST
 * filled when it is a regular file, 0 when absent or not a regular file
 * (a symlink, a FIFO, a directory: never followed, never blocked on), -1
 * (errno) on other errors. */
static int open_regular_at(int dfd, const char *name, int *fd, struct stat *st)
{
	*fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (*fd < 0)
		return errno == ENOENT || errno == ELOOP || errno == ENXIO ||
			errno == ENOTDIR ? 0 : -1;
	if (fstat(*fd, st) < 0 || !S_ISREG(st->st_mode)) {
		close(*fd);
		*fd = -1;
		return 0;
	}
	/* reads of a regular file never block anyway; clear it for clarity */
	(void)fcntl(*fd, F_SETFL, fcntl(*fd, F_GETFL) & ~O_NONBLOCK);
	return 1;
}

static int open_lock(struct cache *c, const char *name, int *fd, struct wb_err *e)
{
	*fd = open_private_at(c->root_fd, name);
	if (*fd < 0)
		return wb_error(e, WB_EIO, "cannot open cache lock '%s/%s': %s", c->root,
				name, strerror(errno));
	return 0;
}

static int do_flock(int fd, int op, const char *root, struct wb_err *e)
{
	while (flock(fd, op) < 0) {
		if (errno == EINTR)
			continue;
		return wb_error(e, WB_EIO, "cannot lock cache '%s': %s", root,
				strerror(errno));
	}
	return 0;
}

int cache_open(struct cache *c, const char *dir, int for_gc, struct wb_err *e)
{
	c->root = xstrdup(dir);
	c->lock_fd = c->gc_fd = -1;
	for (size_t i = 0; i < CACHE_NDIRS; i++)
		c->dir_fd[i] = -1;
	/* the root is the user's choice (--cache, WINBUILD_CACHE): followed */
	if (fs_mkdir_p(dir, 0755, e) < 0)
		goto fail;
	c->root_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c->root_fd < 0) {
		wb_error(e, WB_EIO, "cannot open '%s': %s", dir, strerror(errno));
		goto fail;
	}
	for (size_t i = 0; i < CACHE_NDIRS; i++) {
		c->dir_fd[i] = open_dir_at(c->root_fd, subdir_names[i], 1);
		if (c->dir_fd[i] < 0) {
			wb_error(e, WB_EIO, "cannot open directory '%s/%s': %s", dir,
				 subdir_names[i], strerror(errno));
			goto fail;
		}
	}
	if (open_lock(c, "lock", &c->lock_fd, e) ||
	    open_lock(c, "gc.lock", &c->gc_fd, e) ||
	    do_flock(c->gc_fd, for_gc ? LOCK_EX : LOCK_SH, dir, e))
		goto fail;
	return 0;
fail:
	wb_error_prefix(e, "cache");
	cache_close(c);
	return -1;
}

void cache_close(struct cache *c)
{
	if (c->lock_fd >= 0)
		close(c->lock_fd);
	if (c->gc_fd >= 0)
		close(c->gc_fd);
	for (size_t i = 0; i < CACHE_NDIRS; i++) {
		if (c->dir_fd[i] >= 0)
			close(c->dir_fd[i]);
		c->dir_fd[i] = -1;
	}
	if (c->root_fd >= 0)
		close(c->root_fd);
	c->lock_fd = c->gc_fd = c->root_fd = -1;
	free(c->root);
	c->root = NULL;
}

char *cache_entry_path(const struct cache *c, const char *hex)
{
	return xasprintf("%s/sha256/%.2s/%s", c->root, hex, hex);
}

/* The fan-out directory sha256/<first two digits of HEX>/, or -1. */
static int entry_dir(struct cache *c, const char *hex, int create)
{
	char sub[3] = { hex[0], hex[1], '\0' };

	return open_dir_at(c->dir_fd[CACHE_SHA256], sub, create);
}

static int lock_ex(struct cache *c, struct wb_err *e)
{
	return do_flock(c->lock_fd, LOCK_EX, c->root, e);
}

static void unlock(struct cache *c)
{
	flock(c->lock_fd, LOCK_UN);
}

/* Move the entry HEX (whatever it is: a file, a planted link) of its
 * fan-out directory SUB to quarantine/. */
static int quarantine(struct cache *c, int sub, const char *hex, char **where,
		      struct wb_err *e)
{
	char *name = xasprintf("%s.%ld", hex, (long)getpid());
	int ret = 0;

	if (renameat(sub, hex, c->dir_fd[CACHE_QUARANTINE], name) < 0 && errno != ENOENT)
		ret = wb_error(e, WB_EIO, "cannot move corrupt cache entry '%s/sha256/%.2s/%s' "
			       "to quarantine: %s", c->root, hex, hex, strerror(errno));
	if (!ret)
		*where = xasprintf("%s/quarantine/%s", c->root, name);
	free(name);
	return ret;
}

int cache_lookup(struct cache *c, const char *hex, unsigned long long *size,
		 char sha512[129], char **quarantined, struct wb_err *e)
{
	struct digest_result r;
	int ret = cache_lookup_digests(c, hex, sha512 ? DIGEST_SHA512 : 0, &r,
				       quarantined, NULL, e);

	if (ret > 0) {
		*size = r.size;
		if (sha512)
			digest_hex(r.sha512, 64, sha512);
	}
	return ret;
}

/*
 * Open the entry HEX for reading: 1 (*FD, *ST), 0 when absent. Something
 * at its name that is not a regular file (a planted symlink or FIFO) is
 * quarantined like a corrupt entry (*QUARANTINED) and counts as absent.
 */
static int entry_open(struct cache *c, const char *hex, int *fd, struct stat *st,
		      char **quarantined, struct wb_err *e)
{
	int sub, r;
	struct stat lst;

	*fd = -1;
	if (!cache_is_key(hex))
		return wb_error(e, WB_EIO, "invalid cache key '%s'", hex);
	sub = entry_dir(c, hex, 0);
	if (sub < 0)
		return 0;   /* no such fan-out directory (or not one): absent */
	r = open_regular_at(sub, hex, fd, st);
	if (r < 0) {
		r = wb_error(e, WB_EIO, "cannot open '%s/sha256/%.2s/%s': %s", c->root, hex,
			     hex, strerror(errno));
	} else if (!r && fstatat(sub, hex, &lst, AT_SYMLINK_NOFOLLOW) == 0) {
		if (lock_ex(c, e) < 0)
			r = -1;
		else {
			r = quarantine(c, sub, hex, quarantined, e) < 0 ? -1 : 0;
			unlock(c);
		}
	}
	close(sub);
	return r;
}

int cache_lookup_digests(struct cache *c, const char *hex, unsigned algs,
			 struct digest_result *r, char **quarantined, int *fdp,
			 struct wb_err *e)
{
	char actual[65], *path;
	struct stat st;
	int fd, ret;

	*quarantined = NULL;
	if (fdp)
		*fdp = -1;
	ret = entry_open(c, hex, &fd, &st, quarantined, e);
	if (ret <= 0)
		return ret;
	path = cache_entry_path(c, hex);
	ret = digest_fd(fd, path, algs | DIGEST_SHA256, r, e);
	free(path);
	if (ret < 0) {
		close(fd);
		return -1;
	}
	digest_hex(r->sha256, 32, actual);
	if (!strcmp(actual, hex)) {
		if (fdp)
			*fdp = fd;
		else
			close(fd);
		return 1;
	}
	close(fd);
	/* Corrupt: move aside under the lock. */
	ret = cache_quarantine(c, hex, quarantined, e);
	return ret < 0 ? -1 : 0;
}

int cache_quarantine(struct cache *c, const char *hex, char **where,
		     struct wb_err *e)
{
	struct stat st;
	int ret, sub;

	*where = NULL;
	if (!cache_is_key(hex))
		return wb_error(e, WB_EIO, "invalid cache key '%s'", hex);
	sub = entry_dir(c, hex, 0);
	if (sub < 0)
		return 0;
	ret = lock_ex(c, e);
	if (!ret && fstatat(sub, hex, &st, AT_SYMLINK_NOFOLLOW) == 0)
		ret = quarantine(c, sub, hex, where, e);
	unlock(c);
	close(sub);
	return ret < 0 ? -1 : 0;
}

int cache_entry_open(struct cache *c, const char *hex, unsigned long long *size,
		     int *fd, char **quarantined, struct wb_err *e)
{
	struct stat st;
	int r;

	*quarantined = NULL;
	r = entry_open(c, hex, fd, &st, quarantined, e);
	if (r > 0)
		*size = (unsigned long long)st.st_size;
	return r;
}

int cache_tmp_create(struct cache *c, char **path, int *fd, struct wb_err *e)
{
	unsigned char rnd[8];
	char name[64];

	for (int tries = 0; tries < 100; tries++) {
		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
			break;
		snprintf(name, sizeof(name), "dl-%ld-%02x%02x%02x%02x%02x%02x%02x%02x",
			 (long)getpid(), rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5],
			 rnd[6], rnd[7]);
		/* O_EXCL|O_NOFOLLOW: a private new file, never a planted one */
		*fd = openat(c->dir_fd[CACHE_TMP], name, O_RDWR | O_CREAT | O_EXCL |
			     O_NOFOLLOW | O_CLOEXEC, 0600);
		if (*fd >= 0) {
			*path = xasprintf("%s/tmp/%s", c->root, name);
			return 0;
		}
		if (errno != EEXIST)
			break;
	}
	return wb_error(e, WB_EIO, "cannot create a temp file in '%s/tmp': %s",
			c->root, strerror(errno));
}

/* Whether the name NAME of DFD is the file open as FD. */
static int is_fd_at(int dfd, const char *name, int fd)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && fstatat(dfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
		a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* The last component of PATH. */
static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

int cache_insert(struct cache *c, const char *tmp_path, int fd,
		 const char *hex, struct wb_err *e)
{
	const char *tmp_name = base_name(tmp_path);
	char proc[64];
	int ret = 0, sub = -1;

	if (!cache_is_key(hex)) {
		ret = wb_error(e, WB_EIO, "invalid cache key '%s'", hex);
		goto out;
	}
	/* No fsync of the data: it cost as much as the whole download (the
	 * disk, not the network, set the pace). A crash may leave an entry
	 * whose bytes are not all on disk, but no entry is ever used without
	 * its bytes being hashed again (cache_lookup, or the stage's one-pass
	 * read), which quarantines it; the ref only names a digest. */
	if (fchmod(fd, 0444) < 0) {
		ret = wb_error(e, WB_EIO, "cannot set the mode of '%s': %s", tmp_path,
			       strerror(errno));
		goto out;
	}
	sub = entry_dir(c, hex, 1);
	if (sub < 0) {
		ret = wb_error(e, WB_EIO, "cannot create directory '%s/sha256/%.2s': %s",
			       c->root, hex, strerror(errno));
		goto out;
	}
	if (lock_ex(c, e) < 0) {
		ret = -1;
		goto out;
	}
	/* The entry is the inode FD names, the one written and hashed, not
	 * whatever TMP_PATH names now (someone who can write tmp/ may have
	 * replaced it): linked from /proc/self/fd. An existing name means
	 * another process won (or junk is there, which its next reader
	 * quarantines); ours is discarded below. No fsync of the directory
	 * either (see above): a lost link is a miss. */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (linkat(AT_FDCWD, proc, sub, hex, AT_SYMLINK_FOLLOW) < 0 && errno != EEXIST) {
		/* no /proc: rename the name, but only while it is still ours */
		if (!is_fd_at(c->dir_fd[CACHE_TMP], tmp_name, fd))
			ret = wb_error(e, WB_EIO, "temp file '%s' was replaced while it was "
				       "verified; nothing cached", tmp_path);
		else if (renameat(c->dir_fd[CACHE_TMP], tmp_name, sub, hex) < 0)
			ret = wb_error(e, WB_EIO, "cannot rename '%s' into the cache: %s",
				       tmp_path, strerror(errno));
	}
	unlock(c);
out:
	/* the temp name goes, when it still names our file */
	if (is_fd_at(c->dir_fd[CACHE_TMP], tmp_name, fd))
		unlinkat(c->dir_fd[CACHE_TMP], tmp_name, 0);
	if (sub >= 0)
		close(sub);
	if (ret)
		wb_error_prefix(e, "cache");
	return ret;
}

void cache_ref_key(const char *spec, char out[65])
{
	struct digest_ctx d;
	struct digest_result r;
	struct wb_err e = WB_ERR_INIT;

	memset(&d, 0, sizeof(d));
	if (digest_init(&d, DIGEST_SHA256, &e) < 0)
		abort();   /* OpenSSL without SHA-256: nothing works */
	digest_update(&d, spec, strlen(spec));
	digest_final(&d, &r);
	digest_hex(r.sha256, 32, out);
}

/*
 * @where the cache ref (`refs/<key>`) read and write (the one reader and
 *   writer)
 */
int cache_ref_store(struct cache *c, const char *key, const struct cache_ref *ref,
		    struct wb_err *e)
{
	int dfd = c->dir_fd[CACHE_REFS], fd = -1, ret;
	json_t *o = json_object();
	unsigned char rnd[8];
	char *text, tmp[96];

	if (!cache_is_key(key))
		return wb_error(e, WB_EIO, "invalid cache ref key '%s'", key);
	json_object_set_new(o, "artifact", json_string(ref->artifact ? ref->artifact : ""));
	json_object_set_new(o, "sha256", json_string(ref->sha256));
	if (ref->sha512[0])
		json_object_set_new(o, "sha512", json_string(ref->sha512));
	if (ref->blake2b512[0])
		json_object_set_new(o, "blake2b512", json_string(ref->blake2b512));
	json_object_set_new(o, "size", json_integer((json_int_t)ref->size));
	if (ref->url)
		json_object_set_new(o, "url", json_url(ref->url));
	json_object_set_new(o, "methods", json_integer(ref->methods));
	json_object_set_new(o, "evidence", ref->evidence ? json_incref(ref->evidence) :
			    json_array());
	text = json_dumps(o, JSON_SORT_KEYS | JSON_INDENT(1));
	json_decref(o);
	/* a private new name (O_EXCL|O_NOFOLLOW), renamed over the key */
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		memset(rnd, 0, sizeof(rnd));
	snprintf(tmp, sizeof(tmp), ".tmp.%s.%ld.%02x%02x%02x%02x", key, (long)getpid(),
		 rnd[0], rnd[1], rnd[2], rnd[3]);
	ret = lock_ex(c, e);
	if (!ret) {
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    0644);
		/* no fsync (as for the entries): a ref lost or torn by a crash
		 * does not parse (ref_parse), which is a miss */
		if (fd < 0 || fs_write_all(fd, text, strlen(text)) < 0 || close(fd) < 0 ||
		    renameat(dfd, tmp, dfd, key) < 0)
			ret = wb_error(e, WB_EIO, "cannot write cache ref '%s/refs/%s': %s",
				       c->root, key, strerror(errno));
		if (ret && fd >= 0)
			unlinkat(dfd, tmp, 0);
	}
	unlock(c);
	free(text);
	return ret;
}

/* Parse TEXT as a ref into REF: 1, or 0 when it is not a well-formed one. */
static int ref_parse(const char *text, size_t len, struct cache_ref *ref)
{
	json_t *o = json_loadb(text, len, 0, NULL), *size;
	const char *art, *sha, *s512, *b2, *url;

	memset(ref, 0, sizeof(*ref));
	art = json_string_value(json_object_get(o, "artifact"));
	sha = json_string_value(json_object_get(o, "sha256"));
	s512 = json_string_value(json_object_get(o, "sha512"));
	b2 = json_string_value(json_object_get(o, "blake2b512"));
	url = json_string_value(json_object_get(o, "url"));
	size = json_object_get(o, "size");
	if (!art || !sha || !cache_is_key(sha)) {
		json_decref(o);
		return 0;
	}
	ref->artifact = xstrdup(art);
	memcpy(ref->sha256, sha, 65);
	if (s512 && strlen(s512) == 128)
		memcpy(ref->sha512, s512, 129);
	if (b2 && strlen(b2) == 128)
		memcpy(ref->blake2b512, b2, 129);
	ref->size = json_is_integer(size) && json_integer_value(size) >= 0 ?
		(unsigned long long)json_integer_value(size) : 0;
	ref->url = url ? xstrdup(url) : NULL;
	ref->methods = (unsigned)json_integer_value(json_object_get(o, "methods"));
	ref->evidence = json_incref(json_object_get(o, "evidence"));
	json_decref(o);
	return 1;
}

/* The ref NAME of the directory DFD: 1, 0 when absent, not a regular
 * file or not a well-formed ref, -1 with WB_EIO. */
static int ref_load_at(int dfd, const char *name, struct cache_ref *ref,
		       struct wb_err *e)
{
	struct buf b = BUF_INIT;
	struct stat st;
	char chunk[4096];
	ssize_t n;
	int fd, ret;

	memset(ref, 0, sizeof(*ref));
	ret = open_regular_at(dfd, name, &fd, &st);
	if (ret <= 0)
		return ret < 0 ? wb_error(e, WB_EIO, "cannot open cache ref '%s': %s", name,
					  strerror(errno)) : 0;
	while ((n = read(fd, chunk, sizeof(chunk))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || b.len + (size_t)n > REF_MAX) {
			/* unreadable or oversized: not a ref */
			close(fd);
			buf_release(&b);
			return 0;
		}
		buf_add(&b, chunk, (size_t)n);
	}
	close(fd);
	ret = ref_parse(b.ptr ? b.ptr : "", b.len, ref);
	buf_release(&b);
	return ret;
}

/*
 * @where the cache ref (`refs/<key>`) read and write (the one reader and
 *   writer)
 */
int cache_ref_load(struct cache *c, const char *key, struct cache_ref *ref,
		   struct wb_err *e)
{
	memset(ref, 0, sizeof(*ref));
	if (!cache_is_key(key))
		return 0;
	return ref_load_at(c->dir_fd[CACHE_REFS], key, ref, e);
}

void cache_ref_release(struct cache_ref *ref)
{
	free(ref->artifact);
	free(ref->url);
	json_decref(ref->evidence);
	memset(ref, 0, sizeof(*ref));
}

static char *dl_lock_path(const struct cache *c, const char *key)
{
	return xasprintf("%s/locks/dl-%s", c->root, key);
}

/*
 * @where one download per artifact across processes (the per-artifact
 *   download lock, the wait, its timeout)
 */
int cache_dl_trylock(struct cache *c, struct cache_dl_lock *l, const char *key,
		     long *holder, struct wb_err *e)
{
	int dfd = c->dir_fd[CACHE_LOCKS];
	char pid[32], name[80];
	ssize_t n;
	int len, ret = -1;

	*holder = 0;
	if (!cache_is_key(key))
		return wb_error(e, WB_EIO, "invalid download lock key '%s'", key);
	snprintf(name, sizeof(name), "dl-%s", key);
	for (int tries = 0; tries < 100; tries++) {
		if (l->fd < 0) {
			/* never through a planted link: its pid is written into
			 * the file below (open_private_at) */
			l->fd = open_private_at(dfd, name);
			if (l->fd < 0) {
				char *path = dl_lock_path(c, key);
				wb_error(e, WB_EIO, "cannot open download lock '%s': %s", path,
					 strerror(errno));
				free(path);
				goto out;
			}
		}
		if (flock(l->fd, LOCK_EX | LOCK_NB) < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EWOULDBLOCK) {
				char *path = dl_lock_path(c, key);
				wb_error(e, WB_EIO, "cannot take download lock '%s': %s", path,
					 strerror(errno));
				free(path);
				goto out;
			}
			n = pread(l->fd, pid, sizeof(pid) - 1, 0);
			if (n > 0) {
				pid[n] = '\0';
				*holder = strtol(pid, NULL, 10);
			}
			ret = 0;   /* kept open for the next try */
			goto out;
		}
		if (is_fd_at(dfd, name, l->fd)) {
			memcpy(l->key, key, 65);
			l->held = 1;
			/* who holds it, for a waiter's message; best effort */
			len = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
			if (ftruncate(l->fd, 0) == 0) {
				n = pwrite(l->fd, pid, (size_t)len, 0);
				(void)n;
			}
			ret = 1;
			goto out;
		}
		/* locked a file its holder unlinked on release: the path's */
		close(l->fd);
		l->fd = -1;
	}
	{
		char *path = dl_lock_path(c, key);
		wb_error(e, WB_EIO, "cannot take download lock '%s': it keeps changing", path);
		free(path);
	}
out:
	if (ret < 0 && l->fd >= 0) {
		close(l->fd);
		l->fd = -1;
	}
	return ret;
}

void cache_dl_unlock(struct cache *c, struct cache_dl_lock *l)
{
	if (l->held) {
		/* unlinked while held, then closed: a waiter that locks the
		 * old file finds it gone (is_fd_at) and opens the path anew */
		char name[80];

		snprintf(name, sizeof(name), "dl-%s", l->key);
		if (is_fd_at(c->dir_fd[CACHE_LOCKS], name, l->fd))
			unlinkat(c->dir_fd[CACHE_LOCKS], name, 0);
	}
	if (l->fd >= 0)
		close(l->fd);   /* releases the flock */
	l->fd = -1;
	l->held = 0;
}

/* Call FN for every name in the directory DFD but dot files (DFD stays
 * open; the walk uses a duplicate). */
static int each_file(int dfd, int (*fn)(int dfd, const char *name, void *), void *ctx,
		     struct wb_err *e)
{
	int fd = dfd >= 0 ? fcntl(dfd, F_DUPFD_CLOEXEC, 0) : -1;
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	int ret = 0;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return wb_error(e, WB_EIO, "cannot read a cache directory: %s", strerror(errno));
	}
	rewinddir(d);
	while (!ret && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		ret = fn(dfd, de->d_name, ctx);
	}
	closedir(d);
	return ret;
}

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct cache_entry_info *)a)->sha256,
		      ((const struct cache_entry_info *)b)->sha256);
}

static int add_entry(int dfd, const char *name, void *ctx)
{
	struct cache_listing *l = ctx;
	struct cache_entry_info *ci;
	struct stat st;

	if (!cache_is_key(name))
		return 0;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
		return 0;
	ALLOC_GROW(l->v, l->nr + 1, l->alloc);
	ci = &l->v[l->nr++];
	memset(ci, 0, sizeof(*ci));
	memcpy(ci->sha256, name, 65);
	ci->size = (unsigned long long)st.st_size;
	return 0;
}

static int add_subdir(int dfd, const char *name, void *ctx)
{
	struct wb_err e = WB_ERR_INIT;
	int sub = open_dir_at(dfd, name, 0), r;

	if (sub < 0)
		return 0;   /* not a directory: nothing of ours */
	r = each_file(sub, add_entry, ctx, &e);
	close(sub);
	return r;
}

static int count_file(int dfd, const char *name, void *ctx)
{
	(void)dfd;
	(void)name;
	(*(size_t *)ctx)++;
	return 0;
}

struct ref_scan {
	struct cache_listing *l;
	struct wb_strlist dangling;  /* ref file names pointing nowhere */
};

static int scan_ref(int dfd, const char *name, void *ctx)
{
	struct ref_scan *rs = ctx;
	struct cache_entry_info key, *ci = NULL;
	struct cache_ref ref;
	struct wb_err e = WB_ERR_INIT;
	const char *art;

	if (ref_load_at(dfd, name, &ref, &e) > 0) {
		memcpy(key.sha256, ref.sha256, 65);
		ci = bsearch(&key, rs->l->v, rs->l->nr, sizeof(key), cmp_entry);
	}
	art = ref.artifact;
	if (ci) {
		size_t k;
		for (k = 0; k < ci->nartifacts; k++)
			if (!strcmp(ci->artifacts[k], art))
				break;
		if (k == ci->nartifacts) {
			ci->artifacts = xrealloc(ci->artifacts,
						 (ci->nartifacts + 1) * sizeof(char *));
			ci->artifacts[ci->nartifacts++] = xstrdup(art);
		}
	} else {
		wb_strlist_push(&rs->dangling, name);
	}
	cache_ref_release(&ref);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int list_locked(struct cache *c, struct cache_listing *l,
		       struct wb_strlist *dangling, struct wb_err *e)
{
	struct ref_scan rs = { l, WB_STRLIST_INIT };
	int ret;

	memset(l, 0, sizeof(*l));
	ret = each_file(c->dir_fd[CACHE_SHA256], add_subdir, l, e);
	if (ret)
		return -1;
	if (l->nr)   /* qsort(NULL, 0, ...) is undefined */
		qsort(l->v, l->nr, sizeof(*l->v), cmp_entry);
	ret = each_file(c->dir_fd[CACHE_REFS], scan_ref, &rs, e);
	for (size_t i = 0; i < l->nr; i++)
		if (l->v[i].nartifacts > 1)
			qsort(l->v[i].artifacts, l->v[i].nartifacts,
			      sizeof(char *), cmp_str);
	each_file(c->dir_fd[CACHE_TMP], count_file, &l->ntmp, e);
	each_file(c->dir_fd[CACHE_QUARANTINE], count_file, &l->nquarantine, e);
	if (dangling)
		*dangling = rs.dangling;
	else
		wb_strlist_release(&rs.dangling);
	return ret;
}

int cache_list(struct cache *c, struct cache_listing *l, struct wb_err *e)
{
	int ret = lock_ex(c, e);

	if (!ret)
		ret = list_locked(c, l, NULL, e);
	unlock(c);
	return ret;
}

void cache_listing_release(struct cache_listing *l)
{
	for (size_t i = 0; i < l->nr; i++) {
		for (size_t k = 0; k < l->v[i].nartifacts; k++)
			free(l->v[i].artifacts[k]);
		free(l->v[i].artifacts);
	}
	free(l->v);
	memset(l, 0, sizeof(*l));
}

struct rm_ctx {
	size_t *count;
	unsigned long long *bytes;
};

/* Remove NAME of DFD: never followed (a planted link is removed, not
 * what it names), a directory only when empty. */
static int rm_file(int dfd, const char *name, void *ctx)
{
	struct rm_ctx *rc = ctx;
	struct stat st;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    unlinkat(dfd, name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) == 0) {
		(*rc->count)++;
		*rc->bytes += S_ISREG(st.st_mode) ? (unsigned long long)st.st_size : 0;
	}
	return 0;
}

int cache_gc(struct cache *c, struct cache_gc_stats *st, struct wb_err *e)
{
	struct cache_listing l;
	struct wb_strlist dangling = WB_STRLIST_INIT;
	struct rm_ctx rc;
	int ret;

	memset(st, 0, sizeof(*st));
	if (lock_ex(c, e) < 0)
		return -1;
	ret = list_locked(c, &l, &dangling, e);
	if (ret)
		goto out;
	rc.bytes = &st->freed_bytes;
	rc.count = &st->removed_tmp;
	each_file(c->dir_fd[CACHE_TMP], rm_file, &rc, e);
	rc.count = &st->removed_quarantine;
	each_file(c->dir_fd[CACHE_QUARANTINE], rm_file, &rc, e);
	{
		/* download locks: nobody else has the cache open (gc.lock) */
		size_t nlocks = 0;
		unsigned long long lbytes = 0;
		struct rm_ctx lc = { &nlocks, &lbytes };

		each_file(c->dir_fd[CACHE_LOCKS], rm_file, &lc, e);
	}
	for (size_t i = 0; i < dangling.nr; i++)
		if (unlinkat(c->dir_fd[CACHE_REFS], dangling.v[i], 0) == 0)
			st->removed_refs++;
	for (size_t i = 0; i < l.nr; i++) {
		int sub;

		if (l.v[i].nartifacts)
			continue;
		sub = entry_dir(c, l.v[i].sha256, 0);
		if (sub >= 0 && unlinkat(sub, l.v[i].sha256, 0) == 0) {
			st->removed_entries++;
			st->freed_bytes += l.v[i].size;
		} else if (sub >= 0 && errno != ENOENT) {
			ret = wb_error(e, WB_EIO, "cannot remove '%s/sha256/%.2s/%s': %s",
				       c->root, l.v[i].sha256, l.v[i].sha256, strerror(errno));
		}
		if (sub >= 0)
			close(sub);
	}
out:
	unlock(c);
	cache_listing_release(&l);
	wb_strlist_release(&dangling);
	return ret;
}
