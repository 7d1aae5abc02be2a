/* winbuild cache ls|gc: inspect and prune the download cache. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cmd/cmd.h"
#include "fetch/cache.h"

#define CACHE_USAGE "cache ls|gc [--cache DIR] [--json]"

static int cache_ls(struct wb_run *run, struct cache *c)
{
	struct wb_err e = WB_ERR_INIT;
	struct cache_listing l;
	unsigned long long total = 0;

	if (cache_list(c, &l, &e) < 0) {
		cache_listing_release(&l);
		return cmd_fail(&e);
	}
	if (run->json) {
		json_t *arr = json_array();

		for (size_t i = 0; i < l.nr; i++) {
			json_t *o = json_object(), *a = json_array();
			for (size_t k = 0; k < l.v[i].nartifacts; k++)
				json_array_append_new(a, json_string(l.v[i].artifacts[k]));
			json_object_set_new(o, "sha256", json_string(l.v[i].sha256));
			json_object_set_new(o, "size", json_integer((json_int_t)l.v[i].size));
			json_object_set_new(o, "artifacts", a);
			json_array_append_new(arr, o);
		}
		cmd_json_set(run, "cache", json_string(c->root));
		cmd_json_set(run, "entries", arr);
		cmd_json_set(run, "tmp_files", json_integer((json_int_t)l.ntmp));
		cmd_json_set(run, "quarantined", json_integer((json_int_t)l.nquarantine));
	} else {
		for (size_t i = 0; i < l.nr; i++) {
			printf("%s %12llu", l.v[i].sha256, l.v[i].size);
			if (!l.v[i].nartifacts)
				printf(" (unreferenced)");
			for (size_t k = 0; k < l.v[i].nartifacts; k++)
				printf("%s%s", k ? ", " : " ", l.v[i].artifacts[k]);
			putchar('\n');
			total += l.v[i].size;
		}
		printf("%zu entr%s, %llu bytes; %zu temp file%s, %zu quarantined (in %s)\n",
		       l.nr, l.nr == 1 ? "y" : "ies", total, l.ntmp, l.ntmp == 1 ? "" : "s",
		       l.nquarantine, c->root);
	}
	cache_listing_release(&l);
	return 0;
}

static int cache_gc_cmd(struct wb_run *run, struct cache *c)
{
	struct wb_err e = WB_ERR_INIT;
	struct cache_gc_stats st;

	if (cache_gc(c, &st, &e) < 0)
		return cmd_fail(&e);
	cmd_json_set(run, "cache", json_string(c->root));
	cmd_json_set(run, "removed_entries", json_integer((json_int_t)st.removed_entries));
	cmd_json_set(run, "removed_tmp_files", json_integer((json_int_t)st.removed_tmp));
	cmd_json_set(run, "removed_quarantined", json_integer((json_int_t)st.removed_quarantine));
	cmd_json_set(run, "removed_refs", json_integer((json_int_t)st.removed_refs));
	cmd_json_set(run, "freed_bytes", json_integer((json_int_t)st.freed_bytes));
	if (!run->quiet && !run->json)
		printf("removed %zu unreferenced entr%s, %zu temp file%s, %zu quarantined, "
		       "%zu stale ref%s; freed %llu bytes\n",
		       st.removed_entries, st.removed_entries == 1 ? "y" : "ies",
		       st.removed_tmp, st.removed_tmp == 1 ? "" : "s",
		       st.removed_quarantine, st.removed_refs,
		       st.removed_refs == 1 ? "" : "s", st.freed_bytes);
	return 0;
}

int cmd_cache(int argc, char **argv, struct wb_run *run)
{
	struct wb_err e = WB_ERR_INIT;
	struct cache c = CACHE_INIT;
	const char *sub;
	char *dir;
	int ret;

	static const struct cmd_optset set = {
		OPT_CACHE | OPT_JSON | OPT_QUIET, NULL, 0, CACHE_USAGE
	};

	ret = cmd_parse_options(argc, argv, &set, run);
	if (ret)
		return ret;
	if (run->positional.nr != 1)
		return cmd_usage("%s", CACHE_USAGE);
	sub = run->positional.v[0];
	if (strcmp(sub, "ls") && strcmp(sub, "gc")) {
		cmd_errorf("unknown cache command '%s'", sub);
		return cmd_usage("%s", CACHE_USAGE);
	}
	dir = cache_default_dir(run->cache_dir, &e);
	if (!dir)
		return cmd_fail(&e);
	ret = cache_open(&c, dir, !strcmp(sub, "gc"), &e);
	free(dir);
	if (ret < 0)
		return cmd_fail(&e);
	if (!strcmp(sub, "ls"))
		ret = cache_ls(run, &c);
	else
		ret = cache_gc_cmd(run, &c);
	cache_close(&c);
	return ret;
}
