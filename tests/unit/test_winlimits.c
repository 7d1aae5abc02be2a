/* lib/envlimits (one strict reader for the limits in the environment),
 * lib/winreserved (Windows' own services and folders) and text_record
 * (issue 25, classes 4 and 6). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/envlimits.h"
#include "lib/text.h"
#include "lib/winreserved.h"

static void test_parse_size(void **state)
{
	static const struct { const char *in; unsigned long long out; } good[] = {
		{ "1", 1 }, { "1k", 1024 }, { "1K", 1024 }, { "2KiB", 2048 },
		{ "1M", 1048576 }, { "3MiB", 3145728 }, { "2G", 2147483648ULL },
		{ "1GiB", 1073741824ULL }, { "500k", 512000 }, { "0", 0 },
	};
	static const char *const bad[] = {
		"", "-1", "+1", " 1", "1 ", "1 M", "1.5G", "1m", "1g", "1T", "1kb", "0x10",
		"1MB", "M", "18446744073709551616", "17179869184G",
	};
	unsigned long long n;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		n = 7;
		assert_int_equal(env_parse_size(good[i].in, &n), 0);
		assert_true(n == good[i].out);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(env_parse_size(bad[i], &n), -1);
}

static void test_limits_env(void **state)
{
	struct env_limits l;
	struct wb_err e = WB_ERR_INIT;

	(void)state;
	unsetenv("WINBUILD_MAX_SIZE");
	unsetenv("WINBUILD_RETRIES");
	assert_int_equal(env_limits_read(&l, &e), 0);
	assert_true(l.max_size == 2ULL << 30);
	assert_int_equal(l.retries, 3);
	setenv("WINBUILD_MAX_SIZE", "1M", 1);
	assert_int_equal(env_limits_read(&l, &e), 0);
	assert_true(l.max_size == 1048576);
	setenv("WINBUILD_MAX_SIZE", "64G", 1);
	assert_int_equal(env_limits_read(&l, &e), 0);
	setenv("WINBUILD_MAX_SIZE", "65G", 1);
	assert_int_equal(env_limits_read(&l, &e), -1);
	assert_int_equal(e.code, WB_EUSAGE);
	assert_non_null(strstr(e.msg, "WINBUILD_MAX_SIZE='65G'"));
	unsetenv("WINBUILD_MAX_SIZE");
	setenv("WINBUILD_RETRIES", "20", 1);
	assert_int_equal(env_limits_read(&l, &e), 0);
	assert_int_equal(l.retries, 20);
	setenv("WINBUILD_RETRIES", "21", 1);
	assert_int_equal(env_limits_read(&l, &e), -1);
	setenv("WINBUILD_RETRIES", "3s", 1);
	assert_int_equal(env_limits_read(&l, &e), -1);
	setenv("WINBUILD_RETRIES", "", 1);
	assert_int_equal(env_limits_read(&l, &e), 0);
	assert_int_equal(l.retries, 3);
	unsetenv("WINBUILD_RETRIES");
}

static void test_services(void **state)
{
	static const char *const reserved[] = {
		"WinDefend", "windefend", "TermService", "w32time", "W32Time", "mpssvc",
		"MpsSvc", "WinRM", "Dnscache", "AJRouter", "XblGameSave", "hns", "vmcompute",
		"diagnosticshub.standardcollector.service",
	};
	static const char *const free_names[] = {
		"containerd", "kubelet", "kube-proxy", "csiproxy", "evild", "WinDefend2",
		"Win", "", "zzz",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
		assert_int_equal(winreserved_service(reserved[i]), 1);
	for (size_t i = 0; i < sizeof(free_names) / sizeof(free_names[0]); i++)
		assert_int_equal(winreserved_service(free_names[i]), 0);
}

static void test_locations(void **state)
{
	static const char *const sys[] = {
		"", "Windows", "windows/system32", "Users/Public", "ProgramData",
		"Program Files", "PROGRA~1", "program files (x86)",
		"ProgramData/Microsoft/Windows Defender", "Program Files/Common Files/x",
		"$Recycle.Bin", "System Volume Information",
	};
	static const char *const own[] = {
		"k", "opt/cni/bin", "Program Files/containerd", "ProgramData/containerd",
		"var/lib/kubelet", "Windowsx", "UsersData", "Program Files/nssm/win64",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(sys) / sizeof(sys[0]); i++)
		assert_non_null(winreserved_location(sys[i]));
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		assert_null(winreserved_location(own[i]));
	assert_int_equal(winreserved_under("opt/evil/lib/x", "opt/evil/lib"), 1);
	assert_int_equal(winreserved_under("opt/evil/lib", "opt/evil/lib"), 1);
	assert_int_equal(winreserved_under("opt/evil/libx", "opt/evil/lib"), 0);
	assert_int_equal(winreserved_under("opt/evil", "opt/evil/lib"), 0);
	assert_int_equal(winreserved_under("OPT/Evil/Lib/x", "opt/evil/lib"), 1);
}

static void test_record(void **state)
{
	char *s;

	(void)state;
	s = text_record("C:\\k\tcaf\xc3\xa9");
	assert_string_equal(s, "C:\\k\tcaf\xc3\xa9");   /* UTF-8: as is */
	free(s);
	s = text_record("caf\xe9 C:\\k\t");
	assert_string_equal(s, "caf\\xe9 C:\\x5ck\\x09");   /* not UTF-8: escaped */
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_limits_env),
		cmocka_unit_test(test_services),
		cmocka_unit_test(test_locations),
		cmocka_unit_test(test_record),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
