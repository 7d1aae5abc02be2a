/*
 * The values the PowerShell step templates (packer/scripts/NN-name.ps1.in) are
 * rendered with, computed from the plan and the staged manifest. Every
 * value is already PowerShell source: quoted strings ('...') or array
 * literals (@(...)), so templates use them as `$X = {{x}}`.
 */
#ifndef WB_EMIT_SCRIPTS_H
#define WB_EMIT_SCRIPTS_H

#include "emit/manifest.h"
#include "lib/err.h"
#include "lib/tmpl.h"
#include "recipe/plan.h"

/* The numbered steps, in order: file stem ("01-windows-features"). */
extern const char *const emit_script_names[];
extern const unsigned emit_nscripts;

/* Fill VARS for the scripts. Errors are WB_EUSAGE (e.g. nssm chosen but
 * not staged). */
int emit_script_vars(const struct plan *p, const struct staged_manifest *m,
		     const char *cd_label, const char *archive_path,
		     struct tmpl_vars *vars, struct wb_err *e);

#endif
