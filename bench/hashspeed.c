/*
 * bench/hashspeed: the per-byte costs a cold stage pays, measured on this
 * machine, each candidate against the other in alternating rounds.
 *
 *   BLAKE2b-512 (minisign's prehash): OpenSSL EVP_blake2b512 vs libsodium
 *               crypto_generichash (minisign's own library)
 *   SHA-256, SHA-512: OpenSSL EVP (for reference: what the cache and the
 *               SBOM cost)
 *   inflate:    zlib (what libarchive uses) vs libdeflate, on a gzip file
 *               given as argv[1] (whole-buffer: libdeflate cannot stream)
 *
 * Built and run by `make bench-hash` (bench/README.md); not part of the
 * product, so the libsodium and libdeflate it links are test-only.
 * Prints one line per candidate: median MB/s over ROUNDS rounds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libdeflate.h>
#include <openssl/evp.h>
#include <sodium.h>
#include <zlib.h>

#define ROUNDS 7
#define CHUNK (256u * 1024)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void ossl_hash(const EVP_MD *md, const unsigned char *p, size_t n)
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	unsigned char out[64];

	EVP_DigestInit_ex(c, md, NULL);
	for (size_t o = 0; o < n; o += CHUNK)
		EVP_DigestUpdate(c, p + o, n - o < CHUNK ? n - o : CHUNK);
	EVP_DigestFinal_ex(c, out, NULL);
	EVP_MD_CTX_free(c);
}

static void sodium_b2b(const unsigned char *p, size_t n)
{
	crypto_generichash_state st;
	unsigned char out[64];

	crypto_generichash_init(&st, NULL, 0, sizeof(out));
	for (size_t o = 0; o < n; o += CHUNK)
		crypto_generichash_update(&st, p + o, n - o < CHUNK ? n - o : CHUNK);
	crypto_generichash_final(&st, out, sizeof(out));
}

static const unsigned char *gz;
static size_t gz_len, raw_len;
static unsigned char *raw;

static void zlib_inflate(const unsigned char *p, size_t n)
{
	z_stream z;

	(void)p;
	(void)n;
	memset(&z, 0, sizeof(z));
	if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
		abort();
	z.next_in = (unsigned char *)gz;
	z.avail_in = (uInt)gz_len;
	for (;;) {
		int r;

		z.next_out = raw;
		z.avail_out = CHUNK;     /* streaming, as libarchive reads */
		r = inflate(&z, Z_NO_FLUSH);
		if (r == Z_STREAM_END)
			break;
		if (r != Z_OK)
			abort();
	}
	inflateEnd(&z);
}

static void deflate_whole(const unsigned char *p, size_t n)
{
	struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
	size_t got;

	(void)p;
	(void)n;
	if (libdeflate_gzip_decompress(d, gz, gz_len, raw, raw_len, &got) != LIBDEFLATE_SUCCESS)
		abort();
	libdeflate_free_decompressor(d);
}

struct cand {
	const char *name;
	void (*run)(const unsigned char *, size_t);
	double mbps[ROUNDS];
	size_t bytes;
};

static void sha256(const unsigned char *p, size_t n) { ossl_hash(EVP_sha256(), p, n); }
static void sha512(const unsigned char *p, size_t n) { ossl_hash(EVP_sha512(), p, n); }
static void b2b_ossl(const unsigned char *p, size_t n) { ossl_hash(EVP_blake2b512(), p, n); }

int main(int argc, char **argv)
{
	size_t n = 256u << 20;
	unsigned char *buf = malloc(n);
	struct cand c[] = {
		{ "blake2b-512 openssl", b2b_ossl, {0}, 0 },
		{ "blake2b-512 libsodium", sodium_b2b, {0}, 0 },
		{ "sha-256 openssl", sha256, {0}, 0 },
		{ "sha-512 openssl", sha512, {0}, 0 },
		{ "inflate zlib (streaming, 256 KiB out)", zlib_inflate, {0}, 0 },
		{ "inflate libdeflate (whole buffer)", deflate_whole, {0}, 0 },
	};
	size_t nc = sizeof(c) / sizeof(c[0]);

	if (!buf || sodium_init() < 0)
		return 1;
	for (size_t i = 0; i < n; i++)
		buf[i] = (unsigned char)(i * 2654435761u >> 13);
	if (argc > 1) {
		FILE *f = fopen(argv[1], "rb");
		static unsigned char *g;
		z_stream z;

		if (!f)
			return 1;
		fseek(f, 0, SEEK_END);
		gz_len = (size_t)ftell(f);
		rewind(f);
		g = malloc(gz_len);
		if (!g || fread(g, 1, gz_len, f) != gz_len)
			return 1;
		fclose(f);
		gz = g;
		/* the uncompressed size: inflate once */
		memset(&z, 0, sizeof(z));
		inflateInit2(&z, 16 + MAX_WBITS);
		raw = malloc(CHUNK);
		z.next_in = g;
		z.avail_in = (uInt)gz_len;
		do {
			z.next_out = raw;
			z.avail_out = CHUNK;
		} while (inflate(&z, Z_NO_FLUSH) == Z_OK);
		raw_len = z.total_out;
		inflateEnd(&z);
		free(raw);
		raw = malloc(raw_len > CHUNK ? raw_len : CHUNK);
	} else {
		nc -= 2;
	}
	for (size_t i = 0; i < nc; i++)
		c[i].bytes = i >= 4 ? raw_len : n;
	for (int r = 0; r < ROUNDS; r++)
		for (size_t k = 0; k < nc; k++) {
			struct cand *x = &c[(k + (size_t)r) % nc];
			double t0 = now();

			x->run(buf, n);
			x->mbps[r] = (double)x->bytes / 1e6 / (now() - t0);
		}
	for (size_t i = 0; i < nc; i++) {
		qsort(c[i].mbps, ROUNDS, sizeof(double), cmp_double);
		printf("%-40s %8.0f MB/s (median of %d; min %.0f, max %.0f)\n", c[i].name,
		       c[i].mbps[ROUNDS / 2], ROUNDS, c[i].mbps[0], c[i].mbps[ROUNDS - 1]);
	}
	return 0;
}
