/*
 * Internal to the extractor (stage/extract.c, extract_write.c,
 * extract_sniff.c): the state of one extraction run and the functions the
 * three files share. Not for other modules: they use stage/extract.h.
 *
 *   extract.c        the run: the archive source (read/seek callbacks with
 *                    the one-pass hash), the bounds, messages, the entry
 *                    loop, the digest check, the entry points
 *   extract_write.c  what an entry becomes under DEST: the entry checks,
 *                    the table of placed paths, writing files and
 *                    directories, directory mtimes
 *   extract_sniff.c  what the file is: the container from its first bytes,
 *                    unpack.format, zip local headers against the central
 *                    directory
 */
#ifndef WB_EXTRACT_CTX_H
#define WB_EXTRACT_CTX_H

#include <archive.h>
#include <archive_entry.h>

#include "lib/pathtab.h"
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
	struct pathtab placed;     /* every path placed in DEST, by the
				      entry (owner) that placed it */
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


struct container {
	const char *what;          /* for messages */
	int filter;                /* ARCHIVE_FILTER_* (tar inside it) */
	int zip;
	int iso;
};

/* ---- extract.c ---- */

/* Set E to "archive 'NAME': entry 'ENTRY': why" (escaped); returns -1. */
int extract_entry_error(struct ctx *c, int code, const char *entry,
			const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* A header that could not be read, named by its number; returns -1. */
int extract_header_error(struct ctx *c, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* libarchive's error on A as E (WB_EIO after a read error); returns -1. */
int extract_archive_failed(struct ctx *c, struct archive *a,
			   const char *entry, const char *what);
/* The deadline and the decompressed-stream bound; -1 with E set. */
int extract_bounds_check(struct ctx *c, const char *entry);

/* ---- extract_write.c ---- */

/* The entry's name (UTF-8), or NULL if it has none. */
const char *extract_entry_name(struct archive_entry *ae);
/* Check ENTRY and write it under DEST (or skip it); 0 or -1 with E set. */
int extract_entry(struct ctx *c, struct archive *a, struct archive_entry *ae);
/* Give every placed directory SPEC->mtime, deepest first. */
int extract_dir_mtimes(struct ctx *c);

/* ---- extract_sniff.c ---- */

/* What the file is, from its first bytes, into K; -1 on a read error. */
int extract_sniff(struct ctx *c, struct container *k);
/* SPEC->format against K; -1 with E set when they differ. */
int extract_format_ok(struct ctx *c, const struct container *k);
/* Every zip local header agrees with its central record; -1 with E set. */
int extract_zip_names_agree(struct ctx *c);

#endif
