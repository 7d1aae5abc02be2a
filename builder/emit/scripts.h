/*
 * The values the PowerShell step templates (packer/scripts/<NN>-<name>.ps1.in) are
 * rendered with, computed from the plan and the staged manifest. Values are
 * data (strings, lists, records: lib/tmpl.h); each template placeholder
 * names its sink, e.g. `$X = {{ps:x}}` or `$Args = {{ps_native:x}}`, and
 * the renderer writes the PowerShell literal or refuses the value. Files a
 * step configures (containerd.exe, config.toml, nssm.exe, and every file a
 * declared service runs) are the ones their own component staged (the
 * manifest's component field), never the first file of that name in the
 * tree. `services` holds one record per declared service (plan order):
 * the sc.exe binPath and nssm's parameters 05-services.ps1 registers.
 */
#ifndef WB_EMIT_SCRIPTS_H
#define WB_EMIT_SCRIPTS_H

#include "stage/manifest.h"
#include "lib/err.h"
#include "lib/tmpl.h"
#include "recipe/plan.h"

/* Where the file provisioner puts firstboot-winrm.ps1 in the VM (its task
 * runs it at the node's first boot, issue 40). */
#define FIRSTBOOT_WINRM_IN_VM "C:\\ProgramData\\winbuild\\firstboot-winrm.ps1"

/* The numbered steps, in order: file stem ("01-windows-features"), then
 * firstboot-winrm, which no provisioner runs. */
extern const char *const emit_script_names[];
extern const unsigned emit_nscripts;

/* Whether step NAME is emitted for P (06-images only when P has images:). */
int emit_script_wanted(const struct plan *p, const char *name);

/* Fill VARS for the scripts. Errors are WB_EUSAGE (e.g. nssm chosen but
 * not staged) or WB_ESTAGE (a component stages two files of a name a step
 * needs, or not the file one of its services runs). */
int emit_script_vars(const struct plan *p, const struct staged_manifest *m,
		     const char *cd_label, const char *archive_path,
		     struct tmpl_vars *vars, struct wb_err *e);

#endif
