/*
 * The Windows update step (emit/updates.h, docs/updates.md).
 *
 * One powershell provisioner per update, each followed by a
 * windows-restart, whatever DISM said: Packer cannot make a provisioner
 * depend on an earlier script's exit code, and a script that restarts
 * Windows itself cuts the WinRM session Packer runs it over (hashicorp/
 * packer provisioner/windows-restart exists for that). A restart after an
 * update that needed none costs a minute; a missing one leaves the next
 * update to fail on a pending restart (DISM 0x800f082f) and the build
 * number unchecked. image-builder instead runs Windows Update in the VM
 * (ansible/windows/roles/updates: win_updates with reboot: true), which
 * installs whatever the service offers that day.
 */
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "emit/emit.h"
#include "emit/updates.h"
#include "stage/render.h"

/*
 * @where Windows updates (`windows.updates`; docs/updates.md) -- the DISM
 *   step (`packer/scripts/09-updates.ps1.in`)
 */
void emit_updates_vars(const struct plan *p, struct tmpl_vars *v)
{
	json_t *arr = json_array();
	const char *expect = "";

	for (size_t i = 0; i < p->nupdates; i++) {
		const struct plan_update *u = &p->updates[i];

		json_array_append_new(arr, json_pack("{s:s, s:s, s:i}", "kb", u->kb,
						     "file", u->dest_win,
						     "must_apply", u->must_apply));
		if (u->expect_build)
			expect = u->expect_build;
	}
	tmpl_set_json(v, "updates", arr);
	tmpl_set(v, "expect_build", expect);
}

/*
 * @where Windows updates (`windows.updates`; docs/updates.md) -- a
 *   provisioner per update (`packer/hcl/build-update.pkr.hcl.in`)
 */
int emit_updates_hcl(const struct plan *p, const char *data_dir, struct tmpl_vars *v,
		     struct buf *hcl, struct wb_err *e)
{
	char *path = xasprintf("%s/packer/hcl/build-update.pkr.hcl.in", data_dir);
	char env[64];
	int ret = 0;

	for (size_t i = 0; !ret && i <= p->nupdates; i++) {
		int check = i == p->nupdates;

		snprintf(env, sizeof(env), "WINBUILD_UPDATE=%s", check ? "check" : "");
		if (!check)
			snprintf(env, sizeof(env), "WINBUILD_UPDATE=%zu", i + 1);
		emit_execute_command(v, env);
		tmpl_set(v, "update_kb", check ? "" : p->updates[i].kb);
		tmpl_set_int(v, "update_restart", !check);
		ret = render_file(path, v, hcl, e);
	}
	free(path);
	return ret;
}
