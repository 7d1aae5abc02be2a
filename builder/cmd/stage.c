/*
 * winbuild stage RECIPE: the driver's steps up to the stage (pipeline.h):
 * fetch what is missing, then build OUT/<name>/tree, manifest.json and
 * sbom.cdx.json. A digest mismatch while staging quarantines the cache
 * entry (exit 1).
 */
#include "cmd/pipeline.h"

#define STAGE_USAGE \
	"stage RECIPE... [--matrix FILE] [-o OUT] [-O FILE]... [--set K=V]... [--builder NAME]... [-j N] [--offline] " \
	"[--locked] [--lock FILE] [--cache DIR] [--cacert FILE] [--no-progress] [-q] " \
	"[--sign-cert FILE --sign-key FILE | --sign-pkcs12 FILE | --sign-pkcs11-uri URI ...]"

int cmd_stage(int argc, char **argv, struct wb_run *run)
{
	/* the key options of emit's table: the site's key for site_signing */
	struct emit_args a;
	struct pipeline p;
	int ret = cmd_emit_args_parse(argc, argv, STAGE_SIGN_OPTS, STAGE_USAGE, &a, run);

	if (ret)
		return ret;
	if (sign_requested(&a.so)) {
		run->sign = &a.so;
		run->sign_strict = 1;
	}
	pipe_init(&p, run, PIPE_STAGE);
	ret = cmd_pipe_images(&p, a.matrix);
	if (!ret)
		ret = cmd_pipe_run(&p);
	pipe_release(&p);
	run->sign = NULL;
	return ret;
}
