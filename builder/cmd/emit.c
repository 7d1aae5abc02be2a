/* winbuild emit: Packer inputs (or an image-builder var file) for a recipe. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "emit/emit.h"
#include "emit/imagebuilder.h"
#include "stage/manifest.h"
#include "fetch/lockfile.h"
#include "lib/fs.h"
#include "recipe/plan.h"

#define EMIT_USAGE "emit RECIPE [--builder NAME]... [-o OUT] [-O FILE]... [--set KEY=VALUE]...\n" \
	"       [--sign-scripts (--sign-cert FILE --sign-key FILE | --sign-pkcs12 FILE |\n" \
	"        --sign-pkcs11-uri URI --sign-pkcs11-module SO --sign-cert FILE|URI)\n" \
	"        [--sign-pass-file FILE] [--sign-timestamp URL]]\n" \
	"       winbuild emit RECIPE --format image-builder --mirror-url URL [--lock FILE]"

#define BUILD_USAGE "build RECIPE [-o OUT] [-O FILE]... [--set KEY=VALUE]... [--builder NAME]...\n" \
	"       [-j N] [--offline] [--locked] [--cacert FILE] [--sign-scripts ...]"

#ifndef WB_SHAREDIR
#define WB_SHAREDIR "/usr/local/share/winbuild"
#endif

/*
 * Where the templates (packer/...) and shipped recipes are:
 * $WINBUILD_DATA_DIR, else the directory of the running binary when it
 * holds packer/ (a source tree), else ../share/winbuild beside the binary
 * when that does (make install, also under DESTDIR or another PREFIX),
 * else the share directory compiled in.
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
			static const char *const rel[] = { "", "/../share/winbuild" };

			for (size_t i = 0; i < ARRAY_SIZE(rel); i++) {
				probe = xasprintf("%s%s/packer/hcl", exe, rel[i]);
				if (fs_exists(probe) &&
				    strlen(exe) + strlen(rel[i]) < len) {
					free(probe);
					snprintf(buf, len, "%s%s", exe, rel[i]);
					return buf;
				}
				free(probe);
			}
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
		  const struct wb_strlist *req_builders,
		  const struct sign_opts *sign)
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
	o.sign = sign;
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

/* Options emit and build share: builders, format, signing. */
struct emit_args {
	struct wb_strlist builders;
	const char *format, *mirror_url;
	struct sign_opts so;
	int sign_scripts;
	struct cmd_opt table[12];
};

#define EMIT_ONLY_OPTS 9   /* index of --format in emit_args.table */

static void emit_args_init(struct emit_args *a)
{
	const struct cmd_opt t[] = {
		{ "--builder", "-b", 1, NULL, &a->builders, NULL },
		{ "--sign-scripts", NULL, 0, NULL, NULL, &a->sign_scripts },
		{ "--sign-cert", NULL, 1, &a->so.cert, NULL, NULL },
		{ "--sign-key", NULL, 1, &a->so.key, NULL, NULL },
		{ "--sign-pkcs12", NULL, 1, &a->so.pkcs12, NULL, NULL },
		{ "--sign-pkcs11-uri", NULL, 1, &a->so.pkcs11_uri, NULL, NULL },
		{ "--sign-pkcs11-module", NULL, 1, &a->so.pkcs11_module, NULL, NULL },
		{ "--sign-pass-file", NULL, 1, &a->so.pass_file, NULL, NULL },
		{ "--sign-timestamp", NULL, 1, &a->so.timestamp_url, NULL, NULL },
		/* EMIT_ONLY_OPTS: from here on, emit only */
		{ "--format", NULL, 1, &a->format, NULL, NULL },
		{ "--mirror-url", NULL, 1, &a->mirror_url, NULL, NULL },
		{ NULL, NULL, 0, NULL, NULL, NULL },
	};

	memset(a, 0, sizeof(*a));
	a->format = "packer";
	a->so.program = getenv("WINBUILD_OSSLSIGNCODE");
	memcpy(a->table, t, sizeof(t));
}

/* Check the combination of emit options; prints and returns WB_EUSAGE. */
static int emit_args_check(struct emit_args *a)
{
	struct wb_err e = WB_ERR_INIT;
	const char *format = a->format;

	if (strcmp(format, "packer") && strcmp(format, "image-builder")) {
		fprintf(stderr, "winbuild: --format is 'packer' or 'image-builder', not '%s'\n", format);
		return WB_EUSAGE;
	}
	if (!strcmp(format, "image-builder") && !a->mirror_url) {
		fprintf(stderr, "winbuild: --format image-builder needs --mirror-url URL\n");
		return WB_EUSAGE;
	}
	if (a->sign_scripts != sign_requested(&a->so) ||
	    (a->sign_scripts && strcmp(format, "packer"))) {
		fprintf(stderr, "winbuild: %s\n", a->sign_scripts && strcmp(format, "packer") ?
			"--sign-scripts applies to --format packer only" : a->sign_scripts ?
			"--sign-scripts needs a key: --sign-key, --sign-pkcs12 or --sign-pkcs11-uri" :
			"--sign-* options need --sign-scripts");
		return WB_EUSAGE;
	}
	if (a->sign_scripts && sign_check_opts(&a->so, &e))
		return cmd_fail(&e);
	return 0;
}

/* Emit for run->positional.v[0]; STAGE: 1 always stage first, 0 only when
 * nothing is staged yet. */
static int emit_recipe(struct wb_run *run, struct emit_args *a, int stage)
{
	struct plan plan;
	char *mpath = NULL;
	int ret;

	memset(&plan, 0, sizeof(plan));
	if ((ret = cmd_load_plan(run, run->positional.v[0], &plan)))
		return ret;
	if (!strcmp(a->format, "packer")) {
		char *outdir = fs_join(run->out_dir, plan.name);
		mpath = fs_join(outdir, "manifest.json");
		free(outdir);
		if ((stage || !fs_exists(mpath)) && (ret = cmd_stage_recipe(run)))
			goto out;
	}
	if (!strcmp(a->format, "image-builder"))
		ret = emit_image_builder(run, &plan, a->mirror_url);
	else
		ret = cmd_emit_plan(run, &plan, &a->builders, a->sign_scripts ? &a->so : NULL);
out:
	free(mpath);
	plan_release(&plan);
	return ret;
}

int cmd_emit(int argc, char **argv, struct wb_run *run)
{
	struct emit_args a;
	int ret;

	emit_args_init(&a);
	if ((ret = cmd_parse_options_ex(argc, argv, CMD_STAGE_OPTIONS, a.table,
					EMIT_USAGE, run)))
		goto out;
	if (run->positional.nr != 1) {
		ret = cmd_usage("%s", EMIT_USAGE);
		goto out;
	}
	if (!(ret = emit_args_check(&a)))
		ret = emit_recipe(run, &a, 0);
out:
	wb_strlist_release(&a.builders);
	return ret;
}

int cmd_build(int argc, char **argv, struct wb_run *run)
{
	struct emit_args a;
	int ret;

	emit_args_init(&a);
	a.table[EMIT_ONLY_OPTS].name = NULL;   /* build: Packer inputs only */
	if ((ret = cmd_parse_options_ex(argc, argv, CMD_STAGE_OPTIONS, a.table,
					BUILD_USAGE, run)))
		goto out;
	if (run->positional.nr != 1) {
		ret = cmd_usage("%s", BUILD_USAGE);
		goto out;
	}
	if (!(ret = emit_args_check(&a)))
		ret = emit_recipe(run, &a, 1);
out:
	wb_strlist_release(&a.builders);
	return ret;
}
