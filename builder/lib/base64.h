/*
 * Standard base64 (RFC 4648 section 4) decoding, strict: the alphabet
 * A-Z a-z 0-9 + /, '=' padding optional but, when present, exactly what
 * the length needs; unused trailing bits must be zero, so each byte string
 * has one accepted encoding (with or without padding). Line breaks (CR,
 * LF) are skipped, as Go's encoding/base64 does: Sigstore bundles are read
 * with it, and `base64`-wrapped values occur in real ones. Any other
 * whitespace is refused.
 */
#ifndef WB_BASE64_H
#define WB_BASE64_H

#include <stddef.h>

/*
 * Decode the N characters at S. Returns a malloc'd buffer (NUL-terminated
 * for convenience; the NUL is not counted) and stores its length in
 * *OUT_LEN, or returns NULL when S is not base64. The caller frees it.
 */
unsigned char *b64_decode(const char *s, size_t n, size_t *out_len);

/* The 6-bit value of base64 character C, or -1 when C is not one. */
int b64_value(unsigned char c);

#endif
