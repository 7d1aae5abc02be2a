/*
 * winbuild fetch RECIPE: resolve the plan and fill the cache with every
 * artifact, verified. Also the shared driver (cmd_fetch_plan) that lock,
 * and later stage/build, use: plan + lock file + cache + progress display.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "fetch/cache.h"
#include "fetch/fetch.h"
#include "fetch/lockfile.h"
#include "lib/buf.h"
#include "recipe/plan.h"

#define FETCH_USAGE \
	"fetch RECIPE [-O FILE]... [--set K=V]... [--builder NAME]... [-j N] [--offline] [--locked] " \
	"[--lock FILE] [--cache DIR] [--cacert FILE] [--no-progress] [--json] [-q]"

/* ---- display ---------------------------------------------------------- */

struct display {
	struct wb_run *run;
	int tty;          /* draw bars */
	int drawn;        /* lines of bars on screen */
	struct wb_log inner;  /* the run's own sink, used after clearing bars */
	const struct cmd_stage_hooks *hooks;  /* stage's, or NULL */
};

static void human(unsigned long long n, char *out, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)n;
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u)
		snprintf(out, len, "%.1f %s", v, unit[u]);
	else
		snprintf(out, len, "%llu B", n);
}

/* "x/y UNIT" (the unit Y needs), or "x/?" when Y is unknown. */
static void human_pair(unsigned long long x, unsigned long long y, char *out,
		       size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double f = 1;
	int u = 0;

	if (!y) {
		human(x, out, len);
		snprintf(out + strlen(out), len - strlen(out), "/?");
		return;
	}
	while (y / f >= 1024 && u < 4) {
		f *= 1024;
		u++;
	}
	if (u)
		snprintf(out, len, "%.1f/%.1f %s", (double)x / f, (double)y / f, unit[u]);
	else
		snprintf(out, len, "%llu/%llu B", x, y);
}

static void clear_bars(struct display *d)
{
	for (; d->drawn > 0; d->drawn--)
		fputs("\033[1A\033[2K", stderr);
}

static void on_progress(void *ctx, const struct fetch_progress *p)
{
	struct display *d = ctx;
	char a[64], rate[32];
	double r;

	if (!d->tty)
		return;
	clear_bars(d);
	for (size_t i = 0; i < p->nxfers; i++) {
		const struct fetch_xfer_progress *x = &p->xfers[i];
		int pct = x->total ? (int)(x->now * 100 / x->total) : 0, w = 24;
		int fill = x->total ? pct * w / 100 : 0;

		if (x->waiting && x->holder == (long)getpid()) {
			fprintf(stderr, "  %-28.28s waiting for the same bytes in this run\n",
				x->name);
			d->drawn++;
			continue;
		}
		if (x->waiting) {
			fprintf(stderr, "  %-28.28s waiting for another winbuild", x->name);
			if (x->holder > 0)
				fprintf(stderr, " (pid %ld)", x->holder);
			fputs(" to download it\n", stderr);
			d->drawn++;
			continue;
		}
		human_pair(x->now, x->total, a, sizeof(a));
		fprintf(stderr, "  %-28.28s [%.*s%*s] %3d%% %s\n", x->name, fill,
			"########################", w - fill, "", pct, a);
		d->drawn++;
	}
	r = p->elapsed > 0 ? (double)p->bytes_now / p->elapsed : 0;
	human_pair(p->bytes_now, p->bytes_total, a, sizeof(a));
	human((unsigned long long)r, rate, sizeof(rate));
	fprintf(stderr, "  total %s, %s/s", a, rate);
	if (r > 0 && p->bytes_total > p->bytes_now)
		fprintf(stderr, ", ETA %.0fs", (double)(p->bytes_total - p->bytes_now) / r);
	fprintf(stderr, ", %zu/%zu done\n", p->items_done, p->items_total);
	d->drawn++;
}

static int on_tee_open(void *ctx, const struct fetch_item *it)
{
	struct display *d = ctx;

	return d->hooks->tee_open(d->hooks->ctx, it);
}

static void on_done(void *ctx, const struct fetch_item *it)
{
	struct display *d = ctx;
	char size[32], *how;

	if (d->hooks && d->hooks->item_done)
		d->hooks->item_done(d->hooks->ctx, it);
	if (d->run->quiet || d->run->json || it->status)
		return;
	clear_bars(d);
	human(it->size, size, sizeof(size));
	how = verify_evidence_describe(&it->ev);
	fprintf(stderr, "%s %s (%s, sha256 %.16s..., %s)\n",
		it->from_cache ? "cached " : "fetched", it->art->name, size, it->sha256, how);
	free(how);
}

static void log_emit(struct wb_log *log, int level, const char *msg)
{
	struct display *d = log->ctx;

	clear_bars(d);
	if (d->inner.emit)
		d->inner.emit(&d->inner, level, msg);
}

/* ---- the driver ------------------------------------------------------- */

/* --locked: every artifact in the lock, at a URL the plan still has, and
 * nothing in the lock that the plan lost. */
static int check_locked(const struct plan *plan, const struct lockfile *lf,
			const char *path, struct wb_err *e)
{
	for (size_t i = 0; i < plan->nartifacts; i++) {
		const struct plan_artifact *a = &plan->artifacts[i];
		const struct lock_entry *le = lockfile_find(lf, a->name);

		if (!le)
			return wb_error(e, WB_EVERIFY,
					"--locked: artifact '%s' is not in the lock file '%s'; "
					"run 'winbuild lock'", a->name, path);
		if (!wb_strlist_has(&a->urls, le->url))
			return wb_error(e, WB_EVERIFY,
					"--locked: artifact '%s' is locked at '%s', which the "
					"plan no longer uses (plan: '%s')", a->name, le->url,
					a->urls.nr ? a->urls.v[0] : a->upstream_url);
	}
	if (strcmp(lf->iso_sha256, plan->windows_iso_sha256 ? plan->windows_iso_sha256 : ""))
		return wb_error(e, WB_EVERIFY,
				"--locked: the lock file '%s' pins the Windows ISO at '%s', "
				"the plan at '%s'; run 'winbuild lock'", path,
				*lf->iso_sha256 ? lf->iso_sha256 : "none",
				plan->windows_iso_sha256 ? plan->windows_iso_sha256 : "none");
	for (size_t i = 0; i < lf->nr; i++)
		if (!plan_find_artifact(plan, lf->v[i].name))
			return wb_error(e, WB_EVERIFY,
					"--locked: the lock file '%s' holds artifact '%s', "
					"which the plan does not have", path, lf->v[i].name);
	return 0;
}

/*
 * SIGINT/SIGTERM while fetching: the handler only sets this flag; the fetch
 * loop sees it, drops its transfers and temp files, and the command exits
 * WB_EINTR (130). The one piece of global state a signal forces on us.
 */
static volatile sig_atomic_t fetch_interrupted;

static void on_interrupt(int sig)
{
	(void)sig;
	fetch_interrupted = 1;
}

static int fetch_plan(struct wb_run *run, int accept_new, struct plan *plan,
		      struct fetch_item **itemsp, const struct cmd_stage_hooks *hooks,
		      struct wb_err *e)
{
	struct lockfile lf;
	struct cache c = CACHE_INIT;
	struct fetch_opts o;
	struct fetch_item *items = NULL;
	struct display d;
	struct wb_log log;
	struct sigaction sa, old_int, old_term;
	char *dir = NULL;
	int ret, have_lock;

	*itemsp = NULL;
	memset(plan, 0, sizeof(*plan));
	memset(&lf, 0, sizeof(lf));
	if (cmd_resolve_plan(run, run->positional.v[0], plan, e) < 0)
		return -1;
	have_lock = lockfile_read(run->lock_path, &lf, e);
	if (have_lock < 0)
		goto fail;
	if (have_lock && lf.image && *lf.image && strcmp(lf.image, plan->name)) {
		/* its pins are another image's: never mix them into this one */
		wb_error(e, run->locked ? WB_EVERIFY : WB_EUSAGE,
			 "the lock file '%s' was made for image '%s', not '%s'; give this "
			 "image's lock with --lock, or make one with 'winbuild lock' "
			 "(default '%s.lock')", run->lock_path, lf.image, plan->name, plan->name);
		goto fail;
	}
	if (run->locked && !have_lock) {
		wb_error(e, WB_EUSAGE, "--locked, but there is no lock file '%s'; "
			 "run 'winbuild lock' first", run->lock_path);
		goto fail;
	}
	if (run->locked && check_locked(plan, &lf, run->lock_path, e) < 0)
		goto fail;
	dir = cache_default_dir(run->cache_dir, e);
	if (!dir || cache_open(&c, dir, 0, e) < 0)
		goto fail;
	free(dir);

	items = xcalloc(plan->nartifacts + 1, sizeof(*items));
	for (size_t i = 0; i < plan->nartifacts; i++) {
		const struct lock_entry *le = lockfile_find(&lf, plan->artifacts[i].name);

		items[i].art = &plan->artifacts[i];
		if (le)   /* a hint for the progress totals, whatever is pinned */
			items[i].expect_size = le->size;
		if (le && (run->locked || plan->artifacts[i].verify.needs_pin))
			items[i].lock_sha256 = le->sha256;
	}

	if (hooks && hooks->gate && hooks->gate(hooks->ctx, plan, items, &c) == 1) {
		for (size_t i = 0; i < plan->nartifacts; i++)
			items[i].lock_sha256 = NULL;
		lockfile_release(&lf);
		cache_close(&c);
		*itemsp = items;
		return 1;
	}
	if (hooks && hooks->start && hooks->start(hooks->ctx, plan, e) < 0) {
		cmd_fetch_items_free(items, plan->nartifacts);
		lockfile_release(&lf);
		cache_close(&c);
		plan_release(plan);
		return -1;
	}
	memset(&d, 0, sizeof(d));
	d.run = run;
	d.hooks = hooks;
	d.tty = !run->no_progress && !run->quiet && !run->json && isatty(STDERR_FILENO);
	d.inner = run->log;
	log = run->log;
	log.emit = log_emit;
	log.ctx = &d;
	if (run->quiet)
		log.level = WB_LOG_WARN;
	memset(&o, 0, sizeof(o));
	o.jobs = run->jobs > 0 ? run->jobs : 4;
	o.offline = run->offline;
	o.accept_new = accept_new;
	o.cacert = run->cacert ? run->cacert : getenv("SSL_CERT_FILE");
	o.log = &log;
	o.defer_rehash = hooks != NULL;
	o.on_progress = on_progress;
	o.probe_sizes = d.tty;   /* HEAD requests only for a progress shown */
	o.on_done = on_done;
	if (hooks && hooks->tee_open)
		o.tee_open = on_tee_open;
	o.ctx = &d;
	o.interrupted = &fetch_interrupted;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_interrupt;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	ret = fetch_all(plan, items, plan->nartifacts, &c, &o, e);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	clear_bars(&d);
	/* lock pins point into LF: keep them valid for the caller as copies */
	for (size_t i = 0; i < plan->nartifacts; i++)
		items[i].lock_sha256 = NULL;
	lockfile_release(&lf);
	cache_close(&c);
	*itemsp = items;
	return ret;
fail:
	free(dir);
	lockfile_release(&lf);
	plan_release(plan);
	return -1;
}

int cmd_fetch_plan(struct wb_run *run, int accept_new, struct plan *plan,
		   struct fetch_item **itemsp, struct wb_err *e)
{
	return fetch_plan(run, accept_new, plan, itemsp, NULL, e);
}

int cmd_fetch_plan_for_stage(struct wb_run *run, struct plan *plan,
			     struct fetch_item **itemsp,
			     const struct cmd_stage_hooks *hooks, struct wb_err *e)
{
	return fetch_plan(run, 0, plan, itemsp, hooks, e);
}

void cmd_fetch_items_free(struct fetch_item *items, size_t n)
{
	for (size_t i = 0; items && i < n; i++)
		fetch_item_release(&items[i]);
	free(items);
}

/* Print every failed item's message (the summary names only the first). */
void cmd_fetch_report(const struct fetch_item *items, size_t n,
		      const struct wb_err *e)
{
	size_t failed = 0;

	for (size_t i = 0; items && i < n; i++)
		if (items[i].status) {
			cmd_errorf("%s", items[i].err.msg);
			failed++;
		}
	if ((!failed || e->code == WB_EINTR) && e->msg[0])
		cmd_errorf("%s", e->msg);
}

int cmd_fetch(int argc, char **argv, struct wb_run *run)
{
	struct wb_err e = WB_ERR_INIT;
	struct plan plan;
	struct fetch_item *items = NULL;
	int ret;

	static const struct cmd_optset set = { OPTS_FETCH | OPT_JSON, NULL, 0, FETCH_USAGE };

	ret = cmd_parse_options(argc, argv, &set, run);
	if (ret)
		return ret;
	if (run->positional.nr != 1)
		return cmd_usage("%s", FETCH_USAGE);
	ret = cmd_fetch_plan(run, 0, &plan, &items, &e);
	cmd_json_fetch(run, &plan, items);
	if (ret < 0) {
		if (!items || run->offline) {
			ret = cmd_fail(&e);
		} else {
			cmd_fetch_report(items, plan.nartifacts, &e);
			ret = e.code ? e.code : WB_EIO;
		}
	} else if (!run->quiet && !run->json) {
		fprintf(stderr, "fetched %zu artifact%s into the cache, all verified\n",
			plan.nartifacts, plan.nartifacts == 1 ? "" : "s");
	}
	if (items) {
		cmd_fetch_items_free(items, plan.nartifacts);
		plan_release(&plan);
	}
	return ret;
}

int cmd_fetch_failed(struct wb_run *run, const struct plan *plan,
		     const struct fetch_item *items, const struct wb_err *e)
{
	if (!items || run->offline)
		return cmd_fail(e);
	cmd_fetch_report(items, plan->nartifacts, e);
	return e->code ? e->code : WB_EIO;
}
