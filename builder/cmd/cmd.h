/*
 * Commands: one file each in builder/cmd/, listed in the table in main.c.
 * A command returns the process exit code (enum wb_exit). Commands are the
 * only code besides main.c that prints to stdout/stderr.
 *
 * @where one command -- one file per command in `builder/cmd/`, listed in the
 *   table of `builder/main.c`
 */
#ifndef WB_CMD_H
#define WB_CMD_H

#include <stdio.h>
#include <time.h>

#include "lib/err.h"
#include "run.h"
#include "trust/sign.h"

struct wb_command {
	const char *name;
	int (*fn)(int argc, char **argv, struct wb_run *run);
	const char *usage;    /* one line: "plan RECIPE [options]" */
	const char *summary;  /* one line for `winbuild help` */
	const char *help;     /* what it does, for `winbuild help NAME` */
	const char *notes;    /* after the options: environment, exit codes */
};

/*
 * Messages (msg.c, a leaf: it calls no other cmd/ file). Only these print
 * errors and warnings; each line is kept for the --json result.
 */
/* Print "winbuild: MSG" to stderr and return e->code (or WB_EIO). */
int cmd_fail(const struct wb_err *e);
/* Print "winbuild: MSG" to stderr, kept for the --json result. */
void cmd_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Keep MSG[0..LEN) for the --json result (cmd_fail and cmd_errorf do). */
void cmd_record_error(const char *msg, size_t len);
/* The error lines printed so far, in order. */
const struct wb_strlist *cmd_reported_errors(void);
/* Print "winbuild: warning: MSG" on stderr and keep MSG for the --json
 * result's "warnings" (unless -q: nothing). */
void cmd_warnf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const struct wb_strlist *cmd_reported_warnings(void);
/* The run's logger sink (run->log.emit): errors and warnings go where
 * cmd_errorf and cmd_warnf put theirs, other levels plain on stderr. */
void cmd_log_line(struct wb_log *log, int level, const char *msg);
/* Print "usage: winbuild USAGE" and return WB_EUSAGE. */
int cmd_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Options (options.c). A command takes a set of options: common ones, one
 * bit each (OPT_*, named and explained in options.c), and its own, a
 * table of struct cmd_opt in its file. The parser and the help print the
 * same set. -h/--help is taken everywhere: it prints the command's help
 * and returns CMD_HELP_SHOWN, which main() turns into exit 0.
 */
enum cmd_common_opt {
	OPT_OVERRIDE = 1u << 0,     /* -O, --override FILE  -> run->overrides */
	OPT_SET = 1u << 1,          /* --set KEY=VALUE      -> run->sets */
	OPT_OUT = 1u << 2,          /* -o, --out DIR        -> run->out_dir */
	OPT_CACHE = 1u << 3,        /* --cache DIR          -> run->cache_dir */
	OPT_CACERT = 1u << 4,       /* --cacert FILE        -> run->cacert */
	OPT_LOCK = 1u << 5,         /* --lock FILE          -> run->lock_path */
	OPT_JOBS = 1u << 6,         /* -j, --jobs N         -> run->jobs */
	OPT_OFFLINE = 1u << 7,      /* --offline            -> run->offline */
	OPT_LOCKED = 1u << 8,       /* --locked             -> run->locked */
	OPT_JSON = 1u << 9,         /* --json               -> run->json */
	OPT_EXPLAIN = 1u << 10,     /* --explain            -> run->explain */
	OPT_VERBOSE = 1u << 11,     /* -v, --verbose        -> run->verbose */
	OPT_QUIET = 1u << 12,       /* -q, --quiet          -> run->quiet */
	OPT_NO_PROGRESS = 1u << 13, /* --no-progress        -> run->no_progress */
	OPT_BUILDER = 1u << 14,     /* -b, --builder NAME   -> run->builders */
	OPT_CREDS = 1u << 15,       /* --credentials FILE   -> run->credentials */
	OPT_NETRC = 1u << 16,       /* --netrc-file FILE    -> run->netrc_file */
};

/* What the recipe-driven commands share: recipe, cache, network, output. */
#define OPTS_RECIPE (OPT_OVERRIDE | OPT_SET | OPT_BUILDER)
#define OPTS_FETCH (OPTS_RECIPE | OPT_CACHE | OPT_CACERT | OPT_CREDS | OPT_NETRC | OPT_LOCK | OPT_JOBS | \
		    OPT_OFFLINE | OPT_LOCKED | OPT_QUIET | OPT_VERBOSE | OPT_NO_PROGRESS)
#define OPTS_STAGE (OPTS_FETCH | OPT_OUT)

#define CMD_HELP_SHOWN 1000   /* not an exit code: main() exits 0 */

/* A command's own option: NAME ("--builder"), optional ALIAS ("-b"),
 * ARGNAME ("NAME"; NULL for a flag) and one line of HELP ('\n' continues
 * it). With ARGNAME the value is stored in *STR (single) or pushed to *LIST
 * (repeatable); without, *FLAG is incremented. ID: a bit (1 << n) when
 * commands sharing the table take different parts of it (struct
 * cmd_optset.own_mask). A table ends with an entry whose NAME is NULL. */
struct cmd_opt {
	unsigned id;
	const char *name;
	const char *alias;
	const char *argname;
	const char *help;
	const char **str;
	struct wb_strlist *list;
	int *flag;
};

struct cmd_optset {
	unsigned common;             /* OPT_* bits */
	const struct cmd_opt *own;   /* NULL: none */
	unsigned own_mask;           /* the ids of OWN taken; 0: all of them */
	const char *usage;           /* printed after a usage error */
};

/* Parse ARGV[1..ARGC) against SET into RUN (positional arguments into
 * run->positional). Returns 0; WB_EUSAGE after printing the problem (an
 * unknown option gets the nearest one of SET); CMD_HELP_SHOWN for -h. */
int cmd_parse_options(int argc, char **argv, const struct cmd_optset *set,
		      struct wb_run *run);
/* The options of SET, one per line, as help shows them (options.c). */
void cmd_print_options(FILE *f, const struct cmd_optset *set);
/* Print run->entry's help (usage, summary, help, the options of each of
 * the N SETS under its TITLE ("options"), notes); returns CMD_HELP_SHOWN
 * (options.c). Without run->entry only the options. */
int cmd_show_help(const struct wb_run *run, const struct cmd_optset *const *sets,
		  const char *const *titles, size_t n);

/*
 * --json (json.c, docs/json.md): the result object of this run, created on
 * first use with "schema", "command", "ok", "exit" and "errors"; NULL
 * without --json. Commands add their fields; main() prints it when the
 * command returns (cmd_json_finish: ok, exit and the error lines filled
 * in), whatever the exit code. A command that prints its own document
 * (plan) sets run->json_done.
 */
struct json_t;
struct json_t *cmd_json(struct wb_run *run);
/* Set KEY of the result to VALUE (a new reference); drops VALUE without
 * --json. */
void cmd_json_set(struct wb_run *run, const char *key, struct json_t *value);
int cmd_json_finish(struct wb_run *run, int exit_code);
/* "recipe" and "artifacts" (each fetched item) of the result. */
struct plan;
struct fetch_item;
void cmd_json_fetch(struct wb_run *run, const struct plan *plan,
		    const struct fetch_item *items);

int cmd_plan(int argc, char **argv, struct wb_run *run);

struct plan;
/* Resolve RECIPE with the run's -O, $WINBUILD_SET and --set into PLAN
 * (pipeline.c, the driver's recipe step); prints the error and returns
 * its exit code on failure. */
int cmd_load_plan(struct wb_run *run, const char *recipe, struct plan *plan);
/* The same without printing the error: it is left in E for the caller
 * (the plan's warnings are printed either way). */
int cmd_resolve_plan(struct wb_run *run, const char *recipe, struct plan *plan,
		     struct wb_err *e);
int cmd_sig(int argc, char **argv, struct wb_run *run);
int cmd_emit(int argc, char **argv, struct wb_run *run);

/*
 * The environment and the install layout (env.c, a leaf: prints nothing).
 */
/* The data directory: templates (packer/, recipes/templates/), shipped
 * recipes and overrides. $WINBUILD_DATA_DIR, the binary's directory in a
 * source tree, ../share/winbuild beside the binary, or the share
 * directory compiled in. BUF holds the result when it is not static. */
const char *cmd_data_dir(char *buf, size_t len);
/* The stage's templates: $WINBUILD_TEMPLATES, else DATA/recipes/templates
 * with DATA as cmd_data_dir(). A new string. */
char *cmd_templates_dir(void);
/* $SOURCE_DATE_EPOCH in *OUT, or DFLT when it is unset or empty; -1 with
 * E (WB_EUSAGE) when it is not a whole number of seconds from 0 to
 * 253402300799 (9999-12-31T23:59:59Z). The one parser: stage and mirror
 * use it (stage's default 1980-01-01, mirror's the current time). */
int cmd_source_date_epoch(time_t dflt, time_t *out, struct wb_err *e);

/*
 * The fetch's progress display (progress.c, a leaf): bars on a terminal,
 * one line per artifact, LOG printing between them.
 */
struct fetch_progress;
struct cmd_progress {
	struct wb_run *run;
	int tty;             /* draw bars */
	int drawn;           /* lines of bars on screen */
	struct wb_log inner; /* the run's own sink, used after clearing bars */
	struct wb_log log;   /* hand this to the fetch: clears the bars first */
};
void cmd_progress_init(struct cmd_progress *d, struct wb_run *run);
void cmd_progress_show(struct cmd_progress *d, const struct fetch_progress *p);
/* "fetched NAME (SIZE, sha256 ..., EVIDENCE)" for a verified IT, unless
 * -q or --json. */
void cmd_progress_item(struct cmd_progress *d, const struct fetch_item *it);
void cmd_progress_clear(struct cmd_progress *d);

int cmd_fetch(int argc, char **argv, struct wb_run *run);
int cmd_lock(int argc, char **argv, struct wb_run *run);
int cmd_cache(int argc, char **argv, struct wb_run *run);
int cmd_list(int argc, char **argv, struct wb_run *run);
int cmd_stage(int argc, char **argv, struct wb_run *run);
int cmd_build(int argc, char **argv, struct wb_run *run);
int cmd_verify(int argc, char **argv, struct wb_run *run);
int cmd_mirror(int argc, char **argv, struct wb_run *run);
int cmd_image(int argc, char **argv, struct wb_run *run);

/* The options of emit, build and stage: one table (cmd/emit.c), each
 * option a bit; build takes all but the image-builder ones, stage only the
 * key options, which sign the files the recipe's site_signing selects
 * (EMIT_OPTS, BUILD_OPTS, STAGE_SIGN_OPTS). */
enum emit_opt {
	EO_SIGN_SCRIPTS = 1u << 1, EO_SIGN_CERT = 1u << 2,
	EO_SIGN_KEY = 1u << 3, EO_SIGN_PKCS12 = 1u << 4, EO_SIGN_PKCS11_URI = 1u << 5,
	EO_SIGN_PKCS11_MODULE = 1u << 6, EO_SIGN_PASS_FILE = 1u << 7,
	EO_SIGN_TIMESTAMP = 1u << 8, EO_FORMAT = 1u << 9, EO_MIRROR_URL = 1u << 10,
	EO_MATRIX = 1u << 11,
};
#define EMIT_OPTS ((EO_MIRROR_URL << 1) - 1)
#define BUILD_OPTS ((EMIT_OPTS & ~(EO_FORMAT | EO_MIRROR_URL)) | EO_MATRIX)
#define STAGE_SIGN_OPTS (EO_SIGN_CERT | EO_SIGN_KEY | EO_SIGN_PKCS12 | EO_SIGN_PKCS11_URI | \
			 EO_SIGN_PKCS11_MODULE | EO_SIGN_PASS_FILE | EO_SIGN_TIMESTAMP | \
			 EO_MATRIX)

struct emit_args {
	const char *format, *mirror_url;
	const char *matrix;          /* --matrix FILE (build, stage) */
	struct sign_opts so;
	int sign_scripts;
	struct cmd_opt table[12];
};

/* Parse ARGV with the common options of stage and the options of MASK
 * from A's table; one positional argument, or (with EO_MATRIX in MASK)
 * one or more, or none with --matrix (else USAGE). 0, or the exit code
 * (CMD_HELP_SHOWN for -h). */
int cmd_emit_args_parse(int argc, char **argv, unsigned mask, const char *usage,
			struct emit_args *a, struct wb_run *run);

#endif
