/* lib/hex: the one hex-digest check and its case rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "lib/hex.h"

#define D64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void test_is(void **state)
{
	char k[66];

	(void)state;
	assert_true(hex_is(D64, 64, HEX_LOWER));
	assert_true(hex_is(D64, 64, HEX_ANY_CASE));
	memcpy(k, D64, 65);
	k[10] = 'A';
	assert_false(hex_is(k, 64, HEX_LOWER));      /* what winbuild wrote: lower */
	assert_true(hex_is(k, 64, HEX_ANY_CASE));    /* what others wrote: either */
	k[10] = 'g';
	assert_false(hex_is(k, 64, HEX_ANY_CASE));
	k[10] = 'a';
	k[63] = '\0';
	assert_false(hex_is(k, 64, HEX_ANY_CASE));   /* 63 */
	memcpy(k, D64, 65);
	k[64] = 'a';
	k[65] = '\0';
	assert_false(hex_is(k, 64, HEX_ANY_CASE));   /* 65 */
	assert_false(hex_is(NULL, 64, HEX_LOWER));
	assert_false(hex_is("", 64, HEX_LOWER));
	assert_true(hex_is("", 0, HEX_LOWER));
}

static void test_span(void **state)
{
	(void)state;
	assert_int_equal(hex_span("abcDEF12  name", 14, HEX_ANY_CASE), 8);
	assert_int_equal(hex_span("abcDEF12  name", 14, HEX_LOWER), 3);
	assert_int_equal(hex_span("abcdef", 4, HEX_LOWER), 4);     /* LEN bounds it */
	assert_int_equal(hex_span("xyz", 3, HEX_ANY_CASE), 0);
	assert_int_equal(hex_span("a\0b", 3, HEX_ANY_CASE), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_is),
		cmocka_unit_test(test_span),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
