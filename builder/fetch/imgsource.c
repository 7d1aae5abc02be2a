/* The image source seam (imgsource.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <jansson.h>

#include "fetch/imgsource.h"
#include "lib/buf.h"

/* ---- an OCI image layout on disk (IMGSOURCE_LAYOUT) --------------------- */

#define LAYOUT_INDEX_MAX (4u << 20)   /* index.json: a registry's manifest cap */

/* image-spec image-layout.md: oci-layout, index.json, blobs/<alg>/<hex>.
 * `skopeo copy docker://... oci:DIR:TAG` and `cosign save` write one; each
 * image or signature is an index.json entry named by its
 * org.opencontainers.image.ref.name annotation (containers/image
 * oci/layout/oci_dest.go: the TAG given; a cosign signature's tag is
 * sha256-<hex>.sig, as in a registry). */
struct layout {
	const char *path;            /* the directory, or a .tar of one */
	int tar;
	json_t *index;               /* index.json, read once */
};

typedef int (*layout_write_fn)(void *sink, const void *p, size_t n);

static int buf_write(void *sink, const void *p, size_t n)
{
	struct buf *b = sink;

	if (b->len + n > LAYOUT_INDEX_MAX)
		return -1;
	buf_add(b, p, n);
	return 0;
}

/* NAME ("index.json", "blobs/sha256/<hex>") of the layout directory: each
 * step opened with O_NOFOLLOW below the directory, so no symlink in the
 * layout leads out of it (a symlink is refused, not followed). 1 read,
 * 0 absent, -1 an error.
 * @where the one seam where an image's source plugs in (registry, OCI layout)
 *   -- a layout directory, every step `O_NOFOLLOW`
 */
static int dir_read(const struct layout *l, const char *name, layout_write_fn w, void *sink,
		    struct wb_err *e)
{
	char *dup = xstrdup(name), *seg = dup, *slash, tmp[65536];
	int fd = open(l->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC), next, ret = -1, err;
	struct stat st;
	ssize_t n;

	if (fd < 0) {
		wb_error(e, WB_EUSAGE, "image layout '%s': %s", l->path, strerror(errno));
		goto out;
	}
	for (; fd >= 0; seg = slash + 1) {
		slash = strchr(seg, '/');
		if (slash)
			*slash = '\0';
		next = openat(fd, seg, O_RDONLY | O_NOFOLLOW | O_CLOEXEC |
			      (slash ? O_DIRECTORY : 0));
		err = errno;
		close(fd);
		fd = next;
		if (!slash)
			break;
	}
	if (fd < 0 && err == ENOENT) {
		ret = 0;
		goto out;
	}
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		wb_error(e, WB_EVERIFY, "image layout '%s': '%s' is %s: refused", l->path, name,
			 fd < 0 && (err == ELOOP || err == ENOTDIR) ?
			 "a symlink (or under one)" : fd < 0 ? strerror(err) :
			 "not a regular file");
		goto out;
	}
	while ((n = read(fd, tmp, sizeof(tmp))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			wb_error(e, WB_EIO, "image layout '%s': cannot read '%s': %s", l->path,
				 name, strerror(errno));
			goto out;
		}
		if (w(sink, tmp, (size_t)n) < 0) {
			wb_error(e, WB_EVERIFY, "image layout '%s': '%s' is larger than "
				 "expected", l->path, name);
			goto out;
		}
	}
	ret = 1;
out:
	if (fd >= 0)
		close(fd);
	free(dup);
	return ret;
}

/* NAME of a layout tar: the first regular file entry of that name
 * ("./" before it allowed); links and other types are never read.
 * @where the one seam where an image's source plugs in (registry, OCI layout)
 *   -- a layout tar, regular entries only
 */
static int tar_read(const struct layout *l, const char *name, layout_write_fn w, void *sink,
		    struct wb_err *e)
{
	struct archive *a = archive_read_new();
	struct archive_entry *ae;
	int r, ret = 0;

	archive_read_support_format_tar(a);
	if (archive_read_open_filename(a, l->path, 65536) != ARCHIVE_OK) {
		ret = wb_error(e, WB_EUSAGE, "image layout '%s': %s", l->path,
			       archive_error_string(a));
		goto out;
	}
	while ((r = archive_read_next_header(a, &ae)) == ARCHIVE_OK) {
		const char *p = archive_entry_pathname(ae);
		const void *blk;
		size_t sz;
		la_int64_t off;

		if (p && !strncmp(p, "./", 2))
			p += 2;
		if (!p || strcmp(p, name) || archive_entry_filetype(ae) != AE_IFREG)
			continue;
		while ((r = archive_read_data_block(a, &blk, &sz, &off)) == ARCHIVE_OK)
			if (w(sink, blk, sz) < 0) {
				ret = wb_error(e, WB_EVERIFY, "image layout '%s': '%s' is "
					       "larger than expected", l->path, name);
				goto out;
			}
		ret = r == ARCHIVE_EOF ? 1 : -1;
		break;
	}
	if (r != ARCHIVE_OK && r != ARCHIVE_EOF && ret <= 0)
		ret = -1;
	if (ret < 0 && !e->code)
		wb_error(e, WB_EIO, "image layout '%s': %s", l->path, archive_error_string(a));
out:
	archive_read_free(a);
	return ret;
}

static int layout_read(const struct layout *l, const char *name, layout_write_fn w,
		       void *sink, struct wb_err *e)
{
	return l->tar ? tar_read(l, name, w, sink, e) : dir_read(l, name, w, sink, e);
}

/* The digest index.json names by the ref.name annotation TAG, or NULL. */
static const char *layout_tag(const struct layout *l, const char *tag)
{
	json_t *ms = json_object_get(l->index, "manifests"), *m;
	size_t i;

	json_array_foreach(ms, i, m) {
		json_t *an = json_object_get(json_object_get(m, "annotations"),
					     "org.opencontainers.image.ref.name");
		json_t *d = json_object_get(m, "digest");

		if (json_is_string(an) && !strcmp(json_string_value(an), tag) &&
		    json_is_string(d))
			return json_string_value(d);
	}
	return NULL;
}

/* registry_reader.get: a request of the pull from the layout. A manifest
 * by tag (the signature's sha256-<hex>.sig) is index.json's entry of that
 * name; anything by digest is blobs/sha256/<hex>. */
static int layout_get(void *ctx, const char *path, layout_write_fn w, void *sink,
		      struct wb_err *e)
{
	struct layout *l = ctx;
	const char *d = NULL;
	char *name;
	int r;

	if (!strncmp(path, "blobs/", 6))
		d = path + 6;
	else if (!strncmp(path, "manifests/", 10))
		d = path + 10;
	if (d && !imageref_digest_ok(d) && path[0] == 'm')
		d = layout_tag(l, d);
	if (!d)
		return 0;
	if (!imageref_digest_ok(d))
		return wb_error(e, WB_EVERIFY, "image layout '%s': index.json names '%s', not "
				"a sha256 digest", l->path, d);
	name = xasprintf("blobs/sha256/%s", d + 7);
	r = layout_read(l, name, w, sink, e);
	free(name);
	return r;
}

static int layout_open(struct layout *l, const char *path, struct wb_err *e)
{
	struct buf b = BUF_INIT;
	json_error_t je;
	size_t n = strlen(path);
	int r;

	memset(l, 0, sizeof(*l));
	l->path = path;
	l->tar = n > 4 && !strcmp(path + n - 4, ".tar");
	r = layout_read(l, "oci-layout", buf_write, &b, e);
	if (r == 0)
		r = wb_error(e, WB_EUSAGE, "image layout '%s': no oci-layout file: not an OCI "
			     "image layout", path);
	buf_reset(&b);
	if (r > 0 && (r = layout_read(l, "index.json", buf_write, &b, e)) == 0)
		r = wb_error(e, WB_EUSAGE, "image layout '%s': no index.json", path);
	if (r > 0) {
		l->index = json_loadb(b.ptr, b.len, 0, &je);
		if (!json_is_array(json_object_get(l->index, "manifests")))
			r = wb_error(e, WB_EVERIFY, "image layout '%s': index.json has no "
				     "manifests list", path);
	}
	buf_release(&b);
	return r < 0 ? -1 : 0;
}

/*
 * @where the one seam where an image's source plugs in (registry, OCI layout)
 *   -- a plan image's reference
 */
int imgsource_ref(const struct plan_image *im, struct image_ref *ref, struct wb_err *e)
{
	char *s = xasprintf("%s%s%s%s%s", im->name, im->tag ? ":" : "", im->tag ? im->tag : "",
			    im->digest ? "@" : "", im->digest ? im->digest : "");
	int r = image_ref_parse(s, ref, e);

	free(s);
	return r;
}

/* Where IM is pulled from: NULL (its registry), or *BASE (new string)
 * from the plan's first mirror rule whose `from` is a prefix of
 * https://HOST/ (`winbuild mirror` exports images as a static registry
 * tree, emit/mirror.h). A registry mirror is https, or http where
 * policy.allow_http allows it as it does for downloads: what is pulled is
 * pinned by digest (and its cosign signature checked), so the wire adds
 * nothing to trust, and no token is sent over http (registry_http.c).
 * image-builder and containerd pull over whatever the host's
 * containerd config allows (containerd's hosts.toml `server = "http://..."`);
 * winbuild asks the recipe's policy instead. A rule to file:// is
 * refused, as is an image without a rule under mirror_only (unless
 * OFFLINE: the cache only, nothing is asked of anyone).
 * @where the one seam where an image's source plugs in (registry, OCI layout)
 *   -- a mirror rule from `https://HOST/` makes the pull go to the mirror
 */
static int registry_base(const struct plan *plan, const struct plan_image *im, int offline,
			 char **base, struct wb_err *e)
{
	char *u = xasprintf("https://%.*s/", (int)strcspn(im->name, "/"), im->name);
	int ret = 0;

	*base = NULL;
	for (size_t i = 0; i < plan->nmirrors; i++) {
		const struct plan_mirror *m = &plan->mirrors[i];
		size_t n = strlen(m->from);

		if (strncmp(u, m->from, n))
			continue;
		if (strncmp(m->to, "https://", 8) &&
		    (strncmp(m->to, "http://", 7) || !plan->policy.allow_http))
			ret = wb_origin_error(e, &m->origin, "images.%s: the mirror rule to '%s' "
					      "is not https%s: a registry mirror is https, or "
					      "http where policy.allow_http is true", im->key, m->to,
					      strncmp(m->to, "http://", 7) ? "" :
					      ", and policy.allow_http is false");
		else
			*base = xasprintf("%s%s", m->to, u + n);
		free(u);
		return ret;
	}
	if (plan->mirror_only && !offline)
		ret = wb_origin_error(e, &plan->mirror_only_origin, "images.%s: mirror_only, "
				      "and no mirror rule for '%s' (the registry of '%s')",
				      im->key, u, im->name);
	free(u);
	return ret;
}

/*
 * @where the one seam where an image's source plugs in (registry, OCI layout)
 *   -- a plan image's kind and, for a registry, the mirror rule; a new kind
 *   is one more case of `enum imgsource_kind` (`tests/cli/imgsource.bats`)
 */
int imgsource_for(struct imgsource *src, const struct plan *plan, const struct plan_image *im,
		  const struct registry_opts *common, struct wb_err *e)
{
	memset(src, 0, sizeof(*src));
	src->kind = IMGSOURCE_REGISTRY;
	src->o = *common;
	src->o.allow_foreign = im->allow_foreign_layers;
	src->o.mirror_only = plan->mirror_only;
	if (im->layout) {
		/* on disk: no mirror rule, no network; the requests are named
		 * under the layout in messages */
		src->kind = IMGSOURCE_LAYOUT;
		src->layout = im->layout;
		src->base = xasprintf("oci-layout:%s", im->layout);
		return 0;
	}
	if (registry_base(plan, im, common->offline, &src->base, e) < 0)
		return -1;
	src->o.base = src->base;
	return 0;
}

void imgsource_release(struct imgsource *src)
{
	free(src->base);
	memset(src, 0, sizeof(*src));
}

/* A layout image: the registry client's pull, every request answered by
 * the layout (registry_opts.reader), so the checks and the cache are the
 * registry's; nothing is asked of the network, so an offline run reads
 * the layout too
 * @where the one seam where an image's source plugs in (registry, OCI layout)
 *   -- the OCI-layout kind (`images.<key>.layout`;
 *   `tests/cli/imgsource_layout.bats`)
 */
static int layout_pull(struct cache *c, const struct imgsource *src, const struct image_ref *ref,
		       struct registry_image *img, struct wb_err *e)
{
	struct layout l;
	struct registry_reader rd = { layout_get, &l };
	struct registry_opts o = src->o;
	int r;

	if (layout_open(&l, src->layout, e) < 0) {
		json_decref(l.index);
		return -1;
	}
	o.reader = &rd;
	o.base = src->base;
	o.offline = 0;
	o.resolve_tag = 0;
	o.creds = NULL;
	r = registry_pull(c, ref, &o, img, e);
	json_decref(l.index);
	return r;
}

/* The run's memo (issue 44): the pins whose signature manifest a pull of
 * this process fetched and verified ("HOST/REPO@DIGEST"). A matrix pulls
 * the same pin for several images; its manifests and blobs come from the
 * cache by digest already, and with this the signature manifest, looked
 * up by its tag, is asked of the registry once per run, not per image.
 * Kept for the process (one run); never freed. */
static struct wb_strlist sig_memo = WB_STRLIST_INIT;

/*
 * @where where a container image's cosign signature is checked -- a matrix
 *   asks each signature manifest once
 */
static int registry_pull_memo(struct cache *c, const struct imgsource *src,
			      const struct image_ref *ref, struct registry_image *img,
			      struct wb_err *e)
{
	struct registry_opts o = src->o;
	char *key;
	int r;

	if (!o.cosign || o.offline || !ref->digest[0])
		return registry_pull(c, ref, &o, img, e);
	key = xasprintf("%s/%s@%s", ref->host, ref->repo, ref->digest);
	for (size_t i = 0; i < sig_memo.nr; i++)
		if (!strcmp(sig_memo.v[i], key))
			o.sig_known = 1;
	r = registry_pull(c, ref, &o, img, e);
	if (r == 0 && !o.sig_known)
		wb_strlist_push(&sig_memo, key);
	free(key);
	return r;
}

/*
 * @where the one seam where an image's source plugs in (registry, OCI layout)
 *   -- the fetch step and `image pull`
 */
int imgsource_pull(struct cache *c, const struct imgsource *src, const struct image_ref *ref,
		   struct registry_image *img, struct wb_err *e)
{
	switch (src->kind) {
	case IMGSOURCE_REGISTRY:
		return registry_pull_memo(c, src, ref, img, e);
	case IMGSOURCE_LAYOUT:
		return layout_pull(c, src, ref, img, e);
	}
	return wb_error(e, WB_EUSAGE, "image '%s/%s': unknown source kind %d", ref->host,
			ref->repo, (int)src->kind);
}

/*
 * @where the one seam where an image's source plugs in (registry, OCI layout)
 *   -- the stage's cache-only read: every entry re-hashed, no request
 */
int imgsource_load(struct cache *c, const struct plan_image *im, const char *os_version,
		   struct registry_image *img, struct wb_err *e)
{
	struct trust_policy policy;
	struct fetch_transport t;
	struct imgsource src;
	struct image_ref ref;
	int r;

	if (!im->digest)
		return wb_error(e, WB_EUSAGE, "images.%s: not pinned (needs_pin: %s)", im->key,
				im->needs_pin);
	if (imgsource_ref(im, &ref, e) < 0)
		return -1;
	/* every kind's bytes are in the cache under their digests once
	 * fetched: read back as the registry client's offline pull reads
	 * them, which asks nothing of anyone (no transport is used) */
	memset(&policy, 0, sizeof(policy));
	t.policy = &policy;
	t.cacert = NULL;
	memset(&src, 0, sizeof(src));
	src.kind = IMGSOURCE_REGISTRY;
	src.o.t = &t;
	src.o.os_version = os_version;
	src.o.allow_foreign = im->allow_foreign_layers;
	src.o.offline = 1;
	r = registry_pull(c, &ref, &src.o, img, e);
	image_ref_release(&ref);
	if (r < 0)
		wb_error_prefix(e, "images.%s", im->key);
	return r;
}
