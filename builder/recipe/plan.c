/* struct plan lifetime and lookups. */
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/buf.h"
#include "lib/platform.h"
#include "recipe/plan.h"

void plan_service_release(struct plan_service *s)
{
	free(s->name);
	free(s->component);
	free(s->binary);
	wb_strlist_release(&s->args);
	wb_strlist_release(&s->sc_args);
	wb_strlist_release(&s->depends_on);
	free(s->manager);
	free(s->log_runner);
	free(s->log_file);
	wb_strlist_release(&s->log_runner_args);
	free(s->wrapper);
	free(s->dep_origins);
	memset(s, 0, sizeof(*s));
}

void plan_release(struct plan *p)
{
	for (size_t i = 0; i < p->nartifacts; i++) {
		struct plan_artifact *a = &p->artifacts[i];
		free(a->name);
		free(a->component);
		free(a->version);
		free(a->upstream_url);
		free(a->credential);
		free(a->filename);
		wb_strlist_release(&a->urls);
		trust_spec_release(&a->verify);
		for (size_t k = 0; k < a->nsince; k++) {
			free(a->since[k].version);
			free(a->since[k].missing);
			free(a->since[k].instead);
		}
		free(a->since);
		free(a->dest_win);
		free(a->dest_tree);
		wb_strlist_release(&a->include);
		free(a->format);
		free(a->payload_type);
		wb_strlist_release(&a->payload_props);
	}
	free(p->artifacts);
	for (size_t i = 0; i < p->ncomponents; i++) {
		struct plan_component *c = &p->components[i];
		free(c->name);
		free(c->version);
		free(c->file);
		free(c->description);
		free(c->homepage);
		free(c->license);
		free(c->purl);
		plan_authenticode_release(&c->authenticode);
		wb_strlist_release(&c->path);
		wb_strlist_release(&c->directories);
		wb_strlist_release(&c->admin_directories);
		wb_strlist_release(&c->event_manifests);
		for (size_t j = 0; j < c->nregistry; j++) {
			free(c->registry[j].key);
			free(c->registry[j].name);
			free(c->registry[j].type);
			free(c->registry[j].value);
			free(c->registry[j].take_ownership);
		}
		free(c->registry);
		free(c->directory_origins);
		wb_strlist_release(&c->defender_exclusions);
		for (size_t j = 0; j < c->nfirewall; j++) {
			free(c->firewall[j].name);
			free(c->firewall[j].protocol);
		}
		free(c->firewall);
	}
	free(p->components);
	for (size_t i = 0; i < p->nservices; i++)
		plan_service_release(&p->services[i]);
	free(p->services);
	for (size_t i = 0; i < p->ngenerate; i++) {
		free(p->generate[i].component);
		free(p->generate[i].template_path);
		free(p->generate[i].dest_win);
		free(p->generate[i].dest_tree);
		wb_strlist_release(&p->generate[i].vars);
	}
	free(p->generate);
	for (size_t i = 0; i < p->nmirrors; i++) {
		free(p->mirrors[i].from);
		free(p->mirrors[i].to);
	}
	free(p->mirrors);
	plan_authenticode_release(&p->authenticode);
	wb_strlist_release(&p->site_signing.components);
	wb_strlist_release(&p->site_signing.files);
	wb_strlist_release(&p->site_signing.publishers);
	free(p->site_signing.roots);
	for (size_t i = 0; i < p->nvalues; i++) {
		free(p->values[i].key);
		free(p->values[i].value);
	}
	free(p->values);
	for (size_t i = 0; i < p->nwarnings; i++)
		free(p->warnings[i].msg);
	free(p->warnings);
	free(p->name);
	free(p->recipe_path);
	free(p->windows_version);
	free(p->windows_edition);
	free(p->windows_product_key);
	free(p->windows_locale);
	free(p->payload_url);
	free(p->packer_version);
	free(p->windows_iso_sha256);
	free(p->cloudbase_provider);
	free(p->service_manager);
	free(p->pause_image);
	plan_images_release(p);
	plan_updates_release(p);
	free(p->cni);
	free(p->cni_bin_dir);
	free(p->cni_conf_dir);
	wb_strlist_release(&p->windows_features);
	wb_strlist_release(&p->builders);
	wb_strlist_release(&p->builder_providers);
	wb_strlist_release(&p->override_files);
	wb_strlist_release(&p->interned);
	memset(p, 0, sizeof(*p));
}

const char *plan_action_name(enum plan_action a)
{
	switch (a) {
	case PLAN_UNPACK: return "unpack";
	case PLAN_INSTALL: return "install";
	case PLAN_PAYLOAD: return "payload";
	}
	return "?";
}

const struct plan_artifact *plan_find_artifact(const struct plan *plan,
					       const char *name)
{
	for (size_t i = 0; i < plan->nartifacts; i++)
		if (!strcmp(plan->artifacts[i].name, name))
			return &plan->artifacts[i];
	return NULL;
}

const struct plan_component *plan_find_component(const struct plan *plan,
						 const char *name)
{
	for (size_t i = 0; i < plan->ncomponents; i++)
		if (!strcmp(plan->components[i].name, name))
			return &plan->components[i];
	return NULL;
}

const struct plan_service *plan_find_service(const struct plan *plan,
					     const char *name)
{
	for (size_t i = 0; i < plan->nservices; i++)
		if (!strcasecmp(plan->services[i].name, name))
			return &plan->services[i];
	return NULL;
}

void plan_authenticode_policy(const struct plan_authenticode *a,
			      struct authenticode_policy *out)
{
	struct authenticode_policy *also = NULL;
	size_t nalso = a->nsets ? a->nsets - 1 : 0;

	memset(out, 0, sizeof(*out));
	out->require = a->require;
	out->signatures = a->sigs_one && !a->sigs_all ? AUTHENTICODE_SIGS_ONE
						       : AUTHENTICODE_SIGS_ALL;
	if (!a->nsets)
		return;
	out->roots = a->sets[0].roots;
	out->publishers = (const char *const *)a->sets[0].publishers.v;
	out->npublishers = a->sets[0].publishers.nr;
	if (nalso)
		also = xcalloc(nalso, sizeof(*also));
	for (size_t i = 0; i < nalso; i++) {
		also[i].require = a->require;
		also[i].roots = a->sets[i + 1].roots;
		also[i].publishers = (const char *const *)a->sets[i + 1].publishers.v;
		also[i].npublishers = a->sets[i + 1].publishers.nr;
	}
	out->also = also;
	out->nalso = nalso;
}

void plan_authenticode_policy_release(struct authenticode_policy *out)
{
	free((void *)out->also);
	out->also = NULL;
	out->nalso = 0;
}

void plan_authenticode_release(struct plan_authenticode *a)
{
	trust_authsets_release(a->sets, a->nsets);
	memset(a, 0, sizeof(*a));
}

/*
 * @where where the site signs staged executables (`site_signing`) -- which
 *   files
 */
int plan_sitesign_selects(const struct plan_sitesign *s, const char *component,
			  const char *path)
{
	const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
	int comp = 0;

	if (!s->set || !component || !authenticode_signable(path))
		return 0;
	for (size_t i = 0; !comp && i < s->components.nr; i++)
		comp = !strcmp(s->components.v[i], component);
	if (!comp)
		return 0;
	if (!s->files.nr)
		return 1;
	for (size_t i = 0; i < s->files.nr; i++)
		if (!fnmatch(s->files.v[i], name, FNM_CASEFOLD))
			return 1;
	return 0;
}

/*
 * @where where the Windows ISO digest is required (`windows.iso_sha256` for
 *   ISO builders, `policy.unverified_iso`) -- refuses it, before anything is
 *   fetched and before emit
 */
int plan_require_iso(const struct plan *p, struct wb_err *e)
{
	struct buf iso = BUF_INIT, cloud = BUF_INIT;
	char where[512] = "";
	int ret;

	if (!p->iso_missing)
		return 0;
	for (size_t i = 0; i < p->builders.nr; i++)
		if (platform_builder_is_iso(p->builders.v[i]))
			buf_addf(&iso, "%s%s", iso.len ? ", " : "", p->builders.v[i]);
	/* the cloud builders that have an image of the recipe's Windows */
	for (size_t i = 0; i < platform_nbuilders; i++) {
		const struct platform_builder *b = &platform_builders[i];

		if (b->fw == PLATFORM_FW_NONE &&
		    platform_base_image(b, p->windows_version, p->windows_edition,
					p->windows_desktop))
			buf_addf(&cloud, "%s--builder %s", cloud.len ? ", " : "", b->name);
	}
	if (p->policy.unverified_iso_origin.file)
		wb_origin_format(&p->policy.unverified_iso_origin, where, sizeof(where));
	ret = wb_origin_error(e, &p->iso_missing_origin,
			      "the Windows ISO of the ISO builders (%s) is %s: set 'windows.iso_sha256' "
			      "to its SHA-256 (docs/packer.md says where Microsoft publishes it), "
			      "or build only cloud builders (%s)%s%s%s",
			      iso.ptr, p->iso_missing == 2 ? "not verified (iso_sha256: none)" : "not pinned",
			      cloud.len ? cloud.ptr : "none has an image of this Windows",
			      *where ? "; policy.unverified_iso: forbid (" : "", where, *where ? ")" : "");
	buf_release(&iso);
	buf_release(&cloud);
	return ret;
}
