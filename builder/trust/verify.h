/*
 * Trust policy and verdict for one downloaded artifact. No network, no
 * cache: the caller (fetch/) hands over the digests computed while the
 * bytes arrived and the text of the checksum and signature files it
 * fetched, and gets back a verdict and the evidence.
 *
 * Every verification method the plan configures must pass (they are ANDed,
 * never ORed): pinned sha256/sha512, checksum files, minisign signature,
 * and the lock pin when there is one. Policy:
 *   require_signature     an artifact without a verifying minisign signature
 *                         from a pinned key fails, whatever digests say
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
#include "recipe/plan.h"
#include "trust/digest.h"

enum verify_method {
	VERIFY_PINNED_SHA256 = 1 << 0,
	VERIFY_PINNED_SHA512 = 1 << 1,
	VERIFY_CHECKSUM_SHA256 = 1 << 2,
	VERIFY_CHECKSUM_SHA512 = 1 << 3,
	VERIFY_MINISIGN = 1 << 4,
	VERIFY_LOCK_PIN = 1 << 5,
	VERIFY_ACCEPTED_NEW = 1 << 6,  /* lock --accept-new: trust on first use */
};

/* What the caller must fetch and compute before calling verify_artifact. */
struct verify_needs {
	unsigned methods;       /* enum verify_method bits that will be checked */
	unsigned digest_algs;   /* enum digest_alg bits to compute in the stream */
};

/*
 * Decide, before any download, which methods apply to ART under POLICY and
 * which digests the stream must compute. LOCK_SHA256 is the lock's pin (hex)
 * or NULL; ACCEPT_NEW is lock --accept-new. Fails (WB_EVERIFY) when policy
 * leaves no way to verify the artifact (require_signature without keys,
 * only checksum URLs while they are forbidden) or when LOCK_SHA256 and the
 * recipe's sha256 pin differ (the message names both), WB_EUSAGE for
 * needs_pin without a pin.
 */
int verify_plan(const struct plan_artifact *art, const struct plan_policy *policy,
		const char *lock_sha256, int accept_new, struct verify_needs *needs,
		struct wb_err *e);

/*
 * The one place that decides whether bytes satisfy ART's pins: the recipe's
 * sha256 and sha512 and LOCK_SHA256 (the lock's, or NULL). Every path to
 * bytes goes through it: a download (verify_artifact), a cache hit through
 * a ref or by digest, a lock replay. WHERE names the bytes (URL or cache
 * entry) in the message. SHA512 is NULL when it was not computed: then a
 * sha512 pin fails (WB_EIO). A mismatch is WB_EVERIFY naming the pin, the
 * expected and the actual digest.
 */
int verify_pins(const struct plan_artifact *art, const char *lock_sha256,
		const char *where, const unsigned char sha256[32],
		const unsigned char *sha512, struct wb_err *e);

/* The sha256 ART's bytes must have: the recipe's pin, else LOCK_SHA256
 * (verify_plan refuses the two when they differ), else NULL. A cache lookup
 * goes by this digest, never by what a ref says. */
const char *verify_pinned_sha256(const struct plan_artifact *art, const char *lock_sha256);

/* 1 if POLICY allows fetching URL (http:// only when allow_http). */
int verify_url_allowed(const struct plan_policy *policy, const char *url);

struct verify_input {
	const struct plan_artifact *art;
	const struct plan_policy *policy;
	const struct verify_needs *needs;
	const struct digest_result *dr;    /* digests of the downloaded bytes */
	const char *url;                   /* where the bytes came from */
	const char *data_path;             /* the downloaded file (legacy Ed) */
	const char *lock_sha256;           /* lock pin (hex) or NULL */
	/* fetched files; text NULL when not fetched */
	const char *sha256_file, *sha256_file_url;
	size_t sha256_file_len;
	const char *sha512_file, *sha512_file_url;
	size_t sha512_file_len;
	const char *sig_file, *sig_file_url;
	size_t sig_file_len;
	/* one per art->verify.sigreqs (further signature requirements, each
	 * checked against its own keys only); text NULL when not fetched */
	const char *const *sigreq_files, *const *sigreq_file_urls;
	const size_t *sigreq_file_lens;
};

/* What one verifying minisign signature showed. */
struct verify_sig {
	char keyid_hex[17];
	char *trusted_comment;     /* owned */
	char *sig_url;             /* owned */
	char *sig_text;            /* owned */
};

struct verify_evidence {
	unsigned methods;          /* what was verified */
	char keyid_hex[17];        /* minisign key id, when VERIFY_MINISIGN */
	char *trusted_comment;     /* owned */
	char *sig_url;             /* owned */
	char *sig_text;            /* owned: the signature file that verified
				      (for `winbuild mirror`), or NULL */
	char *checksum_url;        /* owned: the sha256 (or sha512) file URL */
	struct verify_sig *sigreqs; /* owned: one per art->verify.sigreqs, in
				       order, when VERIFY_MINISIGN */
	size_t nsigreqs;
};

/* Free and zero the evidence of the further requirements (EV->sigreqs). */
void verify_sigreqs_release(struct verify_evidence *ev);

/* Run every check of IN->needs. On success fills EV (release with
 * verify_evidence_release) and returns 0. */
int verify_artifact(const struct verify_input *in, struct verify_evidence *ev,
		    struct wb_err *e);
void verify_evidence_release(struct verify_evidence *ev);

/* "minisign key ABCD... 'trusted comment'", "checksum file URL", "pinned
 * sha256", ... for logs; new string. */
char *verify_evidence_describe(const struct verify_evidence *ev);

#endif
