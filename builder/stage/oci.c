/* One pulled image as a deterministic OCI image-layout tar (stage/oci.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <jansson.h>

#include "lib/buf.h"
#include "lib/fs.h"
#include "lib/platform.h"
#include "fetch/imgsource.h"
#include "stage/oci.h"
#include "stage/tree.h"
#include "trust/digest.h"

struct oci_blob {
	const char *digest;
	unsigned long long size;
};

static int by_digest(const void *a, const void *b)
{
	return strcmp(((const struct oci_blob *)a)->digest, ((const struct oci_blob *)b)->digest);
}

/* Where the tar goes: FD, its bytes hashed as they are written. */
struct oci_out {
	int fd;
	struct digest_ctx dc;
	unsigned long long size;
	int err;
};

static la_ssize_t out_write(struct archive *a, void *ud, const void *buf, size_t n)
{
	struct oci_out *o = ud;

	if (fs_write_all(o->fd, buf, n) < 0) {
		o->err = errno;
		archive_set_error(a, errno, "%s", strerror(errno));
		return -1;
	}
	digest_update(&o->dc, buf, n);
	o->size += n;
	return (la_ssize_t)n;
}

static int ar_fail(struct archive *a, struct wb_err *e)
{
	return wb_error(e, WB_EIO, "cannot write the image archive: %s",
			archive_error_string(a) ? archive_error_string(a) : "unknown error");
}

static struct archive_entry *entry(const char *path, int dir, unsigned long long size,
				   time_t mtime)
{
	struct archive_entry *en = archive_entry_new();

	archive_entry_set_pathname(en, path);
	archive_entry_set_filetype(en, dir ? AE_IFDIR : AE_IFREG);
	archive_entry_set_perm(en, dir ? 0755 : 0644);
	archive_entry_set_size(en, dir ? 0 : (la_int64_t)size);
	archive_entry_set_mtime(en, mtime, 0);
	archive_entry_set_uid(en, 0);
	archive_entry_set_gid(en, 0);
	return en;
}

static int add_dir(struct archive *a, const char *path, time_t mtime, struct wb_err *e)
{
	struct archive_entry *en = entry(path, 1, 0, mtime);
	int r = archive_write_header(a, en);

	archive_entry_free(en);
	return r == ARCHIVE_OK ? 0 : ar_fail(a, e);
}

static int add_bytes(struct archive *a, const char *path, const void *p, size_t n,
		     time_t mtime, struct wb_err *e)
{
	struct archive_entry *en = entry(path, 0, n, mtime);
	int r = archive_write_header(a, en);

	archive_entry_free(en);
	if (r != ARCHIVE_OK || (n && archive_write_data(a, p, n) != (la_ssize_t)n))
		return ar_fail(a, e);
	return 0;
}

/* The cache entry of B into the tar, hashed as it is read. */
static int add_blob(struct archive *a, struct cache *c, const struct oci_blob *b,
		    time_t mtime, struct wb_err *e)
{
	char path[96], got[65], *q = NULL;
	/* one buffer per call: a matrix stages its images on a thread each,
	 * and two images may share a blob (a static buffer was read into by
	 * one thread while another hashed it) */
	char *chunk = xmalloc(1 << 16);
	struct digest_ctx dc;
	struct digest_result dr;
	unsigned long long size, have = 0;
	struct archive_entry *en;
	int fd = -1, r, ret = -1;

	r = cache_entry_open(c, b->digest + 7, &size, &fd, &q, e);
	free(q);
	if (r < 0) {
		free(chunk);
		return -1;
	}
	if (r == 0 || size != b->size) {
		if (fd >= 0)
			close(fd);
		free(chunk);
		return wb_error(e, WB_EVERIFY, "image blob %s is not in the cache as "
				"fetched (%llu bytes): fetch it again", b->digest, b->size);
	}
	snprintf(path, sizeof(path), "blobs/sha256/%s", b->digest + 7);
	en = entry(path, 0, size, mtime);
	r = archive_write_header(a, en);
	archive_entry_free(en);
	if (r != ARCHIVE_OK) {
		close(fd);
		free(chunk);
		return ar_fail(a, e);
	}
	memset(&dc, 0, sizeof(dc));
	if (digest_init(&dc, DIGEST_SHA256, e) < 0) {
		close(fd);
		free(chunk);
		return -1;
	}
	while (have < size) {
		ssize_t n = read(fd, chunk, 1 << 16);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			wb_error(e, WB_EIO, "cannot read the cache entry of %s: %s", b->digest,
				 n < 0 ? strerror(errno) : "it shrank");
			goto out;
		}
		if ((unsigned long long)n > size - have)
			n = (ssize_t)(size - have);
		digest_update(&dc, chunk, (size_t)n);
		if (archive_write_data(a, chunk, (size_t)n) != n) {
			ar_fail(a, e);
			goto out;
		}
		have += (unsigned long long)n;
	}
	digest_final(&dc, &dr);
	digest_hex(dr.sha256, 32, got);
	if (strcmp(got, b->digest + 7)) {
		char *where = NULL;

		if (cache_quarantine(c, b->digest + 7, &where, e) < 0)
			goto out;
		wb_error(e, WB_EVERIFY, "image blob %s changed in the cache since it was "
			 "verified (now sha256:%s); moved to '%s': fetch again", b->digest,
			 got, where ? where : "?");
		free(where);
		goto out;
	}
	ret = 0;
out:
	digest_release(&dc);
	close(fd);
	free(chunk);
	return ret;
}

/*
 * index.json: one descriptor, the manifest of the recipe's Windows build
 * (the image source selected it from the pinned list and checked it against
 * the list: stage/oci.h), never the list. Why not the list (issue 40):
 * containerd's import walks every descriptor its platform filter keeps,
 * and `--platform windows/amd64` keeps every windows/amd64 entry of a
 * list whatever its os.version, so a list whose other builds are not in
 * the tar fails with "content digest ...: not found":
 *  - containerd 1.6.20 (2806fc1057397dbaeefbea0e4e17bddfbd388f38):
 *    import.go Client.Import, images.FilterPlatforms(handler,
 *    platforms.OnlyStrict(p)) then images.WalkNotEmpty; platforms/
 *    platforms.go NewMatcher compares OS, architecture and variant only;
 *  - containerd 2.3.3 (aad11006b869517fcd3009450b6f82da282e1a9b), whose
 *    ctr imports through the transfer service: core/transfer/local/
 *    import.go importStream walks with core/transfer/image/imagestore.go
 *    ImageFilter, platforms.Ordered(p); containerd/platforms v1.0.0-rc.4
 *    (09756f59cb1d6b3fb368f371043d36e634789537) platforms.go NewMatcher
 *    adds a windowsVersionMatcher that matches any os.version when the
 *    platform has none (platform_windows_compat.go), and with one
 *    (`windows(10.0.26100)/amd64`) still keeps 2022's entry on 2025
 *    (checkWindowsHostAndContainerCompat): no platform string saves a
 *    list with absent manifests on either version.
 * A manifest descriptor has no children to filter: both import it, and
 * unpack it by its config's platform. No `platform` on the descriptor
 * either: containerd reads the config's (os, architecture, os.version),
 * the same bytes the pin's list entry was checked against.
 * The list stays in the tar as a blob (unreferenced: containerd ingests
 * it, nothing names it): what ties the manifest to the signed pin.
 */
static char *index_json(const struct registry_image *img, const char *name, const char *tag)
{
	json_t *root = json_object(), *ms = json_array(), *d = json_object(),
	       *ann = json_object();
	char *s;

	json_object_set_new(ann, "io.containerd.image.name", json_string(name));
	if (tag)
		json_object_set_new(ann, "org.opencontainers.image.ref.name", json_string(tag));
	json_object_set_new(d, "mediaType", json_string(img->manifest_media_type));
	json_object_set_new(d, "digest", json_string(img->manifest_digest));
	json_object_set_new(d, "size", json_integer((json_int_t)img->manifest_size));
	json_object_set_new(d, "annotations", ann);
	json_array_append_new(ms, d);
	json_object_set_new(root, "schemaVersion", json_integer(2));
	json_object_set_new(root, "mediaType",
			    json_string("application/vnd.oci.image.index.v1+json"));
	json_object_set_new(root, "manifests", ms);
	s = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(root);
	return s;
}

/*
 * @where an image as an OCI image-layout tar, placed in the staged tree --
 *   deterministic, annotated for containerd's importer (docs/node.md
 *   "Importing the staged images")
 */
int oci_archive_write(struct cache *c, const struct registry_image *img, const char *name,
		      const char *tag, int fd, time_t mtime, struct oci_written *res,
		      struct wb_err *e)
{
	struct oci_out out;
	static const char layout[] = "{\"imageLayoutVersion\":\"1.0.0\"}";
	struct oci_blob *v = xcalloc(img->nlayers + 3, sizeof(*v));
	struct archive *a = archive_write_new();
	char *idx = NULL;
	size_t n = 0, i;
	int ret = -1;

	if (img->list_digest[0])
		v[n++] = (struct oci_blob){ img->list_digest, img->list_size };
	v[n++] = (struct oci_blob){ img->manifest_digest, img->manifest_size };
	v[n++] = (struct oci_blob){ img->config.digest, img->config.size };
	for (i = 0; i < img->nlayers; i++)
		v[n++] = (struct oci_blob){ img->layers[i].digest, img->layers[i].size };
	qsort(v, n, sizeof(*v), by_digest);
	memset(&out, 0, sizeof(out));
	out.fd = fd;
	if (digest_init(&out.dc, DIGEST_SHA256, e) < 0) {
		archive_write_free(a);
		free(v);
		return -1;
	}
	if (!a || archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
	    archive_write_set_bytes_in_last_block(a, 1) != ARCHIVE_OK ||
	    archive_write_open(a, &out, NULL, out_write, NULL) != ARCHIVE_OK) {
		ret = a ? ar_fail(a, e) : wb_error(e, WB_EIO, "cannot create an archive writer");
		goto out;
	}
	if (add_dir(a, "blobs/", mtime, e) < 0 || add_dir(a, "blobs/sha256/", mtime, e) < 0)
		goto out;
	for (i = 0; i < n; i++) {
		if (i && !strcmp(v[i].digest, v[i - 1].digest))
			continue;   /* one blob, two roles (a layer used twice) */
		if (add_blob(a, c, &v[i], mtime, e) < 0)
			goto out;
	}
	idx = index_json(img, name, tag);
	if (add_bytes(a, "index.json", idx, strlen(idx), mtime, e) < 0 ||
	    add_bytes(a, "oci-layout", layout, sizeof(layout) - 1, mtime, e) < 0)
		goto out;
	if (archive_write_close(a) != ARCHIVE_OK) {
		ar_fail(a, e);
		goto out;
	}
	if (res) {
		struct digest_result dr;

		digest_final(&out.dc, &dr);
		digest_hex(dr.sha256, 32, res->sha256);
		res->size = out.size;
	}
	ret = 0;
out:
	digest_release(&out.dc);
	if (a)
		archive_write_free(a);
	free(idx);
	free(v);
	return ret;
}

/*
 * @where an image as an OCI image-layout tar, placed in the staged tree --
 *   appends each image's pin, build manifest and os.version to
 *   manifest.json's `images`
 */
int stage_images(struct tree *t, const struct plan *plan, const char *cache_dir,
		 json_t *images, struct wb_err *e)
{
	const struct platform_windows *w = platform_windows_find(plan->windows_version);
	struct cache c = CACHE_INIT;
	char build[32];
	int ret = -1;

	if (!plan->nimages)
		return 0;
	if (!w)
		return wb_error(e, WB_EUSAGE, "no Windows Server '%s' in the platform table",
				plan->windows_version);
	snprintf(build, sizeof(build), "10.0.%s", w->build);
	if (!cache_dir || cache_open(&c, cache_dir, 0, e) < 0)
		return cache_dir ? -1 : wb_error(e, WB_EIO, "no cache to stage images from");
	for (size_t i = 0; i < plan->nimages; i++) {
		const struct plan_image *im = &plan->images[i];
		struct registry_image img;
		struct oci_written wr;
		struct tree_piece piece;
		char *s, *scratch, *file, *name, *dest;
		int fd, r;

		/* fetch pulled it (from whichever source) and verified its
		 * signature: the cache only, every entry re-hashed */
		if (imgsource_load(&c, im, build, &img, e) < 0)
			goto out;
		s = xasprintf(".image-%s", im->key);
		scratch = tree_scratch(t, s);
		free(s);
		name = xasprintf("%s.tar", im->key);
		file = fs_join(scratch, name);
		r = fs_mkdir_p(scratch, 0755, e);
		fd = r < 0 ? -1 : open(file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (r == 0 && fd < 0)
			r = wb_error(e, WB_EIO, "cannot create '%s': %s", file, strerror(errno));
		if (r == 0) {
			s = xasprintf("%s%s%s", im->name, im->tag ? ":" : "", im->tag ? im->tag : "");
			r = oci_archive_write(&c, &img, s, im->tag, fd, t->mtime, &wr, e);
			free(s);
		}
		if (fd >= 0 && close(fd) < 0 && r == 0)
			r = wb_error(e, WB_EIO, "cannot write '%s': %s", file, strerror(errno));
		/* the build's manifest and os.version: what the node runs */
		json_array_append_new(images, json_pack("{s:s, s:s, s:o, s:s, s:s, s:s, s:s++}",
			"key", im->key, "name", im->name,
			"tag", im->tag ? json_string(im->tag) : json_null(),
			"digest", im->digest, "manifest_digest", img.manifest_digest,
			"os_version", img.os_version, "tree_path", STAGE_IMAGES_DIR "/",
			im->key, ".tar"));
		registry_image_release(&img);
		/* the tar is the scratch file the writer hashed: adopted as is */
		if (r == 0)
			r = tree_prepare_teed(scratch, wr.sha256, wr.size, name, &piece, e);
		if (r == 0) {
			dest = xasprintf("%s/%s", STAGE_IMAGES_DIR, name);
			r = tree_adopt(t, &piece, dest, im->key, "images", e);
			free(dest);
			tree_piece_release(&piece);
		}
		free(file);
		free(name);
		free(scratch);
		if (r < 0)
			goto out;
	}
	ret = 0;
out:
	cache_close(&c);
	return ret;
}
