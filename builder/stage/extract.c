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
 *
 * @where secure archive extraction (links, `..`, devices, bombs, case
 *   collisions; container sniffing, one decompressor) -- the run: the hashed
 *   source, bounds, the entry loop
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/hex.h"
#include "lib/text.h"
#include "stage/extract_ctx.h"

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
	struct ctx *c = data;
	struct src *s = &c->src;
	ssize_t n;

	/* A bomb or a loop inside libarchive still comes back for input. */
	if (extract_bounds_check(c, c->prev) < 0) {
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

int extract_entry_error(struct ctx *c, int code, const char *entry,
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
int extract_header_error(struct ctx *c, int code, const char *fmt, ...)
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

int extract_archive_failed(struct ctx *c, struct archive *a,
			   const char *entry, const char *what)
{
	const char *msg = archive_error_string(a);
	int code = c->src.io_errno ? WB_EIO : WB_ESTAGE;

	if (c->stopped)
		return -1;   /* a bound was hit: E already says which */
	if (!msg)
		msg = "no reason given by libarchive";
	if (entry)
		return extract_entry_error(c, code, entry, "%s: %s", what, msg);
	return extract_header_error(c, code, "%s: %s", what, msg);
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
int extract_bounds_check(struct ctx *c, const char *entry)
{
	if (c->stopped)
		return -1;
	if (now_ms() > c->deadline_ms) {
		c->stopped = 1;
		if (entry)
			extract_entry_error(c, WB_ESTAGE, entry,
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
				return extract_entry_error(c, WB_ESTAGE, entry,
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
			return extract_archive_failed(c, a, entry, "cannot read entry data");
		if (extract_bounds_check(c, entry) < 0)
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
		name = r == ARCHIVE_OK || r == ARCHIVE_WARN ? extract_entry_name(ae) : NULL;
		switch (r) {
		case ARCHIVE_OK:
			break;
		case ARCHIVE_WARN:
			/* Warnings (bad checksums, unconvertible names, ignored
			 * headers) mean the archive is not what it claims. */
			if (name)
				return extract_archive_failed(c, a, name, "damaged entry header");
			return extract_archive_failed(c, a, NULL, "damaged entry header");
		case ARCHIVE_RETRY:
			return extract_archive_failed(c, a, NULL, "damaged entry header (retry)");
		default: /* ARCHIVE_FAILED, ARCHIVE_FATAL */
			return extract_archive_failed(c, a, NULL, "cannot read entry header");
		}
		free(c->prev);
		c->prev = name ? xstrdup(name) : NULL;
		if ((archive_format(a) & ARCHIVE_FORMAT_BASE_MASK) !=
		    (c->is_zip ? ARCHIVE_FORMAT_ZIP : c->is_iso ? ARCHIVE_FORMAT_ISO9660 :
		     ARCHIVE_FORMAT_TAR))
			return extract_header_error(c, WB_ESTAGE, "not a %s entry",
					    c->is_zip ? "zip" : c->is_iso ? "ISO 9660" : "tar");
		if (extract_bounds_check(c, name) < 0 || extract_entry(c, a, ae) < 0)
			return -1;
		/* Skipped entries' data is read (and hashed) without being
		 * written; zip seeks past it (the central directory knows where
		 * the next entry is), tar and ISO 9660 read it block by
		 * block. */
		if (c->is_zip) {
			r = archive_read_data_skip(a);
			if (r != ARCHIVE_OK)
				return extract_archive_failed(c, a, name ? name : "?",
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
	if (expect_sha256_hex && !hex_is(expect_sha256_hex, 64, HEX_ANY_CASE)) {
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
	if (extract_sniff(&c, &k) < 0 || extract_format_ok(&c, &k) < 0)
		goto out;
	c.is_zip = k.zip;
	c.is_iso = k.iso;
	c.filter = k.filter;
	if (c.is_zip && extract_zip_names_agree(&c) < 0)
		goto out;

	a = archive_read_new();
	if (!a) {
		wb_error(e, WB_EIO, "archive '%s': out of memory", archive_path);
		goto out;
	}
	/* Exactly the container extract_sniff() found: one format, at most one
	 * built-in decompressor appended (filter bidding bypassed, so no
	 * stacking and no filter that runs an external program). */
	if (c.is_zip) {
		/* Seekable only: the streaming reader would take a symlink for
		 * a file, and names from headers extract_zip_names_agree() did not see. */
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
			extract_archive_failed(&c, a, NULL, "cannot set up the decompressor");
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
		ret = extract_dir_mtimes(&c);
out:
	if (a)
		archive_read_free(a);
	if (c.src.hashing && (ret == 0 || e->code != WB_EIO))
		ret = check_digest(&c, expect_sha256_hex, ret < 0);
	digest_release(&c.src.dc);
	free(c.src.buf);
	free(c.wbuf);
	pathtab_release(&c.placed);
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
