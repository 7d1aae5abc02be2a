/*
 * The Windows update step (docs/updates.md): the values of
 * scripts/09-updates.ps1 and its provisioners in the build block, from the
 * plan's windows.updates (recipe/plan.h, struct plan_update). Nothing here
 * when the plan lists no update.
 */
#ifndef WB_EMIT_UPDATES_H
#define WB_EMIT_UPDATES_H

#include "lib/buf.h"
#include "lib/err.h"
#include "lib/tmpl.h"
#include "recipe/plan.h"

/* The script's name under scripts/ (without .ps1) */
#define EMIT_UPDATES_SCRIPT "09-updates"

/* Set 09-updates.ps1's variables in V: updates (install order: kb, file,
 * must_apply) and expect_build ('' when none). */
void emit_updates_vars(const struct plan *p, struct tmpl_vars *v);

/*
 * Append to HCL, for each update in install order, a powershell
 * provisioner running 09-updates.ps1 for it (WINBUILD_UPDATE=N) and a
 * windows-restart after it, then one running its check of the build
 * (WINBUILD_UPDATE=check); DATA_DIR holds packer/. V holds the build
 * block's variables (execution_policy); update_* are set in it.
 */
int emit_updates_hcl(const struct plan *p, const char *data_dir, struct tmpl_vars *v,
		     struct buf *hcl, struct wb_err *e);

#endif
