/* The files stage generates, rendered from recipes/templates/. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/fs.h"
#include "lib/platform.h"
#include "lib/winpath.h"
#include "stage/render.h"
#include "stage/stage.h"

static const struct plan_component *component(const struct plan *plan,
					      const char *name)
{
	for (size_t i = 0; i < plan->ncomponents; i++)
		if (!strcmp(plan->components[i].name, name))
			return &plan->components[i];
	return NULL;
}

/* Set NAME to the plan value KEY ("node.pause_image"), remembering its
 * origin for the renderer's messages. */
static void set_value(struct tmpl_vars *vars, const struct plan *plan,
		      const char *name, const char *key, const char *value,
		      const struct wb_origin *o)
{
	char where[256] = "default", *from;

	for (size_t i = 0; !o && i < plan->nvalues; i++)
		if (!strcmp(plan->values[i].key, key))
			o = &plan->values[i].origin;
	if (o)
		wb_origin_format(o, where, sizeof(where));
	from = xasprintf("%s at %s", key, where);
	tmpl_set_from(vars, name, value, from);
	free(from);
}

/* Render the template file TMPL to the tree path PATH for COMPONENT. */
static int emit_path(struct tree *t, const char *tmpl, const char *path,
		     const char *comp, const struct tmpl_vars *vars, struct wb_err *e)
{
	struct buf out = BUF_INIT;
	int ret = render_file(tmpl, vars, &out, e);

	if (!ret)
		ret = tree_write(t, path, out.ptr, out.len, comp, e);
	buf_release(&out);
	return ret;
}

/* Render TEMPLATES_DIR/NAME to the tree path PATH for COMPONENT. */
static int emit(struct tree *t, const char *templates_dir, const char *name,
		const char *path, const char *comp, const struct tmpl_vars *vars,
		struct wb_err *e)
{
	char *tmpl = fs_join(templates_dir, name);
	int ret = emit_path(t, tmpl, path, comp, vars, e);

	free(tmpl);
	return ret;
}

/*
 * The files components declare: each `generate:` entry (its template,
 * beside the component file, with the image's values, the component's
 * version and the entry's vars), and the start script of each service with
 * kubeadm_flags (kubelet/StartKubelet.ps1 with the service's binary and
 * arguments: sc_args only where the program answers sc.exe itself).
 * @where files a component declares (`generate:`) and the kubelet start
 *   script (`wrapper`)
 */
static int generate_declared(struct tree *t, const struct plan *plan,
			     const char *templates_dir, struct wb_err *e)
{
	for (size_t i = 0; i < plan->ngenerate; i++) {
		const struct plan_generate *g = &plan->generate[i];
		const struct plan_component *c = component(plan, g->component);
		struct tmpl_vars vars = TMPL_VARS_INIT;
		char where[256], *from;
		int ret;

		wb_origin_format(&g->origin, where, sizeof(where));
		from = xasprintf("components.%s.generate at %s", g->component, where);
		tmpl_set(&vars, "image", plan->name);
		tmpl_set(&vars, "windows_version", plan->windows_version);
		tmpl_set(&vars, "version", c ? c->version : "");
		for (size_t k = 0; k < g->vars.nr; k++) {
			const char *eq = strchr(g->vars.v[k], '=');
			char *name = xstrndup(g->vars.v[k], (size_t)(eq - g->vars.v[k]));

			tmpl_set_from(&vars, name, eq + 1, from);
			free(name);
		}
		ret = emit_path(t, g->template_path, g->dest_tree, g->component, &vars, e);
		tmpl_vars_release(&vars);
		free(from);
		if (ret < 0)
			return -1;
	}
	for (size_t i = 0; i < plan->nservices; i++) {
		const struct plan_service *s = &plan->services[i];
		struct tmpl_vars vars = TMPL_VARS_INIT;
		struct wb_strlist args = WB_STRLIST_INIT;
		const char *why = NULL;
		char *tree;
		int ret;

		if (!s->kubeadm_flags)
			continue;
		if (!strcmp(s->manager, "sc"))
			for (size_t k = 0; k < s->sc_args.nr; k++)
				wb_strlist_push(&args, s->sc_args.v[k]);
		for (size_t k = 0; k < s->args.nr; k++)
			wb_strlist_push(&args, s->args.v[k]);
		tmpl_set(&vars, "image", plan->name);
		tmpl_set(&vars, "service", s->name);
		tmpl_set(&vars, "binary", s->binary);
		tmpl_set_list(&vars, "args", &args);
		tree = winpath_to_tree(s->wrapper, &why);
		ret = tree ? emit(t, templates_dir, "kubelet/StartKubelet.ps1", tree,
				  s->component, &vars, e) :
			wb_error(e, WB_EUSAGE, "service '%s': bad wrapper path '%s': %s",
				 s->name, s->wrapper, why);
		free(tree);
		wb_strlist_release(&args);
		tmpl_vars_release(&vars);
		if (ret < 0)
			return -1;
	}
	return 0;
}

/* cloudbase-init's conf pair for provider PROV under
 * STAGE_CBI_CONF_DIR/PROV/. */
static int render_provider(struct tree *t, const char *templates_dir,
			   const char *prov, struct tmpl_vars *vars, struct wb_err *e)
{
	static const char *const confs[] = {
		"cloudbase-init.conf", "cloudbase-init-unattend.conf",
	};
	int ret = 0;

	/* provider_<name> for every provider of the platform table ("auto",
	 * item 0, is never a provider an image gets) */
	for (size_t i = 1; platform_set_item(PLATFORM_SET_PROVIDERS, i); i++) {
		const char *pr = platform_set_item(PLATFORM_SET_PROVIDERS, i);
		char name[40];

		snprintf(name, sizeof(name), "provider_%s", pr);
		for (char *p = name; *p; p++)
			if (*p == '-')
				*p = '_';
		tmpl_set(vars, name, strcmp(prov, pr) ? "" : "1");
	}
	tmpl_set(vars, "provider", prov);
	for (size_t i = 0; !ret && i < ARRAY_SIZE(confs); i++) {
		char *tmpl = xasprintf("cloudbase-init/%s", confs[i]);
		char *path = xasprintf(STAGE_CBI_CONF_DIR "/%s/%s", prov, confs[i]);

		ret = emit(t, templates_dir, tmpl, path, "cloudbase-init", vars, e);
		free(tmpl);
		free(path);
	}
	return ret;
}

/* The CNI directories the components declare (`cni:`, recipe/components.c)
 * as containerd's config writes them ("C:/opt/cni/bin"); none declared is
 * an error when WHO (containerd's config, node.cni) needs them. No CNI
 * path is named here: they are the component data's.
 * @where the node's CNI directories (containerd's `cni:`
 *   `bin_dir`/`conf_dir`, all enabled components agreeing)
 */
static int cni_dirs(struct tmpl_vars *vars, const struct plan *plan, const char *who,
		    struct wb_err *e)
{
	char *bin, *conf;

	if (!plan->cni_bin_dir) {
		if (who)
			return wb_error(e, WB_EUSAGE, "%s names the CNI plugin and configuration "
					"directories, and no enabled component declares them: give "
					"one 'cni: {bin_dir: ..., conf_dir: ...}' (as "
					"recipes/components/containerd.yaml does)", who);
		return 0;
	}
	bin = xasprintf("C:/%s", plan->cni_bin_dir);
	conf = xasprintf("C:/%s", plan->cni_conf_dir);
	set_value(vars, plan, "cni_bin_dir", "cni.bin_dir", bin, &plan->cni_bin_dir_origin);
	set_value(vars, plan, "cni_conf_dir", "cni.conf_dir", conf, &plan->cni_conf_dir_origin);
	free(bin);
	free(conf);
	return 0;
}

/* @where where templates are rendered -- which template, which variables */
int stage_generate(struct tree *t, const struct plan *plan,
		   const char *templates_dir, struct wb_err *e)
{
	struct tmpl_vars vars = TMPL_VARS_INIT;
	const struct plan_component *ctd = component(plan, "containerd");
	struct wb_strlist done = WB_STRLIST_INIT;
	char *path = NULL;
	int ret = -1;

	set_value(&vars, plan, "image", "name", plan->name, NULL);
	set_value(&vars, plan, "windows_version", "windows.version",
		  plan->windows_version, NULL);
	set_value(&vars, plan, "pause_image", "node.pause_image", plan->pause_image, NULL);
	set_value(&vars, plan, "cni", "node.cni", plan->cni, NULL);
	if (cni_dirs(&vars, plan, ctd ? "containerd's config" :
		     strcmp(plan->cni, "none") ? "node.cni" : NULL, e) < 0)
		goto out;
	set_value(&vars, plan, "service_manager", "node.service_manager",
		  plan->service_manager, NULL);
	if (ctd) {
		char *key = xasprintf("components.%s.version", ctd->name);

		set_value(&vars, plan, "containerd_version", key, ctd->version,
			  &ctd->version_origin);
		free(key);
	} else {
		tmpl_set(&vars, "containerd_version", "");
	}
	if (ctd) {
		char *end;
		long major = strtol(ctd->version, &end, 10);
		long minor = *end == '.' ? strtol(end + 1, NULL, 10) : 0;

		/* CNI plugin directory key: bin_dir up to 2.0.x, bin_dirs from
		 * 2.1 (internal/cri/config/config.go of each release) */
		tmpl_set(&vars, "cni_bin_dirs", major > 2 || (major == 2 && minor >= 1) ?
			 "1" : "");
		if (major != 1 && major != 2) {
			wb_error(e, WB_EUSAGE, "containerd %s: winbuild knows the config "
				 "format of containerd 1.x (version 2) and 2.x (version 3) "
				 "only", ctd->version);
			goto out;
		}
		if (emit(t, templates_dir, major == 1 ? "containerd/config.v2.toml" :
			 "containerd/config.v3.toml", "Program Files/containerd/config.toml",
			 "containerd", &vars, e) < 0)
			goto out;
	}
	/* one conf pair per provider the builders need, in a directory of its
	 * own; 03-cloudbase-init.ps1 lays the builder's (docs/node.md) */
	for (size_t b = 0; component(plan, "cloudbase-init") && b < plan->builders.nr; b++) {
		const char *prov = plan->builder_providers.v[b];

		if (wb_strlist_has(&done, prov))
			continue;
		wb_strlist_push(&done, prov);
		if (render_provider(t, templates_dir, prov, &vars, e) < 0)
			goto out;
	}
	if (strcmp(plan->cni, "none")) {
		char *tmpl = xasprintf("cni/%s.conflist", plan->cni);

		path = xasprintf("%s/10-%s.conflist", plan->cni_conf_dir, plan->cni);
		ret = emit(t, templates_dir, tmpl, path,
			   "windows-cni",
			   &vars, e);
		free(tmpl);
		if (ret < 0)
			goto out;
		ret = -1;
	}
	/* what the components declare: generate entries, and the start
	 * script of kubelet (both service managers; it reads kubeadm's flags
	 * at every start, docs/node.md) */
	if (generate_declared(t, plan, templates_dir, e) < 0)
		goto out;
	ret = 0;
out:
	free(path);
	wb_strlist_release(&done);
	tmpl_vars_release(&vars);
	return ret;
}
