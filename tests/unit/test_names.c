/* lib/names: the one validator for names that become paths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/names.h"

static void test_segment(void **state)
{
	static const char *const bad[] = {
		"", ".", "..", "a/b", "/", "a\\b", "..\\x", "a\x01" "b", "a\nb", "\t",
		"a\x7f", "a\xc2\x9b" "b", "a\xc2\x80", "\x1b[2J",
	};
	static const char *const good[] = {
		"a", "...", ".a", "a.", "containerd", "kube-log-runner.exe", "caf\xc3\xa9",
		"\xc2\xa0", "host:8443", "con",
	};
	const char *why;
	char longname[300];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		assert_int_equal(names_segment_ok(bad[i], &why), 0);
		assert_non_null(why);
		assert_int_equal(names_check(bad[i], &why), 0);
	}
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_int_equal(names_segment_ok(good[i], &why), 1);
	memset(longname, 'a', 255);
	longname[255] = '\0';
	assert_int_equal(names_segment_ok(longname, &why), 1);
	longname[255] = 'a';
	longname[256] = '\0';
	assert_int_equal(names_segment_ok(longname, &why), 0);
}

static void test_check_adds_windows_rules(void **state)
{
	const char *why;

	(void)state;
	assert_int_equal(names_check("containerd", &why), 1);
	assert_int_equal(names_check("kube-proxy", &why), 1);
	assert_int_equal(names_check("con", &why), 0);
	assert_int_equal(names_check("PRN.txt", &why), 0);
	assert_int_equal(names_check("a:b", &why), 0);
	assert_int_equal(names_check("a?", &why), 0);
	assert_int_equal(names_check("trailing.", &why), 0);
	assert_int_equal(names_check("lpt\xc2\xb3", &why), 0);
}

static void expect_url(const char *url, const char *want)
{
	const char *why = NULL;
	char *rel = names_url_path(url, &why);

	if (!want) {
		assert_null(rel);
		assert_non_null(why);
		return;
	}
	assert_non_null(rel);
	assert_string_equal(rel, want);
	free(rel);
}

static void test_url_path(void **state)
{
	(void)state;
	expect_url("https://dl.k8s.io/release/v1.33.5/bin/kubelet.exe",
		   "dl.k8s.io/release/v1.33.5/bin/kubelet.exe");
	expect_url("http://127.0.0.1:8080/a.bin?x=/../y#frag", "127.0.0.1_8080/a.bin");
	expect_url("http://[::1]:8080/p:q", "[__1]_8080/p:q");
	expect_url("https://h/a%2f..%2fb", "h/a%2f..%2fb");
	expect_url("https://h/a/../../x", NULL);
	expect_url("https://../x", NULL);
	expect_url("https://./x", NULL);
	expect_url("https://h/./x", NULL);
	expect_url("https://h//x", NULL);
	expect_url("https://h/x/", NULL);
	expect_url("https://h/a\\..\\x", NULL);
	expect_url("https://h/a\xc2\x9b/x", NULL);
	expect_url("https:///x", NULL);
	expect_url("https://", NULL);
	expect_url("no-scheme/x", NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_segment),
		cmocka_unit_test(test_check_adds_windows_rules),
		cmocka_unit_test(test_url_path),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
