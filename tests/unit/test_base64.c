/*
 * lib/base64: strict standard base64. RFC 4648 section 10's test vectors,
 * each with and without padding, and the encodings it must refuse.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/base64.h"

static void test_rfc4648_vectors(void **state)
{
	static const struct { const char *plain, *enc, *unpadded; } v[] = {
		{ "", "", "" },
		{ "f", "Zg==", "Zg" },
		{ "fo", "Zm8=", "Zm8" },
		{ "foo", "Zm9v", "Zm9v" },
		{ "foob", "Zm9vYg==", "Zm9vYg" },
		{ "fooba", "Zm9vYmE=", "Zm9vYmE" },
		{ "foobar", "Zm9vYmFy", "Zm9vYmFy" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		const char *forms[2] = { v[i].enc, v[i].unpadded };

		for (int f = 0; f < 2; f++) {
			size_t n = 99;
			unsigned char *r = b64_decode(forms[f], strlen(forms[f]), &n);

			assert_non_null(r);
			assert_int_equal(n, strlen(v[i].plain));
			assert_memory_equal(r, v[i].plain, n);
			assert_int_equal(r[n], 0);
			free(r);
		}
	}
}

static void test_refused(void **state)
{
	static const char *const bad[] = {
		"Zg=",       /* padding short of what the length needs */
		"Zg===",     /* too much */
		"Zm8==",
		"Z",         /* a lone character carries no byte */
		"Zh==",      /* non-zero unused bits: not the canonical "Zg==" */
		"Zm9=",
		"Zm 9v",     /* whitespace other than line breaks */
		"Zm9v\t",
		"Zm-9",      /* the URL-safe alphabet */
		"Zm_9",
		"=Zm9",
		"Zg==Zg==",  /* padding inside */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t n;

		if (b64_decode(bad[i], strlen(bad[i]), &n))
			fail_msg("accepted \"%s\"", bad[i]);
	}
}

/* Go's decoder, which reads Sigstore bundles, skips CR and LF. */
static void test_line_breaks(void **state)
{
	size_t n;
	unsigned char *r = b64_decode("Zm9v\nYmFy\r\n", 11, &n);

	(void)state;
	assert_non_null(r);
	assert_int_equal(n, 6);
	assert_memory_equal(r, "foobar", 6);
	free(r);
	r = b64_decode("Zm9vYg=\n=", 9, &n);
	assert_non_null(r);
	assert_memory_equal(r, "foob", 4);
	free(r);
	assert_int_equal(b64_value('/'), 63);
	assert_int_equal(b64_value('='), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc4648_vectors),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_line_breaks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
