/*
 * What an archive entry becomes under DEST (stage/extract_ctx.h): the entry
 * checks (links, devices, '..', absolute paths, names Windows cannot hold,
 * strip and include), the table of placed paths (case-insensitive, as
 * Windows sees them), writing files and directories with openat() and
 * O_NOFOLLOW under a descriptor on DEST, and directory mtimes.
 *
 * @where secure archive extraction (links, `..`, devices, bombs, case
 *   collisions; container sniffing, one decompressor) -- entry checks, placed
 *   paths, writing under DEST
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/fs.h"
#include "lib/buf.h"
#include "lib/pathtab.h"
#include "lib/text.h"
#include "lib/winpath.h"
#include "stage/extract_ctx.h"

/* ---- the paths placed (case-insensitive, as Windows sees them) ---- */

/*
 * Record that ENTRY places PATH (a directory if IS_DIR) in the table of
 * placed paths (lib/pathtab.h). Refuses a path that differs from an earlier
 * one only by case, a file placed twice, and a file and a directory at the
 * same path. Returns 1 if the path is new, 0 if it is a directory already
 * placed, -1 on refusal.
 * @where the one case-insensitive path table (what an archive places, what
 *   every artifact and generated file claims, 8.3 alias keys) -- what one
 *   archive places
 */
static int node_add(struct ctx *c, const char *entry, const char *path,
		    int is_dir)
{
	struct pathtab_entry *n = NULL;
	int r = pathtab_place(&c->placed, path, entry, is_dir, &n);

	if (r != PATHTAB_CLASH)
		return r;
	if (strcmp(n->path, path))
		return extract_entry_error(c, WB_ESTAGE, entry,
				   "'%s' differs only in case from '%s' (entry '%s'); "
				   "Windows cannot hold both", path, n->path, n->owner);
	if (!is_dir && !n->is_dir)
		return extract_entry_error(c, WB_ESTAGE, entry,
				   "duplicate path '%s' (also entry '%s')", path, n->owner);
	return extract_entry_error(c, WB_ESTAGE, entry,
			   "'%s' is both a file and a directory (entry '%s')",
			   path, n->owner);
}

/* ---- writing under DEST ---- */

/* Open directory NAME under DIRFD without following a symlink; create it
 * (0755) if CREATE and it is missing. Returns an fd or -1 with errno set. */
static int open_dir_at(int dirfd, const char *name, int create)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd >= 0 || errno != ENOENT || !create)
		return fd;
	if (mkdirat(dirfd, name, 0755) < 0 && errno != EEXIST)
		return -1;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 && fchmod(fd, 0755) < 0) {
		int saved = errno;

		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

/*
 * Walk the first N components of PATH ('/'-separated, already checked)
 * from DEST, component by component, creating directories if CREATE.
 * Returns a directory fd (possibly a dup of DEST) or -1 with the error set.
 */
static int walk_dirs(struct ctx *c, const char *entry, const char *path,
		     size_t n, int create)
{
	int fd = dup(c->destfd);
	const char *p = path;

	if (fd < 0)
		return extract_entry_error(c, WB_EIO, entry, "dup: %s", strerror(errno));
	for (size_t i = 0; i < n; i++) {
		const char *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);
		char *name = xstrndup(p, len);
		int next = open_dir_at(fd, name, create);
		int saved = errno;

		close(fd);
		if (next < 0) {
			char *where = xstrndup(path, (size_t)(p - path) + len);

			if (saved == ELOOP || saved == ENOTDIR)
				extract_entry_error(c, WB_ESTAGE, entry,
					    "'%s' in the destination is not a directory "
					    "(a symlink or a file is in the way)", where);
			else
				extract_entry_error(c, WB_EIO, entry, "cannot open directory '%s': %s",
					    where, strerror(saved));
			free(where);
			free(name);
			return -1;
		}
		free(name);
		fd = next;
		p = slash ? slash + 1 : p + len;
	}
	return fd;
}

static size_t count_components(const char *path)
{
	size_t n = 1;

	for (; *path; path++)
		n += *path == '/';
	return n;
}

static const char *last_component(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static unsigned normal_mode(const char *path, mode_t archive_mode)
{
	static const char *const exec_ext[] = { ".exe", ".dll", ".ps1", ".cmd", ".bat" };
	size_t len = strlen(path);

	if (archive_mode & 0111)
		return 0755;
	for (size_t i = 0; i < ARRAY_SIZE(exec_ext); i++) {
		size_t el = strlen(exec_ext[i]);

		if (len >= el && !strcasecmp(path + len - el, exec_ext[i]))
			return 0755;
	}
	return 0644;
}

/* Account N more unpacked bytes against the limits, before writing them. */
static int charge(struct ctx *c, const char *entry, unsigned long long n)
{
	unsigned long long packed = c->src.size > 0 ? (unsigned long long)c->src.size : 1;
	unsigned long long ratio_cap;

	if (n > c->max_bytes - c->total)
		return extract_entry_error(c, WB_ESTAGE, entry,
				   "unpacked size exceeds limits.max_bytes (%llu bytes); "
				   "raise limits.max_bytes for the artifact if this is expected",
				   c->max_bytes);
	if (__builtin_mul_overflow(packed, c->max_ratio, &ratio_cap))
		ratio_cap = ~0ULL;
	if (c->total + n > ratio_cap)
		return extract_entry_error(c, WB_ESTAGE, entry,
				   "unpacked size exceeds limits.max_ratio (%llu times the "
				   "%llu-byte archive); raise limits.max_ratio for the "
				   "artifact if this is expected", c->max_ratio, packed);
	c->total += n;
	return 0;
}

static int write_file(struct ctx *c, struct archive *a, struct archive_entry *ae,
		      const char *entry, const char *path)
{
	struct extract_file f = { 0 };
	struct timespec ts[2] = { { c->spec->mtime, 0 }, { c->spec->mtime, 0 } };
	struct wb_err why = WB_ERR_INIT;
	struct digest_ctx dc = { 0 };
	struct digest_result r;
	size_t ncomp = count_components(path);
	unsigned long long written = 0;
	int dirfd, fd = -1, ret = -1;

	if (archive_entry_size_is_set(ae) && archive_entry_size(ae) > 0 &&
	    (unsigned long long)archive_entry_size(ae) > c->max_bytes - c->total)
		return charge(c, entry, (unsigned long long)archive_entry_size(ae));

	dirfd = walk_dirs(c, entry, path, ncomp - 1, 1);
	if (dirfd < 0)
		return -1;
	fd = openat(dirfd, last_component(path),
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		if (errno == EEXIST)
			extract_entry_error(c, WB_ESTAGE, entry,
				    "'%s' already exists in the destination", path);
		else
			extract_entry_error(c, WB_EIO, entry, "cannot create '%s': %s", path,
				    strerror(errno));
		goto out;
	}
	if (digest_init(&dc, DIGEST_SHA256, &why) < 0) {
		extract_entry_error(c, WB_EIO, entry, "%s", why.msg);
		goto out;
	}
	for (;;) {
		la_ssize_t n = archive_read_data(a, c->wbuf, IO_BLOCK);

		if (n == 0)
			break;
		if (n < 0) {
			extract_archive_failed(c, a, entry, "cannot read entry data");
			goto out;
		}
		if (extract_bounds_check(c, entry) < 0 || charge(c, entry, (unsigned long long)n) < 0)
			goto out;
		if (fs_write_all(fd, c->wbuf, (size_t)n) < 0) {
			extract_entry_error(c, WB_EIO, entry, "write '%s': %s", path, strerror(errno));
			goto out;
		}
		digest_update(&dc, c->wbuf, (size_t)n);
		written += (unsigned long long)n;
	}
	/* A sparse entry's trailing hole: archive_read_data zero-fills the
	 * holes between data blocks but ends at the last one. The file is
	 * staged at its full size (an all-hole file included). */
	if (archive_entry_size_is_set(ae) && archive_entry_size(ae) > 0 &&
	    written < (unsigned long long)archive_entry_size(ae)) {
		unsigned long long left = (unsigned long long)archive_entry_size(ae) - written;

		memset(c->wbuf, 0, IO_BLOCK);
		while (left) {
			size_t n = left > IO_BLOCK ? IO_BLOCK : (size_t)left;

			if (extract_bounds_check(c, entry) < 0 || charge(c, entry, n) < 0)
				goto out;
			if (fs_write_all(fd, c->wbuf, n) < 0) {
				extract_entry_error(c, WB_EIO, entry, "write '%s': %s", path,
					    strerror(errno));
				goto out;
			}
			digest_update(&dc, c->wbuf, n);
			left -= n;
		}
	}
	digest_final(&dc, &r);
	memcpy(f.sha256, r.sha256, sizeof(f.sha256));
	f.size = r.size;
	f.mode = normal_mode(path, archive_entry_perm(ae));
	if (fchmod(fd, f.mode) < 0 || futimens(fd, ts) < 0 || close(fd) < 0) {
		fd = -1;
		extract_entry_error(c, WB_EIO, entry, "finish '%s': %s", path, strerror(errno));
		goto out;
	}
	fd = -1;
	f.path = xstrdup(path);
	ALLOC_GROW(c->res->files, c->res->nr + 1, c->res->alloc);
	c->res->files[c->res->nr++] = f;
	ret = 0;
out:
	digest_release(&dc);
	if (fd >= 0)
		close(fd);
	close(dirfd);
	return ret;
}

static int make_dir(struct ctx *c, const char *entry, const char *path)
{
	int fd = walk_dirs(c, entry, path, count_components(path), 1);

	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

/* ---- entry checks ---- */

static const char *refused_type(struct archive_entry *ae)
{
	switch (archive_entry_filetype(ae)) {
	case AE_IFREG: return archive_entry_symlink(ae) ? "symbolic link" : NULL;
	case AE_IFDIR: return NULL;
	case AE_IFLNK: return "symbolic link";
	case AE_IFCHR: return "character device";
	case AE_IFBLK: return "block device";
	case AE_IFIFO: return "FIFO";
	case AE_IFSOCK: return "socket";
	default: return "unknown entry type";
	}
}

/*
 * Turn ENTRY's raw path into the path under DEST: refuses absolute paths
 * and '..' components; drops '.' and empty components; strips SPEC->strip
 * leading components. Returns 1 with *OUT set (caller frees), 0 when the
 * entry is skipped (too few components), -1 on refusal.
 */
static int dest_path(struct ctx *c, const char *entry, char **out)
{
	struct buf b = BUF_INIT;
	const char *p = entry;
	int skip = c->spec->strip;

	if (*p == '/')
		return extract_entry_error(c, WB_ESTAGE, entry, "absolute path");
	while (*p) {
		const char *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);

		if (len == 2 && !strncmp(p, "..", 2)) {
			buf_release(&b);
			return extract_entry_error(c, WB_ESTAGE, entry,
					   "'..' component (path leaves the destination)");
		}
		if (len && !(len == 1 && *p == '.')) {
			if (skip > 0) {
				skip--;
			} else {
				if (b.len)
					buf_addc(&b, '/');
				buf_add(&b, p, len);
			}
		}
		p += len + (slash ? 1 : 0);
	}
	if (!b.len) {
		buf_release(&b);
		return 0;
	}
	*out = buf_detach(&b, NULL);
	return 1;
}

static int names_ok(struct ctx *c, const char *entry, const char *path)
{
	char *copy = xstrdup(path), *save = NULL;
	int ret = 0;

	for (char *name = strtok_r(copy, "/", &save); name;
	     name = strtok_r(NULL, "/", &save)) {
		const char *why;

		if (!winpath_name_ok(name, &why)) {
			ret = extract_entry_error(c, WB_ESTAGE, entry,
					  "name '%s' cannot exist on Windows: %s", name, why);
			break;
		}
	}
	free(copy);
	return ret;
}

static int included(const struct extract_spec *spec, const char *path)
{
	if (!spec->include || !spec->ninclude)
		return 1;
	for (size_t i = 0; i < spec->ninclude; i++)
		if (!fnmatch(spec->include[i], path, 0))
			return 1;
	return 0;
}

/* Record PATH and each of its parent directories in the table. */
static int place(struct ctx *c, const char *entry, const char *path, int is_dir)
{
	for (const char *s = strchr(path, '/'); s; s = strchr(s + 1, '/')) {
		char *parent = xstrndup(path, (size_t)(s - path));
		int r = node_add(c, entry, parent, 1);

		free(parent);
		if (r < 0)
			return -1;
	}
	return node_add(c, entry, path, is_dir) < 0 ? -1 : 0;
}

/* The entry's name: libarchive's (in the UTF-8 locale main() set, the
 * multibyte name is UTF-8), else its UTF-8 conversion; NULL if none. */
const char *extract_entry_name(struct archive_entry *ae)
{
	const char *n = archive_entry_pathname(ae);

	return n ? n : archive_entry_pathname_utf8(ae);
}

int extract_entry(struct ctx *c, struct archive *a, struct archive_entry *ae)
{
	const char *entry = extract_entry_name(ae);
	const char *why;
	char *path = NULL;
	int r, is_dir;

	if (!entry)
		return extract_header_error(c, WB_ESTAGE, "the entry has no usable name");
	/* Refused wherever it is: a name the manifest (JSON, UTF-8) could
	 * not hold, or that Windows would read differently. */
	if (!text_utf8_valid(entry, strlen(entry)))
		return extract_entry_error(c, WB_ESTAGE, entry,
				   "name is not valid UTF-8 (overlong forms and "
				   "surrogates included)");
	if (++c->entries > c->max_entries)
		return extract_entry_error(c, WB_ESTAGE, entry,
				   "more than limits.max_entries (%llu) entries; raise "
				   "limits.max_entries for the artifact if this is expected",
				   c->max_entries);
	/* Refused wherever they are, even when strip or include would skip them. */
	if (archive_entry_hardlink(ae))
		return extract_entry_error(c, WB_ESTAGE, entry, "hard link (to '%s') refused",
				   archive_entry_hardlink(ae));
	why = refused_type(ae);
	if (why)
		return extract_entry_error(c, WB_ESTAGE, entry, "%s refused", why);
	r = dest_path(c, entry, &path);
	if (r <= 0)
		return r;
	is_dir = archive_entry_filetype(ae) == AE_IFDIR;
	if (!included(c->spec, path)) {
		free(path);
		return 0;
	}
	r = names_ok(c, entry, path);
	if (!r)
		r = place(c, entry, path, is_dir);
	if (!r)
		r = is_dir ? make_dir(c, entry, path) : write_file(c, a, ae, entry, path);
	free(path);
	return r;
}

/* ---- directory mtimes, deepest first ---- */

static int cmp_depth(const void *x, const void *y)
{
	const struct pathtab_entry *a = *(const struct pathtab_entry *const *)x;
	const struct pathtab_entry *b = *(const struct pathtab_entry *const *)y;
	size_t da = count_components(a->path), db = count_components(b->path);

	if (da != db)
		return da < db ? 1 : -1;
	return strcmp(a->path, b->path);
}

int extract_dir_mtimes(struct ctx *c)
{
	struct timespec ts[2] = { { c->spec->mtime, 0 }, { c->spec->mtime, 0 } };
	struct pathtab_entry **dirs = xcalloc(c->placed.n + 1, sizeof(*dirs));
	struct pathtab_entry *n;
	size_t nd = 0, pos = 0;
	int ret = 0;

	while ((n = pathtab_next(&c->placed, &pos)))
		if (n->is_dir)
			dirs[nd++] = n;
	qsort(dirs, nd, sizeof(*dirs), cmp_depth);
	for (size_t i = 0; i < nd && !ret; i++) {
		int fd = walk_dirs(c, dirs[i]->owner, dirs[i]->path,
				   count_components(dirs[i]->path), 0);

		if (fd < 0) {
			ret = -1;
			break;
		}
		if (futimens(fd, ts) < 0)
			ret = extract_entry_error(c, WB_EIO, dirs[i]->owner, "set mtime of '%s': %s",
					  dirs[i]->path, strerror(errno));
		close(fd);
	}
	free(dirs);
	return ret;
}

