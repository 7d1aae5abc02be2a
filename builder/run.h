/*
 * struct wb_run: all state of one winbuild invocation, passed everywhere
 * (the only mutable state there is). Each field says which option set it.
 */
#ifndef WB_RUN_H
#define WB_RUN_H

#include <stddef.h>

struct json_t;
struct sign_opts;
struct wb_command;

#include "lib/log.h"
#include "lib/strlist.h"


struct wb_run {
	const char *argv0;
	const char *command;          /* the command being run */
	const struct wb_command *entry;  /* its row of main.c's table: the
	                               * help text cmd_show_help prints */

	/* common options (builder/cmd/options.c) */
	struct wb_strlist positional; /* RECIPE, DIR, ... */
	struct wb_strlist overrides;  /* -O/--override FILE, in order */
	struct wb_strlist sets;       /* --set key=value, in order */
	struct wb_strlist builders;   /* -b/--builder NAME: narrows packer.builders */
	const char *env_set;          /* $WINBUILD_SET */
	const char *out_dir;          /* -o/--out DIR (default "out") */
	const char *cache_dir;        /* --cache DIR, $WINBUILD_CACHE, XDG */
	const char *cacert;           /* --cacert FILE, $SSL_CERT_FILE */
	const char *credentials;      /* --credentials FILE (fetch/creds.h) */
	const char *netrc_file;       /* --netrc-file FILE */
	const char *lock_path;        /* --lock FILE (default <image name>.lock, set
	                               * once the plan is resolved: lock_default) */
	char *lock_default;           /* owned: "<image name>.lock" */
	int jobs;                     /* -j/--jobs N (default 4) */
	int offline;                  /* --offline */
	int locked;                   /* --locked */
	int json;                     /* --json */
	int explain;                  /* --explain */
	int verbose;                  /* -v (repeatable) */
	int quiet;                    /* -q */
	int no_progress;              /* --no-progress, or stderr not a TTY */
	/* stage, build: the --sign-* key for the recipe's site_signing
	 * (cmd/emit.c's table), or NULL; SIGN_STRICT: a key that signs
	 * nothing is a usage error (stage, build without --sign-scripts) */
	const struct sign_opts *sign;
	int sign_strict;

	struct json_t *json_result;   /* --json: the result (cmd/json.c) */
	int json_done;                /* --json: the result was printed */

	struct wb_log log;            /* where modules' messages go */
};

#endif
