/* recipe/node: YAML loading with origins and limits; merge semantics. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "recipe/node.h"

static char tmpl[] = "/tmp/wb-recipe-XXXXXX";
static char *dir;

static int setup(void **state)
{
	(void)state;
	dir = mkdtemp(tmpl);
	return dir ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[256];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

static char *write_file(const char *name, const char *text)
{
	char *path = malloc(strlen(dir) + strlen(name) + 2);
	FILE *f;

	sprintf(path, "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

static struct rnode *load_ok(const char *name, const char *text,
			     struct wb_strlist *names)
{
	struct wb_err e = WB_ERR_INIT;
	struct rnode *n = NULL;
	char *p = write_file(name, text);

	if (rnode_load_file(p, names, &n, &e))
		fail_msg("load failed: %s", e.msg);
	free(p);
	return n;
}

static void load_fails(const char *text, const char *want)
{
	struct wb_strlist names = WB_STRLIST_INIT;
	struct wb_err e = WB_ERR_INIT;
	struct rnode *n = NULL;
	char *p = write_file("bad.yaml", text);

	assert_int_equal(rnode_load_file(p, &names, &n, &e), -1);
	assert_null(n);
	assert_int_equal(e.code, WB_EUSAGE);
	if (!strstr(e.msg, want))
		fail_msg("'%s' does not contain '%s'", e.msg, want);
	free(p);
	wb_strlist_release(&names);
}

static void test_origins(void **state)
{
	struct wb_strlist names = WB_STRLIST_INIT;
	struct rnode *n = load_ok("a.yaml", "kind: image\nvars:\n  x: \"1\"\n", &names);
	const struct rnode *x = rnode_get(rnode_get(n, "vars"), "x");

	(void)state;
	assert_non_null(x);
	assert_string_equal(x->scalar, "1");
	assert_int_equal(x->origin.line, 3);
	assert_int_equal(x->origin.col, 6);
	assert_int_equal(x->key_origin.line, 3);
	assert_int_equal(x->key_origin.col, 3);
	assert_int_equal(x->plain, 0);
	rnode_free(n);
	wb_strlist_release(&names);
}

static void test_merge_maps_merge_lists_replace(void **state)
{
	struct wb_strlist names = WB_STRLIST_INIT;
	struct rnode *a = load_ok("a.yaml", "m: {a: 1, b: 2}\nl: [1, 2, 3]\ns: x\n", &names);
	struct rnode *b = load_ok("b.yaml", "m: {b: 3, c: 4}\nl: [9]\n", &names);
	struct rnode *m;

	(void)state;
	m = rnode_merge(a, b);
	assert_string_equal(rnode_get(rnode_get(m, "m"), "a")->scalar, "1");
	assert_string_equal(rnode_get(rnode_get(m, "m"), "b")->scalar, "3");
	assert_string_equal(rnode_get(rnode_get(m, "m"), "c")->scalar, "4");
	assert_int_equal(rnode_get(m, "l")->nr, 1);
	assert_string_equal(rnode_get(m, "l")->items[0]->scalar, "9");
	assert_string_equal(rnode_get(m, "s")->scalar, "x");
	/* the winning value keeps its own origin */
	assert_true(strstr(rnode_get(rnode_get(m, "m"), "b")->origin.file, "b.yaml") != NULL);
	assert_true(strstr(rnode_get(rnode_get(m, "m"), "a")->origin.file, "a.yaml") != NULL);
	rnode_free(m);
	wb_strlist_release(&names);
}

static void test_refusals(void **state)
{
	char deep[200];

	(void)state;
	load_fails("a: &x 1\nb: *x\n", "aliases are not supported");
	load_fails("a: 1\na: 2\n", "duplicate key 'a'");
	load_fails("", "empty file");
	load_fails("a: 1\n---\nb: 2\n", "more than one YAML document");
	load_fails("? [a]\n: 1\n", "map keys must be plain strings");
	memset(deep, '[', 40);
	memset(deep + 40, ']', 40);
	deep[80] = '\n';
	deep[81] = '\0';
	load_fails(deep, "nested deeper than 32 levels");
	load_fails("a: \"\xff\"\n", "not valid UTF-8");
}

static void test_string_values(void **state)
{
	struct wb_strlist names = WB_STRLIST_INIT;
	struct wb_origin o = { "--set", 2, 0 };
	struct wb_err e = WB_ERR_INIT;
	struct rnode *n = NULL;

	(void)state;
	assert_int_equal(rnode_load_string("[a, b]", &o, &n, &e), 0);
	assert_int_equal(n->type, RNODE_LIST);
	assert_int_equal(n->nr, 2);
	assert_string_equal(n->items[1]->origin.file, "--set");
	assert_int_equal(n->items[1]->origin.line, 2);
	rnode_free(n);
	assert_int_equal(rnode_load_string("[a, b", &o, &n, &e), -1);
	assert_true(strstr(e.msg, "--set") != NULL);
	wb_strlist_release(&names);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_origins),
		cmocka_unit_test(test_merge_maps_merge_lists_replace),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_string_values),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
