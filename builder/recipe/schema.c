/* Keyword tables for every map in a recipe, and the checker.
 *
 * @where every key a recipe may hold (keyword tables) and the type checker --
 *   every schema error of a file at once, at most `SCHEMA_MAX_ERRORS`
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/text.h"
#include "recipe/plan.h"
#include "recipe/schema.h"
#include "recipe/winobj.h"

#define END { NULL, 0, NULL, NULL, 0 }

static const struct schema_key schema_key_map[] = {
	{ "key", S_STR, NULL, NULL, S_TRUST(T_SET) },
	{ "key_file", S_STR, NULL, NULL, S_TRUST(T_SET) },
	{ "allow_legacy", S_BOOL, NULL, NULL, S_TRUST(T_SET) },
	{ "file_check", S_BOOL, NULL, NULL, S_TRUST(T_SET) },
	END
};

static const struct schema_key schema_minisign[] = {
	{ "url", S_STR, NULL, NULL, S_TRUST(T_SET) },
	{ "keys", S_KEYLIST, schema_key_map, NULL, S_REQUIRED | S_TRUST(T_SET) },
	END
};

/* verify.<method>.since: the first component version the requirement can
 * be met by (versions.c, versions_since_met) */
static const struct schema_key schema_since[] = {
	{ "version", S_STR, NULL, NULL, S_REQUIRED | S_TRUST(T_SET) },
	{ "missing", S_STR, NULL, NULL, S_REQUIRED | S_TRUST(T_SET) },
	{ "instead", S_STR, NULL, NULL, S_TRUST(T_SET) },
	END
};

static const struct schema_key schema_sigstore[] = {
	{ "bundle", S_STR, NULL, NULL, S_TRUST(T_SET) },
	{ "trusted_root", S_STR, NULL, NULL, S_TRUST(T_SET) },
	{ "identity", S_STR, NULL, NULL, S_TRUST(T_SET) },
	{ "issuer", S_STR, NULL, NULL, S_TRUST(T_SET) },
	{ "key", S_STR, NULL, NULL, S_TRUST(T_SET) },
	{ "since", S_MAP, schema_since, NULL, S_TRUST(T_SET) },
	END
};

static const struct schema_key schema_attestation[] = {
	{ "url", S_STR, NULL, NULL, S_TRUST(T_SET) },
	{ "trusted_root", S_STR, NULL, NULL, S_TRUST(T_SET) },
	{ "identity", S_STR, NULL, NULL, S_TRUST(T_SET) },
	{ "issuer", S_STR, NULL, NULL, S_TRUST(T_SET) },
	{ "since", S_MAP, schema_since, NULL, S_TRUST(T_SET) },
	END
};

static const struct schema_key schema_cosign[] = {
	{ "signature", S_STR, NULL, NULL, S_TRUST(T_SET) },
	{ "certificate", S_STR, NULL, NULL, S_TRUST(T_SET) },
	{ "trusted_root", S_STR, NULL, NULL, S_TRUST(T_SET) },
	{ "identity", S_STR, NULL, NULL, S_TRUST(T_SET) },
	{ "issuer", S_STR, NULL, NULL, S_TRUST(T_SET) },
	{ "rekor", S_STR, NULL, NULL, S_TRUST(T_FREE) },
	{ "tlog_entry", S_STR, NULL, NULL, S_TRUST(T_SET) },
	{ "tlog", S_STR, NULL, NULL, S_TRUST(T_SET) },
	/* a cosign v3 bundle: once set, never unset, and it excludes
	 * `tlog: none` (trust/m_cosign.c) */
	{ "bundle", S_STR, NULL, NULL, S_TRUST(T_SET) },
	{ "since", S_MAP, schema_since, NULL, S_TRUST(T_SET) },
	END
};

static const struct schema_key schema_verify[] = {
	{ "sha256", S_STR, NULL, NULL, S_TRUST(T_SET) },
	{ "sha512", S_STR, NULL, NULL, S_TRUST(T_SET) },
	{ "source", S_STR, NULL, NULL, S_TRUST(T_SET) },
	{ "sha256_url", S_STR, NULL, NULL, S_TRUST(T_SET) },
	{ "sha512_url", S_STR, NULL, NULL, S_TRUST(T_SET) },
	{ "minisign", S_MAP, schema_minisign, NULL, S_TRUST(T_SET) },
	{ "sigstore", S_MAP, schema_sigstore, NULL, S_TRUST(T_SET) },
	{ "attestation", S_MAP, schema_attestation, NULL, S_TRUST(T_SET) },
	{ "cosign", S_MAP, schema_cosign, NULL, S_TRUST(T_SET) },
	{ "needs_pin", S_STR, NULL, NULL, S_TRUST(T_SET) },
	END
};

static const struct schema_key schema_limits[] = {
	{ "max_bytes", S_INT, NULL, NULL, 0 },
	{ "max_entries", S_INT, NULL, NULL, 0 },
	{ "max_ratio", S_INT, NULL, NULL, 0 },
	{ "max_seconds", S_INT, NULL, NULL, 0 },
	END
};

static const struct schema_key schema_unpack[] = {
	{ "into", S_STR, NULL, NULL, S_REQUIRED | S_WIN(WINOBJ_DEST) },
	{ "strip", S_INT, NULL, NULL, 0 },
	{ "include", S_STRLIST, NULL, NULL, 0 },
	{ "format", S_ENUM, NULL, "auto|tar.gz|tgz|zip|iso", 0 },
	{ "limits", S_MAP, schema_limits, NULL, 0 },
	END
};

static const struct schema_key schema_install[] = {
	{ "to", S_STR, NULL, NULL, S_REQUIRED | S_WIN(WINOBJ_DEST) },
	END
};

static const struct schema_key schema_payload[] = {
	{ "to", S_STR, NULL, NULL, S_REQUIRED | S_WIN(WINOBJ_DEST) },
	{ "type", S_ENUM, NULL, "msi|exe", 0 },
	{ "properties", S_STRMAP, NULL, NULL, 0 },
	END
};

static const struct schema_key schema_artifact[] = {
	{ "url", S_STR, NULL, NULL, S_REQUIRED },
	{ "verify", S_MAP, schema_verify, NULL, S_REQUIRED | S_TRUST(T_SET) },
	{ "unpack", S_MAP, schema_unpack, NULL, 0 },
	{ "install", S_MAP, schema_install, NULL, 0 },
	{ "payload", S_MAP, schema_payload, NULL, 0 },
	/* which credentials entry: unset, the origin's own entry would be
	 * used instead of the one the component named */
	{ "credential", S_STR, NULL, NULL, S_TRUST(T_SET) },
	END
};

static const struct schema_key schema_firewall[] = {
	{ "name", S_STR, NULL, NULL, S_REQUIRED },
	{ "port", S_INT, NULL, NULL, S_REQUIRED | S_WIN(WINOBJ_PORT) },
	{ "protocol", S_ENUM, NULL, "TCP|UDP", 0 },
	END
};

static const struct schema_key schema_registry[] = {
	{ "key", S_STR, NULL, NULL, S_REQUIRED | S_WIN(WINOBJ_REGKEY) },
	{ "name", S_STR, NULL, NULL, S_REQUIRED },
	{ "type", S_ENUM, NULL, "string|expand_string|dword|binary", S_REQUIRED },
	{ "value", S_STR, NULL, NULL, S_REQUIRED },
	{ "take_ownership", S_STR, NULL, NULL, S_WIN(WINOBJ_REGOWNER) },
	END
};

static const struct schema_key schema_service[] = {
	{ "name", S_STR, NULL, NULL, S_REQUIRED | S_WIN(WINOBJ_SERVICE) },
	{ "binary", S_STR, NULL, NULL, S_REQUIRED | S_WIN(WINOBJ_STAGED) },
	{ "args", S_STRLIST, NULL, NULL, 0 },
	{ "sc_args", S_STRLIST, NULL, NULL, 0 },
	{ "depends_on", S_STRLIST, NULL, NULL, 0 },
	{ "manager", S_ENUM, NULL, "node|sc|nssm", 0 },
	{ "log_runner", S_STR, NULL, NULL, S_WIN(WINOBJ_STAGED) },
	{ "log_file", S_STR, NULL, NULL, S_WIN(WINOBJ_DEST) },
	{ "log_runner_args", S_STRLIST, NULL, NULL, 0 },
	{ "kubeadm_flags", S_BOOL, NULL, NULL, 0 },
	{ "wrapper", S_STR, NULL, NULL, S_WIN(WINOBJ_DEST) },
	END
};

static const struct schema_key schema_generate[] = {
	{ "template", S_STR, NULL, NULL, S_REQUIRED | S_WIN(WINOBJ_TEMPLATE) },
	{ "to", S_STR, NULL, NULL, S_REQUIRED | S_WIN(WINOBJ_DEST) },
	{ "vars", S_STRMAP, NULL, NULL, 0 },
	END
};

const struct schema_key schema_authenticode[] = {
	{ "require", S_BOOL, NULL, NULL, S_TRUST(T_LAYERS) },
	{ "roots", S_STR, NULL, NULL, S_TRUST(T_LAYERS) },
	{ "publishers", S_STRLIST, NULL, NULL, S_TRUST(T_LAYERS) },
	{ "signatures", S_ENUM, NULL, "all|one", S_TRUST(T_LAYERS) },
	END
};

/* site_signing: the site's own Authenticode signature on staged files
 * (stage/sitesign.c, docs/authenticode.md "Site signing") */
static const struct schema_key schema_site_signing[] = {
	{ "components", S_STRLIST, NULL, NULL, S_REQUIRED | S_TRUST(T_SET) },
	{ "files", S_STRLIST, NULL, NULL, S_TRUST(T_SET) },
	{ "roots", S_STR, NULL, NULL, S_REQUIRED | S_TRUST(T_SET) },
	{ "publishers", S_STRLIST, NULL, NULL, S_TRUST(T_SET) },
	END
};

static const struct schema_key schema_cni[] = {
	{ "bin_dir", S_STR, NULL, NULL, S_REQUIRED | S_WIN(WINOBJ_DIR_NEW) },
	{ "conf_dir", S_STR, NULL, NULL, S_REQUIRED | S_WIN(WINOBJ_DIR_NEW) },
	END
};

const struct schema_key schema_component[] = {
	{ "kind", S_ENUM, NULL, "component", S_REQUIRED },
	{ "name", S_STR, NULL, NULL, S_REQUIRED },
	{ "description", S_STR, NULL, NULL, 0 },
	{ "homepage", S_STR, NULL, NULL, 0 },
	{ "license", S_STR, NULL, NULL, 0 },
	{ "purl", S_STR, NULL, NULL, 0 },
	{ "version", S_STR, NULL, NULL, S_REQUIRED },
	{ "vars", S_STRMAP, NULL, NULL, 0 },
	{ "artifacts", S_MAPOF, schema_artifact, NULL, S_REQUIRED },
	/* S_WIN(kind): becomes a Windows object, checked by recipe/winobj.c */
	{ "path", S_STRLIST, NULL, NULL, S_WIN(WINOBJ_DIR_ADD) },
	{ "directories", S_STRLIST, NULL, NULL, S_WIN(WINOBJ_DIR_NEW) },
	{ "defender_exclusions", S_STRLIST, NULL, NULL, S_WIN(WINOBJ_DIR_ADD) },
	{ "admin_directories", S_STRLIST, NULL, NULL, S_WIN(WINOBJ_DIR_NEW) },
	{ "event_manifests", S_STRLIST, NULL, NULL, S_WIN(WINOBJ_STAGED) },
	{ "firewall", S_LISTOF, schema_firewall, NULL, 0 },
	{ "registry", S_LISTOF, schema_registry, NULL, 0 },
	{ "images", S_MAPOF, schema_container_image, NULL, 0 },
	{ "services", S_LISTOF, schema_service, NULL, 0 },
	{ "generate", S_LISTOF, schema_generate, NULL, 0 },
	{ "authenticode", S_MAP, schema_authenticode, NULL, S_TRUST(T_LAYERS) },
	{ "tlog_source", S_ENUM, NULL, "lookup|exported", 0 },
	{ "cni", S_MAP, schema_cni, NULL, 0 },
	/* set by the image recipe, beside the component's own keys */
	{ "file", S_STR, NULL, NULL, 0 },
	{ "enabled", S_BOOL, NULL, NULL, 0 },
	END
};

/* windows.updates: one Windows update (recipe/updates.c, docs/updates.md) */
static const struct schema_key schema_update[] = {
	{ "kb", S_STR, NULL, NULL, S_REQUIRED },
	{ "url", S_STR, NULL, NULL, 0 },
	{ "urls", S_STRLIST, NULL, NULL, 0 },
	{ "sha1", S_STR, NULL, NULL, S_REQUIRED },
	{ "sha256", S_STR, NULL, NULL, 0 },
	{ "needs_pin", S_STR, NULL, NULL, 0 },
	{ "authenticode", S_MAP, schema_authenticode, NULL, S_REQUIRED },
	{ "checkpoint", S_BOOL, NULL, NULL, 0 },
	{ "must_apply", S_BOOL, NULL, NULL, 0 },
	{ "expect_build", S_STR, NULL, NULL, 0 },
	END
};

static const struct schema_key schema_windows[] = {
	{ "version", S_ENUM, NULL, NULL, S_REQUIRED | S_PLATFORM(PLATFORM_SET_VERSIONS) },
	{ "edition", S_ENUM, NULL, NULL, S_PLATFORM(PLATFORM_SET_EDITIONS) },
	{ "desktop_experience", S_BOOL, NULL, NULL, 0 },
	{ "locale", S_STR, NULL, NULL, 0 },
	{ "iso_sha256", S_STR, NULL, NULL, 0 },
	{ "product_key", S_ENUM, NULL, "gvlk|none|env", 0 },
	{ "updates", S_LISTOF, schema_update, NULL, 0 },
	END
};

static const struct schema_key schema_cloudbase[] = {
	{ "provider", S_ENUM, NULL, NULL, S_PLATFORM(PLATFORM_SET_PROVIDERS) },
	END
};

static const struct schema_key schema_node[] = {
	{ "service_manager", S_ENUM, NULL, "sc|nssm", 0 },
	{ "windows_features", S_STRLIST, NULL, NULL, 0 },
	{ "pause_image", S_STR, NULL, NULL, 0 },
	{ "cni", S_ENUM, NULL, "none|nat", 0 },
	END
};

static const struct schema_key schema_packer[] = {
	{ "builders", S_STRLIST, NULL, NULL, 0 },
	{ "payload", S_ENUM, NULL, "upload|pull", 0 },
	{ "payload_url", S_STR, NULL, NULL, 0 },
	/* the Packer the template is for, MAJOR.MINOR.PATCH (recipe/builders.c,
	 * builders_packer_version; docs/packer.md "Packer versions") */
	{ "version", S_STR, NULL, NULL, 0 },
	END
};

const struct schema_key schema_policy[] = {
	{ "require", S_ENUM, NULL, "digest|signature", S_TRUST(T_LAYERS) },
	{ "allow_http", S_BOOL, NULL, NULL, S_TRUST(T_LAYERS) },
	{ "checksum_urls", S_ENUM, NULL, "allow|forbid", S_TRUST(T_LAYERS) },
	{ "unverified_iso", S_ENUM, NULL, "allow|forbid", S_TRUST(T_LAYERS) },
	/* --locked and an artifact's URL that moved: the lock binds bytes by
	 * digest, so the move is reported (default) or refused */
	{ "locked_urls", S_ENUM, NULL, "report|refuse", S_TRUST(T_LAYERS) },
	/* transparency-log entries in this many distinct logs for every
	 * Sigstore check (bundles, attestations, cosign, image signatures);
	 * each layer's holds on its own, so the highest wins */
	{ "tlog_threshold", S_INT, NULL, NULL, S_TRUST(T_LAYERS) },
	END
};

static const struct schema_key schema_mirror[] = {
	{ "from", S_STR, NULL, NULL, S_REQUIRED | S_TRUST(T_SET) },
	{ "to", S_STR, NULL, NULL, S_REQUIRED | S_TRUST(T_SET) },
	END
};

const struct schema_key schema_signatures[] = {
	{ "url", S_STR, NULL, NULL, S_TRUST(T_LAYERS) },
	{ "keys", S_KEYLIST, schema_key_map, NULL, S_REQUIRED | S_TRUST(T_LAYERS) },
	END
};

static const struct schema_key schema_replace[] = {
	{ "url", S_STR, NULL, NULL, S_TRUST(T_SET) },
	{ "verify", S_MAP, schema_verify, NULL, S_TRUST(T_SET) },
	{ "credential", S_STR, NULL, NULL, S_TRUST(T_SET) },
	END
};

/* images.<key>.cosign: keyless (identity, issuer) or a key, under a
 * Sigstore trusted root (recipe/images.c) */
static const struct schema_key schema_image_cosign[] = {
	{ "identity", S_STR, NULL, NULL, S_TRUST(T_SET) },
	{ "issuer", S_STR, NULL, NULL, S_TRUST(T_SET) },
	{ "key", S_STR, NULL, NULL, S_TRUST(T_SET) },
	{ "trusted_root", S_STR, NULL, NULL, S_TRUST(T_SET) },
	END
};

/* images.<key>: a container image pre-pulled (recipe/images.c), in image
 * recipes and component files */
const struct schema_key schema_container_image[] = {
	/* required of an enabled entry (images.c): an override may drop an
	 * image the recipe it is used with does not have */
	{ "name", S_STR, NULL, NULL, S_TRUST(T_SET) },
	{ "tag", S_STR, NULL, NULL, S_TRUST(T_SET) },
	{ "digest", S_STR, NULL, NULL, S_TRUST(T_SET) },
	{ "needs_pin", S_STR, NULL, NULL, S_TRUST(T_SET) },
	{ "allow_foreign_layers", S_BOOL, NULL, NULL, S_TRUST(T_OFF) },
	/* where the bytes come from: the pin and the signature still decide */
	{ "layout", S_STR, NULL, NULL, S_TRUST(T_SET) },
	{ "cosign", S_MAP, schema_image_cosign, NULL, S_TRUST(T_SET) },
	{ "enabled", S_BOOL, NULL, NULL, S_TRUST(T_FREE) },
	END
};

const struct schema_key schema_image[] = {
	{ "kind", S_ENUM, NULL, "image", S_REQUIRED },
	{ "name", S_STR, NULL, NULL, S_REQUIRED },
	{ "windows", S_MAP, schema_windows, NULL, S_REQUIRED },
	{ "vars", S_STRMAP, NULL, NULL, 0 },
	{ "components", S_MAPOF, schema_component, NULL, S_REQUIRED | S_PARTIAL },
	{ "cloudbase_init", S_MAP, schema_cloudbase, NULL, 0 },
	{ "node", S_MAP, schema_node, NULL, 0 },
	{ "packer", S_MAP, schema_packer, NULL, 0 },
	/* the trust sections: every key below declares S_TRUST(direction) */
	{ "policy", S_MAP, schema_policy, NULL, S_TRUST(T_LAYERS) },
	{ "authenticode", S_MAP, schema_authenticode, NULL, S_TRUST(T_LAYERS) },
	{ "site_signing", S_MAP, schema_site_signing, NULL, S_TRUST(T_SET) },
	{ "keys", S_MAPOF, schema_key_map, NULL, S_TRUST(T_LAYERS) },
	/* a later layer's list replaces the earlier one: a mirror serves only
	 * what `verify` checks anyway, and one fewer under mirror_only fetches
	 * less, never from elsewhere */
	{ "mirrors", S_LISTOF, schema_mirror, NULL, S_TRUST(T_FREE) },
	{ "mirror_only", S_BOOL, NULL, NULL, S_TRUST(T_ON) },
	{ "signatures", S_MAP, schema_signatures, NULL, S_TRUST(T_LAYERS) },
	{ "replace", S_MAPOF, schema_replace, NULL, S_TRUST(T_ENTRIES) },
	/* an image dropped is not pulled at all; what an entry pins stays */
	{ "images", S_MAPOF, schema_container_image, NULL, S_TRUST(T_FREE) },
	END
};

/* Keys only override files may hold. */
const struct schema_key schema_override_only[] = {
	{ "replace", S_MAPOF, schema_replace, NULL, 0 },
	/* {VERSION: override values}: layers.c, merge_versions */
	{ "windows_versions", S_SKIP, NULL, NULL, 0 },
	END
};

static const char *type_name(enum schema_type t)
{
	switch (t) {
	case S_STR: return "a string";
	case S_BOOL: return "true or false";
	case S_INT: return "a non-negative integer";
	case S_ENUM: return "one of";
	case S_STRLIST: return "a list of strings";
	case S_STRMAP: return "a map of strings";
	case S_MAP: case S_MAPOF: case S_SKIP: return "a map";
	case S_LISTOF: case S_KEYLIST: return "a list";
	}
	return "?";
}

static const char *node_kind(const struct rnode *n)
{
	switch (n->type) {
	case RNODE_SCALAR: return "a scalar";
	case RNODE_MAP: return "a map";
	case RNODE_LIST: return "a list";
	}
	return "?";
}

/*
 * One walk of the schema: every error is collected (up to
 * SCHEMA_MAX_ERRORS, then only counted) and the walk goes on, so a file
 * with several mistakes reports them all at once.
 */
struct walk {
	struct wb_strlist msgs;
	size_t count, shown;
};

static void __attribute__((format(printf, 3, 4)))
err_at(struct walk *w, const struct wb_origin *o, const char *fmt, ...)
{
	struct wb_err tmp = WB_ERR_INIT;
	char msg[1536];
	va_list ap;

	if (w->count++ >= SCHEMA_MAX_ERRORS)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	wb_origin_error(&tmp, o, "%s", msg);
	wb_strlist_push(&w->msgs, tmp.msg);
}

int schema_bool(const struct rnode *n)
{
	if (!n || n->type != RNODE_SCALAR)
		return -1;
	if (!strcmp(n->scalar, "true"))
		return 1;
	if (!strcmp(n->scalar, "false"))
		return 0;
	return -1;
}

static int enum_has(const char *enums, const char *v)
{
	size_t n = strlen(v);
	const char *p = enums;

	while (*p) {
		const char *bar = strchr(p, '|');
		size_t len = bar ? (size_t)(bar - p) : strlen(p);
		if (len == n && !strncmp(p, v, n))
			return 1;
		if (!bar)
			break;
		p = bar + 1;
	}
	return 0;
}

/* K's choices as "a|b|c" (its own, or the platform table's set) */
static const char *enum_names(const struct schema_key *k, char *buf, size_t len)
{
	if (!S_PLATFORM_SET(k->flags))
		return k->enums;
	platform_set_join(S_PLATFORM_SET(k->flags), "|", buf, len);
	return buf;
}

static void walk_map(struct walk *w, const struct rnode *n,
		     const struct schema_key *table, const char *ctx, int no_required);

static void check_scalar_list(struct walk *w, const struct rnode *v, const char *path)
{
	for (size_t i = 0; i < v->nr; i++)
		if (v->items[i]->type != RNODE_SCALAR)
			err_at(w, &v->items[i]->origin,
			       "item %zu of '%s' must be a string, not %s",
			       i + 1, path, node_kind(v->items[i]));
}

static void check_scalar(struct walk *w, const struct rnode *v,
			 const struct schema_key *k, const char *path)
{
	const char *s = v->scalar;

	if (k->type == S_BOOL && schema_bool(v) < 0) {
		err_at(w, &v->origin, "'%s' must be true or false, not '%s'", path, s);
	} else if (k->type == S_INT) {
		int ok = *s && strlen(s) <= 18;

		for (const char *p = s; ok && *p; p++)
			ok = isdigit((unsigned char)*p);
		if (!ok)
			err_at(w, &v->origin, "'%s' must be a non-negative integer, not '%s'",
			       path, s);
	} else if (k->type == S_ENUM && !(S_PLATFORM_SET(k->flags) ?
					   platform_set_has(S_PLATFORM_SET(k->flags), s) :
					   enum_has(k->enums, s))) {
		char names[256];

		err_at(w, &v->origin, "'%s' must be one of %s, not '%s'", path,
		       enum_names(k, names, sizeof(names)), s);
	}
}

/* Each map of V (a map of maps, or a list of maps) against K->sub. */
static void check_children(struct walk *w, const struct rnode *v,
			   const struct schema_key *k, const char *path, int no_required)
{
	char sub[512];

	for (size_t i = 0; i < v->nr; i++) {
		const struct rnode *c = v->items[i];

		if (k->type == S_MAPOF)
			snprintf(sub, sizeof(sub), "%s.%s", path, c->key);
		else
			snprintf(sub, sizeof(sub), "%s[%zu]", path, i + 1);
		if (k->type == S_KEYLIST && c->type == RNODE_SCALAR)
			continue;
		if (c->type != RNODE_MAP)
			err_at(w, &c->origin, "'%s' must be a map, not %s", sub, node_kind(c));
		else
			walk_map(w, c, k->sub, sub, no_required);
	}
}

static void check_value(struct walk *w, const struct rnode *v,
			const struct schema_key *k, const char *path, int no_required)
{
	if (k->flags & S_PARTIAL)
		no_required = 1;
	switch (k->type) {
	case S_STR:
	case S_BOOL:
	case S_INT:
	case S_ENUM:
		if (v->type != RNODE_SCALAR) {
			char names[256];
			const char *en = k->type == S_ENUM ? enum_names(k, names, sizeof(names)) : NULL;

			err_at(w, &v->origin, "'%s' must be %s%s%s, not %s",
			       path, type_name(k->type), en ? " " : "", en ? en : "",
			       node_kind(v));
		}
		else
			check_scalar(w, v, k, path);
		return;
	case S_STRLIST:
		if (v->type != RNODE_LIST)
			err_at(w, &v->origin, "'%s' must be a list of strings, not %s",
			       path, node_kind(v));
		else
			check_scalar_list(w, v, path);
		return;
	case S_STRMAP:
		if (v->type != RNODE_MAP) {
			err_at(w, &v->origin, "'%s' must be a map of strings, not %s",
			       path, node_kind(v));
			return;
		}
		for (size_t i = 0; i < v->nr; i++)
			if (v->items[i]->type != RNODE_SCALAR)
				err_at(w, &v->items[i]->origin,
				       "'%s.%s' must be a string, not %s", path,
				       v->items[i]->key, node_kind(v->items[i]));
		return;
	case S_MAP:
		if (v->type != RNODE_MAP)
			err_at(w, &v->origin, "'%s' must be a map, not %s", path, node_kind(v));
		else
			walk_map(w, v, k->sub, path, no_required);
		return;
	case S_MAPOF:
		if (v->type != RNODE_MAP)
			err_at(w, &v->origin, "'%s' must be a map, not %s", path, node_kind(v));
		else
			check_children(w, v, k, path, no_required);
		return;
	case S_LISTOF:
	case S_KEYLIST:
		if (v->type != RNODE_LIST)
			err_at(w, &v->origin, "'%s' must be a list, not %s", path, node_kind(v));
		else
			check_children(w, v, k, path, no_required);
		return;
	case S_SKIP:
		return;
	}
}

/* "unknown key 'a.b'", with the nearest key valid at that place. */
static void unknown_key(struct walk *w, const struct rnode *c,
			const struct schema_key *table, const char *ctx, const char *path)
{
	struct text_suggest sg;

	text_suggest_init(&sg, c->key);
	for (const struct schema_key *k = table; k->name; k++)
		text_suggest_add(&sg, k->name);
	if (sg.best)
		err_at(w, &c->key_origin, "unknown key '%s' (did you mean '%s%s%s'?)", path,
		       ctx && *ctx ? ctx : "", ctx && *ctx ? "." : "", sg.best);
	else
		err_at(w, &c->key_origin, "unknown key '%s'", path);
}

static void walk_map(struct walk *w, const struct rnode *n,
		     const struct schema_key *table, const char *ctx, int no_required)
{
	char path[512];

	for (size_t i = 0; i < n->nr; i++) {
		const struct rnode *c = n->items[i];
		const struct schema_key *k;

		for (k = table; k->name; k++)
			if (!strcmp(k->name, c->key))
				break;
		if (ctx && *ctx)
			snprintf(path, sizeof(path), "%s.%s", ctx, c->key);
		else
			snprintf(path, sizeof(path), "%s", c->key);
		if (!k->name)
			unknown_key(w, c, table, ctx, path);
		else
			check_value(w, c, k, path, no_required);
	}
	if (no_required)
		return;
	for (const struct schema_key *k = table; k->name; k++) {
		if (!(k->flags & S_REQUIRED) || rnode_get(n, k->name))
			continue;
		if (ctx && *ctx)
			err_at(w, &n->origin, "missing required key '%s' in '%s'", k->name, ctx);
		else
			err_at(w, &n->origin, "missing required key '%s'", k->name);
	}
}

int schema_check(const struct rnode *n, const struct schema_key *table,
		 const char *ctx, int no_required, struct wb_err *e)
{
	struct walk w;
	struct buf b = BUF_INIT;

	memset(&w, 0, sizeof(w));
	walk_map(&w, n, table, ctx, no_required);
	if (!w.count)
		return 0;
	for (size_t i = 0; i < w.msgs.nr; i++) {
		if (b.len + strlen(w.msgs.v[i]) + 80 >= WB_ERR_MAX)
			break;
		buf_addf(&b, "%s%s", i ? "\n" : "", w.msgs.v[i]);
		w.shown++;
	}
	if (w.count > w.shown)
		buf_addf(&b, "\n%zu more error%s not shown (at most %d are reported)",
			 w.count - w.shown, w.count - w.shown == 1 ? "" : "s",
			 SCHEMA_MAX_ERRORS);
	wb_error(e, WB_EUSAGE, "%s", b.ptr);
	buf_release(&b);
	wb_strlist_release(&w.msgs);
	return -1;
}
