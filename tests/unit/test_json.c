/*
 * lib/json: bytes read from outside kept byte-exact in a record
 * (json_bytes / json_bytes_get): UTF-8 as a string, anything else (a
 * Latin-1 byte, a NUL, a cut sequence) as base64, and both read back to
 * the very bytes, through a dump and a load as a cache ref takes them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/json.h"

/* P[0..N) through json_bytes, json_dumps, json_loads, json_bytes_get;
 * *AS_STRING: whether it was kept as a JSON string */
static void round_trip(const char *p, size_t n, int *as_string)
{
	json_t *o = json_object(), *back;
	char *text, *got;
	size_t len = 0;

	json_object_set_new(o, "text", json_bytes(p, n));
	*as_string = json_is_string(json_object_get(o, "text"));
	text = json_dumps(o, 0);
	assert_non_null(text);
	back = json_loads(text, 0, NULL);
	assert_non_null(back);
	got = json_bytes_get(json_object_get(back, "text"), &len);
	assert_non_null(got);
	assert_int_equal(len, n);
	assert_memory_equal(got, p, n);
	assert_int_equal(got[n], '\0');
	free(got);
	free(text);
	json_decref(back);
	json_decref(o);
}

static void test_bytes_round_trip(void **state)
{
	static const char utf8[] = "{\"a\": \"caf\xc3\xa9\"}\n";
	static const char latin1[] = "caf\xe9 \xff\xfe\n{\"x\": 1}\n";
	static const char nul[] = "a\0b\n";
	static const char cut[] = "ok \xe2\x82";
	int s;

	(void)state;
	round_trip(utf8, sizeof(utf8) - 1, &s);
	assert_true(s);
	round_trip(latin1, sizeof(latin1) - 1, &s);
	assert_false(s);
	round_trip(nul, sizeof(nul) - 1, &s);
	assert_false(s);
	round_trip(cut, sizeof(cut) - 1, &s);
	assert_false(s);
	round_trip("", 0, &s);
	assert_true(s);
}

static void test_bytes_refused(void **state)
{
	json_t *bad = json_pack("{s:s}", "base64", "not base64!"), *num = json_integer(1);
	size_t len;

	(void)state;
	assert_null(json_bytes(NULL, 0));
	assert_null(json_bytes_get(bad, &len));
	assert_null(json_bytes_get(num, &len));
	assert_null(json_bytes_get(NULL, &len));
	json_decref(bad);
	json_decref(num);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bytes_round_trip),
		cmocka_unit_test(test_bytes_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
