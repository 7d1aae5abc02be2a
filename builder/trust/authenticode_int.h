/*
 * Shared by the Authenticode sources only: authenticode.c (policy and the
 * PKCS#7 judgement), authenticode_pe.c, authenticode_msi.c and
 * authenticode_cab.c (one container format each). Not part of the API.
 */
#ifndef WB_AUTHENTICODE_INT_H
#define WB_AUTHENTICODE_INT_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>

#include "lib/err.h"

static inline uint16_t ac_le16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t ac_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* 1 if [off, off+n) lies inside a buffer of LEN bytes (no overflow). */
static inline int ac_in_bounds(size_t len, size_t off, size_t n)
{
	return off <= len && n <= len - off;
}

/* The digest MDNAME ("sha256"), or NULL with a WB_EUSAGE error. */
const EVP_MD *ac_md_by_name(const char *mdname, struct wb_err *e);

#endif
