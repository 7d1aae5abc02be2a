/*
 * Secure extraction. libarchive only parses; every byte that lands on disk
 * is written here, with openat() relative to a descriptor on DEST and
 * O_NOFOLLOW on every component, so nothing (a hostile entry, a symlink
 * planted in DEST) can make a write land outside DEST.
 *
 * One-pass archive digest: libarchive reads the file only through
 * src_read/src_seek. The SHA-256 follows a high-water mark: bytes are
 * hashed when a read extends the hashed prefix [0, mark), so every byte is
 * hashed once and in order whatever the read pattern.
 *  - tar and compressed tar are read front to back: the hash is a side
 *    effect of extraction. A skip over unwanted data (libarchive seeks
 *    forward with SEEK_CUR) is filled in by the next read, so those bytes
 *    are read once, for the hash only.
 *  - zip needs the seekable reader (its modes and symlink bits live only in
 *    the central directory; the streaming reader would turn a symlink into
 *    a regular file). It first reads the end of the file (SEEK_END/SEEK_SET
 *    past the mark): those reads are not hashed and leave no fill. Then it
 *    reads the entries from the start, which extends the mark, and after
 *    the last entry the rest (the central directory) is drained through
 *    the hash. Read twice: that tail, and the first block (libarchive's
 *    format detection reads it before the zip reader seeks back to 0).
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "lib/fs.h"
#include "lib/buf.h"
#include "lib/winpath.h"
#include "stage/extract.h"
#include "trust/digest.h"

#define IO_BLOCK (1024 * 1024)

/* The archive file as libarchive sees it (read/seek callbacks). */
struct src {
	int fd;
	unsigned char *buf;        /* IO_BLOCK bytes */
	long long size;            /* from fstat at open */
	long long pos;             /* where libarchive's next read starts */
	long long mark;            /* bytes [0, mark) are in the hash */
	int fill;                  /* the last seek was a skip from the mark:
				      the next read hashes the gap first */
	int hashing;               /* an expected digest was given */
	struct digest_ctx dc;      /* SHA-256 of the archive, when hashing */
	int io_errno;              /* set when a read failed (WB_EIO) */
};

/* A path placed in DEST, keyed by its case-folded form. */
struct node {
	char *fold;                /* NULL = empty slot */
	char *path;                /* as written */
	char *entry;               /* archive entry that placed it */
	int is_dir;
};

struct ctx {
	const char *name;          /* archive path, for messages */
	const struct extract_spec *spec;
	struct extract_result *res;
	struct wb_err *e;
	int destfd;
	struct src src;
	unsigned long long max_bytes, max_entries, max_ratio;
	unsigned long long total;  /* bytes written so far */
	unsigned long long entries;
	struct node *nodes;        /* open-addressing hash table */
	size_t nnodes, cap;
	unsigned char *wbuf;       /* IO_BLOCK bytes for entry data */
};

/* ---- archive source: read/seek callbacks with the high-water hash ---- */

static int src_hash_to(struct src *s, long long end)
{
	while (s->hashing && s->mark < end) {
		size_t want = (size_t)(end - s->mark);
		ssize_t n;

		if (want > IO_BLOCK)
			want = IO_BLOCK;
		n = pread(s->fd, s->buf, want, s->mark);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			s->io_errno = n < 0 ? errno : EIO;
			return -1;
		}
		digest_update(&s->dc, s->buf, (size_t)n);
		s->mark += n;
	}
	return 0;
}

static la_ssize_t src_read(struct archive *a, void *data, const void **out)
{
	struct src *s = data;
	ssize_t n;

	if (s->fill && src_hash_to(s, s->pos) < 0)
		goto fail;
	s->fill = 0;
	do
		n = pread(s->fd, s->buf, IO_BLOCK, s->pos);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		s->io_errno = errno;
		goto fail;
	}
	if (s->hashing && s->pos <= s->mark && s->pos + n > s->mark) {
		size_t off = (size_t)(s->mark - s->pos);

		digest_update(&s->dc, s->buf + off, (size_t)n - off);
		s->mark = s->pos + n;
	}
	s->pos += n;
	*out = s->buf;
	return n;
fail:
	archive_set_error(a, s->io_errno, "read error: %s", strerror(s->io_errno));
	return -1;
}

static la_int64_t src_seek(struct archive *a, void *data, la_int64_t off,
			   int whence)
{
	struct src *s = data;
	long long to;

	switch (whence) {
	case SEEK_SET: to = off; break;
	case SEEK_CUR: to = s->pos + off; break;
	case SEEK_END: to = s->size + off; break;
	default: to = -1; break;
	}
	if (to < 0) {
		archive_set_error(a, EINVAL, "invalid seek");
		return ARCHIVE_FATAL;
	}
	s->fill = whence == SEEK_CUR && to >= s->pos && (s->fill || s->pos <= s->mark);
	s->pos = to;
	return to;
}

/* ---- messages ---- */

static int entry_error(struct ctx *c, int code, const char *entry,
		       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int entry_error(struct ctx *c, int code, const char *entry,
		       const char *fmt, ...)
{
	char why[WB_ERR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return wb_error(c->e, code, "archive '%s': entry '%s': %s", c->name,
			entry, why);
}

static int archive_failed(struct ctx *c, struct archive *a, const char *entry,
			  const char *what)
{
	const char *msg = archive_error_string(a);
	int code = c->src.io_errno ? WB_EIO : WB_ESTAGE;

	if (!msg)
		msg = "unknown error";
	if (entry)
		return entry_error(c, code, entry, "%s: %s", what, msg);
	return wb_error(c->e, code, "archive '%s': %s: %s", c->name, what, msg);
}

/* ---- the table of placed paths (case-insensitive, as Windows sees them) ---- */

static size_t hash_str(const char *s)
{
	size_t h = 14695981039346656037ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static struct node *node_slot(struct node *t, size_t cap, const char *fold)
{
	size_t i = hash_str(fold) & (cap - 1);

	while (t[i].fold && strcmp(t[i].fold, fold))
		i = (i + 1) & (cap - 1);
	return &t[i];
}

static void nodes_grow(struct ctx *c)
{
	size_t ncap = c->cap ? c->cap * 2 : 256;
	struct node *nt = xcalloc(ncap, sizeof(*nt));

	for (size_t i = 0; i < c->cap; i++)
		if (c->nodes[i].fold)
			*node_slot(nt, ncap, c->nodes[i].fold) = c->nodes[i];
	free(c->nodes);
	c->nodes = nt;
	c->cap = ncap;
}

/*
 * Record that ENTRY places PATH (a directory if IS_DIR). Refuses a path that
 * differs from an earlier one only by case, a file placed twice, and a file
 * and a directory at the same path. Returns 1 if the path is new, 0 if it
 * is a directory already placed, -1 on refusal.
 */
static int node_add(struct ctx *c, const char *entry, const char *path,
		    int is_dir)
{
	char *fold = winpath_fold(path);
	struct node *n;

	if ((c->nnodes + 1) * 4 > c->cap * 3)
		nodes_grow(c);
	n = node_slot(c->nodes, c->cap, fold);
	if (!n->fold) {
		n->fold = fold;
		n->path = xstrdup(path);
		n->entry = xstrdup(entry);
		n->is_dir = is_dir;
		c->nnodes++;
		return 1;
	}
	free(fold);
	if (strcmp(n->path, path))
		return entry_error(c, WB_ESTAGE, entry,
				   "'%s' differs only in case from '%s' (entry '%s'); "
				   "Windows cannot hold both", path, n->path, n->entry);
	if (is_dir && n->is_dir)
		return 0;
	if (!is_dir && !n->is_dir)
		return entry_error(c, WB_ESTAGE, entry,
				   "duplicate path '%s' (also entry '%s')", path, n->entry);
	return entry_error(c, WB_ESTAGE, entry,
			   "'%s' is both a file and a directory (entry '%s')",
			   path, n->entry);
}

static void nodes_free(struct ctx *c)
{
	for (size_t i = 0; i < c->cap; i++) {
		free(c->nodes[i].fold);
		free(c->nodes[i].path);
		free(c->nodes[i].entry);
	}
	free(c->nodes);
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
		return entry_error(c, WB_EIO, entry, "dup: %s", strerror(errno));
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
				entry_error(c, WB_ESTAGE, entry,
					    "'%s' in the destination is not a directory "
					    "(a symlink or a file is in the way)", where);
			else
				entry_error(c, WB_EIO, entry, "cannot open directory '%s': %s",
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
		return entry_error(c, WB_ESTAGE, entry,
				   "unpacked size exceeds limits.max_bytes (%llu bytes); "
				   "raise limits.max_bytes for the artifact if this is expected",
				   c->max_bytes);
	if (__builtin_mul_overflow(packed, c->max_ratio, &ratio_cap))
		ratio_cap = ~0ULL;
	if (c->total + n > ratio_cap)
		return entry_error(c, WB_ESTAGE, entry,
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
			entry_error(c, WB_ESTAGE, entry,
				    "'%s' already exists in the destination", path);
		else
			entry_error(c, WB_EIO, entry, "cannot create '%s': %s", path,
				    strerror(errno));
		goto out;
	}
	if (digest_init(&dc, DIGEST_SHA256, &why) < 0) {
		entry_error(c, WB_EIO, entry, "%s", why.msg);
		goto out;
	}
	for (;;) {
		la_ssize_t n = archive_read_data(a, c->wbuf, IO_BLOCK);

		if (n == 0)
			break;
		if (n < 0) {
			archive_failed(c, a, entry, "cannot read entry data");
			goto out;
		}
		if (charge(c, entry, (unsigned long long)n) < 0)
			goto out;
		if (fs_write_all(fd, c->wbuf, (size_t)n) < 0) {
			entry_error(c, WB_EIO, entry, "write '%s': %s", path, strerror(errno));
			goto out;
		}
		digest_update(&dc, c->wbuf, (size_t)n);
	}
	digest_final(&dc, &r);
	memcpy(f.sha256, r.sha256, sizeof(f.sha256));
	f.size = r.size;
	f.mode = normal_mode(path, archive_entry_perm(ae));
	if (fchmod(fd, f.mode) < 0 || futimens(fd, ts) < 0 || close(fd) < 0) {
		fd = -1;
		entry_error(c, WB_EIO, entry, "finish '%s': %s", path, strerror(errno));
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
		return entry_error(c, WB_ESTAGE, entry, "absolute path");
	while (*p) {
		const char *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);

		if (len == 2 && !strncmp(p, "..", 2)) {
			buf_release(&b);
			return entry_error(c, WB_ESTAGE, entry,
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
			ret = entry_error(c, WB_ESTAGE, entry,
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

static int do_entry(struct ctx *c, struct archive *a, struct archive_entry *ae)
{
	const char *entry = archive_entry_pathname(ae);
	const char *why;
	char *path = NULL;
	int r, is_dir;

	if (!entry)
		entry = archive_entry_pathname_utf8(ae);
	if (!entry)
		return wb_error(c->e, WB_ESTAGE,
				"archive '%s': entry %llu has no usable name", c->name,
				c->entries);
	if (++c->entries > c->max_entries)
		return entry_error(c, WB_ESTAGE, entry,
				   "more than limits.max_entries (%llu) entries; raise "
				   "limits.max_entries for the artifact if this is expected",
				   c->max_entries);
	/* Refused wherever they are, even when strip or include would skip them. */
	if (archive_entry_hardlink(ae))
		return entry_error(c, WB_ESTAGE, entry, "hard link (to '%s') refused",
				   archive_entry_hardlink(ae));
	why = refused_type(ae);
	if (why)
		return entry_error(c, WB_ESTAGE, entry, "%s refused", why);
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
	const struct node *a = *(const struct node *const *)x;
	const struct node *b = *(const struct node *const *)y;
	size_t da = count_components(a->path), db = count_components(b->path);

	if (da != db)
		return da < db ? 1 : -1;
	return strcmp(a->path, b->path);
}

static int set_dir_mtimes(struct ctx *c)
{
	struct timespec ts[2] = { { c->spec->mtime, 0 }, { c->spec->mtime, 0 } };
	struct node **dirs = xcalloc(c->nnodes + 1, sizeof(*dirs));
	size_t nd = 0;
	int ret = 0;

	for (size_t i = 0; i < c->cap; i++)
		if (c->nodes[i].fold && c->nodes[i].is_dir)
			dirs[nd++] = &c->nodes[i];
	qsort(dirs, nd, sizeof(*dirs), cmp_depth);
	for (size_t i = 0; i < nd && !ret; i++) {
		int fd = walk_dirs(c, dirs[i]->entry, dirs[i]->path,
				   count_components(dirs[i]->path), 0);

		if (fd < 0) {
			ret = -1;
			break;
		}
		if (futimens(fd, ts) < 0)
			ret = entry_error(c, WB_EIO, dirs[i]->entry, "set mtime of '%s': %s",
					  dirs[i]->path, strerror(errno));
		close(fd);
	}
	free(dirs);
	return ret;
}

/* ---- the run ---- */

static int read_entries(struct ctx *c, struct archive *a)
{
	for (;;) {
		struct archive_entry *ae;
		int r = archive_read_next_header(a, &ae);

		switch (r) {
		case ARCHIVE_EOF:
			return 0;
		case ARCHIVE_OK:
			break;
		case ARCHIVE_WARN:
			/* Warnings (bad checksums, unconvertible names, ignored
			 * headers) mean the archive is not what it claims. */
			return archive_failed(c, a, NULL, "damaged entry header");
		case ARCHIVE_RETRY:
			return archive_failed(c, a, NULL, "damaged entry header (retry)");
		default: /* ARCHIVE_FAILED, ARCHIVE_FATAL */
			return archive_failed(c, a, NULL, "cannot read entry header");
		}
		if (do_entry(c, a, ae) < 0)
			return -1;
		/* Skipped entries' data is read (and hashed) without being written. */
		r = archive_read_data_skip(a);
		if (r != ARCHIVE_OK)
			return archive_failed(c, a, archive_entry_pathname(ae),
					      "cannot read entry data");
	}
}

static int check_digest(struct ctx *c, const char *expect_hex, int failed)
{
	struct digest_result r;
	char got_hex[65];

	if (src_hash_to(&c->src, c->src.size) < 0) {
		if (failed)
			return -1;
		return wb_error(c->e, WB_EIO, "archive '%s': read error: %s", c->name,
				strerror(c->src.io_errno));
	}
	digest_final(&c->src.dc, &r);
	digest_hex(r.sha256, 32, got_hex);
	if (!strcasecmp(got_hex, expect_hex))
		return failed ? -1 : 0;
	if (failed) {
		char old[WB_ERR_MAX];

		memcpy(old, c->e->msg, sizeof(old));
		return wb_error(c->e, WB_EVERIFY,
				"archive '%s': sha256 mismatch: expected %s, got %s "
				"(extraction also failed: %s)", c->name, expect_hex,
				got_hex, old);
	}
	return wb_error(c->e, WB_EVERIFY,
			"archive '%s': sha256 mismatch: expected %s, got %s",
			c->name, expect_hex, got_hex);
}

static int hex_ok(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (!strchr("0123456789abcdefABCDEF", s[i]))
			return 0;
	return i == 64;
}

static unsigned long long or_default(unsigned long long v, unsigned long long d)
{
	return v ? v : d;
}

int extract_archive(const char *archive_path, const char *expect_sha256_hex,
		    const struct extract_spec *spec, const char *dest,
		    struct extract_result *res, struct wb_err *e)
{
	struct ctx c = { 0 };
	struct archive *a = NULL;
	struct stat st;
	int ret = -1;

	c.name = archive_path;
	c.spec = spec;
	c.res = res;
	c.e = e;
	c.destfd = -1;
	c.src.fd = -1;
	c.max_bytes = or_default(spec->limits.max_bytes, EXTRACT_DEFAULT_MAX_BYTES);
	c.max_entries = or_default(spec->limits.max_entries, EXTRACT_DEFAULT_MAX_ENTRIES);
	c.max_ratio = or_default(spec->limits.max_ratio, EXTRACT_DEFAULT_MAX_RATIO);

	if (expect_sha256_hex && !hex_ok(expect_sha256_hex))
		return wb_error(e, WB_EUSAGE,
				"archive '%s': expected sha256 '%s' is not 64 hex digits",
				archive_path, expect_sha256_hex);
	if (spec->strip < 0)
		return wb_error(e, WB_EUSAGE, "archive '%s': negative strip %d",
				archive_path, spec->strip);
	c.destfd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c.destfd < 0)
		return wb_error(e, WB_EIO, "cannot open destination '%s': %s", dest,
				strerror(errno));
	c.src.fd = open(archive_path, O_RDONLY | O_CLOEXEC);
	if (c.src.fd < 0 || fstat(c.src.fd, &st) < 0) {
		wb_error(e, WB_EIO, "cannot open archive '%s': %s", archive_path,
			 strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		wb_error(e, WB_EIO, "archive '%s' is not a regular file", archive_path);
		goto out;
	}
	c.src.size = st.st_size;
	c.src.buf = xmalloc(IO_BLOCK);
	c.wbuf = xmalloc(IO_BLOCK);
	c.src.hashing = expect_sha256_hex != NULL;
	if (c.src.hashing && digest_init(&c.src.dc, DIGEST_SHA256, e) < 0) {
		c.src.hashing = 0;
		wb_error_prefix(e, "archive '%s'", archive_path);
		goto out;
	}

	a = archive_read_new();
	if (!a) {
		wb_error(e, WB_EIO, "archive '%s': out of memory", archive_path);
		goto out;
	}
	/* Built-in decompressors only: no filter that runs an external program. */
	archive_read_support_filter_gzip(a);
	archive_read_support_filter_bzip2(a);
	archive_read_support_filter_xz(a);
	archive_read_support_filter_lzma(a);
	archive_read_support_filter_zstd(a);
	archive_read_support_format_tar(a);
	archive_read_support_format_zip(a);
	archive_read_set_seek_callback(a, src_seek);
	/* No skip callback: skipped data goes through src_read (or src_seek,
	 * whose gap the next read fills), so the hash sees every byte. */
	if (archive_read_open(a, &c.src, NULL, src_read, NULL) != ARCHIVE_OK) {
		archive_failed(&c, a, NULL, "cannot read archive");
		goto out;
	}
	ret = read_entries(&c, a);
	if (!ret)
		ret = set_dir_mtimes(&c);
out:
	if (a)
		archive_read_free(a);
	if (c.src.hashing && (ret == 0 || e->code != WB_EIO))
		ret = check_digest(&c, expect_sha256_hex, ret < 0);
	digest_release(&c.src.dc);
	free(c.src.buf);
	free(c.wbuf);
	nodes_free(&c);
	if (c.src.fd >= 0)
		close(c.src.fd);
	close(c.destfd);
	return ret;
}

void extract_result_release(struct extract_result *res)
{
	for (size_t i = 0; i < res->nr; i++)
		free(res->files[i].path);
	free(res->files);
	res->files = NULL;
	res->nr = res->alloc = 0;
}
