/*
 * Options: one parser for every command, and the help it prints. A
 * command's options are a set: the common options it takes (OPT_* bits,
 * the table below) and its own (struct cmd_opt, a table in its file).
 * `winbuild help CMD` and `winbuild CMD --help` print that same set, so the
 * help cannot list an option the parser refuses, or miss one it takes.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "lib/buf.h"
#include "lib/text.h"

static const struct common_opt {
	unsigned id;
	const char *name;
	const char *alias;
	const char *argname;   /* NULL: a flag */
	const char *help;
} common_opts[] = {
	{ OPT_OVERRIDE, "--override", "-O", "FILE", "apply an override file (repeatable, later wins)" },
	{ OPT_SET, "--set", NULL, "KEY=VALUE", "set one recipe value (repeatable; beats everything)" },
	{ OPT_BUILDER, "--builder", "-b", "NAME", "only this Packer builder (repeatable): narrows the\n"
	  "recipe's packer.builders, and with it what a build\nneeds (an ISO digest only for ISO builders)" },
	{ OPT_OUT, "--out", "-o", "DIR", "output directory (default out)" },
	{ OPT_CACHE, "--cache", NULL, "DIR", "the cache (default $WINBUILD_CACHE, $XDG_CACHE_HOME/winbuild)" },
	{ OPT_CACERT, "--cacert", NULL, "FILE", "CA bundle for HTTPS (default $SSL_CERT_FILE, system)" },
	{ OPT_CREDS, "--credentials", NULL, "FILE", "credentials per server (default\n"
	  "$WINBUILD_CREDENTIALS, ~/.config/winbuild/credentials)" },
	{ OPT_NETRC, "--netrc-file", NULL, "FILE", "netrc for servers (default $NETRC, ~/.netrc)" },
	{ OPT_LOCK, "--lock", NULL, "FILE", "the lock file (default <image name>.lock)" },
	{ OPT_JOBS, "--jobs", "-j", "N", "parallel transfers, 1 to 64 (default 4)" },
	{ OPT_OFFLINE, "--offline", NULL, NULL, "no network: the cache and file:// URLs only" },
	{ OPT_LOCKED, "--locked", NULL, NULL, "refuse anything that differs from the lock file" },
	{ OPT_JSON, "--json", NULL, NULL, "print the result as JSON on stdout (docs/json.md)" },
	{ OPT_EXPLAIN, "--explain", NULL, NULL, "show where every value came from (file:line)" },
	{ OPT_VERBOSE, "--verbose", "-v", NULL, "more detail (repeatable)" },
	{ OPT_QUIET, "--quiet", "-q", NULL, "only errors" },
	{ OPT_NO_PROGRESS, "--no-progress", NULL, NULL, "no progress bars" },
};

static int own_taken(const struct cmd_optset *set, const struct cmd_opt *o)
{
	return !set->own_mask || (o->id & set->own_mask);
}

/*
 * Match ARG against NAME/ALIAS. Returns 1 on a match and sets *inline_val
 * to the value given as "--name=value" or "-jN" (NULL otherwise).
 */
static int match_opt(const char *arg, const char *name, const char *alias,
		     int has_arg, const char **inline_val)
{
	size_t n = strlen(name);

	*inline_val = NULL;
	if (!strcmp(arg, name) || (alias && !strcmp(arg, alias)))
		return 1;
	if (has_arg && !strncmp(arg, name, n) && arg[n] == '=') {
		*inline_val = arg + n + 1;
		return 1;
	}
	if (has_arg && alias && strlen(alias) == 2 && !strncmp(arg, alias, 2) &&
	    arg[2]) {
		*inline_val = arg + 2;
		return 1;
	}
	return 0;
}

static int set_common(struct wb_run *run, unsigned id, const char *val,
		      const char *usage)
{
	char *end;
	long j;

	switch (id) {
	case OPT_OVERRIDE: wb_strlist_push(&run->overrides, val); break;
	case OPT_SET: wb_strlist_push(&run->sets, val); break;
	case OPT_BUILDER: wb_strlist_push(&run->builders, val); break;
	case OPT_OUT: run->out_dir = val; break;
	case OPT_CACHE: run->cache_dir = val; break;
	case OPT_CACERT: run->cacert = val; break;
	case OPT_CREDS: run->credentials = val; break;
	case OPT_NETRC: run->netrc_file = val; break;
	case OPT_LOCK: run->lock_path = val; break;
	case OPT_JOBS:
		j = strtol(val, &end, 10);
		if (*end || end == val || j < 1 || j > 64) {
			cmd_errorf("--jobs takes a number from 1 to 64, not '%s'", val);
			return cmd_usage("%s", usage);
		}
		run->jobs = (int)j;
		break;
	case OPT_OFFLINE: run->offline = 1; break;
	case OPT_LOCKED: run->locked = 1; break;
	case OPT_JSON: run->json = 1; break;
	case OPT_EXPLAIN: run->explain = 1; break;
	case OPT_VERBOSE: run->verbose++; break;
	case OPT_QUIET: run->quiet = 1; break;
	case OPT_NO_PROGRESS: run->no_progress = 1; break;
	}
	return 0;
}

/* The value after option ARGV[*I], advancing *I; NULL (and a message) if
 * there is none. */
static const char *take_value(int argc, char **argv, int *i)
{
	if (*i + 1 >= argc) {
		cmd_errorf("option '%s' needs a value", argv[*i]);
		return NULL;
	}
	return argv[++*i];
}

/* "unknown option '--x'" with the nearest option of SET, or the word that
 * it is another command's. */
static int unknown_option(const char *arg, const struct cmd_optset *set,
			  const struct wb_run *run)
{
	char *name = xstrdup(arg), *eq = strchr(name, '=');
	struct text_suggest sg;
	const char *other = NULL;

	if (eq && name[1] == '-')
		*eq = '\0';
	text_suggest_init(&sg, name);
	for (size_t k = 0; k < ARRAY_SIZE(common_opts); k++) {
		const struct common_opt *o = &common_opts[k];

		if (set->common & o->id)
			text_suggest_add(&sg, o->name);
		else if (!strcmp(name, o->name) || (o->alias && !strcmp(name, o->alias)))
			other = o->name;
	}
	for (const struct cmd_opt *o = set->own; o && o->name; o++)
		if (own_taken(set, o))
			text_suggest_add(&sg, o->name);
	text_suggest_add(&sg, "--help");
	if (other)
		cmd_errorf("unknown option '%s': '%s' does not take it (see 'winbuild help %s')",
			   name, run->command ? run->command : "?",
			   run->command ? run->command : "");
	else if (sg.best)
		cmd_errorf("unknown option '%s' (did you mean '%s'?)", name, sg.best);
	else
		cmd_errorf("unknown option '%s'", name);
	free(name);
	return cmd_usage("%s", set->usage);
}

/*
 * @where command-line options: the one parser, the common options (`OPT_*`),
 *   each command's option set, the help's option list, did-you-mean for an
 *   unknown option -- the one parser
 */
int cmd_parse_options(int argc, char **argv, const struct cmd_optset *set,
		      struct wb_run *run)
{
	int i, only_positional = 0;

	/* --json first: a usage error in any option is a JSON result too */
	for (i = 1; (set->common & OPT_JSON) && i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--json"))
			run->json = 1;
	for (i = 1; i < argc; i++) {
		const char *arg = argv[i], *val = NULL;
		int done = 0;

		if (only_positional || arg[0] != '-' || !strcmp(arg, "-")) {
			wb_strlist_push(&run->positional, arg);
			continue;
		}
		if (!strcmp(arg, "--")) {
			only_positional = 1;
			continue;
		}
		if (!strcmp(arg, "--help") || !strcmp(arg, "-h"))
			return cmd_show_help(run, &set, (const char *const[]){ "options" }, 1);
		for (size_t k = 0; !done && k < ARRAY_SIZE(common_opts); k++) {
			const struct common_opt *o = &common_opts[k];

			if (!(set->common & o->id) ||
			    !match_opt(arg, o->name, o->alias, !!o->argname, &val))
				continue;
			if (o->argname && !val && !(val = take_value(argc, argv, &i)))
				return cmd_usage("%s", set->usage);
			if (set_common(run, o->id, val, set->usage))
				return WB_EUSAGE;
			done = 1;
		}
		for (const struct cmd_opt *o = set->own; !done && o && o->name; o++) {
			if (!own_taken(set, o) ||
			    !match_opt(arg, o->name, o->alias, !!o->argname, &val))
				continue;
			if (o->argname && !val && !(val = take_value(argc, argv, &i)))
				return cmd_usage("%s", set->usage);
			if (o->argname && o->list)
				wb_strlist_push(o->list, val);
			else if (o->argname && o->str)
				*o->str = val;
			else if (o->flag)
				(*o->flag)++;
			done = 1;
		}
		if (!done)
			return unknown_option(arg, set, run);
	}
	/* what the modules' log lines reach: -q only warnings and errors,
	 * -v the debug lines too (fetch's retries and redirects are info) */
	if (run->quiet)
		run->log.level = WB_LOG_WARN;
	else if (run->verbose)
		run->log.level = WB_LOG_DEBUG;
	return 0;
}

/* "  -o, --out DIR        help" (help on the next line when the left part
 * is too wide; a '\n' in HELP continues at the help column). */
static void print_option(FILE *f, const char *name, const char *alias,
			 const char *argname, const char *help)
{
	struct buf left = BUF_INIT;

	buf_addf(&left, "  %s%s%s%s%s", alias ? alias : "", alias ? ", " : "", name,
		 argname ? " " : "", argname ? argname : "");
	fputs(left.ptr, f);
	if (left.len >= 23)
		fprintf(f, "\n%23s", "");
	else
		fprintf(f, "%*s", (int)(23 - left.len), "");
	for (const char *p = help; *p; p++) {
		fputc(*p, f);
		if (*p == '\n')
			fprintf(f, "%23s", "");
	}
	fputc('\n', f);
	buf_release(&left);
}

/*
 * @where command-line options: the one parser, the common options (`OPT_*`),
 *   each command's option set, the help's option list, did-you-mean for an
 *   unknown option -- the help's option list, from the command's set
 */
void cmd_print_options(FILE *f, const struct cmd_optset *set)
{
	for (const struct cmd_opt *o = set->own; o && o->name; o++)
		if (own_taken(set, o))
			print_option(f, o->name, o->alias, o->argname, o->help);
	for (size_t k = 0; k < ARRAY_SIZE(common_opts); k++)
		if (set->common & common_opts[k].id)
			print_option(f, common_opts[k].name, common_opts[k].alias,
				     common_opts[k].argname, common_opts[k].help);
	print_option(f, "--help", "-h", NULL, "show this help");
}

/*
 * @where command-line options: the one parser, the common options (`OPT_*`),
 *   each command's option set, the help's option list, did-you-mean for an
 *   unknown option -- the help text, from the command table row
 *   `wb_run.entry`
 */
int cmd_show_help(const struct wb_run *run, const struct cmd_optset *const *sets,
		  const char *const *titles, size_t n)
{
	const struct wb_command *c = run->entry;

	if (c) {
		printf("usage: winbuild %s\n\n%s\n", c->usage, c->summary);
		if (*c->help)
			printf("\n%s", c->help);
	}
	for (size_t i = 0; i < n; i++) {
		printf("\n%s:\n", titles[i]);
		cmd_print_options(stdout, sets[i]);
	}
	if (c && *c->notes)
		printf("\n%s", c->notes);
	return CMD_HELP_SHOWN;
}
