/*
 * What must hold for one artifact's bytes to be trusted: the verify spec
 * (the recipe's `verify:` and every layer's `signatures:`, resolved by
 * recipe/verify_spec.c) and the policy. trust/ owns these types; the plan
 * embeds them (recipe/plan.h), so nothing here knows about recipes.
 *
 * A spec is digest pins (checked on every path to bytes: verify_pins) and
 * a list of requirements, each one entry of a method of the table
 * (trust/method.h): a checksum file, a minisign signature, a Sigstore
 * bundle. Every requirement must hold (ANDed, never ORed); one method can
 * appear several times (a site's `signatures:` is one more minisign entry
 * satisfied by its own keys only).
 */
#ifndef WB_TRUST_SPEC_H
#define WB_TRUST_SPEC_H

#include <stddef.h>

#include "lib/origin.h"
#include "lib/strlist.h"
#include "trust/minisign.h"

struct trust_method;

/* At most this many auxiliary files per requirement (trust/method.h). */
#define TRUST_AUX_MAX 4

/* A pinned public key (minisign). */
struct trust_key {
	char *name;          /* name in `keys:`, or NULL for an inline key */
	char *text;          /* base64 public key */
	char *key_file;      /* resolved path when given as key_file, else NULL */
	char keyid_hex[17];
	struct minisign_pubkey pk;   /* parsed; allow_legacy/file_check set */
	struct wb_origin origin;
};

/* A method's own setting (sigstore: trusted_root, identity, issuer, key):
 * a file setting is a path already resolved against its recipe file. */
struct trust_param {
	char *key;
	char *value;
	int file;            /* VALUE is a file whose contents matter */
	struct wb_origin origin;
};

/* One requirement: METHOD must verify the bytes with its auxiliary files,
 * each fetched from one of its URLs (try order; none when the method needs
 * no file), under its own KEYS and PARAMS. URLS is the first file's list,
 * MORE[k - 1] the list of the method's file k (trust_req_urls). LOOKUP is
 * the base URLs (try order, mirrored) of the service the method asks after
 * the download (Rekor), empty when it asks none.
 * @where the verify spec (pins, one requirement per method entry) and the
 *   policy, as the plan embeds them
 */
struct trust_req {
	const struct trust_method *method;
	struct wb_strlist urls;
	struct wb_strlist more[TRUST_AUX_MAX - 1];
	struct wb_strlist lookup;
	struct trust_key *keys;
	size_t nkeys, alloc_keys;
	struct trust_param *params;
	size_t nparams, alloc_params;
	int layered;             /* from a layer above the artifact (a
				    top-level `signatures:`), not its own */
	struct wb_origin origin; /* of the map (or key) that asked for it */
};

/*
 * @where the verify spec (pins, one requirement per method entry) and the
 *   policy, as the plan embeds them
 */
struct trust_spec {
	const char *name;             /* the artifact (not owned; messages) */
	const char *filename;         /* its file name (not owned; checksum
					 lines, minisign file: check) */
	char *sha256;                 /* pinned, lowercase hex, or NULL */
	char *sha512;
	char *sha1;                   /* a Windows update's Catalog SHA-1: checked
					 like the pins above, but never enough
					 to verify on its own (verify_plan) */
	char *source;                 /* citation for a pinned digest */
	char *needs_pin;              /* reason, when only a lock pin can verify */
	struct trust_req *reqs;       /* ANDed, in fetch order */
	size_t nreqs, alloc_reqs;
	struct wb_origin origin;      /* of the `verify` map (or replace.verify) */
	struct wb_origin sha256_origin, sha512_origin, sha1_origin;
};

/*
 * @where the verify spec (pins, one requirement per method entry) and the
 *   policy, as the plan embeds them
 */
struct trust_policy {
	int require_signature;     /* policy.require: signature */
	int allow_http;            /* policy.allow_http (default 1) */
	int forbid_checksum_urls;  /* policy.checksum_urls: forbid */
	int refuse_locked_urls;    /* policy.locked_urls: refuse */
	/* policy.unverified_iso: allow in some layer and forbid in none */
	int allow_unverified_iso;
	/* policy.tlog_threshold: the highest any layer set (0: unset, one
	 * log as sigstore-go's default); trust_sigstore_prepare() and the
	 * image signature policy hand it to every Sigstore check */
	unsigned tlog_threshold;
	struct wb_origin require_origin, allow_http_origin, checksum_urls_origin,
		unverified_iso_origin, tlog_threshold_origin, locked_urls_origin;
};

/*
 * An Authenticode trust set (trust/authenticode.h; checked on the staged
 * .exe, .dll and .msi files, not on a download): the signer must chain to
 * ROOTS and be one of PUBLISHERS (none: any signer under ROOTS). A policy
 * is a list of them, ANDed, like layered signature requirements: the first
 * is the merged map's own, each further one a layer's or a component's.
 * @where the `authenticode:` policy (global, per component; `require` and
 *   `signatures: all` only tighten) -- one trust set
 */
struct trust_authset {
	char *roots;                   /* PEM file, already resolved */
	struct wb_strlist publishers;  /* subjects or lowercase thumbprints */
	struct wb_origin roots_origin;
};

void trust_authsets_release(struct trust_authset *v, size_t n);

/* Append a zeroed requirement of METHOD to S; the new entry. */
struct trust_req *trust_spec_add(struct trust_spec *s, const struct trust_method *method,
				 const struct wb_origin *origin);
/* The value of PARAM KEY in R, or NULL (and its origin in *ORIGIN). */
const char *trust_req_param(const struct trust_req *r, const char *key,
			    const struct wb_origin **origin);
/* The URL list of R's auxiliary file K (0 is R->urls). */
const struct wb_strlist *trust_req_urls(const struct trust_req *r, size_t k);
struct wb_strlist *trust_req_urls_mut(struct trust_req *r, size_t k);
void trust_req_set_param(struct trust_req *r, const char *key, const char *value,
			 int file, const struct wb_origin *origin);
/* Whether A and B ask for the same thing (method, URLs, keys, params). */
int trust_req_same(const struct trust_req *a, const struct trust_req *b);
void trust_req_release(struct trust_req *r);
void trust_spec_release(struct trust_spec *s);

#endif
