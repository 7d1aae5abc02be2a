/*
 * winbuild verify OUTDIR: re-check a staged output (OUT/<name>) against its
 * manifest: every modified, missing and extra file is reported; exit 1 if
 * any, 0 when clean (emit/treecheck.h).
 * winbuild verify OUTDIR --node DRIVE: hold an image's system drive to the
 * same manifest: kept files in place, build-only files absent; exit 1 on
 * a kept file missing or changed, or a build-only file left.
 * winbuild verify --lock FILE: re-hash the cache entry of every artifact of
 * the lock; exit 1 if one is missing, changed (it is quarantined) or of
 * another size.
 *
 * @where `winbuild verify` (tree vs manifest, `--node DRIVE`, `--lock`)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cmd/cmd.h"
#include "emit/treecheck.h"
#include "fetch/cache.h"
#include "fetch/lockfile.h"
#include "lib/buf.h"

#define VERIFY_USAGE "verify OUTDIR [--node DRIVE] [--site-roots FILE] [-q]\n" \
	"       winbuild verify --lock FILE [--cache DIR] [-q]"

/* OUTDIR's tree/ against its manifest, or with DRIVE that image's
 * system drive (treecheck_node) */
static int verify_tree(struct wb_run *run, const char *dir, const char *drive,
		       const char *site_roots)
{
	struct treecheck res;
	struct wb_err e = WB_ERR_INIT;
	size_t count[TREECHECK_LEFTOVER + 1] = { 0 };
	const char *prefix = drive ? "" : "tree/";
	json_t *problems;

	cmd_json_set(run, "mode", json_string(drive ? "node" : "tree"));
	cmd_json_set(run, "dir", json_string(dir));
	if (drive)
		cmd_json_set(run, "drive", json_string(drive));
	if ((drive ? treecheck_node(dir, drive, site_roots, &res, &e) :
	     treecheck_run(dir, site_roots, &res, &e)) < 0)
		return cmd_fail(&e);
	problems = json_array();
	for (size_t i = 0; i < res.nr; i++) {
		const struct treecheck_problem *p = &res.v[i];
		json_t *pj = json_object();

		count[p->kind]++;
		json_object_set_new(pj, "kind", json_string(treecheck_kind_name(p->kind)));
		json_object_set_new(pj, "path", json_string(p->path));
		json_object_set_new(pj, "detail", p->detail ? json_string(p->detail) : json_null());
		json_array_append_new(problems, pj);
		if (!run->json)
			printf("%-9s %s%s%s%s%s\n", treecheck_kind_name(p->kind), prefix, p->path,
			       p->detail ? "  (" : "", p->detail ? p->detail : "",
			       p->detail ? ")" : "");
	}
	cmd_json_set(run, "problems", problems);
	if (drive) {
		json_t *absent = json_array();

		for (size_t i = 0; i < res.absent.nr; i++) {
			json_array_append_new(absent, json_string(res.absent.v[i]));
			if (!run->json && !run->quiet)
				printf("%-9s %s  (build-only)\n", "absent", res.absent.v[i]);
		}
		cmd_json_set(run, "build_only_absent", absent);
	}
	cmd_json_set(run, "files", json_integer((json_int_t)res.nfiles));
	cmd_json_set(run, "directories", json_integer((json_int_t)res.ndirs));
	cmd_json_set(run, "site_signatures", json_integer((json_int_t)res.nsigned));
	if (res.nr) {
		char sigs[64] = "";

		if (count[TREECHECK_SIGNATURE])
			snprintf(sigs, sizeof(sigs), ", %zu bad site signatures",
				 count[TREECHECK_SIGNATURE]);
		if (drive)
			cmd_errorf("%s does not match %s's manifest: %zu modified, "
				   "%zu missing, %zu build-only left%s", drive, dir,
				   count[TREECHECK_MODIFIED], count[TREECHECK_MISSING],
				   count[TREECHECK_LEFTOVER], sigs);
		else
			cmd_errorf("%s does not match its manifest: %zu modified, "
				   "%zu missing, %zu extra%s", dir, count[TREECHECK_MODIFIED],
				   count[TREECHECK_MISSING], count[TREECHECK_EXTRA], sigs);
		treecheck_release(&res);
		return WB_EVERIFY;
	}
	if (!run->quiet && !run->json) {
		if (drive)
			printf("%s: the %zu kept files and %zu directories match manifest.json; "
			       "its %zu build-only files are absent, as after a build%s\n", drive,
			       res.nfiles, res.ndirs, res.absent.nr,
			       res.nsigned ? "; the site signatures verify" : "");
		else
			printf("%s: %zu files and %zu directories match manifest.json%s\n", dir,
			       res.nfiles, res.ndirs,
			       res.nsigned ? "; the site signatures verify" : "");
	}
	treecheck_release(&res);
	return WB_OK;
}

static int verify_lock(struct wb_run *run, const char *path)
{
	struct lockfile lf;
	struct wb_err e = WB_ERR_INIT;
	struct cache c = CACHE_INIT;
	char *dir = NULL;
	size_t bad = 0;
	json_t *arts;
	int r, ret;

	cmd_json_set(run, "mode", json_string("lock"));
	cmd_json_set(run, "lock", json_string(path));
	memset(&lf, 0, sizeof(lf));
	r = lockfile_read(path, &lf, &e);
	if (r <= 0) {
		if (!r)
			wb_error(&e, WB_EUSAGE, "no lock file '%s'", path);
		return cmd_fail(&e);
	}
	if (!(dir = cache_default_dir(run->cache_dir, &e)) || cache_open(&c, dir, 0, &e) < 0) {
		ret = cmd_fail(&e);
		goto out;
	}
	cmd_json_set(run, "cache", json_string(c.root));
	arts = json_array();
	for (size_t i = 0; i < lf.nr; i++) {
		const struct lock_entry *le = &lf.v[i];
		unsigned long long size = 0;
		char *q = NULL, *detail;
		const char *status = "ok";
		json_t *aj;

		r = cache_lookup(&c, le->sha256, &size, NULL, &q, &e);
		if (r < 0) {
			json_decref(arts);
			ret = cmd_fail(&e);
			goto out;
		}
		if (q) {
			status = "modified";
			detail = xasprintf("cache entry %.16s... changed; quarantined: %s",
					   le->sha256, q);
		} else if (!r) {
			status = "missing";
			detail = xasprintf("no cache entry %.16s...; run 'winbuild fetch'", le->sha256);
		} else if (le->size && size != le->size) {
			status = "modified";
			detail = xasprintf("size %llu, lock %llu", size, le->size);
		} else {
			detail = xasprintf("sha256 %.16s..., %llu bytes", le->sha256, size);
		}
		bad += strcmp(status, "ok") != 0;
		if (!run->json && (strcmp(status, "ok") || !run->quiet))
			printf("%-9s %s  (%s)\n", status, le->name, detail);
		aj = json_object();
		json_object_set_new(aj, "name", json_string(le->name));
		json_object_set_new(aj, "status", json_string(status));
		json_object_set_new(aj, "sha256", json_string(le->sha256));
		json_object_set_new(aj, "size", json_integer((json_int_t)(r > 0 ? size : 0)));
		json_object_set_new(aj, "quarantined", q ? json_string(q) : json_null());
		json_object_set_new(aj, "detail", json_string(detail));
		json_array_append_new(arts, aj);
		free(detail);
		free(q);
	}
	cmd_json_set(run, "artifacts", arts);
	if (bad) {
		cmd_errorf("the cache does not hold %zu of the %zu artifacts of "
			   "'%s' as locked", bad, lf.nr, path);
		ret = WB_EVERIFY;
	} else {
		ret = WB_OK;
	}
out:
	cache_close(&c);
	free(dir);
	lockfile_release(&lf);
	return ret;
}

int cmd_verify(int argc, char **argv, struct wb_run *run)
{
	const char *lock = NULL, *site_roots = NULL, *drive = NULL;
	const struct cmd_opt own[] = {
		{ 0, "--lock", NULL, "FILE", "check the cache against this lock file", &lock, NULL, NULL },
		{ 0, "--node", NULL, "DRIVE", "check the root of an image's system drive\n"
		  "against OUTDIR's manifest: kept files, build-only ones absent", &drive, NULL, NULL },
		{ 0, "--site-roots", NULL, "FILE", "the site's roots (PEM): check the signature\n"
		  "of every file the site signed (site_signing)", &site_roots, NULL, NULL },
		{ 0 },
	};
	const struct cmd_optset set = { OPT_CACHE | OPT_QUIET | OPT_JSON, own, 0, VERIFY_USAGE };
	int ret = cmd_parse_options(argc, argv, &set, run);

	if (ret)
		return ret;
	if (lock && !run->positional.nr)
		return verify_lock(run, lock);
	if (lock || run->positional.nr != 1)
		return cmd_usage("%s", VERIFY_USAGE);
	return verify_tree(run, run->positional.v[0], drive, site_roots);
}
