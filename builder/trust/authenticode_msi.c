/*
 * Authenticode for MSI installers: a small compound-file (CFB) reader and
 * the MSI stream hash (authenticode.h; docs/authenticode.md). Every offset
 * read from the file is checked against the file size before use.
 *
 * @where where Authenticode is checked (PE, MSI, cabinet; PKCS#7, timestamp,
 *   chain, EKU, publisher; docs/authenticode.md) -- the MSI's hash
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "lib/buf.h"
#include "trust/authenticode.h"
#include "trust/authenticode_int.h"


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
			if (!ac_in_bounds(f->minilen, (size_t)s * 64, 64))
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

/* @where the MSI compound-file (CFB) reader */
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
	shift = ac_le16(d + 0x1e);
	if ((shift != 9 && shift != 12) || ac_le16(d + 0x20) != 6 || ac_le16(d + 0x1c) != 0xfffe)
		return wb_error(e, WB_EUSAGE, "unsupported compound file sector sizes");
	f->ssz = (size_t)1 << shift;
	f->cutoff = ac_le32(d + 0x38);
	if (f->cutoff != 4096)
		return wb_error(e, WB_EUSAGE, "unsupported mini stream cutoff %zu", f->cutoff);
	maxsect = len / f->ssz + 1;
	nfatsect = ac_le32(d + 0x2c);
	difat = ac_le32(d + 0x44);
	ndifat = ac_le32(d + 0x48);
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
		difat = ac_le32(p + f->ssz - 4);
	}
	for (size_t i = 0; i < nfatsect; i++) {
		size_t avail = 0;
		const unsigned char *p = cfb_sector(f, ac_le32((const unsigned char *)b.ptr + i * 4), &avail);

		if (!p || avail < f->ssz) {
			wb_error(e, WB_EUSAGE, "compound file FAT sector is outside the file");
			goto out;
		}
		for (size_t j = 0; j < per; j++)
			f->fat[f->nfat++] = ac_le32(p + j * 4);
	}
	buf_reset(&b);
	/* directory: a regular chain with no size; read until ENDOFCHAIN */
	s = ac_le32(d + 0x30);
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
	s = ac_le32(d + 0x3c);
	if (s != CFB_ENDOFCHAIN && ac_le32(d + 0x40)) {
		unsigned long long n = (unsigned long long)ac_le32(d + 0x40) * f->ssz;
		if (cfb_chain(f, s, n, 0, &b, e))
			goto out;
		f->nminifat = b.len / 4;
		f->minifat = xcalloc(f->nminifat + 1, sizeof(*f->minifat));
		for (size_t i = 0; i < f->nminifat; i++)
			f->minifat[i] = ac_le32((const unsigned char *)b.ptr + i * 4);
		buf_reset(&b);
	}
	root = f->dir;
	if (ac_le32(root + 0x74) != CFB_ENDOFCHAIN) {
		if (cfb_chain(f, ac_le32(root + 0x74), ac_le32(root + 0x78), 0, &b, e))
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
	unsigned long long size = ac_le32(ent + 0x78);  /* v3 ignores the high half */

	if (f->ssz == 4096)
		size |= (unsigned long long)ac_le32(ent + 0x7c) << 32;
	if (size > f->budget)
		return wb_error(e, WB_EUSAGE, "MSI streams add up to more than the file holds");
	f->budget -= size;
	if (!size)
		return 0;
	return cfb_chain(f, ac_le32(ent + 0x74), size, size < f->cutoff, out, e);
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
	return ac_le16(ent + 0x40) == n && !memcmp(ent, name, n);
}

/* The signing order: raw UTF-16LE name bytes (with the terminating NUL).
 * CTX is the struct cfb (qsort_r, so verification is thread-safe). */
static int cfb_cmp(const void *a, const void *b, void *ctx)
{
	const struct cfb *f = ctx;
	const unsigned char *ea = f->dir + (size_t)*(const uint32_t *)a * 128;
	const unsigned char *eb = f->dir + (size_t)*(const uint32_t *)b * 128;
	size_t la = ac_le16(ea + 0x40), lb = ac_le16(eb + 0x40);
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
	uint32_t c = ac_le32(f->dir + (size_t)idx * 128 + 0x4c);

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
		nl = ac_le16(ent + 0x40);
		if (nl < 2 || nl > 64 || nl % 2 || ent[nl - 2] || ent[nl - 1]) {
			free(stack);
			free(kids);
			return wb_error(e, WB_EUSAGE, "MSI directory entry %u has a bad name", k);
		}
		ALLOC_GROW(kids, *n + 1, akids);
		kids[(*n)++] = k;
		ALLOC_GROW(stack, nstack + 2, astack);
		if (ac_le32(ent + 0x44) != CFB_NOSTREAM)
			stack[nstack++] = ac_le32(ent + 0x44);
		if (ac_le32(ent + 0x48) != CFB_NOSTREAM)
			stack[nstack++] = ac_le32(ent + 0x48);
	}
	free(stack);
	*out = kids;
	return 0;
}

/* @where the MSI compound-file (CFB) reader */
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
	if (mdname && !(md = ac_md_by_name(mdname, e)))
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
