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
#include <time.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "lib/fs.h"
#include "lib/buf.h"
#include "lib/text.h"
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
	struct archive *a;         /* set once the filter chain is built */
	int is_zip;                /* zip container (else tar or ISO 9660) */
	int is_iso;                /* ISO 9660 image (CD/DVD), read front to back */
	int filter;                /* ARCHIVE_FILTER_* around the tar */
	long long deadline_ms;     /* CLOCK_MONOTONIC */
	unsigned long long max_seconds;
	unsigned long long stream_cap; /* decompressed stream bytes allowed */
	int stopped;               /* a bound was hit: E is set, stop */
	char *prev;                /* the last entry read, for messages */
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

static int bounds_check(struct ctx *c, const char *entry);

static la_ssize_t src_read(struct archive *a, void *data, const void **out)
{
	struct ctx *c = data;
	struct src *s = &c->src;
	ssize_t n;

	/* A bomb or a loop inside libarchive still comes back for input. */
	if (bounds_check(c, c->prev) < 0) {
		archive_set_error(a, ECANCELED, "stopped");
		return -1;
	}

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
	struct src *s = &((struct ctx *)data)->src;
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
	char *safe_entry, *safe_why;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	/* Entry names (and the paths, link targets and libarchive messages
	 * made of them) come from the archive: escaped for the terminal. */
	safe_entry = text_printable(entry);
	safe_why = text_printable(why);
	wb_error(c->e, code, "archive '%s': entry '%s': %s", c->name,
		 safe_entry, safe_why);
	free(safe_entry);
	free(safe_why);
	return -1;
}

/* A header that could not be read: named by its number and the entry
 * before it (libarchive gave no name). */
static int header_error(struct ctx *c, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int header_error(struct ctx *c, int code, const char *fmt, ...)
{
	char why[WB_ERR_MAX], where[64];
	char *safe_prev = c->prev ? text_printable(c->prev) : NULL;
	char *safe_why;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	safe_why = text_printable(why);
	snprintf(where, sizeof(where), "entry #%llu", c->entries + 1);
	if (safe_prev)
		wb_error(c->e, code, "archive '%s': %s (after entry '%s'): %s",
			 c->name, where, safe_prev, safe_why);
	else
		wb_error(c->e, code, "archive '%s': %s (the first): %s", c->name,
			 where, safe_why);
	free(safe_prev);
	free(safe_why);
	return -1;
}

static int archive_failed(struct ctx *c, struct archive *a, const char *entry,
			  const char *what)
{
	const char *msg = archive_error_string(a);
	int code = c->src.io_errno ? WB_EIO : WB_ESTAGE;

	if (c->stopped)
		return -1;   /* a bound was hit: E already says which */
	if (!msg)
		msg = "no reason given by libarchive";
	if (entry)
		return entry_error(c, code, entry, "%s: %s", what, msg);
	return header_error(c, code, "%s: %s", what, msg);
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * The bounds that hold whatever libarchive does: the deadline, and the
 * decompressed stream (skipped entries, headers and padding included)
 * against max_ratio times the archive. Called from the read callback, for
 * every data block and between entries. ENTRY (may be NULL) is named.
 */
static int bounds_check(struct ctx *c, const char *entry)
{
	if (c->stopped)
		return -1;
	if (now_ms() > c->deadline_ms) {
		c->stopped = 1;
		if (entry)
			entry_error(c, WB_ESTAGE, entry,
				    "extraction takes longer than limits.max_seconds "
				    "(%llu s); raise limits.max_seconds for the artifact "
				    "if this is expected", c->max_seconds);
		else
			wb_error(c->e, WB_ESTAGE,
				 "archive '%s': extraction takes longer than "
				 "limits.max_seconds (%llu s); raise limits.max_seconds "
				 "for the artifact if this is expected", c->name,
				 c->max_seconds);
		return -1;
	}
	if (c->a && c->filter != ARCHIVE_FILTER_NONE) {
		la_int64_t u = archive_filter_bytes(c->a, 0);

		if (u > 0 && (unsigned long long)u > c->stream_cap) {
			c->stopped = 1;
			if (entry)
				return entry_error(c, WB_ESTAGE, entry,
						   "the decompressed stream exceeds limits.max_ratio "
						   "(%llu times the %lld-byte archive); raise "
						   "limits.max_ratio for the artifact if this is "
						   "expected", c->max_ratio, c->src.size);
			return wb_error(c->e, WB_ESTAGE,
					"archive '%s': the decompressed stream exceeds "
					"limits.max_ratio (%llu times the %lld-byte archive); "
					"raise limits.max_ratio for the artifact if this is "
					"expected", c->name, c->max_ratio, c->src.size);
		}
	}
	return 0;
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
		if (bounds_check(c, entry) < 0 || charge(c, entry, (unsigned long long)n) < 0)
			goto out;
		if (fs_write_all(fd, c->wbuf, (size_t)n) < 0) {
			entry_error(c, WB_EIO, entry, "write '%s': %s", path, strerror(errno));
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

			if (bounds_check(c, entry) < 0 || charge(c, entry, n) < 0)
				goto out;
			if (fs_write_all(fd, c->wbuf, n) < 0) {
				entry_error(c, WB_EIO, entry, "write '%s': %s", path,
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

/* The entry's name: libarchive's (in the UTF-8 locale main() set, the
 * multibyte name is UTF-8), else its UTF-8 conversion; NULL if none. */
static const char *entry_name(struct archive_entry *ae)
{
	const char *n = archive_entry_pathname(ae);

	return n ? n : archive_entry_pathname_utf8(ae);
}

static int do_entry(struct ctx *c, struct archive *a, struct archive_entry *ae)
{
	const char *entry = entry_name(ae);
	const char *why;
	char *path = NULL;
	int r, is_dir;

	if (!entry)
		return header_error(c, WB_ESTAGE, "the entry has no usable name");
	/* Refused wherever it is: a name the manifest (JSON, UTF-8) could
	 * not hold, or that Windows would read differently. */
	if (!text_utf8_valid(entry, strlen(entry)))
		return entry_error(c, WB_ESTAGE, entry,
				   "name is not valid UTF-8 (overlong forms and "
				   "surrogates included)");
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

/* ---- the container: chosen from the first bytes, never by bidding ---- */

static unsigned le16(const unsigned char *p)
{
	return p[0] | (unsigned)p[1] << 8;
}

static unsigned long le32(const unsigned char *p)
{
	return le16(p) | (unsigned long)le16(p + 2) << 16;
}

static unsigned long long le64(const unsigned char *p)
{
	return le32(p) | (unsigned long long)le32(p + 4) << 32;
}

/* A tar header block: its checksum field matches (unsigned sum). */
static int tar_header(const unsigned char *b)
{
	unsigned long sum = 0, want = 0;
	int digits = 0;

	for (int i = 0; i < 512; i++)
		sum += i >= 148 && i < 156 ? ' ' : b[i];
	for (int i = 148; i < 156 && b[i] != 0 && b[i] != ' '; i++) {
		if (b[i] < '0' || b[i] > '7')
			return 0;
		want = want * 8 + (unsigned long)(b[i] - '0');
		digits++;
	}
	return digits && sum == want;
}

struct container {
	const char *what;          /* for messages */
	int filter;                /* ARCHIVE_FILTER_* (tar inside it) */
	int zip;
	int iso;
};

/*
 * What the file is, from its first bytes: a zip, an ISO 9660 image, or a
 * tar inside at most one compressed stream. libarchive is then told exactly that (one filter
 * appended, filter bidding bypassed), so it can never stack decoders: a
 * stream that decompresses to another compressed stream (a recursive gzip)
 * is "no tar archive inside", refused at once.
 */
/* An lzma_alone header as libarchive's bidder reads it: properties below
 * 225, a dictionary of 2^n or 2^n + 2^(n-1) bytes (or all ones). */
static int lzma_alone(const unsigned char *m)
{
	unsigned long d = le32(m + 1);

	if (m[0] >= 225 || !d)
		return 0;
	if (d == 0xFFFFFFFFUL)
		return 1;
	while (!(d & 1))
		d >>= 1;
	return d == 1 || d == 3;
}

static int sniff(struct ctx *c, struct container *k)
{
	unsigned char m[512] = { 0 };
	ssize_t n;

	do
		n = pread(c->src.fd, m, sizeof(m), 0);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		c->src.io_errno = errno;
		return wb_error(c->e, WB_EIO, "archive '%s': read error: %s", c->name,
				strerror(errno));
	}
	k->zip = k->iso = 0;
	k->filter = ARCHIVE_FILTER_NONE;
	k->what = "a tar archive";
	if (n >= 4 && m[0] == 'P' && m[1] == 'K' &&
	    ((m[2] == 3 && m[3] == 4) || (m[2] == 5 && m[3] == 6) ||
	     (m[2] == 7 && m[3] == 8))) {
		k->zip = 1;
		k->what = "a zip archive";
	} else if (n >= 2 && m[0] == 0x1f && m[1] == 0x8b) {
		k->filter = ARCHIVE_FILTER_GZIP;
		k->what = "a gzip stream";
	} else if (n >= 3 && !memcmp(m, "BZh", 3)) {
		k->filter = ARCHIVE_FILTER_BZIP2;
		k->what = "a bzip2 stream";
	} else if (n >= 6 && !memcmp(m, "\xfd" "7zXZ\0", 6)) {
		k->filter = ARCHIVE_FILTER_XZ;
		k->what = "an xz stream";
	} else if (n >= 4 && (!memcmp(m, "\x28\xb5\x2f\xfd", 4) ||
			      ((m[0] & 0xf0) == 0x50 && !memcmp(m + 1, "\x2a\x4d\x18", 3)))) {
		k->filter = ARCHIVE_FILTER_ZSTD;
		k->what = "a zstd stream";
	} else if (n >= 5 && !(n == 512 && tar_header(m)) && lzma_alone(m)) {
		k->filter = ARCHIVE_FILTER_LZMA;
		k->what = "an lzma stream";
	} else if (!(n == 512 && tar_header(m))) {
		/* ISO 9660 (ECMA-119 8.1): the first volume descriptor is at
		 * sector 16 (byte 32768), type byte then "CD001". The 32 KiB
		 * before it are the system area, zeros or a hybrid MBR: no
		 * magic at byte 0, so it is asked only when nothing else
		 * matched and the first block is no tar header. Distributors
		 * of Windows drivers ship CD images (virtio-win, VMware
		 * Tools), the media Setup reads them from. */
		unsigned char vd[6];
		ssize_t r;

		do
			r = pread(c->src.fd, vd, sizeof(vd), 32768);
		while (r < 0 && errno == EINTR);
		if (r == (ssize_t)sizeof(vd) && !memcmp(vd + 1, "CD001", 5)) {
			k->iso = 1;
			k->what = "an ISO 9660 image";
		}
	}
	return 0;
}

/* SPEC->format against what the file is. */
static int format_ok(struct ctx *c, const struct container *k)
{
	const char *f = c->spec->format;

	if (!f || !strcmp(f, "auto"))
		return 0;
	if (!strcmp(f, "zip") ? k->zip : !strcmp(f, "iso") ? k->iso :
	    (!strcmp(f, "tar.gz") || !strcmp(f, "tgz")) ?
	    !k->zip && k->filter == ARCHIVE_FILTER_GZIP : 0)
		return 0;
	return wb_error(c->e, WB_ESTAGE,
			"archive '%s': unpack.format is '%s' but the file is %s",
			c->name, f, k->what);
}

/* ---- zip: every local header must agree with the central directory ---- */

/* Read exactly N bytes at OFF (inside the file), or -1. */
static int rd(struct ctx *c, unsigned long long off, void *buf, size_t n)
{
	size_t got = 0;

	if (off > (unsigned long long)c->src.size ||
	    n > (unsigned long long)c->src.size - off)
		return -1;
	while (got < n) {
		ssize_t r = pread(c->src.fd, (char *)buf + got, n - got, (off_t)(off + got));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

/* The Info-ZIP Unicode Path field (0x7075) in EXTRA, or NULL. */
static const unsigned char *unicode_path(const unsigned char *x, size_t n, size_t *len)
{
	while (n >= 4) {
		unsigned id = le16(x), sz = le16(x + 2);

		if (sz > n - 4)
			return NULL;
		if (id == 0x7075) {
			*len = sz;
			return x + 4;
		}
		x += 4 + sz;
		n -= 4 + sz;
	}
	return NULL;
}

/* The zip64 local-header offset of a central entry, from its 0x0001 field. */
static int zip64_offset(const unsigned char *cd, const unsigned char *x, size_t n,
			unsigned long long *off)
{
	while (n >= 4) {
		unsigned id = le16(x), sz = le16(x + 2);
		size_t at = 0;

		if (sz > n - 4)
			return -1;
		if (id == 0x0001) {
			at += le32(cd + 24) == 0xFFFFFFFFUL ? 8 : 0;
			at += le32(cd + 20) == 0xFFFFFFFFUL ? 8 : 0;
			if (at + 8 > sz)
				return -1;
			*off = le64(x + 4 + at);
			return 0;
		}
		x += 4 + sz;
		n -= 4 + sz;
	}
	return -1;
}

static int zip_bad(struct ctx *c, const char *why)
{
	return wb_error(c->e, WB_ESTAGE, "archive '%s': zip: %s", c->name, why);
}

/* Offset of the first of "PK\1\2", "PK\5\6", "PK\6\6" at or after FROM. */
static int zip_find_cd(struct ctx *c, unsigned long long from, unsigned long long *at)
{
	unsigned char b[4096];
	unsigned long long pos = from, size = (unsigned long long)c->src.size;

	while (pos + 4 <= size) {
		size_t n = size - pos < sizeof(b) ? (size_t)(size - pos) : sizeof(b);

		if (rd(c, pos, b, n) < 0)
			return -1;
		for (size_t i = 0; i + 4 <= n; i++)
			if (b[i] == 'P' && b[i + 1] == 'K' &&
			    ((b[i + 2] == 1 && b[i + 3] == 2) || (b[i + 2] == 5 && b[i + 3] == 6) ||
			     (b[i + 2] == 6 && b[i + 3] == 6))) {
				*at = pos + i;
				return 0;
			}
		pos += n - 3;
	}
	return -1;
}

/*
 * libarchive's seekable zip reader (the only zip reader enabled) takes the
 * modes and link bits from the central directory but each entry's NAME
 * from its local header; unzip -l and most tools list the central names.
 * An archive whose two lists differ shows different files to different
 * readers: refused. The central directory is found exactly as libarchive
 * 3.6 finds it (the last end record in the final 16 KiB, the zip64 record
 * when its locator is valid, then a forward search for the first record,
 * which gives the correction for leading data) and walked to its end
 * record; every local header must carry the same name bytes, the same
 * UTF-8 flag and the same Info-ZIP Unicode Path field (0x7075) as its
 * central record. Bounded: max_entries records, every read inside the file.
 */
static int zip_names_agree(struct ctx *c)
{
	unsigned char *tail, h[56];
	unsigned long long size = (unsigned long long)c->src.size, eocd;
	unsigned long long cdoff, adjusted, pos, start, k;
	long long correction;
	size_t tl = size < 16384 ? (size_t)size : 16384, i;
	int found = 0;

	if (tl < 22)
		return zip_bad(c, "no end of central directory record");
	tail = xmalloc(tl);
	if (rd(c, size - tl, tail, tl) < 0) {
		free(tail);
		return zip_bad(c, "cannot read the end of central directory record");
	}
	for (i = tl - 22; i > 0; i--)
		if (!memcmp(tail + i, "PK\5\6", 4)) {
			found = 1;
			break;
		}
	if (!found) {
		free(tail);
		return zip_bad(c, "no end of central directory record");
	}
	eocd = size - tl + i;
	memcpy(h, tail + i, 22);
	found = i >= 20 && !memcmp(tail + i - 20, "PK\6\7", 4);
	if (found)
		memcpy(h + 22, tail + i - 20, 20);
	free(tail);
	cdoff = le32(h + 16);
	if (le16(h + 4) || le16(h + 6) || le16(h + 8) != le16(h + 10) ||
	    cdoff + le32(h + 12) > eocd)
		found |= 2;   /* libarchive ignores this record */
	adjusted = eocd - le32(h + 12);
	if (found & 1) {
		unsigned char z[56];
		unsigned long long zo = le64(h + 22 + 8);

		if (le32(h + 22 + 4) == 0 && le32(h + 22 + 16) == 1 &&
		    rd(c, zo, z, 56) == 0 && le64(z + 4) + 12 >= 56 &&
		    le64(z + 4) + 12 <= 16384 && le32(z + 16) == 0 &&
		    le32(z + 20) == 0 && le64(z + 24) == le64(z + 32)) {
			cdoff = adjusted = le64(z + 48);
			found = 1;
		}
	}
	if (found & 2)
		return zip_bad(c, "the end of central directory record is not valid "
			       "(multi-volume, or the directory overlaps it)");
	if (adjusted > size || zip_find_cd(c, adjusted, &start) < 0)
		return zip_bad(c, "central directory not found");
	correction = (long long)(start - cdoff);
	pos = start;
	for (k = 0;; k++) {
		unsigned char l[30];
		unsigned char *cn = NULL, *ln = NULL;
		unsigned nl, xl, cl, lnl, lxl;
		unsigned long long lho;
		const unsigned char *cu, *lu;
		size_t cul = 0, lul = 0;
		int same, flags, upath;

		if (rd(c, pos, h, 4) < 0)
			return zip_bad(c, "damaged central directory");
		if (!memcmp(h, "PK\6\6", 4) || !memcmp(h, "PK\5\6", 4))
			break;
		if (memcmp(h, "PK\1\2", 4) || rd(c, pos, h, 46) < 0)
			return zip_bad(c, "damaged central directory");
		if (k >= c->max_entries)
			return wb_error(c->e, WB_ESTAGE,
					"archive '%s': more than limits.max_entries (%llu) "
					"entries; raise limits.max_entries for the artifact "
					"if this is expected", c->name, c->max_entries);
		nl = le16(h + 28);
		xl = le16(h + 30);
		cl = le16(h + 32);
		cn = xmalloc((size_t)nl + xl + 1);
		if (rd(c, pos + 46, cn, (size_t)nl + xl) < 0)
			goto damaged;
		lho = le32(h + 42);
		if (lho == 0xFFFFFFFFUL && zip64_offset(h, cn + nl, xl, &lho) < 0)
			goto damaged;
		lho += (unsigned long long)correction;
		if (rd(c, lho, l, 30) < 0 || memcmp(l, "PK\3\4", 4))
			goto damaged;
		lnl = le16(l + 26);
		lxl = le16(l + 28);
		ln = xmalloc((size_t)lnl + lxl + 1);
		if (rd(c, lho + 30, ln, (size_t)lnl + lxl) < 0)
			goto damaged;
		cu = unicode_path(cn + nl, xl, &cul);
		lu = unicode_path(ln + lnl, lxl, &lul);
		same = lnl == nl && !memcmp(ln, cn, nl);
		flags = ((le16(l + 6) ^ le16(h + 8)) & 0x0800) == 0;
		upath = !cu == !lu && cul == lul && (!cu || !memcmp(cu, lu, cul));
		if (!same || !flags || !upath) {
			char *cname = xstrndup((char *)cn, nl), *lname = xstrndup((char *)ln, lnl);

			entry_error(c, WB_ESTAGE, cname,
				    "the central directory and the local header disagree "
				    "(%s%s'%s'); readers would see different files",
				    !same ? "the local header names it " : "",
				    same && !flags ? "UTF-8 flag of " :
				    same ? "Info-ZIP Unicode path field of " : "", lname);
			free(cname);
			free(lname);
			free(cn);
			free(ln);
			return -1;
		}
		free(cn);
		free(ln);
		pos += 46 + (unsigned long long)nl + xl + cl;
		continue;
damaged:
		free(cn);
		free(ln);
		return zip_bad(c, "damaged central directory or local header");
	}
	return 0;
}

/* ---- the run ---- */

/* Read what is left of the current entry's data, block by block, so the
 * bounds are checked (and the bytes hashed) as a skip would not. */
static int drain(struct ctx *c, struct archive *a, const char *entry)
{
	for (;;) {
		const void *buf;
		size_t len;
		la_int64_t off;
		int r = archive_read_data_block(a, &buf, &len, &off);

		if (r == ARCHIVE_EOF)
			return 0;
		if (r != ARCHIVE_OK)
			return archive_failed(c, a, entry, "cannot read entry data");
		if (bounds_check(c, entry) < 0)
			return -1;
	}
}

static int read_entries(struct ctx *c, struct archive *a)
{
	for (;;) {
		struct archive_entry *ae;
		const char *name;
		int r = archive_read_next_header(a, &ae);

		if (c->stopped)
			return -1;
		if (r == ARCHIVE_EOF)
			return 0;
		name = r == ARCHIVE_OK || r == ARCHIVE_WARN ? entry_name(ae) : NULL;
		switch (r) {
		case ARCHIVE_OK:
			break;
		case ARCHIVE_WARN:
			/* Warnings (bad checksums, unconvertible names, ignored
			 * headers) mean the archive is not what it claims. */
			if (name)
				return archive_failed(c, a, name, "damaged entry header");
			return archive_failed(c, a, NULL, "damaged entry header");
		case ARCHIVE_RETRY:
			return archive_failed(c, a, NULL, "damaged entry header (retry)");
		default: /* ARCHIVE_FAILED, ARCHIVE_FATAL */
			return archive_failed(c, a, NULL, "cannot read entry header");
		}
		free(c->prev);
		c->prev = name ? xstrdup(name) : NULL;
		if ((archive_format(a) & ARCHIVE_FORMAT_BASE_MASK) !=
		    (c->is_zip ? ARCHIVE_FORMAT_ZIP : c->is_iso ? ARCHIVE_FORMAT_ISO9660 :
		     ARCHIVE_FORMAT_TAR))
			return header_error(c, WB_ESTAGE, "not a %s entry",
					    c->is_zip ? "zip" : c->is_iso ? "ISO 9660" : "tar");
		if (bounds_check(c, name) < 0 || do_entry(c, a, ae) < 0)
			return -1;
		/* Skipped entries' data is read (and hashed) without being
		 * written; zip seeks past it (the central directory knows where
		 * the next entry is), tar and ISO 9660 read it block by
		 * block. */
		if (c->is_zip) {
			r = archive_read_data_skip(a);
			if (r != ARCHIVE_OK)
				return archive_failed(c, a, name ? name : "?",
						      "cannot read entry data");
		} else if (drain(c, a, name ? name : "?") < 0) {
			return -1;
		}
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

/* extract_archive and extract_archive_fd: SRC_FD (owned, closed here) is
 * the archive, or -1 with errno set when it could not be opened. */
static int extract(int src_fd, const char *archive_path, const char *expect_sha256_hex,
		   const struct extract_spec *spec, const char *dest,
		   struct extract_result *res, struct wb_err *e)
{
	struct ctx c = { 0 };
	struct container k = { "a tar archive", ARCHIVE_FILTER_NONE, 0, 0 };
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
	c.max_seconds = or_default(spec->limits.max_seconds, EXTRACT_DEFAULT_MAX_SECONDS);
	c.deadline_ms = spec->deadline_ms ? spec->deadline_ms :
		now_ms() + (long long)(c.max_seconds > 1000000000ULL ? 1000000000ULL :
				       c.max_seconds) * 1000;

	c.src.fd = src_fd;
	if (expect_sha256_hex && !hex_ok(expect_sha256_hex)) {
		wb_error(e, WB_EUSAGE,
			 "archive '%s': expected sha256 '%s' is not 64 hex digits",
			 archive_path, expect_sha256_hex);
		goto out;
	}
	if (spec->strip < 0) {
		wb_error(e, WB_EUSAGE, "archive '%s': negative strip %d",
			 archive_path, spec->strip);
		goto out;
	}
	if (c.src.fd < 0 || fstat(c.src.fd, &st) < 0) {
		wb_error(e, WB_EIO, "cannot open archive '%s': %s", archive_path,
			 strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		wb_error(e, WB_EIO, "archive '%s' is not a regular file", archive_path);
		goto out;
	}
	c.destfd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c.destfd < 0) {
		wb_error(e, WB_EIO, "cannot open destination '%s': %s", dest,
			 strerror(errno));
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

	/* The read-side cap: the decompressed stream, headers, padding and
	 * skipped entries included, with 1 MiB of slack for the tar framing
	 * of a small archive. */
	if (__builtin_mul_overflow((unsigned long long)(c.src.size > 0 ? c.src.size : 1),
				   c.max_ratio, &c.stream_cap) ||
	    __builtin_add_overflow(c.stream_cap, 1ULL << 20, &c.stream_cap))
		c.stream_cap = ~0ULL;
	if (sniff(&c, &k) < 0 || format_ok(&c, &k) < 0)
		goto out;
	c.is_zip = k.zip;
	c.is_iso = k.iso;
	c.filter = k.filter;
	if (c.is_zip && zip_names_agree(&c) < 0)
		goto out;

	a = archive_read_new();
	if (!a) {
		wb_error(e, WB_EIO, "archive '%s': out of memory", archive_path);
		goto out;
	}
	/* Exactly the container sniff() found: one format, at most one
	 * built-in decompressor appended (filter bidding bypassed, so no
	 * stacking and no filter that runs an external program). */
	if (c.is_zip) {
		/* Seekable only: the streaming reader would take a symlink for
		 * a file, and names from headers zip_names_agree() did not see. */
		archive_read_support_format_zip_seekable(a);
	} else if (c.is_iso) {
		/* Rock Ridge and Joliet names as libarchive prefers them; its
		 * reader goes front to back (a body laid out before its
		 * directory record is a warning, refused below), so the hash
		 * follows as it does for tar. */
		archive_read_support_format_iso9660(a);
	} else {
		archive_read_support_format_tar(a);
		if (c.filter != ARCHIVE_FILTER_NONE &&
		    archive_read_append_filter(a, c.filter) != ARCHIVE_OK) {
			archive_failed(&c, a, NULL, "cannot set up the decompressor");
			goto out;
		}
	}
	archive_read_set_seek_callback(a, src_seek);
	c.a = a;
	/* No skip callback: skipped data goes through src_read (or src_seek,
	 * whose gap the next read fills), so the hash sees every byte. */
	if (archive_read_open(a, &c, NULL, src_read, NULL) != ARCHIVE_OK) {
		if (c.stopped)
			goto out;
		if (c.filter != ARCHIVE_FILTER_NONE)
			wb_error(e, c.src.io_errno ? WB_EIO : WB_ESTAGE,
				 "archive '%s': no tar archive inside %s (%s); an archive "
				 "inside another compressed stream is refused", archive_path,
				 k.what, archive_error_string(a) ? archive_error_string(a) :
				 "unreadable");
		else
			wb_error(e, c.src.io_errno ? WB_EIO : WB_ESTAGE,
				 "archive '%s': not an archive winbuild reads (%s): tar (raw "
				 "or in one gzip, bzip2, xz, lzma or zstd stream), zip "
				 "starting with an entry, or an ISO 9660 image", archive_path,
				 archive_error_string(a) ? archive_error_string(a) : "unreadable");
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
	free(c.prev);
	if (c.src.fd >= 0)
		close(c.src.fd);
	if (c.destfd >= 0)
		close(c.destfd);
	return ret;
}

int extract_archive(const char *archive_path, const char *expect_sha256_hex,
		    const struct extract_spec *spec, const char *dest,
		    struct extract_result *res, struct wb_err *e)
{
	return extract(open(archive_path, O_RDONLY | O_CLOEXEC), archive_path,
		       expect_sha256_hex, spec, dest, res, e);
}

int extract_archive_fd(int fd, const char *name, const char *expect_sha256_hex,
		       const struct extract_spec *spec, const char *dest,
		       struct extract_result *res, struct wb_err *e)
{
	/* every read is a pread: a duplicate shares nothing that matters */
	return extract(fcntl(fd, F_DUPFD_CLOEXEC, 0), name, expect_sha256_hex, spec,
		       dest, res, e);
}

void extract_result_release(struct extract_result *res)
{
	for (size_t i = 0; i < res->nr; i++)
		free(res->files[i].path);
	free(res->files);
	res->files = NULL;
	res->nr = res->alloc = 0;
}
