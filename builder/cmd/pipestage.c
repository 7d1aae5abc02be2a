/*
 * The pipeline's stage step (pipeline.h): the up-to-date gate (stamp.h),
 * the stage begun before the downloads and fed as they finish, the
 * quarantine of a cache entry whose bytes changed, the SBOM beside the
 * manifest, the stamp and the test hooks. The stage itself (stage/stage.h)
 * does not know fetching; this file is where the two meet.
 *
 * @where the one driver (recipe, fetch, stage, emit) that `fetch`, `lock`,
 *   `mirror`, `stage`, `emit` and `build` run through -- the stage step
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cmd/pipeline.h"
#include "emit/sbom.h"
#include "fetch/cache.h"
#include "fetch/lockfile.h"
#include "lib/buf.h"
#include "lib/fs.h"
#include "stage/sitesign.h"
#include "stage/stamp.h"

/* 1980-01-01T00:00:00Z: the earliest time zip, FAT and ISO 9660 hold. */
#define STAGE_DEFAULT_EPOCH 315532800L

/* ---- test hooks (pipeline.h) ---------------------------------------------- */

static void test_hook(void *ctx, const char *point)
{
	struct pipe_test_hook *h = ctx;

	if (h->run_cmd && !strcmp(h->run_point, point)) {
		const char *cmd = h->run_cmd;

		h->run_cmd = NULL;
		fflush(NULL);
		if (system(cmd) != 0)
			cmd_warnf("test hook command failed: %s", cmd);
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

static int setup_test_hook(struct pipe_test_hook *h)
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

int pipestage_init(struct pipe_stage *s, struct wb_run *run, struct wb_err *e)
{
	const struct wb_strlist *extra = s->extra_sets;

	if (s->run)
		return 0;
	memset(s, 0, sizeof(*s));
	s->extra_sets = extra;
	if (cmd_source_date_epoch(STAGE_DEFAULT_EPOCH, &s->o.source_date_epoch, e) < 0)
		return -1;
	s->run = run;
	s->templates_dir = cmd_templates_dir();
	/* the test hooks name points of a full stage: never skip it then */
	s->never = setup_test_hook(&s->th);
	s->o.out_dir = run->out_dir;
	s->o.templates_dir = s->templates_dir;
	s->o.sign = run->sign;
	s->o.sign_strict = run->sign_strict;
	s->cache_dir = cache_default_dir(run->cache_dir, e);
	if (!s->cache_dir)
		return -1;
	s->o.cache_dir = s->cache_dir;   /* images: (stage/oci.h) */
	if (s->never) {
		s->o.hook = test_hook;
		s->o.hook_ctx = &s->th;
	}
	return 0;
}

static void pins_release(struct pipe_stage *s)
{
	for (size_t i = 0; i < s->npins; i++)
		free(s->pins[i]);
	free(s->pins);
	s->pins = NULL;
	s->npins = 0;
}

void pipestage_release(struct pipe_stage *s)
{
	pins_release(s);
	if (s->begun)
		stage_end(&s->st);
	s->begun = 0;
	stage_result_release(&s->res);
	if (s->lock)
		lockfile_release(s->lock);
	free(s->lock);
	s->lock = NULL;
	free(s->templates_dir);
	free(s->dir);
	free(s->cache_dir);
	s->cache_dir = NULL;
	s->templates_dir = NULL;
	s->dir = NULL;
}

/* ---- doing nothing when nothing changed (stage/stamp.h) ------------------ */

/* The stamp key of PLAN with SHA256S and URLS (per artifact: the bytes and
 * the URL the manifest names for them) and the lock PINS (per artifact, or
 * NULL: those the gate saw, pipe_stage.pins). Everything the
 * manifest and the SBOM record is in the key, so "up to date" never keeps a
 * record of other inputs. */
static int stage_key(struct pipe_stage *s, const struct plan *plan,
		     const struct fetch_item *items, const char *const *pins,
		     const char *const *sha256s,
		     const char *const *urls, char key[65], struct wb_err *e)
{
	struct stamp_inputs in;
	struct wb_strlist sets = WB_STRLIST_INIT;
	char **specs = xcalloc(plan->nartifacts + 1, sizeof(*specs));
	int ret;

	for (size_t i = 0; i < plan->nartifacts; i++) {
		/* the ref spec leaves the lock's pin out (fetch_ref_spec); the
		 * stage must not: a lock edited to pin other bytes is a change */
		char *spec = fetch_ref_spec(plan, &items[i]);

		specs[i] = xasprintf("%slock %s\nserved_by %s\n", spec,
				     pins[i] ? pins[i] : "-",
				     urls[i] ? urls[i] : "-");
		free(spec);
	}
	memset(&in, 0, sizeof(in));
	in.plan = plan;
	/* every --set the plan was resolved with: a matrix image's own
	 * (matrix file variations) are not in any input file */
	for (size_t i = 0; i < s->run->sets.nr; i++)
		wb_strlist_push(&sets, s->run->sets.v[i]);
	for (size_t i = 0; s->extra_sets && i < s->extra_sets->nr; i++)
		wb_strlist_push(&sets, s->extra_sets->v[i]);
	in.sets = &sets;
	in.env_set = s->run->env_set;
	in.ref_specs = (const char *const *)specs;
	in.sha256s = sha256s;
	in.templates_dir = s->templates_dir;
	in.epoch = s->o.source_date_epoch;
	in.sign = s->run->sign;
	ret = stamp_key(&in, key, e);
	wb_strlist_release(&sets);
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

/* 1 when the manifest in DIR (a stamped, untouched stage) records exactly
 * the site-signed files the lock at LOCK_PATH holds (sitesign_check_locked_set). */
static int staged_signed_as_locked(const char *dir, const char *lock_path)
{
	struct wb_err e = WB_ERR_INIT;
	struct staged_manifest m;
	struct lockfile lf;
	struct lock_signed *now = NULL;
	char *mpath = fs_join(dir, "manifest.json");
	size_t n;
	int ok = 0;

	memset(&m, 0, sizeof(m));
	memset(&lf, 0, sizeof(lf));
	if (lock_path && !staged_manifest_read(mpath, &m, &e) &&
	    lockfile_read(lock_path, &lf, &e) == 1) {
		now = sitesign_manifest_entries(&m, &n);
		ok = !sitesign_check_locked_set(now, n, &lf, lock_path, &e);
	}
	free(now);
	lockfile_release(&lf);
	staged_manifest_release(&m);
	free(mpath);
	return ok;
}

/* Fetch gate: 1 when OUT/<name> holds a stamp for exactly these inputs and
 * an untouched tree. Otherwise the stage begins (pipestage_start): under
 * its lock it reads the stamp for what it may reuse, then removes it
 * before anything changes, so a stage killed halfway never leaves a stamp
 * behind. */
int pipestage_gate(struct pipe_stage *s, const struct plan *plan,
		   const struct fetch_item *items, struct cache *c)
{
	struct wb_err e = WB_ERR_INIT;
	char (*shas)[65] = xcalloc(plan->nartifacts + 1, sizeof(*shas));
	char **urls = xcalloc(plan->nartifacts + 1, sizeof(*urls));
	const char **sp = xcalloc(plan->nartifacts + 1, sizeof(*sp));
	char key[65];
	int ok;

	free(s->dir);
	s->dir = fs_join(s->run->out_dir, plan->name);
	/* the fetch drops ITEMS' lock pins (they point into the lock) before
	 * the stage ends: the stamp is written with the pins seen here */
	pins_release(s);
	s->pins = xcalloc(plan->nartifacts + 1, sizeof(*s->pins));
	s->npins = plan->nartifacts;
	for (size_t i = 0; i < plan->nartifacts; i++)
		s->pins[i] = items[i].lock_sha256 ? xstrdup(items[i].lock_sha256) : NULL;
	/* a signing key the plan does not take (or the reverse) is never up
	 * to date: stage_begin reports it */
	ok = !s->never && sitesign_check(plan, s->o.sign, s->o.sign_strict, &e) == 0;
	for (size_t i = 0; ok && i < plan->nartifacts; i++) {
		ok = ref_sha256(c, plan, &items[i], shas[i], &urls[i]);
		sp[i] = shas[i];
	}
	if (ok && stage_key(s, plan, items, (const char *const *)s->pins, sp,
			    (const char *const *)urls, key, &e) < 0) {
		/* an input that cannot be hashed costs the shortcut, loudly */
		if (!s->run->quiet)
			cmd_warnf("cannot tell whether the stage is up to date (%s); staging",
				  e.msg);
		ok = 0;
	}
	if (ok)
		ok = stamp_check(s->dir, key, &e) == 1;
	/* --locked with site signing: the untouched tree's signed files must
	 * also be the lock's "site_signed" (the lock may have changed since);
	 * if not, the stage signs again and says why (pipestage_start) */
	if (ok && s->run->locked && s->o.sign && plan->site_signing.set)
		ok = staged_signed_as_locked(s->dir, s->lock_path);
	for (size_t i = 0; i < plan->nartifacts; i++)
		free(urls[i]);
	free(urls);
	free(shas);
	free(sp);
	return ok;
}

/* After a complete stage: record the stamp (a failure only costs the next
 * run its shortcut). */
static void stage_stamp(struct pipe_stage *s, const struct plan *plan,
			const struct fetch_item *items)
{
	struct wb_err e = WB_ERR_INIT;
	const char **sp = xcalloc(plan->nartifacts + 1, sizeof(*sp));
	const char **urls = xcalloc(plan->nartifacts + 1, sizeof(*urls));
	char key[65];

	for (size_t i = 0; i < plan->nartifacts; i++) {
		sp[i] = items[i].sha256;
		urls[i] = items[i].url;
	}
	if (s->dir && s->pins && s->npins == plan->nartifacts &&
	    stage_key(s, plan, items, (const char *const *)s->pins, sp, urls, key, &e) == 0)
		stamp_write(s->dir, key, &s->res.preps, &e);
	free(urls);
	free(sp);
}

/* ---- the stage, fed while the downloads run ------------------------------ */

int pipestage_start(struct pipe_stage *s, const struct plan *plan, struct wb_err *e)
{
	if (s->run->locked && s->o.sign && plan->site_signing.set && !s->lock) {
		/* the fetch read it too and checked it is this image's */
		s->lock = xcalloc(1, sizeof(*s->lock));
		if (lockfile_read(s->lock_path, s->lock, e) < 0)
			return -1;
		s->o.locked = s->lock;
		s->o.lock_path = s->lock_path;
	}
	if (stage_begin(&s->st, plan, &s->o, e) < 0) {
		stage_end(&s->st);
		return -1;
	}
	s->begun = 1;
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

int pipestage_tee_open(struct pipe_stage *s, size_t i)
{
	return s->begun ? stage_tee_open(&s->st, i) : -1;
}

void pipestage_feed(struct pipe_stage *s, size_t i, const struct fetch_item *item)
{
	struct stage_input in;

	if (!s->begun)
		return;
	stage_input_of(item, &in);
	stage_feed(&s->st, i, &in);   /* a no-op for one fed already */
}

/* ---- after the stage: quarantine, SBOM ------------------------------------ */

/* A digest mismatch while staging: move IT's cache entry aside (exit 1
 * stays the stage's). */
static void quarantine(struct wb_run *run, const struct fetch_item *it)
{
	struct wb_err e = WB_ERR_INIT;
	struct cache c = CACHE_INIT;
	char *dir = cache_default_dir(run->cache_dir, &e), *where = NULL;

	if (!dir || cache_open(&c, dir, 0, &e) < 0 ||
	    cache_quarantine(&c, it->sha256, &where, &e) < 0)
		cmd_fail(&e);
	else if (where)
		cmd_warnf("quarantined the cache entry of '%s': %s", it->art->name, where);
	free(where);
	free(dir);
	cache_close(&c);
}

/* OUT/<name>/sbom.cdx.json beside the manifest (docs/provenance.md). 0,
 * or -1 with E.
 * @where the SBOM (CycloneDX 1.5, `OUT/<name>/sbom.cdx.json`)
 */
static int write_sbom(struct pipe_stage *s, const struct plan *plan,
		      const struct fetch_item *items, struct wb_err *e)
{
	struct sbom_artifact *sa = xcalloc(plan->nartifacts + 1, sizeof(*sa));
	char *outdir = fs_join(s->run->out_dir, plan->name);
	char *mpath = fs_join(outdir, "manifest.json");
	char *spath = fs_join(outdir, "sbom.cdx.json");
	int ret;

	for (size_t i = 0; i < plan->nartifacts; i++) {
		sa[i].name = items[i].art->name;
		sa[i].path = items[i].path;
		sa[i].sha512 = items[i].sha512;
		sa[i].blake2b512 = items[i].blake2b512;
		sa[i].ev = &items[i].ev;
	}
	ret = sbom_write(spath, plan, mpath, sa, plan->nartifacts, s->pulled, e);
	free(sa);
	free(outdir);
	free(mpath);
	free(spath);
	return ret;
}

int pipestage_record_site_signed(struct pipe_stage *s, const struct plan *plan)
{
	struct wb_run *run = s->run;
	struct wb_err e = WB_ERR_INIT;
	struct lock_signed *v;
	size_t n;
	int ret;

	if (run->locked || !s->o.sign || !plan->site_signing.set)
		return WB_OK;
	if (!fs_exists(s->lock_path)) {
		if (!run->quiet)
			fprintf(stderr, "the site-signed digests are in the manifest only: "
				"there is no lock file '%s' (run 'winbuild lock', then "
				"stage again to record them)\n", s->lock_path);
		return WB_OK;
	}
	v = sitesign_lock_entries(&s->st.t, s->o.sign->timestamp_url != NULL, &n);
	ret = lockfile_set_site_signed(s->lock_path, plan->name, v, n, &e);
	free(v);
	if (ret < 0)
		return cmd_fail(&e);
	cmd_json_set(run, "site_signed_recorded", json_integer((json_int_t)n));
	if (!run->quiet)
		fprintf(stderr, "recorded %zu site-signed file%s in '%s'\n", n,
			n == 1 ? "" : "s", s->lock_path);
	return WB_OK;
}

int pipestage_work(struct pipe_stage *s, const struct plan *plan,
		   const struct fetch_item *items)
{
	for (size_t i = 0; i < plan->nartifacts; i++)
		pipestage_feed(s, i, &items[i]);
	s->finish_failed = 0;
	if (stage_finish(&s->st, &s->res, &s->err) < 0) {
		s->finish_failed = 1;
		return -1;
	}
	if (write_sbom(s, plan, items, &s->err) < 0)
		return -1;
	stage_stamp(s, plan, items);
	return 0;
}

int pipestage_report(struct pipe_stage *s, const struct plan *plan,
		     const struct fetch_item *items, int worked)
{
	struct wb_run *run = s->run;
	struct stage_result *res = &s->res;
	int ret;

	if (worked < 0) {
		ret = cmd_fail(&s->err);
		for (size_t i = 0; s->finish_failed && res->bad_artifact &&
		     i < plan->nartifacts; i++)
			if (&plan->artifacts[i] == res->bad_artifact)
				quarantine(run, &items[i]);
		return ret;
	}
	cmd_json_set(run, "files", json_integer((json_int_t)res->nfiles));
	cmd_json_set(run, "generated", json_integer((json_int_t)res->ngenerated));
	cmd_json_set(run, "directories", json_integer((json_int_t)res->ndirs));
	cmd_json_set(run, "reused", json_integer((json_int_t)res->nreused));
	if (!run->quiet) {
		fprintf(stderr, "staged %zu files (%zu generated) and %zu directories "
			"into %s\n", res->nfiles, res->ngenerated, res->ndirs, res->tree_dir);
		if (res->nreused)
			fprintf(stderr, "reused the files of %zu of %zu artifacts from "
				"the previous tree (unchanged)\n", res->nreused,
				plan->nartifacts);
		fprintf(stderr, "manifest: %s\n", res->manifest_path);
	}
	/* a matrix records after it wrote the image's lock (pipematrix.c) */
	return s->record_later ? WB_OK : pipestage_record_site_signed(s, plan);
}

int pipestage_finish(struct pipe_stage *s, const struct plan *plan,
		     const struct fetch_item *items)
{
	return pipestage_report(s, plan, items, pipestage_work(s, plan, items));
}
