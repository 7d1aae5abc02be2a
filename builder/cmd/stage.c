/*
 * winbuild stage RECIPE: fetch what is missing (the shared fetch driver),
 * then build OUT/<name>/tree and OUT/<name>/manifest.json (stage/stage.h).
 * A digest mismatch while staging quarantines the cache entry (exit 1).
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cmd/cmd.h"
#include "emit/sbom.h"
#include "fetch/cache.h"
#include "fetch/fetch.h"
#include "lib/buf.h"
#include "lib/fs.h"
#include "recipe/plan.h"
#include "stage/sitesign.h"
#include "stage/stage.h"
#include "stage/stamp.h"

#define STAGE_USAGE \
	"stage RECIPE [-o OUT] [-O FILE]... [--set K=V]... [--builder NAME]... [-j N] [--offline] " \
	"[--locked] [--lock FILE] [--cache DIR] [--cacert FILE] [--no-progress] [-q] " \
	"[--sign-cert FILE --sign-key FILE | --sign-pkcs12 FILE | --sign-pkcs11-uri URI ...]"

/* 1980-01-01T00:00:00Z: the earliest time zip, FAT and ISO 9660 hold. */
#define STAGE_DEFAULT_EPOCH 315532800L

static int source_date_epoch(time_t *out)
{
	const char *s = getenv("SOURCE_DATE_EPOCH");
	char *end;
	long long v;

	*out = STAGE_DEFAULT_EPOCH;
	if (!s || !*s)
		return 0;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || end == s || v < 0 || v > 253402300799LL) {
		cmd_errorf("SOURCE_DATE_EPOCH '%s' is not a number of seconds since 1970", s);
		return -1;
	}
	*out = (time_t)v;
	return 0;
}

/* $WINBUILD_TEMPLATES, else recipes/templates beside the binary (a build
 * tree), else PREFIX/share/winbuild/recipes/templates (make install). */
static char *templates_dir(void)
{
	const char *env = getenv("WINBUILD_TEMPLATES");
	char exe[PATH_MAX], *dir, *p;
	ssize_t n;

	if (env && *env)
		return xstrdup(env);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return xstrdup("recipes/templates");
	exe[n] = '\0';
	dir = fs_dirname(exe);
	p = fs_join(dir, "recipes/templates");
	if (!fs_exists(p)) {
		free(p);
		p = fs_join(dir, "../share/winbuild/recipes/templates");
	}
	free(dir);
	return p;
}

/*
 * Test hooks (docs/stage.md), for the kill-safety and corruption tests:
 *   WINBUILD_TEST_KILL_AT=POINT[:N]  SIGKILL this process the Nth time
 *                                    (default 1st) the stage reaches POINT
 *   WINBUILD_TEST_RUN_AT=POINT:CMD   run CMD with sh -c the first time the
 *                                    stage reaches POINT
 */
struct test_hook {
	char kill_point[64], run_point[64];
	long kill_remaining;
	const char *run_cmd;
};

static void test_hook(void *ctx, const char *point)
{
	struct test_hook *h = ctx;

	if (h->run_cmd && !strcmp(h->run_point, point)) {
		const char *cmd = h->run_cmd;

		h->run_cmd = NULL;
		fflush(NULL);
		if (system(cmd) != 0)
			fprintf(stderr, "winbuild: test hook command failed: %s\n", cmd);
	}
	if (h->kill_point[0] && !strcmp(h->kill_point, point) &&
	    --h->kill_remaining <= 0) {
		fflush(NULL);
		raise(SIGKILL);
	}
}

/* "POINT:REST" or "POINT": copy POINT, return REST (or NULL). */
static const char *split_point(const char *s, char *point, size_t len)
{
	const char *colon = strchr(s, ':');

	snprintf(point, len, "%.*s", (int)(colon ? (size_t)(colon - s) : strlen(s)), s);
	return colon ? colon + 1 : NULL;
}

static int setup_test_hook(struct test_hook *h)
{
	const char *k = getenv("WINBUILD_TEST_KILL_AT");
	const char *r = getenv("WINBUILD_TEST_RUN_AT");

	memset(h, 0, sizeof(*h));
	if (k && *k) {
		const char *n = split_point(k, h->kill_point, sizeof(h->kill_point));

		h->kill_remaining = n ? strtol(n, NULL, 10) : 1;
	}
	if (r && *r)
		h->run_cmd = split_point(r, h->run_point, sizeof(h->run_point));
	return h->kill_point[0] || h->run_cmd;
}

static int quarantine(struct wb_run *run, const struct fetch_item *it)
{
	struct wb_err e = WB_ERR_INIT;
	struct cache c = CACHE_INIT;
	char *dir = cache_default_dir(run->cache_dir, &e), *where = NULL;

	if (!dir || cache_open(&c, dir, 0, &e) < 0 ||
	    cache_quarantine(&c, it->sha256, &where, &e) < 0) {
		free(dir);
		cache_close(&c);
		return cmd_fail(&e);
	}
	if (where)
		cmd_warnf("quarantined the cache entry of '%s': %s", it->art->name, where);
	free(where);
	free(dir);
	cache_close(&c);
	return 0;
}

/* ---- doing nothing when nothing changed (stage/stamp.h) ------------------ */

struct up_to_date {
	struct wb_run *run;
	const char *templates_dir;
	time_t epoch;
	char *dir;          /* OUT/<name> */
	int never;          /* always stage (test hooks) */
	/* the stage, begun before the downloads so it works while they run */
	const struct stage_opts *o;
	const struct fetch_item *items;
	struct stage st;
	int begun;
};

/* The stamp key of PLAN with SHA256S and URLS (per artifact: the bytes and
 * the URL the manifest names for them) and ITEMS' lock pins. Everything the
 * manifest and the SBOM record is in the key, so "up to date" never keeps a
 * record of other inputs. */
static int stage_key(struct up_to_date *u, const struct plan *plan,
		     const struct fetch_item *items, const char *const *sha256s,
		     const char *const *urls, char key[65], struct wb_err *e)
{
	struct stamp_inputs in;
	char **specs = xcalloc(plan->nartifacts + 1, sizeof(*specs));
	int ret;

	for (size_t i = 0; i < plan->nartifacts; i++) {
		/* the ref spec leaves the lock's pin out (fetch_ref_spec); the
		 * stage must not: a lock edited to pin other bytes is a change */
		char *spec = fetch_ref_spec(plan, &items[i]);

		specs[i] = xasprintf("%slock %s\nserved_by %s\n", spec,
				     items[i].lock_sha256 ? items[i].lock_sha256 : "-",
				     urls[i] ? urls[i] : "-");
		free(spec);
	}
	memset(&in, 0, sizeof(in));
	in.plan = plan;
	in.sets = &u->run->sets;
	in.env_set = u->run->env_set;
	in.ref_specs = (const char *const *)specs;
	in.sha256s = sha256s;
	in.templates_dir = u->templates_dir;
	in.epoch = u->epoch;
	in.sign = u->run->sign;
	ret = stamp_key(&in, key, e);
	for (size_t i = 0; i < plan->nartifacts; i++)
		free(specs[i]);
	free(specs);
	return ret;
}

/* The digest a ref in the cache names for IT, as fetch would use it, and
 * the URL fetch would report for it (*URL, a new string): the ref's when it
 * is one of the plan's URLs, else the first (refs_try_cache). */
static int ref_sha256(struct cache *c, const struct plan *plan,
		      const struct fetch_item *it, char out[65], char **url)
{
	struct wb_err e = WB_ERR_INIT;
	char *spec = fetch_ref_spec(plan, it), key[65];
	const char *sha = NULL;
	struct cache_ref ref;
	int r;

	cache_ref_key(spec, key);
	free(spec);
	r = cache_ref_load(c, key, &ref, &e);
	*url = NULL;
	for (size_t i = 0; r > 0 && ref.url && i < it->art->urls.nr; i++)
		if (!strcmp(it->art->urls.v[i], ref.url))
			*url = xstrdup(ref.url);
	if (!*url)
		*url = xstrdup(it->art->urls.nr ? it->art->urls.v[0] : "");
	if (r > 0)
		sha = ref.sha256;
	else if (!r)
		sha = verify_pinned_sha256(&it->art->verify, it->lock_sha256);
	r = sha && strlen(sha) == 64;
	if (r)
		memcpy(out, sha, 65);
	cache_ref_release(&ref);
	return r;
}

/* Fetch gate: 1 when OUT/<name> holds a stamp for exactly these inputs and
 * an untouched tree. Otherwise the stage begins (stage_start): under its
 * lock it reads the stamp for what it may reuse, then removes it before
 * anything changes, so a stage killed halfway never leaves a stamp
 * behind. */
static int stage_gate(void *ctx, const struct plan *plan,
		      const struct fetch_item *items, struct cache *c)
{
	struct up_to_date *u = ctx;
	struct wb_err e = WB_ERR_INIT;
	char (*shas)[65] = xcalloc(plan->nartifacts + 1, sizeof(*shas));
	char **urls = xcalloc(plan->nartifacts + 1, sizeof(*urls));

	u->items = items;
	const char **sp = xcalloc(plan->nartifacts + 1, sizeof(*sp));
	char key[65];
	int ok = 1;

	u->dir = fs_join(u->run->out_dir, plan->name);
	/* a signing key the plan does not take (or the reverse) is never up
	 * to date: stage_begin reports it */
	ok = !u->never && sitesign_check(plan, u->o->sign, u->o->sign_strict, &e) == 0;
	for (size_t i = 0; ok && i < plan->nartifacts; i++) {
		ok = ref_sha256(c, plan, &items[i], shas[i], &urls[i]);
		sp[i] = shas[i];
	}
	if (ok && stage_key(u, plan, items, sp, (const char *const *)urls, key, &e) < 0) {
		/* an input that cannot be hashed costs the shortcut, loudly */
		if (!u->run->quiet)
			cmd_warnf("cannot tell whether the stage is up to date (%s); staging",
				  e.msg);
		ok = 0;
	}
	if (ok)
		ok = stamp_check(u->dir, key, &e) == 1;
	for (size_t i = 0; i < plan->nartifacts; i++)
		free(urls[i]);
	free(urls);
	free(shas);
	free(sp);
	return ok;
}

/* After a complete stage: record the stamp (a failure only costs the next
 * run its shortcut). */
static void stage_stamp(struct up_to_date *u, const struct plan *plan,
			const struct fetch_item *items, const struct stage_result *res)
{
	struct wb_err e = WB_ERR_INIT;
	const char **sp = xcalloc(plan->nartifacts + 1, sizeof(*sp));
	const char **urls = xcalloc(plan->nartifacts + 1, sizeof(*urls));
	char key[65];

	for (size_t i = 0; i < plan->nartifacts; i++) {
		sp[i] = items[i].sha256;
		urls[i] = items[i].url;
	}
	if (u->dir && stage_key(u, plan, items, sp, urls, key, &e) == 0)
		stamp_write(u->dir, key, &res->preps, &e);
	free(urls);
	free(sp);
}

/* Fetch hook: not up to date, so the stage begins (lock, temp dir). */
static int stage_start(void *ctx, const struct plan *plan, struct wb_err *e)
{
	struct up_to_date *u = ctx;

	if (stage_begin(&u->st, plan, u->o, e) < 0) {
		stage_end(&u->st);
		return -1;
	}
	u->begun = 1;
	return 0;
}

static void stage_input_of(const struct fetch_item *it, struct stage_input *in)
{
	memset(in, 0, sizeof(*in));
	in->path = it->path;
	in->fd = it->has_fd ? it->fd : -1;
	in->sha256 = it->sha256;
	in->size = it->size;
	in->url = it->url;
	/* hashed by this run: downloaded (its own inode, hashed as written),
	 * or a hit fetch re-hashed whose file only winbuild's user can write */
	in->fresh = it->has_fd && it->hashed;
	in->teed = it->teed;
}

/* Fetch hook: a download begins; its single file, if it has one, is
 * written into the stage's scratch dir as the bytes arrive. */
static int stage_tee(void *ctx, const struct fetch_item *it)
{
	struct up_to_date *u = ctx;

	if (!u->begun || !u->items)
		return -1;
	return stage_tee_open(&u->st, (size_t)(it - u->items));
}

/* Fetch hook: an artifact is verified (or cached): prepare it now. */
static void stage_item_done(void *ctx, const struct fetch_item *it)
{
	struct up_to_date *u = ctx;
	struct stage_input in;

	if (it->status || !u->begun || !u->items)
		return;
	stage_input_of(it, &in);
	stage_feed(&u->st, (size_t)(it - u->items), &in);
}

/* OUT/<name>/sbom.cdx.json beside the manifest (docs/provenance.md). */
static int write_sbom(struct wb_run *run, const struct plan *plan,
		      const struct fetch_item *items)
{
	struct wb_err e = WB_ERR_INIT;
	struct sbom_artifact *sa = xcalloc(plan->nartifacts + 1, sizeof(*sa));
	char *outdir = fs_join(run->out_dir, plan->name);
	char *mpath = fs_join(outdir, "manifest.json");
	char *spath = fs_join(outdir, "sbom.cdx.json");
	int ret = WB_OK;

	for (size_t i = 0; i < plan->nartifacts; i++) {
		const struct verify_evidence *ev = &items[i].ev;

		sa[i].name = items[i].art->name;
		sa[i].path = items[i].path;
		sa[i].sha512 = items[i].sha512;
		sa[i].blake2b512 = items[i].blake2b512;
		sa[i].ev = ev;
	}
	if (sbom_write(spath, plan, mpath, sa, plan->nartifacts, &e) < 0)
		ret = cmd_fail(&e);
	free(sa);
	free(outdir);
	free(mpath);
	free(spath);
	return ret;
}

int cmd_stage_recipe(struct wb_run *run)
{
	struct up_to_date u;
	struct cmd_stage_hooks hooks;
	struct wb_err e = WB_ERR_INIT;
	struct plan plan;
	struct fetch_item *items = NULL;
	struct stage_opts o;
	struct stage_result res;
	struct test_hook th;
	char *tdir = NULL;
	int ret;

	memset(&o, 0, sizeof(o));
	memset(&res, 0, sizeof(res));
	if (source_date_epoch(&o.source_date_epoch) < 0)
		return WB_EUSAGE;
	tdir = templates_dir();
	memset(&u, 0, sizeof(u));
	u.run = run;
	u.templates_dir = tdir;
	u.epoch = o.source_date_epoch;
	/* the test hooks name points of a full stage: never skip it then */
	u.never = setup_test_hook(&th);
	o.out_dir = run->out_dir;
	o.templates_dir = tdir;
	o.sign = run->sign;
	o.sign_strict = run->sign_strict;
	if (th.kill_point[0] || th.run_cmd) {
		o.hook = test_hook;
		o.hook_ctx = &th;
	}
	u.o = &o;
	memset(&hooks, 0, sizeof(hooks));
	hooks.gate = stage_gate;
	hooks.start = stage_start;
	hooks.tee_open = stage_tee;
	hooks.item_done = stage_item_done;
	hooks.ctx = &u;
	ret = cmd_fetch_plan_for_stage(run, &plan, &items, &hooks, &e);
	if (ret != 1)
		cmd_json_fetch(run, &plan, items);
	cmd_json_set(run, "up_to_date", json_boolean(ret == 1));
	if (u.dir) {
		cmd_json_set(run, "out", json_string(u.dir));
		cmd_json_set(run, "tree", json_pack("s+", u.dir, "/tree"));
		cmd_json_set(run, "manifest", json_pack("s+", u.dir, "/manifest.json"));
	}
	if (ret == 1) {
		if (!run->quiet)
			fprintf(stderr, "up to date: %s/tree (nothing changed since the "
				"last stage)\n", u.dir);
		ret = WB_OK;
		goto out;
	}
	if (ret < 0) {
		ret = cmd_fetch_failed(run, &plan, items, &e);
		goto out;
	}
	for (size_t i = 0; i < plan.nartifacts; i++) {
		struct stage_input in;

		stage_input_of(&items[i], &in);
		stage_feed(&u.st, i, &in);   /* a no-op for those fed already */
	}
	if (stage_finish(&u.st, &res, &e) < 0) {
		ret = cmd_fail(&e);
		if (res.bad_artifact) {
			for (size_t i = 0; i < plan.nartifacts; i++)
				if (&plan.artifacts[i] == res.bad_artifact)
					quarantine(run, &items[i]);
		}
		goto out;
	}
	if ((ret = write_sbom(run, &plan, items)))
		goto out;
	cmd_json_set(run, "files", json_integer((json_int_t)res.nfiles));
	cmd_json_set(run, "generated", json_integer((json_int_t)res.ngenerated));
	cmd_json_set(run, "directories", json_integer((json_int_t)res.ndirs));
	cmd_json_set(run, "reused", json_integer((json_int_t)res.nreused));
	if (!run->quiet) {
		fprintf(stderr, "staged %zu files (%zu generated) and %zu directories "
			"into %s\n", res.nfiles, res.ngenerated, res.ndirs, res.tree_dir);
		if (res.nreused)
			fprintf(stderr, "reused the files of %zu of %zu artifacts from "
				"the previous tree (unchanged)\n", res.nreused,
				plan.nartifacts);
		fprintf(stderr, "manifest: %s\n", res.manifest_path);
	}
	stage_stamp(&u, &plan, items, &res);
	ret = WB_OK;
out:
	if (u.begun)
		stage_end(&u.st);
	stage_result_release(&res);
	free(tdir);
	free(u.dir);
	if (items) {
		cmd_fetch_items_free(items, plan.nartifacts);
		plan_release(&plan);
	}
	return ret;
}

int cmd_stage(int argc, char **argv, struct wb_run *run)
{
	/* the key options of emit's table: the site's key for site_signing */
	struct emit_args a;
	int ret = cmd_emit_args_parse(argc, argv, STAGE_SIGN_OPTS, STAGE_USAGE, &a, run);

	if (ret)
		return ret;
	if (sign_requested(&a.so)) {
		run->sign = &a.so;
		run->sign_strict = 1;
	}
	ret = cmd_stage_recipe(run);
	run->sign = NULL;
	return ret;
}
