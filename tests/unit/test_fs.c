/* lib/fs: fs_remove_tree removes only what is strictly below its root. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/buf.h"
#include "lib/fs.h"

struct fx {
	char dir[64];
	char *root, *victim;
};

static void touch(const char *path)
{
	struct wb_err e = WB_ERR_INIT;

	assert_int_equal(fs_write_atomic(path, "x", 1, 0644, &e), 0);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct wb_err e = WB_ERR_INIT;
	char *p;

	strcpy(f->dir, "/tmp/wb-test-fs.XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	f->root = fs_join(f->dir, "root");
	f->victim = fs_join(f->dir, "victim");
	p = fs_join(f->victim, "sub");
	fs_mkdir_p(p, 0755, &e);
	free(p);
	p = fs_join(f->victim, "keep.txt");
	touch(p);
	free(p);
	p = fs_join(f->root, "own/a/b");
	fs_mkdir_p(p, 0755, &e);
	free(p);
	p = fs_join(f->root, "own/a/b/f.txt");
	touch(p);
	free(p);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	if (system(cmd) != 0)
		return -1;
	free(f->root);
	free(f->victim);
	free(f);
	return 0;
}

static int victim_intact(const struct fx *f)
{
	char *p = fs_join(f->victim, "keep.txt"), *q = fs_join(f->victim, "sub");
	int ok = fs_exists(p) && fs_exists(q);

	free(p);
	free(q);
	return ok;
}

static void test_removes_below_root(void **state)
{
	struct fx *f = *state;
	struct wb_err e = WB_ERR_INIT;
	char *p = fs_join(f->root, "own"), *r;

	/* a read-only directory inside goes too */
	r = fs_join(f->root, "own/a/b");
	chmod(r, 0555);
	assert_int_equal(fs_remove_tree(f->root, "own", &e), 0);
	assert_false(fs_exists(p));
	assert_true(fs_exists(f->root));
	/* missing is fine */
	assert_int_equal(fs_remove_tree(f->root, "own", &e), 0);
	assert_int_equal(fs_remove_tree(f->dir, "nothing/here", &e), 0);
	free(p);
	free(r);
}

static void test_refuses_escapes(void **state)
{
	static const char *const rels[] = {
		"../victim", "..", ".", "", "/etc", "own/../../victim", "own/./a",
		"own//a", "own/", "a\\..\\..\\victim",
	};
	struct fx *f = *state;

	for (size_t i = 0; i < sizeof(rels) / sizeof(rels[0]); i++) {
		struct wb_err e = WB_ERR_INIT;

		assert_int_equal(fs_remove_tree(f->root, rels[i], &e), -1);
		assert_int_equal(e.code, WB_EIO);
	}
	assert_true(victim_intact(f));
}

static void test_symlinks_never_followed(void **state)
{
	struct fx *f = *state;
	struct wb_err e = WB_ERR_INIT;
	char *l1 = fs_join(f->root, "link"), *l2 = fs_join(f->root, "own/a/link");
	char *l3 = fs_join(f->root, "own/a/b/link"), *p = fs_join(f->root, "own");

	assert_int_equal(symlink(f->victim, l1), 0);
	assert_int_equal(symlink(f->victim, l2), 0);
	assert_int_equal(symlink(f->victim, l3), 0);
	/* the target itself a symlink: refused, not followed, not removed */
	assert_int_equal(fs_remove_tree(f->root, "link", &e), -1);
	assert_true(fs_exists(l1));
	/* a symlink on the way: refused */
	assert_int_equal(fs_remove_tree(f->root, "link/sub", &e), -1);
	assert_int_equal(fs_remove_tree(f->root, "own/a/link/sub", &e), -1);
	/* symlinks inside: unlinked, their targets untouched */
	assert_int_equal(fs_remove_tree(f->root, "own", &e), 0);
	assert_false(fs_exists(p));
	assert_true(victim_intact(f));
	/* a regular file is not the directory winbuild made */
	p[0] = '\0';
	free(p);
	p = fs_join(f->root, "file");
	touch(p);
	assert_int_equal(fs_remove_tree(f->root, "file", &e), -1);
	assert_true(fs_exists(p));
	free(l1);
	free(l2);
	free(l3);
	free(p);
}

static void test_remove_below(void **state)
{
	struct fx *f = *state;
	struct wb_err e = WB_ERR_INIT;
	char *p = fs_join(f->root, "own"), *esc = xasprintf("%s/../victim", f->root);

	assert_int_equal(fs_remove_below(f->root, f->victim, &e), -1);
	assert_int_equal(fs_remove_below(f->root, esc, &e), -1);
	assert_int_equal(fs_remove_below(f->root, f->root, &e), -1);
	assert_true(victim_intact(f));
	assert_int_equal(fs_remove_below(f->root, p, &e), 0);
	assert_false(fs_exists(p));
	free(p);
	free(esc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_removes_below_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refuses_escapes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlinks_never_followed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remove_below, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
