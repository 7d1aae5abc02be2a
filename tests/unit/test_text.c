/*
 * lib/text: strict UTF-8 (RFC 3629 table 2 boundaries, overlongs,
 * surrogates, above U+10FFFF, truncation) and the terminal escaper.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/text.h"

static int valid(const char *s)
{
	return text_utf8_valid(s, strlen(s));
}

static void test_utf8_valid(void **state)
{
	(void)state;
	assert_true(valid(""));
	assert_true(valid("plain ascii"));
	assert_true(valid("caf\xc3\xa9"));                 /* U+00E9 */
	assert_true(valid("\xc2\x80"));                    /* U+0080, lowest 2-byte */
	assert_true(valid("\xdf\xbf"));                    /* U+07FF */
	assert_true(valid("\xe0\xa0\x80"));                /* U+0800, lowest 3-byte */
	assert_true(valid("\xed\x9f\xbf"));                /* U+D7FF, below surrogates */
	assert_true(valid("\xee\x80\x80"));                /* U+E000, above surrogates */
	assert_true(valid("\xef\xbf\xbf"));                /* U+FFFF */
	assert_true(valid("\xf0\x90\x80\x80"));            /* U+10000 */
	assert_true(valid("\xf4\x8f\xbf\xbf"));            /* U+10FFFF, highest */
	assert_true(text_utf8_valid("a\0b", 1));
}

static void test_utf8_invalid(void **state)
{
	(void)state;
	assert_false(valid("\xc0\xaf"));                   /* overlong '/' */
	assert_false(valid("\xc1\xbf"));                   /* overlong */
	assert_false(valid("\xe0\x80\xaf"));               /* overlong 3-byte */
	assert_false(valid("\xe0\x9f\xbf"));               /* overlong U+07FF */
	assert_false(valid("\xf0\x80\x80\xaf"));           /* overlong 4-byte */
	assert_false(valid("\xf0\x8f\xbf\xbf"));           /* overlong U+FFFF */
	assert_false(valid("\xed\xa0\x80"));               /* U+D800 */
	assert_false(valid("\xed\xbf\xbf"));               /* U+DFFF */
	assert_false(valid("\xf4\x90\x80\x80"));           /* U+110000 */
	assert_false(valid("\xf5\x80\x80\x80"));
	assert_false(valid("\xff"));
	assert_false(valid("\x80"));                       /* lone continuation */
	assert_false(valid("caf\xe9"));                    /* Latin-1 */
	assert_false(valid("\xc3"));                       /* truncated */
	assert_false(valid("\xe2\x82"));                   /* truncated */
	assert_false(valid("\xc3\x28"));                   /* bad continuation */
	assert_false(text_utf8_valid("a\0b", 3));          /* NUL */
}

static void expect_printable(const char *in, const char *want)
{
	char *got = text_printable(in);

	assert_string_equal(got, want);
	free(got);
}

static void test_printable(void **state)
{
	(void)state;
	expect_printable("bin/kubelet.exe", "bin/kubelet.exe");
	expect_printable("caf\xc3\xa9/\xe6\x97\xa5", "caf\xc3\xa9/\xe6\x97\xa5");
	expect_printable("a\x1b[2Jb", "a\\x1b[2Jb");
	expect_printable("a\x1b[2J\nb\\c\xc2\x9b" "d\xc3\xa9",
			 "a\\x1b[2J\\x0ab\\x5cc\\xc2\\x9bd\xc3\xa9");
	expect_printable("line\nnext\r", "line\\x0anext\\x0d");
	expect_printable("del\x7f", "del\\x7f");
	expect_printable("c1\xc2\x9b" "x", "c1\\xc2\\x9bx");        /* U+009B CSI */
	expect_printable("rtl\xe2\x80\xae" "x", "rtl\\xe2\\x80\\xaex"); /* U+202E */
	expect_printable("iso\xe2\x81\xa6" "x", "iso\\xe2\\x81\\xa6x"); /* U+2066 */
	expect_printable("caf\xe9", "caf\\xe9");
	expect_printable("\xc0\xaf", "\\xc0\\xaf");
	expect_printable("back\\slash", "back\\x5cslash");
}

static const char *suggest(const char *want, const char *const *cands)
{
	struct text_suggest sg;

	text_suggest_init(&sg, want);
	for (; *cands; cands++)
		text_suggest_add(&sg, *cands);
	return sg.best;
}

static void test_suggest(void **state)
{
	const char *const keys[] = { "name", "version", "vars", "artifacts", NULL };
	const char *const opts[] = { "--cache", "--cacert", "--offline", NULL };
	const char *const comps[] = { "cni-plugins", "containerd", "crictl", NULL };

	(void)state;
	assert_int_equal(text_edit_distance("kitten", "sitting"), 3);
	assert_int_equal(text_edit_distance("", "abc"), 3);
	assert_int_equal(text_edit_distance("same", "same"), 0);
	assert_string_equal(suggest("verison", keys), "version");    /* transposed */
	assert_string_equal(suggest("nmae", keys), "name");
	assert_string_equal(suggest("varz", keys), "vars");
	assert_string_equal(suggest("contianerd", comps), "containerd");
	assert_string_equal(suggest("--ofline", opts), "--offline");
	assert_string_equal(suggest("--cache-dir", opts), "--cache"); /* a prefix of it */
	assert_string_equal(suggest("arti", keys), "artifacts");     /* it is a prefix */
	assert_null(suggest("zzzzzz", keys));
	assert_null(suggest("version", keys));                       /* itself: no advice */
	assert_int_equal(text_edit_distance(
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "a"), 99);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8_valid),
		cmocka_unit_test(test_utf8_invalid),
		cmocka_unit_test(test_printable),
		cmocka_unit_test(test_suggest),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
