/*
 * The staged tree: claims (collision checks across artifacts), verified
 * copies, unpacking through a scratch dir, normalisation and the atomic
 * swap. See tree.h for the on-disk layout.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <linux/fs.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/bulk.h"
#include "lib/fs.h"
#include "lib/names.h"
#include "lib/pathtab.h"
#include "lib/text.h"
#include "lib/strlist.h"
#include "lib/winpath.h"
#include "stage/tree.h"
#include "trust/authenticode.h"
#include "trust/digest.h"

#define TMP_PREFIX ".tree.tmp."

/* ---- claims ----------------------------------------------------------- */

static char *owner_label(const char *artifact, const char *component)
{
	if (artifact)
		return xasprintf("artifact '%s'", artifact);
	return xasprintf("the generated files of component '%s'", component);
}

static int collision(const struct pathtab_entry *c, const char *path, int want_dir,
		     const char *owner, struct wb_err *e)
{
	char *a = winpath_from_tree(c->path), *b = winpath_from_tree(path);
	int ret;

	if (want_dir && !c->is_dir)
		ret = wb_error(e, WB_ESTAGE, "%s places the file '%s', where %s needs "
			       "the directory '%s'", c->owner, a, owner, b);
	else if (!want_dir && c->is_dir)
		ret = wb_error(e, WB_ESTAGE, "%s places the file '%s', where %s needs "
			       "the directory '%s'", owner, b, c->owner, a);
	else if (!strcmp(c->path, path))
		ret = wb_error(e, WB_ESTAGE, "%s and %s both place '%s'", c->owner,
			       owner, a);
	else
		ret = wb_error(e, WB_ESTAGE, "'%s' from %s and '%s' from %s differ "
			       "only in case (Windows names are case-insensitive)",
			       a, c->owner, b, owner);
	free(a);
	free(b);
	return ret;
}

/*
 * PATH, newly claimed, must not alias another entry of its directory
 * through an 8.3 short name ("KUBE-L~1.EXE" beside "kube-log-runner.exe").
 * Each entry's alias keys (winpath_short_keys) go into the claims too,
 * behind a control byte no path holds, marked with the entry's kind; a
 * key held by the other kind is the collision. Linear in the entries.
 * @where Windows path rules (C: only, reserved names, forbidden characters,
 *   Unicode case folding, 8.3 aliases, MAX_PATH) -- 8.3 aliases in the tree
 */
static int claim_short(struct tree *t, const char *path, const char *owner,
		       struct wb_err *e)
{
	struct wb_strlist keys = WB_STRLIST_INIT;
	const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
	char *dir = xstrndup(path, slash ? (size_t)(slash - path) : 0);
	char *dfold = winpath_fold(dir);
	int kind = winpath_short_keys(name, &keys), ret = 0;

	for (size_t i = 0; !ret && i < keys.nr; i++) {
		char *key = xasprintf("\x01%s\x01%s", dfold, keys.v[i]);
		struct pathtab_entry *c = pathtab_find_key(&t->claims, key);

		if (!c) {
			pathtab_add_key(&t->claims, key, path, owner, 0)->tag = kind;
			continue;
		}
		free(key);
		if (c->tag != kind) {
			const char *sp = kind == WINPATH_SHORT_TILDE ? path : c->path;
			const char *lp = kind == WINPATH_SHORT_TILDE ? c->path : path;
			const char *so = kind == WINPATH_SHORT_TILDE ? owner : c->owner;
			const char *lo = kind == WINPATH_SHORT_TILDE ? c->owner : owner;
			char *a = winpath_from_tree(sp), *b = winpath_from_tree(lp);

			ret = wb_error(e, WB_ESTAGE, "'%s' from %s may be the 8.3 short "
				       "name Windows gives '%s' from %s (one file under "
				       "two names)", a, so, b, lo);
			free(a);
			free(b);
		}
	}
	wb_strlist_release(&keys);
	free(dir);
	free(dfold);
	return ret;
}

/* Claim one path (IS_DIR: as a directory). A directory may be claimed again
 * with the same spelling; anything else already there is a collision.
 * @where the one case-insensitive path table (what an archive places, what
 *   every artifact and generated file claims, 8.3 alias keys) -- what the
 *   tree claims
 */
static int claim_one(struct tree *t, const char *path, int is_dir,
		     const char *owner, struct wb_err *e)
{
	struct pathtab_entry *c = NULL;
	int r = pathtab_place(&t->claims, path, owner, is_dir, &c);

	if (r == PATHTAB_CLASH)
		return collision(c, path, is_dir, owner, e);
	if (r == PATHTAB_AGAIN)
		return 0;
	return claim_short(t, path, owner, e);
}

/* Claim PATH and every directory above it. */
static int claim(struct tree *t, const char *path, int is_dir,
		 const char *artifact, const char *component, struct wb_err *e)
{
	char *owner = owner_label(artifact, component), *sub;
	const char *why = NULL;
	int ret = 0;

	if (!winpath_tree_path_ok(path, &why)) {
		char *w = winpath_from_tree(path), *shown = text_printable(w);

		ret = wb_error(e, WB_ESTAGE, "%s places '%s', which Windows cannot "
			       "hold: %s", owner, shown, why);
		free(w);
		free(shown);
	}
	for (const char *p = strchr(path, '/'); !ret && p; p = strchr(p + 1, '/')) {
		sub = xstrndup(path, (size_t)(p - path));
		ret = claim_one(t, sub, 1, owner, e);
		free(sub);
	}
	if (!ret && *path)
		ret = claim_one(t, path, is_dir, owner, e);
	free(owner);
	return ret;
}

static void record(struct tree *t, const char *path, unsigned long long size,
		   const unsigned char sha[32], const char *artifact,
		   const char *component)
{
	struct tree_file *f;

	ALLOC_GROW(t->files, t->nfiles + 1, t->alloc_files);
	f = &t->files[t->nfiles++];
	f->path = xstrdup(path);
	f->size = size;
	digest_hex(sha, 32, f->sha256);
	f->artifact = artifact;
	f->component = component;
	f->authenticode = NULL;
	f->upstream_sha256[0] = '\0';
	f->site_signature = NULL;
}

/* ---- begin / release ---------------------------------------------------- */

static int remove_stale(struct tree *t, struct wb_err *e)
{
	DIR *d = opendir(t->dir);
	struct dirent *de;
	int ret = 0;

	if (!d)
		return wb_error(e, WB_EIO, "cannot read '%s': %s", t->dir, strerror(errno));
	while (!ret && (de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, TMP_PREFIX, strlen(TMP_PREFIX)))
			continue;
		ret = fs_remove_tree(t->dir, de->d_name, e);
	}
	closedir(d);
	return ret;
}

/*
 * Open and flock LOCK. A run that failed before any tree existed removes
 * the lock file (tree_release), so the file we waited on may have been
 * unlinked meanwhile: hold the lock only on the file still at LOCK.
 */
static int lock_file(struct tree *t, const char *lock, struct wb_err *e)
{
	for (;;) {
		struct stat fd_st, path_st;

		t->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (t->lock_fd < 0 || flock(t->lock_fd, LOCK_EX) < 0 ||
		    fstat(t->lock_fd, &fd_st) < 0)
			return wb_error(e, WB_EIO, "cannot lock '%s': %s", lock,
					strerror(errno));
		if (stat(lock, &path_st) == 0 && path_st.st_dev == fd_st.st_dev &&
		    path_st.st_ino == fd_st.st_ino)
			return 0;
		close(t->lock_fd);
		t->lock_fd = -1;
	}
}

/*
 * @where the staged tree's temp dir, normalisation (modes, mtimes) and atomic
 *   swap
 */
int tree_begin(struct tree *t, const char *out, const char *name, time_t mtime,
	       struct wb_err *e)
{
	char *lock;

	t->mtime = mtime;
	t->dir = fs_join(out, name);
	t->final = fs_join(t->dir, "tree");
	t->tmp = xasprintf("%s/%s%ld", t->dir, TMP_PREFIX, (long)getpid());
	t->root = fs_join(t->tmp, "tree");
	if (fs_mkdir_p(t->dir, 0755, e) < 0)
		return -1;
	lock = fs_join(t->dir, ".stage.lock");
	/* OUT/<name>/tree is replaced and the old one removed at commit: only
	 * a tree a stage made (the lock file beside it) may be. */
	if (fs_exists(t->final) && !fs_exists(lock)) {
		wb_error(e, WB_EUSAGE, "'%s' exists but no stage made it (no '%s' "
			 "beside it): not replacing it; choose another -o",
			 t->final, ".stage.lock");
		free(lock);
		return -1;
	}
	if (lock_file(t, lock, e) < 0) {
		free(lock);
		return -1;
	}
	free(lock);
	/* Under the lock no other stage of this output runs: every temp dir
	 * left here belongs to a run that was killed. */
	if (remove_stale(t, e) < 0)
		return -1;
	if (mkdir(t->tmp, 0755) < 0 || mkdir(t->root, 0755) < 0)
		return wb_error(e, WB_EIO, "cannot create '%s': %s", t->root,
				strerror(errno));
	return 0;
}

void tree_release(struct tree *t)
{
	struct wb_err ignore = WB_ERR_INIT;

	if (t->tmp && t->lock_fd >= 0)
		fs_remove_below(t->dir, t->tmp, &ignore);
	if (t->lock_fd >= 0) {
		struct stat st;

		/* No tree at the final path (the first stage failed): the lock
		 * file proves nothing, so it is not left behind. Still holding
		 * the lock; a waiter notices the unlink (lock_file). */
		if (lstat(t->final, &st) < 0 && errno == ENOENT) {
			char *lock = fs_join(t->dir, ".stage.lock");

			unlink(lock);
			free(lock);
		}
		close(t->lock_fd);
	}
	t->lock_fd = -1;
	pathtab_release(&t->claims);
	for (size_t i = 0; i < t->nfiles; i++) {
		free(t->files[i].path);
		if (t->files[i].authenticode)
			authenticode_result_release(t->files[i].authenticode);
		free(t->files[i].authenticode);
		if (t->files[i].site_signature)
			authenticode_result_release(t->files[i].site_signature);
		free(t->files[i].site_signature);
	}
	free(t->files);
	t->files = NULL;
	t->nfiles = t->alloc_files = 0;
	wb_strlist_release(&t->dirs);
	free(t->dir);
	free(t->tmp);
	free(t->root);
	free(t->final);
	t->dir = t->tmp = t->root = t->final = NULL;
}

/* ---- writing ------------------------------------------------------------ */

unsigned tree_file_mode(const char *path)
{
	static const char *const exec_ext[] = { ".exe", ".dll", ".ps1", ".cmd", ".bat" };
	size_t n = strlen(path);

	for (size_t i = 0; i < ARRAY_SIZE(exec_ext); i++) {
		size_t k = strlen(exec_ext[i]);

		if (n > k && !strcasecmp(path + n - k, exec_ext[i]))
			return 0755;
	}
	return 0644;
}

/* Open a new file at tree path PATH for writing (parents created). */
static int create_in_tree(struct tree *t, const char *path, char **full,
			  struct wb_err *e)
{
	char *dir;
	int fd;

	*full = fs_join(t->root, path);
	dir = fs_dirname(*full);
	if (fs_mkdir_p(dir, 0755, e) < 0) {
		free(dir);
		return -1;
	}
	free(dir);
	fd = open(*full, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  tree_file_mode(path));
	if (fd < 0)
		return wb_error(e, WB_EIO, "cannot create '%s': %s", *full,
				strerror(errno));
	return fd;
}

/* ---- pieces: prepared outside the tree, then adopted -------------------- */

char *tree_scratch(const struct tree *t, const char *artifact)
{
	return xasprintf("%s/prep/%s", t->tmp, artifact);
}

static void piece_add(struct tree_piece *p, const char *name,
		      unsigned long long size, const unsigned char sha[32])
{
	struct extract_file *f;

	ALLOC_GROW(p->files.files, p->files.nr + 1, p->files.alloc);
	f = &p->files.files[p->files.nr++];
	memset(f, 0, sizeof(*f));
	f->path = xstrdup(name);
	f->size = size;
	memcpy(f->sha256, sha, 32);
	f->mode = tree_file_mode(name);
}

/* Read IN to OUT, hashing: the copy of a cache entry nobody hashed in this
 * run. 0, or -1 with E (WB_EVERIFY when it is not EXPECT). */
static int copy_hashing(int in, int out, const char *src, const char *full,
			const unsigned char want[32], const char *expect,
			struct digest_result *r, struct wb_err *e)
{
	struct digest_ctx dc;
	char got[65];
	int ret = -1, writing;

	if (digest_init(&dc, DIGEST_SHA256, e) < 0)
		return -1;
	if (bulk_copy(in, out, digest_update_cb, &dc, &writing) < 0) {
		wb_error(e, WB_EIO, "cannot %s '%s': %s", writing ? "write" : "read",
			 writing ? full : src, strerror(errno));
		goto out;
	}
	digest_final(&dc, r);
	if (!digest_equal(r->sha256, want, 32)) {
		digest_hex(r->sha256, 32, got);
		wb_error(e, WB_EVERIFY, "'%s' does not match its digest: expected %s, "
			 "actual %s", src, expect, got);
		goto out;
	}
	ret = 0;
out:
	digest_release(&dc);
	return ret;
}

/* Copy IN to OUT: a reflink where the filesystem makes one (no bytes
 * written), else a bulk copy (lib/bulk.h: past the page cache where it
 * can; copy_file_range would fill it twice). 0, or -1 with errno. */
static int copy_plain(int in, int out)
{
	int writing;

	if (ioctl(out, FICLONE, in) == 0)
		return 0;
	if (lseek(in, 0, SEEK_SET) < 0 || lseek(out, 0, SEEK_SET) < 0 ||
	    ftruncate(out, 0) < 0)
		return -1;
	return bulk_copy(in, out, NULL, NULL, &writing);
}

/* Copy without hashing: SRC was verified as WANT moments
 * ago. */
static int copy_fresh(int in, int out, const char *src, const char *full,
		      const unsigned char want[32], struct digest_result *r,
		      struct wb_err *e)
{
	struct stat si, so;

	if (fstat(in, &si) < 0)
		return wb_error(e, WB_EIO, "cannot open '%s': %s", src, strerror(errno));
	if (copy_plain(in, out) < 0)
		return wb_error(e, WB_EIO, "cannot copy '%s' to '%s': %s", src, full,
				strerror(errno));
	if (fstat(out, &so) < 0 || so.st_size != si.st_size)
		return wb_error(e, WB_EIO, "'%s' changed size while it was copied", src);
	memcpy(r->sha256, want, 32);
	r->size = (unsigned long long)si.st_size;
	return 0;
}

/*
 * @where where a file is written into the staged tree (every path claimed) --
 *   artifacts to a scratch dir
 */
int tree_prepare_copy(const char *scratch, int src_fd, const char *src,
		      const char *expect, int fresh, const char *name,
		      struct tree_piece *p, struct wb_err *e)
{
	struct digest_result r;
	unsigned char want[32];
	char *full = NULL;
	int in = -1, out = -1, ret = -1;

	memset(p, 0, sizeof(*p));
	p->scratch = xstrdup(scratch);
	p->single = 1;
	if (digest_unhex(expect, want, 32) < 0)
		return wb_error(e, WB_EIO, "invalid expected digest '%s'", expect);
	/* the very file that was verified; never reopened by name */
	in = fs_open_verified(src_fd, src);
	if (in < 0) {
		wb_error(e, WB_EIO, "cannot open '%s': %s", src, strerror(errno));
		goto out;
	}
	if (fs_mkdir_p(scratch, 0755, e) < 0)
		goto out;
	full = fs_join(scratch, name);
	out = open(full, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (out < 0) {
		wb_error(e, WB_EIO, "cannot create '%s': %s", full, strerror(errno));
		goto out;
	}
	memset(&r, 0, sizeof(r));
	if (fresh ? copy_fresh(in, out, src, full, want, &r, e) < 0 :
	    copy_hashing(in, out, src, full, want, expect, &r, e) < 0)
		goto out;
	ret = close(out);
	out = -1;
	if (ret < 0) {
		wb_error(e, WB_EIO, "cannot write '%s': %s", full, strerror(errno));
		goto out;
	}
	piece_add(p, name, r.size, r.sha256);
out:
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	free(full);
	return ret;
}

int tree_tee_open(const char *scratch, const char *name)
{
	struct wb_err ignore = WB_ERR_INIT;
	char *full;
	int fd;

	if (fs_mkdir_p(scratch, 0755, &ignore) < 0)
		return -1;
	full = fs_join(scratch, name);
	fd = open(full, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	free(full);
	return fd;
}

/*
 * @where where a download's bytes are also written to their staged place as
 *   they arrive (the tee) -- adopted once verified (`fetch_item.teed`)
 */
int tree_prepare_teed(const char *scratch, const char *sha256,
		      unsigned long long size, const char *name,
		      struct tree_piece *p, struct wb_err *e)
{
	char *full = fs_join(scratch, name);
	unsigned char sha[32];
	struct stat st;
	int ret = 0;

	memset(p, 0, sizeof(*p));
	p->scratch = xstrdup(scratch);
	p->single = 1;
	if (digest_unhex(sha256, sha, 32) < 0)
		ret = wb_error(e, WB_EIO, "invalid expected digest '%s'", sha256);
	else if (lstat(full, &st) < 0 || !S_ISREG(st.st_mode) ||
		 (unsigned long long)st.st_size != size)
		ret = wb_error(e, WB_EIO, "'%s' is not the %llu bytes written to it "
			       "while they were downloaded", full, size);
	else
		piece_add(p, name, size, sha);
	free(full);
	return ret;
}

void tree_tee_discard(const char *scratch, const char *name)
{
	char *full = fs_join(scratch, name);

	unlink(full);
	free(full);
}

int tree_prepare_unpack(const char *scratch, int archive_fd, const char *archive,
			const char *expect, const struct extract_spec *spec,
			struct tree_piece *p, struct wb_err *e)
{
	int fd, ret;

	memset(p, 0, sizeof(*p));
	p->scratch = xstrdup(scratch);
	if (fs_mkdir_p(scratch, 0755, e) < 0)
		return -1;
	/* the very file that was verified; never reopened by name */
	fd = fs_open_verified(archive_fd, archive);
	if (fd < 0)
		return wb_error(e, WB_EIO, "cannot open archive '%s': %s", archive,
				strerror(errno));
	ret = extract_archive_fd(fd, archive, expect, spec, scratch, &p->files, e);
	close(fd);
	return ret;
}

/* The tree path of a piece's file REL below DEST (DEST itself when SINGLE). */
static char *piece_path(const char *dest, int single, const char *rel)
{
	if (single)
		return xstrdup(dest);
	return *dest ? xasprintf("%s/%s", dest, rel) : xstrdup(rel);
}

/*
 * @where re-staging only what changed: per-artifact prep keys in the stamp,
 *   hard links from the previous tree
 */
int tree_prepare_reuse(const char *scratch, const char *old_root,
		       const char *dest, const struct extract_result *old,
		       int single, struct tree_piece *p, struct wb_err *e)
{
	memset(p, 0, sizeof(*p));
	p->scratch = xstrdup(scratch);
	p->single = single;
	for (size_t i = 0; i < old->nr; i++) {
		const struct extract_file *f = &old->files[i];
		char *rel = piece_path(dest, single, f->path);
		char *from = fs_join(old_root, rel), *to = fs_join(scratch, f->path);
		char *dir = fs_dirname(to);
		struct stat st;
		int r = fs_mkdir_p(dir, 0755, e);

		if (!r && (lstat(from, &st) < 0 || !S_ISREG(st.st_mode) ||
			   (unsigned long long)st.st_size != f->size))
			r = wb_error(e, WB_EIO, "'%s' is not the file the previous "
				     "stage left there", from);
		if (!r && link(from, to) < 0)
			r = wb_error(e, WB_EIO, "cannot link '%s' to '%s': %s", from, to,
				     strerror(errno));
		if (!r)
			piece_add(p, f->path, f->size, f->sha256);
		free(rel);
		free(from);
		free(to);
		free(dir);
		if (r)
			return -1;
	}
	return 0;
}

/*
 * @where where a file is written into the staged tree (every path claimed) --
 *   each path claimed and moved in
 */
int tree_adopt(struct tree *t, struct tree_piece *p, const char *dest,
	       const char *artifact, const char *component, struct wb_err *e)
{
	for (size_t i = 0; i < p->files.nr; i++) {
		const struct extract_file *f = &p->files.files[i];
		char *path = piece_path(dest, p->single, f->path);
		char *from = fs_join(p->scratch, f->path), *to = fs_join(t->root, path);
		char *dir = fs_dirname(to);
		int r = claim(t, path, 0, artifact, component, e);

		if (!r)
			r = fs_mkdir_p(dir, 0755, e);
		if (!r && rename(from, to) < 0)
			r = wb_error(e, WB_EIO, "cannot move '%s' to '%s': %s", from, to,
				     strerror(errno));
		if (!r)
			record(t, path, f->size, f->sha256, artifact, component);
		free(path);
		free(from);
		free(to);
		free(dir);
		if (r)
			return -1;
	}
	return fs_remove_below(t->tmp, p->scratch, e);
}

void tree_piece_release(struct tree_piece *p)
{
	extract_result_release(&p->files);
	free(p->scratch);
	p->scratch = NULL;
}

/*
 * @where where a file is written into the staged tree (every path claimed) --
 *   generated files
 */
int tree_write(struct tree *t, const char *path, const void *data, size_t len,
	       const char *component, struct wb_err *e)
{
	struct digest_ctx dc;
	struct digest_result r;
	char *full = NULL;
	int fd, ret = -1;

	if (claim(t, path, 0, NULL, component, e) < 0)
		return -1;
	fd = create_in_tree(t, path, &full, e);
	if (fd < 0)
		goto out;
	if (fs_write_all(fd, data, len) < 0 || close(fd) < 0) {
		wb_error(e, WB_EIO, "cannot write '%s': %s", full, strerror(errno));
		goto out;
	}
	if (digest_init(&dc, DIGEST_SHA256, e) < 0)
		goto out;
	digest_update(&dc, data, len);
	digest_final(&dc, &r);
	record(t, path, len, r.sha256, NULL, component);
	ret = 0;
out:
	free(full);
	return ret;
}

int tree_mkdir(struct tree *t, const char *path, const char *component,
	       struct wb_err *e)
{
	char *full;
	int ret;

	if (claim(t, path, 1, NULL, component, e) < 0)
		return -1;
	full = fs_join(t->root, path);
	ret = fs_mkdir_p(full, 0755, e);
	free(full);
	if (!ret)
		wb_strlist_push_unique(&t->dirs, path);
	return ret;
}

/* ---- commit ------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Set modes and mtimes below the directory DFD (named PATH), in sorted
 * order, children before their directory. Anything that is neither a
 * regular file nor a directory is an internal error. */
static int normalise(int dfd, const char *path, time_t mtime, struct wb_err *e)
{
	struct timespec ts[2] = { { mtime, 0 }, { mtime, 0 } };
	struct wb_strlist names = WB_STRLIST_INIT;
	struct dirent *de;
	DIR *d;
	int ret = 0, fd2 = dup(dfd);

	if (fd2 < 0 || !(d = fdopendir(fd2))) {
		if (fd2 >= 0)
			close(fd2);
		return wb_error(e, WB_EIO, "cannot read '%s': %s", path, strerror(errno));
	}
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			wb_strlist_push(&names, de->d_name);
	closedir(d);
	if (names.nr)
		qsort(names.v, names.nr, sizeof(*names.v), cmp_str);
	for (size_t i = 0; !ret && i < names.nr; i++) {
		const char *n = names.v[i];
		struct stat st;

		if (fstatat(dfd, n, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			ret = wb_error(e, WB_EIO, "cannot stat '%s/%s': %s", path, n,
				       strerror(errno));
		} else if (S_ISDIR(st.st_mode)) {
			char *sub = fs_join(path, n);
			int cfd = openat(dfd, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (cfd < 0)
				ret = wb_error(e, WB_EIO, "cannot open '%s': %s", sub,
					       strerror(errno));
			else
				ret = normalise(cfd, sub, mtime, e);
			if (cfd >= 0)
				close(cfd);
			free(sub);
		} else if (S_ISREG(st.st_mode)) {
			if (fchmodat(dfd, n, tree_file_mode(n), 0) < 0 ||
			    utimensat(dfd, n, ts, AT_SYMLINK_NOFOLLOW) < 0)
				ret = wb_error(e, WB_EIO, "cannot set the mode or time of "
					       "'%s/%s': %s", path, n, strerror(errno));
		} else {
			ret = wb_error(e, WB_EIO, "'%s/%s' is neither a file nor a "
				       "directory", path, n);
		}
	}
	wb_strlist_release(&names);
	if (!ret && (fchmod(dfd, 0755) < 0 || futimens(dfd, ts) < 0))
		ret = wb_error(e, WB_EIO, "cannot set the mode or time of '%s': %s",
			       path, strerror(errno));
	return ret;
}

static int normalise_path(const char *path, time_t mtime, struct wb_err *e)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), ret;

	if (fd < 0)
		return wb_error(e, WB_EIO, "cannot open '%s': %s", path, strerror(errno));
	ret = normalise(fd, path, mtime, e);
	close(fd);
	return ret;
}

static int cmp_file(const void *a, const void *b)
{
	return strcmp(((const struct tree_file *)a)->path,
		      ((const struct tree_file *)b)->path);
}

static void hook_at(tree_hook_fn *hook, void *ctx, const char *point)
{
	if (hook)
		hook(ctx, point);
}

/*
 * @where the staged tree's temp dir, normalisation (modes, mtimes) and atomic
 *   swap
 */
int tree_commit(struct tree *t, tree_hook_fn *hook, void *hook_ctx,
		struct wb_err *e)
{
	struct timespec ts[2] = { { t->mtime, 0 }, { t->mtime, 0 } };
	int ret = fs_remove_tree(t->tmp, "prep", e);

	if (ret < 0 || normalise_path(t->root, t->mtime, e) < 0)
		return -1;
	if (t->nfiles)
		qsort(t->files, t->nfiles, sizeof(*t->files), cmp_file);
	hook_at(hook, hook_ctx, "before-swap");
	if (fs_exists(t->final)) {
		if (renameat2(AT_FDCWD, t->root, AT_FDCWD, t->final, RENAME_EXCHANGE) < 0) {
			/* No RENAME_EXCHANGE on this filesystem: move the old tree
			 * into the temp dir first (a kill in between leaves no tree
			 * at the final path, never a partial one). */
			char *old = fs_join(t->tmp, "old");

			if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) {
				free(old);
				return wb_error(e, WB_EIO, "cannot swap '%s' into '%s': %s",
						t->root, t->final, strerror(errno));
			}
			ret = rename(t->final, old);
			free(old);
			if (ret < 0 || rename(t->root, t->final) < 0)
				return wb_error(e, WB_EIO, "cannot move '%s' to '%s': %s",
						t->root, t->final, strerror(errno));
		}
	} else if (rename(t->root, t->final) < 0) {
		return wb_error(e, WB_EIO, "cannot move '%s' to '%s': %s", t->root,
				t->final, strerror(errno));
	}
	hook_at(hook, hook_ctx, "after-swap");
	/* the move may have touched the tree root's times */
	if (utimensat(AT_FDCWD, t->final, ts, AT_SYMLINK_NOFOLLOW) < 0)
		return wb_error(e, WB_EIO, "cannot set the time of '%s': %s", t->final,
				strerror(errno));
	return fs_remove_below(t->dir, t->tmp, e);
}
