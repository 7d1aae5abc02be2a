/* CycloneDX 1.5 JSON SBOM of a staged output (emit/sbom.h). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "emit/sbom.h"
#include "lib/json.h"
#include "lib/buf.h"
#include "lib/fs.h"
#include "trust/digest.h"

#define SBOM_PROP_NS "winbuild:"

#ifndef WB_VERSION
#define WB_VERSION "0"
#endif

static void prop(json_t *props, const char *name, const char *value)
{
	json_t *o;

	if (!value || !*value)
		return;
	o = json_object();
	json_object_set_new(o, "name", json_sprintf(SBOM_PROP_NS "%s", name));
	json_object_set_new(o, "value", json_string(value));
	json_array_append_new(props, o);
}

static json_t *hash(const char *alg, const char *hex)
{
	json_t *o = json_object();

	json_object_set_new(o, "alg", json_string(alg));
	json_object_set_new(o, "content", json_string(hex));
	return o;
}

static void ext_ref(json_t *refs, const char *type, const char *url)
{
	json_t *o;

	if (!url || !*url)
		return;
	o = json_object();
	json_object_set_new(o, "type", json_string(type));
	json_object_set_new(o, "url", json_string(url));
	json_array_append_new(refs, o);
}

static void set_nonempty(json_t *obj, const char *key, json_t *arr)
{
	if (json_array_size(arr))
		json_object_set(obj, key, arr);
	json_decref(arr);
}

static const char *jstr(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

/* One file of the tree as a "file" component. */
static json_t *file_component(const json_t *f)
{
	json_t *c = json_object(), *hashes = json_array(), *props = json_array();
	const json_t *ac = json_object_get(f, "authenticode");

	json_object_set_new(c, "type", json_string("file"));
	json_object_set_new(c, "bom-ref", json_sprintf("file:%s", jstr(f, "tree_path")));
	json_object_set_new(c, "name", json_string(jstr(f, "path")));
	json_array_append_new(hashes, hash("SHA-256", jstr(f, "sha256")));
	json_object_set_new(c, "hashes", hashes);
	prop(props, "tree_path", jstr(f, "tree_path"));
	{
		char size[32];

		snprintf(size, sizeof(size), "%lld",
			 (long long)json_integer_value(json_object_get(f, "size")));
		prop(props, "size", size);
	}
	if (json_is_true(json_object_get(f, "generated")))
		prop(props, "generated", "true");
	if (ac) {
		prop(props, "authenticode:signed",
		     json_is_true(json_object_get(ac, "signed")) ? "true" : "false");
		prop(props, "authenticode:signer", jstr(ac, "signer"));
		prop(props, "authenticode:issuer", jstr(ac, "issuer"));
		prop(props, "authenticode:thumbprint_sha256", jstr(ac, "thumbprint_sha256"));
		prop(props, "authenticode:digest", jstr(ac, "digest"));
		prop(props, "authenticode:timestamp", jstr(ac, "timestamp"));
	}
	set_nonempty(c, "properties", props);
	return c;
}

/* The SHA-512 of the cache entry at PATH, which must hash to SHA256. */
static int entry_sha512(const char *name, const char *path, const char *sha256,
			char out[129], struct wb_err *e)
{
	struct digest_result r;
	char hex[65];

	if (digest_file(path, DIGEST_SHA512, &r, e))
		return -1;
	digest_hex(r.sha256, 32, hex);
	if (strcmp(hex, sha256))
		return wb_error(e, WB_EVERIFY, "SBOM: the cache entry of '%s' (%s) no longer "
				"hashes to %s (got %s)", name, path, sha256, hex);
	digest_hex(r.sha512, 64, out);
	return 0;
}

static json_t *artifact_component(const struct plan *plan, const json_t *ma,
				  const struct sbom_artifact *info,
				  const char *sha512, const json_t *files)
{
	const char *name = jstr(ma, "name");
	const struct plan_component *pc = plan_find_component(plan, jstr(ma, "component"));
	const struct plan_artifact *pa = plan_find_artifact(plan, name);
	json_t *c = json_object(), *hashes = json_array(), *refs = json_array();
	json_t *props = json_array(), *sub = json_array();
	size_t i;
	json_t *f;

	json_object_set_new(c, "type", json_string("application"));
	json_object_set_new(c, "bom-ref", json_sprintf("artifact:%s", name));
	json_object_set_new(c, "name", json_string(name));
	json_object_set_new(c, "version", json_string(jstr(ma, "version")));
	if (pc && pc->description)
		json_object_set_new(c, "description", json_string(pc->description));
	if (pc && pc->license) {
		json_t *l = json_object(), *lic = json_object(), *arr = json_array();

		json_object_set_new(lic, "name", json_string(pc->license));
		json_object_set_new(l, "license", lic);
		json_array_append_new(arr, l);
		json_object_set_new(c, "licenses", arr);
	}
	if (pc && pc->purl && *pc->purl)
		json_object_set_new(c, "purl", json_string(pc->purl));
	json_array_append_new(hashes, hash("SHA-256", jstr(ma, "sha256")));
	json_array_append_new(hashes, hash("SHA-512", sha512));
	json_object_set_new(c, "hashes", hashes);
	ext_ref(refs, "distribution", jstr(ma, "url"));
	if (pa && strcmp(pa->upstream_url, jstr(ma, "url")))
		ext_ref(refs, "distribution", pa->upstream_url);
	if (pc)
		ext_ref(refs, "website", pc->homepage);
	set_nonempty(c, "externalReferences", refs);
	prop(props, "component", jstr(ma, "component"));
	prop(props, "action", jstr(ma, "action"));
	prop(props, "install_path", jstr(ma, "destination"));
	prop(props, "file_name", pa ? pa->filename : NULL);
	prop(props, "verified_by", info ? info->verified_by : NULL);
	prop(props, "signer_key_id", info ? info->keyid_hex : NULL);
	prop(props, "trusted_comment", info ? info->trusted_comment : NULL);
	prop(props, "also_signed_by", info ? info->also_signed_by : NULL);
	set_nonempty(c, "properties", props);
	json_array_foreach(files, i, f)
		if (!strcmp(jstr(f, "artifact"), name))
			json_array_append_new(sub, file_component(f));
	set_nonempty(c, "components", sub);
	return c;
}

/* A UUID (version 5 layout, RFC 4122 variant) from the SHA-256 of TEXT. */
static void content_uuid(const char *text, char out[37])
{
	struct digest_ctx d;
	struct digest_result r;
	unsigned char *u = r.sha256;
	struct wb_err e = WB_ERR_INIT;

	if (digest_init(&d, DIGEST_SHA256, &e)) {
		memset(&r, 0, sizeof(r));
	} else {
		digest_update(&d, text, strlen(text));
		digest_final(&d, &r);
	}
	u[6] = (unsigned char)((u[6] & 0x0f) | 0x50);
	u[8] = (unsigned char)((u[8] & 0x3f) | 0x80);
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3], u[4], u[5],
		 u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

static json_t *metadata(const struct plan *plan, const json_t *m)
{
	json_t *md = json_object(), *tools = json_object(), *tc = json_array();
	json_t *tool = json_object(), *img = json_object(), *props = json_array();
	time_t t = (time_t)json_integer_value(json_object_get(m, "source_date_epoch"));
	struct tm tm;
	char ts[32];

	gmtime_r(&t, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
	json_object_set_new(md, "timestamp", json_string(ts));
	json_object_set_new(tool, "type", json_string("application"));
	json_object_set_new(tool, "name", json_string("winbuild"));
	json_object_set_new(tool, "version", json_string(WB_VERSION));
	json_array_append_new(tc, tool);
	json_object_set_new(tools, "components", tc);
	json_object_set_new(md, "tools", tools);
	json_object_set_new(img, "type", json_string("operating-system"));
	json_object_set_new(img, "bom-ref", json_sprintf("image:%s", plan->name));
	json_object_set_new(img, "name", json_string(plan->name));
	json_object_set_new(img, "version", json_string(plan->windows_version));
	json_object_set_new(img, "description",
			    json_sprintf("Windows Server %s Kubernetes node payload (the staged "
					 "system drive), built by winbuild", plan->windows_version));
	prop(props, "windows_version", plan->windows_version);
	prop(props, "windows_edition", plan->windows_edition);
	prop(props, "recipe", plan->name);
	json_object_set_new(img, "properties", props);
	json_object_set_new(md, "component", img);
	return md;
}

int sbom_write(const char *path, const struct plan *plan,
	       const char *manifest_path, const struct sbom_artifact *arts,
	       size_t n, struct wb_err *e)
{
	json_error_t je;
	json_t *m = json_load_file(manifest_path, 0, &je);
	json_t *root = NULL, *comps, *files, *ma, *deps, *dep, *dlist;
	char *text = NULL, uuid[37];
	size_t i;
	int ret = -1;

	if (!m)
		return wb_error(e, WB_ESTAGE, "%s:%d: %s", manifest_path, je.line, je.text);
	files = json_object_get(m, "files");
	if (!json_is_array(files) || !json_is_array(json_object_get(m, "artifacts"))) {
		wb_error(e, WB_ESTAGE, "%s: no 'files' or 'artifacts' array", manifest_path);
		goto out;
	}
	root = json_object();
	json_object_set_new(root, "$schema", json_string("http://cyclonedx.org/schema/bom-1.5.schema.json"));
	json_object_set_new(root, "bomFormat", json_string("CycloneDX"));
	json_object_set_new(root, "specVersion", json_string("1.5"));
	json_object_set_new(root, "serialNumber", json_string(""));
	json_object_set_new(root, "version", json_integer(1));
	json_object_set_new(root, "metadata", metadata(plan, m));
	comps = json_array();
	deps = json_array();
	dlist = json_array();
	json_array_foreach(json_object_get(m, "artifacts"), i, ma) {
		const struct sbom_artifact *info = NULL;
		char sha512[129];

		for (size_t k = 0; k < n; k++)
			if (arts[k].name && !strcmp(arts[k].name, jstr(ma, "name")))
				info = &arts[k];
		if (!info || !info->path) {
			wb_error(e, WB_EIO, "SBOM: no cache entry for artifact '%s'", jstr(ma, "name"));
			json_decref(comps);
			json_decref(deps);
			json_decref(dlist);
			goto out;
		}
		if (info->sha512 && strlen(info->sha512) == 128)
			memcpy(sha512, info->sha512, 129);
		else if (entry_sha512(jstr(ma, "name"), info->path, jstr(ma, "sha256"),
				      sha512, e)) {
			json_decref(comps);
			json_decref(deps);
			json_decref(dlist);
			goto out;
		}
		json_array_append_new(comps, artifact_component(plan, ma, info, sha512, files));
		json_array_append_new(dlist, json_sprintf("artifact:%s", jstr(ma, "name")));
	}
	json_array_foreach(files, i, ma)
		if (json_is_null(json_object_get(ma, "artifact")) ||
		    !json_object_get(ma, "artifact"))
			json_array_append_new(comps, file_component(ma));
	json_object_set_new(root, "components", comps);
	dep = json_object();
	json_object_set_new(dep, "ref", json_sprintf("image:%s", plan->name));
	json_object_set_new(dep, "dependsOn", dlist);
	json_array_append_new(deps, dep);
	json_object_set_new(root, "dependencies", deps);

	/* serialNumber: from the document with an empty one */
	text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	if (!text) {
		wb_error(e, WB_EIO, "cannot format '%s'", path);
		goto out;
	}
	content_uuid(text, uuid);
	free(text);
	text = NULL;
	json_object_set_new(root, "serialNumber", json_sprintf("urn:uuid:%s", uuid));
	ret = json_write_file(path, root, JSON_INDENT(2) | JSON_PRESERVE_ORDER, e);
out:
	free(text);
	json_decref(root);
	json_decref(m);
	return ret;
}
