/*
 * minisign verification on OpenSSL 3. The encodings minisign uses are read
 * here with a strict base64 decoder; the curve checks that OpenSSL does not
 * do (small-order points, non-canonical encodings) are done here before a
 * key or signature is handed to it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "lib/base64.h"
#include "lib/buf.h"
#include "trust/digest.h"
#include "trust/minisign.h"

#define MINISIGN_PUBFILE_MAX 4096
#define UNTRUSTED_PREFIX "untrusted comment: "
#define TRUSTED_PREFIX "trusted comment: "

/* ---- base64 (standard alphabet, '=' padding, nothing else) ---- */

/*
 * Decode exactly OUTLEN bytes from S (SLEN characters). The text must be
 * the canonical encoding: a multiple of 4 characters, padding only at the
 * end and only as much as needed, unused bits zero.
 */
static int b64_decode_exact(const char *s, size_t slen, unsigned char *out,
			    size_t outlen)
{
	size_t pad = (3 - outlen % 3) % 3, o = 0;

	if (slen % 4 || slen / 4 != (outlen + 2) / 3)
		return -1;
	for (size_t i = 0; i < slen; i += 4) {
		unsigned long acc = 0;
		int last = i + 4 == slen;

		for (size_t k = 0; k < 4; k++) {
			unsigned char c = (unsigned char)s[i + k];
			int v;

			if (last && k >= 4 - pad) {
				if (c != '=')
					return -1;
				v = 0;
			} else if ((v = b64_value(c)) < 0) {
				return -1;
			}
			acc = acc << 6 | (unsigned long)v;
		}
		for (int k = 2; k >= 0; k--) {
			unsigned char b = (unsigned char)(acc >> (8 * k));

			if (o < outlen)
				out[o++] = b;
			else if (b)
				return -1;   /* non-zero unused bits */
		}
	}
	return 0;
}

/* ---- curve checks ---- */

/*
 * The points of order dividing 8 on edwards25519, as y coordinates
 * (little-endian; the x sign bit is ignored by the comparison): y = 0
 * (order 4), 1 (identity), p-1 (order 2), the two order-8 y values (the
 * roots of d*y^4 + 2*y^2 - 1 = 0, from doubling onto an order-4 point),
 * and p, p+1 — the non-canonical encodings of 0 and 1 that fit in 255
 * bits. p = 2^255 - 19.
 */
static const unsigned char small_order_y[7][32] = {
	{ 0 },
	{ 0x01 },
	{ 0xec, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	  0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	  0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f },
	{ 0xed, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	  0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	  0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f },
	{ 0xee, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	  0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	  0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f },
	{ 0x26, 0xe8, 0x95, 0x8f, 0xc2, 0xb2, 0x27, 0xb0, 0x45, 0xc3, 0xf4,
	  0x89, 0xf2, 0xef, 0x98, 0xf0, 0xd5, 0xdf, 0xac, 0x05, 0xd3, 0xc6,
	  0x33, 0x39, 0xb1, 0x38, 0x02, 0x88, 0x6d, 0x53, 0xfc, 0x05 },
	{ 0xc7, 0x17, 0x6a, 0x70, 0x3d, 0x4d, 0xd8, 0x4f, 0xba, 0x3c, 0x0b,
	  0x76, 0x0d, 0x10, 0x67, 0x0f, 0x2a, 0x20, 0x53, 0xfa, 0x2c, 0x39,
	  0xcc, 0xc6, 0x4e, 0xc7, 0xfd, 0x77, 0x92, 0xac, 0x03, 0x7a },
};

/* The group order L = 2^252 + 27742317777372353535851937790883648493. */
static const unsigned char group_order[32] = {
	0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7,
	0xa2, 0xde, 0xf9, 0xde, 0x14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0x10,
};

/* Compare little-endian 256-bit numbers A and B: <0, 0, >0. */
static int le256_cmp(const unsigned char *a, const unsigned char *b)
{
	for (int i = 31; i >= 0; i--)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return 0;
}

/* 1 if the point encoding P has y < p (the x sign bit aside). */
static int point_is_canonical(const unsigned char p[32])
{
	unsigned char y[32];

	memcpy(y, p, 32);
	y[31] &= 0x7f;
	return le256_cmp(y, small_order_y[3]) < 0;   /* [3] is p */
}

static int point_has_small_order(const unsigned char p[32])
{
	for (size_t i = 0; i < ARRAY_SIZE(small_order_y); i++)
		if (!memcmp(p, small_order_y[i], 31) &&
		    (p[31] & 0x7f) == small_order_y[i][31])
			return 1;
	return 0;
}

static int point_is_acceptable(const unsigned char p[32])
{
	return point_is_canonical(p) && !point_has_small_order(p);
}

/* ---- lines ---- */

/* Up to MAX lines of TEXT: LF or CRLF, a final newline optional. Returns
 * the number of lines, or MAX + 1 when there are more. */
static size_t split_lines(const char *text, size_t len, const char **lines,
			  size_t *lens, size_t max)
{
	const char *p = text, *end = text + len;
	size_t n = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;

		if (n == max)
			return max + 1;
		lines[n] = p;
		lens[n] = (size_t)(eol - p);
		if (nl && lens[n] && p[lens[n] - 1] == '\r')
			lens[n]--;
		n++;
		p = nl ? nl + 1 : end;
	}
	return n;
}

static int has_prefix(const char *s, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);

	return len >= n && !memcmp(s, prefix, n);
}

/* ---- public keys ---- */

void minisign_keyid_hex(const unsigned char keyid[MINISIGN_KEYID_LEN], char *out)
{
	static const char hex[] = "0123456789ABCDEF";

	for (int i = 0; i < MINISIGN_KEYID_LEN; i++) {
		unsigned char b = keyid[MINISIGN_KEYID_LEN - 1 - i];

		out[2 * i] = hex[b >> 4];
		out[2 * i + 1] = hex[b & 15];
	}
	out[2 * MINISIGN_KEYID_LEN] = '\0';
}

int minisign_pubkey_parse(const char *text, size_t len,
			  struct minisign_pubkey *pk, struct wb_err *e)
{
	const char *lines[3], *key;
	size_t lens[3], n, klen;
	unsigned char raw[2 + MINISIGN_KEYID_LEN + MINISIGN_PK_LEN];

	memset(pk, 0, sizeof(*pk));
	if (len > MINISIGN_PUBFILE_MAX)
		return wb_error(e, WB_EUSAGE, "public key is larger than %d bytes",
				MINISIGN_PUBFILE_MAX);
	if (memchr(text, '\0', len))
		return wb_error(e, WB_EUSAGE, "public key contains a NUL byte");
	n = split_lines(text, len, lines, lens, 2);
	if (n == 1) {
		key = lines[0];
		klen = lens[0];
		/* a key given inline may carry white space around it */
		while (klen && (*key == ' ' || *key == '\t')) {
			key++;
			klen--;
		}
		while (klen && (key[klen - 1] == ' ' || key[klen - 1] == '\t' ||
				key[klen - 1] == '\r'))
			klen--;
	} else if (n == 2) {
		if (!has_prefix(lines[0], lens[0], UNTRUSTED_PREFIX))
			return wb_error(e, WB_EUSAGE,
					"public key line 1: expected '" UNTRUSTED_PREFIX "...'");
		key = lines[1];
		klen = lens[1];
	} else {
		return wb_error(e, WB_EUSAGE,
				"public key: expected a base64 key, or a comment line and a key line");
	}
	if (b64_decode_exact(key, klen, raw, sizeof(raw)) < 0)
		return wb_error(e, WB_EUSAGE,
				"public key: not the base64 of a %zu-byte minisign key",
				sizeof(raw));
	if (raw[0] != 'E' || raw[1] != 'd')
		return wb_error(e, WB_EUSAGE,
				"public key: unknown algorithm (expected 'Ed')");
	if (!point_is_acceptable(raw + 2 + MINISIGN_KEYID_LEN))
		return wb_error(e, WB_EUSAGE,
				"public key: not a usable Ed25519 key (small-order or non-canonical point)");
	memcpy(pk->keyid, raw + 2, MINISIGN_KEYID_LEN);
	memcpy(pk->pk, raw + 2 + MINISIGN_KEYID_LEN, MINISIGN_PK_LEN);
	pk->file_check = 1;
	return 0;
}

/* ---- signature files ---- */

void minisign_sig_release(struct minisign_sig *sig)
{
	free(sig->untrusted_comment);
	free(sig->trusted_comment);
	sig->untrusted_comment = sig->trusted_comment = NULL;
}

static int parse_comment(const char *line, size_t len, const char *prefix,
			 unsigned lineno, char **out, struct wb_err *e)
{
	size_t n = strlen(prefix);

	if (!has_prefix(line, len, prefix))
		return wb_error(e, WB_EUSAGE,
				"signature line %u: expected '%s...'", lineno, prefix);
	if (len - n > MINISIGN_COMMENT_MAX)
		return wb_error(e, WB_EUSAGE,
				"signature line %u: comment longer than %d bytes",
				lineno, MINISIGN_COMMENT_MAX);
	*out = xstrndup(line + n, len - n);
	return 0;
}

int minisign_sig_parse(const char *text, size_t len, struct minisign_sig *sig,
		       struct wb_err *e)
{
	const char *lines[4];
	size_t lens[4], n;
	unsigned char raw[2 + MINISIGN_KEYID_LEN + MINISIGN_SIG_LEN];

	memset(sig, 0, sizeof(*sig));
	if (len > MINISIGN_SIGFILE_MAX)
		return wb_error(e, WB_EUSAGE, "signature is larger than %d bytes",
				MINISIGN_SIGFILE_MAX);
	if (memchr(text, '\0', len))
		return wb_error(e, WB_EUSAGE, "signature contains a NUL byte");
	n = split_lines(text, len, lines, lens, 4);
	if (n != 4)
		return wb_error(e, WB_EUSAGE,
				"signature has %s lines, expected 4",
				n > 4 ? "more than 4" : n == 3 ? "3" : n == 2 ? "2" :
				n == 1 ? "1" : "no");
	if (parse_comment(lines[0], lens[0], UNTRUSTED_PREFIX, 1,
			  &sig->untrusted_comment, e) < 0)
		goto fail;
	if (b64_decode_exact(lines[1], lens[1], raw, sizeof(raw)) < 0) {
		wb_error(e, WB_EUSAGE,
			 "signature line 2: not the base64 of a %zu-byte signature",
			 sizeof(raw));
		goto fail;
	}
	if (raw[0] != 'E' || (raw[1] != 'D' && raw[1] != 'd')) {
		wb_error(e, WB_EUSAGE,
			 "signature line 2: unknown algorithm '%02x%02x' (expected 'ED' or 'Ed')",
			 raw[0], raw[1]);
		goto fail;
	}
	sig->alg[0] = (char)raw[0];
	sig->alg[1] = (char)raw[1];
	sig->alg[2] = '\0';
	memcpy(sig->keyid, raw + 2, MINISIGN_KEYID_LEN);
	memcpy(sig->sig, raw + 2 + MINISIGN_KEYID_LEN, MINISIGN_SIG_LEN);
	if (parse_comment(lines[2], lens[2], TRUSTED_PREFIX, 3,
			  &sig->trusted_comment, e) < 0)
		goto fail;
	if (b64_decode_exact(lines[3], lens[3], sig->global_sig,
			     MINISIGN_SIG_LEN) < 0) {
		wb_error(e, WB_EUSAGE,
			 "signature line 4: not the base64 of a %d-byte signature",
			 MINISIGN_SIG_LEN);
		goto fail;
	}
	return 0;
fail:
	minisign_sig_release(sig);
	return -1;
}

/* ---- verification ---- */

void minisign_result_release(struct minisign_result *r)
{
	free(r->trusted_comment);
	r->trusted_comment = NULL;
}

/* 1 when SIG is a valid Ed25519 signature by PK over MSG; 0 when not;
 * -1 (WB_EIO) when OpenSSL could not even try. */
static int ed25519_verify(const unsigned char pk[32], const unsigned char sig[64],
			  const unsigned char *msg, size_t len, struct wb_err *e)
{
	EVP_PKEY *key;
	EVP_MD_CTX *md;
	int ok = -1;

	/* R must be a canonical, non-small-order point and S < L */
	if (!point_is_acceptable(sig) || le256_cmp(sig + 32, group_order) >= 0)
		return 0;
	key = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, pk, 32);
	md = EVP_MD_CTX_new();
	if (key && md && EVP_DigestVerifyInit(md, NULL, NULL, NULL, key) == 1)
		ok = EVP_DigestVerify(md, sig, 64, msg, len) == 1;
	EVP_MD_CTX_free(md);
	EVP_PKEY_free(key);
	if (ok < 0)
		wb_error(e, WB_EIO, "cannot set up Ed25519 verification");
	return ok;
}

/* Verify the legacy (not prehashed) signature over the file at PATH. */
static int verify_legacy(const unsigned char pk[32], const unsigned char sig[64],
			 const char *path, struct wb_err *e)
{
	static const unsigned char empty[1];
	struct stat st;
	void *map = NULL;
	int fd, ok;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return wb_error(e, WB_EIO, "cannot open '%s': %s", path,
				strerror(errno));
	if (fstat(fd, &st) < 0) {
		int err = errno;

		close(fd);
		return wb_error(e, WB_EIO, "cannot stat '%s': %s", path,
				strerror(err));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return wb_error(e, WB_EIO, "'%s' is not a regular file", path);
	}
	if (st.st_size > 0) {
		map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (map == MAP_FAILED) {
			int err = errno;

			close(fd);
			return wb_error(e, WB_EIO, "cannot read '%s': %s", path,
					strerror(err));
		}
	}
	close(fd);
	ok = ed25519_verify(pk, sig, map ? map : empty, (size_t)st.st_size, e);
	if (map)
		munmap(map, (size_t)st.st_size);
	return ok;
}

/* The value of the "file:" field of trusted comment TC (fields are
 * tab-separated); NULL when there is none. *LEN gets its length, *COUNT
 * how many "file:" fields there are (more than one is refused). */
static const char *comment_file_field(const char *tc, size_t *len, int *count)
{
	const char *p = tc, *found = NULL;

	*count = 0;
	for (;;) {
		if (!strncmp(p, "file:", 5) && !(*count)++) {
			*len = strcspn(p + 5, "\t");
			found = p + 5;
		}
		p = strchr(p, '\t');
		if (!p)
			return found;
		p++;
	}
}

/*
 * @where where a signature is checked (minisign on OpenSSL) -- called by the
 *   method's `check()` in `builder/trust/m_minisign.c`
 */
int minisign_verify(const struct minisign_sig *sig,
		    const struct minisign_pubkey *keys, size_t nkeys,
		    const unsigned char blake2b[64], const char *legacy_path,
		    const char *expect_name, struct minisign_result *res,
		    struct wb_err *e)
{
	const struct minisign_pubkey *key = NULL;
	unsigned char *global_msg;
	const char *f;
	size_t tclen, i, flen = 0;
	int ok, nfile;

	memset(res, 0, sizeof(*res));
	res->key_index = -1;
	minisign_keyid_hex(sig->keyid, res->keyid_hex);
	if (!sig->trusted_comment)
		return wb_error(e, WB_EUSAGE, "signature was not parsed");

	for (i = 0; i < nkeys; i++) {
		if (!memcmp(keys[i].keyid, sig->keyid, MINISIGN_KEYID_LEN)) {
			key = &keys[i];
			break;
		}
	}
	if (!key) {
		struct buf ids = BUF_INIT;
		char hex[17];

		for (i = 0; i < nkeys; i++) {
			minisign_keyid_hex(keys[i].keyid, hex);
			buf_addf(&ids, "%s'%s'", i ? ", " : "", hex);
		}
		wb_error(e, WB_EVERIFY,
			 "signature key id '%s' does not match the pinned key%s %s",
			 res->keyid_hex, nkeys == 1 ? "" : "s",
			 nkeys ? ids.ptr : "(none)");
		buf_release(&ids);
		return -1;
	}
	if (!point_is_acceptable(key->pk))
		return wb_error(e, WB_EUSAGE,
				"pinned key '%s' is not a usable Ed25519 key",
				res->keyid_hex);

	if (!strcmp(sig->alg, "Ed")) {
		if (!key->allow_legacy)
			return wb_error(e, WB_EVERIFY,
					"legacy (not prehashed) 'Ed' signature refused: key '%s' does not allow legacy signatures",
					res->keyid_hex);
		if (!legacy_path)
			return wb_error(e, WB_EUSAGE,
					"legacy signature needs the file itself, none given");
		ok = verify_legacy(key->pk, sig->sig, legacy_path, e);
	} else if (!strcmp(sig->alg, "ED")) {
		ok = ed25519_verify(key->pk, sig->sig, blake2b, 64, e);
	} else {
		return wb_error(e, WB_EUSAGE, "unknown signature algorithm");
	}
	if (ok < 0)
		return -1;
	if (!ok)
		return wb_error(e, WB_EVERIFY,
				"signature verification failed (key '%s')",
				res->keyid_hex);

	tclen = strlen(sig->trusted_comment);
	global_msg = xmalloc(MINISIGN_SIG_LEN + tclen);
	memcpy(global_msg, sig->sig, MINISIGN_SIG_LEN);
	memcpy(global_msg + MINISIGN_SIG_LEN, sig->trusted_comment, tclen);
	ok = ed25519_verify(key->pk, sig->global_sig, global_msg,
			    MINISIGN_SIG_LEN + tclen, e);
	free(global_msg);
	if (ok < 0)
		return -1;
	if (!ok)
		return wb_error(e, WB_EVERIFY,
				"comment signature verification failed (key '%s')",
				res->keyid_hex);

	for (i = 0; i < tclen; i++) {
		unsigned char c = (unsigned char)sig->trusted_comment[i];

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return wb_error(e, WB_EVERIFY,
					"trusted comment holds control byte 0x%02x", c);
	}

	f = comment_file_field(sig->trusted_comment, &flen, &nfile);
	if (nfile > 1)   /* which one would a reader believe? neither */
		return wb_error(e, WB_EVERIFY,
				"trusted comment has more than one 'file:' field");
	if (key->file_check) {
		if (!expect_name)
			return wb_error(e, WB_EUSAGE,
					"no file name to check the trusted comment against");
		if (!f)
			return wb_error(e, WB_EVERIFY,
					"trusted comment names no file, expected '%s'",
					expect_name);
		if (strlen(expect_name) != flen || memcmp(f, expect_name, flen))
			return wb_error(e, WB_EVERIFY,
					"trusted comment names file '%.*s', expected '%s'",
					(int)flen, f, expect_name);
	}

	res->key_index = (int)(key - keys);
	res->trusted_comment = xstrdup(sig->trusted_comment);
	return 0;
}
