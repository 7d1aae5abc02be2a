/*
 * Commands: one file each in builder/cmd/, listed in the table in main.c.
 * A command returns the process exit code (enum wb_exit). Commands are the
 * only code besides main.c that prints to stdout/stderr.
 */
#ifndef WB_CMD_H
#define WB_CMD_H

#include "lib/err.h"
#include "run.h"

struct wb_command {
	const char *name;
	int (*fn)(int argc, char **argv, struct wb_run *run);
	const char *usage;    /* one line: "plan RECIPE [options]" */
	const char *summary;  /* one line for `winbuild help` */
	const char *help;     /* full text for `winbuild help NAME` */
};

const struct wb_command *wb_commands(size_t *nr);

/* Print "winbuild: MSG" to stderr and return e->code (or WB_EIO). */
int cmd_fail(const struct wb_err *e);
/* Print "winbuild: MSG" to stderr, kept for the --json result. */
void cmd_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Keep MSG[0..LEN) for the --json result (cmd_fail and cmd_errorf do). */
void cmd_record_error(const char *msg, size_t len);
/* The error lines printed so far, in order. */
const struct wb_strlist *cmd_reported_errors(void);
/* Print "usage: winbuild USAGE" and return WB_EUSAGE. */
int cmd_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Common option parsing (options.c). ALLOWED is a string of option names
 * this command accepts, separated by spaces ("-O --set -o --json"); any
 * other option is a usage error. Positional arguments go to
 * run->positional. Returns 0, or WB_EUSAGE after printing the problem.
 */
int cmd_parse_options(int argc, char **argv, const char *allowed,
		      const char *usage, struct wb_run *run);

/* A command-specific option: NAME ("--builder") and optional ALIAS ("-b").
 * With HAS_ARG the value is stored in *STR (single) or pushed to *LIST
 * (repeatable); without, *FLAG is set to 1 (or incremented). */
struct cmd_opt {
	const char *name;
	const char *alias;
	int has_arg;
	const char **str;
	struct wb_strlist *list;
	int *flag;
};

/* As cmd_parse_options, with EXTRA (terminated by an entry with NULL name)
 * accepted besides the ALLOWED common options. */
int cmd_parse_options_ex(int argc, char **argv, const char *allowed,
			 const struct cmd_opt *extra, const char *usage,
			 struct wb_run *run);

int cmd_plan(int argc, char **argv, struct wb_run *run);

struct plan;
/* Resolve RECIPE with the run's -O, $WINBUILD_SET and --set into PLAN;
 * prints the error and returns its exit code on failure. */
int cmd_load_plan(struct wb_run *run, const char *recipe, struct plan *plan);
/* The same without printing: the error is left in E for the caller. */
int cmd_resolve_plan(struct wb_run *run, const char *recipe, struct plan *plan,
		     struct wb_err *e);
int cmd_sig(int argc, char **argv, struct wb_run *run);
int cmd_emit(int argc, char **argv, struct wb_run *run);

/* emit.c: write OUT/<name>/packer for a resolved PLAN (--builder list in
 * REQ_BUILDERS, may be empty), signing the scripts with SIGN unless it is
 * NULL; prints errors, returns the exit code. */
struct sign_opts;
int cmd_emit_plan(struct wb_run *run, const struct plan *plan,
		  const struct wb_strlist *req_builders,
		  const struct sign_opts *sign);
/* The directory holding the templates (packer/): $WINBUILD_DATA_DIR, the
 * binary's directory in a source tree, or the installed share directory. */
const char *cmd_data_dir(char *buf, size_t len);
int cmd_fetch(int argc, char **argv, struct wb_run *run);
int cmd_lock(int argc, char **argv, struct wb_run *run);
int cmd_cache(int argc, char **argv, struct wb_run *run);
int cmd_stage(int argc, char **argv, struct wb_run *run);
int cmd_build(int argc, char **argv, struct wb_run *run);
int cmd_verify(int argc, char **argv, struct wb_run *run);
int cmd_mirror(int argc, char **argv, struct wb_run *run);

/* The common options stage (and build) accept. */
#define CMD_STAGE_OPTIONS "-O --set -o --cache --cacert --lock -j --offline --locked " \
	"-q -v --no-progress"

/* Fetch and stage run->positional.v[0] (options already parsed): the body
 * of `winbuild stage`, shared with `emit` and `build`. Prints its errors;
 * returns the exit code. */
int cmd_stage_recipe(struct wb_run *run);

/*
 * The fetch driver shared by fetch, lock (and stage/build): resolve the
 * plan from RUN, read the lock file, open the cache and fetch everything
 * with the progress display. On return *ITEMS (plan->nartifacts of them)
 * holds every artifact's result, or is NULL when nothing was fetched (the
 * plan is then released). Returns 0 or -1 with E.
 */
struct plan;
struct fetch_item;
int cmd_fetch_plan(struct wb_run *run, int accept_new, struct plan *plan,
		   struct fetch_item **items, struct wb_err *e);
/* cmd_fetch_plan for stage, which works while the downloads run. Cache
 * hits through a ref are not re-hashed (fetch_opts.defer_rehash): the stage
 * hashes what it reads (fetch_item.unverified_hit). Hooks (each may be
 * NULL), with CTX:
 *   gate       once the plan, lock pins and items are ready, before
 *              anything is fetched; 1 = nothing to do: nothing is fetched
 *              and cmd_fetch_plan_for_stage returns 1 (items have no paths)
 *   start      after the gate said 0, before the first transfer; -1 (with
 *              E) stops: returns -1, the plan released, no items
 *   item_done  each item as it is done, ok or not, on the fetching thread
 *              (cache hits before the first transfer starts) */
struct cache;
struct cmd_stage_hooks {
	int (*gate)(void *ctx, const struct plan *plan,
		    const struct fetch_item *items, struct cache *c);
	int (*start)(void *ctx, const struct plan *plan, struct wb_err *e);
	void (*item_done)(void *ctx, const struct fetch_item *it);
	void *ctx;
};
int cmd_fetch_plan_for_stage(struct wb_run *run, struct plan *plan,
			     struct fetch_item **items,
			     const struct cmd_stage_hooks *hooks, struct wb_err *e);
void cmd_fetch_items_free(struct fetch_item *items, size_t n);
/* Print each failed item's message to stderr; E's message when no item
 * failed (an interrupt, an engine error). */
void cmd_fetch_report(const struct fetch_item *items, size_t n,
		      const struct wb_err *e);
/* After cmd_fetch_plan failed: print what failed (one error, or each
 * item's), return the exit code. */
int cmd_fetch_failed(struct wb_run *run, const struct plan *plan,
		     const struct fetch_item *items, const struct wb_err *e);

#endif
