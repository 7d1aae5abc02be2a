#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "fetch/cache.h"
#include "lib/buf.h"
#include "lib/fs.h"
#include "lib/strlist.h"
#include "trust/digest.h"

#define REF_MAX (64 * 1024)

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
	size_t i;

	for (i = 0; s[i]; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return i == 64;
}

static int open_lock(const char *root, const char *name, int *fd,
		     struct wb_err *e)
{
	char *p = fs_join(root, name);

	*fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (*fd < 0) {
		wb_error(e, WB_EIO, "cannot open cache lock '%s': %s", p,
			 strerror(errno));
		free(p);
		return -1;
	}
	free(p);
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
	static const char *const subdirs[] = { "sha256", "tmp", "quarantine", "refs",
						"locks" };

	c->root = xstrdup(dir);
	c->lock_fd = c->gc_fd = -1;
	for (size_t i = 0; i < ARRAY_SIZE(subdirs); i++) {
		char *p = fs_join(dir, subdirs[i]);
		int r = fs_mkdir_p(p, 0755, e);
		free(p);
		if (r)
			goto fail;
	}
	if (open_lock(dir, "lock", &c->lock_fd, e) ||
	    open_lock(dir, "gc.lock", &c->gc_fd, e) ||
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
	c->lock_fd = c->gc_fd = -1;
	free(c->root);
	c->root = NULL;
}

char *cache_entry_path(const struct cache *c, const char *hex)
{
	return xasprintf("%s/sha256/%.2s/%s", c->root, hex, hex);
}

static int lock_ex(struct cache *c, struct wb_err *e)
{
	return do_flock(c->lock_fd, LOCK_EX, c->root, e);
}

static void unlock(struct cache *c)
{
	flock(c->lock_fd, LOCK_UN);
}

static int quarantine(struct cache *c, const char *path, const char *hex,
		      char **where, struct wb_err *e)
{
	char *q = xasprintf("%s/quarantine/%s.%ld", c->root, hex, (long)getpid());
	int ret = 0;

	if (rename(path, q) < 0 && errno != ENOENT)
		ret = wb_error(e, WB_EIO, "cannot move corrupt cache entry '%s' to '%s': %s",
			       path, q, strerror(errno));
	if (ret)
		free(q);
	else
		*where = q;
	return ret;
}

int cache_lookup(struct cache *c, const char *hex, unsigned long long *size,
		 char sha512[129], char **quarantined, struct wb_err *e)
{
	struct digest_result r;
	int ret = cache_lookup_digests(c, hex, sha512 ? DIGEST_SHA512 : 0, &r,
				       quarantined, e);

	if (ret > 0) {
		*size = r.size;
		if (sha512)
			digest_hex(r.sha512, 64, sha512);
	}
	return ret;
}

int cache_lookup_digests(struct cache *c, const char *hex, unsigned algs,
			 struct digest_result *r, char **quarantined, struct wb_err *e)
{
	char *path, actual[65];
	int ret;

	*quarantined = NULL;
	if (!cache_is_key(hex))
		return wb_error(e, WB_EIO, "invalid cache key '%s'", hex);
	path = cache_entry_path(c, hex);
	if (!fs_exists(path)) {
		free(path);
		return 0;
	}
	if (digest_file(path, algs | DIGEST_SHA256, r, e) < 0) {
		free(path);
		if (e->code == WB_EUSAGE)   /* vanished under us (gc) */
			return wb_err_clear(e), 0;
		return -1;
	}
	digest_hex(r->sha256, 32, actual);
	if (!strcmp(actual, hex)) {
		free(path);
		return 1;
	}
	/* Corrupt: move aside under the lock. */
	free(path);
	ret = cache_quarantine(c, hex, quarantined, e);
	return ret < 0 ? -1 : 0;
}

int cache_quarantine(struct cache *c, const char *hex, char **where,
		     struct wb_err *e)
{
	char *path;
	int ret;

	*where = NULL;
	if (!cache_is_key(hex))
		return wb_error(e, WB_EIO, "invalid cache key '%s'", hex);
	path = cache_entry_path(c, hex);
	ret = lock_ex(c, e);
	if (!ret && fs_exists(path))
		ret = quarantine(c, path, hex, where, e);
	unlock(c);
	free(path);
	return ret < 0 ? -1 : 0;
}

int cache_stat(struct cache *c, const char *hex, unsigned long long *size,
	       struct wb_err *e)
{
	struct stat st;
	char *path;
	int r;

	if (!cache_is_key(hex))
		return wb_error(e, WB_EIO, "invalid cache key '%s'", hex);
	path = cache_entry_path(c, hex);
	r = stat(path, &st) == 0 && S_ISREG(st.st_mode);
	free(path);
	if (r)
		*size = (unsigned long long)st.st_size;
	return r;
}

int cache_tmp_create(struct cache *c, char **path, int *fd, struct wb_err *e)
{
	char *p = xasprintf("%s/tmp/dl-%ld-XXXXXX", c->root, (long)getpid());

	*fd = mkostemp(p, O_CLOEXEC);
	if (*fd < 0) {
		wb_error(e, WB_EIO, "cannot create a temp file in '%s/tmp': %s",
			 c->root, strerror(errno));
		free(p);
		return -1;
	}
	*path = p;
	return 0;
}

int cache_insert(struct cache *c, const char *tmp_path, int fd,
		 const char *hex, struct wb_err *e)
{
	char *final = NULL, *dir = NULL;
	int ret = 0;

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
	close(fd);
	fd = -1;
	final = cache_entry_path(c, hex);
	dir = fs_dirname(final);
	if (fs_mkdir_p(dir, 0755, e) < 0 || lock_ex(c, e) < 0) {
		ret = -1;
		goto out;
	}
	if (fs_exists(final)) {
		unlock(c);
		goto out;   /* another process won; ours is discarded below */
	}
	/* no fsync of DIR either (see above): a lost rename is a miss */
	if (rename(tmp_path, final) < 0)
		ret = wb_error(e, WB_EIO, "cannot rename '%s' to '%s': %s",
			       tmp_path, final, strerror(errno));
	unlock(c);
out:
	if (fd >= 0)
		close(fd);
	unlink(tmp_path);   /* no-op after a successful rename */
	free(final);
	free(dir);
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

int cache_ref_store(struct cache *c, const char *key, const struct cache_ref *ref,
		    struct wb_err *e)
{
	char *p = xasprintf("%s/refs/%s", c->root, key), *text;
	json_t *o = json_object();
	int ret;

	json_object_set_new(o, "artifact", json_string(ref->artifact ? ref->artifact : ""));
	json_object_set_new(o, "sha256", json_string(ref->sha256));
	if (ref->sha512[0])
		json_object_set_new(o, "sha512", json_string(ref->sha512));
	if (ref->blake2b512[0])
		json_object_set_new(o, "blake2b512", json_string(ref->blake2b512));
	json_object_set_new(o, "size", json_integer((json_int_t)ref->size));
	if (ref->url)
		json_object_set_new(o, "url", json_string(ref->url));
	json_object_set_new(o, "methods", json_integer(ref->methods));
	json_object_set_new(o, "evidence", ref->evidence ? json_incref(ref->evidence) :
			    json_array());
	text = json_dumps(o, JSON_SORT_KEYS | JSON_INDENT(1));
	json_decref(o);
	ret = lock_ex(c, e);
	/* no fsync (as for the entries): a ref lost or torn by a crash does
	 * not parse (ref_parse), which is a miss */
	if (!ret)
		ret = fs_write_hint(p, text, strlen(text), 0644, e);
	unlock(c);
	free(text);
	free(p);
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

static int ref_load_path(const char *p, struct cache_ref *ref, struct wb_err *e)
{
	struct buf b = BUF_INIT;
	int ret;

	memset(ref, 0, sizeof(*ref));
	if (!fs_exists(p))
		return 0;
	ret = fs_read_file(p, REF_MAX, WB_EIO, &b, e);
	if (!ret)
		ret = ref_parse(b.ptr, b.len, ref);
	buf_release(&b);
	return ret;
}

int cache_ref_load(struct cache *c, const char *key, struct cache_ref *ref,
		   struct wb_err *e)
{
	char *p = xasprintf("%s/refs/%s", c->root, key);
	int ret = ref_load_path(p, ref, e);

	free(p);
	return ret;
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

/* Whether FD is still the file at PATH (a holder that let go unlinked it). */
static int same_file(int fd, const char *path)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && stat(path, &b) == 0 &&
		a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int cache_dl_trylock(struct cache *c, struct cache_dl_lock *l, const char *key,
		     long *holder, struct wb_err *e)
{
	char pid[32], *path;
	ssize_t n;
	int len, ret = -1;

	*holder = 0;
	if (!cache_is_key(key))
		return wb_error(e, WB_EIO, "invalid download lock key '%s'", key);
	path = dl_lock_path(c, key);
	for (int tries = 0; tries < 100; tries++) {
		if (l->fd < 0) {
			l->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
			if (l->fd < 0) {
				wb_error(e, WB_EIO, "cannot open download lock '%s': %s", path,
					 strerror(errno));
				goto out;
			}
		}
		if (flock(l->fd, LOCK_EX | LOCK_NB) < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EWOULDBLOCK) {
				wb_error(e, WB_EIO, "cannot take download lock '%s': %s", path,
					 strerror(errno));
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
		if (same_file(l->fd, path)) {
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
	wb_error(e, WB_EIO, "cannot take download lock '%s': it keeps changing", path);
out:
	if (ret < 0 && l->fd >= 0) {
		close(l->fd);
		l->fd = -1;
	}
	free(path);
	return ret;
}

void cache_dl_unlock(struct cache *c, struct cache_dl_lock *l)
{
	if (l->held) {
		/* unlinked while held, then closed: a waiter that locks the
		 * old file finds it gone (same_file) and opens the path anew */
		char *path = dl_lock_path(c, l->key);

		if (same_file(l->fd, path))
			unlink(path);
		free(path);
	}
	if (l->fd >= 0)
		close(l->fd);   /* releases the flock */
	l->fd = -1;
	l->held = 0;
}

/* Call FN for every regular file name in DIR (sorted not needed). */
static int each_file(const char *dir, int (*fn)(const char *dir, const char *name, void *),
		     void *ctx, struct wb_err *e)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int ret = 0;

	if (!d) {
		if (errno == ENOENT)
			return 0;
		return wb_error(e, WB_EIO, "cannot read '%s': %s", dir, strerror(errno));
	}
	while (!ret && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		ret = fn(dir, de->d_name, ctx);
	}
	closedir(d);
	return ret;
}

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct cache_entry_info *)a)->sha256,
		      ((const struct cache_entry_info *)b)->sha256);
}

static int add_entry(const char *dir, const char *name, void *ctx)
{
	struct cache_listing *l = ctx;
	struct cache_entry_info *ci;
	struct stat st;
	char *p;

	if (!cache_is_key(name))
		return 0;
	p = fs_join(dir, name);
	if (stat(p, &st) < 0 || !S_ISREG(st.st_mode)) {
		free(p);
		return 0;
	}
	free(p);
	ALLOC_GROW(l->v, l->nr + 1, l->alloc);
	ci = &l->v[l->nr++];
	memset(ci, 0, sizeof(*ci));
	memcpy(ci->sha256, name, 65);
	ci->size = (unsigned long long)st.st_size;
	return 0;
}

static int add_subdir(const char *dir, const char *name, void *ctx)
{
	struct wb_err e = WB_ERR_INIT;
	char *p = fs_join(dir, name);
	int r = each_file(p, add_entry, ctx, &e);

	free(p);
	return r;
}

static int count_file(const char *dir, const char *name, void *ctx)
{
	(void)dir;
	(void)name;
	(*(size_t *)ctx)++;
	return 0;
}

struct ref_scan {
	struct cache_listing *l;
	struct wb_strlist dangling;  /* ref file names pointing nowhere */
};

static int scan_ref(const char *dir, const char *name, void *ctx)
{
	struct ref_scan *rs = ctx;
	struct cache_entry_info key, *ci = NULL;
	struct cache_ref ref;
	struct wb_err e = WB_ERR_INIT;
	const char *art;
	char *p = fs_join(dir, name);

	if (ref_load_path(p, &ref, &e) > 0) {
		memcpy(key.sha256, ref.sha256, 65);
		ci = bsearch(&key, rs->l->v, rs->l->nr, sizeof(key), cmp_entry);
	}
	free(p);
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
	char *p;
	int ret;

	memset(l, 0, sizeof(*l));
	p = fs_join(c->root, "sha256");
	ret = each_file(p, add_subdir, l, e);
	free(p);
	if (ret)
		return -1;
	if (l->nr)   /* qsort(NULL, 0, ...) is undefined */
		qsort(l->v, l->nr, sizeof(*l->v), cmp_entry);
	p = fs_join(c->root, "refs");
	ret = each_file(p, scan_ref, &rs, e);
	free(p);
	for (size_t i = 0; i < l->nr; i++)
		if (l->v[i].nartifacts > 1)
			qsort(l->v[i].artifacts, l->v[i].nartifacts,
			      sizeof(char *), cmp_str);
	p = fs_join(c->root, "tmp");
	each_file(p, count_file, &l->ntmp, e);
	free(p);
	p = fs_join(c->root, "quarantine");
	each_file(p, count_file, &l->nquarantine, e);
	free(p);
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

static int rm_file(const char *dir, const char *name, void *ctx)
{
	struct rm_ctx *rc = ctx;
	struct stat st;
	char *p = fs_join(dir, name);

	if (lstat(p, &st) == 0 && unlink(p) == 0) {
		(*rc->count)++;
		*rc->bytes += (unsigned long long)st.st_size;
	}
	free(p);
	return 0;
}

int cache_gc(struct cache *c, struct cache_gc_stats *st, struct wb_err *e)
{
	struct cache_listing l;
	struct wb_strlist dangling = WB_STRLIST_INIT;
	struct rm_ctx rc;
	char *p;
	int ret;

	memset(st, 0, sizeof(*st));
	if (lock_ex(c, e) < 0)
		return -1;
	ret = list_locked(c, &l, &dangling, e);
	if (ret)
		goto out;
	rc.bytes = &st->freed_bytes;
	rc.count = &st->removed_tmp;
	p = fs_join(c->root, "tmp");
	each_file(p, rm_file, &rc, e);
	free(p);
	rc.count = &st->removed_quarantine;
	p = fs_join(c->root, "quarantine");
	each_file(p, rm_file, &rc, e);
	free(p);
	{
		/* download locks: nobody else has the cache open (gc.lock) */
		size_t nlocks = 0;
		unsigned long long lbytes = 0;
		struct rm_ctx lc = { &nlocks, &lbytes };

		p = fs_join(c->root, "locks");
		each_file(p, rm_file, &lc, e);
		free(p);
	}
	for (size_t i = 0; i < dangling.nr; i++) {
		p = xasprintf("%s/refs/%s", c->root, dangling.v[i]);
		if (unlink(p) == 0)
			st->removed_refs++;
		free(p);
	}
	for (size_t i = 0; i < l.nr; i++) {
		if (l.v[i].nartifacts)
			continue;
		p = cache_entry_path(c, l.v[i].sha256);
		if (unlink(p) == 0) {
			st->removed_entries++;
			st->freed_bytes += l.v[i].size;
		} else if (errno != ENOENT) {
			ret = wb_error(e, WB_EIO, "cannot remove '%s': %s", p,
				       strerror(errno));
		}
		free(p);
	}
out:
	unlock(c);
	cache_listing_release(&l);
	wb_strlist_release(&dangling);
	return ret;
}
