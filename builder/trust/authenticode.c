/*
 * Authenticode verification on OpenSSL (see authenticode.h for the checks
 * and docs/authenticode.md for the formats). Every offset read from the file
 * is checked against the file size before use.
 */
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <strings.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pkcs7.h>
#include <openssl/ts.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "lib/buf.h"
#include "lib/hex.h"
#include "trust/authenticode.h"
#include "trust/digest.h"
#include "trust/timestamp.h"

#define OID_SPC_INDIRECT_DATA "1.3.6.1.4.1.311.2.1.4"
#define OID_SPC_PE_IMAGE_DATA "1.3.6.1.4.1.311.2.1.15"
#define OID_SPC_SIPINFO "1.3.6.1.4.1.311.2.1.30"
#define OID_RFC3161_TIMESTAMP "1.3.6.1.4.1.311.3.3.1"
#define OID_COUNTERSIGNATURE "1.2.840.113549.1.9.6"

#define PE_WIN_CERT_REVISION 0x0200
#define PE_WIN_CERT_PKCS7 0x0002

static uint16_t le16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* 1 if [off, off+n) lies inside a buffer of LEN bytes (no overflow). */
static int in_bounds(size_t len, size_t off, size_t n)
{
	return off <= len && n <= len - off;
}

void authenticode_result_release(struct authenticode_result *r)
{
	free(r->subject);
	free(r->issuer);
	memset(r, 0, sizeof(*r));
}

int authenticode_wants(const char *path)
{
	size_t n = strlen(path);

	return n > 4 && (!strcasecmp(path + n - 4, ".exe") ||
			 !strcasecmp(path + n - 4, ".dll") ||
			 !strcasecmp(path + n - 4, ".msi"));
}

/* ---- PE ---- */

int authenticode_pe_parse(const unsigned char *data, size_t len,
			  struct authenticode_pe *pe, struct wb_err *e)
{
	size_t lfanew, coff, opt, optsize, nrva_off, dd_off, sects;
	uint16_t magic, nsect;
	uint32_t nrva;

	memset(pe, 0, sizeof(*pe));
	if (len < 64 || data[0] != 'M' || data[1] != 'Z')
		return wb_error(e, WB_EUSAGE, "not a PE file (no MZ header)");
	lfanew = le32(data + 0x3c);
	if (!in_bounds(len, lfanew, 24))
		return wb_error(e, WB_EUSAGE,
				"PE header offset %zu lies outside the file (%zu bytes)",
				lfanew, len);
	if (memcmp(data + lfanew, "PE\0\0", 4))
		return wb_error(e, WB_EUSAGE, "no PE signature at offset %zu", lfanew);
	coff = lfanew + 4;
	nsect = le16(data + coff + 2);
	optsize = le16(data + coff + 16);
	opt = coff + 20;
	if (!in_bounds(len, opt, optsize) || optsize < 2)
		return wb_error(e, WB_EUSAGE, "PE optional header (%zu bytes) is truncated",
				optsize);
	magic = le16(data + opt);
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
	if (!in_bounds(len, sects, (size_t)nsect * 40))
		return wb_error(e, WB_EUSAGE, "PE section table (%u sections) is truncated",
				nsect);
	pe->checksum_off = opt + 64;
	nrva = le32(data + opt + nrva_off);
	if (nrva < 5 || optsize < dd_off + 5 * 8)
		return 0;  /* no certificate table entry: cannot be signed */
	pe->certdir_off = opt + dd_off + 4 * 8;
	pe->cert_off = le32(data + pe->certdir_off);
	pe->cert_len = le32(data + pe->certdir_off + 4);
	if (!pe->cert_off && !pe->cert_len)
		return 0;
	if (pe->cert_off < sects + (size_t)nsect * 40 ||
	    !in_bounds(len, pe->cert_off, pe->cert_len))
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

static const EVP_MD *md_by_name(const char *mdname, struct wb_err *e)
{
	const EVP_MD *md = EVP_get_digestbyname(mdname);

	if (!md)
		wb_error(e, WB_EUSAGE, "unknown digest '%s'", mdname);
	return md;
}

int authenticode_pe_digest(const unsigned char *data, size_t len,
			   const struct authenticode_pe *pe, const char *mdname,
			   unsigned char *out, unsigned *outlen,
			   struct wb_err *e)
{
	const EVP_MD *md = md_by_name(mdname, e);
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

/* ---- MSI: a small compound-file (CFB) reader ---- */

#define CFB_ENDOFCHAIN 0xfffffffeu
#define CFB_FREESECT 0xffffffffu
#define CFB_NOSTREAM 0xffffffffu
#define CFB_MAXREGSECT 0xfffffffau
#define CFB_DIR_STORAGE 1
#define CFB_DIR_STREAM 2
#define CFB_DIR_ROOT 5
#define CFB_MAX_DEPTH 32

struct cfb {
	const unsigned char *d;
	size_t len;
	size_t ssz;              /* sector size */
	size_t cutoff;           /* mini stream cutoff */
	uint32_t *fat;
	size_t nfat;
	uint32_t *minifat;
	size_t nminifat;
	unsigned char *dir;      /* directory entries, 128 bytes each */
	size_t ndir;
	unsigned char *mini;     /* the mini stream (root entry's data) */
	size_t minilen;
	unsigned char *visited;  /* per directory entry, for the tree walk */
	unsigned long long budget; /* bytes we may still hash */
};

static void cfb_release(struct cfb *f)
{
	free(f->fat);
	free(f->minifat);
	free(f->dir);
	free(f->mini);
	free(f->visited);
}

/* Pointer to regular sector N (a whole sector; the last one may be short,
 * then *AVAIL says how much there is). */
static const unsigned char *cfb_sector(const struct cfb *f, uint32_t n,
				       size_t *avail)
{
	size_t off;

	if (n > CFB_MAXREGSECT)
		return NULL;
	off = ((size_t)n + 1) * f->ssz;
	if (off >= f->len)
		return NULL;
	*avail = f->len - off < f->ssz ? f->len - off : f->ssz;
	return f->d + off;
}

/*
 * Follow a chain from START through TABLE (NTABLE entries) and append
 * SIZE bytes to OUT (regular sectors when MINI is 0, else 64-byte mini
 * sectors of the mini stream). Loops and short chains are errors.
 */
static int cfb_chain(struct cfb *f, uint32_t start, unsigned long long size,
		     int mini, struct buf *out, struct wb_err *e)
{
	const uint32_t *table = mini ? f->minifat : f->fat;
	size_t ntable = mini ? f->nminifat : f->nfat;
	size_t unit = mini ? 64 : f->ssz, steps = 0;
	uint32_t s = start;

	if (size > f->len)
		return wb_error(e, WB_EUSAGE, "MSI stream size %llu exceeds the file", size);
	while (size) {
		const unsigned char *p;
		size_t avail, n;

		if (s >= ntable || steps++ > ntable)
			return wb_error(e, WB_EUSAGE, "MSI sector chain is broken or loops");
		if (mini) {
			if (!in_bounds(f->minilen, (size_t)s * 64, 64))
				return wb_error(e, WB_EUSAGE, "MSI mini sector %u is outside the mini stream", s);
			p = f->mini + (size_t)s * 64;
			avail = 64;
		} else if (!(p = cfb_sector(f, s, &avail))) {
			return wb_error(e, WB_EUSAGE, "MSI sector %u is outside the file", s);
		}
		n = size < unit ? (size_t)size : unit;
		if (n > avail)
			return wb_error(e, WB_EUSAGE, "MSI sector %u is truncated", s);
		buf_add(out, p, n);
		size -= n;
		s = table[s];
	}
	return 0;
}

static int cfb_open(struct cfb *f, const unsigned char *d, size_t len,
		    struct wb_err *e)
{
	static const unsigned char magic[8] = { 0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1 };
	struct buf b = BUF_INIT;
	uint32_t nfatsect, difat, ndifat, s;
	size_t per, have = 0, maxsect;
	uint16_t shift;
	const unsigned char *root;
	int ret = -1;

	memset(f, 0, sizeof(*f));
	f->d = d;
	f->len = len;
	if (len < 512 || memcmp(d, magic, 8))
		return wb_error(e, WB_EUSAGE, "not a compound file (MSI) header");
	shift = le16(d + 0x1e);
	if ((shift != 9 && shift != 12) || le16(d + 0x20) != 6 || le16(d + 0x1c) != 0xfffe)
		return wb_error(e, WB_EUSAGE, "unsupported compound file sector sizes");
	f->ssz = (size_t)1 << shift;
	f->cutoff = le32(d + 0x38);
	if (f->cutoff != 4096)
		return wb_error(e, WB_EUSAGE, "unsupported mini stream cutoff %zu", f->cutoff);
	maxsect = len / f->ssz + 1;
	nfatsect = le32(d + 0x2c);
	difat = le32(d + 0x44);
	ndifat = le32(d + 0x48);
	if (nfatsect > maxsect || ndifat > maxsect)
		return wb_error(e, WB_EUSAGE, "compound file FAT is larger than the file");
	per = f->ssz / 4;
	f->fat = xcalloc((size_t)nfatsect * per + 1, sizeof(*f->fat));
	/* the first 109 FAT sector numbers are in the header, then DIFAT sectors */
	for (size_t i = 0; i < 109 && have < nfatsect; i++)
		buf_add(&b, d + 0x4c + i * 4, 4), have++;
	for (uint32_t k = 0; have < nfatsect; k++) {
		const unsigned char *p;
		size_t avail;

		if (k >= ndifat || !(p = cfb_sector(f, difat, &avail)) || avail < f->ssz) {
			wb_error(e, WB_EUSAGE, "compound file DIFAT chain is broken");
			goto out;
		}
		for (size_t i = 0; i + 1 < per && have < nfatsect; i++)
			buf_add(&b, p + i * 4, 4), have++;
		difat = le32(p + f->ssz - 4);
	}
	for (size_t i = 0; i < nfatsect; i++) {
		size_t avail = 0;
		const unsigned char *p = cfb_sector(f, le32((const unsigned char *)b.ptr + i * 4), &avail);

		if (!p || avail < f->ssz) {
			wb_error(e, WB_EUSAGE, "compound file FAT sector is outside the file");
			goto out;
		}
		for (size_t j = 0; j < per; j++)
			f->fat[f->nfat++] = le32(p + j * 4);
	}
	buf_reset(&b);
	/* directory: a regular chain with no size; read until ENDOFCHAIN */
	s = le32(d + 0x30);
	for (size_t steps = 0; s != CFB_ENDOFCHAIN; steps++) {
		const unsigned char *p;
		size_t avail;

		if (s >= f->nfat || steps > f->nfat || !(p = cfb_sector(f, s, &avail)) ||
		    avail < f->ssz) {
			wb_error(e, WB_EUSAGE, "compound file directory chain is broken");
			goto out;
		}
		buf_add(&b, p, f->ssz);
		s = f->fat[s];
	}
	f->ndir = b.len / 128;
	f->dir = (unsigned char *)buf_detach(&b, NULL);
	if (!f->ndir || f->dir[0x42] != CFB_DIR_ROOT) {
		wb_error(e, WB_EUSAGE, "compound file has no root entry");
		goto out;
	}
	f->visited = xcalloc(f->ndir, 1);
	f->visited[0] = 1;   /* the root is nobody's child */
	/* the mini FAT and the mini stream */
	s = le32(d + 0x3c);
	if (s != CFB_ENDOFCHAIN && le32(d + 0x40)) {
		unsigned long long n = (unsigned long long)le32(d + 0x40) * f->ssz;
		if (cfb_chain(f, s, n, 0, &b, e))
			goto out;
		f->nminifat = b.len / 4;
		f->minifat = xcalloc(f->nminifat + 1, sizeof(*f->minifat));
		for (size_t i = 0; i < f->nminifat; i++)
			f->minifat[i] = le32((const unsigned char *)b.ptr + i * 4);
		buf_reset(&b);
	}
	root = f->dir;
	if (le32(root + 0x74) != CFB_ENDOFCHAIN) {
		if (cfb_chain(f, le32(root + 0x74), le32(root + 0x78), 0, &b, e))
			goto out;
		f->minilen = b.len;
		f->mini = (unsigned char *)buf_detach(&b, NULL);
	}
	f->budget = 4ULL * len + 65536;
	ret = 0;
out:
	buf_release(&b);
	if (ret)
		cfb_release(f);
	return ret;
}

/* Contents of the stream in directory entry ENT, appended to OUT. */
static int cfb_stream(struct cfb *f, const unsigned char *ent, struct buf *out,
		      struct wb_err *e)
{
	unsigned long long size = le32(ent + 0x78);  /* v3 ignores the high half */

	if (f->ssz == 4096)
		size |= (unsigned long long)le32(ent + 0x7c) << 32;
	if (size > f->budget)
		return wb_error(e, WB_EUSAGE, "MSI streams add up to more than the file holds");
	f->budget -= size;
	if (!size)
		return 0;
	return cfb_chain(f, le32(ent + 0x74), size, size < f->cutoff, out, e);
}

static const unsigned char cfb_name_ds[] = {
	0x05, 0, 'D', 0, 'i', 0, 'g', 0, 'i', 0, 't', 0, 'a', 0, 'l', 0, 'S', 0,
	'i', 0, 'g', 0, 'n', 0, 'a', 0, 't', 0, 'u', 0, 'r', 0, 'e', 0, 0, 0
};
static const unsigned char cfb_name_dse[] = {
	0x05, 0, 'M', 0, 's', 0, 'i', 0, 'D', 0, 'i', 0, 'g', 0, 'i', 0, 't', 0,
	'a', 0, 'l', 0, 'S', 0, 'i', 0, 'g', 0, 'n', 0, 'a', 0, 't', 0, 'u', 0,
	'r', 0, 'e', 0, 'E', 0, 'x', 0, 0, 0
};

static int cfb_name_is(const unsigned char *ent, const unsigned char *name, size_t n)
{
	return le16(ent + 0x40) == n && !memcmp(ent, name, n);
}

/* The signing order: raw UTF-16LE name bytes (with the terminating NUL).
 * CTX is the struct cfb (qsort_r, so verification is thread-safe). */
static int cfb_cmp(const void *a, const void *b, void *ctx)
{
	const struct cfb *f = ctx;
	const unsigned char *ea = f->dir + (size_t)*(const uint32_t *)a * 128;
	const unsigned char *eb = f->dir + (size_t)*(const uint32_t *)b * 128;
	size_t la = le16(ea + 0x40), lb = le16(eb + 0x40);
	int d = memcmp(ea, eb, la < lb ? la : lb);

	if (d)
		return d;
	return la == lb ? 0 : la > lb ? -1 : 1;
}

/* The children of storage entry IDX (its red-black sibling tree). */
static int cfb_children(struct cfb *f, uint32_t idx, uint32_t **out, size_t *n,
			struct wb_err *e)
{
	uint32_t *stack = NULL, *kids = NULL;
	size_t nstack = 0, astack = 0, akids = 0;
	uint32_t c = le32(f->dir + (size_t)idx * 128 + 0x4c);

	*n = 0;
	if (c != CFB_NOSTREAM) {
		ALLOC_GROW(stack, 1, astack);
		stack[nstack++] = c;
	}
	while (nstack) {
		const unsigned char *ent;
		uint32_t k = stack[--nstack];
		uint16_t nl;

		if (k >= f->ndir || f->visited[k]) {
			free(stack);
			free(kids);
			return wb_error(e, WB_EUSAGE, "MSI directory tree is malformed (entry %u)", k);
		}
		f->visited[k] = 1;
		ent = f->dir + (size_t)k * 128;
		nl = le16(ent + 0x40);
		if (nl < 2 || nl > 64 || nl % 2 || ent[nl - 2] || ent[nl - 1]) {
			free(stack);
			free(kids);
			return wb_error(e, WB_EUSAGE, "MSI directory entry %u has a bad name", k);
		}
		ALLOC_GROW(kids, *n + 1, akids);
		kids[(*n)++] = k;
		ALLOC_GROW(stack, nstack + 2, astack);
		if (le32(ent + 0x44) != CFB_NOSTREAM)
			stack[nstack++] = le32(ent + 0x44);
		if (le32(ent + 0x48) != CFB_NOSTREAM)
			stack[nstack++] = le32(ent + 0x48);
	}
	free(stack);
	*out = kids;
	return 0;
}

static int cfb_hash_storage(struct cfb *f, uint32_t idx, int depth, EVP_MD_CTX *md,
			    struct buf *sig, int *dse, struct wb_err *e)
{
	uint32_t *kids = NULL;
	size_t n;
	int ret = 0;

	if (depth > CFB_MAX_DEPTH)
		return wb_error(e, WB_EUSAGE, "MSI storages nest deeper than %d", CFB_MAX_DEPTH);
	if (cfb_children(f, idx, &kids, &n, e))
		return -1;
	if (n > 1)
		qsort_r(kids, n, sizeof(*kids), cfb_cmp, f);
	for (size_t i = 1; i < n; i++)
		if (!cfb_cmp(&kids[i - 1], &kids[i], f)) {
			free(kids);
			return wb_error(e, WB_EUSAGE, "MSI storage holds two entries of the same name");
		}
	for (size_t i = 0; !ret && i < n; i++) {
		const unsigned char *ent = f->dir + (size_t)kids[i] * 128;
		struct buf b = BUF_INIT;

		if (depth == 0 && cfb_name_is(ent, cfb_name_ds, sizeof(cfb_name_ds))) {
			if (ent[0x42] == CFB_DIR_STREAM && sig)
				ret = cfb_stream(f, ent, sig, e);
			continue;
		}
		if (depth == 0 && cfb_name_is(ent, cfb_name_dse, sizeof(cfb_name_dse))) {
			*dse = 1;
			continue;
		}
		if (ent[0x42] == CFB_DIR_STREAM) {
			ret = cfb_stream(f, ent, &b, e);
			if (!ret && md && !EVP_DigestUpdate(md, b.ptr, b.len))
				ret = wb_error(e, WB_EIO, "cannot hash MSI stream");
		} else if (ent[0x42] == CFB_DIR_STORAGE) {
			ret = cfb_hash_storage(f, kids[i], depth + 1, md, NULL, dse, e);
		}
		buf_release(&b);
	}
	free(kids);
	if (!ret && md && !EVP_DigestUpdate(md, f->dir + (size_t)idx * 128 + 0x50, 16))
		ret = wb_error(e, WB_EIO, "cannot hash MSI class id");
	return ret;
}

int authenticode_msi_digest(const unsigned char *data, size_t len,
			    const char *mdname, unsigned char *out,
			    unsigned *outlen, unsigned char **sig,
			    size_t *siglen, struct wb_err *e)
{
	const EVP_MD *md = NULL;
	EVP_MD_CTX *c = NULL;
	struct cfb f;
	struct buf s = BUF_INIT;
	int dse = 0, ret = -1;

	if (sig) {
		*sig = NULL;
		*siglen = 0;
	}
	if (mdname && !(md = md_by_name(mdname, e)))
		return -1;
	if (cfb_open(&f, data, len, e))
		return -1;
	if (md && (!(c = EVP_MD_CTX_new()) || !EVP_DigestInit_ex(c, md, NULL))) {
		wb_error(e, WB_EIO, "cannot set up the MSI hash");
		goto out;
	}
	if (cfb_hash_storage(&f, 0, 0, c, sig ? &s : NULL, &dse, e))
		goto out;
	if (dse) {
		wb_error(e, WB_EUSAGE,
			 "MSI carries MsiDigitalSignatureEx (signed metadata), which winbuild does not verify");
		goto out;
	}
	if (c && !EVP_DigestFinal_ex(c, out, outlen)) {
		wb_error(e, WB_EIO, "cannot finish the MSI hash");
		goto out;
	}
	if (sig && s.len) {
		*siglen = s.len;
		*sig = (unsigned char *)buf_detach(&s, NULL);
	}
	ret = 0;
out:
	EVP_MD_CTX_free(c);
	buf_release(&s);
	cfb_release(&f);
	return ret;
}

/* ---- OpenSSL helpers ---- */

/* The reason of OpenSSL's last error (static string), clearing the queue. */
static const char *ossl_reason(void)
{
	unsigned long err = ERR_peek_last_error();
	const char *r = err ? ERR_reason_error_string(err) : NULL;

	ERR_clear_error();
	return r ? r : "unknown error";
}

static char *name_rfc2253(const X509_NAME *n)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *p = NULL, *s;
	long len;

	if (!b)
		return xstrdup("?");
	X509_NAME_print_ex(b, n, 0, XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB);
	len = BIO_get_mem_data(b, &p);
	s = xstrndup(p ? p : "", len > 0 ? (size_t)len : 0);
	BIO_free(b);
	return s;
}

static void oid_text(const ASN1_OBJECT *o, char *out, size_t n)
{
	if (!o || OBJ_obj2txt(out, (int)n, o, 1) <= 0)
		snprintf(out, n, "?");
}

/*
 * Take one DER element of universal TAG from *P (*LEFT bytes), giving its
 * contents in C, CLEN and the whole element in TLV, TLVLEN. Refuses
 * indefinite lengths and lengths beyond the buffer.
 */
static int der_take(const unsigned char **p, long *left, int tag,
		    const unsigned char **c, long *clen,
		    const unsigned char **tlv, long *tlvlen)
{
	const unsigned char *q = *p;
	long len;
	int t, cls, r;

	if (*left <= 0)
		return -1;
	r = ASN1_get_object(&q, &len, &t, &cls, *left);
	if ((r & 0x80) || (r & 0x01) || cls != V_ASN1_UNIVERSAL || t != tag)
		return -1;
	*c = q;
	*clen = len;
	if (tlv) {
		*tlv = *p;
		*tlvlen = (long)(q - *p) + len;
	}
	*left -= (long)(q - *p) + len;
	*p = q + len;
	return 0;
}

struct spc {
	const unsigned char *inner;  /* SpcIndirectDataContent without its header */
	long inner_len;
	char data_oid[64];           /* SpcAttributeTypeAndOptionalValue.type */
	int md_nid;                  /* DigestInfo.digestAlgorithm */
	const unsigned char *digest;
	long digest_len;
};

static int der_oid(const unsigned char *tlv, long tlvlen, char *out, size_t n,
		   int *nid)
{
	ASN1_OBJECT *o = d2i_ASN1_OBJECT(NULL, &tlv, tlvlen);

	if (!o)
		return -1;
	oid_text(o, out, n);
	if (nid)
		*nid = OBJ_obj2nid(o);
	ASN1_OBJECT_free(o);
	return 0;
}

/* SpcIndirectDataContent ::= SEQUENCE { data SEQUENCE { type OID, value ANY
 * OPTIONAL }, messageDigest SEQUENCE { SEQUENCE { OID, params }, OCTET
 * STRING } } */
static int spc_parse(const unsigned char *der, long len, struct spc *s)
{
	const unsigned char *p = der, *c, *tlv, *q, *r;
	long left = len, cl, tl, ql, rl, l2, l3;
	char alg[64];

	memset(s, 0, sizeof(*s));
	if (der_take(&p, &left, V_ASN1_SEQUENCE, &c, &cl, NULL, NULL) || left)
		return -1;
	s->inner = c;
	s->inner_len = cl;
	p = c;
	left = cl;
	if (der_take(&p, &left, V_ASN1_SEQUENCE, &q, &ql, NULL, NULL))
		return -1;
	l2 = ql;
	if (der_take(&q, &l2, V_ASN1_OBJECT, &r, &rl, &tlv, &tl) ||
	    der_oid(tlv, tl, s->data_oid, sizeof(s->data_oid), NULL))
		return -1;
	if (der_take(&p, &left, V_ASN1_SEQUENCE, &q, &ql, NULL, NULL) || left)
		return -1;
	l2 = ql;
	if (der_take(&q, &l2, V_ASN1_SEQUENCE, &r, &rl, NULL, NULL))
		return -1;
	l3 = rl;
	if (der_take(&r, &l3, V_ASN1_OBJECT, &c, &cl, &tlv, &tl) ||
	    der_oid(tlv, tl, alg, sizeof(alg), &s->md_nid))
		return -1;
	if (der_take(&q, &l2, V_ASN1_OCTET_STRING, &s->digest, &s->digest_len,
		     NULL, NULL) || l2)
		return -1;
	return 0;
}

static int load_roots(const char *roots, X509_STORE **out, struct wb_err *e)
{
	X509_STORE *st = X509_STORE_new();
	int ok;

	*out = NULL;
	if (!st)
		return wb_error(e, WB_EIO, "cannot create a certificate store");
	if (roots) {
		if (access(roots, R_OK)) {
			X509_STORE_free(st);
			return wb_error(e, WB_EUSAGE, "cannot read roots '%s': %s", roots,
					strerror(errno));
		}
		ok = X509_STORE_load_file(st, roots);
	} else {
		ok = X509_STORE_set_default_paths(st);
	}
	if (!ok) {
		X509_STORE_free(st);
		return wb_error(e, WB_EUSAGE, "cannot load roots '%s': %s",
				roots ? roots : "(default)", ossl_reason());
	}
	*out = st;
	return 0;
}

/* Verify CERT's chain to STORE at time AT (0: now) for PURPOSE (0: none). */
static int chain_ok(X509_STORE *store, X509 *cert, STACK_OF(X509) *untrusted,
		    time_t at, int purpose, char *why, size_t whylen)
{
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	int ok = 0;

	if (!ctx || !X509_STORE_CTX_init(ctx, store, cert, untrusted)) {
		snprintf(why, whylen, "cannot set up chain verification");
		X509_STORE_CTX_free(ctx);
		return 0;
	}
	if (at)
		X509_VERIFY_PARAM_set_time(X509_STORE_CTX_get0_param(ctx), at);
	if (purpose)
		X509_STORE_CTX_set_purpose(ctx, purpose);
	ok = X509_verify_cert(ctx) == 1;
	if (!ok)
		snprintf(why, whylen, "%s",
			 X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx)));
	X509_STORE_CTX_free(ctx);
	ERR_clear_error();
	return ok;
}

/* The only signer certificate of P7 (borrowed), or NULL. */
static X509 *sole_signer(PKCS7 *p7)
{
	STACK_OF(X509) *s = PKCS7_get0_signers(p7, NULL, 0);
	X509 *x = NULL;

	if (s && sk_X509_num(s) == 1)
		x = sk_X509_value(s, 0);
	sk_X509_free(s);
	ERR_clear_error();
	return x;
}

static void format_time(time_t t, char out[21])
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, 21, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/*
 * An RFC 3161 timestamp token (DER of a ContentInfo) countersigning SI:
 * its message imprint is the hash of SI's signature value, and the token
 * passes the one RFC 3161 verifier (timestamp_verify_token in
 * trust/timestamp.c, Sigstore's too) with STORE's roots as its anchors.
 * Sets *AT to genTime.
 *
 * Stricter than `osslsigncode verify` (osslsigncode.c), which accepts a
 * SHA-1 imprint and a token without the ESS signing-certificate attribute
 * (RFC 3161 2.4.1 requires one; tests/cli/authenticode.bats shows both):
 * one verifier, the strict one, for every timestamp winbuild trusts.
 */
static int timestamp_rfc3161(const ASN1_TYPE *val, PKCS7_SIGNER_INFO *si,
			     X509_STORE *store, time_t *at, struct wb_err *e)
{
	struct timestamp_result r;

	if (val->type != V_ASN1_SEQUENCE)
		return wb_error(e, WB_EUSAGE, "timestamp countersignature is malformed");
	if (timestamp_verify_token(val->value.sequence->data,
				   (size_t)val->value.sequence->length,
				   si->enc_digest->data, (size_t)si->enc_digest->length,
				   store, &r, e) < 0)
		return -1;
	*at = (time_t)r.gen_time;
	return 0;
}

/* Find and verify a timestamp among SI's unsigned attributes. Returns 1
 * with *AT set, 0 when there is none, -1 when one is present but bad. */
static int find_timestamp(PKCS7_SIGNER_INFO *si, X509_STORE *store, time_t *at,
			  struct wb_err *e)
{
	STACK_OF(X509_ATTRIBUTE) *ua = si->unauth_attr;
	char oid[64];

	for (int i = 0; i < sk_X509_ATTRIBUTE_num(ua); i++) {
		X509_ATTRIBUTE *a = sk_X509_ATTRIBUTE_value(ua, i);
		ASN1_TYPE *v = X509_ATTRIBUTE_get0_type(a, 0);

		oid_text(X509_ATTRIBUTE_get0_object(a), oid, sizeof(oid));
		if (!v)
			continue;
		if (!strcmp(oid, OID_RFC3161_TIMESTAMP))
			return timestamp_rfc3161(v, si, store, at, e) ? -1 : 1;
		if (!strcmp(oid, OID_COUNTERSIGNATURE))
			return wb_error(e, WB_EUSAGE,
					"legacy (PKCS#9) timestamp countersignatures are not supported; re-timestamp with RFC 3161");
	}
	return 0;
}

static int publisher_allowed(const struct authenticode_policy *pol,
			     const char *subject, const char *oneline,
			     const char *thumb)
{
	if (!pol->npublishers)
		return 1;
	for (size_t i = 0; i < pol->npublishers; i++) {
		const char *p = pol->publishers[i];
		if (hex_is(p, 64, HEX_ANY_CASE)) {
			if (!strcasecmp(p, thumb))
				return 1;
		} else if (!strcmp(p, subject) || !strcmp(p, oneline)) {
			return 1;
		}
	}
	return 0;
}

/* ---- the signature ---- */

struct ac_file {
	const unsigned char *data;
	size_t len;
	enum authenticode_format format;
	struct authenticode_pe pe;
};

static int file_digest(const struct ac_file *f, const char *mdname,
		       unsigned char *out, unsigned *outlen, struct wb_err *e)
{
	if (f->format == AUTHENTICODE_PE)
		return authenticode_pe_digest(f->data, f->len, &f->pe, mdname, out,
					      outlen, e);
	return authenticode_msi_digest(f->data, f->len, mdname, out, outlen, NULL,
				       NULL, e);
}

static int verify_signed(const struct ac_file *f, const unsigned char *sig,
			 size_t siglen, const struct authenticode_policy *pol,
			 struct authenticode_result *res, struct wb_err *e)
{
	const unsigned char *p = sig;
	PKCS7 *p7 = NULL;
	X509_STORE *store = NULL;
	X509 *signer;
	BIO *in = NULL;
	STACK_OF(PKCS7_SIGNER_INFO) *sis;
	PKCS7_SIGNER_INFO *si;
	const ASN1_STRING *seq;
	struct spc spc;
	char oid[64], why[256], *oneline = NULL;
	unsigned char h[EVP_MAX_MD_SIZE], tp[32];
	unsigned hl = 0, tpl = 0;
	time_t at = 0;
	int ret = -1, ts;

	if (siglen > LONG_MAX || !(p7 = d2i_PKCS7(NULL, &p, (long)siglen)) ||
	    !PKCS7_type_is_signed(p7) || !p7->d.sign->contents) {
		wb_error(e, WB_EUSAGE, "signature is not a PKCS#7 SignedData structure");
		goto out;
	}
	oid_text(p7->d.sign->contents->type, oid, sizeof(oid));
	if (strcmp(oid, OID_SPC_INDIRECT_DATA) || !p7->d.sign->contents->d.other ||
	    p7->d.sign->contents->d.other->type != V_ASN1_SEQUENCE) {
		wb_error(e, WB_EUSAGE, "signature does not hold Authenticode content (%s)", oid);
		goto out;
	}
	seq = p7->d.sign->contents->d.other->value.sequence;
	if (spc_parse(seq->data, seq->length, &spc)) {
		wb_error(e, WB_EUSAGE, "Authenticode content (SpcIndirectDataContent) is malformed");
		goto out;
	}
	if (strcmp(spc.data_oid, f->format == AUTHENTICODE_PE ? OID_SPC_PE_IMAGE_DATA
							       : OID_SPC_SIPINFO)) {
		wb_error(e, WB_EVERIFY, "signature is for another kind of file (%s)",
			 spc.data_oid);
		goto out;
	}
	switch (spc.md_nid) {
	case NID_sha256: snprintf(res->digest, sizeof(res->digest), "sha256"); break;
	case NID_sha384: snprintf(res->digest, sizeof(res->digest), "sha384"); break;
	case NID_sha512: snprintf(res->digest, sizeof(res->digest), "sha512"); break;
	case NID_sha1:
	case NID_md5:
		wb_error(e, WB_EVERIFY, "signed digest uses %s, which winbuild refuses as weak",
			 OBJ_nid2sn(spc.md_nid));
		goto out;
	default:
		wb_error(e, WB_EUSAGE, "signed digest uses an unknown algorithm");
		goto out;
	}
	if (file_digest(f, res->digest, h, &hl, e))
		goto out;
	if ((long)hl != spc.digest_len || !digest_equal(h, spc.digest, hl)) {
		wb_error(e, WB_EVERIFY,
			 "%s hash does not match the signed digest (modified after signing)",
			 f->format == AUTHENTICODE_PE ? "PE image" : "MSI");
		goto out;
	}
	sis = PKCS7_get_signer_info(p7);
	if (sk_PKCS7_SIGNER_INFO_num(sis) != 1) {
		wb_error(e, WB_EUSAGE, "signature has %d signers, expected one",
			 sk_PKCS7_SIGNER_INFO_num(sis));
		goto out;
	}
	si = sk_PKCS7_SIGNER_INFO_value(sis, 0);
	if (!(signer = sole_signer(p7))) {
		wb_error(e, WB_EVERIFY, "signer certificate is missing from the signature");
		goto out;
	}
	res->subject = name_rfc2253(X509_get_subject_name(signer));
	res->issuer = name_rfc2253(X509_get_issuer_name(signer));
	oneline = X509_NAME_oneline(X509_get_subject_name(signer), NULL, 0);
	if (!X509_digest(signer, EVP_sha256(), tp, &tpl) || tpl != 32) {
		wb_error(e, WB_EIO, "cannot compute the signer thumbprint");
		goto out;
	}
	digest_hex(tp, 32, res->thumbprint);
	/* the signature covers the content's DER without its outer header */
	in = BIO_new_mem_buf(spc.inner, (int)spc.inner_len);
	if (!in || PKCS7_verify(p7, NULL, NULL, in, NULL, PKCS7_NOVERIFY) != 1) {
		wb_error(e, WB_EVERIFY, "PKCS#7 signature does not verify: %s",
			 ossl_reason());
		goto out;
	}
	if (load_roots(pol->roots, &store, e))
		goto out;
	if ((ts = find_timestamp(si, store, &at, e)) < 0) {
		wb_error_prefix(e, "signer '%s'", res->subject);
		goto out;
	}
	if (ts) {
		res->has_timestamp = 1;
		res->timestamp = at;
		format_time(at, res->timestamp_str);
	}
	if (!chain_ok(store, signer, p7->d.sign->cert, at, 0, why, sizeof(why))) {
		wb_error(e, WB_EVERIFY, "signer '%s' does not chain to a trusted root%s: %s",
			 res->subject, ts ? " at the timestamp's time" : "", why);
		goto out;
	}
	/* no EKU extension at all is not code signing (OpenSSL would treat
	 * such a certificate as good for every purpose) */
	if (!(X509_get_extension_flags(signer) & EXFLAG_XKUSAGE) ||
	    !(X509_get_extended_key_usage(signer) & XKU_CODE_SIGN)) {
		wb_error(e, WB_EVERIFY, "signer '%s' lacks the code-signing extended key usage",
			 res->subject);
		goto out;
	}
	if (!publisher_allowed(pol, res->subject, oneline ? oneline : "", res->thumbprint)) {
		wb_error(e, WB_EVERIFY,
			 "signer '%s' (sha256 %s) is not an allowed publisher",
			 res->subject, res->thumbprint);
		goto out;
	}
	for (size_t i = 0; i < pol->nalso; i++) {
		const struct authenticode_policy *a = &pol->also[i];
		X509_STORE *st2 = NULL;
		int ok;

		if (load_roots(a->roots, &st2, e))
			goto out;
		ok = chain_ok(st2, signer, p7->d.sign->cert, at, 0, why, sizeof(why));
		X509_STORE_free(st2);
		if (!ok) {
			wb_error(e, WB_EVERIFY,
				 "signer '%s' does not chain to a root of '%s' as well (each layer's roots must hold)%s: %s",
				 res->subject, a->roots ? a->roots : "(default)",
				 ts ? " at the timestamp's time" : "", why);
			goto out;
		}
		if (!publisher_allowed(a, res->subject, oneline ? oneline : "", res->thumbprint)) {
			wb_error(e, WB_EVERIFY,
				 "signer '%s' (sha256 %s) is not an allowed publisher under '%s' as well (each layer's publishers must hold)",
				 res->subject, res->thumbprint, a->roots ? a->roots : "(default)");
			goto out;
		}
	}
	res->is_signed = 1;
	ret = 0;
out:
	OPENSSL_free(oneline);
	BIO_free(in);
	X509_STORE_free(store);
	PKCS7_free(p7);
	ERR_clear_error();
	return ret;
}

static int verify_any(const unsigned char *data, size_t len,
		      const struct authenticode_policy *pol,
		      struct authenticode_result *res, struct wb_err *e)
{
	static const unsigned char cfb_magic[8] = { 0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1 };
	struct ac_file f;
	unsigned char *msisig = NULL;
	const unsigned char *sig = NULL;
	size_t siglen = 0;
	int ret;

	memset(&f, 0, sizeof(f));
	f.data = data;
	f.len = len;
	if (len >= 2 && data[0] == 'M' && data[1] == 'Z') {
		f.format = AUTHENTICODE_PE;
		if (authenticode_pe_parse(data, len, &f.pe, e))
			return -1;
		if (f.pe.cert_len) {
			const unsigned char *wc = data + f.pe.cert_off;
			uint32_t dwlen = le32(wc);

			if (dwlen < 8 || dwlen > f.pe.cert_len || f.pe.cert_len - dwlen >= 8)
				return wb_error(e, WB_EUSAGE,
						"WIN_CERTIFICATE length %u does not fit the certificate table (%zu bytes)",
						dwlen, f.pe.cert_len);
			if (le16(wc + 4) != PE_WIN_CERT_REVISION || le16(wc + 6) != PE_WIN_CERT_PKCS7)
				return wb_error(e, WB_EUSAGE,
						"WIN_CERTIFICATE is not a PKCS#7 signature (revision 0x%x, type %u)",
						le16(wc + 4), le16(wc + 6));
			sig = wc + 8;
			siglen = dwlen - 8;
		}
	} else if (len >= 8 && !memcmp(data, cfb_magic, 8)) {
		f.format = AUTHENTICODE_MSI;
		if (authenticode_msi_digest(data, len, NULL, NULL, NULL, &msisig, &siglen, e))
			return -1;
		sig = msisig;
	} else {
		return wb_error(e, WB_EUSAGE, "not a PE or MSI file");
	}
	res->format = f.format;
	if (!sig) {
		if (pol->require)
			return wb_error(e, WB_EVERIFY, "not signed (no Authenticode signature)");
		return 0;
	}
	ret = verify_signed(&f, sig, siglen, pol, res, e);
	free(msisig);
	return ret;
}

int authenticode_verify_mem(const unsigned char *data, size_t len,
			    const char *name,
			    const struct authenticode_policy *pol,
			    struct authenticode_result *res, struct wb_err *e)
{
	memset(res, 0, sizeof(*res));
	if (verify_any(data, len, pol, res, e) < 0) {
		wb_error_prefix(e, "'%s'", name);
		return -1;
	}
	return 0;
}

int authenticode_verify_file(const char *path,
			     const struct authenticode_policy *pol,
			     struct authenticode_result *res, struct wb_err *e)
{
	return authenticode_verify_path(path, path, pol, res, e);
}

int authenticode_verify_path(const char *path, const char *name,
			     const struct authenticode_policy *pol,
			     struct authenticode_result *res, struct wb_err *e)
{
	struct stat st;
	void *map;
	int fd, ret;

	memset(res, 0, sizeof(*res));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return wb_error(e, errno == ENOENT ? WB_EUSAGE : WB_EIO,
				"cannot open '%s': %s", name, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return wb_error(e, WB_EUSAGE, "'%s' is not a regular file", name);
	}
	if ((unsigned long long)st.st_size > AUTHENTICODE_FILE_MAX) {
		close(fd);
		return wb_error(e, WB_EUSAGE, "'%s' is larger than 4 GiB", name);
	}
	if (st.st_size == 0) {
		close(fd);
		return wb_error(e, WB_EUSAGE, "'%s': not a PE or MSI file (empty)", name);
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return wb_error(e, WB_EIO, "cannot map '%s': %s", name, strerror(errno));
	ret = authenticode_verify_mem(map, (size_t)st.st_size, name, pol, res, e);
	munmap(map, (size_t)st.st_size);
	return ret;
}
