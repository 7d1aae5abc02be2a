/* trust/digest: known vectors, streaming equals one shot, file digests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "trust/digest.h"

#define SHA256_ABC "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
#define SHA512_ABC "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a" \
	"2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"
#define BLAKE2B_ABC "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d1" \
	"7d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923"
/* FIPS 180-4's "abc" example: the Update Catalog names files by SHA-1 */
#define SHA1_ABC "a9993e364706816aba3e25717850c26c9cd0d89d"
#define SHA256_EMPTY "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

static void assert_hex(const unsigned char *bytes, size_t len, const char *want)
{
	char hex[129];

	digest_hex(bytes, len, hex);
	assert_string_equal(hex, want);
}

static void test_abc_vectors(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	struct digest_ctx c;
	struct digest_result r;

	(void)state;
	assert_int_equal(digest_init(&c, DIGEST_SHA512 | DIGEST_BLAKE2B512 | DIGEST_SHA1, &e), 0);
	digest_update(&c, "abc", 3);
	digest_final(&c, &r);
	assert_int_equal(r.algs, DIGEST_SHA256 | DIGEST_SHA512 | DIGEST_BLAKE2B512 | DIGEST_SHA1);
	assert_hex(r.sha1, 20, SHA1_ABC);
	assert_true(r.size == 3);
	assert_hex(r.sha256, 32, SHA256_ABC);
	assert_hex(r.sha512, 64, SHA512_ABC);
	assert_hex(r.blake2b512, 64, BLAKE2B_ABC);
}

static void test_sha256_always(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	struct digest_ctx c;
	struct digest_result r;

	(void)state;
	assert_int_equal(digest_init(&c, 0, &e), 0);
	digest_final(&c, &r);
	assert_int_equal(r.algs, DIGEST_SHA256);
	assert_hex(r.sha256, 32, SHA256_EMPTY);
}

static void test_streaming_in_pieces(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	struct digest_ctx c;
	struct digest_result r;

	(void)state;
	assert_int_equal(digest_init(&c, DIGEST_BLAKE2B512, &e), 0);
	digest_update(&c, "a", 1);
	digest_update(&c, "", 0);
	digest_update(&c, "bc", 2);
	digest_final(&c, &r);
	assert_hex(r.sha256, 32, SHA256_ABC);
	assert_hex(r.blake2b512, 64, BLAKE2B_ABC);
}

static void test_release_unfinished(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	struct digest_ctx c;

	(void)state;
	memset(&c, 0, sizeof(c));
	digest_release(&c);          /* zeroed: fine */
	assert_int_equal(digest_init(&c, DIGEST_SHA512, &e), 0);
	digest_update(&c, "abc", 3);
	digest_release(&c);          /* the leak checker sees the rest */
	digest_release(&c);
}

static void test_file(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	struct digest_result r, want;
	struct digest_ctx c;
	char path[] = "/tmp/wb-digest-XXXXXX";
	size_t n = 3 * 1024 * 1024 + 17;   /* more than one 1 MiB read */
	unsigned char *data = malloc(n);
	int fd = mkstemp(path);

	(void)state;
	assert_non_null(data);
	assert_true(fd >= 0);
	for (size_t i = 0; i < n; i++)
		data[i] = (unsigned char)(i * 31 + (i >> 8));
	assert_true(write(fd, data, n) == (ssize_t)n);
	close(fd);
	assert_int_equal(digest_init(&c, DIGEST_SHA512 | DIGEST_BLAKE2B512, &e), 0);
	digest_update(&c, data, n);
	digest_final(&c, &want);
	assert_int_equal(digest_file(path, DIGEST_SHA512 | DIGEST_BLAKE2B512, &r, &e), 0);
	assert_true(r.size == n);
	assert_memory_equal(r.sha256, want.sha256, 32);
	assert_memory_equal(r.sha512, want.sha512, 64);
	assert_memory_equal(r.blake2b512, want.blake2b512, 64);
	unlink(path);
	free(data);
}

static void test_file_missing(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	struct digest_result r;

	(void)state;
	assert_int_equal(digest_file("/nonexistent/wb-x", 0, &r, &e), -1);
	assert_int_equal(e.code, WB_EIO);
	assert_non_null(strstr(e.msg, "cannot open '/nonexistent/wb-x'"));
}

static void test_hex_roundtrip(void **state)
{
	unsigned char out[4];

	(void)state;
	assert_int_equal(digest_unhex("00fFa5B1", out, 4), 0);
	assert_hex(out, 4, "00ffa5b1");
	assert_int_equal(digest_unhex("00fFa5B", out, 4), -1);   /* short */
	assert_int_equal(digest_unhex("00fFa5Bg", out, 4), -1);  /* not hex */
	assert_int_equal(digest_unhex(" 0fFa5B1", out, 4), -1);
}

static void test_equal(void **state)
{
	const unsigned char a[4] = { 1, 2, 3, 4 }, b[4] = { 1, 2, 3, 5 };

	(void)state;
	assert_int_equal(digest_equal(a, a, 4), 1);
	assert_int_equal(digest_equal(a, b, 4), 0);
	assert_int_equal(digest_equal(a, b, 3), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_abc_vectors),
		cmocka_unit_test(test_sha256_always),
		cmocka_unit_test(test_streaming_in_pieces),
		cmocka_unit_test(test_release_unfinished),
		cmocka_unit_test(test_file),
		cmocka_unit_test(test_file_missing),
		cmocka_unit_test(test_hex_roundtrip),
		cmocka_unit_test(test_equal),
	};

	return cmocka_run_group_tests_name("digest", tests, NULL, NULL);
}
