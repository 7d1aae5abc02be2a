/* Common options for every command: one parser, one place. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "lib/buf.h"

enum opt_id {
	OPT_OVERRIDE, OPT_SET, OPT_OUT, OPT_CACHE, OPT_CACERT, OPT_LOCK, OPT_JOBS,
	OPT_OFFLINE, OPT_LOCKED, OPT_JSON, OPT_EXPLAIN, OPT_VERBOSE, OPT_QUIET,
	OPT_NO_PROGRESS,
};

static const struct common_opt {
	enum opt_id id;
	const char *name;
	const char *alias;
	int has_arg;
} common_opts[] = {
	{ OPT_OVERRIDE, "--override", "-O", 1 },
	{ OPT_SET, "--set", NULL, 1 },
	{ OPT_OUT, "--out", "-o", 1 },
	{ OPT_CACHE, "--cache", NULL, 1 },
	{ OPT_CACERT, "--cacert", NULL, 1 },
	{ OPT_LOCK, "--lock", NULL, 1 },
	{ OPT_JOBS, "--jobs", "-j", 1 },
	{ OPT_OFFLINE, "--offline", NULL, 0 },
	{ OPT_LOCKED, "--locked", NULL, 0 },
	{ OPT_JSON, "--json", NULL, 0 },
	{ OPT_EXPLAIN, "--explain", NULL, 0 },
	{ OPT_VERBOSE, "--verbose", "-v", 0 },
	{ OPT_QUIET, "--quiet", "-q", 0 },
	{ OPT_NO_PROGRESS, "--no-progress", NULL, 0 },
};

static int allowed_has(const char *allowed, const struct common_opt *o)
{
	const char *p = allowed;
	size_t n = strlen(o->name);

	while ((p = strstr(p, o->name)) != NULL) {
		if ((p == allowed || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
			return 1;
		p += n;
	}
	if (o->alias) {
		n = strlen(o->alias);
		p = allowed;
		while ((p = strstr(p, o->alias)) != NULL) {
			if ((p == allowed || p[-1] == ' ') &&
			    (p[n] == ' ' || p[n] == '\0'))
				return 1;
			p += n;
		}
	}
	return 0;
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

static int set_common(struct wb_run *run, enum opt_id id, const char *val,
		      const char *usage)
{
	char *end;
	long j;

	switch (id) {
	case OPT_OVERRIDE: wb_strlist_push(&run->overrides, val); break;
	case OPT_SET: wb_strlist_push(&run->sets, val); break;
	case OPT_OUT: run->out_dir = val; break;
	case OPT_CACHE: run->cache_dir = val; break;
	case OPT_CACERT: run->cacert = val; break;
	case OPT_LOCK: run->lock_path = val; break;
	case OPT_JOBS:
		j = strtol(val, &end, 10);
		if (*end || end == val || j < 1 || j > 64) {
			fprintf(stderr, "winbuild: --jobs takes a number from 1 to 64, not '%s'\n", val);
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
		fprintf(stderr, "winbuild: option '%s' needs a value\n", argv[*i]);
		return NULL;
	}
	return argv[++*i];
}

int cmd_parse_options_ex(int argc, char **argv, const char *allowed,
			 const struct cmd_opt *extra, const char *usage,
			 struct wb_run *run)
{
	int i, only_positional = 0;

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
		for (size_t k = 0; !done && k < ARRAY_SIZE(common_opts); k++) {
			const struct common_opt *o = &common_opts[k];

			if (!allowed_has(allowed, o) ||
			    !match_opt(arg, o->name, o->alias, o->has_arg, &val))
				continue;
			if (o->has_arg && !val && !(val = take_value(argc, argv, &i)))
				return cmd_usage("%s", usage);
			if (set_common(run, o->id, val, usage))
				return WB_EUSAGE;
			done = 1;
		}
		for (const struct cmd_opt *o = extra; !done && o && o->name; o++) {
			if (!match_opt(arg, o->name, o->alias, o->has_arg, &val))
				continue;
			if (o->has_arg && !val && !(val = take_value(argc, argv, &i)))
				return cmd_usage("%s", usage);
			if (o->has_arg && o->list)
				wb_strlist_push(o->list, val);
			else if (o->has_arg && o->str)
				*o->str = val;
			else if (o->flag)
				(*o->flag)++;
			done = 1;
		}
		if (!done) {
			fprintf(stderr, "winbuild: unknown option '%s'\n", arg);
			return cmd_usage("%s", usage);
		}
	}
	return 0;
}

int cmd_parse_options(int argc, char **argv, const char *allowed,
		      const char *usage, struct wb_run *run)
{
	return cmd_parse_options_ex(argc, argv, allowed, NULL, usage, run);
}
