/*
 * Authenticode: Windows' own signature on PE files (.exe, .dll, .efi), MSI
 * installers and cabinets (.cab, .msu), verified on the build host with
 * OpenSSL only (docs/authenticode.md).
 *
 * A file may carry several signatures: PE certificate-table entries, and
 * nested signatures (the unsigned attribute 1.3.6.1.4.1.311.2.4.1) in each.
 * Each is judged alone by the checks below; the policy's `signatures` says
 * whether all of them (AUTHENTICODE_SIGS_ALL) or one
 * (AUTHENTICODE_SIGS_ONE) must pass. A broken signature (malformed, or
 * whose digest or PKCS#7 signature does not match the file) fails the
 * file either way.
 *
 * What authenticode_verify_file() checks, in this order:
 *   1. the file parses (PE headers, the MSI compound-file structure, or
 *      the cabinet header), bounds-checked; a PE's certificate table and a
 *      cabinet's signature must end the file;
 *   2. the PKCS#7 SignedData holds SpcIndirectDataContent, whose digest
 *      equals the Authenticode hash of the file (PE image hash, MSI stream
 *      hash or cabinet hash) computed with the algorithm the signature names
 *      (SHA-256, SHA-384 or SHA-512; MD5 and SHA-1 are refused);
 *   3. the PKCS#7 signature over that content verifies with the signer's
 *      certificate;
 *   4. a timestamp countersignature, when present (RFC 3161 token in the
 *      unsigned attribute 1.3.6.1.4.1.311.3.3.1), verifies under the roots;
 *      its time becomes the verification time;
 *   5. the signer chains to one of the policy's roots (at the timestamp's
 *      time, or now: an expired signer passes only with a valid timestamp);
 *   6. the signer certificate carries the code-signing EKU;
 *   7. the signer is an allowed publisher (subject or SHA-256 thumbprint);
 *   8. for each further trust set of the policy (pol->also: the layers of a
 *      recipe, docs/recipes.md "Policy only tightens"), the signer chains
 *      to that set's roots too (at the same time as in 5) and is one of
 *      its publishers: the sets are ANDed, never ORed.
 *
 * Errors: WB_EVERIFY when a check failed (not signed, digest mismatch, bad
 * signature, untrusted chain, missing EKU, publisher not allowed, bytes
 * appended after the signature), WB_EUSAGE when the file could not be
 * checked (not a PE, MSI or cabinet, malformed structure, unsupported feature,
 * unreadable roots), WB_EIO on I/O errors.
 * Messages name the file.
 */
#ifndef WB_AUTHENTICODE_H
#define WB_AUTHENTICODE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "lib/err.h"

/* Files larger than this are refused (PE offsets are 32-bit anyway). */
#define AUTHENTICODE_FILE_MAX (4ULL * 1024 * 1024 * 1024 - 1)

enum authenticode_format {
	AUTHENTICODE_PE = 1,
	AUTHENTICODE_MSI,
	AUTHENTICODE_CAB,
};

/* Which of a file's signatures must satisfy the policy. */
enum authenticode_sigs {
	AUTHENTICODE_SIGS_ALL = 0,   /* every one (the default) */
	AUTHENTICODE_SIGS_ONE,       /* at least one; none may be broken */
};

struct authenticode_policy {
	int require;                 /* an unsigned file fails verification */
	const char *roots;           /* PEM file of trusted roots (code signing
				        and timestamping); NULL: OpenSSL's
				        default CA bundle */
	const char *const *publishers; /* allowed signers: subject (RFC 2253
				        "CN=…,O=…" or OpenSSL "/O=…/CN=…") or
				        SHA-256 thumbprint (64 hex digits);
				        none: any signer under the roots */
	size_t npublishers;
	const struct authenticode_policy *also; /* further trust sets, each of
				        which must hold too (roots and
				        publishers; their require is unused) */
	size_t nalso;
	enum authenticode_sigs signatures; /* of the top-level policy only */
	time_t at;                   /* judge a signature without a timestamp
				        at this time; 0: now (`sig
				        authenticode --at`) */
};

/* One signature of the file, judged alone. */
struct authenticode_signature {
	char *subject;               /* signer subject, RFC 2253 (owned; NULL
				        when the signature broke before) */
	char *issuer;                /* signer issuer (owned) */
	char thumbprint[65];
	char digest[16];             /* "sha1", "sha256", ... */
	int has_timestamp;
	time_t timestamp;
	char timestamp_str[21];
	unsigned entry;              /* PE certificate-table entry, from 1
				        (always 1 for MSI and cabinets) */
	int nested;                  /* 0: the entry's own; n: its n-th nested */
	int ok;                      /* satisfied the policy */
	char *error;                 /* why not (owned), NULL when ok */
};

struct authenticode_result {
	enum authenticode_format format;
	int is_signed;               /* 0: unsigned and the policy allowed it */
	char *subject;               /* signer subject, RFC 2253 (owned) */
	char *issuer;                /* signer issuer, RFC 2253 (owned) */
	char thumbprint[65];         /* SHA-256 of the signer cert, lower hex */
	char digest[16];             /* "sha256", "sha384", "sha512" */
	int has_timestamp;
	time_t timestamp;            /* the countersignature's time */
	char timestamp_str[21];      /* "2020-06-01T00:00:00Z" */
	/* the fields above are the first signature that satisfied the
	 * policy's; every signature, in file order: */
	struct authenticode_signature *signatures;
	size_t nsignatures;
};

/* Free the owned strings and zero R. Safe on a zeroed result. */
void authenticode_result_release(struct authenticode_result *r);

/* 1 if PATH's name ends in .exe, .dll, .msi, .cab or .msu (any case): a
 * file staging checks. */
int authenticode_wants(const char *path);

/* 1 if PATH's name ends in .exe, .dll or .msi (any case): a file the site
 * may sign (site_signing). Not cabinets: a site signature replaces the
 * upstream one, and an update package (.msu, .cab) must keep Microsoft's. */
int authenticode_signable(const char *path);

/*
 * Verify PATH (PE, MSI or cabinet, told apart by content) against POL and fill RES.
 * Returns 0 when verified (or unsigned and !pol->require: then
 * res->is_signed is 0), -1 otherwise (see the classes above).
 */
int authenticode_verify_file(const char *path,
			     const struct authenticode_policy *pol,
			     struct authenticode_result *res, struct wb_err *e);

/* The same, naming the file NAME (not PATH) in messages. */
int authenticode_verify_path(const char *path, const char *name,
			     const struct authenticode_policy *pol,
			     struct authenticode_result *res, struct wb_err *e);

/* The same on bytes in memory; NAME is used in messages. */
int authenticode_verify_mem(const unsigned char *data, size_t len,
			    const char *name,
			    const struct authenticode_policy *pol,
			    struct authenticode_result *res, struct wb_err *e);

struct json_t;

/*
 * The record of R (docs/manifest.md "authenticode"): signed, and when
 * signed the signer, issuer, thumbprint_sha256, digest and timestamp of
 * the signature that satisfied the policy; with several signatures also
 * "signatures", each with its entry, nested, ok, signer ... and error.
 */
struct json_t *authenticode_result_to_json(const struct authenticode_result *r);

/* ---- parser pieces, exposed for the unit tests ---- */

struct authenticode_pe {
	int pe32plus;            /* optional header magic 0x20b */
	size_t checksum_off;     /* file offset of OptionalHeader.CheckSum */
	size_t certdir_off;      /* file offset of data directory entry 4;
				    0 when the header has fewer than 5 */
	size_t cert_off;         /* certificate table: file offset, size */
	size_t cert_len;         /* both 0 when the file is unsigned */
};

/* Parse the PE headers of DATA (LEN bytes). Errors are WB_EUSAGE, except
 * WB_EVERIFY for bytes after the certificate table. */
int authenticode_pe_parse(const unsigned char *data, size_t len,
			  struct authenticode_pe *pe, struct wb_err *e);

/*
 * The Authenticode PE image hash with digest MDNAME ("sha256"): every byte
 * of the file in order, except the CheckSum field, the certificate table
 * directory entry and the certificate table. OUT holds 64 bytes; *OUTLEN
 * gets the digest size.
 */
int authenticode_pe_digest(const unsigned char *data, size_t len,
			   const struct authenticode_pe *pe, const char *mdname,
			   unsigned char *out, unsigned *outlen,
			   struct wb_err *e);

/*
 * The Authenticode MSI hash with digest MDNAME: the streams of the compound
 * file, storage by storage in the signing order (raw UTF-16LE name bytes),
 * leaving out the root's DigitalSignature and MsiDigitalSignatureEx, each
 * storage followed by its CLSID. When SIG is not NULL it receives a copy of
 * the DigitalSignature stream (caller frees *SIG; NULL when absent).
 * Errors are WB_EUSAGE.
 */
int authenticode_msi_digest(const unsigned char *data, size_t len,
			    const char *mdname, unsigned char *out,
			    unsigned *outlen, unsigned char **sig,
			    size_t *siglen, struct wb_err *e);

/*
 * The certificate-table entry of PE at *POS (start at 0): returns 1 with
 * its PKCS#7 bytes in SIG, SIGLEN and *POS moved to the next entry, 0
 * after the last, -1 (WB_EUSAGE) when an entry is malformed.
 */
int authenticode_pe_cert_next(const unsigned char *data, const struct authenticode_pe *pe,
			      size_t *pos, const unsigned char **sig, size_t *siglen,
			      struct wb_err *e);

struct authenticode_cab {
	uint16_t flags;          /* CFHEADER flags */
	size_t sig_off;          /* the signature: file offset, size */
	size_t sig_len;          /* both 0 when the cabinet is unsigned */
	size_t end;              /* where the signed bytes end (sig_off) */
};

/* Parse the cabinet header of DATA. Errors are WB_EUSAGE, except
 * WB_EVERIFY for bytes after the signature. */
int authenticode_cab_parse(const unsigned char *data, size_t len,
			   struct authenticode_cab *cab, struct wb_err *e);

/*
 * The Authenticode cabinet hash with digest MDNAME: bytes 0-3, 8-33 and
 * 56 up to the signature (authenticode_cab.c says why). Errors are
 * WB_EUSAGE.
 */
int authenticode_cab_digest(const unsigned char *data, size_t len,
			    const struct authenticode_cab *cab, const char *mdname,
			    unsigned char *out, unsigned *outlen, struct wb_err *e);

#endif
