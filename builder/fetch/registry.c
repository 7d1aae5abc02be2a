/*
 * The registry client (registry.h): the OCI distribution API's pull by
 * digest, as rounds of requests (the pinned manifest, the selected image
 * manifest, then its config and layers), each judged by request_judge()
 * like fetch_request's, each answer verified by its digest.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "fetch/registry_int.h"
#include "lib/url.h"
#include "lib/envlimits.h"
#include "lib/fs.h"
#include "lib/hex.h"
#include "lib/imageref.h"
#include "trust/digest.h"

#define REG_MANIFEST_MAX (4u << 20)   /* a manifest or index: distribution's
				       * own limit is 4 MiB */

static const char reg_accept[] =
	"Accept: application/vnd.oci.image.index.v1+json, "
	"application/vnd.docker.distribution.manifest.list.v2+json, "
	"application/vnd.oci.image.manifest.v1+json, "
	"application/vnd.docker.distribution.manifest.v2+json";

/* ---- manifests --------------------------------------------------------- */

static void sha256_digest(const void *p, size_t n, char out[REGISTRY_DIGEST_LEN + 1])
{
	struct digest_ctx dc;
	struct digest_result r;
	struct wb_err e = WB_ERR_INIT;

	memset(&dc, 0, sizeof(dc));
	memcpy(out, "sha256:", 7);
	if (digest_init(&dc, DIGEST_SHA256, &e) < 0) {
		out[7] = '\0';
		return;
	}
	digest_update(&dc, p, n);
	digest_final(&dc, &r);
	digest_release(&dc);
	digest_hex(r.sha256, 32, out + 7);
}

/* A verified manifest waiting for the cache. */
struct pending {
	char digest[REGISTRY_DIGEST_LEN + 1];
	struct buf bytes;            /* a manifest; or empty: */
	char *tmp_path;              /* a blob's temp file */
	int fd;
};

struct pull {
	struct cache *c;
	struct reg_client rc;
	struct pending *v;
	size_t nr, alloc;
	struct wb_strlist keep;      /* every digest of the image and its
				      * signature, fetched or cached */
};

static struct pending *pending_add(struct pull *p, const char *digest)
{
	struct pending *pd;

	ALLOC_GROW(p->v, p->nr + 1, p->alloc);
	pd = &p->v[p->nr++];
	memset(pd, 0, sizeof(*pd));
	memcpy(pd->digest, digest, sizeof(pd->digest));
	buf_init(&pd->bytes);
	pd->fd = -1;
	return pd;
}

static int pending_has(const struct pull *p, const char *digest)
{
	for (size_t i = 0; i < p->nr; i++)
		if (!strcmp(p->v[i].digest, digest))
			return 1;
	return 0;
}

/* The verified small answer B (a manifest, a payload) kept for the cache
 * under DIGEST, once. */
static void pending_keep(struct pull *p, const char *digest, const struct buf *b)
{
	if (!pending_has(p, digest))
		buf_add(&pending_add(p, digest)->bytes, b->ptr, b->len);
}

/* The manifest DIGEST from the cache into OUT, hashed as it is read: 1,
 * 0 absent (or quarantined: its bytes had changed), -1 an I/O error. */
static int cached_manifest(struct pull *p, const char *digest, struct buf *out,
			   struct wb_err *e)
{
	unsigned long long size;
	char got[REGISTRY_DIGEST_LEN + 1], *q = NULL, tmp[65536];
	int fd = -1, r = cache_entry_open(p->c, digest + 7, &size, &fd, &q, e);
	ssize_t n;

	free(q);
	if (r <= 0)
		return r;
	buf_reset(out);
	while (out->len <= REG_MANIFEST_MAX && (n = read(fd, tmp, sizeof(tmp))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			close(fd);
			return wb_error(e, WB_EIO, "cannot read the cache entry of %s: %s",
					digest, strerror(errno));
		}
		buf_add(out, tmp, (size_t)n);
	}
	close(fd);
	sha256_digest(out->ptr, out->len, got);
	if (strcmp(got, digest)) {
		if (cache_quarantine(p->c, digest + 7, &q, e) < 0)
			return -1;
		free(q);
		buf_reset(out);
		return 0;
	}
	return 1;
}

/* Fetch the manifest (KIND "manifests") or small blob (KIND "blobs")
 * DIGEST, verified, at most MAX bytes: its bytes in OUT (kept in the
 * pending list too). */
/* GET URL into OUT (at most MAX bytes); *CODE the answer's status (a 404
 * is an error here too). */
static int get_buf(struct pull *p, const char *url, const char *accept, size_t max,
		   struct buf *out, long *code, struct wb_err *e)
{
	struct reg_sink s;
	int ret;

	memset(&s, 0, sizeof(s));
	s.b = out;
	s.fd = -1;
	s.max = max;
	ret = reg_get(&p->rc, url, accept, &s, e);
	*code = s.code;
	buf_release(&s.www_auth);
	free(s.final);
	return ret;
}

static int get_small(struct pull *p, const char *kind, const char *digest, size_t max,
		     const char *accept, struct buf *out, struct wb_err *e)
{
	char *url = xasprintf("%s/v2/%s/%s/%s", p->rc.base, p->rc.ref->repo, kind, digest);
	char got[REGISTRY_DIGEST_LEN + 1];
	long code;
	int ret = -1;

	wb_strlist_push_unique(&p->keep, digest);
	switch (cached_manifest(p, digest, out, e)) {
	case 1:
		ret = 0;   /* verified by its name; already in the cache */
		goto out;
	case -1:
		goto out;
	}
	if (p->rc.o->offline) {
		wb_error(e, WB_ENET, "image '%s': %s %s is not in the cache (--offline)",
			 p->rc.name, kind[0] == 'm' ? "manifest" : "blob", digest);
		goto out;
	}
	if (get_buf(p, url, accept, max, out, &code, e) < 0)
		goto out;
	sha256_digest(out->ptr, out->len, got);
	if (strcmp(got, digest)) {
		char *shown = xfer_shown_url(url);

		wb_error(e, WB_EVERIFY, "image '%s': the %s from '%s' does not "
			 "match its digest: expected %s, got %s (nothing cached)",
			 p->rc.name, kind[0] == 'm' ? "manifest" : "blob", shown, digest, got);
		free(shown);
		goto out;
	}
	pending_keep(p, digest, out);
	ret = 0;
out:
	free(url);
	return ret;
}

static int get_manifest(struct pull *p, const char *digest, struct buf *out,
			struct wb_err *e)
{
	return get_small(p, "manifests", digest, REG_MANIFEST_MAX, reg_accept, out, e);
}

static const char *media_type_of(json_t *root)
{
	json_t *mt = json_object_get(root, "mediaType");

	return json_is_string(mt) ? json_string_value(mt) : NULL;
}

static int is_index(json_t *root)
{
	const char *mt = media_type_of(root);

	if (mt)
		return !strcmp(mt, "application/vnd.oci.image.index.v1+json") ||
		       !strcmp(mt, "application/vnd.docker.distribution.manifest.list.v2+json");
	/* an OCI index may leave mediaType out: "manifests" tells */
	return json_is_array(json_object_get(root, "manifests"));
}

/* Whether the build VERSION ("10.0.20348.2655") is WANT ("10.0.20348") or
 * one of its revisions. */
static int build_matches(const char *version, const char *want)
{
	size_t n = strlen(want);

	return version && !strncmp(version, want, n) &&
	       (version[n] == '\0' || version[n] == '.');
}

static const char *jstr(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* Pick the entry of the index ROOT for windows/amd64 and the wanted build:
 * its digest in OUT. */
static int select_entry(struct pull *p, json_t *root, char out[REGISTRY_DIGEST_LEN + 1],
			struct wb_err *e)
{
	json_t *ms = json_object_get(root, "manifests"), *m;
	struct buf have = BUF_INIT;
	size_t i;

	if (!json_is_array(ms))
		return wb_error(e, WB_EUSAGE, "image '%s': the index has no manifests list",
				p->rc.name);
	json_array_foreach(ms, i, m) {
		json_t *pl = json_object_get(m, "platform");
		const char *os = jstr(pl, "os"), *arch = jstr(pl, "architecture");
		const char *ver = jstr(pl, "os.version"), *d = jstr(m, "digest");

		/* containerd's platform matcher would take the first windows/amd64
		 * entry whose os.version fits the host; this is the same choice
		 * made on the build host for the recipe's Windows build */
		if (os && arch && !strcmp(os, "windows") && !strcmp(arch, "amd64") &&
		    build_matches(ver, p->rc.o->os_version)) {
			if (!d || !imageref_digest_ok(d)) {
				buf_release(&have);
				return wb_error(e, WB_EVERIFY, "image '%s': the index entry "
						"for %s has no sha256 digest", p->rc.name, ver);
			}
			memcpy(out, d, REGISTRY_DIGEST_LEN + 1);
			buf_release(&have);
			return 0;
		}
		buf_addf(&have, "%s%s/%s%s%s", have.len ? ", " : "", os ? os : "?",
			 arch ? arch : "?", ver ? " " : "", ver ? ver : "");
	}
	wb_error(e, WB_EVERIFY, "image '%s': the manifest list has no windows/amd64 entry "
		 "for Windows build %s (it has: %s); pin a digest that has one, or "
		 "build for a Windows version the image supports", p->rc.name,
		 p->rc.o->os_version, have.len ? have.ptr : "nothing");
	buf_release(&have);
	return -1;
}

static int read_descriptor(struct pull *p, json_t *d, struct registry_blob *b,
			   const char *what, struct wb_err *e)
{
	const char *mt = jstr(d, "mediaType"), *dg = jstr(d, "digest");
	json_t *sz = json_object_get(d, "size"), *urls = json_object_get(d, "urls");

	if (!dg || !imageref_digest_ok(dg) || !json_is_integer(sz) || json_integer_value(sz) < 0)
		return wb_error(e, WB_EVERIFY, "image '%s': its %s has no sha256 digest "
				"and size winbuild can check", p->rc.name, what);
	memcpy(b->digest, dg, REGISTRY_DIGEST_LEN + 1);
	b->size = (unsigned long long)json_integer_value(sz);
	b->media_type = xstrdup(mt ? mt : "");
	b->foreign = json_is_array(urls) && json_array_size(urls) > 0;
	if (b->size > p->rc.lim.max_size)
		return wb_error(e, WB_EVERIFY, "image '%s': its %s %s is %llu bytes, "
				"more than WINBUILD_MAX_SIZE (%llu)", p->rc.name, what,
				b->digest, b->size, p->rc.lim.max_size);
	return 0;
}

/* ---- the cosign signature ---------------------------------------------- */

void registry_sig_ref_key(const struct image_ref *ref, char out[65])
{
	char *spec = xasprintf("cosign-signature %s/%s@%s", ref->host, ref->repo, ref->digest);

	cache_ref_key(spec, out);
	free(spec);
}

/* The pin's signature manifest: by its tag online (cosign's layout: the
 * tag sha256-<hex>.sig in the image's repository), by the cache ref
 * offline. Its digest in DIGEST, its bytes in OUT (pending). */
static int sig_manifest(struct pull *p, char digest[REGISTRY_DIGEST_LEN + 1],
			struct buf *out, struct wb_err *e)
{
	char *url;
	long code;

	if (p->rc.o->offline || p->rc.o->sig_known) {
		struct cache_ref ref;
		char key[65];
		int r;

		registry_sig_ref_key(p->rc.ref, key);
		r = cache_ref_load(p->c, key, &ref, e);
		if (r < 0)
			return -1;
		if (r == 0)
			return wb_error(e, WB_ENET, "image '%s': its cosign signature is not in "
					"the cache (--offline); fetch it once online", p->rc.name);
		snprintf(digest, REGISTRY_DIGEST_LEN + 1, "sha256:%s", ref.sha256);
		cache_ref_release(&ref);
		return get_manifest(p, digest, out, e);
	}
	url = xasprintf("%s/v2/%s/manifests/sha256-%s.sig", p->rc.base, p->rc.ref->repo,
			p->rc.ref->digest + 7);
	if (get_buf(p, url, reg_accept, REG_MANIFEST_MAX, out, &code, e) < 0) {
		if (code == 404) {
			char *shown = xfer_shown_url(url);

			wb_error(e, WB_EVERIFY, "image '%s': no cosign signature ('%s' answers "
				 "404) and the recipe requires one; nothing cached", p->rc.name,
				 shown);
			free(shown);
		}
		free(url);
		return -1;
	}
	free(url);
	/* a tag is not a pin: the signature manifest is whatever the tag
	 * names now, and what it holds is verified below */
	sha256_digest(out->ptr, out->len, digest);
	pending_keep(p, digest, out);
	wb_strlist_push_unique(&p->keep, digest);
	return 0;
}

/* The digest TAG names now (registry_opts.resolve_tag: `lock` settling a
 * needs_pin image): the SHA-256 of the manifest the registry answers with
 * (its Docker-Content-Digest header is not believed), into DIGEST; the
 * manifest in OUT, kept for the cache once the pull verified.
 * @where container images in the lock (pin, build manifest, os.version,
 *   cosign evidence) -- `needs_pin` settled by `lock --accept-new` from the
 *   tag
 */
static int resolve_tag(struct pull *p, char digest[REGISTRY_DIGEST_LEN + 1],
		       struct buf *out, struct wb_err *e)
{
	char *url = xasprintf("%s/v2/%s/manifests/%s", p->rc.base, p->rc.ref->repo,
			      p->rc.ref->tag);
	long code;
	int ret = get_buf(p, url, reg_accept, REG_MANIFEST_MAX, out, &code, e);

	free(url);
	if (ret < 0)
		return -1;
	sha256_digest(out->ptr, out->len, digest);
	pending_keep(p, digest, out);
	wb_strlist_push_unique(&p->keep, digest);
	return 0;
}

/* Fetch and verify the pin's cosign signature (registry_opts.cosign)
 * into IMG, before any blob of the image is asked for.
 * @where where a container image's cosign signature is checked -- the `.sig`
 *   manifest under the tag `sha256-<hex of the pin>`, fetched before any blob
 */
static int get_signature(struct pull *p, struct registry_image *img, struct wb_err *e)
{
	struct buf man = BUF_INIT, *pl = NULL;
	json_t *root = NULL, *layers, *l;
	json_error_t je;
	size_t i, n = 0;
	int ret = -1;

	if (sig_manifest(p, img->sig_digest, &man, e) < 0)
		goto out;
	root = json_loadb(man.ptr, man.len, 0, &je);
	layers = json_object_get(root, "layers");
	n = json_is_array(layers) ? json_array_size(layers) : 0;
	if (!n || n > OCISIG_LAYERS_MAX) {
		wb_error(e, WB_EVERIFY, "image '%s': the cosign signature manifest %s holds "
			 "%zu signature layers (1 to %u); nothing cached", p->rc.name,
			 img->sig_digest, n, OCISIG_LAYERS_MAX);
		n = 0;
		goto out;
	}
	pl = xcalloc(n, sizeof(*pl));
	for (i = 0; i < n; i++)
		buf_init(&pl[i]);
	json_array_foreach(layers, i, l) {
		const char *d = jstr(l, "digest");
		json_t *sz = json_object_get(l, "size");

		if (!d || !imageref_digest_ok(d) || !json_is_integer(sz) ||
		    json_integer_value(sz) < 0 || json_integer_value(sz) > OCISIG_PAYLOAD_MAX) {
			wb_error(e, WB_EVERIFY, "image '%s': signature layer %zu of %s has no "
				 "sha256 digest and size (at most %u bytes) winbuild can check",
				 p->rc.name, i + 1, img->sig_digest, OCISIG_PAYLOAD_MAX);
			goto out;
		}
		if (get_small(p, "blobs", d, OCISIG_PAYLOAD_MAX, NULL, &pl[i], e) < 0)
			goto out;
	}
	if (ocisig_verify(p->rc.ref->digest, man.ptr, man.len, pl, n, p->rc.o->cosign,
			  &img->sig, e) < 0) {
		wb_error_prefix(e, "image '%s': cosign signature %s", p->rc.name,
				img->sig_digest);
		goto out;
	}
	ret = 0;
out:
	for (i = 0; i < n && pl; i++)
		buf_release(&pl[i]);
	free(pl);
	json_decref(root);
	buf_release(&man);
	return ret;
}

/* Every entry of the image (and of its signature) named by a ref of its
 * own once in the cache: `cache gc` removes entries no ref names, and an
 * --offline --locked build needs them all. */
static int store_entry_refs(struct pull *p, struct wb_err *e)
{
	for (size_t i = 0; i < p->keep.nr; i++) {
		char *spec = xasprintf("oci-entry %s/%s %s", p->rc.ref->host, p->rc.ref->repo,
				       p->keep.v[i]);
		struct cache_ref ref;
		char key[65];
		int r;

		memset(&ref, 0, sizeof(ref));
		ref.artifact = p->rc.name;
		memcpy(ref.sha256, p->keep.v[i] + 7, 65);
		cache_ref_key(spec, key);
		free(spec);
		r = cache_ref_store(p->c, key, &ref, e);
		if (r < 0)
			return -1;
	}
	return 0;
}

/* The signature manifest's digest under the pin's ref, once it is in the
 * cache: what an offline pull verifies again. */
static int store_sig_ref(struct pull *p, const struct registry_image *img, struct wb_err *e)
{
	struct cache_ref ref;
	char key[65];
	int ret;

	memset(&ref, 0, sizeof(ref));
	registry_sig_ref_key(p->rc.ref, key);
	ref.artifact = p->rc.name;
	memcpy(ref.sha256, img->sig_digest + 7, 65);
	ref.url = xasprintf("%s/v2/%s/manifests/sha256-%s.sig", p->rc.base, p->rc.ref->repo,
			    p->rc.ref->digest + 7);
	ret = cache_ref_store(p->c, key, &ref, e);
	free(ref.url);
	return ret;
}

/* ---- blobs ------------------------------------------------------------- */

/* Fetch the blob B (from URL) into a temp file of the cache, verified by
 * size and digest; kept pending. */
static int get_blob_from(struct pull *p, const struct registry_blob *b, const char *url,
			 unsigned long long *bytes, struct wb_err *e)
{
	struct reg_sink s;
	struct digest_result r;
	char got[REGISTRY_DIGEST_LEN + 1], *tmp = NULL;
	int fd = -1, ret = -1;

	memset(&s, 0, sizeof(s));
	if (cache_tmp_create(p->c, &tmp, &fd, e) < 0)
		return -1;
	s.fd = fd;
	/* exactly the descriptor's size: a longer body is refused as it
	 * arrives, a shorter one fails the digest */
	s.max = b->size;
	if (reg_get(&p->rc, url, NULL, &s, e) < 0) {
		if (s.too_big) {
			/* more bytes than the verified manifest promised: a
			 * mismatch, not a network failure */
			char *shown = xfer_shown_url(url);

			wb_error(e, WB_EVERIFY, "image '%s': the blob from '%s' is longer "
				 "than its descriptor says (%s, %llu bytes); nothing cached",
				 p->rc.name, shown, b->digest, b->size);
			free(shown);
		}
		goto out;
	}
	digest_final(&s.dc, &r);
	memcpy(got, "sha256:", 7);
	digest_hex(r.sha256, 32, got + 7);
	*bytes += s.have;
	if (strcmp(got, b->digest) || s.have != b->size) {
		char *shown = xfer_shown_url(url), *from = xfer_shown_url(s.final);
		int hop = strcmp(url, s.final) != 0;

		wb_error(e, WB_EVERIFY, "image '%s': the blob from '%s'%s%s%s does not "
			 "match its descriptor: expected %s (%llu bytes), got %s (%llu "
			 "bytes); nothing cached", p->rc.name, shown,
			 hop ? " (redirected to '" : "", hop ? from : "", hop ? "')" : "",
			 b->digest, b->size, got, s.have);
		free(shown);
		free(from);
		goto out;
	}
	{
		struct pending *pd = pending_add(p, b->digest);

		pd->tmp_path = tmp;
		pd->fd = fd;
		tmp = NULL;
		fd = -1;
	}
	ret = 0;
out:
	if (s.dc_live)
		digest_release(&s.dc);
	buf_release(&s.www_auth);
	free(s.final);
	if (fd >= 0)
		close(fd);
	if (tmp)
		unlink(tmp);
	free(tmp);
	return ret;
}

static int foreign_refused(struct pull *p, const struct registry_blob *b,
			   struct wb_err *e)
{
	/* containerd's fetcher (core/remotes/docker/fetcher.go) tries a
	 * descriptor's urls before the registry, unasked; winbuild refuses
	 * them unless allowed, since they lead to hosts no recipe or mirror
	 * rule named (Microsoft's, for old Windows base layers) */
	return wb_error(e, WB_EVERIFY, "image '%s': layer %s is a foreign layer "
			"(non-distributable, with urls), refused by policy; allow "
			"foreign layers (--allow-foreign-layers) or pin an image "
			"without one (nothing cached)", p->rc.name, b->digest);
}

/*
 * @where the one URL parser and origin rule (scheme, host, port; the default
 *   port explicit) -- a foreign layer's `urls` under `mirror_only`
 */
static int get_blob(struct pull *p, json_t *desc, const struct registry_blob *b,
		    unsigned long long *bytes, struct wb_err *e)
{
	unsigned long long size;
	char *q = NULL, *url;
	int r;

	wb_strlist_push_unique(&p->keep, b->digest);
	if (pending_has(p, b->digest))
		return 0;
	r = cache_lookup(p->c, b->digest + 7, &size, NULL, &q, e);
	free(q);   /* a quarantined entry is fetched again */
	if (r < 0)
		return -1;
	if (r == 1 && size == b->size)
		return 0;
	if (p->rc.o->offline)
		return wb_error(e, WB_ENET, "image '%s': blob %s is not in the cache "
				"(--offline)", p->rc.name, b->digest);
	if (b->foreign) {
		json_t *urls = json_object_get(desc, "urls"), *u;
		size_t i;
		struct wb_err first = WB_ERR_INIT;

		if (!p->rc.o->allow_foreign)
			return foreign_refused(p, b, e);
		json_array_foreach(urls, i, u) {
			if (!json_is_string(u))
				continue;
			/* the air gap (mirror_only): only the mirror's origin
			 * is asked (lib/url.h), never the urls a manifest
			 * names elsewhere; the mirror serves the layer under
			 * /v2/ (winbuild mirror writes it there) */
			if (p->rc.o->mirror_only &&
			    !wb_url_same_origin(json_string_value(u), p->rc.base))
				continue;
			if (get_blob_from(p, b, json_string_value(u), bytes, &first) == 0)
				return 0;
			if (first.code == WB_EIO)
				break;
		}
		if (first.code) {
			*e = first;
			return -1;
		}
	}
	url = xasprintf("%s/v2/%s/blobs/%s", p->rc.base, p->rc.ref->repo, b->digest);
	r = get_blob_from(p, b, url, bytes, e);
	free(url);
	return r;
}

/* Every pending manifest and blob into the cache. */
static int pull_commit(struct pull *p, struct wb_err *e)
{
	for (size_t i = 0; i < p->nr; i++) {
		struct pending *pd = &p->v[i];

		if (!pd->tmp_path) {
			if (cache_tmp_create(p->c, &pd->tmp_path, &pd->fd, e) < 0)
				return -1;
			if (fs_write_all(pd->fd, pd->bytes.ptr, pd->bytes.len) < 0)
				return wb_error(e, WB_EIO, "cannot write '%s': %s",
						pd->tmp_path, strerror(errno));
		}
		if (cache_insert(p->c, pd->tmp_path, pd->fd, pd->digest + 7, e) < 0)
			return -1;
		free(pd->tmp_path);
		pd->tmp_path = NULL;
	}
	return 0;
}

static void pull_release(struct pull *p)
{
	for (size_t i = 0; i < p->nr; i++) {
		if (p->v[i].fd >= 0)
			close(p->v[i].fd);
		if (p->v[i].tmp_path)
			unlink(p->v[i].tmp_path);
		free(p->v[i].tmp_path);
		buf_release(&p->v[i].bytes);
	}
	free(p->v);
	wb_strlist_release(&p->keep);
	free(p->rc.origin);
	free(p->rc.base);
	if (p->rc.token)
		memset(p->rc.token, 0, strlen(p->rc.token));
	free(p->rc.token);
	free(p->rc.name);
}

void registry_image_release(struct registry_image *img)
{
	free(img->list_media_type);
	free(img->manifest_media_type);
	free(img->os_version);
	free(img->config.media_type);
	for (size_t i = 0; i < img->nlayers; i++)
		free(img->layers[i].media_type);
	free(img->layers);
	ocisig_evidence_release(&img->sig);
	memset(img, 0, sizeof(*img));
}

/* The image config's platform: the truth the index entry only claims. */
static int check_config(struct pull *p, struct registry_image *img, struct wb_err *e)
{
	json_t *root = NULL;
	json_error_t je;
	const char *os, *arch, *ver;
	int ret = -1, found = 0;

	/* the config is small: read it from its pending temp file (verified
	 * in this run) or from the cache entry (re-hashed by cache_lookup) */
	for (size_t i = 0; i < p->nr; i++)
		if (!strcmp(p->v[i].digest, img->config.digest) && p->v[i].fd >= 0) {
			found = 1;
			if (lseek(p->v[i].fd, 0, SEEK_SET) == 0)
				root = json_loadfd(p->v[i].fd, 0, &je);
			break;
		}
	if (!found) {
		unsigned long long size;
		char *q = NULL;
		int fd = -1, r = cache_entry_open(p->c, img->config.digest + 7, &size, &fd,
						  &q, e);

		free(q);
		if (r < 0)
			return -1;
		if (r == 1) {
			root = json_loadfd(fd, 0, &je);
			close(fd);
		}
	}
	if (!json_is_object(root)) {
		wb_error(e, WB_EVERIFY, "image '%s': its config %s is not a JSON object",
			 p->rc.name, img->config.digest);
		goto out;
	}
	os = jstr(root, "os");
	arch = jstr(root, "architecture");
	ver = jstr(root, "os.version");
	if (!os || !arch || strcmp(os, "windows") || strcmp(arch, "amd64") ||
	    !build_matches(ver, p->rc.o->os_version)) {
		wb_error(e, WB_EVERIFY, "image '%s': its config says %s/%s %s, not "
			 "windows/amd64 for Windows build %s", p->rc.name, os ? os : "?",
			 arch ? arch : "?", ver ? ver : "(no os.version)", p->rc.o->os_version);
		goto out;
	}
	img->os_version = xstrdup(ver);
	ret = 0;
out:
	json_decref(root);
	return ret;
}

/*
 * @where the registry client (OCI distribution pull by digest, the token
 *   flow, credentials, every manifest and blob verified) -- manifest list's
 *   windows/amd64 entry, foreign layers refused unless allowed, nothing
 *   cached unless the whole image verified
 */
int registry_pull(struct cache *c, const struct image_ref *ref,
		  const struct registry_opts *o, struct registry_image *img,
		  struct wb_err *e)
{
	struct pull p;
	struct buf body = BUF_INIT;
	json_t *root = NULL, *layers, *d;
	json_error_t je;
	char digest[REGISTRY_DIGEST_LEN + 1];
	size_t i;
	int ret = -1;

	struct image_ref pinned = *ref;   /* the digest the tag resolves to */

	memset(img, 0, sizeof(*img));
	memset(&p, 0, sizeof(p));
	p.c = c;
	if (!ref->digest[0] && !(o->resolve_tag && ref->tag && !o->offline))
		return wb_error(e, WB_EUSAGE, "image '%s/%s%s%s': no digest; pin it "
				"(name:tag@sha256:...)", ref->host, ref->repo,
				ref->tag ? ":" : "", ref->tag ? ref->tag : "");
	if (env_limits_read(&p.rc.lim, e) < 0)
		return -1;
	p.rc.o = o;
	p.rc.ref = &pinned;
	snprintf(p.rc.ua, sizeof(p.rc.ua), "winbuild/%s", WB_VERSION);
	p.rc.conf.policy = o->t->policy;
	p.rc.conf.cacert = o->t->cacert;
	p.rc.conf.user_agent = p.rc.ua;
	p.rc.conf.max_tries = (int)p.rc.lim.retries;
	p.rc.conf.connect_timeout = p.rc.lim.connect_timeout;
	p.rc.conf.low_speed_time = p.rc.lim.low_speed_time;
	p.rc.conf.low_speed_limit = p.rc.lim.low_speed_limit;
	/* a mirror (registry_opts.base) is where every request goes; the
	 * token stays on its origin as it would on the registry's */
	p.rc.base = o->base ? xstrdup(o->base) : xasprintf("https://%s", ref->host);
	while (*p.rc.base && p.rc.base[strlen(p.rc.base) - 1] == '/')
		p.rc.base[strlen(p.rc.base) - 1] = '\0';
	{
		char org[512];

		wb_url_origin_text(p.rc.base, org, sizeof(org));
		p.rc.origin = xstrdup(org);
	}
	if (!o->base)
		for (char *q = p.rc.base; *q; q++)
			if (*q >= 'A' && *q <= 'Z')
				*q = (char)(*q - 'A' + 'a');
	if (!ref->digest[0]) {
		p.rc.name = xasprintf("%s/%s:%s", ref->host, ref->repo, ref->tag);
		if (resolve_tag(&p, pinned.digest, &body, e) < 0)
			goto out;
		free(p.rc.name);
	}
	p.rc.name = xasprintf("%s/%s@%s", ref->host, ref->repo, pinned.digest);
	memcpy(img->pinned, pinned.digest, sizeof(img->pinned));

	memcpy(digest, pinned.digest, sizeof(digest));
	if (ref->digest[0] && get_manifest(&p, digest, &body, e) < 0)
		goto out;
	/* the signature before anything else is asked for: an image whose
	 * signature does not verify costs one manifest, not its layers */
	if (o->cosign && get_signature(&p, img, e) < 0)
		goto out;
	root = json_loadb(body.ptr, body.len, 0, &je);
	if (!json_is_object(root)) {
		wb_error(e, WB_EVERIFY, "image '%s': its manifest is not a JSON object: %s",
			 p.rc.name, je.text);
		goto out;
	}
	if (is_index(root)) {
		memcpy(img->list_digest, digest, sizeof(digest));
		img->list_size = body.len;
		img->list_media_type = media_type_of(root) ? xstrdup(media_type_of(root)) :
				       xstrdup("application/vnd.oci.image.index.v1+json");
		if (select_entry(&p, root, digest, e) < 0)
			goto out;
		json_decref(root);
		if (get_manifest(&p, digest, &body, e) < 0) {
			root = NULL;
			goto out;
		}
		root = json_loadb(body.ptr, body.len, 0, &je);
		if (!json_is_object(root) || is_index(root)) {
			wb_error(e, WB_EVERIFY, "image '%s': the entry %s for Windows build "
				 "%s is not an image manifest", p.rc.name, digest,
				 o->os_version);
			goto out;
		}
	}
	memcpy(img->manifest_digest, digest, sizeof(digest));
	img->manifest_size = body.len;
	img->manifest_media_type = xstrdup(media_type_of(root) ? media_type_of(root) :
					   "application/vnd.oci.image.manifest.v1+json");
	layers = json_object_get(root, "layers");
	if (!json_is_array(layers) || !json_array_size(layers)) {
		wb_error(e, WB_EVERIFY, "image '%s': its manifest %s has no layers",
			 p.rc.name, digest);
		goto out;
	}
	if (read_descriptor(&p, json_object_get(root, "config"), &img->config, "config",
			    e) < 0)
		goto out;
	img->layers = xcalloc(json_array_size(layers), sizeof(*img->layers));
	json_array_foreach(layers, i, d) {
		char what[32];

		snprintf(what, sizeof(what), "layer %zu", i + 1);
		img->nlayers++;
		if (read_descriptor(&p, d, &img->layers[i], what, e) < 0)
			goto out;
	}
	/* the refusals first (a foreign layer), before any blob is asked */
	for (i = 0; i < img->nlayers; i++)
		if (img->layers[i].foreign && !o->allow_foreign) {
			foreign_refused(&p, &img->layers[i], e);
			goto out;
		}
	if (get_blob(&p, json_object_get(root, "config"), &img->config,
		     &img->bytes_downloaded, e) < 0)
		goto out;
	if (check_config(&p, img, e) < 0)
		goto out;
	json_array_foreach(layers, i, d)
		if (get_blob(&p, d, &img->layers[i], &img->bytes_downloaded, e) < 0)
			goto out;
	if (pull_commit(&p, e) < 0)
		goto out;
	if (o->cosign && !o->offline && store_sig_ref(&p, img, e) < 0)
		goto out;
	if (!o->offline && store_entry_refs(&p, e) < 0)
		goto out;
	ret = 0;
out:
	json_decref(root);
	buf_release(&body);
	pull_release(&p);
	if (ret < 0)
		registry_image_release(img);
	return ret;
}
