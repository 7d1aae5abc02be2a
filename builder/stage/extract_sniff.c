/*
 * What the archive file is (stage/extract_ctx.h): the container chosen from
 * its first bytes, never by libarchive's bidding; unpack.format checked
 * against it; and for a zip, every local header compared with its central
 * directory record before libarchive reads a byte of it.
 *
 * @where secure archive extraction (links, `..`, devices, bombs, case
 *   collisions; container sniffing, one decompressor) -- what the file is
 *   (tar, zip, ISO 9660); zip local and central names
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/buf.h"
#include "stage/extract_ctx.h"

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

int extract_sniff(struct ctx *c, struct container *k)
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
int extract_format_ok(struct ctx *c, const struct container *k)
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
int extract_zip_names_agree(struct ctx *c)
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

			extract_entry_error(c, WB_ESTAGE, cname,
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

