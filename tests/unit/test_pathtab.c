/* lib/pathtab: the one table of paths placed on the Windows side. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/pathtab.h"

static void test_place(void **state)
{
	struct pathtab t = PATHTAB_INIT;
	struct pathtab_entry *old = NULL;

	(void)state;
	assert_int_equal(pathtab_place(&t, "bin", "a", 1, &old), PATHTAB_NEW);
	assert_int_equal(pathtab_place(&t, "bin/x.exe", "a", 0, &old), PATHTAB_NEW);
	/* a directory again, same spelling */
	assert_int_equal(pathtab_place(&t, "bin", "b", 1, &old), PATHTAB_AGAIN);
	/* a directory again, another spelling: a clash, with the first owner */
	assert_int_equal(pathtab_place(&t, "BIN", "b", 1, &old), PATHTAB_CLASH);
	assert_string_equal(old->path, "bin");
	assert_string_equal(old->owner, "a");
	/* a file twice; a file where a directory is; Unicode case */
	assert_int_equal(pathtab_place(&t, "bin/x.exe", "b", 0, &old), PATHTAB_CLASH);
	assert_int_equal(pathtab_place(&t, "bin", "b", 0, &old), PATHTAB_CLASH);
	assert_int_equal(old->is_dir, 1);
	assert_int_equal(pathtab_place(&t, "caf\xc3\xa9", "a", 0, &old), PATHTAB_NEW);
	assert_int_equal(pathtab_place(&t, "CAF\xc3\x89", "b", 0, &old), PATHTAB_CLASH);
	assert_string_equal(old->path, "caf\xc3\xa9");
	assert_int_equal(t.n, 3);
	pathtab_release(&t);
	assert_null(t.slots);
}

/* Past several growths every entry is still found, under any case, and
 * the walk sees each once. */
static void test_grow(void **state)
{
	struct pathtab t = PATHTAB_INIT;
	struct pathtab_entry *old, *s;
	char p[64];
	size_t pos = 0, seen = 0;

	(void)state;
	for (int i = 0; i < 3000; i++) {
		snprintf(p, sizeof(p), "dir%d/file%d.exe", i % 7, i);
		assert_int_equal(pathtab_place(&t, p, "a", 0, &old), PATHTAB_NEW);
	}
	for (int i = 0; i < 3000; i++) {
		snprintf(p, sizeof(p), "DIR%d/FILE%d.EXE", i % 7, i);
		old = NULL;
		assert_int_equal(pathtab_place(&t, p, "b", 0, &old), PATHTAB_CLASH);
		assert_non_null(old);
		assert_int_equal(atoi(strchr(old->path, 'e') + 1), i);
	}
	while ((s = pathtab_next(&t, &pos)))
		seen++;
	assert_int_equal(seen, 3000);
	assert_int_equal(t.n, 3000);
	pathtab_release(&t);
}

/* A caller's own keys (tree.c's 8.3 alias keys) sit beside the folded
 * paths, found only exactly. */
static void test_own_keys(void **state)
{
	struct pathtab t = PATHTAB_INIT;
	struct pathtab_entry *s;

	(void)state;
	assert_null(pathtab_find_key(&t, "\x01k"));
	s = pathtab_add_key(&t, strdup("\x01k"), "k/a.exe", "a", 0);
	s->tag = 2;
	s = pathtab_find_key(&t, "\x01k");
	assert_non_null(s);
	assert_int_equal(s->tag, 2);
	assert_string_equal(s->path, "k/a.exe");
	assert_null(pathtab_find_key(&t, "\x01K"));
	pathtab_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_place),
		cmocka_unit_test(test_grow),
		cmocka_unit_test(test_own_keys),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
