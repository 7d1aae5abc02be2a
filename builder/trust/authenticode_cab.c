/*
 * Authenticode for cabinet files (.cab, and .msu, which is a cabinet):
 * the header, the signature's place and the cabinet hash (authenticode.h;
 * docs/authenticode.md). Every offset read from the file is checked
 * against the file size before use.
 *
 * The layout is MS-CAB's CFHEADER. A signed cabinet sets
 * cfhdrRESERVE_PRESENT and carries a 20-byte abReserve whose first word is
 * 0x00100000, then the signature's file offset and size; the signature
 * (a PKCS#7 SignedData) ends the file. Which bytes are hashed is what
 * osslsigncode's cab.c (cab_digest_calc) and Windows agree on: the
 * signature "MSCF", bytes 8-33 (cbCabinet through setID; reserved1,
 * iCabinet and the reserve sizes are not), bytes 56-59 of abReserve, and
 * everything from byte 60 up to the signature (the next-cabinet names, the
 * CFFOLDER entries, the CFFILE entries and the data blocks).
 *
 * @where where Authenticode is checked (PE, MSI, cabinet; PKCS#7, timestamp,
 *   chain, EKU, publisher; docs/authenticode.md) -- CFHEADER, the signature's
 *   place, the cabinet hash
 */
#include <stdint.h>
#include <string.h>

#include <openssl/evp.h>

#include "trust/authenticode.h"
#include "trust/authenticode_int.h"

#define CAB_FLAG_PREV 0x0001
#define CAB_FLAG_NEXT 0x0002
#define CAB_FLAG_RESERVE 0x0004
#define CAB_SIG_RESERVE 20          /* cbCFHeader of a signed cabinet */
#define CAB_SIG_MAGIC 0x00100000u   /* abReserve's first word */
#define CAB_NAME_MAX 256            /* MS-CAB: at most 255 bytes and a NUL */

/* A NUL-terminated name at *OFF (at most CAB_NAME_MAX bytes, ending before
 * END); *OFF moves past it. */
static int cab_name(const unsigned char *d, size_t end, size_t *off,
		    const char *what, struct wb_err *e)
{
	for (size_t i = 0; i < CAB_NAME_MAX && *off + i < end; i++) {
		if (!d[*off + i]) {
			*off += i + 1;
			return 0;
		}
	}
	return wb_error(e, WB_EUSAGE, "cabinet header: %s at offset %zu is not a terminated name",
			what, *off);
}

int authenticode_cab_parse(const unsigned char *d, size_t len,
			   struct authenticode_cab *cab, struct wb_err *e)
{
	size_t off, sigoff, siglen, coff;
	uint16_t nfold;

	memset(cab, 0, sizeof(*cab));
	if (len < 36 || memcmp(d, "MSCF", 4))
		return wb_error(e, WB_EUSAGE, "not a cabinet file (no MSCF header)");
	if (ac_le32(d + 4))
		return wb_error(e, WB_EUSAGE, "cabinet header: reserved1 is 0x%08x, not 0",
				ac_le32(d + 4));
	if (d[25] != 1)
		return wb_error(e, WB_EUSAGE, "cabinet format version %u.%u is not 1.x",
				d[25], d[24]);
	cab->flags = ac_le16(d + 30);
	nfold = ac_le16(d + 26);
	coff = ac_le32(d + 16);
	/* osslsigncode (cab.c) cannot hash a continued cabinet either: where
	 * the previous cabinet's names lie is not covered consistently */
	if (cab->flags & CAB_FLAG_PREV)
		return wb_error(e, WB_EUSAGE,
				"cabinet continues another cabinet (multi-volume), which winbuild does not verify");
	off = 36;
	if (cab->flags & CAB_FLAG_RESERVE) {
		if (len < 60 || ac_le32(d + 36) != CAB_SIG_RESERVE ||
		    ac_le32(d + 40) != CAB_SIG_MAGIC)
			return wb_error(e, WB_EUSAGE,
					"cabinet reserve area (%u header bytes) is not an Authenticode signature header",
					len < 40 ? 0u : ac_le16(d + 36));
		sigoff = ac_le32(d + 44);
		siglen = ac_le32(d + 48);
		off = 60;
		if (!sigoff != !siglen)
			return wb_error(e, WB_EUSAGE,
					"cabinet signature header is inconsistent (offset %zu, %zu bytes)",
					sigoff, siglen);
		if (siglen) {
			if (sigoff < off || !ac_in_bounds(len, sigoff, siglen))
				return wb_error(e, WB_EUSAGE,
						"cabinet signature (offset %zu, %zu bytes) lies outside the file (%zu bytes)",
						sigoff, siglen, len);
			if (sigoff + siglen != len)
				return wb_error(e, WB_EVERIFY,
						"%zu bytes after the cabinet signature are not covered by the signature",
						len - sigoff - siglen);
			cab->sig_off = sigoff;
			cab->sig_len = siglen;
		}
	}
	cab->end = cab->sig_len ? cab->sig_off : len;
	if (cab->flags & CAB_FLAG_NEXT) {
		if (cab_name(d, cab->end, &off, "szCabinetNext", e) ||
		    cab_name(d, cab->end, &off, "szDiskNext", e))
			return -1;
	}
	/* each CFFOLDER is 8 bytes: a signed header leaves cbCFFolder 0 */
	if (!ac_in_bounds(cab->end, off, (size_t)nfold * 8) || off + (size_t)nfold * 8 != coff)
		return wb_error(e, WB_EUSAGE,
				"cabinet header: %u folders from offset %zu do not end at coffFiles (%zu)",
				nfold, off, coff);
	return 0;
}

int authenticode_cab_digest(const unsigned char *d, size_t len,
			    const struct authenticode_cab *cab, const char *mdname,
			    unsigned char *out, unsigned *outlen, struct wb_err *e)
{
	const EVP_MD *md = ac_md_by_name(mdname, e);
	EVP_MD_CTX *c;
	int ok;

	if (!md)
		return -1;
	if (!cab->sig_len || cab->end < 60 || cab->end > len)
		return wb_error(e, WB_EUSAGE, "cabinet has no signature header");
	c = EVP_MD_CTX_new();
	ok = c && EVP_DigestInit_ex(c, md, NULL) &&
	     EVP_DigestUpdate(c, d, 4) &&                 /* "MSCF" */
	     EVP_DigestUpdate(c, d + 8, 26) &&            /* cbCabinet..setID */
	     EVP_DigestUpdate(c, d + 56, cab->end - 56) && /* abReserve[16..19], the rest */
	     EVP_DigestFinal_ex(c, out, outlen);
	EVP_MD_CTX_free(c);
	if (!ok)
		return wb_error(e, WB_EIO, "cannot compute the cabinet hash");
	return 0;
}
