/* Packer HCL2 template, var file, scripts and payload (see emit/emit.h).
 *
 * @where Packer HCL2 template, var file, plugin file, README -- builder table
 *   with firmware, Windows-version defaults
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "emit/emit.h"
#include "emit/payload.h"
#include "emit/scripts.h"
#include "emit/updates.h"
#include "lib/fs.h"
#include "lib/platform.h"
#include "lib/tmpl.h"
#include "stage/render.h"
#include "trust/digest.h"

#define CD_LABEL "WINBUILD"
#define ARCHIVE_IN_VM "C:\\Windows\\Temp\\winbuild-payload.zip"

/* The builders, their firmware, transfer, sysprep path, plugin, secrets and
 * base images are the platform table's (lib/platform.c). CD: `cd_files`
 * works with Packer 1.6.6 (checked by `packer validate` in
 * tests/cli/emit.bats); the others get the zip through the `file`
 * provisioner or pull it. The CD builders install Windows from the ISO with
 * a generated answer file for their firmware. */
#define NB_MAX 16

/*
 * The powershell provisioner's execute_command. Packer 1.6.6's default
 * (provisioner/powershell/provisioner.go, defaultExecuteCommand) is
 *   powershell -executionpolicy P "& { ...ProgressPreference...; . {{.Vars}}; &'{{.Path}}'; exit $LastExitCode }"
 * where {{.Vars}} is a file Packer writes and uploads (uploadEnvVars) with
 * PACKER_BUILDER_TYPE and environment_vars. Under --sign-scripts
 * (execution_policy = "allsigned") that file is unsigned, so dot-sourcing
 * it fails and every value is unset: 03, 08 and 09 threw. Here the values
 * are in the command itself (a -Command string, which no execution policy
 * judges): constants winbuild chose at emit time, and the builder type as
 * HCL's ${source.type} (in the provisioner's context since Packer 1.6.6:
 * hcl2template/types.packer_config.go, sourcesAccessor), which is what
 * Packer passes as PACKER_BUILDER_TYPE. The same command with either
 * policy, so the engine tier runs it in every build.
 * @where the powershell provisioners' `execute_command` (values in the
 *   command, not Packer's env-vars file) -- `tests/cli/wintier_signed.bats`
 */
void emit_execute_command(struct tmpl_vars *v, const char *env)
{
	struct buf b = BUF_INIT;
	const char *p = env ? env : "";

	buf_adds(&b, "\"powershell -executionpolicy {{.ExecutionPolicy}} \\\"& { "
		 "if (Test-Path variable:global:ProgressPreference){set-variable -name "
		 "variable:global:ProgressPreference -value 'SilentlyContinue'}; ");
	while (*p) {
		size_t n = strcspn(p, " "), k = strcspn(p, "=");

		if (k < n)
			buf_addf(&b, "$env:%.*s='%.*s'; ", (int)k, p, (int)(n - k - 1), p + k + 1);
		p += n;
		p += strspn(p, " ");
	}
	buf_adds(&b, "&'{{.Path}}'; exit $LastExitCode }\\\"\"");
	tmpl_set_trusted(v, "execute_command", b.ptr);
	buf_release(&b);
}

/* Render DATA_DIR/packer/REL with VARS (stage/render.h syntax), appending
 * to OUT. */
static int render(const char *data_dir, const char *rel,
		  const struct tmpl_vars *vars, struct buf *out, struct wb_err *e)
{
	char *path = xasprintf("%s/packer/%s", data_dir, rel);
	int ret = render_file(path, vars, out, e);

	free(path);
	return ret;
}

#define MODE_PUBLIC 0644
/* A file holding the one-off Administrator password: the user's alone (in
 * a 0700 directory for the answer files), created so. */
#define MODE_SECRET 0600

/* B into DIR/REL, created with MODE.
 * @where where a file is written atomically -- secrets (the ISO answer files)
 *   `MODE_SECRET`
 */
static int write_buf(const char *dir, const char *rel, const struct buf *b, mode_t mode,
		     struct wb_err *e)
{
	char *path = fs_join(dir, rel);
	int ret = fs_write_atomic(path, b->ptr, b->len, mode, e);

	free(path);
	return ret;
}

/* HCL list of strings: ["a", "b"] */
static void hcl_list(struct buf *b, const char *const *v, size_t n)
{
	buf_addc(b, '[');
	for (size_t i = 0; i < n; i++) {
		if (i)
			buf_adds(b, ", ");
		buf_adds(b, v[i]);
	}
	buf_addc(b, ']');
}

static int selected(const struct emit_opts *o, const char *name)
{
	return wb_strlist_has(o->builders, name);
}

/*
 * A random password for the ISO builders' unattended install, made for one
 * emit: 24 letters and digits from OpenSSL's RNG plus one character of each
 * class Windows' complexity rule counts. Only [A-Za-z0-9-] so no sink needs
 * to escape it.
 * @where the ISO builders' answer files and their one-off Administrator
 *   password
 */
static int make_password(char *out, size_t len, struct wb_err *e)
{
	static const char alnum[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char r[24];
	size_t n = 0;

	if (len < sizeof(r) + 5 || RAND_bytes(r, (int)sizeof(r)) != 1) {
		wb_error(e, WB_EIO, "cannot make a random password for the answer file");
		return -1;
	}
	for (size_t i = 0; i < sizeof(r); i++)
		out[n++] = alnum[r[i] % 62];   /* 256 % 62: a slight bias, 143 bits left */
	memcpy(out + n, "Aa1-", 5);
	OPENSSL_cleanse(r, sizeof(r));
	return 0;
}

/* answer/<bios|uefi>/Autounattend.xml for the selected CD builders and
 * iso-admin.auto.pkrvars.hcl with the same one-off password.
 * @where the ISO builders' answer files and their one-off Administrator
 *   password -- template `packer/answer/Autounattend.xml.in`
 */
static int emit_answer(const struct plan *p, const struct emit_opts *o,
		       const char *tmp, struct wb_err *e)
{
	const struct platform_windows *w = platform_windows_find(p->windows_version);
	struct tmpl_vars v = TMPL_VARS_INIT;
	struct buf out = BUF_INIT;
	char password[64], *image = NULL, *dir = NULL;
	int need[PLATFORM_FW_UEFI + 1] = { 0 }, any = 0, ret = -1;

	for (size_t i = 0; i < platform_nbuilders; i++)
		if (platform_builders[i].fw != PLATFORM_FW_NONE &&
		    selected(o, platform_builders[i].name))
			need[platform_builders[i].fw] = any = 1;
	if (!any)
		return 0;
	if (!w) {
		wb_error(e, WB_EUSAGE, "no Windows Server '%s' in the platform table",
			 p->windows_version);
		return -1;
	}
	if (make_password(password, sizeof(password), e))
		return -1;
	image = xasprintf("%s SERVER%s%s", w->image_prefix,
			  strcmp(p->windows_edition, "standard") ? "DATACENTER" : "STANDARD",
			  p->windows_desktop ? "" : "CORE");
	tmpl_set(&v, "name", p->name);
	tmpl_set(&v, "winbuild_version", WB_VERSION);
	tmpl_set(&v, "image_name", image);
	tmpl_set(&v, "locale", p->windows_locale);
	tmpl_set(&v, "admin_password", password);
	/* D14: retail and volume media stop at the product key page without
	 * a key. image-builder puts the KMS client key (GVLK) in windowsPE and
	 * specialize (packer/ova/windows/windows-2022/autounattend.xml) and
	 * says to remove it for evaluation media: `product_key: none`. With
	 * `env`, Setup installs with the GVLK and the build replaces it with
	 * the user's own (PKR_VAR_windows_product_key), which no file holds. */
	tmpl_set(&v, "product_key", strcmp(p->windows_product_key, "none") ?
		 platform_gvlk(w, p->windows_edition) : "");
	for (int fw = PLATFORM_FW_BIOS; fw <= PLATFORM_FW_UEFI; fw++) {
		const char *fwname = fw == PLATFORM_FW_UEFI ? "uefi" : "bios";

		if (!need[fw])
			continue;
		tmpl_set(&v, "firmware", fw == PLATFORM_FW_UEFI ? "UEFI" : "BIOS");
		tmpl_set(&v, "uefi", fw == PLATFORM_FW_UEFI ? "1" : "");
		/* BIOS: system, Windows; UEFI: EFI, MSR, Windows */
		tmpl_set(&v, "install_partition", fw == PLATFORM_FW_UEFI ? "3" : "2");
		free(dir);
		dir = xasprintf("%s/answer/%s", tmp, fwname);
		buf_reset(&out);
		if (fs_mkdir_p(dir, 0700, e) ||
		    render(o->data_dir, "answer/Autounattend.xml.in", &v, &out, e) ||
		    write_buf(dir, "Autounattend.xml", &out, MODE_SECRET, e))
			goto done;
	}
	buf_reset(&out);
	if (render(o->data_dir, "hcl/iso-admin.pkrvars.hcl.in", &v, &out, e) ||
	    write_buf(tmp, "iso-admin.auto.pkrvars.hcl", &out, MODE_SECRET, e))
		goto done;
	ret = 0;
done:
	OPENSSL_cleanse(password, sizeof(password));
	tmpl_vars_release(&v);
	buf_release(&out);
	free(image);
	free(dir);
	return ret;
}

/* ["a.node", "b.node"]: the selected builders of TRANSFER (0: any) or of
 * sysprep path SYSPREP (NULL: any), as an HCL list into B. Returns how many. */
static size_t only_list(const struct emit_opts *o, enum platform_transfer transfer,
			const char *sysprep, struct buf *b)
{
	size_t n = 0;

	buf_reset(b);
	buf_addc(b, '[');
	for (size_t i = 0; i < platform_nbuilders; i++) {
		const struct platform_builder *pb = &platform_builders[i];

		if (!selected(o, pb->name) || (transfer && pb->transfer != transfer) ||
		    (sysprep && strcmp(pb->sysprep, sysprep)))
			continue;
		buf_addf(b, "%s\"%s.node\"", n++ ? ", " : "", pb->name);
	}
	buf_addc(b, ']');
	return n;
}

/* 1 if the staged manifest M holds a file below tree directory DIR. */
static int manifest_has_dir(const struct staged_manifest *m, const char *dir)
{
	size_t len = strlen(dir);

	for (size_t i = 0; len && i < m->nfiles; i++)
		if (!strncmp(m->files[i].tree_path, dir, len) &&
		    m->files[i].tree_path[len] == '/')
			return 1;
	return 0;
}

/*
 * B's `cd_files` into OUT: its firmware's answer file, the tree, the
 * manifest (and the SBOM), then each folder of B's `winpe` list that the
 * image holds files in (platform_winpe_dir()): each CD builder's list is
 * its own, so no builder's drivers or tools reach another's Setup.
 *
 * Every entry outside packer/ is written abspath("${path.root}/../X"),
 * never as the bare path. Packer's CD step copies a directory by walking
 * it and dropping the entry's parent, taken as given, from each path
 * filepath.Walk hands it, but Walk hands children cleaned
 * (packer-plugin-sdk multistep/commonsteps/step_create_cdrom.go, AddFile;
 * that layout came with 561e43cd, 2020-09-30, and is unchanged at v0.6.10,
 * 24d43aa0; Debian's Packer 1.6.6 does the same, tests/cli/packer_cd.bats).
 * With a ".." in the entry nothing matches and each file is joined to the
 * staging folder by its whole path: with path.root "." the tree lands in
 * $TMPDIR/tree on the build host and the CD holds only the plain files.
 * abspath() (HCL2, in 1.6.6) hands AddFile a clean absolute path, so the
 * folder lands at the CD root under its own name: tree\, $WinPEDriver$,
 * VMwareTools, where 02-payload.ps1 and Windows Setup look. Sets
 * "cd_<folder>" in V to "1" or "" for the source's device choices (the
 * name lowercased, [a-z0-9_] kept: "cd_winpedriver", "cd_vmwaretools").
 * @where which drivers and tools each ISO builder's CD carries for Windows
 *   Setup (`$WinPEDriver$`, `VMwareTools`) -- a builder's own folders only;
 *   the CD Packer 1.6.6 makes from it: `tests/cli/packer_cd.bats`;
 *   docs/packer.md
 */
static void cd_files(const struct platform_builder *b, const struct staged_manifest *m,
		     int has_sbom, struct tmpl_vars *v, struct buf *out)
{
	char dir[256], sub[512];
	int have_dir = !platform_winpe_dir(b, dir, sizeof(dir));

	buf_reset(out);
	buf_addf(out, "[\"${path.root}/answer/%s/Autounattend.xml\", "
		 "abspath(\"${path.root}/../tree\"), abspath(\"${path.root}/../manifest.json\")",
		 b->fw == PLATFORM_FW_UEFI ? "uefi" : "bios");
	if (has_sbom)
		buf_adds(out, ", abspath(\"${path.root}/../sbom.cdx.json\")");
	for (size_t k = 0; k < ARRAY_SIZE(b->winpe) && b->winpe[k]; k++) {
		char var[64] = "cd_";
		size_t n = 3;
		int here;

		snprintf(sub, sizeof(sub), "%s/%s", dir, b->winpe[k]);
		here = have_dir && manifest_has_dir(m, sub);
		/* the table's names are [A-Za-z0-9._$-]: nothing an HCL string
		 * would read as an interpolation ("${"), a quote or an escape */
		if (here)
			buf_addf(out, ", abspath(\"${path.root}/../tree/%s\")", sub);
		for (const char *c = b->winpe[k]; *c && n < sizeof(var) - 1; c++)
			if (isalnum((unsigned char)*c) || *c == '_')
				var[n++] = (char)tolower((unsigned char)*c);
		var[n] = '\0';
		tmpl_set(v, var, here ? "1" : "");
	}
	buf_addc(out, ']');
}

/*
 * @where sysprep per builder (the sysprep path of the platform table) --
 *   `packer/scripts/08-sysprep.ps1.in`; a provisioner per path,
 *   `packer/hcl/build-sysprep-*.pkr.hcl.in`
 * @where WinRM reset on the node's first boot, after Packer's last WinRM call
 *   -- `packer/scripts/firstboot-winrm.ps1.in`, copied by the `file`
 *   provisioner `packer/hcl/build-firstboot.pkr.hcl.in`
 *   (`tests/cli/winrm_session.bats`)
 * @where build order: 02 alone, the updates and their restarts, then 03-07 --
 *   `packer/hcl/build-payload.pkr.hcl.in`,
 *   `packer/hcl/build-steps.pkr.hcl.in` (`tests/cli/updates.bats`)
 */
static int emit_hcl(const struct plan *p, const struct staged_manifest *m,
		    const struct emit_opts *o, const char *tmp, int has_sbom,
		    struct wb_err *e)
{
	struct tmpl_vars v = TMPL_VARS_INIT;
	struct buf hcl = BUF_INIT, vars = BUF_INIT, plug = BUF_INIT, init = BUF_INIT,
		readme = BUF_INIT, tmp_b = BUF_INIT;
	const char *srcs[NB_MAX];
	char *names[NB_MAX];
	size_t ns = 0, ncd, nar, nfb;
	char *rel = NULL, *env = NULL;
	int ret = -1;

	memset(names, 0, sizeof(names));
	tmpl_set(&v, "name", p->name);
	tmpl_set(&v, "windows_version", p->windows_version);
	tmpl_set(&v, "windows_edition", p->windows_edition);
	tmpl_set(&v, "cd_label", CD_LABEL);
	tmpl_set(&v, "archive_in_vm", ARCHIVE_IN_VM);
	tmpl_set(&v, "image_name", p->name);
	tmpl_set(&v, "execution_policy", o->sign ? "allsigned" : "bypass");
	tmpl_set(&v, "winbuild_version", WB_VERSION);
	tmpl_set(&v, "product_key_env", strcmp(p->windows_product_key, "env") ? "" : "1");
	tmpl_set(&v, "images_step", p->nimages ? "1" : "");   /* 06-images.ps1 */
	if (p->windows_iso_sha256) {
		char *ck = xasprintf("sha256:%s", p->windows_iso_sha256);
		tmpl_set(&v, "iso_checksum", ck);
		free(ck);
	} else {
		/* only under policy.unverified_iso: allow (recipe/builders.c) */
		tmpl_set(&v, "iso_checksum", "none");
	}

	for (size_t i = 0; i < platform_nbuilders && ns < NB_MAX; i++) {
		if (!selected(o, platform_builders[i].name))
			continue;
		names[ns] = xasprintf("\"source.%s.node\"", platform_builders[i].name);
		srcs[ns] = names[ns];
		ns++;
	}
	if (!ns) {
		wb_error(e, WB_EUSAGE, "no Packer builder selected");
		goto out;
	}
	buf_reset(&tmp_b);
	hcl_list(&tmp_b, srcs, ns);
	tmpl_set_trusted(&v, "sources", tmp_b.ptr);
	ncd = only_list(o, PLATFORM_CD, NULL, &tmp_b);
	tmpl_set_trusted(&v, "cd_builders", tmp_b.ptr);
	nar = only_list(o, PLATFORM_ARCHIVE, NULL, &tmp_b);
	tmpl_set_trusted(&v, "archive_builders", tmp_b.ptr);

	/*
	 * The plugins of the selected builders, exactly as the platform
	 * table pins them: for `packer init` in init/ always, and in the
	 * template itself for a Packer that reads `packer { required_plugins }`
	 * (packer.version >= 1.7.0). Why in the template: Packer loads, for
	 * a template without the block, the newest plugin installed
	 * (hashicorp/packer v1.16.0 856572ec, packer/plugin.go, Discover:
	 * the installations sorted by version, the last one kept per name),
	 * so init/'s pins held for `packer init` but not for `packer build`;
	 * with the block it loads the newest installation that meets each
	 * constraint first and keeps it (hcl2template/plugin.go,
	 * DetectPluginBinaries; DiscoverMultiPlugin skips a component already
	 * registered), and an exact version meets only itself. Packer 1.6.6
	 * rejects the block (v1.6.6 hcl2template/parser.go, packerBlockSchema:
	 * only required_version), hence the choice (docs/packer.md).
	 */
	for (size_t i = 0; i < platform_nbuilders; i++) {
		const struct platform_builder *b = &platform_builders[i];

		if (!selected(o, b->name))
			continue;
		tmpl_set_trusted(&v, "plugin", b->plugin);
		tmpl_set(&v, "plugin_source", b->plugin_source);
		tmpl_set(&v, "plugin_version", b->plugin_version);
		if (render(o->data_dir, "hcl/plugin.hcl.in", &v, &plug, e))
			goto out;
	}
	tmpl_set(&v, "packer_version", p->packer_version);
	tmpl_set(&v, "packer_plugins", p->packer_plugins ? "1" : "");
	/* the entries without their last newline: the template's tag line
	 * ends the last one */
	buf_reset(&tmp_b);
	buf_add(&tmp_b, plug.ptr, plug.len ? plug.len - 1 : 0);
	tmpl_set_trusted(&v, "required_plugins", tmp_b.ptr);

	/* template: variables, sources, build; init/: the plugins */
	if (render(o->data_dir, "hcl/header.pkr.hcl.in", &v, &hcl, e) ||
	    (ncd && render(o->data_dir, "hcl/iso-common.pkr.hcl.in", &v, &hcl, e)) ||
	    render(o->data_dir, "hcl/header.pkrvars.hcl.in", &v, &vars, e) ||
	    render(o->data_dir, "hcl/required_plugins-begin.hcl.in", &v, &init, e))
		goto out;
	buf_add(&init, plug.ptr, plug.len);
	for (size_t i = 0; i < platform_nbuilders; i++) {
		const struct platform_builder *b = &platform_builders[i];
		const struct platform_base *row = platform_base_of(b, p->windows_version,
								   p->windows_edition);
		const char *base = !row ? NULL : p->windows_desktop ? row->desktop : row->core;
		const char *offer = row ? row->offer : NULL;

		if (!selected(o, b->name))
			continue;
		if (b->base_var && !base) {
			wb_error(e, WB_EUSAGE, "no %s for Windows Server '%s' %s in the "
				 "platform table (builder '%s')%s", b->base_var, p->windows_version,
				 p->windows_desktop ? "with the Desktop Experience" : "Server Core",
				 b->name, p->windows_desktop ? "" : ": its platform publishes no "
				 "Server Core image; set windows.desktop_experience: true or "
				 "choose another builder");
			goto out;
		}
		/* D15: the base image is the recipe's installation type */
		tmpl_set(&v, "base_image", base ? base : "");
		tmpl_set(&v, "base_offer", offer ? offer : "");
		if (b->transfer == PLATFORM_CD) {
			cd_files(b, m, has_sbom, &v, &tmp_b);
			tmpl_set_trusted(&v, "cd_files", tmp_b.ptr);
		}
		free(rel);
		rel = xasprintf("hcl/%s.pkr.hcl.in", b->name);
		buf_addc(&hcl, '\n');
		if (render(o->data_dir, rel, &v, &hcl, e))
			goto out;
		free(rel);
		rel = xasprintf("hcl/%s.pkrvars.hcl.in", b->name);
		buf_addc(&vars, '\n');
		if (render(o->data_dir, rel, &v, &vars, e))
			goto out;
		for (size_t k = 0; k < ARRAY_SIZE(b->files) && b->files[k]; k++) {
			const char *base_name = strrchr(b->files[k], '/');

			buf_reset(&tmp_b);
			free(rel);
			rel = xasprintf("%s.in", b->files[k]);
			if (render(o->data_dir, rel, &v, &tmp_b, e) ||
			    write_buf(tmp, base_name ? base_name + 1 : b->files[k], &tmp_b, MODE_PUBLIC, e))
				goto out;
		}
	}
	buf_addc(&hcl, '\n');
	emit_execute_command(&v, NULL);
	if (render(o->data_dir, "hcl/build-begin.pkr.hcl.in", &v, &hcl, e) ||
	    (nar && !p->payload_pull &&
	     render(o->data_dir, "hcl/build-upload.pkr.hcl.in", &v, &hcl, e)) ||
	    render(o->data_dir, "hcl/build-payload.pkr.hcl.in", &v, &hcl, e) ||
	    /* the updates and their restarts before any service is registered
	     * (hcl/build-payload.pkr.hcl.in says why) */
	    (p->nupdates && emit_updates_hcl(p, o->data_dir, &v, &hcl, e)))
		goto out;
	/* 03-cloudbase-init.ps1 picks the builder's provider by it */
	emit_execute_command(&v, "PACKER_BUILDER_TYPE=${source.type}");
	if (render(o->data_dir, "hcl/build-steps.pkr.hcl.in", &v, &hcl, e) ||
	    (ncd && !strcmp(p->windows_product_key, "env") &&
	     render(o->data_dir, "hcl/build-product-key.pkr.hcl.in", &v, &hcl, e)))
		goto out;
	/* the first-boot WinRM script, for every builder whose WinRM winbuild
	 * opened (not cloud_winrm, hcl/build-firstboot.pkr.hcl.in) */
	buf_reset(&tmp_b);
	buf_addc(&tmp_b, '[');
	nfb = 0;
	for (size_t i = 0; i < platform_nbuilders; i++)
		if (selected(o, platform_builders[i].name) &&
		    !platform_builders[i].cloud_winrm)
			buf_addf(&tmp_b, "%s\"%s.node\"", nfb++ ? ", " : "",
				 platform_builders[i].name);
	buf_addc(&tmp_b, ']');
	tmpl_set_trusted(&v, "firstboot_builders", tmp_b.ptr);
	tmpl_set(&v, "firstboot_in_vm", FIRSTBOOT_WINRM_IN_VM);
	if (nfb && render(o->data_dir, "hcl/build-firstboot.pkr.hcl.in", &v, &hcl, e))
		goto out;
	/* one sysprep provisioner per sysprep path, limited to its builders */
	for (size_t i = 0; i < platform_nbuilders; i++) {
		const char *path = platform_builders[i].sysprep;
		int first = selected(o, platform_builders[i].name);

		for (size_t k = 0; first && k < i; k++)
			first = strcmp(platform_builders[k].sysprep, path) ||
				!selected(o, platform_builders[k].name);
		if (!first)
			continue;
		only_list(o, 0, path, &tmp_b);
		tmpl_set_trusted(&v, "sysprep_builders", tmp_b.ptr);
		free(rel);
		rel = xasprintf("hcl/build-sysprep-%s.pkr.hcl.in", path);
		/* 08-sysprep.ps1's mode and platform: the ISO builders' path
		 * ("shutdown") only puts the script in place */
		free(env);
		env = !strcmp(path, "shutdown") ?
		      xstrdup("WINBUILD_SYSPREP_MODE=prepare WINBUILD_PLATFORM=iso") :
		      xasprintf("WINBUILD_SYSPREP_MODE=quit WINBUILD_PLATFORM=%s", path);
		emit_execute_command(&v, env);
		if (render(o->data_dir, rel, &v, &hcl, e))
			goto out;
	}
	if (render(o->data_dir, "hcl/build-end.pkr.hcl.in", &v, &hcl, e) ||
	    render(o->data_dir, "hcl/required_plugins-end.hcl.in", &v, &init, e) ||
	    render(o->data_dir, "README.md.in", &v, &readme, e))
		goto out;

	free(rel);
	rel = xasprintf("%s.pkr.hcl", p->name);
	if (write_buf(tmp, rel, &hcl, MODE_PUBLIC, e))
		goto out;
	free(rel);
	rel = xasprintf("%s.auto.pkrvars.hcl", p->name);
	if (write_buf(tmp, rel, &vars, MODE_PUBLIC, e) ||
	    write_buf(tmp, "init/required_plugins.pkr.hcl", &init, MODE_PUBLIC, e) ||
	    write_buf(tmp, "README.md", &readme, MODE_PUBLIC, e))
		goto out;
	ret = 0;
out:
	for (size_t i = 0; i < ns; i++)
		free(names[i]);
	free(env);
	free(rel);
	tmpl_vars_release(&v);
	buf_release(&hcl);
	buf_release(&vars);
	buf_release(&plug);
	buf_release(&init);
	buf_release(&readme);
	buf_release(&tmp_b);
	return ret;
}

/* scripts/NAME.ps1 rendered with V (and the shared prologue), signed when
 * asked; COMMON and OUT are scratch buffers. */
static int emit_script(const char *name, const struct emit_opts *o, const char *tmp,
		       struct tmpl_vars *v, struct buf *common, struct buf *out,
		       struct wb_err *e)
{
	char *rel = xasprintf("scripts/%s.ps1.in", name);
	char *dst = xasprintf("scripts/%s.ps1", name);
	int r;

	/* the shared prologue names the step it is rendered into */
	buf_reset(common);
	tmpl_set(v, "step", name);
	r = render(o->data_dir, "scripts/common.ps1.in", v, common, e);
	if (!r) {
		/* the prologue was itself rendered with typed placeholders */
		tmpl_set_trusted(v, "common", common->ptr);
		buf_reset(out);
		r = render(o->data_dir, rel, v, out, e);
	}
	if (!r)
		r = write_buf(tmp, dst, out, MODE_PUBLIC, e);
	if (!r && o->sign) {
		char *path = fs_join(tmp, dst);
		r = sign_script(o->sign, path, e);
		free(path);
	}
	free(rel);
	free(dst);
	return r;
}

/*
 * @where where an emitted script is signed (osslsigncode, no shell; `emit
 *   --sign-scripts`) -- then `execution_policy = "allsigned"`
 */
static int emit_scripts(const struct plan *p, const struct staged_manifest *m,
			const struct emit_opts *o, const char *tmp, struct wb_err *e)
{
	struct tmpl_vars v = TMPL_VARS_INIT;
	struct buf common = BUF_INIT, out = BUF_INIT;
	int ret = -1;

	struct digest_result d;
	char hex[65], *mpath = fs_join(o->out_dir, "manifest.json");

	/* step 02 trusts the manifest it finds (CD, zip, pulled) only when it
	 * has this digest: integrity never depends on the transport */
	ret = digest_file(mpath, 0, &d, e);
	free(mpath);
	if (ret)
		goto done;
	ret = -1;
	digest_hex(d.sha256, sizeof(d.sha256), hex);
	if (emit_script_vars(p, m, CD_LABEL, ARCHIVE_IN_VM, &v, e))
		goto done;
	tmpl_set(&v, "manifest_sha256", hex);
	/* the SBOM step 02 copies into the image is pinned the same way;
	 * '' when none was written (then nothing is copied) */
	mpath = fs_join(o->out_dir, "sbom.cdx.json");
	hex[0] = '\0';
	if (fs_exists(mpath) && digest_file(mpath, 0, &d, e)) {
		free(mpath);
		goto done;
	}
	if (fs_exists(mpath))
		digest_hex(d.sha256, sizeof(d.sha256), hex);
	free(mpath);
	tmpl_set(&v, "sbom_sha256", hex);
	tmpl_set(&v, "payload_url", p->payload_pull ? p->payload_url : "");
	tmpl_set(&v, "winbuild_version", WB_VERSION);
	/* the first-boot task runs its script under the build's policy */
	tmpl_set_trusted(&v, "task_policy", o->sign ? "AllSigned" : "Bypass");
	/* the update step only when the recipe lists updates (emit/updates.h) */
	if (p->nupdates)
		emit_updates_vars(p, &v);
	for (unsigned i = 0; i <= emit_nscripts; i++) {
		const char *name = i < emit_nscripts ? emit_script_names[i] :
				   p->nupdates ? EMIT_UPDATES_SCRIPT : NULL;

		if (name && emit_script_wanted(p, name) &&
		    emit_script(name, o, tmp, &v, &common, &out, e))
			goto done;
	}
	ret = 0;
done:
	tmpl_vars_release(&v);
	buf_release(&common);
	buf_release(&out);
	return ret;
}

/* "PREFIX<pid>" left by a run that no longer exists (killed: SIGKILL, a
 * crash, power loss) is removed; a live run's is its own business.
 * @where SIGINT/SIGTERM during a fetch or an emit (flag, cleanup, exit 130)
 *   -- what a killed emit left
 */
static void remove_stale(const char *dir, const char *prefix)
{
	struct wb_err ignore = WB_ERR_INIT;
	size_t len = strlen(prefix);
	struct dirent *d;
	DIR *dh = opendir(dir);

	while (dh && (d = readdir(dh))) {
		char *end, *path;
		long pid;

		if (strncmp(d->d_name, prefix, len))
			continue;
		errno = 0;
		pid = strtol(d->d_name + len, &end, 10);
		if (*end || end == d->d_name + len || pid <= 0 || errno ||
		    pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		path = fs_join(dir, d->d_name);
		(void)fs_remove_below(dir, path, &ignore);
		free(path);
	}
	if (dh)
		closedir(dh);
}

/*
 * @where SIGINT/SIGTERM during a fetch or an emit (flag, cleanup, exit 130)
 *   -- checked between steps of emit
 */
static int interrupted(const struct emit_opts *o, struct wb_err *e)
{
	if (!o->interrupted || !*o->interrupted)
		return 0;
	return wb_error(e, WB_EINTR, "interrupted: no Packer inputs written, temp files removed");
}

int emit_packer(const struct plan *p, const struct staged_manifest *m,
		const struct emit_opts *o, struct wb_err *e)
{
	char *final = fs_join(o->out_dir, "packer");
	char *tmp = xasprintf("%s/.packer.tmp.%ld", o->out_dir, (long)getpid());
	char *old = xasprintf("%s/.packer.old.%ld", o->out_dir, (long)getpid());
	char *tree = fs_join(o->out_dir, "tree");
	char *sbom = fs_join(o->out_dir, "sbom.cdx.json");
	char *sub = NULL;
	int archive = 0, ret = -1;

	if (strcmp(m->image, p->name)) {
		wb_error(e, WB_ESTAGE, "staged manifest is for '%s', not '%s': stage again",
			 m->image, p->name);
		goto out;
	}
	for (size_t i = 0; i < platform_nbuilders; i++)
		if (selected(o, platform_builders[i].name) &&
		    platform_builders[i].transfer == PLATFORM_ARCHIVE)
			archive = 1;
	remove_stale(o->out_dir, ".packer.tmp.");
	remove_stale(o->out_dir, ".packer.old.");
	if (fs_remove_below(o->out_dir, tmp, e) || fs_mkdir_p(tmp, 0755, e))
		goto out;
	sub = fs_join(tmp, "scripts");
	if (fs_mkdir_p(sub, 0755, e))
		goto out;
	free(sub);
	sub = fs_join(tmp, "init");
	if (fs_mkdir_p(sub, 0755, e))
		goto out;
	if (emit_hcl(p, m, o, tmp, fs_exists(sbom), e) || interrupted(o, e) ||
	    emit_scripts(p, m, o, tmp, e) || interrupted(o, e) ||
	    emit_answer(p, o, tmp, e) || interrupted(o, e))
		goto out;
	if (archive) {
		free(sub);
		sub = fs_join(tmp, "payload.zip");
		if (payload_write_zip(sub, tree, m, o->interrupted, e) || interrupted(o, e))
			goto out;
	}
	/* swap: the previous packer/ goes aside, the new one takes its place */
	if (fs_remove_below(o->out_dir, old, e))
		goto out;
	if (fs_exists(final) && rename(final, old)) {
		wb_error(e, WB_EIO, "cannot move '%s' aside: %s", final, strerror(errno));
		goto out;
	}
	if (rename(tmp, final)) {
		wb_error(e, WB_EIO, "cannot rename '%s' to '%s': %s", tmp, final, strerror(errno));
		if (fs_exists(old))
			(void)rename(old, final);
		goto out;
	}
	ret = fs_remove_below(o->out_dir, old, e);
out:
	if (ret) {
		struct wb_err ignore = WB_ERR_INIT;
		fs_remove_below(o->out_dir, tmp, &ignore);
	}
	free(final);
	free(tmp);
	free(old);
	free(tree);
	free(sbom);
	free(sub);
	return ret;
}
