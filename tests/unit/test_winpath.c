/* lib/winpath: Windows name rules and C: → tree mapping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Every reserved device name, as Windows treats it: any case, any
 * extension, trailing spaces or dots, as a file or a directory anywhere in
 * the path. Dropping one name from the table fails here. */
static void test_every_reserved_name(void **state)
{
	static const char *const names[] = {
		"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$",
		"COM0", "COM1", "COM2", "COM3", "COM4", "COM5", "COM6", "COM7",
		"COM8", "COM9", "LPT0", "LPT1", "LPT2", "LPT3", "LPT4", "LPT5",
		"LPT6", "LPT7", "LPT8", "LPT9",
		"COM\xc2\xb9", "COM\xc2\xb2", "COM\xc2\xb3",
		"LPT\xc2\xb9", "LPT\xc2\xb2", "LPT\xc2\xb3",
	};
	/* prefix, suffix: the name as a file, with extensions, trailing spaces
	 * or dots, as a directory */
	static const char *const forms[][2] = {
		{ "C:\\k\\", "" }, { "C:\\k\\", ".txt" }, { "C:\\k\\", ".tar.gz" },
		{ "C:\\", "\\x.exe" }, { "C:\\a\\", " .log" }, { "C:\\a\\", "..x" },
		{ "C:\\a\\", " \\b" },
	};
	const char *why;
	char buf[128], low[32];

	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t k;

		for (k = 0; names[i][k]; k++)
			low[k] = (char)(names[i][k] >= 'A' && names[i][k] <= 'Z' ?
					names[i][k] + 32 : names[i][k]);
		low[k] = '\0';
		for (size_t f = 0; f < sizeof(forms) / sizeof(forms[0]); f++) {
			snprintf(buf, sizeof(buf), "%s%s%s", forms[f][0], names[i], forms[f][1]);
			expect_refused(buf);
			snprintf(buf, sizeof(buf), "%s%s%s", forms[f][0], low, forms[f][1]);
			expect_refused(buf);
		}
		assert_int_equal(winpath_reserved(names[i]), 1);
		assert_int_equal(winpath_name_ok(names[i], &why), 0);
		/* one letter more is an ordinary name */
		snprintf(buf, sizeof(buf), "%sX.txt", names[i]);
		assert_int_equal(winpath_name_ok(buf, &why), 1);
		snprintf(buf, sizeof(buf), "X%s", names[i]);
		assert_int_equal(winpath_name_ok(buf, &why), 1);
	}
	assert_int_equal(winpath_name_ok("COM\xc2\xb9" "0", &why), 1);
	assert_int_equal(winpath_name_ok("LPT\xc2\xb4", &why), 1);   /* acute accent */
}

static void expect_fold_same(const char *a, const char *b)
{
	char *fa = winpath_fold(a), *fb = winpath_fold(b);

	assert_string_equal(fa, fb);
	free(fa);
	free(fb);
}

static void expect_fold_differs(const char *a, const char *b)
{
	char *fa = winpath_fold(a), *fb = winpath_fold(b);

	assert_string_not_equal(fa, fb);
	free(fa);
	free(fb);
}

static void test_fold(void **state)
{
	char *f = winpath_fold("Program Files/Containerd/CTR.EXE");

	(void)state;
	assert_string_equal(f, "PROGRAM FILES/CONTAINERD/CTR.EXE");
	free(f);
	expect_fold_same("\xc3\xa9.exe", "\xc3\x89.exe");             /* é É */
	expect_fold_same("\xd0\xbe", "\xd0\x9e");                     /* Cyrillic о О */
	expect_fold_same("\xce\xb1\xce\xb2", "\xce\x91\xce\x92");     /* Greek αβ ΑΒ */
	expect_fold_same("\xc5\x93", "\xc5\x92");                     /* œ Œ */
	expect_fold_same("\xef\xbd\x81", "\xef\xbc\xa1");             /* fullwidth ａ Ａ */
	expect_fold_same("k/\xc3\xa9/a", "K/\xc3\x89/A");
	/* Latin o and Cyrillic о are different letters */
	expect_fold_differs("o", "\xd0\xbe");
	/* ß has no simple upper case: NTFS keeps it apart from "SS" */
	expect_fold_differs("\xc3\x9f", "SS");
	/* é precomposed and e + combining acute: NTFS does not normalise */
	expect_fold_differs("\xc3\xa9", "e\xcc\x81");
	/* outside the BMP nothing is folded (Deseret 𐐨 / 𐐀) */
	expect_fold_differs("\xf0\x90\x90\xa8", "\xf0\x90\x90\x80");
	/* bytes that are not UTF-8 stand for themselves: an overlong 'a'
	 * (0xe0 0x81 0xa1) or an encoded surrogate is never folded to a
	 * letter it does not spell (one strict decoder: lib/text.c) */
	expect_fold_differs("\xe0\x81\xa1", "A");
	expect_fold_differs("\xc1\xa1", "A");
	f = winpath_fold("\xe0\x81\xa1/\xed\xa0\x80x");
	assert_string_equal(f, "\xe0\x81\xa1/\xed\xa0\x80X");
	free(f);
}

static void test_short_names(void **state)
{
	(void)state;
	assert_int_equal(winpath_short_alias("KUBE-L~1.EXE", "kube-log-runner.exe"), 1);
	assert_int_equal(winpath_short_alias("kube-l~1.exe", "kube-log-runner.exe"), 1);
	assert_int_equal(winpath_short_alias("KUBE-L~4.EXE", "kube-log-runner.exe"), 1);
	assert_int_equal(winpath_short_alias("KUBE-~12.EXE", "kube-log-runner.exe"), 1);
	assert_int_equal(winpath_short_alias("KU3F2A~1.EXE", "kube-log-runner.exe"), 1);
	assert_int_equal(winpath_short_alias("PROGRA~1", "Program Files"), 1);
	assert_int_equal(winpath_short_alias("GITIGN~1", ".gitignore"), 1);
	assert_int_equal(winpath_short_alias("ABCDEF~1.TXT", "abc def ghi.txt"), 1);
	assert_int_equal(winpath_short_alias("ARCHIV~1.TAR", "archive.tar.gz"), 0);
	assert_int_equal(winpath_short_alias("ARCHIV~1.GZ", "archive.tar.gz"), 1);
	assert_int_equal(winpath_short_alias("ABC~1.TXT", "a.b.c.txt"), 1);
	assert_int_equal(winpath_short_alias("CAF_~1.TXT", "caf\xc3\xa9 menu.txt"), 0);
	assert_int_equal(winpath_short_alias("CAF_ME~1.TXT", "caf\xc3\xa9 menu.txt"), 1);
	/* not aliases */
	assert_int_equal(winpath_short_alias("KUBE-L~1.TXT", "kube-log-runner.exe"), 0);
	assert_int_equal(winpath_short_alias("KUBELO~1.EXE", "kube-log-runner.exe"), 0);
	assert_int_equal(winpath_short_alias("KUBE-L~0.EXE", "kube-log-runner.exe"), 0);
	assert_int_equal(winpath_short_alias("KUBELE~1.EXE", "kubelet.exe"), 0); /* 8.3 itself */
	assert_int_equal(winpath_short_alias("kube-log-runner.exe", "KUBE-L~1.EXE"), 0);
	assert_int_equal(winpath_short_alias("KUBE-L1.EXE", "kube-log-runner.exe"), 0);
}

static void test_paths_clash(void **state)
{
	const char *why;

	(void)state;
	assert_int_equal(winpath_paths_clash("k/\xc3\xa9.exe", "k/\xc3\x89.exe", &why), 1);
	assert_int_equal(winpath_paths_clash("Program Files/a", "PROGRA~1/b", &why), 1);
	assert_int_equal(winpath_paths_clash("k/kube-log-runner.exe", "k/KUBE-L~1.EXE", &why), 1);
	assert_int_equal(winpath_paths_clash("opt/Cni/bin", "opt/cni/bin/x.exe", &why), 1);
	assert_int_equal(winpath_paths_clash("opt/cni/bin", "opt/cni/bin", &why), 0);
	assert_int_equal(winpath_paths_clash("opt/cni/bin", "opt/cni/bin/x.exe", &why), 0);
	assert_int_equal(winpath_paths_clash("k/a.exe", "k/b.exe", &why), 0);
	assert_int_equal(winpath_paths_clash("a/X", "b/x", &why), 0);
	assert_int_equal(winpath_paths_clash("", "k", &why), 0);
}

static void test_max_path(void **state)
{
	char buf[600];
	const char *why;
	char *t;

	(void)state;
	/* "C:\\" + 256 = 259: the longest path MAX_PATH leaves room for */
	memcpy(buf, "C:\\", 3);
	memset(buf + 3, 'a', 200);
	buf[203] = '\\';
	memset(buf + 204, 'b', 55);
	buf[259] = '\0';
	t = winpath_to_tree(buf, &why);
	assert_non_null(t);
	free(t);
	buf[259] = 'b';
	buf[260] = '\0';
	expect_refused(buf);
	/* counted in UTF-16 units: é is one, an emoji outside the BMP two */
	memcpy(buf + 258, "\xc3\xa9", 3);                  /* 259 units */
	t = winpath_to_tree(buf, &why);
	assert_non_null(t);
	free(t);
	memcpy(buf + 258, "\xf0\x9f\x98\x80", 5);          /* 260 units */
	expect_refused(buf);
	assert_int_equal(winpath_tree_path_ok("k/a//b", &why), 0);
	assert_int_equal(winpath_tree_path_ok("k/CON/b", &why), 0);
	assert_int_equal(winpath_tree_path_ok("k/a/b", &why), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_maps_system_drive),
		cmocka_unit_test(test_refuses_outside),
		cmocka_unit_test(test_refuses_reserved_and_forbidden),
		cmocka_unit_test(test_fold),
		cmocka_unit_test(test_every_reserved_name),
		cmocka_unit_test(test_short_names),
		cmocka_unit_test(test_max_path),
		cmocka_unit_test(test_paths_clash),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
