/*
 * winbuild verify OUTDIR: re-check a staged output (OUT/<name>) against its
 * manifest: every modified, missing and extra file is reported; exit 1 if
 * any, 0 when clean (emit/treecheck.h).
 * winbuild verify --lock FILE: re-hash the cache entry of every artifact of
 * the lock; exit 1 if one is missing, changed (it is quarantined) or of
 * another size.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "emit/treecheck.h"
#include "fetch/cache.h"
#include "fetch/lockfile.h"
#include "lib/buf.h"

#define VERIFY_USAGE "verify OUTDIR [-q]\n" \
	"       winbuild verify --lock FILE [--cache DIR] [-q]"

static int verify_tree(struct wb_run *run, const char *dir)
{
	struct treecheck res;
	struct wb_err e = WB_ERR_INIT;
	size_t count[4] = { 0 };

	if (treecheck_run(dir, &res, &e) < 0)
		return cmd_fail(&e);
	for (size_t i = 0; i < res.nr; i++) {
		const struct treecheck_problem *p = &res.v[i];

		count[p->kind]++;
		printf("%-9s tree/%s%s%s%s\n", treecheck_kind_name(p->kind), p->path,
		       p->detail ? "  (" : "", p->detail ? p->detail : "",
		       p->detail ? ")" : "");
	}
	if (res.nr) {
		fprintf(stderr, "winbuild: %s does not match its manifest: %zu modified, "
			"%zu missing, %zu extra\n", dir, count[TREECHECK_MODIFIED],
			count[TREECHECK_MISSING], count[TREECHECK_EXTRA]);
		treecheck_release(&res);
		return WB_EVERIFY;
	}
	if (!run->quiet)
		printf("%s: %zu files and %zu directories match manifest.json\n", dir,
		       res.nfiles, res.ndirs);
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
	int r, ret;

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
	for (size_t i = 0; i < lf.nr; i++) {
		const struct lock_entry *le = &lf.v[i];
		unsigned long long size = 0;
		char *q = NULL;

		r = cache_lookup(&c, le->sha256, &size, NULL, &q, &e);
		if (r < 0) {
			ret = cmd_fail(&e);
			goto out;
		}
		if (q) {
			printf("modified  %s  (cache entry %.16s... changed; quarantined: %s)\n",
			       le->name, le->sha256, q);
			bad++;
		} else if (!r) {
			printf("missing   %s  (no cache entry %.16s...; run 'winbuild fetch')\n",
			       le->name, le->sha256);
			bad++;
		} else if (le->size && size != le->size) {
			printf("modified  %s  (size %llu, lock %llu)\n", le->name, size, le->size);
			bad++;
		} else if (!run->quiet) {
			printf("ok        %s  (sha256 %.16s..., %llu bytes)\n", le->name,
			       le->sha256, size);
		}
		free(q);
	}
	if (bad) {
		fprintf(stderr, "winbuild: the cache does not hold %zu of the %zu artifacts of "
			"'%s' as locked\n", bad, lf.nr, path);
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
	const char *lock = NULL;
	const struct cmd_opt own[] = {
		{ 0, "--lock", NULL, "FILE", "check the cache against this lock file", &lock, NULL, NULL },
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
	return verify_tree(run, run->positional.v[0]);
}
