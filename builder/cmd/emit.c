/* winbuild emit: Packer inputs (or an image-builder var file) for a recipe. */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cmd/cmd.h"
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

/*
 * SIGINT/SIGTERM while emitting: the handler only sets this flag; emit
 * stops at its next step or chunk, removes its temp dir (which holds the
 * one-off install password) and the command exits WB_EINTR (130).
 */
static volatile sig_atomic_t emit_interrupted;

static void on_emit_interrupt(int sig)
{
	(void)sig;
	emit_interrupted = 1;
}

int cmd_emit_plan(struct wb_run *run, const struct plan *plan,
		  const struct sign_opts *sign)
{
	struct sigaction sa, old_int, old_term;
	const struct wb_strlist *sel = &plan->builders;  /* narrowed by --builder */
	struct staged_manifest m;
	struct wb_err e = WB_ERR_INIT;
	struct emit_opts o;
	char data[PATH_MAX];
	char *outdir = fs_join(run->out_dir, plan->name);
	char *mpath = fs_join(outdir, "manifest.json");
	int ret;

	memset(&m, 0, sizeof(m));
	if (plan_require_iso(plan, &e)) {
		ret = cmd_fail(&e);
		goto out;
	}
	if (!fs_exists(mpath)) {
		cmd_errorf("'%s' not found: stage the recipe first "
			"('winbuild stage' or 'winbuild build')", mpath);
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
	o.builders = sel;
	o.sign = sign;
	o.interrupted = &emit_interrupted;
	/* no SA_RESTART: a blocked read returns and the flag is seen */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_emit_interrupt;
	sigemptyset(&sa.sa_mask);
	emit_interrupted = 0;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	ret = emit_packer(plan, &m, &o, &e);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	if (ret || emit_interrupted) {
		if (!ret)   /* too late to stop: the output is whole, say so */
			wb_error(&e, WB_EINTR, "interrupted after the Packer inputs were written");
		ret = cmd_fail(&e);
		goto out;
	}
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
	ret = WB_OK;
out:
	staged_manifest_release(&m);
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
		struct wb_err e = WB_ERR_INIT;
		char *outdir;

		/* before anything is fetched: the ISO builders' digest is
		 * needed where it is used, in the Packer inputs */
		if (plan_require_iso(&plan, &e)) {
			ret = cmd_fail(&e);
			goto out;
		}
		outdir = fs_join(run->out_dir, plan.name);
		mpath = fs_join(outdir, "manifest.json");
		free(outdir);
		if ((stage || !fs_exists(mpath)) && (ret = cmd_stage_recipe(run)))
			goto out;
	}
	if (!strcmp(a->format, "image-builder"))
		ret = emit_image_builder(run, &plan, a->mirror_url);
	else
		ret = cmd_emit_plan(run, &plan, a->sign_scripts ? &a->so : NULL);
out:
	free(mpath);
	plan_release(&plan);
	return ret;
}

int cmd_emit_args_parse(int argc, char **argv, unsigned mask, const char *usage,
			struct emit_args *a, struct wb_run *run)
{
	struct cmd_optset set = { OPTS_STAGE | OPT_JSON, NULL, mask, usage };
	int ret;

	emit_args_init(a);
	set.own = a->table;
	if ((ret = cmd_parse_options(argc, argv, &set, run)))
		return ret;
	return run->positional.nr != 1 ? cmd_usage("%s", usage) : 0;
}

int cmd_emit(int argc, char **argv, struct wb_run *run)
{
	/* --lock: the digests of --format image-builder */
	struct emit_args a;
	int ret = cmd_emit_args_parse(argc, argv, EMIT_OPTS, EMIT_USAGE, &a, run);

	if (!ret && !(ret = emit_args_check(&a, run, 0)))
		ret = emit_recipe(run, &a, 0);
	return ret;
}

int cmd_build(int argc, char **argv, struct wb_run *run)
{
	struct emit_args a;
	int ret = cmd_emit_args_parse(argc, argv, BUILD_OPTS, BUILD_USAGE, &a, run);

	if (!ret && !(ret = emit_args_check(&a, run, 1)))
		ret = emit_recipe(run, &a, 1);
	return ret;
}
