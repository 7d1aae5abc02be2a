/*
 * winbuild.lock: what a build trusted, per artifact (JSON, jansson).
 *
 *   { "version": 1, "recipe": "NAME",
 *     "artifacts": { "NAME": { "url": "...", "size": N, "sha256": "hex",
 *         "verified_by": { "minisign": { "key_id": "...", "trusted_comment":
 *         "...", "signature_url": "..." }, "minisign_also": [...],
 *         "sigstore": { "identity": ..., "log_index": ..., "bundle_url": ... },
 *         "checksum_url": "...", "pinned": ["sha256"], "accepted_new": true } } },
 *     "windows_iso": { "sha256": "hex" } }     (when the plan pins one)
 *
 * "verified_by" is written by verify_evidence_lock_json (trust/verify.c):
 * one key per method of the table (trust/method.h) that verified.
 *
 * "url" is the plan URL the bytes came from (after mirroring, before
 * redirects). Written atomically, keys sorted: a lock diff is a review.
 */
#ifndef WB_LOCKFILE_H
#define WB_LOCKFILE_H

#include <stddef.h>

#include "fetch/fetch.h"
#include "lib/err.h"

struct lock_entry {
	char *name;
	char *url;
	char sha256[65];
	unsigned long long size;
};

struct lockfile {
	struct lock_entry *v;   /* sorted by name */
	size_t nr;
	char iso_sha256[65];    /* "windows_iso": {"sha256"}, or "" */
	char *image;            /* "recipe": the image name it was made for, or NULL */
};

/* Read PATH. Returns 1 when read, 0 when it does not exist, -1 on error
 * (WB_EUSAGE: malformed, naming the problem). */
int lockfile_read(const char *path, struct lockfile *lf, struct wb_err *e);
void lockfile_release(struct lockfile *lf);
const struct lock_entry *lockfile_find(const struct lockfile *lf, const char *name);

/* Write the verified ITEMS (status 0) of recipe RECIPE to PATH, with the
 * Windows ISO's pinned digest ISO_SHA256 when not NULL. */
int lockfile_write(const char *path, const char *recipe, const char *iso_sha256,
		   const struct fetch_item *items, size_t n, struct wb_err *e);

#endif
