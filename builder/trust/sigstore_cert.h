/*
 * Fulcio certificates: chain to the trusted root at a given time, the
 * code-signing EKU, the embedded SCTs against the root's CT logs, and the
 * identity a certificate binds (SAN email or URI, OIDC issuer extension).
 * Errors are WB_EVERIFY (did not verify) or WB_EUSAGE (could not read).
 */
#ifndef WB_SIGSTORE_CERT_H
#define WB_SIGSTORE_CERT_H

#include <stdint.h>

#include <openssl/x509.h>

#include "lib/err.h"
#include "trust/sigstore_root.h"

/* OIDC issuer extensions (Fulcio): v2 is a DER UTF8String, v1 raw bytes. */
#define SIGSTORE_OID_ISSUER_V2 "1.3.6.1.4.1.57264.1.8"
#define SIGSTORE_OID_ISSUER_V1 "1.3.6.1.4.1.57264.1.1"

/*
 * Verify LEAF's chain to one of ROOT's certificate authorities whose
 * validity window holds T, with every certificate valid at T (Unix
 * seconds), and LEAF an end-entity certificate with the code-signing EKU.
 * Only the root's certificates are used (never the bundle's). On success
 * *ISSUER is LEAF's issuer (a new reference the caller frees).
 */
int sigstore_cert_verify_chain(X509 *leaf, const struct sigstore_root *root,
			       int64_t t, X509 **issuer, struct wb_err *e);

/*
 * Verify LEAF's embedded SCTs (issued by ISSUER) against ROOT's CT logs with
 * OpenSSL's CT code: at least one SCT must come from a log of the root,
 * verify, and carry a timestamp inside that log's validity window. NOW
 * (Unix seconds) is the evaluation time (an SCT from the future fails).
 */
int sigstore_cert_verify_sct(X509 *leaf, X509 *issuer,
			     const struct sigstore_root *root, int64_t now,
			     struct wb_err *e);

/*
 * The identity LEAF binds: *SANS gets every SAN email or URI (a
 * NULL-terminated array of malloc'd strings, freed with
 * sigstore_strv_free), *ISSUER the OIDC issuer (extension .1.8, else .1.1),
 * or NULL when the certificate has none.
 */
int sigstore_cert_identity(X509 *leaf, char ***sans, char **issuer,
			   struct wb_err *e);
void sigstore_strv_free(char **v);

/* Read a certificate given as PEM, base64 of PEM (cosign), or DER. */
X509 *sigstore_cert_read(const char *text, size_t len, struct wb_err *e);

/* A certificate's SHA-256 fingerprint in lowercase hex (65 bytes). */
void sigstore_cert_fingerprint(X509 *x, char out[65]);

#endif
