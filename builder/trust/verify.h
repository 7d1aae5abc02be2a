/*
 * Trust policy and verdict for one downloaded artifact. No network, no
 * cache: the caller (fetch/) hands over the digests computed while the
 * bytes arrived and the auxiliary files (checksum files, signatures,
 * bundles) it fetched for the spec's requirements, and gets back a verdict
 * and the evidence.
 *
 * Every verification the spec asks for must pass (ANDed, never ORed): the
 * pinned sha256/sha512, the lock pin when there is one, and each
 * requirement by its method (trust/method.h). Policy:
 *   require_signature     an artifact without a verifying signature (a
 *                         TRUST_SIGNATURE method) fails, whatever digests say
 *   allow_http = 0        http:// URLs are refused (verify_url_allowed)
 *   forbid_checksum_urls  checksum files are not fetched and do not count
 *   needs_pin             the artifact verifies only against a lock pin
 *
 * Errors: WB_EVERIFY (1) when something did not verify or policy refused
 * it; WB_EUSAGE (2) when it could not be checked (unparsable checksum or
 * signature file, needs_pin without a pin). Messages name the artifact, the
 * URL, the expected and actual digest or the key id.
 */
#ifndef WB_VERIFY_H
#define WB_VERIFY_H

#include <stddef.h>

#include "lib/err.h"
#include "trust/digest.h"
#include "trust/method.h"
#include "trust/spec.h"

#define VERIFY_MAX_REQS 64

enum verify_method {
	VERIFY_PINNED_SHA256 = 1 << 0,
	VERIFY_PINNED_SHA512 = 1 << 1,
	VERIFY_LOCK_PIN = 1 << 5,
	VERIFY_ACCEPTED_NEW = 1 << 6,  /* lock --accept-new: trust on first use */
	VERIFY_REQS = 1 << 7,          /* some requirement of the spec applies */
	VERIFY_SIGNATURE = 1 << 8,     /* ... and one of them is a signature */
};

/* What the caller must fetch and compute before calling verify_artifact. */
struct verify_needs {
	unsigned methods;       /* enum verify_method bits that will be checked */
	unsigned digest_algs;   /* enum digest_alg bits to compute in the stream */
	unsigned long long reqs;/* bit i: spec->reqs[i] applies (fetch its file) */
};

/*
 * Decide, before any download, which checks apply to SPEC under POLICY
 * and which digests the stream must compute. LOCK_SHA256 is the lock's pin
 * (hex) or NULL; ACCEPT_NEW is lock --accept-new. Fails (WB_EVERIFY) when
 * policy leaves no way to verify the artifact (require_signature without a
 * signature, only checksum URLs while they are forbidden) or when
 * LOCK_SHA256 and the recipe's sha256 pin differ (the message names both),
 * WB_EUSAGE for needs_pin without a pin.
 */
int verify_plan(const struct trust_spec *spec, const struct trust_policy *policy,
		const char *lock_sha256, int accept_new, struct verify_needs *needs,
		struct wb_err *e);

/*
 * The one place that decides whether bytes satisfy SPEC's pins: the
 * recipe's sha256 and sha512 and LOCK_SHA256 (the lock's, or NULL). Every
 * path to bytes goes through it: a download (verify_artifact), a cache hit
 * through a ref or by digest, a lock replay. WHERE names the bytes (URL or
 * cache entry) in the message. SHA512 (SHA1) is NULL when it was not
 * computed: then a sha512 (sha1) pin fails (WB_EIO). A mismatch is WB_EVERIFY naming the
 * pin, the expected and the actual digest.
 */
int verify_pins(const struct trust_spec *spec, const char *lock_sha256,
		const char *where, const unsigned char sha256[32],
		const unsigned char *sha512, const unsigned char *sha1, struct wb_err *e);

/* The sha256 the bytes must have: the recipe's pin, else LOCK_SHA256
 * (verify_plan refuses the two when they differ), else NULL. A cache lookup
 * goes by this digest, never by what a ref says. */
const char *verify_pinned_sha256(const struct trust_spec *spec, const char *lock_sha256);

/* 1 if POLICY allows fetching URL (http:// only when allow_http). */
int verify_url_allowed(const struct trust_policy *policy, const char *url);

struct verify_input {
	const struct trust_spec *spec;
	const struct trust_policy *policy;
	const struct verify_needs *needs;
	const struct digest_result *dr;    /* digests of the downloaded bytes */
	const char *url;                   /* where the bytes came from */
	const char *data_path;             /* the downloaded file (legacy Ed) */
	const char *lock_sha256;           /* lock pin (hex) or NULL */
	const struct trust_aux *aux;       /* one per file of each of
					      spec->reqs, flat (trust_spec_slot;
					      those of needs->reqs are used) */
	struct sigstore_roots *roots;      /* the run's trusted roots, parsed
					      once (trust/sigstore_root.h), or
					      NULL */
};

struct verify_evidence {
	unsigned methods;          /* enum verify_method: what was verified */
	struct trust_ev *v;        /* one per requirement checked, in order */
	size_t nr;
};

/* Run every check of IN->needs. On success fills EV (release with
 * verify_evidence_release) and returns 0. */
int verify_artifact(const struct verify_input *in, struct verify_evidence *ev,
		    struct wb_err *e);
void verify_evidence_release(struct verify_evidence *ev);

/* "minisign key ABCD... 'trusted comment'", "checksum file URL", "pinned
 * sha256", ... for logs; new string. */
char *verify_evidence_describe(const struct verify_evidence *ev);

/* "minisign, sha256 checksum file, pinned sha256": the methods that
 * verified, without the lock pin; new string. */
char *verify_evidence_methods(const struct verify_evidence *ev);

/* The first evidence of a signature method ("the signer"), or NULL; the
 * further ones (layered requirements) as "ABCD 'comment'; ..." (new
 * string, NULL when none). */
const struct trust_ev *verify_evidence_signer(const struct verify_evidence *ev);
char *verify_evidence_also(const struct verify_evidence *ev);

/* Evidence as the lock records it (`verified_by`): per method of the
 * table, its first entry under its name ({fields, url_key: url}, or the
 * URL alone) and the rest under "<name>_also"; then "pinned", "lock_pin",
 * "accepted_new". New jansson object. */
struct json_t *verify_evidence_lock_json(const struct verify_evidence *ev);

/* The evidence as the cache ref keeps it, auxiliary files included, and
 * back. verify_evidence_from_json fails (-1) unless the entries are those
 * NEEDS asks of SPEC (the same requirements, in order). */
struct json_t *verify_evidence_to_json(const struct verify_evidence *ev);
int verify_evidence_from_json(const struct trust_spec *spec,
			      const struct verify_needs *needs,
			      struct json_t *arr, struct verify_evidence *ev);

#endif
