/*
 * `winbuild mirror`'s container images (issue 33): a static tree of the
 * OCI distribution API's read side per registry host (mirror.h), copied
 * from the cache, every file hashed again as it is copied.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <jansson.h>

#include "emit/mirror.h"
#include "fetch/cache.h"
#include "fetch/registry.h"
#include "lib/bulk.h"
#include "lib/fs.h"
#include "lib/imageref.h"
#include "lib/tmpl.h"
#include "trust/digest.h"

static void hash_each(void *ctx, const void *p, size_t n)
{
	digest_update(ctx, p, n);
}

/* The cache entry DIGEST ("sha256:<hex>") copied to DIR/NAME, hashed as it
 * is read: a changed entry is quarantined and WB_EVERIFY. */
static int copy_entry(struct cache *c, const char *digest, const char *dir,
		      const char *name, struct wb_err *e)
{
	unsigned long long size;
	struct digest_ctx dc;
	struct digest_result r;
	char *q = NULL, *path = fs_join(dir, name), *tmp = xasprintf("%s.tmp.XXXXXX", path);
	char got[65];
	int in = -1, out = -1, writing = 0, ret = -1;
	int have = cache_entry_open(c, digest + 7, &size, &in, &q, e);

	memset(&dc, 0, sizeof(dc));
	free(q);
	if (have <= 0) {
		if (have == 0)
			wb_error(e, WB_ENET, "%s is not in the cache (fetch it first)", digest);
		goto out;
	}
	if (fs_mkdir_p(dir, 0755, e) < 0 || digest_init(&dc, DIGEST_SHA256, e) < 0)
		goto out;
	out = mkstemp(tmp);
	if (out < 0) {
		wb_error(e, WB_EIO, "cannot create '%s': %s", tmp, strerror(errno));
		goto out;
	}
	if (bulk_copy(in, out, hash_each, &dc, &writing) < 0) {
		wb_error(e, WB_EIO, "cannot copy %s to '%s': %s", digest, path, strerror(errno));
		goto out;
	}
	digest_final(&dc, &r);
	digest_hex(r.sha256, 32, got);
	if (strcmp(got, digest + 7)) {
		if (cache_quarantine(c, digest + 7, &q, e) == 0)
			free(q);
		wb_error(e, WB_EVERIFY, "the cache entry %s changed since it was verified "
			 "(now sha256:%s): quarantined, fetch again", digest, got);
		goto out;
	}
	if (fchmod(out, 0644) < 0 || close(out) < 0) {
		out = -1;
		wb_error(e, WB_EIO, "cannot write '%s': %s", tmp, strerror(errno));
		goto out;
	}
	out = -1;
	if (rename(tmp, path) < 0) {
		wb_error(e, WB_EIO, "cannot rename '%s': %s", tmp, strerror(errno));
		goto out;
	}
	ret = 0;
out:
	digest_release(&dc);
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	if (ret < 0)
		unlink(tmp);
	free(tmp);
	free(path);
	return ret;
}

/* The manifest DIGEST under manifests/REF, and its line of the nginx
 * include: nginx sends the media type a client decides by.
 * @where where a value is encoded for the file it lands in (typed sinks:
 *   toml, ini, json, xml, ps, hcl, media_type, ...) -- nginx's `default_type`
 */
static int put_manifest(struct cache *c, const char *digest, const char *mdir,
			const char *repo, const char *ref, const char *media_type,
			struct buf *conf, struct wb_err *e)
{
	struct tmpl_var v = { (char *)"mediaType", NULL, NULL, NULL, 0 };
	struct buf mt = BUF_INIT;
	char *line;
	int r;

	/* the registry chose the media type: it reaches nginx's config only
	 * through the checked media_type sink (lib/tmpl.c), never escaped
	 * into place; REPO and REF are the plan's, checked as an image
	 * reference at plan time */
	v.value = json_string_nocheck(media_type);
	r = tmpl_encode("media_type", strlen("media_type"), &v, &mt, e);
	json_decref(v.value);
	if (r < 0) {
		e->code = WB_EVERIFY;
		wb_error_prefix(e, "the manifest %s", digest);
		buf_release(&mt);
		return -1;
	}
	if (copy_entry(c, digest, mdir, ref, e) < 0) {
		buf_release(&mt);
		return -1;
	}
	/* once: two images of one repository may share a pin or a tag's
	 * manifest, and nginx refuses a location given twice */
	line = xasprintf("location = /v2/%s/manifests/%s { default_type %s; }\n", repo, ref,
			 mt.ptr);
	if (!strstr(conf->ptr, line))
		buf_adds(conf, line);
	free(line);
	buf_release(&mt);
	return 0;
}

/* The signature manifest SIG and its payloads (its layers; its config is
 * not in the cache: no client of a signature reads it). */
static int put_signature(struct cache *c, const struct registry_image *img, const char *mdir,
			 const char *bdir, const char *repo, struct buf *conf,
			 struct wb_err *e)
{
	char *path = NULL, *tag = xasprintf("sha256-%s.sig", img->pinned + 7);
	json_t *root = NULL, *l;
	json_error_t je;
	size_t i;
	int ret = -1;

	if (put_manifest(c, img->sig_digest, mdir, repo, tag,
			 "application/vnd.oci.image.manifest.v1+json", conf, e) < 0 ||
	    put_manifest(c, img->sig_digest, mdir, repo, img->sig_digest,
			 "application/vnd.oci.image.manifest.v1+json", conf, e) < 0)
		goto out;
	path = fs_join(mdir, tag);
	root = json_load_file(path, 0, &je);
	json_array_foreach(json_object_get(root, "layers"), i, l) {
		const char *d = json_string_value(json_object_get(l, "digest"));

		if (!d || !imageref_digest_ok(d)) {
			wb_error(e, WB_EVERIFY, "the signature manifest %s has a layer without "
				 "a sha256 digest", img->sig_digest);
			goto out;
		}
		if (copy_entry(c, d, bdir, d, e) < 0)
			goto out;
	}
	ret = 0;
out:
	json_decref(root);
	free(path);
	free(tag);
	return ret;
}

static int put_image(struct cache *c, const struct plan_image *im,
		     const struct registry_image *img, const char *root, struct buf *conf,
		     struct wb_err *e)
{
	const char *repo = strchr(im->name, '/') + 1;
	char *mdir = xasprintf("%s/v2/%s/manifests", root, repo);
	char *bdir = xasprintf("%s/v2/%s/blobs", root, repo);
	const char *pin_type = img->list_digest[0] ? img->list_media_type :
			       img->manifest_media_type;
	int ret = -1;

	/* the pin, by digest and by tag; the build's manifest; its blobs */
	if (put_manifest(c, img->pinned, mdir, repo, img->pinned, pin_type, conf, e) < 0 ||
	    (im->tag && put_manifest(c, img->pinned, mdir, repo, im->tag, pin_type, conf,
				     e) < 0) ||
	    (img->list_digest[0] && put_manifest(c, img->manifest_digest, mdir, repo,
						 img->manifest_digest,
						 img->manifest_media_type, conf, e) < 0) ||
	    copy_entry(c, img->config.digest, bdir, img->config.digest, e) < 0)
		goto out;
	for (size_t i = 0; i < img->nlayers; i++)
		if (copy_entry(c, img->layers[i].digest, bdir, img->layers[i].digest, e) < 0)
			goto out;
	if (img->sig_digest[0] && put_signature(c, img, mdir, bdir, repo, conf, e) < 0)
		goto out;
	ret = 0;
out:
	if (ret < 0)
		wb_error_prefix(e, "images.%s", im->key);
	free(mdir);
	free(bdir);
	return ret;
}

/* One blob of a layout: DIGEST copied (hashed again) to LDIR/blobs/sha256/,
 * and its index.json entry when REF (a ref.name annotation) is given. */
static int layout_blob(struct cache *c, const char *digest, const char *ldir,
		       const char *media_type, const char *ref, json_t *manifests,
		       struct wb_err *e)
{
	char *bdir = xasprintf("%s/blobs/sha256", ldir), *path;
	struct stat st;
	int r = copy_entry(c, digest, bdir, digest + 7, e);

	path = fs_join(bdir, digest + 7);
	if (!r && ref && stat(path, &st) == 0)
		json_array_append_new(manifests, json_pack("{s:s, s:s, s:I, s:{s:s}}",
			"mediaType", media_type, "digest", digest, "size", (json_int_t)st.st_size,
			"annotations", "org.opencontainers.image.ref.name", ref));
	else if (!r && ref)
		r = wb_error(e, WB_EIO, "cannot stat '%s': %s", path, strerror(errno));
	free(path);
	free(bdir);
	return r;
}

/*
 * Issue 42: the image as an OCI image layout, DIR/images/<key>/, the
 * source `images.<key>.layout` reads (fetch/imgsource.c) with no server:
 * oci-layout, blobs/sha256/<hex> of everything the pull verified (the pin,
 * the build's manifest, config, layers, the cosign signature manifest and
 * its payloads), and index.json naming the pin (ref.name: its tag, or
 * "pinned") and the signature (ref.name sha256-<hex>.sig, as `skopeo copy
 * ... oci:DIR:sha256-<hex>.sig` writes it; image-spec image-layout.md).
 * The export's override points the image at it (cmd/mirror.c).
 */
static int put_layout(struct cache *c, const struct plan_image *im,
		      const struct registry_image *img, const char *dir, struct wb_err *e)
{
	char *ldir = xasprintf("%s/images/%s", dir, im->key), *path = NULL, *tag = NULL;
	const char *pin_type = img->list_digest[0] ? img->list_media_type :
			       img->manifest_media_type;
	const char *oci = "{\"imageLayoutVersion\": \"1.0.0\"}\n";
	json_t *index = json_pack("{s:i, s:[]}", "schemaVersion", 2, "manifests");
	json_t *ms = json_object_get(index, "manifests");
	char *text = NULL;
	int ret = -1;

	if (fs_mkdir_p(ldir, 0755, e) < 0 ||
	    layout_blob(c, img->pinned, ldir, pin_type, im->tag ? im->tag : "pinned", ms, e) < 0 ||
	    (img->list_digest[0] && layout_blob(c, img->manifest_digest, ldir, NULL, NULL,
						NULL, e) < 0) ||
	    layout_blob(c, img->config.digest, ldir, NULL, NULL, NULL, e) < 0)
		goto out;
	for (size_t i = 0; i < img->nlayers; i++)
		if (layout_blob(c, img->layers[i].digest, ldir, NULL, NULL, NULL, e) < 0)
			goto out;
	if (img->sig_digest[0]) {
		json_t *root, *l;
		json_error_t je;
		size_t i;

		tag = xasprintf("sha256-%s.sig", img->pinned + 7);
		if (layout_blob(c, img->sig_digest, ldir, "application/vnd.oci.image.manifest.v1+json",
				tag, ms, e) < 0)
			goto out;
		path = xasprintf("%s/blobs/sha256/%s", ldir, img->sig_digest + 7);
		root = json_load_file(path, 0, &je);
		json_array_foreach(json_object_get(root, "layers"), i, l) {
			const char *d = json_string_value(json_object_get(l, "digest"));

			if (!d || !imageref_digest_ok(d) ||
			    layout_blob(c, d, ldir, NULL, NULL, NULL, e) < 0) {
				if (!d || !imageref_digest_ok(d))
					wb_error(e, WB_EVERIFY, "the signature manifest %s has a "
						 "layer without a sha256 digest", img->sig_digest);
				json_decref(root);
				goto out;
			}
		}
		json_decref(root);
	}
	free(path);
	path = fs_join(ldir, "oci-layout");
	if (fs_write_atomic(path, oci, strlen(oci), 0644, e) < 0)
		goto out;
	free(path);
	path = fs_join(ldir, "index.json");
	text = json_dumps(index, JSON_INDENT(2) | JSON_SORT_KEYS);
	ret = fs_write_atomic(path, text, strlen(text), 0644, e) < 0 ? -1 : 0;
out:
	json_decref(index);
	free(text);
	free(path);
	free(tag);
	free(ldir);
	return ret;
}

/*
 * @where `winbuild mirror`'s container images (a static `/v2/` tree per
 *   registry host) -- `DIR/registry/<host>/` with an nginx include of the
 *   manifests' media types
 */
int mirror_write_images(struct cache *c, const struct plan *plan,
			const struct registry_image *pulled, const char *dir, size_t *n,
			struct wb_err *e)
{
	struct wb_strlist hosts = WB_STRLIST_INIT;
	int ret = -1;

	*n = 0;
	for (size_t i = 0; pulled && i < plan->nimages; i++)
		if (pulled[i].pinned[0]) {
			char *host = xstrndup(plan->images[i].name,
					      strcspn(plan->images[i].name, "/"));

			if (!wb_strlist_has(&hosts, host))
				wb_strlist_push(&hosts, host);
			free(host);
		}
	/* one tree and one nginx include per registry host */
	for (size_t h = 0; h < hosts.nr; h++) {
		char *root = xasprintf("%s/registry/%s", dir, hosts.v[h]), *conf_path;
		struct buf conf = BUF_INIT;
		int r = 0;

		buf_addf(&conf, "# Written by 'winbuild mirror': the media types of the "
			 "manifests under this\n# root (%s as a registry mirror); "
			 "include it in the server that serves it.\n"
			 "location = /v2/ { default_type application/json; return 200 '{}'; }\n",
			 hosts.v[h]);
		for (size_t i = 0; r == 0 && i < plan->nimages; i++) {
			const char *name = plan->images[i].name;
			size_t hl = strlen(hosts.v[h]);

			if (pulled[i].pinned[0] && !strncmp(name, hosts.v[h], hl) && name[hl] == '/') {
				r = put_image(c, &plan->images[i], &pulled[i], root, &conf, e);
				if (r == 0 &&
				    (r = put_layout(c, &plan->images[i], &pulled[i], dir, e)) < 0)
					wb_error_prefix(e, "images.%s", plan->images[i].key);
				*n += r == 0;
			}
		}
		conf_path = fs_join(root, "nginx-locations.conf");
		if (r == 0)
			r = fs_write_atomic(conf_path, conf.ptr, conf.len, 0644, e);
		free(conf_path);
		free(root);
		buf_release(&conf);
		if (r < 0)
			goto out;
	}
	ret = 0;
out:
	wb_strlist_release(&hosts);
	return ret;
}
