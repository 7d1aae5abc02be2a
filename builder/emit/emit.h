/*
 * emit: Packer inputs from a resolved plan and its staged output.
 *
 *   OUT/<recipe>/packer/<recipe>.pkr.hcl         variables, sources, build
 *   OUT/<recipe>/packer/<recipe>.auto.pkrvars.hcl values the user edits
 *   OUT/<recipe>/packer/scripts/NN-*.ps1          provisioning steps
 *   OUT/<recipe>/packer/payload.zip               archive builders only
 *   OUT/<recipe>/packer/init/required_plugins.pkr.hcl   for `packer init`
 *   OUT/<recipe>/packer/README.md
 *
 * Everything is rendered from templates under DATA_DIR/packer/ (lib/tmpl.h
 * syntax) and is deterministic: the same plan, manifest and tree give the
 * same bytes. The directory is built beside the final one and renamed into
 * place when complete.
 */
#ifndef WB_EMIT_H
#define WB_EMIT_H

#include <signal.h>

#include "stage/manifest.h"
#include "trust/sign.h"
#include "lib/err.h"
#include "lib/strlist.h"
#include "lib/tmpl.h"
#include "recipe/plan.h"

struct emit_opts {
	const char *data_dir;             /* holds packer/ (the templates) */
	const char *out_dir;              /* OUT/<recipe> */
	const struct wb_strlist *builders;/* requested builders, all supported */
	const struct sign_opts *sign;     /* --sign-scripts: sign every script and
					     run them with execution_policy
					     "allsigned"; NULL: unsigned, "bypass" */
	const volatile sig_atomic_t *interrupted; /* set by the caller's SIGINT/
					     SIGTERM handler, or NULL: checked
					     between steps and while archiving;
					     then WB_EINTR and no temp dir left */
};


/* Errors: WB_EUSAGE (template or plan problem), WB_ESTAGE (staged output
 * inconsistent), WB_EVERIFY (a staged file no longer matches the manifest),
 * WB_EIO. */
/* Set VARS' trusted "execute_command" to the powershell provisioner's
 * command line with ENV ("NAME=value ...", values [A-Za-z0-9._-]+ or
 * ${source.type}) set in it (issue 40, --sign-scripts: packer.c). */
void emit_execute_command(struct tmpl_vars *vars, const char *env);

int emit_packer(const struct plan *plan, const struct staged_manifest *m,
		const struct emit_opts *o, struct wb_err *e);

#endif
