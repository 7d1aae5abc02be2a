/*
 * Checksum files as upstreams publish them: a bare digest ("ab12...\n"), or
 * sha256sum/sha512sum format ("<hex>  name" or "<hex> *name", one or more
 * lines). In the latter form the line whose name equals FILENAME is used; a
 * file that names other files only is an error.
 */
#ifndef WB_CHECKSUM_H
#define WB_CHECKSUM_H

#include <stddef.h>

#include "lib/err.h"
#include "trust/digest.h"

#define CHECKSUM_FILE_MAX (1024 * 1024)

/*
 * Parse TEXT (LEN bytes, not NUL-terminated, may contain NULs: refuse them)
 * for a digest of ALG (DIGEST_SHA256 or DIGEST_SHA512) for FILENAME (a base
 * name). On success writes the raw digest to OUT (32 or 64 bytes) and
 * returns 0. Malformed input returns -1 with WB_EUSAGE ("could not check")
 * and a message that names what was wrong and on which line.
 */
int checksum_parse(const char *text, size_t len, const char *filename,
		   enum digest_alg alg, unsigned char *out, struct wb_err *e);

#endif
