/*
 * Secure archive extraction with libarchive (tar.gz/tgz/tar, zip).
 *
 * Always on: ARCHIVE_EXTRACT_SECURE_NODOTDOT, SECURE_SYMLINKS and
 * SECURE_NOABSOLUTEPATHS. Entries that are symlinks, hardlinks, devices,
 * FIFOs or sockets, that resolve outside DEST, whose names Windows cannot
 * hold (lib/winpath.h), or that collide with another entry when compared
 * case-insensitively, are refused with the archive and entry named
 * (WB_ESTAGE). Limits on total unpacked size, entry count and compression
 * ratio stop bombs (WB_ESTAGE).
 *
 * Names: libarchive runs in the UTF-8 locale main() sets (LC_CTYPE only);
 * an entry name that is not well-formed UTF-8 (lib/text.h: no overlong
 * forms, no surrogates) is refused, so every staged path is one the
 * manifest can hold. A zip entry whose local-header name (or Info-ZIP
 * Unicode path field) differs from its central-directory one is refused.
 *
 * Format and bounds: the container is chosen from the file's first bytes
 * (zip; or tar, raw or inside exactly one gzip, bzip2, xz, lzma or zstd
 * stream). SPEC->format "zip", "tar.gz" or "tgz" must match it ("auto" or
 * NULL accepts any). libarchive never bids for filters: one decompressor
 * at most, so a stream that decompresses to another compressed stream
 * (a recursive gzip) is refused and memory stays that of one decoder. The
 * decompressed stream, skipped data included, is held to max_ratio times
 * the archive size as it is read, and the whole extraction to a deadline
 * (limits.max_seconds), checked in the read callback and for every block.
 * Sparse entries are written at their full size, holes as zeros.
 *
 * Messages name the entry, escaped (lib/text.h): no entry name reaches a
 * terminal raw. A header libarchive cannot read is named by its number and
 * the entry before it.
 *
 * The protections of ARCHIVE_EXTRACT_SECURE_* are provided by our own
 * writer rather than archive_write_disk: libarchive only parses, and every
 * file is created with openat(O_CREAT|O_EXCL|O_NOFOLLOW) under a descriptor
 * on DEST reached component by component with O_NOFOLLOW, so a symlink
 * planted in DEST cannot redirect a write. Link, device and '..'/absolute
 * entries are refused even when strip or include would have skipped them.
 *
 * The archive file is hashed (SHA-256) in the same pass as it is read; if
 * the digest differs from EXPECT_SHA256 the extraction fails with
 * WB_EVERIFY (the caller quarantines the cache entry). A mismatch wins
 * over any other failure of the same run: an archive that is not the
 * expected one is reported as such. With EXPECT_SHA256 NULL (bytes the
 * caller hashed and verified moments ago) the archive is not hashed.
 *
 * Messages: "archive 'ARCHIVE_PATH': entry 'PATH': reason".
 */
#ifndef WB_EXTRACT_H
#define WB_EXTRACT_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "lib/err.h"
#include "lib/extract_limits.h"

struct extract_spec {
	int strip;                 /* leading path components to remove */
	const char *const *include;/* glob patterns (fnmatch, FNM_PATHNAME off)
				      on the path after strip; NULL/0 = all */
	size_t ninclude;
	struct extract_limits limits;
	time_t mtime;              /* every file and directory gets this mtime */
	const char *format;        /* unpack.format: "auto" (or NULL), "tar.gz",
				      "tgz", "zip", "iso" */
	long long deadline_ms;     /* CLOCK_MONOTONIC ms; 0 = start +
				      limits.max_seconds (tests set it) */
};

struct extract_file {
	char *path;                /* relative to DEST, '/' separators */
	unsigned long long size;
	unsigned char sha256[32];
	unsigned mode;             /* normalised: 0644 or 0755 */
};

struct extract_result {
	struct extract_file *files;  /* in archive order */
	size_t nr, alloc;
};

/*
 * Extract ARCHIVE_PATH (format detected by content) into the existing
 * directory DEST. Files get normalised modes (0755 if any x bit was set in
 * the archive or the name ends in .exe/.dll/.ps1/.cmd/.bat, else 0644) and
 * SPEC->mtime; owner names from the archive are ignored. Each written
 * file's SHA-256 is computed while it is written and recorded in RES.
 * Directories are created as needed (0755). '.' and empty path components
 * are dropped before strip, so "./bin/x" and "bin/x" strip alike. Entries
 * excluded by the include list or emptied by strip are skipped. A directory
 * may appear more than once; a file may not.
 *
 * Returns 0, or -1 with E set (WB_ESTAGE: hostile entry, limit, corrupt
 * archive; WB_EVERIFY: digest mismatch; WB_EIO: I/O; WB_EUSAGE: bad
 * EXPECT_SHA256_HEX or strip). Files are appended to RES (zero it first);
 * on failure RES holds what was written so far: release it either way.
 * On failure DEST may hold a partial tree: the CALLER removes it (this
 * function never deletes anything); nothing is ever written outside DEST.
 */
int extract_archive(const char *archive_path, const char *expect_sha256_hex,
		    const struct extract_spec *spec, const char *dest,
		    struct extract_result *res, struct wb_err *e);

/* The same for the archive open as FD (read with pread; FD stays the
 * caller's), NAME naming it in messages: a caller that holds the very file
 * it verified reads that, never a name that may have been swapped since. */
int extract_archive_fd(int fd, const char *name, const char *expect_sha256_hex,
		       const struct extract_spec *spec, const char *dest,
		       struct extract_result *res, struct wb_err *e);

void extract_result_release(struct extract_result *res);

#endif
