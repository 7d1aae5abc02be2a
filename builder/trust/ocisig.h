/*
 * A container image's cosign signature (issue 33), as `cosign sign` stores
 * it in the registry: an OCI image manifest under the tag
 * `sha256-<hex>.sig` of the signed digest whose every layer is one
 * signature:
 *
 *   the layer's bytes     the simple-signing payload (media type
 *                         application/vnd.dev.cosign.simplesigning.v1+json):
 *                         {"critical": {"identity": {"docker-reference": R},
 *                          "image": {"docker-manifest-digest": D},
 *                          "type": "cosign container image signature"},
 *                          "optional": ...}
 *   its annotations       dev.cosignproject.cosign/signature (base64 of
 *                         the signature over the payload bytes),
 *                         dev.sigstore.cosign/certificate (the Fulcio
 *                         certificate, PEM; keyless), dev.sigstore.cosign/
 *                         chain (its issuers, PEM; not used: the chain is
 *                         built from the trusted root only, as for every
 *                         Sigstore check), dev.sigstore.cosign/bundle (the
 *                         Rekor entry with its SET: {"SignedEntryTimestamp",
 *                         "Payload": {"body", "integratedTime", "logIndex",
 *                         "logID"}})
 *
 * One verifier: each layer goes through sigstore_verify() (trust/sigstore.h)
 * as a detached signature over the payload's SHA-256 with the bundle as its
 * Rekor entry, so the chain, identity, issuer, SCT, SET, body and the
 * integrated time inside the certificate's validity are the same checks as
 * for the Kubernetes binaries' cosign signatures (trust/m_cosign.c).
 *
 * Nothing here fetches; fetch/registry.c hands over the manifest and the
 * payloads it fetched (or read from the cache, offline).
 */
#ifndef WB_TRUST_OCISIG_H
#define WB_TRUST_OCISIG_H

#include <stddef.h>

#include "lib/buf.h"
#include "lib/err.h"
#include "trust/sigstore_root.h"

#define OCISIG_PAYLOAD_MAX (64u << 10)   /* a simple-signing payload */
#define OCISIG_LAYERS_MAX 64             /* signatures under one tag */

/* What must have signed: IDENTITY + ISSUER (keyless) or KEY_PEM, under
 * ROOT (its Fulcio CAs, CT logs and Rekor keys). */
struct ocisig_policy {
	const struct sigstore_root *root;
	const char *identity, *issuer;
	const char *key_pem;
	size_t key_pem_len;
	unsigned tlog_threshold;     /* policy.tlog_threshold (0: one log) */
};

/* What verified (strings owned; ocisig_evidence_release). */
struct ocisig_evidence {
	char *identity, *issuer;     /* keyless */
	char key_sha256[65];         /* key: hex SHA-256 of its DER SPKI */
	long long log_index, integrated_time;
	char *docker_reference;      /* the payload's critical.identity */
	char payload_digest[72];     /* "sha256:<hex>" of the layer that verified */
	size_t layer;                /* its index in the signature manifest */
};

/*
 * Verify the signature manifest MANIFEST (LEN bytes) for the image digest
 * PINNED ("sha256:<hex>"): PAYLOADS[i] are the bytes of its layer i (each
 * checked again against the layer's digest), N of them. One layer that
 * verifies is enough (as cosign verify); EV is filled from it. Else -1:
 * WB_EVERIFY with the first layer's reason (a payload naming another
 * digest, a signature, certificate, identity, issuer or SET that does not
 * verify), WB_EUSAGE for a manifest that is not a signature manifest.
 */
int ocisig_verify(const char *pinned, const char *manifest, size_t len,
		  const struct buf *payloads, size_t n, const struct ocisig_policy *pol,
		  struct ocisig_evidence *ev, struct wb_err *e);
void ocisig_evidence_release(struct ocisig_evidence *ev);

/* EV as the lock records it, with the signature manifest SIG_DIGEST:
 * {"signature_manifest", "payload_digest", "identity", "issuer" (keyless)
 * or "key_sha256", "log_index", "integrated_time", "docker_reference"}.
 * A new object. */
/* EV for people: "ID (ISSUER)" or "key sha256:HEX", then ", log index N,
 * integrated time T", appended to OUT. */
void ocisig_describe(const struct ocisig_evidence *ev, struct buf *out);

struct json_t *ocisig_evidence_json(const struct ocisig_evidence *ev, const char *sig_digest);

#endif
