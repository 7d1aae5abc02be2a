/*
 * winbuild.lock: what a build trusted, per artifact (JSON, jansson).
 *
 *   { "version": 1, "recipe": "NAME",
 *     "artifacts": { "NAME": { "url": "...", "size": N, "sha256": "hex",
 *         "verified_by": { "minisign": { "key_id": "...", "trusted_comment":
 *         "...", "signature_url": "..." }, "minisign_also": [...],
 *         "sigstore": { "identity": ..., "log_index": ..., "bundle_url": ... },
 *         "checksum_url": "...", "pinned": ["sha256"], "accepted_new": true } } },
 *     "windows_iso": { "sha256": "hex" },      (when the plan pins one)
 *     "site_signed": { "TREE PATH": { "artifact": "NAME", "upstream_sha256":
 *         "hex", "sha256": "hex", "signer": "SUBJECT", "signer_sha256": "hex",
 *         "timestamped": false } },             (after a site-signed stage)
 *     "images": { "KEY": { "name": "HOST/REPO", "tag": "T"|null, "digest":
 *         "sha256:..." (the pin: the list's), "manifest_digest": "sha256:..."
 *         (the entry for the build), "os_version": "10.0.N.R",
 *         "accepted_new": true (lock --accept-new resolved the tag),
 *         "cosign": { "signature_manifest", "payload_digest", "identity",
 *         "issuer" | "key_sha256", "log_index", "integrated_time",
 *         "docker_reference" } } } }            (images:, issue 33)
 *
 * "verified_by" is written by verify_evidence_lock_json (trust/verify.c):
 * one key per method of the table (trust/method.h) that verified.
 *
 * "url" is the plan URL the bytes came from (after mirroring, before
 * redirects). Written atomically, keys sorted: a lock diff is a review.
 *
 * "site_signed" (docs/authenticode.md, "Site signing"): per staged file the
 * site signed, the upstream bytes' digest and the signed bytes'. `lock`
 * fetches and never signs, so the stage records them (a stage or build
 * without --locked, when the lock file exists) and `lock` keeps the entries
 * of every artifact whose bytes it pins unchanged. Signing is deterministic
 * for one key and SOURCE_DATE_EPOCH (trust/sign.c), so under --locked the
 * stage checks its signed files against these entries before the tree is
 * final; a timestamped signature is not deterministic: only its upstream
 * digest and signer are checked then.
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

struct lock_signed {
	char *path;             /* tree path, '/' separators */
	char *artifact;
	char *signer;           /* subject, RFC 2253 */
	char signer_sha256[65]; /* the signer certificate's SHA-256 */
	char upstream_sha256[65], sha256[65];
	int timestamped;
};

/* "images": one container image as the lock pinned it (issue 33). */
struct lock_image {
	char *key;
	char digest[72];            /* "sha256:<hex>": the pin */
	char manifest_digest[72];   /* the entry for the recipe's build */
};

struct lockfile {
	struct lock_entry *v;   /* sorted by name */
	size_t nr;
	struct lock_signed *sv; /* "site_signed", sorted by path */
	size_t nsigned;
	char iso_sha256[65];    /* "windows_iso": {"sha256"}, or "" */
	char *image;            /* "recipe": the image name it was made for, or NULL */
	struct lock_image *images;   /* "images", sorted by key */
	size_t nimages;
};

/* Read PATH. Returns 1 when read, 0 when it does not exist, -1 on error
 * (WB_EUSAGE: malformed, naming the problem). */
int lockfile_read(const char *path, struct lockfile *lf, struct wb_err *e);
void lockfile_release(struct lockfile *lf);
const struct lock_entry *lockfile_find(const struct lockfile *lf, const char *name);

/* The "site_signed" entry of tree path PATH, or NULL. */
const struct lock_signed *lockfile_find_signed(const struct lockfile *lf, const char *path);

/* The "images" entry KEY, or NULL. */
const struct lock_image *lockfile_find_image(const struct lockfile *lf, const char *key);

/* Write the verified ITEMS (status 0) of recipe RECIPE to PATH, with the
 * Windows ISO's pinned digest ISO_SHA256 when not NULL, and IMAGES (the
 * "images" object above; NULL: none) as it is. */
int lockfile_write(const char *path, const char *recipe, const char *iso_sha256,
		   const struct fetch_item *items, size_t n, struct json_t *images,
		   struct wb_err *e);

/* Replace the "site_signed" section of the lock file PATH (which exists and
 * was made for image RECIPE) with the N entries V; the rest is kept as it
 * is. 0, or -1 with E. */
int lockfile_set_site_signed(const char *path, const char *recipe,
			     const struct lock_signed *v, size_t n, struct wb_err *e);

#endif
