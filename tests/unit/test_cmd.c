/*
 * cmd/ without main.o: the option parser (options.c), the messages it
 * prints (msg.c) and the environment readers (env.c), linked from
 * libwinbuild.a alone. This binary not linking is the failure that
 * cmd/msg.c removed: main.c held cmd_usage, cmd_errorf, cmd_show_help.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cmd/cmd.h"

/* argv strings: the parser takes char ** as main() gets it */
#define A(s) ((char *)(s))

#define USAGE "thing RECIPE [-j N] [--frob X]"

static const char *frob;
static int flag;

static const struct cmd_opt own[] = {
	{ 0, "--frob", NULL, "X", "frobnicate", &frob, NULL, NULL },
	{ 0, "--flag", NULL, NULL, "a flag", NULL, NULL, &flag },
	{ 0 },
};
static const struct cmd_optset set = { OPT_JOBS | OPT_OUT, own, 0, USAGE };

static void run_init(struct wb_run *run)
{
	memset(run, 0, sizeof(*run));
	run->command = "thing";
	run->jobs = 4;
	frob = NULL;
	flag = 0;
}

static int parse(struct wb_run *run, int argc, char **argv)
{
	return cmd_parse_options(argc, argv, &set, run);
}

/* The last error line recorded (for --json), or "" */
static const char *last_error(void)
{
	const struct wb_strlist *l = cmd_reported_errors();

	return l->nr ? l->v[l->nr - 1] : "";
}

static void test_parse_options(void **state)
{
	struct wb_run run;
	char *argv[] = { A("thing"), A("r.yaml"), A("-j"), A("7"), A("--frob=x"), A("--flag"), A("-o"), A("dir"),
			 A("--"), A("-not-an-option"), NULL };

	(void)state;
	run_init(&run);
	assert_int_equal(parse(&run, 10, argv), 0);
	assert_int_equal(run.jobs, 7);
	assert_string_equal(frob, "x");
	assert_int_equal(flag, 1);
	assert_string_equal(run.out_dir, "dir");
	assert_int_equal(run.positional.nr, 2);
	assert_string_equal(run.positional.v[0], "r.yaml");
	assert_string_equal(run.positional.v[1], "-not-an-option");
	wb_strlist_release(&run.positional);
}

static void test_usage_errors(void **state)
{
	struct wb_run run;
	char *unknown[] = { A("thing"), A("--frub"), A("y"), NULL };
	char *other[] = { A("thing"), A("--offline"), NULL };
	char *jobs[] = { A("thing"), A("-j"), A("65"), NULL };
	size_t before;

	(void)state;
	run_init(&run);
	before = cmd_reported_errors()->nr;
	assert_int_equal(parse(&run, 3, unknown), WB_EUSAGE);
	/* the problem, then the usage line: both kept for --json */
	assert_int_equal(cmd_reported_errors()->nr, before + 2);
	assert_string_equal(cmd_reported_errors()->v[before],
			    "unknown option '--frub' (did you mean '--frob'?)");
	assert_string_equal(last_error(), "usage: winbuild " USAGE);

	run_init(&run);
	assert_int_equal(parse(&run, 2, other), WB_EUSAGE);
	assert_non_null(strstr(cmd_reported_errors()->v[cmd_reported_errors()->nr - 2],
			       "'thing' does not take it"));

	run_init(&run);
	assert_int_equal(parse(&run, 3, jobs), WB_EUSAGE);
	assert_int_equal(run.jobs, 4);
	assert_non_null(strstr(cmd_reported_errors()->v[cmd_reported_errors()->nr - 2],
			       "--jobs takes a number from 1 to 64, not '65'"));
	wb_strlist_release(&run.positional);
}

static void test_help(void **state)
{
	struct wb_run run;
	char *argv[] = { A("thing"), A("--frob"), A("x"), A("-h"), NULL };

	(void)state;
	run_init(&run);
	/* no command table here (run.entry NULL): the options only */
	assert_int_equal(parse(&run, 4, argv), CMD_HELP_SHOWN);
}

static void test_fail_lines(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	const struct wb_strlist *l = cmd_reported_errors();
	size_t before = l->nr;

	(void)state;
	wb_error(&e, WB_EVERIFY, "a.yaml:1:2: first\na.yaml:3:4: second");
	assert_int_equal(cmd_fail(&e), WB_EVERIFY);
	assert_int_equal(l->nr, before + 2);
	assert_string_equal(l->v[before], "a.yaml:1:2: first");
	assert_string_equal(l->v[before + 1], "a.yaml:3:4: second");
	memset(&e, 0, sizeof(e));
	assert_int_equal(cmd_fail(&e), WB_EIO);
	assert_string_equal(last_error(), "unknown error");
}

static void test_source_date_epoch(void **state)
{
	static const char *const bad[] = { "soon", "12x", "-1", "1e9", "253402300800",
					   "99999999999999999999" };
	struct wb_err e = WB_ERR_INIT;
	time_t t;

	(void)state;
	unsetenv("SOURCE_DATE_EPOCH");
	assert_int_equal(cmd_source_date_epoch(42, &t, &e), 0);
	assert_int_equal((long long)t, 42);
	setenv("SOURCE_DATE_EPOCH", "", 1);
	assert_int_equal(cmd_source_date_epoch(42, &t, &e), 0);
	assert_int_equal((long long)t, 42);
	setenv("SOURCE_DATE_EPOCH", "1700000000", 1);
	assert_int_equal(cmd_source_date_epoch(42, &t, &e), 0);
	assert_int_equal((long long)t, 1700000000LL);
	setenv("SOURCE_DATE_EPOCH", "253402300799", 1);
	assert_int_equal(cmd_source_date_epoch(42, &t, &e), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&e, 0, sizeof(e));
		setenv("SOURCE_DATE_EPOCH", bad[i], 1);
		assert_int_equal(cmd_source_date_epoch(42, &t, &e), -1);
		assert_int_equal(e.code, WB_EUSAGE);
		assert_non_null(strstr(e.msg, bad[i]));
		assert_int_equal((long long)t, 42);
	}
	unsetenv("SOURCE_DATE_EPOCH");
}

static void test_data_dir(void **state)
{
	char buf[4096];
	char *t;

	(void)state;
	setenv("WINBUILD_DATA_DIR", "/some/data", 1);
	unsetenv("WINBUILD_TEMPLATES");
	assert_string_equal(cmd_data_dir(buf, sizeof(buf)), "/some/data");
	/* the templates follow the one data directory */
	t = cmd_templates_dir();
	assert_string_equal(t, "/some/data/recipes/templates");
	free(t);
	setenv("WINBUILD_TEMPLATES", "/tpl", 1);
	t = cmd_templates_dir();
	assert_string_equal(t, "/tpl");
	free(t);
	unsetenv("WINBUILD_TEMPLATES");
	unsetenv("WINBUILD_DATA_DIR");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_options),
		cmocka_unit_test(test_usage_errors),
		cmocka_unit_test(test_help),
		cmocka_unit_test(test_fail_lines),
		cmocka_unit_test(test_source_date_epoch),
		cmocka_unit_test(test_data_dir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
