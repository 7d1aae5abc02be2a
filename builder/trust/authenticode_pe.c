/*
 * Authenticode for PE files (.exe, .dll, .efi): the headers, the image hash
 * and the certificate table (authenticode.h; docs/authenticode.md). Every
 * offset read from the file is checked against the file size before use.
 *
 * @where where Authenticode is checked (PE, MSI, cabinet; PKCS#7, timestamp,
 *   chain, EKU, publisher; docs/authenticode.md) -- PE headers, image hash,
 *   certificate-table entries
 */
#include <stdint.h>
#include <string.h>

#include <openssl/evp.h>

#include "trust/authenticode.h"
#include "trust/authenticode_int.h"


int authenticode_pe_parse(const unsigned char *data, size_t len,
			  struct authenticode_pe *pe, struct wb_err *e)
{
	size_t lfanew, coff, opt, optsize, nrva_off, dd_off, sects;
	uint16_t magic, nsect;
	uint32_t nrva;

	memset(pe, 0, sizeof(*pe));
	if (len < 64 || data[0] != 'M' || data[1] != 'Z')
		return wb_error(e, WB_EUSAGE, "not a PE file (no MZ header)");
	lfanew = ac_le32(data + 0x3c);
	if (!ac_in_bounds(len, lfanew, 24))
		return wb_error(e, WB_EUSAGE,
				"PE header offset %zu lies outside the file (%zu bytes)",
				lfanew, len);
	if (memcmp(data + lfanew, "PE\0\0", 4))
		return wb_error(e, WB_EUSAGE, "no PE signature at offset %zu", lfanew);
	coff = lfanew + 4;
	nsect = ac_le16(data + coff + 2);
	optsize = ac_le16(data + coff + 16);
	opt = coff + 20;
	if (!ac_in_bounds(len, opt, optsize) || optsize < 2)
		return wb_error(e, WB_EUSAGE, "PE optional header (%zu bytes) is truncated",
				optsize);
	magic = ac_le16(data + opt);
	if (magic == 0x10b) {
		nrva_off = 92;
		dd_off = 96;
	} else if (magic == 0x20b) {
		pe->pe32plus = 1;
		nrva_off = 108;
		dd_off = 112;
	} else {
		return wb_error(e, WB_EUSAGE, "unknown PE optional header magic 0x%x",
				magic);
	}
	if (optsize < dd_off)
		return wb_error(e, WB_EUSAGE,
				"PE optional header too short (%zu bytes) for its magic",
				optsize);
	sects = opt + optsize;
	if (!ac_in_bounds(len, sects, (size_t)nsect * 40))
		return wb_error(e, WB_EUSAGE, "PE section table (%u sections) is truncated",
				nsect);
	pe->checksum_off = opt + 64;
	nrva = ac_le32(data + opt + nrva_off);
	if (nrva < 5 || optsize < dd_off + 5 * 8)
		return 0;  /* no certificate table entry: cannot be signed */
	pe->certdir_off = opt + dd_off + 4 * 8;
	pe->cert_off = ac_le32(data + pe->certdir_off);
	pe->cert_len = ac_le32(data + pe->certdir_off + 4);
	if (!pe->cert_off && !pe->cert_len)
		return 0;
	if (pe->cert_off < sects + (size_t)nsect * 40 ||
	    !ac_in_bounds(len, pe->cert_off, pe->cert_len))
		return wb_error(e, WB_EUSAGE,
				"certificate table (offset %zu, %zu bytes) lies outside the file (%zu bytes)",
				pe->cert_off, pe->cert_len, len);
	if (pe->cert_off + pe->cert_len != len)
		return wb_error(e, WB_EVERIFY,
				"%zu bytes after the certificate table are not covered by the signature",
				len - pe->cert_off - pe->cert_len);
	if (pe->cert_len < 8)
		return wb_error(e, WB_EUSAGE, "certificate table of %zu bytes is too short",
				pe->cert_len);
	return 0;
}

int authenticode_pe_digest(const unsigned char *data, size_t len,
			   const struct authenticode_pe *pe, const char *mdname,
			   unsigned char *out, unsigned *outlen,
			   struct wb_err *e)
{
	const EVP_MD *md = ac_md_by_name(mdname, e);
	EVP_MD_CTX *c;
	size_t end = pe->cert_len ? pe->cert_off : len;
	int ok;

	if (!md)
		return -1;
	if (!pe->certdir_off || pe->checksum_off + 4 > pe->certdir_off ||
	    pe->certdir_off + 8 > end)
		return wb_error(e, WB_EUSAGE, "PE file has no certificate table entry");
	c = EVP_MD_CTX_new();
	ok = c && EVP_DigestInit_ex(c, md, NULL) &&
	     EVP_DigestUpdate(c, data, pe->checksum_off) &&
	     EVP_DigestUpdate(c, data + pe->checksum_off + 4,
			      pe->certdir_off - pe->checksum_off - 4) &&
	     EVP_DigestUpdate(c, data + pe->certdir_off + 8,
			      end - pe->certdir_off - 8) &&
	     EVP_DigestFinal_ex(c, out, outlen);
	EVP_MD_CTX_free(c);
	if (!ok)
		return wb_error(e, WB_EIO, "cannot compute the PE image hash");
	return 0;
}

#define PE_WIN_CERT_REVISION 0x0200
#define PE_WIN_CERT_PKCS7 0x0002

int authenticode_pe_cert_next(const unsigned char *data, const struct authenticode_pe *pe,
			      size_t *pos, const unsigned char **sig, size_t *siglen,
			      struct wb_err *e)
{
	const unsigned char *wc;
	uint32_t dwlen;

	/* fewer than 8 bytes left: the padding after the last entry */
	if (!pe->cert_len || *pos >= pe->cert_len || pe->cert_len - *pos < 8)
		return 0;
	wc = data + pe->cert_off + *pos;
	dwlen = ac_le32(wc);
	if (dwlen < 8 || dwlen > pe->cert_len - *pos)
		return wb_error(e, WB_EUSAGE,
				"WIN_CERTIFICATE length %u at offset %zu does not fit the certificate table (%zu bytes)",
				dwlen, *pos, pe->cert_len);
	if (ac_le16(wc + 4) != PE_WIN_CERT_REVISION || ac_le16(wc + 6) != PE_WIN_CERT_PKCS7)
		return wb_error(e, WB_EUSAGE,
				"WIN_CERTIFICATE is not a PKCS#7 signature (revision 0x%x, type %u)",
				ac_le16(wc + 4), ac_le16(wc + 6));
	*sig = wc + 8;
	*siglen = dwlen - 8;
	/* entries are 8-byte aligned (PE format, "The Attribute Certificate
	 * Table"); the last one's padding may be missing */
	*pos += ((size_t)dwlen + 7) & ~(size_t)7;
	return 1;
}
