/*
 * minisign signing on OpenSSL (for `winbuild mirror --sign`): read an
 * unencrypted secret key file (minisign -G -W) and write prehashed "ED"
 * signature files that minisign -V and minisign_verify() accept.
 *
 * Secret key file: "untrusted comment: ..." then base64 of
 *   sig_alg "Ed" | kdf_alg (0,0 = not encrypted) | chk_alg "B2" |
 *   kdf salt (32) | opslimit (8) | memlimit (8) |
 *   key id (8) | secret key (64: seed 32 + public key 32) | checksum (32)
 * Signature file: "untrusted comment: ..." / base64("ED" | key id |
 * Ed25519(BLAKE2b-512(file))) / "trusted comment: TC" /
 * base64(Ed25519(signature || TC)).
 */
#include <string.h>

#include <openssl/evp.h>

#include "lib/buf.h"
#include "trust/minisign.h"

#define SK_LEN 158

static int b64_decode(const char *s, unsigned char *out, size_t outmax, size_t *outlen)
{
	size_t n = strlen(s), pad = 0;
	unsigned char tmp[256];
	int r;

	if (!n || n % 4 || n / 4 * 3 > sizeof(tmp))
		return -1;
	r = EVP_DecodeBlock(tmp, (const unsigned char *)s, (int)n);
	if (r < 0)
		return -1;
	pad = (s[n - 1] == '=') + (s[n - 2] == '=');
	if ((size_t)r - pad > outmax)
		return -1;
	*outlen = (size_t)r - pad;
	memcpy(out, tmp, *outlen);
	return 0;
}

int minisign_seckey_parse(const char *text, size_t len, struct minisign_seckey *sk,
			  struct wb_err *e)
{
	char *copy = xstrndup(text, len), *line = NULL, *save = NULL;
	unsigned char raw[SK_LEN], pk[32];
	size_t n = 0, pklen = sizeof(pk);
	EVP_PKEY *key = NULL;
	int ret = -1;

	for (char *t = strtok_r(copy, "\r\n", &save); t; t = strtok_r(NULL, "\r\n", &save))
		if (strncmp(t, "untrusted comment:", 18) && !line)
			line = t;
	if (!line || b64_decode(line, raw, sizeof(raw), &n) || n != SK_LEN) {
		wb_error(e, WB_EUSAGE, "secret key: expected a comment line and a base64 "
			 "minisign secret key line");
		goto out;
	}
	if (memcmp(raw, "Ed", 2) || memcmp(raw + 4, "B2", 2)) {
		wb_error(e, WB_EUSAGE, "secret key: not a minisign Ed25519 secret key");
		goto out;
	}
	if (raw[2] || raw[3]) {
		wb_error(e, WB_EUSAGE, "secret key: the key is encrypted with a password; "
			 "winbuild reads unencrypted keys only (minisign -G -W)");
		goto out;
	}
	memcpy(sk->keyid, raw + 54, 8);
	memcpy(sk->seed, raw + 62, 32);
	memcpy(sk->pk, raw + 94, 32);
	/* the public half must belong to the seed */
	key = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, sk->seed, 32);
	if (!key || EVP_PKEY_get_raw_public_key(key, pk, &pklen) != 1 || pklen != 32 ||
	    memcmp(pk, sk->pk, 32)) {
		wb_error(e, WB_EUSAGE, "secret key: damaged (its public key does not match "
			 "its secret key)");
		goto out;
	}
	ret = 0;
out:
	EVP_PKEY_free(key);
	OPENSSL_cleanse(raw, sizeof(raw));
	OPENSSL_cleanse(copy, len);
	free(copy);
	return ret;
}

static int ed25519_sign(const struct minisign_seckey *sk, const unsigned char *msg,
			size_t len, unsigned char sig[64], struct wb_err *e)
{
	EVP_PKEY *key = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, sk->seed, 32);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	size_t siglen = 64;
	int ok = key && ctx && EVP_DigestSignInit(ctx, NULL, NULL, NULL, key) == 1 &&
		 EVP_DigestSign(ctx, sig, &siglen, msg, len) == 1 && siglen == 64;

	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(key);
	return ok ? 0 : wb_error(e, WB_EIO, "Ed25519 signing failed (OpenSSL)");
}

/*
 * @where where an artifact is signed (`mirror --sign`, minisign on OpenSSL)
 */
char *minisign_sign_prehashed(const struct minisign_seckey *sk,
			      const unsigned char blake2b[64],
			      const char *trusted_comment,
			      const char *untrusted_comment, struct wb_err *e)
{
	unsigned char sigbuf[74], sig[64], global[64];
	unsigned char *gmsg;
	char b64a[128], b64b[128];
	size_t tclen = strlen(trusted_comment);

	if (strpbrk(trusted_comment, "\r\n")) {
		wb_error(e, WB_EUSAGE, "trusted comment must be one line");
		return NULL;
	}
	if (ed25519_sign(sk, blake2b, 64, sig, e))
		return NULL;
	memcpy(sigbuf, "ED", 2);
	memcpy(sigbuf + 2, sk->keyid, 8);
	memcpy(sigbuf + 10, sig, 64);
	gmsg = xmalloc(64 + tclen);
	memcpy(gmsg, sig, 64);
	memcpy(gmsg + 64, trusted_comment, tclen);
	if (ed25519_sign(sk, gmsg, 64 + tclen, global, e)) {
		free(gmsg);
		return NULL;
	}
	free(gmsg);
	EVP_EncodeBlock((unsigned char *)b64a, sigbuf, sizeof(sigbuf));
	EVP_EncodeBlock((unsigned char *)b64b, global, sizeof(global));
	return xasprintf("untrusted comment: %s\n%s\ntrusted comment: %s\n%s\n",
			 untrusted_comment, b64a, trusted_comment, b64b);
}
