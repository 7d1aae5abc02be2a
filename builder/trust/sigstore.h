/*
 * Sigstore verification, offline, on OpenSSL libcrypto and jansson.
 *
 * Given an artifact (its SHA-256, and its path when the bytes are needed),
 * a Sigstore bundle (or a detached signature + certificate + optional Rekor
 * entry), a pinned trusted root (trusted_root.json, sigstore_root.h) and a
 * policy (an identity and an OIDC issuer, or a PEM public key),
 * sigstore_verify() checks, in this order (docs/sigstore.md):
 *
 *   1. the bundle: media type (v0.1, v0.2 as "+json;version=0.N", v0.3 in
 *      either spelling) and a shape that is that version's (a v0.1/v0.2
 *      label on v0.3 material, or v0.3 on a certificate chain, is refused);
 *   2. the verification material against the policy (certificate or key);
 *   3. every transparency-log entry (trust/tlog.h: SET, inclusion proof,
 *      checkpoint, body against this signature and material; a detached
 *      signature's hash is the one its hashedrekord entry logs) and every
 *      RFC 3161 timestamp (trust/timestamp.h), which give the signing times;
 *      an entry with no signed time has its log key checked at the
 *      timestamps' times; the same entry twice is refused, and
 *      tlog_threshold counts distinct logs;
 *   4. for a certificate: at each signing time, the chain to a Fulcio CA of
 *      the trusted root valid then, the leaf's validity, code-signing EKU,
 *      the embedded SCT against the root's CT logs, the SAN identity and
 *      the OIDC issuer extension;
 *   5. the content: the message signature over the artifact (the digest in
 *      the bundle must equal the artifact's), or the DSSE envelope
 *      (signature over PAE, and an in-toto subject digest equal to the
 *      artifact's SHA-256).
 *
 * A certificate signature with no verified time (no tlog entry with a
 * signed integrated time, no trusted timestamp) proves nothing about when
 * it was made and does not verify.
 *
 * Errors: WB_EVERIFY (1) when something did not verify, WB_EUSAGE (2) when
 * the input could not be checked (malformed bundle or root, missing file),
 * WB_EIO (5) when the artifact could not be read.
 */
#ifndef WB_SIGSTORE_H
#define WB_SIGSTORE_H

#include <stddef.h>
#include <time.h>

#include <jansson.h>

#include "lib/err.h"
#include "trust/sigstore_root.h"

/* Inputs are capped: a bundle, certificate, signature or entry is small. */
#define SIGSTORE_INPUT_MAX (4u << 20)
/* Ed25519 signs the artifact itself (no prehash): read at most this. */
#define SIGSTORE_ED25519_FILE_MAX (256u << 20)

struct sigstore_input {
	/* the artifact: its SHA-256 (required) and its path, read only when a
	 * signature needs the bytes (Ed25519 message signatures) */
	const unsigned char *artifact_sha256;   /* 32 bytes */
	const char *artifact_path;              /* may be NULL */

	/* either a bundle (JSON text)... */
	const char *bundle;
	size_t bundle_len;
	/* ...or a detached signature (base64 text, as cosign sign-blob writes
	 * it), with a certificate (PEM or base64 of PEM, for keyless) and an
	 * optional Rekor v1 API entry (JSON: {"<uuid>": {body, ...}}) */
	const char *signature;
	size_t signature_len;
	const char *certificate;
	size_t certificate_len;
	const char *tlog_entry;
	size_t tlog_entry_len;

	const struct sigstore_root *root;

	/* policy: identity + issuer (keyless), or a PEM public key */
	const char *identity;
	const char *issuer;
	const char *key_pem;
	size_t key_pem_len;

	time_t now;        /* the time for "in the future" checks; 0 = time() */

	/* a detached certificate signature without a tlog entry is checked at
	 * the certificate's notBefore: only for a recipe that opts out of the
	 * transparency log explicitly (cosign `tlog: none`) */
	int no_tlog;

	/* at least this many distinct transparency logs must hold a verified
	 * entry (entries of one log count once); 0 or 1: one entry suffices.
	 * Every entry given must verify either way. */
	unsigned tlog_threshold;
};

enum sigstore_material {
	SIGSTORE_MATERIAL_NONE = 0,
	SIGSTORE_MATERIAL_CERTIFICATE,   /* Fulcio certificate (keyless) */
	SIGSTORE_MATERIAL_KEY,           /* a pinned public key */
};

enum sigstore_content {
	SIGSTORE_CONTENT_NONE = 0,
	SIGSTORE_CONTENT_MESSAGE,        /* messageSignature / detached */
	SIGSTORE_CONTENT_DSSE,           /* DSSE envelope, in-toto statement */
};

/* What verified, for the lock, the SBOM and the plan. Strings are owned
 * (sigstore_evidence_release). */
struct sigstore_evidence {
	enum sigstore_material material;
	enum sigstore_content content;
	int bundle_minor;        /* 1, 2 or 3; 0 for a detached signature */
	char *identity;          /* SAN (keyless) */
	char *issuer;            /* OIDC issuer (keyless) */
	char key_sha256[65];     /* hex SHA-256 of the key's DER SPKI (key) */
	int has_tlog;            /* the fields below describe the first entry */
	long long log_index;
	long long integrated_time;       /* 0 for Rekor v2 */
	char log_id[65];                 /* hex */
	char *tlog_kind;                 /* e.g. "hashedrekord 0.0.1" */
	int ntimestamps;                 /* verified RFC 3161 timestamps */
	long long signed_time;           /* earliest verified time; 0 none */
};

int sigstore_verify(const struct sigstore_input *in,
		    struct sigstore_evidence *ev, struct wb_err *e);

/*
 * A detached signature (IN: signature, certificate) with each Rekor API
 * entry of ENTRIES (one JSON object holding one or more: {"<uuid>": {...},
 * ...}) in turn, until one verifies: 0 with EV filled and *CHOSEN that
 * entry alone as JSON text (new string). Else -1 with the first failure
 * (WB_EVERIFY "no transparency-log entry" for an empty object).
 * *NENTRIES is how many there were. IN->tlog_entry is used and reset.
 */
int sigstore_verify_entries(struct sigstore_input *in, const char *entries, size_t len,
			    struct sigstore_evidence *ev, char **chosen, size_t *nentries,
			    struct wb_err *e);

void sigstore_evidence_release(struct sigstore_evidence *ev);

/*
 * The evidence as JSON, for the lock, the SBOM and `sig sigstore --json`
 * (docs/sigstore.md): {"material": "certificate"|"key", "content":
 * "message"|"dsse", "bundle_version": "0.N"|null, "identity", "issuer" (a
 * certificate) or "key_sha256" (a key), "tlog": {"log_index", "log_id",
 * "kind", "integrated_time"}|null, "timestamps": N, "signed_time":
 * RFC 3339|null}. sigstore_evidence_to_json returns a new object the
 * caller owns; sigstore_evidence_from_json reads one back (WB_EUSAGE when
 * it is not such an object; EV is left zeroed then).
 */
json_t *sigstore_evidence_to_json(const struct sigstore_evidence *ev);
int sigstore_evidence_from_json(const json_t *obj, struct sigstore_evidence *ev,
				struct wb_err *e);

#endif
