/*
 * @where values the PowerShell steps are rendered with (PATH, Defender,
 *   firewall, service manager, MSI properties)
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "emit/emit.h"
#include "emit/scripts.h"
#include "lib/buf.h"
#include "lib/json.h"
#include "lib/winpath.h"

const char *const emit_script_names[] = {
	"01-windows-features",
	"02-payload",
	"03-cloudbase-init",
	"04-containerd",
	"05-services",
	"06-cni",
	"06-images",
	"07-provenance",
	"08-sysprep",
	/* uploaded by a file provisioner, run by a task at the node's first
	 * boot (08-sysprep.ps1 says why) */
	"firstboot-winrm",
};
const unsigned emit_nscripts = ARRAY_SIZE(emit_script_names);

/*
 * @where container images imported into containerd in the VM -- emitted only
 *   when the plan has images
 */
int emit_script_wanted(const struct plan *p, const char *name)
{
	/* issue 33: no import step, and no script, without images */
	return strcmp(name, "06-images") || p->nimages > 0;
}

#define WINBUILD_DIR "C:\\ProgramData\\winbuild"
#define CBI_OVERLAY_DIR WINBUILD_DIR "\\cloudbase-init\\"

/* Push S with where it came from, once (the first origin is kept). */
static void push_from(struct wb_strlist *l, struct wb_strlist *from, const char *s,
		      const char *where)
{
	if (wb_strlist_has(l, s))
		return;
	wb_strlist_push(l, s);
	wb_strlist_push(from, where);
}

/* "artifacts.NAME.WHAT at file:line:col" for messages, or NULL. */
static char *artifact_origin(const struct plan_artifact *a, const char *what)
{
	char where[256];

	if (!a)
		return NULL;
	wb_origin_format(&a->dest_origin, where, sizeof(where));
	return xasprintf("artifacts.%s.%s at %s", a->name, what, where);
}

static const char *win_basename(const char *p)
{
	const char *s = strrchr(p, '\\');

	return s ? s + 1 : p;
}

/* The Windows directory of a Windows file path, newly allocated. */
static char *win_dirname(const char *p)
{
	const char *s = strrchr(p, '\\');

	return s ? xstrndup(p, (size_t)(s - p)) : xstrdup(p);
}

/*
 * The file named BASENAME that component COMP staged, chosen by identity
 * (the manifest's component field), never by name alone: another
 * component's archive may ship a file of the same name. A generated file
 * wins over one unpacked from an archive (winbuild wrote it for this
 * component); two candidates of the same kind are ambiguous. *OUT is NULL
 * when the component staged none.
 */
static int find_file(const struct staged_manifest *m, const char *comp,
		     const char *basename, const struct staged_file **out,
		     struct wb_err *e)
{
	const struct staged_file *best = NULL;

	for (size_t i = 0; i < m->nfiles; i++) {
		const struct staged_file *f = &m->files[i];

		if (!f->component || strcmp(f->component, comp) ||
		    strcasecmp(win_basename(f->path), basename))
			continue;
		if (best && best->generated == f->generated)
			return wb_error(e, WB_ESTAGE, "component '%s' stages two files "
					"named %s ('%s' and '%s'); winbuild does not guess "
					"which one configures it", comp, basename,
					best->path, f->path);
		if (!best || f->generated)
			best = f;
	}
	*out = best;
	return 0;
}

static int has_suffix_ci(const char *s, const char *suf)
{
	size_t n = strlen(s), k = strlen(suf);

	return n >= k && !strcasecmp(s + n - k, suf);
}

static char *provenance_json(const struct plan *p, const struct staged_manifest *m)
{
	json_t *root = json_object(), *arts = json_array();
	char *s;

	json_object_set_new(root, "schema", json_integer(1));
	json_object_set_new(root, "image", json_string(p->name));
	json_object_set_new(root, "windows_version", json_string(p->windows_version));
	json_object_set_new(root, "windows_edition", json_string(p->windows_edition));
	json_object_set_new(root, "built_by", json_string("winbuild " WB_VERSION));
	json_object_set_new(root, "source_date_epoch", json_integer(m->source_date_epoch));
	json_object_set_new(root, "cloudbase_init_provider", json_string(p->cloudbase_provider));
	json_object_set_new(root, "service_manager", json_string(p->service_manager));
	for (size_t i = 0; i < m->nartifacts; i++) {
		const struct staged_artifact *a = &m->artifacts[i];
		json_t *o = json_object();

		json_object_set_new(o, "name", json_string(a->name));
		json_object_set_new(o, "component", json_string(a->component ? a->component : ""));
		json_object_set_new(o, "version", json_string(a->version ? a->version : ""));
		json_object_set_new(o, "url", json_url(a->url ? a->url : ""));
		json_object_set_new(o, "sha256", json_string(a->sha256));
		json_object_set_new(o, "size", json_integer((json_int_t)a->size));
		json_array_append_new(arts, o);
	}
	json_object_set_new(root, "artifacts", arts);
	json_object_set_new(root, "files", json_integer((json_int_t)m->nfiles));
	s = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
	json_decref(root);
	return s;
}

/* ARG in a command line split by the CommandLineToArgvW rules: quoted when
 * it holds a blank or QUOTE is set. The plan refused '"', a trailing '\\',
 * tabs and empty arguments (the ps_binpath sink), so quotes are enough. */
static void cmdline_add(struct buf *b, const char *arg, int quote)
{
	quote = quote || strchr(arg, ' ');
	if (b->len)
		buf_addc(b, ' ');
	buf_addf(b, quote ? "\"%s\"" : "%s", arg);
}

#define POWERSHELL_EXE "%SystemRoot%\\System32\\WindowsPowerShell\\v1.0\\powershell.exe"
#define POWERSHELL_FILE "-NoProfile -NonInteractive -ExecutionPolicy Bypass -File"

/* Whether component COMP staged the file PATH (the manifest's component
 * field: a file of that path from another component does not count). */
static int staged_by(const struct staged_manifest *m, const char *comp, const char *path)
{
	for (size_t i = 0; i < m->nfiles; i++)
		if (m->files[i].component && !strcmp(m->files[i].component, comp) &&
		    !strcasecmp(m->files[i].path, path))
			return 1;
	return 0;
}

static json_t *str_list(const struct wb_strlist *l)
{
	json_t *a = json_array();

	for (size_t i = 0; i < l->nr; i++)
		json_array_append_new(a, json_stringn_nocheck(l->v[i], strlen(l->v[i])));
	return a;
}

static void set_str(json_t *o, const char *k, const char *s)
{
	json_object_set_new(o, k, json_stringn_nocheck(s ? s : "", s ? strlen(s) : 0));
}

/*
 * One record per service the plan declares, in dependency order: what
 * 05-services.ps1 registers. BinPath is the command line sc.exe stores
 * (through LOG_RUNNER when declared; powershell.exe -File WRAPPER for a
 * service that reads kubeadm's flags); Application/AppParameters are nssm's.
 * Every file a service runs must be staged by its own component.
 * @where where a service is declared, checked and registered (`services:`;
 *   docs/node.md "Services as data") -- sc.exe binPath and nssm parameters
 *   for `packer/scripts/05-services.ps1.in`
 */
static int service_records(const struct plan *p, const struct staged_manifest *m,
			   int have_nssm, json_t **out, json_t **from, struct wb_err *e)
{
	json_t *list = json_array(), *froms = json_array();

	for (size_t i = 0; i < p->nservices; i++) {
		const struct plan_service *s = &p->services[i];
		const char *files[] = { s->binary, s->log_runner, s->wrapper };
		struct buf bin = BUF_INIT, params = BUF_INIT, b = BUF_INIT;
		json_t *r = json_object(), *fl = json_array();
		char where[256], *dir;

		for (size_t k = 0; k < ARRAY_SIZE(files); k++) {
			if (!files[k])
				continue;
			if (!staged_by(m, s->component, files[k])) {
				json_decref(r);
				json_decref(fl);
				json_decref(list);
				json_decref(froms);
				return wb_error(e, WB_ESTAGE, "service '%s' runs '%s', which "
						"component '%s' did not stage", s->name,
						files[k], s->component);
			}
			json_array_append_new(fl, json_stringn_nocheck(files[k], strlen(files[k])));
		}
		/* sc.exe */
		if (s->log_runner) {
			char *lf = xasprintf("--log-file=%s", s->log_file);

			cmdline_add(&bin, s->log_runner, 1);
			cmdline_add(&bin, lf, 0);
			free(lf);
			for (size_t k = 0; k < s->log_runner_args.nr; k++)
				cmdline_add(&bin, s->log_runner_args.v[k], 0);
		}
		if (s->kubeadm_flags) {
			cmdline_add(&bin, POWERSHELL_EXE, 1);
			buf_addf(&bin, " " POWERSHELL_FILE);
			cmdline_add(&bin, s->wrapper, 1);
		} else {
			cmdline_add(&bin, s->binary, 1);
			for (size_t k = 0; k < s->sc_args.nr; k++)
				cmdline_add(&bin, s->sc_args.v[k], 0);
			for (size_t k = 0; k < s->args.nr; k++)
				cmdline_add(&bin, s->args.v[k], 0);
		}
		/* nssm: the program and its parameters apart */
		if (s->kubeadm_flags) {
			buf_addf(&params, POWERSHELL_FILE);
			cmdline_add(&params, s->wrapper, 1);
		} else {
			for (size_t k = 0; k < s->args.nr; k++)
				cmdline_add(&params, s->args.v[k], 0);
		}
		set_str(r, "Name", s->name);
		set_str(r, "Manager", s->manager);
		json_object_set_new(r, "Files", fl);
		json_object_set_new(r, "DependOn", str_list(&s->depends_on));
		set_str(r, "BinPath", bin.ptr ? bin.ptr : "");
		set_str(r, "Application", s->kubeadm_flags ? POWERSHELL_EXE : s->binary);
		set_str(r, "AppParameters", params.ptr ? params.ptr : "");
		dir = win_dirname(s->binary);
		set_str(r, "AppDirectory", dir);
		free(dir);
		if (s->log_file) {
			size_t n = strlen(s->log_file);

			if (n > 4 && !strcasecmp(s->log_file + n - 4, ".log"))
				n -= 4;
			buf_addf(&b, "%.*s.out.log", (int)n, s->log_file);
			set_str(r, "AppStdout", b.ptr);
			buf_reset(&b);
			buf_addf(&b, "%.*s.err.log", (int)n, s->log_file);
			set_str(r, "AppStderr", b.ptr);
		} else {
			set_str(r, "AppStdout", "");
			set_str(r, "AppStderr", "");
		}
		buf_release(&bin);
		buf_release(&params);
		buf_release(&b);
		json_array_append_new(list, r);
		wb_origin_format(&s->origin, where, sizeof(where));
		{
			char *f = xasprintf("components.%s.services (%s) at %s", s->component,
					    s->name, where);

			json_array_append_new(froms, json_string(f));
			free(f);
		}
		if (!strcmp(s->manager, "nssm") && !have_nssm) {
			json_decref(list);
			json_decref(froms);
			return wb_error(e, WB_EUSAGE, "service '%s' runs under nssm but no "
					"nssm.exe is staged (enable it: --set "
					"components.nssm.enabled=true)", s->name);
		}
	}
	*out = list;
	*from = froms;
	return 0;
}

/*
 * `images`: one record per images: entry (key order) for 06-images.ps1:
 * Key, Name (what containerd names it: the io.containerd.image.name of
 * the tar, stage/oci.c: NAME[:TAG]), Pin (the recipe's or lock's digest,
 * a list's for a multi-platform image), Digest (what containerd must
 * list under Name: the manifest of the recipe's Windows build, the
 * manifest's images[].manifest_digest) and Tar (where the stage put it:
 * the manifest's file of component "images" and artifact KEY).
 *
 * Why the manifest's digest, not the pin: the tar's index.json names that
 * manifest (stage/oci.c index_json(): containerd cannot import a list
 * whose other builds are absent), and containerd's image record takes the
 * index entry as its target (containerd 1.6.20 import.go Client.Import:
 * images.Image{Name, Target: m}; 2.3.3 core/transfer/image/imagestore.go
 * Store), which `ctr images ls` prints as DIGEST. The pin is not lost: the
 * fetch checked this manifest against the signed list (registry.c
 * select_entry()). On the node the kubelet finds the image by Name (the
 * sandbox image and the pods' image names), and the CRI shows, for
 * `crictl images`, IMAGE ID = the config's digest (containerd 1.6.20
 * pkg/cri/store/image/image.go getImage: id := i.Config().Digest) and
 * DIGEST = a digest reference, which this import does not create
 * (pkg/cri/server/helpers.go parseImageReferences: only names of the form
 * name@digest are repo digests; ctr import makes one only with
 * --digests): crictl prints <none> there, where a pull by tag would show
 * the list (pkg/cri/server/image_pull.go PullImage names name@target).
 * An image the manifest does not hold was not staged: WB_ESTAGE.
 * @where container images imported into containerd in the VM -- the records
 *   of `packer/scripts/06-images.ps1.in`
 */
static int image_records(const struct plan *p, const struct staged_manifest *m,
			 struct tmpl_vars *v, struct wb_err *e)
{
	json_t *list = json_array(), *from = json_array();

	for (size_t i = 0; i < p->nimages; i++) {
		const struct plan_image *im = &p->images[i];
		const struct staged_file *tar = NULL;
		const struct staged_image *si = NULL;
		json_t *r;
		char *name, where[256];

		for (size_t k = 0; k < m->nfiles && !tar; k++)
			if (m->files[k].component && !strcmp(m->files[k].component, "images") &&
			    m->files[k].artifact && !strcmp(m->files[k].artifact, im->key))
				tar = &m->files[k];
		for (size_t k = 0; k < m->nimages && !si; k++)
			if (!strcmp(m->images[k].key, im->key))
				si = &m->images[k];
		if (!tar || !si || !si->manifest_digest || !im->digest ||
		    !si->digest || strcmp(si->digest, im->digest)) {
			json_decref(list);
			json_decref(from);
			return wb_error(e, WB_ESTAGE, "image '%s' is not staged (%s): stage "
					"again", im->key, !im->digest ? "not pinned" : !tar ?
					"no tar in the manifest" : !si || !si->manifest_digest ?
					"no manifest_digest in the manifest's images" :
					"staged for another pin");
		}
		name = xasprintf("%s%s%s", im->name, im->tag ? ":" : "", im->tag ? im->tag : "");
		r = json_object();
		set_str(r, "Key", im->key);
		set_str(r, "Name", name);
		set_str(r, "Pin", im->digest);
		set_str(r, "Digest", si->manifest_digest);
		set_str(r, "Tar", tar->path);
		free(name);
		json_array_append_new(list, r);
		wb_origin_format(&im->origin, where, sizeof(where));
		name = xasprintf("images.%s at %s", im->key, where);
		json_array_append_new(from, json_string(name));
		free(name);
	}
	tmpl_set_json_from(v, "images", list, from);
	return 0;
}

/*
 * @where where a component's registry values, admin-only folders and event
 *   manifests are checked and applied -- a manifest not staged is exit 4;
 *   applied by `packer/scripts/05-services.ps1.in`; the end state held by
 *   `tests/win/check.py`
 * @where the node's CNI directories (containerd's `cni:`
 *   `bin_dir`/`conf_dir`, all enabled components agreeing) -- the `.conf`
 *   files of `cni_conf_files`
 */
int emit_script_vars(const struct plan *p, const struct staged_manifest *m,
		     const char *cd_label, const char *archive_path,
		     struct tmpl_vars *v, struct wb_err *e)
{
	struct wb_strlist paths = WB_STRLIST_INIT, excl = WB_STRLIST_INIT,
		dirs = WB_STRLIST_INIT, confs = WB_STRLIST_INIT,
		props = WB_STRLIST_INIT, conflists = WB_STRLIST_INIT,
		builder_providers = WB_STRLIST_INIT,
		paths_from = WB_STRLIST_INIT, excl_from = WB_STRLIST_INIT,
		dirs_from = WB_STRLIST_INIT, props_from = WB_STRLIST_INIT,
		adirs = WB_STRLIST_INIT, adirs_from = WB_STRLIST_INIT,
		mans = WB_STRLIST_INIT, mans_from = WB_STRLIST_INIT,
		cni_dirs = WB_STRLIST_INIT;
	char *bin, *conf;
	const struct plan_artifact *msi = NULL;
	const struct staged_file *f;
	json_t *fw = json_array(), *fw_from = json_array();
	json_t *reg = json_array(), *reg_from = json_array();
	json_t *services = NULL, *services_from = NULL;
	char *s;
	int ret = -1;

	tmpl_set(v, "image", p->name);
	tmpl_set(v, "windows_version", p->windows_version);
	tmpl_set(v, "cd_label", cd_label);
	tmpl_set(v, "archive_path", archive_path);
	tmpl_set(v, "staging_dir", "C:\\Windows\\Temp\\winbuild-payload");
	tmpl_set(v, "winbuild_dir", WINBUILD_DIR);
	tmpl_set(v, "firstboot_task", "winbuild-firstboot-winrm");
	tmpl_set(v, "firstboot_path", FIRSTBOOT_WINRM_IN_VM);
	tmpl_set_int(v, "file_count", (long long)m->nfiles);
	tmpl_set_list(v, "windows_features", &p->windows_features);
	tmpl_set(v, "service_manager", p->service_manager);
	tmpl_set(v, "pause_image", p->pause_image);
	tmpl_set(v, "cni", p->cni);

	/* PATH, Defender, directories, firewall and registry values of every
	 * component */
	for (size_t i = 0; i < p->ncomponents; i++) {
		const struct plan_component *c = &p->components[i];

		char *where[7];

		where[0] = xasprintf("components.%s.path in %s", c->name, c->file);
		where[1] = xasprintf("components.%s.defender_exclusions in %s", c->name, c->file);
		where[2] = xasprintf("components.%s.directories in %s", c->name, c->file);
		where[3] = xasprintf("components.%s.firewall in %s", c->name, c->file);
		where[4] = xasprintf("components.%s.admin_directories in %s", c->name, c->file);
		where[5] = xasprintf("components.%s.registry in %s", c->name, c->file);
		where[6] = xasprintf("components.%s.event_manifests in %s", c->name, c->file);
		for (size_t k = 0; k < c->event_manifests.nr; k++)
			push_from(&mans, &mans_from, c->event_manifests.v[k], where[6]);
		for (size_t k = 0; k < c->admin_directories.nr; k++)
			push_from(&adirs, &adirs_from, c->admin_directories.v[k], where[4]);
		for (size_t k = 0; k < c->nregistry; k++) {
			const struct plan_registry *g = &c->registry[k];
			json_t *r = json_object();

			json_object_set_new(r, "Key", json_stringn_nocheck(g->key, strlen(g->key)));
			json_object_set_new(r, "Name", json_stringn_nocheck(g->name, strlen(g->name)));
			json_object_set_new(r, "Type", json_string(!strcmp(g->type, "dword") ? "DWord" :
				!strcmp(g->type, "expand_string") ? "ExpandString" :
				!strcmp(g->type, "binary") ? "Binary" : "String"));
			json_object_set_new(r, "Value", json_stringn_nocheck(g->value, strlen(g->value)));
			/* '' when none: the PowerShell sink has no $null */
			set_str(r, "TakeOwnership", g->take_ownership);
			json_array_append_new(reg, r);
			json_array_append_new(reg_from, json_string(where[5]));
		}
		for (size_t k = 0; k < c->path.nr; k++)
			push_from(&paths, &paths_from, c->path.v[k], where[0]);
		for (size_t k = 0; k < c->defender_exclusions.nr; k++)
			push_from(&excl, &excl_from, c->defender_exclusions.v[k], where[1]);
		for (size_t k = 0; k < c->directories.nr; k++)
			push_from(&dirs, &dirs_from, c->directories.v[k], where[2]);
		for (size_t k = 0; k < c->nfirewall; k++) {
			/* a record of strings as they are: the renderer checks
			 * them for the sink (no UTF-8 check that would drop one) */
			json_t *r = json_object();
			const char *nm = c->firewall[k].name, *pr = c->firewall[k].protocol;

			json_object_set_new(r, "Name", json_stringn_nocheck(nm, strlen(nm)));
			json_object_set_new(r, "Port", json_integer(c->firewall[k].port));
			json_object_set_new(r, "Protocol", json_stringn_nocheck(pr, strlen(pr)));
			json_array_append_new(fw, r);
			json_array_append_new(fw_from, json_string(where[3]));
		}
		for (size_t k = 0; k < ARRAY_SIZE(where); k++)
			free(where[k]);
	}
	tmpl_set_list_from(v, "path_entries", &paths, &paths_from);
	tmpl_set_list_from(v, "defender_exclusions", &excl, &excl_from);
	tmpl_set_list_from(v, "directories", &dirs, &dirs_from);
	tmpl_set_json_from(v, "firewall_rules", fw, fw_from);
	fw = fw_from = NULL;
	tmpl_set_list_from(v, "admin_directories", &adirs, &adirs_from);
	tmpl_set_json_from(v, "registry_values", reg, reg_from);
	reg = reg_from = NULL;
	tmpl_set_list_from(v, "event_manifests", &mans, &mans_from);
	/* wevtutil reads each manifest where the component put it */
	for (size_t i = 0; i < p->ncomponents; i++) {
		const struct plan_component *c = &p->components[i];

		for (size_t k = 0; k < c->event_manifests.nr; k++)
			if (!staged_by(m, c->name, c->event_manifests.v[k])) {
				wb_error(e, WB_ESTAGE, "component '%s' registers the event "
					 "manifest '%s', which it did not stage", c->name,
					 c->event_manifests.v[k]);
				goto out;
			}
	}

	/* cloudbase-init: the MSI payload, its properties, conf overlays */
	for (size_t i = 0; i < p->nartifacts; i++)
		if (p->artifacts[i].action == PLAN_PAYLOAD &&
		    !strcmp(p->artifacts[i].component, "cloudbase-init"))
			msi = &p->artifacts[i];
	s = artifact_origin(msi, "payload");
	tmpl_set_from(v, "cloudbase_msi", msi ? msi->dest_win : "", s);
	free(s);
	s = artifact_origin(msi, "payload.properties");
	if (msi)
		for (size_t k = 0; k < msi->payload_props.nr; k++)
			push_from(&props, &props_from, msi->payload_props.v[k], s);
	free(s);
	tmpl_set_list_from(v, "cloudbase_properties", &props, &props_from);
	/* conf overlays: CBI_OVERLAY_DIR\<provider>\<file>, one directory per
	 * provider; the builder picks its provider's at provisioning time */
	for (size_t i = 0; i < m->nfiles; i++) {
		const char *rest = m->files[i].path + strlen(CBI_OVERLAY_DIR), *sep;

		if (m->files[i].component && !strcmp(m->files[i].component, "cloudbase-init") &&
		    !strncasecmp(m->files[i].path, CBI_OVERLAY_DIR, strlen(CBI_OVERLAY_DIR)) &&
		    (sep = strchr(rest, '\\')) && sep > rest && !strchr(sep + 1, '\\'))
			wb_strlist_push(&confs, m->files[i].path);
	}
	tmpl_set_list(v, "cloudbase_conf_files", &confs);
	for (size_t i = 0; i < p->builders.nr; i++) {
		s = xasprintf("%s=%s", p->builders.v[i], p->builder_providers.v[i]);
		wb_strlist_push(&builder_providers, s);
		free(s);
	}
	tmpl_set_list(v, "cloudbase_builder_providers", &builder_providers);
	tmpl_set(v, "cloudbase_dir", "C:\\Program Files\\Cloudbase Solutions\\Cloudbase-Init");

	/* containerd */
	if (find_file(m, "containerd", "containerd.exe", &f, e))
		goto out;
	s = f ? win_dirname(f->path) : xstrdup("C:\\Program Files\\containerd");
	tmpl_set(v, "containerd_dir", s);
	free(s);
	if (find_file(m, "containerd", "config.toml", &f, e))
		goto out;
	tmpl_set(v, "containerd_config", f ? f->path : "");

	/* every declared service, dependencies first (05-services.ps1) */
	if (find_file(m, "nssm", "nssm.exe", &f, e))
		goto out;
	tmpl_set(v, "nssm_exe", f ? f->path : "");
	if (service_records(p, m, f != NULL, &services, &services_from, e) < 0)
		goto out;
	tmpl_set_json_from(v, "services", services, services_from);
	services = services_from = NULL;

	/* CNI configuration files staged for the recipe's node.cni: a
	 * .conflist, or a .conf in the configuration directory the components
	 * declare (`cni.conf_dir`: no CNI path is named here) */
	conf = p->cni_conf_dir ? winpath_from_tree(p->cni_conf_dir) : NULL;
	s = conf ? xasprintf("%s\\", conf) : NULL;
	for (size_t i = 0; i < m->nfiles; i++)
		if (has_suffix_ci(m->files[i].path, ".conflist") ||
		    (s && has_suffix_ci(m->files[i].path, ".conf") &&
		     !strncasecmp(m->files[i].path, s, strlen(s))))
			wb_strlist_push(&conflists, m->files[i].path);
	free(s);
	tmpl_set_list(v, "cni_conf_files", &conflists);
	/* and the two directories themselves, as the components declare them
	 * (none declared: 06-cni.ps1 creates nothing) */
	bin = p->cni_bin_dir ? winpath_from_tree(p->cni_bin_dir) : NULL;
	if (bin)
		wb_strlist_push(&cni_dirs, bin);
	if (conf)
		wb_strlist_push(&cni_dirs, conf);
	tmpl_set_list(v, "cni_dirs", &cni_dirs);
	tmpl_set(v, "cni_bin_dir", bin ? bin : "");
	free(bin);
	free(conf);
	wb_strlist_release(&cni_dirs);

	if (image_records(p, m, v, e) < 0)
		goto out;

	/* provenance: a here-string; JSON lines never start with '@ */
	s = provenance_json(p, m);
	tmpl_set(v, "provenance_json", s);
	free(s);
	ret = 0;
out:
	json_decref(services);
	json_decref(services_from);
	wb_strlist_release(&paths);
	wb_strlist_release(&excl);
	wb_strlist_release(&dirs);
	wb_strlist_release(&confs);
	wb_strlist_release(&props);
	wb_strlist_release(&conflists);
	wb_strlist_release(&builder_providers);
	wb_strlist_release(&paths_from);
	wb_strlist_release(&excl_from);
	wb_strlist_release(&dirs_from);
	wb_strlist_release(&adirs);
	wb_strlist_release(&adirs_from);
	wb_strlist_release(&mans);
	wb_strlist_release(&mans_from);
	json_decref(reg);
	json_decref(reg_from);
	wb_strlist_release(&props_from);
	json_decref(fw);
	json_decref(fw_from);
	return ret;
}
