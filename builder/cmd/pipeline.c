/*
 * The one driver: recipe -> fetch (+ trust) -> stage -> emit (pipeline.h).
 * Each step is a function of its own; fetch, lock, mirror, stage, emit and
 * build call the steps they need, and each image is resolved once.
 */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cmd/pipeline.h"
#include "fetch/registry.h"
#include "emit/emit.h"
#include "fetch/cache.h"
#include "fetch/lockfile.h"
#include "lib/buf.h"
#include "lib/fs.h"
#include "stage/manifest.h"
#include "trust/verify.h"

void pipe_init(struct pipeline *p, struct wb_run *run, unsigned steps)
{
	memset(p, 0, sizeof(*p));
	p->run = run;
	p->steps = steps;
	p->nimages = 1;
	p->images = xcalloc(1, sizeof(*p->images));
	p->images[0].recipe = run->positional.nr ? run->positional.v[0] : "";
}

void pipe_add_recipes(struct pipeline *p)
{
	const struct wb_strlist *pos = &p->run->positional;

	if (pos->nr < 2)
		return;
	free(p->images);
	p->nimages = pos->nr;
	p->images = xcalloc(pos->nr, sizeof(*p->images));
	for (size_t i = 0; i < pos->nr; i++)
		p->images[i].recipe = pos->v[i];
	p->matrix = 1;
}

static void image_items_release(struct pipe_image *img)
{
	for (size_t k = 0; img->items && k < img->plan.nartifacts; k++) {
		if (!img->borrowed)
			fetch_item_release(&img->items[k]);
		else if (img->fd_owned[k] && img->items[k].has_fd)
			close(img->items[k].fd);
	}
	free(img->items);
	free(img->fd_owned);
	img->items = NULL;
	img->fd_owned = NULL;
}

void pipe_release(struct pipeline *p)
{
	/* the stages first: their threads read the items' descriptors */
	for (size_t i = 0; i < p->nimages; i++)
		pipestage_release(&p->images[i].stage);
	for (size_t i = 0; i < p->nimages; i++) {
		struct pipe_image *img = &p->images[i];

		image_items_release(img);
		for (size_t k = 0; img->pulled && k < img->plan.nimages; k++)
			registry_image_release(&img->pulled[k]);
		free(img->pulled);
		if (img->resolved)
			plan_release(&img->plan);
		if (img->lf)
			lockfile_release(img->lf);
		free(img->lf);
		free(img->recipe_owned);
		free(img->suffix);
		free(img->where);
		free(img->lock_path);
		wb_strlist_release(&img->sets);
		wb_strlist_release(&img->builders);
		wb_strlist_release(&img->errors);
		json_decref(img->json);
	}
	for (size_t g = 0; g < p->ngroups; g++) {
		struct pipe_group *gr = &p->groups[g];

		for (size_t u = 0; gr->shared && u < gr->n; u++)
			fetch_item_release(&gr->items[u]);
		if (gr->shared)
			free(gr->items);
		free(gr->routes);
		free(gr->first);
	}
	free(p->groups);
	free(p->images);
	p->groups = NULL;
	p->ngroups = 0;
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
 * @where `winbuild list`; a shipped recipe or override found by name
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

/* The plan's warnings, once per resolve.
 * @where where the Windows ISO digest is required (`windows.iso_sha256` for
 *   ISO builders, `policy.unverified_iso`) -- the warnings
 * @where one source per version, and the plan's warnings for values that look
 *   inconsistent -- printed once per resolve
 */
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

/* RECIPE resolved with the run's -O, $WINBUILD_SET and --set, then SETS
 * (a matrix entry's), narrowed to BUILDERS; with SET_LOCK the run's lock
 * path defaults to "<image name>.lock". */
static int resolve_with(struct wb_run *run, const char *recipe, const struct wb_strlist *sets,
			const struct wb_strlist *builders, int set_lock, struct plan *plan,
			struct wb_err *e)
{
	struct plan_inputs in;
	struct wb_strlist overrides = WB_STRLIST_INIT, all_sets = WB_STRLIST_INIT;
	char *ship = shipped("recipes", recipe), data[PATH_MAX];
	int ret;

	memset(&in, 0, sizeof(in));
	in.recipe = ship ? ship : recipe;
	in.data_dir = cmd_data_dir(data, sizeof(data));
	for (size_t i = 0; i < run->overrides.nr; i++) {
		char *o = shipped("overrides", run->overrides.v[i]);

		wb_strlist_push(&overrides, o ? o : run->overrides.v[i]);
		free(o);
	}
	for (size_t i = 0; i < run->sets.nr; i++)
		wb_strlist_push(&all_sets, run->sets.v[i]);
	for (size_t i = 0; sets && i < sets->nr; i++)
		wb_strlist_push(&all_sets, sets->v[i]);
	in.overrides = (const char *const *)overrides.v;
	in.noverrides = overrides.nr;
	in.env_set = run->env_set;
	in.sets = (const char *const *)all_sets.v;
	in.nsets = all_sets.nr;
	in.builders = (const char *const *)builders->v;
	in.nbuilders = builders->nr;
	ret = plan_resolve(&in, plan, e);
	free(ship);
	wb_strlist_release(&overrides);
	wb_strlist_release(&all_sets);
	if (ret)
		return -1;
	/* one lock per image: the 2019 and 2022 recipes never share one */
	if (set_lock && !run->lock_path) {
		free(run->lock_default);
		run->lock_default = xasprintf("%s.lock", plan->name);
		run->lock_path = run->lock_default;
	}
	plan_warnings(run, plan);
	return 0;
}

/*
 * @where the lock file read and write (the one reader and writer); a lock
 *   made for another image refused -- `<image name>.lock` by default
 */
int cmd_resolve_plan(struct wb_run *run, const char *recipe, struct plan *plan,
		     struct wb_err *e)
{
	return resolve_with(run, recipe, NULL, &run->builders, 1, plan, e);
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
	struct wb_run *run = p->run;

	if (img->resolved)
		return 0;
	if (resolve_with(run, img->recipe, &img->sets,
			 img->builders.nr ? &img->builders : &run->builders, !p->matrix,
			 &img->plan, e) < 0)
		return -1;
	img->resolved = 1;
	if (img->suffix) {
		/* a matrix entry's distinct output name: OUT/<name>, the
		 * Packer file names, <name>.lock */
		char *name = xasprintf("%s-%s", img->plan.name, img->suffix);

		free(img->plan.name);
		img->plan.name = name;
	}
	if (p->matrix)
		img->lock_path = xasprintf("%s.lock", img->plan.name);
	return 0;
}

/* The lock file IMG reads (and a matrix writes). */
static const char *image_lock(const struct pipeline *p, const struct pipe_image *img)
{
	return img->lock_path ? img->lock_path : p->run->lock_path;
}

/* ---- fetch (+ trust) ------------------------------------------------------ */

/* --locked: every container image in the lock at the digest the plan
 * pins (a needs_pin image takes the lock's), nothing more in the lock.
 * @where container images in the lock (pin, build manifest, os.version,
 *   cosign evidence) -- `--locked` holds the digests
 */
static int check_locked_images(const struct plan *plan, const struct lockfile *lf,
			       const char *path, struct wb_err *e)
{
	size_t k;

	for (size_t i = 0; i < plan->nimages; i++) {
		const struct plan_image *im = &plan->images[i];
		const struct lock_image *li = lockfile_find_image(lf, im->key);

		if (!li)
			return wb_error(e, WB_EVERIFY, "--locked: image '%s' is not in the "
					"lock file '%s'; run 'winbuild lock'", im->key, path);
		if (im->digest && strcmp(im->digest, li->digest))
			return wb_error(e, WB_EVERIFY, "--locked: image '%s' is pinned at %s, "
					"the lock file '%s' at %s; run 'winbuild lock' to accept "
					"the new digest", im->key, im->digest, path, li->digest);
	}
	for (size_t i = 0; i < lf->nimages; i++) {
		for (k = 0; k < plan->nimages && strcmp(plan->images[k].key, lf->images[i].key); k++)
			;
		if (k == plan->nimages)
			return wb_error(e, WB_EVERIFY, "--locked: the lock file '%s' holds image "
					"'%s', which the plan does not have", path,
					lf->images[i].key);
	}
	return 0;
}

/* --locked: every artifact in the lock, and nothing in the lock that the
 * plan lost. The lock binds bytes: each artifact's digest is the lock's
 * (pipe_image_prepare hands it to the fetch as lock_sha256), wherever it
 * comes from. A URL the plan no longer has (a corporate mirror, an export
 * moved: issue 42) is reported, and refused under policy.locked_urls:
 * refuse. */
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
		if (!wb_strlist_has(&a->urls, le->url) && plan->policy.refuse_locked_urls)
			return wb_error(e, WB_EVERIFY,
					"--locked: artifact '%s' is locked at '%s', which the "
					"plan no longer uses (plan: '%s'; policy.locked_urls: "
					"refuse)", a->name, le->url,
					a->urls.nr ? a->urls.v[0] : a->upstream_url);
		if (!wb_strlist_has(&a->urls, le->url))
			cmd_warnf("--locked: artifact '%s' is locked at '%s', which the plan no "
				  "longer uses (plan: '%s'); its bytes must still be the lock's "
				  "sha256 %s", a->name, le->url,
				  a->urls.nr ? a->urls.v[0] : a->upstream_url, le->sha256);
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
	return check_locked_images(plan, lf, path, e);
}

/* The lock file of the run for PLAN: read, made for this image, and (with
 * --locked) there and matching. 0, or -1 with E.
 * @where the lock file read and write (the one reader and writer); a lock
 *   made for another image refused -- a lock made for another image refused
 */
static int read_lock(struct wb_run *run, const char *path, const struct plan *plan,
		     struct lockfile *lf, struct wb_err *e)
{
	int have = lockfile_read(path, lf, e);

	if (have < 0)
		return -1;
	if (have && lf->image && *lf->image && strcmp(lf->image, plan->name))
		/* its pins are another image's: never mix them into this one */
		return wb_error(e, run->locked ? WB_EVERIFY : WB_EUSAGE,
				"the lock file '%s' was made for image '%s', not '%s'; give "
				"this image's lock with --lock, or make one with 'winbuild "
				"lock' (default '%s.lock')", path, lf->image,
				plan->name, plan->name);
	if (run->locked && !have)
		return wb_error(e, WB_EUSAGE, "--locked, but there is no lock file '%s'; "
				"run 'winbuild lock' first", path);
	if (run->locked && check_locked(plan, lf, path, e) < 0)
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

/*
 * @where SIGINT/SIGTERM during a fetch or an emit (flag, cleanup, exit 130)
 *   -- the flag
 */
static void on_interrupt(int sig)
{
	(void)sig;
	pipe_interrupted = 1;
}

/* No SA_RESTART: a blocked read returns and the flag is seen. */
void pipe_catch_interrupts(struct sigaction *old_int, struct sigaction *old_term)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_interrupt;
	sigemptyset(&sa.sa_mask);
	pipe_interrupted = 0;
	sigaction(SIGINT, &sa, old_int);
	sigaction(SIGTERM, &sa, old_term);
}

void pipe_restore_interrupts(const struct sigaction *old_int,
			       const struct sigaction *old_term)
{
	sigaction(SIGINT, old_int, NULL);
	sigaction(SIGTERM, old_term, NULL);
}

/* The fetch engine's context: one callback per event, each doing the
 * display's part and the stage's part (of every image the item is
 * routed to) itself. */
struct fetch_ctx {
	struct cmd_progress d;
	struct pipe_group *g;
};

static void on_progress(void *ctx, const struct fetch_progress *p)
{
	struct fetch_ctx *f = ctx;

	cmd_progress_show(&f->d, p);
}

/* A second open file of FD's file, with its own offset: the stages of two
 * images read the same verified entry at once, and a copy seeks (tree.c).
 * /proc/self/fd reopens the very inode, never the path a cache writer may
 * have swapped; without /proc, a dup (the offset shared). -1 on failure. */
static int reopen_fd(int fd)
{
	char path[64];
	int r;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	r = open(path, O_RDONLY | O_CLOEXEC);
	return r >= 0 ? r : fcntl(fd, F_DUPFD_CLOEXEC, 0);
}

/* Route R of item U is done: give its image the result (a view of the
 * group's item: its strings and evidence stay the group's). */
static void route_copy(struct pipe_group *g, struct pipe_route *r, size_t u)
{
	struct fetch_item *dst = &r->img->items[r->k];
	const struct fetch_item *src = &g->items[u];
	const struct plan_artifact *art = dst->art;
	const char *pin = dst->lock_sha256;
	unsigned long long expect = dst->expect_size;

	if (r->copied || !g->shared)
		return;
	*dst = *src;
	dst->art = art;
	dst->lock_sha256 = pin;
	dst->expect_size = expect;
	/* only the image the download was teed to has the copy */
	dst->teed = r->tee && src->teed;
	if (src->has_fd && r != &g->routes[g->first[u]]) {
		dst->fd = reopen_fd(src->fd);
		dst->has_fd = dst->fd >= 0;
		r->img->fd_owned[r->k] = dst->has_fd;
	}
	r->copied = 1;
}

/*
 * @where where a download's bytes are also written to their staged place as
 *   they arrive (the tee) -- `fetch_opts.tee_open`
 */
static int on_tee_open(void *ctx, size_t u, const struct fetch_item *it)
{
	struct fetch_ctx *f = ctx;

	(void)it;
	for (size_t r = f->g->first[u]; r != SIZE_MAX; r = f->g->routes[r].next) {
		struct pipe_route *ro = &f->g->routes[r];
		int fd;

		if (!ro->img->staging)
			continue;
		fd = pipestage_tee_open(&ro->img->stage, ro->k);
		if (fd >= 0) {
			ro->tee = 1;
			return fd;
		}
	}
	return -1;
}

static void on_done(void *ctx, size_t u, const struct fetch_item *it)
{
	struct fetch_ctx *f = ctx;

	for (size_t r = f->g->first[u]; r != SIZE_MAX; r = f->g->routes[r].next) {
		struct pipe_route *ro = &f->g->routes[r];

		route_copy(f->g, ro, u);
		if (ro->img->staging && !it->status)
			pipestage_feed(&ro->img->stage, ro->k, &ro->img->items[ro->k]);
	}
	cmd_progress_item(&f->d, it);
}

/* Read IMG's lock (kept: its pins until the fetch is done). -1 with E. */
int pipe_image_read_lock(struct pipeline *p, struct pipe_image *img, struct wb_err *e)
{
	img->lf = xcalloc(1, sizeof(*img->lf));
	return read_lock(p->run, image_lock(p, img), &img->plan, img->lf, e);
}

/*
 * Issue 42: every pin the run needs, named before anything is fetched. A
 * needs_pin artifact the lock does not pin (verify_plan's refusal, the one
 * a download would meet) and an image with neither a digest nor a lock
 * entry (pipe_image_unpinned, the image pull's) stop the run here, all of
 * them in one error, instead of one by one after every other download.
 * One missing pin keeps its own message; several get a count above them.
 */
static int pins_missing(const struct pipeline *p, const struct plan *plan,
			const struct lockfile *lf, struct wb_err *e)
{
	struct buf all = BUF_INIT;
	struct wb_err one;
	size_t n = 0;

	for (size_t i = 0; i < plan->nartifacts + plan->nimages; i++) {
		int r;

		wb_err_clear(&one);
		if (i < plan->nartifacts) {
			const struct plan_artifact *a = &plan->artifacts[i];
			const struct lock_entry *le = lockfile_find(lf, a->name);
			struct verify_needs needs;

			if (!a->verify.needs_pin)
				continue;
			r = verify_plan(&a->verify, &plan->policy, le ? le->sha256 : NULL,
					p->accept_new, &needs, &one);
			/* a pin that is there but refused is the download's to say */
			if (!r || one.code != WB_EUSAGE)
				continue;
		} else {
			const struct plan_image *im = &plan->images[i - plan->nartifacts];

			if (!pipe_image_unpinned(im, lockfile_find_image(lf, im->key),
						 p->accept_new, &one))
				continue;
		}
		buf_addf(&all, "\n  %s", one.msg);
		if (!n++)
			*e = one;
	}
	if (n > 1)
		wb_error(e, WB_EUSAGE, "%zu pins are needed before anything is fetched "
			 "('winbuild lock --accept-new' makes them; review the lock "
			 "after):%s", n, all.ptr);
	buf_release(&all);
	return n ? -1 : 0;
}

/* Make IMG's items from its lock, and (staging) gate and begin its stage
 * in the open cache C. 1: up to date (items without results), 0: to fetch,
 * -1 with E (IMG->items NULL). */
int pipe_image_prepare(struct pipeline *p, struct pipe_image *img, struct cache *c,
			 struct wb_err *e)
{
	struct wb_run *run = p->run;
	struct plan *plan = &img->plan;
	struct fetch_item *items;

	if (pins_missing(p, plan, img->lf, e) < 0)
		return -1;
	items = xcalloc(plan->nartifacts + 1, sizeof(*items));
	for (size_t i = 0; i < plan->nartifacts; i++) {
		const struct lock_entry *le = lockfile_find(img->lf, plan->artifacts[i].name);

		items[i].art = &plan->artifacts[i];
		if (le)   /* a hint for the progress totals, whatever is pinned */
			items[i].expect_size = le->size;
		if (le && (run->locked || plan->artifacts[i].verify.needs_pin))
			items[i].lock_sha256 = le->sha256;
	}
	/* the gate holds a site-signed tree to the lock (pipestage_gate) */
	img->stage.lock_path = image_lock(p, img);
	if (img->staging && pipestage_gate(&img->stage, plan, items, c) == 1) {
		for (size_t i = 0; i < plan->nartifacts; i++)
			items[i].lock_sha256 = NULL;
		img->items = items;
		return 1;
	}
	if (img->staging && pipestage_start(&img->stage, plan, e) < 0) {
		for (size_t i = 0; i < plan->nartifacts; i++)
			fetch_item_release(&items[i]);
		free(items);
		return -1;
	}
	img->items = items;
	return 0;
}

static void group_route(struct pipe_group *g, struct pipe_image *img, size_t k, size_t u)
{
	struct pipe_route *r;
	size_t last = SIZE_MAX;

	for (size_t at = g->first[u]; at != SIZE_MAX; at = g->routes[at].next)
		last = at;
	ALLOC_GROW(g->routes, g->nroutes + 1, g->alloc);
	r = &g->routes[g->nroutes];
	memset(r, 0, sizeof(*r));
	r->img = img;
	r->k = k;
	r->next = SIZE_MAX;
	if (last == SIZE_MAX)
		g->first[u] = g->nroutes;
	else
		g->routes[last].next = g->nroutes;
	g->nroutes++;
}

/* Fill G from its N images IMGS: one image fetches into its own items;
 * several into the union of theirs, one item per distinct artifact (the
 * same ref spec and lock pin), each routed to every image using it.
 * @where the image matrix: several recipes or `--matrix FILE`, one fetch over
 *   the union, a stage, lock and emit per image
 */
void pipe_group_build(struct pipe_group *g, struct pipe_image **imgs, size_t n)
{
	size_t total = 0, nkeys = 0;
	char **keys;

	for (size_t i = 0; i < n; i++)
		total += imgs[i]->plan.nartifacts;
	g->first = xcalloc(total + 1, sizeof(*g->first));
	for (size_t u = 0; u <= total; u++)
		g->first[u] = SIZE_MAX;
	g->shared = n > 1;
	if (!g->shared) {
		g->items = imgs[0]->items;
		g->n = imgs[0]->plan.nartifacts;
		for (size_t k = 0; k < g->n; k++)
			group_route(g, imgs[0], k, k);
		return;
	}
	g->items = xcalloc(total + 1, sizeof(*g->items));
	keys = xcalloc(total + 1, sizeof(*keys));
	for (size_t i = 0; i < n; i++) {
		struct pipe_image *img = imgs[i];

		img->borrowed = 1;
		img->fd_owned = xcalloc(img->plan.nartifacts + 1, 1);
		for (size_t k = 0; k < img->plan.nartifacts; k++) {
			const struct fetch_item *it = &img->items[k];
			char *spec = fetch_ref_spec(&img->plan, it);
			char *key = xasprintf("%slock %s\n", spec,
					      it->lock_sha256 ? it->lock_sha256 : "-");
			size_t u = 0;

			free(spec);
			while (u < nkeys && strcmp(keys[u], key))
				u++;
			if (u == nkeys) {
				keys[nkeys++] = key;
				g->items[u].art = it->art;
				g->items[u].lock_sha256 = it->lock_sha256;
			} else {
				free(key);
			}
			if (it->expect_size > g->items[u].expect_size)
				g->items[u].expect_size = it->expect_size;
			group_route(g, img, k, u);
		}
	}
	g->n = nkeys;
	for (size_t u = 0; u < nkeys; u++)
		free(keys[u]);
	free(keys);
}

/* Fetch group G (its routes' images staged as they ask) with the policy
 * of PLAN. fetch_all's result; every route gets its item's result.
 * @where the image matrix: several recipes or `--matrix FILE`, one fetch over
 *   the union, a stage, lock and emit per image -- one fetch over the union
 */
int pipe_group_fetch(struct pipeline *p, struct pipe_group *g, const struct plan *plan,
		       struct cache *c, struct wb_err *e)
{
	struct wb_run *run = p->run;
	struct fetch_opts o;
	struct fetch_ctx f;
	struct sigaction old_int, old_term;
	int stage = 1, ret;

	for (size_t r = 0; r < g->nroutes; r++)
		stage &= g->routes[r].img->staging;
	cmd_progress_init(&f.d, run);
	f.g = g;
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
	pipe_catch_interrupts(&old_int, &old_term);
	ret = fetch_all(plan, g->items, g->n, c, &o, e);
	pipe_restore_interrupts(&old_int, &old_term);
	cmd_progress_clear(&f.d);
	for (size_t u = 0; u < g->n; u++)
		for (size_t r = g->first[u]; r != SIZE_MAX; r = g->routes[r].next)
			route_copy(g, &g->routes[r], u);
	/* issue 33: each image's images: (cmd/pipeimages.c), once per image
	 * of the group whose artifacts all arrived: one whose artifact failed
	 * is not built, and the matrix still builds the others, their images
	 * pulled (the first error is the one returned) */
	for (size_t r = 0; r < g->nroutes && !(ret < 0 && e->code == WB_EINTR); r++) {
		struct pipe_image *im = g->routes[r].img;
		struct wb_err ie = WB_ERR_INIT;
		size_t q = 0, a = 0;

		while (q < r && g->routes[q].img != im)
			q++;
		while (a < im->plan.nartifacts && !im->items[a].status)
			a++;
		if (q != r || !im->plan.nimages || a < im->plan.nartifacts)
			continue;
		if (!im->pulled)
			im->pulled = xcalloc(im->plan.nimages, sizeof(*im->pulled));
		im->stage.pulled = im->pulled;
		if (ret < 0) {
			if (pipe_fetch_images(p->run, &im->plan, im->lf, p->accept_new, c,
					      im->pulled, &ie) < 0) {
				cmd_errorf("%s", ie.msg);
				im->images_failed = ie.code ? ie.code : WB_EIO;
			}
			wb_err_clear(&ie);
		} else {
			ret = pipe_fetch_images(p->run, &im->plan, im->lf, p->accept_new, c,
						im->pulled, e);
			if (ret < 0)
				im->images_failed = e->code ? e->code : WB_EIO;
		}
	}
	/* lock pins point into the images' locks: drop them for the caller */
	for (size_t r = 0; r < g->nroutes; r++)
		g->routes[r].img->items[g->routes[r].k].lock_sha256 = NULL;
	for (size_t u = 0; g->shared && u < g->n; u++)
		g->items[u].lock_sha256 = NULL;
	return ret;
}

struct pipe_group *pipe_group_new(struct pipeline *p)
{
	p->groups = xrealloc(p->groups, (p->ngroups + 1) * sizeof(*p->groups));
	memset(&p->groups[p->ngroups], 0, sizeof(*p->groups));
	return &p->groups[p->ngroups++];
}

int pipe_open_cache(struct wb_run *run, struct cache *c, struct wb_err *e)
{
	char *dir = cache_default_dir(run->cache_dir, e);
	int ret = dir && cache_open(c, dir, 0, e) == 0 ? 0 : -1;

	free(dir);
	return ret;
}

int pipe_fetch(struct pipeline *p, struct pipe_image *img, struct wb_err *e)
{
	struct cache c = CACHE_INIT;
	struct pipe_group *g;
	int ret = -1;

	if (pipe_image_read_lock(p, img, e) < 0 || pipe_open_cache(p->run, &c, e) < 0)
		goto out;
	ret = pipe_image_prepare(p, img, &c, e);
	if (ret)
		goto out;
	g = pipe_group_new(p);
	pipe_group_build(g, &img, 1);
	ret = pipe_group_fetch(p, g, &img->plan, &c, e);
out:
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

/* Write OUT/<name>/packer for IMG (emit_packer), printing nothing: 0, or
 * -1 with E. Under pipe_catch_interrupts (the caller's). */
int pipe_emit_work(struct pipeline *p, const struct pipe_image *img, struct wb_err *e)
{
	const struct plan *plan = &img->plan;
	struct staged_manifest m;
	struct emit_opts o;
	char data[PATH_MAX];
	char *outdir = fs_join(p->run->out_dir, plan->name);
	char *mpath = fs_join(outdir, "manifest.json");
	int ret = -1;

	memset(&m, 0, sizeof(m));
	if (plan_require_iso(plan, e))
		goto out;
	if (!fs_exists(mpath)) {
		wb_error(e, WB_ESTAGE, "'%s' not found: stage the recipe first "
			 "('winbuild stage' or 'winbuild build')", mpath);
		goto out;
	}
	if (staged_manifest_read(mpath, &m, e))
		goto out;
	memset(&o, 0, sizeof(o));
	o.data_dir = cmd_data_dir(data, sizeof(data));
	o.out_dir = outdir;
	o.builders = &plan->builders;   /* narrowed by --builder */
	o.sign = p->emit_sign;
	o.interrupted = &pipe_interrupted;
	ret = emit_packer(plan, &m, &o, e);
	if (!ret && pipe_interrupted) {
		/* too late to stop: the output is whole, say so */
		wb_error(e, WB_EINTR, "interrupted after the Packer inputs were written");
		ret = -1;
	}
out:
	staged_manifest_release(&m);
	free(outdir);
	free(mpath);
	return ret ? -1 : 0;
}

/* After pipe_emit_work (WORKED its result, E its error): the error, or the
 * --json field and the paths on stdout. The exit code. */
int pipe_emit_report(struct pipeline *p, const struct pipe_image *img, int worked,
		       const struct wb_err *e)
{
	struct wb_run *run = p->run;
	const struct plan *plan = &img->plan;
	const struct wb_strlist *sel = &plan->builders;
	char *outdir;

	if (worked < 0)
		return cmd_fail(e);
	outdir = fs_join(run->out_dir, plan->name);
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
	free(outdir);
	return WB_OK;
}

/* @where `winbuild emit` -- the Packer inputs written */
int pipe_emit(struct pipeline *p, const struct pipe_image *img)
{
	struct sigaction old_int, old_term;
	struct wb_err e = WB_ERR_INIT;
	int r;

	pipe_catch_interrupts(&old_int, &old_term);
	r = pipe_emit_work(p, img, &e);
	pipe_restore_interrupts(&old_int, &old_term);
	return pipe_emit_report(p, img, r, &e);
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
 * staged yet.
 * @where `winbuild build` (fetch, stage, emit), and emit staging first when
 *   nothing is staged
 */
int pipe_needs_stage(const struct pipeline *p, const struct pipe_image *img)
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

/*
 * @where `winbuild build` (fetch, stage, emit), and emit staging first when
 *   nothing is staged -- resolves once
 */
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
		if (pipe_needs_stage(p, img)) {
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
