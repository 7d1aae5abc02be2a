/* trust/checksum: the forms upstreams publish, and everything refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "trust/checksum.h"

#define A64 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define B64 "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define C64 "0123456789abcdef0123456789ABCDEF0123456789abcdef0123456789abcdef"

/* Parse S (a C string) for NAME; return the result, E gets the error. */
static int parse(const char *s, const char *name, enum digest_alg alg,
		 unsigned char *out, struct wb_err *e)
{
	wb_err_clear(e);
	return checksum_parse(s, strlen(s), name, alg, out, e);
}

static void assert_digest(const unsigned char *d, size_t len, const char *hex)
{
	unsigned char want[64];

	assert_int_equal(digest_unhex(hex, want, len), 0);
	assert_memory_equal(d, want, len);
}

static void assert_fails(const char *s, const char *name, enum digest_alg alg,
			 const char *msg_part)
{
	struct wb_err e = WB_ERR_INIT;
	unsigned char out[64];

	assert_int_equal(parse(s, name, alg, out, &e), -1);
	assert_int_equal(e.code, WB_EUSAGE);
	if (!strstr(e.msg, msg_part))
		fail_msg("message '%s' lacks '%s'", e.msg, msg_part);
}

static void test_bare_digest(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	unsigned char out[64];

	(void)state;
	assert_int_equal(parse(C64 "\n", "x.zip", DIGEST_SHA256, out, &e), 0);
	assert_digest(out, 32, C64);
	assert_int_equal(parse(C64, "x.zip", DIGEST_SHA256, out, &e), 0);
	assert_int_equal(parse("  " A64 " \r\n\n", "x.zip", DIGEST_SHA256, out, &e), 0);
	assert_digest(out, 32, A64);
	assert_int_equal(parse(A64 B64 "\n", "x.zip", DIGEST_SHA512, out, &e), 0);
	assert_digest(out, 64, A64 B64);
}

static void test_sum_lines(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	unsigned char out[64];
	const char *sums = A64 "  a.zip\n" C64 " *x.zip\n" B64 "  b.zip\n";

	(void)state;
	assert_int_equal(parse(sums, "x.zip", DIGEST_SHA256, out, &e), 0);
	assert_digest(out, 32, C64);
	assert_int_equal(parse(sums, "b.zip", DIGEST_SHA256, out, &e), 0);
	assert_digest(out, 32, B64);
	/* one line, sha256sum form */
	assert_int_equal(parse(A64 "  a.zip", "a.zip", DIGEST_SHA256, out, &e), 0);
	assert_digest(out, 32, A64);
}

static void test_crlf_and_blank_lines(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	unsigned char out[64];

	(void)state;
	assert_int_equal(parse(A64 "  a.zip\r\n\r\n" B64 "  b.zip\r\n", "b.zip",
			       DIGEST_SHA256, out, &e), 0);
	assert_digest(out, 32, B64);
}

static void test_path_names(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	unsigned char out[64];

	(void)state;
	assert_int_equal(parse(A64 "  ./a.zip\n", "a.zip", DIGEST_SHA256, out, &e), 0);
	assert_int_equal(parse(B64 "  dist/x/a.zip\n", "a.zip", DIGEST_SHA256, out, &e), 0);
	assert_digest(out, 32, B64);
	/* a name that merely ends with FILENAME is another file */
	assert_fails(A64 "  xa.zip\n", "a.zip", DIGEST_SHA256, "no entry for 'a.zip'");
	/* an empty name matches nothing, not even a directory entry */
	assert_fails(A64 "  dist/\n", "", DIGEST_SHA256, "no entry for ''");
}

/* A listed name that merely starts with the artifact's name is another
 * file: a.zip.sig, a.zip.sha256, a.zipx are not a.zip. */
static void test_name_is_not_a_prefix(void **state)
{
	unsigned char out[32], want[32];
	struct wb_err e = WB_ERR_INIT;

	(void)state;
	assert_fails(A64 "  a.zip.sig\n", "a.zip", DIGEST_SHA256, "no entry for 'a.zip'");
	assert_fails(A64 "  a.zipx\n" B64 "  dist/a.zip.sha256\n", "a.zip", DIGEST_SHA256,
		     "no entry for 'a.zip' (it lists 'a.zipx', 'dist/a.zip.sha256')");
	/* beside the real line, in either order: the real one's digest */
	assert_int_equal(digest_unhex(B64, want, 32), 0);
	assert_int_equal(parse(A64 "  a.zip.sig\n" B64 "  a.zip\n", "a.zip", DIGEST_SHA256,
			       out, &e), 0);
	assert_memory_equal(out, want, 32);
	assert_int_equal(parse(B64 "  a.zip\n" A64 " *a.zip.asc\n", "a.zip", DIGEST_SHA256,
			       out, &e), 0);
	assert_memory_equal(out, want, 32);
}

static void test_sha512_lines(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	unsigned char out[64];

	(void)state;
	assert_int_equal(parse(A64 B64 "  a.zip\n" B64 A64 "  b.zip\n", "b.zip",
			       DIGEST_SHA512, out, &e), 0);
	assert_digest(out, 64, B64 A64);
}

static void test_escaped_name(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	unsigned char out[64];

	(void)state;
	assert_int_equal(parse("\\" A64 "  a\\\\b.zip\n", "a\\b.zip", DIGEST_SHA256,
			       out, &e), 0);
	assert_fails("\\" A64 "  a\\qb.zip\n", "a.zip", DIGEST_SHA256, "bad escape");
}

static void test_only_other_files(void **state)
{
	(void)state;
	assert_fails(A64 "  a.zip\n" B64 "  b.zip\n", "x.zip", DIGEST_SHA256,
		     "has no entry for 'x.zip' (it lists 'a.zip', 'b.zip')");
}

static void test_wrong_length(void **state)
{
	(void)state;
	assert_fails(A64 "\n", "a.zip", DIGEST_SHA512,
		     "a SHA-512 digest has 128 hex digits, found 64");
	assert_fails(A64 "  a.zip\n" "abcd  b.zip\n", "a.zip", DIGEST_SHA256,
		     "line 2: a SHA-256 digest has 64 hex digits, found 4");
}

static void test_not_hex(void **state)
{
	(void)state;
	assert_fails("SHA256 (a.zip) = " A64 "\n", "a.zip", DIGEST_SHA256,
		     "line 1: 'SHA256' is not a hex digest");
	assert_fails(A64 "  a.zip\n" A64 "  b.zip\n" "zz" A64 "  c.zip\n", "a.zip",
		     DIGEST_SHA256, "line 3");
	assert_fails("g" A64 "\n", "a.zip", DIGEST_SHA256, "is not a hex digest");
}

static void test_nul_refused(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	unsigned char out[64];
	char s[] = A64 "  a.zip\n" A64 "  b\0.zip\n";

	(void)state;
	assert_int_equal(checksum_parse(s, sizeof(s) - 1, "a.zip", DIGEST_SHA256,
					out, &e), -1);
	assert_int_equal(e.code, WB_EUSAGE);
	assert_non_null(strstr(e.msg, "line 2: NUL byte"));
}

static void test_conflicting_duplicates(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	unsigned char out[64];

	(void)state;
	assert_fails(A64 "  a.zip\n" B64 "  ./a.zip\n", "a.zip", DIGEST_SHA256,
		     "line 2: a second, different digest for 'a.zip'");
	/* the same digest twice is harmless */
	assert_int_equal(parse(A64 "  a.zip\n" A64 " *a.zip\n", "a.zip",
			       DIGEST_SHA256, out, &e), 0);
}

static void test_malformed_lines(void **state)
{
	(void)state;
	assert_fails("", "a.zip", DIGEST_SHA256, "empty");
	assert_fails(" \n\n", "a.zip", DIGEST_SHA256, "empty");
	assert_fails(A64 "  a.zip\n" A64 "\n", "a.zip", DIGEST_SHA256,
		     "line 2: expected '<digest>  <name>'");
	assert_fails(A64 "  a.zip\n" A64 " \n", "a.zip", DIGEST_SHA256,
		     "line 2: no file name");
}

static void test_too_big(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	unsigned char out[64];
	size_t n = CHECKSUM_FILE_MAX + 1;
	char *s = malloc(n);

	(void)state;
	assert_non_null(s);
	memset(s, '\n', n);
	memcpy(s, A64, 64);
	assert_int_equal(checksum_parse(s, n, "a.zip", DIGEST_SHA256, out, &e), -1);
	assert_int_equal(e.code, WB_EUSAGE);
	assert_non_null(strstr(e.msg, "larger than"));
	assert_int_equal(checksum_parse(s, n - 1, "a.zip", DIGEST_SHA256, out, &e), 0);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bare_digest),
		cmocka_unit_test(test_name_is_not_a_prefix),
		cmocka_unit_test(test_sum_lines),
		cmocka_unit_test(test_crlf_and_blank_lines),
		cmocka_unit_test(test_path_names),
		cmocka_unit_test(test_sha512_lines),
		cmocka_unit_test(test_escaped_name),
		cmocka_unit_test(test_only_other_files),
		cmocka_unit_test(test_wrong_length),
		cmocka_unit_test(test_not_hex),
		cmocka_unit_test(test_nul_refused),
		cmocka_unit_test(test_conflicting_duplicates),
		cmocka_unit_test(test_malformed_lines),
		cmocka_unit_test(test_too_big),
	};

	return cmocka_run_group_tests_name("checksum", tests, NULL, NULL);
}
