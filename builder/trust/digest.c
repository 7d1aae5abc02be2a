/*
 * @where SHA-256, SHA-512, BLAKE2b (and SHA-1, a Windows update's Catalog
 *   digest) in one pass
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "lib/buf.h"
#include "trust/digest.h"

#define DIGEST_READ_SIZE (1024 * 1024)

/* The EVP algorithm for bit index I of enum digest_alg. */
static const EVP_MD *digest_md(int i)
{
	switch (i) {
	case 0: return EVP_sha256();
	case 1: return EVP_sha512();
	case 2: return EVP_blake2b512();
	case 3: return EVP_sha1();
	}
	return NULL;
}

int digest_init(struct digest_ctx *c, unsigned algs, struct wb_err *e)
{
	memset(c, 0, sizeof(*c));
	c->algs = algs | DIGEST_SHA256;
	for (int i = 0; i < DIGEST_NSLOTS; i++) {
		EVP_MD_CTX *md;

		if (!(c->algs & (1u << i)))
			continue;
		md = EVP_MD_CTX_new();
		if (!md || !EVP_DigestInit_ex(md, digest_md(i), NULL)) {
			EVP_MD_CTX_free(md);
			digest_release(c);
			return wb_error(e, WB_EIO, "cannot set up digest computation");
		}
		c->md[i] = md;
	}
	return 0;
}

void digest_update(struct digest_ctx *c, const void *data, size_t len)
{
	for (int i = 0; i < DIGEST_NSLOTS; i++)
		digest_update_slot(c, i, data, len);
	c->size += len;
}

void digest_update_cb(void *c, const void *data, size_t len)
{
	digest_update(c, data, len);
}

void digest_update_slot(struct digest_ctx *c, int i, const void *data, size_t len)
{
	if (c->md[i])
		EVP_DigestUpdate(c->md[i], data, len);
}

void digest_final(struct digest_ctx *c, struct digest_result *r)
{
	unsigned char *outs[DIGEST_NSLOTS] = { r->sha256, r->sha512, r->blake2b512, r->sha1 };

	memset(r, 0, sizeof(*r));
	for (int i = 0; i < DIGEST_NSLOTS; i++) {
		if (!c->md[i])
			continue;
		if (EVP_DigestFinal_ex(c->md[i], outs[i], NULL))
			r->algs |= 1u << i;
	}
	r->size = c->size;
	digest_release(c);
}

void digest_release(struct digest_ctx *c)
{
	for (int i = 0; i < DIGEST_NSLOTS; i++) {
		EVP_MD_CTX_free(c->md[i]);
		c->md[i] = NULL;
	}
}

int digest_fd(int fd, const char *what, unsigned algs, struct digest_result *r,
	      struct wb_err *e)
{
	struct digest_ctx c;
	unsigned char *chunk;
	off_t off = 0;
	ssize_t n;

	if (digest_init(&c, algs, e) < 0)
		return -1;
	chunk = xmalloc(DIGEST_READ_SIZE);
	while ((n = pread(fd, chunk, DIGEST_READ_SIZE, off)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			free(chunk);
			digest_release(&c);
			return wb_error(e, WB_EIO, "cannot read '%s': %s", what, strerror(errno));
		}
		digest_update(&c, chunk, (size_t)n);
		off += n;
	}
	free(chunk);
	digest_final(&c, r);
	return 0;
}

int digest_file(const char *path, unsigned algs, struct digest_result *r,
		struct wb_err *e)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return wb_error(e, WB_EIO, "cannot open '%s': %s", path, strerror(errno));
	ret = digest_fd(fd, path, algs, r, e);
	close(fd);
	return ret;
}

void digest_hex(const unsigned char *bytes, size_t len, char *out)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		out[2 * i] = hex[bytes[i] >> 4];
		out[2 * i + 1] = hex[bytes[i] & 15];
	}
	out[2 * len] = '\0';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int digest_unhex(const char *hex, unsigned char *out, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		int hi = hexval(hex[2 * i]), lo;

		if (hi < 0)
			return -1;
		lo = hexval(hex[2 * i + 1]);
		if (lo < 0)
			return -1;
		out[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

int digest_equal(const unsigned char *a, const unsigned char *b, size_t len)
{
	return CRYPTO_memcmp(a, b, len) == 0;
}
