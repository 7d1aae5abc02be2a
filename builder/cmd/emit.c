/*
 * winbuild emit, winbuild build: Packer inputs (or an image-builder var
 * file) for a recipe, through the driver (pipeline.h); build always
 * stages first, emit when nothing is staged. Also the option table emit,
 * build and stage share (the --sign-* key).
 *
 * @where `winbuild emit`
 */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cmd/pipeline.h"
#include "emit/emit.h"
#include "emit/imagebuilder.h"
#include "stage/manifest.h"
#include "fetch/lockfile.h"
#include "lib/fs.h"
#include "lib/platform.h"
#include "recipe/plan.h"

#define EMIT_USAGE "emit RECIPE [--builder NAME]... [-o OUT] [-O FILE]... [--set KEY=VALUE]...\n" \
	"       [--sign-scripts (--sign-cert FILE --sign-key FILE | --sign-pkcs12 FILE |\n" \
	"        --sign-pkcs11-uri URI --sign-pkcs11-module SO --sign-cert FILE|URI)\n" \
	"        [--sign-pass-file FILE] [--sign-timestamp URL]]\n" \
	"       winbuild emit RECIPE --format image-builder --mirror-url URL [--lock FILE]"

#define BUILD_USAGE "build RECIPE... [-o OUT] [-O FILE]... [--set KEY=VALUE]... [--builder NAME]...\n" \
	"       [--matrix FILE] [-j N] [--offline] [--locked] [--cacert FILE] [--sign-scripts ...]\n" \
	"       winbuild build --matrix FILE [options]"

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
		cmd_errorf("no lock file '%s': run 'winbuild lock' first "
			"(the var file carries the locked digests)", run->lock_path);
		ret = WB_EUSAGE;
		goto out;
	}
	if (imagebuilder_write(path, plan, &lf, mirror_url, &warnings, &e)) {
		ret = cmd_fail(&e);
		goto out;
	}
	for (size_t i = 0; i < warnings.nr; i++)
		cmd_warnf("%s", warnings.v[i]);
	cmd_json_set(run, "image_builder", json_string(path));
	if (!run->quiet && !run->json)
		printf("%s\n", path);
out:
	lockfile_release(&lf);
	wb_strlist_release(&warnings);
	free(outdir);
	free(path);
	return ret;
}

static void emit_args_init(struct emit_args *a)
{
	const struct cmd_opt t[] = {
		{ EO_SIGN_SCRIPTS, "--sign-scripts", NULL, NULL,
		  "Authenticode-sign every script with osslsigncode;\n"
		  "the template then runs them with execution_policy\n"
		  "\"allsigned\" (docs/authenticode.md)", NULL, NULL, &a->sign_scripts },
		{ EO_SIGN_CERT, "--sign-cert", NULL, "FILE", "PEM certificate chain (or a PKCS#11 URI)",
		  &a->so.cert, NULL, NULL },
		{ EO_SIGN_KEY, "--sign-key", NULL, "FILE", "PEM private key", &a->so.key, NULL, NULL },
		{ EO_SIGN_PKCS12, "--sign-pkcs12", NULL, "FILE", "PKCS#12 file (certificate and key)",
		  &a->so.pkcs12, NULL, NULL },
		{ EO_SIGN_PKCS11_URI, "--sign-pkcs11-uri", NULL, "URI",
		  "a key kept in a PKCS#11 token (HSM)", &a->so.pkcs11_uri, NULL, NULL },
		{ EO_SIGN_PKCS11_MODULE, "--sign-pkcs11-module", NULL, "SO",
		  "the PKCS#11 module of that token", &a->so.pkcs11_module, NULL, NULL },
		{ EO_SIGN_PASS_FILE, "--sign-pass-file", NULL, "FILE",
		  "key password, PKCS#12 password or token PIN", &a->so.pass_file, NULL, NULL },
		{ EO_SIGN_TIMESTAMP, "--sign-timestamp", NULL, "URL",
		  "RFC 3161 timestamp server (needs network)", &a->so.timestamp_url, NULL, NULL },
		{ EO_FORMAT, "--format", NULL, "FMT", "packer (default) or image-builder: a JSON var file\n"
		  "for kubernetes-sigs/image-builder in\n"
		  "OUT/<name>/image-builder/<name>.json", &a->format, NULL, NULL },
		{ EO_MIRROR_URL, "--mirror-url", NULL, "URL", "with image-builder: where the mirror of the\n"
		  "verified artifacts is served (URL/<host>/<path>)", &a->mirror_url, NULL, NULL },
		{ EO_MATRIX, "--matrix", NULL, "FILE", "build the images of a matrix file: recipes x\n"
		  "variations (docs/matrix.md); several RECIPEs do\n"
		  "the same without a file", &a->matrix, NULL, NULL },
		{ 0 },
	};

	memset(a, 0, sizeof(*a));
	a->format = "packer";
	a->so.program = getenv("WINBUILD_OSSLSIGNCODE");
	memcpy(a->table, t, sizeof(t));
}

/* Check the combination of emit options; prints and returns WB_EUSAGE. */
static int emit_args_check(struct emit_args *a, struct wb_run *run, int build)
{
	struct wb_err e = WB_ERR_INIT;
	const char *format = a->format;

	if (strcmp(format, "packer") && strcmp(format, "image-builder")) {
		cmd_errorf("--format is 'packer' or 'image-builder', not '%s'", format);
		return WB_EUSAGE;
	}
	if (!strcmp(format, "image-builder") && !a->mirror_url) {
		cmd_errorf("--format image-builder needs --mirror-url URL");
		return WB_EUSAGE;
	}
	/* build stages too: its key may be only for the recipe's site_signing */
	if ((a->sign_scripts && !sign_requested(&a->so)) ||
	    (!build && !a->sign_scripts && sign_requested(&a->so)) ||
	    (a->sign_scripts && strcmp(format, "packer"))) {
		cmd_errorf("%s", a->sign_scripts && strcmp(format, "packer") ?
			"--sign-scripts applies to --format packer only" : a->sign_scripts ?
			"--sign-scripts needs a key: --sign-key, --sign-pkcs12 or --sign-pkcs11-uri" :
			"--sign-* options need --sign-scripts");
		return WB_EUSAGE;
	}
	if (a->sign_scripts && sign_check_opts(&a->so, &e))
		return cmd_fail(&e);
	if (build && sign_requested(&a->so)) {
		run->sign = &a->so;
		run->sign_strict = !a->sign_scripts;
	}
	return 0;
}

/* Emit for run->positional.v[0] through the driver; STEPS: build stages
 * always, emit only when nothing is staged yet.
 * @where `winbuild build` (fetch, stage, emit), and emit staging first when
 *   nothing is staged
 */
static int emit_recipe(struct wb_run *run, struct emit_args *a, unsigned steps)
{
	struct pipeline p;
	int ret;

	pipe_init(&p, run, steps);
	p.emit_sign = a->sign_scripts ? &a->so : NULL;
	if ((ret = cmd_pipe_images(&p, a->matrix))) {
		pipe_release(&p);
		return ret;
	}
	if (!strcmp(a->format, "image-builder")) {
		struct wb_err e = WB_ERR_INIT;

		if (pipe_resolve(&p, &p.images[0], &e) < 0)
			ret = cmd_fail(&e);
		else
			ret = emit_image_builder(run, &p.images[0].plan, a->mirror_url);
	} else {
		ret = cmd_pipe_run(&p);
	}
	pipe_release(&p);
	return ret;
}

/*
 * @where command-line options: the one parser, the common options (`OPT_*`),
 *   each command's option set, the help's option list, did-you-mean for an
 *   unknown option -- the options emit and build share, a bit per option
 */
int cmd_emit_args_parse(int argc, char **argv, unsigned mask, const char *usage,
			struct emit_args *a, struct wb_run *run)
{
	struct cmd_optset set = { OPTS_STAGE | OPT_JSON, NULL, mask, usage };
	int ret;

	emit_args_init(a);
	set.own = a->table;
	if ((ret = cmd_parse_options(argc, argv, &set, run)))
		return ret;
	if (a->matrix && run->positional.nr) {
		cmd_errorf("--matrix FILE names the recipes: give no RECIPE beside it");
		return cmd_usage("%s", usage);
	}
	if ((mask & EO_MATRIX) && (a->matrix || run->positional.nr > 1))
		return 0;
	return run->positional.nr != 1 ? cmd_usage("%s", usage) : 0;
}

int cmd_emit(int argc, char **argv, struct wb_run *run)
{
	/* --lock: the digests of --format image-builder */
	struct emit_args a;
	int ret = cmd_emit_args_parse(argc, argv, EMIT_OPTS, EMIT_USAGE, &a, run);

	if (!ret && !(ret = emit_args_check(&a, run, 0)))
		ret = emit_recipe(run, &a, PIPE_EMIT);
	return ret;
}

/*
 * @where `winbuild build` (fetch, stage, emit), and emit staging first when
 *   nothing is staged
 */
int cmd_build(int argc, char **argv, struct wb_run *run)
{
	struct emit_args a;
	int ret = cmd_emit_args_parse(argc, argv, BUILD_OPTS, BUILD_USAGE, &a, run);

	if (!ret && !(ret = emit_args_check(&a, run, 1)))
		ret = emit_recipe(run, &a, PIPE_FETCH | PIPE_STAGE | PIPE_EMIT |
				  PIPE_STAGE_ALWAYS);
	return ret;
}
