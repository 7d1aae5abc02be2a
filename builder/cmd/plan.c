/* winbuild plan: resolve a recipe and print what will happen, and why. */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "lib/buf.h"
#include "lib/fs.h"
#include "lib/json.h"
#include "lib/redact.h"
#include "lib/platform.h"
#include "recipe/plan.h"
#include "trust/method.h"

#define PLAN_USAGE "plan RECIPE [-O FILE]... [--set KEY=VALUE]... [--builder NAME]... [--explain] [--json]"
#define PLAN_JSON_SCHEMA 1

static void origin_str(const struct wb_origin *o, char *out, size_t len)
{
	wb_origin_format(o, out, len);
}

/* "    <- origin" when explaining */
static void explain(int on, const struct wb_origin *o)
{
	char where[512];

	if (!on)
		return;
	origin_str(o, where, sizeof(where));
	printf("    <- %s", where);
}

/* "authenticode: required, roots FILE, publishers A; B" for C's files */
static void print_authenticode(const struct plan_component *c, int ex)
{
	const struct plan_authenticode *au = c ? &c->authenticode : NULL;

	if (!au || !au->set)
		return;
	for (size_t i = 0; i < au->nsets; i++) {
		const struct trust_authset *q = &au->sets[i];

		if (!i)
			printf("  %-8s .exe/.dll/.msi %s under roots %s", "authenticode:",
			       au->require ? "must be signed" : "checked when signed", q->roots);
		else
			printf("  %-8s and under roots %s", "", q->roots);
		explain(ex, &q->roots_origin);
		for (size_t k = 0; k < q->publishers.nr; k++)
			printf("%s%s", k ? "; " : ", publishers: ", q->publishers.v[k]);
		putchar('\n');
	}
}

static void print_req_line(void *ctx, const char *text, const struct wb_origin *o)
{
	printf("  %-8s   %s", "", text);
	explain(*(int *)ctx, o);
	putchar('\n');
}

/* Each requirement of V (trust/method.h): its URLs (origin on the first),
 * then its method's own settings. */
static void print_reqs(const struct trust_spec *v, int ex)
{
	for (size_t i = 0; i < v->nreqs; i++) {
		const struct trust_req *q = &v->reqs[i];
		int again = 0;

		for (size_t k = 0; k < i; k++)
			again |= v->reqs[k].method == q->method;
		for (size_t u = 0; u < q->urls.nr; u++) {
			char *shown = redact_url(q->urls.v[u]);

			printf("  %-8s %s%s %s", "verify:", again ? "and " : "",
			       q->method->label, shown);
			free(shown);
			if (!u)
				explain(ex, &q->origin);
			putchar('\n');
		}
		/* a method with no file to fetch (an embedded signature), or
		 * none in its first slot (cosign's bundle alone) */
		if (!q->urls.nr) {
			printf("  %-8s %s%s", "verify:", again ? "and " : "",
			       trust_method_naux(q->method) == 1 ? q->method->label :
			       q->method->shown);
			explain(ex, &q->origin);
			putchar('\n');
		}
		for (size_t k = 1; k < trust_method_naux(q->method); k++) {
			const struct wb_strlist *l = trust_req_urls(q, k);

			for (size_t u = 0; u < l->nr; u++) {
				char *shown = redact_url(l->v[u]);

				printf("  %-8s   %s %s\n", "", trust_method_aux(q->method, k).what,
				       shown);
				free(shown);
			}
		}
		if (q->method->describe_req)
			q->method->describe_req(q, print_req_line, &ex);
	}
}

static void print_text(const struct plan *p, int ex)
{
	size_t pins = 0;

	printf("image %s: Windows Server %s (%s)\n", p->name, p->windows_version,
	       p->windows_edition);
	printf("recipe: %s\n", p->recipe_path);
	printf("windows install: %s, locale %s\n",
	       p->windows_desktop ? "Desktop Experience" : "Server Core", p->windows_locale);
	if (p->windows_iso_sha256) {
		printf("windows iso: sha256 %s", p->windows_iso_sha256);
		explain(ex, &p->windows_iso_origin);
		putchar('\n');
	} else if (p->iso_unverified) {
		printf("windows iso: NOT VERIFIED (policy.unverified_iso: allow)");
		explain(ex, &p->policy.unverified_iso_origin);
		putchar('\n');
	} else if (p->iso_missing) {
		printf("windows iso: NOT PINNED: emit and build need 'windows.iso_sha256' for");
		for (size_t i = 0; i < p->builders.nr; i++)
			if (platform_builder_is_iso(p->builders.v[i]))
				printf(" %s", p->builders.v[i]);
		explain(ex, &p->iso_missing_origin);
		putchar('\n');
	}
	for (size_t i = 0; i < p->override_files.nr; i++)
		printf("override: %s\n", p->override_files.v[i]);
	printf("policy: require %s", p->policy.require_signature ? "signature" : "digest");
	explain(ex && p->policy.require_signature, &p->policy.require_origin);
	printf("; http %s", p->policy.allow_http ? "allowed" : "refused");
	explain(ex && !p->policy.allow_http, &p->policy.allow_http_origin);
	printf("; checksum files %s", p->policy.forbid_checksum_urls ? "forbidden" : "allowed");
	explain(ex && p->policy.forbid_checksum_urls, &p->policy.checksum_urls_origin);
	if (p->policy.refuse_locked_urls) {
		printf("; a locked URL that moved refused");
		explain(ex, &p->policy.locked_urls_origin);
	}
	if (p->policy.tlog_threshold) {
		printf("; transparency logs: %u distinct", p->policy.tlog_threshold);
		explain(ex, &p->policy.tlog_threshold_origin);
	}
	putchar('\n');
	for (size_t i = 0; i < p->nmirrors; i++) {
		printf("mirror: %s -> %s", p->mirrors[i].from, p->mirrors[i].to);
		explain(ex, &p->mirrors[i].origin);
		putchar('\n');
	}
	if (p->mirror_only) {
		printf("mirror only: upstream is never contacted");
		explain(ex, &p->mirror_only_origin);
		putchar('\n');
	}
	for (size_t i = 0; i < p->nupdates; i++) {
		const struct plan_update *u = &p->updates[i];

		printf("windows update %zu: %s (artifact %s)%s%s%s%s", i + 1, u->kb, u->artifact,
		       u->checkpoint ? ", checkpoint" : "", u->must_apply ? ", must apply" : "",
		       u->expect_build ? ", then build " : "",
		       u->expect_build ? u->expect_build : "");
		explain(ex, &u->origin);
		putchar('\n');
	}
	for (size_t i = 0; i < p->nimages; i++) {
		const struct plan_image *im = &p->images[i];

		printf("container image %s: %s%s%s", im->key, im->name, im->tag ? ":" : "",
		       im->tag ? im->tag : "");
		if (im->digest)
			printf("@%s", im->digest);
		else
			printf(" NOT PINNED (needs_pin: %s)", im->needs_pin);
		if (im->allow_foreign_layers)
			printf("; foreign layers allowed");
		if (im->cosign.key)
			printf("; cosign key %s", im->cosign.key);
		else if (im->cosign.identity) {
			char where[512];

			printf("; cosign %s (%s)", im->cosign.identity, im->cosign.issuer);
			/* a default is data: where it is written */
			wb_origin_format(&im->cosign.default_origin, where, sizeof(where));
			if (im->cosign.defaulted)
				printf(", the %s signer (%s)", im->cosign.default_registry, where);
		}
		else
			printf("; NO signature required");
		explain(ex, &im->origin);
		putchar('\n');
	}
	for (size_t i = 0; i < p->nartifacts; i++) {
		const struct plan_artifact *a = &p->artifacts[i];
		const struct trust_spec *v = &a->verify;

		printf("\n%s  (component %s %s)\n", a->name, a->component, a->version);
		for (size_t u = 0; u < a->urls.nr; u++) {
			char *shown = redact_url(a->urls.v[u]);

			printf("  %-8s %zu. %s", u ? "" : "url:", u + 1, shown);
			free(shown);
			if (!u)
				explain(ex, &a->url_origin);
			putchar('\n');
		}
		if (a->replaced)
			printf("  %-8s replaced by an override\n", "");
		if (v->sha256) {
			printf("  %-8s sha256 %s", "verify:", v->sha256);
			explain(ex, &v->sha256_origin);
			putchar('\n');
		}
		if (v->sha512) {
			printf("  %-8s sha512 %s", "verify:", v->sha512);
			explain(ex, &v->sha512_origin);
			putchar('\n');
		}
		if (v->sha1) {
			printf("  %-8s sha1 %s (the Update Catalog's file name)", "verify:", v->sha1);
			explain(ex, &v->sha1_origin);
			putchar('\n');
		}
		if (v->source)
			printf("  %-8s published at: %s\n", "", v->source);
		print_reqs(v, ex);
		if (v->needs_pin) {
			pins++;
			printf("  %-8s NEEDS PIN: %s\n", "verify:", v->needs_pin);
			printf("  %-8s (pin it once with 'winbuild lock --accept-new', then review the lock)\n", "");
		}
		print_authenticode(plan_find_component(p, a->component), ex);
		printf("  %-8s ", a->action == PLAN_UNPACK ? "unpack:" :
		       a->action == PLAN_INSTALL ? "install:" : "payload:");
		switch (a->action) {
		case PLAN_UNPACK:
			printf("into %s (strip %d", a->dest_win, a->strip);
			for (size_t k = 0; k < a->include.nr; k++)
				printf("%s%s", k ? " " : ", include ", a->include.v[k]);
			printf(")");
			break;
		case PLAN_INSTALL:
			printf("to %s", a->dest_win);
			break;
		case PLAN_PAYLOAD:
			printf("to %s (%s", a->dest_win, a->payload_type);
			for (size_t k = 0; k < a->payload_props.nr; k++)
				printf(" %s", a->payload_props.v[k]);
			printf(")");
			break;
		}
		explain(ex, &a->dest_origin);
		putchar('\n');
	}
	/* issue 42: the footer names every pin a first build needs, images
	 * too, before anything is fetched (fetch refuses them all at once:
	 * pins_missing() in cmd/pipeline.c) */
	printf("\n%zu artifact%s from %zu component%s", p->nartifacts,
	       p->nartifacts == 1 ? "" : "s", p->ncomponents, p->ncomponents == 1 ? "" : "s");
	if (p->nimages)
		printf(", %zu container image%s", p->nimages, p->nimages == 1 ? "" : "s");
	for (size_t i = 0; i < p->nimages; i++)
		pins += !p->images[i].digest;
	if (pins) {
		size_t k = 0;

		printf("; %zu need%s a pin (winbuild lock --accept-new):", pins,
		       pins == 1 ? "s" : "");
		for (size_t i = 0; i < p->nartifacts; i++)
			if (p->artifacts[i].verify.needs_pin)
				printf("%s %s", k++ ? "," : "", p->artifacts[i].name);
		for (size_t i = 0; i < p->nimages; i++)
			if (!p->images[i].digest)
				printf("%s image %s", k++ ? "," : "", p->images[i].key);
	}
	if (p->iso_missing)
		printf("; the ISO builders need windows.iso_sha256");
	putchar('\n');
	if (ex) {
		printf("\nresolved values:\n");
		for (size_t i = 0; i < p->nvalues; i++) {
			char where[512];
			origin_str(&p->values[i].origin, where, sizeof(where));
			printf("  %s = %s    <- %s\n", p->values[i].key, p->values[i].value, where);
		}
	}
}

/* URLs: each as every record keeps it (json_url: no secret) */
static json_t *json_urls(const struct wb_strlist *l)
{
	json_t *a = json_array();

	for (size_t i = 0; i < l->nr; i++)
		json_array_append_new(a, json_url(l->v[i]));
	return a;
}

static json_t *json_strlist(const struct wb_strlist *l)
{
	json_t *a = json_array();

	for (size_t i = 0; i < l->nr; i++)
		json_array_append_new(a, json_string(l->v[i]));
	return a;
}

static json_t *json_str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *json_origin(const struct wb_origin *o)
{
	char where[512];

	origin_str(o, where, sizeof(where));
	return json_string(where);
}

/* windows.updates in install order (docs/json.md) */
static json_t *updates_json(const struct plan *p)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < p->nupdates; i++) {
		const struct plan_update *u = &p->updates[i];

		json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:b, s:b, s:o, s:o}",
			"kb", u->kb, "artifact", u->artifact, "destination", u->dest_win,
			"checkpoint", u->checkpoint, "must_apply", u->must_apply,
			"expect_build", json_str_or_null(u->expect_build),
			"origin", json_origin(&u->origin)));
	}
	return arr;
}

/* Per method of the table: a checksum method's URL list ("sha256_urls"),
 * else its first requirement ("minisign": {urls, keys}, or null) and the
 * further ones ("minisign_also", each with its origin). */
static void json_reqs(const struct trust_spec *v, json_t *vj)
{
	for (size_t t = 0; trust_methods[t]; t++) {
		const struct trust_method *m = trust_methods[t];
		json_t *first = NULL, *also = json_array();
		char key[128];

		for (size_t i = 0; i < v->nreqs; i++) {
			const struct trust_req *q = &v->reqs[i];
			json_t *qj;

			if (q->method != m)
				continue;
			if (!m->url_key) {
				first = first ? first : json_urls(&q->urls);
				continue;
			}
			qj = json_object();
			json_object_set_new(qj, "urls", json_urls(&q->urls));
			for (size_t k = 1; k < trust_method_naux(m); k++)
				json_object_set_new(qj, trust_method_aux(m, k).param,
						    json_urls(trust_req_urls(q, k)));
			if (m->req_json)
				m->req_json(q, qj);
			if (!first) {
				first = qj;
				continue;
			}
			json_object_set_new(qj, "origin", json_origin(&q->origin));
			json_array_append_new(also, qj);
		}
		if (!m->url_key) {
			snprintf(key, sizeof(key), "%ss", m->name);
			json_object_set_new(vj, key, first ? first : json_array());
			json_decref(also);
			continue;
		}
		json_object_set_new(vj, m->name, first ? first : json_null());
		/* further requirements, each met by its own signature */
		snprintf(key, sizeof(key), "%s_also", m->name);
		json_object_set_new(vj, key, also);
	}
}

static json_t *artifact_json(const struct plan_artifact *a,
			     const struct plan_component *c)
{
	const struct trust_spec *v = &a->verify;
	json_t *j = json_object(), *vj = json_object(), *oj = json_object();

	json_object_set_new(j, "name", json_string(a->name));
	json_object_set_new(j, "component", json_string(a->component));
	json_object_set_new(j, "version", json_string(a->version));
	json_object_set_new(j, "url", json_url(a->upstream_url));
	json_object_set_new(j, "filename", json_string(a->filename));
	json_object_set_new(j, "urls", json_urls(&a->urls));
	json_object_set_new(j, "replaced", json_boolean(a->replaced));

	json_object_set_new(vj, "sha256", json_str_or_null(v->sha256));
	json_object_set_new(vj, "sha512", json_str_or_null(v->sha512));
	if (v->sha1)
		json_object_set_new(vj, "sha1", json_string(v->sha1));
	json_object_set_new(vj, "source", json_str_or_null(v->source));
	json_reqs(v, vj);
	json_object_set_new(vj, "needs_pin", json_str_or_null(v->needs_pin));
	json_object_set_new(j, "verify", vj);

	json_object_set_new(j, "action", json_string(plan_action_name(a->action)));
	json_object_set_new(j, "destination", json_string(a->dest_win));
	json_object_set_new(j, "tree_path", json_string(a->dest_tree));
	if (a->action == PLAN_UNPACK) {
		json_t *uj = json_object(), *lj = json_object();
		json_object_set_new(uj, "strip", json_integer(a->strip));
		json_object_set_new(uj, "include", json_strlist(&a->include));
		json_object_set_new(uj, "format", json_string(a->format));
		json_object_set_new(lj, "max_bytes", json_integer((json_int_t)(a->limits.max_bytes ? a->limits.max_bytes : EXTRACT_DEFAULT_MAX_BYTES)));
		json_object_set_new(lj, "max_entries", json_integer((json_int_t)(a->limits.max_entries ? a->limits.max_entries : EXTRACT_DEFAULT_MAX_ENTRIES)));
		json_object_set_new(lj, "max_ratio", json_integer((json_int_t)(a->limits.max_ratio ? a->limits.max_ratio : EXTRACT_DEFAULT_MAX_RATIO)));
		json_object_set_new(uj, "limits", lj);
		json_object_set_new(j, "unpack", uj);
	}
	if (a->action == PLAN_PAYLOAD) {
		json_t *pj = json_object(), *props = json_object();
		json_object_set_new(pj, "type", json_string(a->payload_type));
		for (size_t k = 0; k < a->payload_props.nr; k++) {
			const char *kv = a->payload_props.v[k], *eq = strchr(kv, '=');
			char *key = xstrndup(kv, (size_t)(eq - kv));
			json_object_set_new(props, key, json_string(eq + 1));
			free(key);
		}
		json_object_set_new(pj, "properties", props);
		json_object_set_new(j, "payload", pj);
	}
	if (c && c->authenticode.set) {
		const struct plan_authenticode *au = &c->authenticode;
		json_t *aj = json_object();

		json_object_set_new(aj, "require", json_boolean(au->require));
		json_object_set_new(aj, "roots", json_string(au->sets[0].roots));
		json_object_set_new(aj, "publishers", json_strlist(&au->sets[0].publishers));
		if (au->nsets > 1) {
			/* further trust sets, each of which must hold too */
			json_t *also = json_array();
			for (size_t i = 1; i < au->nsets; i++) {
				json_t *q = json_object();
				json_object_set_new(q, "roots", json_string(au->sets[i].roots));
				json_object_set_new(q, "publishers",
						    json_strlist(&au->sets[i].publishers));
				json_array_append_new(also, q);
			}
			json_object_set_new(aj, "also", also);
		}
		json_object_set_new(j, "authenticode", aj);
	}
	json_object_set_new(oj, "url", json_origin(&a->url_origin));
	json_object_set_new(oj, "verify", json_origin(&v->origin));
	json_object_set_new(oj, "destination", json_origin(&a->dest_origin));
	json_object_set_new(j, "origins", oj);
	return j;
}


/* images.<key>.cosign for plan --json: null when no signature is required */
static json_t *image_cosign_json(const struct plan_image_cosign *c)
{
	char where[512];

	if (!c->identity && !c->key)
		return json_null();
	wb_origin_format(&c->default_origin, where, sizeof(where));
	return json_pack("{s:o, s:o, s:o, s:o, s:b, s:o}",
			 "identity", json_str_or_null(c->identity),
			 "issuer", json_str_or_null(c->issuer),
			 "key", json_str_or_null(c->key),
			 "trusted_root", json_str_or_null(c->trusted_root),
			 "default", c->defaulted,
			 "default_from", c->defaulted ? json_string(where) : json_null());
}

static int print_json(const struct plan *p)
{
	json_t *root = json_object(), *img = json_object(), *pol = json_object();
	json_t *mirrors = json_array(), *comps = json_array(), *arts = json_array();
	json_t *values = json_array();
	int ret;

	json_object_set_new(root, "schema", json_integer(PLAN_JSON_SCHEMA));
	json_object_set_new(img, "name", json_string(p->name));
	json_object_set_new(img, "windows_version", json_string(p->windows_version));
	json_object_set_new(img, "windows_edition", json_string(p->windows_edition));
	json_object_set_new(img, "windows_desktop_experience", json_boolean(p->windows_desktop));
	json_object_set_new(img, "windows_locale", json_string(p->windows_locale));
	json_object_set_new(img, "windows_product_key", json_string(p->windows_product_key));
	{
		json_t *iso = json_object();
		json_object_set_new(iso, "sha256", json_str_or_null(p->windows_iso_sha256));
		json_object_set_new(iso, "verified", json_boolean(!p->iso_unverified));
		json_object_set_new(iso, "missing", json_boolean(p->iso_missing != 0));
		json_object_set_new(iso, "origin", p->windows_iso_origin.file ?
				    json_origin(&p->windows_iso_origin) : json_null());
		json_object_set_new(img, "windows_iso", iso);
	}
	json_object_set_new(img, "recipe", json_string(p->recipe_path));
	json_object_set_new(img, "overrides", json_strlist(&p->override_files));
	json_object_set_new(img, "cloudbase_init_provider", json_string(p->cloudbase_provider));
	json_object_set_new(img, "service_manager", json_string(p->service_manager));
	json_object_set_new(img, "pause_image", json_string(p->pause_image));
	json_object_set_new(img, "cni", json_string(p->cni));
	json_object_set_new(img, "windows_features", json_strlist(&p->windows_features));
	json_object_set_new(img, "builders", json_strlist(&p->builders));
	json_object_set_new(img, "packer", json_pack("{s:s, s:b}", "version", p->packer_version,
						     "required_plugins", p->packer_plugins));
	json_object_set_new(root, "image", img);

	json_object_set_new(pol, "require", json_string(p->policy.require_signature ? "signature" : "digest"));
	json_object_set_new(pol, "allow_http", json_boolean(p->policy.allow_http));
	json_object_set_new(pol, "checksum_urls", json_string(p->policy.forbid_checksum_urls ? "forbid" : "allow"));
	json_object_set_new(pol, "unverified_iso", json_string(p->policy.allow_unverified_iso ? "allow" : "forbid"));
	json_object_set_new(pol, "locked_urls", json_string(p->policy.refuse_locked_urls ? "refuse" : "report"));
	json_object_set_new(pol, "tlog_threshold", json_integer(p->policy.tlog_threshold ? p->policy.tlog_threshold : 1));
	json_object_set_new(root, "policy", pol);

	for (size_t i = 0; i < p->nmirrors; i++) {
		json_t *m = json_object();
		json_object_set_new(m, "from", json_string(p->mirrors[i].from));
		json_object_set_new(m, "to", json_string(p->mirrors[i].to));
		json_object_set_new(m, "origin", json_origin(&p->mirrors[i].origin));
		json_array_append_new(mirrors, m);
	}
	json_object_set_new(root, "mirrors", mirrors);
	json_object_set_new(root, "mirror_only", json_boolean(p->mirror_only));

	for (size_t i = 0; i < p->ncomponents; i++) {
		const struct plan_component *c = &p->components[i];
		json_t *cj = json_object(), *fw = json_array(), *reg;
		json_object_set_new(cj, "name", json_string(c->name));
		json_object_set_new(cj, "version", json_string(c->version));
		json_object_set_new(cj, "file", json_string(c->file));
		json_object_set_new(cj, "purl", json_str_or_null(c->purl));
		json_object_set_new(cj, "path", json_strlist(&c->path));
		json_object_set_new(cj, "directories", json_strlist(&c->directories));
		json_object_set_new(cj, "defender_exclusions", json_strlist(&c->defender_exclusions));
		for (size_t k = 0; k < c->nfirewall; k++) {
			json_t *f = json_object();
			json_object_set_new(f, "name", json_string(c->firewall[k].name));
			json_object_set_new(f, "port", json_integer(c->firewall[k].port));
			json_object_set_new(f, "protocol", json_string(c->firewall[k].protocol));
			json_array_append_new(fw, f);
		}
		json_object_set_new(cj, "firewall", fw);
		json_object_set_new(cj, "admin_directories", json_strlist(&c->admin_directories));
		json_object_set_new(cj, "event_manifests", json_strlist(&c->event_manifests));
		reg = json_array();
		for (size_t k = 0; k < c->nregistry; k++) {
			json_t *g = json_object();

			json_object_set_new(g, "key", json_string(c->registry[k].key));
			json_object_set_new(g, "name", json_string(c->registry[k].name));
			json_object_set_new(g, "type", json_string(c->registry[k].type));
			json_object_set_new(g, "value", json_string(c->registry[k].value));
			json_object_set_new(g, "take_ownership", c->registry[k].take_ownership ?
					    json_string(c->registry[k].take_ownership) : json_null());
			json_array_append_new(reg, g);
		}
		json_object_set_new(cj, "registry", reg);
		json_array_append_new(comps, cj);
	}
	json_object_set_new(root, "components", comps);
	/* the services 05-services.ps1 registers, in that order */
	{
		json_t *svcs = json_array();

		for (size_t i = 0; i < p->nservices; i++) {
			const struct plan_service *s = &p->services[i];
			json_t *sj = json_object();

			json_object_set_new(sj, "name", json_string(s->name));
			json_object_set_new(sj, "component", json_string(s->component));
			json_object_set_new(sj, "manager", json_string(s->manager));
			json_object_set_new(sj, "binary", json_string(s->binary));
			json_object_set_new(sj, "args", json_strlist(&s->args));
			json_object_set_new(sj, "sc_args", json_strlist(&s->sc_args));
			json_object_set_new(sj, "depends_on", json_strlist(&s->depends_on));
			json_object_set_new(sj, "kubeadm_flags", json_boolean(s->kubeadm_flags));
			json_object_set_new(sj, "origin", json_origin(&s->origin));
			json_array_append_new(svcs, sj);
		}
		json_object_set_new(root, "services", svcs);
	}
	if (p->nimages) {
		json_t *ims = json_array();

		for (size_t i = 0; i < p->nimages; i++) {
			const struct plan_image *im = &p->images[i];
			json_t *ij = json_object();

			json_object_set_new(ij, "key", json_string(im->key));
			json_object_set_new(ij, "name", json_string(im->name));
			json_object_set_new(ij, "tag", json_str_or_null(im->tag));
			json_object_set_new(ij, "digest", json_str_or_null(im->digest));
			json_object_set_new(ij, "needs_pin", json_str_or_null(im->needs_pin));
			json_object_set_new(ij, "allow_foreign_layers",
					    json_boolean(im->allow_foreign_layers));
			json_object_set_new(ij, "cosign", image_cosign_json(&im->cosign));
			json_object_set_new(ij, "origin", json_origin(&im->origin));
			json_array_append_new(ims, ij);
		}
		json_object_set_new(root, "images", ims);
	}
	if (p->nupdates)
		json_object_set_new(root, "updates", updates_json(p));
	for (size_t i = 0; i < p->nartifacts; i++)
		json_array_append_new(arts, artifact_json(&p->artifacts[i],
				      plan_find_component(p, p->artifacts[i].component)));
	json_object_set_new(root, "artifacts", arts);
	for (size_t i = 0; i < p->nvalues; i++) {
		json_t *v = json_object();
		json_object_set_new(v, "key", json_string(p->values[i].key));
		json_object_set_new(v, "value", json_string(p->values[i].value));
		json_object_set_new(v, "origin", json_origin(&p->values[i].origin));
		json_array_append_new(values, v);
	}
	json_object_set_new(root, "values", values);
	{
		json_t *warnings = json_array();

		for (size_t i = 0; i < p->nwarnings; i++) {
			json_t *w = json_object();
			json_object_set_new(w, "message", json_string(p->warnings[i].msg));
			json_object_set_new(w, "origin", json_origin(&p->warnings[i].origin));
			json_array_append_new(warnings, w);
		}
		json_object_set_new(root, "warnings", warnings);
	}
	ret = json_dumpf(root, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	putchar('\n');
	json_decref(root);
	return ret ? WB_EIO : WB_OK;
}

int cmd_plan(int argc, char **argv, struct wb_run *run)
{
	struct plan plan;
	int ret;

	static const struct cmd_optset set = {
		OPTS_RECIPE | OPT_EXPLAIN | OPT_JSON, NULL, 0, PLAN_USAGE
	};

	if ((ret = cmd_parse_options(argc, argv, &set, run)))
		return ret;
	if (run->positional.nr != 1)
		return cmd_usage(PLAN_USAGE);
	if ((ret = cmd_load_plan(run, run->positional.v[0], &plan)))
		return ret;
	if (run->json) {
		ret = print_json(&plan);
		run->json_done = 1;   /* its own document: docs/plan-json.md */
	}
	else
		print_text(&plan, run->explain);
	plan_release(&plan);
	return ret;
}
