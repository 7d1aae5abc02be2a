/*
 * Streaming digests over OpenSSL EVP: one pass over the bytes computes every
 * digest that is needed (SHA-256 always; SHA-512 and BLAKE2b-512 on demand).
 */
#ifndef WB_DIGEST_H
#define WB_DIGEST_H

#include <stddef.h>

#include "lib/err.h"

enum digest_alg {
	DIGEST_SHA256 = 1 << 0,
	DIGEST_SHA512 = 1 << 1,
	DIGEST_BLAKE2B512 = 1 << 2, /* minisign prehash (ED signatures) */
	DIGEST_SHA1 = 1 << 3,       /* a Windows update's Catalog name (sha1
				       pin, never a verdict on its own) */
};

#define DIGEST_NSLOTS 4            /* md[] slots: bit index of enum digest_alg */

struct digest_result {
	unsigned algs;                 /* which fields below are set */
	unsigned char sha256[32];
	unsigned char sha512[64];
	unsigned char blake2b512[64];
	unsigned char sha1[20];
	unsigned long long size;       /* bytes fed */
};

struct digest_ctx {
	unsigned algs;
	void *md[DIGEST_NSLOTS];       /* EVP_MD_CTX *, by alg bit index */
	unsigned long long size;
};

/* SHA-256 is always computed, whatever ALGS says. */
int digest_init(struct digest_ctx *c, unsigned algs, struct wb_err *e);
void digest_update(struct digest_ctx *c, const void *data, size_t len);
/* digest_update with the context as a void pointer: the EACH callback of
 * bulk_copy (lib/bulk.h). */
void digest_update_cb(void *c, const void *data, size_t len);
/* For a pass spread over threads (fetch/sink.c): feed only slot I (a
 * no-op when that algorithm is off) and leave C->size to the caller. One
 * thread per slot; slots are independent. */
void digest_update_slot(struct digest_ctx *c, int i, const void *data, size_t len);
/* Finish into R and release the context. */
void digest_final(struct digest_ctx *c, struct digest_result *r);
/* Release without finishing (error paths). Safe on a zeroed ctx. */
void digest_release(struct digest_ctx *c);

/* Digest the whole content of the open file FD, from offset 0 whatever its
 * position (pread, 1 MiB at a time): the bytes of that descriptor, not of
 * whatever a path names later. WHAT names it in errors (WB_EIO). */
int digest_fd(int fd, const char *what, unsigned algs, struct digest_result *r,
	      struct wb_err *e);
/* digest_fd over the file at PATH. */
int digest_file(const char *path, unsigned algs, struct digest_result *r,
		struct wb_err *e);

/* Lowercase hex of LEN bytes into OUT (2*LEN+1 bytes). */
void digest_hex(const unsigned char *bytes, size_t len, char *out);
/* Parse exactly 2*LEN hex digits (either case); 0 on success, -1 otherwise. */
int digest_unhex(const char *hex, unsigned char *out, size_t len);

/* Constant-time comparison; 1 if equal. */
int digest_equal(const unsigned char *a, const unsigned char *b, size_t len);

#endif
