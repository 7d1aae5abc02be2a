/* lib/winpath: Windows name rules and C: → tree mapping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "lib/winpath.h"

static void expect_tree(const char *win, const char *want)
{
	const char *why = NULL;
	char *t = winpath_to_tree(win, &why);

	assert_non_null(t);
	assert_string_equal(t, want);
	free(t);
}

static void expect_refused(const char *win)
{
	const char *why = NULL;
	char *t = winpath_to_tree(win, &why);

	assert_null(t);
	assert_non_null(why);
}

static void test_maps_system_drive(void **state)
{
	(void)state;
	expect_tree("C:\\Program Files\\containerd", "Program Files/containerd");
	expect_tree("C:/k", "k");
	expect_tree("c:\\k\\kubelet.exe", "k/kubelet.exe");
	expect_tree("C:\\", "");
	expect_tree("C:\\\\opt//cni\\bin\\", "opt/cni/bin");
}

static void test_refuses_outside(void **state)
{
	(void)state;
	expect_refused("D:\\k");
	expect_refused("\\k");
	expect_refused("k\\x");
	expect_refused("C:k");
	expect_refused("C:\\k\\..\\Windows");
	expect_refused("C:\\.\\k");
	expect_refused("\\\\server\\share\\x");
}

static void test_refuses_reserved_and_forbidden(void **state)
{
	const char *why;

	(void)state;
	expect_refused("C:\\k\\CON");
	expect_refused("C:\\k\\nul.txt");
	expect_refused("C:\\k\\com1");
	expect_refused("C:\\k\\LPT9.log");
	expect_refused("C:\\k\\a:b");
	expect_refused("C:\\k\\a*b");
	expect_refused("C:\\k\\what?");
	expect_refused("C:\\k\\q\"uote");
	expect_refused("C:\\k\\trailing.");
	expect_refused("C:\\k\\trailing ");
	assert_int_equal(winpath_name_ok("a\x01" "b", &why), 0);
	assert_int_equal(winpath_name_ok("console.exe", &why), 1);
	assert_int_equal(winpath_name_ok("com10", &why), 1);
	assert_int_equal(winpath_name_ok("kubelet.exe", &why), 1);
}

static void test_fold(void **state)
{
	char *f = winpath_fold("Program Files/Containerd/CTR.EXE");

	(void)state;
	assert_string_equal(f, "program files/containerd/ctr.exe");
	free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_maps_system_drive),
		cmocka_unit_test(test_refuses_outside),
		cmocka_unit_test(test_refuses_reserved_and_forbidden),
		cmocka_unit_test(test_fold),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
