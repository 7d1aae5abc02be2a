/*
 * RFC 3161 signed timestamps: the one verifier, for Sigstore and
 * Authenticode alike, offline with OpenSSL <openssl/ts.h>. Sigstore
 * bundles carry them as
 * verificationMaterial.timestampVerificationData.rfc3161Timestamps[]
 * .signedTimestamp (DER of a TimeStampResp or a bare TimeStampToken),
 * trusted through the timestamp authorities of a trusted root
 * (timestamp_verify); an Authenticode signature carries a bare token in
 * its unsigned attribute 1.3.6.1.4.1.311.3.3.1, trusted through the roots
 * file (timestamp_verify_token). Both get the same checks of the token
 * itself (below). No recipe/ include.
 *
 * What is timestamped: the message imprint covers the signature bytes —
 * messageSignature.signature for a message signature, the first DSSE
 * envelope signature (signatures[0].sig, decoded) for an envelope. The
 * caller passes those bytes; the hash algorithm is the one the token names.
 *
 * Errors: WB_EUSAGE when the token cannot be decoded, WB_EVERIFY when it
 * does not verify. Times are Unix seconds.
 */
#ifndef WB_TIMESTAMP_H
#define WB_TIMESTAMP_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/x509.h>

#include "lib/err.h"

#define TIMESTAMP_DER_MAX 65536   /* larger tokens are refused */

/*
 * One timestamp authority of the trusted root ("timestampAuthorities[]"),
 * filled by the caller. chain: certChain.certificates in the root's order
 * (leaf / TSA signing cert first, root last). tsa_release frees it all.
 */
struct timestamp_authority {
	STACK_OF(X509) *chain;   /* owned; at least one certificate */
	int64_t valid_from;      /* validFor.start */
	int64_t valid_to;        /* validFor.end, or INT64_MAX when open */
	char *uri;               /* owned or NULL; for messages */
};
void timestamp_authority_release(struct timestamp_authority *a);

struct timestamp_result {
	int64_t gen_time;        /* TSTInfo genTime, seconds (truncated) */
	long gen_time_ns;        /* its fraction of a second, 0..999999999 */
	size_t tsa_index;        /* index into the TSAS that verified it */
};

/*
 * Verify one signed timestamp DER (DER_LEN bytes) over SIGNED (SIGNED_LEN
 * bytes) against TSAS (NTSAS of them). For each authority in turn: the
 * token's signature verifies with the authority's signing certificate
 * (the first of its chain; a certificate embedded in the token must be
 * that one), the signer's chain up to the authority's root verifies at
 * genTime with the timeStamping EKU (critical and sole, as OpenSSL's
 * timestamp purpose requires), the imprint algorithm is SHA-256/384/512,
 * the message imprint equals the hash of SIGNED, and genTime lies inside
 * the authority's validity window (a fraction past valid_to is outside).
 * The
 * first authority for which all hold wins. When none does, the error is
 * that of the last authority tried (WB_EVERIFY), naming why.
 */
int timestamp_verify(const unsigned char *der, size_t der_len,
		     const unsigned char *signed_bytes, size_t signed_len,
		     const struct timestamp_authority *tsas, size_t ntsas,
		     struct timestamp_result *res, struct wb_err *e);

/*
 * Verify DER, a bare TimeStampToken (a CMS ContentInfo; no TimeStampResp
 * around it), over SIGNED (Authenticode: the signature value of the
 * signer it countersigns) with the checks of the token timestamp_verify
 * makes: the imprint algorithm is SHA-256/384/512, the token's version,
 * its signature with the ESS signing-certificate attribute bound to the
 * signer, the signer's chain to ROOTS at genTime with the time-stamping
 * purpose (timeStamping EKU, critical and sole), the message imprint. The
 * Sigstore-only checks (the authority's own certificate, its validity
 * window) have no counterpart: ROOTS is a set of trust anchors, nothing
 * more. ROOTS stays the caller's, its check time as before. A signer that
 * does not chain is "timestamp authority 'SUBJECT' is not trusted: WHY"
 * (WB_EVERIFY). res->tsa_index is 0.
 */
int timestamp_verify_token(const unsigned char *der, size_t der_len,
			   const unsigned char *signed_bytes, size_t signed_len,
			   X509_STORE *roots, struct timestamp_result *res, struct wb_err *e);

/* Read genTime from DER without verifying anything (for messages only).
 * Returns 0, or -1 with WB_EUSAGE when it does not parse. */
int timestamp_peek_time(const unsigned char *der, size_t der_len,
			int64_t *gen_time, struct wb_err *e);

#endif
