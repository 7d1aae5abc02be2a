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

#include "cmd/cmd.h"
#include "emit/sbom.h"
#include "fetch/cache.h"
#include "fetch/fetch.h"
#include "lib/buf.h"
#include "lib/fs.h"
#include "recipe/plan.h"
#include "stage/stage.h"

#define STAGE_USAGE \
	"stage RECIPE [-o OUT] [-O FILE]... [--set K=V]... [-j N] [--offline] " \
	"[--locked] [--lock FILE] [--cache DIR] [--cacert FILE] [--no-progress] [-q]"

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
		fprintf(stderr, "winbuild: SOURCE_DATE_EPOCH '%s' is not a number of "
			"seconds since 1970\n", s);
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
		fprintf(stderr, "winbuild: quarantined the cache entry of '%s': %s\n",
			it->art->name, where);
	free(where);
	free(dir);
	cache_close(&c);
	return 0;
}

/* How an artifact was verified, for the SBOM: the methods, without the
 * lock pin (so a --locked build gives the same SBOM). */
static char *verified_by(const struct verify_evidence *ev)
{
	static const struct { unsigned bit; const char *what; } m[] = {
		{ VERIFY_MINISIGN, "minisign" },
		{ VERIFY_CHECKSUM_SHA256, "sha256 checksum file" },
		{ VERIFY_CHECKSUM_SHA512, "sha512 checksum file" },
		{ VERIFY_PINNED_SHA256, "pinned sha256" },
		{ VERIFY_PINNED_SHA512, "pinned sha512" },
		{ VERIFY_ACCEPTED_NEW, "trusted on first use" },
	};
	struct buf b = BUF_INIT;

	for (size_t i = 0; i < ARRAY_SIZE(m); i++)
		if (ev->methods & m[i].bit) {
			if (b.len)
				buf_adds(&b, ", ");
			buf_adds(&b, m[i].what);
		}
	return buf_detach(&b, NULL);
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
		if (ev->methods & VERIFY_MINISIGN) {
			sa[i].keyid_hex = ev->keyid_hex;
			sa[i].trusted_comment = ev->trusted_comment;
		}
		sa[i].verified_by = verified_by(ev);
	}
	if (sbom_write(spath, plan, mpath, sa, plan->nartifacts, &e) < 0)
		ret = cmd_fail(&e);
	for (size_t i = 0; i < plan->nartifacts; i++)
		free((char *)sa[i].verified_by);
	free(sa);
	free(outdir);
	free(mpath);
	free(spath);
	return ret;
}

int cmd_stage_recipe(struct wb_run *run)
{
	struct wb_err e = WB_ERR_INIT;
	struct plan plan;
	struct fetch_item *items = NULL;
	struct stage_input *in = NULL;
	struct stage_opts o;
	struct stage_result res;
	struct test_hook th;
	char *tdir = NULL;
	int ret;

	memset(&o, 0, sizeof(o));
	memset(&res, 0, sizeof(res));
	if (source_date_epoch(&o.source_date_epoch) < 0)
		return WB_EUSAGE;
	if (cmd_fetch_plan(run, 0, &plan, &items, &e) < 0) {
		ret = cmd_fetch_failed(run, &plan, items, &e);
		goto out;
	}
	in = xcalloc(plan.nartifacts + 1, sizeof(*in));
	for (size_t i = 0; i < plan.nartifacts; i++) {
		in[i].path = items[i].path;
		in[i].sha256 = items[i].sha256;
		in[i].size = items[i].size;
		in[i].url = items[i].url;
	}
	tdir = templates_dir();
	o.out_dir = run->out_dir;
	o.templates_dir = tdir;
	if (setup_test_hook(&th)) {
		o.hook = test_hook;
		o.hook_ctx = &th;
	}
	if (stage_run(&plan, in, &o, &res, &e) < 0) {
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
	if (!run->quiet)
		fprintf(stderr, "staged %zu files (%zu generated) and %zu directories "
			"into %s\nmanifest: %s\n", res.nfiles, res.ngenerated, res.ndirs,
			res.tree_dir, res.manifest_path);
	ret = WB_OK;
out:
	stage_result_release(&res);
	free(tdir);
	free(in);
	if (items) {
		cmd_fetch_items_free(items, plan.nartifacts);
		plan_release(&plan);
	}
	return ret;
}

int cmd_stage(int argc, char **argv, struct wb_run *run)
{
	int ret = cmd_parse_options(argc, argv, CMD_STAGE_OPTIONS, STAGE_USAGE, run);

	if (ret)
		return ret;
	if (run->positional.nr != 1)
		return cmd_usage("%s", STAGE_USAGE);
	return cmd_stage_recipe(run);
}
