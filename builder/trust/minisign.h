/*
 * minisign signatures, verified with OpenSSL 3 (EVP Ed25519, BLAKE2b-512).
 * Fail-closed: everything is checked, nothing is trusted unchecked.
 *
 * Formats (minisign 0.11):
 *   public key: base64 of "Ed" || keyid[8] || pk[32]  (42 bytes)
 *     a .pub file is "untrusted comment: ...\n<base64>\n"
 *   signature file, four lines (LF or CRLF):
 *     untrusted comment: <text>
 *     base64("ED" or "Ed" || keyid[8] || sig[64])         (74 bytes)
 *     trusted comment: <text>
 *     base64(global_sig[64])  — Ed25519 over sig[64] || trusted comment text
 *   "ED": sig is over BLAKE2b-512(file); "Ed" (legacy): over the file itself.
 */
#ifndef WB_MINISIGN_H
#define WB_MINISIGN_H

#include <stddef.h>

#include "lib/err.h"

#define MINISIGN_KEYID_LEN 8
#define MINISIGN_PK_LEN 32
#define MINISIGN_SIG_LEN 64
#define MINISIGN_COMMENT_MAX 1024     /* minisign's COMMENTMAXBYTES */
#define MINISIGN_SIGFILE_MAX 8192     /* larger signature files are refused */

struct minisign_pubkey {
	unsigned char keyid[MINISIGN_KEYID_LEN];
	unsigned char pk[MINISIGN_PK_LEN];
	int allow_legacy;   /* accept "Ed" (non-prehashed) signatures */
	int file_check;     /* require trusted comment "file:" == artifact name */
};

struct minisign_sig {
	char alg[3];        /* "ED" or "Ed", NUL-terminated */
	unsigned char keyid[MINISIGN_KEYID_LEN];
	unsigned char sig[MINISIGN_SIG_LEN];
	char *untrusted_comment;   /* owned; text after "untrusted comment: " */
	char *trusted_comment;     /* owned; text after "trusted comment: " */
	unsigned char global_sig[MINISIGN_SIG_LEN];
};

/*
 * Parse a public key: either the bare base64 line or a whole .pub file.
 * Sets allow_legacy = 0 and file_check = 1; the caller adjusts them.
 * Rejects a wrong length, an algorithm other than "Ed", bad base64, and
 * small-order or non-canonical points. Errors are WB_EUSAGE.
 */
int minisign_pubkey_parse(const char *text, size_t len,
			  struct minisign_pubkey *pk, struct wb_err *e);

/* Key id as minisign prints it: 16 uppercase hex digits (little-endian
 * integer order, as `minisign -V` shows it; minisign drops leading zeros,
 * we keep them). OUT holds 17 bytes. */
void minisign_keyid_hex(const unsigned char keyid[MINISIGN_KEYID_LEN], char *out);

/* Parse a signature file (at most MINISIGN_SIGFILE_MAX bytes). Errors are
 * WB_EUSAGE and name the line. */
int minisign_sig_parse(const char *text, size_t len, struct minisign_sig *sig,
		       struct wb_err *e);
void minisign_sig_release(struct minisign_sig *sig);

struct minisign_result {
	int key_index;             /* index into KEYS of the key that verified */
	char keyid_hex[17];
	char *trusted_comment;     /* owned copy; NULL until verified */
};
void minisign_result_release(struct minisign_result *r);

/*
 * Verify SIG against the pinned KEYS (NKEYS of them): the key id selects
 * the key; the file signature and the global signature must both verify;
 * the trusted comment must hold no CR, NUL or control byte; when the key's
 * file_check is set, the trusted comment's "file:NAME" field must equal
 * EXPECT_NAME.
 *
 * BLAKE2B is BLAKE2b-512 of the file (for "ED"). For a legacy "Ed"
 * signature (only if the key allows it) the file is read from LEGACY_PATH.
 *
 * Returns 0 when verified, -1 otherwise with e->code WB_EVERIFY (did not
 * verify: wrong key id, bad signature, comment mismatch, legacy refused) or
 * WB_EUSAGE/WB_EIO (could not verify).
 */
int minisign_verify(const struct minisign_sig *sig,
		    const struct minisign_pubkey *keys, size_t nkeys,
		    const unsigned char blake2b[64], const char *legacy_path,
		    const char *expect_name, struct minisign_result *res,
		    struct wb_err *e);

/* An unencrypted minisign secret key (minisign -G -W). */
struct minisign_seckey {
	unsigned char keyid[MINISIGN_KEYID_LEN];
	unsigned char seed[32];
	unsigned char pk[MINISIGN_PK_LEN];
};

/* Parse a secret key file; an encrypted key is refused. Errors WB_EUSAGE.
 * (trust/minisign_sign.c) */
int minisign_seckey_parse(const char *text, size_t len, struct minisign_seckey *sk,
			  struct wb_err *e);

/* The text of a prehashed ("ED") signature file for a file whose
 * BLAKE2b-512 is BLAKE2B, with TRUSTED_COMMENT (one line). New string, or
 * NULL with E. */
char *minisign_sign_prehashed(const struct minisign_seckey *sk,
			      const unsigned char blake2b[64],
			      const char *trusted_comment,
			      const char *untrusted_comment, struct wb_err *e);

#endif
