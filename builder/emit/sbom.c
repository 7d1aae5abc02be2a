/* CycloneDX 1.5 JSON SBOM of a staged output (emit/sbom.h). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "emit/sbom.h"
#include "fetch/registry.h"
#include "stage/manifest.h"
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
	json_object_set_new(o, "value", json_text(value));
	json_array_append_new(props, o);
}

/* How the artifact verified (trust/method.h): the methods, each method's
 * first evidence as its sbom_fields name it, the further signers. */
static void evidence_props(json_t *props, const struct verify_evidence *ev)
{
	char *methods = verify_evidence_methods(ev), *also = verify_evidence_also(ev);

	prop(props, "verified_by", methods);
	for (size_t t = 0; trust_methods[t]; t++) {
		const struct trust_method *m = trust_methods[t];

		for (size_t i = 0; m->sbom_fields && i < ev->nr; i++) {
			if (ev->v[i].method != m)
				continue;
			for (size_t f = 0; m->sbom_fields[f]; f += 2)
				prop(props, m->sbom_fields[f + 1],
				     trust_ev_get(&ev->v[i], m->sbom_fields[f]));
			break;
		}
	}
	prop(props, "also_signed_by", also);
	free(methods);
	free(also);
}

/* S percent-encoded for a purl qualifier value (RFC 3986 unreserved kept,
 * '/' and ':' too, as purl-spec's examples write repository_url). */
static char *purl_escape(const char *s)
{
	struct buf b = BUF_INIT;

	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || strchr("-._~/:", ch))
			buf_addc(&b, (char)ch);
		else
			buf_addf(&b, "%%%02X", ch);
	}
	return buf_detach(&b, NULL);
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
	json_object_set_new(o, "url", json_url(url));
	json_array_append_new(refs, o);
}

static void set_nonempty(json_t *obj, const char *key, json_t *arr)
{
	if (json_array_size(arr))
		json_object_set(obj, key, arr);
	json_decref(arr);
}

static const char *str(const char *s)
{
	return s ? s : "";
}

/* One file of the tree as a "file" component. */
static json_t *file_component(const struct staged_file *f)
{
	json_t *c = json_object(), *hashes = json_array(), *props = json_array();
	char size[32];

	json_object_set_new(c, "type", json_string("file"));
	json_object_set_new(c, "bom-ref", json_sprintf("file:%s", f->tree_path));
	json_object_set_new(c, "name", json_string(f->path));
	json_array_append_new(hashes, hash("SHA-256", f->sha256));
	json_object_set_new(c, "hashes", hashes);
	prop(props, "tree_path", f->tree_path);
	snprintf(size, sizeof(size), "%lld", (long long)f->size);
	prop(props, "size", size);
	if (f->generated)
		prop(props, "generated", "true");
	/* what the node keeps (docs/manifest.md, "lifetime"): a build-only
	 * file stays in the SBOM, which lists what the image was built from */
	prop(props, "lifetime", f->build_only ? "build" : "node");
	if (f->has_authenticode) {
		prop(props, "authenticode:signed", f->auth_signed ? "true" : "false");
		prop(props, "authenticode:signer", f->auth_signer);
		prop(props, "authenticode:issuer", f->auth_issuer);
		prop(props, "authenticode:thumbprint_sha256", f->auth_thumbprint);
		prop(props, "authenticode:digest", f->auth_digest);
		prop(props, "authenticode:timestamp", f->auth_timestamp);
	}
	if (f->site_signed) {
		/* the site re-signed the upstream file (docs/authenticode.md,
		 * "Site signing"): CycloneDX's pedigree names what it came from */
		json_t *anc = json_object(), *ah = json_array(), *ped = json_object();

		prop(props, "upstream_sha256", f->upstream_sha256);
		prop(props, "site_signature:signer", f->site_signer);
		prop(props, "site_signature:thumbprint_sha256", f->site_thumbprint);
		json_object_set_new(anc, "type", json_string("file"));
		json_object_set_new(anc, "name", json_string(f->path));
		json_array_append_new(ah, hash("SHA-256", f->upstream_sha256));
		json_object_set_new(anc, "hashes", ah);
		json_object_set_new(ped, "ancestors", json_pack("[o]", anc));
		json_object_set_new(ped, "notes", json_string("the upstream file, verified, then "
							      "Authenticode-signed by the site"));
		json_object_set_new(c, "pedigree", ped);
	}
	set_nonempty(c, "properties", props);
	return c;
}

static json_t *artifact_component(const struct plan *plan, const struct staged_artifact *ma,
				  const struct sbom_artifact *info,
				  const struct staged_manifest *m)
{
	const char *name = ma->name;
	const struct plan_component *pc = plan_find_component(plan, str(ma->component));
	const struct plan_artifact *pa = plan_find_artifact(plan, name);
	json_t *c = json_object(), *hashes = json_array(), *refs = json_array();
	json_t *props = json_array(), *sub = json_array();

	json_object_set_new(c, "type", json_string("application"));
	json_object_set_new(c, "bom-ref", json_sprintf("artifact:%s", name));
	json_object_set_new(c, "name", json_string(name));
	json_object_set_new(c, "version", json_string(str(ma->version)));
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
	json_array_append_new(hashes, hash("SHA-256", ma->sha256));
	/* only the digests trust computed for its own checks (issue 19) */
	if (info->sha512 && strlen(info->sha512) == 128)
		json_array_append_new(hashes, hash("SHA-512", info->sha512));
	if (info->blake2b512 && strlen(info->blake2b512) == 128)
		json_array_append_new(hashes, hash("BLAKE2b-512", info->blake2b512));
	json_object_set_new(c, "hashes", hashes);
	ext_ref(refs, "distribution", str(ma->url));
	if (pa && strcmp(pa->upstream_url, str(ma->url)))
		ext_ref(refs, "distribution", pa->upstream_url);
	if (pc)
		ext_ref(refs, "website", pc->homepage);
	set_nonempty(c, "externalReferences", refs);
	prop(props, "component", str(ma->component));
	prop(props, "action", str(ma->action));
	prop(props, "install_path", str(ma->destination));
	prop(props, "file_name", pa ? pa->filename : NULL);
	if (info && info->ev)
		evidence_props(props, info->ev);
	set_nonempty(c, "properties", props);
	for (size_t i = 0; i < m->nfiles; i++)
		if (m->files[i].artifact && !strcmp(m->files[i].artifact, name))
			json_array_append_new(sub, file_component(&m->files[i]));
	set_nonempty(c, "components", sub);
	return c;
}

/* A container image of images: (issue 33) as a CycloneDX `container`
 * component: the pinned digest is its identity (hash and purl), its staged
 * OCI layout tar (stage/oci.h) a file sub-component. */
static json_t *container_component(const struct plan_image *im, const struct staged_manifest *m,
				   const struct registry_image *img)
{
	json_t *c = json_object(), *hashes = json_array(), *props = json_array(),
	       *sub = json_array();
	const char *last = strrchr(im->name, '/') + 1;
	char *url = purl_escape(im->name), *tag = im->tag ? purl_escape(im->tag) : NULL;

	json_object_set_new(c, "type", json_string("container"));
	json_object_set_new(c, "bom-ref", json_sprintf("container:%s", im->key));
	json_object_set_new(c, "name", json_string(im->name));
	if (im->tag)
		json_object_set_new(c, "version", json_string(im->tag));
	json_array_append_new(hashes, hash("SHA-256", im->digest + 7));
	json_object_set_new(c, "hashes", hashes);
	/* purl-spec's oci type: the digest as version, the repository in full */
	json_object_set_new(c, "purl", json_sprintf("pkg:oci/%s@sha256%%3A%s?repository_url=%s%s%s",
						    last, im->digest + 7, url, tag ? "&tag=" : "",
						    tag ? tag : ""));
	prop(props, "image_key", im->key);
	prop(props, "image_digest", im->digest);
	/* what the node runs: the manifest for its Windows build */
	for (size_t i = 0; i < m->nimages; i++)
		if (!strcmp(m->images[i].key, im->key)) {
			prop(props, "image_manifest_digest", m->images[i].manifest_digest);
			prop(props, "image_os_version", m->images[i].os_version);
		}
	/* the cosign signature the fetch verified, as the lock records it */
	if (img && img->sig_digest[0] && !strcmp(img->pinned, im->digest)) {
		char num[32];

		prop(props, "cosign_signature_manifest", img->sig_digest);
		prop(props, "cosign_identity", img->sig.identity);
		prop(props, "cosign_issuer", img->sig.issuer);
		if (!img->sig.identity)
			prop(props, "cosign_key_sha256", img->sig.key_sha256);
		snprintf(num, sizeof(num), "%lld", img->sig.log_index);
		prop(props, "cosign_log_index", num);
		snprintf(num, sizeof(num), "%lld", img->sig.integrated_time);
		prop(props, "cosign_integrated_time", num);
	}
	json_object_set_new(c, "properties", props);
	for (size_t i = 0; i < m->nfiles; i++)
		if (m->files[i].artifact && !strcmp(m->files[i].artifact, im->key) &&
		    m->files[i].component && !strcmp(m->files[i].component, "images"))
			json_array_append_new(sub, file_component(&m->files[i]));
	set_nonempty(c, "components", sub);
	free(url);
	free(tag);
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

static json_t *metadata(const struct plan *plan, const struct staged_manifest *m)
{
	json_t *md = json_object(), *tools = json_object(), *tc = json_array();
	json_t *tool = json_object(), *img = json_object(), *props = json_array();
	time_t t = (time_t)m->source_date_epoch;
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

/*
 * @where the SBOM (CycloneDX 1.5, `OUT/<name>/sbom.cdx.json`) --
 *   docs/provenance.md
 */
int sbom_write(const char *path, const struct plan *plan,
	       const char *manifest_path, const struct sbom_artifact *arts,
	       size_t n, const struct registry_image *pulled, struct wb_err *e)
{
	struct staged_manifest m;
	json_t *root = NULL, *comps, *deps, *dep, *dlist;
	char *text = NULL, uuid[37];
	int ret = -1;

	if (staged_manifest_read(manifest_path, &m, e) < 0)
		return -1;
	root = json_object();
	json_object_set_new(root, "$schema", json_string("http://cyclonedx.org/schema/bom-1.5.schema.json"));
	json_object_set_new(root, "bomFormat", json_string("CycloneDX"));
	json_object_set_new(root, "specVersion", json_string("1.5"));
	json_object_set_new(root, "serialNumber", json_string(""));
	json_object_set_new(root, "version", json_integer(1));
	json_object_set_new(root, "metadata", metadata(plan, &m));
	comps = json_array();
	deps = json_array();
	dlist = json_array();
	for (size_t i = 0; i < m.nartifacts; i++) {
		const struct staged_artifact *ma = &m.artifacts[i];
		const struct sbom_artifact *info = NULL;

		for (size_t k = 0; k < n; k++)
			if (arts[k].name && !strcmp(arts[k].name, ma->name))
				info = &arts[k];
		if (!info || !info->path) {
			wb_error(e, WB_EIO, "SBOM: no cache entry for artifact '%s'", ma->name);
			json_decref(comps);
			json_decref(deps);
			json_decref(dlist);
			goto out;
		}
		json_array_append_new(comps, artifact_component(plan, ma, info, &m));
		json_array_append_new(dlist, json_sprintf("artifact:%s", ma->name));
	}
	for (size_t i = 0; i < plan->nimages; i++)
		if (plan->images[i].digest) {
			json_array_append_new(comps, container_component(&plan->images[i], &m,
									 pulled ? &pulled[i] : NULL));
			json_array_append_new(dlist, json_sprintf("container:%s",
								  plan->images[i].key));
		}
	for (size_t i = 0; i < m.nfiles; i++)
		if (!m.files[i].artifact)
			json_array_append_new(comps, file_component(&m.files[i]));
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
	staged_manifest_release(&m);
	return ret;
}
