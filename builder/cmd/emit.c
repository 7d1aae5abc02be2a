/* winbuild emit: Packer inputs (or an image-builder var file) for a recipe. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "emit/emit.h"
#include "emit/imagebuilder.h"
#include "emit/manifest.h"
#include "fetch/lockfile.h"
#include "lib/fs.h"
#include "recipe/plan.h"

#define EMIT_USAGE "emit RECIPE [--builder NAME]... [-o OUT] [-O FILE]... [--set KEY=VALUE]...\n" \
	"       winbuild emit RECIPE --format image-builder --mirror-url URL [--lock FILE]"

#ifndef WB_SHAREDIR
#define WB_SHAREDIR "/usr/local/share/winbuild"
#endif

/*
 * Where the templates (packer/...) are: $WINBUILD_DATA_DIR, else the
 * directory of the running binary when it holds packer/ (a source tree),
 * else the installed share directory.
 */
const char *cmd_data_dir(char *buf, size_t len)
{
	const char *env = getenv("WINBUILD_DATA_DIR");
	char exe[PATH_MAX];
	ssize_t n;

	if (env && *env)
		return env;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		char *slash, *probe;
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			probe = xasprintf("%s/packer/hcl", exe);
			if (fs_exists(probe) && strlen(exe) < len) {
				free(probe);
				snprintf(buf, len, "%s", exe);
				return buf;
			}
			free(probe);
		}
	}
	return WB_SHAREDIR;
}

/* Check --builder against the plan; fill SEL with the builders to emit. */
static int select_builders(const struct plan *p, const struct wb_strlist *req,
			   struct wb_strlist *sel)
{
	if (!req->nr) {
		for (size_t i = 0; i < p->builders.nr; i++)
			wb_strlist_push_unique(sel, p->builders.v[i]);
		return 0;
	}
	for (size_t i = 0; i < req->nr; i++) {
		int in_plan = 0;

		if (!emit_builder_known(req->v[i])) {
			fprintf(stderr, "winbuild: unknown builder '%s' (azure-arm, vsphere-iso, "
				"qemu, hyperv-iso, amazon-ebs)\n", req->v[i]);
			return WB_EUSAGE;
		}
		for (size_t k = 0; k < p->builders.nr; k++)
			in_plan |= !strcmp(p->builders.v[k], req->v[i]);
		if (!in_plan) {
			fprintf(stderr, "winbuild: builder '%s' is not in the recipe's packer.builders "
				"(--builder narrows; widen with --set packer.builders=[...])\n",
				req->v[i]);
			return WB_EUSAGE;
		}
		wb_strlist_push_unique(sel, req->v[i]);
	}
	return 0;
}

int cmd_emit_plan(struct wb_run *run, const struct plan *plan,
		  const struct wb_strlist *req_builders)
{
	struct wb_strlist sel = WB_STRLIST_INIT;
	struct staged_manifest m;
	struct wb_err e = WB_ERR_INIT;
	struct emit_opts o;
	char data[PATH_MAX];
	char *outdir = fs_join(run->out_dir, plan->name);
	char *mpath = fs_join(outdir, "manifest.json");
	int ret;

	memset(&m, 0, sizeof(m));
	if ((ret = select_builders(plan, req_builders, &sel)))
		goto out;
	if (!fs_exists(mpath)) {
		fprintf(stderr, "winbuild: '%s' not found: stage the recipe first "
			"('winbuild stage' or 'winbuild build')\n", mpath);
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
	o.builders = &sel;
	if (emit_packer(plan, &m, &o, &e)) {
		ret = cmd_fail(&e);
		goto out;
	}
	if (!run->quiet) {
		printf("%s/packer/%s.pkr.hcl\n", outdir, plan->name);
		printf("%s/packer/%s.auto.pkrvars.hcl\n", outdir, plan->name);
		printf("builders:");
		for (size_t i = 0; i < sel.nr; i++)
			printf(" %s", sel.v[i]);
		putchar('\n');
	}
	ret = WB_OK;
out:
	staged_manifest_release(&m);
	wb_strlist_release(&sel);
	free(outdir);
	free(mpath);
	return ret;
}

static int emit_image_builder(struct wb_run *run, const struct plan *plan,
			      const char *mirror_url)
{
	struct lockfile lf;
	struct wb_err e = WB_ERR_INIT;
	struct wb_strlist warnings = WB_STRLIST_INIT;
	char *outdir = fs_join(run->out_dir, plan->name);
	char *path = xasprintf("%s/image-builder/%s.json", outdir, plan->name);
	int r, ret = WB_OK;

	memset(&lf, 0, sizeof(lf));
	r = lockfile_read(run->lock_path, &lf, &e);
	if (r < 0) {
		ret = cmd_fail(&e);
		goto out;
	}
	if (r == 0) {
		fprintf(stderr, "winbuild: no lock file '%s': run 'winbuild lock' first "
			"(the var file carries the locked digests)\n", run->lock_path);
		ret = WB_EUSAGE;
		goto out;
	}
	if (imagebuilder_write(path, plan, &lf, mirror_url, &warnings, &e)) {
		ret = cmd_fail(&e);
		goto out;
	}
	for (size_t i = 0; i < warnings.nr; i++)
		fprintf(stderr, "winbuild: warning: %s\n", warnings.v[i]);
	if (!run->quiet)
		printf("%s\n", path);
out:
	lockfile_release(&lf);
	wb_strlist_release(&warnings);
	free(outdir);
	free(path);
	return ret;
}

int cmd_emit(int argc, char **argv, struct wb_run *run)
{
	struct wb_strlist builders = WB_STRLIST_INIT;
	const char *format = "packer", *mirror_url = NULL;
	const struct cmd_opt extra[] = {
		{ "--builder", "-b", 1, NULL, &builders, NULL },
		{ "--format", NULL, 1, &format, NULL, NULL },
		{ "--mirror-url", NULL, 1, &mirror_url, NULL, NULL },
		{ NULL, NULL, 0, NULL, NULL, NULL },
	};
	struct plan plan;
	int ret;

	memset(&plan, 0, sizeof(plan));
	if ((ret = cmd_parse_options_ex(argc, argv, "-O --set -o --lock -q -v", extra,
					EMIT_USAGE, run)))
		goto out;
	if (run->positional.nr != 1) {
		ret = cmd_usage("%s", EMIT_USAGE);
		goto out;
	}
	if (strcmp(format, "packer") && strcmp(format, "image-builder")) {
		fprintf(stderr, "winbuild: --format is 'packer' or 'image-builder', not '%s'\n", format);
		ret = WB_EUSAGE;
		goto out;
	}
	if (!strcmp(format, "image-builder") && !mirror_url) {
		fprintf(stderr, "winbuild: --format image-builder needs --mirror-url URL\n");
		ret = WB_EUSAGE;
		goto out;
	}
	if ((ret = cmd_load_plan(run, run->positional.v[0], &plan)))
		goto out;
	if (!strcmp(format, "image-builder"))
		ret = emit_image_builder(run, &plan, mirror_url);
	else
		ret = cmd_emit_plan(run, &plan, &builders);
	plan_release(&plan);
out:
	wb_strlist_release(&builders);
	return ret;
}
