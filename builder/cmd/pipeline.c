/*
 * The one driver: recipe -> fetch (+ trust) -> stage -> emit (pipeline.h).
 * Each step is a function of its own; fetch, lock, mirror, stage, emit and
 * build call the steps they need, and each image is resolved once.
 */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cmd/pipeline.h"
#include "emit/emit.h"
#include "fetch/cache.h"
#include "fetch/lockfile.h"
#include "lib/buf.h"
#include "lib/fs.h"
#include "stage/manifest.h"

void pipe_init(struct pipeline *p, struct wb_run *run, unsigned steps)
{
	memset(p, 0, sizeof(*p));
	p->run = run;
	p->steps = steps;
	/* issue 30: one image per recipe of the run */
	p->nimages = 1;
	p->images = xcalloc(1, sizeof(*p->images));
	p->images[0].recipe = run->positional.v[0];
}

void pipe_release(struct pipeline *p)
{
	for (size_t i = 0; i < p->nimages; i++) {
		struct pipe_image *img = &p->images[i];

		/* the stage first: its thread reads the items' descriptors */
		pipestage_release(&img->stage);
		if (img->items)
			for (size_t k = 0; k < img->plan.nartifacts; k++)
				fetch_item_release(&img->items[k]);
		free(img->items);
		if (img->resolved)
			plan_release(&img->plan);
	}
	free(p->images);
	p->images = NULL;
	p->nimages = 0;
}

/* ---- recipe --------------------------------------------------------------- */

/*
 * A RECIPE without a '/' that is not a file here names a shipped recipe:
 * DATA/recipes/RECIPE.yaml (or DATA/recipes/RECIPE), DATA as
 * cmd_data_dir(); an override so named (-O enterprise-mirror) is
 * DATA/overrides/NAME.yaml. NULL when there is none (the name is then used
 * as given). KIND_DIR: "recipes" or "overrides".
 */
static char *shipped(const char *kind_dir, const char *recipe)
{
	char data[PATH_MAX];
	const char *dir;
	char *p;

	if (!*recipe || strchr(recipe, '/') || fs_exists(recipe))
		return NULL;
	dir = cmd_data_dir(data, sizeof(data));
	p = xasprintf("%s/%s/%s.yaml", dir, kind_dir, recipe);
	if (!fs_exists(p)) {
		free(p);
		p = xasprintf("%s/%s/%s", dir, kind_dir, recipe);
	}
	if (fs_exists(p))
		return p;
	free(p);
	return NULL;
}

/* The plan's warnings, once per resolve. */
static void plan_warnings(struct wb_run *run, const struct plan *plan)
{
	char where[512];

	for (size_t i = 0; i < plan->nwarnings; i++) {
		wb_origin_format(&plan->warnings[i].origin, where, sizeof(where));
		cmd_warnf("%s: %s", where, plan->warnings[i].msg);
	}
	if (plan->iso_unverified) {
		wb_origin_format(&plan->policy.unverified_iso_origin, where, sizeof(where));
		cmd_warnf("the Windows ISO of the ISO builders is not verified (iso_checksum "
			  "\"none\"): policy.unverified_iso: allow at %s", where);
	}
	if (plan->iso_missing && (!run->command || (strcmp(run->command, "emit") &&
				   strcmp(run->command, "build")))) {
		struct wb_err w = WB_ERR_INIT;

		/* nothing downloads the ISO before emit: say now what a build
		 * will ask for (the same words emit and build refuse with) */
		plan_require_iso(plan, &w);
		cmd_warnf("%s (emit and build refuse until then)", w.msg);
	}
}

int cmd_resolve_plan(struct wb_run *run, const char *recipe, struct plan *plan,
		     struct wb_err *e)
{
	struct plan_inputs in;
	struct wb_strlist overrides = WB_STRLIST_INIT;
	char *ship = shipped("recipes", recipe);
	int ret;

	memset(&in, 0, sizeof(in));
	in.recipe = ship ? ship : recipe;
	for (size_t i = 0; i < run->overrides.nr; i++) {
		char *o = shipped("overrides", run->overrides.v[i]);

		wb_strlist_push(&overrides, o ? o : run->overrides.v[i]);
		free(o);
	}
	in.overrides = (const char *const *)overrides.v;
	in.noverrides = overrides.nr;
	in.env_set = run->env_set;
	in.sets = (const char *const *)run->sets.v;
	in.nsets = run->sets.nr;
	in.builders = (const char *const *)run->builders.v;
	in.nbuilders = run->builders.nr;
	ret = plan_resolve(&in, plan, e);
	free(ship);
	wb_strlist_release(&overrides);
	if (ret)
		return -1;
	/* one lock per image: the 2019 and 2022 recipes never share one */
	if (!run->lock_path) {
		free(run->lock_default);
		run->lock_default = xasprintf("%s.lock", plan->name);
		run->lock_path = run->lock_default;
	}
	plan_warnings(run, plan);
	return 0;
}

int cmd_load_plan(struct wb_run *run, const char *recipe, struct plan *plan)
{
	struct wb_err e = WB_ERR_INIT;

	if (cmd_resolve_plan(run, recipe, plan, &e))
		return cmd_fail(&e);
	return WB_OK;
}

int pipe_resolve(struct pipeline *p, struct pipe_image *img, struct wb_err *e)
{
	if (img->resolved)
		return 0;
	if (cmd_resolve_plan(p->run, img->recipe, &img->plan, e) < 0)
		return -1;
	img->resolved = 1;
	return 0;
}

/* ---- fetch (+ trust) ------------------------------------------------------ */

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

/* The lock file of the run for PLAN: read, made for this image, and (with
 * --locked) there and matching. 0, or -1 with E. */
static int read_lock(struct wb_run *run, const struct plan *plan, struct lockfile *lf,
		     struct wb_err *e)
{
	int have = lockfile_read(run->lock_path, lf, e);

	if (have < 0)
		return -1;
	if (have && lf->image && *lf->image && strcmp(lf->image, plan->name))
		/* its pins are another image's: never mix them into this one */
		return wb_error(e, run->locked ? WB_EVERIFY : WB_EUSAGE,
				"the lock file '%s' was made for image '%s', not '%s'; give "
				"this image's lock with --lock, or make one with 'winbuild "
				"lock' (default '%s.lock')", run->lock_path, lf->image,
				plan->name, plan->name);
	if (run->locked && !have)
		return wb_error(e, WB_EUSAGE, "--locked, but there is no lock file '%s'; "
				"run 'winbuild lock' first", run->lock_path);
	if (run->locked && check_locked(plan, lf, run->lock_path, e) < 0)
		return -1;
	return 0;
}

/*
 * SIGINT/SIGTERM while fetching or emitting: the handler only sets this
 * flag; the fetch loop sees it, drops its transfers and temp files; emit
 * stops at its next step or chunk and removes its temp dir (which holds
 * the one-off install password). The command exits WB_EINTR (130). The
 * one piece of global state a signal forces on the driver.
 */
static volatile sig_atomic_t pipe_interrupted;

static void on_interrupt(int sig)
{
	(void)sig;
	pipe_interrupted = 1;
}

/* No SA_RESTART: a blocked read returns and the flag is seen. */
static void catch_interrupts(struct sigaction *old_int, struct sigaction *old_term)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_interrupt;
	sigemptyset(&sa.sa_mask);
	pipe_interrupted = 0;
	sigaction(SIGINT, &sa, old_int);
	sigaction(SIGTERM, &sa, old_term);
}

static void restore_interrupts(const struct sigaction *old_int,
			       const struct sigaction *old_term)
{
	sigaction(SIGINT, old_int, NULL);
	sigaction(SIGTERM, old_term, NULL);
}

/* The fetch engine's context: one callback per event, each doing the
 * display's part and the stage's part itself. */
struct fetch_ctx {
	struct cmd_progress d;
	struct pipe_image *img;
	struct pipe_stage *stage;     /* IMG->staging, else NULL */
};

/* The plan index of IT. fetch_opts' callbacks hand over the item, not its
 * index (builder/fetch/fetch.h), so it is the item's place in IMG->items;
 * -1 for an item not of that array. */
static long item_index(const struct pipe_image *img, const struct fetch_item *it)
{
	for (size_t i = 0; i < img->plan.nartifacts; i++)
		if (&img->items[i] == it)
			return (long)i;
	return -1;
}

static void on_progress(void *ctx, const struct fetch_progress *p)
{
	struct fetch_ctx *f = ctx;

	cmd_progress_show(&f->d, p);
}

static int on_tee_open(void *ctx, const struct fetch_item *it)
{
	struct fetch_ctx *f = ctx;
	long i = item_index(f->img, it);

	return f->stage && i >= 0 ? pipestage_tee_open(f->stage, (size_t)i) : -1;
}

static void on_done(void *ctx, const struct fetch_item *it)
{
	struct fetch_ctx *f = ctx;
	long i = item_index(f->img, it);

	if (f->stage && i >= 0 && !it->status)
		pipestage_feed(f->stage, (size_t)i, it);
	cmd_progress_item(&f->d, it);
}

int pipe_fetch(struct pipeline *p, struct pipe_image *img, struct wb_err *e)
{
	struct wb_run *run = p->run;
	struct plan *plan = &img->plan;
	struct lockfile lf;
	struct cache c = CACHE_INIT;
	struct fetch_opts o;
	struct fetch_item *items;
	struct fetch_ctx f;
	struct sigaction old_int, old_term;
	int stage = img->staging;
	char *dir = NULL;
	int ret = -1;

	memset(&lf, 0, sizeof(lf));
	if (read_lock(run, plan, &lf, e) < 0)
		goto out;
	dir = cache_default_dir(run->cache_dir, e);
	if (!dir || cache_open(&c, dir, 0, e) < 0)
		goto out;

	items = xcalloc(plan->nartifacts + 1, sizeof(*items));
	for (size_t i = 0; i < plan->nartifacts; i++) {
		const struct lock_entry *le = lockfile_find(&lf, plan->artifacts[i].name);

		items[i].art = &plan->artifacts[i];
		if (le)   /* a hint for the progress totals, whatever is pinned */
			items[i].expect_size = le->size;
		if (le && (run->locked || plan->artifacts[i].verify.needs_pin))
			items[i].lock_sha256 = le->sha256;
	}
	if (stage && pipestage_gate(&img->stage, plan, items, &c) == 1) {
		for (size_t i = 0; i < plan->nartifacts; i++)
			items[i].lock_sha256 = NULL;
		img->items = items;
		ret = 1;
		goto out;
	}
	if (stage && pipestage_start(&img->stage, plan, e) < 0) {
		for (size_t i = 0; i < plan->nartifacts; i++)
			fetch_item_release(&items[i]);
		free(items);
		goto out;
	}
	img->items = items;
	cmd_progress_init(&f.d, run);
	f.img = img;
	f.stage = stage ? &img->stage : NULL;
	memset(&o, 0, sizeof(o));
	o.jobs = run->jobs > 0 ? run->jobs : 4;
	o.offline = run->offline;
	o.accept_new = p->accept_new;
	o.cacert = run->cacert ? run->cacert : getenv("SSL_CERT_FILE");
	o.credentials = run->credentials;
	o.netrc_file = run->netrc_file;
	o.log = &f.d.log;
	/* the stage hashes what it reads (fetch_item.unverified_hit) */
	o.defer_rehash = stage;
	o.on_progress = on_progress;
	o.probe_sizes = f.d.tty;   /* HEAD requests only for a progress shown */
	o.on_done = on_done;
	if (stage)
		o.tee_open = on_tee_open;
	o.ctx = &f;
	o.interrupted = &pipe_interrupted;
	catch_interrupts(&old_int, &old_term);
	ret = fetch_all(plan, items, plan->nartifacts, &c, &o, e);
	restore_interrupts(&old_int, &old_term);
	cmd_progress_clear(&f.d);
	if (ret == 0 && plan->nimages)   /* issue 33: cmd/pipeimages.c */
		ret = pipe_fetch_images(run, plan, &c, e);
	/* lock pins point into LF: keep them valid for the caller as copies */
	for (size_t i = 0; i < plan->nartifacts; i++)
		items[i].lock_sha256 = NULL;
out:
	free(dir);
	lockfile_release(&lf);
	cache_close(&c);
	return ret;
}

void pipe_fetch_report(const struct pipe_image *img, const struct wb_err *e)
{
	size_t failed = 0;

	for (size_t i = 0; img->items && i < img->plan.nartifacts; i++)
		if (img->items[i].status) {
			cmd_errorf("%s", img->items[i].err.msg);
			failed++;
		}
	if ((!failed || e->code == WB_EINTR) && e->msg[0])
		cmd_errorf("%s", e->msg);
}

int pipe_fetch_failed(struct pipeline *p, const struct pipe_image *img,
		      const struct wb_err *e)
{
	if (!img->items || p->run->offline)
		return cmd_fail(e);
	pipe_fetch_report(img, e);
	return e->code ? e->code : WB_EIO;
}

/* ---- emit ----------------------------------------------------------------- */

int pipe_emit(struct pipeline *p, const struct pipe_image *img)
{
	struct wb_run *run = p->run;
	const struct plan *plan = &img->plan;
	struct sigaction old_int, old_term;
	const struct wb_strlist *sel = &plan->builders;  /* narrowed by --builder */
	struct staged_manifest m;
	struct wb_err e = WB_ERR_INIT;
	struct emit_opts o;
	char data[PATH_MAX];
	char *outdir = fs_join(run->out_dir, plan->name);
	char *mpath = fs_join(outdir, "manifest.json");
	int ret;

	memset(&m, 0, sizeof(m));
	if (plan_require_iso(plan, &e)) {
		ret = cmd_fail(&e);
		goto out;
	}
	if (!fs_exists(mpath)) {
		cmd_errorf("'%s' not found: stage the recipe first "
			"('winbuild stage' or 'winbuild build')", mpath);
		ret = WB_ESTAGE;
		goto out;
	}
	if (staged_manifest_read(mpath, &m, &e)) {
		ret = cmd_fail(&e);
		goto out;
	}
	memset(&o, 0, sizeof(o));
	o.data_dir = cmd_data_dir(data, sizeof(data));
	o.out_dir = outdir;
	o.builders = sel;
	o.sign = p->emit_sign;
	o.interrupted = &pipe_interrupted;
	catch_interrupts(&old_int, &old_term);
	ret = emit_packer(plan, &m, &o, &e);
	restore_interrupts(&old_int, &old_term);
	if (ret || pipe_interrupted) {
		if (!ret)   /* too late to stop: the output is whole, say so */
			wb_error(&e, WB_EINTR, "interrupted after the Packer inputs were written");
		ret = cmd_fail(&e);
		goto out;
	}
	if (run->json) {
		json_t *b = json_array();

		for (size_t i = 0; i < sel->nr; i++)
			json_array_append_new(b, json_string(sel->v[i]));
		cmd_json_set(run, "packer", json_pack("{s:s++,s:s+++,s:s+++,s:o}",
			     "dir", outdir, "/", "packer",
			     "template", outdir, "/packer/", plan->name, ".pkr.hcl",
			     "var_file", outdir, "/packer/", plan->name, ".auto.pkrvars.hcl",
			     "builders", b));
	} else if (!run->quiet) {
		printf("%s/packer/%s.pkr.hcl\n", outdir, plan->name);
		printf("%s/packer/%s.auto.pkrvars.hcl\n", outdir, plan->name);
		printf("builders:");
		for (size_t i = 0; i < sel->nr; i++)
			printf(" %s", sel->v[i]);
		putchar('\n');
	}
	ret = WB_OK;
out:
	staged_manifest_release(&m);
	free(outdir);
	free(mpath);
	return ret;
}

/* ---- the run -------------------------------------------------------------- */

/* Fetch and stage IMG; prints its errors, returns the exit code. */
static int fetch_and_stage(struct pipeline *p, struct pipe_image *img)
{
	struct wb_run *run = p->run;
	struct wb_err e = WB_ERR_INIT;
	const char *dir;
	int ret;

	ret = pipe_fetch(p, img, &e);
	if (ret != 1)
		cmd_json_fetch(run, &img->plan, img->items);
	img->up_to_date = ret == 1;
	cmd_json_set(run, "up_to_date", json_boolean(img->up_to_date));
	dir = img->stage.dir;
	if (dir) {
		cmd_json_set(run, "out", json_string(dir));
		cmd_json_set(run, "tree", json_pack("s+", dir, "/tree"));
		cmd_json_set(run, "manifest", json_pack("s+", dir, "/manifest.json"));
	}
	if (ret == 1) {
		if (!run->quiet)
			fprintf(stderr, "up to date: %s/tree (nothing changed since the "
				"last stage)\n", dir);
		return WB_OK;
	}
	if (ret < 0)
		return pipe_fetch_failed(p, img, &e);
	return pipestage_finish(&img->stage, &img->plan, img->items);
}

/* PIPE_EMIT without PIPE_STAGE_ALWAYS (emit): stage only when nothing is
 * staged yet. */
static int needs_stage(const struct pipeline *p, const struct pipe_image *img)
{
	char *outdir, *mpath;
	int staged;

	if (!(p->steps & PIPE_EMIT) || (p->steps & PIPE_STAGE_ALWAYS))
		return (p->steps & PIPE_STAGE) != 0;
	outdir = fs_join(p->run->out_dir, img->plan.name);
	mpath = fs_join(outdir, "manifest.json");
	staged = fs_exists(mpath);
	free(outdir);
	free(mpath);
	return !staged;
}

int pipe_run(struct pipeline *p)
{
	int ret = WB_OK;

	for (size_t i = 0; i < p->nimages && !ret; i++) {
		struct pipe_image *img = &p->images[i];
		struct wb_err e = WB_ERR_INIT;

		/* SOURCE_DATE_EPOCH and the templates, before anything is
		 * resolved or fetched */
		if ((p->steps & PIPE_STAGE) && pipestage_init(&img->stage, p->run, &e) < 0)
			return cmd_fail(&e);
		if (pipe_resolve(p, img, &e) < 0) {
			if ((p->steps & PIPE_STAGE) && !(p->steps & PIPE_EMIT))
				cmd_json_set(p->run, "up_to_date", json_false());
			return cmd_fail(&e);
		}
		/* before anything is fetched: the ISO builders' digest is
		 * needed where it is used, in the Packer inputs */
		if ((p->steps & PIPE_EMIT) && plan_require_iso(&img->plan, &e))
			return cmd_fail(&e);
		if (needs_stage(p, img)) {
			if (!(p->steps & PIPE_STAGE) &&
			    pipestage_init(&img->stage, p->run, &e) < 0)
				return cmd_fail(&e);
			img->staging = 1;
			ret = fetch_and_stage(p, img);
		}
		if (!ret && (p->steps & PIPE_EMIT))
			ret = pipe_emit(p, img);
	}
	return ret;
}
